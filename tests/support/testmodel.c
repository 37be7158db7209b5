/* testmodel: random-weight GGUF files of the dense families (llama, qwen2,
 * qwen3, gemma3, phi3, smollm3, olmo2, granite, mistral3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"
#include "testmodel.h"

#define POOL_ROWS 64
#define CHUNK_ROWS 64

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
};

typedef struct {
    const char *arch;
    const char *vocab;  /* file in ../shared/fixtures/vocab */
    bool stand_in;      /* the vocabulary is not the family's own */
    unsigned flags;
} family;

static const family FAMILIES[] = {
    {"llama", "ggml-vocab-llama-spm.gguf", false, FAM_ROPE_FREQS},
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
};
#define N_FAMILIES (sizeof FAMILIES / sizeof FAMILIES[0])

static const family *family_of(const char *arch)
{
    for (size_t i = 0; arch && i < N_FAMILIES; i++)
        if (!strcmp(FAMILIES[i].arch, arch))
            return &FAMILIES[i];
    return NULL;
}

typedef struct {
    char name[64];
    uint32_t type;
    uint64_t ne0, ne1;    /* ne1 = 1 for vectors */
    int kind;             /* a tkind */
    float scale;          /* std of the random values */
} tspec;

enum tkind { K_MATRIX, K_NORM, K_BIAS, K_ROPE_FREQS, K_ROPE_LONG, K_ROPE_SHORT };

typedef struct {
    const testmodel_params *p;
    tspec *t;
    uint32_t n, cap;
    int err;
} maker;

