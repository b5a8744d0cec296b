/*
 * core/log.h - levelled messages for the operator, on stderr (log.c).
 *
 * Used by every part of launcher/ (not by shared/, omp/ or the plugin,
 * which are libc only).  Uses libc only.
 *
 * Error convention of launcher/ (as in hwloc.h): functions return 0 on
 * success, -1 on failure with a message already reported through cs_err()
 * (or errno set where the comment says so); pointer returners return NULL.
 * exit() is called only from main() and before any job has started.
 */
#ifndef COSCHED_CORE_LOG_H
#define COSCHED_CORE_LOG_H

/* ------------------------------------------------------------------ log */
enum cs_loglevel { CS_LOG_ERROR, CS_LOG_WARN, CS_LOG_INFO, CS_LOG_DEBUG };
extern int cs_verbosity;             /* messages up to this level are printed */
extern void (*cs_log_before)(void);  /* called before a message is written (progress line) */
extern int cs_log_copy;              /* >= 0: every message is written to this descriptor too */
void cs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define cs_err(...)   cs_log(CS_LOG_ERROR, __VA_ARGS__)
#define cs_warn(...)  cs_log(CS_LOG_WARN, __VA_ARGS__)
#define cs_info(...)  cs_log(CS_LOG_INFO, __VA_ARGS__)
#define cs_debug(...) cs_log(CS_LOG_DEBUG, __VA_ARGS__)

#endif
