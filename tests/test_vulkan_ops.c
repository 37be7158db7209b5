/* The Vulkan backend's ops against the CPU backend's, op by op: normalised
 * mean squared error sum((a-b)^2)/sum(a^2) below 1e-7 for element-wise ops
 * and norms, 5e-4 for matrix products and attention, on random inputs of
 * several shapes (including ones that are not multiples of the workgroup
 * size), for every mat-vec weight type, with and without subgroup
 * reductions. Runs on whatever device the automatic choice takes (ctest sets
 * VK_ICD_FILENAMES to lavapipe); skips visibly without a Vulkan device.
 * Under VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation every validation
 * error fails the test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "backend.h"
#include "codec.h"
#include "ggtype.h"

#ifdef GGSCOPE_HAVE_VULKAN
#include "backend_vulkan.h"
#include "vktest.h"

#define NMSE_ELEM 1e-7
#define NMSE_MAT 5e-4

/* The shared fixture (tests/support/vktest.h); its random inputs and
 * weights draw from this file's seed. */
typedef vktest_fixture fixture;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static int setup_sg(void **state) { return vktest_setup(state, true); }
static int setup_nosg(void **state) { return vktest_setup(state, false); }

/* ---- weights ---- */

static const uint32_t WTYPES[] = {GGTYPE_F32, GGTYPE_F16, GGTYPE_Q4_0, GGTYPE_Q4_1, GGTYPE_Q5_0,
                                  GGTYPE_Q5_1, GGTYPE_Q8_0, GGTYPE_Q2_K, GGTYPE_Q3_K, GGTYPE_Q4_K,
                                  GGTYPE_Q5_K, GGTYPE_Q6_K};
#define N_WTYPES (sizeof WTYPES / sizeof WTYPES[0])

static void run_matmul(fixture *f, uint32_t type, uint32_t cols, uint32_t rows, uint32_t n_tok)
{
    void *mem;
    backend_weight w = vktest_make_weight(&rng_state, type, cols, rows, 1, &mem);
    vktest_prepare(f, &w);
    float *x = vktest_rnd_vec(&rng_state, (size_t)n_tok * cols, -1.0f, 1.0f);
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        backend_buf *bx = vktest_upload(b, x, (size_t)n_tok * cols);
        backend_buf *by = vktest_upload(b, NULL, (size_t)n_tok * rows + 3);
        assert_int_equal(b->ops->matmul(b->ctx, &w, (backend_view){bx, 0}, n_tok, (backend_view){by, 3}), 0);
        res[k] = vktest_download(b, by, 3, (size_t)n_tok * rows);
        b->ops->buf_free(b->ctx, bx);
        b->ops->buf_free(b->ctx, by);
    }
    char what[96];
    snprintf(what, sizeof what, "matmul %s %ux%u x %u tok", ggtype_name(type), rows, cols, n_tok);
    vktest_check(what, res[0], res[1], (size_t)n_tok * rows, NMSE_MAT);
    vktest_release(f, &w);
    free(res[0]);
    free(res[1]);
    free(x);
    free(mem);
}

static void test_matmul(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    for (size_t i = 0; i < N_WTYPES; i++) {
        uint32_t t = WTYPES[i];
        if (!f->all_types && t != GGTYPE_F16 && t != GGTYPE_Q4_0 && t != GGTYPE_Q6_K)
            continue;
        bool k = ggtype_get(t)->blck_size == 256;
        uint32_t c1 = k ? 256 : 96, c2 = k ? 768 : 320;
        run_matmul(f, t, c1, 67, 1);    /* mat-vec */
        run_matmul(f, t, c2, 33, 1);
        run_matmul(f, t, c1, 19, 11);   /* mat-mat: a partial tile of 8 tokens */
    }
    /* float rows that are not a multiple of 32 */
    run_matmul(f, GGTYPE_F32, 70, 9, 1);
    run_matmul(f, GGTYPE_F16, 70, 9, 3);
    run_matmul(f, GGTYPE_F16, 4097, 3, 1);
    vktest_no_validation_errors(f);
}

/* Tensors larger than one binding: lower the range so that the weight is
 * bound in several windows. */
static void test_matmul_windows(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    backend_vulkan_set_max_range(f->vk, 4096);
    run_matmul(f, GGTYPE_Q4_0, 256, 100, 1);   /* 144-byte rows, 100 rows: 4 windows */
    run_matmul(f, GGTYPE_Q6_K, 512, 23, 2);
    run_matmul(f, GGTYPE_F16, 200, 50, 1);
    backend_vulkan_set_max_range(f->vk, 0);
    vktest_no_validation_errors(f);
}

