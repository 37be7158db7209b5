/* testmodel: random-weight GGUF files of the dense families (llama, qwen2,
 * qwen3, gemma3, phi3, smollm3, olmo2, granite, mistral3) and the
 * mixture-of-experts ones (llama with experts, qwen3moe, gpt-oss): the
 * families, their keys and tensor lists. The data: testmodel_fill.c; the
 * tokenizer keys: testmodel_vocab.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"
#include "testmodel_impl.h"

/* What a family's files hold beyond llama's set (llama.cpp's
 * src/models/<arch>.cpp, load_arch_hparams / load_arch_tensors). */
enum {
    FAM_NEW = 1u << 0,          /* takes n_ctx_orig, yarn, rope_attn_factor */
    FAM_HEAD_DIM = 1u << 1,     /* head_dim may differ from n_embd / n_head */
    FAM_QK_NORM_HEAD = 1u << 2, /* attn_q_norm / attn_k_norm [head_dim] */
    FAM_QK_NORM_FULL = 1u << 3, /* attn_q_norm [QD] / attn_k_norm [KD] */
    FAM_POST_NORMS = 1u << 4,   /* post_attention_norm, post_ffw_norm */
    FAM_NO_PRE_NORMS = 1u << 5, /* no attn_norm, no ffn_norm */
    FAM_FUSED = 1u << 6,        /* attn_qkv; ffn_up = gate rows then up rows */
    FAM_ROPE_FREQS = 1u << 7,   /* may carry rope_freqs.weight */
    FAM_OUT_BIAS = 1u << 8,     /* may carry attn_output / ffn biases */
    FAM_SWA = 1u << 9,          /* sliding_window, its pattern, rope.freq_base_swa */
    FAM_QKV_BIAS = 1u << 10,    /* always Q/K/V biases */
    FAM_NO_TIE = 1u << 11,      /* output.weight required */
    FAM_MOE_OPT = 1u << 12,     /* experts when n_expert > 0 (llama: Mixtral) */
    FAM_MOE = 1u << 13,         /* always experts; expert_feed_forward_length */
    FAM_OAI = 1u << 14,         /* gpt-oss: attn_output.bias, attn_sinks, router and expert
                                   biases, post_attention_norm as the FFN's pre-norm */
};

typedef struct {
    const char *arch;
    const char *vocab;  /* file in ../shared/fixtures/vocab */
    bool stand_in;      /* the vocabulary is not the family's own */
    unsigned flags;
} family;

static const family FAMILIES[] = {
    {"llama", "ggml-vocab-llama-spm.gguf", false, FAM_ROPE_FREQS | FAM_MOE_OPT},
    {"qwen2", "ggml-vocab-qwen2.gguf", false, FAM_ROPE_FREQS | FAM_QKV_BIAS},
    {"qwen3", "ggml-vocab-qwen2.gguf", false, FAM_NEW | FAM_HEAD_DIM | FAM_QK_NORM_HEAD},
    {"gemma3", "ggml-vocab-llama-spm.gguf", true,
     FAM_NEW | FAM_HEAD_DIM | FAM_QK_NORM_HEAD | FAM_POST_NORMS | FAM_SWA},
    {"phi3", "ggml-vocab-phi-3.gguf", false, FAM_NEW | FAM_FUSED},
    {"smollm3", "ggml-vocab-llama-bpe.gguf", false, FAM_NEW | FAM_HEAD_DIM},
    {"olmo2", "ggml-vocab-gpt-2.gguf", true,
     FAM_NEW | FAM_QK_NORM_FULL | FAM_POST_NORMS | FAM_NO_PRE_NORMS | FAM_SWA | FAM_NO_TIE},
    {"granite", "ggml-vocab-gpt-2.gguf", true, FAM_NEW | FAM_ROPE_FREQS | FAM_OUT_BIAS},
    {"mistral3", "ggml-vocab-llama-spm.gguf", true,
     FAM_NEW | FAM_HEAD_DIM | FAM_ROPE_FREQS | FAM_OUT_BIAS},
    {"qwen3moe", "ggml-vocab-qwen2.gguf", false,
     FAM_NEW | FAM_HEAD_DIM | FAM_QK_NORM_HEAD | FAM_MOE},
    /* the o200k_harmony stand-in is built from GPT-2's (testmodel_vocab.c) */
    {"gpt-oss", "ggml-vocab-gpt-2.gguf", true,
     FAM_NEW | FAM_HEAD_DIM | FAM_QKV_BIAS | FAM_SWA | FAM_NO_TIE | FAM_MOE | FAM_OAI},
};
#define N_FAMILIES (sizeof FAMILIES / sizeof FAMILIES[0])

