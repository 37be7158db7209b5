/* backend_cpu_internal: private pieces of the CPU backend (context, thread
 * fan-out, matmul dispatch). Not part of the public API. */
#ifndef GGSCOPE_BACKEND_CPU_INTERNAL_H
#define GGSCOPE_BACKEND_CPU_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "tpool.h"

/* Context of a CPU backend with n_threads workers (0 = one per core); NULL on failure. */
void *backend_cpu_ctx_new(int n_threads);
void backend_cpu_ctx_free(void *ctx);
int backend_cpu_ctx_threads(void *ctx);

/* The context's thread pool (the kernels' argument). */
tpool *backend_cpu_ctx_pool(void *ctx);

/* Checked pointer to n floats at v.off of an F32 buffer; NULL when v is not
 * an F32 buffer or the range does not fit it. */
float *backend_cpu_f32(backend_view v, size_t n);

/* The mixture-of-experts ops (backend_cpu_moe.c), as backend.h describes them. */
int backend_cpu_moe_route(void *ctx, backend_view logits, uint32_t n_tok, uint32_t n_expert, uint32_t n_used,
                          backend_moe_gating gating, bool norm, int32_t *ids, backend_view weights);
int backend_cpu_matmul_id(void *ctx, const backend_weight *w, backend_view x, uint32_t x_per_tok,
                          const int32_t *ids, uint32_t n_tok, uint32_t n_used, backend_view y);
int backend_cpu_add_id(void *ctx, backend_view src, const backend_weight *b, const int32_t *ids, backend_view dst,
                       uint32_t n_rows, uint32_t n_cols);
int backend_cpu_swiglu_oai(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                           uint32_t n_cols, float alpha, float limit);
int backend_cpu_moe_combine(void *ctx, backend_view y, backend_view w, uint32_t n_tok, uint32_t n_used,
                            uint32_t n_cols, backend_view dst);
/* libstdc++'s std::sort (introsort, heap fallback, final insertion sort) of
 * idx[0..n) with the comparator data[a] > data[b] (ggml_argsort, DESC): the
 * order it leaves, ties included. */
void backend_cpu_argsort_desc(const float *data, int32_t *idx, int64_t n);
/* Its heap fallback alone (std::partial_sort(first, last, last), what
 * introsort runs when its depth limit is reached), for tests. */
void backend_cpu_heapsort_desc(const float *data, int32_t *idx, int64_t n);
/* ggml_soft_max of one row of n (scale 1, no mask): dst may be src. hw: the
 * haswell build's order (8 lanes), else the zen4 build's (16). */
void backend_cpu_softmax_row(const float *src, float *dst, int64_t n, bool hw);

/* Run fn(arg, ith, nth) on the context's threads as tpool_run_dynamic does:
 * fn takes its work from a shared counter (a thread may not be called). */
void backend_cpu_parallel(void *ctx, void (*fn)(void *arg, int ith, int nth), void *arg);

/* y[i] (n_tok x ws[i]->ne1) = x (n_tok x ne0) . W_i^T for n_w weights of one
 * type and ne0, in one run of the pool (kern_matmul_n); the same floats as
 * one product each. Arguments already checked (cpu_matmul_n). */
int backend_cpu_matmul_n(void *ctx, const backend_weight *const *ws, int n_w, const float *x, uint32_t n_tok,
                         float *const *ys);

/* The KV rows a query at position P sees (backend_attn_params): positions
 * lo .. P with lo = max(0, P + 1 - n_swa) (0 when n_swa is 0), at row p
 * (linear cache, n_cells 0) or row p % n_cells (ring; the caller has
 * checked that no row of those positions was overwritten, i.e. P_max - lo <
 * n_cells). In row order, as llama.cpp visits cells: [r[0], r[1]) then
 * [r[2], r[3]) (an empty second range is [r[1], r[1])). */
static inline void backend_cpu_attn_rows(uint32_t P, uint32_t n_swa, uint32_t n_cells, uint32_t r[4])
{
    const uint32_t lo = n_swa && P >= n_swa ? P + 1 - n_swa : 0;
    uint32_t a = lo, b = P;
    if (n_cells) {
        a = lo % n_cells;
        b = P % n_cells;
    }
    if (a <= b) {
        r[0] = a;
        r[1] = r[2] = r[3] = b + 1;
    } else { /* wrapped: the newest positions sit in rows 0..b */
        r[0] = 0;
        r[1] = b + 1;
        r[2] = a;
        r[3] = n_cells;
    }
}

