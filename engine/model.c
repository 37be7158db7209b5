/* model: hyper-parameters and tensor binding for llama / qwen2 GGUF files. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "model.h"

#define MAX_DIM (1u << 24)     /* sanity bound of any single dimension */
#define MAX_LAYERS 4096

typedef struct {
    const gguf_file *f;
    model_status status;
    char *msg;
    size_t cap;
} loader;

static void *fail(loader *L, model_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void *fail(loader *L, model_status s, const char *fmt, ...)
{
    L->status = s;
    if (L->msg && L->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->msg, L->cap, fmt, ap);
        va_end(ap);
        /* names from the file may hold any bytes: whoever shows the message
         * escapes it (app_error, screen_put_text: base/textesc.h) */
    }
    return NULL;
}

/* u32 hyper-parameter `{arch}.suffix`; `dflt` when absent (required when dflt == 0).
 * Returns false (message set) on a type error, a missing required key or 0. */
static bool hp_u32(loader *L, const char *arch, const char *suffix, uint32_t dflt, uint32_t *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint64_t v;
    gguf_status st = gguf_get_u64(L->f, key, &v);
    if (st == GGUF_ENOTFOUND) {
        if (!dflt) {
            fail(L, MODEL_EPARAM, "required key %s is missing", key);
            return false;
        }
        *out = dflt;
        return true;
    }
    if (st != GGUF_OK) {
        fail(L, MODEL_EPARAM, "key %s is not an unsigned integer", key);
        return false;
    }
    if (v == 0 || v > MAX_DIM) {
        fail(L, MODEL_EPARAM, "key %s = %llu is out of range (1..%u)", key, (unsigned long long)v,
             MAX_DIM);
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

static bool hp_f32(loader *L, const char *arch, const char *suffix, float dflt, float *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    double v;
    gguf_status st = gguf_get_f64(L->f, key, &v);
    if (st == GGUF_ENOTFOUND) {
        *out = dflt;
        return true;
    }
    if (st != GGUF_OK || !isfinite(v)) {
        fail(L, MODEL_EPARAM, "key %s is not a finite float", key);
        return false;
    }
    *out = (float)v;
    return true;
}

/* Bind tensor `name` with shape [ne0] (ne1 == 0) or [ne0, ne1].
 * `vec` requires F32 (norm gains, biases, rope factors). */
static bool bind(loader *L, const char *name, uint64_t ne0, uint64_t ne1, bool required, bool vec,
                 backend_weight *w)
{
    memset(w, 0, sizeof *w);
    const gguf_tensor *t = gguf_find_tensor(L->f, name);
    if (!t) {
        if (required)
            fail(L, MODEL_EMISSING, "tensor %s is missing", name);
        return !required;
    }
    bool shape_ok = t->ne[0] == ne0 && t->ne[2] == 1 && t->ne[3] == 1 &&
                    (ne1 ? t->ne[1] == ne1 : t->ne[1] == 1);
    if (!shape_ok) {
        fail(L, MODEL_ESHAPE, "tensor %s has shape [%llu, %llu, %llu, %llu], expected [%llu, %llu]",
             name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
             (unsigned long long)t->ne[2], (unsigned long long)t->ne[3], (unsigned long long)ne0,
             (unsigned long long)(ne1 ? ne1 : 1));
        return false;
    }
    if (!t->type_known || !t->data || !ggtype_get(t->type)) {
        fail(L, MODEL_ETYPE, "tensor %s has unknown type %u", name, t->type);
        return false;
    }
    if (vec && t->type != GGTYPE_F32) {
        fail(L, MODEL_ETYPE, "tensor %s has type %s, expected f32", name, ggtype_name(t->type));
        return false;
    }
    const ggtype_traits *tr = ggtype_get(t->type);
    if (!vec && (tr->blck_size == 0 || t->type == GGTYPE_I8 || t->type == GGTYPE_I16 ||
                 t->type == GGTYPE_I32 || t->type == GGTYPE_I64 || t->type == GGTYPE_F64)) {
        fail(L, MODEL_ETYPE, "tensor %s has type %s, which cannot be a weight matrix", name,
             ggtype_name(t->type));
        return false;
    }
    uint64_t rb = ggtype_row_size(t->type, ne0, NULL);
    if (!rb || rb * t->ne[1] != t->n_bytes) {
        fail(L, MODEL_ESHAPE, "tensor %s: row of %llu elements does not fit type %s", name,
             (unsigned long long)ne0, ggtype_name(t->type));
        return false;
    }
    w->type = t->type;
    w->ne0 = ne0;
    w->ne1 = ne1 ? ne1 : 1;
    w->row_bytes = rb;
    w->data = t->data;
    w->name = NULL; /* names are not NUL-terminated in the mapping */
    return true;
}

static bool bind_layer_t(loader *L, uint32_t il, const char *what, uint64_t ne0, uint64_t ne1,
                         bool required, bool vec, backend_weight *w)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s", il, what);
    return bind(L, name, ne0, ne1, required, vec, w);
}

static bool load_hparams(loader *L, model_hparams *hp)
{
    memset(hp, 0, sizeof *hp);
    char arch[64];
    gguf_status st = gguf_get_cstr(L->f, "general.architecture", arch, sizeof arch);
    if (st != GGUF_OK) {
        fail(L, MODEL_EARCH, "general.architecture is missing or not a string");
        return false;
    }
    if (!strcmp(arch, "llama")) {
        hp->arch = MODEL_ARCH_LLAMA;
        hp->rope_mode = BACKEND_ROPE_NORMAL;
    } else if (!strcmp(arch, "qwen2")) {
        hp->arch = MODEL_ARCH_QWEN2;
        hp->rope_mode = BACKEND_ROPE_NEOX;
    } else {
        fail(L, MODEL_EARCH, "unsupported architecture '%s' (supported: llama, qwen2)", arch);
        return false;
    }
    memcpy(hp->arch_name, arch, strlen(arch) + 1); /* "llama" or "qwen2" */

    if (!hp_u32(L, arch, "embedding_length", 0, &hp->n_embd) ||
        !hp_u32(L, arch, "block_count", 0, &hp->n_layer) ||
        !hp_u32(L, arch, "feed_forward_length", 0, &hp->n_ff) ||
        !hp_u32(L, arch, "attention.head_count", 0, &hp->n_head) ||
        !hp_u32(L, arch, "context_length", 2048, &hp->n_ctx_train))
        return false;
    if (hp->n_layer > MAX_LAYERS) {
        fail(L, MODEL_EPARAM, "%s.block_count = %u is too large", arch, hp->n_layer);
        return false;
    }
    if (!hp_u32(L, arch, "attention.head_count_kv", hp->n_head, &hp->n_head_kv))
        return false;
    if (hp->n_head % hp->n_head_kv) {
        fail(L, MODEL_EPARAM, "head_count %u is not a multiple of head_count_kv %u", hp->n_head,
             hp->n_head_kv);
        return false;
    }
    uint32_t hd_default = hp->n_embd / hp->n_head;
    if (hd_default == 0 && hp->n_embd % hp->n_head) {
        fail(L, MODEL_EPARAM, "embedding_length %u < head_count %u", hp->n_embd, hp->n_head);
        return false;
    }
    if (!hp_u32(L, arch, "attention.key_length", hd_default ? hd_default : 1, &hp->head_dim))
        return false;
    uint32_t vl;
    if (!hp_u32(L, arch, "attention.value_length", hp->head_dim, &vl))
        return false;
    if (vl != hp->head_dim) {
        fail(L, MODEL_EPARAM, "value_length %u != key_length %u is not supported", vl, hp->head_dim);
        return false;
    }
    if ((uint64_t)hp->n_head * hp->head_dim > MAX_DIM) {
        fail(L, MODEL_EPARAM, "head_count x head dimension is too large");
        return false;
    }
    if (!hp_u32(L, arch, "rope.dimension_count", hp->head_dim, &hp->n_rot))
        return false;
    if (hp->n_rot > hp->head_dim || (hp->n_rot & 1)) {
        fail(L, MODEL_EPARAM, "%s.rope.dimension_count = %u (head dimension %u)", arch, hp->n_rot,
             hp->head_dim);
        return false;
    }
    if (!hp_f32(L, arch, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps) ||
        !hp_f32(L, arch, "rope.freq_base", 10000.0f, &hp->rope_freq_base))
        return false;
    if (hp->rms_eps < 0 || hp->rope_freq_base <= 0) {
        fail(L, MODEL_EPARAM, "rms epsilon or rope.freq_base out of range");
        return false;
    }

    /* RoPE scaling: linear (freq_scale = 1/factor); none; llama3 via rope_freqs. */
    hp->rope_freq_scale = 1.0f;
    char key[128], type[32] = "";
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    (void)gguf_get_cstr(L->f, key, type, sizeof type);
    float factor = 0.0f;
    if (!hp_f32(L, arch, "rope.scaling.factor", 0.0f, &factor))
        return false;
    if (factor == 0.0f && !hp_f32(L, arch, "rope.scale_linear", 0.0f, &factor))
        return false;
    if (!strcmp(type, "linear") || (!type[0] && factor > 0.0f)) {
        if (factor > 0.0f)
            hp->rope_freq_scale = 1.0f / factor;
    } else if (type[0] && strcmp(type, "none") && strcmp(type, "llama3")) {
        fail(L, MODEL_EPARAM, "rope scaling type '%s' is not supported (none, linear, llama3)", type);
        return false;
    }
    if (!(hp->rope_freq_scale > 0.0f) || !isfinite(hp->rope_freq_scale)) {
        fail(L, MODEL_EPARAM, "rope scaling factor out of range");
        return false;
    }
    return true;
}

model *model_load(const gguf_file *f, model_status *status, char *msg, size_t cap)
{
    loader L = {.f = f, .status = MODEL_OK, .msg = msg, .cap = cap};
    if (msg && cap)
        msg[0] = 0;
    model *m = NULL;
    if (!f) {
        fail(&L, MODEL_EARG, "no file");
        goto out;
    }
    m = calloc(1, sizeof *m);
    if (!m) {
        fail(&L, MODEL_ENOMEM, "out of memory");
        goto out;
    }
    m->file = f;
    model_hparams *hp = &m->hp;
    if (!load_hparams(&L, hp))
        goto fail_m;

    const gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
    if (!te) {
        fail(&L, MODEL_EMISSING, "tensor token_embd.weight is missing");
        goto fail_m;
    }
    if (te->ne[1] == 0 || te->ne[1] > MAX_DIM) {
        fail(&L, MODEL_ESHAPE, "token_embd.weight has %llu rows", (unsigned long long)te->ne[1]);
        goto fail_m;
    }
    hp->n_vocab = (uint32_t)te->ne[1];
    uint32_t vs;
    if (!hp_u32(&L, hp->arch_name, "vocab_size", hp->n_vocab, &vs))
        goto fail_m;
    if (vs != hp->n_vocab) {
        fail(&L, MODEL_ESHAPE, "%s.vocab_size = %u but token_embd.weight has %u rows",
             hp->arch_name, vs, hp->n_vocab);
        goto fail_m;
    }
    /* one token per embedding row, as llama.cpp requires: ids the tokenizer
     * makes must have a row, and every row's logit a token */
    const gguf_value *toks;
    gguf_status ts = gguf_get_arr(f, "tokenizer.ggml.tokens", &toks);
    if (ts == GGUF_ETYPE || (ts == GGUF_OK && toks->arr_type != GGUF_VT_STRING)) {
        fail(&L, MODEL_EPARAM, "tokenizer.ggml.tokens is not an array of strings (expected one string per token)");
        goto fail_m;
    }
    if (ts == GGUF_OK && toks->arr_len != hp->n_vocab) {
        fail(&L, MODEL_ESHAPE, "tokenizer.ggml.tokens has %llu tokens but token_embd.weight has %u rows (expected the same count)",
             (unsigned long long)toks->arr_len, hp->n_vocab);
        goto fail_m;
    }
    const uint64_t E = hp->n_embd, V = hp->n_vocab, F = hp->n_ff;
    const uint64_t QD = (uint64_t)hp->n_head * hp->head_dim;
    const uint64_t KD = (uint64_t)hp->n_head_kv * hp->head_dim;
    if (!bind(&L, "token_embd.weight", E, V, true, false, &m->tok_embd) ||
        !bind(&L, "output_norm.weight", E, 0, true, true, &m->output_norm) ||
        !bind(&L, "output.weight", E, V, false, false, &m->output))
        goto fail_m;
    if (!m->output.data) {
        m->output = m->tok_embd;
        hp->tied_embeddings = true;
    }
    backend_weight rf;
    if (!bind(&L, "rope_freqs.weight", hp->n_rot / 2, 0, false, true, &rf))
        goto fail_m;
    if (rf.data) {
        m->rope_freqs = rf.data;
        hp->has_rope_freqs = true;
    }

    m->layers = calloc(hp->n_layer, sizeof *m->layers);
    if (!m->layers) {
        fail(&L, MODEL_ENOMEM, "out of memory");
        goto fail_m;
    }
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        model_layer *ly = &m->layers[il];
        if (!bind_layer_t(&L, il, "attn_norm.weight", E, 0, true, true, &ly->attn_norm) ||
            !bind_layer_t(&L, il, "attn_q.weight", E, QD, true, false, &ly->wq) ||
            !bind_layer_t(&L, il, "attn_k.weight", E, KD, true, false, &ly->wk) ||
            !bind_layer_t(&L, il, "attn_v.weight", E, KD, true, false, &ly->wv) ||
            !bind_layer_t(&L, il, "attn_output.weight", QD, E, true, false, &ly->wo) ||
            !bind_layer_t(&L, il, "attn_q.bias", QD, 0, hp->arch == MODEL_ARCH_QWEN2, true, &ly->bq) ||
            !bind_layer_t(&L, il, "attn_k.bias", KD, 0, hp->arch == MODEL_ARCH_QWEN2, true, &ly->bk) ||
            !bind_layer_t(&L, il, "attn_v.bias", KD, 0, hp->arch == MODEL_ARCH_QWEN2, true, &ly->bv) ||
            !bind_layer_t(&L, il, "ffn_norm.weight", E, 0, true, true, &ly->ffn_norm) ||
            !bind_layer_t(&L, il, "ffn_gate.weight", E, F, true, false, &ly->ffn_gate) ||
            !bind_layer_t(&L, il, "ffn_up.weight", E, F, true, false, &ly->ffn_up) ||
            !bind_layer_t(&L, il, "ffn_down.weight", F, E, true, false, &ly->ffn_down))
            goto fail_m;
        if (ly->bq.data || ly->bk.data || ly->bv.data)
            hp->has_qkv_bias = true;
    }
    goto out;

fail_m:
    model_free(m);
    m = NULL;
out:
    if (status)
        *status = L.status;
    return m;
}

