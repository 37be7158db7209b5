/* chat: conversations to prompts through the model's Jinja template, with
 * built-in formats as the fallback (see chat.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "gguf.h"
#include "harmony.h"

struct chat_template {
    char *text;             /* NULL when the model has no template */
    char *bos, *eos;
    jinja_template *tpl;    /* NULL when missing or not parsed */
    jinja_error parse_err;  /* code != OK when the text does not parse */
    chat_format fallback;
    bool builtin_only;
    char describe[160];
};

static char *dupstr(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

const char *chat_format_name(chat_format f)
{
    switch (f) {
    case CHAT_FORMAT_TEMPLATE: return "template";
    case CHAT_FORMAT_CHATML: return "ChatML";
    case CHAT_FORMAT_LLAMA2: return "Llama 2";
    case CHAT_FORMAT_LLAMA3: return "Llama 3";
    case CHAT_FORMAT_PHI3: return "Phi-3";
    case CHAT_FORMAT_MISTRAL: return "Mistral";
    case CHAT_FORMAT_GEMMA: return "Gemma";
    case CHAT_FORMAT_ZEPHYR: return "Zephyr";
    case CHAT_FORMAT_PHI4: return "Phi-4";
    case CHAT_FORMAT_GRANITE: return "Granite";
    case CHAT_FORMAT_MISTRAL_V7: return "Mistral v7";
    case CHAT_FORMAT_MISTRAL_V7_TEKKEN: return "Mistral v7 Tekken";
    case CHAT_FORMAT_OLMO2: return "OLMo 2";
    case CHAT_FORMAT_HARMONY: return "Harmony";
    case CHAT_FORMAT_COUNT: break;
    }
    return "unknown";
}

chat_format chat_detect_format(const char *t, const char *eos)
{
    if (!t)
        return CHAT_FORMAT_CHATML;
    /* llama.cpp: gpt-oss's Harmony template */
    if (strstr(t, "<|start|>") && strstr(t, "<|channel|>"))
        return CHAT_FORMAT_HARMONY;
    if (strstr(t, "<|im_start|>"))
        return strstr(t, "<|im_sep|>") ? CHAT_FORMAT_PHI4 : CHAT_FORMAT_CHATML;
    if (strstr(t, "<|start_header_id|>"))
        return CHAT_FORMAT_LLAMA3;
    if (strstr(t, "<start_of_turn>"))
        return CHAT_FORMAT_GEMMA;
    if (strstr(t, "<|start_of_role|>"))
        return CHAT_FORMAT_GRANITE;
    /* Phi-3/4 end turns with <|end|> (some build '<|' + role + '|>' and only
     * name <|assistant|> or <|system|> literally); Zephyr with the EOS token */
    if ((strstr(t, "<|user|>") || strstr(t, "<|assistant|>") || strstr(t, "<|system|>")) && strstr(t, "<|end|>"))
        return CHAT_FORMAT_PHI3;
    /* OLMo 2 (Tülu 3) ends a user turn with a newline, Zephyr with EOS */
    if (strstr(t, "'<|user|>\n' + message['content'] + '\n'") ||
        strstr(t, "'<|user|>\\n' + message['content'] + '\\n'"))
        return CHAT_FORMAT_OLMO2;
    if (strstr(t, "<|user|>")) {
        (void)eos;
        return CHAT_FORMAT_ZEPHYR;
    }
    /* llama.cpp: [SYSTEM_PROMPT] means v7; Mistral Small 3's "v7-tekken"
     * templates write no space after [INST] (llama.cpp renders v7 for both) */
    if (strstr(t, "[INST]") && strstr(t, "[SYSTEM_PROMPT]"))
        return strstr(t, "[INST] ") ? CHAT_FORMAT_MISTRAL_V7 : CHAT_FORMAT_MISTRAL_V7_TEKKEN;
    if (strstr(t, "[INST]"))
        return strstr(t, "<<SYS>>") ? CHAT_FORMAT_LLAMA2 : CHAT_FORMAT_MISTRAL;
    return CHAT_FORMAT_CHATML;
}

/* Whether the vocabulary of g has a token with text s. */
static bool has_token(const gguf_file *g, const char *s)
{
    const gguf_value *toks;
    if (gguf_get_arr(g, "tokenizer.ggml.tokens", &toks) != GGUF_OK || toks->arr_type != GGUF_VT_STRING)
        return false;
    for (uint64_t i = 0; i < toks->arr_len; i++) {
        gguf_str t;
        if (gguf_arr_str(toks, i, &t) == GGUF_OK && gguf_str_eq(t, s))
            return true;
    }
    return false;
}

chat_format chat_default_format(const gguf_file *g)
{
    char arch[64] = "", pre[64] = "";
    if (!g || gguf_get_cstr(g, "general.architecture", arch, sizeof arch) != GGUF_OK)
        return CHAT_FORMAT_CHATML;
    if (!strncmp(arch, "gemma", 5))
        return CHAT_FORMAT_GEMMA;
    /* Phi-4 (14B) has <|im_sep|>; Phi-3/3.5 and Phi-4-mini have <|assistant|> */
    if (!strcmp(arch, "phi3"))
        return has_token(g, "<|im_sep|>") && !has_token(g, "<|assistant|>") ? CHAT_FORMAT_PHI4 : CHAT_FORMAT_PHI3;
    if (!strncmp(arch, "granite", 7))
        return CHAT_FORMAT_GRANITE;
    if (!strcmp(arch, "mistral3")) {
        gguf_get_cstr(g, "tokenizer.ggml.pre", pre, sizeof pre);
        return strcmp(pre, "tekken") ? CHAT_FORMAT_MISTRAL_V7 : CHAT_FORMAT_MISTRAL_V7_TEKKEN;
    }
    if (!strcmp(arch, "olmo2"))
        return has_token(g, "<|im_start|>") ? CHAT_FORMAT_CHATML : CHAT_FORMAT_OLMO2;
    if (!strcmp(arch, "gpt-oss"))
        return CHAT_FORMAT_HARMONY;
    return CHAT_FORMAT_CHATML;
}

static chat_template *ct_alloc(const char *bos, const char *eos)
{
    chat_template *ct = calloc(1, sizeof *ct);
    if (!ct)
        return NULL;
    ct->bos = dupstr(bos);
    ct->eos = dupstr(eos);
    if (!ct->bos || !ct->eos) {
        chat_template_free(ct);
        return NULL;
    }
    return ct;
}

chat_template *chat_template_new(const char *text, const char *bos, const char *eos)
{
    chat_template *ct = ct_alloc(bos, eos);
    if (!ct)
        return NULL;
    ct->fallback = chat_detect_format(text, eos);
    if (text && *text) {
        ct->text = dupstr(text);
        if (!ct->text) {
            chat_template_free(ct);
            return NULL;
        }
        ct->tpl = jinja_parse(text, strlen(text), &ct->parse_err);
        if (!ct->tpl && ct->parse_err.code == JINJA_ENOMEM) {
            chat_template_free(ct);
            return NULL;
        }
        if (ct->tpl)
            snprintf(ct->describe, sizeof ct->describe, "model template (Jinja, %zu bytes)", strlen(text));
        else
            snprintf(ct->describe, sizeof ct->describe, "model template (does not parse; fallback %s)",
                     chat_format_name(ct->fallback));
    } else {
        ct->parse_err.code = JINJA_OK;
        snprintf(ct->describe, sizeof ct->describe, "no template (fallback %s)", chat_format_name(ct->fallback));
    }
    return ct;
}

/* A token's text by the id stored under `key`; malloc'd, "" when absent. */
static char *gguf_token_text(const gguf_file *g, const char *key)
{
    uint64_t id;
    const gguf_value *toks;
    gguf_str s;
    if (gguf_get_u64(g, key, &id) != GGUF_OK || gguf_get_arr(g, "tokenizer.ggml.tokens", &toks) != GGUF_OK ||
        gguf_arr_str(toks, id, &s) != GGUF_OK)
        return dupstr("");
    char *d = s.len < SIZE_MAX ? malloc((size_t)s.len + 1) : NULL;
    if (d) {
        memcpy(d, s.ptr, (size_t)s.len);
        d[s.len] = 0;
    }
    return d;
}

chat_template *chat_template_from_gguf(const gguf_file *g, const char *bos, const char *eos)
{
    if (!g)
        return NULL;
    char *text = NULL, *b = NULL, *e = NULL;
    chat_template *ct = NULL;
    gguf_str s;
    if (gguf_get_str(g, "tokenizer.chat_template", &s) == GGUF_OK) {
        text = s.len < SIZE_MAX ? malloc((size_t)s.len + 1) : NULL;
        if (!text)
            goto done;
        memcpy(text, s.ptr, (size_t)s.len);
        text[s.len] = 0;
    }
    b = bos ? dupstr(bos) : gguf_token_text(g, "tokenizer.ggml.bos_token_id");
    e = eos ? dupstr(eos) : gguf_token_text(g, "tokenizer.ggml.eos_token_id");
    if (b && e)
        ct = chat_template_new(text, b, e);
    if (ct && !ct->text) {
        /* no template: the format of the model's architecture */
        ct->fallback = chat_default_format(g);
        snprintf(ct->describe, sizeof ct->describe, "no template (fallback %s)", chat_format_name(ct->fallback));
    }
done:
    free(text);
    free(b);
    free(e);
    return ct;
}

chat_template *chat_template_new_builtin(chat_format format, const char *bos, const char *eos)
{
    if (format <= CHAT_FORMAT_TEMPLATE || format >= CHAT_FORMAT_COUNT)
        return NULL;
    chat_template *ct = ct_alloc(bos, eos);
    if (!ct)
        return NULL;
    ct->fallback = format;
    ct->builtin_only = true;
    snprintf(ct->describe, sizeof ct->describe, "built-in %s", chat_format_name(format));
    return ct;
}

void chat_template_free(chat_template *ct)
{
    if (!ct)
        return;
    jinja_free(ct->tpl);
    free(ct->text);
    free(ct->bos);
    free(ct->eos);
    free(ct);
}

/* name without case, spaces, '-', '_' or '.' */
static void fmt_key(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    for (; *s && k + 1 < cap; s++)
        if (*s != ' ' && *s != '-' && *s != '_' && *s != '.')
            out[k++] = (char)((*s >= 'A' && *s <= 'Z') ? *s - 'A' + 'a' : *s);
    out[k] = 0;
}

/* the names on the command line (ggscope template --format's), by format */
static const char *const CLI_NAMES[CHAT_FORMAT_COUNT] = {
    [CHAT_FORMAT_CHATML] = "chatml",   [CHAT_FORMAT_LLAMA2] = "llama2",
    [CHAT_FORMAT_LLAMA3] = "llama3",   [CHAT_FORMAT_PHI3] = "phi3",
    [CHAT_FORMAT_MISTRAL] = "mistral", [CHAT_FORMAT_GEMMA] = "gemma",
    [CHAT_FORMAT_ZEPHYR] = "zephyr",   [CHAT_FORMAT_PHI4] = "phi4",
    [CHAT_FORMAT_GRANITE] = "granite", [CHAT_FORMAT_MISTRAL_V7] = "mistral-v7",
    [CHAT_FORMAT_MISTRAL_V7_TEKKEN] = "mistral-v7-tekken", [CHAT_FORMAT_OLMO2] = "olmo2",
    [CHAT_FORMAT_HARMONY] = "harmony",
};

bool chat_format_from_name(const char *name, chat_format *out)
{
    char want[64], have[64];
    fmt_key(name ? name : "", want, sizeof want);
    for (int f = 1; f < CHAT_FORMAT_COUNT && want[0]; f++) {
        fmt_key(CLI_NAMES[f] ? CLI_NAMES[f] : "", have, sizeof have);
        if (!strcmp(want, have)) {
            *out = (chat_format)f;
            return true;
        }
    }
    return false;
}

void chat_format_names(char *buf, size_t cap)
{
    size_t k = 0;
    if (cap)
        buf[0] = 0;
    for (int f = 1; f < CHAT_FORMAT_COUNT && k < cap; f++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s", f > 1 ? ", " : "", CLI_NAMES[f] ? CLI_NAMES[f] : "?");
}

bool chat_template_is_harmony(const chat_template *ct) { return ct && ct->fallback == CHAT_FORMAT_HARMONY; }

const char *chat_template_describe(const chat_template *ct) { return ct ? ct->describe : ""; }

const char *chat_template_bos(const chat_template *ct) { return ct ? ct->bos : ""; }

const char *chat_template_eos(const chat_template *ct) { return ct ? ct->eos : ""; }

const jinja_error *chat_template_parse_error(const chat_template *ct)
{
    return ct && ct->text && !ct->tpl ? &ct->parse_err : NULL;
}

/* ---- growing string ---- */
typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->oom || !n)
        return;
    if (b->cap - b->n < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->n < n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_adds(sbuf *b, const char *s) { sb_add(b, s ? s : "", s ? strlen(s) : 0); }

/* JavaScript-style trim of ASCII whitespace (enough for turn contents). */
static void sb_add_trimmed(sbuf *b, const char *s)
{
    if (!s)
        return;
    size_t a = 0, e = strlen(s);
    while (a < e && (s[a] == ' ' || (s[a] >= 9 && s[a] <= 13)))
        a++;
    while (e > a && (s[e - 1] == ' ' || (s[e - 1] >= 9 && s[e - 1] <= 13)))
        e--;
    sb_add(b, s + a, e - a);
}

static bool role_is(const chat_message *m, const char *r) { return m->role && !strcmp(m->role, r); }

/* Render with a built-in format. msgs includes the system prompt already. */
static char *render_builtin(const chat_template *ct, chat_format f, const chat_message *m, size_t n, bool gen,
                            size_t *len)
{
    sbuf b = {0};
    const char *bos = ct->bos, *eos = ct->eos;
    switch (f) {
    case CHAT_FORMAT_TEMPLATE:
    case CHAT_FORMAT_COUNT:
    case CHAT_FORMAT_CHATML:
        for (size_t i = 0; i < n; i++) {
            sb_adds(&b, "<|im_start|>");
            sb_adds(&b, m[i].role);
            sb_adds(&b, "\n");
            sb_adds(&b, m[i].content);
            sb_adds(&b, "<|im_end|>\n");
        }
        if (gen)
            sb_adds(&b, "<|im_start|>assistant\n");
        break;
    case CHAT_FORMAT_LLAMA3:
        sb_adds(&b, bos);
        for (size_t i = 0; i < n; i++) {
            sb_adds(&b, "<|start_header_id|>");
            sb_adds(&b, m[i].role);
            sb_adds(&b, "<|end_header_id|>\n\n");
            sb_add_trimmed(&b, m[i].content);
            sb_adds(&b, "<|eot_id|>");
        }
        if (gen)
            sb_adds(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case CHAT_FORMAT_PHI3:
        for (size_t i = 0; i < n; i++) {
            sb_adds(&b, "<|");
            sb_adds(&b, m[i].role);
            sb_adds(&b, "|>\n");
            sb_adds(&b, m[i].content);
            sb_adds(&b, "<|end|>\n");
        }
        /* as Phi-3's own template: the generation prompt, or EOS after the last turn */
        sb_adds(&b, gen ? "<|assistant|>\n" : eos);
        break;
    case CHAT_FORMAT_ZEPHYR:
        for (size_t i = 0; i < n; i++) {
            sb_adds(&b, "<|");
            sb_adds(&b, m[i].role);
            sb_adds(&b, "|>\n");
            sb_adds(&b, m[i].content);
            sb_adds(&b, *eos ? eos : "</s>");
            sb_adds(&b, "\n");
        }
        if (gen)
            sb_adds(&b, "<|assistant|>\n");
        break;
    case CHAT_FORMAT_GEMMA: {
        sb_adds(&b, bos);
        const char *sys = NULL;
        for (size_t i = 0; i < n; i++) {
            if (role_is(&m[i], "system")) {
                sys = m[i].content;
                continue;
            }
            bool model = role_is(&m[i], "assistant") || role_is(&m[i], "model");
            sb_adds(&b, model ? "<start_of_turn>model\n" : "<start_of_turn>user\n");
            if (sys && !model) {
                sb_add_trimmed(&b, sys);
                sb_adds(&b, "\n\n");
                sys = NULL;
            }
            sb_add_trimmed(&b, m[i].content);
            sb_adds(&b, "<end_of_turn>\n");
        }
        if (gen)
            sb_adds(&b, "<start_of_turn>model\n");
        break;
    }
    case CHAT_FORMAT_LLAMA2: {
        const char *sys = NULL;
        for (size_t i = 0; i < n; i++) {
            if (role_is(&m[i], "system")) {
                sys = m[i].content;
            } else if (role_is(&m[i], "assistant")) {
                sb_adds(&b, " ");
                sb_add_trimmed(&b, m[i].content);
                sb_adds(&b, " ");
                sb_adds(&b, eos);
            } else {
                sb_adds(&b, bos);
                sb_adds(&b, "[INST] ");
                if (sys) {
                    sb_adds(&b, "<<SYS>>\n");
                    sb_add_trimmed(&b, sys);
                    sb_adds(&b, "\n<</SYS>>\n\n");
                    sys = NULL;
                }
                sb_add_trimmed(&b, m[i].content);
                sb_adds(&b, " [/INST]");
            }
        }
        break;
    }
    case CHAT_FORMAT_PHI4:
        for (size_t i = 0; i < n; i++) {
            sb_adds(&b, "<|im_start|>");
            sb_adds(&b, m[i].role);
            sb_adds(&b, "<|im_sep|>");
            sb_adds(&b, m[i].content);
            sb_adds(&b, "<|im_end|>");
        }
        if (gen)
            sb_adds(&b, "<|im_start|>assistant<|im_sep|>");
        break;
    case CHAT_FORMAT_GRANITE:
        for (size_t i = 0; i < n; i++) {
            sb_adds(&b, "<|start_of_role|>");
            sb_adds(&b, m[i].role);
            sb_adds(&b, "<|end_of_role|>");
            if (role_is(&m[i], "assistant_tool_call"))
                sb_adds(&b, "<|tool_call|>");
            sb_adds(&b, m[i].content);
            sb_adds(&b, "<|end_of_text|>\n");
        }
        if (gen)
            sb_adds(&b, "<|start_of_role|>assistant<|end_of_role|>");
        break;
    case CHAT_FORMAT_MISTRAL_V7:
    case CHAT_FORMAT_MISTRAL_V7_TEKKEN: {
        /* the models' templates start with BOS and end answers with EOS */
        const char *sp = f == CHAT_FORMAT_MISTRAL_V7 ? " " : "";
        sb_adds(&b, bos);
        for (size_t i = 0; i < n; i++) {
            bool sys = role_is(&m[i], "system"), model = role_is(&m[i], "assistant");
            sb_adds(&b, sys ? "[SYSTEM_PROMPT]" : model ? "" : "[INST]");
            sb_adds(&b, sp);
            sb_adds(&b, m[i].content);
            sb_adds(&b, sys ? "[/SYSTEM_PROMPT]" : model ? (*eos ? eos : "</s>") : "[/INST]");
        }
        break;
    }
    case CHAT_FORMAT_OLMO2:
        /* OLMo 2's template (Tülu 3's with BOS in front) */
        sb_adds(&b, bos);
        for (size_t i = 0; i < n; i++) {
            if (role_is(&m[i], "assistant")) {
                sb_adds(&b, "<|assistant|>\n");
                sb_adds(&b, m[i].content);
                sb_adds(&b, eos);
                if (i + 1 < n)
                    sb_adds(&b, "\n");
            } else {
                sb_adds(&b, role_is(&m[i], "system") ? "<|system|>\n" : "<|user|>\n");
                sb_adds(&b, m[i].content);
                sb_adds(&b, "\n");
            }
        }
        if (gen && n)
            sb_adds(&b, "<|assistant|>\n");
        break;
    case CHAT_FORMAT_HARMONY:
        /* llama.cpp's built-in gpt-oss format (no channels, no system preamble) */
        for (size_t i = 0; i < n; i++) {
            sb_adds(&b, "<|start|>");
            sb_adds(&b, m[i].role);
            sb_adds(&b, "<|message|>");
            sb_adds(&b, m[i].content);
            sb_adds(&b, role_is(&m[i], "assistant") ? "<|return|>" : "<|end|>");
        }
        if (gen)
            sb_adds(&b, "<|start|>assistant");
        break;
    case CHAT_FORMAT_MISTRAL: {
        sb_adds(&b, bos);
        const char *sys = NULL;
        for (size_t i = 0; i < n; i++) {
            if (role_is(&m[i], "system")) {
                sys = m[i].content;
            } else if (role_is(&m[i], "assistant")) {
                sb_adds(&b, m[i].content);
                sb_adds(&b, eos);
            } else {
                sb_adds(&b, "[INST]");
                if (sys) {
                    sb_adds(&b, sys);
                    sb_adds(&b, "\n\n");
                    sys = NULL;
                }
                sb_adds(&b, m[i].content);
                sb_adds(&b, "[/INST]");
            }
        }
        break;
    }
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (!b.p) {
        b.p = malloc(1);
        if (!b.p)
            return NULL;
        b.p[0] = 0;
    }
    if (len)
        *len = b.n;
    return b.p;
}

/* The variables of a render: messages (a copy of `msgs`), the flags and tokens. */
static cJSON *make_vars(const chat_template *ct, const cJSON *msgs, bool gen)
{
    cJSON *vars = cJSON_CreateObject();
    cJSON *arr = cJSON_Duplicate(msgs, true);
    if (!vars || !arr) {
        cJSON_Delete(vars);
        cJSON_Delete(arr);
        return NULL;
    }
    cJSON_AddItemToObject(vars, "messages", arr);
    if (!cJSON_AddBoolToObject(vars, "add_generation_prompt", gen) ||
        !cJSON_AddStringToObject(vars, "bos_token", ct->bos) || !cJSON_AddStringToObject(vars, "eos_token", ct->eos)) {
        cJSON_Delete(vars);
        return NULL;
    }
    return vars;
}

static void set_error(chat_result *res, jinja_status code, const char *msg)
{
    memset(&res->error, 0, sizeof res->error);
    res->error.code = code;
    snprintf(res->error.msg, sizeof res->error.msg, "%s", msg);
    snprintf(res->status, sizeof res->status, "chat: %s", msg);
}

/* Render a messages array (system prompt already in it). */
static char *render_core(const chat_template *ct, const cJSON *msgs, const chat_opts *o, size_t *len,
                         chat_result *res)
{
    if (!ct->builtin_only) {
        if (ct->tpl) {
            cJSON *vars = make_vars(ct, msgs, o->add_generation_prompt);
            if (!vars) {
                set_error(res, JINJA_ENOMEM, "out of memory");
                return NULL;
            }
            jinja_limits lim = {0};
            lim.now = o->now;
            char *out = jinja_render(ct->tpl, vars, &lim, len, &res->error);
            cJSON_Delete(vars);
            if (out) {
                res->format = CHAT_FORMAT_TEMPLATE;
                snprintf(res->status, sizeof res->status, "chat format: the model's template");
                return out;
            }
            if (res->error.code == JINJA_ENOMEM)
                return NULL;
        } else if (ct->text) {
            res->error = ct->parse_err;
        }
        if (o->no_fallback) {
            if (!ct->text) {
                set_error(res, JINJA_EARG, "the model has no chat template");
                return NULL;
            }
            char eb[600];
            snprintf(res->status, sizeof res->status, "chat template failed: %s",
                     jinja_error_format(&res->error, eb, sizeof eb));
            return NULL;
        }
    }
    /* built-in: role and content strings (other contents as JSON text) */
    size_t n = (size_t)cJSON_GetArraySize(msgs);
    chat_message *m = calloc(n + 1, sizeof *m);
    char **owned = calloc(n + 1, sizeof *owned);
    if (!m || !owned) {
        free(m);
        free(owned);
        set_error(res, JINJA_ENOMEM, "out of memory");
        return NULL;
    }
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, msgs) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(it, "role");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        m[i].role = cJSON_IsString(r) ? r->valuestring : "user";
        if (cJSON_IsString(c)) {
            m[i].content = c->valuestring;
        } else if (c && !cJSON_IsNull(c)) {
            owned[i] = cJSON_PrintUnformatted(c);
            m[i].content = owned[i] ? owned[i] : "";
        } else {
            m[i].content = "";
        }
        i++;
    }
    res->format = ct->fallback;
    res->fallback = !ct->builtin_only;
    char *out = render_builtin(ct, ct->fallback, m, n, o->add_generation_prompt, len);
    for (size_t k = 0; k < n; k++)
        free(owned[k]);
    free(owned);
    free(m);
    if (!out) {
        set_error(res, JINJA_ENOMEM, "out of memory");
        return NULL;
    }
    if (ct->builtin_only) {
        snprintf(res->status, sizeof res->status, "chat format: %s (built-in)", chat_format_name(ct->fallback));
    } else if (!ct->text) {
        snprintf(res->status, sizeof res->status, "chat format: %s (built-in; the model has no chat template)",
                 chat_format_name(ct->fallback));
    } else {
        char eb[600];
        snprintf(res->status, sizeof res->status, "chat format: %s (built-in fallback; the template %s: %s)",
                 chat_format_name(ct->fallback), ct->tpl ? "failed" : "does not parse",
                 jinja_error_format(&res->error, eb, sizeof eb));
    }
    return out;
}

static bool json_role_is(const cJSON *m, const char *role)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
    return cJSON_IsString(r) && !strcmp(r->valuestring, role);
}

static cJSON *message_json(const char *role, const char *content, const char *thinking, const char *tkey)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "role", role ? role : "") ||
        !cJSON_AddStringToObject(o, "content", content ? content : "") ||
        (thinking && !cJSON_AddStringToObject(o, tkey, thinking))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

