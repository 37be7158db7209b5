/* Tokenizer front end: loading from GGUF metadata, special tokens and
 * accessors (the tokenize / detokenize drivers and streaming decoding are in
 * tokenizer_text.c). The behaviour mirrors llama.cpp's llama_vocab
 * (llama-vocab.cpp): the same defaults per model, the same special-token
 * partitioning, the same EOG detection, the same token-to-piece rules. */
#include "tokenizer.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "tokenizer_unicode.h"

#define ARENA_BLOCK 65536

static void set_err(tok_error *err, tok_status code, const char *fmt, const char *arg)
{
    if (!err)
        return;
    err->code = code;
    snprintf(err->msg, sizeof err->msg, fmt, arg ? arg : "");
}

const char *tok_strerror(tok_status code)
{
    switch (code) {
    case TOK_OK: return "ok";
    case TOK_ENOTFOUND: return "no tokenizer in the file";
    case TOK_EFORMAT: return "malformed tokenizer metadata";
    case TOK_EUNSUPPORTED: return "unsupported tokenizer model";
    case TOK_ENOMEM: return "out of memory";
    case TOK_EARG: return "bad argument";
    }
    return "unknown error";
}

bool tok__ids_push(tok__ids *a, tok_id id)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        tok_id *p = realloc(a->v, cap * sizeof *p);
        if (!p)
            return false;
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = id;
    return true;
}

/* ---------------- string table ---------------- */

tok_id tok__lookup(const tok_vocab *v, const void *s, size_t n, uint32_t h)
{
    for (uint32_t k = h & v->map_mask;; k = (k + 1) & v->map_mask) {
        uint64_t e = v->map[k];
        if (!e)
            return TOK_NULL;
        if ((uint32_t)(e >> 32) != h)
            continue;
        uint32_t id = (uint32_t)e - 1;
        if (v->strs[id].len == n && !memcmp(v->strs[id].p, s, n))
            return (tok_id)id;
    }
}

static void map_insert(tok_vocab *v, uint32_t id)
{
    uint32_t h = v->strs[id].hash, k = h & v->map_mask;
    while (v->map[k])
        k = (k + 1) & v->map_mask;
    v->map[k] = (uint64_t)h << 32 | (id + 1);
}

static bool map_grow(tok_vocab *v)
{
    uint32_t cap = (v->map_mask + 1) * 2;
    uint64_t *m = calloc(cap, sizeof *m);
    if (!m)
        return false;
    free(v->map);
    v->map = m;
    v->map_mask = cap - 1;
    for (uint32_t id = 0; id < v->n_str; id++)   /* in id order: the first id keeps its text */
        if ((v->strs[id].len || id >= v->n_vocab) &&
            tok__lookup(v, v->strs[id].p, v->strs[id].len, v->strs[id].hash) == TOK_NULL)
            map_insert(v, id);
    return true;
}

static bool str_reserve(tok_vocab *v, uint32_t need)
{
    if (need <= v->cap_str)
        return true;
    uint32_t cap = v->cap_str ? v->cap_str : 1024;
    while (cap < need)
        cap *= 2;
    tok__str *s = realloc(v->strs, cap * sizeof *s);
    if (!s)
        return false;
    v->strs = s;
    v->cap_str = cap;
    return true;
}

