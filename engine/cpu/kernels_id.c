/* kernels_id: the expert products of a mixture-of-experts layer
 * (ggml_mul_mat_id). Every output element is one product in the one-token
 * order of the weight type (ggml's mul_mat_id never takes the batched
 * gemm / tinyBLAS kernels, whatever the token count): the tiles of
 * kern_matmul for one token. The (token, slot) pairs are grouped by expert,
 * and each work item is a chunk of one expert's rows that serves every pair
 * that chose the expert, so a prompt batch reads an expert's weights once;
 * only the chosen experts' bytes are touched. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"
#include "kernels.h"
#include "kernels_internal.h"

typedef struct {
    kern_tile_fn tile;      /* one-token tile, or NULL: generic path (dequantize, F32 tile) */
    kern_tile_fn f32_tile;
    kern_gemm_fn gemm;      /* batches: an expert's pairs at once in the one-token order, or NULL */
    const uint8_t *actg;    /* batches: the activation rows of the pairs, in pairs[] order, or NULL */
    int plain;
    int tile_r;
    uint32_t wtype;
    const uint8_t *W;
    size_t row_bytes, expert_bytes;
    int64_t n_rows, n_cols, nb;
    const float *x;         /* the float rows (quantization, generic path) */
    const uint8_t *act;     /* activation rows in the tiles' layout */
    size_t act_stride;
    int64_t n_act;          /* activation rows */
    int64_t x_per_tok, n_used;
    float *y;
    const int32_t *pairs;   /* pair indices t * n_used + s, grouped by expert, in token order */
    const int64_t *span;    /* used expert u: pairs[span[2u] .. span[2u+1]) */
    const int32_t *uexp;    /* used expert u's id */
    int64_t rc, n_rchunks, n_items;
    atomic_llong next;
    atomic_int err;
    tpool *pool;
} id_ctx;

static void id_quant_worker(void *p, int ith, int nth)
{
    id_ctx *c = p;
    const uint32_t at = kern_act_type(c->wtype);
    for (int64_t i = ith; i < c->n_act; i += nth)
        kern_act_row(at, c->x + i * c->n_cols, (uint8_t *)c->act + (size_t)i * c->act_stride, c->n_cols);
}

/* Activation row of pair p (token p / n_used, slot p % n_used). */
static inline int64_t act_row(const id_ctx *c, int64_t p)
{
    return c->x_per_tok == 1 ? p / c->n_used : p;
}

#define ID_TOK 64 /* pairs per pass of the tiles over a row tile (yt: ID_TOK x rc floats) */

/* An expert's pairs (np >= 2) over rows r0..r1 at once, from the gathered
 * activations: the GEMM (512 pairs a call) or the one-token tiles (up to
 * KERN_TILE_T pairs a call, ID_TOK pairs per row tile), into yt, then
 * scattered to the pairs' rows. */
static void id_item_multi(id_ctx *c, const uint8_t *We, int64_t r0, int64_t r1, int64_t p0, int64_t np, void *tmp,
                          float *yt)
{
    const int64_t step = c->gemm ? 512 : ID_TOK, ys = c->gemm ? KERN_GEMM_ROWS : c->rc;
    for (int64_t j0 = 0; j0 < np; j0 += step) {
        const int64_t nt = np - j0 < step ? np - j0 : step;
        const uint8_t *a = c->actg + (size_t)(p0 + j0) * c->act_stride;
        if (c->gemm) {
            c->gemm(We + (size_t)r0 * c->row_bytes, c->row_bytes, (int)(r1 - r0), a, c->act_stride, nt, c->n_cols,
                    yt, ys, tmp, 0, c->plain);
        } else {
            for (int64_t r = r0; r < r1; r += c->tile_r) {
                const int nr = (int)(r1 - r < c->tile_r ? r1 - r : c->tile_r);
                for (int64_t t = 0; t < nt; t += KERN_TILE_T) {
                    const int n = (int)(nt - t < KERN_TILE_T ? nt - t : KERN_TILE_T);
                    c->tile(We + (size_t)r * c->row_bytes, c->row_bytes, nr, a + (size_t)t * c->act_stride,
                            c->act_stride, n, c->nb, yt + t * ys + (r - r0), ys);
                }
            }
        }
        for (int64_t j = 0; j < nt; j++)
            memcpy(c->y + (size_t)c->pairs[p0 + j0 + j] * c->n_rows + r0, yt + j * ys,
                   sizeof(float) * (size_t)(r1 - r0));
    }
}

