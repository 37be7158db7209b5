/* The CPU backend's mixture-of-experts ops (moe_route, matmul_id, add_id,
 * swiglu_oai, moe_combine) bit for bit against plain C written from
 * llama.cpp's arithmetic (/work/notes/moe.md's formulas), the router's sort
 * against libstdc++'s std::sort itself (the stdsort_helper program, when a
 * C++ compiler built it), and argument checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "backend.h"
#include "backend_cpu_internal.h"
#include "codec.h"
#include "cpufeat.h"
#include "ggtype.h"
#include "kernels.h"
#include "quant_blocks.h"

static uint64_t rs = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static float frand(void) /* uniform [-1, 1) */
{
    return (float)((rnd() >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static backend *B;
static const backend_ops *O;

static int setup(void **state)
{
    (void)state;
    B = backend_cpu_new(2);
    O = B ? B->ops : NULL;
    return B ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    backend_free(B);
    return 0;
}

static backend_buf *buf_from(const float *x, size_t n)
{
    backend_buf *b = O->buf_new(B->ctx, BACKEND_F32, n);
    assert_non_null(b);
    if (x)
        assert_int_equal(O->buf_write(B->ctx, b, 0, x, n), 0);
    return b;
}

static void read_back(backend_buf *b, float *x, size_t n)
{
    assert_int_equal(O->buf_read(B->ctx, b, 0, x, n), 0);
}

static backend_view V(backend_buf *b) { return (backend_view){b, 0}; }

static void expect_same(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
            fail_msg("%s: element %zu is %a, want %a", what, i, got[i], want[i]);
}

static bool hw_order(void)
{
    const kern_simd ks = kern_simd_get();
    return cpufeat_llama_variant() == CPUFEAT_LLAMA_HASWELL && (ks == KERN_SIMD_AVX2 || ks == KERN_SIMD_AVX2_PLAIN);
}

static void test_caps(void **state)
{
    (void)state;
    assert_true(O->caps & BACKEND_CAP_MOE);
    assert_non_null(O->moe_route);
    assert_non_null(O->matmul_id);
    assert_non_null(O->add_id);
    assert_non_null(O->swiglu_oai);
    assert_non_null(O->moe_combine);
}

/* ---- the sort: the port against std::sort ---- */

/* Rows of n values: tie-heavy (few distinct values, all equal, zeros and
 * -inf), sorted either way, continuous. */
static void make_row(float *v, int n, int kind)
{
    for (int i = 0; i < n; i++) {
        switch (kind) {
        case 0: v[i] = (float)(rnd() % 3); break;
        case 1: v[i] = 0.5f; break;
        case 2: v[i] = rnd() % 4 ? 0.0f : frand(); break;
        case 3: v[i] = (float)(i / 3); break;
        case 4: v[i] = (float)((n - i) / 5); break;
        case 5: v[i] = rnd() % 2 ? -INFINITY : (float)(rnd() % 5); break;
        case 6: v[i] = (float)(rnd() % 2) * (i % 2 ? 1.0f : 2.0f); break;
        case 8: v[i] = rnd() % 3 ? NAN : (float)(rnd() % 4); break; /* no strict weak order */
        default: v[i] = frand(); break;
        }
    }
}

static void compare_with_std(const char *mode)
{
    const char *helper = getenv("GGSCOPE_STDSORT");
    if (!helper || !*helper) {
        print_message("SKIP: no stdsort_helper (no C++ compiler at build time): std::sort not compared\n");
        skip();
    }
    static const int sizes[] = {2, 8, 15, 16, 17, 24, 32, 33, 64, 100, 128, 129, 256, 1000};
    enum { KINDS = 8, REPS = 4 };
    const char *path = tu_tmp_path("stdsort_rows");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    float *rows[sizeof sizes / sizeof sizes[0]][KINDS][REPS];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int k = 0; k < KINDS; k++)
            for (int r = 0; r < REPS; r++) {
                float *v = malloc(sizeof(float) * (size_t)sizes[s]);
                assert_non_null(v);
                make_row(v, sizes[s], k);
                rows[s][k][r] = v;
                fprintf(f, "%d", sizes[s]);
                for (int i = 0; i < sizes[s]; i++)
                    fprintf(f, " %a", v[i]);
                fprintf(f, "\n");
            }
    fclose(f);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s", helper, path, mode);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int32_t idx[1000];
    int rows_checked = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int k = 0; k < KINDS; k++)
            for (int r = 0; r < REPS; r++) {
                const int n = sizes[s];
                if (*mode)
                    backend_cpu_heapsort_desc(rows[s][k][r], idx, n);
                else
                    backend_cpu_argsort_desc(rows[s][k][r], idx, n);
                for (int i = 0; i < n; i++) {
                    int want;
                    assert_int_equal(fscanf(p, "%d", &want), 1);
                    if (idx[i] != want)
                        fail_msg("%s: row of %d (kind %d): position %d is %d, std::%s gives %d",
                                 *mode ? "heap" : "sort", n, k, i, idx[i], *mode ? "partial_sort" : "sort", want);
                }
                rows_checked++;
                free(rows[s][k][r]);
            }
    assert_int_equal(pclose(p), 0);
    remove(path);
    print_message("std::%s: %d rows identical\n", *mode ? "partial_sort" : "sort", rows_checked);
}

/* The port against libstdc++ itself: std::sort, and its heap fallback
 * (std::partial_sort over the whole range) apart, since rows that drive
 * introsort to its depth limit are hard to come by. */
static void test_argsort_vs_std_sort(void **state)
{
    (void)state;
    compare_with_std("");
    compare_with_std("heap");
}

/* Without the oracle, what libstdc++ guarantees for 16 or fewer elements
 * (insertion sort only: stable, so ties keep ascending indices) and a valid
 * descending permutation for longer rows; rows with NaNs (no strict weak
 * order: std::sort itself may run off the range) stay a permutation. */
static void test_argsort_properties(void **state)
{
    (void)state;
    float v[300];
    int32_t idx[300];
    for (int n = 1; n <= 300; n += (n < 40 ? 1 : 37)) {
        for (int k = 0; k < 9; k++) {
            make_row(v, n, k);
            backend_cpu_argsort_desc(v, idx, n);
            int seen[300] = {0};
            for (int i = 0; i < n; i++) {
                assert_true(idx[i] >= 0 && idx[i] < n);
                assert_int_equal(seen[idx[i]]++, 0);
                if (k == 8)
                    continue;
                if (i)
                    assert_false(v[idx[i]] > v[idx[i - 1]]);
                if (i && n <= 16 && v[idx[i]] == v[idx[i - 1]])
                    assert_true(idx[i] > idx[i - 1]);
            }
        }
    }
}

/* ---- the router ---- */

/* ggml_soft_max of one row as written in moe.md §2.2 */
static void ref_softmax(const float *x, float *y, int n)
{
    const bool hw = hw_order();
    float max = -INFINITY;
    for (int i = 0; i < n; i++)
        max = max > x[i] ? max : x[i];
    double sum = 0;
    int i = 0, L = hw ? 8 : 16;
    for (; i + L - 1 < n; i += L) {
        float v[16];
        for (int l = 0; l < L; l++)
            v[l] = hw ? backend_cpu_v_expf_hw(x[i + l] - max) : backend_cpu_v_expf(x[i + l] - max);
        if (!hw)
            for (int l = 0; l < 8; l++)
                v[l] = v[l] + v[l + 8];
        float c0 = v[0] + v[4], c1 = v[1] + v[5], c2 = v[2] + v[6], c3 = v[3] + v[7];
        float a = c0 + c2, b = c1 + c3;
        sum += (double)(a + b);
        for (int l = 0; l < L; l++)
            y[i + l] = hw ? backend_cpu_v_expf_hw(x[i + l] - max) : backend_cpu_v_expf(x[i + l] - max);
    }
    for (; i < n; i++) {
        y[i] = expf(x[i] - max);
        sum += (double)y[i];
    }
    float s = (float)(1.0 / sum);
    for (i = 0; i < n; i++)
        y[i] = y[i] * s;
}

/* top k of tie-free values: plain selection */
static void ref_topk(const float *p, int n, int k, int32_t *ids)
{
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            bool used = false;
            for (int q = 0; q < j; q++)
                used |= ids[q] == i;
            if (!used && (best < 0 || p[i] > p[best]))
                best = i;
        }
        ids[j] = best;
    }
}