static void test_get_rows(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    for (int win = 0; win < 2; win++) {
        if (win)
            backend_vulkan_set_max_range(f->vk, 2048);
        for (size_t i = 0; i < N_WTYPES; i++) {
            uint32_t t = WTYPES[i];
            uint32_t cols = ggtype_get(t)->blck_size == 256 ? 512 : 160;
            void *mem;
            backend_weight w = vktest_make_weight(&rng_state, t, cols, 37, 1, &mem);
            vktest_prepare(f, &w);
            int32_t ids[7] = {0, 36, 5, 5, 17, 1, 30};
            float *res[2];
            backend *bs[2] = {f->cpu, f->vk};
            for (int k = 0; k < 2; k++) {
                backend *b = bs[k];
                backend_buf *d = vktest_upload(b, NULL, 7 * cols + 1);
                assert_int_equal(b->ops->get_rows(b->ctx, &w, ids, 7, (backend_view){d, 1}), 0);
                res[k] = vktest_download(b, d, 1, 7 * cols);
                b->ops->buf_free(b->ctx, d);
            }
            char what[64];
            snprintf(what, sizeof what, "get_rows %s%s", ggtype_name(t), win ? " (windows)" : "");
            vktest_check(what, res[0], res[1], 7 * cols, NMSE_ELEM);
            vktest_release(f, &w);
            free(res[0]);
            free(res[1]);
            free(mem);
        }
    }
    backend_vulkan_set_max_range(f->vk, 0);
    vktest_no_validation_errors(f);
}

/* ---- element-wise ops and norms ---- */

typedef enum { OP_ADDW, OP_ADD, OP_SILU, OP_RMS_MULW, OP_GELU, OP_SCALE } eop;

static void run_elem(fixture *f, eop op, uint32_t rows, uint32_t cols, bool in_place)
{
    size_t n = (size_t)rows * cols;
    float *a = vktest_rnd_vec(&rng_state, n, -3.0f, 3.0f), *bv = vktest_rnd_vec(&rng_state, n, -3.0f, 3.0f),
          *wv = vktest_rnd_vec(&rng_state, cols, 0.5f, 1.5f);
    backend_weight w = {.type = GGTYPE_F32, .ne0 = cols, .ne1 = 1, .row_bytes = (uint64_t)cols * 4,
                        .data = wv, .name = "w"};
    vktest_prepare(f, &w);
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        void *c = b->ctx;
        backend_buf *ba = vktest_upload(b, a, n), *bb = vktest_upload(b, bv, n), *bd = vktest_upload(b, NULL, n + 5);
        backend_view va = {ba, 0}, vb = {bb, 0}, vd = in_place ? va : (backend_view){bd, 5};
        switch (op) {
        case OP_ADDW: assert_int_equal(b->ops->add_w(c, va, &w, vd, rows, cols), 0); break;
        case OP_ADD: assert_int_equal(b->ops->add(c, va, vb, vd, n), 0); break;
        case OP_SILU: assert_int_equal(b->ops->silu_mul(c, va, vb, vd, rows, cols), 0); break;
        case OP_RMS_MULW: /* as the session does it (one dispatch on Vulkan) */
            assert_int_equal(b->ops->rms_norm_mul(c, va, &w, vd, rows, cols, 1e-5f), 0);
            break;
        case OP_GELU: assert_int_equal(b->ops->gelu_mul(c, va, vb, vd, rows, cols), 0); break;
        case OP_SCALE: assert_int_equal(b->ops->scale(c, va, vd, n, 0.0883883476f), 0); break;
        }
        res[k] = vktest_download(b, vd.buf, vd.off, n);
        b->ops->buf_free(c, ba);
        b->ops->buf_free(c, bb);
        b->ops->buf_free(c, bd);
    }
    static const char *names[] = {"add_w", "add", "silu_mul", "rms_norm_mul", "gelu_mul", "scale"};
    char what[80];
    snprintf(what, sizeof what, "%s %ux%u%s", names[op], rows, cols, in_place ? " in place" : "");
    /* the CPU's GELU is ggml's table: the input and the value rounded to F16 */
    vktest_check(what, res[0], res[1], n, op == OP_GELU ? 1e-5 : NMSE_ELEM);
    vktest_release(f, &w);
    free(res[0]);
    free(res[1]);
    free(a);
    free(bv);
    free(wv);
}

static void test_elementwise(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    static const uint32_t shapes[][2] = {{1, 64}, {3, 70}, {2, 1000}, {5, 257}, {1, 4099}};
    for (int op = OP_ADDW; op <= OP_SCALE; op++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            run_elem(f, (eop)op, shapes[s][0], shapes[s][1], s % 2 == 1);
    vktest_no_validation_errors(f);
}

/* Rope with `rp` on both backends, n_tok tokens from position pos0 in steps of 3. */
static void rope_compare(fixture *f, const backend_rope_params *rp, uint32_t n_tok, uint32_t n_head, uint32_t hd,
                         int32_t pos0, const char *what)
{
    size_t n = (size_t)n_tok * n_head * hd;
    float *x = vktest_rnd_vec(&rng_state, n, -2.0f, 2.0f);
    int32_t pos[64];
    for (uint32_t i = 0; i < n_tok; i++)
        pos[i] = pos0 + (int32_t)i * 3;
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        backend_buf *bx = vktest_upload(b, NULL, n + 2);
        assert_int_equal(b->ops->buf_write(b->ctx, bx, 2, x, n), 0);
        assert_int_equal(b->ops->rope(b->ctx, (backend_view){bx, 2}, n_tok, n_head, hd, pos, rp), 0);
        res[k] = vktest_download(b, bx, 2, n);
        b->ops->buf_free(b->ctx, bx);
    }
    vktest_check(what, res[0], res[1], n, NMSE_ELEM);
    free(res[0]);
    free(res[1]);
    free(x);
}