static void id_item(id_ctx *c, int64_t item, float *rowbuf, float *yt)
{
    const int64_t u = item / c->n_rchunks;
    const int64_t r0 = (item % c->n_rchunks) * c->rc;
    const int64_t r1 = r0 + c->rc < c->n_rows ? r0 + c->rc : c->n_rows;
    const uint8_t *We = c->W + (size_t)c->uexp[u] * c->expert_bytes;
    const int32_t *pp = c->pairs + c->span[2 * u];
    const int64_t np = c->span[2 * u + 1] - c->span[2 * u];
    if (c->actg && np >= 2) {
        id_item_multi(c, We, r0, r1, c->span[2 * u], np, rowbuf, yt);
        return;
    }
    if (!c->tile) {
        for (int64_t r = r0; r < r1; r++) {
            if (codec_dequantize(c->wtype, We + (size_t)r * c->row_bytes, rowbuf, (uint64_t)c->n_cols) != 0) {
                atomic_store(&c->err, 1);
                return;
            }
            for (int64_t j = 0; j < np; j++)
                c->f32_tile((const uint8_t *)rowbuf, 0, 1, c->act + (size_t)act_row(c, pp[j]) * c->act_stride, 0, 1,
                            c->n_cols, c->y + (size_t)pp[j] * c->n_rows + r, 0);
        }
        return;
    }
    if (c->tile_r == KERN_TILE_R8) {
        /* the chunk's first tile, all at once (the tiles prefetch the next one) */
        const char *p0 = (const char *)(We + (size_t)r0 * c->row_bytes);
        for (size_t o = 0; o < (size_t)KERN_TILE_R8 * c->row_bytes; o += 64)
            __builtin_prefetch(p0 + o);
    }
    for (int64_t j = 0; j < np; j++) {
        const uint8_t *a = c->act + (size_t)act_row(c, pp[j]) * c->act_stride;
        float *yp = c->y + (size_t)pp[j] * c->n_rows;
        for (int64_t r = r0; r < r1; r += c->tile_r) {
            const int nr = (int)(r1 - r < c->tile_r ? r1 - r : c->tile_r);
            c->tile(We + (size_t)r * c->row_bytes, c->row_bytes, nr, a, 0, 1, c->nb, yp + r, 0);
        }
    }
}

static void id_worker(void *p, int ith, int nth)
{
    id_ctx *c = p;
    (void)nth;
    float *rowbuf = NULL, *owned = NULL, *yt = NULL;
    if (!c->tile || c->gemm) {
        /* the generic path's row, or the GEMM's work buffer */
        const size_t need = c->gemm ? kern_gemm_tmp_size(c->n_cols) : (size_t)c->n_cols * sizeof(float);
        rowbuf = tpool_thread_buf(c->pool, ith, need);
        if (!rowbuf)
            rowbuf = owned = malloc(need);
        if (!rowbuf) {
            atomic_store(&c->err, 1);
            return;
        }
    }
    if (c->actg) {
        const size_t n = c->gemm ? (size_t)512 * KERN_GEMM_ROWS : (size_t)ID_TOK * (size_t)c->rc;
        yt = malloc(sizeof(float) * n);
        if (!yt) {
            atomic_store(&c->err, 1);
            free(owned);
            return;
        }
    }
    for (int64_t it = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed); it < c->n_items;
         it = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed)) {
        id_item(c, it, rowbuf, yt);
        if (atomic_load_explicit(&c->err, memory_order_relaxed))
            break;
    }
    free(owned);
    free(yt);
}

