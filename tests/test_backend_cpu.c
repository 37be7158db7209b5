/* CPU backend ops, each on its own, against direct formulas in double
 * precision (the checks a second backend is held to as well), plus argument
 * checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "backend.h"
#include "backend_cpu_internal.h"
#include "codec.h"
#include "ggtype.h"

static uint64_t rs = 88172645463325252ull;
static float frand(void) /* uniform [-1, 1) */
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (float)((rs >> 11) * (2.0 / 9007199254740992.0) - 1.0);
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
    assert_int_equal(O->buf_write(B->ctx, b, 0, x, n), 0);
    return b;
}

static void read_back(backend_buf *b, float *x, size_t n)
{
    assert_int_equal(O->buf_read(B->ctx, b, 0, x, n), 0);
}

static backend_view V(backend_buf *b) { return (backend_view){b, 0}; }

static void expect_close(const float *got, const double *want, size_t n, double rel, const char *what)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    double e = sqrt(num / (den ? den : 1));
    if (!(e <= rel))
        fail_msg("%s: relative RMS error %g > %g", what, e, rel);
}

static void test_elementwise(void **state)
{
    (void)state;
    enum { R = 3, C = 40 };
    float x[R * C], y[R * C], g[C], ones[C], out[R * C];
    double want[R * C];
    for (int i = 0; i < R * C; i++) {
        x[i] = 3 * frand();
        y[i] = 2 * frand();
    }
    for (int i = 0; i < C; i++) {
        g[i] = frand();
        ones[i] = 1.0f;
    }
    backend_weight gw = {.type = GGTYPE_F32, .ne0 = C, .ne1 = 1, .row_bytes = C * 4, .data = g};
    backend_weight w1 = {.type = GGTYPE_F32, .ne0 = C, .ne1 = 1, .row_bytes = C * 4, .data = ones};
    backend_buf *bx = buf_from(x, R * C), *by = buf_from(y, R * C);
    backend_buf *bo = O->buf_new(B->ctx, BACKEND_F32, R * C);

    /* rms_norm (times a vector of ones) */
    assert_int_equal(O->rms_norm_mul(B->ctx, V(bx), &w1, V(bo), R, C, 1e-5f), 0);
    read_back(bo, out, R * C);
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int c = 0; c < C; c++)
            ss += (double)x[r * C + c] * x[r * C + c];
        for (int c = 0; c < C; c++)
            want[r * C + c] = x[r * C + c] / sqrt(ss / C + 1e-5);
    }
    expect_close(out, want, R * C, 1e-6, "rms_norm");
    /* add_w (in place), add, silu_mul */
    assert_int_equal(O->buf_write(B->ctx, bo, 0, x, R * C), 0);
    assert_int_equal(O->add_w(B->ctx, V(bo), &gw, V(bo), R, C), 0);
    read_back(bo, out, R * C);
    for (int i = 0; i < R * C; i++)
        want[i] = (double)x[i] + g[i % C];
    expect_close(out, want, R * C, 1e-7, "add_w");
    assert_int_equal(O->add(B->ctx, V(bx), V(by), V(bo), R * C), 0);
    read_back(bo, out, R * C);
    for (int i = 0; i < R * C; i++)
        want[i] = (double)x[i] + y[i];
    expect_close(out, want, R * C, 1e-7, "add");
    assert_int_equal(O->silu_mul(B->ctx, V(bx), V(by), V(bo), R, C), 0);
    read_back(bo, out, R * C);
    for (int i = 0; i < R * C; i++)
        want[i] = x[i] / (1 + exp(-(double)x[i])) * y[i];
    expect_close(out, want, R * C, 1e-6, "silu_mul");

    /* argument checks: out of range views, wrong vector length */
    assert_int_equal(O->add(B->ctx, V(bx), V(by), V(bo), R * C + 1), BACKEND_EARG);
    backend_view past = {bo, R * C - 1};
    assert_int_equal(O->rms_norm_mul(B->ctx, V(bx), &w1, past, 1, C, 1e-5f), BACKEND_EARG);
    gw.ne0 = C - 1;
    assert_int_equal(O->add_w(B->ctx, V(bx), &gw, V(bo), R, C), BACKEND_EARG);
    O->buf_free(B->ctx, bx);
    O->buf_free(B->ctx, by);
    O->buf_free(B->ctx, bo);
}