testmodel_params testmodel_default_params(void)
{
    return (testmodel_params){.arch = "llama", .n_embd = 256, .n_layer = 2, .n_ff = 256,
                              .n_head = 4, .n_head_kv = 2, .n_ctx = 2048, .n_vocab = 300,
                              .wtype = GGTYPE_F32, .embd_type = -1, .seed = 1};
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

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Uniform in [-1, 1) from a counter-based generator: deterministic per (seed, i). */
static inline float urand(uint64_t *st)
{
    *st = mix(*st);
    return (float)((double)(*st >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* Random values of one row (sqrt(3) turns uniform [-1,1) into std 1). */
static void fill_row(const tspec *t, uint64_t seed, uint64_t row, float *dst)
{
    uint64_t st = mix(seed ^ mix(row + 0x1234));
    for (uint64_t c = 0; c < t->ne0; c++) {
        float u = urand(&st);
        switch (t->kind) {
        case K_NORM: dst[c] = 1.0f + 0.25f * u; break;
        case K_ROPE_FREQS: dst[c] = 1.0f + (float)(c % 8) * 0.5f; break;   /* 1..4.5 */
        case K_ROPE_LONG: dst[c] = 1.0f + (float)c * 0.5f; break;          /* rising, as Phi-3's */
        case K_ROPE_SHORT: dst[c] = 1.0f + (float)(c % 4) * 0.02f; break;  /* near 1 */
        default: dst[c] = t->scale * 1.7320508f * u; break;
        }
    }
}
/* Quantize `nr` rows of floats to t->type into dst. */
static int to_type(const tspec *t, const float *src, void *dst, uint64_t nr)
{
    if (t->type == GGTYPE_F32) {
        memcpy(dst, src, sizeof(float) * nr * t->ne0);
        return 0;
    }
    if (t->type == GGTYPE_F16) {
        for (uint64_t i = 0; i < nr * t->ne0; i++)
            ((uint16_t *)dst)[i] = codec_f32_to_f16(src[i]);
        return 0;
    }
    return codec_quantize(t->type, src, dst, nr, t->ne0, NULL) ? 0 : -1;
}

static int fill_tensor(void *user, uint64_t i, void *dst, uint64_t size)
{
    maker *mk = user;
    if (i >= mk->n)
        return -1;
    const tspec *t = &mk->t[i];
    uint64_t rb = ggtype_row_size(t->type, t->ne0, NULL);
    if (rb * t->ne1 != size)
        return -1;
    uint64_t seed = mix(mk->p->seed * 1000003ull + i);
    uint64_t chunk = t->ne1 < CHUNK_ROWS ? t->ne1 : CHUNK_ROWS;
    float *f = malloc(sizeof(float) * t->ne0 * chunk);
    if (!f)
        return -1;
    int rc = 0;
    if (mk->p->pooled_rows && t->ne1 > POOL_ROWS) {
        /* 64 real rows, then each row a copy of a randomly chosen one */
        uint8_t *pool = malloc(rb * POOL_ROWS);
        if (!pool) {
            free(f);
            return -1;
        }
        for (uint64_t r = 0; r < POOL_ROWS && !rc; r += chunk) {
            for (uint64_t k = 0; k < chunk; k++)
                fill_row(t, seed, r + k, f + k * t->ne0);
            rc = to_type(t, f, pool + r * rb, chunk);
        }
        uint64_t st = seed;
        for (uint64_t r = 0; r < t->ne1 && !rc; r++) {
            st = mix(st);
            memcpy((uint8_t *)dst + r * rb, pool + (st % POOL_ROWS) * rb, rb);
        }
        free(pool);
    } else {
        for (uint64_t r = 0; r < t->ne1 && !rc; r += chunk) {
            uint64_t nr = t->ne1 - r < chunk ? t->ne1 - r : chunk;
            for (uint64_t k = 0; k < nr; k++)
                fill_row(t, seed, r + k, f + k * t->ne0);
            rc = to_type(t, f, (uint8_t *)dst + r * rb, nr);
        }
    }
    free(f);
    return rc;
}

/* One tensor of the file; sets mk->err when the table is full. */
static void add(maker *mk, const char *name, uint32_t type, uint64_t ne0, uint64_t ne1, int kind,
                float scale)
{
    if (mk->n >= mk->cap) {
        mk->err = 1;
        return;
    }
    tspec *t = &mk->t[mk->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->kind = kind;
    t->scale = scale;
}

/* A tensor of layer il: "blk.IL.what". */
static void add_blk(maker *mk, uint32_t il, const char *what, uint32_t type, uint64_t ne0,
                    uint64_t ne1, int kind, float scale)
{
    char name[64];
    snprintf(name, sizeof name, "blk.%u.%s", il, what);
    add(mk, name, type, ne0, ne1, kind, scale);
}

/* Synthetic SentencePiece vocabulary of n tokens. */
static gguf_status synth_vocab(gguf_writer *w, uint32_t n)
{
    char **toks = calloc(n, sizeof *toks);
    float *scores = calloc(n, sizeof *scores);
    int32_t *types = calloc(n, sizeof *types);
    gguf_status st = GGUF_ENOMEM;
    if (!toks || !scores || !types)
        goto done;
    static const char *syl[] = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po",
                                "an", "el", "is", "ol", "um", "ra"};
    for (uint32_t i = 0; i < n; i++) {
        char b[32];
        if (i == 0)
            snprintf(b, sizeof b, "<unk>");
        else if (i == 1)
            snprintf(b, sizeof b, "<s>");
        else if (i == 2)
            snprintf(b, sizeof b, "</s>");
        else if (i < 259)
            snprintf(b, sizeof b, "<0x%02X>", i - 3);
        else {
            uint32_t k = i - 259;
            /* "\xe2\x96\x81" is SentencePiece's word-start mark */
            snprintf(b, sizeof b, "%s%s%s", (k & 1) ? "\xe2\x96\x81" : "", syl[k % 16],
                     syl[(k / 16) % 16]);
            if (k >= 256)
                snprintf(b + strlen(b), sizeof b - strlen(b), "%u", k / 256);
        }
        toks[i] = strdup(b);
        if (!toks[i])
            goto done;
        scores[i] = i < 259 ? 0.0f : -(float)(i - 259);
        types[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
    }
    if ((st = gguf_writer_set_str(w, "tokenizer.ggml.model", "llama")) ||
        (st = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, n)) ||
        (st = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, scores, n)) ||
        (st = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, types, n)) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0)) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1)) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2)))
        goto done;
    st = GGUF_OK;
done:
    for (uint32_t i = 0; toks && i < n; i++)
        free(toks[i]);
    free(toks);
    free(scores);
    free(types);
    return st;
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