static void ref_norm(float *w, int k)
{
    double s = 0;
    for (int j = 0; j < k; j++)
        s += (double)w[j];
    float f = (float)s;
    f = f < 6.103515625e-5f ? 6.103515625e-5f : f;
    for (int j = 0; j < k; j++)
        w[j] = w[j] / f;
}

static void test_route(void **state)
{
    (void)state;
    static const int cfg[][2] = {{8, 2}, {32, 4}, {128, 8}, {60, 6}, {7, 7}, {20, 9}};
    enum { T = 5 };
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++)
        for (int g = 0; g < 2; g++)
            for (int norm = 0; norm < 2; norm++) {
                const int ne = cfg[c][0], k = cfg[c][1];
                float lg[T * 128], w[T * 9], want_w[9], p[128];
                int32_t ids[T * 9], want_ids[9];
                for (int i = 0; i < T * ne; i++)
                    lg[i] = 4.0f * frand();
                backend_buf *bl = buf_from(lg, (size_t)T * ne), *bw = buf_from(NULL, (size_t)T * k);
                assert_int_equal(O->moe_route(B->ctx, V(bl), T, ne, k, (backend_moe_gating)g, norm, ids, V(bw)), 0);
                read_back(bw, w, (size_t)T * k);
                for (int t = 0; t < T; t++) {
                    if (g == BACKEND_MOE_SOFTMAX)
                        ref_softmax(lg + t * ne, p, ne);
                    else
                        memcpy(p, lg + t * ne, sizeof(float) * (size_t)ne);
                    ref_topk(p, ne, k, want_ids);
                    for (int j = 0; j < k; j++)
                        want_w[j] = p[want_ids[j]];
                    if (g == BACKEND_MOE_TOPK_SOFTMAX)
                        ref_softmax(want_w, want_w, k);
                    if (norm)
                        ref_norm(want_w, k);
                    assert_memory_equal(ids + t * k, want_ids, sizeof(int32_t) * (size_t)k);
                    expect_same(w + t * k, want_w, (size_t)k, "moe_route weights");
                }
                O->buf_free(B->ctx, bl);
                O->buf_free(B->ctx, bw);
            }
}

