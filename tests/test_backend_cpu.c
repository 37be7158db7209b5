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
#include "rope.h"

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
    static const struct { uint32_t t, p0, h, hkv, d, sw, nc; } cases[] = {
        {64, 0, 4, 2, 32, 0, 0}, {70, 5, 8, 2, 64, 0, 0}, {130, 3, 4, 4, 32, 0, 0}, {65, 100, 6, 1, 16, 0, 0},
        {96, 63, 4, 2, 128, 0, 0}, {72, 9, 10, 2, 40, 0, 0}, {67, 30, 14, 2, 24, 0, 0},
        /* one chunk (fewer than 64 queries): heads of a group side by side */
        {1, 40, 8, 2, 64, 0, 0}, {1, 300, 4, 1, 32, 0, 0}, {5, 17, 6, 3, 16, 0, 0}, {63, 0, 4, 2, 64, 0, 0},
        /* head sizes that are not a multiple of 64 (the V step's register blocks of 64, 32 and 8), runs of
         * cells past the first */
        {1, 150, 4, 2, 40, 0, 0}, {1, 130, 4, 1, 96, 0, 0}, {2, 70, 6, 2, 104, 0, 0},
        /* sliding window (linear cache), ring caches wrapped (all rows written) */
        {80, 100, 4, 2, 32, 50, 0}, {70, 200, 4, 2, 32, 32, 128}, {100, 230, 8, 2, 64, 40, 256},
        {5, 17, 6, 3, 16, 8, 0}, {1, 420, 8, 2, 64, 64, 192}, {5, 417, 6, 3, 16, 20, 32},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const uint32_t T = cases[ci].t, P0 = cases[ci].p0, H = cases[ci].h, HKV = cases[ci].hkv, D = cases[ci].d;
        const size_t QD = (size_t)H * D, KD = (size_t)HKV * D, NKV = cases[ci].nc ? cases[ci].nc : P0 + T;
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
        /* attention sinks (gpt-oss): odd heads' above every score (the
         * accumulator rescaled), even heads' among them */
        float sinks[16];
        for (uint32_t h = 0; h < H; h++)
            sinks[h] = h % 2 ? 40.0f + frand() : 2.0f * frand();
        for (int with_sinks = 0; with_sinks < 2; with_sinks++) {
            const backend_attn_params AP = {.scale = scale, .n_swa = cases[ci].sw, .n_cells = cases[ci].nc,
                                            .sinks = with_sinks ? sinks : NULL};
            backend_cpu_attn_pairs(true);
            assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, HKV, D, &AP), 0);
            read_back(bo, o1, T * QD);
            backend_cpu_attn_pairs(false);
            assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, HKV, D, &AP), 0);
            read_back(bo, o2, T * QD);
            for (size_t i = 0; i < T * QD; i++)
                if (memcmp(&o1[i], &o2[i], sizeof(float)) != 0)
                    fail_msg("case %zu%s: output %zu is %.9g, pair by pair %.9g", ci, with_sinks ? " (sinks)" : "",
                             i, o2[i], o1[i]);
        }
        backend_buf *bufs[] = {kc, vc, bk, bv, bq, bo};
        for (int i = 0; i < 6; i++)
            O->buf_free(B->ctx, bufs[i]);
        free(q), free(kv), free(o1), free(o2);
    }
}

/* scale: one float product per element (ggml_vec_scale_f32), so the double
 * product of the two floats rounded once to float, bit for bit; in place. */
static void test_scale(void **state)
{
    (void)state;
    enum { N = 103 };
    float x[N], out[N];
    for (int i = 0; i < N; i++)
        x[i] = 100.0f * frand();
    x[0] = 0.0f, x[1] = -3.5e-39f; /* zero, subnormal */
    assert_non_null(O->scale);
    backend_buf *bx = buf_from(x, N), *bo = O->buf_new(B->ctx, BACKEND_F32, N);
    const float s = 0.0883883461f; /* 1/sqrt(128) */
    assert_int_equal(O->scale(B->ctx, V(bx), V(bo), N, s), 0);
    read_back(bo, out, N);
    for (int i = 0; i < N; i++) {
        float want = (float)((double)x[i] * (double)s);
        if (memcmp(&out[i], &want, sizeof want) != 0)
            fail_msg("scale[%d]: %.9g, want %.9g", i, out[i], want);
    }
    assert_int_equal(O->scale(B->ctx, V(bx), V(bx), N, s), 0); /* in place */
    float inplace[N];
    read_back(bx, inplace, N);
    assert_memory_equal(inplace, out, sizeof out);
    assert_int_equal(O->scale(B->ctx, V(bx), V(bo), N + 1, s), BACKEND_EARG);
    O->buf_free(B->ctx, bx);
    O->buf_free(B->ctx, bo);
}

