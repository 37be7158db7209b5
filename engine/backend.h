/* backend: the ops of a transformer forward pass behind a small vtable.
 *
 * A backend owns buffers (opaque `backend_buf`, allocated by the backend:
 * host memory on the CPU, device memory on a GPU) and implements each op of
 * the forward pass on them. The session (session.h) expresses a whole forward
 * pass as a sequence of these ops; every op is also callable on its own, so a
 * backend can be compared op by op with the CPU reference (backend_cpu_new).
 *
 * Conventions for every op:
 *  - Activations are row-major F32 matrices in buffers: `n_rows` rows of
 *    `n_cols` floats, addressed as (buffer, element offset) pairs
 *    (`backend_view`). Offsets and sizes are in elements of the buffer's
 *    type (F32 for activations, F16 for the KV cache).
 *  - Weights are `backend_weight`s: a ggml-typed tensor in host memory (the
 *    model file's mapping), ne0 = columns (elements per row), ne1 = rows.
 *  - A backend that has `weight_prepare` (Vulkan: a device copy) needs every
 *    weight prepared before an op uses it: its ops read `w->priv` and do not
 *    look weights up; an unprepared weight gives BACKEND_EARG. Whoever
 *    prepares releases (`weight_release`) before the backend is freed;
 *    `model_prepare` / `model_release` (model.h) do both for a model. `priv`
 *    belongs to the backend that set it: a backend without `weight_prepare`
 *    (the CPU) never reads it, so a model prepared for the GPU also runs on
 *    the CPU (the device-loss fallback).
 *  - In-place use (dst == src) is allowed where the op says so.
 *  - Ops return 0 on success, a negative BACKEND_E* code on failure.
 *  - Ops may execute asynchronously; results are visible to `buf_read`
 *    (which waits) and to later ops. `sync` waits for everything.
 *  - Functions marked (optional) may be NULL.
 */
#ifndef GGSCOPE_BACKEND_H
#define GGSCOPE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    BACKEND_OK = 0,
    BACKEND_ENOMEM = -1,      /* out of (host or device) memory */
    BACKEND_EARG = -2,        /* bad sizes / offsets / types */
    BACKEND_EUNSUPPORTED = -3,/* this backend cannot do it (e.g. weight type) */
    BACKEND_EDEVICE = -4,     /* device lost / driver error */
    BACKEND_ECANCELLED = -5,  /* used by the session: evaluation cancelled */
};

/* Element type of a buffer. */
typedef enum { BACKEND_F32 = 0, BACKEND_F16 = 1 } backend_dtype;

typedef struct backend_buf backend_buf;   /* opaque, per backend */

/* A place in a buffer: `off` counts elements of the buffer's dtype. */
typedef struct {
    backend_buf *buf;
    size_t off;
} backend_view;

/* A weight tensor (2-D, or 1-D with ne1 = 1; 3-D for the stacked experts of
 * a mixture-of-experts layer) living in host memory. */
typedef struct {
    uint32_t type;        /* ggml type id (ggtype.h) */
    uint64_t ne0;         /* elements per row (input dimension of a matmul) */
    uint64_t ne1;         /* rows (output dimension of a matmul) */
    uint64_t row_bytes;   /* bytes of one row */
    uint64_t ne2;         /* experts of a 3-D tensor (expert e's ne1 rows start at byte e * ne1 * row_bytes); 0 or 1 otherwise */
    const void *data;     /* max(ne2, 1) * ne1 * row_bytes bytes, e.g. in the file mapping */
    const char *name;     /* tensor name, for messages (may be NULL) */
    void *priv;           /* backend's private handle (weight_prepare), else NULL */
} backend_weight;

/* The most weights of one matmul_n call. */
#define BACKEND_MATMUL_N_MAX 4

/* RoPE modes. NORMAL rotates adjacent pairs (x[2i], x[2i+1]) (llama);
 * NEOX rotates the halves (x[i], x[i + n_rot/2]) (qwen2). */
typedef enum { BACKEND_ROPE_NORMAL = 0, BACKEND_ROPE_NEOX = 2 } backend_rope_mode;

/* ggml_rope_ext's parameters. The YaRN fields keep plain RoPE when zero:
 * ext_factor 0 = no YaRN ramp, attn_factor 0 is read as 1 (no mscale). */