tok_id tok__intern(tok_vocab *v, const char *s, size_t n)
{
    uint32_t h = tok__hash(s, n);
    tok_id id = tok__lookup(v, s, n, h);
    if (id != TOK_NULL)
        return id;
    if (n > ARENA_BLOCK || v->n_str >= (1u << 30) || !str_reserve(v, v->n_str + 1))
        return TOK_NULL;
    if (!v->n_arena || v->arena_used + n > ARENA_BLOCK) {
        char **a = realloc(v->arena, (v->n_arena + 1) * sizeof *a);
        if (!a)
            return TOK_NULL;
        v->arena = a;
        if (!(v->arena[v->n_arena] = malloc(ARENA_BLOCK)))
            return TOK_NULL;
        v->n_arena++;
        v->arena_used = 0;
    }
    char *dst = v->arena[v->n_arena - 1] + v->arena_used;
    memcpy(dst, s, n);
    v->arena_used += n;
    uint32_t nid = v->n_str++;
    v->strs[nid] = (tok__str){dst, (uint32_t)n, h};
    if ((uint64_t)v->n_str * 2 > (uint64_t)v->map_mask + 1) {
        if (!map_grow(v))
            return TOK_NULL;
    } else {
        map_insert(v, nid);
    }
    return (tok_id)nid;
}

static tok_id find_cstr(const tok_vocab *v, const char *s)
{
    size_t n = strlen(s);
    tok_id id = tok__lookup(v, s, n, tok__hash(s, n));
    return id < (tok_id)v->n_vocab ? id : TOK_NULL;
}

/* ---------------- loading ---------------- */

static void warn(tok_vocab *v, const char *fmt, const char *arg)
{
    size_t used = strlen(v->warning);
    if (used + 4 >= sizeof v->warning)
        return;
    if (used)
        used += (size_t)snprintf(v->warning + used, sizeof v->warning - used, "; ");
    snprintf(v->warning + used, sizeof v->warning - used, fmt, arg);
}

static void get_id(const tok_vocab *v, const gguf_file *f, const char *key, tok_id *id)
{
    uint64_t x;
    if (*id != TOK_NULL && (uint32_t)*id >= v->n_vocab)
        *id = TOK_NULL;
    if (gguf_get_u64(f, key, &x) == GGUF_OK && x < v->n_vocab)
        *id = (tok_id)x;
}

static void set_eog(tok_vocab *v, tok_id id)
{
    if (id >= 0 && (uint32_t)id < v->n_vocab)
        v->eog[id >> 3] |= (uint8_t)(1u << (id & 7));
}

static bool get_eog(const tok_vocab *v, tok_id id)
{
    return id >= 0 && (uint32_t)id < v->n_vocab && ((v->eog[id >> 3] >> (id & 7)) & 1);
}

/* Detect a special id by its text when the metadata did not give it: the
 * lowest id among `names` (NULL-terminated), made a control token. */
static void detect(tok_vocab *v, tok_id *slot, const char *const *names)
{
    if (*slot != TOK_NULL)
        return;
    for (const char *const *p = names; *p; p++) {
        tok_id id = find_cstr(v, *p);
        if (id != TOK_NULL && (*slot == TOK_NULL || id < *slot))
            *slot = id;
    }
    if (*slot != TOK_NULL)
        v->attr[*slot] |= TOK_ATTR_CONTROL;
}

static int cmp_special(const void *a, const void *b, void *vv)
{
    const tok_vocab *v = vv;
    tok_id x = *(const tok_id *)a, y = *(const tok_id *)b;
    if (v->strs[x].len != v->strs[y].len)
        return v->strs[x].len > v->strs[y].len ? -1 : 1;
    return x < y ? -1 : x > y;
}

static bool contains_ci(const char *hay, const char *needle)
{
    char low[256];
    size_t n = strlen(hay);
    if (n >= sizeof low)
        n = sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)hay[i]);
    low[n] = 0;
    return strstr(low, needle) != NULL;
}

