/* model_arch: the architectures the engine runs, one table row each (tensor
 * roles, norms, activations, scales and loader options), plus a few hooks
 * where a family reads its own keys or varies its layers. The forward pass
 * (session.c) reads only model_hparams and model_layer; llama.cpp's
 * src/models/<arch>.cpp is the reference for every row. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "model_internal.h"

/* gemma3: sliding layers, embeddings scaled by sqrt(n_embd), Q pre-scaled. */
static bool gemma3_hparams(model_loader *L, model_hparams *hp)
{
    float softcap;
    if (!model_hp_f32(L, hp->arch_name, "final_logit_softcapping", 0.0f, &softcap) ||
        !model_hp_f32(L, hp->arch_name, "rope.freq_base_swa", 10000.0f, &hp->rope_freq_base_swa))
        return false;
    if (softcap != 0.0f) {
        model_fail(L, MODEL_EPARAM, "gemma3.final_logit_softcapping = %g is not supported", softcap);
        return false;
    }
    if (!(hp->rope_freq_base_swa > 0.0f)) {
        model_fail(L, MODEL_EPARAM, "gemma3.rope.freq_base_swa out of range");
        return false;
    }
    hp->embd_scale = sqrtf((float)hp->n_embd);
    /* llama.cpp: 1/sqrt(n_embd / n_head) for the 62-layer 27B, else 1/sqrt(head_dim) */
    hp->q_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                                    : 1.0f / sqrtf((float)hp->head_dim);
    hp->kq_scale = 1.0f;
    return true;
}

static void gemma3_layer(const model_hparams *hp, uint32_t il, model_layer *ly)
{
    (void)il;
    if (ly->swa) { /* the local RoPE: its own base, no scaling */
        ly->rope_base = hp->rope_freq_base_swa;
        ly->rope_scale = 1.0f;
    }
}

/* phi3: Q pre-scaled by 1/sqrt(head_dim); LongRoPE factors; no sliding
 * window (llama.cpp turns it off for phi3). */
static bool phi3_hparams(model_loader *L, model_hparams *hp)
{
    (void)L;
    hp->q_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->kq_scale = 1.0f;
    return true;
}

/* smollm3: no RoPE on every fourth layer (NoPE). */
static void smollm3_layer(const model_hparams *hp, uint32_t il, model_layer *ly)
{
    (void)hp;
    ly->rope = (il + 1) % 4 != 0;
}

/* olmo2: sliding layers (OLMo 3) keep the global base, unscaled. */
static void olmo2_layer(const model_hparams *hp, uint32_t il, model_layer *ly)
{
    (void)hp;
    (void)il;
    if (ly->swa) {
        ly->rope_scale = 1.0f;
        ly->rope_ext = 0.0f;
        ly->rope_attn = 1.0f;
    }
}

/* granite: the four scales; rope.scaling.finetuned switches RoPE (default on). */
static bool granite_hparams(model_loader *L, model_hparams *hp)
{
    const char *a = hp->arch_name;
    float logit, attn;
    bool finetuned;
    if (!model_hp_f32(L, a, "logit_scale", 0.0f, &logit) ||
        !model_hp_f32(L, a, "residual_scale", 0.0f, &hp->residual_scale) ||
        !model_hp_f32(L, a, "embedding_scale", 0.0f, &hp->embd_scale) ||
        !model_hp_f32(L, a, "attention.scale", 0.0f, &attn) ||
        !model_hp_bool(L, a, "rope.scaling.finetuned", true, &finetuned))
        return false;
    if (logit == 0.0f) {
        model_fail(L, MODEL_EPARAM, "required key %s.logit_scale is missing or 0", a);
        return false;
    }
    hp->logit_scale = 1.0f / logit; /* llama.cpp multiplies by the reciprocal */
    if (attn != 0.0f)
        hp->kq_scale = attn;
    hp->rope_off = !finetuned;
    return true;
}

/* mistral3: its YaRN keys (the loader then computes the attention factor)
 * and the Llama-4-style attention temperature. */
static bool mistral3_hparams(model_loader *L, model_hparams *hp)
{
    const char *a = hp->arch_name;
    return model_hp_f32(L, a, "rope.scaling.yarn_beta_fast", 32.0f, &hp->yarn_beta_fast) &&
           model_hp_f32(L, a, "rope.scaling.yarn_beta_slow", 1.0f, &hp->yarn_beta_slow) &&
           model_hp_f32(L, a, "rope.scaling.yarn_log_multiplier", 0.0f, &hp->yarn_log_mul) &&
           model_hp_f32(L, a, "attention.temperature_scale", 0.0f, &hp->attn_temp_scale);
}

