/* chatsession: see chatsession.h. */
#include "chatsession.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROMPT_CHUNK 32   /* prompt tokens per eval between cancel checks */

struct chs {
    const gguf_file *f;
    session *s;
    tok_vocab *v;
    chat_template *ct;
    char *system;
    chs_msg *m;
    size_t n, cap;
    chs_settings st;
    uint64_t version;
    char status[640];
    /* engine side */
    int32_t *held;
    size_t n_held, cap_held;
    float *logits;
};

const char *const chs_setting_names[] = {"temp",    "top_k",         "top_p",     "min_p", "repeat_penalty",
                                         "repeat_last_n", "seed", "n_predict", NULL};

static void setmsg(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setmsg(char *msg, size_t cap, const char *fmt, ...)
{
    if (!msg || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *dupn(const char *s, size_t n)
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

chs *chs_new(const gguf_file *f, session *s, char *msg, size_t cap)
{
    if (!f || !s) {
        setmsg(msg, cap, "no model");
        return NULL;
    }
    chs *c = calloc(1, sizeof *c);
    if (!c) {
        setmsg(msg, cap, "out of memory");
        return NULL;
    }
    c->f = f;
    c->s = s;
    c->st = chs_default_settings();
    tok_error te;
    c->v = tok_open(f, &te);
    if (!c->v) {
        setmsg(msg, cap, "tokenizer: %s", te.msg[0] ? te.msg : tok_strerror(te.code));
        chs_free(c);
        return NULL;
    }
    c->ct = chat_template_from_gguf(f, NULL, NULL);
    c->system = dupn("", 0);
    c->logits = malloc(sizeof(float) * session_n_vocab(s));
    if (!c->ct || !c->system || !c->logits) {
        setmsg(msg, cap, "out of memory");
        chs_free(c);
        return NULL;
    }
    snprintf(c->status, sizeof c->status, "%s", chat_template_describe(c->ct));
    return c;
}

static void msg_free(chs_msg *m)
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
        msg_free(&c->m[i]);
    free(c->m);
    free(c->system);
    free(c->held);
    free(c->logits);
    chat_template_free(c->ct);
    tok_close(c->v);
    free(c);
}

const tok_vocab *chs_vocab(const chs *c) { return c->v; }
const chat_template *chs_template(const chs *c) { return c->ct; }
session *chs_session(const chs *c) { return c->s; }
const char *chs_format_status(const chs *c) { return c->status; }
chs_settings chs_get_settings(const chs *c) { return c->st; }
void chs_set_settings(chs *c, const chs_settings *st) { c->st = *st; }
const char *chs_system(const chs *c) { return c->system; }
size_t chs_count(const chs *c) { return c->n; }
const chs_msg *chs_at(const chs *c, size_t i) { return i < c->n ? &c->m[i] : NULL; }
uint64_t chs_version(const chs *c) { return c->version; }
size_t chs_held(const chs *c) { return c->n_held; }

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
        setmsg(msg, cap, "usage: /set NAME VALUE");
        return -1;
    }
    if (!strcmp(name, "temp") || !strcmp(name, "top_p") || !strcmp(name, "min_p") ||
        !strcmp(name, "repeat_penalty")) {
        if (!parse_f(value, &f)) {
            setmsg(msg, cap, "%s: expected a number, got '%s'", name, value);
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
                setmsg(msg, cap, "repeat_penalty must be > 0");
                return -1;
            }
            st.sp.repeat_penalty = f;
        }
    } else if (!strcmp(name, "top_k") || !strcmp(name, "repeat_last_n") || !strcmp(name, "n_predict")) {
        if (!parse_l(value, -1, 1 << 24, &l)) {
            setmsg(msg, cap, "%s: expected a whole number, got '%s'", name, value);
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
            setmsg(msg, cap, "seed: expected a whole number, got '%s'", value);
            return -1;
        }
        st.sp.seed = v;
    } else {
        setmsg(msg, cap, "unknown setting '%s' (temp, top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed, n_predict)",
               name);
        return -1;
    }
    c->st = st;
    return 0;
}

