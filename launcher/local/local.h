/*
 * local/local.h - the host of `cosched run` (local.c): jobs forked by
 * cosched on this machine, their output passed through, signals forwarded
 * to them (engine/host.h says what a host does).
 *
 * May use: engine/ and what it may use.  Used by: cli/ (run.c sets
 * e->host = &cs_local_host before cs_engine_run()).
 */
#ifndef COSCHED_LOCAL_H
#define COSCHED_LOCAL_H

#include "engine/engine.h"

extern const struct cs_host_ops cs_local_host;

#endif
