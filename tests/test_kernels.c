/* Tests of the compute kernels: thread pool, activation quantization, and
 * kern_matmul for every ggml type on every SIMD path this CPU has, against
 * double-precision references built from codec_dequantize. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#include "codec.h"
#include "cpufeat.h"
#include "ggtype.h"
#include "kernels.h"
#include "kernels_internal.h"
#include "memread.h"
#include "quant_blocks.h"

/* ---- random numbers (xorshift64*) ---- */

static uint64_t g_rng = 0x9E3779B97F4A7C15ULL;

static uint64_t rnd64(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 2685821657736338717ULL;
}

static float rndf(float lo, float hi)
{
    return lo + (hi - lo) * (float)((rnd64() >> 40) * (1.0 / 16777216.0));
}

/* ---- thread pool ---- */

typedef struct {
    atomic_int calls;
    atomic_int seen[8];
    int nth_seen;
} pool_probe;

static void probe_fn(void *ctx, int ith, int nth)
{
    pool_probe *p = ctx;
    atomic_fetch_add(&p->calls, 1);
    atomic_fetch_add(&p->seen[ith], 1);
    p->nth_seen = nth;
}

static void test_pool_runs(void **state)
{
    (void)state;
    for (int n = 1; n <= 4; n++) {
        tpool *pool = tpool_new(n);
        assert_non_null(pool);
        assert_int_equal(tpool_threads(pool), n);
        pool_probe pr;
        memset(&pr, 0, sizeof pr);
        const int runs = 2000;
        for (int i = 0; i < runs; i++) {
            tpool_run(pool, probe_fn, &pr);
            /* every thread has returned when run returns */
            assert_int_equal(atomic_load(&pr.calls), (i + 1) * n);
        }
        for (int i = 0; i < n; i++)
            assert_int_equal(atomic_load(&pr.seen[i]), runs);
        for (int i = n; i < 8; i++)
            assert_int_equal(atomic_load(&pr.seen[i]), 0);
        assert_int_equal(pr.nth_seen, n);
        tpool_free(pool);
    }
}