/* Ties: with 8 experts the lower index wins (libstdc++ sorts 16 or fewer
 * by insertion); with more, the order std::sort leaves (the port). Equal
 * logits give equal probabilities; a 128-way softmax underflows to zeros. */
static void test_route_ties(void **state)
{
    (void)state;
    float lg[128], w[8];
    int32_t ids[8];
    for (int i = 0; i < 8; i++)
        lg[i] = i == 2 || i == 5 || i == 7 ? 1.5f : -1.0f;
    backend_buf *bl = buf_from(lg, 8), *bw = buf_from(NULL, 8);
    assert_int_equal(O->moe_route(B->ctx, V(bl), 1, 8, 2, BACKEND_MOE_SOFTMAX, true, ids, V(bw)), 0);
    read_back(bw, w, 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 5);
    assert_true(w[0] == 0.5f && w[1] == 0.5f);
    O->buf_free(B->ctx, bl);
    O->buf_free(B->ctx, bw);

    for (int i = 0; i < 128; i++)
        lg[i] = i % 9 == 4 ? 100.0f : (i % 3 ? -100.0f : -20.0f);
    bl = buf_from(lg, 128);
    bw = buf_from(NULL, 8);
    assert_int_equal(O->moe_route(B->ctx, V(bl), 1, 128, 8, BACKEND_MOE_SOFTMAX, true, ids, V(bw)), 0);
    float p[128];
    int32_t want[128];
    ref_softmax(lg, p, 128);
    backend_cpu_argsort_desc(p, want, 128);
    assert_memory_equal(ids, want, sizeof(int32_t) * 8);

    /* NaN logits (a broken model): no crash, experts in range */
    for (int i = 0; i < 128; i++)
        lg[i] = i % 3 ? NAN : (float)(i % 7);
    assert_int_equal(O->buf_write(B->ctx, bl, 0, lg, 128), 0);
    for (int g = 0; g < 2; g++) {
        assert_int_equal(O->moe_route(B->ctx, V(bl), 1, 128, 8, (backend_moe_gating)g, true, ids, V(bw)), 0);
        for (int k = 0; k < 8; k++)
            assert_true(ids[k] >= 0 && ids[k] < 128);
    }
    O->buf_free(B->ctx, bl);
    O->buf_free(B->ctx, bw);
}