/* Head size, Q / KV projection widths and rotated dimensions. */
typedef struct {
    uint32_t hd, qd, kvd, rot;
} shape;

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
}

/* The tensors of layer il: llama's order, with the family's own ones where its
 * loader creates them. */
static void layer_tensors(maker *mk, const family *f, const shape *s, uint32_t il)
{
    const testmodel_params *p = mk->p;
    const uint32_t E = p->n_embd, F = p->n_ff, wt = p->wtype, f32 = GGTYPE_F32;
    const float s_e = 1.0f / sqrtf((float)E), s_f = 1.0f / sqrtf((float)F),
                s_q = 1.0f / sqrtf((float)s->qd);
    const bool pre = !(f->flags & FAM_NO_PRE_NORMS), post = f->flags & FAM_POST_NORMS;
    if (pre)
        add_blk(mk, il, "attn_norm.weight", f32, E, 1, K_NORM, 0);
    if (f->flags & FAM_FUSED) {
        add_blk(mk, il, "attn_qkv.weight", wt, E, s->qd + 2 * s->kvd, K_MATRIX, s_e);
        if (p->qkv_bias)
            add_blk(mk, il, "attn_qkv.bias", f32, s->qd + 2 * s->kvd, 1, K_BIAS, 0.5f);
    } else {
        add_blk(mk, il, "attn_q.weight", wt, E, s->qd, K_MATRIX, s_e);
        add_blk(mk, il, "attn_k.weight", wt, E, s->kvd, K_MATRIX, s_e);
        add_blk(mk, il, "attn_v.weight", wt, E, s->kvd, K_MATRIX, s_e);
        if ((f->flags & FAM_QKV_BIAS) || p->qkv_bias) {
            add_blk(mk, il, "attn_q.bias", f32, s->qd, 1, K_BIAS, 0.5f);
            add_blk(mk, il, "attn_k.bias", f32, s->kvd, 1, K_BIAS, 0.5f);
            add_blk(mk, il, "attn_v.bias", f32, s->kvd, 1, K_BIAS, 0.1f);
        }
    }
    add_blk(mk, il, "attn_output.weight", wt, s->qd, E, K_MATRIX, s_q);
    if (p->out_bias)
        add_blk(mk, il, "attn_output.bias", f32, E, 1, K_BIAS, 0.1f);
    if (f->flags & (FAM_QK_NORM_HEAD | FAM_QK_NORM_FULL)) {
        const bool head = f->flags & FAM_QK_NORM_HEAD;
        add_blk(mk, il, "attn_q_norm.weight", f32, head ? s->hd : s->qd, 1, K_NORM, 0);
        add_blk(mk, il, "attn_k_norm.weight", f32, head ? s->hd : s->kvd, 1, K_NORM, 0);
    }
    if (post)
        add_blk(mk, il, "post_attention_norm.weight", f32, E, 1, K_NORM, 0);
    if (pre)
        add_blk(mk, il, "ffn_norm.weight", f32, E, 1, K_NORM, 0);
    if (f->flags & FAM_FUSED) {
        add_blk(mk, il, "ffn_up.weight", wt, E, 2 * (uint64_t)F, K_MATRIX, s_e);
    } else {
        add_blk(mk, il, "ffn_gate.weight", wt, E, F, K_MATRIX, s_e);
        add_blk(mk, il, "ffn_up.weight", wt, E, F, K_MATRIX, s_e);
    }
    add_blk(mk, il, "ffn_down.weight", wt, F, E, K_MATRIX, s_f);
    if (p->out_bias) {
        add_blk(mk, il, "ffn_gate.bias", f32, F, 1, K_BIAS, 0.1f);
        add_blk(mk, il, "ffn_up.bias", f32, F, 1, K_BIAS, 0.1f);
        add_blk(mk, il, "ffn_down.bias", f32, E, 1, K_BIAS, 0.1f);
    }
    if (post)
        add_blk(mk, il, "post_ffw_norm.weight", f32, E, 1, K_NORM, 0);
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
    maker mk = {.p = p};
    gguf_writer *w = NULL;
    const family *f = p ? family_of(p->arch) : NULL;
    if (!f)
        FAIL("unknown architecture (llama, qwen2, qwen3, gemma3, phi3, smollm3, olmo2, granite, "
             "mistral3)");
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
    uint32_t etype = p->embd_type < 0 ? p->wtype : (uint32_t)p->embd_type;
    const uint32_t mats[] = {p->wtype, etype};
    const uint64_t dims[] = {p->n_embd, p->n_ff, s.qd};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < (a ? 2 : 3); b++)
            if (!ggtype_row_size(mats[a], dims[b], NULL) ||
                (mats[a] != GGTYPE_F32 && mats[a] != GGTYPE_F16 && !codec_can_quantize(mats[a])))
                FAIL("type %s cannot hold rows of %llu", ggtype_name(mats[a]),
                     (unsigned long long)dims[b]);
    uint32_t n_vocab = p->n_vocab;
    if (p->vocab) {
        const gguf_value *arr;
        if (gguf_get_arr(p->vocab, "tokenizer.ggml.tokens", &arr) != GGUF_OK)
            FAIL("the vocabulary file has no tokenizer.ggml.tokens");
        n_vocab = (uint32_t)arr->arr_len;
    } else if (n_vocab < 259) {
        FAIL("a synthetic vocabulary needs at least 259 tokens");
    }
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
    if (p->vocab) {
        for (uint64_t i = 0; i < gguf_kv_count(p->vocab); i++) {
            const gguf_kv *kv = gguf_kv_at(p->vocab, i);
            static const char tpl[] = "tokenizer.chat_template";
            if (p->chat_template && kv->key.len == sizeof tpl - 1 && !memcmp(kv->key.ptr, tpl, sizeof tpl - 1))
                continue; /* replaced below */
            if (kv->key.len > 10 && !memcmp(kv->key.ptr, "tokenizer.", 10) &&
                (st = gguf_writer_copy_kv(w, kv)))
                FAIL("copying the vocabulary: %s", gguf_strerror(st));
        }
    } else if ((st = synth_vocab(w, n_vocab))) {
        FAIL("writing the vocabulary: %s", gguf_strerror(st));
    }
    if (p->chat_template && (st = gguf_writer_set_str(w, "tokenizer.chat_template", p->chat_template)))
        FAIL("writing the chat template: %s", gguf_strerror(st));

    const float s_e = 1.0f / sqrtf((float)p->n_embd);
    add(&mk, "token_embd.weight", etype, p->n_embd, n_vocab, K_MATRIX, 1.0f);
    add(&mk, "output_norm.weight", GGTYPE_F32, p->n_embd, 1, K_NORM, 0);
    if (!p->tied)
        add(&mk, "output.weight", p->wtype, p->n_embd, n_vocab, K_MATRIX, 3.0f * s_e);
    if (p->rope_freqs)
        add(&mk, "rope_freqs.weight", GGTYPE_F32, s.rot / 2, 1, K_ROPE_FREQS, 0);
    if (p->rope_factors) {
        add(&mk, "rope_factors_long.weight", GGTYPE_F32, s.rot / 2, 1, K_ROPE_LONG, 0);
        add(&mk, "rope_factors_short.weight", GGTYPE_F32, s.rot / 2, 1, K_ROPE_SHORT, 0);
    }
    for (uint32_t il = 0; il < p->n_layer; il++)
        layer_tensors(&mk, f, &s, il);
    if (mk.err)
        FAIL("too many tensors");
    for (uint32_t i = 0; i < mk.n; i++) {
        uint64_t ne[2] = {mk.t[i].ne0, mk.t[i].ne1};
        st = gguf_writer_add_tensor(w, mk.t[i].name, mk.t[i].type, mk.t[i].ne1 > 1 ? 2 : 1, ne, NULL);
        if (st)
            FAIL("adding tensor %s: %s", mk.t[i].name, gguf_strerror(st));
    }
    st = gguf_writer_write(w, path, fill_tensor, &mk);
    if (st)
        FAIL("writing %s: %s", path, gguf_strerror(st));
done:
    gguf_writer_free(w);
    free(mk.t);
    return rc;
#undef FAIL
}