bool chat_think_split(const char *text, size_t len, size_t *t_off, size_t *t_len, size_t *a_off)
{
    const char *end = text ? memmem(text, len, "</think>", 8) : NULL;
    if (!end)
        return false;
    size_t e = (size_t)(end - text), s = 0;
    const char *open = memmem(text, e, "<think>", 7);
    if (open)
        s = (size_t)(open - text) + 7;
    size_t te = e;
    while (s < te && (text[s] == '\n' || text[s] == '\r'))
        s++;
    while (te > s && (text[te - 1] == '\n' || text[te - 1] == '\r'))
        te--;
    size_t a = e + 8;
    while (a < len && (text[a] == '\n' || text[a] == '\r'))
        a++;
    *t_off = s;
    *t_len = te - s;
    *a_off = a;
    return true;
}

/* The JSON of one turn of chat_render: a Harmony assistant reply with
 * channel markup becomes its final channel and (when not empty) its
 * analysis as thinking; another assistant reply with a `<think>` block its
 * answer as the content and the block as reasoning_content (llama.cpp's
 * field: Qwen3's template writes it back only for turns after the last
 * user message, DeepSeek-R1's drops it). */
static cJSON *turn_json(const chat_template *ct, const chat_message *m)
{
    if (!m->content || !m->role || strcmp(m->role, "assistant"))
        return message_json(m->role, m->content, NULL, NULL);
    size_t len = strlen(m->content);
    if (!chat_template_is_harmony(ct)) {
        size_t to, tl, ao;
        if (!chat_think_split(m->content, len, &to, &tl, &ao))
            return message_json(m->role, m->content, NULL, NULL);
        char *think = malloc(tl + 1);
        if (!think)
            return NULL;
        memcpy(think, m->content + to, tl);
        think[tl] = 0;
        cJSON *o = message_json(m->role, m->content + ao, think, "reasoning_content");
        free(think);
        return o;
    }
    harmony_reply h;
    if (harmony_parse(m->content, len, &h))
        return NULL;
    cJSON *o = h.channels ? message_json(m->role, h.final, h.analysis_len ? h.analysis : NULL, "thinking")
                          : message_json(m->role, m->content, NULL, NULL);
    harmony_reply_free(&h);
    return o;
}