typedef struct {
    backend_rope_mode mode;
    uint32_t n_rot;            /* dimensions rotated (even, <= head_dim) */
    float freq_base;           /* theta base, e.g. 10000 */
    float freq_scale;          /* 1 / linear scaling factor (1 = none) */
    const float *freq_factors; /* (optional) n_rot/2 divisors of theta (rope_freqs, LongRoPE factors), or NULL */
    float ext_factor;          /* YaRN extrapolation mix (1 with YaRN scaling, else 0) */
    float attn_factor;         /* multiplies cos and sin (YaRN / LongRoPE mscale); 0 = 1 */
    float beta_fast, beta_slow;/* YaRN correction range (32, 1) */
    uint32_t n_ctx_orig;       /* YaRN: the context the model was trained for */
} backend_rope_params;

/* Attention options. The KV cache of a layer is either linear (n_cells = 0:
 * row r holds position r) or a ring of n_cells rows (position p in row
 * p % n_cells), which a sliding-window layer needs: with n_swa > 0, query
 * position P sees key position p only when p <= P and P - p < n_swa
 * (llama.cpp's is_masked_swa). Keys are visited in row order, as llama.cpp
 * visits cells, which after the ring wraps is not position order. */
typedef struct {
    float scale;               /* kq scale (1/sqrt(head_dim), or 1 when Q was pre-scaled) */
    uint32_t n_swa;            /* sliding window in positions, 0 = full causal attention */
    uint32_t n_cells;          /* ring size in rows, 0 = linear cache */
    const float *sinks;        /* (optional) n_head logits, one per query head, that join each
                                * head's softmax denominator without a value row (gpt-oss's
                                * attention sinks, ggml_flash_attn_ext_add_sinks); host memory */
} backend_attn_params;

/* What a backend honours beyond plain RoPE and causal attention. */
enum {
    BACKEND_CAP_ROPE_EXT = 1u << 0,   /* rope: ext_factor (YaRN) and attn_factor */
    BACKEND_CAP_ATTN_SWA = 1u << 1,   /* attention: n_swa and n_cells */
    BACKEND_CAP_ATTN_SINKS = 1u << 2, /* attention: sinks */
    BACKEND_CAP_MOE = 1u << 3,        /* moe_route, matmul_id, moe_combine (and add_id, swiglu_oai) */
};

/* How a mixture-of-experts router turns its logits into experts and weights
 * (llama.cpp's build_moe_ffn gating). */
typedef enum {
    BACKEND_MOE_SOFTMAX = 0,      /* softmax over all experts, the top k of it and their
                                   * probabilities (llama with experts, qwen3moe) */
    BACKEND_MOE_TOPK_SOFTMAX = 1, /* the top k of the raw logits, then a softmax over
                                   * those k (gpt-oss) */
} backend_moe_gating;