/* ggml_gelu_f32 written out as llama.cpp's x86 builds compute it (the
 * 1 + A*x*x contracted to an fma), and the plain (uncontracted) form. */
static float gelu_fma(float x)
{
    return (0.5f * x) * (1.0f + tanhf((0.79788456080286535587989211986876f * x) * fmaf(0.044715f * x, x, 1.0f)));
}
static float gelu_plain(float x)
{
    volatile float ax = 0.044715f * x, axx = ax * x; /* no contraction */
    return (0.5f * x) * (1.0f + tanhf((0.79788456080286535587989211986876f * x) * (1.0f + axx)));
}

/* gelu_mul = ggml_vec_geglu_f32 with ggml's F16 table: for every half in
 * (-10, 10) (as gate, with up = 1 and up = a random factor) the table value
 * f16(gelu(x)) exactly, times up in float; 0 at or below -10; x * up at or
 * above 10; and close to the exact erf-free tanh GELU in double. */
static void test_gelu_mul(void **state)
{
    (void)state;
    assert_non_null(O->gelu_mul);
    float *g = malloc(sizeof(float) * 65536), *u = malloc(sizeof(float) * 65536), *o = malloc(sizeof(float) * 65536);
    assert_true(g && u && o);
    uint32_t n = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float x = codec_f16_to_f32((uint16_t)h);
        if (x > -10.0f && x < 10.0f)
            g[n++] = x;
    }
    int differs = 0; /* halves where the fma matters: the test tells the two forms apart */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < n; i++)
            u[i] = pass ? 4.0f * frand() : 1.0f;
        backend_buf *bg = buf_from(g, n), *bu = buf_from(u, n), *bo = O->buf_new(B->ctx, BACKEND_F32, n);
        assert_int_equal(O->gelu_mul(B->ctx, V(bg), V(bu), V(bo), 1, n), 0);
        read_back(bo, o, n);
        for (uint32_t i = 0; i < n; i++) {
            float t = codec_f16_to_f32(codec_f32_to_f16(gelu_fma(g[i])));
            float want = t * u[i];
            if (memcmp(&o[i], &want, sizeof want) != 0)
                fail_msg("gelu_mul(%.9g) * %.9g = %.9g, want %.9g", g[i], u[i], o[i], want);
            differs += !pass && codec_f32_to_f16(gelu_plain(g[i])) != codec_f32_to_f16(gelu_fma(g[i]));
        }
        O->buf_free(B->ctx, bg), O->buf_free(B->ctx, bu), O->buf_free(B->ctx, bo);
    }
    assert_true(differs > 0);
    /* chosen points, rows, in place (dst = gate), against tanh-GELU in double */
    enum { R = 3, C = 37 };
    float x[R * C], y[R * C], out[R * C];
    double want[R * C];
    const float pts[] = {-1e4f, -10.5f, -10.0f, -9.999f, -3.0f, -0.5f, -1e-6f, 0.0f, 1e-3f, 0.7f, 2.5f,
                         9.99f, 10.0f, 12.0f, 1e4f};
    for (int i = 0; i < R * C; i++) {
        x[i] = i < (int)(sizeof pts / sizeof pts[0]) ? pts[i] : 6.0f * frand();
        y[i] = 2.0f * frand();
    }
    for (int i = 0; i < R * C; i++) {
        double xd = x[i];
        double gd = xd <= -10  ? 0.0
                    : xd >= 10 ? xd
                               : 0.5 * xd * (1 + tanh(sqrt(2 / M_PI) * xd * (1 + 0.044715 * xd * xd)));
        want[i] = gd * y[i];
    }
    backend_buf *bx = buf_from(x, R * C), *by = buf_from(y, R * C);
    assert_int_equal(O->gelu_mul(B->ctx, V(bx), V(by), V(bx), R, C), 0);
    read_back(bx, out, R * C);
    expect_close(out, want, R * C, 2e-3, "gelu_mul"); /* F16 table: ~1e-3 */
    assert_true(out[0] == 0.0f && out[1] == 0.0f && out[2] == 0.0f);
    assert_true(out[12] == 10.0f * y[12] && out[13] == 12.0f * y[13] && out[14] == 1e4f * y[14]);
    assert_true(out[7] == 0.0f);
    assert_int_equal(O->gelu_mul(B->ctx, V(bx), V(by), V(bx), R, C + 1), BACKEND_EARG);
    O->buf_free(B->ctx, bx), O->buf_free(B->ctx, by);
    free(g), free(u), free(o);
}