/* Bit t set: row ic + t is among the rows r (backend_cpu_attn_rows). */
static inline uint64_t backend_cpu_attn_range_bits(uint32_t a, uint32_t b, uint32_t ic)
{
    const uint32_t lo = a > ic ? a - ic : 0, hi = b > ic ? (b - ic < 64 ? b - ic : 64) : 0;
    if (lo >= hi)
        return 0;
    return (hi == 64 ? ~(uint64_t)0 : ((uint64_t)1 << hi) - 1) & ~(((uint64_t)1 << lo) - 1);
}
static inline uint64_t backend_cpu_attn_tile_mask(const uint32_t r[4], uint32_t ic)
{
    return backend_cpu_attn_range_bits(r[0], r[1], ic) | backend_cpu_attn_range_bits(r[2], r[3], ic);
}

/* One attention call (cpu_attention's arguments, checked): n_tok queries
 * from position pos0, keys and values in F16 rows of n_head_kv * head_dim. */
typedef struct {
    const float *q;
    const uint16_t *k, *v;
    float *out;
    uint32_t n_tok, pos0, n_head, n_head_kv, head_dim;
    uint32_t n_swa, n_cells; /* backend_attn_params: window, ring (0: none) */
    const float *sinks;      /* n_head sinks, or NULL */
    float scale;
    bool simd;   /* AVX2/F16C inner loops (same results) */
    atomic_uint next; /* the next work item to take */
} backend_cpu_attn_job;

/* llama.cpp's KV view for a batch whose last query sits at position P
 * (llama_kv_cache::get_n_kv): the cells used, P + 1 (a ring's n_cells once
 * full: llama.cpp overwrites ring cells, it never frees them), padded to a
 * multiple of 256, at least 256, at most the cache (the ring's n_cells;
 * a linear cache is padded the same way, so never smaller). */
static inline uint32_t backend_cpu_attn_n_kv(uint32_t P, uint32_t n_cells)
{
    uint64_t used = (uint64_t)P + 1;
    if (n_cells && used > n_cells)
        used = n_cells;
    uint64_t n = (used + 255) / 256 * 256;
    if (n_cells && n > n_cells)
        n = n_cells;
    return (uint32_t)n;
}
/* ggml takes its split-KV path for one query when the view has this many cells. */
#define BACKEND_CPU_ATTN_SPLIT_MIN 512u

/* ggml's one-chunk flash attention of query 0 of j, the heads of KV head
 * kvh, over the cells [c0, c1) of the rows it sees (backend_cpu_attn_rows):
 * head kvh*G + g's maximum, sum and F16 accumulator (as floats) into
 * part + g*stride as {M, S, acc[head_dim]}, the head's sink folded in when
 * c0 is 0 (ggml: only into the first KV chunk). work:
 * backend_cpu_attn_chunk_work floats. (backend_cpu.c) */
void backend_cpu_attn_chunk(const backend_cpu_attn_job *j, uint32_t kvh, uint32_t c0, uint32_t c1, float *work,
                            float *part, size_t stride);
static inline size_t backend_cpu_attn_chunk_work(uint32_t G, uint32_t hd)
{
    return (size_t)2 * G * hd + 2 * (size_t)G;
}
/* ggml's split-KV decode (ops.cpp ggml_compute_forward_flash_attn_ext_f16,
 * one query, a view of n_kv >= BACKEND_CPU_ATTN_SPLIT_MIN cells): the view
 * cut into n_chunk chunks of ceil(n_kv / n_chunk) cells (ggml: one per
 * thread, n_chunk = its thread count), each chunk's partial softmax from
 * backend_cpu_attn_chunk, then per head the chunks combined in order
 * (backend_cpu_attn_reduce). Work items (chunk, KV head) go to ctx's threads
 * from j->next (any thread may take any item; the result does not depend on
 * which). BACKEND_ENOMEM when the partials cannot be allocated; a worker
 * that cannot allocate takes no item (the caller's NaN sentinel). (backend_cpu_attn_split.c) */
int backend_cpu_attn_split(void *ctx, backend_cpu_attn_job *j, uint32_t n_kv, uint32_t n_chunk);
/* ggml_flash_attn_ext_reduce_partials for one head: the n partials {M, S,
 * acc[hd]} at part, stride floats apart, in order, skipping those with S
 * 0: M' = fmaxf(M, Mc), so = expf(M - M'), sn = expf(Mc - M'), acc[d] =
 * fmaf(acc[d], so, fl(acc_c[d]*sn)), S = fmaf(S, so, fl(Sc*sn)); out =
 * acc * (1/S) (acc when S is 0). acc: hd floats of scratch. simd: AVX2
 * (the same bits). */
void backend_cpu_attn_reduce(const float *part, uint32_t n, size_t stride, uint32_t hd, float *acc, float *out,
                             bool simd);

/* ggml_gelu_f32 as llama.cpp's x86 builds compute it (its F16 table's values). */
float backend_cpu_gelu_f32(float x);

/* ggml's CPU arithmetic (backend_cpu_attn.c): each function in plain C
 * (_ref) and with AVX2/FMA/F16C, the same bits; the latter usable when
 * backend_cpu_attn_simd_available() and, for the two attention pieces, the
 * head dimension is a multiple of 8. */