/* rms_norm_mul is exactly the RMS norm, then a product by the weight (the
 * same floats, bit for bit: the session's logits depend on it), in place
 * too. The two steps: rms_norm_mul by a vector of ones (x * 1.0f == x), then
 * one float product per element. */
static void test_rms_norm_mul(void **state)
{
    (void)state;
    enum { R = 4, C = 67 };
    float x[R * C], g[C], ones[C], two[R * C], one[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = 5 * frand();
    for (int i = 0; i < C; i++) {
        g[i] = 1 + frand() / 2;
        ones[i] = 1.0f;
    }
    backend_weight gw = {.type = GGTYPE_F32, .ne0 = C, .ne1 = 1, .row_bytes = C * 4, .data = g};
    backend_weight w1 = {.type = GGTYPE_F32, .ne0 = C, .ne1 = 1, .row_bytes = C * 4, .data = ones};
    backend_buf *bx = buf_from(x, R * C), *bo = O->buf_new(B->ctx, BACKEND_F32, R * C);
    assert_non_null(O->rms_norm_mul);
    assert_int_equal(O->rms_norm_mul(B->ctx, V(bx), &w1, V(bo), R, C, 1e-6f), 0);
    read_back(bo, two, R * C);
    for (int i = 0; i < R * C; i++)
        two[i] = two[i] * g[i % C];
    assert_int_equal(O->buf_write(B->ctx, bo, 0, x, R * C), 0);   /* stale output must not matter */
    assert_int_equal(O->rms_norm_mul(B->ctx, V(bx), &gw, V(bo), R, C, 1e-6f), 0);
    read_back(bo, one, R * C);
    assert_memory_equal(one, two, sizeof one);
    assert_int_equal(O->rms_norm_mul(B->ctx, V(bx), &gw, V(bx), R, C, 1e-6f), 0);   /* in place */
    read_back(bx, one, R * C);
    assert_memory_equal(one, two, sizeof one);
    /* a vector of the wrong length or type is refused, and dst is left alone */
    assert_int_equal(O->buf_write(B->ctx, bo, 0, x, R * C), 0);
    gw.ne0 = C - 1;
    assert_int_equal(O->rms_norm_mul(B->ctx, V(bx), &gw, V(bo), R, C, 1e-6f), BACKEND_EARG);
    gw.ne0 = C;
    gw.type = GGTYPE_F16;
    assert_int_equal(O->rms_norm_mul(B->ctx, V(bx), &gw, V(bo), R, C, 1e-6f), BACKEND_EARG);
    read_back(bo, one, R * C);
    assert_memory_equal(one, x, sizeof one);
    O->buf_free(B->ctx, bx);
    O->buf_free(B->ctx, bo);
}

/* get_rows and matmul for weights of several types: against the dequantized
 * weights (codec) and double dot products of the activations. */
static void test_get_rows_matmul(void **state)
{
    (void)state;
    enum { K = 512, N = 24, T = 5 };
    const uint32_t types[] = {GGTYPE_F32, GGTYPE_F16, GGTYPE_Q8_0, GGTYPE_Q4_0, GGTYPE_Q4_K, GGTYPE_Q6_K};
    const double tol[] = {1e-6, 2e-3, 1e-2, 2e-2, 2e-2, 1e-2};
    float *wf = malloc(sizeof(float) * K * N), *deq = malloc(sizeof(float) * K * N);
    float x[T * K], y[T * N];
    double want[T * N];
    uint8_t *wq = malloc(K * N * 4);
    for (int i = 0; i < K * N; i++)
        wf[i] = frand();
    for (int i = 0; i < T * K; i++)
        x[i] = frand();
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t t = types[ti];
        uint64_t rb = ggtype_row_size(t, K, NULL);
        if (t == GGTYPE_F32)
            memcpy(wq, wf, sizeof(float) * K * N);
        else if (t == GGTYPE_F16)
            for (int i = 0; i < K * N; i++)
                ((uint16_t *)wq)[i] = codec_f32_to_f16(wf[i]);
        else
            assert_true(codec_quantize(t, wf, wq, N, K, NULL) == rb * N);
        assert_int_equal(codec_dequantize(t, wq, deq, (uint64_t)K * N), 0);
        backend_weight w = {.type = t, .ne0 = K, .ne1 = N, .row_bytes = rb, .data = wq};
        if (O->weight_prepare)
            assert_int_equal(O->weight_prepare(B->ctx, &w), 0);
        /* get_rows: rows 3, 0, 23 exactly as dequantized */
        int32_t ids[3] = {3, 0, 23};
        backend_buf *bo = O->buf_new(B->ctx, BACKEND_F32, 3 * K);
        assert_int_equal(O->get_rows(B->ctx, &w, ids, 3, V(bo)), 0);
        float rows[3 * K];
        read_back(bo, rows, 3 * K);
        for (int i = 0; i < 3; i++)
            assert_memory_equal(rows + i * K, deq + ids[i] * K, sizeof(float) * K);
        int32_t bad = N;
        assert_int_equal(O->get_rows(B->ctx, &w, &bad, 1, V(bo)), BACKEND_EARG);
        O->buf_free(B->ctx, bo);
        /* matmul: one token and a batch */
        backend_buf *bx = buf_from(x, T * K), *by = O->buf_new(B->ctx, BACKEND_F32, T * N);
        for (int nt = 1; nt <= T; nt += T - 1) {
            assert_int_equal(O->matmul(B->ctx, &w, V(bx), (uint32_t)nt, V(by)), 0);
            read_back(by, y, (size_t)nt * N);
            for (int tk = 0; tk < nt; tk++)
                for (int r = 0; r < N; r++) {
                    double s = 0;
                    for (int c = 0; c < K; c++)
                        s += (double)deq[r * K + c] * x[tk * K + c];
                    want[tk * N + r] = s;
                }
            char what[64];
            snprintf(what, sizeof what, "matmul %s, %d token(s)", ggtype_name(t), nt);
            expect_close(y, want, (size_t)nt * N, tol[ti], what);
        }
        /* aliasing output and input is refused */
        assert_int_equal(O->matmul(B->ctx, &w, V(bx), 1, V(bx)), BACKEND_EARG);
        if (O->weight_release)
            O->weight_release(B->ctx, &w);
        O->buf_free(B->ctx, bx);
        O->buf_free(B->ctx, by);
    }
    free(wf);
    free(deq);
    free(wq);
}