/* qwen3moe: the experts' width from expert_feed_forward_length, else
 * feed_forward_length / expert_used_count (llama.cpp's fallback). */
static bool qwen3moe_hparams(model_loader *L, model_hparams *hp)
{
    if (!model_hp_u32_layer(L, hp->arch_name, "expert_feed_forward_length", hp->n_layer, 0, UINT32_MAX,
                            &hp->n_ff_exp))
        return false;
    if (hp->n_ff_exp == UINT32_MAX)
        hp->n_ff_exp = hp->n_ff / hp->n_expert_used;
    if (!hp->n_ff_exp) {
        model_fail(L, MODEL_EPARAM, "qwen3moe needs expert_feed_forward_length or feed_forward_length");
        return false;
    }
    return true;
}

/* gpt-oss: the experts' width and the sliding window are required; the
 * sliding layers' RoPE base (the global one unless rope.freq_base_swa);
 * the router takes the top k logits, then their softmax, unnormalised. */
static bool gpt_oss_hparams(model_loader *L, model_hparams *hp)
{
    if (!model_hp_u32_layer(L, hp->arch_name, "expert_feed_forward_length", hp->n_layer, 0, 0, &hp->n_ff_exp) ||
        !model_hp_f32(L, hp->arch_name, "rope.freq_base_swa", hp->rope_freq_base, &hp->rope_freq_base_swa))
        return false;
    if (!hp->n_swa) {
        model_fail(L, MODEL_EPARAM, "required key gpt-oss.attention.sliding_window is missing");
        return false;
    }
    if (!(hp->rope_freq_base_swa > 0.0f)) {
        model_fail(L, MODEL_EPARAM, "gpt-oss.rope.freq_base_swa out of range");
        return false;
    }
    hp->moe_gating = BACKEND_MOE_TOPK_SOFTMAX;
    hp->moe_norm_w = false;
    return true;
}

/* gpt-oss: sliding layers use their own base, with the same (YaRN) scaling. */
static void gpt_oss_layer(const model_hparams *hp, uint32_t il, model_layer *ly)
{
    (void)il;
    if (ly->swa)
        ly->rope_base = hp->rope_freq_base_swa;
}

static const model_arch_row g_rows[] = {
    {"llama", MODEL_ARCH_LLAMA, BACKEND_ROPE_NORMAL, 0, MODEL_A_MOE_OPT, 0, NULL, NULL},
    {"qwen2", MODEL_ARCH_QWEN2, BACKEND_ROPE_NEOX, 0, MODEL_A_QKV_BIAS, 0, NULL, NULL},
    {"qwen3", MODEL_ARCH_QWEN3, BACKEND_ROPE_NEOX, MODEL_F_QK_NORM_HEAD, MODEL_A_FUSED_QKV, 0, NULL, NULL},
    {"gemma3", MODEL_ARCH_GEMMA3, BACKEND_ROPE_NEOX,
     MODEL_F_QK_NORM_HEAD | MODEL_F_POST_NORMS | MODEL_F_GELU | MODEL_F_Q_PRESCALE, MODEL_A_FUSED_QKV, 6,
     gemma3_hparams, gemma3_layer},
    {"phi3", MODEL_ARCH_PHI3, BACKEND_ROPE_NEOX, MODEL_F_Q_PRESCALE,
     MODEL_A_FUSED_QKV | MODEL_A_FUSED_UP | MODEL_A_ROPE_FACTORS, 0, phi3_hparams, NULL},
    {"smollm3", MODEL_ARCH_SMOLLM3, BACKEND_ROPE_NORMAL, 0, MODEL_A_FUSED_QKV, 0, NULL, smollm3_layer},
    {"olmo2", MODEL_ARCH_OLMO2, BACKEND_ROPE_NEOX, MODEL_F_QK_NORM_FULL | MODEL_F_NO_PRE_NORM | MODEL_F_POST_NORMS,
     MODEL_A_FUSED_QKV | MODEL_A_OUTPUT_REQUIRED, 4, NULL, olmo2_layer},
    {"granite", MODEL_ARCH_GRANITE, BACKEND_ROPE_NORMAL, 0,
     MODEL_A_FUSED_QKV | MODEL_A_BIASES | MODEL_A_ROPE_FACTORS, 0, granite_hparams, NULL},
    {"mistral3", MODEL_ARCH_MISTRAL3, BACKEND_ROPE_NORMAL, 0,
     MODEL_A_FUSED_QKV | MODEL_A_BIASES | MODEL_A_ROPE_FACTORS, 0, mistral3_hparams, NULL},
    {"qwen3moe", MODEL_ARCH_QWEN3MOE, BACKEND_ROPE_NEOX, MODEL_F_QK_NORM_HEAD, MODEL_A_FUSED_QKV | MODEL_A_MOE, 0,
     qwen3moe_hparams, NULL},
    {"gpt-oss", MODEL_ARCH_GPT_OSS, BACKEND_ROPE_NEOX, MODEL_F_SWIGLU_OAI | MODEL_F_LAST_ALL_ROWS,
     MODEL_A_MOE | MODEL_A_MOE_BIASES | MODEL_A_ATTN_SINKS | MODEL_A_ATTN_BIASES | MODEL_A_FFN_NORM_POST_ATTN |
         MODEL_A_OUTPUT_REQUIRED,
     2, gpt_oss_hparams, gpt_oss_layer},
};

