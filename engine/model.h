/* model: a transformer bound to the tensors of an open GGUF file (zero
 * copy: weights are used in place from the mapping, unless model_copy
 * moves them into memory), described by its
 * architecture's row in the table of model_arch.c (docs/engine.md lists the
 * architectures and what is special about each). */
#ifndef GGSCOPE_MODEL_H
#define GGSCOPE_MODEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "gguf.h"

typedef enum {
    MODEL_OK = 0,
    MODEL_EARCH,      /* missing or unsupported general.architecture */
    MODEL_EPARAM,     /* a hyper-parameter is missing, has the wrong type or is out of range */
    MODEL_EMISSING,   /* a required tensor is absent */
    MODEL_ESHAPE,     /* a tensor has the wrong shape */
    MODEL_ETYPE,      /* a tensor has a type the engine cannot use there */
    MODEL_ENOMEM,
    MODEL_EARG,
} model_status;

typedef enum {
    MODEL_ARCH_LLAMA = 0,
    MODEL_ARCH_QWEN2,
    MODEL_ARCH_QWEN3,
    MODEL_ARCH_GEMMA3,
    MODEL_ARCH_PHI3,
    MODEL_ARCH_SMOLLM3,
    MODEL_ARCH_OLMO2,
    MODEL_ARCH_GRANITE,
    MODEL_ARCH_MISTRAL3,
    MODEL_ARCH_QWEN3MOE,
    MODEL_ARCH_GPT_OSS,
    MODEL_ARCH_COUNT
} model_arch;

/* What a layer's forward pass does beyond the common pre-norm block
 * (model_arch.c sets these from the architecture's table row). */
enum {
    MODEL_F_QK_NORM_HEAD = 1u << 0,  /* RMS norm of Q and K per head (attn_q_norm / attn_k_norm [head_dim]) */
    MODEL_F_QK_NORM_FULL = 1u << 1,  /* RMS norm of the whole Q and K projections */
    MODEL_F_NO_PRE_NORM = 1u << 2,   /* no attn_norm / ffn_norm: the blocks read the residual */
    MODEL_F_POST_NORMS = 1u << 3,    /* post_attention_norm and post_ffw_norm on the block outputs */
    MODEL_F_GELU = 1u << 4,          /* GELU-gated feed-forward (ggml_geglu) instead of SwiGLU */
    MODEL_F_Q_PRESCALE = 1u << 5,    /* Q multiplied by q_scale after RoPE, attention scale 1 */
    MODEL_F_SWIGLU_OAI = 1u << 6,    /* experts' activation: gpt-oss's clamped SwiGLU (swiglu_oai) */
    MODEL_F_LAST_ALL_ROWS = 1u << 7, /* the last layer's feed-forward on every row, not only the rows that
                                      * give logits (gpt-oss gathers them after the last layer) */
};

/* Hyper-parameters (from `{arch}.*` metadata, with llama.cpp's defaults). */
typedef struct {
    model_arch arch;
    char arch_name[16];        /* general.architecture */
    uint32_t flags;            /* MODEL_F_* */
    uint32_t n_vocab;          /* rows of token_embd */
    uint32_t n_ctx_train;      /* {arch}.context_length (default 2048) */
    uint32_t n_embd;           /* {arch}.embedding_length */
    uint32_t n_layer;          /* {arch}.block_count */
    uint32_t n_ff;             /* {arch}.feed_forward_length */
    uint32_t n_head;           /* {arch}.attention.head_count */
    uint32_t n_head_kv;        /* {arch}.attention.head_count_kv (default n_head) */
    uint32_t head_dim;         /* {arch}.attention.key_length (default n_embd / n_head) */
    uint32_t n_rot;            /* {arch}.rope.dimension_count (default head_dim) */
    float rms_eps;             /* {arch}.attention.layer_norm_rms_epsilon (default 1e-5) */
    float rope_freq_base;      /* {arch}.rope.freq_base (default 10000) */
    float rope_freq_scale;     /* 1 / {arch}.rope.scaling.factor for linear and YaRN scaling, else 1 */
    backend_rope_mode rope_mode; /* NORMAL (llama, smollm3, granite, mistral3) or NEOX */
    float rope_ext_factor;     /* 1 with YaRN scaling, else 0 */
    float rope_attn_factor;    /* YaRN / LongRoPE mscale (1 = none) */
    float yarn_beta_fast, yarn_beta_slow; /* YaRN correction range (32, 1; mistral3 reads keys) */
    float yarn_log_mul;        /* mistral3: rope.scaling.yarn_log_multiplier (0 = none) */
    uint32_t n_ctx_orig;       /* {arch}.rope.scaling.original_context_length (default n_ctx_train) */
    uint32_t n_swa;            /* sliding window of the sliding layers (0 = none) */
    float rope_freq_base_swa;  /* RoPE base of the sliding layers (gemma3, gpt-oss) */
    float kq_scale;            /* attention scale (1/sqrt(head_dim) unless the family says) */
    float q_scale;             /* MODEL_F_Q_PRESCALE: Q's multiplier */
    float embd_scale;          /* token embeddings multiplied by it (0 = not) */
    float residual_scale;      /* block outputs multiplied by it before the residual add (0 = not) */
    float logit_scale;         /* logits multiplied by it (0 = not) */
    float attn_temp_scale;     /* mistral3: per-position Q temperature (0 = none) */
    uint32_t n_expert;         /* {arch}.expert_count: experts per MoE layer (0: dense feed-forward) */
    uint32_t n_expert_used;    /* {arch}.expert_used_count (layer 0's when per layer): experts chosen per token */
    uint32_t n_ff_exp;         /* rows of one expert's gate / up (expert_feed_forward_length, or n_ff) */
    backend_moe_gating moe_gating; /* how the router chooses (softmax then top k; gpt-oss top k then softmax) */
    bool moe_norm_w;           /* the chosen experts' weights divided by their sum (llama, qwen3moe) */
    bool rope_off;             /* no RoPE on any layer (granite without rope.scaling.finetuned) */
    bool has_rope_freqs;       /* rope_freqs.weight present (Llama 3.1+) */
    bool has_rope_factors;     /* rope_factors_long / _short present (LongRoPE) */
    bool tied_embeddings;      /* output.weight absent: token_embd is reused */
    bool has_qkv_bias;         /* attn_q/k/v.bias present (qwen2) */
    bool fused_qkv;            /* Q, K and V are row ranges of one attn_qkv tensor */
    bool fused_gate_up;        /* gate and up are the halves of one ffn_up tensor (phi3) */
} model_hparams;

