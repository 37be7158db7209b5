/* bench_dequant: single-threaded dequantization speed per type and per path.
 *
 * Input: N_ELEMS (default 16M) elements of each type, realistic blocks
 * (random codes, finite scales), a 5-35 MB buffer streamed from memory/L3.
 * Output: a 16K-float (64 KB) buffer that stays in L2, re-used for every
 * chunk. Reported: billions of values per second and the input GB/s.
 *
 * Time is this thread's CPU time (the machine may be shared); --wall for
 * wall-clock time.
 *
 * usage: bench_dequant [TYPE...] [--elems N] [--seconds S] [--wall] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "ggtype.h"

enum { CHUNK = 16384 };

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* This thread's CPU time: the machine is shared, and a benchmark that waits
 * for a core would report the other processes' load. --wall uses wall time. */
static int use_wall = 0;
static double now(void)
{
    struct timespec ts;
    clock_gettime(use_wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Fill `nb` blocks of `type` with random codes and small finite scales. */
static void fill(uint32_t type, uint8_t *buf, uint64_t nb)
{
    const ggtype_traits *tr = ggtype_get(type);
    for (uint64_t i = 0; i < nb * tr->type_size; i++)
        buf[i] = (uint8_t)rng();
    if (type == GGTYPE_F32 || type == GGTYPE_F16 || type == GGTYPE_BF16 || type == GGTYPE_F64) {
        for (uint64_t i = 0; i < nb; i++) {
            float v = (float)((double)(rng() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
            uint8_t *p = buf + i * tr->type_size;
            if (type == GGTYPE_F32)
                memcpy(p, &v, 4);
            else if (type == GGTYPE_F64) {
                double dv = v;
                memcpy(p, &dv, 8);
            } else {
                uint16_t h = type == GGTYPE_F16 ? codec_f32_to_f16(v) : codec_f32_to_bf16(v);
                memcpy(p, &h, 2);
            }
        }
        return;
    }
    if (!tr->is_quantized)
        return;
    codec_field fields[1024];
    for (uint64_t i = 0; i < nb; i++) {
        uint8_t *p = buf + i * tr->type_size;
        int n = codec_block_anatomy(type, p, fields, 1024);
        for (int k = 0; k < n && k < 1024; k++)
            if (fields[k].kind == CODEC_FIELD_SCALE && fields[k].byte_len == 2 && fields[k].bit_len == 0) {
                uint16_t h = codec_f32_to_f16((float)(rng() % 1000 + 1) * 1e-5f);
                memcpy(p + fields[k].byte_offset, &h, 2);
            }
        if (type == GGTYPE_Q8_K) {
            float d = 1e-3f;
            memcpy(p, &d, 4);
        }
    }
}

int main(int argc, char **argv)
{
    uint64_t n_elems = 16u << 20;
    double min_seconds = 0.3;
    int types[GGTYPE_COUNT], n_types = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--elems") && i + 1 < argc)
            n_elems = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            min_seconds = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--wall"))
            use_wall = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: bench_dequant [TYPE...] [--elems N] [--seconds S] [--wall]\n");
            return 0;
        } else {
            int t = ggtype_from_name(argv[i]);
            if (t < 0) {
                fprintf(stderr, "bench_dequant: unknown type '%s'\n", argv[i]);
                return 2;
            }
            types[n_types++] = t;
        }
    }
    if (n_types == 0)
        for (int t = 0; t < GGTYPE_COUNT; t++)
            if (ggtype_get((uint32_t)t))
                types[n_types++] = t;
    n_elems -= n_elems % CHUNK;
    if (n_elems == 0)
        n_elems = CHUNK;

    static float out[CHUNK] __attribute__((aligned(64)));
    static const char *const paths[] = {"scalar", "avx2", "avx512"};
    printf("%s time; single thread; input %llu elements per type streamed in %d-element chunks into one "
           "%d KB output buffer (L2-resident)\n",
           use_wall ? "wall-clock" : "thread CPU", (unsigned long long)n_elems, CHUNK, (int)(CHUNK * sizeof(float) / 1024));
    printf("%-8s %-7s %10s %10s %9s\n", "type", "path", "Gvalues/s", "input GB/s", "input MB");
    for (int ti = 0; ti < n_types; ti++) {
        const uint32_t t = (uint32_t)types[ti];
        const ggtype_traits *tr = ggtype_get(t);
        if (CHUNK % tr->blck_size)
            continue;
        const uint64_t chunk_bytes = ggtype_row_size(t, CHUNK, NULL);
        const uint64_t n_chunks = n_elems / CHUNK;
        uint8_t *in = aligned_alloc(64, (n_chunks * chunk_bytes + 63) / 64 * 64);
        if (!in)
            return 1;
        fill(t, in, n_chunks * CHUNK / tr->blck_size);
        const char *prev_path = NULL;
        for (int p = 0; p < 3; p++) {
            if (codec_set_simd(paths[p]) != 0)
                continue;
            const char *used = codec_dequantize_path(t);
            if (prev_path && !strcmp(used, prev_path))
                continue; /* this path has no own kernel for the type */
            prev_path = used;
            /* warm-up pass */
            for (uint64_t c = 0; c < n_chunks; c++)
                codec_dequantize(t, in + c * chunk_bytes, out, CHUNK);
            uint64_t values = 0;
            const double t0 = now();
            double t1;
            do {
                for (uint64_t c = 0; c < n_chunks; c++)
                    codec_dequantize(t, in + c * chunk_bytes, out, CHUNK);
                values += n_chunks * CHUNK;
                t1 = now();
            } while (t1 - t0 < min_seconds);
            const double secs = t1 - t0;
            const double gv = values / secs * 1e-9;
            printf("%-8s %-7s %10.2f %10.2f %9.1f\n", tr->name, used, gv,
                   (double)values / CHUNK * chunk_bytes / secs * 1e-9, n_chunks * chunk_bytes / 1e6);
            fflush(stdout);
        }
        free(in);
    }
    codec_set_simd(NULL);
    return 0;
}
