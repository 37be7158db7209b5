/* bench_quantize: values quantized per second, per type, single thread.
 *
 *   bench_quantize [MIN_SECONDS]     (default 0.5 per type)
 *
 * Input: 1M N(0,1) floats (4 MiB, rows of 4096), quantized with
 * codec_quantize (ggml's reference algorithm, no importance matrix) again and
 * again until MIN_SECONDS of this thread's CPU time have passed (CPU time, not
 * wall time, so that other processes on a busy machine do not count); the
 * best of 3 such runs is reported.
 * The "scalar" column is the same output computed by ggml's candidate-by-
 * candidate search code (qz_quantize with lanes off), i.e. what ggml's own
 * reference quantizer costs; the types without a search have no lanes.
 * When ggml itself can be loaded (the peer oracle's libggml-base.so, or the
 * library named by $GGSCOPE_GGML_BASE), its ggml_quantize_chunk is timed on
 * the same input too, and its output compared with ours. */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "ggtype.h"
#include "quantize_internal.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
    return ((double)(rng_next(s) >> 11) + 1.0) / 9007199254740992.0;
}

typedef size_t (*quantize_chunk_fn)(int type, const float *src, void *dst, int64_t start,
                                    int64_t nrows, int64_t n_per_row, const float *imatrix);

static quantize_chunk_fn load_ggml(void)
{
    char path[1024];
    const char *env = getenv("GGSCOPE_GGML_BASE"), *home = getenv("HOME");
    if (env)
        snprintf(path, sizeof path, "%s", env);
    else
        snprintf(path, sizeof path,
                 "%s/.cache/ggscope-peer/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/"
                 "libggml-base.so",
                 home ? home : "");
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return lib ? (quantize_chunk_fn)dlsym(lib, "ggml_quantize_chunk") : NULL;
}

int main(int argc, char **argv)
{
    const double min_s = argc > 1 ? atof(argv[1]) : 0.5;
    enum { N = 4096, R = 256 };
    const size_t total = (size_t)N * R;
    float *x = malloc(total * sizeof(float));
    void *q = malloc(total * 4);
    if (!x || !q)
        return 1;
    uint64_t s = 1;
    for (size_t i = 0; i < total; i += 2) {
        const double r = sqrt(-2.0 * log(rng_unit(&s))), a = 6.283185307179586 * rng_unit(&s);
        x[i] = (float)(r * cos(a));
        x[i + 1] = (float)(r * sin(a));
    }
    const quantize_chunk_fn ggml = load_ggml();
    void *q2 = malloc(total * 4);
    if (!q2)
        return 1;
    printf("%-8s %9s %12s %10s %12s %8s %10s\n", "type", "bits/val", "Mvalues/s", "MB/s out",
           "scalar Mv/s", "speedup", ggml ? "ggml Mv/s" : "");
    for (uint32_t type = 0; type < GGTYPE_COUNT; type++) {
        if (!codec_can_quantize(type))
            continue;
        double best[3] = {0, 0, 0};
        size_t bytes = 0;
        for (int run = 0; run < 9; run++) {
            const int mode = run % 3; /* 0 scalar, 1 lanes, 2 ggml */
            if (mode == 2 && !ggml)
                continue;
            size_t reps = 0;
            const double t0 = now();
            double t1;
            do {
                if (mode == 2)
                    ggml((int)type, x, q2, 0, R, N, NULL);
                else
                    bytes = qz_quantize(type, x, q, R, N, NULL, mode == 1);
                reps++;
                t1 = now();
            } while (t1 - t0 < min_s);
            const double rate = (double)reps * (double)total / (t1 - t0);
            if (rate > best[mode])
                best[mode] = rate;
        }
        printf("%-8s %9.3f %12.1f %10.1f %12.1f %7.1fx", ggtype_name(type),
               8.0 * (double)bytes / (double)total, best[1] / 1e6,
               best[1] * (double)bytes / (double)total / 1e6, best[0] / 1e6, best[1] / best[0]);
        if (ggml) {
            qz_quantize(type, x, q, R, N, NULL, true);
            printf(" %10.1f %s", best[2] / 1e6, memcmp(q, q2, bytes) ? "OUTPUT DIFFERS" : "same bytes");
        }
        printf("\n");
        fflush(stdout);
    }
    free(q2);
    free(x);
    free(q);
    return 0;
}
