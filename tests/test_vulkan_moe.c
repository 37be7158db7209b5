/* The Vulkan backend's mixture-of-experts ops and MXFP4 weights against the
 * CPU backend, op by op, in test_vulkan_ops.c's style (NMSE
 * sum((a-b)^2)/sum(a^2) below 1e-7 for the router's weights and the
 * element-wise ops, 5e-4 for products): the router (softmax and top-k-then-
 * softmax gating, with and without renormalisation, 8 experts / 2 used and
 * 32 / 4 and 128 / 8, random scores and tie-heavy ones: the same experts in
 * the same order; with more than 16 experts, equal scores may be ordered
 * differently than the CPU's std::sort leaves them, so there the scores of
 * the chosen must agree), matmul_id for every weight type with kernels
 * (MXFP4 included) for one token and for batches where several tokens pick
 * the same expert, both activation layouts, experts split into windows;
 * add_id, swiglu_oai, moe_combine; MXFP4 matmul and get_rows; the backend's
 * capability; argument checks. Then whole qwen3moe models written by
 * testmodel, and a gpt-oss one with MXFP4 experts: logits against the CPU's
 * (relative RMS, as test_vulkan_model).
 * The products run with both reduction variants. Skips visibly without a
 * Vulkan device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "backend.h"
#include "codec.h"
#include "ggtype.h"
#include "gguf.h"
#include "model.h"
#include "session.h"
#include "testmodel.h"

#ifdef GGSCOPE_HAVE_VULKAN
#include "backend_vulkan.h"
#include "vktest.h"

#define NMSE_ELEM 1e-7
#define NMSE_MAT 5e-4

/* The shared fixture (tests/support/vktest.h); its random inputs and
 * weights draw from this file's seed. */
typedef vktest_fixture fixture;
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static int setup_sg(void **state) { return vktest_setup(state, true); }
static int setup_nosg(void **state) { return vktest_setup(state, false); }

/* Every weight type with Vulkan kernels. */
static const uint32_t WTYPES[] = {GGTYPE_F32, GGTYPE_F16, GGTYPE_Q4_0, GGTYPE_Q4_1, GGTYPE_Q5_0,
                                  GGTYPE_Q5_1, GGTYPE_Q8_0, GGTYPE_Q2_K, GGTYPE_Q3_K, GGTYPE_Q4_K,
                                  GGTYPE_Q5_K, GGTYPE_Q6_K, GGTYPE_MXFP4};
#define N_WTYPES (sizeof WTYPES / sizeof WTYPES[0])

/* ---- the router ---- */

typedef enum { SC_RANDOM, SC_TIES } scores;

static void run_route(fixture *f, uint32_t n_tok, uint32_t n_exp, uint32_t n_used, backend_moe_gating g, bool norm,
                      scores kind)
{
    const size_t nl = (size_t)n_tok * n_exp, nw = (size_t)n_tok * n_used;
    float *lg = vktest_rnd_vec(&rng_state, nl, -3.0f, 3.0f);
    if (kind == SC_TIES) /* few distinct values: many equal scores, across the top k's edge too */
        for (size_t i = 0; i < nl; i++)
            lg[i] = (float)(vktest_rnd_u32(&rng_state) % 4) * 0.5f - 1.0f;
    int32_t *ids[2];
    float *w[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        backend_buf *bl = vktest_upload(b, NULL, nl + 3), *bw = vktest_upload(b, NULL, nw + 1);
        assert_int_equal(b->ops->buf_write(b->ctx, bl, 3, lg, nl), 0);
        ids[k] = malloc(nw * sizeof *ids[k]);
        assert_non_null(ids[k]);
        assert_int_equal(b->ops->moe_route(b->ctx, (backend_view){bl, 3}, n_tok, n_exp, n_used, g, norm, ids[k],
                                           (backend_view){bw, 1}),
                         0);
        w[k] = vktest_download(b, bw, 1, nw);
        b->ops->buf_free(b->ctx, bl);
        b->ops->buf_free(b->ctx, bw);
    }
    char what[96];
    snprintf(what, sizeof what, "moe_route %u/%u %s%s %u tok%s", n_exp, n_used,
             g == BACKEND_MOE_SOFTMAX ? "softmax" : "topk-softmax", norm ? " norm" : "", n_tok,
             kind == SC_TIES ? " ties" : "");
    for (size_t i = 0; i < nw; i++) {
        const size_t t = i / n_used;
        assert_true(ids[1][i] >= 0 && (uint32_t)ids[1][i] < n_exp);
        if (ids[0][i] == ids[1][i])
            continue;
        /* beyond 16 experts std::sort's order of equal scores is its own: the same score suffices */
        if (n_exp > 16 && lg[t * n_exp + (size_t)ids[0][i]] == lg[t * n_exp + (size_t)ids[1][i]])
            continue;
        print_error("%s: token %zu slot %zu: cpu expert %d, vulkan %d\n", what, t, i % n_used, ids[0][i], ids[1][i]);
        fail();
    }
    vktest_check(what, w[0], w[1], nw, NMSE_ELEM);
    for (int k = 0; k < 2; k++) {
        free(ids[k]);
        free(w[k]);
    }
    free(lg);
}

