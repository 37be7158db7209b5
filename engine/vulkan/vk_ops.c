/* The forward-pass ops on the device: each binds its operands, picks the
 * pipeline of its shader variant and records one dispatch (several for
 * weights split into windows) into the current command buffer. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ggtype.h"
#include "rope.h"
#include "vk_internal.h"
#include "vk_push.h"

/* The variants of weight type `type`, or NULL when it has no kernels. */
static const vk_type_shaders *type_shaders(uint32_t type)
{
    if (type >= vk_type_shader_count || !vk_type_shader_table[type].ok)
        return NULL;
    return &vk_type_shader_table[type];
}

bool vk_type_supported(uint32_t type)
{
    return type_shaders(type) != NULL;
}

static bool use_subgroups(const vk_ctx *c)
{
    return c->info.caps.subgroup_arith;
}

/* Pipeline of a reduction shader: variant `sg` when subgroups are used, else `plain`. */
static int pipe_reduce(vk_ctx *c, vk_shader_id plain, vk_shader_id sg, vk_spec s)
{
    return vk_pipeline_get(c, use_subgroups(c) ? sg : plain, s);
}

static size_t esize(const backend_buf *b)
{
    return b->dtype == BACKEND_F16 ? 2 : 4;
}

/* Bind `n` elements of a view; *off receives the element offset inside the
 * binding for the push constants. */
static int bind_view(vk_ctx *c, backend_view v, size_t n, bool write, vk_binding *out, uint32_t *off)
{
    if (!v.buf || v.off > v.buf->n || n > v.buf->n - v.off)
        return BACKEND_EARG;
    size_t es = esize(v.buf);
    VkDeviceSize lo = (VkDeviceSize)v.off * es, hi = lo + (VkDeviceSize)n * es;
    if (n == 0)
        hi = lo + 1;
    if (v.buf->dtype == BACKEND_F16) {   /* words: widen to whole 32-bit words */
        lo &= ~(VkDeviceSize)3;
        hi = (hi + 3) & ~(VkDeviceSize)3;
    }
    VkDeviceSize adj;
    int rc = vk_bind_range(c, &v.buf->b, lo, hi, write, out, &adj);
    if (rc != 0)
        return rc;
    VkDeviceSize eo = ((VkDeviceSize)v.off * es - out->offset) / es;
    (void)adj;
    if (eo > UINT32_MAX / 2)
        return BACKEND_EARG;
    *off = (uint32_t)eo;
    return 0;
}

int vk_bind_view(vk_ctx *c, backend_view v, size_t n, bool write, vk_binding *out, uint32_t *off)
{
    return bind_view(c, v, n, write, out, off);
}

static int bind_arena(vk_ctx *c, int64_t off, VkDeviceSize n, vk_binding *out, uint32_t *word_off)
{
    VkDeviceSize adj;
    int rc = vk_bind_range(c, &c->arena, (VkDeviceSize)off, (VkDeviceSize)off + n, false, out, &adj);
    *word_off = (uint32_t)(adj / 4);
    return rc;
}

static uint64_t groups_for(uint64_t n, uint32_t wg)
{
    return (n + wg - 1) / wg;
}

/* Visit the windows of a weight: rows [row0, row0 + rows) bound at once. */
typedef struct {
    vk_binding bind;
    uint32_t w_off, row0, rows;
} wwin;

static int weight_window(vk_ctx *c, const vk_weight *w, uint64_t row0, wwin *out)
{
    uint64_t total = w->ne1 * w->row_bytes;
    uint64_t rows;
    if (w->b.size <= c->wmax_range)
        rows = w->ne1 - row0;
    else {
        uint64_t room = c->wmax_range - c->align - 16;
        rows = room / w->row_bytes;
        if (rows == 0) {
            snprintf(c->last_msg, sizeof c->last_msg, "a weight row of %llu bytes exceeds one binding",
                     (unsigned long long)w->row_bytes);
            return BACKEND_EUNSUPPORTED;
        }
        if (rows > w->ne1 - row0)
            rows = w->ne1 - row0;
    }
    VkDeviceSize lo = row0 * w->row_bytes, hi = lo + rows * w->row_bytes + 4;
    if (hi > w->b.size)
        hi = w->b.size;
    (void)total;
    VkDeviceSize adj;
    int rc = vk_bind_window(c, &w->b, lo, hi, false, c->wmax_range, &out->bind, &adj);
    if (rc != 0)
        return rc;
    out->w_off = (uint32_t)adj;
    out->row0 = (uint32_t)row0;
    out->rows = (uint32_t)rows;
    return 0;
}

