/* tpool: persistent worker threads. A run bumps a generation counter;
 * workers spin on it for a short while, then sleep on a condition variable,
 * so back-to-back runs (one per op of a forward pass) cost microseconds and
 * an idle pool costs nothing.
 *
 * Dynamic runs (tpool_run_dynamic) do not wait for a worker that has not
 * started: run_state holds the run's generation (high 32 bits), a closed bit
 * and the count of workers inside fn. A worker joins with a CAS while the run
 * is open and its generation current; the caller closes the run when its own
 * fn returns (all work handed out) and waits only for the joined ones. */
#include "tpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Pause iterations before sleeping (~100-300 us on current x86). */
#define SPIN_ITERS 2000

#define RS_CLOSED ((uint64_t)1 << 31)  /* dynamic run: no more joiners */
#define RS_STATIC ((uint64_t)1 << 30)  /* a tpool_run: every worker runs fn */
#define RS_COUNT (RS_STATIC - 1)       /* workers inside fn (dynamic runs) */

typedef struct {
    tpool *pool;
    int ith;
} worker_arg;

typedef struct {
    void *ptr;
    size_t size;
} thread_buf;

struct tpool {
    int n;
    thread_buf *bufs;      /* per-thread work buffers, kept between runs */
    pthread_t *threads;
    worker_arg *args;
    void (*fn)(void *ctx, int ith, int nth);
    void *ctx;
    atomic_uint gen;       /* bumped (under mu) to start a run */
    atomic_int pending;    /* workers still running the current (static) run */
    _Atomic uint64_t run_state; /* dynamic runs: gen << 32 | flags | joined count */
    atomic_int stop;
    atomic_int width;      /* threads dynamic runs use (adaptive, <= n) */
    bool adaptive;         /* width follows the machine's runnable count */
    int n_cores;           /* cores this process may run on */
    int64_t next_check_ns; /* caller's clock: when to look at the machine again */
    int want, want_seen;   /* the width the last looks asked for, and how often */
    int n_sleeping;        /* workers waiting on cv_work (under mu) */
    pthread_mutex_t mu;
    pthread_cond_t cv_work;
    pthread_cond_t cv_done;
};

static void *worker_main(void *argp)
{
    worker_arg *a = argp;
    tpool *p = a->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
        /* a worker outside the width does not spin: the core is wanted */
        const int spins = a->ith < atomic_load_explicit(&p->width, memory_order_relaxed) ? SPIN_ITERS : 0;
        for (int spin = 0; g == seen && spin < spins; spin++) {
            cpu_relax();
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            p->n_sleeping++;
            while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
                   !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv_work, &p->mu);
            p->n_sleeping--;
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = g;
        uint64_t st = atomic_load_explicit(&p->run_state, memory_order_acquire);
        if (!(st & RS_STATIC) || (uint32_t)(st >> 32) != g) {
            /* dynamic: join while run g is open, else skip it (the caller
             * did the work, or a later run has begun: read gen again) */
            bool joined = false;
            while ((uint32_t)(st >> 32) == g && !(st & RS_CLOSED) && !(st & RS_STATIC) &&
                   a->ith < atomic_load_explicit(&p->width, memory_order_relaxed)) {
                if (atomic_compare_exchange_weak_explicit(&p->run_state, &st, st + 1, memory_order_acq_rel,
                                                          memory_order_acquire)) {
                    joined = true;
                    break;
                }
            }
            if (!joined)
                continue;
            p->fn(p->ctx, a->ith, p->n);
            uint64_t left = atomic_fetch_sub_explicit(&p->run_state, 1, memory_order_acq_rel) - 1;
            if ((left & RS_CLOSED) && (left & RS_COUNT) == 0) {
                pthread_mutex_lock(&p->mu);
                pthread_cond_signal(&p->cv_done);
                pthread_mutex_unlock(&p->mu);
            }
            continue;
        }
        p->fn(p->ctx, a->ith, p->n);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            /* Last one out: wake the caller should it be sleeping. */
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->cv_done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* The cores this process may run on (taskset, cgroup cpusets), else all online. */
static int cores_available(void)
{
    cpu_set_t set;
    long c = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        c = CPU_COUNT(&set);
    if (c <= 0)
        c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

int tpool_cores(void)
{
    return cores_available();
}

int tpool_width_for(int n, int n_cores, int running, int width)
{
    /* running counts this caller and the `width` - 1 workers spinning
     * between runs (asleep ones are not counted: then others is too low,
     * never too high); the rest belong to other processes */
    int others = running - width;
    if (others < 0)
        others = 0;
    int w = n_cores - others;
    return w < 1 ? 1 : w > n ? n : w;
}

/* The machine's runnable threads now (the 4th field of /proc/loadavg,
 * "running/total"), or -1. */
static int runnable_now(void)
{
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[128];
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0)
        return -1;
    buf[k] = 0;
    const char *q = buf;
    for (int f = 0; f < 3 && q; f++) {
        q = strchr(q, ' ');
        if (q)
            q++;
    }
    if (!q || *q < '0' || *q > '9')
        return -1;
    return atoi(q);
}

/* Every 10 ms of runs: the width other processes leave us; a new width
 * takes effect when three looks in a row agree. */
static void adapt_width(tpool *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (now < p->next_check_ns)
        return;
    p->next_check_ns = now + 10 * 1000 * 1000;
    int running = runnable_now();
    if (running < 0)
        return;
    int cur = atomic_load_explicit(&p->width, memory_order_relaxed);
    int w = tpool_width_for(p->n, p->n_cores, running, cur);
    if (w == cur) {
        p->want_seen = 0;
        return;
    }
    if (w != p->want) {
        p->want = w;
        p->want_seen = 0;
    }
    if (++p->want_seen >= 3) {
        atomic_store_explicit(&p->width, w, memory_order_relaxed);
        p->want_seen = 0;
    }
}

void tpool_set_adaptive(tpool *p, bool on)
{
    if (!p)
        return;
    p->adaptive = on;
    if (!on)
        atomic_store(&p->width, p->n);
}

int tpool_width(const tpool *p)
{
    return p ? atomic_load((atomic_int *)&p->width) : 1;
}

tpool *tpool_new(int n_threads)
{
    if (n_threads <= 0)
        n_threads = cores_available();
    if (n_threads > 512)
        n_threads = 512;
    tpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n_threads;
    p->bufs = calloc((size_t)n_threads, sizeof *p->bufs);
    if (!p->bufs) {
        free(p);
        return NULL;
    }
    atomic_init(&p->gen, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->run_state, RS_STATIC | RS_CLOSED);
    atomic_init(&p->width, n_threads);
    p->adaptive = true;
    p->n_cores = cores_available();
    p->want = n_threads;
    atomic_init(&p->stop, 0);
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        goto fail_mu;
    if (pthread_cond_init(&p->cv_work, NULL) != 0)
        goto fail_cv_work;
    if (pthread_cond_init(&p->cv_done, NULL) != 0)
        goto fail_cv_done;
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads, sizeof *p->threads);
        p->args = calloc((size_t)n_threads, sizeof *p->args);
        if (!p->threads || !p->args)
            goto fail_threads;
        for (int i = 1; i < n_threads; i++) {
            p->args[i].pool = p;
            p->args[i].ith = i;
            if (pthread_create(&p->threads[i], NULL, worker_main, &p->args[i]) != 0) {
                p->n = i; /* join the ones started */
                tpool_free(p);
                return NULL;
            }
        }
    }
    return p;