static const family *family_of(const char *arch)
{
    for (size_t i = 0; arch && i < N_FAMILIES; i++)
        if (!strcmp(FAMILIES[i].arch, arch))
            return &FAMILIES[i];
    return NULL;
}

testmodel_params testmodel_default_params(void)
{
    return (testmodel_params){.arch = "llama", .n_embd = 256, .n_layer = 2, .n_ff = 256,
                              .n_head = 4, .n_head_kv = 2, .n_ctx = 2048, .n_vocab = 300,
                              .wtype = GGTYPE_F32, .embd_type = -1, .seed = 1,
                              .expert_type = -1};
}

testmodel_params testmodel_arch_params(const char *arch)
{
    testmodel_params p = testmodel_default_params();
    const family *f = family_of(arch);
    p.arch = f ? f->arch : NULL;
    if (!f)
        return p;
    if (!strcmp(arch, "qwen3")) {
        p.head_dim = 128;
        p.rope_freq_base = 1e6f;
        p.rms_eps = 1e-6f;
    } else if (!strcmp(arch, "gemma3")) {
        p.n_layer = 6;
        p.n_head_kv = 1;
        p.head_dim = 128;
        p.n_ff = 512;
        p.sliding_window = 16;
        p.rope_freq_base = 1e6f;
        p.rms_eps = 1e-6f;
        p.tied = true;
    } else if (!strcmp(arch, "phi3")) {
        p.rope_factors = true;
        p.n_ctx = 4096;
        p.n_ctx_orig = 1024;
    } else if (!strcmp(arch, "smollm3")) {
        p.n_layer = 4;
        p.rope_freq_base = 5e6f;
        p.rms_eps = 1e-6f;
    } else if (!strcmp(arch, "olmo2")) {
        p.rope_freq_base = 5e5f;
        p.rms_eps = 1e-6f;
    } else if (!strcmp(arch, "granite")) {
        p.embedding_scale = 12.0f;
        p.residual_scale = 0.22f;
        p.attention_scale = 0.015625f;
        p.logit_scale = 8.0f;
    } else if (!strcmp(arch, "mistral3")) {
        p.rope_freq_base = 1e6f;
        p.rope_scale_yarn = 4.0f;
        p.n_ctx_orig = 32;
        p.yarn_beta_fast = 32.0f;
        p.yarn_beta_slow = 1.0f;
        p.yarn_log_mul = 1.0f;
        p.attn_temp_scale = 0.1f;
    } else if (!strcmp(arch, "qwen3moe")) {
        p.head_dim = 128;
        p.rope_freq_base = 1e6f;
        p.rms_eps = 1e-6f;
        p.n_expert = 8;
        p.n_expert_used = 2;
        p.expert_ff = 256;
    } else if (!strcmp(arch, "gpt-oss")) {
        p.n_head = 8;
        p.n_head_kv = 2;
        p.head_dim = 64;
        p.rope_freq_base = 150000.0f;
        p.rope_scale_yarn = 32.0f;
        p.n_ctx_orig = 4096;
        p.sliding_window = 128;
        p.n_expert = 32;
        p.n_expert_used = 4;
        p.expert_ff = 256;
    }
    return p;
}

const char *testmodel_arch_name(size_t i)
{
    return i < N_FAMILIES ? FAMILIES[i].arch : NULL;
}

const char *testmodel_arch_vocab(const char *arch, bool *stand_in)
{
    const family *f = family_of(arch);
    if (stand_in)
        *stand_in = f && f->stand_in;
    return f ? f->vocab : NULL;
}

/* llama.cpp's use_more_bits: the layers that get more bits in the _M mixes. */
static bool use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The type llama-quantize's Q4_K_M gives matrix `name` (llama-quant.cpp,
 * llama_tensor_get_type, without an imatrix): Q4_K; output.weight (tied:
 * token_embd) Q6_K; attn_v and ffn_down / ffn_down_exps Q6_K on the
 * use_more_bits layers; with exactly 8 experts attn_k and attn_v Q8_0 and
 * attn_output Q5_K; phi3's attn_qkv Q5_K; the router (ffn_gate_inp) keeps
 * `type` (F32). Rows that a K block does not divide fall back as llama.cpp
 * does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, then F16). */