void model_free(model *m)
{
    if (!m)
        return;
    free(m->layers);
    free(m);
}

uint64_t model_weight_bytes(const model *m)
{
    if (!m)
        return 0;
    uint64_t n = m->tok_embd.ne1 * m->tok_embd.row_bytes + m->output_norm.row_bytes;
    if (!m->hp.tied_embeddings)
        n += m->output.ne1 * m->output.row_bytes;
    for (uint32_t il = 0; il < m->hp.n_layer; il++) {
        const backend_weight *ws[] = {
            &m->layers[il].attn_norm, &m->layers[il].wq, &m->layers[il].wk, &m->layers[il].wv,
            &m->layers[il].wo, &m->layers[il].bq, &m->layers[il].bk, &m->layers[il].bv,
            &m->layers[il].ffn_norm, &m->layers[il].ffn_gate, &m->layers[il].ffn_up,
            &m->layers[il].ffn_down,
        };
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            if (ws[i]->data)
                n += ws[i]->ne1 * ws[i]->row_bytes;
    }
    return n;
}

/* Slot i of the model's weights (i < 3 + 12 * n_layer), or NULL for a slot
 * without data and for a tied output (it shares the embedding's data). */
static backend_weight *weight_slot(model *m, size_t i)
{
    backend_weight *w;
    if (i < 3) {
        backend_weight *top[] = {&m->tok_embd, &m->output_norm, &m->output};
        w = top[i];
        if (i == 2 && m->output.data == m->tok_embd.data)
            return NULL;
    } else {
        model_layer *l = &m->layers[(i - 3) / 12];
        backend_weight *lw[] = {&l->attn_norm, &l->wq, &l->wk, &l->wv, &l->wo, &l->bq, &l->bk,
                                &l->bv, &l->ffn_norm, &l->ffn_gate, &l->ffn_up, &l->ffn_down};
        w = lw[(i - 3) % 12];
    }
    return w->data ? w : NULL;
}