/* The weights of one block. Optional weights have data == NULL when absent. */
typedef struct {
    backend_weight attn_norm;  /* [n_embd] F32 (absent with MODEL_F_NO_PRE_NORM) */
    backend_weight wq;         /* [n_embd] x [n_head * head_dim] */
    backend_weight wk;         /* [n_embd] x [n_head_kv * head_dim] */
    backend_weight wv;         /* [n_embd] x [n_head_kv * head_dim] */
    backend_weight wo;         /* [n_head * head_dim] x [n_embd] */
    backend_weight bq, bk, bv; /* [n_head*head_dim], [n_head_kv*head_dim] x2, F32 (optional) */
    backend_weight bo;         /* [n_embd] F32 (optional) */
    backend_weight q_norm;     /* [head_dim] or [n_head*head_dim] F32 (QK_NORM_*) */
    backend_weight k_norm;     /* [head_dim] or [n_head_kv*head_dim] F32 */
    backend_weight post_attn_norm; /* [n_embd] F32 (POST_NORMS) */
    backend_weight ffn_norm;   /* [n_embd] F32 (absent with MODEL_F_NO_PRE_NORM) */
    backend_weight ffn_gate;   /* [n_embd] x [n_ff] */
    backend_weight ffn_up;     /* [n_embd] x [n_ff] */
    backend_weight ffn_down;   /* [n_ff] x [n_embd] */
    backend_weight ffn_gate_b, ffn_up_b, ffn_down_b; /* F32 (optional) */
    backend_weight post_ffw_norm;  /* [n_embd] F32 (POST_NORMS) */
    /* mixture of experts (hp.n_expert > 0; then ffn_gate/up/down are absent) */
    backend_weight ffn_gate_inp;   /* [n_embd] x [n_expert]: the router */
    backend_weight ffn_gate_inp_b; /* [n_expert] F32 (optional: gpt-oss) */
    backend_weight ffn_gate_exps;  /* [n_embd] x [n_ff_exp] x n_expert (ne2) */
    backend_weight ffn_up_exps;    /* [n_embd] x [n_ff_exp] x n_expert */
    backend_weight ffn_down_exps;  /* [n_ff_exp] x [n_embd] x n_expert */
    backend_weight ffn_gate_exps_b, ffn_up_exps_b; /* [n_ff_exp] x [n_expert] F32 (optional: gpt-oss) */
    backend_weight ffn_down_exps_b;/* [n_embd] x [n_expert] F32 (optional: gpt-oss) */
    backend_weight attn_sinks;     /* [n_head] F32 (optional: gpt-oss's attention sinks) */
    uint32_t n_expert_used;    /* experts whose outputs this layer sums (<= hp.n_expert_used) */
    bool swa;                  /* a sliding-window layer (hp.n_swa) */
    bool rope;                 /* RoPE applied (smollm3 and granite skip it on some layers) */
    float rope_base, rope_scale, rope_ext, rope_attn; /* this layer's RoPE parameters */
} model_layer;

#define MODEL_LAYER_WEIGHTS 29 /* backend_weight fields of model_layer, in order */