static void run_rope(fixture *f, backend_rope_mode mode, uint32_t n_tok, uint32_t n_head, uint32_t hd,
                     uint32_t n_rot, bool factors, float scale, int32_t pos0)
{
    float ff[128];
    for (uint32_t i = 0; i < n_rot / 2; i++)
        ff[i] = 1.0f + (float)i / 8.0f;
    backend_rope_params rp = {.mode = mode, .n_rot = n_rot, .freq_base = 10000.0f, .freq_scale = scale,
                              .freq_factors = factors ? ff : NULL};
    char what[96];
    snprintf(what, sizeof what, "rope %s %ux%ux%u rot %u%s pos %d", mode == BACKEND_ROPE_NEOX ? "neox" : "normal",
             n_tok, n_head, hd, n_rot, factors ? " ff" : "", pos0);
    rope_compare(f, &rp, n_tok, n_head, hd, pos0, what);
}

static void test_rope(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    for (int m = 0; m < 2; m++) {
        backend_rope_mode mode = m ? BACKEND_ROPE_NEOX : BACKEND_ROPE_NORMAL;
        run_rope(f, mode, 1, 4, 64, 64, false, 1.0f, 0);
        run_rope(f, mode, 5, 3, 48, 32, true, 1.0f, 7);
        run_rope(f, mode, 9, 2, 128, 128, false, 0.25f, 1000);
        run_rope(f, mode, 3, 7, 18, 18, false, 1.0f, 4090);
    }
    vktest_no_validation_errors(f);
}

/* YaRN (the ramp between interpolated and extrapolated angles, mscale) and
 * LongRoPE (frequency factors with an attn_factor): the host table holds
 * the CPU's cos and sin, the shader rotates as the CPU does. */
static void test_rope_ext(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    float ff[64];
    for (uint32_t i = 0; i < 64; i++) /* LongRoPE's long factors grow with i (1 .. ~20) */
        ff[i] = 1.0f + 19.0f * (float)i * (float)i / (63.0f * 63.0f);
    static const struct {
        const char *name;
        backend_rope_mode mode;
        uint32_t hd, n_rot, n_ctx_orig;
        float base, scale, ext, attn, beta_fast, beta_slow;
        bool factors;
        int32_t pos0;
    } cases[] = {
        /* mistral3 (testmodel's): yarn factor 4 over 32 positions, base 1e6 */
        {"mistral3 yarn", BACKEND_ROPE_NORMAL, 128, 128, 32, 1e6f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f, false, 0},
        {"mistral3 yarn", BACKEND_ROPE_NORMAL, 128, 128, 32, 1e6f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f, false, 4000},
        /* gpt-oss: yarn factor 32 over 4096, base 150000, neox */
        {"gpt-oss yarn", BACKEND_ROPE_NEOX, 64, 64, 4096, 150000.0f, 1.0f / 32, 1.0f, 1.0f, 32.0f, 1.0f, false, 9000},
        /* an attn_factor besides YaRN's own mscale, a partial ramp, partial rotation */
        {"yarn mix 0.5", BACKEND_ROPE_NEOX, 48, 32, 256, 10000.0f, 0.5f, 0.5f, 1.25f, 16.0f, 2.0f, false, 300},
        /* a context so short that the correction range clamps to [0, n_rot - 1] */
        {"yarn clamped", BACKEND_ROPE_NORMAL, 64, 64, 2, 10000.0f, 0.125f, 1.0f, 1.0f, 32.0f, 1.0f, false, 17},
        /* phi3 LongRoPE: long factors, attn_factor sqrt(1 + ln(4) / ln(1024)), no YaRN */
        {"longrope", BACKEND_ROPE_NEOX, 96, 96, 1024, 10000.0f, 1.0f, 0.0f, 1.0931f, 0.0f, 0.0f, true, 2000},
        {"longrope", BACKEND_ROPE_NEOX, 128, 128, 1024, 10000.0f, 1.0f, 0.0f, 1.0931f, 0.0f, 0.0f, true, 0},
        /* rope_freqs (llama 3.1) with YaRN */
        {"yarn + freq factors", BACKEND_ROPE_NORMAL, 64, 64, 64, 500000.0f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f, true, 60},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        backend_rope_params rp = {.mode = cases[i].mode, .n_rot = cases[i].n_rot, .freq_base = cases[i].base,
                                  .freq_scale = cases[i].scale, .freq_factors = cases[i].factors ? ff : NULL,
                                  .ext_factor = cases[i].ext, .attn_factor = cases[i].attn,
                                  .beta_fast = cases[i].beta_fast, .beta_slow = cases[i].beta_slow,
                                  .n_ctx_orig = cases[i].n_ctx_orig};
        for (uint32_t n_tok = 1; n_tok <= 9; n_tok += 8) {
            char what[96];
            snprintf(what, sizeof what, "rope %s %s %u tok hd %u rot %u pos %d", cases[i].name,
                     cases[i].mode == BACKEND_ROPE_NEOX ? "neox" : "normal", n_tok, cases[i].hd, cases[i].n_rot,
                     cases[i].pos0);
            rope_compare(f, &rp, n_tok, 3, cases[i].hd, cases[i].pos0, what);
        }
    }
    vktest_no_validation_errors(f);
}