static tok_status load_tokens(tok_vocab *v, const gguf_file *f, tok_error *err)
{
    const gguf_value *arr;
    if (gguf_get_arr(f, "tokenizer.ggml.tokens", &arr) != GGUF_OK) {
        set_err(err, TOK_ENOTFOUND, "no tokenizer.ggml.tokens in the file%s", NULL);
        return TOK_ENOTFOUND;
    }
    if (arr->arr_type != GGUF_VT_STRING || arr->arr_len == 0 || arr->arr_len > (1u << 26)) {
        set_err(err, TOK_EFORMAT, "tokenizer.ggml.tokens: not a string array of 1..2^26 entries%s", NULL);
        return TOK_EFORMAT;
    }
    uint32_t n = (uint32_t)arr->arr_len;
    v->n_vocab = n;
    v->score = calloc(n, sizeof *v->score);
    v->attr = malloc(n * sizeof *v->attr);
    v->eog = calloc((n + 7) / 8, 1);
    uint32_t cap = 1024;
    while (cap < 2 * n + 1024)
        cap *= 2;
    v->map = calloc(cap, sizeof *v->map);
    v->map_mask = cap - 1;
    if (!v->score || !v->attr || !v->eog || !v->map || !str_reserve(v, n + 512))
        goto nomem;
    bool dup = false;
    for (uint32_t i = 0; i < n; i++) {
        gguf_str s;
        if (gguf_arr_str(arr, i, &s) != GGUF_OK || s.len > UINT32_MAX) {
            set_err(err, TOK_EFORMAT, "tokenizer.ggml.tokens: unreadable entry%s", NULL);
            return TOK_EFORMAT;
        }
        v->strs[i] = (tok__str){s.ptr, (uint32_t)s.len, tok__hash(s.ptr, s.len)};
        v->attr[i] = TOK_ATTR_NORMAL;
        if (s.len > v->max_token_len)
            v->max_token_len = (uint32_t)s.len;
        v->n_str = i + 1;
        if (!s.len)
            continue;
        if (tok__lookup(v, s.ptr, s.len, v->strs[i].hash) != TOK_NULL) {
            dup = true;   /* the first id keeps the text */
            continue;
        }
        map_insert(v, i);
    }
    if (dup)
        warn(v, "%s", "duplicate token texts (the lowest id is used)");

    const gguf_value *sc;
    if (gguf_get_arr(f, "tokenizer.ggml.scores", &sc) == GGUF_OK) {
        if ((sc->arr_type != GGUF_VT_FLOAT32 && sc->arr_type != GGUF_VT_INT32) || sc->arr_len < n) {
            set_err(err, TOK_EFORMAT, "tokenizer.ggml.scores: not a float32/int32 array as long as the vocabulary%s", NULL);
            return TOK_EFORMAT;
        }
        const uint8_t *d = gguf_arr_data(sc);   /* metadata arrays need not be aligned */
        for (uint32_t i = 0; i < n; i++) {
            double x = 0;
            if (d && sc->arr_type == GGUF_VT_FLOAT32) {
                float fx;
                memcpy(&fx, d + 4 * (size_t)i, 4);
                x = fx;
            } else if (d) {
                int32_t ix;
                memcpy(&ix, d + 4 * (size_t)i, 4);
                x = ix;
            } else {
                gguf_arr_f64(sc, i, &x);
            }
            v->score[i] = (float)x;
        }
    }
    const gguf_value *tt;
    if (gguf_get_arr(f, "tokenizer.ggml.token_type", &tt) == GGUF_OK) {
        if (tt->arr_type != GGUF_VT_INT32 || tt->arr_len < n) {
            set_err(err, TOK_EFORMAT, "tokenizer.ggml.token_type: not an int32 array as long as the vocabulary%s", NULL);
            return TOK_EFORMAT;
        }
        const uint8_t *d = gguf_arr_data(tt);
        for (uint32_t i = 0; i < n; i++) {
            int64_t t = 0;
            if (d) {
                int32_t x;
                memcpy(&x, d + 4 * (size_t)i, 4);
                t = x;
            } else {
                gguf_arr_i64(tt, i, &t);
            }
            static const uint32_t map[7] = {0, TOK_ATTR_NORMAL, TOK_ATTR_UNKNOWN, TOK_ATTR_CONTROL,
                                            TOK_ATTR_USER_DEFINED, TOK_ATTR_UNUSED, TOK_ATTR_BYTE};
            v->attr[i] = t >= 0 && t < 7 ? map[t] : 0;
        }
    }
    return TOK_OK;
nomem:
    set_err(err, TOK_ENOMEM, "out of memory loading the vocabulary%s", NULL);
    return TOK_ENOMEM;
}