static bool fits_u32(uint64_t v)
{
    return v < UINT32_MAX / 2;
}

/* The common opening of a weight op: its type's shaders and its uploaded
 * weight. */
static int weight_op_begin(vk_ctx *c, const backend_weight *w, const vk_type_shaders **ts,
                           const vk_weight **vw)
{
    *ts = type_shaders(w->type);
    if (!*ts)
        return BACKEND_EUNSUPPORTED;
    return vk_weight_get(c, w, vw);
}

int vk_op_get_rows(void *ctx, const backend_weight *w, const int32_t *ids, uint32_t n, backend_view dst)
{
    vk_ctx *c = ctx;
    const vk_type_shaders *ts;
    const vk_weight *vw;
    int rc = weight_op_begin(c, w, &ts, &vw);
    if (rc != 0)
        return rc;
    if (n == 0)
        return 0;
    if (!fits_u32((uint64_t)n * w->ne0))
        return BACKEND_EARG;
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] < 0 || (uint64_t)ids[i] >= w->ne1)
            return BACKEND_EARG;
    int pi = vk_pipeline_get(c, ts->get_rows, VK_SPEC_PLAIN);
    int64_t ao = vk_arena_alloc(c, (VkDeviceSize)n * 4);
    if (ao < 0)
        return BACKEND_EARG;
    memcpy((uint8_t *)c->arena.map + ao, ids, (size_t)n * 4);
    vk_binding b[3];
    vk_push_get_rows p = {.ne0 = (uint32_t)w->ne0, .row_bytes = (uint32_t)vw->row_bytes, .n_ids = n};
    if ((rc = bind_arena(c, ao, (VkDeviceSize)n * 4, &b[1], &p.ids_off)) != 0 ||
        (rc = bind_view(c, dst, (size_t)n * w->ne0, true, &b[2], &p.dst_off)) != 0)
        return rc;
    for (uint64_t row0 = 0; row0 < w->ne1;) {
        wwin win;
        if ((rc = weight_window(c, vw, row0, &win)) != 0)
            return rc;
        b[0] = win.bind;
        p.n_rows = win.rows;
        p.w_off = win.w_off;
        p.row0 = win.row0;
        if ((rc = vk_dispatch(c, pi, b, 3, &p, sizeof p, n, 1)) != 0)
            return rc;
        row0 += win.rows;
    }
    return 0;
}