/* store_f16 must round exactly as the CPU (and ggml): compare the halves bit for bit. */
static void test_store_f16(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    static const uint32_t cases[][3] = {{1, 64, 0}, {3, 7, 1}, {2, 33, 5}, {4, 15, 2}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        uint32_t rows = cases[ci][0], cols = cases[ci][1], row = cases[ci][2];
        size_t n = (size_t)rows * cols, cap = (size_t)(row + rows) * cols + 3;
        float *x = vktest_rnd_vec(&rng_state, n, -70000.0f, 70000.0f);
        x[0] = 1e-6f;   /* subnormal half */
        x[n - 1] = 3e-8f;
        if (n > 2)
            x[1] = 65519.0f;
        uint16_t *res[2];
        backend *bs[2] = {f->cpu, f->vk};
        for (int k = 0; k < 2; k++) {
            backend *b = bs[k];
            backend_buf *src = vktest_upload(b, x, n);
            backend_buf *dst = b->ops->buf_new(b->ctx, BACKEND_F16, cap);
            assert_non_null(dst);
            uint16_t *fill = malloc(cap * 2);
            for (size_t i = 0; i < cap; i++)
                fill[i] = (uint16_t)(0x3C00 + i);
            assert_int_equal(b->ops->buf_write(b->ctx, dst, 0, fill, cap), 0);
            free(fill);
            assert_int_equal(b->ops->store_f16(b->ctx, (backend_view){src, 0}, rows, cols,
                                               (backend_view){dst, 1}, row), 0);
            res[k] = malloc(cap * 2);
            assert_int_equal(b->ops->buf_read(b->ctx, dst, 0, res[k], cap), 0);
            b->ops->buf_free(b->ctx, src);
            b->ops->buf_free(b->ctx, dst);
        }
        for (size_t i = 0; i < cap; i++)
            if (res[0][i] != res[1][i]) {
                print_error("store_f16 case %zu: half %zu: cpu %04x vulkan %04x\n", ci, i, res[0][i], res[1][i]);
                fail();
            }
        free(res[0]);
        free(res[1]);
        free(x);
    }
    vktest_no_validation_errors(f);
}

/* Attention on both backends: random queries, keys and values in a cache of
 * pos0 + n_tok rows (linear) or n_cells rows (a ring: position p in row
 * p % n_cells, every row filled), a sliding window of n_swa positions (0:
 * none) and, with `sinks`, random sinks in [-3, 3] (scores are about +-1:
 * some heads' sinks are above every score, some below). */
static void run_attention_p(fixture *f, uint32_t n_tok, uint32_t pos0, uint32_t n_head, uint32_t n_head_kv,
                            uint32_t hd, uint32_t n_swa, uint32_t n_cells, bool sinks)
{
    size_t nq = (size_t)n_tok * n_head * hd, kd = (size_t)n_head_kv * hd;
    uint32_t rows = n_cells ? n_cells : pos0 + n_tok;
    size_t nkv = (size_t)rows * kd;
    float *q = vktest_rnd_vec(&rng_state, nq, -1.0f, 1.0f);
    float *kv = vktest_rnd_vec(&rng_state, 2 * nkv, -1.0f, 1.0f);
    float *sk = sinks ? vktest_rnd_vec(&rng_state, n_head, -3.0f, 3.0f) : NULL;
    const backend_attn_params ap = {.scale = 1.0f / sqrtf((float)hd), .n_swa = n_swa, .n_cells = n_cells, .sinks = sk};
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        void *c = b->ctx;
        backend_buf *bq = vktest_upload(b, q, nq), *bk = vktest_upload(b, kv, nkv),
                    *bv = vktest_upload(b, kv + nkv, nkv);
        backend_buf *kc = b->ops->buf_new(c, BACKEND_F16, nkv + kd), *vc = b->ops->buf_new(c, BACKEND_F16, nkv + kd);
        backend_buf *out = vktest_upload(b, NULL, nq);
        assert_non_null(kc);
        assert_non_null(vc);
        /* the cache starts one row in, as a layer's slice of a bigger cache */
        assert_int_equal(b->ops->store_f16(c, (backend_view){bk, 0}, rows, (uint32_t)kd, (backend_view){kc, kd}, 0), 0);
        assert_int_equal(b->ops->store_f16(c, (backend_view){bv, 0}, rows, (uint32_t)kd, (backend_view){vc, kd}, 0), 0);
        assert_int_equal(b->ops->attention(c, (backend_view){bq, 0}, (backend_view){kc, kd}, (backend_view){vc, kd},
                                           (backend_view){out, 0}, n_tok, pos0, n_head, n_head_kv, hd, &ap),
                         0);
        res[k] = vktest_download(b, out, 0, nq);
        backend_buf *all[] = {bq, bk, bv, kc, vc, out};
        for (size_t i = 0; i < 6; i++)
            b->ops->buf_free(c, all[i]);
    }
    char what[128];
    int l = snprintf(what, sizeof what, "attention tok %u pos0 %u heads %u/%u hd %u", n_tok, pos0, n_head, n_head_kv,
                     hd);
    if (n_swa)
        l += snprintf(what + l, sizeof what - (size_t)l, " swa %u", n_swa);
    if (n_cells)
        l += snprintf(what + l, sizeof what - (size_t)l, " ring %u", n_cells);
    if (sinks)
        snprintf(what + l, sizeof what - (size_t)l, " sinks");
    vktest_check(what, res[0], res[1], nq, NMSE_MAT);
    free(res[0]);
    free(res[1]);
    free(q);
    free(kv);
    free(sk);
}