/* ---- expert products ---- */

/* n_exp experts of rows x cols weights of `type` from random floats (the codec's quantizer). */
static uint8_t *make_experts(uint32_t type, int n_exp, int rows, int cols, size_t *rb)
{
    *rb = (size_t)ggtype_row_size(type, (uint64_t)cols, NULL);
    uint8_t *w = malloc(*rb * (size_t)rows * (size_t)n_exp);
    float *src = malloc(sizeof(float) * (size_t)cols);
    assert_true(w && src);
    for (int r = 0; r < rows * n_exp; r++) {
        for (int c = 0; c < cols; c++)
            src[c] = 0.2f * frand() * (c % 11 == 0 ? 3.0f : 1.0f);
        if (type == GGTYPE_F32)
            memcpy(w + (size_t)r * *rb, src, *rb);
        else
            assert_true(codec_quantize(type, src, w + (size_t)r * *rb, 1, (uint64_t)cols, NULL) > 0);
    }
    free(src);
    return w;
}

static void check_matmul_id(uint32_t type, int rows, int x_per_tok)
{
    enum { NE = 6, K = 3, T = 70, C = 256 };
    size_t rb;
    uint8_t *W = make_experts(type, NE, rows, C, &rb);
    backend_weight w3 = {.type = type, .ne0 = C, .ne1 = (uint64_t)rows, .row_bytes = rb, .ne2 = NE, .data = W};
    const int xr = x_per_tok == 1 ? 1 : K;
    float *x = malloc(sizeof(float) * T * xr * C), *y = malloc(sizeof(float) * T * K * (size_t)rows);
    float *y1 = malloc(sizeof(float) * K * (size_t)rows), *yd = malloc(sizeof(float) * (size_t)rows);
    int32_t ids[T * K];
    assert_true(x && y && y1 && yd);
    for (int i = 0; i < T * xr * C; i++)
        x[i] = frand() * (i % 13 == 0 ? 5.0f : 1.0f);
    for (int t = 0; t < T; t++) /* K distinct experts per token, as a router gives; expert 5 never */
        for (int s = 0; s < K; s++) {
            int e;
            bool dup;
            do {
                e = (int)(rnd() % (t < T / 2 ? NE - 1 : 3 + t % 3));
                dup = false;
                for (int q = 0; q < s; q++)
                    dup |= ids[t * K + q] == e;
            } while (dup);
            ids[t * K + s] = e;
        }
    backend_buf *bx = buf_from(x, (size_t)T * xr * C), *by = buf_from(NULL, (size_t)T * K * rows);
    assert_int_equal(O->matmul_id(B->ctx, &w3, V(bx), (uint32_t)x_per_tok, ids, T, K, V(by)), 0);
    read_back(by, y, (size_t)T * K * rows);
    backend_buf *bx1 = buf_from(NULL, (size_t)xr * C), *by1 = buf_from(NULL, (size_t)K * rows);
    backend_buf *bxd = buf_from(NULL, C), *byd = buf_from(NULL, (size_t)rows);
    char what[128];
    for (int t = 0; t < T; t++) {
        /* one token alone: the same bits as in the batch */
        assert_int_equal(O->buf_write(B->ctx, bx1, 0, x + (size_t)t * xr * C, (size_t)xr * C), 0);
        assert_int_equal(O->matmul_id(B->ctx, &w3, V(bx1), (uint32_t)x_per_tok, ids + t * K, 1, K, V(by1)), 0);
        read_back(by1, y1, (size_t)K * rows);
        snprintf(what, sizeof what, "%s rows %d x_per_tok %d: token %d batch vs alone", ggtype_name(type), rows,
                 x_per_tok, t);
        expect_same(y + (size_t)t * K * rows, y1, (size_t)K * rows, what);
        /* each slot: the dense one-token matmul of its expert's matrix */
        for (int s = 0; s < K; s++) {
            backend_weight w2 = {.type = type, .ne0 = C, .ne1 = (uint64_t)rows, .row_bytes = rb,
                                 .data = W + (size_t)ids[t * K + s] * rb * (size_t)rows};
            const float *xs = x + ((size_t)t * xr + (x_per_tok == 1 ? 0 : (size_t)s)) * C;
            assert_int_equal(O->buf_write(B->ctx, bxd, 0, xs, C), 0);
            assert_int_equal(O->matmul(B->ctx, &w2, V(bxd), 1, V(byd)), 0);
            read_back(byd, yd, (size_t)rows);
            snprintf(what, sizeof what, "%s rows %d x_per_tok %d: token %d slot %d vs dense matmul", ggtype_name(type),
                     rows, x_per_tok, t, s);
            expect_same(y1 + (size_t)s * rows, yd, (size_t)rows, what);
        }
    }
    O->buf_free(B->ctx, bx);
    O->buf_free(B->ctx, by);
    O->buf_free(B->ctx, bx1);
    O->buf_free(B->ctx, by1);
    O->buf_free(B->ctx, bxd);
    O->buf_free(B->ctx, byd);
    free(W);
    free(x);
    free(y);
    free(y1);
    free(yd);
}

