/* testmodel: random-weight llama / qwen2 GGUF files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"
#include "testmodel.h"

#define POOL_ROWS 64
#define CHUNK_ROWS 64

typedef struct {
    char name[64];
    uint32_t type;
    uint64_t ne0, ne1;    /* ne1 = 1 for vectors */
    int kind;             /* 0 matrix, 1 norm gain, 2 bias, 3 rope factors */
    float scale;          /* std of the random values */
} tspec;

typedef struct {
    const testmodel_params *p;
    tspec *t;
    uint32_t n;
} maker;

testmodel_params testmodel_default_params(void)
{
    return (testmodel_params){.arch = "llama", .n_embd = 256, .n_layer = 2, .n_ff = 256,
                              .n_head = 4, .n_head_kv = 2, .n_ctx = 2048, .n_vocab = 300,
                              .wtype = GGTYPE_F32, .embd_type = -1, .seed = 1};
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
        case 1: dst[c] = 1.0f + 0.25f * u; break;                 /* norm gain */
        case 3: dst[c] = 1.0f + (float)(c % 8) * 0.5f; break;     /* rope factors 1..4.5 */
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

static int add(maker *mk, uint32_t cap, const char *name, uint32_t type, uint64_t ne0, uint64_t ne1,
               int kind, float scale)
{
    if (mk->n >= cap)
        return -1;
    tspec *t = &mk->t[mk->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->kind = kind;
    t->scale = scale;
    return 0;
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
    char key[128], name[64];
    if (!p || !p->arch || (strcmp(p->arch, "llama") && strcmp(p->arch, "qwen2")))
        FAIL("architecture must be llama or qwen2");
    if (!p->n_embd || !p->n_layer || !p->n_ff || !p->n_head || !p->n_head_kv ||
        p->n_embd % p->n_head || p->n_head % p->n_head_kv || (p->n_embd / p->n_head) % 2)
        FAIL("bad dimensions");
    const bool qwen = !strcmp(p->arch, "qwen2");
    const uint32_t hd = p->n_embd / p->n_head, kvd = hd * p->n_head_kv;
    uint32_t etype = p->embd_type < 0 ? p->wtype : (uint32_t)p->embd_type;
    const uint32_t mats[] = {p->wtype, etype};
    const uint64_t dims[] = {p->n_embd, p->n_ff};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
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
    uint32_t cap_t = 4 + 12 * p->n_layer;
    mk.t = calloc(cap_t, sizeof *mk.t);
    if (!w || !mk.t)
        FAIL("out of memory");
    const char *a = p->arch;
    gguf_status st = gguf_writer_set_str(w, "general.architecture", a);
    st = st ? st : gguf_writer_set_str(w, "general.name", "ggscope random test model");
#define SETU(suffix, v)                                                     \
    do {                                                                    \
        snprintf(key, sizeof key, "%s.%s", a, suffix);                      \
        st = st ? st : gguf_writer_set_u32(w, key, v);                      \
    } while (0)
#define SETF(suffix, v)                                                     \
    do {                                                                    \
        snprintf(key, sizeof key, "%s.%s", a, suffix);                      \
        st = st ? st : gguf_writer_set_f32(w, key, v);                      \
    } while (0)
    SETU("context_length", p->n_ctx ? p->n_ctx : 2048);
    SETU("embedding_length", p->n_embd);
    SETU("block_count", p->n_layer);
    SETU("feed_forward_length", p->n_ff);
    SETU("attention.head_count", p->n_head);
    SETU("attention.head_count_kv", p->n_head_kv);
    SETU("rope.dimension_count", hd);
    SETF("attention.layer_norm_rms_epsilon", p->rms_eps > 0 ? p->rms_eps : 1e-5f);
    SETF("rope.freq_base", p->rope_freq_base > 0 ? p->rope_freq_base : 10000.0f);
    if (p->rope_scale_linear > 0) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        st = st ? st : gguf_writer_set_str(w, key, "linear");
        SETF("rope.scaling.factor", p->rope_scale_linear);
    }
    if (st)
        FAIL("writing metadata: %s", gguf_strerror(st));
    if (p->vocab) {
        for (uint64_t i = 0; i < gguf_kv_count(p->vocab); i++) {
            const gguf_kv *kv = gguf_kv_at(p->vocab, i);
            if (kv->key.len > 10 && !memcmp(kv->key.ptr, "tokenizer.", 10) &&
                (st = gguf_writer_copy_kv(w, kv)))
                FAIL("copying the vocabulary: %s", gguf_strerror(st));
        }
    } else if ((st = synth_vocab(w, n_vocab))) {
        FAIL("writing the vocabulary: %s", gguf_strerror(st));
    }

    const float s_e = 1.0f / sqrtf((float)p->n_embd), s_f = 1.0f / sqrtf((float)p->n_ff);
    int e = 0;
    e |= add(&mk, cap_t, "token_embd.weight", etype, p->n_embd, n_vocab, 0, 1.0f);
    e |= add(&mk, cap_t, "output_norm.weight", GGTYPE_F32, p->n_embd, 1, 1, 0);
    if (!p->tied)
        e |= add(&mk, cap_t, "output.weight", p->wtype, p->n_embd, n_vocab, 0, 3.0f * s_e);
    if (p->rope_freqs)
        e |= add(&mk, cap_t, "rope_freqs.weight", GGTYPE_F32, hd / 2, 1, 3, 0);
    for (uint32_t il = 0; il < p->n_layer; il++) {
#define T(what, type, ne0, ne1, kind, sc)                                      \
    do {                                                                       \
        snprintf(name, sizeof name, "blk.%u.%s", il, what);                    \
        e |= add(&mk, cap_t, name, type, ne0, ne1, kind, sc);                  \
    } while (0)
        T("attn_norm.weight", GGTYPE_F32, p->n_embd, 1, 1, 0);
        T("attn_q.weight", p->wtype, p->n_embd, p->n_embd, 0, s_e);
        T("attn_k.weight", p->wtype, p->n_embd, kvd, 0, s_e);
        T("attn_v.weight", p->wtype, p->n_embd, kvd, 0, s_e);
        if (qwen || p->qkv_bias) {
            T("attn_q.bias", GGTYPE_F32, p->n_embd, 1, 2, 0.5f);
            T("attn_k.bias", GGTYPE_F32, kvd, 1, 2, 0.5f);
            T("attn_v.bias", GGTYPE_F32, kvd, 1, 2, 0.1f);
        }
        T("attn_output.weight", p->wtype, p->n_embd, p->n_embd, 0, s_e);
        T("ffn_norm.weight", GGTYPE_F32, p->n_embd, 1, 1, 0);
        T("ffn_gate.weight", p->wtype, p->n_embd, p->n_ff, 0, s_e);
        T("ffn_up.weight", p->wtype, p->n_embd, p->n_ff, 0, s_e);
        T("ffn_down.weight", p->wtype, p->n_ff, p->n_embd, 0, s_f);
#undef T
    }
    if (e)
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
#undef SETU
#undef SETF
}