static void finish_specials(tok_vocab *v, const gguf_file *f)
{
    static const char *const eot_names[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
        "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
        "<end_of_utterance>", NULL};
    static const char *const eom_names[] = {"<|eom_id|>", NULL};
    static const char *const fim_pre_names[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
        "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>", "\xe2\x96\x81<PRE>",
        "<|code_prefix|>", "<|prefix|>", NULL};
    static const char *const fim_suf_names[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
        "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>", "<SUF>", "\xe2\x96\x81<SUF>",
        "<|code_suffix|>", "<|suffix|>", NULL};
    static const char *const fim_mid_names[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
        "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>", "\xe2\x96\x81<MID>",
        "<|code_middle|>", "<|middle|>", NULL};
    static const char *const fim_pad_names[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
        "[PAD]", NULL};
    static const char *const fim_rep_names[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
        "<REPO>", "<reponame>", NULL};
    static const char *const fim_sep_names[] = {"<|file_sep|>", NULL};
    static const char *const eog_names[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[", NULL};

    detect(v, &v->eot, eot_names);
    detect(v, &v->eom, eom_names);
    detect(v, &v->fim_pre, fim_pre_names);
    detect(v, &v->fim_suf, fim_suf_names);
    detect(v, &v->fim_mid, fim_mid_names);
    detect(v, &v->fim_pad, fim_pad_names);
    detect(v, &v->fim_rep, fim_rep_names);
    detect(v, &v->fim_sep, fim_sep_names);

    /* control tokens named "unused" are unused */
    for (uint32_t i = 0; i < v->n_vocab; i++)
        if ((v->attr[i] & TOK_ATTR_CONTROL) && v->strs[i].len >= 6 &&
            memmem(v->strs[i].p, v->strs[i].len, "unused", 6))
            v->attr[i] |= TOK_ATTR_UNUSED;

    set_eog(v, v->fim_pad);
    set_eog(v, v->fim_rep);
    set_eog(v, v->fim_sep);
    for (const char *const *p = eog_names; *p; p++) {
        tok_id id = find_cstr(v, *p);
        if (id != TOK_NULL) {
            set_eog(v, id);
            v->attr[id] |= TOK_ATTR_CONTROL;
        }
    }
    static const char *const harmony[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};
    for (const char *const *p = harmony; *p; p++) {
        tok_id id = find_cstr(v, *p);
        if (id != TOK_NULL)
            v->attr[id] = TOK_ATTR_USER_DEFINED;
    }
    set_eog(v, v->eos);
    set_eog(v, v->eot);
    set_eog(v, v->eom);
    /* o200k_harmony / solar-open: "<|end|>" ends a message, not the generation */
    tok_id ret = find_cstr(v, "<|return|>"), call = find_cstr(v, "<|call|>");
    tok_id calls = find_cstr(v, "<|calls|>"), flush = find_cstr(v, "<|flush|>");
    tok_id end = find_cstr(v, "<|end|>");
    bool has_call = get_eog(v, call) || get_eog(v, calls);
    if (get_eog(v, end) && ((get_eog(v, ret) && has_call) || (has_call && get_eog(v, flush)))) {
        v->eog[end >> 3] &= (uint8_t)~(1u << (end & 7));
        v->attr[end] = TOK_ATTR_USER_DEFINED;
    }
    tok_id tr = find_cstr(v, "<|tool_response>"), s = find_cstr(v, "</s>");
    if (get_eog(v, tr) && get_eog(v, s)) {
        v->eog[s >> 3] &= (uint8_t)~(1u << (s & 7));
        v->attr[s] = TOK_ATTR_NORMAL;
    }

    /* candidates for partitioning text: control, user-defined, unknown */
    for (uint32_t i = 0; i < v->n_vocab; i++)
        if (v->attr[i] & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN))
            v->n_special++;
    v->special = malloc((v->n_special ? v->n_special : 1) * sizeof *v->special);
    if (v->special) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < v->n_vocab; i++)
            if (v->attr[i] & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN))
                v->special[k++] = (tok_id)i;
        qsort_r(v->special, v->n_special, sizeof *v->special, cmp_special, v);
    } else {
        v->n_special = 0;
    }

    /* per-model attributes llama.cpp sets by name */
    char name[128] = "", arch[64] = "";
    gguf_get_cstr(f, "general.name", name, sizeof name);
    gguf_get_cstr(f, "general.architecture", arch, sizeof arch);
    if (strstr(v->pre_name, "jina-v2-de") || strstr(v->pre_name, "jina-v2-es") ||
        strstr(v->pre_name, "jina-v2-code") || strstr(arch, "nomic-bert-moe") ||
        strstr(arch, "jina-bert-v3")) {
        tok_id m = find_cstr(v, "<mask>");
        if (m != TOK_NULL)
            v->attr[m] |= TOK_ATTR_LSTRIP;
    } else if (contains_ci(name, "phi-3") || contains_ci(name, "phi3")) {
        for (uint32_t k = 0; k < v->n_special; k++)
            v->attr[v->special[k]] |= TOK_ATTR_RSTRIP;
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        tok_id e = find_cstr(v, "</s>");
        if (e != TOK_NULL)
            v->attr[e] |= TOK_ATTR_RSTRIP;
        for (int k = 0; k < 3; k++) {
            tok_id id = find_cstr(v, keep[k]);
            if (id != TOK_NULL)
                v->attr[id] &= ~(uint32_t)TOK_ATTR_RSTRIP;
        }
    } else if (contains_ci(name, "modern-bert")) {
        tok_id m = find_cstr(v, "[MASK]");
        if (m != TOK_NULL)
            v->attr[m] |= TOK_ATTR_LSTRIP;
    }
}