/* The rope of the engine before YaRN (rope_row as it was), for the
 * bit-identity check of ext_factor 0, attn_factor 0 or 1. */
static void old_rope(float *x, uint32_t T, uint32_t H, uint32_t D, const int32_t *pos, const backend_rope_params *rp)
{
    float cs[256];
    for (uint32_t t = 0; t < T; t++) {
        const float theta_scale = powf(rp->freq_base, -2.0f / (float)rp->n_rot);
        float theta = (float)pos[t];
        for (uint32_t i0 = 0; i0 < rp->n_rot; i0 += 2) {
            float ff = rp->freq_factors ? rp->freq_factors[i0 / 2] : 1.0f;
            float a = rp->freq_scale * (theta / ff);
            cs[i0] = cosf(a);
            cs[i0 + 1] = sinf(a);
            theta *= theta_scale;
        }
        for (uint32_t h = 0; h < H; h++) {
            float *v = x + ((size_t)t * H + h) * D;
            for (uint32_t i0 = 0; i0 < rp->n_rot; i0 += 2) {
                uint32_t a = rp->mode == BACKEND_ROPE_NEOX ? i0 / 2 : i0;
                uint32_t b = rp->mode == BACKEND_ROPE_NEOX ? i0 / 2 + rp->n_rot / 2 : i0 + 1;
                float x0 = v[a], x1 = v[b];
                v[a] = fmaf(x0, cs[i0], -(x1 * cs[i0 + 1]));
                v[b] = fmaf(x0, cs[i0 + 1], x1 * cs[i0]);
            }
        }
    }
}

/* YaRN: the correction range of a known configuration, the ramp's three
 * regions (pure extrapolation / interpolation exactly), the op against the
 * formulas in double, and ext_factor 0 with attn_factor 0 or 1 bit for bit
 * the rope before YaRN. */
