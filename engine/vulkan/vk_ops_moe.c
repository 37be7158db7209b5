/* The mixture-of-experts ops on the device (backend.h: moe_route,
 * matmul_id, add_id, swiglu_oai, moe_combine), checked against the CPU
 * backend op by op (tests/test_vulkan_moe.c):
 *  - moe_route: moe_route.comp, one workgroup per token; the chosen ids are
 *    host memory in the interface, so the op submits and waits (one
 *    submission per mixture-of-experts layer) and reads them from the arena;
 *  - matmul_id: the (token, slot) pairs grouped by expert on the host (the
 *    ids are host memory), a table of (x row, y row) per pair in the arena,
 *    and one mul_mat_id.comp dispatch per chosen expert (per window of it
 *    when the 3-D weight is larger than a binding): only the chosen
 *    experts' rows are read, each once per batch;
 *  - add_id, swiglu_oai, moe_combine: moe_elt.comp, one invocation per
 *    output element. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "vk_internal.h"

/* C mirrors of the push-constant blocks of this file's shaders. */
typedef struct {   /* moe_route.comp */
    uint32_t l_off, w_off, ids_off, n_tok, n_expert, n_used, topk_softmax, norm;
} vk_push_moe_route;

typedef struct {   /* mul_mat_id.comp */
    uint32_t ne0, n_rows, row_bytes, w_off, x_off, x_stride, y_off, y_stride, row0, n_pairs, pairs_off;
} vk_push_mul_mat_id;

typedef struct {   /* moe_elt.comp */
    uint32_t a_off, b_off, dst_off, n, n_cols, ids_off, n_used;
    float alpha, limit;
} vk_push_moe_elt;

_Static_assert(sizeof(vk_push_moe_route) <= 128, "push constants: moe_route");
_Static_assert(sizeof(vk_push_mul_mat_id) <= 128, "push constants: mul_mat_id");
_Static_assert(sizeof(vk_push_moe_elt) <= 128, "push constants: moe_elt");

static bool fits_u32(uint64_t v)
{
    return v < UINT32_MAX / 2;
}

static uint64_t groups_for(uint64_t n, uint32_t wg)
{
    return (n + wg - 1) / wg;
}

/* Whether n elements at a and m at b share memory. */
static bool overlap(backend_view a, size_t n, backend_view b, size_t m)
{
    return a.buf == b.buf && n && m && a.off < b.off + m && b.off < a.off + n;
}

static bool is_f32(backend_view v)
{
    return v.buf && v.buf->dtype == BACKEND_F32;
}

/* n 32-bit words of the arena (a copy of src unless NULL) bound for this
 * op: *ao their byte offset in the arena, *word_off in the binding. */
static int arena_words(vk_ctx *c, const void *src, size_t n, bool write, int64_t *ao, vk_binding *out,
                       uint32_t *word_off)
{
    const VkDeviceSize bytes = (VkDeviceSize)(n ? n : 1) * 4;
    const int64_t o = vk_arena_alloc(c, bytes);
    if (o < 0)
        return BACKEND_EARG;
    if (src)
        memcpy((uint8_t *)c->arena.map + o, src, n * 4);
    VkDeviceSize adj;
    int rc = vk_bind_range(c, &c->arena, (VkDeviceSize)o, (VkDeviceSize)o + bytes, write, out, &adj);
    *ao = o;
    *word_off = (uint32_t)(adj / 4);
    return rc;
}

/* ---- the router ---- */