tok_vocab *tok_open(const gguf_file *f, tok_error *err)
{
    tok_error dummy;
    if (!err)
        err = &dummy;
    err->code = TOK_OK;
    err->msg[0] = 0;
    if (!f) {
        set_err(err, TOK_EARG, "no file%s", NULL);
        return NULL;
    }
    tok_vocab *v = calloc(1, sizeof *v);
    if (!v) {
        set_err(err, TOK_ENOMEM, "out of memory%s", NULL);
        return NULL;
    }
    if (gguf_get_cstr(f, "tokenizer.ggml.model", v->model_name, sizeof v->model_name) != GGUF_OK) {
        set_err(err, TOK_ENOTFOUND, "no tokenizer.ggml.model in the file%s", NULL);
        goto fail;
    }
    if (!strcmp(v->model_name, "llama")) {
        v->model = TOK_MODEL_SPM;
    } else if (!strcmp(v->model_name, "gpt2")) {
        v->model = TOK_MODEL_BPE;
    } else {
        set_err(err, TOK_EUNSUPPORTED, "tokenizer model '%s' is not supported (llama and gpt2 are)",
                v->model_name);
        goto fail;
    }
    if (load_tokens(v, f, err) != TOK_OK)
        goto fail;

    v->eot = v->eom = v->sep = v->pad = v->nl = TOK_NULL;
    v->fim_pre = v->fim_suf = v->fim_mid = v->fim_pad = v->fim_rep = v->fim_sep = TOK_NULL;
    gguf_str pre = {NULL, 0};
    if (v->model == TOK_MODEL_SPM) {
        v->bos = 1, v->eos = 2, v->unk = 0;
        v->add_space_prefix = true;
        v->add_bos = true;
        v->clean_spaces = false;
    } else {
        v->bos = 11, v->eos = 11, v->unk = TOK_NULL;
        gguf_get_str(f, "tokenizer.ggml.pre", &pre);
        gguf_str_copy(pre, v->pre_name, sizeof v->pre_name);
        char rxerr[128] = "";
        v->pre = tok__pre_new(pre.ptr, pre.len, &v->pre_info, rxerr, sizeof rxerr);
        if (!v->pre) {
            set_err(err, TOK_ENOMEM, "pre-tokenizer: %s", rxerr);
            goto fail;
        }
        if (!pre.len)
            warn(v, "%s", "no tokenizer.ggml.pre: using the 'default' pre-tokenizer");
        else if (!v->pre_info.known)
            warn(v, "unknown pre-tokenizer '%s': using GPT-2's rules (tokens may differ from the model's)",
                 v->pre_name);
        v->ignore_merges = v->pre_info.ignore_merges;
        v->add_bos = v->pre_info.add_bos;
        v->clean_spaces = v->pre_info.clean_spaces;
        if (v->pre_info.bos_null)
            v->bos = TOK_NULL;
        tok_status st = tok__bpe_load(v, f, err);
        if (st != TOK_OK)
            goto fail;
    }
    bool b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_space_prefix", &b) == GGUF_OK)
        v->add_space_prefix = b;

    if (v->model == TOK_MODEL_SPM) {
        v->spm_split = true;
        for (uint32_t i = 0; i < v->n_vocab && v->spm_split; i++) {
            const char *t = v->strs[i].p;
            size_t tl = v->strs[i].len;
            for (size_t k = 1; k + 3 <= tl; k++)
                if (!memcmp(t + k, "\xe2\x96\x81", 3) && (k < 3 || memcmp(t + k - 3, "\xe2\x96\x81", 3))) {
                    v->spm_split = false;
                    break;
                }
        }
        for (int c = 0; c < 256; c++) {
            char hex[8], one = (char)c;
            snprintf(hex, sizeof hex, "<0x%02X>", c);
            v->byte_tok[c] = find_cstr(v, hex);
            if (v->byte_tok[c] == TOK_NULL) {
                tok_id id = tok__lookup(v, &one, 1, tok__hash(&one, 1));
                v->byte_tok[c] = id < (tok_id)v->n_vocab ? id : TOK_NULL;
            }
        }
    }

    get_id(v, f, "tokenizer.ggml.bos_token_id", &v->bos);
    get_id(v, f, "tokenizer.ggml.eos_token_id", &v->eos);
    get_id(v, f, "tokenizer.ggml.eot_token_id", &v->eot);
    get_id(v, f, "tokenizer.ggml.eom_token_id", &v->eom);
    get_id(v, f, "tokenizer.ggml.unknown_token_id", &v->unk);
    get_id(v, f, "tokenizer.ggml.seperator_token_id", &v->sep);
    get_id(v, f, "tokenizer.ggml.padding_token_id", &v->pad);
    get_id(v, f, "tokenizer.ggml.fim_pre_token_id", &v->fim_pre);
    get_id(v, f, "tokenizer.ggml.fim_suf_token_id", &v->fim_suf);
    get_id(v, f, "tokenizer.ggml.fim_mid_token_id", &v->fim_mid);
    get_id(v, f, "tokenizer.ggml.fim_pad_token_id", &v->fim_pad);
    get_id(v, f, "tokenizer.ggml.fim_rep_token_id", &v->fim_rep);
    get_id(v, f, "tokenizer.ggml.fim_sep_token_id", &v->fim_sep);
    get_id(v, f, "tokenizer.ggml.prefix_token_id", &v->fim_pre);
    get_id(v, f, "tokenizer.ggml.suffix_token_id", &v->fim_suf);
    get_id(v, f, "tokenizer.ggml.middle_token_id", &v->fim_mid);
    if (gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &b) == GGUF_OK)
        v->add_bos = b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_eos_token", &b) == GGUF_OK)
        v->add_eos = b;
    if (v->add_bos && v->bos == TOK_NULL) {
        warn(v, "%s", "add_bos_token is set but there is no BOS token: not adding one");
        v->add_bos = false;
    }
    if (v->add_eos && v->eos == TOK_NULL) {
        warn(v, "%s", "add_eos_token is set but there is no EOS token: not adding one");
        v->add_eos = false;
    }

    finish_specials(v, f);
    if (!v->special)
        goto nomem;

    if (v->model == TOK_MODEL_SPM) {
        v->nl = v->byte_tok['\n'] != TOK_NULL ? v->byte_tok['\n'] : v->pad;
    } else {
        tok_id *ids = NULL;
        size_t n = 0;
        if (tok_tokenize(v, "\n", 1, 0, &ids, &n) != TOK_OK)
            goto nomem;
        v->nl = n ? ids[0] : v->pad;
        free(ids);
    }
    return v;