/* RoPE against the rotation written with pow() and complex-number pairs. */
static void test_rope(void **state)
{
    (void)state;
    enum { T = 3, H = 2, D = 16 };
    float x[T * H * D], out[T * H * D];
    double want[T * H * D];
    const int32_t pos[T] = {0, 7, 300};
    float ff[D / 2];
    for (int i = 0; i < D / 2; i++)
        ff[i] = 1.0f + i * 0.5f;
    for (int mode = 0; mode < 2; mode++)
        for (int variant = 0; variant < 3; variant++) {
            for (int i = 0; i < T * H * D; i++)
                x[i] = frand();
            backend_rope_params p = {.mode = mode ? BACKEND_ROPE_NEOX : BACKEND_ROPE_NORMAL,
                                     .n_rot = variant == 2 ? D / 2 : D, .freq_base = 10000.0f,
                                     .freq_scale = variant == 1 ? 0.25f : 1.0f,
                                     .freq_factors = variant == 1 ? ff : NULL};
            backend_buf *b = buf_from(x, T * H * D);
            assert_int_equal(O->rope(B->ctx, V(b), T, H, D, pos, &p), 0);
            read_back(b, out, T * H * D);
            for (int t = 0; t < T; t++)
                for (int h = 0; h < H; h++) {
                    const float *v = x + (t * H + h) * D;
                    double *w = want + (t * H + h) * D;
                    for (int d = 0; d < D; d++)
                        w[d] = v[d]; /* dimensions past n_rot pass through */
                    for (uint32_t i = 0; i < p.n_rot / 2; i++) {
                        double theta = pos[t] * pow(10000.0, -2.0 * i / p.n_rot) * p.freq_scale;
                        if (p.freq_factors)
                            theta /= p.freq_factors[i];
                        uint32_t a = mode ? i : 2 * i, bb = mode ? i + p.n_rot / 2 : 2 * i + 1;
                        w[a] = v[a] * cos(theta) - v[bb] * sin(theta);
                        w[bb] = v[a] * sin(theta) + v[bb] * cos(theta);
                    }
                }
            char what[64];
            snprintf(what, sizeof what, "rope mode %d variant %d", mode, variant);
            expect_close(out, want, T * H * D, 2e-5, what);
            O->buf_free(B->ctx, b);
        }
}