static void test_rope_yarn(void **state)
{
    (void)state;
    /* n_dims 128, n_ctx_orig 4096, base 10000, beta 32 / 1: in double
     * 128 ln(4096 / (32 * 2pi)) / (2 ln 1e4) = 20.94 -> 20, and for beta 1
     * 45.03 -> 46; n_dims 64 (same context): 10.47 -> 10, 22.52 -> 23 */
    float dims[2];
    rope_yarn_corr_dims(128, 4096, 10000.0f, 32.0f, 1.0f, dims);
    assert_true(dims[0] == 20.0f && dims[1] == 46.0f);
    rope_yarn_corr_dims(64, 4096, 10000.0f, 32.0f, 1.0f, dims);
    assert_true(dims[0] == 10.0f && dims[1] == 23.0f);
    rope_yarn_corr_dims(64, 2, 10000.0f, 32.0f, 1.0f, dims); /* clamped: MAX(0, .), MIN(n_dims - 1, .) */
    assert_true(dims[0] == 0.0f && dims[1] <= 63.0f);
    rope_yarn_corr_dims(8, 1 << 30, 2.0f, 32.0f, 1.0f, dims);
    assert_true(dims[1] == 7.0f);
    /* ramp: pairs at or below dims[0] extrapolate (theta / ff), pairs at or
     * past dims[1] interpolate (freq_scale * theta / ff); mscale
     * (1 + 0.1 ln(1 / freq_scale)) * attn_factor */
    const float corr[2] = {10.0f, 23.0f}, fs = 0.25f, te = 1.7f, af = 0.8f;
    const double msd = (1 + 0.1 * log(1.0 / fs)) * af;
    for (uint32_t i0 = 0; i0 < 64; i0 += 2) {
        float c, s;
        rope_yarn(te, fs, corr, i0, 1.0f, af, &c, &s);
        double y = ((double)(i0 / 2) - 10.0) / 13.0, ramp = 1 - (y < 0 ? 0 : y > 1 ? 1 : y);
        double th = (double)fs * te * (1 - ramp) + (double)te * ramp;
        if (fabs(c - cos(th) * msd) > 2e-6 || fabs(s - sin(th) * msd) > 2e-6)
            fail_msg("rope_yarn pair %u: %.9g %.9g, want %.9g %.9g", i0, c, s, cos(th) * msd, sin(th) * msd);
        float ms = fmaf(logf(1.0f / fs), 0.1f, 1.0f) * af;
        if (i0 / 2 <= 10)
            assert_true(c == cosf(te) * ms && s == sinf(te) * ms);
        if (i0 / 2 >= 23)
            assert_true(c == cosf(fs * te) * ms && s == sinf(fs * te) * ms);
    }
    /* the op: T positions, both modes, n_rot < D, freq factors, ext 1 and
     * 0.5, attn_factor 0.9 */
    enum { T = 3, H = 2, D = 80, NR = 64 };
    float x[T * H * D], out[T * H * D], old[T * H * D];
    double want[T * H * D];
    const int32_t pos[T] = {0, 9, 1000};
    float ff[NR / 2];
    for (int i = 0; i < NR / 2; i++)
        ff[i] = 1.0f + (float)i / 16.0f;
    for (int mode = 0; mode < 2; mode++)
        for (int variant = 0; variant < 3; variant++) {
            for (int i = 0; i < T * H * D; i++)
                x[i] = frand();
            backend_rope_params p = {.mode = mode ? BACKEND_ROPE_NEOX : BACKEND_ROPE_NORMAL, .n_rot = NR,
                                     .freq_base = 10000.0f, .freq_scale = fs, .freq_factors = variant == 2 ? ff : NULL,
                                     .ext_factor = variant == 1 ? 0.5f : 1.0f, .attn_factor = 0.9f,
                                     .beta_fast = 32.0f, .beta_slow = 1.0f, .n_ctx_orig = 4096};
            backend_buf *b = buf_from(x, T * H * D);
            assert_int_equal(O->rope(B->ctx, V(b), T, H, D, pos, &p), 0);
            read_back(b, out, T * H * D);
            const double ms = (1 + 0.1 * log(1.0 / fs)) * 0.9;
            for (int t = 0; t < T; t++)
                for (int h = 0; h < H; h++) {
                    const float *v = x + (t * H + h) * D;
                    double *w = want + (t * H + h) * D;
                    for (int d = 0; d < D; d++)
                        w[d] = v[d];
                    for (int i = 0; i < NR / 2; i++) {
                        double tex = pos[t] * pow(10000.0, -2.0 * i / NR) / (p.freq_factors ? ff[i] : 1.0);
                        double y = (i - 10.0) / 13.0, mix = (1 - (y < 0 ? 0 : y > 1 ? 1 : y)) * p.ext_factor;
                        double th = fs * tex * (1 - mix) + tex * mix;
                        int a = mode ? i : 2 * i, bb = mode ? i + NR / 2 : 2 * i + 1;
                        w[a] = (v[a] * cos(th) - v[bb] * sin(th)) * ms;
                        w[bb] = (v[a] * sin(th) + v[bb] * cos(th)) * ms;
                    }
                }
            char what[64];
            snprintf(what, sizeof what, "rope yarn mode %d variant %d", mode, variant);
            expect_close(out, want, T * H * D, 2e-5, what);
            O->buf_free(B->ctx, b);
        }
    /* ext_factor 0 with attn_factor 0 (= 1) or 1: the old rope, bit for bit,
     * whatever the YaRN fields hold; attn_factor 2 doubles it exactly */
    for (int mode = 0; mode < 2; mode++)
        for (int af_i = 0; af_i < 3; af_i++) {
            for (int i = 0; i < T * H * D; i++)
                x[i] = old[i] = frand();
            backend_rope_params p = {.mode = mode ? BACKEND_ROPE_NEOX : BACKEND_ROPE_NORMAL, .n_rot = NR,
                                     .freq_base = 500000.0f, .freq_scale = 0.5f, .freq_factors = mode ? ff : NULL,
                                     .attn_factor = af_i == 0 ? 0.0f : af_i == 1 ? 1.0f : 2.0f, .beta_fast = 32.0f,
                                     .beta_slow = 1.0f, .n_ctx_orig = 8192};
            old_rope(old, T, H, D, pos, &p);
            backend_buf *b = buf_from(x, T * H * D);
            assert_int_equal(O->rope(B->ctx, V(b), T, H, D, pos, &p), 0);
            read_back(b, out, T * H * D);
            if (af_i == 2) /* c and s doubled exactly: both rotation products double */
                for (int t = 0; t < T; t++)
                    for (int h = 0; h < H; h++)
                        for (int i = 0; i < NR; i++)
                            old[(t * H + h) * D + i] *= 2.0f;
            for (int i = 0; i < T * H * D; i++)
                if (memcmp(&out[i], &old[i], sizeof(float)) != 0)
                    fail_msg("rope ext 0 mode %d attn_factor case %d: [%d] %.9g, old %.9g", mode, af_i, i, out[i],
                             old[i]);
            O->buf_free(B->ctx, b);
        }
}