static void test_route(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    const backend_moe_gating SM = BACKEND_MOE_SOFTMAX, TK = BACKEND_MOE_TOPK_SOFTMAX;
    for (int ties = 0; ties < 2; ties++) {
        scores sc = ties ? SC_TIES : SC_RANDOM;
        run_route(f, 1, 8, 2, SM, true, sc);     /* qwen3moe-like, one token */
        run_route(f, 13, 8, 2, SM, true, sc);    /* a batch */
        run_route(f, 5, 8, 2, SM, false, sc);    /* Mixtral: no renormalisation */
        run_route(f, 1, 32, 4, TK, false, sc);   /* gpt-oss */
        run_route(f, 9, 32, 4, TK, false, sc);
        run_route(f, 7, 32, 4, SM, true, sc);
        run_route(f, 3, 128, 8, SM, true, sc);   /* more experts than the workgroup */
        run_route(f, 2, 8, 8, SM, true, sc);     /* every expert chosen */
    }
    vktest_no_validation_errors(f);
}

/* ---- expert products ---- */

/* ids for n_tok tokens: n_used distinct experts each; with `crowd`, tokens
 * mostly share a few experts (a prompt batch's common case). */
static void make_ids(int32_t *ids, uint32_t n_tok, uint32_t n_used, uint32_t n_exp, bool crowd)
{
    for (uint32_t t = 0; t < n_tok; t++)
        for (uint32_t s = 0; s < n_used; s++) {
            int32_t e;
            bool dup;
            do {
                uint32_t span = crowd && n_exp > n_used + 1 ? n_used + 1 : n_exp;
                e = (int32_t)(vktest_rnd_u32(&rng_state) % span);
                dup = false;
                for (uint32_t q = 0; q < s; q++)
                    dup |= ids[t * n_used + q] == e;
            } while (dup);
            ids[t * n_used + s] = e;
        }
}

static void run_matmul_id(fixture *f, uint32_t type, uint32_t cols, uint32_t rows, uint32_t n_exp, uint32_t n_used,
                          uint32_t n_tok, uint32_t x_per_tok, bool crowd)
{
    void *mem;
    backend_weight w = vktest_make_weight(&rng_state, type, cols, rows, n_exp, &mem);
    vktest_prepare(f, &w);
    const size_t nx = (size_t)n_tok * x_per_tok * cols, ny = (size_t)n_tok * n_used * rows;
    float *x = vktest_rnd_vec(&rng_state, nx, -1.0f, 1.0f);
    int32_t *ids = malloc((size_t)n_tok * n_used * sizeof *ids);
    assert_non_null(ids);
    make_ids(ids, n_tok, n_used, n_exp, crowd);
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        backend_buf *bx = vktest_upload(b, x, nx), *by = vktest_upload(b, NULL, ny + 3);
        assert_int_equal(b->ops->matmul_id(b->ctx, &w, (backend_view){bx, 0}, x_per_tok, ids, n_tok, n_used,
                                           (backend_view){by, 3}),
                         0);
        res[k] = vktest_download(b, by, 3, ny);
        b->ops->buf_free(b->ctx, bx);
        b->ops->buf_free(b->ctx, by);
    }
    char what[112];
    snprintf(what, sizeof what, "matmul_id %s %ux%u x%u, %u/tok, %u tok%s%s", ggtype_name(type), rows, cols, n_exp,
             n_used, n_tok, x_per_tok > 1 ? " x/slot" : "", crowd ? " shared" : "");
    vktest_check(what, res[0], res[1], ny, NMSE_MAT);
    vktest_release(f, &w);
    free(res[0]);
    free(res[1]);
    free(ids);
    free(x);
    free(mem);
}