nomem:
    set_err(err, TOK_ENOMEM, "out of memory%s", NULL);
fail:
    tok_close(v);
    return NULL;
}

void tok_close(tok_vocab *v)
{
    if (!v)
        return;
    free(v->strs);
    free(v->map);
    for (size_t i = 0; i < v->n_arena; i++)
        free(v->arena[i]);
    free(v->arena);
    free(v->score);
    free(v->attr);
    free(v->eog);
    free(v->mkey);
    free(v->mrank);
    free(v->mres);
    tok__pre_free(v->pre);
    free(v->special);
    free(v);
}

const char *tok_warning(const tok_vocab *v)
{
    return v && v->warning[0] ? v->warning : NULL;
}

/* ---------------- accessors ---------------- */

uint32_t tok_n_vocab(const tok_vocab *v) { return v->n_vocab; }

uint64_t tok_mem_bytes(const tok_vocab *v)
{
    if (!v)
        return 0;
    uint64_t n = v->n_vocab, b = sizeof *v;
    b += (uint64_t)v->cap_str * sizeof *v->strs + ((uint64_t)v->map_mask + 1) * sizeof *v->map;
    b += (uint64_t)v->n_arena * (ARENA_BLOCK + sizeof *v->arena);
    b += n * (sizeof *v->score + sizeof *v->attr) + (n + 7) / 8;
    if (v->mkey)
        b += (v->mmask + 1) * (sizeof *v->mkey + sizeof *v->mrank + sizeof *v->mres);
    b += (uint64_t)(v->n_special ? v->n_special : 1) * sizeof *v->special;
    return b;
}
tok_model tok_model_kind(const tok_vocab *v) { return v->model; }
tok_id tok_bos(const tok_vocab *v) { return v->bos; }
tok_id tok_eos(const tok_vocab *v) { return v->eos; }
tok_id tok_nl(const tok_vocab *v) { return v->nl; }
bool tok_add_bos(const tok_vocab *v) { return v->add_bos; }
bool tok_add_space_prefix(const tok_vocab *v) { return v->add_space_prefix; }

const char *tok_text(const tok_vocab *v, tok_id id, size_t *len)
{
    if (id < 0 || (uint32_t)id >= v->n_vocab)
        return NULL;
    if (len)
        *len = v->strs[id].len;
    return v->strs[id].p;
}

uint32_t tok_attr(const tok_vocab *v, tok_id id)
{
    return id >= 0 && (uint32_t)id < v->n_vocab ? v->attr[id] : 0;
}

bool tok_is_control(const tok_vocab *v, tok_id id)
{
    return tok_attr(v, id) & TOK_ATTR_CONTROL;
}

bool tok_is_eog(const tok_vocab *v, tok_id id)
{
    return get_eog(v, id);
}

tok_id tok_find(const tok_vocab *v, const char *text, size_t len)
{
    tok_id id = tok__lookup(v, text, len, tok__hash(text, len));
    return id < (tok_id)v->n_vocab ? id : TOK_NULL;
}