int kern_matmul_id(tpool *pool, uint32_t wtype, const void *W, size_t row_bytes, size_t expert_bytes,
                   int64_t n_rows, int64_t n_cols, int64_t n_expert, const float *x, int64_t x_per_tok,
                   const int32_t *ids, int64_t n_tok, int64_t n_used, float *y)
{
    const ggtype_traits *tr = ggtype_get(wtype);
    if (!tr || !W || !x || !y || !ids || n_rows <= 0 || n_cols <= 0 || n_expert <= 0 || n_tok <= 0 ||
        n_used <= 0 || (x_per_tok != 1 && x_per_tok != n_used) || n_cols % tr->blck_size != 0 ||
        n_tok > INT32_MAX / n_used)
        return -1;
    bool ovf;
    uint64_t need = ggtype_row_size(wtype, (uint64_t)n_cols, &ovf);
    if (need == 0 || ovf || row_bytes < need || expert_bytes / row_bytes < (uint64_t)n_rows)
        return -1;
    const int64_t n_pairs = n_tok * n_used;
    for (int64_t p = 0; p < n_pairs; p++)
        if (ids[p] < 0 || ids[p] >= n_expert)
            return -1;

    id_ctx c;
    memset(&c, 0, sizeof c);
    c.wtype = wtype;
    c.W = W;
    c.row_bytes = row_bytes;
    c.expert_bytes = expert_bytes;
    c.n_rows = n_rows;
    c.n_cols = n_cols;
    c.x = x;
    c.x_per_tok = x_per_tok;
    c.n_used = n_used;
    c.y = y;
    c.pool = pool;
    c.n_act = n_tok * x_per_tok;
    c.tile = kern_vec_tile(wtype, n_rows % 8 != 0, &c.tile_r);
    c.f32_tile = kern_f32_tile();
    atomic_init(&c.err, 0);
    atomic_init(&c.next, 0);
    const uint32_t at = kern_act_type(wtype);
    if (!c.tile && (at != GGTYPE_F32 || wtype == GGTYPE_F32 || wtype == GGTYPE_F16 || wtype == GGTYPE_BF16))
        return -1; /* a fast type without a tile: not expected */

    /* grouping (counting sort by expert, token order kept) and activations */
    size_t rb = 0;
    if (at != GGTYPE_F32) {
        rb = kern_act_row_bytes(at, n_cols);
        if (rb == 0 || (size_t)c.n_act > (SIZE_MAX - 64) / rb)
            return -1;
    }
    const size_t cnt_bytes = sizeof(int64_t) * (size_t)(n_expert + 1);
    const size_t ints = sizeof(int32_t) * ((size_t)n_pairs + (size_t)n_expert);
    const size_t spans = sizeof(int64_t) * 2 * (size_t)n_expert;
    c.plain = n_rows % 8 != 0;
    c.gemm = at != GGTYPE_F32 && n_tok > 1 ? kern_vec_gemm(wtype, c.plain) : NULL;
    /* batches: the pairs' activation rows gathered, expert after expert */
    const bool gather = n_tok > 1 && c.tile;
    const size_t arow = at != GGTYPE_F32 ? rb : (size_t)n_cols * sizeof(float);
    if ((size_t)c.n_act + (size_t)n_pairs > (SIZE_MAX / 2 - 64) / arow)
        return -1;
    const size_t abytes = rb * (size_t)c.n_act + (gather ? arow * (size_t)n_pairs : 0) + 64;
    uint8_t *mem = malloc(cnt_bytes + ints + spans + abytes + 64);
    if (!mem)
        return -1;
    int64_t *cnt = (int64_t *)mem;
    int32_t *pairs = (int32_t *)(mem + cnt_bytes), *uexp = pairs + n_pairs;
    int64_t *span = (int64_t *)(mem + cnt_bytes + ints + (8 - (cnt_bytes + ints) % 8) % 8);
    memset(cnt, 0, cnt_bytes);
    for (int64_t p = 0; p < n_pairs; p++)
        cnt[ids[p] + 1]++;
    int64_t n_ue = 0;
    for (int64_t e = 0; e < n_expert; e++) {
        if (cnt[e + 1]) {
            uexp[n_ue] = (int32_t)e;
            span[2 * n_ue] = cnt[e];
            span[2 * n_ue + 1] = cnt[e] + cnt[e + 1];
            n_ue++;
        }
        cnt[e + 1] += cnt[e];
    }
    for (int64_t p = 0; p < n_pairs; p++)
        pairs[cnt[ids[p]]++] = (int32_t)p;
    c.pairs = pairs;
    c.span = span;
    c.uexp = uexp;

    const int nth = tpool_threads(pool);
    if (at != GGTYPE_F32) {
        uint8_t *abuf = (uint8_t *)(((uintptr_t)(mem + cnt_bytes + ints + spans + 8) + 63) & ~(uintptr_t)63);
        c.act = abuf;
        c.act_stride = rb;
        c.nb = n_cols / (at == GGTYPE_Q8_K ? QK_K : 32);
        if (c.n_act * n_cols <= 65536 || nth == 1)
            id_quant_worker(&c, 0, 1);
        else
            tpool_run(pool, id_quant_worker, &c);
    } else {
        c.act = (const uint8_t *)x;
        c.act_stride = (size_t)n_cols * sizeof(float);
        c.nb = n_cols;
    }
    if (gather) { /* the pairs' rows side by side, expert after expert */
        uint8_t *g = (uint8_t *)(((uintptr_t)(mem + cnt_bytes + ints + spans + 8) + 63) & ~(uintptr_t)63) +
                     rb * (size_t)c.n_act;
        for (int64_t j = 0; j < n_pairs; j++)
            memcpy(g + (size_t)j * arow, c.act + (size_t)act_row(&c, pairs[j]) * arow, arow);
        c.actg = g;
    }

    /* Chunks of rows: one token per expert (decode), as the dense mat-vec
     * (64 .. 256 rows, about 8 chunks per thread over all chosen experts);
     * several, chunks that stay in L2 while every mapped token passes. */
    int64_t rc;
    if (n_pairs == n_ue) {
        rc = (n_ue * n_rows + (int64_t)nth * 8 - 1) / ((int64_t)nth * 8);
        rc = rc < 64 ? 64 : rc > 256 ? 256 : rc;
    } else if (c.gemm) {
        rc = KERN_GEMM_ROWS; /* the GEMM's chunk: its repacked rows serve every token */
    } else {
        rc = (int64_t)(65536 / row_bytes);
        rc = rc > 256 ? 256 : rc;
    }
    rc = (rc + c.tile_r - 1) / c.tile_r * c.tile_r;
    if (rc < c.tile_r)
        rc = c.tile_r;
    c.rc = rc;
    c.n_rchunks = (n_rows + rc - 1) / rc;
    c.n_items = c.n_rchunks * n_ue;
    if (nth == 1 || c.n_items == 1)
        id_worker(&c, 0, 1);
    else
        tpool_run_dynamic(pool, id_worker, &c);
    free(mem);
    return atomic_load(&c.err) ? -1 : 0;
}