bool backend_cpu_attn_simd_available(void);
/* hw: the order of llama.cpp's haswell (AVX2) build, else its zen4 build's. */
/* ggml_vec_dot_f16 of an F16-rounded query (as floats) with an F16 key. */
float backend_cpu_dot_f16_ref(const float *q, const uint16_t *k, uint32_t n, bool hw);
float backend_cpu_dot_f16(const float *q, const uint16_t *k, uint32_t n, bool hw);
/* out[c] = backend_cpu_dot_f16(q, k + c * stride, n, hw) * scale for c < cnt
 * (the same floats; q's loads and the call shared by the cells). */
void backend_cpu_dot_f16_run(const float *q, const uint16_t *k, size_t stride, uint32_t n, bool hw, float scale,
                             float *out, uint32_t cnt);
/* An attention sink (gpt-oss) joins a finished softmax of maximum *M and
 * sum *S whose weighted values are acc (hd floats): when sink > *M, acc is
 * scaled by ms = expf(*M - sink), else vs = expf(sink - *M); then S = S*ms +
 * vs, rounded twice in the one-chunk form (which also moves *M to the
 * sink), one fmaf in the tiled form (ggml's ops.cpp, both forms). */
void backend_cpu_attn_sink(float sink, float *M, float *S, float *acc, uint32_t hd, bool tiled);
/* One query row of ggml's tiled flash attention (batches of 64+ queries):
 * keys/values k[c * stride + d], the cells of rows r (backend_cpu_attn_rows)
 * in tiles of 64 from cell 0, the head's sink (or NULL), acc scratch of hd
 * floats. */
void backend_cpu_attn_tiled_ref(const float *q, const uint16_t *k, const uint16_t *v, size_t stride,
                                const uint32_t r[4], uint32_t hd, float scale, const float *sink, float *acc,
                                float *out, bool hw);
void backend_cpu_attn_tiled(const float *q, const uint16_t *k, const uint16_t *v, size_t stride,
                            const uint32_t r[4], uint32_t hd, float scale, const float *sink, float *acc, float *out,
                            bool hw);
/* Queries per work item of the grouped tiled attention (at most). */
#define BACKEND_CPU_ATTN_QB 16
/* backend_cpu_attn_tiled (SIMD) for nq (<= BACKEND_CPU_ATTN_QB) consecutive queries t0.. (query i at
 * position pos0+t0+i, its rows from backend_cpu_attn_rows with n_swa and
 * n_cells) x nh heads of one KV head, each key/value tile converted once for
 * all of them; query (i, j) at q + (i*q_tok + j)*hd, its output at the same
 * offset of out; head j's sink sinks[j] (sinks NULL: none). The same bits
 * as calling backend_cpu_attn_tiled per pair. work:
 * backend_cpu_attn_group_work floats. */
void backend_cpu_attn_tiled_group(const float *q, size_t q_tok, const uint16_t *k, const uint16_t *v,
                                  size_t stride, uint32_t pos0, uint32_t n_swa, uint32_t n_cells, uint32_t t0,
                                  uint32_t nq, uint32_t nh, uint32_t hd, float scale, const float *sinks,
                                  float *work, float *out, bool hw);
static inline size_t backend_cpu_attn_group_work(uint32_t n_pairs, uint32_t hd)
{
    return (size_t)128 * hd + (size_t)n_pairs * (hd + 2 + 64);
}
/* Tests: with on, the CPU backend's attention goes (query, head) pair by
 * pair instead of by groups of heads sharing a KV head (both forms). */
void backend_cpu_attn_pairs(bool on);
/* Tests: whether the attention follows llama.cpp's haswell build's orders
 * (decided by the first backend_cpu_new). */
bool backend_cpu_haswell(void);
/* One-chunk flash attention's F16 accumulator step. */
void backend_cpu_attn_mad(float *acc, const uint16_t *v, float ms, bool rescale, float vs, uint32_t n);
/* The step for n cells in a row: cell i's V row at v + i * stride, acc
 * rescaled by ms[i] when that is not 1 (a new maximum; rescaling by 1
 * changes nothing), then vs[i] times the row added: the floats of n calls
 * of backend_cpu_attn_mad, with acc's dims in registers across the cells.
 * n_dim % 8 == 0. */
void backend_cpu_attn_mad_run(float *acc, const uint16_t *v, size_t stride, const float *ms, const float *vs,
                              uint32_t n, uint32_t n_dim);
/* ggml's vectorised expf, one element; and the SIMD form (for tests). */
float backend_cpu_v_expf(float x);
float backend_cpu_v_expf_simd(float x);
/* The haswell build's form of that expf (it rounds differently). */
float backend_cpu_v_expf_hw(float x);
/* d = silu(g) * u over n8 (a multiple of 8) elements, ggml's arithmetic. */
void backend_cpu_silu_mul(const float *g, const float *u, float *d, size_t n8, bool hw);

#endif