/* ---- the conversation ---- */

int chs_set_system(chs *c, const char *text)
{
    char *d = dupn(text ? text : "", text ? strlen(text) : 0);
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
    return m;
}

int chs_add(chs *c, const char *role, const char *text, size_t len)
{
    chs_msg *m = push(c);
    if (!m)
        return -1;
    m->role = dupn(role, strlen(role));
    m->content = dupn(text, len);
    m->len = len;
    if (!m->role || !m->content) {
        msg_free(m);
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
            msg_free(m);
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
        msg_free(&c->m[i]);
    c->n = 0;
    c->version++;
}

bool chs_pop_reply(chs *c)
{
    if (c->n && !strcmp(c->m[c->n - 1].role, "assistant")) {
        msg_free(&c->m[--c->n]);
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
        msg_free(&c->m[--c->n]);
    c->version++;
    return t;
}

char *chs_render(chs *c, bool gen, size_t *len, chat_result *res)
{
    chat_message *mm = malloc((c->n + 1) * sizeof *mm);
    if (!mm)
        return NULL;
    size_t k = 0;
    if (c->system[0])
        mm[k++] = (chat_message){"system", c->system};
    for (size_t i = 0; i < c->n; i++)
        if (!c->m[i].dropped)
            mm[k++] = (chat_message){c->m[i].role, c->m[i].content};
    chat_opts o = {.add_generation_prompt = gen};
    chat_result r;
    char *out = chat_render(c->ct, mm, k, &o, len, &r);
    free(mm);
    snprintf(c->status, sizeof c->status, "%s", r.status);
    if (res)
        *res = r;
    return out;
}

int chs_tokenize(const chs *c, const char *text, size_t len, int32_t **ids, size_t *n)
{
    tok_id *t = NULL;
    size_t nt = 0;
    *ids = NULL;
    *n = 0;
    if (tok_tokenize(c->v, text, len, TOK_PARSE_SPECIAL, &t, &nt) != TOK_OK)
        return -1;
    tok_id bos = tok_bos(c->v);
    if (tok_add_bos(c->v) && bos != TOK_NULL && (nt == 0 || t[0] != bos)) {
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

int chs_prompt(chs *c, int32_t **ids, size_t *n, unsigned *n_dropped, char *msg, size_t cap)
{
    *ids = NULL;
    *n = 0;
    if (n_dropped)
        *n_dropped = 0;
    size_t live = 0;
    for (size_t i = 0; i < c->n; i++)
        live += !c->m[i].dropped;
    if (!live) {
        setmsg(msg, cap, "no message to answer");
        return -1;
    }
    uint32_t n_ctx = session_n_ctx(c->s);
    uint32_t reserve = n_ctx / 4;
    if (c->st.n_predict > 0 && (uint32_t)c->st.n_predict < reserve)
        reserve = (uint32_t)c->st.n_predict;
    if (reserve < 1)
        reserve = 1;
    for (;;) {
        size_t len;
        chat_result r;
        char *text = chs_render(c, true, &len, &r);
        if (!text) {
            setmsg(msg, cap, "the chat template failed: %s", r.status);
            return -1;
        }
        int32_t *t;
        size_t nt;
        int rc = chs_tokenize(c, text, len, &t, &nt);
        free(text);
        if (rc) {
            setmsg(msg, cap, "out of memory");
            return -1;
        }
        if (nt + reserve <= n_ctx) {
            *ids = t;
            *n = nt;
            return 0;
        }
        free(t);
        /* drop the oldest live turn: the first live message and every
         * non-user message after it, keeping at least the last message */
        size_t first = 0;
        while (first < c->n && c->m[first].dropped)
            first++;
        size_t last_live = c->n;
        while (last_live > 0 && c->m[last_live - 1].dropped)
            last_live--;
        if (first + 1 >= last_live) {
            setmsg(msg, cap, "the message (%zu tokens with the template) does not fit the context (%u, %u kept for the reply)",
                   nt, n_ctx, reserve);
            return -1;
        }
        size_t i = first;
        do {
            c->m[i].dropped = true;
            if (n_dropped)
                (*n_dropped)++;
            i++;
        } while (i + 1 < last_live && strcmp(c->m[i].role, "user"));
        c->version++;
    }
}

/* ---- the engine side ---- */

void chs_reset_cache(chs *c)
{
    c->n_held = 0;
    session_kv_truncate(c->s, 0);
}

static int held_push(chs *c, int32_t t)
{
    if (c->n_held == c->cap_held) {
        size_t nc = c->cap_held ? c->cap_held * 2 : 256;
        int32_t *h = realloc(c->held, nc * sizeof *h);
        if (!h)
            return -1;
        c->held = h;
        c->cap_held = nc;
    }
    c->held[c->n_held++] = t;
    return 0;
}

static bool cancelled(const chs_sink *sk)
{
    return sk && sk->cancel && atomic_load(sk->cancel);
}

/* session_eval, retried once when a cancel request meant for an earlier
 * reply was still pending in the session (our own flag is not set). */
static int eval(chs *c, const int32_t *t, uint32_t n, uint32_t pos, float *lg, const chs_sink *sk)
{
    int rc = session_eval(c->s, t, n, pos, lg, false);
    if (rc == BACKEND_ECANCELLED && !cancelled(sk))
        rc = session_eval(c->s, t, n, pos, lg, false);
    return rc;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

int chs_generate(chs *c, const int32_t *ids, size_t n, const chs_settings *st, const chs_sink *sink,
                 chs_reply_stats *out, char *msg, size_t cap)
{
    chs_reply_stats rs = {.n_prompt = (uint32_t)n, .stop = CHS_STOP_ERROR};
    int ret = -1;
    sampler *smp = NULL;
    tok_stream *ts = NULL;
    uint32_t n_ctx = session_n_ctx(c->s);
    double t0 = now_s();
    if (!n || n >= n_ctx) {
        setmsg(msg, cap, "the prompt (%zu tokens) does not fit the context (%u)", n, n_ctx);
        goto done;
    }
    /* the cache may hold less than we think after a cancelled eval */
    if (c->n_held > session_used(c->s))
        c->n_held = session_used(c->s);
    size_t common = 0;
    while (common < c->n_held && common < n && c->held[common] == ids[common])
        common++;
    if (common >= n)
        common = n - 1;   /* the last prompt token is evaluated again for its logits */
    session_kv_truncate(c->s, (uint32_t)common);
    c->n_held = common;
    rs.n_reused = (uint32_t)common;
    smp = sampler_new(&st->sp, session_n_vocab(c->s));
    ts = tok_stream_new(c->v, 0);
    if (!smp || !ts) {
        setmsg(msg, cap, "bad sampling settings or out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        sampler_accept(smp, ids[i]);
    /* prompt: the new tokens, PROMPT_CHUNK at a time */
    for (size_t p = common; p < n;) {
        if (cancelled(sink)) {
            rs.stop = CHS_STOP_CANCEL;
            rs.t_prompt_s = now_s() - t0;
            ret = 0;
            goto done;
        }
        uint32_t k = (uint32_t)(n - p < PROMPT_CHUNK ? n - p : PROMPT_CHUNK);
        int rc = eval(c, ids + p, k, (uint32_t)p, p + k == n ? c->logits : NULL, sink);
        if (rc == BACKEND_ECANCELLED) {
            rs.stop = CHS_STOP_CANCEL;
            rs.t_prompt_s = now_s() - t0;
            ret = 0;
            goto done;
        }
        if (rc) {
            setmsg(msg, cap, "evaluation failed: %s", session_error(c->s));
            goto done;
        }
        for (uint32_t i = 0; i < k; i++)
            if (held_push(c, ids[p + i])) {
                setmsg(msg, cap, "out of memory");
                goto done;
            }
        rs.n_eval += k;
        p += k;
    }
    rs.t_prompt_s = now_s() - t0;
    double t1 = 0;
    uint32_t pos = (uint32_t)n;
    size_t total = 0;   /* bytes of text so far */
    for (;;) {
        if (cancelled(sink)) {
            rs.stop = CHS_STOP_CANCEL;
            break;
        }
        sampler_result sr;
        int32_t tok = sampler_sample(smp, c->logits, &sr);
        if (tok < 0) {
            setmsg(msg, cap, "sampling failed (logits are not finite)");
            goto done;
        }
        if (!rs.n_gen) {
            t1 = now_s();
            rs.t_first_s = t1 - t0;
        }
        sampler_accept(smp, tok);
        rs.n_gen++;
        bool eog = tok_is_eog(c->v, tok);
        chs_tokinfo ti = {.id = tok, .prob = sr.prob, .entropy = sr.entropy, .n_alt = sr.n_alt};
        for (int i = 0; i < sr.n_alt && i < SAMPLER_N_ALT; i++) {
            ti.alt_id[i] = sr.alt_id[i];
            ti.alt_prob[i] = sr.alt_prob[i];
        }
        size_t len = 0;
        const char *text = "";
        if (!eog) {
            text = tok_stream_push(ts, tok, &len);
            if (!text) {
                setmsg(msg, cap, "out of memory");
                goto done;
            }
        }
        ti.off = (uint32_t)total;
        ti.len = (uint32_t)len;
        total += len;
        if (sink && sink->on_token)
            sink->on_token(sink->ctx, text, len, &ti);
        if (eog) {
            rs.stop = CHS_STOP_EOG;
            break;
        }
        if (st->n_predict > 0 && rs.n_gen >= (uint32_t)st->n_predict) {
            rs.stop = CHS_STOP_LIMIT;
            break;
        }
        if (pos + 1 > n_ctx - 1) {
            rs.stop = CHS_STOP_CTX;
            break;
        }
        if (sink && sink->delay_ms)
            sleep_ms(sink->delay_ms);
        if (cancelled(sink)) {
            rs.stop = CHS_STOP_CANCEL;
            break;
        }
        int rc = eval(c, &tok, 1, pos, c->logits, sink);
        if (rc == BACKEND_ECANCELLED) {
            rs.stop = CHS_STOP_CANCEL;
            break;
        }
        if (rc) {
            setmsg(msg, cap, "evaluation failed: %s", session_error(c->s));
            goto done;
        }
        if (held_push(c, tok)) {
            setmsg(msg, cap, "out of memory");
            goto done;
        }
        pos++;
    }
    /* what a split UTF-8 character still holds */
    size_t len = 0;
    const char *rest = tok_stream_flush(ts, &len);
    if (rest && len && sink && sink->on_token) {
        chs_tokinfo ti = {.id = -1};
        ti.off = (uint32_t)total;
        ti.len = (uint32_t)len;
        sink->on_token(sink->ctx, rest, len, &ti);
    }
    rs.t_gen_s = rs.n_gen ? now_s() - t1 : 0;
    ret = 0;
done:
    if (ret)
        rs.stop = CHS_STOP_ERROR;
    if (c->n_held > session_used(c->s))
        c->n_held = session_used(c->s);
    tok_stream_free(ts);
    sampler_free(smp);
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
    char *txt = NULL, *tmp = NULL;
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
    size_t pl = strlen(path);
    tmp = malloc(pl + 32);
    if (!txt || !tmp)
        goto oom;
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        setmsg(msg, cap, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    size_t tl = strlen(txt);
    bool ok = fwrite(txt, 1, tl, fp) == tl && fputc('\n', fp) != EOF && fflush(fp) == 0 &&
              fsync(fileno(fp)) == 0;
    int e = errno;
    if (fclose(fp) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok || rename(tmp, path) != 0) {
        if (ok)
            e = errno;
        setmsg(msg, cap, "%s: %s", path, strerror(e));
        remove(tmp);
        goto out;
    }
    ret = 0;
    goto out;
oom:
    setmsg(msg, cap, "out of memory");
out:
    free(tmp);
    free(txt);
    cJSON_Delete(root);
    return ret;
}

static bool num_field(const cJSON *set, const char *name, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(set, name);
    if (!x)
        return true;   /* absent: keep */
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
        return false;
    *v = x->valuedouble;
    return true;
}

int chs_load(chs *c, const char *path, char *msg, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        setmsg(msg, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t sz = 0, cp = 4096;
    char *buf = malloc(cp);
    while (buf) {
        if (sz + 1 >= cp) {
            if (cp > (64u << 20)) {
                free(buf);
                fclose(fp);
                setmsg(msg, cap, "%s: too large for a session file", path);
                return -1;
            }
            char *nb = realloc(buf, cp * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cp *= 2;
        }
        size_t r = fread(buf + sz, 1, cp - 1 - sz, fp);
        sz += r;
        if (r == 0)
            break;
    }
    fclose(fp);
    if (!buf) {
        setmsg(msg, cap, "out of memory");
        return -1;
    }
    buf[sz] = 0;
    cJSON *root = cJSON_ParseWithLength(buf, sz);
    free(buf);
    int ret = -1;
    chs_settings st = c->st;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "ggscope_chat");
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(root, "settings");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!root || !cJSON_IsObject(root) || !cJSON_IsNumber(ver) || ver->valuedouble != 1 ||
        (sys && !cJSON_IsString(sys)) || (set && !cJSON_IsObject(set)) || !cJSON_IsArray(arr)) {
        setmsg(msg, cap, "%s: not a ggscope chat session file (version 1)", path);
        goto out;
    }
    if (set) {
        double v[7] = {st.sp.temp,          st.sp.top_k,         st.sp.top_p, st.sp.min_p,
                       st.sp.repeat_penalty, st.sp.repeat_last_n, st.n_predict};
        static const char *names[7] = {"temp", "top_k", "top_p", "min_p", "repeat_penalty",
                                       "repeat_last_n", "n_predict"};
        for (int i = 0; i < 7; i++)
            if (!num_field(set, names[i], &v[i]) ||
                ((i == 1 || i == 5 || i == 6) && (fabs(v[i]) > (1 << 24)))) {
                setmsg(msg, cap, "%s: settings.%s is not a valid number", path, names[i]);
                goto out;
            }
        if (!(v[4] > 0)) {
            setmsg(msg, cap, "%s: settings.repeat_penalty must be > 0", path);
            goto out;
        }
        st.sp.temp = (float)v[0];
        st.sp.top_k = (int32_t)v[1];
        st.sp.top_p = (float)v[2];
        st.sp.min_p = (float)v[3];
        st.sp.repeat_penalty = (float)v[4];
        st.sp.repeat_last_n = (int32_t)(v[5] < 0 ? 0 : v[5]);
        st.n_predict = (int32_t)v[6];
        const cJSON *seed = cJSON_GetObjectItemCaseSensitive(set, "seed");
        if (cJSON_IsString(seed)) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(seed->valuestring, &end, 10);
            if (*end || errno || !seed->valuestring[0]) {
                setmsg(msg, cap, "%s: settings.seed is not a whole number", path);
                goto out;
            }
            st.sp.seed = s;
        } else if (cJSON_IsNumber(seed) && seed->valuedouble >= 0) {
            st.sp.seed = (uint64_t)seed->valuedouble;
        }
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(it, "role");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(r) || !cJSON_IsString(t) ||
            (strcmp(r->valuestring, "user") && strcmp(r->valuestring, "assistant"))) {
            setmsg(msg, cap, "%s: each message needs a role (user, assistant) and a content string", path);
            goto out;
        }
    }
    /* valid: replace */
    if (chs_set_system(c, sys ? sys->valuestring : "")) {
        setmsg(msg, cap, "out of memory");
        goto out;
    }
    chs_clear(c);
    c->st = st;
    cJSON_ArrayForEach(it, arr)
    {
        const char *r = cJSON_GetObjectItemCaseSensitive(it, "role")->valuestring;
        const char *t = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
        if (chs_add(c, r, t, strlen(t))) {
            setmsg(msg, cap, "out of memory");
            goto out;
        }
        c->m[c->n - 1].dropped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "dropped"));
    }
    ret = 0;
out:
    cJSON_Delete(root);
    return ret;
}