typedef struct backend_ops {
    const char *name;          /* "cpu", "vulkan" */
    unsigned caps;             /* BACKEND_CAP_* */

    /* Destroy the backend context (buffers must have been freed). */
    void (*free)(void *ctx);

    /* ---- buffers ---- */
    /* A buffer of `n` elements of `dtype`, zero-filled. NULL on failure. */
    backend_buf *(*buf_new)(void *ctx, backend_dtype dtype, size_t n);
    /* Free a buffer; accepts NULL. */
    void (*buf_free)(void *ctx, backend_buf *b);
    /* Copy `n` elements from host memory to the buffer at element `off`
     * (src holds floats for F32 buffers, uint16_t halves for F16). */
    int (*buf_write)(void *ctx, backend_buf *b, size_t off, const void *src, size_t n);
    /* Copy `n` elements at `off` to host memory; waits for pending ops. */
    int (*buf_read)(void *ctx, backend_buf *b, size_t off, void *dst, size_t n);

    /* ---- weights ---- */
    /* (optional) Prepare a weight for use (upload, repack); sets w->priv.
     * w->priv must be NULL, or set by this backend (then nothing is done).
     * Returns 0 or a BACKEND_E* code (BACKEND_EUNSUPPORTED: a type without
     * kernels), leaving w->priv NULL on failure. */
    int (*weight_prepare)(void *ctx, backend_weight *w);
    /* (optional) Release what weight_prepare made and set w->priv to NULL;
     * accepts w->priv == NULL. Present exactly when weight_prepare is. */
    void (*weight_release)(void *ctx, backend_weight *w);

    /* ---- ops ---- */
    /* dst[i][:] = row ids[i] of w, dequantized to F32 (n rows of w->ne0).
     * `ids` is host memory; every id < w->ne1 (checked by the caller). */
    int (*get_rows)(void *ctx, const backend_weight *w, const int32_t *ids, uint32_t n,
                    backend_view dst);
    /* dst[r][c] = src[r][c] / sqrt(mean(src[r][:]^2) + eps) * w[c]: RMS norm,
     * then a product by the F32 vector w of n_cols, as one op (the forward
     * pass's norms). The CPU backend runs exactly the two steps (same
     * floats); Vulkan records one dispatch. In place allowed. */
    int (*rms_norm_mul)(void *ctx, backend_view src, const backend_weight *w, backend_view dst,
                        uint32_t n_rows, uint32_t n_cols, float eps);
    /* dst[r][c] = src[r][c] + w[c]; w is an F32 vector of n_cols (a bias). In place allowed. */
    int (*add_w)(void *ctx, backend_view src, const backend_weight *w, backend_view dst,
                 uint32_t n_rows, uint32_t n_cols);
    /* dst[i] = a[i] + b[i] for n elements (the residual). dst may alias a or b. */
    int (*add)(void *ctx, backend_view a, backend_view b, backend_view dst, size_t n);
    /* y[t][r] = sum_c w[r][c] * x[t][c] for t < n_tok, r < w->ne1, c < w->ne0.
     * x: n_tok rows of ne0 floats; y: n_tok rows of ne1 floats (y must not alias x).
     * Mat-vec when n_tok == 1, mat-mat otherwise; the CPU backend quantizes x
     * on the fly to the weight type's activation type (as ggml does). */
    int (*matmul)(void *ctx, const backend_weight *w, backend_view x, uint32_t n_tok,
                  backend_view y);
    /* Optional (NULL: the session calls matmul once per weight): y[i] = the
     * matmul of x with w[i] for n (2..BACKEND_MATMUL_N_MAX) weights of one
     * type and ne0, the same floats as n matmul calls, in one go (q, k and v
     * of a layer; gate and up). No y[i] may alias x or another y. */
    int (*matmul_n)(void *ctx, const backend_weight *const *w, int n, backend_view x, uint32_t n_tok,
                    const backend_view *y);
    /* Rotate, in place, n_tok rows of n_head heads of head_dim floats each
     * (row stride n_head*head_dim), row t at position pos[t] (host memory). */
    int (*rope)(void *ctx, backend_view x, uint32_t n_tok, uint32_t n_head, uint32_t head_dim,
                const int32_t *pos, const backend_rope_params *p);
    /* Store n_rows rows of n_cols F32 from src into the F16 buffer dst at
     * row dst_row (row stride n_cols) with round-to-nearest F16 conversion. */
    int (*store_f16)(void *ctx, backend_view src, uint32_t n_rows, uint32_t n_cols,
                     backend_view dst, uint32_t dst_row);
    /* Causal attention over an F16 KV cache.
     * q: n_tok rows of n_head*head_dim floats; query t is at position pos0 + t
     * and attends to the positions 0 .. pos0 + t (inclusive) that p->n_swa
     * leaves visible.
     * k, v: F16 caches, rows of n_head_kv*head_dim: a linear cache (row r =
     * position r, at least pos0 + n_tok rows valid) or a ring of p->n_cells
     * rows (backend_attn_params). Query head h uses kv head h / (n_head / n_head_kv).
     * out: n_tok rows of n_head*head_dim floats = softmax(scale * q.k^T) . v
     * (must not alias q). A backend that cannot honour n_swa or n_cells
     * returns BACKEND_EUNSUPPORTED. */
    int (*attention)(void *ctx, backend_view q, backend_view k, backend_view v,
                     backend_view out, uint32_t n_tok, uint32_t pos0, uint32_t n_head,
                     uint32_t n_head_kv, uint32_t head_dim, const backend_attn_params *p);
    /* dst[i] = silu(gate[i]) * up[i] over n_rows rows of n_cols elements,
     * silu(x) = x / (1 + exp(-x)). dst may alias gate or up. (Rows matter to
     * the CPU backend only: ggml's SwiGLU treats the last n_cols % 16 of a row
     * apart.) */
    int (*silu_mul)(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                    uint32_t n_cols);
    /* (optional) dst[i] = gelu(gate[i]) * up[i] (ggml_geglu: GELU with the
     * tanh approximation, looked up in ggml's F16 table on the CPU; 0 below
     * -10, the identity above 10), rows as silu_mul. dst may alias gate or up. */
    int (*gelu_mul)(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                    uint32_t n_cols);
    /* (optional) dst[i] = src[i] * s for n elements (ggml_scale). In place allowed. */
    int (*scale)(void *ctx, backend_view src, backend_view dst, size_t n, float s);

    /* ---- mixture of experts (optional; all present with BACKEND_CAP_MOE) ---- */
    /* The router: for each of n_tok rows of n_expert logits, the n_used
     * experts chosen (ggml_argsort_top_k: libstdc++'s std::sort of the
     * indices by descending score, ties as it leaves them) into ids (host
     * memory, n_tok * n_used, best first) and their weights into `weights`
     * (n_tok * n_used floats, same order): with BACKEND_MOE_SOFTMAX the
     * softmax probabilities of the chosen (ggml_soft_max over all experts),
     * divided by their sum (a double sum, clamped below at 6.103515625e-5)
     * when `norm`; with BACKEND_MOE_TOPK_SOFTMAX the softmax of the chosen
     * logits. */
    int (*moe_route)(void *ctx, backend_view logits, uint32_t n_tok, uint32_t n_expert, uint32_t n_used,
                     backend_moe_gating gating, bool norm, int32_t *ids, backend_view weights);
    /* Expert products (ggml_mul_mat_id): for t < n_tok and slot s < n_used,
     * with e = ids[t * n_used + s] (< w->ne2, checked by the caller),
     * y[t * n_used + s][r] = sum_c W_e[r][c] * x[t * x_per_tok + (x_per_tok == 1 ? 0 : s)][c]
     * (x_per_tok 1: every slot of a token reads the token's row; n_used: each
     * slot its own row). Every output follows ggml's one-token order for the
     * type, whatever n_tok; only the chosen experts' rows are read. */
    int (*matmul_id)(void *ctx, const backend_weight *w, backend_view x, uint32_t x_per_tok,
                     const int32_t *ids, uint32_t n_tok, uint32_t n_used, backend_view y);
    /* dst[r][c] = src[r][c] + b[ids[r]][c] for n_rows rows of n_cols: b an F32
     * weight of ne1 experts x ne0 = n_cols (ggml_add_id, the biases of
     * gpt-oss's experts). In place allowed. */
    int (*add_id)(void *ctx, backend_view src, const backend_weight *b, const int32_t *ids, backend_view dst,
                  uint32_t n_rows, uint32_t n_cols);
    /* dst[i] = x / (1 + expf(-alpha x)) * (y + 1) with x = min(gate[i], limit),
     * y = clamp(up[i], -limit, limit) (ggml_swiglu_oai; libm expf, no fma).
     * dst may alias gate or up. */
    int (*swiglu_oai)(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                      uint32_t n_cols, float alpha, float limit);
    /* dst[t][c] = y[t n_used][c] w[t n_used] + y[t n_used + 1][c] w[t n_used + 1] + ...:
     * each product rounded, the sum from the first slot to the last
     * (ggml_mul, then ggml_add slot after slot). dst must not alias y. */
    int (*moe_combine)(void *ctx, backend_view y, backend_view w, uint32_t n_tok, uint32_t n_used,
                       uint32_t n_cols, backend_view dst);

    /* (optional) Wait until all submitted ops are done. */
    int (*sync)(void *ctx);
} backend_ops;

