/* chatsession: see chatsession.h. */
#include "chatsession.h"
#include "chatsession_internal.h"
#include "afile.h"
#include "clock.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROMPT_CHUNK 32   /* prompt tokens per eval between cancel checks */

struct chs {
    const gguf_file *f;
    runner *r;
    tok_vocab *v;
    chat_template *ct;
    char *system;
    chs_msg *m;
    size_t n, cap;
    chs_settings st;
    uint64_t version;
    uint64_t next_id;     /* of chs_msg.id */
    char status[640];
    bool raw;             /* raw mode: no template (chs_set_raw) */
    bool strict;          /* the template may not fall back (a file the user gave) */
    char *source;         /* chs_set_template's source; NULL: the model's own */
};

const char *const chs_setting_names[] = {"temp",    "top_k",         "top_p",     "min_p", "repeat_penalty",
                                         "repeat_last_n", "seed", "n_predict", NULL};

char *chs__dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

chs_settings chs_default_settings(void)
{
    chs_settings st = {.sp = sampler_default_params(), .n_predict = 512};
    return st;
}

chs *chs_new(const gguf_file *f, runner *r, char *msg, size_t cap)
{
    if (!f || !r) {
        emsg_set(msg, cap, "no model");
        return NULL;
    }
    chs *c = calloc(1, sizeof *c);
    if (!c) {
        emsg_set(msg, cap, "out of memory");
        return NULL;
    }
    c->f = f;
    c->r = r;
    c->st = chs_default_settings();
    tok_error te;
    c->v = tok_open(f, &te);
    if (!c->v) {
        emsg_set(msg, cap, "tokenizer: %s", te.msg[0] ? te.msg : tok_strerror(te.code));
        chs_free(c);
        return NULL;
    }
    c->ct = chat_template_from_gguf(f, NULL, NULL);
    c->system = chs__dupn("", 0);
    if (!c->ct || !c->system) {
        emsg_set(msg, cap, "out of memory");
        chs_free(c);
        return NULL;
    }
    snprintf(c->status, sizeof c->status, "%s", chat_template_describe(c->ct));
    return c;
}

chs *chs_new_detached(const char *status, char *msg, size_t cap)
{
    chs *c = calloc(1, sizeof *c);
    if (c)
        c->system = chs__dupn("", 0);
    if (!c || !c->system) {
        free(c);
        emsg_set(msg, cap, "out of memory");
        return NULL;
    }
    c->st = chs_default_settings();
    snprintf(c->status, sizeof c->status, "%s", status ? status : "");
    return c;
}

void chs__msg_free(chs_msg *m)
{
    free(m->role);
    free(m->content);
    free(m->toks);
    memset(m, 0, sizeof *m);
}

void chs_free(chs *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        chs__msg_free(&c->m[i]);
    free(c->m);
    free(c->system);
    free(c->source);
    chat_template_free(c->ct);
    tok_close(c->v);
    free(c);
}

const tok_vocab *chs_vocab(const chs *c) { return c->v; }
const chat_template *chs_template(const chs *c) { return c->ct; }
const char *chs_format_status(const chs *c) { return c->status; }

void chs_set_detached_status(chs *c, const char *status)
{
    if (c && !c->v)   /* detached: no vocabulary */
        snprintf(c->status, sizeof c->status, "%s", status ? status : "");
}
bool chs_raw(const chs *c) { return c->raw; }

#define RAW_STATUS "raw: no template, the model continues the text"

void chs_set_raw(chs *c, bool raw)
{
    c->raw = raw;
    snprintf(c->status, sizeof c->status, "%s", raw ? RAW_STATUS : chs_template_source(c));
}

int chs_set_template(chs *c, chat_template *ct, bool strict, const char *source)
{
    char *src = source ? strdup(source) : NULL;
    if (!ct || (source && !src)) {
        chat_template_free(ct);
        free(src);
        return -1;
    }
    chat_template_free(c->ct);
    free(c->source);
    c->ct = ct;
    c->source = src;
    c->strict = strict;
    snprintf(c->status, sizeof c->status, "%s", c->raw ? RAW_STATUS : chs_template_source(c));
    return 0;
}

