/* model: hyper-parameters and tensor binding, driven by the architecture's
 * row of model_arch.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "model_internal.h"

#define MAX_DIM MODEL_MAX_DIM
#define MAX_LAYERS 4096

typedef model_loader loader;

void *model_fail(loader *L, model_status s, const char *fmt, ...)
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
#define fail model_fail

/* u32 hyper-parameter `{arch}.suffix`; `dflt` when absent (required when dflt == 0).
 * Returns false (message set) on a type error, a missing required key or 0. */
bool model_hp_u32(loader *L, const char *arch, const char *suffix, uint32_t dflt, uint32_t *out)
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

bool model_hp_f32(loader *L, const char *arch, const char *suffix, float dflt, float *out)
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

bool model_hp_u32_layer(loader *L, const char *arch, const char *suffix, uint32_t n_layer, uint32_t il,
                        uint32_t dflt, uint32_t *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const gguf_value *arr;
    if (gguf_get_arr(L->f, key, &arr) != GGUF_OK)
        return model_hp_u32(L, arch, suffix, dflt, out);
    if (arr->arr_len != n_layer) {
        fail(L, MODEL_EPARAM, "key %s has %llu entries for %u layers", key, (unsigned long long)arr->arr_len,
             n_layer);
        return false;
    }
    int64_t v;
    if (gguf_arr_i64(arr, il, &v) != GGUF_OK) {
        fail(L, MODEL_EPARAM, "key %s is not an array of unsigned integers", key);
        return false;
    }
    if (v <= 0 || v > MAX_DIM) {
        fail(L, MODEL_EPARAM, "key %s[%u] = %lld is out of range (1..%u)", key, il, (long long)v, MAX_DIM);
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

bool model_hp_bool(loader *L, const char *arch, const char *suffix, bool dflt, bool *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    gguf_status st = gguf_get_bool(L->f, key, out);
    if (st == GGUF_ENOTFOUND) {
        *out = dflt;
        return true;
    }
    if (st != GGUF_OK) {
        fail(L, MODEL_EPARAM, "key %s is not a bool", key);
        return false;
    }
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
    if (!t->type_known || (!t->data && !L->shapes) || !ggtype_get(t->type)) {
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
    w->data = L->shapes ? NULL : t->data;
    w->name = NULL; /* names are not NUL-terminated in the mapping */
    return true;
}

/* Bind the stacked experts `name` [ne0, ne1, ne2] (ne2 experts of ne1 rows):
 * every dimension, the bytes of a row, of an expert and of the whole tensor
 * checked against the file. */
static bool bind3(loader *L, const char *name, uint64_t ne0, uint64_t ne1, uint64_t ne2, backend_weight *w)
{
    memset(w, 0, sizeof *w);
    const gguf_tensor *t = gguf_find_tensor(L->f, name);
    if (!t) {
        fail(L, MODEL_EMISSING, "tensor %s is missing", name);
        return false;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2 || t->ne[3] != 1) {
        fail(L, MODEL_ESHAPE, "tensor %s has shape [%llu, %llu, %llu, %llu], expected [%llu, %llu, %llu]", name,
             (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
             (unsigned long long)t->ne[3], (unsigned long long)ne0, (unsigned long long)ne1,
             (unsigned long long)ne2);
        return false;
    }
    const ggtype_traits *tr = t->type_known && (t->data || L->shapes) ? ggtype_get(t->type) : NULL;
    if (!tr) {
        fail(L, MODEL_ETYPE, "tensor %s has unknown type %u", name, t->type);
        return false;
    }
    if (tr->blck_size == 0 || t->type == GGTYPE_I8 || t->type == GGTYPE_I16 || t->type == GGTYPE_I32 ||
        t->type == GGTYPE_I64 || t->type == GGTYPE_F64) {
        fail(L, MODEL_ETYPE, "tensor %s has type %s, which cannot be a weight matrix", name, ggtype_name(t->type));
        return false;
    }
    uint64_t rb = ggtype_row_size(t->type, ne0, NULL), eb, all;
    if (!rb || __builtin_mul_overflow(rb, ne1, &eb) || __builtin_mul_overflow(eb, ne2, &all) ||
        all != t->n_bytes) {
        fail(L, MODEL_ESHAPE, "tensor %s: %llu experts of %llu rows of %llu elements do not fit type %s", name,
             (unsigned long long)ne2, (unsigned long long)ne1, (unsigned long long)ne0, ggtype_name(t->type));
        return false;
    }
    w->type = t->type;
    w->ne0 = ne0;
    w->ne1 = ne1;
    w->ne2 = ne2;
    w->row_bytes = rb;
    w->data = L->shapes ? NULL : t->data;
    return true;
}

static bool bind_layer_t(loader *L, uint32_t il, const char *what, uint64_t ne0, uint64_t ne1,
                         bool required, bool vec, backend_weight *w)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s", il, what);
    return bind(L, name, ne0, ne1, required, vec, w);
}

/* The experts of a mixture-of-experts family: expert_count (<= 1024, as
 * llama.cpp's LLAMA_MAX_EXPERTS) and expert_used_count (<= expert_count;
 * layer 0's when per layer, as llama.cpp routes every layer with it). The
 * family hook reads the experts' width; llama's experts are n_ff wide. */
static bool load_moe_hparams(loader *L, const model_arch_row *row, model_hparams *hp)
{
    const char *a = hp->arch_name;
    hp->moe_gating = BACKEND_MOE_SOFTMAX;
    hp->moe_norm_w = true;
    if (!(row->opts & (MODEL_A_MOE | MODEL_A_MOE_OPT)))
        return true;
    char key[128];
    snprintf(key, sizeof key, "%s.expert_count", a);
    uint64_t v;
    if (row->opts & MODEL_A_MOE_OPT) { /* absent or 0: a dense model */
        gguf_status st = gguf_get_u64(L->f, key, &v);
        if (st == GGUF_ENOTFOUND || (st == GGUF_OK && v == 0))
            return true;
    }
    if (!model_hp_u32(L, a, "expert_count", 0, &hp->n_expert))
        return false;
    if (hp->n_expert > 1024) {
        fail(L, MODEL_EPARAM, "%s.expert_count = %u is out of range (1..1024)", a, hp->n_expert);
        return false;
    }
    if (!model_hp_u32_layer(L, a, "expert_used_count", hp->n_layer, 0, 0, &hp->n_expert_used))
        return false;
    if (hp->n_expert_used > hp->n_expert) {
        fail(L, MODEL_EPARAM, "%s.expert_used_count = %u is more than expert_count %u", a, hp->n_expert_used,
             hp->n_expert);
        return false;
    }
    hp->n_ff_exp = hp->n_ff;
    return true;
}

static const model_arch_row *load_hparams(loader *L, model_hparams *hp)
{
    memset(hp, 0, sizeof *hp);
    char arch[64];
    gguf_status st = gguf_get_cstr(L->f, "general.architecture", arch, sizeof arch);
    if (st != GGUF_OK) {
        fail(L, MODEL_EARCH, "general.architecture is missing or not a string");
        return NULL;
    }
    const model_arch_row *row = model_arch_find(arch);
    if (!row) {
        fail(L, MODEL_EARCH, "unsupported architecture '%s' (supported: %s)", arch, model_arch_list());
        return NULL;
    }
    hp->arch = row->arch;
    hp->rope_mode = row->rope_mode;
    hp->flags = row->flags;
    memcpy(hp->arch_name, arch, strlen(arch) + 1); /* a table name: shorter than arch_name */

    /* a family that has only experts may leave out the dense width */
    const uint32_t ff_dflt = row->opts & MODEL_A_MOE ? UINT32_MAX : 0;
    if (!model_hp_u32(L, arch, "embedding_length", 0, &hp->n_embd) ||
        !model_hp_u32(L, arch, "block_count", 0, &hp->n_layer) ||
        !model_hp_u32(L, arch, "feed_forward_length", ff_dflt, &hp->n_ff) ||
        !model_hp_u32(L, arch, "attention.head_count", 0, &hp->n_head) ||
        !model_hp_u32(L, arch, "context_length", 2048, &hp->n_ctx_train))
        return NULL;
    if (hp->n_ff == UINT32_MAX)
        hp->n_ff = 0;
    if (hp->n_layer > MAX_LAYERS) {
        fail(L, MODEL_EPARAM, "%s.block_count = %u is too large", arch, hp->n_layer);
        return NULL;
    }
    if (!load_moe_hparams(L, row, hp))
        return NULL;
    if (!model_hp_u32(L, arch, "attention.head_count_kv", hp->n_head, &hp->n_head_kv))
        return NULL;
    if (hp->n_head % hp->n_head_kv) {
        fail(L, MODEL_EPARAM, "head_count %u is not a multiple of head_count_kv %u", hp->n_head,
             hp->n_head_kv);
        return NULL;
    }
    uint32_t hd_default = hp->n_embd / hp->n_head;
    if (hd_default == 0 && hp->n_embd % hp->n_head) {
        fail(L, MODEL_EPARAM, "embedding_length %u < head_count %u", hp->n_embd, hp->n_head);
        return NULL;
    }
    if (!model_hp_u32(L, arch, "attention.key_length", hd_default ? hd_default : 1, &hp->head_dim))
        return NULL;
    uint32_t vl;
    if (!model_hp_u32(L, arch, "attention.value_length", hp->head_dim, &vl))
        return NULL;
    if (vl != hp->head_dim) {
        fail(L, MODEL_EPARAM, "value_length %u != key_length %u is not supported", vl, hp->head_dim);
        return NULL;
    }
    if ((uint64_t)hp->n_head * hp->head_dim > MAX_DIM) {
        fail(L, MODEL_EPARAM, "head_count x head dimension is too large");
        return NULL;
    }
    if (!model_hp_u32(L, arch, "rope.dimension_count", hp->head_dim, &hp->n_rot))
        return NULL;
    if (hp->n_rot > hp->head_dim || (hp->n_rot & 1)) {
        fail(L, MODEL_EPARAM, "%s.rope.dimension_count = %u (head dimension %u)", arch, hp->n_rot,
             hp->head_dim);
        return NULL;
    }
    if (!model_hp_f32(L, arch, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps) ||
        !model_hp_f32(L, arch, "rope.freq_base", 10000.0f, &hp->rope_freq_base))
        return NULL;
    if (hp->rms_eps < 0 || hp->rope_freq_base <= 0) {
        fail(L, MODEL_EPARAM, "rms epsilon or rope.freq_base out of range");
        return NULL;
    }

    /* RoPE scaling: linear and YaRN (freq_scale = 1/factor), LongRoPE
     * (factor tensors), none; llama3 via rope_freqs. */
    hp->rope_freq_scale = 1.0f;
    char key[128], type[32] = "";
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    (void)gguf_get_cstr(L->f, key, type, sizeof type);
    float factor = 0.0f;
    if (!model_hp_f32(L, arch, "rope.scaling.factor", 0.0f, &factor))
        return NULL;
    if (factor == 0.0f && !model_hp_f32(L, arch, "rope.scale_linear", 0.0f, &factor))
        return NULL;
    bool yarn = !strcmp(type, "yarn");
    if (!strcmp(type, "linear") || yarn || !strcmp(type, "longrope") || (!type[0] && factor > 0.0f)) {
        if (factor > 0.0f)
            hp->rope_freq_scale = 1.0f / factor;
    } else if (type[0] && strcmp(type, "none") && strcmp(type, "llama3")) {
        fail(L, MODEL_EPARAM, "rope scaling type '%s' is not supported (none, linear, yarn, longrope, llama3)",
             type);
        return NULL;
    }
    if (!(hp->rope_freq_scale > 0.0f) || !isfinite(hp->rope_freq_scale)) {
        fail(L, MODEL_EPARAM, "rope scaling factor out of range");
        return NULL;
    }
    float attn_factor;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    hp->kq_scale = 1.0f / sqrtf((float)hp->head_dim);
    if (!model_hp_u32(L, arch, "rope.scaling.original_context_length", hp->n_ctx_train, &hp->n_ctx_orig) ||
        !model_hp_f32(L, arch, "rope.scaling.attn_factor", 1.0f, &attn_factor))
        return NULL;
    /* sliding-window attention, for the families that have it */
    if (row->swa_pattern && !model_hp_u32(L, arch, "attention.sliding_window", UINT32_MAX, &hp->n_swa))
        return NULL;
    if (hp->n_swa == UINT32_MAX)
        hp->n_swa = 0;
    if (row->hparams && !row->hparams(L, hp))
        return NULL;
    /* llama_context's YaRN attention factor (after the family's YaRN keys),
     * in plain float (libllama has no FMA) */
    hp->rope_ext_factor = yarn ? 1.0f : 0.0f;
    float af = 1.0f;
    if (yarn) {
        const float f = 1.0f / hp->rope_freq_scale;
        const float m1 = f <= 1.0f ? 1.0f : 0.1f * 1.0f * logf(f) + 1.0f;
        if (hp->yarn_log_mul != 0.0f) {
            const float m2 = f <= 1.0f ? 1.0f : 0.1f * hp->yarn_log_mul * logf(f) + 1.0f;
            af = m1 / m2;
        } else {
            af = m1;
        }
        af *= 1.0f / (1.0f + 0.1f * logf(f));
    }
    hp->rope_attn_factor = af * attn_factor;
    if (!isfinite(hp->rope_attn_factor) || !isfinite(hp->yarn_beta_fast) || !isfinite(hp->yarn_beta_slow)) {
        fail(L, MODEL_EPARAM, "rope scaling parameters out of range");
        return NULL;
    }
    return row;
}

/* Which layers slide: `{arch}.attention.sliding_window_pattern` as one bool
 * per layer, or as N (every N-th layer full; 0: all slide), else the
 * family's N (llama_hparams::set_swa_pattern). */
static bool load_swa_layers(loader *L, const model_arch_row *row, model *m)
{
    const model_hparams *hp = &m->hp;
    if (!hp->n_swa)
        return true;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch_name);
    const gguf_value *arr;
    if (gguf_get_arr(L->f, key, &arr) == GGUF_OK) {
        if (arr->arr_len != hp->n_layer) {
            fail(L, MODEL_EPARAM, "%s has %llu entries for %u layers", key, (unsigned long long)arr->arr_len,
                 hp->n_layer);
            return false;
        }
        for (uint32_t il = 0; il < hp->n_layer; il++) {
            double v;
            if (gguf_arr_f64(arr, il, &v) != GGUF_OK) {
                fail(L, MODEL_EPARAM, "%s is not an array of bools", key);
                return false;
            }
            m->layers[il].swa = v != 0;
        }
        return true;
    }
    uint32_t n = row->swa_pattern;
    uint64_t v;
    gguf_status st = gguf_get_u64(L->f, key, &v);
    if (st == GGUF_OK && v <= MAX_LAYERS) {
        n = (uint32_t)v;
    } else if (st != GGUF_ENOTFOUND) {
        fail(L, MODEL_EPARAM, "key %s is neither a layer count nor an array of bools", key);
        return false;
    }
    for (uint32_t il = 0; il < hp->n_layer; il++)
        m->layers[il].swa = n == 0 || il % n < n - 1;
    return true;
}

/* Whether blk.il.what exists. */
static bool has_layer_t(const loader *L, uint32_t il, const char *what)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s", il, what);
    return gguf_find_tensor(L->f, name) != NULL;
}

/* A mixture-of-experts layer: the router, the stacked experts (3-D, one
 * matrix per expert), gpt-oss's biases, and the count of experts it sums.
 * Layouts the engine does not run are refused by name: one tensor per
 * expert (old Mixtral conversions), expert scales, fused gate+up experts. */
static bool bind_moe_layer(loader *L, const model *m, uint32_t opts, uint32_t il, model_layer *ly)
{
    const model_hparams *hp = &m->hp;
    const uint64_t E = hp->n_embd, FX = hp->n_ff_exp, NE = hp->n_expert;
    static const char *const refused[][2] = {
        {"ffn_gate.0.weight", "one tensor per expert (an old conversion; convert the model again)"},
        {"ffn_up.0.weight", "one tensor per expert (an old conversion; convert the model again)"},
        {"ffn_down.0.weight", "one tensor per expert (an old conversion; convert the model again)"},
        {"ffn_gate_exps.scale", "expert scales"},
        {"ffn_up_exps.scale", "expert scales"},
        {"ffn_down_exps.scale", "expert scales"},
        {"ffn_gate_up_exps.weight", "fused gate and up experts"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (has_layer_t(L, il, refused[i][0])) {
            fail(L, MODEL_ETYPE, "tensor blk.%u.%s: %s are not supported", il, refused[i][0], refused[i][1]);
            return false;
        }
    char name[96];
    static const char *const exps[3] = {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"};
    backend_weight *const w[3] = {&ly->ffn_gate_exps, &ly->ffn_up_exps, &ly->ffn_down_exps};
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "blk.%u.%s", il, exps[i]);
        if (!bind3(L, name, i == 2 ? FX : E, i == 2 ? E : FX, NE, w[i]))
            return false;
    }
    if (!bind_layer_t(L, il, "ffn_gate_inp.weight", E, NE, true, false, &ly->ffn_gate_inp))
        return false;
    if ((opts & MODEL_A_MOE_BIASES) &&
        (!bind_layer_t(L, il, "ffn_gate_inp.bias", NE, 0, true, true, &ly->ffn_gate_inp_b) ||
         !bind_layer_t(L, il, "ffn_gate_exps.bias", FX, NE, true, true, &ly->ffn_gate_exps_b) ||
         !bind_layer_t(L, il, "ffn_up_exps.bias", FX, NE, true, true, &ly->ffn_up_exps_b) ||
         !bind_layer_t(L, il, "ffn_down_exps.bias", E, NE, true, true, &ly->ffn_down_exps_b)))
        return false;
    if (!model_hp_u32_layer(L, hp->arch_name, "expert_used_count", hp->n_layer, il, 0, &ly->n_expert_used))
        return false;
    if (ly->n_expert_used > hp->n_expert_used) {
        fail(L, MODEL_EPARAM, "%s.expert_used_count[%u] = %u is more than layer 0's %u", hp->arch_name, il,
             ly->n_expert_used, hp->n_expert_used);
        return false;
    }
    return true;
}

/* A pointer `rows` rows of `w` past its data, or NULL in a shape-only model. */
static const void *rows_past(const backend_weight *w, uint64_t rows)
{
    return w->data ? (const uint8_t *)w->data + rows * w->row_bytes : NULL;
}

static model *load(const gguf_file *f, bool shapes, model_status *status, char *msg, size_t cap)
{
    loader L = {.f = f, .shapes = shapes, .status = MODEL_OK, .msg = msg, .cap = cap};
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
    m->shapes_only = shapes;
    model_hparams *hp = &m->hp;
    const model_arch_row *row = load_hparams(&L, hp);
    if (!row)
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
    if (!model_hp_u32(&L, hp->arch_name, "vocab_size", hp->n_vocab, &vs))
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
    const uint32_t A = row->opts, FL = hp->flags;
    if (!bind(&L, "token_embd.weight", E, V, true, false, &m->tok_embd) ||
        !bind(&L, "output_norm.weight", E, 0, true, true, &m->output_norm) ||
        !bind(&L, "output.weight", E, V, (A & MODEL_A_OUTPUT_REQUIRED) != 0, false, &m->output))
        goto fail_m;
    if (!model_weight_bound(&m->output)) {
        m->output = m->tok_embd;
        hp->tied_embeddings = true;
    }
    backend_weight rf, rl, rs;
    if (!bind(&L, "rope_freqs.weight", hp->n_rot / 2, 0, false, true, &rf))
        goto fail_m;
    if (model_weight_bound(&rf)) {
        m->rope_freqs = rf.data;
        hp->has_rope_freqs = true;
    }
    if (A & MODEL_A_ROPE_FACTORS) {
        if (!bind(&L, "rope_factors_long.weight", hp->n_rot / 2, 0, false, true, &rl) ||
            !bind(&L, "rope_factors_short.weight", hp->n_rot / 2, 0, false, true, &rs))
            goto fail_m;
        if (model_weight_bound(&rl) != model_weight_bound(&rs)) {
            fail(&L, MODEL_EMISSING, "rope_factors_long.weight and rope_factors_short.weight come together");
            goto fail_m;
        }
        m->rope_factors_long = rl.data;
        m->rope_factors_short = rs.data;
        hp->has_rope_factors = model_weight_bound(&rl);
    }

    m->layers = calloc(hp->n_layer, sizeof *m->layers);
    if (!m->layers) {
        fail(&L, MODEL_ENOMEM, "out of memory");
        goto fail_m;
    }
    if (!load_swa_layers(&L, row, m))
        goto fail_m;
    const bool pre = !(FL & MODEL_F_NO_PRE_NORM), post = (FL & MODEL_F_POST_NORMS) != 0;
    const bool qkb = (A & MODEL_A_QKV_BIAS) != 0, bias = (A & MODEL_A_BIASES) != 0;
    const uint64_t qn = FL & MODEL_F_QK_NORM_HEAD ? hp->head_dim : QD;
    const uint64_t kn = FL & MODEL_F_QK_NORM_HEAD ? hp->head_dim : KD;
    const bool qk_norm = (FL & (MODEL_F_QK_NORM_HEAD | MODEL_F_QK_NORM_FULL)) != 0;
    const bool moe = hp->n_expert > 0;
    const char *ffn_norm_name = A & MODEL_A_FFN_NORM_POST_ATTN ? "post_attention_norm.weight" : "ffn_norm.weight";
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        model_layer *ly = &m->layers[il];
        backend_weight qkv = {0}, up2 = {0};
        if ((A & MODEL_A_FUSED_QKV) && !bind_layer_t(&L, il, "attn_qkv.weight", E, QD + 2 * KD, false, false, &qkv))
            goto fail_m;
        if (model_weight_bound(&qkv)) { /* Q, K and V are row ranges of the fused tensor */
            ly->wq = qkv;
            ly->wq.ne1 = QD;
            ly->wk = qkv;
            ly->wk.ne1 = KD;
            ly->wk.data = rows_past(&qkv, QD);
            ly->wv = ly->wk;
            ly->wv.data = rows_past(&qkv, QD + KD);
            hp->fused_qkv = true;
        } else if (!bind_layer_t(&L, il, "attn_q.weight", E, QD, true, false, &ly->wq) ||
                   !bind_layer_t(&L, il, "attn_k.weight", E, KD, true, false, &ly->wk) ||
                   !bind_layer_t(&L, il, "attn_v.weight", E, KD, true, false, &ly->wv)) {
            goto fail_m;
        }
        if (moe) {
            if (!bind_moe_layer(&L, m, A, il, ly))
                goto fail_m;
        } else if ((A & MODEL_A_FUSED_UP) && !bind_layer_t(&L, il, "ffn_up.weight", E, 2 * F, true, false, &up2)) {
            goto fail_m;
        }
        if (moe) {
            /* the experts stand for the dense feed-forward */
        } else if (model_weight_bound(&up2)) { /* phi3: the gate is the first half of ffn_up's rows */
            ly->ffn_gate = up2;
            ly->ffn_gate.ne1 = F;
            ly->ffn_up = ly->ffn_gate;
            ly->ffn_up.data = rows_past(&up2, F);
            hp->fused_gate_up = true;
        } else if (!bind_layer_t(&L, il, "ffn_gate.weight", E, F, true, false, &ly->ffn_gate) ||
                   !bind_layer_t(&L, il, "ffn_up.weight", E, F, true, false, &ly->ffn_up)) {
            goto fail_m;
        }
        if (!moe && !bind_layer_t(&L, il, "ffn_down.weight", F, E, true, false, &ly->ffn_down))
            goto fail_m;
        if (!bind_layer_t(&L, il, "attn_norm.weight", E, 0, pre, true, &ly->attn_norm) ||
            !bind_layer_t(&L, il, "attn_output.weight", QD, E, true, false, &ly->wo) ||
            !bind_layer_t(&L, il, "attn_q.bias", QD, 0, qkb, true, &ly->bq) ||
            !bind_layer_t(&L, il, "attn_k.bias", KD, 0, qkb, true, &ly->bk) ||
            !bind_layer_t(&L, il, "attn_v.bias", KD, 0, qkb, true, &ly->bv) ||
            !bind_layer_t(&L, il, ffn_norm_name, E, 0, pre, true, &ly->ffn_norm))
            goto fail_m;
        if ((A & MODEL_A_ATTN_BIASES) && !bind_layer_t(&L, il, "attn_output.bias", E, 0, true, true, &ly->bo))
            goto fail_m;
        if ((A & MODEL_A_ATTN_SINKS) &&
            !bind_layer_t(&L, il, "attn_sinks.weight", hp->n_head, 0, true, true, &ly->attn_sinks))
            goto fail_m;
        if (qk_norm && (!bind_layer_t(&L, il, "attn_q_norm.weight", qn, 0, true, true, &ly->q_norm) ||
                        !bind_layer_t(&L, il, "attn_k_norm.weight", kn, 0, true, true, &ly->k_norm)))
            goto fail_m;
        if (post && (!bind_layer_t(&L, il, "post_attention_norm.weight", E, 0, true, true, &ly->post_attn_norm) ||
                     !bind_layer_t(&L, il, "post_ffw_norm.weight", E, 0, true, true, &ly->post_ffw_norm)))
            goto fail_m;
        if (bias && !bind_layer_t(&L, il, "attn_output.bias", E, 0, false, true, &ly->bo))
            goto fail_m;
        if (bias && !moe &&
                    (!bind_layer_t(&L, il, "ffn_gate.bias", F, 0, false, true, &ly->ffn_gate_b) ||
                     !bind_layer_t(&L, il, "ffn_up.bias", F, 0, false, true, &ly->ffn_up_b) ||
                     !bind_layer_t(&L, il, "ffn_down.bias", E, 0, false, true, &ly->ffn_down_b)))
            goto fail_m;
        if (model_weight_bound(&ly->bq) || model_weight_bound(&ly->bk) || model_weight_bound(&ly->bv))
            hp->has_qkv_bias = true;
        ly->rope = !hp->rope_off;
        ly->rope_base = hp->rope_freq_base;
        ly->rope_scale = hp->rope_freq_scale;
        ly->rope_ext = hp->rope_ext_factor;
        ly->rope_attn = hp->rope_attn_factor;
        if (row->layer)
            row->layer(hp, il, ly);
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

model *model_load(const gguf_file *f, model_status *status, char *msg, size_t cap)
{
    return load(f, false, status, msg, cap);
}

model *model_load_shapes(const gguf_file *f, model_status *status, char *msg, size_t cap)
{
    return load(f, true, status, msg, cap);
}

void model_free(model *m)
{
    if (!m)
        return;
    model_uncopy(m);
    free(m->layers);
    free(m);
}

/* The weights of a layer, in model_layer's order. */
static void layer_weights(model_layer *l, backend_weight *w[MODEL_LAYER_WEIGHTS])
{
    backend_weight *all[MODEL_LAYER_WEIGHTS] = {
        &l->attn_norm, &l->wq, &l->wk, &l->wv, &l->wo, &l->bq, &l->bk, &l->bv, &l->bo, &l->q_norm,
        &l->k_norm, &l->post_attn_norm, &l->ffn_norm, &l->ffn_gate, &l->ffn_up, &l->ffn_down,
        &l->ffn_gate_b, &l->ffn_up_b, &l->ffn_down_b, &l->post_ffw_norm, &l->ffn_gate_inp, &l->ffn_gate_inp_b,
        &l->ffn_gate_exps, &l->ffn_up_exps, &l->ffn_down_exps, &l->ffn_gate_exps_b, &l->ffn_up_exps_b,
        &l->ffn_down_exps_b, &l->attn_sinks,
    };
    memcpy(w, all, sizeof all);
}

uint64_t model_weight_bytes(const model *m)
{
    if (!m)
        return 0;
    uint64_t n = m->tok_embd.ne1 * m->tok_embd.row_bytes + m->output_norm.row_bytes;
    if (!m->hp.tied_embeddings)
        n += m->output.ne1 * m->output.row_bytes;
    for (uint32_t il = 0; il < m->hp.n_layer; il++) {
        backend_weight *ws[MODEL_LAYER_WEIGHTS];
        layer_weights(&m->layers[il], ws);
        for (size_t i = 0; i < MODEL_LAYER_WEIGHTS; i++)
            if (model_weight_bound(ws[i])) /* the row ranges of a fused tensor add up to it; experts count whole */
                n += ws[i]->ne1 * ws[i]->row_bytes * (ws[i]->ne2 > 1 ? ws[i]->ne2 : 1);
    }
    return n;
}

backend_weight *model_weight_slot(model *m, size_t i)
{
    backend_weight *w;
    if (i < 3) {
        backend_weight *top[] = {&m->tok_embd, &m->output_norm, &m->output};
        w = top[i];
        if (i == 2 && m->output.data == m->tok_embd.data)
            return NULL;
    } else {
        backend_weight *lw[MODEL_LAYER_WEIGHTS];
        layer_weights(&m->layers[(i - 3) / MODEL_LAYER_WEIGHTS], lw);
        w = lw[(i - 3) % MODEL_LAYER_WEIGHTS];
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
    if (m->shapes_only) {
        if (msg)
            snprintf(msg, cap, "the model was loaded for its shapes only (no weights)");
        return BACKEND_EARG;
    }
    if (m->prepared == be || !be->ops->weight_prepare)
        return 0;
    if (m->prepared) {
        if (msg)
            snprintf(msg, cap, "the model is prepared for another backend (model_release first)");
        return BACKEND_EARG;
    }
    const size_t n = MODEL_SLOTS(m);
    for (size_t i = 0; i < n; i++) {
        backend_weight *w = model_weight_slot(m, i);
        int rc = w ? be->ops->weight_prepare(be->ctx, w) : 0;
        if (rc != 0) {
            if (msg)
                snprintf(msg, cap, "preparing %s for the %s backend: %s", w->name ? w->name : "a weight",
                         be->ops->name, backend_strerror(rc));
            while (i-- > 0)
                if ((w = model_weight_slot(m, i)))
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
    const size_t n = MODEL_SLOTS(m);
    for (size_t i = 0; i < n; i++) {
        backend_weight *w = model_weight_slot(m, i);
        if (w)
            be->ops->weight_release(be->ctx, w);
    }
    if (m->output.data == m->tok_embd.data)
        m->output.priv = NULL;
    m->prepared = NULL;
}