/* store_f16 + causal GQA attention against softmax(q.k * scale).v in double
 * with the F16 cache contents. */
static void test_attention(void **state)
{
    (void)state;
    enum { T = 4, P0 = 3, H = 4, HKV = 2, D = 32, KD = HKV * D, QD = H * D, NKV = P0 + T };
    float q[T * QD], k[NKV * KD], v[NKV * KD], out[T * QD];
    double want[T * QD];
    for (int i = 0; i < T * QD; i++)
        q[i] = frand();
    for (int i = 0; i < NKV * KD; i++) {
        k[i] = frand();
        v[i] = frand();
    }
    backend_buf *kc = O->buf_new(B->ctx, BACKEND_F16, 16 * KD), *vc = O->buf_new(B->ctx, BACKEND_F16, 16 * KD);
    backend_buf *bk = buf_from(k, NKV * KD), *bv = buf_from(v, NKV * KD);
    /* rows 0..P0-1 first, then the T new ones at row P0 (as a session does) */
    assert_int_equal(O->store_f16(B->ctx, V(bk), P0, KD, V(kc), 0), 0);
    assert_int_equal(O->store_f16(B->ctx, V(bv), P0, KD, V(vc), 0), 0);
    backend_view kn = {bk, (size_t)P0 * KD}, vn = {bv, (size_t)P0 * KD};
    assert_int_equal(O->store_f16(B->ctx, kn, T, KD, V(kc), P0), 0);
    assert_int_equal(O->store_f16(B->ctx, vn, T, KD, V(vc), P0), 0);
    uint16_t kh[NKV * KD];
    assert_int_equal(O->buf_read(B->ctx, kc, 0, kh, NKV * KD), 0);
    for (int i = 0; i < NKV * KD; i++)
        assert_int_equal(kh[i], codec_f32_to_f16(k[i]));
    backend_buf *bq = buf_from(q, T * QD), *bo = O->buf_new(B->ctx, BACKEND_F32, T * QD);
    const float scale = 1.0f / sqrtf(D);
    const backend_attn_params AP = {.scale = scale};
    assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, HKV, D, &AP), 0);
    read_back(bo, out, T * QD);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            int g = h / (H / HKV), n = P0 + t + 1;
            double s[NKV], mx = -1e300, z = 0;
            for (int p = 0; p < n; p++) {
                s[p] = 0;
                for (int d = 0; d < D; d++)
                    s[p] += (double)q[(t * H + h) * D + d] * codec_f16_to_f32(codec_f32_to_f16(k[p * KD + g * D + d]));
                s[p] *= scale;
                mx = s[p] > mx ? s[p] : mx;
            }
            for (int p = 0; p < n; p++)
                z += (s[p] = exp(s[p] - mx));
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int p = 0; p < n; p++)
                    acc += s[p] / z * codec_f16_to_f32(codec_f32_to_f16(v[p * KD + g * D + d]));
                want[(t * H + h) * D + d] = acc;
            }
        }
    /* F16 query and accumulator (as ggml): a few 1e-3 */
    expect_close(out, want, T * QD, 3e-3, "attention");
    /* bad shapes */
    assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, 3, D, &AP), BACKEND_EARG);
    assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bq), T, P0, H, HKV, D, &AP), BACKEND_EARG);
    assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, 14, H, HKV, D, &AP), BACKEND_EARG);
    backend_buf *bufs[] = {kc, vc, bk, bv, bq, bo};
    for (int i = 0; i < 6; i++)
        O->buf_free(B->ctx, bufs[i]);
    assert_string_equal(backend_strerror(BACKEND_EARG), "bad argument (sizes, offsets or types)");
    assert_int_equal(backend_cpu_threads(B), 2);
}