const char *chs_template_source(const chs *c)
{
    return c->source ? c->source : chat_template_describe(c->ct);
}
chs_settings chs_get_settings(const chs *c) { return c->st; }
void chs_set_settings(chs *c, const chs_settings *st) { c->st = *st; }
const char *chs_system(const chs *c) { return c->system; }
size_t chs_count(const chs *c) { return c->n; }
const chs_msg *chs_at(const chs *c, size_t i) { return i < c->n ? &c->m[i] : NULL; }

static bool parse_f(const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v))
        return false;
    *out = (float)v;
    return true;
}

static bool parse_l(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int chs_set(chs *c, const char *name, const char *value, char *msg, size_t cap)
{
    chs_settings st = c->st;
    float f;
    long long l;
    if (!name || !value || !*value) {
        emsg_set(msg, cap, "usage: /set NAME VALUE");
        return -1;
    }
    if (!strcmp(name, "temp") || !strcmp(name, "top_p") || !strcmp(name, "min_p") ||
        !strcmp(name, "repeat_penalty")) {
        if (!parse_f(value, &f)) {
            emsg_set(msg, cap, "%s: expected a number, got '%s'", name, value);
            return -1;
        }
        if (!strcmp(name, "temp"))
            st.sp.temp = f;
        else if (!strcmp(name, "top_p"))
            st.sp.top_p = f;
        else if (!strcmp(name, "min_p"))
            st.sp.min_p = f;
        else {
            if (!(f > 0)) {
                emsg_set(msg, cap, "repeat_penalty must be > 0");
                return -1;
            }
            st.sp.repeat_penalty = f;
        }
    } else if (!strcmp(name, "top_k") || !strcmp(name, "repeat_last_n") || !strcmp(name, "n_predict")) {
        if (!parse_l(value, -1, 1 << 24, &l)) {
            emsg_set(msg, cap, "%s: expected a whole number, got '%s'", name, value);
            return -1;
        }
        if (!strcmp(name, "top_k"))
            st.sp.top_k = (int32_t)l;
        else if (!strcmp(name, "repeat_last_n"))
            st.sp.repeat_last_n = (int32_t)(l < 0 ? 0 : l);
        else
            st.n_predict = (int32_t)l;
    } else if (!strcmp(name, "seed")) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (*end || errno || value[0] == '-') {
            emsg_set(msg, cap, "seed: expected a whole number, got '%s'", value);
            return -1;
        }
        st.sp.seed = v;
    } else {
        emsg_set(msg, cap, "unknown setting '%s' (temp, top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed, n_predict)",
               name);
        return -1;
    }
    c->st = st;
    return 0;
}

/* ---- the conversation ---- */

int chs_set_system(chs *c, const char *text)
{
    char *d = chs__dupn(text ? text : "", text ? strlen(text) : 0);
    if (!d)
        return -1;
    free(c->system);
    c->system = d;
    c->version++;
    return 0;
}

static chs_msg *push(chs *c)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        chs_msg *m = realloc(c->m, nc * sizeof *m);
        if (!m)
            return NULL;
        c->m = m;
        c->cap = nc;
    }
    chs_msg *m = &c->m[c->n];
    memset(m, 0, sizeof *m);
    m->id = ++c->next_id;
    return m;
}

int chs_add(chs *c, const char *role, const char *text, size_t len)
{
    chs_msg *m = push(c);
    if (!m)
        return -1;
    m->role = chs__dupn(role, strlen(role));
    m->content = chs__dupn(text, len);
    m->len = len;
    if (!m->role || !m->content) {
        chs__msg_free(m);
        return -1;
    }
    c->n++;
    c->version++;
    return 0;
}

int chs_add_reply(chs *c, const char *text, size_t len, const chs_tokinfo *toks, size_t n_toks,
                  const chs_reply_stats *st)
{
    if (chs_add(c, "assistant", text, len))
        return -1;
    chs_msg *m = &c->m[c->n - 1];
    if (toks && n_toks) {
        m->toks = malloc(n_toks * sizeof *toks);
        if (!m->toks) {
            chs__msg_free(m);
            c->n--;
            return -1;
        }
        memcpy(m->toks, toks, n_toks * sizeof *toks);
        m->n_toks = n_toks;
    }
    if (st) {
        m->has_stats = true;
        m->st = *st;
    }
    return 0;
}

