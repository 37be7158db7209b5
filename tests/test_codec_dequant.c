/* Dequantization: known answers, every SIMD path against the scalar code on
 * random blocks, argument checks, and ggml's fixtures (../shared) bit for bit
 * through every path this CPU has. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "codec.h"
#include "ggtype.h"
#include "gguf.h"

static const char *const PATHS[] = {"scalar", "avx2", "avx512"};
#define N_PATHS 3

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Compare two float arrays bit for bit; fail with the first difference. */
static void assert_same_bits(const float *got, const float *want, uint64_t n, const char *what, const char *path)
{
    for (uint64_t i = 0; i < n; i++)
        if (fbits(got[i]) != fbits(want[i]))
            fail_msg("%s via %s: element %llu: got 0x%08x (%g), want 0x%08x (%g)", what, path,
                     (unsigned long long)i, fbits(got[i]), (double)got[i], fbits(want[i]), (double)want[i]);
}

static void put_half(uint8_t *p, float f)
{
    uint16_t h = codec_f32_to_f16(f);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* Hand-worked blocks: values from the format definitions, not from the code. */
static void test_known_answers(void **state)
{
    (void)state;
    float y[256];
    uint8_t b[300];

    /* q4_0: d = 0.5, qs[0] = 0x9F -> y[0] = (15-8)*0.5, y[16] = (9-8)*0.5 */
    memset(b, 0x88, sizeof b);
    put_half(b, 0.5f);
    b[2] = 0x9F;
    assert_int_equal(codec_dequantize(GGTYPE_Q4_0, b, y, 32), 0);
    assert_true(y[0] == 3.5f && y[16] == 0.5f && y[1] == 0.0f && y[31] == 0.0f);

    /* q8_0: d = 0.25, qs = -128, 127, 3 */
    memset(b, 0, sizeof b);
    put_half(b, 0.25f);
    b[2] = 0x80;
    b[3] = 0x7f;
    b[4] = 3;
    assert_int_equal(codec_dequantize(GGTYPE_Q8_0, b, y, 32), 0);
    assert_true(y[0] == -32.0f && y[1] == 31.75f && y[2] == 0.75f && y[3] == 0.0f);

    /* q4_1: d = 2, m = -1, nibble 5 -> 9 */
    memset(b, 0, sizeof b);
    put_half(b, 2.0f);
    put_half(b + 2, -1.0f);
    b[4] = 0x05;
    assert_int_equal(codec_dequantize(GGTYPE_Q4_1, b, y, 32), 0);
    assert_true(y[0] == 9.0f && y[16] == -1.0f);

    /* q4_K: d = 1, dmin = 0.5, sub-block 0 scale 3 / min 2, sub-block 1 scale 5 / min 4;
     * qs[0] = 0x72 -> y[0] = 3*2 - 1 = 5, y[32] = 5*7 - 2 = 33 */
    memset(b, 0, sizeof b);
    put_half(b, 1.0f);
    put_half(b + 2, 0.5f);
    b[4] = 3;     /* scale 0 */
    b[5] = 5;     /* scale 1 */
    b[8] = 2;     /* min 0 */
    b[9] = 4;     /* min 1 */
    b[16] = 0x72; /* qs[0] */
    assert_int_equal(codec_dequantize(GGTYPE_Q4_K, b, y, 256), 0);
    assert_true(y[0] == 5.0f && y[32] == 33.0f && y[1] == -1.0f && y[64] == 0.0f);

    /* q6_K: d = 0.5, scale[0] = -2; ql[0] = 0x0A, qh[0] = 0x01 -> q = 0x1A - 32 = -6 -> 0.5*-2*-6 = 6 */
    memset(b, 0, sizeof b);
    b[0] = 0x0A;      /* ql[0] */
    b[128] = 0x01;    /* qh[0] */
    b[192] = 0xFE;    /* scales[0] = -2 */
    put_half(b + 208, 0.5f);
    assert_int_equal(codec_dequantize(GGTYPE_Q6_K, b, y, 256), 0);
    assert_true(y[0] == 6.0f && y[1] == 32.0f);

    /* iq4_nl: d = 1, nibbles 0 and 15 -> kvalues -127 and 113 */
    memset(b, 0, sizeof b);
    put_half(b, 1.0f);
    b[2] = 0xF0;
    assert_int_equal(codec_dequantize(GGTYPE_IQ4_NL, b, y, 32), 0);
    assert_true(y[0] == -127.0f && y[16] == 113.0f);

    /* mxfp4: e = 127 (scale 1, halved 0.5), nibble 7 -> 12*0.5 = 6, nibble 0xF -> -6 */
    memset(b, 0, sizeof b);
    b[0] = 127;
    b[1] = 0xF7;
    assert_int_equal(codec_dequantize(GGTYPE_MXFP4, b, y, 32), 0);
    assert_true(y[0] == 6.0f && y[16] == -6.0f);

    /* nvfp4: sub-block 1 scale 0x38 (= 1.0 in UE4M3), nibble 1 -> 0.5 */
    memset(b, 0, sizeof b);
    b[1] = 0x38;
    b[4 + 8] = 0x01;
    assert_int_equal(codec_dequantize(GGTYPE_NVFP4, b, y, 64), 0);
    assert_true(y[16] == 0.5f && y[0] == 0.0f);

    /* q1_0: d = 3, bit set -> +3, clear -> -3 */
    memset(b, 0, sizeof b);
    put_half(b, 3.0f);
    b[2] = 0x01;
    assert_int_equal(codec_dequantize(GGTYPE_Q1_0, b, y, 128), 0);
    assert_true(y[0] == 3.0f && y[1] == -3.0f);

    /* tq2_0: codes 0,1,2 -> -d, 0, +d */
    memset(b, 0, sizeof b);
    b[0] = 0x24; /* elements 0 (bits 0-1)=0, 32 (bits 2-3)=1, 64 (bits 4-5)=2 */
    put_half(b + 64, 2.0f);
    assert_int_equal(codec_dequantize(GGTYPE_TQ2_0, b, y, 256), 0);
    assert_true(y[0] == -2.0f && y[32] == 0.0f && y[64] == 2.0f);

    /* integer and float element types */
    int16_t i16[2] = {-300, 7};
    assert_int_equal(codec_dequantize(GGTYPE_I16, i16, y, 2), 0);
    assert_true(y[0] == -300.0f && y[1] == 7.0f);
    double f64[2] = {1.5, -1e300};
    assert_int_equal(codec_dequantize(GGTYPE_F64, f64, y, 2), 0);
    assert_true(y[0] == 1.5f && isinf(y[1]) && y[1] < 0);
    uint16_t bf = 0x3fc0; /* 1.5 */
    assert_int_equal(codec_dequantize(GGTYPE_BF16, &bf, y, 1), 0);
    assert_true(y[0] == 1.5f);
}

/* Every type, every path this CPU has, on random bytes (NaN and inf scales
 * included): bit-identical to the scalar code. Odd element counts exercise
 * the tails of the element-wise kernels; an odd source address the
 * unaligned loads. */
static void test_paths_match_scalar_random(void **state)
{
    (void)state;
    enum { NBLK = 37 };
    uint8_t *buf = malloc(NBLK * 300 + 1);
    float *want = malloc(NBLK * 256 * sizeof(float)), *got = malloc(NBLK * 256 * sizeof(float));
    assert_non_null(buf);
    for (uint32_t t = 0; t < GGTYPE_COUNT; t++) {
        const ggtype_traits *tr = ggtype_get(t);
        if (!tr)
            continue;
        uint64_t n = (uint64_t)NBLK * tr->blck_size;
        for (int rep = 0; rep < 16; rep++) {
            for (size_t i = 0; i < NBLK * 300 + 1; i++)
                buf[i] = (uint8_t)rng();
            const uint8_t *src = buf + (rep & 1);
            assert_int_equal(codec_dequantize_scalar(t, src, want, n), 0);
            for (int p = 0; p < N_PATHS; p++) {
                if (!codec_simd_supported(PATHS[p]))
                    continue;
                assert_int_equal(codec_set_simd(PATHS[p]), 0);
                memset(got, 0xA5, n * sizeof(float));
                assert_int_equal(codec_dequantize(t, src, got, n), 0);
                assert_same_bits(got, want, n, tr->name, PATHS[p]);
            }
        }
    }
    assert_int_equal(codec_set_simd(NULL), 0);
    free(buf);
    free(want);
    free(got);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    float y[64];
    uint8_t b[64] = {0};
    assert_int_equal(codec_dequantize(GGTYPE_Q4_0, b, y, 31), -1);   /* not a whole block */
    assert_int_equal(codec_dequantize(4, b, y, 32), -1);              /* retired id */
    assert_int_equal(codec_dequantize(GGTYPE_COUNT, b, y, 32), -1);
    assert_int_equal(codec_dequantize(1000, b, y, 32), -1);
    assert_int_equal(codec_dequantize_scalar(GGTYPE_Q4_K, b, y, 32), -1);
    assert_int_equal(codec_dequantize(GGTYPE_Q4_0, NULL, y, 32), -1);
    assert_int_equal(codec_dequantize(GGTYPE_Q4_0, b, y, 0), 0);
    assert_int_equal(codec_set_simd("sse9"), -1);
    assert_true(codec_simd_supported("scalar"));
    assert_false(codec_simd_supported("bogus"));
    assert_string_equal(codec_dequantize_path(1000), "scalar");
    assert_int_equal(codec_set_simd("scalar"), 0);
    assert_string_equal(codec_dequantize_path(GGTYPE_Q4_0), "scalar");
    if (codec_simd_supported("avx512")) {
        assert_int_equal(codec_set_simd("avx512"), 0);
        assert_string_equal(codec_dequantize_path(GGTYPE_Q4_0), "avx512");
        assert_string_equal(codec_dequantize_path(GGTYPE_TQ1_0), "scalar");
    }
    assert_int_equal(codec_set_simd("auto"), 0);
}

/* Every .gguf in ../shared/fixtures/quant: dequantizing `q` gives `ref` bit for
 * bit, through the scalar code and each SIMD path this CPU has. */
static void test_fixtures_bit_exact(void **state)
{
    (void)state;
    const char *dir_path = tu_shared("fixtures/quant");
    if (!dir_path)
        TU_SKIP_NO_SHARED();
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", dir_path);
    DIR *dir = opendir(dirbuf);
    assert_non_null(dir);
    int n_files = 0, n_checks = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".gguf") != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dirbuf, e->d_name);
        gguf_error err;
        gguf_file *f = gguf_open(path, &err);
        if (!f)
            fail_msg("%s: %s", path, err.msg);
        const gguf_tensor *q = gguf_find_tensor(f, "q"), *ref = gguf_find_tensor(f, "ref");
        assert_non_null(q);
        assert_non_null(ref);
        assert_true(q->type_known);
        assert_int_equal(ref->type, GGTYPE_F32);
        assert_int_equal(q->n_elements, ref->n_elements);
        /* the traits table's block and type sizes agree with the file's layout:
         * q's bytes end less than one alignment before the next tensor starts */
        assert_int_equal(q->n_bytes, ggtype_row_size(q->type, q->n_elements, NULL));
        uint64_t next = UINT64_MAX;
        for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            if (t->offset > q->offset && t->offset < next)
                next = t->offset;
        }
        assert_true(next != UINT64_MAX);
        if (q->offset + q->n_bytes > next || next - (q->offset + q->n_bytes) >= gguf_alignment(f))
            fail_msg("%s: %s tensor q takes %llu bytes but the next tensor is %llu bytes after it", e->d_name,
                     ggtype_name(q->type), (unsigned long long)q->n_bytes, (unsigned long long)(next - q->offset));
        const uint64_t n = q->n_elements;
        float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
        assert_non_null(want);
        assert_non_null(got);
        memcpy(want, ref->data, n * sizeof(float));

        memset(got, 0xA5, n * sizeof(float));
        assert_int_equal(codec_dequantize_scalar(q->type, q->data, got, n), 0);
        assert_same_bits(got, want, n, e->d_name, "scalar (direct)");
        n_checks++;
        for (int p = 0; p < N_PATHS; p++) {
            if (!codec_simd_supported(PATHS[p])) {
                print_message("note: %s path not supported on this CPU, not checked\n", PATHS[p]);
                continue;
            }
            assert_int_equal(codec_set_simd(PATHS[p]), 0);
            memset(got, 0xA5, n * sizeof(float));
            assert_int_equal(codec_dequantize(q->type, q->data, got, n), 0);
            assert_same_bits(got, want, n, e->d_name, PATHS[p]);
            /* row by row too (the explorer dequantizes row ranges) */
            const uint64_t row = q->ne[0];
            const uint64_t row_bytes = ggtype_row_size(q->type, row, NULL);
            for (uint64_t r = 0; r < n / row; r++)
                assert_int_equal(codec_dequantize(q->type, q->data + r * row_bytes, got + r * row, row), 0);
            assert_same_bits(got, want, n, e->d_name, PATHS[p]);
            n_checks++;
        }
        free(want);
        free(got);
        gguf_close(f);
        n_files++;
    }
    closedir(dir);
    assert_int_equal(codec_set_simd(NULL), 0);
    print_message("checked %d fixture files, %d file x path combinations\n", n_files, n_checks);
    assert_true(n_files >= 27);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_paths_match_scalar_random),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_fixtures_bit_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