fail_threads:
    free(p->threads);
    free(p->args);
    pthread_cond_destroy(&p->cv_done);
fail_cv_done:
    pthread_cond_destroy(&p->cv_work);
fail_cv_work:
    pthread_mutex_destroy(&p->mu);
fail_mu:
    free(p->bufs);
    free(p);
    return NULL;
}

void tpool_free(tpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    free(p->args);
    pthread_cond_destroy(&p->cv_done);
    pthread_cond_destroy(&p->cv_work);
    pthread_mutex_destroy(&p->mu);
    for (int i = 0; i < p->n; i++)
        free(p->bufs[i].ptr);
    free(p->bufs);
    free(p);
}

void *tpool_thread_buf(tpool *p, int ith, size_t size)
{
    if (!p || ith < 0 || ith >= p->n)
        return NULL;
    thread_buf *b = &p->bufs[ith];
    if (b->size < size) {
        void *n = malloc(size);
        if (!n)
            return NULL;
        free(b->ptr);
        b->ptr = n;
        b->size = size;
    }
    return b->ptr;
}

int tpool_threads(const tpool *p)
{
    return p ? p->n : 1;
}

/* Publish fn/ctx and the run's state (flags: RS_STATIC or 0), then wake the
 * workers by bumping the generation. */
static void start_run(tpool *p, void (*fn)(void *ctx, int ith, int nth), void *ctx, uint64_t flags)
{
    p->fn = fn;
    p->ctx = ctx;
    unsigned g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&p->run_state, (uint64_t)g << 32 | flags, memory_order_release);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    if (p->n_sleeping > 0)
        pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
}

static bool static_done(tpool *p)
{
    return atomic_load_explicit(&p->pending, memory_order_acquire) == 0;
}

static bool dynamic_done(tpool *p)
{
    return (atomic_load_explicit(&p->run_state, memory_order_acquire) & RS_COUNT) == 0;
}

/* Spin a while, then sleep on cv_done (the last worker out signals it). */
static void wait_done(tpool *p, bool (*done)(tpool *p))
{
    for (int spin = 0; spin < SPIN_ITERS; spin++) {
        if (done(p))
            return;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    while (!done(p))
        pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void tpool_run(tpool *p, void (*fn)(void *ctx, int ith, int nth), void *ctx)
{
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    start_run(p, fn, ctx, RS_STATIC);
    fn(ctx, 0, p->n);
    wait_done(p, static_done);
}

void tpool_run_dynamic(tpool *p, void (*fn)(void *ctx, int ith, int nth), void *ctx)
{
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    if (p->adaptive)
        adapt_width(p);
    if (atomic_load_explicit(&p->width, memory_order_relaxed) == 1) {
        fn(ctx, 0, p->n); /* the workers are not woken */
        return;
    }
    start_run(p, fn, ctx, 0);
    fn(ctx, 0, p->n);
    /* every piece of work is handed out: close the run, wait for the joined */
    uint64_t st = atomic_fetch_or_explicit(&p->run_state, RS_CLOSED, memory_order_acq_rel);
    if ((st & RS_COUNT) != 0)
        wait_done(p, dynamic_done);
}