int vk_op_moe_route(void *ctx, backend_view logits, uint32_t n_tok, uint32_t n_expert, uint32_t n_used,
                    backend_moe_gating gating, bool norm, int32_t *ids, backend_view weights)
{
    vk_ctx *c = ctx;
    if (!n_expert || !n_used || n_used > n_expert || (n_tok && !ids) || !is_f32(logits) || !is_f32(weights) ||
        (gating != BACKEND_MOE_SOFTMAX && gating != BACKEND_MOE_TOPK_SOFTMAX))
        return BACKEND_EARG;
    if (n_expert > VK_MOE_MAX_EXPERT || n_used > VK_MOE_MAX_USED) {
        snprintf(c->last_msg, sizeof c->last_msg, "the router takes at most %d experts, %d per token (%u, %u)",
                 VK_MOE_MAX_EXPERT, VK_MOE_MAX_USED, n_expert, n_used);
        return BACKEND_EUNSUPPORTED;
    }
    if (c->lost)
        return BACKEND_EDEVICE;
    const size_t nl = (size_t)n_tok * n_expert, nw = (size_t)n_tok * n_used;
    if (!fits_u32(nl))
        return BACKEND_EARG;
    if (n_tok == 0)
        return 0;
    vk_binding b[3];
    vk_push_moe_route p = {.n_tok = n_tok, .n_expert = n_expert, .n_used = n_used,
                           .topk_softmax = gating == BACKEND_MOE_TOPK_SOFTMAX, .norm = norm};
    int64_t ao;
    int rc;
    if ((rc = arena_words(c, NULL, nw, true, &ao, &b[2], &p.ids_off)) != 0 ||
        (rc = vk_bind_view(c, logits, nl, false, &b[0], &p.l_off)) != 0 ||
        (rc = vk_bind_view(c, weights, nw, true, &b[1], &p.w_off)) != 0)
        return rc;
    if ((rc = vk_dispatch(c, vk_pipeline_get(c, VK_SH_MOE_ROUTE, VK_SPEC_PLAIN), b, 3, &p, sizeof p, n_tok, 1)) != 0)
        return rc;
    /* the ids are for the host: the shader's writes made visible to it, then submit and wait */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
    if ((rc = vk_flush(c)) != 0)
        return rc;
    memcpy(ids, (const uint8_t *)c->arena.map + ao, nw * sizeof *ids);
    return 0;
}

/* ---- expert products ---- */

/* Bind rows [row0, row0 + *rows) of expert e of w: all its rows left when
 * the weight fits a binding, else as many as a window holds. *w_off: the
 * byte offset of row row0 in the binding. */
static int expert_window(vk_ctx *c, const vk_weight *w, uint64_t e, uint64_t row0, vk_binding *bind,
                         uint32_t *w_off, uint32_t *rows)
{
    uint64_t n = w->ne1 - row0;
    if (w->b.size > c->wmax_range) {
        const uint64_t fit = c->wmax_range > c->align + 16 ? (c->wmax_range - c->align - 16) / w->row_bytes : 0;
        if (fit == 0) {
            snprintf(c->last_msg, sizeof c->last_msg, "a weight row of %llu bytes exceeds one binding",
                     (unsigned long long)w->row_bytes);
            return BACKEND_EUNSUPPORTED;
        }
        if (n > fit)
            n = fit;
    }
    const VkDeviceSize lo = (e * w->ne1 + row0) * w->row_bytes;
    VkDeviceSize hi = lo + n * w->row_bytes + 4;
    if (hi > w->b.size)
        hi = w->b.size;
    VkDeviceSize adj;
    int rc = vk_bind_window(c, &w->b, lo, hi, false, c->wmax_range, bind, &adj);
    if (rc != 0)
        return rc;
    if (adj + n * w->row_bytes + 64 > UINT32_MAX) /* the shader's byte addresses are 32-bit */
        return BACKEND_EUNSUPPORTED;
    *w_off = (uint32_t)adj;
    *rows = (uint32_t)n;
    return 0;
}

/* The pairs p = t * n_used + s grouped by expert, in token order, as
 * (x row, y row) words into tab; off[e] .. off[e + 1] are expert e's. */
static void group_pairs(const int32_t *ids, uint32_t n_pairs, uint32_t x_per_tok, uint32_t n_used,
                        uint64_t n_exp, uint32_t *off, uint32_t *fill, uint32_t *tab)
{
    for (uint32_t i = 0; i < n_pairs; i++)
        off[ids[i] + 1]++;
    for (uint64_t e = 0; e < n_exp; e++) {
        off[e + 1] += off[e];
        fill[e] = off[e];
    }
    for (uint32_t i = 0; i < n_pairs; i++) {
        const uint32_t k = fill[ids[i]]++;
        tab[2 * k] = x_per_tok == 1 ? i / n_used : i;
        tab[2 * k + 1] = i;
    }
}