void chs_clear(chs *c)
{
    for (size_t i = 0; i < c->n; i++)
        chs__msg_free(&c->m[i]);
    c->n = 0;
    c->version++;
}

bool chs_pop_reply(chs *c)
{
    if (c->n && !strcmp(c->m[c->n - 1].role, "assistant")) {
        chs__msg_free(&c->m[--c->n]);
        c->version++;
    }
    return c->n && !strcmp(c->m[c->n - 1].role, "user");
}

char *chs_pop_user(chs *c)
{
    size_t i = c->n;
    while (i > 0 && strcmp(c->m[i - 1].role, "user"))
        i--;
    if (!i)
        return NULL;
    char *t = c->m[i - 1].content;
    c->m[i - 1].content = NULL;
    while (c->n >= i)
        chs__msg_free(&c->m[--c->n]);
    c->version++;
    return t;
}

/* Raw mode: the messages' contents one after the other, as they are. */
static char *render_raw(const chat_message *mm, size_t n, size_t *len, chat_result *res)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += strlen(mm[i].content);
    char *out = malloc(total + 1), *w = out;
    memset(res, 0, sizeof *res);
    snprintf(res->status, sizeof res->status, "%s", RAW_STATUS);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(mm[i].content);
        memcpy(w, mm[i].content, l);
        w += l;
    }
    *w = 0;
    if (len)
        *len = total;
    return out;
}

char *chs_render(chs *c, bool gen, size_t *len, chat_result *res)
{
    if (!c->ct)
        return NULL;   /* detached: no template */
    chat_message *mm = malloc((c->n + 1) * sizeof *mm);
    if (!mm)
        return NULL;
    size_t k = 0;
    if (c->system[0])
        mm[k++] = (chat_message){"system", c->system};
    for (size_t i = 0; i < c->n; i++)
        if (!c->m[i].dropped)
            mm[k++] = (chat_message){c->m[i].role, c->m[i].content};
    chat_opts o = {.add_generation_prompt = gen, .no_fallback = c->strict};
    chat_result r;
    char *out = c->raw ? render_raw(mm, k, len, &r) : chat_render(c->ct, mm, k, &o, len, &r);
    free(mm);
    snprintf(c->status, sizeof c->status, "%s", r.status);
    if (res)
        *res = r;
    return out;
}

/* chs_tokenize on a vocabulary (the plan has no chs); raw: as `ggscope
 * run -p` tokenizes (BOS and EOS as the metadata says, no special tokens
 * parsed). */
static int tok_prompt(const tok_vocab *v, const char *text, size_t len, bool raw, int32_t **ids, size_t *n)
{
    tok_id *t = NULL;
    size_t nt = 0;
    *ids = NULL;
    *n = 0;
    if (tok_tokenize(v, text, len, raw ? TOK_ADD_SPECIAL : TOK_PARSE_SPECIAL, &t, &nt) != TOK_OK)
        return -1;
    if (raw) {
        *ids = t ? t : malloc(sizeof *t);
        *n = nt;
        return *ids ? 0 : -1;
    }
    tok_id bos = tok_bos(v);
    if (tok_add_bos(v) && bos != TOK_NULL && (nt == 0 || t[0] != bos)) {
        tok_id *t2 = malloc((nt + 1) * sizeof *t2);
        if (!t2) {
            free(t);
            return -1;
        }
        t2[0] = bos;
        if (nt)
            memcpy(t2 + 1, t, nt * sizeof *t);
        free(t);
        t = t2;
        nt++;
    }
    if (!t) {
        t = malloc(sizeof *t);
        if (!t)
            return -1;
    }
    *ids = t;
    *n = nt;
    return 0;
}

int chs_tokenize(const chs *c, const char *text, size_t len, int32_t **ids, size_t *n)
{
    if (!c->v)
        return -1;   /* detached: no tokenizer */
    return tok_prompt(c->v, text, len, c->raw, ids, n);
}

int chs_tokenize_vocab(const tok_vocab *v, const char *text, size_t len, int32_t **ids, size_t *n)
{
    return tok_prompt(v, text, len, false, ids, n);
}