static void test_matmul_id_types(void **state)
{
    (void)state;
    static const uint32_t types[] = {GGTYPE_Q8_0, GGTYPE_Q4_0, GGTYPE_Q4_K, GGTYPE_Q6_K,
                                     GGTYPE_F16,  GGTYPE_F32,  GGTYPE_MXFP4, GGTYPE_Q5_K};
    const kern_simd saved = kern_simd_get();
    for (int p = KERN_SIMD_SCALAR; p <= KERN_SIMD_AVX2_PLAIN; p++) { /* every path this CPU has */
        if (kern_simd_set((kern_simd)p) != 0)
            continue;
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            check_matmul_id(types[i], 24, 1);
            check_matmul_id(types[i], 24, 3);
            check_matmul_id(types[i], 20, 3); /* rows % 8 != 0: ggml's plain kernels */
        }
    }
    assert_int_equal(kern_simd_set(saved), 0);
}

/* MXFP4 experts against plain C from the codec's values and the Q8_0
 * activation bytes: ggml's repacked gemv, acc = fma(isum, fl(e * dx), acc). */
static void test_matmul_id_mxfp4_ref(void **state)
{
    (void)state;
    enum { NE = 4, K = 2, T = 9, C = 2880, R = 16 };
    size_t rb;
    uint8_t *W = make_experts(GGTYPE_MXFP4, NE, R, C, &rb);
    backend_weight w3 = {.type = GGTYPE_MXFP4, .ne0 = C, .ne1 = R, .row_bytes = rb, .ne2 = NE, .data = W};
    float *x = malloc(sizeof(float) * T * C), *y = malloc(sizeof(float) * T * K * R), *deq = malloc(sizeof(float) * C);
    block_q8_0 *a = malloc(sizeof(block_q8_0) * (C / 32));
    assert_true(x && y && deq && a);
    int32_t ids[T * K];
    for (int i = 0; i < T * C; i++)
        x[i] = frand();
    for (int i = 0; i < T * K; i++)
        ids[i] = (i / K + i % K * 3) % NE;
    backend_buf *bx = buf_from(x, (size_t)T * C), *by = buf_from(NULL, (size_t)T * K * R);
    assert_int_equal(O->matmul_id(B->ctx, &w3, V(bx), 1, ids, T, K, V(by)), 0);
    read_back(by, y, (size_t)T * K * R);
    for (int t = 0; t < T; t++) {
        assert_int_equal(kern_quantize_act(GGTYPE_Q8_0, x + (size_t)t * C, a, C), 0);
        for (int s = 0; s < K; s++)
            for (int r = 0; r < R; r++) {
                const uint8_t *row = W + ((size_t)ids[t * K + s] * R + r) * rb;
                assert_int_equal(codec_dequantize(GGTYPE_MXFP4, row, deq, C), 0);
                float acc = 0.0f;
                for (int b = 0; b < C / 32; b++) {
                    const uint8_t e = row[b * 17];
                    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
                    float d;
                    memcpy(&d, &bits, 4);
                    int isum = 0;
                    for (int j = 0; j < 32; j++)
                        isum += (int)(deq[b * 32 + j] / d) * a[b].qs[j];
                    acc = fmaf((float)isum, d * codec_f16_to_f32(a[b].d), acc);
                }
                expect_same(&y[((size_t)t * K + s) * R + r], &acc, 1, "MXFP4 matmul_id vs plain C");
            }
    }
    O->buf_free(B->ctx, bx);
    O->buf_free(B->ctx, by);
    free(W);
    free(x);
    free(y);
    free(deq);
    free(a);
}

