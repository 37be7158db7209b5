/* Reference quantizers: byte-exact against ggml's own output (the fixtures in
 * ../shared/fixtures/quant), round-trip error on Gaussian data within what
 * each type is known for, edge cases, importance weights, threads. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "codec.h"
#include "ggtype.h"
#include "gguf.h"
#include "quantize_internal.h"

/* Every type with a quantizer, and the relative round-trip RMSE
 * (RMSE / RMS of the data) it must show on 1M N(0,1) values: below `hi`
 * (what the type is known for, with a little margin) and above `lo` (a
 * quantizer that copied its input or kept too many bits would fail). */
typedef struct {
    uint32_t type;
    double lo, hi;
} qtype;

static const qtype QTYPES[] = {
    /* f16: 11-bit mantissa, bf16: 8-bit; rounding error ~2^-p/sqrt(3)... */
    {GGTYPE_F16, 5e-5, 3e-4},
    {GGTYPE_BF16, 5e-4, 3e-3},
    /* Q8_0: step amax/127 per 32 values; for N(0,1) E[amax] ~ 2.2, so the
     * rounding noise step/sqrt(12) is ~0.53% (ggml's own output: 0.535%) */
    {GGTYPE_Q8_0, 3e-3, 5.6e-3},
    {GGTYPE_Q6_K, 8e-3, 2.5e-2},
    {GGTYPE_Q5_0, 2e-2, 6e-2},
    {GGTYPE_Q5_1, 2e-2, 6e-2},
    {GGTYPE_Q5_K, 1.5e-2, 5e-2},
    {GGTYPE_Q4_0, 5e-2, 0.12},
    {GGTYPE_Q4_1, 5e-2, 0.12},
    {GGTYPE_Q4_K, 3e-2, 0.10},
    {GGTYPE_IQ4_NL, 4e-2, 0.10},
    {GGTYPE_IQ4_XS, 4e-2, 0.10},
    {GGTYPE_MXFP4, 6e-2, 0.16},
    {GGTYPE_Q3_K, 0.08, 0.20},
    {GGTYPE_Q2_K, 0.15, 0.35},
    /* ternary types are made for ternary weights (see test_patterns): on
     * Gaussian data with d = amax of 256 values most values round to 0 */
    {GGTYPE_TQ2_0, 0.60, 0.90},
    {GGTYPE_TQ1_0, 0.60, 0.90},
};
#define N_QTYPES (sizeof QTYPES / sizeof QTYPES[0])

/* ---- data ---- */

static uint64_t rng_next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) /* (0, 1] */
{
    return ((double)(rng_next(s) >> 11) + 1.0) / 9007199254740992.0;
}

/* n values from N(0, sigma^2), Box-Muller. */
static void gaussian(float *x, size_t n, uint64_t seed, double sigma)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i += 2) {
        const double r = sqrt(-2.0 * log(rng_unit(&s)));
        const double a = 6.283185307179586 * rng_unit(&s);
        x[i] = (float)(sigma * r * cos(a));
        if (i + 1 < n)
            x[i + 1] = (float)(sigma * r * sin(a));
    }
}

static size_t row_bytes(uint32_t type, uint64_t n)
{
    return (size_t)ggtype_row_size(type, n, NULL);
}

/* Quantize nrows x n and dequantize back into y; returns the bytes. */
static size_t round_trip(uint32_t type, const float *x, float *y, uint64_t nrows, uint64_t n,
                         const float *imatrix)
{
    const size_t rb = row_bytes(type, n);
    assert_true(rb > 0);
    uint8_t *q = malloc(rb * nrows);
    assert_non_null(q);
    const size_t w = codec_quantize(type, x, q, nrows, n, imatrix);
    assert_int_equal(w, rb * nrows);
    assert_int_equal(codec_dequantize(type, q, y, nrows * n), 0);
    free(q);
    return w;
}