static void run_attention(fixture *f, uint32_t n_tok, uint32_t pos0, uint32_t n_head, uint32_t n_head_kv,
                          uint32_t hd)
{
    run_attention_p(f, n_tok, pos0, n_head, n_head_kv, hd, 0, 0, false);
}

static void test_attention(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    run_attention(f, 1, 0, 4, 4, 64);
    run_attention(f, 1, 37, 4, 2, 64);     /* GQA, mat-vec step */
    run_attention(f, 7, 0, 6, 2, 48);      /* prompt batch with the causal mask */
    run_attention(f, 5, 130, 8, 1, 128);   /* more than two chunks of positions */
    run_attention(f, 3, 10, 2, 2, 18);     /* head_dim not a multiple of anything */
    run_attention(f, 2, 3, 2, 1, 256);
    vktest_no_validation_errors(f);
}

/* Sliding windows (gemma3's 16-position window, gpt-oss's 128) over a
 * linear cache and over a ring the sequence wraps around, one token and
 * batches (64 or more queries: the CPU's tiled form). */
static void test_attention_swa(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    run_attention_p(f, 1, 40, 4, 1, 128, 16, 0, false);     /* linear: the window starts at 25 */
    run_attention_p(f, 1, 10, 4, 1, 128, 16, 0, false);     /* the window not yet full */
    run_attention_p(f, 7, 10, 6, 2, 48, 8, 0, false);       /* a batch that crosses the window's start */
    run_attention_p(f, 1, 100, 4, 2, 64, 16, 32, false);    /* ring: rows 21..31 then 0..4 */
    run_attention_p(f, 9, 90, 4, 2, 64, 16, 48, false);     /* ring: queries before and after the wrap */
    run_attention_p(f, 5, 300, 8, 2, 64, 128, 256, false);  /* gpt-oss's window: several chunks, wrapped */
    run_attention_p(f, 70, 200, 4, 1, 64, 32, 128, false);  /* 70 queries, ring wraps inside the batch */
    run_attention_p(f, 3, 2, 2, 2, 18, 1, 4, false);        /* a window of one position */
    /* a ring too small for the batch's window: refused by both */
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        void *c = b->ctx;
        backend_buf *q = vktest_upload(b, NULL, 4 * 64), *out = vktest_upload(b, NULL, 4 * 64);
        backend_buf *kc = b->ops->buf_new(c, BACKEND_F16, 16 * 64), *vc = b->ops->buf_new(c, BACKEND_F16, 16 * 64);
        const backend_attn_params ap = {.scale = 0.125f, .n_swa = 16, .n_cells = 16};
        assert_int_equal(b->ops->attention(c, (backend_view){q, 0}, (backend_view){kc, 0}, (backend_view){vc, 0},
                                           (backend_view){out, 0}, 4, 40, 1, 1, 64, &ap),
                         BACKEND_EARG);
        backend_buf *all[] = {q, out, kc, vc};
        for (size_t i = 0; i < 4; i++)
            b->ops->buf_free(c, all[i]);
    }
    vktest_no_validation_errors(f);
}

/* Attention sinks (gpt-oss): one token and batches, GQA, more heads than
 * one dispatch carries sinks for, with a window and a ring. */
static void test_attention_sinks(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    run_attention_p(f, 1, 0, 4, 2, 64, 0, 0, true);         /* one key: the sink weighs a lot */
    run_attention_p(f, 1, 37, 4, 2, 64, 0, 0, true);
    run_attention_p(f, 7, 0, 6, 2, 48, 0, 0, true);
    run_attention_p(f, 3, 20, 20, 4, 64, 0, 0, true);       /* 20 heads: two dispatches */
    run_attention_p(f, 2, 50, 64, 8, 64, 0, 0, true);       /* gpt-oss-120b's 64 heads */
    run_attention_p(f, 5, 300, 8, 2, 64, 128, 256, true);   /* gpt-oss's sliding layers */
    run_attention_p(f, 66, 150, 8, 2, 64, 128, 256, true);  /* a batch: the CPU's tiled form */
    vktest_no_validation_errors(f);
}

/* A whole layer's worth of ops queued before one read: barriers must order
 * them. Float weights, so that the CPU's 8-bit activations do not compound
 * over the chain (each quantized product is checked on its own above). */