/* ---- element-wise ---- */

static void test_add_id_swiglu_combine(void **state)
{
    (void)state;
    enum { T = 4, K = 3, C = 37, NE = 5 };
    float a[T * K * C], g[T * K * C], bias[NE * C], out[T * K * C], want[T * K * C], wts[T * K];
    int32_t ids[T * K];
    for (int i = 0; i < T * K * C; i++) {
        a[i] = 10.0f * frand();
        g[i] = 10.0f * frand();
    }
    for (int i = 0; i < NE * C; i++)
        bias[i] = frand();
    for (int i = 0; i < T * K; i++) {
        ids[i] = (int32_t)(rnd() % NE);
        wts[i] = frand();
    }
    backend_weight bw = {.type = GGTYPE_F32, .ne0 = C, .ne1 = NE, .row_bytes = C * 4, .data = bias};
    backend_buf *ba = buf_from(a, T * K * C), *bg = buf_from(g, T * K * C), *bo = buf_from(NULL, T * K * C);
    /* add_id: plain adds of the expert's row; in place too */
    assert_int_equal(O->add_id(B->ctx, V(ba), &bw, ids, V(bo), T * K, C), 0);
    read_back(bo, out, T * K * C);
    for (int r = 0; r < T * K; r++)
        for (int c = 0; c < C; c++)
            want[r * C + c] = a[r * C + c] + bias[ids[r] * C + c];
    expect_same(out, want, T * K * C, "add_id");
    assert_int_equal(O->add_id(B->ctx, V(ba), &bw, ids, V(ba), T * K, C), 0);
    read_back(ba, out, T * K * C);
    expect_same(out, want, T * K * C, "add_id in place");
    assert_int_equal(O->buf_write(B->ctx, ba, 0, a, T * K * C), 0);

    /* swiglu_oai: x = min(g, limit), y = clamp(u, -limit, limit), x / (1 + expf(alpha * -x)) * (y + 1) */
    const float alpha = 1.702f, limit = 7.0f;
    assert_int_equal(O->swiglu_oai(B->ctx, V(bg), V(ba), V(bo), T * K, C, alpha, limit), 0);
    read_back(bo, out, T * K * C);
    for (int i = 0; i < T * K * C; i++) {
        float x = g[i] > limit ? limit : g[i];
        float y = a[i] < -limit ? -limit : a[i] > limit ? limit : a[i];
        float e = expf(alpha * -x);
        float den = 1.0f + e;
        float q = x / den;
        float y1 = y + 1.0f;
        want[i] = q * y1;
    }
    expect_same(out, want, T * K * C, "swiglu_oai");
    assert_int_equal(O->swiglu_oai(B->ctx, V(bg), V(ba), V(bg), T * K, C, alpha, limit), 0);
    read_back(bg, out, T * K * C);
    expect_same(out, want, T * K * C, "swiglu_oai in place");

    /* moe_combine: ((y0 w0 + y1 w1) + y2 w2), each product rounded */
    backend_buf *bwts = buf_from(wts, T * K), *bc = buf_from(NULL, T * C);
    assert_int_equal(O->moe_combine(B->ctx, V(ba), V(bwts), T, K, C, V(bc)), 0);
    read_back(bc, out, T * C);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            float p0 = a[(t * K + 0) * C + c] * wts[t * K + 0];
            float p1 = a[(t * K + 1) * C + c] * wts[t * K + 1];
            float p2 = a[(t * K + 2) * C + c] * wts[t * K + 2];
            float s = p0 + p1;
            want[t * C + c] = s + p2;
        }
    expect_same(out, want, T * C, "moe_combine");
    assert_int_equal(O->moe_combine(B->ctx, V(ba), V(bwts), T, 1, C, V(bc)), 0); /* K = 1: the products */
    read_back(bc, out, T * C);
    for (int i = 0; i < T * C; i++)
        want[i] = a[i] * wts[i / C];
    expect_same(out, want, T * C, "moe_combine K=1");
    O->buf_free(B->ctx, ba);
    O->buf_free(B->ctx, bg);
    O->buf_free(B->ctx, bo);
    O->buf_free(B->ctx, bwts);
    O->buf_free(B->ctx, bc);
}