const model_arch_row *model_arch_find(const char *name)
{
    for (size_t i = 0; i < sizeof g_rows / sizeof g_rows[0]; i++)
        if (!strcmp(g_rows[i].name, name))
            return &g_rows[i];
    return NULL;
}

bool model_arch_supported(const char *name)
{
    return name && model_arch_find(name) != NULL;
}

/* The names of g_rows, comma-separated: written once, from the table itself. */
static char g_list[256];
static pthread_once_t g_list_once = PTHREAD_ONCE_INIT;

static void list_init(void)
{
    size_t at = 0;
    for (size_t i = 0; i < sizeof g_rows / sizeof g_rows[0]; i++) {
        int n = snprintf(g_list + at, sizeof g_list - at, "%s%s", i ? ", " : "", g_rows[i].name);
        if (n < 0 || (size_t)n >= sizeof g_list - at)
            break; /* cannot happen with this table; the list is cut rather than overrun */
        at += (size_t)n;
    }
}

const char *model_arch_list(void)
{
    pthread_once(&g_list_once, list_init);
    return g_list;
}

const float *model_rope_factors(const model *m, uint32_t n_ctx)
{
    if (!m)
        return NULL;
    if (m->rope_freqs)
        return m->rope_freqs;
    if (!m->hp.has_rope_factors)
        return NULL;
    const uint64_t n_seq = ((uint64_t)n_ctx + 255) / 256 * 256; /* llama.cpp pads n_ctx to 256 */
    return n_seq > m->hp.n_ctx_orig ? m->rope_factors_long : m->rope_factors_short;
}

int model_backend_check(const model *m, const backend *be, char *why, size_t cap)
{
    if (why && cap)
        why[0] = 0;
    if (!m || !be)
        return BACKEND_EARG;
    const model_hparams *hp = &m->hp;
    const backend_ops *o = be->ops;
    const char *need = NULL;
    if ((hp->flags & MODEL_F_GELU) && !o->gelu_mul)
        need = "a GELU-gated feed-forward";
    else if ((hp->embd_scale != 0.0f || hp->residual_scale != 0.0f || hp->logit_scale != 0.0f ||
              hp->attn_temp_scale != 0.0f || (hp->flags & MODEL_F_Q_PRESCALE)) && !o->scale)
        need = "scaling ops";
    else if (hp->n_swa && !(o->caps & BACKEND_CAP_ATTN_SWA))
        need = "sliding-window attention";
    else if ((hp->rope_ext_factor != 0.0f || hp->rope_attn_factor != 1.0f) && !(o->caps & BACKEND_CAP_ROPE_EXT))
        need = "YaRN / LongRoPE scaling";
    else if (hp->n_expert && (!(o->caps & BACKEND_CAP_MOE) || !o->moe_route || !o->matmul_id || !o->moe_combine ||
                              !o->add_id || !o->swiglu_oai))
        need = "the mixture-of-experts ops (moe_route, matmul_id, add_id, swiglu_oai, moe_combine)";
    else if (m->layers && model_weight_bound(&m->layers[0].attn_sinks) && !(o->caps & BACKEND_CAP_ATTN_SINKS))
        need = "attention sinks (the attention op's sinks)";
    if (!need)
        return 0;
    if (why)
        snprintf(why, cap, "the %s backend cannot run %s models yet: they need %s", o->name, hp->arch_name, need);
    return BACKEND_EUNSUPPORTED;
}