static void test_chain(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    const uint32_t E = 256, n = 3;
    void *m1, *m2;
    backend_weight w1 = vktest_make_weight(&rng_state, GGTYPE_F32, E, E, 1, &m1),
                   w2 = vktest_make_weight(&rng_state, GGTYPE_F16, E, E, 1, &m2);
    float *ones = vktest_rnd_vec(&rng_state, E, 1.0f, 1.0f);
    backend_weight wn = {.type = GGTYPE_F32, .ne0 = E, .ne1 = 1, .row_bytes = (uint64_t)E * 4, .data = ones,
                         .name = "norm"};
    vktest_prepare(f, &w1);
    vktest_prepare(f, &w2);
    vktest_prepare(f, &wn);
    float *x = vktest_rnd_vec(&rng_state, (size_t)n * E, -1.0f, 1.0f);
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        void *c = b->ctx;
        backend_buf *bx = vktest_upload(b, x, (size_t)n * E), *t1 = vktest_upload(b, NULL, (size_t)n * E),
                    *t2 = vktest_upload(b, NULL, (size_t)n * E);
        for (int it = 0; it < 4; it++) {
            assert_int_equal(
                b->ops->rms_norm_mul(c, (backend_view){bx, 0}, &wn, (backend_view){t1, 0}, n, E, 1e-6f), 0);
            assert_int_equal(b->ops->matmul(c, &w1, (backend_view){t1, 0}, n, (backend_view){t2, 0}), 0);
            assert_int_equal(b->ops->silu_mul(c, (backend_view){t2, 0}, (backend_view){t1, 0}, (backend_view){t2, 0},
                                              n, E), 0);
            assert_int_equal(b->ops->matmul(c, &w2, (backend_view){t2, 0}, n, (backend_view){t1, 0}), 0);
            assert_int_equal(b->ops->add(c, (backend_view){bx, 0}, (backend_view){t1, 0}, (backend_view){bx, 0},
                                         (size_t)n * E), 0);
        }
        res[k] = vktest_download(b, bx, 0, (size_t)n * E);
        b->ops->buf_free(c, bx);
        b->ops->buf_free(c, t1);
        b->ops->buf_free(c, t2);
    }
    vktest_check("chain of 20 ops", res[0], res[1], (size_t)n * E, NMSE_MAT);
    backend_vulkan_stats st = backend_vulkan_get_stats(f->vk);
    assert_true(st.dispatches > 0);
    vktest_release(f, &w1);
    vktest_release(f, &w2);
    vktest_release(f, &wn);
    free(ones);
    free(res[0]);
    free(res[1]);
    free(x);
    free(m1);
    free(m2);
    vktest_no_validation_errors(f);
}

static void test_errors(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    backend *b = f->vk;
    backend_buf *x = vktest_upload(b, NULL, 16);
    /* out-of-range views are refused, not run */
    float *ones = vktest_rnd_vec(&rng_state, 8, 1.0f, 1.0f);
    backend_weight wn = {.type = GGTYPE_F32, .ne0 = 8, .ne1 = 1, .row_bytes = 32, .data = ones, .name = "norm"};
    vktest_prepare(f, &wn);
    assert_int_equal(b->ops->rms_norm_mul(b->ctx, (backend_view){x, 8}, &wn, (backend_view){x, 0}, 2, 8, 1e-5f),
                     BACKEND_EARG);
    vktest_release(f, &wn);
    free(ones);
    assert_int_equal(b->ops->add(b->ctx, (backend_view){x, 0}, (backend_view){x, 0}, (backend_view){x, 1}, 16),
                     BACKEND_EARG);
    /* an unsupported weight type: not prepared, not run */
    static uint8_t blob[256];
    backend_weight w = {.type = GGTYPE_IQ2_XXS, .ne0 = 256, .ne1 = 1, .row_bytes = 66, .data = blob};
    assert_false(vk_type_supported(GGTYPE_IQ2_XXS));
    assert_true(vk_type_supported(GGTYPE_Q4_K));
    assert_int_equal(b->ops->weight_prepare(b->ctx, &w), BACKEND_EUNSUPPORTED);
    assert_null(w.priv);
    assert_int_equal(b->ops->matmul(b->ctx, &w, (backend_view){x, 0}, 1, (backend_view){x, 0}), BACKEND_EUNSUPPORTED);
    b->ops->buf_free(b->ctx, x);
    vktest_no_validation_errors(f);
}

/* Ops use the copy weight_prepare made and nothing else: a weight that was
 * not prepared, or was prepared by another Vulkan backend, is refused with
 * BACKEND_EARG and a message naming it (no upload on first use). */