int vk_op_matmul(void *ctx, const backend_weight *w, backend_view x, uint32_t n_tok, backend_view y)
{
    vk_ctx *c = ctx;
    const vk_type_shaders *ts;
    const vk_weight *vw;
    int rc = weight_op_begin(c, w, &ts, &vw);
    if (rc != 0)
        return rc;
    if (n_tok == 0)
        return 0;
    if (!fits_u32((uint64_t)n_tok * w->ne0) || !fits_u32((uint64_t)n_tok * w->ne1))
        return BACKEND_EARG;
    if (x.buf == y.buf)
        return BACKEND_EARG;
    /* A row per invocation (CPU devices): a subgroup per workgroup, one
     * token per workgroup (z) also for a batch (on lavapipe its 8-token
     * variant ran 3.6x slower per token than the mat-vec: spilled
     * registers); else NR rows per workgroup. */
    const bool rows = c->rows_layout;
    const vk_spec sp = rows ? VK_SPEC_ROWS : (n_tok == 1 ? VK_SPEC_MATVEC : VK_SPEC_MATMAT);
    uint32_t spec[2];   /* tokens (NCOLS) and weight rows (NR) per workgroup (per invocation: rows) */
    vk_spec_values(c, sp, spec);
    const uint32_t ncols = spec[0], nr = rows ? spec[1] * vk_spec_wg(c, sp) : spec[1];
    int pi = rows ? vk_pipeline_get(c, ts->mul_mat_rows, sp) : pipe_reduce(c, ts->mul_mat, ts->mul_mat_sg, sp);
    vk_binding b[3];
    vk_push_mul_mat p = {.ne0 = (uint32_t)w->ne0, .row_bytes = (uint32_t)vw->row_bytes,
                         .x_stride = (uint32_t)w->ne0, .y_stride = (uint32_t)w->ne1, .n_tok = n_tok};
    if ((rc = bind_view(c, x, (size_t)n_tok * w->ne0, false, &b[1], &p.x_off)) != 0 ||
        (rc = bind_view(c, y, (size_t)n_tok * w->ne1, true, &b[2], &p.y_off)) != 0)
        return rc;
    for (uint64_t row0 = 0; row0 < w->ne1;) {
        wwin win;
        if ((rc = weight_window(c, vw, row0, &win)) != 0)
            return rc;
        b[0] = win.bind;
        p.n_rows = win.rows;
        p.w_off = win.w_off;
        p.row0 = win.row0;
        c->prof.shape[0] = (uint32_t)w->ne0;
        c->prof.shape[1] = (uint32_t)w->ne1;
        rc = vk_dispatch(c, pi, b, 3, &p, sizeof p, (win.rows + nr - 1) / nr, (n_tok + ncols - 1) / ncols);
        c->prof.shape[0] = c->prof.shape[1] = 0;
        if (rc != 0)
            return rc;
        c->stats.weight_bytes_read += (uint64_t)win.rows * vw->row_bytes;
        row0 += win.rows;
    }
    return 0;
}

/* Record rms_norm times the norm weight `w`. */
static int record_norm(vk_ctx *c, backend_view src, backend_view dst, uint32_t n_rows, uint32_t n_cols, float eps,
                       const vk_weight *w)
{
    size_t n = (size_t)n_rows * n_cols;
    if (!fits_u32(n))
        return BACKEND_EARG;
    vk_binding b[3];
    vk_push_rms_norm p = {.n_rows = n_rows, .n_cols = n_cols, .eps = eps};
    int rc;
    if ((rc = bind_view(c, src, n, false, &b[0], &p.src_off)) != 0 ||
        (rc = bind_view(c, dst, n, true, &b[1], &p.dst_off)) != 0)
        return rc;
    if (n == 0)
        return 0;
    VkDeviceSize adj;
    if ((rc = vk_bind_range(c, &w->b, 0, (VkDeviceSize)n_cols * 4, false, &b[2], &adj)) != 0)
        return rc;
    p.w_off = (uint32_t)(adj / 4);
    int pi = pipe_reduce(c, VK_SH_RMS_NORM_MUL, VK_SH_RMS_NORM_MUL_SG, VK_SPEC_PLAIN);
    return vk_dispatch(c, pi, b, 3, &p, sizeof p, n_rows, 1);
}

/* The F32 vector weight of n_cols elements of a row op. */
static int vec_weight(vk_ctx *c, const backend_weight *w, uint32_t n_cols, const vk_weight **out)
{
    if (w->type != GGTYPE_F32)
        return BACKEND_EUNSUPPORTED;
    if (w->ne0 * w->ne1 != n_cols)
        return BACKEND_EARG;
    return vk_weight_get(c, w, out);
}

int vk_op_rms_norm_mul(void *ctx, backend_view src, const backend_weight *w, backend_view dst, uint32_t n_rows,
                       uint32_t n_cols, float eps)
{
    vk_ctx *c = ctx;
    const vk_weight *vw;
    int rc = vec_weight(c, w, n_cols, &vw);
    return rc ? rc : record_norm(c, src, dst, n_rows, n_cols, eps, vw);
}

