/* The CPU backend's split-KV decode attention (backend_cpu_attn_split.c)
 * against a plain rewrite of ggml's algorithm (ops.cpp: the split path of
 * ggml_compute_forward_flash_attn_ext_f16, its one-chunk loop and
 * ggml_flash_attn_ext_reduce_partials), bit for bit: 1, 2 and 3 threads,
 * views of 512 to 2048 cells, sinks, sliding windows (chunks with no
 * visible cell) and rings; and the form is taken exactly when ggml takes
 * it (one query, a padded view of 512 cells or more). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "backend.h"
#include "backend_cpu_internal.h"
#include "codec.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static float frand(void) /* uniform [-1, 1) */
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (float)((rs >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static backend_view V(backend_buf *b) { return (backend_view){b, 0}; }

static float f16r(float x) { return codec_f16_to_f32(codec_f32_to_f16(x)); }

/* llama_kv_cache::get_n_kv for one sequence written from position 0: the
 * cells used padded to 256 (at least 256), at most the cache's cells. */
static uint32_t ref_n_kv(uint32_t P, uint32_t n_cells)
{
    uint32_t used = n_cells && P + 1 > n_cells ? n_cells : P + 1;
    uint32_t n = (used + 255) / 256 * 256;
    return n_cells && n > n_cells ? n_cells : n;
}

/* llama.cpp's mask for the query at P: cell c holds the last position <= P
 * written to it (position p goes to cell p, or p % n_cells in a ring);
 * visible when that position is within the window. */
static bool ref_visible(uint32_t c, uint32_t P, uint32_t n_swa, uint32_t n_cells)
{
    if (c > P || (n_cells && c >= n_cells))
        return false;
    const uint32_t pos = n_cells ? c + (P - c) / n_cells * n_cells : c;
    return !n_swa || P - pos < n_swa;
}

typedef struct {
    uint32_t P, H, HKV, D, n_swa, n_cells;
    float scale;
    const float *q;              /* H x D */
    const uint16_t *kh, *vh;     /* rows of HKV x D */
    const float *sinks;          /* H, or NULL */
    bool hw;                     /* the haswell build's F16 dot order */
} attn_case;

/* ggml's one-chunk loop of head h over cells [c0, c1): {M, S, VKQ} into p;
 * the sink when sink_here (ops.cpp: ic_start == 0). */
static void ref_chunk(const attn_case *a, uint32_t h, uint32_t c0, uint32_t c1, bool sink_here, float *p)
{
    const uint32_t D = a->D, KD = a->HKV * D, g = h / (a->H / a->HKV);
    float *Qh = malloc(sizeof(float) * D), *VKQ = p + 2;
    assert_non_null(Qh);
    for (uint32_t d = 0; d < D; d++) {
        Qh[d] = f16r(a->q[(size_t)h * D + d]);
        VKQ[d] = 0.0f; /* VKQ16, as floats */
    }
    float S = 0.0f, M = -INFINITY;
    for (uint32_t ic = c0; ic < c1; ic++) {
        if (!ref_visible(ic, a->P, a->n_swa, a->n_cells))
            continue; /* mask -inf: skipped */
        const uint16_t *k = a->kh + (size_t)ic * KD + (size_t)g * D, *v = a->vh + (size_t)ic * KD + (size_t)g * D;
        float s = backend_cpu_dot_f16_ref(Qh, k, D, a->hw);
        s = s * a->scale;
        const float Mold = M;
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
            M = s;
            ms = expf(Mold - M);
            for (uint32_t d = 0; d < D; d++) /* ggml_vec_scale_f16 */
                VKQ[d] = f16r(VKQ[d] * ms);
        } else {
            vs = expf(s - M);
        }
        for (uint32_t d = 0; d < D; d++) /* ggml_vec_mad_f16 */
            VKQ[d] = f16r(fmaf(codec_f16_to_f32(v[d]), vs, VKQ[d]));
        const float t = S * ms;
        S = t + vs;
    }
    if (a->sinks && sink_here) {
        const float s = a->sinks[h];
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
            ms = expf(M - s);
            M = s;
            for (uint32_t d = 0; d < D; d++)
                VKQ[d] *= ms;
        } else {
            vs = expf(s - M);
        }
        const float t = S * ms;
        S = t + vs;
    }
    p[0] = M;
    p[1] = S;
    free(Qh);
}

/* The split form with nth threads (nth 0: the one-chunk form over the
 * whole view) of every head into out (H x D). */
