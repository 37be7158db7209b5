/* job: work that runs off the loop thread (histograms, searches).
 *
 * The contract that keeps ncurses on one thread:
 *   - `work` runs on a worker thread. It reads immutable data (the file's
 *     mapping, metadata already indexed) and writes ONLY into its own job
 *     struct (results, progress atomics). It never calls ncurses, a pane or
 *     the screen. It reports progress with ui_job_progress(), which stores
 *     two atomics and wakes the loop (the app's runner: uv_async_send).
 *   - `done` runs on the loop thread after `work` has returned (libuv's
 *     uv_queue_work after_work callback: the queue's mutex orders every write
 *     of `work` before it). Only there are results moved into panes.
 *   - Panes read progress atomics while drawing (loop thread).
 * A job is cancelled by setting `cancel`; `done` still runs (with
 * `cancelled` observable through the flag), and the owner frees the job
 * there, never before. */
#ifndef GGSCOPE_JOB_H
#define GGSCOPE_JOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ui_job ui_job;

struct ui_job {
    void (*work)(ui_job *j);   /* worker thread */
    void (*done)(ui_job *j);   /* loop thread, once, after work */
    void *owner;               /* for `done` */
    atomic_bool cancel;        /* set by anyone; polled by work */
    atomic_uint_least64_t progress_done, progress_total;
    atomic_uint permille_sent; /* last progress that woke the loop */
    /* Set by the runner: wakes the loop thread (thread-safe, coalescing). */
    void (*wake)(void *ctx);
    void *wake_ctx;
    ui_job *next_active;       /* the screen's list of running jobs */
};

/* Prepare a job (zeroes the atomics). */
void ui_job_init(ui_job *j, void (*work)(ui_job *), void (*done)(ui_job *), void *owner);

/* Worker side: record progress and wake the loop when it moved by >= 0.5%. */
void ui_job_progress(ui_job *j, uint64_t done, uint64_t total);

/* Any thread: ask the job to stop. */
void ui_job_cancel(ui_job *j);
bool ui_job_cancelled(const ui_job *j);

/* Progress as a fraction 0..1 (any thread). */
double ui_job_fraction(const ui_job *j);

/* How the screen runs jobs: `submit` starts `work` on a worker and later
 * calls ui_job_finish() on the loop thread; `wake` wakes the loop. Supplied
 * by the application (libuv); without a runner, jobs run synchronously. */
typedef struct {
    int (*submit)(void *ctx, ui_job *j);   /* 0 on success */
    void (*wake)(void *ctx);
    void *ctx;
} ui_runner;

#endif