/* dst = a OP b over n elements (b of n_cols elements when it is a row). */
static int binary(vk_ctx *c, vk_shader_id op, backend_view a, const vk_binding *bw, uint32_t bw_off,
                  backend_view bv, backend_view dst, size_t n, uint32_t n_cols)
{
    if (!fits_u32(n))
        return BACKEND_EARG;
    vk_binding b[3];
    vk_push_binary p = {.n = (uint32_t)n, .n_cols = n_cols};
    int rc;
    if ((rc = bind_view(c, a, n, false, &b[0], &p.a_off)) != 0 ||
        (rc = bind_view(c, dst, n, true, &b[2], &p.dst_off)) != 0)
        return rc;
    if (bw) {
        b[1] = *bw;
        p.b_off = bw_off;
    } else if ((rc = bind_view(c, bv, n, false, &b[1], &p.b_off)) != 0)
        return rc;
    return vk_dispatch(c, vk_pipeline_get(c, op, VK_SPEC_PLAIN), b, 3, &p, sizeof p, groups_for(n, vk_wg_size(c)), 1);
}

static int row_op(vk_ctx *c, vk_shader_id op, backend_view src, const backend_weight *w, backend_view dst,
                  uint32_t n_rows, uint32_t n_cols)
{
    const vk_weight *vw;
    int rc = vec_weight(c, w, n_cols, &vw);
    if (rc != 0)
        return rc;
    vk_binding bw;
    VkDeviceSize adj;
    if ((rc = vk_bind_range(c, &vw->b, 0, (VkDeviceSize)n_cols * 4, false, &bw, &adj)) != 0)
        return rc;
    backend_view none = {0};
    return binary(c, op, src, &bw, (uint32_t)(adj / 4), none, dst, (size_t)n_rows * n_cols, n_cols);
}

int vk_op_add_w(void *ctx, backend_view src, const backend_weight *w, backend_view dst, uint32_t n_rows,
                uint32_t n_cols)
{
    return row_op(ctx, VK_SH_BINARY_ADD_ROW, src, w, dst, n_rows, n_cols);
}

int vk_op_add(void *ctx, backend_view a, backend_view b, backend_view dst, size_t n)
{
    return binary(ctx, VK_SH_BINARY_ADD, a, NULL, 0, b, dst, n, 1);
}

int vk_op_silu_mul(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                   uint32_t n_cols)
{
    return binary(ctx, VK_SH_BINARY_SILU_MUL, gate, NULL, 0, up, dst, (size_t)n_rows * n_cols, 1);
}

int vk_op_gelu_mul(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                   uint32_t n_cols)
{
    return binary(ctx, VK_SH_BINARY_GELU_MUL, gate, NULL, 0, up, dst, (size_t)n_rows * n_cols, 1);
}

int vk_op_scale(void *ctx, backend_view src, backend_view dst, size_t n, float s)
{
    uint32_t bits;
    memcpy(&bits, &s, 4);
    return binary(ctx, VK_SH_BINARY_SCALE, src, NULL, 0, src, dst, n, bits);
}

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

