/* qrecipe: the quantize recipe (see qrecipe.h). */
#include "qrecipe.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec.h"
#include "ggtype.h"
#include "qerr.h"

typedef enum { R_PLAIN, R_Q3_K_M, R_Q4_K_S, R_Q4_K_M, R_Q5_K_S, R_Q5_K_M } mix_kind;

typedef struct {
    const char *name;   /* command-line name, case-insensitive */
    uint32_t type;      /* base type */
    mix_kind kind;
    uint32_t file_type; /* llama_ftype */
} mix;

static const mix MIXES[] = {
    {"f32", GGTYPE_F32, R_PLAIN, 0},        {"f16", GGTYPE_F16, R_PLAIN, 1},
    {"bf16", GGTYPE_BF16, R_PLAIN, 32},     {"q4_0", GGTYPE_Q4_0, R_PLAIN, 2},
    {"q4_1", GGTYPE_Q4_1, R_PLAIN, 3},      {"q8_0", GGTYPE_Q8_0, R_PLAIN, 7},
    {"q5_0", GGTYPE_Q5_0, R_PLAIN, 8},      {"q5_1", GGTYPE_Q5_1, R_PLAIN, 9},
    {"q2_K", GGTYPE_Q2_K, R_PLAIN, 10},     {"q3_K", GGTYPE_Q3_K, R_PLAIN, 11},
    {"q3_K_S", GGTYPE_Q3_K, R_PLAIN, 11},   {"q3_K_M", GGTYPE_Q3_K, R_Q3_K_M, 12},
    {"q4_K", GGTYPE_Q4_K, R_Q4_K_S, 14},    {"q4_K_S", GGTYPE_Q4_K, R_Q4_K_S, 14},
    {"q4_K_M", GGTYPE_Q4_K, R_Q4_K_M, 15},  {"q5_K", GGTYPE_Q5_K, R_Q5_K_S, 16},
    {"q5_K_S", GGTYPE_Q5_K, R_Q5_K_S, 16},  {"q5_K_M", GGTYPE_Q5_K, R_Q5_K_M, 17},
    {"q6_K", GGTYPE_Q6_K, R_PLAIN, 18},     {"iq4_nl", GGTYPE_IQ4_NL, R_PLAIN, 25},
    {"iq4_xs", GGTYPE_IQ4_XS, R_PLAIN, 30}, {"tq1_0", GGTYPE_TQ1_0, R_PLAIN, 36},
    {"tq2_0", GGTYPE_TQ2_0, R_PLAIN, 37},   {"mxfp4", GGTYPE_MXFP4, R_PLAIN, 38},
};

typedef struct {
    regex_t re;
    uint32_t type;
} override;

struct qrecipe {
    const mix *mix;     /* NULL until qrecipe_set_mix */
    override ov[QRECIPE_MAX_OVERRIDES];
    int n_ov;
    int n_layer;
    bool has_output;
};

static void set_msg(char *msg, size_t cap, const char *fmt, const char *arg)
{
    if (msg && cap)
        snprintf(msg, cap, fmt, arg);
}

qrecipe *qrecipe_new(void)
{
    return calloc(1, sizeof(qrecipe));
}

void qrecipe_free(qrecipe *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_ov; i++)
        regfree(&r->ov[i].re);
    free(r);
}

qrecipe_status qrecipe_set_mix(qrecipe *r, const char *name, char *msg, size_t cap)
{
    for (size_t i = 0; i < sizeof MIXES / sizeof MIXES[0]; i++)
        if (!strcasecmp(MIXES[i].name, name)) {
            r->mix = &MIXES[i];
            return QRECIPE_OK;
        }
    set_msg(msg, cap, "unknown quantization mix '%s'", name);
    return QRECIPE_EMIX;
}

bool qrecipe_has_mix(const qrecipe *r) { return r->mix != NULL; }
const char *qrecipe_mix_name(const qrecipe *r) { return r->mix ? r->mix->name : NULL; }
uint32_t qrecipe_file_type(const qrecipe *r) { return r->mix ? r->mix->file_type : 0; }

qrecipe_status qrecipe_add_override(qrecipe *r, const char *spec, char *msg, size_t cap)
{
    const char *eq = strrchr(spec, '=');
    int ty = eq ? ggtype_from_name(eq + 1) : -1;
    if (!eq || ty < 0 || !(codec_can_quantize((uint32_t)ty) || ty == GGTYPE_F32) ||
        r->n_ov == QRECIPE_MAX_OVERRIDES) {
        set_msg(msg, cap, "override '%s' is not REGEX=TYPE with a TYPE that has a quantizer", spec);
        return QRECIPE_ESPEC;
    }
    size_t n = (size_t)(eq - spec);
    char *re = malloc(n + 1);
    if (re) {
        memcpy(re, spec, n);
        re[n] = '\0';
    } else {
        set_msg(msg, cap, "%s", "out of memory");
        return QRECIPE_ENOMEM;
    }
    int e = regcomp(&r->ov[r->n_ov].re, re, REG_EXTENDED | REG_NOSUB);
    free(re);
    if (e != 0) {
        set_msg(msg, cap, "bad regular expression in override '%s'", spec);
        return QRECIPE_EREGEX;
    }
    r->ov[r->n_ov++].type = (uint32_t)ty;
    return QRECIPE_OK;
}