static double rel_rmse(const float *x, const float *y, size_t n)
{
    double se = 0, ss = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)x[i] - (double)y[i];
        se += d * d;
        ss += (double)x[i] * (double)x[i];
    }
    return ss > 0 ? sqrt(se / ss) : sqrt(se / (double)n);
}

/* ---- byte-exact against ggml ---- */

/* For each type: quantize the fixture's `src` and compare with ggml's `q`. */
static void test_fixtures_exact(void **state)
{
    (void)state;
    if (!tu_shared("fixtures/quant"))
        TU_SKIP_NO_SHARED();
    int checked = 0;
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        char rel[128];
        snprintf(rel, sizeof rel, "fixtures/quant/quant-%s.gguf", ggtype_name(type));
        const char *path = tu_shared(rel);
        gguf_error err;
        gguf_file *f = gguf_open(path, &err);
        if (!f) {
            char buf[1024];
            fail_msg("%s: %s", rel, gguf_error_format(&err, buf, sizeof buf));
        }
        const gguf_tensor *src = gguf_find_tensor(f, "src");
        const gguf_tensor *q = gguf_find_tensor(f, "q");
        assert_non_null(src);
        assert_non_null(q);
        assert_int_equal(src->type, GGTYPE_F32);
        assert_int_equal(q->type, type);
        const uint64_t n = src->ne[0], nrows = src->n_elements / src->ne[0];
        assert_int_equal(q->ne[0], n);
        assert_int_equal(q->n_bytes, row_bytes(type, n) * nrows);
        bool ones = false;
        (void)gguf_get_bool(f, "fixture.imatrix_ones", &ones);

        /* the mapping is only 32-byte aligned at the data section: copy */
        float *x = malloc(src->n_bytes);
        uint8_t *out = malloc(q->n_bytes);
        assert_non_null(x);
        assert_non_null(out);
        memcpy(x, src->data, src->n_bytes);
        assert_int_equal(codec_quantize(type, x, out, nrows, n, NULL), q->n_bytes);

        const size_t rb = row_bytes(type, n);
        uint64_t bad_rows = 0, bad_bytes = 0;
        for (uint64_t r = 0; r < nrows; r++) {
            uint64_t b = 0;
            for (size_t i = 0; i < rb; i++)
                b += out[r * rb + i] != q->data[r * rb + i];
            bad_bytes += b;
            bad_rows += b != 0;
        }
        if (ones) {
            /* ggml needed an importance matrix here: exactness not required */
            float *a = malloc(n * nrows * sizeof(float)), *b = malloc(n * nrows * sizeof(float));
            assert_int_equal(codec_dequantize(type, out, a, n * nrows), 0);
            assert_int_equal(codec_dequantize(type, q->data, b, n * nrows), 0);
            const double ours = rel_rmse(x, a, n * nrows), theirs = rel_rmse(x, b, n * nrows);
            print_message("%-7s imatrix_ones: %" PRIu64 " rows differ, rel RMSE ours %.4f ggml %.4f\n",
                          ggtype_name(type), bad_rows, ours, theirs);
            assert_true(ours <= theirs * 1.10 + 1e-6);
            free(a);
            free(b);
        } else {
            print_message("%-7s %" PRIu64 " rows x %" PRIu64 ": %s\n", ggtype_name(type), nrows, n,
                          bad_bytes ? "MISMATCH" : "byte-exact");
            if (bad_bytes)
                fail_msg("%s: %" PRIu64 " bytes in %" PRIu64 " rows differ from ggml's",
                         ggtype_name(type), bad_bytes, bad_rows);
        }
        checked++;
        free(x);
        free(out);
        gguf_close(f);
    }
    assert_int_equal(checked, (int)N_QTYPES);
}

/* ---- more vectors from ggml, importance paths included ---- */