static void ref_attention(const attn_case *a, uint32_t nth, float *out)
{
    const uint32_t D = a->D, n_kv = ref_n_kv(a->P, a->n_cells);
    const size_t ps = 2 + (size_t)D;
    float *part = malloc(sizeof(float) * ps * (nth ? nth : 1)), *fin = malloc(sizeof(float) * D);
    assert_true(part && fin);
    for (uint32_t h = 0; h < a->H; h++) {
        float *o = out + (size_t)h * D;
        if (!nth) {
            ref_chunk(a, h, 0, n_kv, true, part);
            const float S = part[1], S_inv = S == 0.0f ? 0.0f : 1.0f / S;
            for (uint32_t d = 0; d < D; d++)
                o[d] = part[2 + d] * S_inv;
            continue;
        }
        const uint32_t chunk = (n_kv + nth - 1) / nth;
        for (uint32_t ith = 0; ith < nth; ith++) {
            float *p = part + ith * ps;
            const uint32_t ic_start = ith * chunk, ic_end = ic_start + chunk < n_kv ? ic_start + chunk : n_kv;
            if (ic_start < n_kv) {
                ref_chunk(a, h, ic_start, ic_end, ic_start == 0, p);
            } else {
                p[0] = -INFINITY;
                p[1] = 0.0f;
            }
        }
        float M_final = -INFINITY, S_final = 0.0f;
        memset(fin, 0, sizeof(float) * D);
        for (uint32_t c = 0; c < nth; c++) {
            if (c * chunk >= n_kv)
                continue;
            const float *p = part + c * ps, M_chunk = p[0], S_chunk = p[1];
            if (S_chunk == 0.0f)
                continue;
            const float M_new = fmaxf(M_final, M_chunk);
            const float scale_old = expf(M_final - M_new), scale_new = expf(M_chunk - M_new);
            for (uint32_t d = 0; d < D; d++) {
                const float t = p[2 + d] * scale_new;
                fin[d] = fmaf(fin[d], scale_old, t);
            }
            const float t = S_chunk * scale_new;
            S_final = fmaf(S_final, scale_old, t);
            M_final = M_new;
        }
        if (S_final != 0.0f) {
            const float S_inv = 1.0f / S_final;
            for (uint32_t d = 0; d < D; d++)
                fin[d] *= S_inv;
        }
        memcpy(o, fin, sizeof(float) * D);
    }
    free(part);
    free(fin);
}

static void expect_bits(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            uint32_t a, b;
            memcpy(&a, &got[i], 4);
            memcpy(&b, &want[i], 4);
            fail_msg("%s: output %zu is %.9g (0x%08x), the reference %.9g (0x%08x)", what, i, got[i], (unsigned)a,
                     want[i], (unsigned)b);
        }
}

static const struct {
    uint32_t P, H, HKV, D, n_swa, n_cells;
} CASES[] = {
    {256, 8, 2, 64, 0, 0},     /* the first split view: 512 cells */
    {700, 8, 2, 64, 0, 0},     /* 768 */
    {1100, 4, 1, 128, 0, 0},   /* 1280 */
    {2047, 8, 2, 64, 0, 0},    /* 2048 */
    {1500, 8, 2, 64, 100, 0},  /* linear cache with a window: chunk 0 and others see nothing */
    {600, 6, 3, 32, 16, 768},  /* ring not wrapped yet */
    {2000, 8, 2, 64, 16, 768}, /* wrapped ring of 768 (gpt-oss's): the window in one chunk */
    {300, 4, 2, 40, 128, 768}, /* 40: 8-lane tails */
    {900, 4, 2, 20, 0, 0},     /* a head size the SIMD form does not take: the plain C loops */
    {1400, 8, 8, 16, 0, 2048}, /* a ring as large as the view, one head per KV head */
};

/* One case on a backend of nth threads: the backend's attention (one query)
 * against ref_attention with nth, with and without sinks; then the forms
 * the backend can run (SIMD by groups of heads, pair by pair, plain C)
 * through backend_cpu_attn_split directly; and a batch of two queries
 * (not split) against the one-chunk form. */