typedef struct model {
    const gguf_file *file;     /* not owned: must outlive the model */
    model_hparams hp;
    backend_weight tok_embd;   /* [n_embd] x [n_vocab] */
    backend_weight output_norm;/* [n_embd] F32 */
    backend_weight output;     /* [n_embd] x [n_vocab] (== tok_embd when tied) */
    const float *rope_freqs;   /* [n_rot/2] F32, or NULL */
    const float *rope_factors_long, *rope_factors_short; /* [n_rot/2] F32 (LongRoPE), or NULL */
    model_layer *layers;       /* n_layer entries */
    const backend *prepared;   /* backend whose weight_prepare set the weights' priv, or NULL */
    struct model_copy *copy;   /* model_copy's copy of the weights in memory, or NULL (the mapping) */
    bool shapes_only;          /* model_load_shapes: every data pointer is NULL; nothing evaluates it */
} model;

/* Whether weight slot w is bound (an optional tensor the file has). Use it,
 * not w->data, for presence: a shape-only model binds no data. */
static inline bool model_weight_bound(const backend_weight *w)
{
    return w->row_bytes != 0;
}

/* The names of the supported architectures, comma separated ("llama, qwen2, ..."). */
const char *model_arch_list(void);

/* Whether general.architecture `name` is one the engine runs. */
bool model_arch_supported(const char *name);

/* The RoPE frequency factors a session of n_ctx positions uses: rope_freqs,
 * else LongRoPE's long factors when GGML_PAD(n_ctx, 256) exceeds the
 * original context, else its short ones; NULL when the model has none. */
const float *model_rope_factors(const model *m, uint32_t n_ctx);

/* Ops the forward pass of `m` needs that backend `be` lacks: 0 when it has
 * them all, else BACKEND_EUNSUPPORTED with a one-line reason in why. */
int model_backend_check(const model *m, const backend *be, char *why, size_t cap);

/* Bind the model in `f` (which must stay open while the model lives).
 * Returns NULL on failure with *status (if not NULL) set and a one-line
 * message in msg (if not NULL), naming the missing tensor, the bad shape or
 * the unsupported architecture. Free with model_free. */
model *model_load(const gguf_file *f, model_status *status, char *msg, size_t cap);

/* model_load for the shapes only: the same checks and the same hyper-
 * parameters, types and sizes, presence from the tensor table, but every
 * data pointer NULL (rope_freqs and the LongRoPE factors too), so that it
 * works on a file whose tensor data is not mapped (a remote file,
 * gguf_is_remote). For sizing (engine/run/memest) only: session_new,
 * runner_open and model_prepare refuse it (m->shapes_only). */
model *model_load_shapes(const gguf_file *f, model_status *status, char *msg, size_t cap);

/* Free a model (not the file); accepts NULL. */
void model_free(model *m);

/* Bytes of weight data the model references (for memory figures). */
uint64_t model_weight_bytes(const model *m);

/* Copy the weights a forward pass reads whole (all but an untied token
 * embedding, which is only gathered row by row and stays in the mapping)
 * out of the file into anonymous memory that asks for transparent huge
 * pages, and point the model at the copy: a mapped file's pages cost more
 * to stream than huge anonymous ones (docs/kernels.md). The copy is made
 * read-only; the resident size is the same as the mapping's once every
 * weight has been read. Read with gguf_read_file (a mapped file's pages
 * never join the resident set), in pieces on up to four threads, calling progress(ctx, done, total)
 * after each and stopping with BACKEND_ECANCELLED when *cancel is set
 * (progress and cancel may be NULL). Returns 0 (also when already copied),
 * BACKEND_EARG (a shape-only model, or one prepared for a device), or
 * BACKEND_ENOMEM / the read's failure, with a message; the model then still
 * uses its mapping. Sessions must be made after it and freed before
 * model_uncopy. */
int model_copy(model *m, const atomic_bool *cancel, void (*progress)(void *ctx, uint64_t done, uint64_t total),
               void *ctx, char *msg, size_t cap);

/* Point the model back at the file's mapping and free the copy; accepts a
 * model without one (and NULL). model_free does it. */
void model_uncopy(model *m);

/* Bytes model_copy would copy (and has copied, when m->copy is set). */
uint64_t model_copy_bytes(const model *m);

/* Prepare every weight of `m` once for backend `be` (weight_prepare: the
 * Vulkan backend uploads it to device memory), keeping the handles in the
 * weights (`priv`) so that ops use them directly; a tied output shares the
 * embedding's handle. A no-op returning 0 for a backend without
 * weight_prepare (the CPU). Returns 0, or a BACKEND_E* code with a message
 * naming the tensor in msg (nothing stays prepared then); BACKEND_EARG when
 * `m` is prepared for another backend. The caller calls model_release before
 * freeing `be` and before model_free; sessions on `m` and `be` must be freed
 * first. */
int model_prepare(model *m, backend *be, char *msg, size_t cap);

/* Release what model_prepare made (through the backend it prepared for) and
 * forget that backend; accepts NULL and an unprepared model. */
void model_release(model *m);

#endif