/* tests/data/quant-vectors.gguf (made by tools/gen_quant_vectors.c with the
 * peer oracle's ggml_quantize_chunk): 6 rows of varied data, an importance
 * matrix, and ggml's output for every type without (`q.TYPE`) and with
 * (`qi.TYPE`) the importance matrix. Ours must be the same bytes. */
static void test_ggml_vectors(void **state)
{
    (void)state;
    const char *root = getenv("GGSCOPE_SRC");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/quant-vectors.gguf", root ? root : ".");
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    if (!f) {
        char buf[1024];
        fail_msg("%s", gguf_error_format(&err, buf, sizeof buf));
    }
    const gguf_tensor *src = gguf_find_tensor(f, "src");
    const gguf_tensor *im = gguf_find_tensor(f, "imatrix");
    assert_non_null(src);
    assert_non_null(im);
    const uint64_t n = src->ne[0], nrows = src->ne[1];
    assert_int_equal(im->n_elements, n);
    float *x = malloc(src->n_bytes), *w = malloc(im->n_bytes);
    assert_non_null(x);
    assert_non_null(w);
    memcpy(x, src->data, src->n_bytes);
    memcpy(w, im->data, im->n_bytes);
    int plain = 0, weighted = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[64];
        gguf_str_copy(t->name, name, sizeof name);
        const bool is_q = strncmp(name, "q.", 2) == 0, is_qi = strncmp(name, "qi.", 3) == 0;
        if (!is_q && !is_qi)
            continue;
        assert_string_equal(strchr(name, '.') + 1, ggtype_name(t->type));
        const size_t rb = row_bytes(t->type, n);
        assert_int_equal(t->n_bytes, rb * nrows);
        uint8_t *out = malloc(t->n_bytes);
        assert_non_null(out);
        assert_int_equal(codec_quantize(t->type, x, out, nrows, n, is_qi ? w : NULL), t->n_bytes);
        for (uint64_t r = 0; r < nrows; r++)
            if (memcmp(out + r * rb, t->data + r * rb, rb))
                fail_msg("%s: row %" PRIu64 " differs from ggml's", name, r);
        free(out);
        plain += is_q;
        weighted += is_qi;
    }
    print_message("%d types without and %d with importance weights: byte-exact\n", plain, weighted);
    assert_int_equal(plain, (int)N_QTYPES - 2); /* all but F16 and BF16 */
    assert_int_equal(weighted, 11);             /* the types that take weights */
    free(x);
    free(w);
    gguf_close(f);
}

/* ---- round trip on Gaussian data ---- */

/* 1M values; a quarter under the sanitizers (unoptimized, ~20x slower: the
 * bounds are statistical and hold there too; the full-size figures come from
 * the normal build) */
#if defined(__SANITIZE_ADDRESS__)
#define QT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QT_SANITIZED 1
#endif
#endif
#ifdef QT_SANITIZED
#define RT_N (1u << 18)
#else
#define RT_N (1u << 20)
#endif