/* softmax(scale q.k) v in double over the positions query P = pos0 + t sees
 * (P - n_swa < p <= P; n_swa 0: 0..P), position p's key and value read
 * from the row p % n_cells (n_cells 0: row p) of the F16 caches kh, vh. */
static void ref_attention_sinks(const float *q, const uint16_t *kh, const uint16_t *vh, uint32_t T, uint32_t pos0,
                                uint32_t H, uint32_t HKV, uint32_t D, float scale, uint32_t n_swa, uint32_t n_cells,
                                const float *sinks, double *want);

static void ref_attention(const float *q, const uint16_t *kh, const uint16_t *vh, uint32_t T, uint32_t pos0,
                          uint32_t H, uint32_t HKV, uint32_t D, float scale, uint32_t n_swa, uint32_t n_cells,
                          double *want)
{
    ref_attention_sinks(q, kh, vh, T, pos0, H, HKV, D, scale, n_swa, n_cells, NULL, want);
}

/* ref_attention with head h's sink (sinks[h], when sinks is not NULL): one
 * more term exp(sink) in the softmax's denominator, without a value. */
static void ref_attention_sinks(const float *q, const uint16_t *kh, const uint16_t *vh, uint32_t T, uint32_t pos0,
                                uint32_t H, uint32_t HKV, uint32_t D, float scale, uint32_t n_swa, uint32_t n_cells,
                                const float *sinks, double *want)
{
    const size_t KD = (size_t)HKV * D;
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t h = 0; h < H; h++) {
            const uint32_t g = h / (H / HKV), P = pos0 + t, lo = n_swa && P + 1 > n_swa ? P + 1 - n_swa : 0;
            double *s = malloc(sizeof(double) * (P - lo + 1)), mx = -1e300, z = 0;
            assert_non_null(s);
            for (uint32_t p = lo; p <= P; p++) {
                const uint16_t *k = kh + (size_t)(n_cells ? p % n_cells : p) * KD + (size_t)g * D;
                double a = 0;
                for (uint32_t d = 0; d < D; d++)
                    a += (double)q[((size_t)t * H + h) * D + d] * codec_f16_to_f32(k[d]);
                s[p - lo] = a * scale;
                mx = s[p - lo] > mx ? s[p - lo] : mx;
            }
            if (sinks && sinks[h] > mx)
                mx = sinks[h];
            for (uint32_t p = lo; p <= P; p++)
                z += (s[p - lo] = exp(s[p - lo] - mx));
            if (sinks)
                z += exp((double)sinks[h] - mx);
            for (uint32_t d = 0; d < D; d++) {
                double acc = 0;
                for (uint32_t p = lo; p <= P; p++)
                    acc += s[p - lo] / z *
                           codec_f16_to_f32(vh[(size_t)(n_cells ? p % n_cells : p) * KD + (size_t)g * D + d]);
                want[((size_t)t * H + h) * D + d] = acc;
            }
            free(s);
        }
}

/* Sliding-window and ring-cache attention against ref_attention: a session's
 * writes (position p stored in row p % n_cells, one position after the
 * other, the ring wrapping several times), one-chunk (fewer than 64 queries,
 * decode) and tiled (64+) forms; a ring that has not wrapped is the linear
 * cache bit for bit; a ring that no longer holds a query's window is refused. */