static uint32_t mix_q4_K_M(const testmodel_params *p, const char *name, uint32_t type, uint64_t ne0)
{
    if (strstr(name, "ffn_gate_inp"))
        return type;
    unsigned il = 0;
    const bool blk = sscanf(name, "blk.%u.", &il) == 1;
    const int n = (int)p->n_layer;
    const bool more = blk && use_more_bits((int)il, n), moe8 = p->n_expert == 8;
    uint32_t t = GGTYPE_Q4_K;
    if (!strcmp(name, "output.weight") || (p->tied && !strcmp(name, "token_embd.weight")))
        t = ne0 % 256 ? GGTYPE_Q8_0 : GGTYPE_Q6_K;
    else if (strstr(name, ".attn_v.weight"))
        t = moe8 ? GGTYPE_Q8_0 : more ? GGTYPE_Q6_K : GGTYPE_Q4_K;
    else if (strstr(name, ".attn_k.weight") && moe8)
        t = GGTYPE_Q8_0;
    else if (strstr(name, ".ffn_down") && more)
        t = GGTYPE_Q6_K;
    else if ((strstr(name, ".attn_output.weight") && moe8) || strstr(name, ".attn_qkv.weight"))
        t = GGTYPE_Q5_K;
    if (ne0 % 256 == 0)
        return t;
    t = t == GGTYPE_Q4_K ? GGTYPE_Q5_0 : t == GGTYPE_Q5_K ? GGTYPE_Q5_1 : GGTYPE_Q8_0;
    return ne0 % 32 ? GGTYPE_F16 : t;
}

