/* bench_matvec: kern_matmul speed on TinyLlama-1.1B shapes.
 *
 *   bench_matvec [--threads 1,2] [--types q4_0,q8_0,q4_K,q6_K,f16] [--tok 512]
 *                [--reps 3] [--simd scalar|avx2|avx512] [--no-mm]
 *   bench_matvec --bw-only [--threads 2]
 *
 * For each type, thread count and shape: mat-vec (1 token) GB/s of weights
 * read and GFLOP/s, mat-mat (--tok tokens) GFLOP/s; then the time of one
 * TinyLlama token (22 layers x {q,k,v,o,gate,up,down} + output) estimated from
 * the matmuls alone. Mat-vec cycles through copies of the matrix (>= 256 MB
 * in all) so the weights come from memory as in a real model, not from cache
 * (mv$: the same matrix again, cache-resident when it fits). Best of --reps
 * runs (mat-vec: best of 10 x reps windows of ~5 ms). GFLOP/cpu-s: mat-mat
 * FLOPs per second of CPU time (all threads), the rate of one core that
 * other processes do not preempt. --bw-only prints only the plain read
 * bandwidth, one line "read_gb_s THREADS GB/S" per thread count (what
 * bench/vs_llama.sh divides by the bytes a token reads). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "ggtype.h"
#include "kernels.h"
#include "memread.h"

typedef struct {
    int64_t rows, cols;
    const char *what;
    int per_layer; /* times per layer; 0 = once per token (output) */
} bshape;

static const bshape SHAPES[] = {
    {2048, 2048, "q,o", 2},        {256, 2048, "k,v", 2},    {5632, 2048, "gate,up", 2},
    {2048, 5632, "down", 1},       {32000, 2048, "output", 0},
};
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))
#define N_LAYERS 22

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ULL;
static uint32_t rnd32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* Random blocks with every f16 scale field set to a small normal value. */
static void fill(uint32_t type, uint8_t *w, size_t n_bytes, int64_t cols)
{
    const ggtype_traits *tr = ggtype_get(type);
    for (size_t i = 0; i < n_bytes; i++)
        w[i] = (uint8_t)rnd32();
    if (type == GGTYPE_F16) {
        for (size_t i = 0; i + 2 <= n_bytes; i += 2) {
            uint16_t h = codec_f32_to_f16((float)((int)(rnd32() % 2001) - 1000) * 1e-3f);
            memcpy(w + i, &h, 2);
        }
        return;
    }
    if (type == GGTYPE_F32) {
        for (size_t i = 0; i + 4 <= n_bytes; i += 4) {
            float f = (float)((int)(rnd32() % 2001) - 1000) * 1e-3f;
            memcpy(w + i, &f, 4);
        }
        return;
    }
    (void)cols;
    uint16_t small = codec_f32_to_f16(0.01f);
    for (size_t b = 0; b + tr->type_size <= n_bytes; b += tr->type_size) {
        switch (type) {
        case GGTYPE_Q4_K: case GGTYPE_Q5_K: case GGTYPE_Q2_K:
            memcpy(w + b + (type == GGTYPE_Q2_K ? 80 : 0), &small, 2);
            memcpy(w + b + (type == GGTYPE_Q2_K ? 82 : 2), &small, 2);
            break;
        case GGTYPE_Q6_K:
            memcpy(w + b + 208, &small, 2);
            break;
        case GGTYPE_Q3_K:
            memcpy(w + b + 108, &small, 2);
            break;
        default: /* the 32-element types: d first (and m next for _1 types) */
            memcpy(w + b, &small, 2);
            if (type == GGTYPE_Q4_1 || type == GGTYPE_Q5_1)
                memcpy(w + b + 2, &small, 2);
            break;
        }
    }
}

typedef struct {
    double mv_s[N_SHAPES], mm_s[N_SHAPES], mm_cpu[N_SHAPES];
} results;

/* Plain streaming read of 256 MB split across the pool's threads (each
 * thread its own contiguous part): what memory gives right now. The faster
 * of two loops counts: 32-byte vector adds without software prefetch (on a
 * Zen 4 the faster by 10-20%), and 64-bit adds with a prefetch 1 KB ahead. */
typedef struct {
    const uint64_t *p;
    size_t n; /* words */
    int vec;
    uint64_t sum[16];
} read_ctx;

static void read_worker(void *arg, int ith, int nth)
{
    read_ctx *c = arg;
    size_t per = c->n / (size_t)nth / 16 * 16, b = per * (size_t)ith;
    if (c->vec) {
        if (ith < 16)
            c->sum[ith] = memread_words(c->p + b, per);
        return;
    }
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = b; i < b + per; i += 4) {
        if (i % 8 == 0) /* one line in 64 bytes, 1 KB ahead, as the kernels prefetch */
            __builtin_prefetch(c->p + i + 128);
        a0 += c->p[i];
        a1 += c->p[i + 1];
        a2 += c->p[i + 2];
        a3 += c->p[i + 3];
    }
    if (ith < 16)
        c->sum[ith] = a0 + a1 + a2 + a3;
}

