/* model_internal: what model.c (loading, binding) and model_arch.c (the
 * table of architectures and their hooks) share. */
#ifndef GGSCOPE_MODEL_INTERNAL_H
#define GGSCOPE_MODEL_INTERNAL_H

#include "model.h"

#define MODEL_MAX_DIM (1u << 24) /* sanity bound of any single dimension */

typedef struct {
    const gguf_file *f;
    bool shapes;          /* model_load_shapes: no tensor data bound */
    model_status status;
    char *msg;
    size_t cap;
} model_loader;

/* Loader options of an architecture (model_arch.c's table). */
enum {
    MODEL_A_QKV_BIAS = 1u << 0,        /* attn_q/k/v.bias required (qwen2) */
    MODEL_A_FUSED_QKV = 1u << 1,       /* attn_qkv accepted in place of attn_q/k/v */
    MODEL_A_FUSED_UP = 1u << 2,        /* ffn_up holds gate and up; no ffn_gate (phi3) */
    MODEL_A_OUTPUT_REQUIRED = 1u << 3, /* output.weight required (no tying) */
    MODEL_A_BIASES = 1u << 4,          /* optional attn_output / ffn biases */
    MODEL_A_ROPE_FACTORS = 1u << 5,    /* rope_factors_long / _short read */
    MODEL_A_MOE = 1u << 6,             /* experts required (expert_count > 0): no dense feed-forward */
    MODEL_A_MOE_OPT = 1u << 7,         /* experts when expert_count > 0 (llama: Mixtral) */
    MODEL_A_MOE_BIASES = 1u << 8,      /* router and expert biases required (gpt-oss) */
    MODEL_A_ATTN_SINKS = 1u << 9,      /* attn_sinks required (gpt-oss) */
    MODEL_A_ATTN_BIASES = 1u << 10,    /* attn_q/k/v.bias optional, attn_output.bias required (gpt-oss) */
    MODEL_A_FFN_NORM_POST_ATTN = 1u << 11, /* post_attention_norm is the feed-forward's pre-norm (gpt-oss) */
};

typedef struct model_arch_row {
    const char *name;
    model_arch arch;
    backend_rope_mode rope_mode;
    uint32_t flags;       /* MODEL_F_* (model.h) */
    uint32_t opts;        /* MODEL_A_* */
    uint32_t swa_pattern; /* default pattern of a file that sets a sliding window; 0: no sliding layers */
    /* family keys, after the common ones; false with the loader's message set */
    bool (*hparams)(model_loader *L, model_hparams *hp);
    /* per-layer variations (RoPE on or off, the RoPE of sliding layers) */
    void (*layer)(const model_hparams *hp, uint32_t il, model_layer *ly);
} model_arch_row;

/* The row of general.architecture `name`, or NULL. */
const model_arch_row *model_arch_find(const char *name);

/* Slot i of the model's weights (i < MODEL_SLOTS(m)): the embedding, the
 * output norm, the output, then each layer's MODEL_LAYER_WEIGHTS; NULL for a
 * slot without data and for a tied output (it shares the embedding's data). */
#define MODEL_SLOTS(m) (3 + (size_t)(m)->hp.n_layer * MODEL_LAYER_WEIGHTS)
backend_weight *model_weight_slot(model *m, size_t i);

void *model_fail(model_loader *L, model_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* `{arch}.suffix` as u32 / f32 / bool; dflt when absent (u32: required when dflt == 0). */
bool model_hp_u32(model_loader *L, const char *arch, const char *suffix, uint32_t dflt, uint32_t *out);
bool model_hp_f32(model_loader *L, const char *arch, const char *suffix, float dflt, float *out);
/* `{arch}.suffix` as u32 or as an array of one u32 per layer: the value of
 * layer il (< n_layer); dflt when absent (required when dflt == 0). */
bool model_hp_u32_layer(model_loader *L, const char *arch, const char *suffix, uint32_t n_layer, uint32_t il,
                        uint32_t dflt, uint32_t *out);
bool model_hp_bool(model_loader *L, const char *arch, const char *suffix, bool dflt, bool *out);

#endif