static void test_round_trip_gaussian(void **state)
{
    (void)state;
    float *x = malloc(RT_N * sizeof(float)), *y = malloc(RT_N * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    gaussian(x, RT_N, 42, 1.0);
    int failed = 0;
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        const size_t bytes = round_trip(type, x, y, RT_N / 4096, 4096, NULL);
        const double e = rel_rmse(x, y, RT_N);
        print_message("%-7s %5.2f bits/value  rel RMSE %.5f on %u values (bounds %.4g .. %.4g)\n",
                      ggtype_name(type), 8.0 * (double)bytes / RT_N, e, RT_N, QTYPES[t].lo,
                      QTYPES[t].hi);
        if (!(e > QTYPES[t].lo && e < QTYPES[t].hi)) {
            print_message("FAIL: %s: rel RMSE %.5f outside [%g, %g]\n", ggtype_name(type), e,
                          QTYPES[t].lo, QTYPES[t].hi);
            failed++;
        }
    }
    /* Q8_0's figure is the rounding noise of its format: values rounded to a
     * grid of step d = amax/127 per block of 32 have an RMSE of
     * sqrt(mean(d^2)/12) (uniform error), 0.53% for N(0,1) data. The measured
     * value must be that, within 2%. */
    double sd2 = 0, ss = 0;
    for (size_t b = 0; b < RT_N / 32; b++) {
        double amax = 0;
        for (size_t i = 0; i < 32; i++) {
            amax = fmax(amax, fabs((double)x[b * 32 + i]));
            ss += (double)x[b * 32 + i] * x[b * 32 + i];
        }
        sd2 += (amax / 127) * (amax / 127);
    }
    const double predicted = sqrt(sd2 / (RT_N / 32) / 12) / sqrt(ss / RT_N);
    round_trip(GGTYPE_Q8_0, x, y, RT_N / 4096, 4096, NULL);
    const double q8 = rel_rmse(x, y, RT_N);
    print_message("q8_0 rel RMSE %.5f, rounding-noise prediction %.5f\n", q8, predicted);
    if (fabs(q8 / predicted - 1) > 0.02)
        fail_msg("q8_0: %.5f is not its rounding noise %.5f", q8, predicted);
    free(x);
    free(y);
    assert_int_equal(failed, 0);
}

/* ---- edge cases ---- */

#define EDGE_N 1024 /* 4 super-blocks, 32 blocks */

static void check_finite(uint32_t type, const char *what, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(y[i]))
            fail_msg("%s, %s: value %zu is %g", ggtype_name(type), what, i, (double)y[i]);
}

/* Worst |x - y| relative to the block-independent scale `ref`. */
static double max_err(const float *x, const float *y, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)x[i] - (double)y[i]));
    return m;
}

static void test_zero_rows(void **state)
{
    (void)state;
    float x[EDGE_N] = {0}, y[EDGE_N];
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        round_trip(type, x, y, 2, EDGE_N / 2, NULL);
        for (size_t i = 0; i < EDGE_N; i++)
            if (y[i] != 0.0f)
                fail_msg("%s: zero row gives %g at %zu", ggtype_name(type), (double)y[i], i);
    }
}

/* Constant rows come back close to the constant (exactly for most types);
 * the ternary types cannot hold anything else than {-d, 0, d} = the constant. */
static void test_constant_rows(void **state)
{
    (void)state;
    /* magnitudes whose block scales stay normal f16 numbers (tiny ones are
     * covered by test_huge_and_tiny) */
    static const float consts[] = {0.375f, -2.5f, 1000.0f, -0.75f, 7.0f};
    float x[EDGE_N], y[EDGE_N];
    for (size_t c = 0; c < sizeof consts / sizeof consts[0]; c++) {
        for (size_t i = 0; i < EDGE_N; i++)
            x[i] = consts[c];
        for (size_t t = 0; t < N_QTYPES; t++) {
            const uint32_t type = QTYPES[t].type;
            round_trip(type, x, y, 1, EDGE_N, NULL);
            check_finite(type, "constant", y, EDGE_N);
            /* one f16 scale of relative precision 2^-11, a little more for
             * the 2-level scale codes of the K-quants and MXFP4's powers of 2 */
            const double tol = fabs((double)consts[c]) *
                               (type == GGTYPE_MXFP4 ? 0.26 : type == GGTYPE_BF16 ? 4e-3 : 2e-2);
            const double e = max_err(x, y, EDGE_N);
            if (e > tol)
                fail_msg("%s: constant %g comes back off by %g", ggtype_name(type),
                         (double)consts[c], e);
        }
    }
}

/* Large and tiny magnitudes: outputs stay finite and the relative error stays
 * that of the type, as long as the block scales fit their storage (f16 for
 * most types: |x| up to ~5e4 in every type here). Tiny values whose scale
 * underflows f16 quantize to zero: error = the data itself, never more. */
