/* ompinject.h - what cosched run and the SPANK plugin share to put
 * libcosched-omp.so (launcher/omp/cosched-omp.c, issue 14) into a job.
 * libc only (launcher/shared/: the plugin compiles it too). */
#ifndef COSCHED_OMPINJECT_H
#define COSCHED_OMPINJECT_H

/* Whether the shim would resize teams in a job whose environment is read
 * through get (getenv, or the task's environment for the plugin): not when
 * the job turns it off (COSCHED_OMP not on/1/yes/true/empty, OMP_DYNAMIC=false)
 * or binds its threads (OMP_PROC_BIND other than false, OMP_PLACES,
 * KMP_AFFINITY other than none/disabled), where the shim leaves teams alone.
 * 1 or 0. */
int cs_omp_env_allows(const char *(*get)(const char *name, void *arg), void *arg);

/* 1 when LD_PRELOAD can take effect in the program at path: a dynamically
 * linked ELF executable of cosched's own class and machine that is neither
 * setuid nor setgid, or a script (#!: its interpreter is judged when it runs,
 * by the dynamic linker); 0 otherwise (static, another ABI, unreadable). */
int cs_exe_preloadable(const char *path);

/* The executable execvp() would run for argv0 with this PATH (NULL: the
 * default path), in buf; NULL if there is none. */
const char *cs_exe_lookup(const char *argv0, const char *path, char *buf, size_t len);

/* The LD_PRELOAD a job gets: the shim first, then the user's own preloads
 * (old, may be NULL), in buf; NULL if buf is too small.  Unchanged when the
 * shim is already there. */
const char *cs_preload_value(const char *shim, const char *old, char *buf, size_t len);

#endif