/* ---- building a prompt (any thread) ---- */

struct chs_plan {
    const chat_template *ct;
    const tok_vocab *v;
    bool fit;
    bool raw, strict;     /* the chs's modes when the plan was made */
    uint32_t n_ctx, reserve;
    uint64_t version;
    chat_message *mm;     /* mm[0]: a slot for the system prompt; mm[1..live]: the live messages */
    size_t live;
    const char *system;   /* NULL: none */
    size_t *index;        /* live message j is message index[j] of the chs */
    char *store;          /* the copied strings */
    size_t *starts;       /* cut candidates: live positions a kept suffix may start at */
    size_t n_starts;
    /* results */
    size_t cut;           /* live messages left out */
    char *text;
    size_t len;
    int32_t *ids;
    size_t n_ids;
    unsigned renders;
    char status[640];
    char err[512];
};

void chs_plan_free(chs_plan *p)
{
    if (!p)
        return;
    free(p->mm);
    free(p->index);
    free(p->store);
    free(p->starts);
    free(p->text);
    free(p->ids);
    free(p);
}

chs_plan *chs_plan_new(const chs *c, bool fit, char *msg, size_t cap)
{
    size_t live = 0, bytes = strlen(c->system) + 1;
    for (size_t i = 0; i < c->n; i++)
        if (!c->m[i].dropped) {
            live++;
            bytes += strlen(c->m[i].role) + 1 + c->m[i].len + 1;
        }
    if (fit && !live) {
        emsg_set(msg, cap, "no message to answer");
        return NULL;
    }
    if (!c->r) {
        emsg_set(msg, cap, "no model here: %s", c->status);
        return NULL;
    }
    chs_plan *p = calloc(1, sizeof *p);
    if (!p)
        goto oom;
    p->ct = c->ct;
    p->v = c->v;
    p->fit = fit;
    p->raw = c->raw;
    p->strict = c->strict;
    p->version = c->version;
    p->n_ctx = runner_n_ctx(c->r);
    p->reserve = p->n_ctx / 4;
    if (c->st.n_predict > 0 && (uint32_t)c->st.n_predict < p->reserve)
        p->reserve = (uint32_t)c->st.n_predict;
    if (p->reserve < 1)
        p->reserve = 1;
    p->mm = malloc((live + 1) * sizeof *p->mm);
    p->index = malloc((live + 1) * sizeof *p->index);
    p->starts = malloc((live + 1) * sizeof *p->starts);
    p->store = malloc(bytes);
    if (!p->mm || !p->index || !p->starts || !p->store)
        goto oom;
    char *w = p->store;
    if (c->system[0]) {
        size_t l = strlen(c->system) + 1;
        memcpy(w, c->system, l);
        p->system = w;
        w += l;
    }
    for (size_t i = 0; i < c->n; i++) {
        const chs_msg *m = &c->m[i];
        if (m->dropped)
            continue;
        size_t rl = strlen(m->role) + 1;
        memcpy(w, m->role, rl);
        const char *role = w;
        w += rl;
        memcpy(w, m->content, m->len);
        w[m->len] = 0;
        p->index[p->live] = i;
        p->mm[1 + p->live++] = (chat_message){role, w};
        w += m->len + 1;
    }
    /* a kept suffix starts at the first live message, at a user message,
     * or at the last message (always kept) */
    for (size_t k = 0; k < live; k++)
        if (k == 0 || k + 1 == live || !strcmp(p->mm[1 + k].role, "user"))
            p->starts[p->n_starts++] = k;
    return p;
oom:
    chs_plan_free(p);
    emsg_set(msg, cap, "out of memory");
    return NULL;
}

/* Render and tokenize the live messages from `first` on (the system prompt
 * in front): 0 with *text and *ids malloc'd, or -1 with p->err set. */