static void test_huge_and_tiny(void **state)
{
    (void)state;
    enum { R = 16 };
    float *x = malloc(EDGE_N * R * sizeof(float)), *y = malloc(EDGE_N * R * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    const size_t n = EDGE_N * R;
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        /* huge: sigma 1e4 (|x| to ~5e4) */
        gaussian(x, n, 7, 1e4);
        round_trip(type, x, y, R, EDGE_N, NULL);
        check_finite(type, "huge", y, n);
        double e = rel_rmse(x, y, n);
        if (!(e < QTYPES[t].hi * 1.05))
            fail_msg("%s: sigma 1e4 rel RMSE %g", ggtype_name(type), e);
        /* a block with one outlier 3e4 among small values */
        gaussian(x, n, 8, 1.0);
        x[100] = 3e4f;
        round_trip(type, x, y, R, EDGE_N, NULL);
        check_finite(type, "outlier", y, n);
        /* tiny: sigma 1e-6 (block scales in or below f16's subnormal range:
         * precision is lost, ggml's K-quants may even keep only their min,
         * but nothing blows up), then 1e-20, 1e-38, 1e-43 (scales underflow
         * to zero: the output is zero, or better for BF16 and MXFP4) */
        static const double tiny[] = {1e-6, 1e-20, 1e-38, 1e-43};
        for (size_t k = 0; k < sizeof tiny / sizeof tiny[0]; k++) {
            gaussian(x, n, 9 + k, tiny[k]);
            round_trip(type, x, y, R, EDGE_N, NULL);
            check_finite(type, "tiny", y, n);
            double xmax = 0, ymax = 0;
            for (size_t i = 0; i < n; i++) {
                xmax = fmax(xmax, fabs((double)x[i]));
                ymax = fmax(ymax, fabs((double)y[i]));
            }
            e = rel_rmse(x, y, n);
            if (!(ymax <= 4 * xmax) || (k > 0 && !(e <= 1.0 + 1e-6)))
                fail_msg("%s: sigma %g: rel RMSE %g, max |y| %g for max |x| %g", ggtype_name(type),
                         tiny[k], e, ymax, xmax);
        }
    }
    /* the types whose scale is not an f16 take the whole float range */
    static const uint32_t wide[] = {GGTYPE_BF16, GGTYPE_MXFP4};
    for (size_t k = 0; k < 2; k++) {
        const uint32_t type = wide[k];
        gaussian(x, n, 10, 1e37);
        round_trip(type, x, y, R, EDGE_N, NULL);
        check_finite(type, "1e37", y, n);
        const double e = rel_rmse(x, y, n);
        if (!(e < (type == GGTYPE_BF16 ? 3e-3 : 0.16)))
            fail_msg("%s: sigma 1e37 rel RMSE %g", ggtype_name(type), e);
    }
    free(x);
    free(y);
}

/* +-1 alternating, a ramp, all-negative data: the exact levels where types
 * have them. */