static void test_matmul_id(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    for (size_t i = 0; i < N_WTYPES; i++) {
        uint32_t t = WTYPES[i];
        if (!f->all_types && t != GGTYPE_F16 && t != GGTYPE_Q8_0 && t != GGTYPE_Q4_K && t != GGTYPE_Q6_K &&
            t != GGTYPE_MXFP4)
            continue;
        uint32_t c = ggtype_get(t)->blck_size == 256 ? 256 : 96;
        run_matmul_id(f, t, c, 37, 8, 2, 1, 1, false);    /* one token: mat-vec per expert */
        run_matmul_id(f, t, c, 19, 8, 2, 9, 1, true);     /* a batch sharing experts: mat-mat */
        run_matmul_id(f, t, c, 21, 8, 2, 6, 2, false);    /* a row per slot (the down projection) */
    }
    run_matmul_id(f, GGTYPE_MXFP4, 2880 / 10, 33, 32, 4, 1, 1, false);   /* gpt-oss-like: 32 experts, 4 used */
    run_matmul_id(f, GGTYPE_MXFP4, 288, 17, 32, 4, 11, 4, true);
    run_matmul_id(f, GGTYPE_Q4_K, 512, 24, 32, 4, 20, 1, true);
    run_matmul_id(f, GGTYPE_F16, 70, 9, 4, 2, 3, 1, false);             /* rows of 70: a ragged last sub-block */
    vktest_no_validation_errors(f);
}

/* 3-D weights larger than one binding: experts bound in windows, or one
 * expert split over several. */
static void test_matmul_id_windows(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    backend_vulkan_set_max_range(f->vk, 4096);
    run_matmul_id(f, GGTYPE_Q4_0, 256, 40, 8, 2, 1, 1, false);   /* 144-byte rows, 5760 bytes an expert */
    run_matmul_id(f, GGTYPE_Q4_0, 256, 40, 8, 2, 7, 2, true);
    run_matmul_id(f, GGTYPE_Q8_0, 64, 20, 8, 2, 5, 1, true);     /* 1360 bytes an expert, 10880 in all */
    run_matmul_id(f, GGTYPE_MXFP4, 160, 30, 6, 3, 4, 1, true);   /* 85-byte rows */
    backend_vulkan_set_max_range(f->vk, 0);
    vktest_no_validation_errors(f);
}

/* ---- MXFP4 through the dense ops ---- */

static void test_mxfp4_dense(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    assert_true(vk_type_supported(GGTYPE_MXFP4));
    static const uint32_t shapes[][3] = {{96, 67, 1}, {320, 33, 1}, {96, 19, 11}, {2880 / 10, 8, 3}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        uint32_t cols = shapes[si][0], rows = shapes[si][1], n_tok = shapes[si][2];
        void *mem;
        backend_weight w = vktest_make_weight(&rng_state, GGTYPE_MXFP4, cols, rows, 1, &mem);
        vktest_prepare(f, &w);
        float *x = vktest_rnd_vec(&rng_state, (size_t)n_tok * cols, -1.0f, 1.0f);
        int32_t gids[5] = {0, (int32_t)rows - 1, 3, 3, 1};
        float *res[2], *rows_got[2];
        backend *bs[2] = {f->cpu, f->vk};
        for (int k = 0; k < 2; k++) {
            backend *b = bs[k];
            backend_buf *bx = vktest_upload(b, x, (size_t)n_tok * cols),
                        *by = vktest_upload(b, NULL, (size_t)n_tok * rows);
            backend_buf *bg = vktest_upload(b, NULL, 5 * (size_t)cols + 1);
            assert_int_equal(b->ops->matmul(b->ctx, &w, (backend_view){bx, 0}, n_tok, (backend_view){by, 0}), 0);
            assert_int_equal(b->ops->get_rows(b->ctx, &w, gids, 5, (backend_view){bg, 1}), 0);
            res[k] = vktest_download(b, by, 0, (size_t)n_tok * rows);
            rows_got[k] = vktest_download(b, bg, 1, 5 * (size_t)cols);
            b->ops->buf_free(b->ctx, bx);
            b->ops->buf_free(b->ctx, by);
            b->ops->buf_free(b->ctx, bg);
        }
        char what[80];
        snprintf(what, sizeof what, "matmul mxfp4 %ux%u x %u tok", rows, cols, n_tok);
        vktest_check(what, res[0], res[1], (size_t)n_tok * rows, NMSE_MAT);
        snprintf(what, sizeof what, "get_rows mxfp4 %ux%u", rows, cols);
        vktest_check(what, rows_got[0], rows_got[1], 5 * (size_t)cols, NMSE_ELEM);
        for (int k = 0; k < 2; k++) {
            free(res[k]);
            free(rows_got[k]);
        }
        vktest_release(f, &w);
        free(x);
        free(mem);
    }
    vktest_no_validation_errors(f);
}