static void test_unprepared_weights(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    backend *b = f->vk;
    void *c = b->ctx;
    enum { C = 64, R = 8 };
    float *wv = vktest_rnd_vec(&rng_state, (size_t)C * R, -1.0f, 1.0f);
    backend_weight mat = {.type = GGTYPE_F32, .ne0 = C, .ne1 = R, .row_bytes = C * 4, .data = wv, .name = "blk.0.mat"};
    backend_weight vec = {.type = GGTYPE_F32, .ne0 = C, .ne1 = 1, .row_bytes = C * 4, .data = wv, .name = "blk.0.vec"};
    backend_buf *x = vktest_upload(b, wv, (size_t)C * R), *y = vktest_upload(b, NULL, (size_t)C * R);
    backend_view vx = {x, 0}, vy = {y, 0};
    int32_t ids[2] = {1, 0};
    backend_vulkan_stats st0 = backend_vulkan_get_stats(b);
    assert_int_equal(b->ops->matmul(c, &mat, vx, 1, vy), BACKEND_EARG);
    assert_non_null(strstr(backend_vulkan_last_message(b), "blk.0.mat is not prepared"));
    assert_int_equal(b->ops->matmul(c, &mat, vx, 3, vy), BACKEND_EARG);
    assert_int_equal(b->ops->get_rows(c, &mat, ids, 2, vy), BACKEND_EARG);
    assert_int_equal(b->ops->add_w(c, vx, &vec, vy, R, C), BACKEND_EARG);
    assert_non_null(strstr(backend_vulkan_last_message(b), "blk.0.vec is not prepared"));
    assert_int_equal(b->ops->rms_norm_mul(c, vx, &vec, vy, R, C, 1e-5f), BACKEND_EARG);
    backend_vulkan_stats st1 = backend_vulkan_get_stats(b);
    assert_int_equal(st1.dispatches, st0.dispatches);
    assert_int_equal(st1.bytes_uploaded, st0.bytes_uploaded);   /* nothing uploaded behind our back */

    /* prepared by another Vulkan backend: refused here, usable there */
    char err[256];
    backend *other = backend_vulkan_new(-1, err, sizeof err);
    assert_non_null(other);
    assert_int_equal(other->ops->weight_prepare(other->ctx, &mat), 0);
    assert_int_equal(b->ops->matmul(c, &mat, vx, 1, vy), BACKEND_EARG);
    assert_int_equal(b->ops->weight_prepare(c, &mat), BACKEND_EARG);
    backend_buf *ox = vktest_upload(other, wv, C), *oy = vktest_upload(other, NULL, R);
    assert_int_equal(other->ops->matmul(other->ctx, &mat, (backend_view){ox, 0}, 1, (backend_view){oy, 0}), 0);
    other->ops->buf_free(other->ctx, ox);
    other->ops->buf_free(other->ctx, oy);
    other->ops->weight_release(other->ctx, &mat);
    assert_null(mat.priv);
    backend_free(other);

    /* prepared here: runs; preparing twice is a no-op; released: refused again */
    vktest_prepare(f, &mat);
    void *h = mat.priv;
    assert_int_equal(b->ops->weight_prepare(c, &mat), 0);
    assert_ptr_equal(mat.priv, h);
    assert_int_equal(b->ops->matmul(c, &mat, vx, 1, vy), 0);
    vktest_release(f, &mat);
    assert_int_equal(b->ops->matmul(c, &mat, vx, 1, vy), BACKEND_EARG);
    b->ops->buf_free(c, x);
    b->ops->buf_free(c, y);
    free(wv);
    vktest_no_validation_errors(f);
}

/* ---- the row-per-invocation mat-vec (CPU devices), its wide loads, the
 * other layouts on the same device, the dispatch profile ---- */

/* matmul of a rows x cols weight of `type` with x at element offset `xoff`,
 * against the CPU backend, on Vulkan backend `vk`. */
static void rows_matmul(fixture *f, backend *vk, uint32_t type, uint32_t cols, uint32_t rows, uint32_t n_tok,
                        uint32_t xoff)
{
    void *mem;
    backend_weight w = vktest_make_weight(&rng_state, type, cols, rows, 1, &mem);
    assert_int_equal(vk->ops->weight_prepare(vk->ctx, &w), 0);
    float *x = vktest_rnd_vec(&rng_state, (size_t)n_tok * cols + xoff, -1.0f, 1.0f);
    float *res[2];
    backend *bs[2] = {f->cpu, vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        backend_buf *bx = vktest_upload(b, x, (size_t)n_tok * cols + xoff);
        backend_buf *by = vktest_upload(b, NULL, (size_t)n_tok * rows + 1);
        assert_int_equal(b->ops->matmul(b->ctx, &w, (backend_view){bx, xoff}, n_tok, (backend_view){by, 1}), 0);
        res[k] = vktest_download(b, by, 1, (size_t)n_tok * rows);
        b->ops->buf_free(b->ctx, bx);
        b->ops->buf_free(b->ctx, by);
    }
    char what[112];
    snprintf(what, sizeof what, "matmul %s %ux%u x %u tok, x at %u", ggtype_name(type), rows, cols, n_tok, xoff);
    vktest_check(what, res[0], res[1], (size_t)n_tok * rows, NMSE_MAT);
    vk->ops->weight_release(vk->ctx, &w);
    free(res[0]);
    free(res[1]);
    free(x);
    free(mem);
}

/* Shapes that take mul_mat_rows' wide paths (Q4_0 rows of whole 16-byte
 * chunks, Q6_K superblocks at every 2-byte phase) and its fallbacks (x not
 * vec4-aligned), rows and tokens past a whole workgroup. */