static double read_bandwidth(tpool *pool)
{
    size_t n = (size_t)256 << 20;
    uint64_t *p = malloc(n);
    if (!p)
        return 0;
    memset(p, 1, n);
    double best = 1e30;
    read_ctx c = {p, n / 8, 0, {0}};
    const int vec = __builtin_cpu_supports("avx2");
    for (int r = 0; r < 10; r++) {
        c.vec = vec && r % 2;
        double t0 = now();
        tpool_run(pool, read_worker, &c);
        double dt = now() - t0;
        if (dt < best)
            best = dt;
    }
    free(p);
    return (double)n / best / 1e9;
}

/* Best wall seconds per call; *cpu_out (if not NULL): the least CPU seconds
 * (all threads) per call, which preemption by other processes does not inflate. */
static double time_matmul(tpool *pool, uint32_t type, const uint8_t *w, size_t mat_bytes,
                          int n_copies, size_t rb, const bshape *s, const float *x, int64_t ntok,
                          float *y, void *scratch, size_t ss, int reps, double *cpu_out)
{
    double best = 1e30, best_cpu = 1e30;
    /* mat-vec: many short windows (~5 ms), the best one counts, so that a
     * window without preemption shows up even on a busy machine */
    int iters = 1;
    if (ntok == 1) {
        double t0 = now();
        kern_matmul(pool, type, w, rb, s->rows, s->cols, x, 1, y, scratch, ss);
        double dt = now() - t0;
        iters = (int)(0.005 / (dt > 1e-6 ? dt : 1e-6));
        if (iters < 2)
            iters = 2;
        reps *= 10;
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now(), c0 = cpu_now();
        for (int i = 0; i < iters; i++) {
            const uint8_t *wi = w + (size_t)(i % n_copies) * mat_bytes;
            if (kern_matmul(pool, type, wi, rb, s->rows, s->cols, x, ntok, y, scratch, ss) != 0) {
                fprintf(stderr, "kern_matmul failed\n");
                exit(1);
            }
        }
        double dt = (now() - t0) / iters, dc = (cpu_now() - c0) / iters;
        if (dt < best)
            best = dt;
        if (dc < best_cpu)
            best_cpu = dc;
    }
    if (cpu_out)
        *cpu_out = best_cpu;
    return best;
}

static int parse_list(const char *s, char out[][16], int cap)
{
    int n = 0;
    while (*s && n < cap) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len >= 16)
            len = 15;
        memcpy(out[n], s, len);
        out[n][len] = 0;
        n++;
        if (!e)
            break;
        s = e + 1;
    }
    return n;
}