static void run_case(size_t ci, uint32_t nth)
{
    const uint32_t P = CASES[ci].P, H = CASES[ci].H, HKV = CASES[ci].HKV, D = CASES[ci].D;
    const uint32_t NC = CASES[ci].n_cells, rows = NC ? NC : P + 1, n_kv = ref_n_kv(P, NC);
    const size_t KD = (size_t)HKV * D, QD = (size_t)H * D;
    backend *B = backend_cpu_new((int)nth);
    assert_non_null(B);
    const backend_ops *O = B->ops;
    assert_int_equal(backend_cpu_threads(B), (int)nth);
    uint16_t *kh = malloc(2 * rows * KD), *vh = malloc(2 * rows * KD);
    float *q = malloc(sizeof(float) * 2 * QD), *out = malloc(sizeof(float) * 2 * QD);
    float *want = malloc(sizeof(float) * 2 * QD), sinks[16];
    assert_true(kh && vh && q && out && want);
    for (size_t i = 0; i < rows * KD; i++) {
        kh[i] = codec_f32_to_f16(2.0f * frand());
        vh[i] = codec_f32_to_f16(frand());
    }
    for (size_t i = 0; i < 2 * QD; i++)
        q[i] = 3.0f * frand();
    for (uint32_t h = 0; h < H; h++) /* above every score (acc rescaled) or among them */
        sinks[h] = h % 2 ? 40.0f + frand() : 2.0f * frand();
    backend_buf *kc = O->buf_new(B->ctx, BACKEND_F16, rows * KD), *vc = O->buf_new(B->ctx, BACKEND_F16, rows * KD);
    backend_buf *bq = O->buf_new(B->ctx, BACKEND_F32, 2 * QD), *bo = O->buf_new(B->ctx, BACKEND_F32, 2 * QD);
    assert_true(kc && vc && bq && bo);
    assert_int_equal(O->buf_write(B->ctx, kc, 0, kh, rows * KD), 0);
    assert_int_equal(O->buf_write(B->ctx, vc, 0, vh, rows * KD), 0);
    assert_int_equal(O->buf_write(B->ctx, bq, 0, q, 2 * QD), 0);
    const float scale = 1.0f / sqrtf((float)D);
    char what[160];
    for (int with_sinks = 0; with_sinks < 2; with_sinks++) {
        attn_case a = {.P = P, .H = H, .HKV = HKV, .D = D, .n_swa = CASES[ci].n_swa, .n_cells = NC,
                       .scale = scale, .q = q, .kh = kh, .vh = vh, .sinks = with_sinks ? sinks : NULL,
                       .hw = backend_cpu_haswell()};
        const backend_attn_params ap = {.scale = scale, .n_swa = a.n_swa, .n_cells = NC, .sinks = a.sinks};
        /* the backend's own choice */
        ref_attention(&a, nth, want);
        assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), 1, P, H, HKV, D, &ap), 0);
        assert_int_equal(O->buf_read(B->ctx, bo, 0, out, QD), 0);
        snprintf(what, sizeof what, "case %zu (P %u, view %u, window %u, ring %u%s), %u threads", ci, P, n_kv,
                 a.n_swa, NC, with_sinks ? ", sinks" : "", nth);
        expect_bits(out, want, QD, what);
        /* each form the backend has: SIMD by groups of heads, pair by pair, plain C */
        for (int form = 0; form < 3; form++) {
            if (form < 2 && !backend_cpu_attn_simd_available())
                continue;
            backend_cpu_attn_job j = {.q = q, .k = kh, .v = vh, .out = out, .n_tok = 1, .pos0 = P, .n_head = H,
                                      .n_head_kv = HKV, .head_dim = D, .n_swa = a.n_swa, .n_cells = NC,
                                      .sinks = a.sinks, .scale = scale, .simd = form < 2};
            for (size_t i = 0; i < QD; i++)
                out[i] = NAN;
            backend_cpu_attn_pairs(form == 1);
            assert_int_equal(backend_cpu_attn_split(B->ctx, &j, n_kv, nth), 0);
            backend_cpu_attn_pairs(false);
            snprintf(what, sizeof what, "case %zu%s, %u threads, %s", ci, with_sinks ? " (sinks)" : "", nth,
                     form == 0 ? "groups" : form == 1 ? "pairs" : "plain C");
            expect_bits(out, want, QD, what);
        }
        /* two queries (the second at P): not split, whatever the view */
        attn_case a2 = a;
        a2.q = q + QD;
        ref_attention(&a2, 0, want);
        const uint32_t lo = a.n_swa && P - 1 >= a.n_swa ? P - a.n_swa : 0; /* the first query's oldest */
        if (!NC || P - lo < NC) {
            assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), 2, P - 1, H, HKV, D, &ap), 0);
            assert_int_equal(O->buf_read(B->ctx, bo, QD, out, QD), 0);
            snprintf(what, sizeof what, "case %zu%s, two queries, %u threads", ci, with_sinks ? " (sinks)" : "", nth);
            expect_bits(out, want, QD, what);
        }
    }
    backend_buf *bufs[] = {kc, vc, bq, bo};
    for (int i = 0; i < 4; i++)
        O->buf_free(B->ctx, bufs[i]);
    backend_free(B);
    free(kh), free(vh), free(q), free(out), free(want);
}

static void test_split_against_reference(void **state)
{
    (void)state;
    for (uint32_t nth = 1; nth <= 3; nth++)
        for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++)
            run_case(ci, nth);
}