/* The attention by groups (tiled, 64+ queries: queries and heads sharing
 * converted key/value tiles; one chunk: the heads of a KV head side by side)
 * gives the bits of the pair-by-pair form, for several KV-group sizes, head
 * sizes, cache offsets and query counts. */
static void test_attention_grouped_bitwise(void **state)
{
    (void)state;
    static const struct { uint32_t t, p0, h, hkv, d; } cases[] = {
        {64, 0, 4, 2, 32}, {70, 5, 8, 2, 64}, {130, 3, 4, 4, 32}, {65, 100, 6, 1, 16}, {96, 63, 4, 2, 128},
        /* one chunk (fewer than 64 queries): heads of a group side by side */
        {1, 40, 8, 2, 64}, {1, 300, 4, 1, 32}, {5, 17, 6, 3, 16}, {63, 0, 4, 2, 64},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const uint32_t T = cases[ci].t, P0 = cases[ci].p0, H = cases[ci].h, HKV = cases[ci].hkv, D = cases[ci].d;
        const size_t QD = (size_t)H * D, KD = (size_t)HKV * D, NKV = P0 + T;
        float *q = malloc(sizeof(float) * T * QD), *kv = malloc(sizeof(float) * NKV * KD * 2);
        float *o1 = malloc(sizeof(float) * T * QD), *o2 = malloc(sizeof(float) * T * QD);
        assert_true(q && kv && o1 && o2);
        for (size_t i = 0; i < T * QD; i++)
            q[i] = 3.0f * frand();
        for (size_t i = 0; i < NKV * KD * 2; i++)
            kv[i] = 2.0f * frand();
        backend_buf *kc = O->buf_new(B->ctx, BACKEND_F16, NKV * KD), *vc = O->buf_new(B->ctx, BACKEND_F16, NKV * KD);
        backend_buf *bk = buf_from(kv, NKV * KD), *bv = buf_from(kv + NKV * KD, NKV * KD);
        assert_int_equal(O->store_f16(B->ctx, V(bk), (uint32_t)NKV, (uint32_t)KD, V(kc), 0), 0);
        assert_int_equal(O->store_f16(B->ctx, V(bv), (uint32_t)NKV, (uint32_t)KD, V(vc), 0), 0);
        backend_buf *bq = buf_from(q, T * QD), *bo = O->buf_new(B->ctx, BACKEND_F32, T * QD);
        const float scale = 1.0f / sqrtf((float)D);
        const backend_attn_params AP = {.scale = scale};
        backend_cpu_attn_pairs(true);
        assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, HKV, D, &AP), 0);
        read_back(bo, o1, T * QD);
        backend_cpu_attn_pairs(false);
        assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, HKV, D, &AP), 0);
        read_back(bo, o2, T * QD);
        for (size_t i = 0; i < T * QD; i++)
            if (memcmp(&o1[i], &o2[i], sizeof(float)) != 0)
                fail_msg("case %zu: output %zu is %.9g, pair by pair %.9g", ci, i, o2[i], o1[i]);
        backend_buf *bufs[] = {kc, vc, bk, bv, bq, bo};
        for (int i = 0; i < 6; i++)
            O->buf_free(B->ctx, bufs[i]);
        free(q), free(kv), free(o1), free(o2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_rms_norm_mul),
        cmocka_unit_test(test_get_rows_matmul),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_grouped_bitwise),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