/* ---- element-wise ---- */

static void run_add_id(fixture *f, uint32_t n_rows, uint32_t n_cols, uint32_t n_exp, bool in_place)
{
    const size_t n = (size_t)n_rows * n_cols;
    float *src = vktest_rnd_vec(&rng_state, n, -3.0f, 3.0f),
          *bias = vktest_rnd_vec(&rng_state, (size_t)n_exp * n_cols, -1.0f, 1.0f);
    backend_weight bw = {.type = GGTYPE_F32, .ne0 = n_cols, .ne1 = n_exp, .row_bytes = (uint64_t)n_cols * 4,
                         .data = bias, .name = "exps.bias"};
    vktest_prepare(f, &bw);
    int32_t *ids = malloc(n_rows * sizeof *ids);
    assert_non_null(ids);
    for (uint32_t r = 0; r < n_rows; r++)
        ids[r] = (int32_t)(vktest_rnd_u32(&rng_state) % n_exp);
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        backend_buf *bsrc = vktest_upload(b, src, n), *bd = vktest_upload(b, NULL, n + 2);
        backend_view vs = {bsrc, 0}, vd = in_place ? vs : (backend_view){bd, 2};
        assert_int_equal(b->ops->add_id(b->ctx, vs, &bw, ids, vd, n_rows, n_cols), 0);
        res[k] = vktest_download(b, vd.buf, vd.off, n);
        b->ops->buf_free(b->ctx, bsrc);
        b->ops->buf_free(b->ctx, bd);
    }
    char what[64];
    snprintf(what, sizeof what, "add_id %ux%u of %u%s", n_rows, n_cols, n_exp, in_place ? " in place" : "");
    vktest_check(what, res[0], res[1], n, NMSE_ELEM);
    vktest_release(f, &bw);
    free(res[0]);
    free(res[1]);
    free(ids);
    free(src);
    free(bias);
}

static void run_swiglu_oai(fixture *f, uint32_t n_rows, uint32_t n_cols, bool in_place)
{
    const size_t n = (size_t)n_rows * n_cols;
    /* past the limit on both sides */
    float *g = vktest_rnd_vec(&rng_state, n, -10.0f, 10.0f), *u = vktest_rnd_vec(&rng_state, n, -10.0f, 10.0f);
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        backend_buf *bg = vktest_upload(b, g, n), *bu = vktest_upload(b, u, n), *bd = vktest_upload(b, NULL, n + 1);
        backend_view vg = {bg, 0}, vu = {bu, 0}, vd = in_place ? vg : (backend_view){bd, 1};
        assert_int_equal(b->ops->swiglu_oai(b->ctx, vg, vu, vd, n_rows, n_cols, 1.702f, 7.0f), 0);
        res[k] = vktest_download(b, vd.buf, vd.off, n);
        b->ops->buf_free(b->ctx, bg);
        b->ops->buf_free(b->ctx, bu);
        b->ops->buf_free(b->ctx, bd);
    }
    char what[64];
    snprintf(what, sizeof what, "swiglu_oai %ux%u%s", n_rows, n_cols, in_place ? " in place" : "");
    vktest_check(what, res[0], res[1], n, NMSE_ELEM);
    free(res[0]);
    free(res[1]);
    free(g);
    free(u);
}