char *chat_render_json(const chat_template *ct, const cJSON *messages, const chat_opts *opts, size_t *len,
                       chat_result *res)
{
    chat_result dummy;
    chat_opts o = {0};
    if (opts)
        o = *opts;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    if (!ct || !cJSON_IsArray(messages)) {
        set_error(res, JINJA_EARG, "no template, or the messages are not a JSON array");
        return NULL;
    }
    const cJSON *first = messages->child;
    if (o.system_prompt && !(first && json_role_is(first, "system"))) {
        cJSON *arr = cJSON_Duplicate(messages, true);
        cJSON *sys = message_json("system", o.system_prompt, NULL, NULL);
        if (!arr || !sys || !cJSON_InsertItemInArray(arr, 0, sys)) {
            cJSON_Delete(arr);
            cJSON_Delete(sys);
            set_error(res, JINJA_ENOMEM, "out of memory");
            return NULL;
        }
        char *out = render_core(ct, arr, &o, len, res);
        cJSON_Delete(arr);
        return out;
    }
    return render_core(ct, messages, &o, len, res);
}

char *chat_render(const chat_template *ct, const chat_message *msgs, size_t n, const chat_opts *opts, size_t *len,
                  chat_result *res)
{
    chat_result dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    if (!ct || (n && !msgs)) {
        set_error(res, JINJA_EARG, "no template or no messages");
        return NULL;
    }
    cJSON *arr = cJSON_CreateArray();
    if (!arr) {
        set_error(res, JINJA_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *m = turn_json(ct, &msgs[i]);
        if (!m || !cJSON_AddItemToArray(arr, m)) {
            cJSON_Delete(m);
            cJSON_Delete(arr);
            set_error(res, JINJA_ENOMEM, "out of memory");
            return NULL;
        }
    }
    char *out = chat_render_json(ct, arr, opts, len, res);
    cJSON_Delete(arr);
    return out;
}

char *chat_render_delta(const chat_template *ct, const chat_message *msgs, size_t n_prev, size_t n,
                        const chat_opts *opts, size_t *len, bool *reset, chat_result *res)
{
    if (reset)
        *reset = false;
    if (n_prev > n)
        n_prev = n;
    chat_result fres;
    if (!res)
        res = &fres;
    size_t full_len = 0;
    char *full = chat_render(ct, msgs, n, opts, &full_len, res);
    if (!full || n_prev == 0) {
        /* nothing before: with no previous turns the whole text is new */
        if (full && len)
            *len = full_len;
        return full;
    }
    chat_opts po = {0};
    if (opts)
        po = *opts;
    po.add_generation_prompt = false;
    chat_result pres;
    size_t prev_len = 0;
    char *prev = chat_render(ct, msgs, n_prev, &po, &prev_len, &pres);
    bool same_path = prev && pres.format == res->format;
    if (same_path && prev_len <= full_len && !memcmp(prev, full, prev_len)) {
        memmove(full, full + prev_len, full_len - prev_len + 1);
        full_len -= prev_len;
    } else if (reset) {
        *reset = true;
    }
    free(prev);
    if (len)
        *len = full_len;
    return full;
}

size_t chat_common_prefix(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    /* a continuation byte at i means the character starting before i differs */
    if (i < an || i < bn) {
        while (i > 0) {
            unsigned char na = i < an ? (unsigned char)a[i] : 0, nb = i < bn ? (unsigned char)b[i] : 0;
            if ((na & 0xC0) != 0x80 && (nb & 0xC0) != 0x80)
                break;
            i--;
        }
    }
    return i;
}
