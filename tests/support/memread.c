/* memread: see memread.h. */
#include "memread.h"

#include <string.h>

#include "clock.h"

typedef uint64_t u64x4 __attribute__((vector_size(32)));

__attribute__((target("avx2"))) static uint64_t words_avx2(const uint64_t *p, size_t n)
{
    u64x4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (size_t i = 0; i + 16 <= n; i += 16) {
        u64x4 v0, v1, v2, v3;
        memcpy(&v0, p + i, 32);
        memcpy(&v1, p + i + 4, 32);
        memcpy(&v2, p + i + 8, 32);
        memcpy(&v3, p + i + 12, 32);
        a0 += v0, a1 += v1, a2 += v2, a3 += v3;
    }
    u64x4 a = a0 + a1 + a2 + a3;
    return a[0] + a[1] + a[2] + a[3];
}

uint64_t memread_words(const uint64_t *p, size_t n)
{
    n = n / 16 * 16;
    if (__builtin_cpu_supports("avx2"))
        return words_avx2(p, n);
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = 0; i < n; i += 4) {
        a0 += p[i];
        a1 += p[i + 1];
        a2 += p[i + 2];
        a3 += p[i + 3];
    }
    return a0 + a1 + a2 + a3;
}

typedef struct {
    const memread_range *r;
    size_t n, words; /* ranges; their whole 8-byte words in all */
    uint64_t sum[64]; /* each thread's sum, kept so that the reads stay */
} ranges_ctx;

static uint64_t words_any(const uint64_t *p, size_t n)
{
    const size_t body = n / 16 * 16;
    uint64_t s = memread_words(p, body);
    for (size_t i = body; i < n; i++)
        s += p[i];
    return s;
}

/* Thread ith's part of the ranges' words laid end to end: words / nth of
 * them from (words / nth) x ith on, the last thread to the end. */
static void ranges_worker(void *arg, int ith, int nth)
{
    ranges_ctx *c = arg;
    const size_t lo = c->words / (size_t)nth * (size_t)ith;
    const size_t hi = ith == nth - 1 ? c->words : c->words / (size_t)nth * (size_t)(ith + 1);
    uint64_t s = 0;
    size_t at = 0;
    for (size_t i = 0; i < c->n && at < hi; i++) {
        const size_t w = c->r[i].bytes / 8, a0 = lo > at ? lo - at : 0, a1 = hi - at < w ? hi - at : w;
        if (a0 < a1)
            s += words_any((const uint64_t *)c->r[i].p + a0, a1 - a0);
        at += w;
    }
    if (ith < 64)
        c->sum[ith] = s;
}

double memread_ranges(tpool *pool, const memread_range *r, size_t n, uint64_t *sum)
{
    ranges_ctx c = {r, n, 0, {0}};
    for (size_t i = 0; i < n; i++)
        c.words += r[i].bytes / 8;
    double t0 = clock_now_s();
    tpool_run(pool, ranges_worker, &c);
    const double s = clock_now_s() - t0;
    if (sum) {
        *sum = 0;
        for (int i = 0; i < 64; i++)
            *sum += c.sum[i];
    }
    return s;
}