static void run_combine(fixture *f, uint32_t n_tok, uint32_t n_used, uint32_t n_cols)
{
    const size_t ny = (size_t)n_tok * n_used * n_cols, nw = (size_t)n_tok * n_used, nd = (size_t)n_tok * n_cols;
    float *y = vktest_rnd_vec(&rng_state, ny, -3.0f, 3.0f), *w = vktest_rnd_vec(&rng_state, nw, 0.0f, 1.0f);
    float *res[2];
    backend *bs[2] = {f->cpu, f->vk};
    for (int k = 0; k < 2; k++) {
        backend *b = bs[k];
        backend_buf *by = vktest_upload(b, y, ny), *bw = vktest_upload(b, w, nw), *bd = vktest_upload(b, NULL, nd + 4);
        assert_int_equal(b->ops->moe_combine(b->ctx, (backend_view){by, 0}, (backend_view){bw, 0}, n_tok, n_used,
                                             n_cols, (backend_view){bd, 4}),
                         0);
        res[k] = vktest_download(b, bd, 4, nd);
        b->ops->buf_free(b->ctx, by);
        b->ops->buf_free(b->ctx, bw);
        b->ops->buf_free(b->ctx, bd);
    }
    char what[64];
    snprintf(what, sizeof what, "moe_combine %u tok x %u slots x %u", n_tok, n_used, n_cols);
    vktest_check(what, res[0], res[1], nd, NMSE_ELEM);
    free(res[0]);
    free(res[1]);
    free(y);
    free(w);
}

static void test_elementwise(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    run_add_id(f, 2, 64, 8, false);
    run_add_id(f, 12, 70, 32, true);
    run_add_id(f, 5, 2880 / 4, 32, false);
    run_swiglu_oai(f, 1, 64, false);
    run_swiglu_oai(f, 8, 257, true);
    run_swiglu_oai(f, 3, 4099, false);
    run_combine(f, 1, 2, 256);
    run_combine(f, 5, 4, 70);
    run_combine(f, 3, 8, 1000);
    vktest_no_validation_errors(f);
}

/* The capability and the ops that come with it; refusals. */
static void test_caps_and_errors(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    backend *b = f->vk;
    const backend_ops *o = b->ops;
    assert_true(o->caps & BACKEND_CAP_MOE);
    assert_non_null(o->moe_route);
    assert_non_null(o->matmul_id);
    assert_non_null(o->add_id);
    assert_non_null(o->swiglu_oai);
    assert_non_null(o->moe_combine);

    backend_buf *x = vktest_upload(b, NULL, 4096), *y = vktest_upload(b, NULL, 4096);
    int32_t ids[8] = {0, 1, 2, 3, 0, 1, 2, 3};
    /* the router: bad shapes; more experts than the shader takes */
    assert_int_equal(o->moe_route(b->ctx, (backend_view){x, 0}, 1, 8, 9, BACKEND_MOE_SOFTMAX, true, ids,
                                  (backend_view){y, 0}),
                     BACKEND_EARG);
    assert_int_equal(o->moe_route(b->ctx, (backend_view){x, 0}, 1, 2048, 2, BACKEND_MOE_SOFTMAX, true, ids,
                                  (backend_view){y, 0}),
                     BACKEND_EUNSUPPORTED);
    /* expert products: an expert out of range, an unprepared weight, overlapping x and y */
    void *mem;
    backend_weight w = vktest_make_weight(&rng_state, GGTYPE_Q8_0, 64, 8, 4, &mem);
    assert_int_equal(o->matmul_id(b->ctx, &w, (backend_view){x, 0}, 1, ids, 2, 2, (backend_view){y, 0}),
                     BACKEND_EARG);   /* not prepared */
    vktest_prepare(f, &w);
    int32_t bad[2] = {0, 4};
    assert_int_equal(o->matmul_id(b->ctx, &w, (backend_view){x, 0}, 1, bad, 1, 2, (backend_view){y, 0}),
                     BACKEND_EARG);
    assert_int_equal(o->matmul_id(b->ctx, &w, (backend_view){x, 0}, 1, ids, 2, 2, (backend_view){x, 32}),
                     BACKEND_EARG);
    assert_int_equal(o->matmul_id(b->ctx, &w, (backend_view){x, 0}, 3, ids, 2, 2, (backend_view){y, 0}),
                     BACKEND_EARG);
    assert_int_equal(o->matmul_id(b->ctx, &w, (backend_view){x, 0}, 2, ids, 2, 2, (backend_view){y, 0}), 0);
    vktest_release(f, &w);
    free(mem);
    /* combine: dst over y */
    assert_int_equal(o->moe_combine(b->ctx, (backend_view){x, 0}, (backend_view){y, 0}, 2, 2, 16,
                                    (backend_view){x, 8}),
                     BACKEND_EARG);
    /* add_id: an expert past the bias rows */
    float bias[2 * 16] = {0};
    backend_weight bw = {.type = GGTYPE_F32, .ne0 = 16, .ne1 = 2, .row_bytes = 64, .data = bias, .name = "b"};
    vktest_prepare(f, &bw);
    assert_int_equal(o->add_id(b->ctx, (backend_view){x, 0}, &bw, ids + 2, (backend_view){x, 0}, 2, 16),
                     BACKEND_EARG);
    vktest_release(f, &bw);
    o->buf_free(b->ctx, x);
    o->buf_free(b->ctx, y);
    vktest_no_validation_errors(f);
}

