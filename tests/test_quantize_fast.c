/* The fast scale searches (quantize_batch.c: 16 groups per vector, with an
 * AVX-512 kernel that takes a float shortcut where it is provably exact)
 * against ggml's scalar code (qz_quantize with lanes off), on a large
 * amount of random data of many kinds mixed block by block: every byte must
 * be equal, with and without importance weights.
 *
 * GGSCOPE_QFAST_ROWS=N runs N rows of 4096 values per type and mode instead
 * of the default (a long soak; the default keeps the test fast under ASan). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "codec.h"
#include "ggtype.h"
#include "quantize_internal.h"

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) /* (0, 1] */
{
    return ((double)(rng_next(s) >> 11) + 1.0) / 9007199254740992.0;
}

static double rng_gauss(uint64_t *s)
{
    return sqrt(-2.0 * log(rng_unit(s))) * cos(6.283185307179586 * rng_unit(s));
}

/* One block of 16 values of a randomly chosen kind and scale. */
static void fill_block(float *x, uint64_t *s)
{
    const int kind = (int)(rng_next(s) % 16);
    /* scales from 1e-30 to 1e30, mostly near 1 */
    const double e = rng_unit(s) < 0.8 ? 4.0 * rng_unit(s) - 2.0 : 60.0 * rng_unit(s) - 30.0;
    const double sc = pow(10.0, e);
    for (int i = 0; i < 16; i++) {
        double v;
        switch (kind) {
        case 0: v = rng_gauss(s); break;
        case 1: v = 2.0 * rng_unit(s) - 1.0; break;
        case 2: v = rng_unit(s); break;                              /* all positive */
        case 3: v = -rng_unit(s); break;                             /* all negative */
        case 4: v = tan(3.14159 * (rng_unit(s) - 0.5)); break;       /* Cauchy */
        case 5: v = rng_unit(s) < 0.85 ? 0.0 : rng_gauss(s); break;  /* sparse */
        case 6: v = 0.75; break;                                     /* constant */
        case 7: v = i == 3 ? 40.0 : 0.01 * rng_gauss(s); break;     /* outlier */
        case 8: v = (double)((int)(rng_unit(s) * 3) - 1); break;    /* ternary */
        case 9: v = (double)((int)(rng_unit(s) * 16)); break;        /* small integers */
        case 10: v = 1.0 + 1e-6 * rng_gauss(s); break;               /* nearly constant */
        case 11: v = rng_gauss(s) * rng_gauss(s) * rng_gauss(s); break;
        case 12: v = (i & 1) ? 1.0 : -1.0; break;
        case 13: v = 0.0; break;
        case 14: v = rng_gauss(s) + 3.0; break;                      /* shifted */
        default: v = rng_gauss(s) * 1e-40 / sc; break;               /* denormals */
        }
        x[i] = (float)(v * sc);
    }
    if (rng_unit(s) < 0.002) /* now and then a NaN or an infinity */
        x[rng_next(s) % 16] = rng_unit(s) < 0.5 ? NAN : (rng_unit(s) < 0.5 ? INFINITY : -INFINITY);
}

static const uint32_t TYPES[] = {GGTYPE_Q4_K, GGTYPE_Q5_K, GGTYPE_Q6_K, GGTYPE_Q2_K,
                                 GGTYPE_Q3_K, GGTYPE_IQ4_NL, GGTYPE_IQ4_XS, GGTYPE_Q4_1,
                                 GGTYPE_Q5_1, GGTYPE_Q4_0, GGTYPE_Q5_0};

static bool g_generic; /* the portable batch code is forced */

static void fast_equals_scalar(int R)
{
    enum { N = 4096 };
    assert_true(R > 0);
    float *x = malloc((size_t)N * R * sizeof(float)), *w = malloc(N * sizeof(float));
    assert_non_null(x);
    assert_non_null(w);
    uint64_t s = 0x5eed;
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        const uint32_t type = TYPES[t];
        const ggtype_traits *tr = ggtype_get(type);
        assert_non_null(tr);
        const size_t rowb = (size_t)N / tr->blck_size * tr->type_size;
        uint8_t *a = malloc(rowb * R), *b = malloc(rowb * R);
        assert_non_null(a);
        assert_non_null(b);
        for (int im = 0; im < 2; im++) {
            for (size_t i = 0; i < (size_t)N * R; i += 16)
                fill_block(x + i, &s);
            for (size_t i = 0; i < N; i++) /* weights over 6 decades, some zero */
                w[i] = rng_unit(&s) < 0.02 ? 0.0f : (float)pow(10.0, 6.0 * rng_unit(&s) - 3.0);
            const float *qw = im ? w : NULL;
            assert_int_equal(qz_quantize(type, x, a, R, N, qw, false), rowb * R);
            assert_int_equal(qz_quantize(type, x, b, R, N, qw, true), rowb * R);
            for (int r = 0; r < R; r++)
                if (memcmp(a + r * rowb, b + r * rowb, rowb))
                    fail_msg("%s%s%s: row %d of %d: fast search differs from ggml's scalar code",
                             ggtype_name(type), im ? " (imatrix)" : "",
                             g_generic ? " (portable code)" : "", r, R);
        }
        free(a);
        free(b);
    }
    free(x);
    free(w);
}

static int rows(int dflt)
{
    const char *env = getenv("GGSCOPE_QFAST_ROWS");
    return env ? atoi(env) : dflt;
}

static void test_fast_equals_scalar(void **state)
{
    (void)state;
    fast_equals_scalar(rows(64));
}

/* The portable vector code of the batch searches (what CPUs without
 * AVX-512 run) against the scalar code too. */
static void test_generic_equals_scalar(void **state)
{
    (void)state;
    qz_batch_force_generic(g_generic = true);
    fast_equals_scalar(rows(16));
    qz_batch_force_generic(g_generic = false);
}

/* Rows whose block count is odd (a batch of 2 super-blocks padded with
 * zeros) and single super-blocks. */
static void test_odd_rows(void **state)
{
    (void)state;
    enum { N = 3 * 256, R = 7 };
    float x[N * R];
    uint64_t s = 99;
    for (size_t i = 0; i < N * R; i += 16)
        fill_block(x + i, &s);
    const uint32_t types[] = {GGTYPE_Q2_K, GGTYPE_Q4_K, GGTYPE_Q5_K, GGTYPE_Q6_K};
    for (size_t t = 0; t < 4; t++) {
        const ggtype_traits *tr = ggtype_get(types[t]);
        for (int n = 256; n <= N; n += 512) {
            const size_t rowb = (size_t)n / tr->blck_size * tr->type_size;
            uint8_t a[R * 3 * 256], b[R * 3 * 256];
            assert_true(rowb * R <= sizeof a);
            assert_int_equal(qz_quantize(types[t], x, a, R, (uint64_t)n, NULL, false), rowb * R);
            assert_int_equal(qz_quantize(types[t], x, b, R, (uint64_t)n, NULL, true), rowb * R);
            assert_memory_equal(a, b, rowb * R);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_equals_scalar),
        cmocka_unit_test(test_generic_equals_scalar),
        cmocka_unit_test(test_odd_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