static int plan_try(chs_plan *p, size_t first, char **text, size_t *len, int32_t **ids, size_t *n)
{
    /* mm[first] is the slot before live message `first`: the system
     * prompt goes there for this render, then it is put back */
    chat_message saved = p->mm[first];
    const chat_message *from = p->mm + first + 1;
    size_t count = p->live - first;
    if (p->system) {
        p->mm[first] = (chat_message){"system", p->system};
        from--;
        count++;
    }
    chat_opts o = {.add_generation_prompt = true, .no_fallback = p->strict};
    chat_result r;
    p->renders++;
    char *t = p->raw ? render_raw(from, count, len, &r) : chat_render(p->ct, from, count, &o, len, &r);
    p->mm[first] = saved;
    snprintf(p->status, sizeof p->status, "%s", r.status);
    if (!t) {
        emsg_set(p->err, sizeof p->err, "%s%s", strncmp(r.status, "chat template failed", 20) ? "the chat template failed: " : "",
                 r.status);
        return -1;
    }
    if (tok_prompt(p->v, t, *len, p->raw, ids, n)) {
        free(t);
        emsg_set(p->err, sizeof p->err, "out of memory");
        return -1;
    }
    *text = t;
    return 0;
}

/* Keep the result of a render (the plan's previous one is freed). */
static void plan_keep(chs_plan *p, size_t cut, char *text, size_t len, int32_t *ids, size_t n)
{
    free(p->text);
    free(p->ids);
    p->cut = cut;
    p->text = text;
    p->len = len;
    p->ids = ids;
    p->n_ids = n;
}

static bool plan_cancelled(const atomic_bool *cancel)
{
    return cancel && atomic_load(cancel);
}

int chs_plan_build(chs_plan *p, const atomic_bool *cancel)
{
    char *text;
    size_t len, n;
    int32_t *ids;
    if (plan_cancelled(cancel))
        return 1;
    if (plan_try(p, 0, &text, &len, &ids, &n))
        return -1;
    bool fits = n + p->reserve <= p->n_ctx;
    plan_keep(p, 0, text, len, ids, n);
    if (!p->fit || fits)
        return 0;
    if (p->n_starts < 2) {
        emsg_set(p->err, sizeof p->err,
               "the message (%zu tokens with the template) does not fit the context (%u, %u kept for the reply)", n,
               p->n_ctx, p->reserve);
        return -1;
    }
    /* the smallest candidate k in [1, n_starts) whose suffix fits: the
     * prompt only gets shorter as turns are dropped */
    size_t lo = 1, hi = p->n_starts - 1;
    bool found = false;
    size_t last_n = n;
    while (lo <= hi) {
        if (plan_cancelled(cancel))
            return 1;
        size_t mid = lo + (hi - lo) / 2;
        if (plan_try(p, p->starts[mid], &text, &len, &ids, &n))
            return -1;
        if (n + p->reserve <= p->n_ctx) {
            plan_keep(p, p->starts[mid], text, len, ids, n);
            found = true;
            hi = mid - 1;
        } else {
            free(text);
            free(ids);
            if (mid == p->n_starts - 1)
                last_n = n;
            lo = mid + 1;
        }
    }
    if (!found) {
        emsg_set(p->err, sizeof p->err,
               "the message (%zu tokens with the template) does not fit the context (%u, %u kept for the reply)",
               last_n, p->n_ctx, p->reserve);
        return -1;
    }
    return 0;
}

const char *chs_plan_error(const chs_plan *p) { return p->err; }
unsigned chs_plan_renders(const chs_plan *p) { return p->renders; }

const char *chs_plan_text(const chs_plan *p, size_t *len)
{
    if (len)
        *len = p->len;
    return p->text;
}

const int32_t *chs_plan_ids(const chs_plan *p, size_t *n)
{
    *n = p->n_ids;
    return p->ids;
}

int32_t *chs_plan_take_ids(chs_plan *p, size_t *n)
{
    int32_t *ids = p->ids;
    *n = p->n_ids;
    p->ids = NULL;
    p->n_ids = 0;
    return ids;
}

int chs_plan_apply(chs *c, const chs_plan *p, unsigned *n_dropped)
{
    if (n_dropped)
        *n_dropped = 0;
    if (c->version != p->version)
        return -1;
    for (size_t j = 0; j < p->cut; j++)
        c->m[p->index[j]].dropped = true;
    if (p->cut)
        c->version++;
    if (n_dropped)
        *n_dropped = (unsigned)p->cut;
    snprintf(c->status, sizeof c->status, "%s", p->status);
    return 0;
}