static void test_patterns(void **state)
{
    (void)state;
    float x[EDGE_N], y[EDGE_N];
    for (size_t i = 0; i < EDGE_N; i++)
        x[i] = (i & 1) ? 1.0f : -1.0f;
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        round_trip(type, x, y, 1, EDGE_N, NULL);
        check_finite(type, "alternating", y, EDGE_N);
        /* +-1 is representable by every type, but for the symmetric types with
         * levels -2^(b-1) .. 2^(b-1)-1 (Q4_0, Q5_0) the sign opposite to the
         * first largest value loses one step (d = 1/8, 1/16); where the levels
         * that would hold +-1 are not symmetric (IQ4: -127 and 113, Q3_K: -4
         * and 3) the least-squares scale splits the difference */
        double tol = 2e-3;
        switch (type) {
        case GGTYPE_Q4_0: tol = 0.125; break;
        case GGTYPE_Q5_0: tol = 0.0625; break;
        case GGTYPE_IQ4_NL:
        case GGTYPE_IQ4_XS: tol = 0.07; break;
        case GGTYPE_Q3_K: tol = 0.17; break;
        default: break;
        }
        const double e = max_err(x, y, EDGE_N);
        if (e > tol)
            fail_msg("%s: +-1 comes back off by %g", ggtype_name(type), e);
    }
    /* ternary data {-a, 0, a}: exact (a is an f16) in the ternary types */
    for (size_t i = 0; i < EDGE_N; i++)
        x[i] = (float)((int)(i * 7 % 3) - 1) * 0.8125f;
    static const uint32_t tern[] = {GGTYPE_TQ1_0, GGTYPE_TQ2_0};
    for (size_t k = 0; k < 2; k++) {
        round_trip(tern[k], x, y, 1, EDGE_N, NULL);
        assert_memory_equal(x, y, sizeof x);
    }
    for (size_t i = 0; i < EDGE_N; i++)
        x[i] = -1.0f - (float)(i % 256) / 64.0f;
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        round_trip(type, x, y, 1, EDGE_N, NULL);
        check_finite(type, "negative ramp", y, EDGE_N);
        if (!(rel_rmse(x, y, EDGE_N) < QTYPES[t].hi))
            fail_msg("%s: negative ramp rel RMSE %g", ggtype_name(type), rel_rmse(x, y, EDGE_N));
    }
}

/* ---- API contract ---- */

static void test_api(void **state)
{
    (void)state;
    for (uint32_t t = 0; t < GGTYPE_COUNT + 5; t++) {
        bool want = false;
        for (size_t k = 0; k < N_QTYPES; k++)
            want |= QTYPES[k].type == t;
        assert_int_equal(codec_can_quantize(t), want);
    }
    float x[512] = {0};
    uint8_t out[2048];
    assert_int_equal(codec_quantize(GGTYPE_F32, x, out, 1, 512, NULL), 0);
    assert_int_equal(codec_quantize(GGTYPE_IQ2_XXS, x, out, 1, 256, NULL), 0);
    assert_int_equal(codec_quantize(GGTYPE_Q8_K, x, out, 1, 256, NULL), 0);
    assert_int_equal(codec_quantize(GGTYPE_Q4_0, x, out, 1, 48, NULL), 0);   /* not a multiple of 32 */
    assert_int_equal(codec_quantize(GGTYPE_Q4_K, x, out, 1, 128, NULL), 0);  /* nor of 256 */
    assert_int_equal(codec_quantize(GGTYPE_Q4_0, x, out, 1, 0, NULL), 0);
    assert_int_equal(codec_quantize(GGTYPE_Q4_0, NULL, out, 1, 32, NULL), 0);
    assert_int_equal(codec_quantize(GGTYPE_Q4_0, x, NULL, 1, 32, NULL), 0);
    assert_int_equal(codec_quantize(GGTYPE_Q4_0, x, out, UINT64_MAX / 2, 512, NULL), 0);
    assert_int_equal(codec_quantize(GGTYPE_Q4_0, x, out, 1, 512, NULL), 16 * 18);
    assert_int_equal(codec_quantize(GGTYPE_Q6_K, x, out, 2, 256, NULL), 2 * 210);
}

/* Rows are independent: many rows at once = row by row. */
static void test_rows_independent(void **state)
{
    (void)state;
    enum { R = 6, N = 512 };
    float x[R * N];
    gaussian(x, R * N, 11, 0.5);
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        const size_t rb = row_bytes(type, N);
        uint8_t all[R * 1024], one[1024];
        assert_int_equal(codec_quantize(type, x, all, R, N, NULL), R * rb);
        for (int r = 0; r < R; r++) {
            assert_int_equal(codec_quantize(type, x + r * N, one, 1, N, NULL), rb);
            assert_memory_equal(one, all + r * rb, rb);
        }
    }
}

/* ---- importance weights ---- */