int model_prepare(model *m, backend *be, char *msg, size_t cap)
{
    if (msg && cap)
        msg[0] = 0;
    if (!m || !be) {
        if (msg)
            snprintf(msg, cap, "no model or backend");
        return BACKEND_EARG;
    }
    if (m->prepared == be || !be->ops->weight_prepare)
        return 0;
    if (m->prepared) {
        if (msg)
            snprintf(msg, cap, "the model is prepared for another backend (model_release first)");
        return BACKEND_EARG;
    }
    const size_t n = 3 + (size_t)m->hp.n_layer * 12;
    for (size_t i = 0; i < n; i++) {
        backend_weight *w = weight_slot(m, i);
        int rc = w ? be->ops->weight_prepare(be->ctx, w) : 0;
        if (rc != 0) {
            if (msg)
                snprintf(msg, cap, "preparing %s for the %s backend: %s", w->name ? w->name : "a weight",
                         be->ops->name, backend_strerror(rc));
            while (i-- > 0)
                if ((w = weight_slot(m, i)))
                    be->ops->weight_release(be->ctx, w);
            return rc;
        }
    }
    if (m->output.data == m->tok_embd.data)
        m->output.priv = m->tok_embd.priv;
    m->prepared = be;
    return 0;
}

void model_release(model *m)
{
    if (!m || !m->prepared)
        return;
    const backend *be = m->prepared;
    const size_t n = 3 + (size_t)m->hp.n_layer * 12;
    for (size_t i = 0; i < n; i++) {
        backend_weight *w = weight_slot(m, i);
        if (w)
            be->ops->weight_release(be->ctx, w);
    }
    if (m->output.data == m->tok_embd.data)
        m->output.priv = NULL;
    m->prepared = NULL;
}