int vk_op_rope(void *ctx, backend_view x, uint32_t n_tok, uint32_t n_head, uint32_t head_dim,
               const int32_t *pos, const backend_rope_params *rp)
{
    vk_ctx *c = ctx;
    if (!rp || (n_tok && !pos) || rp->n_rot == 0 || rp->n_rot % 2 || rp->n_rot > head_dim)
        return BACKEND_EARG;
    if (rp->mode != BACKEND_ROPE_NORMAL && rp->mode != BACKEND_ROPE_NEOX)
        return BACKEND_EUNSUPPORTED;
    size_t n = (size_t)n_tok * n_head * head_dim;
    if (!fits_u32(n) || n_tok == 0)
        return n_tok == 0 ? 0 : BACKEND_EARG;
    uint32_t half = rp->n_rot / 2;
    VkDeviceSize tbytes = (VkDeviceSize)n_tok * half * 8;

    /* The cos/sin table: q and k of every layer share it. */
    uint64_t key = fnv(0xCBF29CE484222325ull, pos, (size_t)n_tok * 4);
    key = fnv(key, &n_tok, 4);
    key = fnv(key, &rp->n_rot, 4);
    key = fnv(key, &rp->freq_base, 4);
    key = fnv(key, &rp->freq_scale, 4);
    key = fnv(key, &rp->ext_factor, 4);
    key = fnv(key, &rp->attn_factor, 4);
    key = fnv(key, &rp->beta_fast, 4);
    key = fnv(key, &rp->beta_slow, 4);
    key = fnv(key, &rp->n_ctx_orig, 4);
    if (rp->freq_factors)
        key = fnv(key, rp->freq_factors, (size_t)half * 4);
    int64_t ao;
    if (c->rope_valid && c->rope_key == key) {
        ao = (int64_t)c->rope_off;
    } else {
        ao = vk_arena_alloc(c, tbytes);
        if (ao < 0)
            return BACKEND_EARG;
        /* Angles exactly as ggml (and the CPU backend) computes them, in
         * float: theta_i = p * base^(-2i/n_rot) by repeated multiplication,
         * divided by the frequency factor, then rope_yarn (times freq_scale;
         * the YaRN ramp and mscale when asked). */
        float *t = (float *)((uint8_t *)c->arena.map + ao);
        const float theta_scale = powf(rp->freq_base, -2.0f / (float)rp->n_rot);
        const float mscale = rp->attn_factor == 0.0f ? 1.0f : rp->attn_factor;
        float corr[2] = {0.0f, 0.0f};
        if (rp->ext_factor != 0.0f)
            rope_yarn_corr_dims((int)rp->n_rot, (int)rp->n_ctx_orig, rp->freq_base, rp->beta_fast, rp->beta_slow,
                                corr);
        for (uint32_t tk = 0; tk < n_tok; tk++) {
            float theta = (float)pos[tk];
            for (uint32_t i = 0; i < half; i++) {
                float ff = rp->freq_factors ? rp->freq_factors[i] : 1.0f;
                float *cs = t + 2 * ((size_t)tk * half + i);
                rope_yarn(theta / ff, rp->freq_scale, corr, 2 * i, rp->ext_factor, mscale, &cs[0], &cs[1]);
                theta *= theta_scale;
            }
        }
        c->rope_valid = true;
        c->rope_key = key;
        c->rope_off = (VkDeviceSize)ao;
    }
    vk_binding b[2];
    vk_push_rope p = {.n_tok = n_tok, .n_head = n_head, .head_dim = head_dim, .n_rot = rp->n_rot};
    int rc;
    uint32_t wo;
    if ((rc = bind_view(c, x, n, true, &b[0], &p.x_off)) != 0 || (rc = bind_arena(c, ao, tbytes, &b[1], &wo)) != 0)
        return rc;
    p.cs_off = wo / 2;
    if (wo % 2)
        return BACKEND_EARG;
    vk_spec sp = rp->mode == BACKEND_ROPE_NEOX ? VK_SPEC_NEOX : VK_SPEC_PLAIN;
    return vk_dispatch(c, vk_pipeline_get(c, VK_SH_ROPE, sp), b, 2, &p, sizeof p,
                       groups_for((uint64_t)n_tok * n_head * half, vk_wg_size(c)), 1);
}

int vk_op_store_f16(void *ctx, backend_view src, uint32_t n_rows, uint32_t n_cols, backend_view dst,
                    uint32_t dst_row)
{
    vk_ctx *c = ctx;
    size_t n = (size_t)n_rows * n_cols;
    if (!fits_u32(n) || !dst.buf || dst.buf->dtype != BACKEND_F16 || !src.buf || src.buf->dtype != BACKEND_F32)
        return BACKEND_EARG;
    if (n == 0)
        return 0;
    backend_view d = {dst.buf, dst.off + (size_t)dst_row * n_cols};
    vk_binding b[2];
    vk_push_store_f16 p = {.n = (uint32_t)n};
    int rc;
    if ((rc = bind_view(c, src, n, false, &b[0], &p.src_off)) != 0 ||
        (rc = bind_view(c, d, n, true, &b[1], &p.dst_off)) != 0)
        return rc;
    uint64_t words = ((uint64_t)p.dst_off + n - 1) / 2 - p.dst_off / 2 + 1;
    return vk_dispatch(c, vk_pipeline_get(c, VK_SH_STORE_F16, VK_SPEC_PLAIN), b, 2, &p, sizeof p,
                       groups_for(words, vk_wg_size(c)), 1);
}