/* Weighted squared error sum w_i (x_i - y_i)^2. */
static double wse(const float *x, const float *y, const float *w, size_t nrows, size_t n)
{
    double s = 0;
    for (size_t r = 0; r < nrows; r++)
        for (size_t i = 0; i < n; i++) {
            const double d = (double)x[r * n + i] - (double)y[r * n + i];
            s += w[i] * d * d;
        }
    return s;
}

/* Types that take an importance matrix use it to lower the weighted error;
 * the others ignore it (same bytes as without). */
static void test_imatrix(void **state)
{
    (void)state;
    enum { N = 4096, R = 16 };
    float *x = malloc(N * R * sizeof(float)), *y0 = malloc(N * R * sizeof(float)),
          *y1 = malloc(N * R * sizeof(float)), *w = malloc(N * sizeof(float));
    assert_non_null(x);
    assert_non_null(y0);
    assert_non_null(y1);
    assert_non_null(w);
    gaussian(x, N * R, 12, 1.0);
    uint64_t s = 13;
    for (size_t i = 0; i < N; i++) /* weights spread over 4 orders of magnitude */
        w[i] = (float)pow(10.0, 4.0 * rng_unit(&s) - 2.0);
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        const size_t rb = row_bytes(type, N);
        uint8_t *q0 = malloc(rb * R), *q1 = malloc(rb * R);
        assert_non_null(q0);
        assert_non_null(q1);
        assert_int_equal(codec_quantize(type, x, q0, R, N, NULL), rb * R);
        assert_int_equal(codec_quantize(type, x, q1, R, N, w), rb * R);
        const bool uses = memcmp(q0, q1, rb * R) != 0;
        const bool takes = type != GGTYPE_F16 && type != GGTYPE_BF16 && type != GGTYPE_Q8_0 &&
                           type != GGTYPE_MXFP4 && type != GGTYPE_TQ1_0 && type != GGTYPE_TQ2_0;
        assert_int_equal(uses, takes);
        if (takes) {
            assert_int_equal(codec_dequantize(type, q0, y0, (uint64_t)N * R), 0);
            assert_int_equal(codec_dequantize(type, q1, y1, (uint64_t)N * R), 0);
            check_finite(type, "imatrix", y1, (size_t)N * R);
            const double e0 = wse(x, y0, w, R, N), e1 = wse(x, y1, w, R, N);
            print_message("%-7s weighted error with imatrix / without: %.3f  (rel RMSE %.4f)\n",
                          ggtype_name(type), e1 / e0, rel_rmse(x, y1, (size_t)N * R));
            if (!(e1 < e0))
                fail_msg("%s: importance weights did not lower the weighted error (%g vs %g)",
                         ggtype_name(type), e1, e0);
        }
        free(q0);
        free(q1);
    }
    free(x);
    free(y0);
    free(y1);
    free(w);
}

/* ---- the lane-parallel searches against ggml's scalar code ---- */

/* codec_quantize runs the scale searches of the K-quants, IQ4 and the
 * importance paths 16 candidates at a time; ggml's candidate-by-candidate
 * code is kept as qz_quantize(..., lanes = false). Both must give the same
 * bytes on every kind of data, with and without importance weights. */