/* One expert's pairs, window by window. */
static int expert_dispatch(vk_ctx *c, const vk_type_shaders *ts, const vk_weight *vw, uint64_t e, vk_binding *b,
                           vk_push_mul_mat_id *p)
{
    const vk_spec sp = p->n_pairs == 1 ? VK_SPEC_MATVEC : VK_SPEC_MATMAT;
    uint32_t spec[2];   /* pairs (NCOLS) and weight rows (NR) per workgroup */
    vk_spec_values(c, sp, spec);
    const uint32_t ncols = spec[0], nr = spec[1];
    const uint64_t gz = (p->n_pairs + ncols - 1) / ncols;
    if (gz > 65535)
        return BACKEND_EARG;
    const int pi = vk_pipeline_get(c, c->info.caps.subgroup_arith ? ts->mul_mat_id_sg : ts->mul_mat_id, sp);
    for (uint64_t row0 = 0; row0 < vw->ne1;) {
        uint32_t rows;
        int rc = expert_window(c, vw, e, row0, &b[0], &p->w_off, &rows);
        if (rc != 0)
            return rc;
        p->n_rows = rows;
        p->row0 = (uint32_t)row0;
        if ((rc = vk_dispatch(c, pi, b, 4, p, sizeof *p, (rows + nr - 1) / nr, (uint32_t)gz)) != 0)
            return rc;
        c->stats.weight_bytes_read += (uint64_t)rows * vw->row_bytes;
        row0 += rows;
    }
    return 0;
}

int vk_op_matmul_id(void *ctx, const backend_weight *w, backend_view x, uint32_t x_per_tok, const int32_t *ids,
                    uint32_t n_tok, uint32_t n_used, backend_view y)
{
    vk_ctx *c = ctx;
    if (w->type >= vk_type_shader_count || !vk_type_shader_table[w->type].ok)
        return BACKEND_EUNSUPPORTED;
    const vk_type_shaders *ts = &vk_type_shader_table[w->type];
    const vk_weight *vw;
    int rc = vk_weight_get(c, w, &vw);
    if (rc != 0)
        return rc;
    const uint64_t n_exp = w->ne2 > 1 ? w->ne2 : 1;
    const uint64_t n_pairs = (uint64_t)n_tok * n_used;
    if (!n_used || (x_per_tok != 1 && x_per_tok != n_used) || (n_tok && !ids) || !is_f32(x) || !is_f32(y) ||
        !fits_u32(2 * n_pairs) || !fits_u32((uint64_t)n_tok * x_per_tok * w->ne0) || !fits_u32(n_pairs * w->ne1))
        return BACKEND_EARG;
    for (uint64_t i = 0; i < n_pairs; i++)
        if (ids[i] < 0 || (uint64_t)ids[i] >= n_exp)
            return BACKEND_EARG;
    const size_t nx = (size_t)n_tok * x_per_tok * w->ne0, ny = (size_t)n_pairs * w->ne1;
    if (overlap(x, nx, y, ny))
        return BACKEND_EARG;
    if (n_tok == 0)
        return 0;
    uint32_t *off = calloc(n_exp + 1, sizeof *off), *fill = malloc(n_exp * sizeof *fill);
    uint32_t *tab = malloc(2 * n_pairs * sizeof *tab);
    if (!off || !fill || !tab) {
        rc = BACKEND_ENOMEM;
        goto out;
    }
    group_pairs(ids, (uint32_t)n_pairs, x_per_tok, n_used, n_exp, off, fill, tab);
    vk_binding b[4];
    vk_push_mul_mat_id p = {.ne0 = (uint32_t)w->ne0, .row_bytes = (uint32_t)vw->row_bytes,
                            .x_stride = (uint32_t)w->ne0, .y_stride = (uint32_t)w->ne1};
    int64_t ao;
    uint32_t tab_off;
    if ((rc = arena_words(c, tab, 2 * n_pairs, false, &ao, &b[3], &tab_off)) != 0 ||
        (rc = vk_bind_view(c, x, nx, false, &b[1], &p.x_off)) != 0 ||
        (rc = vk_bind_view(c, y, ny, true, &b[2], &p.y_off)) != 0)
        goto out;
    for (uint64_t e = 0; e < n_exp && rc == 0; e++) {
        p.n_pairs = off[e + 1] - off[e];
        p.pairs_off = tab_off + 2 * off[e];
        if (p.n_pairs)
            rc = expert_dispatch(c, ts, vw, e, b, &p);
    }
out:
    free(off);
    free(fill);
    free(tab);
    return rc;
}

/* ---- element-wise ---- */

static int elt_dispatch(vk_ctx *c, vk_shader_id op, const vk_binding *b, int nb, const vk_push_moe_elt *p)
{
    return vk_dispatch(c, vk_pipeline_get(c, op, VK_SPEC_PLAIN), b, nb, p, sizeof *p, groups_for(p->n, vk_wg_size(c)),
                       1);
}

