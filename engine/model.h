/* model: a Llama-family or Qwen2 transformer bound to the tensors of an open
 * GGUF file (zero copy: weights are used in place from the mapping).
 *
 * Supported `general.architecture` values: "llama" (Llama 2, Llama 3.x,
 * TinyLlama, Mistral-style, SmolLM2) and "qwen2" (Qwen2, Qwen2.5). */
#ifndef GGSCOPE_MODEL_H
#define GGSCOPE_MODEL_H

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

typedef enum { MODEL_ARCH_LLAMA = 0, MODEL_ARCH_QWEN2 = 1 } model_arch;

/* Hyper-parameters (from `{arch}.*` metadata, with the spec's defaults). */
typedef struct {
    model_arch arch;
    char arch_name[16];        /* "llama" / "qwen2" */
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
    float rope_freq_scale;     /* 1 / {arch}.rope.scaling.factor for linear scaling, else 1 */
    backend_rope_mode rope_mode; /* NORMAL for llama, NEOX for qwen2 */
    bool has_rope_freqs;       /* rope_freqs.weight present (Llama 3.1+) */
    bool tied_embeddings;      /* output.weight absent: token_embd is reused */
    bool has_qkv_bias;         /* attn_q/k/v.bias present (qwen2) */
} model_hparams;

/* The weights of one block. Biases have data == NULL when absent. */
typedef struct {
    backend_weight attn_norm;  /* [n_embd] F32 */
    backend_weight wq;         /* [n_embd] x [n_head * head_dim] */
    backend_weight wk;         /* [n_embd] x [n_head_kv * head_dim] */
    backend_weight wv;         /* [n_embd] x [n_head_kv * head_dim] */
    backend_weight wo;         /* [n_head * head_dim] x [n_embd] */
    backend_weight bq, bk, bv; /* [n_head*head_dim], [n_head_kv*head_dim] x2, F32 (optional) */
    backend_weight ffn_norm;   /* [n_embd] F32 */
    backend_weight ffn_gate;   /* [n_embd] x [n_ff] */
    backend_weight ffn_up;     /* [n_embd] x [n_ff] */
    backend_weight ffn_down;   /* [n_ff] x [n_embd] */
} model_layer;

typedef struct model {
    const gguf_file *file;     /* not owned: must outlive the model */
    model_hparams hp;
    backend_weight tok_embd;   /* [n_embd] x [n_vocab] */
    backend_weight output_norm;/* [n_embd] F32 */
    backend_weight output;     /* [n_embd] x [n_vocab] (== tok_embd when tied) */
    const float *rope_freqs;   /* [n_rot/2] F32, or NULL */
    model_layer *layers;       /* n_layer entries */
    const backend *prepared;   /* backend whose weight_prepare set the weights' priv, or NULL */
} model;

/* Bind the model in `f` (which must stay open while the model lives).
 * Returns NULL on failure with *status (if not NULL) set and a one-line
 * message in msg (if not NULL), naming the missing tensor, the bad shape or
 * the unsupported architecture. Free with model_free. */
model *model_load(const gguf_file *f, model_status *status, char *msg, size_t cap);

/* Free a model (not the file); accepts NULL. */
void model_free(model *m);

/* Bytes of weight data the model references (for memory figures). */
uint64_t model_weight_bytes(const model *m);

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