/* Below a view of 512 cells (the query at 255 sees a view of 256) the
 * one-chunk form runs, with any thread count; at 256 the split form; a
 * ring of 256 never makes a view of 512 (its window of 100 at 299 has
 * wrapped). */
static void test_split_threshold(void **state)
{
    (void)state;
    assert_int_equal(backend_cpu_attn_n_kv(255, 0), 256);
    assert_int_equal(backend_cpu_attn_n_kv(256, 0), 512);
    assert_int_equal(backend_cpu_attn_n_kv(1023, 0), 1024);
    assert_int_equal(backend_cpu_attn_n_kv(1024, 0), 1280);
    assert_int_equal(backend_cpu_attn_n_kv(5000, 768), 768);
    assert_int_equal(backend_cpu_attn_n_kv(300, 768), 512);
    assert_int_equal(backend_cpu_attn_n_kv(300, 256), 256);
    assert_int_equal(backend_cpu_attn_n_kv(40, 16), 16);
    for (uint32_t P = 0; P < 3000; P += 7)
        for (uint32_t nc = 0; nc <= 1024; nc += 256)
            assert_int_equal(backend_cpu_attn_n_kv(P, nc), ref_n_kv(P, nc));
    enum { H = 4, HKV = 2, D = 32, KD = HKV * D, QD = H * D, ROWS = 300 };
    backend *B = backend_cpu_new(3);
    assert_non_null(B);
    const backend_ops *O = B->ops;
    uint16_t *kh = malloc(2 * ROWS * KD), *vh = malloc(2 * ROWS * KD);
    float q[QD], out[QD], want[QD];
    assert_true(kh && vh);
    for (size_t i = 0; i < (size_t)ROWS * KD; i++) {
        kh[i] = codec_f32_to_f16(2.0f * frand());
        vh[i] = codec_f32_to_f16(frand());
    }
    for (size_t i = 0; i < QD; i++)
        q[i] = 3.0f * frand();
    backend_buf *kc = O->buf_new(B->ctx, BACKEND_F16, ROWS * KD), *vc = O->buf_new(B->ctx, BACKEND_F16, ROWS * KD);
    backend_buf *bq = O->buf_new(B->ctx, BACKEND_F32, QD), *bo = O->buf_new(B->ctx, BACKEND_F32, QD);
    assert_int_equal(O->buf_write(B->ctx, kc, 0, kh, ROWS * KD), 0);
    assert_int_equal(O->buf_write(B->ctx, vc, 0, vh, ROWS * KD), 0);
    assert_int_equal(O->buf_write(B->ctx, bq, 0, q, QD), 0);
    static const struct { uint32_t P, nc, sw; int nth; } pts[] = {
        {255, 0, 0, 0}, {256, 0, 0, 3}, {299, 256, 100, 0}, {299, 0, 100, 3}};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        attn_case a = {.P = pts[i].P, .H = H, .HKV = HKV, .D = D, .n_swa = pts[i].sw, .n_cells = pts[i].nc,
                       .scale = 0.125f, .q = q, .kh = kh, .vh = vh, .hw = backend_cpu_haswell()};
        const backend_attn_params ap = {.scale = 0.125f, .n_swa = pts[i].sw, .n_cells = pts[i].nc};
        ref_attention(&a, (uint32_t)pts[i].nth, want);
        assert_int_equal(O->attention(B->ctx, V(bq), V(kc), V(vc), V(bo), 1, pts[i].P, H, HKV, D, &ap), 0);
        assert_int_equal(O->buf_read(B->ctx, bo, 0, out, QD), 0);
        char what[64];
        snprintf(what, sizeof what, "query at %u, ring %u", pts[i].P, pts[i].nc);
        expect_bits(out, want, QD, what);
    }
    backend_buf *bufs[] = {kc, vc, bq, bo};
    for (int i = 0; i < 4; i++)
        O->buf_free(B->ctx, bufs[i]);
    backend_free(B);
    free(kh), free(vh);
}

/* The attention's order (llama.cpp's zen4 or haswell build) is chosen once
 * per process: after this process's run, a second one runs the tests with
 * the other build's order (on the AVX2 path, which has both). */
int main(int argc, char **argv)
{
    (void)argc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_threshold),
        cmocka_unit_test(test_split_against_reference),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (getenv("GGSCOPE_SPLITKV_OTHER") || !backend_cpu_attn_simd_available())
        return rc;
    setenv("GGSCOPE_SPLITKV_OTHER", "1", 1);
    setenv("GGSCOPE_LLAMA_VARIANT", backend_cpu_haswell() ? "zen4" : "haswell", 1);
    setenv("GGSCOPE_SIMD", "avx2", 1);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        return rc ? rc : 1;
    return rc;
}