static void test_attention_window(void **state)
{
    (void)state;
    static const struct { uint32_t t, p0, sw, nc, step; double tol; } cases[] = {
        {4, 10, 5, 0, 0, 3e-3},      /* linear, window, one chunk */
        {70, 50, 20, 0, 0, 1e-4},    /* linear, window, tiled: tiles with no visible cell */
        {1, 0, 6, 16, 1, 3e-3},      /* ring of 16, window 6: decode 0..40 one by one */
        {5, 41, 6, 16, 0, 3e-3},     /* then a batch of 5 after the wrap */
        {70, 200, 32, 128, 0, 1e-4}, /* tiled over a wrapped ring */
        {3, 30, 0, 40, 0, 3e-3},     /* ring without a window (never wraps) */
    };
    enum { H = 4, HKV = 2, D = 32, KD = HKV * D, QD = H * D };
    const float scale = 1.0f / sqrtf(D);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const uint32_t T = cases[ci].t, NC = cases[ci].nc, NPOS = cases[ci].step ? 41 : cases[ci].p0 + T;
        const uint32_t rows = NC ? NC : NPOS;
        float *kall = malloc(sizeof(float) * NPOS * KD), *vall = malloc(sizeof(float) * NPOS * KD);
        float *q = malloc(sizeof(float) * T * QD), *out = malloc(sizeof(float) * T * QD);
        double *want = malloc(sizeof(double) * T * QD);
        uint16_t *kh = malloc(2 * (size_t)rows * KD), *vh = malloc(2 * (size_t)rows * KD);
        assert_true(kall && vall && q && out && want && kh && vh);
        for (size_t i = 0; i < (size_t)NPOS * KD; i++) {
            kall[i] = 2.0f * frand();
            vall[i] = frand();
        }
        backend_buf *bk = buf_from(kall, (size_t)NPOS * KD), *bv = buf_from(vall, (size_t)NPOS * KD);
        backend_buf *kc = O->buf_new(B->ctx, BACKEND_F16, (size_t)rows * KD);
        backend_buf *vc = O->buf_new(B->ctx, BACKEND_F16, (size_t)rows * KD);
        backend_buf *bq = O->buf_new(B->ctx, BACKEND_F32, (size_t)T * QD);
        backend_buf *bo = O->buf_new(B->ctx, BACKEND_F32, (size_t)T * QD);
        const backend_attn_params ap = {.scale = scale, .n_swa = cases[ci].sw, .n_cells = NC};
        /* positions written one after the other; with step, attention after each */
        const uint32_t first = cases[ci].step ? 0 : cases[ci].p0;
        for (uint32_t p = 0; p < NPOS; p++) {
            backend_view ks = {bk, (size_t)p * KD}, vs = {bv, (size_t)p * KD};
            assert_int_equal(O->store_f16(B->ctx, ks, 1, KD, V(kc), NC ? p % NC : p), 0);
            assert_int_equal(O->store_f16(B->ctx, vs, 1, KD, V(vc), NC ? p % NC : p), 0);
            if (p + 1 < first + T || (cases[ci].step == 0 && p + 1 != NPOS))
                continue;
            const uint32_t pos0 = p + 1 - T;
            for (size_t i = 0; i < (size_t)T * QD; i++)
                q[i] = 3.0f * frand();
            assert_int_equal(O->buf_write(B->ctx, bq, 0, q, (size_t)T * QD), 0);
            assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, pos0, H, HKV, D, &ap), 0);
            read_back(bo, out, (size_t)T * QD);
            assert_int_equal(O->buf_read(B->ctx, kc, 0, kh, (size_t)rows * KD), 0);
            assert_int_equal(O->buf_read(B->ctx, vc, 0, vh, (size_t)rows * KD), 0);
            ref_attention(q, kh, vh, T, pos0, H, HKV, D, scale, cases[ci].sw, NC, want);
            char what[96];
            snprintf(what, sizeof what, "attention case %zu (window %u, ring %u) at %u", ci, cases[ci].sw, NC, pos0);
            expect_close(out, want, (size_t)T * QD, cases[ci].tol, what);
        }
        /* a ring must hold n_swa + n_tok - 1 rows (the batch's first window
         * and the batch); a cache shorter than the ring is refused */
        if (NC && cases[ci].sw) {
            backend_attn_params small = ap;
            small.n_cells = cases[ci].sw + T - 1;
            assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, NPOS - T, H, HKV, D, &small), 0);
            small.n_cells--;
            assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, NPOS - T, H, HKV, D, &small),
                             BACKEND_EARG);
            small.n_cells = NC + 1;
            assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, NPOS - T, H, HKV, D, &small),
                             BACKEND_EARG);
        }
        backend_buf *bufs[] = {bk, bv, kc, vc, bq, bo};
        for (int i = 0; i < 6; i++)
            O->buf_free(B->ctx, bufs[i]);
        free(kall), free(vall), free(q), free(out), free(want), free(kh), free(vh);
    }
}

/* A ring that has not wrapped holds position p in row p: the linear cache's
 * result, bit for bit (one chunk and tiled), with and without a window; a
 * wrapped ring visits its rows in row order. */