/* A backend instance: its ops and context. */
typedef struct backend {
    const backend_ops *ops;
    void *ctx;
} backend;

/* The CPU reference backend with `n_threads` worker threads (0 = one per
 * core). Returns NULL on allocation failure. Free with backend_free. */
backend *backend_cpu_new(int n_threads);

/* Number of threads a CPU backend uses (1 for other backends). */
int backend_cpu_threads(const backend *b);

/* What the CPU backend keeps for a matrix product with weight w over n_tok
 * tokens (for memory estimates): *act bytes of activations quantized for
 * it and *rounded bytes of activations rounded for an F16 / BF16 weight (two
 * buffers of the backend, each grown to the largest product), *per_thread
 * bytes each worker thread keeps. 0 for a type it cannot multiply. */
void backend_cpu_matmul_sizes(const backend_weight *w, uint32_t n_tok, uint64_t *act, uint64_t *rounded,
                              uint64_t *per_thread);

/* Bytes of the work buffer each worker thread takes for the CPU backend's
 * attention over n_head query heads sharing n_head_kv KV heads of head_dim. */
uint64_t backend_cpu_attn_thread_bytes(uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim);

/* Destroy a backend (calls ops->free); accepts NULL. */
void backend_free(backend *b);

/* Human-readable text of a BACKEND_E* code. */
const char *backend_strerror(int code);

#endif