int vk_op_add_id(void *ctx, backend_view src, const backend_weight *bw, const int32_t *ids, backend_view dst,
                 uint32_t n_rows, uint32_t n_cols)
{
    vk_ctx *c = ctx;
    if (!bw || bw->type != GGTYPE_F32 || bw->ne0 != n_cols || !bw->ne1 || (n_rows && !ids) || !is_f32(src) ||
        !is_f32(dst))
        return BACKEND_EARG;
    const vk_weight *vw;
    int rc = vk_weight_get(c, bw, &vw);
    if (rc != 0)
        return rc;
    const size_t n = (size_t)n_rows * n_cols;
    if (!fits_u32(n) || !fits_u32(bw->ne1 * n_cols))
        return BACKEND_EARG;
    for (uint32_t r = 0; r < n_rows; r++)
        if (ids[r] < 0 || (uint64_t)ids[r] >= bw->ne1)
            return BACKEND_EARG;
    if (n == 0)
        return 0;
    vk_binding b[4];
    vk_push_moe_elt p = {.n = (uint32_t)n, .n_cols = n_cols};
    int64_t ao;
    VkDeviceSize adj;
    if ((rc = arena_words(c, ids, n_rows, false, &ao, &b[3], &p.ids_off)) != 0 ||
        (rc = vk_bind_view(c, src, n, false, &b[0], &p.a_off)) != 0 ||
        (rc = vk_bind_view(c, dst, n, true, &b[2], &p.dst_off)) != 0 ||
        (rc = vk_bind_range(c, &vw->b, 0, (VkDeviceSize)bw->ne1 * n_cols * 4, false, &b[1], &adj)) != 0)
        return rc;
    p.b_off = (uint32_t)(adj / 4);
    return elt_dispatch(c, VK_SH_MOE_ADD_ID, b, 4, &p);
}

int vk_op_swiglu_oai(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                     uint32_t n_cols, float alpha, float limit)
{
    vk_ctx *c = ctx;
    const size_t n = (size_t)n_rows * n_cols;
    if (!fits_u32(n) || !is_f32(gate) || !is_f32(up) || !is_f32(dst))
        return BACKEND_EARG;
    if (c->lost)
        return BACKEND_EDEVICE;
    if (n == 0)
        return 0;
    vk_binding b[3];
    vk_push_moe_elt p = {.n = (uint32_t)n, .n_cols = n_cols, .alpha = alpha, .limit = limit};
    int rc;
    if ((rc = vk_bind_view(c, gate, n, false, &b[0], &p.a_off)) != 0 ||
        (rc = vk_bind_view(c, up, n, false, &b[1], &p.b_off)) != 0 ||
        (rc = vk_bind_view(c, dst, n, true, &b[2], &p.dst_off)) != 0)
        return rc;
    return elt_dispatch(c, VK_SH_MOE_SWIGLU_OAI, b, 3, &p);
}

int vk_op_moe_combine(void *ctx, backend_view y, backend_view w, uint32_t n_tok, uint32_t n_used, uint32_t n_cols,
                      backend_view dst)
{
    vk_ctx *c = ctx;
    const size_t ny = (size_t)n_tok * n_used * n_cols, nw = (size_t)n_tok * n_used, nd = (size_t)n_tok * n_cols;
    if (!n_used || !fits_u32(ny) || !is_f32(y) || !is_f32(w) || !is_f32(dst) || overlap(dst, nd, y, ny) ||
        overlap(dst, nd, w, nw))
        return BACKEND_EARG;
    if (c->lost)
        return BACKEND_EDEVICE;
    if (nd == 0)
        return 0;
    vk_binding b[3];
    vk_push_moe_elt p = {.n = (uint32_t)nd, .n_cols = n_cols, .n_used = n_used};
    int rc;
    if ((rc = vk_bind_view(c, y, ny, false, &b[0], &p.a_off)) != 0 ||
        (rc = vk_bind_view(c, w, nw, false, &b[1], &p.b_off)) != 0 ||
        (rc = vk_bind_view(c, dst, nd, true, &b[2], &p.dst_off)) != 0)
        return rc;
    return elt_dispatch(c, VK_SH_MOE_COMBINE, b, 3, &p);
}