/* ---- whole models ---- */

static void check_moe_model(fixture *f, const testmodel_params *p, const char *label, double limit)
{
    const char *path = tu_tmp_path("vkmoe");
    char msg[256];
    if (testmodel_write(p, path, msg, sizeof msg) != 0)
        print_error("testmodel_write: %s\n", msg);
    assert_int_equal(testmodel_write(p, path, msg, sizeof msg), 0);
    gguf_error ge;
    gguf_file *gf = gguf_open(path, &ge);
    assert_non_null(gf);
    model *m = model_load(gf, NULL, msg, sizeof msg);
    if (!m)
        print_error("model_load: %s\n", msg);
    assert_non_null(m);
    assert_true(m->hp.n_expert > 0);
    /* the runner's checks: the backend runs this family, and its weight types */
    if (!vk_model_supported(m, msg, sizeof msg))
        print_error("vk_model_supported: %s\n", msg);
    assert_true(vk_model_supported(m, msg, sizeof msg));
    assert_int_equal(model_backend_check(m, f->vk, msg, sizeof msg), 0);
    int32_t ids[24];
    for (uint32_t i = 0; i < 24; i++)
        ids[i] = (int32_t)((i * 37 + 1) % m->hp.n_vocab);
    const double e = vktest_compare_logits(f, m, ids, 24, 64);
    print_message("  %-34s relative RMS %.3e (limit %.0e)\n", label, e, limit);
    assert_true(e < limit);
    model_free(m);
    gguf_close(gf);
    remove(path);
    vktest_no_validation_errors(f);
}

static void test_qwen3moe_model(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    static const uint32_t types[] = {GGTYPE_F16, GGTYPE_Q4_K};   /* (Q8_0: op by op above) */
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        testmodel_params p = testmodel_arch_params("qwen3moe");   /* 8 experts, 2 used */
        p.wtype = types[t];
        p.seed = 11 + t;
        char label[64];
        snprintf(label, sizeof label, "qwen3moe %s", ggtype_name(types[t]));
        check_moe_model(f, &p, label, types[t] == GGTYPE_F16 ? 2e-3 : 3e-2);
    }
    testmodel_params p = testmodel_arch_params("qwen3moe");
    p.q4_K_M = true;   /* Q4_K / Q6_K experts, F32 router */
    p.n_expert = 16;
    p.n_expert_used = 4;
    p.seed = 21;
    check_moe_model(f, &p, "qwen3moe q4_K_M 16/4", 3e-2);
}

/* gpt-oss: the router's bias, top k then softmax, expert biases (add_id),
 * swiglu_oai, MXFP4 experts, with the sinks, sliding window and YaRN of
 * its attention. */
static void test_gpt_oss_model(void **state)
{
    fixture *f = *state;
    VKTEST_NEED_DEVICE(f);
    testmodel_params p = testmodel_arch_params("gpt-oss");   /* 32 experts, 4 used */
    p.wtype = GGTYPE_Q8_0;                                    /* experts MXFP4 */
    p.seed = 31;
    check_moe_model(f, &p, "gpt-oss Q8_0, MXFP4 experts", 3e-2);
}

#define T(fn) cmocka_unit_test(fn)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_route), T(test_matmul_id), T(test_matmul_id_windows), T(test_mxfp4_dense), T(test_elementwise),
        T(test_caps_and_errors), T(test_qwen3moe_model), T(test_gpt_oss_model),
    };
    /* the other reduction: the products (the router and the element-wise
     * shaders have one variant; the models run once) */
    const struct CMUnitTest tests_nosg[] = {
        T(test_matmul_id), T(test_matmul_id_windows), T(test_mxfp4_dense),
    };
    int rc = cmocka_run_group_tests_name("vulkan moe (subgroup reductions)", tests, setup_sg, vktest_teardown);
    rc |= cmocka_run_group_tests_name("vulkan moe (shared-memory reductions)", tests_nosg, setup_nosg, vktest_teardown);
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