int main(int argc, char **argv)
{
    char types[16][16], threads_s[8][16];
    int n_types = parse_list("q4_0,q8_0,q4_K,q6_K,f16", types, 16);
    int n_threads = parse_list("1,2", threads_s, 8);
    int64_t ntok_mm = 512;
    int reps = 3;
    int do_mm = 1, bw_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--types") && i + 1 < argc)
            n_types = parse_list(argv[++i], types, 16);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            n_threads = parse_list(argv[++i], threads_s, 8);
        else if (!strcmp(argv[i], "--tok") && i + 1 < argc)
            ntok_mm = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-mm"))
            do_mm = 0;
        else if (!strcmp(argv[i], "--bw-only"))
            bw_only = 1;
        else if (!strcmp(argv[i], "--simd") && i + 1 < argc) {
            const char *v = argv[++i];
            kern_simd s = !strcmp(v, "scalar") ? KERN_SIMD_SCALAR
                          : !strcmp(v, "avx2") ? KERN_SIMD_AVX2
                          : !strcmp(v, "avx2-plain") ? KERN_SIMD_AVX2_PLAIN
                                                  : KERN_SIMD_AVX512;
            if (kern_simd_set(s) != 0) {
                fprintf(stderr, "SIMD path %s not available\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: %s [--threads 1,2] [--types q4_0,...] [--tok 512] "
                            "[--reps 3] [--simd scalar|avx2|avx2-plain|avx512] [--no-mm] [--bw-only]\n",
                    argv[0]);
            return 2;
        }
    }
    if (ntok_mm < 2 || reps < 1)
        return 2;
    if (bw_only) {
        for (int hi = 0; hi < n_threads; hi++) {
            int nth = atoi(threads_s[hi]);
            tpool *pool = nth > 0 ? tpool_new(nth) : NULL;
            if (!pool)
                return 1;
            printf("read_gb_s %d %.2f\n", nth, read_bandwidth(pool));
            tpool_free(pool);
        }
        return 0;
    }
    printf("SIMD path: %s; mat-mat tokens: %lld; best of %d\n", kern_simd_name(),
           (long long)ntok_mm, reps);
    for (int hi = 0; hi < n_threads; hi++) {
        int nth = atoi(threads_s[hi]);
        tpool *pool = tpool_new(nth);
        if (!pool)
            return 1;
        printf("plain read of 256 MB, %d thread%s: %.1f GB/s (memory as this machine gives it now)\n",
               nth, nth > 1 ? "s" : "", read_bandwidth(pool));
        tpool_free(pool);
    }
    printf("mv: weights from memory (copies >= 256 MB); mv$: the same matrix again (cache)\n");

    float *x = malloc((size_t)ntok_mm * 5632 * sizeof(float));
    float *y = malloc((size_t)ntok_mm * 32000 * sizeof(float));
    if (!x || !y)
        return 1;
    /* F16 values, as the backend rounds activations for F16 weights (their
     * one-token kernel then reads them as F16, as ggml does) */
    for (int64_t i = 0; i < ntok_mm * 5632; i++)
        x[i] = codec_f16_to_f32(codec_f32_to_f16((float)((int)(rnd32() % 2001) - 1000) * 1e-3f));

    for (int ti = 0; ti < n_types; ti++) {
        int type = ggtype_from_name(types[ti]);
        if (type < 0) {
            fprintf(stderr, "unknown type %s\n", types[ti]);
            return 2;
        }
        for (int hi = 0; hi < n_threads; hi++) {
            int nth = atoi(threads_s[hi]);
            tpool *pool = tpool_new(nth);
            if (!pool)
                return 1;
            results res;
            memset(&res, 0, sizeof res);
            printf("\n%-6s %d thread%s  %-14s %9s %9s %10s %9s | %10s %12s\n",
                   ggtype_name((uint32_t)type), nth, nth > 1 ? "s" : " ", "shape", "MB",
                   "mv GB/s", "mv GFLOP/s", "mv$ GB/s", do_mm ? "mm GFLOP/s" : "",
                   do_mm ? "GFLOP/cpu-s" : "");
            for (int si = 0; si < N_SHAPES; si++) {
                const bshape *s = &SHAPES[si];
                size_t rb = (size_t)ggtype_row_size((uint32_t)type, (uint64_t)s->cols, NULL);
                size_t mat = rb * (size_t)s->rows;
                int copies = (int)((256u << 20) / mat) + 1;
                uint8_t *w = malloc(mat * (size_t)copies);
                if (!w)
                    return 1;
                fill((uint32_t)type, w, mat, s->cols);
                for (int c = 1; c < copies; c++)
                    memcpy(w + (size_t)c * mat, w, mat);
                size_t ss = kern_matmul_scratch_size((uint32_t)type, s->cols, ntok_mm);
                void *scratch = ss ? malloc(ss) : NULL;
                res.mv_s[si] = time_matmul(pool, (uint32_t)type, w, mat, copies, rb, s, x, 1, y,
                                           scratch, ss, reps, NULL);
                double flop1 = 2.0 * (double)s->rows * (double)s->cols;
                double cached = time_matmul(pool, (uint32_t)type, w, mat, 1, rb, s, x, 1, y,
                                            scratch, ss, reps, NULL);
                printf("%-16s %5lldx%-5lld %-7s %9.1f %9.1f %10.1f %9.1f", "", (long long)s->rows,
                       (long long)s->cols, s->what, (double)mat / 1e6, (double)mat / res.mv_s[si] / 1e9,
                       flop1 / res.mv_s[si] / 1e9, (double)mat / cached / 1e9);
                if (do_mm) {
                    res.mm_s[si] = time_matmul(pool, (uint32_t)type, w, mat, 1, rb, s, x, ntok_mm,
                                               y, scratch, ss, reps > 2 ? 2 : reps, &res.mm_cpu[si]);
                    printf(" | %10.1f %12.1f", flop1 * (double)ntok_mm / res.mm_s[si] / 1e9,
                           flop1 * (double)ntok_mm / res.mm_cpu[si] / 1e9);
                }
                printf("\n");
                fflush(stdout);
                free(scratch);
                free(w);
            }
            double tg = 0, pp = 0, pp_cpu = 0, bytes = 0;
            for (int si = 0; si < N_SHAPES; si++) {
                const bshape *s = &SHAPES[si];
                int times = s->per_layer ? s->per_layer * N_LAYERS : 1;
                size_t rb = (size_t)ggtype_row_size((uint32_t)type, (uint64_t)s->cols, NULL);
                tg += times * res.mv_s[si];
                bytes += (double)times * (double)rb * (double)s->rows;
                /* prompt: every layer on the whole batch, the output for the last token */
                pp += s->per_layer ? times * res.mm_s[si] : res.mv_s[si];
                pp_cpu += s->per_layer ? times * res.mm_cpu[si] / nth : res.mv_s[si];
            }
            printf("  TinyLlama estimate (matmuls only): %.0f MB/token, tg %.1f tok/s (%.1f GB/s)",
                   bytes / 1e6, 1.0 / tg, bytes / tg / 1e9);
            if (do_mm)
                printf(", pp%lld %.1f tok/s (%.1f from CPU time: %d uncontended core%s)",
                       (long long)ntok_mm, (double)ntok_mm / pp, (double)ntok_mm / pp_cpu, nth,
                       nth > 1 ? "s" : "");
            printf("\n");
            tpool_free(pool);
        }
    }
    free(x);
    free(y);
    return 0;
}