static void sleepy_fn(void *ctx, int ith, int nth)
{
    (void)nth;
    pool_probe *p = ctx;
    if (ith == 1) { /* outlast the spin so the caller sleeps on the condition variable */
        struct timespec ts = {0, 3 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(&p->calls, 1);
}

static void test_pool_sleep_wake(void **state)
{
    (void)state;
    tpool *pool = tpool_new(3);
    assert_non_null(pool);
    pool_probe pr;
    memset(&pr, 0, sizeof pr);
    for (int i = 0; i < 20; i++) {
        tpool_run(pool, sleepy_fn, &pr);
        assert_int_equal(atomic_load(&pr.calls), (i + 1) * 3);
        /* let the workers fall asleep between some runs */
        if (i % 4 == 0) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    tpool_free(pool);
}

/* Dynamic runs: items from a shared counter, each done exactly once; a
 * worker that wakes late skips the run. Interleaved with static runs, which
 * must still call every thread. */
typedef struct {
    atomic_int next;
    int n_items;
    atomic_int done[256];
    atomic_int joined;
    int slow_ith; /* this worker sleeps before taking work (-1: none) */
} dyn_probe;

static void dyn_fn(void *ctx, int ith, int nth)
{
    (void)nth;
    dyn_probe *d = ctx;
    atomic_fetch_add(&d->joined, 1);
    if (ith == d->slow_ith) {
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int i = atomic_fetch_add(&d->next, 1); i < d->n_items; i = atomic_fetch_add(&d->next, 1))
        atomic_fetch_add(&d->done[i], 1);
}

static void test_pool_dynamic(void **state)
{
    (void)state;
    for (int n = 1; n <= 4; n++) {
        tpool *pool = tpool_new(n);
        assert_non_null(pool);
        pool_probe pr;
        memset(&pr, 0, sizeof pr);
        int max_joined = 0;
        for (int r = 0; r < 3000; r++) {
            dyn_probe d;
            memset(&d, 0, sizeof d);
            d.n_items = 1 + r % 200;
            d.slow_ith = r % 97 == 0 ? n - 1 : -1;
            tpool_run_dynamic(pool, dyn_fn, &d);
            for (int i = 0; i < d.n_items; i++)
                if (atomic_load(&d.done[i]) != 1)
                    fail_msg("%d threads, run %d: item %d done %d times", n, r, i, atomic_load(&d.done[i]));
            int j = atomic_load(&d.joined);
            assert_true(j >= 1 && j <= n);
            if (j > max_joined)
                max_joined = j;
            if (r % 3 == 0) {
                tpool_run(pool, probe_fn, &pr);
                assert_int_equal(atomic_load(&pr.calls), (r / 3 + 1) * n);
            }
        }
        assert_int_equal(pr.nth_seen, n);
        for (int i = 0; i < n; i++)
            assert_int_equal(atomic_load(&pr.seen[i]), 1000);
        if (n > 1 && max_joined < 2)
            print_message("(%d threads: no worker joined a dynamic run in time)\n", n);
        tpool_free(pool);
    }
    /* NULL pool: the caller alone */
    dyn_probe d;
    memset(&d, 0, sizeof d);
    d.n_items = 10;
    d.slow_ith = -1;
    tpool_run_dynamic(NULL, dyn_fn, &d);
    for (int i = 0; i < 10; i++)
        assert_int_equal(atomic_load(&d.done[i]), 1);
}

/* memread_ranges (bench_token --bw's read of a token's weights): every whole
 * word of every range read once, whatever the thread count and however the
 * parts fall across ranges (empty ones, ones shorter than a vector, byte
 * tails that are not a word). */
static void test_memread_ranges(void **state)
{
    (void)state;
    const size_t nw = 5000;
    uint64_t *buf = malloc(nw * sizeof *buf);
    assert_non_null(buf);
    for (size_t i = 0; i < nw; i++)
        buf[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull + 1;
    /* (first word, bytes) */
    const size_t spec[][2] = {{0, 8 * 17}, {100, 0}, {200, 8 * 3 + 5}, {300, 8 * 16}, {400, 8 * 1000},
                              {1500, 8}, {1600, 8 * 15 + 7}, {2000, 8 * 2999}};
    const size_t nr = sizeof spec / sizeof spec[0];
    memread_range r[8];
    for (size_t i = 0; i < nr; i++)
        r[i] = (memread_range){buf + spec[i][0], spec[i][1]};
    for (int n = 1; n <= 4; n++) {
        tpool *pool = tpool_new(n);
        assert_non_null(pool);
        for (size_t first = 0; first < nr; first++) { /* every suffix of the list, the whole first */
            uint64_t got = 1, w = 0;
            for (size_t i = first; i < nr; i++)
                for (size_t k = 0; k < spec[i][1] / 8; k++)
                    w += buf[spec[i][0] + k];
            assert_true(memread_ranges(pool, r + first, nr - first, &got) >= 0);
            assert_true(got == w);
        }
        tpool_free(pool);
    }
    free(buf);
}

/* The adaptive width: what other processes leave to the pool. */
static void test_pool_width(void **state)
{
    (void)state;
    assert_int_equal(tpool_width_for(2, 2, 2, 2), 2);   /* quiet: ours only */
    assert_int_equal(tpool_width_for(2, 2, 1, 2), 2);   /* a worker asleep */
    assert_int_equal(tpool_width_for(2, 2, 3, 2), 1);   /* one competitor */
    assert_int_equal(tpool_width_for(2, 2, 2, 1), 1);   /* still there */
    assert_int_equal(tpool_width_for(2, 2, 1, 1), 2);   /* gone */
    assert_int_equal(tpool_width_for(16, 16, 17, 16), 15);
    assert_int_equal(tpool_width_for(16, 16, 40, 16), 1);
    assert_int_equal(tpool_width_for(4, 16, 5, 4), 4);  /* enough cores for all */
    assert_int_equal(tpool_width_for(2, 2, 0, 2), 2);
    tpool *p = tpool_new(2);
    assert_non_null(p);
    assert_int_equal(tpool_width(p), 2);
    tpool_set_adaptive(p, false);
    assert_int_equal(tpool_width(p), 2);
    tpool_free(p);
    assert_int_equal(tpool_width(NULL), 1);
}

static void test_pool_null_and_default(void **state)
{
    (void)state;
    pool_probe pr;
    memset(&pr, 0, sizeof pr);
    tpool_run(NULL, probe_fn, &pr);
    assert_int_equal(atomic_load(&pr.calls), 1);
    assert_int_equal(pr.nth_seen, 1);
    assert_int_equal(tpool_threads(NULL), 1);
    tpool_free(NULL);
    tpool *pool = tpool_new(0);
    assert_non_null(pool);
    assert_true(tpool_threads(pool) >= 1);
    tpool_free(pool);
}

/* ---- activation quantization ---- */

static void test_quantize_act(void **state)
{
    (void)state;
    float x[256];
    for (int j = 0; j < 256; j++)
        x[j] = (float)(j % 32) - 16.0f;
    block_q8_0 q0[8];
    assert_int_equal(kern_quantize_act(GGTYPE_Q8_0, x, q0, 256), 0);
    /* amax 16: d = 16/127, q = round(x * 127 / 16) */
    assert_true(fabsf(codec_f16_to_f32(q0[0].d) - 16.0f / 127.0f) < 1e-4f);
    assert_int_equal(q0[0].qs[0], -127);
    assert_int_equal(q0[0].qs[17], 8);   /* 1 * 7.9375 */
    assert_int_equal(q0[0].qs[18], 16);  /* 2 * 7.9375 = 15.875 */
    assert_int_equal(q0[0].qs[24], 64);  /* 8 * 7.9375 = 63.5, half away from zero */
    assert_int_equal(q0[0].qs[31], 119); /* 15 * 7.9375 = 119.06 */
    assert_int_equal(q0[0].qs[8], -64);
    block_q8_1 q1[8];
    assert_int_equal(kern_quantize_act(GGTYPE_Q8_1, x, q1, 256), 0);
    assert_memory_equal(q1[0].qs, q0[0].qs, 32);
    assert_true(codec_f16_to_f32(q1[0].s) == -16.0f); /* d * sum(qs) = 16/127 * -127 */
    block_q8_K qk;
    assert_int_equal(kern_quantize_act(GGTYPE_Q8_K, x, &qk, 256), 0);
    assert_true(fabsf(qk.d - 16.0f / 127.0f) < 1e-6f);
    assert_int_equal(qk.qs[0], -127);
    assert_int_equal(qk.qs[31], 119);
    assert_int_equal(qk.bsums[0], -1080);
    assert_int_equal(qk.bsums[1], 953);
    /* all zero: d = 0, quants 0 */
    float z[32] = {0};
    assert_int_equal(kern_quantize_act(GGTYPE_Q8_0, z, q0, 32), 0);
    assert_int_equal(q0[0].d, 0);
    assert_int_equal(q0[0].qs[5], 0);
    /* bad lengths and types */
    assert_int_equal(kern_quantize_act(GGTYPE_Q8_0, x, q0, 48), -1);
    assert_int_equal(kern_quantize_act(GGTYPE_Q8_K, x, &qk, 128), -1);
    assert_int_equal(kern_quantize_act(GGTYPE_Q4_0, x, q0, 32), -1);
}

/* The activations every SIMD path actually multiplies with, read back
 * through identity weights (tile paths: exact integer sums times d_w = 1),
 * must be bit-identical to the scalar kern_quantize_act. */
static void test_act_quant_all_paths(void **state)
{
    (void)state;
    enum { N = 512, T = 3 };
    float *x = malloc(sizeof(float) * N * T), *y = malloc(sizeof(float) * N * T);
    float *ref = malloc(sizeof(float) * N);
    uint8_t *w8 = calloc(N, N / 32 * sizeof(block_q8_0));
    uint8_t *w6 = calloc(N, N / 256 * sizeof(block_q4_K));
    uint8_t aq[N / 32 * sizeof(block_q8_0) + N / 256 * sizeof(block_q8_K)];
    assert_true(x && y && ref && w8 && w6);
    for (int i = 0; i < N * T; i++)
        x[i] = rndf(-1.0f, 1.0f) * (i % 13 == 0 ? 8.0f : 1.0f);
    x[5] = 0.5f * (x[6] = 1.0f); /* a few exact halves for the rounding */
    size_t rb8 = N / 32 * sizeof(block_q8_0), rb6 = N / 256 * sizeof(block_q4_K);
    for (int r = 0; r < N; r++) {
        block_q8_0 *b8 = (block_q8_0 *)(w8 + r * rb8) + r / 32;
        b8->d = codec_f32_to_f16(1.0f);
        b8->qs[r % 32] = 1;
        for (int b = 0; b < N / 256; b++) {
            block_q4_K *b4 = (block_q4_K *)(w6 + r * rb6) + b;
            static const uint8_t sc[12] = {1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1}; /* scales 1, mins 0 */
            memcpy(b4->scales, sc, 12);
            memset(b4->qs, 0, sizeof b4->qs);
            b4->d = codec_f32_to_f16(1.0f);
            b4->dmin = 0;
        }
        /* element e = r % 256 of block r / 256 gets quant 1 */
        block_q4_K *b4 = (block_q4_K *)(w6 + r * rb6) + r / 256;
        int e = r % 256, j = e / 64, l = e % 64;
        b4->qs[32 * j + l % 32] |= (uint8_t)(l < 32 ? 1 : 1 << 4);
    }
    kern_simd saved = kern_simd_get();
    for (int p = KERN_SIMD_SCALAR; p <= KERN_SIMD_AVX2_PLAIN; p++) {
        if (kern_simd_set((kern_simd)p) != 0)
            continue;
        for (int k = 0; k < 2; k++) {
            uint32_t wt = k ? GGTYPE_Q4_K : GGTYPE_Q8_0, at = kern_act_type(wt);
            assert_int_equal(kern_matmul(NULL, wt, k ? w6 : w8, k ? rb6 : rb8, N, N, x, T, y, NULL, 0), 0);
            for (int t = 0; t < T; t++) {
                assert_int_equal(kern_quantize_act(at, x + t * N, aq, N), 0);
                assert_int_equal(codec_dequantize(at, aq, ref, N), 0);
                for (int r = 0; r < N; r++)
                    if (y[t * N + r] != ref[r]) /* exact (0 == -0) */
                        fail_msg("%s activations on %s: token %d elem %d: %.9g vs %.9g",
                                 ggtype_name(at), kern_simd_name(), t, r, y[t * N + r], ref[r]);
            }
        }
    }
    assert_int_equal(kern_simd_set(saved), 0);
    free(x);
    free(y);
    free(ref);
    free(w8);
    free(w6);
}

/* ---- matmul ---- */

static bool is_int_type(uint32_t t)
{
    return t == GGTYPE_I8 || t == GGTYPE_I16 || t == GGTYPE_I32 || t == GGTYPE_I64;
}

/* Fill n_rows rows of valid weights of `type` (row stride rb) and return them
 * dequantized (n_rows x n_cols floats). Quantized blocks are random bytes,
 * redrawn until the block dequantizes to finite values of modest size. */
static bool g_use_quantizer; /* make_weights: quantize gaussian rows with codec_quantize */

static float rnd_gauss(void)
{
    float s = 0;
    for (int i = 0; i < 4; i++)
        s += rndf(-1.0f, 1.0f);
    return s * 0.05f;
}

static float *make_weights(uint32_t type, uint8_t *w, size_t rb, int64_t n_rows, int64_t n_cols)
{
    const ggtype_traits *tr = ggtype_get(type);
    float *deq = malloc((size_t)(n_rows * n_cols) * sizeof(float));
    assert_non_null(deq);
    if (g_use_quantizer) {
        /* weights as a model has them: quantized by ggml's reference algorithm */
        float *src = malloc((size_t)n_cols * sizeof(float));
        assert_non_null(src);
        for (int64_t r = 0; r < n_rows; r++) {
            for (int64_t c = 0; c < n_cols; c++)
                src[c] = rnd_gauss();
            assert_true(codec_quantize(type, src, w + (size_t)r * rb, 1, (uint64_t)n_cols, NULL) > 0);
            assert_int_equal(codec_dequantize(type, w + (size_t)r * rb, deq + r * n_cols,
                                              (uint64_t)n_cols), 0);
        }
        free(src);
        return deq;
    }
    for (int64_t r = 0; r < n_rows; r++) {
        uint8_t *row = w + (size_t)r * rb;
        float *drow = deq + r * n_cols;
        if (type == GGTYPE_F32 || type == GGTYPE_F16 || type == GGTYPE_BF16 ||
            type == GGTYPE_F64 || is_int_type(type)) {
            for (int64_t c = 0; c < n_cols; c++) {
                float v = rndf(-2.0f, 2.0f);
                switch (type) {
                case GGTYPE_F32: memcpy(row + 4 * c, &v, 4); break;
                case GGTYPE_F16: { uint16_t h = codec_f32_to_f16(v); memcpy(row + 2 * c, &h, 2); } break;
                case GGTYPE_BF16: { uint16_t h = codec_f32_to_bf16(v); memcpy(row + 2 * c, &h, 2); } break;
                case GGTYPE_F64: { double d = v; memcpy(row + 8 * c, &d, 8); } break;
                case GGTYPE_I8: { int8_t i = (int8_t)(rnd64() % 21) - 10; memcpy(row + c, &i, 1); } break;
                case GGTYPE_I16: { int16_t i = (int16_t)(rnd64() % 21) - 10; memcpy(row + 2 * c, &i, 2); } break;
                case GGTYPE_I32: { int32_t i = (int32_t)(rnd64() % 21) - 10; memcpy(row + 4 * c, &i, 4); } break;
                default: { int64_t i = (int64_t)(rnd64() % 21) - 10; memcpy(row + 8 * c, &i, 8); } break;
                }
            }
            assert_int_equal(codec_dequantize(type, row, drow, (uint64_t)n_cols), 0);
            continue;
        }
        int64_t nblk = n_cols / tr->blck_size;
        for (int64_t b = 0; b < nblk; b++) {
            uint8_t *blk = row + (size_t)b * tr->type_size;
            float *dblk = drow + b * tr->blck_size;
            for (int attempt = 0;; attempt++) {
                assert_true(attempt < 100000);
                for (uint32_t i = 0; i < tr->type_size; i++)
                    blk[i] = (uint8_t)rnd64();
                assert_int_equal(codec_dequantize(type, blk, dblk, tr->blck_size), 0);
                bool ok = true;
                for (uint32_t i = 0; i < tr->blck_size && ok; i++)
                    ok = isfinite(dblk[i]) && fabsf(dblk[i]) <= 64.0f;
                if (ok)
                    break;
            }
        }
    }
    return deq;
}

typedef struct {
    int64_t n_rows, n_cols, n_tok;
    size_t pad; /* extra bytes per row (row stride > row size; keeps rows aligned) */
} shape;

/* One type on one shape with one pool: both references. */
static void check_matmul(uint32_t type, const shape *s, tpool *pool, double tol_rel_rms)
{
    bool ovf;
    size_t rs = (size_t)ggtype_row_size(type, (uint64_t)s->n_cols, &ovf);
    assert_true(rs > 0);
    size_t rb = rs + s->pad;
    uint8_t *w = calloc((size_t)s->n_rows, rb);
    float *x = malloc((size_t)(s->n_tok * s->n_cols) * sizeof(float));
    float *y = malloc((size_t)(s->n_tok * s->n_rows) * sizeof(float));
    float *xq = malloc((size_t)(s->n_tok * s->n_cols) * sizeof(float));
    assert_true(w && x && y && xq);
    float *wd = make_weights(type, w, rb, s->n_rows, s->n_cols);
    for (int64_t i = 0; i < s->n_tok * s->n_cols; i++)
        x[i] = rndf(-1.0f, 1.0f) * (i % 7 == 0 ? 4.0f : 1.0f);

    /* The activations exactly as the kernels see them. */
    uint32_t at = kern_act_type(type);
    if (at == GGTYPE_F32) {
        memcpy(xq, x, (size_t)(s->n_tok * s->n_cols) * sizeof(float));
    } else {
        size_t ars = (size_t)ggtype_row_size(at, (uint64_t)s->n_cols, NULL);
        uint8_t *aq = malloc(ars);
        assert_non_null(aq);
        for (int64_t t = 0; t < s->n_tok; t++) {
            assert_int_equal(kern_quantize_act(at, x + t * s->n_cols, aq, s->n_cols), 0);
            assert_int_equal(codec_dequantize(at, aq, xq + t * s->n_cols, (uint64_t)s->n_cols), 0);
        }
        free(aq);
    }

    size_t ss = kern_matmul_scratch_size(type, s->n_cols, s->n_tok);
    assert_true(ss != (size_t)-1);
    void *scratch = ss ? malloc(ss) : NULL;
    for (int64_t i = 0; i < s->n_tok * s->n_rows; i++)
        y[i] = NAN;
    int rc = kern_matmul(pool, type, w, rb, s->n_rows, s->n_cols, x, s->n_tok, y, scratch, ss);
    if (rc != 0)
        fail_msg("kern_matmul(%s) failed on %lldx%lld, %lld tokens", ggtype_name(type),
                 (long long)s->n_rows, (long long)s->n_cols, (long long)s->n_tok);

    double err2 = 0, ref2 = 0;
    for (int64_t t = 0; t < s->n_tok; t++)
        for (int64_t r = 0; r < s->n_rows; r++) {
            double exact = 0, absum = 0, full = 0, sq = 0;
            for (int64_t c = 0; c < s->n_cols; c++) {
                double wv = wd[r * s->n_cols + c];
                exact += wv * xq[t * s->n_cols + c];
                absum += fabs(wv * xq[t * s->n_cols + c]);
                full += wv * x[t * s->n_cols + c];
                sq += wv * x[t * s->n_cols + c] * wv * x[t * s->n_cols + c];
            }
            double got = y[t * s->n_rows + r];
            /* against the quantized activations: float rounding only */
            double lim = 2e-5 * absum + 1e-6;
            if (!(fabs(got - exact) <= lim))
                fail_msg("%s [%s, %d threads] %lldx%lld tok %lld/%lld row %lld: got %.9g, "
                         "want %.9g (limit %.3g)",
                         ggtype_name(type), kern_simd_name(), tpool_threads(pool),
                         (long long)s->n_rows, (long long)s->n_cols, (long long)t,
                         (long long)s->n_tok, (long long)r, got, exact, lim);
            err2 += (got - full) * (got - full);
            ref2 += sq;
        }
    /* against the float activations: the activation quantization error,
     * relative to the size of the terms (sums of random weights cancel) */
    double rel = sqrt(err2 / (ref2 > 0 ? ref2 : 1));
    if (getenv("KT_VERBOSE")) print_message("%s %lldx%lldx%lld rel %.4g\n", ggtype_name(type), (long long)s->n_rows, (long long)s->n_cols, (long long)s->n_tok, rel);
    if (!(rel <= tol_rel_rms))
        fail_msg("%s [%s] vs float activations: relative RMS error %.3g > %.3g", ggtype_name(type),
                 kern_simd_name(), rel, tol_rel_rms);
    free(scratch);
    free(wd);
    free(w);
    free(x);
    free(y);
    free(xq);
}

static void check_type_all_paths(uint32_t type, const shape *shapes, int n_shapes)
{
    const ggtype_traits *tr = ggtype_get(type);
    assert_non_null(tr);
    double tol = kern_act_type(type) == GGTYPE_F32 ? 1e-5 : 5e-2;
    kern_simd saved = kern_simd_get();
    tpool *pools[3] = {NULL, tpool_new(2), tpool_new(3)};
    assert_true(pools[1] && pools[2]);
    for (int p = KERN_SIMD_SCALAR; p <= KERN_SIMD_AVX2_PLAIN; p++) {
        if (kern_simd_set((kern_simd)p) != 0) {
            print_message("(%s: SIMD path %d not on this CPU)\n", ggtype_name(type), p);
            continue;
        }
        for (int i = 0; i < n_shapes; i++)
            check_matmul(type, &shapes[i], pools[i % 3], tol);
    }
    tpool_free(pools[1]);
    tpool_free(pools[2]);
    assert_int_equal(kern_simd_set(saved), 0);
}

static const shape SHAPES_32[] = {
    {37, 96, 1, 0},  {64, 288, 3, 0}, {5, 64, 17, 8}, {130, 512, 17, 0},
    {9, 320, 4, 6},  {11, 32, 2, 0},  {96, 1024, 1, 0}, {12, 4096, 20, 0},
};
static const shape SHAPES_256[] = {
    {37, 256, 1, 0}, {21, 512, 3, 4}, {66, 768, 17, 0}, {7, 256, 4, 0}, {128, 1024, 1, 0},
    {3, 512, 2, 0},
};
static const shape SHAPES_1[] = {
    {13, 100, 1, 0}, {33, 37, 3, 4}, {9, 257, 17, 0}, {64, 512, 1, 0}, {5, 8, 5, 0},
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void run_type(uint32_t type)
{
    const ggtype_traits *tr = ggtype_get(type);
    if (tr->blck_size == 1)
        check_type_all_paths(type, SHAPES_1, N(SHAPES_1));
    else if (tr->blck_size == 32)
        check_type_all_paths(type, SHAPES_32, N(SHAPES_32));
    else if (tr->blck_size == 256)
        check_type_all_paths(type, SHAPES_256, N(SHAPES_256));
    else {
        /* other block sizes (64, 128): multiples of the block */
        shape s[] = {{13, 2 * tr->blck_size, 1, 0}, {7, 4 * tr->blck_size, 3, 4},
                     {5, 2 * tr->blck_size, 17, 0}};
        check_type_all_paths(type, s, N(s));
    }
}

#define TYPE_TEST(t)                                   \
    static void test_matmul_##t(void **state)          \
    {                                                  \
        (void)state;                                   \
        run_type(GGTYPE_##t);                          \
    }
TYPE_TEST(F32)
TYPE_TEST(F16)
TYPE_TEST(BF16)
TYPE_TEST(Q4_0)
TYPE_TEST(Q4_1)
TYPE_TEST(Q5_0)
TYPE_TEST(Q5_1)
TYPE_TEST(Q8_0)
TYPE_TEST(IQ4_NL)
TYPE_TEST(Q2_K)
TYPE_TEST(Q3_K)
TYPE_TEST(Q4_K)
TYPE_TEST(Q5_K)
TYPE_TEST(Q6_K)
TYPE_TEST(MXFP4)

/* The fast AVX2 kernels (eight-row one-token tiles, batched GEMM) against
 * the plain exact tiles they are built on (kern_reference_tiles): the same
 * float order, so the same bits, for every shape, token count and pool. */
static void test_fast_kernels_bitwise(void **state)
{
    (void)state;
    static const uint32_t types[] = {GGTYPE_Q4_0, GGTYPE_Q8_0, GGTYPE_Q4_K, GGTYPE_Q6_K,
                                     GGTYPE_F16, GGTYPE_F32, GGTYPE_MXFP4};
    static const shape shapes[] = {
        {64, 512, 1, 0},  {40, 2048, 1, 0}, {24, 768, 1, 4},  {13, 256, 1, 0}, {8, 256, 3, 0},
        {16, 1024, 2, 0}, {48, 512, 5, 0},  {32, 256, 17, 0}, {72, 512, 64, 0}, {9, 512, 7, 0},
        /* the AVX2 GEMM: 16-row chunks with 8 or fewer rows left, 1 to 4 tokens a pass, 64-token
         * slices, 512-token chunks, K not a multiple of 256 (32-element types only) */
        {16, 96, 2, 0},   {24, 160, 3, 4},  {40, 256, 4, 0},  {20, 512, 8, 8},  {136, 256, 63, 0},
        {32, 768, 65, 4}, {17, 512, 129, 0}, {56, 288, 5, 0}, {48, 256, 515, 0}, {8, 512, 64, 0},
        /* the Q8_0 GEMM's per-span scales and |w| (4 tokens a pass): one block, a span and one
         * block more with a slice and 4 tokens more, 7 rows, 33 blocks, 1..3 threads */
        {16, 32, 4, 0},   {24, 544, 68, 2}, {7, 1056, 9, 0}, {40, 1056, 131, 0}, {16, 512, 12, 6},
    };
    kern_simd saved = kern_simd_get();
    tpool *pools[3] = {NULL, tpool_new(2), tpool_new(3)};
    assert_true(pools[1] && pools[2]);
    int checked = 0;
    /* avx2, avx2-plain and avx512 (its one-token eight-row tiles take Q8_0's
     * products by vpdpbusd) */
    const kern_simd paths[] = {KERN_SIMD_AVX2, KERN_SIMD_AVX2_PLAIN, KERN_SIMD_AVX512};
    for (int pi = 0; pi < N(paths); pi++) {
        if (kern_simd_set(paths[pi]) != 0)
            continue;
        for (int ti = 0; ti < N(types); ti++)
            for (int si = 0; si < N(shapes); si++) {
                const shape *s = &shapes[si];
                uint32_t type = types[ti];
                int64_t cols = s->n_cols;
                if (cols % ggtype_get(type)->blck_size != 0)
                    continue;
                size_t rb = (size_t)ggtype_row_size(type, (uint64_t)cols, NULL) + s->pad;
                uint8_t *w = calloc((size_t)s->n_rows, rb);
                float *x = malloc((size_t)(s->n_tok * cols) * sizeof(float));
                float *y0 = malloc((size_t)(s->n_tok * s->n_rows) * sizeof(float));
                float *y1 = malloc((size_t)(s->n_tok * s->n_rows) * sizeof(float));
                assert_true(w && x && y0 && y1);
                free(make_weights(type, w, rb, s->n_rows, cols));
                for (int64_t i = 0; i < s->n_tok * cols; i++)
                    x[i] = rndf(-1.0f, 1.0f) * (i % 5 == 0 ? 3.0f : 1.0f);
                tpool *pool = pools[si % 3];
                kern_reference_tiles(1);
                assert_int_equal(kern_matmul(pool, type, w, rb, s->n_rows, cols, x, s->n_tok, y0, NULL, 0), 0);
                kern_reference_tiles(0);
                assert_int_equal(kern_matmul(pool, type, w, rb, s->n_rows, cols, x, s->n_tok, y1, NULL, 0), 0);
                for (int64_t i = 0; i < s->n_tok * s->n_rows; i++)
                    if (memcmp(&y0[i], &y1[i], sizeof(float)) != 0)
                        fail_msg("%s [%s] %lldx%lld, %lld tokens: output %lld is %.9g, the exact tile "
                                 "gives %.9g",
                                 ggtype_name(type), kern_simd_name(), (long long)s->n_rows, (long long)cols,
                                 (long long)s->n_tok, (long long)i, y1[i], y0[i]);
                checked++;
                free(w);
                free(x);
                free(y0);
                free(y1);
            }
    }
    tpool_free(pools[1]);
    tpool_free(pools[2]);
    assert_int_equal(kern_simd_set(saved), 0);
    if (!checked)
        print_message("(no AVX2 on this CPU: the fast kernels are not used)\n");
}

/* MXFP4 bit for bit on every path, against plain C written from ggml's
 * kernels with the codec's dequantized weights (value / E8M0 half = the
 * signed 4-bit value, exact) and the Q8_0 activation bytes
 * (kern_quantize_act): with 8 | rows the repacked gemv (and gemm) order,
 * acc = fma((float)isum, fl(e * dx), acc) per block; otherwise
 * ggml_vec_dot_mxfp4_q8_0's (blocks in pairs, 8 lanes of 4-element sums,
 * two accumulators, 8-lane tree, an odd last block fused in). */
static float mxfp4_ref_dot(const uint8_t *row, const float *deq, const block_q8_0 *a, int64_t nb, bool repacked)
{
    float lanes[2][8] = {{0}}, acc = 0.0f;
    int64_t b = 0;
    for (; b < nb; b++) {
        uint8_t e = row[b * 17];
        uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
        float d;
        memcpy(&d, &bits, 4);
        const float dx = codec_f16_to_f32(a[b].d);
        int q[32];
        for (int j = 0; j < 32; j++)
            q[j] = (int)(deq[b * 32 + j] / d);
        if (repacked) {
            int s = 0;
            for (int j = 0; j < 32; j++)
                s += q[j] * a[b].qs[j];
            acc = fmaf((float)s, d * dx, acc);
            continue;
        }
        if (b + 1 == nb && nb % 2)
            break;
        for (int l = 0; l < 8; l++) {
            int s = 0;
            for (int j = 4 * l; j < 4 * l + 4; j++)
                s += q[j] * a[b].qs[j];
            lanes[b % 2][l] = fmaf(dx * d, (float)s, lanes[b % 2][l]);
        }
    }
    if (repacked)
        return acc;
    float v[8], c[4];
    for (int l = 0; l < 8; l++)
        v[l] = lanes[0][l] + lanes[1][l];
    for (int l = 0; l < 4; l++)
        c[l] = v[l] + v[l + 4];
    float sum = (c[0] + c[2]) + (c[1] + c[3]);
    if (b < nb) {
        uint8_t e = row[b * 17];
        uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
        float d;
        memcpy(&d, &bits, 4);
        int s = 0;
        for (int j = 0; j < 32; j++)
            s += (int)(deq[b * 32 + j] / d) * a[b].qs[j];
        sum = fmaf(codec_f16_to_f32(a[b].d) * d, (float)s, sum);
    }
    return sum;
}

static void test_mxfp4_exact(void **state)
{
    (void)state;
    static const shape shapes[] = {{16, 2880, 1, 0}, {24, 96, 5, 0}, {8, 64, 70, 0}, {20, 160, 1, 0},
                                   {13, 96, 3, 0},   {12, 64, 9, 0}};
    kern_simd saved = kern_simd_get();
    tpool *pool = tpool_new(2);
    assert_non_null(pool);
    for (int p = KERN_SIMD_SCALAR; p <= KERN_SIMD_AVX2_PLAIN; p++) {
        if (kern_simd_set((kern_simd)p) != 0)
            continue;
        for (int si = 0; si < N(shapes); si++) {
            const shape *s = &shapes[si];
            const int64_t cols = s->n_cols, nb = cols / 32;
            const size_t rb = (size_t)nb * 17;
            uint8_t *w = calloc((size_t)s->n_rows, rb);
            float *x = malloc((size_t)(s->n_tok * cols) * sizeof(float));
            float *y = malloc((size_t)(s->n_tok * s->n_rows) * sizeof(float));
            block_q8_0 *a = malloc((size_t)nb * sizeof(block_q8_0));
            assert_true(w && x && y && a);
            g_use_quantizer = si % 2 == 0;
            float *deq = make_weights(GGTYPE_MXFP4, w, rb, s->n_rows, cols);
            g_use_quantizer = false;
            for (int64_t i = 0; i < s->n_tok * cols; i++)
                x[i] = rndf(-1.0f, 1.0f) * (i % 7 == 0 ? 4.0f : 1.0f);
            assert_int_equal(kern_matmul(pool, GGTYPE_MXFP4, w, rb, s->n_rows, cols, x, s->n_tok, y, NULL, 0), 0);
            /* the scalar path keeps the repacked order for every row count */
            const bool repacked = s->n_rows % 8 == 0 || p == KERN_SIMD_SCALAR;
            for (int64_t t = 0; t < s->n_tok; t++) {
                assert_int_equal(kern_quantize_act(GGTYPE_Q8_0, x + t * cols, a, cols), 0);
                for (int64_t r = 0; r < s->n_rows; r++) {
                    float want = mxfp4_ref_dot(w + (size_t)r * rb, deq + r * cols, a, nb, repacked);
                    float got = y[t * s->n_rows + r];
                    if (memcmp(&want, &got, 4) != 0)
                        fail_msg("MXFP4 [%s] %lldx%lld, %lld tokens: (%lld, %lld) is %a, want %a", kern_simd_name(),
                                 (long long)s->n_rows, (long long)cols, (long long)s->n_tok, (long long)t,
                                 (long long)r, got, want);
                }
            }
            free(deq);
            free(w);
            free(x);
            free(y);
            free(a);
        }
    }
    tpool_free(pool);
    assert_int_equal(kern_simd_set(saved), 0);
}

/* ggml_vec_dot_f32 / _f16 of llama.cpp's zen4 build, written out in scalar
 * C: 4 accumulators x 16 lanes over 64-element steps (fused multiply-add),
 * (a0 + a2) + (a1 + a3) lane-wise, then the 16-lane tree l + 8, l + 4,
 * l + 2, l + 1. n: a multiple of 64. */
static float zen4_vec_dot(const float *w, const float *x, int64_t n)
{
    float acc[4][16] = {{0}};
    for (int64_t i = 0; i < n; i += 64)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 16; l++)
                acc[k][l] = fmaf(w[i + 16 * k + l], x[i + 16 * k + l], acc[k][l]);
    float s[16];
    for (int l = 0; l < 16; l++)
        s[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    for (int h = 8; h >= 1; h /= 2)
        for (int l = 0; l < h; l++)
            s[l] = s[l] + s[l + h];
    return s[0];
}

/* One token on F32 and F16 weights follows that order bit for bit on the
 * AVX2 and AVX-512 paths (when ggscope follows the zen4 build: the haswell
 * order is checked by the model tests), 1 to 3 threads, odd row counts. */
static void test_float_vec_zen4_order(void **state)
{
    (void)state;
    if (cpufeat_llama_variant() != CPUFEAT_LLAMA_ZEN4) {
        print_message("(ggscope follows llama.cpp's haswell build on this CPU: skipped)\n");
        return;
    }
    static const int64_t rows[] = {1, 7, 12, 33}, cols[] = {64, 256, 2048, 4133, 5632};
    kern_simd saved = kern_simd_get();
    tpool *pools[3] = {NULL, tpool_new(2), tpool_new(3)};
    assert_true(pools[1] && pools[2]);
    const kern_simd paths[] = {KERN_SIMD_AVX2, KERN_SIMD_AVX512};
    int checked = 0;
    for (int pi = 0; pi < N(paths); pi++) {
        if (kern_simd_set(paths[pi]) != 0)
            continue;
        for (int f16 = 0; f16 < 3; f16++) /* 2: F16 weights, activations not F16 values */
            for (int ri = 0; ri < N(rows); ri++)
                for (int ci = 0; ci < N(cols); ci++) {
                    const int64_t nr = rows[ri], nc = cols[ci];
                    const size_t rb = (size_t)nc * (f16 ? 2 : 4);
                    uint8_t *w = malloc((size_t)nr * rb);
                    float *wf = malloc((size_t)(nr * nc) * sizeof(float));
                    float *x = malloc((size_t)nc * sizeof(float));
                    float *y = malloc((size_t)nr * sizeof(float));
                    assert_true(w && wf && x && y);
                    for (int64_t i = 0; i < nr * nc; i++) {
                        float v = rndf(-1.0f, 1.0f) * (i % 11 == 0 ? 8.0f : 1.0f);
                        if (f16) {
                            uint16_t h = kern_f2h(v);
                            memcpy(w + (size_t)i * 2, &h, 2);
                            wf[i] = kern_h2f(h);
                        } else {
                            memcpy(w + (size_t)i * 4, &v, 4);
                            wf[i] = v;
                        }
                    }
                    /* activations that F16 holds exactly (ggml rounds them
                     * to F16 for F16 weights: the AVX-512 path then reads long
                     * rows' activations as F16), and (f16 == 2) not */
                    for (int64_t i = 0; i < nc; i++)
                        x[i] = f16 == 2 ? rndf(-2.0f, 2.0f) : kern_h2f(kern_f2h(rndf(-2.0f, 2.0f)));
                    const uint32_t type = f16 ? GGTYPE_F16 : GGTYPE_F32;
                    assert_int_equal(kern_matmul(pools[(ri + ci) % 3], type, w, rb, nr, nc, x, 1, y, NULL, 0), 0);
                    /* a row that is not a multiple of 64 ends as ggml's
                     * vec_dot does (F16 in double): the AVX2 path, one row at
                     * a time, is the reference for the AVX-512 four-row form */
                    float *yref = NULL;
                    if (nc % 64) {
                        if (paths[pi] == KERN_SIMD_AVX2) {
                            free(w), free(wf), free(x), free(y);
                            continue;
                        }
                        yref = malloc((size_t)nr * sizeof(float));
                        assert_true(yref != NULL);
                        assert_int_equal(kern_simd_set(KERN_SIMD_AVX2), 0);
                        assert_int_equal(kern_matmul(NULL, type, w, rb, nr, nc, x, 1, yref, NULL, 0), 0);
                        assert_int_equal(kern_simd_set(paths[pi]), 0);
                    }
                    for (int64_t r = 0; r < nr; r++) {
                        float want = yref ? yref[r] : zen4_vec_dot(wf + r * nc, x, nc);
                        if (memcmp(&want, &y[r], 4) != 0)
                            fail_msg("%s [%s] %lldx%lld: row %lld is %a, ggml's order gives %a", ggtype_name(type),
                                     kern_simd_name(), (long long)nr, (long long)nc, (long long)r, y[r], want);
                    }
                    checked++;
                    free(yref);
                    free(w);
                    free(wf);
                    free(x);
                    free(y);
                }
    }
    tpool_free(pools[1]);
    tpool_free(pools[2]);
    assert_int_equal(kern_simd_set(saved), 0);
    if (!checked)
        print_message("(no AVX2 on this CPU: skipped)\n");
}

/* Weights made by ggml's reference quantizers (codec_quantize), as in a real
 * model file, on every path. */
static void test_matmul_quantized_weights(void **state)
{
    (void)state;
    static const uint32_t types[] = {GGTYPE_Q4_0, GGTYPE_Q4_1, GGTYPE_Q5_0, GGTYPE_Q5_1,
                                     GGTYPE_Q8_0, GGTYPE_IQ4_NL, GGTYPE_Q2_K, GGTYPE_Q3_K,
                                     GGTYPE_Q4_K, GGTYPE_Q5_K, GGTYPE_Q6_K, GGTYPE_IQ4_XS};
    g_use_quantizer = true;
    int n = 0;
    for (int i = 0; i < N(types); i++) {
        if (!codec_can_quantize(types[i]))
            continue;
        shape sh[] = {{19, 512, 1, 0}, {35, 768, 3, 0}, {18, 512, 20, 0}};
        check_type_all_paths(types[i], sh, N(sh));
        n++;
    }
    g_use_quantizer = false;
    print_message("%d types with quantizer-made weights\n", n);
    assert_true(n >= 6);
}

/* Every other type of the traits table through the generic path. */
static void test_matmul_generic_types(void **state)
{
    (void)state;
    int n = 0;
    for (uint32_t t = 0; t < GGTYPE_COUNT; t++) {
        if (!ggtype_get(t) || kern_type_fast(t))
            continue;
        run_type(t);
        n++;
    }
    print_message("generic path: %d types checked\n", n);
    assert_true(n >= 15);
}

static void test_matmul_errors(void **state)
{
    (void)state;
    float x[64] = {0}, y[64];
    uint8_t w[34 * 4] = {0};
    /* unknown type, bad n_cols, short row stride, short scratch */
    assert_int_equal(kern_matmul(NULL, 4, w, 34, 1, 32, x, 1, y, NULL, 0), -1);
    assert_int_equal(kern_matmul(NULL, 999, w, 34, 1, 32, x, 1, y, NULL, 0), -1);
    assert_int_equal(kern_matmul(NULL, GGTYPE_Q8_0, w, 34, 1, 48, x, 1, y, NULL, 0), -1);
    assert_int_equal(kern_matmul(NULL, GGTYPE_Q8_0, w, 33, 1, 32, x, 1, y, NULL, 0), -1);
    uint8_t scratch[16];
    assert_int_equal(kern_matmul(NULL, GGTYPE_Q8_0, w, 34, 1, 32, x, 1, y, scratch, sizeof scratch), -1);
    assert_int_equal(kern_matmul_scratch_size(GGTYPE_Q8_0, 48, 1), (size_t)-1);
    assert_int_equal(kern_matmul_scratch_size(GGTYPE_F16, 48, 1), 0);
    /* NULL scratch: allocated inside */
    assert_int_equal(kern_matmul(NULL, GGTYPE_Q8_0, w, 34, 4, 32, x, 1, y, NULL, 0), 0);
    for (int i = 0; i < 4; i++)
        assert_true(y[i] == 0.0f);
}

/* kern_matmul_n: the same floats as one kern_matmul call per matrix, for
 * every fast type and path, one token and batches, matrices of different
 * heights (one not a multiple of 8: a run each), F16 rows long enough for
 * the F16-activation tile, on 1 to 3 threads; and its argument checks. */
static void test_matmul_n_same_floats(void **state)
{
    (void)state;
    static const uint32_t types[] = {GGTYPE_Q4_0, GGTYPE_Q8_0, GGTYPE_Q4_K, GGTYPE_Q6_K,
                                     GGTYPE_F16, GGTYPE_F32, GGTYPE_MXFP4, GGTYPE_Q5_K};
    static const struct {
        int64_t cols, tok;
        int n;
        int64_t rows[3];
    } cases[] = {
        {512, 1, 3, {128, 32, 32}}, {256, 1, 2, {40, 56}}, {4352, 1, 2, {16, 24}}, {512, 5, 3, {64, 16, 16}},
        {256, 17, 2, {72, 40}},     {512, 1, 3, {64, 13, 16}}, {768, 2, 2, {24, 8}},
    };
    kern_simd saved = kern_simd_get();
    tpool *pools[3] = {NULL, tpool_new(2), tpool_new(3)};
    assert_true(pools[1] && pools[2]);
    const kern_simd paths[] = {KERN_SIMD_SCALAR, KERN_SIMD_AVX2, KERN_SIMD_AVX2_PLAIN, KERN_SIMD_AVX512};
    int checked = 0;
    for (int pi = 0; pi < N(paths); pi++) {
        if (kern_simd_set(paths[pi]) != 0)
            continue;
        for (int ti = 0; ti < N(types); ti++)
            for (int ci = 0; ci < N(cases); ci++) {
                const uint32_t type = types[ti];
                const int64_t cols = cases[ci].cols, nt = cases[ci].tok;
                if (cols % ggtype_get(type)->blck_size != 0)
                    continue;
                const size_t rb = (size_t)ggtype_row_size(type, (uint64_t)cols, NULL);
                kern_mat m[3];
                float *y1[3];
                float *x = malloc((size_t)(nt * cols) * sizeof(float));
                assert_non_null(x);
                for (int64_t i = 0; i < nt * cols; i++) /* F16 values: the F16-activation tile */
                    x[i] = codec_f16_to_f32(codec_f32_to_f16(rndf(-1.0f, 1.0f)));
                for (int k = 0; k < cases[ci].n; k++) {
                    const int64_t r = cases[ci].rows[k];
                    uint8_t *w = calloc((size_t)r, rb);
                    float *y = malloc((size_t)(r * nt) * sizeof(float));
                    y1[k] = malloc((size_t)(r * nt) * sizeof(float));
                    assert_true(w && y && y1[k]);
                    free(make_weights(type, w, rb, r, cols));
                    m[k] = (kern_mat){w, rb, r, y};
                }
                tpool *pool = pools[(ti + ci) % 3];
                assert_int_equal(kern_matmul_n(pool, type, m, cases[ci].n, cols, x, nt, NULL, 0), 0);
                for (int k = 0; k < cases[ci].n; k++) {
                    const int64_t r = m[k].n_rows;
                    assert_int_equal(kern_matmul(pool, type, m[k].W, rb, r, cols, x, nt, y1[k], NULL, 0), 0);
                    for (int64_t i = 0; i < r * nt; i++)
                        if (memcmp(&m[k].y[i], &y1[k][i], sizeof(float)) != 0)
                            fail_msg("%s [%s] matrix %d of %d (%lldx%lld, %lld tokens): output %lld is %.9g, "
                                     "kern_matmul gives %.9g",
                                     ggtype_name(type), kern_simd_name(), k, cases[ci].n, (long long)r,
                                     (long long)cols, (long long)nt, (long long)i, m[k].y[i], y1[k][i]);
                    free((void *)m[k].W);
                    free(m[k].y);
                    free(y1[k]);
                }
                free(x);
                checked++;
            }
    }
    assert_true(checked > 0);
    assert_int_equal(kern_simd_set(saved), 0);
    /* argument checks: none, too many, a NULL output, a short row stride */
    float x[64] = {0}, y[8], y2[8];
    uint8_t w[34 * 8] = {0};
    kern_mat m[KERN_MATMUL_MAX + 1];
    for (int k = 0; k <= KERN_MATMUL_MAX; k++)
        m[k] = (kern_mat){w, 34, 4, k % 2 ? y2 : y};
    assert_int_equal(kern_matmul_n(pools[1], GGTYPE_Q8_0, m, 0, 32, x, 1, NULL, 0), -1);
    assert_int_equal(kern_matmul_n(pools[1], GGTYPE_Q8_0, m, KERN_MATMUL_MAX + 1, 32, x, 1, NULL, 0), -1);
    assert_int_equal(kern_matmul_n(pools[1], GGTYPE_Q8_0, m, 2, 32, x, 1, NULL, 0), 0);
    m[1].y = NULL;
    assert_int_equal(kern_matmul_n(pools[1], GGTYPE_Q8_0, m, 2, 32, x, 1, NULL, 0), -1);
    m[1].y = y2;
    m[1].row_bytes = 33;
    assert_int_equal(kern_matmul_n(pools[1], GGTYPE_Q8_0, m, 2, 32, x, 1, NULL, 0), -1);
    tpool_free(pools[1]);
    tpool_free(pools[2]);
}

/* One token on 2 to 5 threads: each thread's lane of contiguous chunks, a
 * lane nobody started taken over from its front, others' chunks taken from
 * their back (kern_one_token_lanes): every output written once, the same
 * floats as the shared counter and as one thread. Outputs start as NaN, so
 * a chunk left out fails. Matrices of 16 to 41 chunks, one with a short
 * last chunk, one not a multiple of 8 rows, three in one run. */
static void test_matmul_one_token_lanes(void **state)
{
    (void)state;
    static const uint32_t types[] = {GGTYPE_Q4_0, GGTYPE_Q8_0, GGTYPE_Q4_K, GGTYPE_F16, GGTYPE_F32};
    static const struct {
        int64_t cols;
        int n;
        int64_t rows[3];
    } cases[] = {{256, 1, {1024}}, {512, 1, {2600}}, {256, 1, {1003}}, {4352, 1, {1040}}, {256, 3, {900, 256, 328}}};
    tpool *pools[4] = {tpool_new(2), tpool_new(3), tpool_new(4), tpool_new(5)};
    for (int i = 0; i < 4; i++)
        assert_non_null(pools[i]);
    int checked = 0;
    for (int ti = 0; ti < N(types); ti++)
        for (int ci = 0; ci < N(cases); ci++) {
            const uint32_t type = types[ti];
            const int64_t cols = cases[ci].cols;
            if (cols % ggtype_get(type)->blck_size != 0)
                continue;
            const size_t rb = (size_t)ggtype_row_size(type, (uint64_t)cols, NULL);
            float *x = malloc((size_t)cols * sizeof(float));
            assert_non_null(x);
            for (int64_t i = 0; i < cols; i++)
                x[i] = codec_f16_to_f32(codec_f32_to_f16(rndf(-1.0f, 1.0f)));
            kern_mat m[3];
            float *ref[3];
            for (int k = 0; k < cases[ci].n; k++) {
                const int64_t r = cases[ci].rows[k];
                uint8_t *w = calloc((size_t)r, rb);
                m[k] = (kern_mat){w, rb, r, malloc((size_t)r * sizeof(float))};
                ref[k] = malloc((size_t)r * sizeof(float));
                assert_true(w && m[k].y && ref[k]);
                free(make_weights(type, w, rb, r, cols));
                assert_int_equal(kern_matmul(NULL, type, w, rb, r, cols, x, 1, ref[k], NULL, 0), 0);
            }
            for (int pi = 0; pi < 4; pi++)
                for (int lanes = 0; lanes < 2; lanes++)
                    for (int rep = 0; rep < 3; rep++) {
                        kern_one_token_lanes(lanes);
                        for (int k = 0; k < cases[ci].n; k++)
                            for (int64_t i = 0; i < m[k].n_rows; i++)
                                m[k].y[i] = NAN;
                        assert_int_equal(kern_matmul_n(pools[pi], type, m, cases[ci].n, cols, x, 1, NULL, 0), 0);
                        for (int k = 0; k < cases[ci].n; k++)
                            for (int64_t i = 0; i < m[k].n_rows; i++)
                                if (memcmp(&m[k].y[i], &ref[k][i], sizeof(float)) != 0)
                                    fail_msg("%s %s, %d threads, matrix %d of %d (%lldx%lld): output %lld is "
                                             "%.9g, one thread gives %.9g",
                                             ggtype_name(type), lanes ? "lanes" : "counter",
                                             tpool_threads(pools[pi]), k, cases[ci].n, (long long)m[k].n_rows,
                                             (long long)cols, (long long)i, m[k].y[i], ref[k][i]);
                        checked++;
                    }
            for (int k = 0; k < cases[ci].n; k++) {
                free((void *)m[k].W);
                free(m[k].y);
                free(ref[k]);
            }
            free(x);
        }
    kern_one_token_lanes(1);
    assert_true(checked > 0);
    for (int i = 0; i < 4; i++)
        tpool_free(pools[i]);
}

static void test_simd_select(void **state)
{
    (void)state;
    assert_true(kern_simd_available(KERN_SIMD_SCALAR));
    kern_simd saved = kern_simd_get();
    assert_int_equal(kern_simd_set(KERN_SIMD_SCALAR), 0);
    assert_string_equal(kern_simd_name(), "scalar");
    assert_int_equal(kern_simd_set((kern_simd)7), -1);
    if (kern_simd_available(KERN_SIMD_AVX2_PLAIN)) {
        assert_int_equal(kern_simd_set(KERN_SIMD_AVX2_PLAIN), 0);
        assert_string_equal(kern_simd_name(), "avx2");
        assert_int_equal(kern_simd_set(KERN_SIMD_SCALAR), 0);
    }
    assert_int_equal(kern_simd_get(), KERN_SIMD_SCALAR);
    assert_int_equal(kern_simd_set(saved), 0);
    print_message("SIMD paths: scalar%s%s; default %s\n",
                  kern_simd_available(KERN_SIMD_AVX2) ? ", avx2" : "",
                  kern_simd_available(KERN_SIMD_AVX512) ? ", avx512" : "", kern_simd_name());
}

static void f16_helpers_once(void)
{
    float a[67], b[67], back[67];
    uint16_t h[67];
    for (int i = 0; i < 67; i++) {
        a[i] = rndf(-3.0f, 3.0f);
        b[i] = rndf(-1.0f, 1.0f);
    }
    a[0] = 65520.0f; /* rounds to inf */
    a[1] = 1e-6f;    /* denormal half */
    a[2] = -0.0f;
    kern_f32_to_f16(a, h, 67);
    for (int i = 0; i < 67; i++)
        assert_int_equal(h[i], codec_f32_to_f16(a[i]));
    kern_f16_to_f32(h, back, 67);
    for (int i = 0; i < 67; i++)
        assert_true(memcmp(&back[i], &(float){codec_f16_to_f32(h[i])}, 4) == 0);
    a[0] = 1.0f;
    a[1] = 2.0f;
    kern_f32_to_f16(a, h, 67);
    double ref = 0;
    for (int i = 0; i < 67; i++)
        ref += (double)codec_f16_to_f32(h[i]) * b[i];
    assert_true(fabs(kern_dot_f16_f32(h, b, 67) - ref) < 1e-4);
    float yv[67];
    memcpy(yv, b, sizeof yv);
    kern_axpy_f16(0.5f, h, yv, 67);
    for (int i = 0; i < 67; i++)
        assert_true(fabsf(yv[i] - (b[i] + 0.5f * codec_f16_to_f32(h[i]))) < 1e-6f);
}

static void test_f16_helpers(void **state)
{
    (void)state;
    kern_simd saved = kern_simd_get();
    for (int p = KERN_SIMD_SCALAR; p <= KERN_SIMD_AVX2_PLAIN; p++)
        if (kern_simd_set((kern_simd)p) == 0)
            f16_helpers_once();
    assert_int_equal(kern_simd_set(saved), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_runs),
        cmocka_unit_test(test_pool_sleep_wake),
        cmocka_unit_test(test_pool_null_and_default),
        cmocka_unit_test(test_pool_dynamic),
        cmocka_unit_test(test_pool_width),
        cmocka_unit_test(test_memread_ranges),
        cmocka_unit_test(test_simd_select),
        cmocka_unit_test(test_quantize_act),
        cmocka_unit_test(test_act_quant_all_paths),
        cmocka_unit_test(test_f16_helpers),
        cmocka_unit_test(test_matmul_errors),
        cmocka_unit_test(test_matmul_F32),
        cmocka_unit_test(test_matmul_F16),
        cmocka_unit_test(test_matmul_BF16),
        cmocka_unit_test(test_matmul_Q4_0),
        cmocka_unit_test(test_matmul_Q4_1),
        cmocka_unit_test(test_matmul_Q5_0),
        cmocka_unit_test(test_matmul_Q5_1),
        cmocka_unit_test(test_matmul_Q8_0),
        cmocka_unit_test(test_matmul_IQ4_NL),
        cmocka_unit_test(test_matmul_Q2_K),
        cmocka_unit_test(test_matmul_Q3_K),
        cmocka_unit_test(test_matmul_Q4_K),
        cmocka_unit_test(test_matmul_Q5_K),
        cmocka_unit_test(test_matmul_Q6_K),
        cmocka_unit_test(test_matmul_MXFP4),
        cmocka_unit_test(test_mxfp4_exact),
        cmocka_unit_test(test_float_vec_zen4_order),
        cmocka_unit_test(test_matmul_quantized_weights),
        cmocka_unit_test(test_fast_kernels_bitwise),
        cmocka_unit_test(test_matmul_generic_types),
        cmocka_unit_test(test_matmul_n_same_floats),
        cmocka_unit_test(test_matmul_one_token_lanes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