static void rows_shapes(fixture *f, backend *vk)
{
    rows_matmul(f, vk, GGTYPE_Q4_0, 512, 67, 1, 0);
    rows_matmul(f, vk, GGTYPE_Q4_0, 2048, 21, 1, 0);
    rows_matmul(f, vk, GGTYPE_Q4_0, 512, 19, 11, 0);
    rows_matmul(f, vk, GGTYPE_Q4_0, 512, 13, 1, 1);
    rows_matmul(f, vk, GGTYPE_Q4_0, 352, 9, 2, 0);     /* 11 blocks: rows not 16-byte aligned */
    rows_matmul(f, vk, GGTYPE_Q6_K, 2048, 37, 1, 0);
    rows_matmul(f, vk, GGTYPE_Q6_K, 768, 29, 1, 0);    /* 630-byte rows: every phase */
    rows_matmul(f, vk, GGTYPE_Q6_K, 768, 13, 9, 0);
    rows_matmul(f, vk, GGTYPE_Q6_K, 512, 9, 1, 3);
    rows_matmul(f, vk, GGTYPE_F16, 70, 9, 3, 1);
}

static void test_matmul_rows(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    rows_shapes(f, f->vk);
    if (f->all_types)
        for (size_t i = 0; i < N_WTYPES; i++)
            rows_matmul(f, f->vk, WTYPES[i], 512, 23, 1, 0);
    vktest_no_validation_errors(f);
}

/* The same device with the other mat-vec layout: GGSCOPE_VK_ROWS=0 (the
 * rows-per-workgroup shader with subgroup reductions, what GPUs run). */
static void test_matmul_layouts(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    if (!f->all_types)
        skip();   /* once is enough */
    static const char *const env[][2] = {{"GGSCOPE_VK_ROWS", "0"}};
    for (size_t i = 0; i < 1; i++) {
        char err[256];
        setenv(env[i][0], env[i][1], 1);
        backend *vk = backend_vulkan_new(-1, err, sizeof err);
        unsetenv(env[i][0]);
        assert_non_null(vk);
        rows_shapes(f, vk);
        int n = backend_vulkan_validation_errors(vk);
        if (n)
            print_error("%s=%s: %d validation errors; last: %s\n", env[i][0], env[i][1], n,
                        backend_vulkan_last_message(vk));
        assert_int_equal(n, 0);
        backend_free(vk);
    }
}

/* --profile's table: one row per (variant, shape), every dispatch counted. */
static void test_profile(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    backend *b = f->vk;
    if (!backend_vulkan_set_profile(b, true)) {
        print_message("SKIP: no timestamps on this device\n");
        skip();
    }
    backend_vulkan_reset_stats(b);
    void *mem;
    backend_weight w = vktest_make_weight(&rng_state, GGTYPE_Q4_0, 256, 10, 1, &mem);
    vktest_prepare(f, &w);
    backend_buf *bx = vktest_upload(b, NULL, 256), *by = vktest_upload(b, NULL, 10);
    for (int i = 0; i < 3; i++)
        assert_int_equal(b->ops->matmul(b->ctx, &w, (backend_view){bx, 0}, 1, (backend_view){by, 0}), 0);
    float *y = vktest_download(b, by, 0, 10);
    backend_vulkan_prof_row rows[8];
    int n = backend_vulkan_profile(b, rows, 8);
    assert_true(backend_vulkan_set_profile(b, false));
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].count, 3);
    assert_int_equal(rows[0].ne0, 256);
    assert_int_equal(rows[0].ne1, 10);
    assert_non_null(strstr(rows[0].shader, "mul_mat"));
    assert_true(rows[0].ms >= 0.0);
    assert_int_equal(backend_vulkan_get_stats(b).dispatches, 3);
    /* off: nothing more is counted */
    assert_int_equal(b->ops->matmul(b->ctx, &w, (backend_view){bx, 0}, 1, (backend_view){by, 0}), 0);
    free(vktest_download(b, by, 0, 10));
    assert_int_equal(backend_vulkan_profile(b, rows, 8), 1);
    assert_int_equal(rows[0].count, 3);
    free(y);
    b->ops->buf_free(b->ctx, bx);
    b->ops->buf_free(b->ctx, by);
    vktest_release(f, &w);
    free(mem);
    vktest_no_validation_errors(f);
}

#define T(fn) cmocka_unit_test(fn)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_matmul), T(test_matmul_windows), T(test_get_rows), T(test_elementwise),
        T(test_rope), T(test_rope_ext), T(test_store_f16), T(test_attention), T(test_attention_swa),
        T(test_attention_sinks), T(test_chain), T(test_errors), T(test_unprepared_weights),
        T(test_matmul_rows), T(test_matmul_layouts), T(test_profile),
    };
    int rc = cmocka_run_group_tests_name("vulkan ops (subgroup reductions)", tests, setup_sg, vktest_teardown);
    rc |= cmocka_run_group_tests_name("vulkan ops (shared-memory reductions)", tests, setup_nosg, vktest_teardown);
    return rc;
}

#else /* no Vulkan in this build */

static void test_no_vulkan(void **state)
{
    (void)state;
    print_message("SKIP: this build has no Vulkan backend (Vulkan or glslc not found)\n");
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_vulkan)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
