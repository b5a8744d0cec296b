/*
 * duration.h - the one duration syntax of every interface (issue 16, item 11):
 * the command line (--quantum, --window, --kill-timeout, --idle-exit, ...),
 * plugstack.conf (quantum, quantum_ms, idle_exit, timeout, timeout_ms) and
 * the systemd unit's defaults (COSCHED_QUANTUM).
 *
 *   NUMBER[UNIT]   UNIT: us, ms, s, m or min, h, d   ("500ms", "1.5s", "2m")
 *
 * A plain NUMBER is in the unit the caller names (`plain`, in seconds): 1 for
 * the command line and the new plugstack.conf keys, 0.001 for the old *_ms
 * keys, which therefore read as before.  libc only: the SPANK plugin uses it.
 */
#ifndef COSCHED_DURATION_H
#define COSCHED_DURATION_H

/* 0 and *seconds set; -1 when s is not NUMBER[UNIT] with a finite NUMBER >= 0. */
int cs_duration_parse(const char *s, double plain, double *seconds);
#endif