static void test_attention_ring_linear(void **state)
{
    (void)state;
    enum { H = 4, HKV = 1, D = 64, KD = HKV * D, QD = H * D, NC = 256 };
    static const uint32_t tn[][3] = {{5, 35, 0}, {5, 35, 10}, {80, 100, 0}, {80, 100, 70}};
    float *kv = malloc(sizeof(float) * NC * KD * 2), *q = malloc(sizeof(float) * 80 * QD);
    float *o1 = malloc(sizeof(float) * 80 * QD), *o2 = malloc(sizeof(float) * 80 * QD);
    assert_true(kv && q && o1 && o2);
    for (size_t i = 0; i < (size_t)NC * KD * 2; i++)
        kv[i] = frand();
    for (size_t i = 0; i < (size_t)80 * QD; i++)
        q[i] = 2.0f * frand();
    backend_buf *bk = buf_from(kv, (size_t)NC * KD), *bv = buf_from(kv + NC * KD, (size_t)NC * KD);
    backend_buf *kc = O->buf_new(B->ctx, BACKEND_F16, (size_t)NC * KD);
    backend_buf *vc = O->buf_new(B->ctx, BACKEND_F16, (size_t)NC * KD);
    assert_int_equal(O->store_f16(B->ctx, V(bk), NC, KD, V(kc), 0), 0);
    assert_int_equal(O->store_f16(B->ctx, V(bv), NC, KD, V(vc), 0), 0);
    backend_buf *bq = buf_from(q, (size_t)80 * QD), *bo = O->buf_new(B->ctx, BACKEND_F32, (size_t)80 * QD);
    for (size_t i = 0; i < sizeof tn / sizeof tn[0]; i++) {
        const uint32_t T = tn[i][0], P0 = tn[i][1];
        backend_attn_params lin = {.scale = 0.125f, .n_swa = tn[i][2]}, ring = lin;
        ring.n_cells = NC;
        assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, HKV, D, &lin), 0);
        read_back(bo, o1, (size_t)T * QD);
        assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, HKV, D, &ring), 0);
        read_back(bo, o2, (size_t)T * QD);
        assert_memory_equal(o1, o2, sizeof(float) * T * QD);
    }
    /* After the wrap, rows are visited in row order as llama.cpp visits
     * cells: a one-token query at 49 with window 6 in a ring of 16 sees
     * rows 0, 1 (positions 48, 49), then 12..15 (44..47), which is, bit for
     * bit, a linear cache holding those rows in that order (the one-chunk
     * form skips masked cells, so only the order of visible ones counts). */
    {
        const uint32_t order[6] = {0, 1, 12, 13, 14, 15};
        backend_buf *lk = O->buf_new(B->ctx, BACKEND_F16, 6 * KD), *lv = O->buf_new(B->ctx, BACKEND_F16, 6 * KD);
        for (uint32_t i = 0; i < 6; i++) {
            backend_view ks = {bk, (size_t)order[i] * KD}, vs = {bv, (size_t)order[i] * KD};
            assert_int_equal(O->store_f16(B->ctx, ks, 1, KD, V(lk), i), 0);
            assert_int_equal(O->store_f16(B->ctx, vs, 1, KD, V(lv), i), 0);
        }
        const backend_attn_params ring = {.scale = 0.125f, .n_swa = 6, .n_cells = 16}, lin = {.scale = 0.125f};
        assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), 1, 49, H, HKV, D, &ring), 0);
        read_back(bo, o1, QD);
        assert_int_equal(O->attention(B->ctx, V(bq), V(lk), V(lv), V(bo), 1, 5, H, HKV, D, &lin), 0);
        read_back(bo, o2, QD);
        assert_memory_equal(o1, o2, sizeof(float) * QD);
        O->buf_free(B->ctx, lk), O->buf_free(B->ctx, lv);
    }
    backend_buf *bufs[] = {bk, bv, kc, vc, bq, bo};
    for (int i = 0; i < 6; i++)
        O->buf_free(B->ctx, bufs[i]);
    free(kv), free(q), free(o1), free(o2);
}

/* Attention sinks: the one-chunk form (fewer than 64 queries) and the tiled
 * form (64+) against softmax with the sink's term in double; the sink step
 * itself in plain C (one-chunk: S*ms and + vs rounded apart, the maximum
 * moved to the sink; tiled: one fmaf, the maximum kept); the tiled SIMD row
 * against its plain C reference, bit for bit. */
