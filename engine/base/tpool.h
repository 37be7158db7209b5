/* tpool: a persistent pool of worker threads, the one way the engine starts
 * compute threads. A run bumps a generation counter; workers spin on it for a
 * short while, then sleep on a condition variable. Never prints. */
#ifndef GGSCOPE_TPOOL_H
#define GGSCOPE_TPOOL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tpool tpool;

/* A pool of n_threads threads (the caller counts as one; n_threads - 1 workers
 * are started and stay parked between runs). n_threads <= 0: one thread per
 * core this process may run on (its CPU affinity). At most 512. Returns NULL
 * when threads or memory cannot be had. */
tpool *tpool_new(int n_threads);

/* The cores this process may run on: the threads of tpool_new(0). */
int tpool_cores(void);

/* Stops and joins the workers. Accepts NULL. */
void tpool_free(tpool *p);

/* Number of threads of the pool (>= 1); 1 for NULL. */
int tpool_threads(const tpool *p);

/* Run fn(ctx, ith, nth) on every thread of the pool (the caller is thread 0)
 * and wait until all have returned. p may be NULL: fn(ctx, 0, 1) runs on the
 * caller. Not reentrant: one run at a time per pool. */
void tpool_run(tpool *p, void (*fn)(void *ctx, int ith, int nth), void *ctx);

/* A run for work handed out dynamically: fn(ctx, ith, nth) runs on the
 * caller and on each worker that wakes before the caller's own fn returns;
 * a worker that comes later (descheduled by a competing process, asleep)
 * skips the run instead of being waited for. fn must therefore take its work
 * from a shared counter until none is left, so that any one thread alone
 * can do all of it; it must not rely on every ith being called. Returns when
 * the caller's fn and every worker that joined have returned. */
void tpool_run_dynamic(tpool *p, void (*fn)(void *ctx, int ith, int nth), void *ctx);

/* Dynamic runs follow the machine (on by default): every 10 ms the caller
 * reads how many threads are runnable (/proc/loadavg) and, when other
 * processes want some of the cores, uses fewer threads (the caller alone
 * when only one core is left over): a thread of ours that would share a
 * core with a competing process slows the whole run down. Workers outside
 * the width do not spin. tpool_set_adaptive(p, false) keeps every thread. */
void tpool_set_adaptive(tpool *p, bool on);
/* The threads dynamic runs use now (1 for NULL). */
int tpool_width(const tpool *p);
/* The width for a pool of n threads on n_cores cores when `running` threads
 * are runnable machine-wide while `width` of ours run (exposed for tests). */
int tpool_width_for(int n, int n_cores, int running, int width);

/* A per-thread scratch buffer of at least `size` bytes (malloc alignment),
 * kept between runs; NULL for a bad ith or when memory cannot be had. For
 * thread `ith` only; p NULL gives NULL. */
void *tpool_thread_buf(tpool *p, int ith, size_t size);

#endif