/* One tensor of the file; sets mk->err when the table is full. */
static void add(testmodel__maker *mk, const char *name, uint32_t type, uint64_t ne0, uint64_t ne1,
                int kind, float scale)
{
    if (mk->n >= mk->cap) {
        mk->err = 1;
        return;
    }
    testmodel__tensor *t = &mk->t[mk->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->ne2 = 1;
    t->n_dims = ne1 > 1 ? 2 : 1;
    t->kind = kind;
    t->scale = scale;
    if (mk->p->q4_K_M && kind == TESTMODEL__MATRIX)
        t->type = mix_q4_K_M(mk->p, t->name, type, ne0);
}

/* A tensor of layer il: "blk.IL.what". */
static void add_blk(testmodel__maker *mk, uint32_t il, const char *what, uint32_t type,
                    uint64_t ne0, uint64_t ne1, int kind, float scale)
{
    char name[64];
    snprintf(name, sizeof name, "blk.%u.%s", il, what);
    add(mk, name, type, ne0, ne1, kind, scale);
}

/* A 3-D matrix of layer il: {ne0, ne1, ne2} (the experts' weights). */
static void add_blk3(testmodel__maker *mk, uint32_t il, const char *what, uint32_t type,
                     uint64_t ne0, uint64_t ne1, uint64_t ne2, float scale)
{
    add_blk(mk, il, what, type, ne0, ne1, TESTMODEL__MATRIX, scale);
    if (!mk->err) {
        mk->t[mk->n - 1].ne2 = ne2;
        mk->t[mk->n - 1].n_dims = 3;
    }
}

/* Writer of "ARCH.suffix" metadata keys; the first error sticks in st. */
typedef struct {
    gguf_writer *w;
    const char *arch;
    gguf_status st;
} keys;

static const char *key_name(const keys *k, const char *suffix, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.%s", k->arch, suffix);
    return buf;
}

static void key_u32(keys *k, const char *suffix, uint32_t v)
{
    char b[128];
    if (!k->st)
        k->st = gguf_writer_set_u32(k->w, key_name(k, suffix, b, sizeof b), v);
}

static void key_f32(keys *k, const char *suffix, float v)
{
    char b[128];
    if (!k->st)
        k->st = gguf_writer_set_f32(k->w, key_name(k, suffix, b, sizeof b), v);
}

/* An optional float key: written unless v is 0. */
static void key_f32_opt(keys *k, const char *suffix, float v)
{
    if (v != 0.0f)
        key_f32(k, suffix, v);
}

static void key_str(keys *k, const char *suffix, const char *v)
{
    char b[128];
    if (!k->st)
        k->st = gguf_writer_set_str(k->w, key_name(k, suffix, b, sizeof b), v);
}

/* Head size, Q / KV projection widths, rotated dimensions and the experts'
 * FFN width (0 without experts). */
typedef struct {
    uint32_t hd, qd, kvd, rot, fx;
} shape;

/* Whether the file has experts. */
static bool has_experts(const family *f, const testmodel_params *p)
{
    return (f->flags & FAM_MOE) || ((f->flags & FAM_MOE_OPT) && p->n_expert);
}

/* The first family field that `f` does not take (its name), or NULL. */
static const char *foreign_field(const family *f, const testmodel_params *p)
{
    const char *a = f->arch;
    const bool phi3 = !strcmp(a, "phi3");
    if (p->head_dim && !(f->flags & FAM_HEAD_DIM))
        return "head_dim";
    if (p->n_rot && !phi3)
        return "n_rot";
    if (!(f->flags & FAM_NEW) && (p->n_ctx_orig || p->rope_scale_yarn != 0.0f ||
                                  p->rope_attn_factor != 0.0f))
        return "n_ctx_orig / rope_scale_yarn / rope_attn_factor";
    if (p->rope_scale_yarn == 0.0f &&
        (p->yarn_beta_fast != 0.0f || p->yarn_beta_slow != 0.0f || p->yarn_log_mul != 0.0f))
        return "yarn_beta_fast / yarn_beta_slow / yarn_log_mul without rope_scale_yarn";
    if (p->rope_factors && !phi3)
        return "rope_factors";
    if (p->sliding_window && !(f->flags & FAM_SWA) && !phi3)
        return "sliding_window";
    if ((p->swa_pattern || p->rope_freq_base_swa != 0.0f) && !(f->flags & FAM_SWA))
        return "swa_pattern / rope_freq_base_swa";
    if (p->logit_softcap != 0.0f && strcmp(a, "gemma3"))
        return "logit_softcap";
    if ((p->embedding_scale != 0.0f || p->residual_scale != 0.0f || p->attention_scale != 0.0f ||
         p->logit_scale != 0.0f) && strcmp(a, "granite"))
        return "embedding_scale / residual_scale / attention_scale / logit_scale";
    if (p->attn_temp_scale != 0.0f && strcmp(a, "mistral3"))
        return "attn_temp_scale";
    if (p->out_bias && !(f->flags & FAM_OUT_BIAS))
        return "out_bias";
    if (p->rope_freqs && !(f->flags & FAM_ROPE_FREQS))
        return "rope_freqs";
    if (p->tied && (f->flags & FAM_NO_TIE))
        return "tied (its output.weight is required)";
    if (p->n_expert && !(f->flags & (FAM_MOE | FAM_MOE_OPT)))
        return "n_expert";
    if (!has_experts(f, p) && (p->n_expert_used || p->expert_ff))
        return "n_expert_used / expert_ff without experts";
    if (p->expert_ff && !(f->flags & FAM_MOE))
        return "expert_ff (its experts are n_ff wide)";
    if (p->swa_pattern && (f->flags & FAM_OAI))
        return "swa_pattern";
    return NULL;
}

/* Check the dimensions and fill *s; returns NULL or what is wrong. */
static const char *shape_of(const testmodel_params *p, shape *s)
{
    if (!p->n_embd || !p->n_layer || !p->n_ff || !p->n_head || !p->n_head_kv ||
        p->n_head % p->n_head_kv || (!p->head_dim && p->n_embd % p->n_head))
        return "bad dimensions";
    uint64_t hd = p->head_dim ? p->head_dim : p->n_embd / p->n_head;
    uint64_t rot = p->n_rot ? p->n_rot : hd;
    if (hd % 2 || rot % 2 || rot > hd || hd * p->n_head > (1u << 24))
        return "bad dimensions";
    *s = (shape){.hd = (uint32_t)hd, .qd = (uint32_t)(hd * p->n_head),
                 .kvd = (uint32_t)(hd * p->n_head_kv), .rot = (uint32_t)rot};
    const family *f = family_of(p->arch);
    if (!has_experts(f, p))
        return NULL;
    /* llama.cpp: 0 < used <= count <= LLAMA_MAX_EXPERTS (1024) */
    if (!p->n_expert || p->n_expert > 1024 || !p->n_expert_used || p->n_expert_used > p->n_expert)
        return "bad expert counts (0 < n_expert_used <= n_expert <= 1024)";
    /* qwen3moe without the key: n_ff / n_expert_used (qwen3moe.cpp) */
    s->fx = !(f->flags & FAM_MOE) ? p->n_ff
          : p->expert_ff          ? p->expert_ff
                                  : p->n_ff / p->n_expert_used;
    if (!s->fx || ((f->flags & FAM_OAI) && !p->expert_ff))
        return "bad dimensions (the experts' FFN width)";
    return NULL;
}

/* The keys beyond llama's: rope scaling, sliding window, scales. */
static void family_keys(keys *k, const family *f, const testmodel_params *p, const shape *s)
{
    const char *a = f->arch;
    if (p->head_dim) {
        key_u32(k, "attention.key_length", s->hd);
        key_u32(k, "attention.value_length", s->hd);
    }
    if (p->rope_scale_yarn != 0.0f) {
        key_str(k, "rope.scaling.type", "yarn");
        key_f32(k, "rope.scaling.factor", p->rope_scale_yarn);
        key_f32_opt(k, "rope.scaling.yarn_beta_fast", p->yarn_beta_fast);
        key_f32_opt(k, "rope.scaling.yarn_beta_slow", p->yarn_beta_slow);
        key_f32_opt(k, "rope.scaling.yarn_log_multiplier", p->yarn_log_mul);
    }
    if (p->n_ctx_orig)
        key_u32(k, "rope.scaling.original_context_length", p->n_ctx_orig);
    float attn_factor = p->rope_attn_factor;
    if (p->rope_factors && attn_factor == 0.0f) {
        /* conversion/phi.py: sqrt(1 + ln(scale) / ln(orig)) for scale > 1, else 1 */
        double n = p->n_ctx ? p->n_ctx : 2048, orig = p->n_ctx_orig ? p->n_ctx_orig : n;
        double scale = n / orig;
        attn_factor = scale > 1.0 ? (float)sqrt(1.0 + log(scale) / log(orig)) : 1.0f;
    }
    key_f32_opt(k, "rope.scaling.attn_factor", attn_factor);
    if (!strcmp(a, "phi3") || p->sliding_window)
        key_u32(k, "attention.sliding_window", p->sliding_window);
    if (!strcmp(a, "gemma3") && p->swa_pattern)
        key_u32(k, "attention.sliding_window_pattern", p->swa_pattern);
    if (!strcmp(a, "olmo2") && p->sliding_window && !k->st) {
        uint32_t n = p->swa_pattern ? p->swa_pattern : 4;
        uint8_t *is_swa = malloc(p->n_layer);
        if (!is_swa) {
            k->st = GGUF_ENOMEM;
            return;
        }
        for (uint32_t il = 0; il < p->n_layer; il++)
            is_swa[il] = il % n < n - 1;
        char b[128];
        k->st = gguf_writer_set_arr(k->w, key_name(k, "attention.sliding_window_pattern", b, sizeof b),
                                    GGUF_VT_BOOL, is_swa, p->n_layer);
        free(is_swa);
    }
    key_f32_opt(k, "rope.freq_base_swa", p->rope_freq_base_swa);
    key_f32_opt(k, "final_logit_softcapping", p->logit_softcap);
    key_f32_opt(k, "embedding_scale", p->embedding_scale);
    key_f32_opt(k, "residual_scale", p->residual_scale);
    key_f32_opt(k, "attention.scale", p->attention_scale);
    if (!strcmp(a, "granite"))
        key_f32(k, "logit_scale", p->logit_scale);
    key_f32_opt(k, "attention.temperature_scale", p->attn_temp_scale);
    if (p->n_expert) {
        key_u32(k, "expert_count", p->n_expert);
        key_u32(k, "expert_used_count", p->n_expert_used);
    }
    if (p->expert_ff)
        key_u32(k, "expert_feed_forward_length", p->expert_ff);
}

/* The tensors of layer il: llama's order, with the family's own ones where its
 * loader creates them. */
/* The experts' type: expert_type, else wtype (gpt-oss: MXFP4 for a quantized wtype). */
static uint32_t expert_type(const family *f, const testmodel_params *p)
{
    if (p->expert_type >= 0)
        return (uint32_t)p->expert_type;
    const ggtype_traits *tr = ggtype_get(p->wtype);
    return (f->flags & FAM_OAI) && tr && tr->is_quantized ? GGTYPE_MXFP4 : p->wtype;
}

/* The mixture-of-experts FFN of layer il (llama.cpp's load_arch_tensors):
 * the router ffn_gate_inp {E, NE} (F32, as llama-quantize keeps it), then
 * ffn_{gate,up}_exps {E, FX, NE} and ffn_down_exps {FX, E, NE}; gpt-oss adds
 * the router bias {NE} and the expert biases {FX, NE} / {E, NE}. The router
 * is scaled so that its logits vary by about 2 across experts and tokens. */
static void moe_tensors(testmodel__maker *mk, const family *f, const shape *s, uint32_t il)
{
    const testmodel_params *p = mk->p;
    const uint32_t E = p->n_embd, FX = s->fx, NE = p->n_expert, xt = expert_type(f, p),
                   f32 = GGTYPE_F32;
    const float s_e = 1.0f / sqrtf((float)E), s_fx = 1.0f / sqrtf((float)FX);
    const bool oai = f->flags & FAM_OAI;
    add_blk(mk, il, "ffn_gate_inp.weight", f32, E, NE, TESTMODEL__MATRIX, 2.0f * s_e);
    if (oai)
        add_blk(mk, il, "ffn_gate_inp.bias", f32, NE, 1, TESTMODEL__BIAS, 0.5f);
    add_blk3(mk, il, "ffn_gate_exps.weight", xt, E, FX, NE, s_e);
    add_blk3(mk, il, "ffn_up_exps.weight", xt, E, FX, NE, s_e);
    add_blk3(mk, il, "ffn_down_exps.weight", xt, FX, E, NE, s_fx);
    if (oai) {
        add_blk(mk, il, "ffn_gate_exps.bias", f32, FX, NE, TESTMODEL__BIAS, 0.1f);
        add_blk(mk, il, "ffn_up_exps.bias", f32, FX, NE, TESTMODEL__BIAS, 0.1f);
        add_blk(mk, il, "ffn_down_exps.bias", f32, E, NE, TESTMODEL__BIAS, 0.1f);
    }
}

static void layer_tensors(testmodel__maker *mk, const family *f, const shape *s, uint32_t il)
{
    const testmodel_params *p = mk->p;
    const uint32_t E = p->n_embd, F = p->n_ff, wt = p->wtype, f32 = GGTYPE_F32;
    const float s_e = 1.0f / sqrtf((float)E), s_f = 1.0f / sqrtf((float)F),
                s_q = 1.0f / sqrtf((float)s->qd);
    const bool pre = !(f->flags & FAM_NO_PRE_NORMS), post = f->flags & FAM_POST_NORMS,
               oai = f->flags & FAM_OAI;
    if (pre)
        add_blk(mk, il, "attn_norm.weight", f32, E, 1, TESTMODEL__NORM, 0);
    if (f->flags & FAM_FUSED) {
        add_blk(mk, il, "attn_qkv.weight", wt, E, s->qd + 2 * s->kvd, TESTMODEL__MATRIX, s_e);
        if (p->qkv_bias)
            add_blk(mk, il, "attn_qkv.bias", f32, s->qd + 2 * s->kvd, 1, TESTMODEL__BIAS, 0.5f);
    } else {
        add_blk(mk, il, "attn_q.weight", wt, E, s->qd, TESTMODEL__MATRIX, s_e);
        add_blk(mk, il, "attn_k.weight", wt, E, s->kvd, TESTMODEL__MATRIX, s_e);
        add_blk(mk, il, "attn_v.weight", wt, E, s->kvd, TESTMODEL__MATRIX, s_e);
        if ((f->flags & FAM_QKV_BIAS) || p->qkv_bias) {
            add_blk(mk, il, "attn_q.bias", f32, s->qd, 1, TESTMODEL__BIAS, 0.5f);
            add_blk(mk, il, "attn_k.bias", f32, s->kvd, 1, TESTMODEL__BIAS, 0.5f);
            add_blk(mk, il, "attn_v.bias", f32, s->kvd, 1, TESTMODEL__BIAS, 0.1f);
        }
    }
    add_blk(mk, il, "attn_output.weight", wt, s->qd, E, TESTMODEL__MATRIX, s_q);
    if (p->out_bias || oai)
        add_blk(mk, il, "attn_output.bias", f32, E, 1, TESTMODEL__BIAS, 0.1f);
    if (oai) /* a raw logit per head, beside the scores */
        add_blk(mk, il, "attn_sinks.weight", f32, p->n_head, 1, TESTMODEL__BIAS, 1.0f);
    if (f->flags & (FAM_QK_NORM_HEAD | FAM_QK_NORM_FULL)) {
        const bool head = f->flags & FAM_QK_NORM_HEAD;
        add_blk(mk, il, "attn_q_norm.weight", f32, head ? s->hd : s->qd, 1, TESTMODEL__NORM, 0);
        add_blk(mk, il, "attn_k_norm.weight", f32, head ? s->hd : s->kvd, 1, TESTMODEL__NORM, 0);
    }
    if (post || oai) /* gpt-oss: the FFN's pre-norm */
        add_blk(mk, il, "post_attention_norm.weight", f32, E, 1, TESTMODEL__NORM, 0);
    if (pre && !oai)
        add_blk(mk, il, "ffn_norm.weight", f32, E, 1, TESTMODEL__NORM, 0);
    if (s->fx) {
        moe_tensors(mk, f, s, il);
    } else if (f->flags & FAM_FUSED) {
        add_blk(mk, il, "ffn_up.weight", wt, E, 2 * (uint64_t)F, TESTMODEL__MATRIX, s_e);
    } else {
        add_blk(mk, il, "ffn_gate.weight", wt, E, F, TESTMODEL__MATRIX, s_e);
        add_blk(mk, il, "ffn_up.weight", wt, E, F, TESTMODEL__MATRIX, s_e);
    }
    if (!s->fx)
        add_blk(mk, il, "ffn_down.weight", wt, F, E, TESTMODEL__MATRIX, s_f);
    if (p->out_bias) {
        add_blk(mk, il, "ffn_gate.bias", f32, F, 1, TESTMODEL__BIAS, 0.1f);
        add_blk(mk, il, "ffn_up.bias", f32, F, 1, TESTMODEL__BIAS, 0.1f);
        add_blk(mk, il, "ffn_down.bias", f32, E, 1, TESTMODEL__BIAS, 0.1f);
    }
    if (post)
        add_blk(mk, il, "post_ffw_norm.weight", f32, E, 1, TESTMODEL__NORM, 0);
}

int testmodel_write(const testmodel_params *p, const char *path, char *msg, size_t cap)
{
#define FAIL(...)                                     \
    do {                                              \
        if (msg && cap)                               \
            snprintf(msg, cap, __VA_ARGS__);          \
        rc = -1;                                      \
        goto done;                                    \
    } while (0)
    int rc = 0;
    testmodel__maker mk = {.p = p};
    gguf_writer *w = NULL;
    const family *f = p ? family_of(p->arch) : NULL;
    if (!f)
        FAIL("unknown architecture (llama, qwen2, qwen3, gemma3, phi3, smollm3, olmo2, granite, "
             "mistral3, qwen3moe, gpt-oss)");
    const char *why = foreign_field(f, p);
    if (why)
        FAIL("%s does not take %s", f->arch, why);
    shape s;
    if ((why = shape_of(p, &s)))
        FAIL("%s", why);
    if (!strcmp(f->arch, "granite") && p->logit_scale == 0.0f)
        FAIL("granite needs a logit_scale");
    if (p->rope_scale_linear > 0 && p->rope_scale_yarn != 0.0f)
        FAIL("rope scaling is linear or yarn, not both");
    if ((f->flags & FAM_OAI) && !p->sliding_window)
        FAIL("gpt-oss needs a sliding_window");
    uint32_t etype = p->embd_type < 0 ? p->wtype : (uint32_t)p->embd_type;
    /* each matrix type with the row lengths it gets (the dense FFN's n_ff only without
     * experts of another width) */
    const uint32_t xt = s.fx ? expert_type(f, p) : p->wtype;
    const bool dense_ff = !s.fx || !(f->flags & FAM_MOE);
    const struct {
        uint32_t type;
        uint64_t ne0;
    } rows[] = {{p->wtype, p->n_embd}, {p->wtype, dense_ff ? p->n_ff : p->n_embd},
                {p->wtype, s.qd},      {etype, p->n_embd},
                {etype, dense_ff ? p->n_ff : p->n_embd}, {xt, p->n_embd},
                {xt, s.fx ? s.fx : p->n_embd}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!ggtype_row_size(rows[i].type, rows[i].ne0, NULL) ||
            (rows[i].type != GGTYPE_F32 && rows[i].type != GGTYPE_F16 &&
             !codec_can_quantize(rows[i].type)))
            FAIL("type %s cannot hold rows of %llu", ggtype_name(rows[i].type),
                 (unsigned long long)rows[i].ne0);
    uint32_t n_vocab;
    if ((why = testmodel__vocab_size(p, f->flags & FAM_OAI, &n_vocab)))
        FAIL("%s", why);
    w = gguf_writer_new(32);
    mk.cap = 8 + 20 * p->n_layer;
    mk.t = calloc(mk.cap, sizeof *mk.t);
    if (!w || !mk.t)
        FAIL("out of memory");
    keys k = {.w = w, .arch = f->arch};
    k.st = gguf_writer_set_str(w, "general.architecture", f->arch);
    k.st = k.st ? k.st : gguf_writer_set_str(w, "general.name", "ggscope random test model");
    key_u32(&k, "context_length", p->n_ctx ? p->n_ctx : 2048);
    key_u32(&k, "embedding_length", p->n_embd);
    key_u32(&k, "block_count", p->n_layer);
    key_u32(&k, "feed_forward_length", p->n_ff);
    key_u32(&k, "attention.head_count", p->n_head);
    key_u32(&k, "attention.head_count_kv", p->n_head_kv);
    key_u32(&k, "rope.dimension_count", s.rot);
    key_f32(&k, "attention.layer_norm_rms_epsilon", p->rms_eps > 0 ? p->rms_eps : 1e-5f);
    key_f32(&k, "rope.freq_base", p->rope_freq_base > 0 ? p->rope_freq_base : 10000.0f);
    if (p->rope_scale_linear > 0) {
        key_str(&k, "rope.scaling.type", "linear");
        key_f32(&k, "rope.scaling.factor", p->rope_scale_linear);
    }
    family_keys(&k, f, p, &s);
    gguf_status st = k.st;
    if (st)
        FAIL("writing metadata: %s", gguf_strerror(st));
    if ((st = testmodel__write_vocab(w, p, f->flags & FAM_OAI)))
        FAIL("writing the vocabulary: %s", gguf_strerror(st));
    if (p->chat_template && (st = gguf_writer_set_str(w, "tokenizer.chat_template", p->chat_template)))
        FAIL("writing the chat template: %s", gguf_strerror(st));

    const float s_e = 1.0f / sqrtf((float)p->n_embd);
    add(&mk, "token_embd.weight", etype, p->n_embd, n_vocab, TESTMODEL__MATRIX, 1.0f);
    add(&mk, "output_norm.weight", GGTYPE_F32, p->n_embd, 1, TESTMODEL__NORM, 0);
    if (!p->tied)
        add(&mk, "output.weight", p->wtype, p->n_embd, n_vocab, TESTMODEL__MATRIX, 3.0f * s_e);
    if (p->rope_freqs)
        add(&mk, "rope_freqs.weight", GGTYPE_F32, s.rot / 2, 1, TESTMODEL__ROPE_FREQS, 0);
    if (p->rope_factors) {
        add(&mk, "rope_factors_long.weight", GGTYPE_F32, s.rot / 2, 1, TESTMODEL__ROPE_LONG, 0);
        add(&mk, "rope_factors_short.weight", GGTYPE_F32, s.rot / 2, 1, TESTMODEL__ROPE_SHORT, 0);
    }
    for (uint32_t il = 0; il < p->n_layer; il++)
        layer_tensors(&mk, f, &s, il);
    if (mk.err)
        FAIL("too many tensors");
    for (uint32_t i = 0; i < mk.n; i++) {
        uint64_t ne[3] = {mk.t[i].ne0, mk.t[i].ne1, mk.t[i].ne2};
        st = gguf_writer_add_tensor(w, mk.t[i].name, mk.t[i].type, mk.t[i].n_dims, ne, NULL);
        if (st)
            FAIL("adding tensor %s: %s", mk.t[i].name, gguf_strerror(st));
    }
    st = gguf_writer_write(w, path, testmodel__fill, &mk);
    if (st)
        FAIL("writing %s: %s", path, gguf_strerror(st));
done:
    gguf_writer_free(w);
    free(mk.t);
    return rc;
#undef FAIL
}