static void test_attention_sinks(void **state)
{
    (void)state;
    enum { H = 4, HKV = 2, D = 64, KD = HKV * D, QD = H * D, NKV = 200 };
    const float scale = 0.125f, sinks[H] = {3.0f, -2.0f, 30.0f, 0.5f};
    float *kv = malloc(sizeof(float) * NKV * KD * 2), *q = malloc(sizeof(float) * 80 * QD);
    float *out = malloc(sizeof(float) * 80 * QD);
    double *want = malloc(sizeof(double) * 80 * QD);
    uint16_t *kh = malloc(2 * (size_t)NKV * KD), *vh = malloc(2 * (size_t)NKV * KD);
    assert_true(kv && q && out && want && kh && vh);
    for (size_t i = 0; i < (size_t)NKV * KD * 2; i++)
        kv[i] = frand();
    for (size_t i = 0; i < (size_t)80 * QD; i++)
        q[i] = 2.0f * frand();
    backend_buf *bk = buf_from(kv, (size_t)NKV * KD), *bv = buf_from(kv + NKV * KD, (size_t)NKV * KD);
    backend_buf *kc = O->buf_new(B->ctx, BACKEND_F16, (size_t)NKV * KD);
    backend_buf *vc = O->buf_new(B->ctx, BACKEND_F16, (size_t)NKV * KD);
    assert_int_equal(O->store_f16(B->ctx, V(bk), NKV, KD, V(kc), 0), 0);
    assert_int_equal(O->store_f16(B->ctx, V(bv), NKV, KD, V(vc), 0), 0);
    assert_int_equal(O->buf_read(B->ctx, kc, 0, kh, (size_t)NKV * KD), 0);
    assert_int_equal(O->buf_read(B->ctx, vc, 0, vh, (size_t)NKV * KD), 0);
    backend_buf *bq = buf_from(q, (size_t)80 * QD), *bo = O->buf_new(B->ctx, BACKEND_F32, (size_t)80 * QD);
    static const struct { uint32_t t, p0, sw; double tol; } cases[] = {
        {1, 0, 0, 3e-3}, {5, 30, 0, 3e-3}, {70, 100, 0, 1e-4}, {70, 120, 40, 1e-4}, {3, 150, 16, 3e-3},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const uint32_t T = cases[ci].t, P0 = cases[ci].p0;
        const backend_attn_params ap = {.scale = scale, .n_swa = cases[ci].sw, .sinks = sinks};
        assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), T, P0, H, HKV, D, &ap), 0);
        read_back(bo, out, (size_t)T * QD);
        ref_attention_sinks(q, kh, vh, T, P0, H, HKV, D, scale, cases[ci].sw, 0, sinks, want);
        char what[64];
        snprintf(what, sizeof what, "attention with sinks, case %zu", ci);
        expect_close(out, want, (size_t)T * QD, cases[ci].tol, what);
    }
    /* the sink step */
    for (int i = 0; i < 1000; i++) {
        const float M0 = 4.0f * frand(), S0 = 1.0f + 30.0f * (frand() + 1.0f), sink = 5.0f * frand();
        const float a0[3] = {frand(), frand(), frand()};
        for (int tiled = 0; tiled < 2; tiled++) {
            float M = M0, S = S0, acc[3] = {a0[0], a0[1], a0[2]};
            backend_cpu_attn_sink(sink, &M, &S, acc, 3, tiled);
            volatile float ms = 1.0f, vs = 1.0f, prod;
            if (sink > M0)
                ms = expf(M0 - sink);
            else
                vs = expf(sink - M0);
            prod = S0 * ms;
            const float want_s = tiled ? fmaf(S0, ms, vs) : prod + vs;
            assert_memory_equal(&S, &want_s, sizeof S);
            const float want_m = !tiled && sink > M0 ? sink : M0;
            assert_memory_equal(&M, &want_m, sizeof M);
            for (int d = 0; d < 3; d++) {
                const float w = sink > M0 ? a0[d] * ms : a0[d];
                assert_memory_equal(&acc[d], &w, sizeof w);
            }
        }
    }
    /* the tiled row, SIMD and plain C, with a sink above and below the scores */
    if (backend_cpu_attn_simd_available()) {
        float acc[D], o1[D], o2[D];
        uint32_t r[4];
        backend_cpu_attn_rows(150, 0, 0, r);
        for (int hw = 0; hw < 2; hw++)
            for (int si = 0; si < H; si++) {
                backend_cpu_attn_tiled_ref(q, kh, vh, KD, r, D, scale, &sinks[si], acc, o1, hw);
                backend_cpu_attn_tiled(q, kh, vh, KD, r, D, scale, &sinks[si], acc, o2, hw);
                assert_memory_equal(o1, o2, sizeof o1);
            }
    }
    backend_buf *bufs[] = {bk, bv, kc, vc, bq, bo};
    for (int i = 0; i < 6; i++)
        O->buf_free(B->ctx, bufs[i]);
    free(kv), free(q), free(out), free(want), free(kh), free(vh);
    assert_true((O->caps & BACKEND_CAP_ATTN_SINKS) != 0);
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
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_gelu_mul),
        cmocka_unit_test(test_rope_yarn),
        cmocka_unit_test(test_attention_window),
        cmocka_unit_test(test_attention_ring_linear),
        cmocka_unit_test(test_attention_sinks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