int chs_prompt(chs *c, int32_t **ids, size_t *n, unsigned *n_dropped, char *msg, size_t cap)
{
    *ids = NULL;
    *n = 0;
    if (n_dropped)
        *n_dropped = 0;
    chs_plan *p = chs_plan_new(c, true, msg, cap);
    if (!p)
        return -1;
    if (chs_plan_build(p, NULL)) {
        snprintf(c->status, sizeof c->status, "%s", p->status);
        emsg_set(msg, cap, "%s", p->err);
        chs_plan_free(p);
        return -1;
    }
    chs_plan_apply(c, p, n_dropped);
    *ids = chs_plan_take_ids(p, n);
    chs_plan_free(p);
    return 0;
}

/* ---- the engine side ---- */

void chs_reset_cache(chs *c)
{
    if (c->r)
        runner_truncate(c->r, 0);
}

size_t chs_held(const chs *c)
{
    uint32_t n = 0;
    if (c->r)
        runner_cached(c->r, &n);
    return n;
}

typedef struct {
    chs *c;
    tok_stream *ts;
    const chs_sink *sink;
    size_t total;   /* bytes of text so far */
    double t0;      /* the start of the reply */
} gen_state;

/* runner_gen.on_prompt */
static void on_prompt(void *ctx, uint32_t done, uint32_t total)
{
    gen_state *gs = ctx;
    gs->sink->on_prompt(gs->sink->ctx, done, total);
}

/* runner_gen.on_token: the token's text and sampling information to the sink */
static int on_token(void *ctx, int32_t tok, const sampler_result *sr)
{
    gen_state *gs = ctx;
    chs_tokinfo ti = {.id = tok, .prob = sr->prob, .entropy = sr->entropy, .n_alt = sr->n_alt,
                      .t_s = (float)(clock_now_s() - gs->t0)};
    for (int i = 0; i < sr->n_alt && i < SAMPLER_N_ALT; i++) {
        ti.alt_id[i] = sr->alt_id[i];
        ti.alt_prob[i] = sr->alt_prob[i];
    }
    size_t len = 0;
    const char *text = "";
    if (!tok_is_eog(gs->c->v, tok)) {
        text = tok_stream_push(gs->ts, tok, &len);
        if (!text)
            return -1;
    }
    ti.off = (uint32_t)gs->total;
    ti.len = (uint32_t)len;
    gs->total += len;
    if (gs->sink && gs->sink->on_token)
        gs->sink->on_token(gs->sink->ctx, text, len, &ti);
    return 0;
}

int chs_generate(chs *c, const int32_t *ids, size_t n, const chs_settings *st, const chs_sink *sink,
                 chs_reply_stats *out, char *msg, size_t cap)
{
    chs_reply_stats rs = {.n_prompt = (uint32_t)n, .stop = CHS_STOP_ERROR};
    if (!c->r) {
        emsg_set(msg, cap, "no model here: %s", c->status);
        if (out)
            *out = rs;
        return -1;
    }
    gen_state gs = {.c = c, .sink = sink, .ts = tok_stream_new(c->v, 0), .t0 = clock_now_s()};
    int ret = -1;
    if (!gs.ts) {
        emsg_set(msg, cap, "out of memory");
        goto done;
    }
    if (n >= UINT32_MAX) {
        emsg_set(msg, cap, "the prompt (%zu tokens) does not fit the context (%u)", n, runner_n_ctx(c->r));
        goto done;
    }
    runner_gen g = {
        .sp = st->sp,
        .n_predict = st->n_predict > 0 ? st->n_predict : -1,
        .ctx_reserve = 1,
        .prompt_chunk = PROMPT_CHUNK,
        .eog = c->v,
        .want_info = true,
        .on_token = on_token,
        .ctx = &gs,
        .cancel = sink ? sink->cancel : NULL,
        .delay_ms = sink ? sink->delay_ms : 0,
        .on_prompt = sink && sink->on_prompt ? on_prompt : NULL,
    };
    runner_stats rst;
    int rc = runner_generate(c->r, ids, (uint32_t)n, &g, &rst, msg, cap);
    rs = (chs_reply_stats){rst.n_prompt, rst.n_reused, rst.n_eval, rst.n_gen, rst.t_prompt_s, rst.t_first_s,
                           rst.t_gen_s, (chs_stop)rst.stop};
    if (rc == RUNNER_ECALLBACK)
        emsg_set(msg, cap, "out of memory");
    if (rc)
        goto done;
    /* what a split UTF-8 character still holds */
    size_t len = 0;
    const char *rest = tok_stream_flush(gs.ts, &len);
    if (rest && len && sink && sink->on_token) {
        chs_tokinfo ti = {.id = -1, .t_s = (float)(clock_now_s() - gs.t0)};
        ti.off = (uint32_t)gs.total;
        ti.len = (uint32_t)len;
        sink->on_token(sink->ctx, rest, len, &ti);
    }
    ret = 0;
done:
    if (ret)
        rs.stop = CHS_STOP_ERROR;
    tok_stream_free(gs.ts);
    if (out)
        *out = rs;
    return ret;
}