static void test_lanes_match_scalar(void **state)
{
    (void)state;
    enum { N = 1024, R = 12 };
    float *x = malloc(N * R * sizeof(float)), w[N];
    assert_non_null(x);
    uint64_t s = 21;
    gaussian(x, N * R, 22, 1.0);
    for (size_t i = 0; i < N; i++) /* row 0: as drawn; the others reshaped */
        w[i] = (float)pow(10.0, 3.0 * rng_unit(&s) - 1.5);
    for (size_t i = 0; i < N; i++) {
        x[1 * N + i] = (float)(2.0 * rng_unit(&s) - 1.0);            /* uniform */
        x[2 * N + i] = (float)rng_unit(&s);                          /* all positive */
        x[3 * N + i] = -(float)rng_unit(&s) * 100.0f;                /* all negative */
        x[4 * N + i] = x[4 * N + i] * x[4 * N + i] * x[4 * N + i];   /* heavy tails */
        x[5 * N + i] = rng_unit(&s) < 0.9 ? 0.0f : x[5 * N + i];      /* sparse */
        x[6 * N + i] = (i / 8) % 3 == 0 ? 0.5f : x[6 * N + i];        /* constant runs */
        x[7 * N + i] = (i & 1) ? 1.0f : -1.0f;                       /* alternating */
        x[8 * N + i] *= 1e-6f;                                       /* tiny */
        x[9 * N + i] *= 1e4f;                                        /* large */
        x[10 * N + i] = (float)((int)(rng_unit(&s) * 3) - 1);        /* ternary */
        x[11 * N + i] = (i % 32 == 5) ? 50.0f : x[11 * N + i] * 0.01f; /* outliers */
    }
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        const size_t rb = row_bytes(type, N);
        uint8_t *a = malloc(rb * R), *b = malloc(rb * R);
        assert_non_null(a);
        assert_non_null(b);
        for (int im = 0; im < 2; im++) {
            const float *qw = im ? w : NULL;
            assert_int_equal(qz_quantize(type, x, a, R, N, qw, false), rb * R);
            assert_int_equal(qz_quantize(type, x, b, R, N, qw, true), rb * R);
            for (int r = 0; r < R; r++)
                if (memcmp(a + r * rb, b + r * rb, rb))
                    fail_msg("%s%s: row %d: lanes differ from ggml's scalar search",
                             ggtype_name(type), im ? " (imatrix)" : "", r);
        }
        free(a);
        free(b);
    }
    free(x);
}

/* ---- threads ---- */

typedef struct {
    uint32_t type;
    const float *x;
    uint8_t *out;
    uint64_t row0, nrows, n;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    const size_t rb = row_bytes(j->type, j->n);
    for (uint64_t r = j->row0; r < j->row0 + j->nrows; r++)
        if (codec_quantize(j->type, j->x + r * j->n, j->out + r * rb, 1, j->n, NULL) != rb)
            return (void *)1;
    return NULL;
}

/* Several threads quantizing row chunks of one tensor give the serial bytes. */
static void test_threads(void **state)
{
    (void)state;
    enum { T = 4, R = 32, N = 1024 };
    float *x = malloc(R * N * sizeof(float));
    assert_non_null(x);
    gaussian(x, R * N, 14, 1.0);
    for (size_t t = 0; t < N_QTYPES; t++) {
        const uint32_t type = QTYPES[t].type;
        const size_t rb = row_bytes(type, N);
        uint8_t *serial = malloc(rb * R), *par = calloc(1, rb * R);
        assert_non_null(serial);
        assert_non_null(par);
        assert_int_equal(codec_quantize(type, x, serial, R, N, NULL), rb * R);
        pthread_t th[T];
        job jobs[T];
        for (int k = 0; k < T; k++) {
            jobs[k] = (job){type, x, par, (uint64_t)k * (R / T), R / T, N};
            assert_int_equal(pthread_create(&th[k], NULL, worker, &jobs[k]), 0);
        }
        for (int k = 0; k < T; k++) {
            void *ret;
            pthread_join(th[k], &ret);
            assert_null(ret);
        }
        assert_memory_equal(serial, par, rb * R);
        free(serial);
        free(par);
    }
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_fixtures_exact),
        cmocka_unit_test(test_ggml_vectors),
        cmocka_unit_test(test_round_trip_gaussian),
        cmocka_unit_test(test_zero_rows),
        cmocka_unit_test(test_constant_rows),
        cmocka_unit_test(test_huge_and_tiny),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_rows_independent),
        cmocka_unit_test(test_imatrix),
        cmocka_unit_test(test_lanes_match_scalar),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