/* Attention on the device: one dispatch over every (token, head), or with
 * sinks one per VK_ATTN_SINKS heads, their sinks in the push constants (a
 * fifth binding would exceed the four storage buffers every device has). */
int vk_op_attention(void *ctx, backend_view q, backend_view k, backend_view v, backend_view out,
                    uint32_t n_tok, uint32_t pos0, uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim,
                    const backend_attn_params *ap)
{
    vk_ctx *c = ctx;
    if (n_head == 0 || n_head_kv == 0 || n_head % n_head_kv || head_dim == 0 || !ap ||
        (uint64_t)pos0 + n_tok > UINT32_MAX)
        return BACKEND_EARG;
    if (head_dim > VK_ATTN_MAX_HEAD_DIM)
        return BACKEND_EUNSUPPORTED;
    if (!k.buf || !v.buf || k.buf->dtype != BACKEND_F16 || v.buf->dtype != BACKEND_F16 || q.buf == out.buf)
        return BACKEND_EARG;
    /* A ring must still hold every position the first query sees (as the CPU backend checks). */
    const uint64_t lo = ap->n_swa && pos0 >= ap->n_swa ? pos0 + 1 - ap->n_swa : 0;
    if (ap->n_cells && n_tok && (uint64_t)pos0 + n_tok - 1 - lo >= ap->n_cells)
        return BACKEND_EARG;
    size_t nq = (size_t)n_tok * n_head * head_dim;
    size_t nkv = (ap->n_cells ? (size_t)ap->n_cells : (size_t)pos0 + n_tok) * n_head_kv * head_dim;
    if (!fits_u32(nq) || !fits_u32(nkv))
        return BACKEND_EARG;
    if (n_tok == 0)
        return 0;
    vk_binding b[4];
    vk_push_attention p = {.n_tok = n_tok, .pos0 = pos0, .n_head = n_head, .n_head_kv = n_head_kv,
                           .head_dim = head_dim, .scale = ap->scale, .n_swa = ap->n_swa, .n_cells = ap->n_cells,
                           .nh = n_head, .has_sinks = ap->sinks != NULL};
    int rc;
    if ((rc = bind_view(c, q, nq, false, &b[0], &p.q_off)) != 0 ||
        (rc = bind_view(c, k, nkv, false, &b[1], &p.k_off)) != 0 ||
        (rc = bind_view(c, v, nkv, false, &b[2], &p.v_off)) != 0 ||
        (rc = bind_view(c, out, nq, true, &b[3], &p.o_off)) != 0)
        return rc;
    const int pi = pipe_reduce(c, VK_SH_ATTENTION, VK_SH_ATTENTION_SG, VK_SPEC_PLAIN);
    if (!ap->sinks)
        return vk_dispatch(c, pi, b, 4, &p, sizeof p, (uint64_t)n_tok * n_head, 1);
    for (uint32_t h0 = 0; h0 < n_head; h0 += VK_ATTN_SINKS) {
        p.h0 = h0;
        p.nh = n_head - h0 < VK_ATTN_SINKS ? n_head - h0 : VK_ATTN_SINKS;
        memcpy(p.sinks, ap->sinks + h0, (size_t)p.nh * sizeof(float));
        if ((rc = vk_dispatch(c, pi, b, 4, &p, sizeof p, (uint64_t)n_tok * p.nh, 1)) != 0)
            return rc;
    }
    return 0;
}