void qrecipe_set_model(qrecipe *r, int n_layer, bool has_output)
{
    r->n_layer = n_layer;
    r->has_output = has_output;
}

void qrecipe_fit(qrecipe *r, const gguf_file *f)
{
    uint32_t n_layer = 0;
    char key[160], arch[64];
    if (gguf_get_cstr(f, "general.architecture", arch, sizeof arch) == GGUF_OK) {
        snprintf(key, sizeof key, "%s.block_count", arch);
        gguf_get_u32(f, key, &n_layer);
    }
    uint64_t nt = gguf_tensor_count(f);
    if (n_layer == 0)
        for (uint64_t i = 0; i < nt; i++) {
            char nm[256], role[64];
            int l = qerr_name_role(gguf_str_copy(gguf_tensor_at(f, i)->name, nm, sizeof nm), role,
                                   sizeof role);
            if (l + 1 > (int)n_layer)
                n_layer = (uint32_t)(l + 1);
        }
    qrecipe_set_model(r, (int)n_layer, gguf_find_tensor(f, "output.weight") != NULL);
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static bool use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static uint32_t fallback(uint32_t t, uint64_t ne0)
{
    const ggtype_traits *tr = ggtype_get(t);
    if (ne0 % tr->blck_size == 0)
        return t;
    switch (t) {
    case GGTYPE_Q2_K: case GGTYPE_Q3_K: case GGTYPE_IQ4_XS: case GGTYPE_TQ1_0: case GGTYPE_TQ2_0:
        t = GGTYPE_IQ4_NL; break;
    case GGTYPE_Q4_K: t = GGTYPE_Q5_0; break;
    case GGTYPE_Q5_K: t = GGTYPE_Q5_1; break;
    case GGTYPE_Q6_K: t = GGTYPE_Q8_0; break;
    default: break;
    }
    if (ne0 % ggtype_get(t)->blck_size != 0)
        t = GGTYPE_F16;
    return t;
}

uint32_t qrecipe_type(const qrecipe *r, const gguf_tensor *t, const char *name)
{
    const ggtype_traits *st = ggtype_get(t->type);
    if (!t->type_known || !st || !(st->is_float || st->is_quantized))
        return t->type;   /* integer tensors are copied */
    if (t->n_dims < 2 || t->n_elements == t->ne[0] || !ends_with(name, ".weight") ||
        strstr(name, "norm"))
        return GGTYPE_F32;
    for (int i = 0; i < r->n_ov; i++)
        if (regexec(&r->ov[i].re, name, 0, NULL, 0) == 0)
            return fallback(r->ov[i].type, t->ne[0]);
    const mix *rc = r->mix;
    int n_layer = r->n_layer;
    uint32_t ty = rc->type;
    const ggtype_traits *bt = ggtype_get(ty);
    if (!bt->is_quantized)
        return fallback(ty, t->ne[0]);
    char role[64];
    int layer = qerr_name_role(name, role, sizeof role);
    if (!strcmp(name, "output.weight") || (!r->has_output && !strcmp(name, "token_embd.weight"))) {
        if (t->ne[0] % 256 != 0)
            ty = GGTYPE_Q8_0;
        else if (ty != GGTYPE_Q8_0)
            ty = GGTYPE_Q6_K;
    } else if (!strcmp(role, "attn_v") && layer >= 0) {
        if (rc->kind == R_Q3_K_M)
            ty = layer < 2 ? GGTYPE_Q5_K : GGTYPE_Q4_K;
        else if ((rc->kind == R_Q4_K_M || rc->kind == R_Q5_K_M) && use_more_bits(layer, n_layer))
            ty = GGTYPE_Q6_K;
        else if (rc->kind == R_Q4_K_S && layer < 4)
            ty = GGTYPE_Q5_K;
    } else if (!strcmp(role, "ffn_down") && layer >= 0) {
        if (rc->kind == R_Q3_K_M)
            ty = layer < n_layer / 16 ? GGTYPE_Q5_K : GGTYPE_Q4_K;
        else if ((rc->kind == R_Q4_K_M || rc->kind == R_Q5_K_M) && use_more_bits(layer, n_layer))
            ty = GGTYPE_Q6_K;
        else if (rc->kind == R_Q4_K_S && layer < n_layer / 8)
            ty = GGTYPE_Q5_K;
    } else if (!strcmp(role, "attn_output")) {
        if (rc->kind == R_Q3_K_M)
            ty = GGTYPE_Q4_K;
    } else if (!strcmp(role, "attn_qkv")) {
        if (rc->kind == R_Q3_K_M || rc->kind == R_Q4_K_M)
            ty = GGTYPE_Q5_K;
        else if (rc->kind == R_Q5_K_M)
            ty = GGTYPE_Q6_K;
    }
    return fallback(ty, t->ne[0]);
}