/* ---- files ---- */

int chs_save(const chs *c, const char *path, char *msg, size_t cap)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *set = cJSON_CreateObject();
    cJSON *arr = cJSON_CreateArray();
    int ret = -1;
    char *txt = NULL;
    if (!root || !set || !arr) {
        cJSON_Delete(set);
        cJSON_Delete(arr);
        goto oom;
    }
    cJSON_AddItemToObject(root, "settings", set);
    cJSON_AddItemToObject(root, "messages", arr);
    cJSON_AddNumberToObject(root, "ggscope_chat", 1);
    cJSON_AddStringToObject(root, "system", c->system);
    const sampler_params *sp = &c->st.sp;
    cJSON_AddNumberToObject(set, "temp", sp->temp);
    cJSON_AddNumberToObject(set, "top_k", sp->top_k);
    cJSON_AddNumberToObject(set, "top_p", sp->top_p);
    cJSON_AddNumberToObject(set, "min_p", sp->min_p);
    cJSON_AddNumberToObject(set, "repeat_penalty", sp->repeat_penalty);
    cJSON_AddNumberToObject(set, "repeat_last_n", sp->repeat_last_n);
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)sp->seed);
    cJSON_AddStringToObject(set, "seed", seed);   /* a string: 64-bit exact */
    cJSON_AddNumberToObject(set, "n_predict", c->st.n_predict);
    for (size_t i = 0; i < c->n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto oom;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "role", c->m[i].role);
        cJSON_AddStringToObject(o, "content", c->m[i].content);
        if (c->m[i].dropped)
            cJSON_AddBoolToObject(o, "dropped", 1);
    }
    txt = cJSON_Print(root);
    if (!txt)
        goto oom;
    /* one atomic write path (afile.h): mkstemp beside the file, fsync, rename */
    afile af = {.fd = -1};
    size_t tl = strlen(txt);
    if (afile_open(&af, path) != 0 || afile_write(&af, txt, tl) != 0 || afile_write(&af, "\n", 1) != 0 ||
        afile_commit(&af) != 0) {
        emsg_set(msg, cap, "%s: %s", path,
               af.step == AFILE_CREATE && af.err == ENOENT ? "the folder does not exist" : strerror(af.err));
        afile_close(&af);
        goto out;
    }
    afile_close(&af);
    ret = 0;
    goto out;
oom:
    emsg_set(msg, cap, "out of memory");
out:
    free(txt);
    cJSON_Delete(root);
    return ret;
}

void chs_load_file(chs *c, chs_file *f)
{
    chs_clear(c);
    free(c->m);
    free(c->system);
    c->system = f->system ? f->system : chs__dupn("", 0);
    c->m = f->m;
    c->n = c->cap = f->n;
    if (!c->m)
        c->cap = 0;
    c->st = f->st;
    for (size_t i = 0; i < c->n; i++)
        c->m[i].id = ++c->next_id;
    c->version++;
    f->system = NULL;
    f->m = NULL;
    f->n = 0;
}

int chs_load(chs *c, const char *path, char *msg, size_t cap)
{
    chs_file f;
    if (chs_session_read(path, &c->st, &f, msg, cap))
        return -1;
    chs_load_file(c, &f);
    return 0;
}