/* ---- bad arguments: BACKEND_EARG, never a crash ---- */

static void test_bad_args(void **state)
{
    (void)state;
    enum { NE = 4, R = 8, C = 64 };
    size_t rb;
    uint8_t *W = make_experts(GGTYPE_Q8_0, NE, R, C, &rb);
    backend_weight w = {.type = GGTYPE_Q8_0, .ne0 = C, .ne1 = R, .row_bytes = rb, .ne2 = NE, .data = W};
    backend_buf *bx = buf_from(NULL, 4 * C), *by = buf_from(NULL, 2 * C), *bs = buf_from(NULL, 4);
    backend_buf *h = O->buf_new(B->ctx, BACKEND_F16, 1024);
    assert_non_null(h);
    int32_t ids[4] = {0, 3, 1, 2}, bad[4] = {0, 4, 1, 2}, neg[4] = {0, -1, 1, 2};
    /* matmul_id */
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, ids, 2, 2, V(by)), 0);
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, NULL, 2, 2, V(by)), BACKEND_EARG);
    assert_int_equal(O->matmul_id(B->ctx, NULL, V(bx), 1, ids, 2, 2, V(by)), BACKEND_EARG);
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 3, ids, 2, 2, V(by)), BACKEND_EARG);
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, ids, 2, 0, V(by)), BACKEND_EARG);
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, bad, 2, 2, V(by)), BACKEND_EARG);
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, neg, 2, 2, V(by)), BACKEND_EARG);
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 2, ids, 3, 2, V(by)), BACKEND_EARG);       /* x too small */
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, ids, 2, 2, V(bs)), BACKEND_EARG);       /* y too small */
    assert_int_equal(O->matmul_id(B->ctx, &w, (backend_view){bx, 4 * C - 1}, 1, ids, 1, 1, V(by)), BACKEND_EARG);
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, ids, 1, 1, (backend_view){by, SIZE_MAX}), BACKEND_EARG);
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, ids, 1, 1, V(bx)), BACKEND_EARG);      /* y aliases x */
    assert_int_equal(O->matmul_id(B->ctx, &w, V(h), 1, ids, 1, 1, V(by)), BACKEND_EARG);       /* F16 buffer */
    assert_int_equal(O->matmul_id(B->ctx, &w, V(bx), 1, ids, 0, 2, V(by)), 0);                 /* no tokens */
    backend_weight wb = w;
    wb.row_bytes = rb + 2;
    assert_int_equal(O->matmul_id(B->ctx, &wb, V(bx), 1, ids, 1, 1, V(by)), BACKEND_EARG);
    wb = w;
    wb.data = NULL;
    assert_int_equal(O->matmul_id(B->ctx, &wb, V(bx), 1, ids, 1, 1, V(by)), BACKEND_EARG);
    wb = w;
    wb.ne2 = UINT64_MAX;
    assert_int_equal(O->matmul_id(B->ctx, &wb, V(bx), 1, ids, 1, 1, V(by)), BACKEND_EARG);
    /* moe_route */
    int32_t rid[8];
    assert_int_equal(O->moe_route(B->ctx, V(bx), 2, 4, 2, BACKEND_MOE_SOFTMAX, true, rid, V(bs)), 0);
    assert_int_equal(O->moe_route(B->ctx, V(bx), 2, 4, 2, BACKEND_MOE_SOFTMAX, true, NULL, V(bs)), BACKEND_EARG);
    assert_int_equal(O->moe_route(B->ctx, V(bx), 2, 4, 5, BACKEND_MOE_SOFTMAX, true, rid, V(bs)), BACKEND_EARG);
    assert_int_equal(O->moe_route(B->ctx, V(bx), 2, 4, 0, BACKEND_MOE_SOFTMAX, true, rid, V(bs)), BACKEND_EARG);
    assert_int_equal(O->moe_route(B->ctx, V(bx), 2, 0, 0, BACKEND_MOE_SOFTMAX, true, rid, V(bs)), BACKEND_EARG);
    assert_int_equal(O->moe_route(B->ctx, V(bx), 3, 4, 2, BACKEND_MOE_SOFTMAX, true, rid, V(bs)), BACKEND_EARG);
    assert_int_equal(O->moe_route(B->ctx, (backend_view){bx, 4 * C}, 1, 4, 2, BACKEND_MOE_SOFTMAX, true, rid, V(bs)),
                     BACKEND_EARG);
    assert_int_equal(O->moe_route(B->ctx, V(bx), 1, 4, 2, (backend_moe_gating)7, true, rid, V(bs)), BACKEND_EARG);
    /* add_id */
    float bias[NE * C] = {0};
    backend_weight bw = {.type = GGTYPE_F32, .ne0 = C, .ne1 = NE, .row_bytes = C * 4, .data = bias};
    assert_int_equal(O->add_id(B->ctx, V(bx), &bw, ids, V(bx), 4, C), 0);
    assert_int_equal(O->add_id(B->ctx, V(bx), &bw, NULL, V(bx), 4, C), BACKEND_EARG);
    assert_int_equal(O->add_id(B->ctx, V(bx), &bw, bad, V(bx), 4, C), BACKEND_EARG);
    assert_int_equal(O->add_id(B->ctx, V(bx), &bw, ids, V(bx), 5, C), BACKEND_EARG);
    assert_int_equal(O->add_id(B->ctx, V(bx), &bw, ids, V(bx), 4, C - 1), BACKEND_EARG);
    assert_int_equal(O->add_id(B->ctx, V(bx), &w, ids, V(bx), 4, C), BACKEND_EARG); /* not F32 */
    assert_int_equal(O->add_id(B->ctx, V(bx), NULL, ids, V(bx), 4, C), BACKEND_EARG);
    /* swiglu_oai, moe_combine */
    assert_int_equal(O->swiglu_oai(B->ctx, V(bx), V(bx), V(bx), 4, C, 1.702f, 7.0f), 0);
    assert_int_equal(O->swiglu_oai(B->ctx, V(bx), V(bs), V(bx), 4, C, 1.702f, 7.0f), BACKEND_EARG);
    assert_int_equal(O->swiglu_oai(B->ctx, V(bx), V(bx), V(h), 4, C, 1.702f, 7.0f), BACKEND_EARG);
    assert_int_equal(O->moe_combine(B->ctx, V(bx), V(bs), 2, 2, C, V(by)), 0);
    assert_int_equal(O->moe_combine(B->ctx, V(bx), V(bs), 2, 0, C, V(by)), BACKEND_EARG);
    assert_int_equal(O->moe_combine(B->ctx, V(bx), V(bs), 2, 2, C, V(bx)), BACKEND_EARG); /* dst aliases y */
    assert_int_equal(O->moe_combine(B->ctx, V(bx), V(bs), 3, 2, C, V(by)), BACKEND_EARG);
    assert_int_equal(O->moe_combine(B->ctx, V(bx), V(bs), 2, 2, C, (backend_view){bs, 0}), BACKEND_EARG);
    O->buf_free(B->ctx, bx);
    O->buf_free(B->ctx, by);
    O->buf_free(B->ctx, bs);
    O->buf_free(B->ctx, h);
    free(W);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_argsort_vs_std_sort),
        cmocka_unit_test(test_argsort_properties),
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_route_ties),
        cmocka_unit_test(test_matmul_id_types),
        cmocka_unit_test(test_matmul_id_mxfp4_ref),
        cmocka_unit_test(test_add_id_swiglu_combine),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
