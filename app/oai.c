/* oai: see oai.h. */
#include "oai.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textesc.h"

/* ---- server-sent events ---- */

void oai_sse_init(oai_sse *s)
{
    memset(s, 0, sizeof *s);
}

void oai_sse_free(oai_sse *s)
{
    free(s->line);
    free(s->data);
    memset(s, 0, sizeof *s);
}

static bool buf_add(char **b, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *len + n + 1)
            nc *= 2;
        char *nb = realloc(*b, nc);
        if (!nb)
            return false;
        *b = nb;
        *cap = nc;
    }
    if (n)
        memcpy(*b + *len, p, n);
    *len += n;
    (*b)[*len] = 0;
    return true;
}

/* One line of the stream (without its end). Returns false when out of room. */
static bool sse_line(oai_sse *s, oai_event_fn fn, void *ud)
{
    const char *l = s->line ? s->line : "";
    size_t n = s->llen;
    if (n == 0) {   /* a blank line ends the event */
        if (s->has_data) {
            oai_event ev = {s->data ? s->data : "", s->dlen, s->error};
            fn(ud, &ev);
        }
        s->dlen = 0;
        if (s->data)
            s->data[0] = 0;
        s->has_data = s->error = false;
        return true;
    }
    if (l[0] == ':')   /* a comment (keep-alive) */
        return true;
    const char *colon = memchr(l, ':', n);
    size_t fl = colon ? (size_t)(colon - l) : n;
    const char *v = colon ? colon + 1 : l + n;
    if (v < l + n && *v == ' ')
        v++;
    size_t vl = (size_t)(l + n - v);
    bool is_data = fl == 4 && !memcmp(l, "data", 4), is_err = fl == 5 && !memcmp(l, "error", 5);
    if (!is_data && !is_err)
        return true;   /* event:, id:, retry: and unknown fields */
    if (s->dlen + vl + 1 > OAI_SSE_MAX_EVENT)
        return false;
    if (s->has_data && !buf_add(&s->data, &s->dlen, &s->dcap, "\n", 1))
        return false;
    if (!buf_add(&s->data, &s->dlen, &s->dcap, v, vl))
        return false;
    s->has_data = true;
    s->error |= is_err;
    return true;
}

int oai_sse_feed(oai_sse *s, const char *p, size_t n, oai_event_fn fn, void *ud)
{
    if (s->too_big)
        return -1;
    size_t i = 0;
    while (i < n) {
        if (s->cr && p[i] == '\n') {   /* the LF of a CR LF */
            s->cr = false;
            i++;
            continue;
        }
        s->cr = false;
        const char *e = p + i;
        size_t k = 0;
        while (i + k < n && e[k] != '\n' && e[k] != '\r')
            k++;
        if (s->llen + k > OAI_SSE_MAX_EVENT || !buf_add(&s->line, &s->llen, &s->lcap, e, k)) {
            s->too_big = true;
            return -1;
        }
        i += k;
        if (i == n)
            break;   /* the line goes on in the next piece */
        s->cr = p[i] == '\r';
        i++;
        if (!sse_line(s, fn, ud)) {
            s->too_big = true;
            return -1;
        }
        s->llen = 0;
    }
    return 0;
}

bool oai_sse_pending(const oai_sse *s)
{
    return s->llen > 0 || s->has_data;
}

/* ---- chunks ---- */

/* One line for a terminal from untrusted text. */
static void one_line(char *out, size_t cap, const char *s, size_t len)
{
    if (!cap)
        return;
    size_t k = 0;
    while (k < len && s[k] != '\n' && s[k] != '\r')
        k++;
    textesc_term(out, cap, s, k, 0);
}

static char *dup_str(const cJSON *it, size_t *len)
{
    if (!cJSON_IsString(it) || !it->valuestring)
        return NULL;
    size_t n = strlen(it->valuestring);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, it->valuestring, n + 1);
        *len = n;
    }
    return d;
}

static double num(const cJSON *o, const char *name, double dflt)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(it) && isfinite(it->valuedouble) ? it->valuedouble : dflt;
}

static uint32_t count(const cJSON *o, const char *name)
{
    double v = num(o, name, 0);
    return v > 0 && v < 4e9 ? (uint32_t)v : 0;
}

/* The message of an "error" member: an object with "message", or a string. */
static void error_of(const cJSON *e, char *out, size_t cap)
{
    const cJSON *m = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : e;
    if (cJSON_IsString(m) && m->valuestring && m->valuestring[0]) {
        one_line(out, cap, m->valuestring, strlen(m->valuestring));
        return;
    }
    char *t = cJSON_PrintUnformatted(e);
    if (t) {
        one_line(out, cap, t, strlen(t));
        free(t);
    } else {
        snprintf(out, cap, "an error without a message");
    }
}

static void tok_of(const cJSON *o, oai_tok *t)
{
    memset(t, 0, sizeof *t);
    t->id = -1;
    t->logprob = -INFINITY;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "token");
    if (cJSON_IsString(s) && s->valuestring) {
        t->len = strlen(s->valuestring);
        size_t k = t->len < OAI_TEXT_MAX ? t->len : OAI_TEXT_MAX;
        memcpy(t->text, s->valuestring, k);
        t->text[k] = 0;
    }
    double id = num(o, "id", -1);
    if (id >= 0 && id < 2147483647.0)
        t->id = (int32_t)id;
    double lp = num(o, "logprob", -INFINITY);
    if (lp <= 0)
        t->logprob = (float)lp;
}

static int logprobs_of(const cJSON *lps, oai_chunk *out)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(lps, "content");
    int n = cJSON_IsArray(content) ? cJSON_GetArraySize(content) : 0;
    if (n <= 0)
        return 0;
    out->lp = calloc((size_t)n, sizeof *out->lp);
    if (!out->lp)
        return -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, content)
    {
        if (!cJSON_IsObject(e))
            continue;
        oai_logprob *l = &out->lp[out->n_lp++];
        tok_of(e, &l->tok);
        const cJSON *top = cJSON_GetObjectItemCaseSensitive(e, "top_logprobs"), *a;
        cJSON_ArrayForEach(a, top)
        {
            if (l->n_top < OAI_TOP_MAX && cJSON_IsObject(a))
                tok_of(a, &l->top[l->n_top++]);
        }
    }
    return 0;
}

int oai_chunk_parse(const oai_event *ev, oai_chunk *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (ev->len == 6 && !memcmp(ev->data, "[DONE]", 6)) {
        out->done = true;
        return 0;
    }
    cJSON *root = cJSON_ParseWithLength(ev->data, ev->len);
    if (!cJSON_IsObject(root)) {
        if (ev->error) {   /* an error event that is not JSON: its text */
            one_line(out->error, sizeof out->error, ev->data, ev->len);
            cJSON_Delete(root);
            return 0;
        }
        char head[48];
        one_line(head, sizeof head, ev->data, ev->len < 40 ? ev->len : 40);
        snprintf(msg, cap, "the server sent an event that is not a JSON object: \"%s\"", head);
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (err && !cJSON_IsNull(err))
        error_of(err, out->error, sizeof out->error);
    else if (ev->error)
        error_of(root, out->error, sizeof out->error);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (cJSON_IsString(model) && model->valuestring)
        one_line(out->model, sizeof out->model, model->valuestring, strlen(model->valuestring));
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
    const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    int rc = 0;
    if (cJSON_IsObject(c0)) {
        const cJSON *delta = cJSON_GetObjectItemCaseSensitive(c0, "delta");
        if (cJSON_IsObject(delta)) {
            out->content = dup_str(cJSON_GetObjectItemCaseSensitive(delta, "content"), &out->content_len);
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(delta, "reasoning_content");
            if (!cJSON_IsString(r))
                r = cJSON_GetObjectItemCaseSensitive(delta, "reasoning");
            out->reasoning = dup_str(r, &out->reasoning_len);
        }
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
        if (cJSON_IsString(fr) && fr->valuestring)
            one_line(out->finish, sizeof out->finish, fr->valuestring, strlen(fr->valuestring));
        const cJSON *lps = cJSON_GetObjectItemCaseSensitive(c0, "logprobs");
        if (cJSON_IsObject(lps))
            rc = logprobs_of(lps, out);
    }
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
    if (cJSON_IsObject(usage)) {
        out->has_usage = true;
        out->prompt_tokens = count(usage, "prompt_tokens");
        out->completion_tokens = count(usage, "completion_tokens");
    }
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(root, "timings");
    if (cJSON_IsObject(tm)) {
        out->has_timings = true;
        out->prompt_n = num(tm, "prompt_n", 0);
        out->prompt_ms = num(tm, "prompt_ms", 0);
        out->predicted_n = num(tm, "predicted_n", 0);
        out->predicted_ms = num(tm, "predicted_ms", 0);
        out->cache_n = num(tm, "cache_n", 0);
    }
    cJSON_Delete(root);
    if (rc) {
        oai_chunk_free(out);
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    return 0;
}

void oai_chunk_free(oai_chunk *c)
{
    free(c->content);
    free(c->reasoning);
    free(c->lp);
    memset(c, 0, sizeof *c);
}

/* ---- the request ---- */

/* A setting as the user typed it: the float it was stored in, printed back
 * with 6 significant digits (0.95f is sent as 0.95, not 0.949999988). */
static double short_num(double v)
{
    char t[32];
    snprintf(t, sizeof t, "%.6g", v);
    return strtod(t, NULL);
}

char *oai_request_json(const oai_msg *m, size_t n, const oai_params *p)
{
    cJSON *root = cJSON_CreateObject(), *msgs = cJSON_CreateArray();
    if (!root || !msgs) {
        cJSON_Delete(root);
        cJSON_Delete(msgs);
        return NULL;
    }
    cJSON_AddItemToObject(root, "messages", msgs);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        cJSON *o = cJSON_CreateObject();
        char *text = malloc(m[i].len + 1);
        ok = o && text;
        if (ok) {
            memcpy(text, m[i].content, m[i].len);
            text[m[i].len] = 0;   /* cJSON escapes control characters itself */
            ok = cJSON_AddStringToObject(o, "role", m[i].role) && cJSON_AddStringToObject(o, "content", text);
            cJSON_AddItemToArray(msgs, o);
        } else {
            cJSON_Delete(o);
        }
        free(text);
    }
    if (p->model && p->model[0])
        ok = ok && cJSON_AddStringToObject(root, "model", p->model);
    ok = ok && cJSON_AddTrueToObject(root, "stream");
    cJSON *so = cJSON_AddObjectToObject(root, "stream_options");
    ok = ok && so && cJSON_AddTrueToObject(so, "include_usage");
    ok = ok && cJSON_AddNumberToObject(root, "temperature", short_num(p->temperature));
    ok = ok && cJSON_AddNumberToObject(root, "top_p", short_num(p->top_p));
    if (p->top_k > 0)
        ok = ok && cJSON_AddNumberToObject(root, "top_k", p->top_k);
    if (p->min_p > 0)
        ok = ok && cJSON_AddNumberToObject(root, "min_p", short_num(p->min_p));
    if (p->repeat_penalty != 1.0)
        ok = ok && cJSON_AddNumberToObject(root, "repeat_penalty", short_num(p->repeat_penalty));
    if (p->max_tokens > 0)
        ok = ok && cJSON_AddNumberToObject(root, "max_tokens", p->max_tokens);
    if (p->have_seed)
        ok = ok && cJSON_AddNumberToObject(root, "seed", (double)(p->seed & 0xFFFFFFFFu));
    if (p->top_logprobs > 0) {
        ok = ok && cJSON_AddTrueToObject(root, "logprobs");
        ok = ok && cJSON_AddNumberToObject(root, "top_logprobs", p->top_logprobs);
    }
    char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return s;
}

/* ---- other bodies ---- */

void oai_models_free(char **ids, size_t n)
{
    for (size_t i = 0; i < n && ids; i++)
        free(ids[i]);
    free(ids);
}

int oai_models_parse(const char *body, size_t len, char ***ids, size_t *n, char *msg, size_t cap)
{
    *ids = NULL;
    *n = 0;
    cJSON *root = cJSON_ParseWithLength(body, len);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "data");
    if (!cJSON_IsArray(list))
        list = cJSON_GetObjectItemCaseSensitive(root, "models");
    if (!cJSON_IsArray(list)) {
        snprintf(msg, cap, "the model list is not the expected JSON ({\"data\": [...]})");
        cJSON_Delete(root);
        return -1;
    }
    int k = cJSON_GetArraySize(list);
    char **out = calloc(k > 0 ? (size_t)k : 1, sizeof *out);
    if (!out) {
        snprintf(msg, cap, "out of memory");
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (!cJSON_IsString(id))
            id = cJSON_GetObjectItemCaseSensitive(e, "model");
        if (!cJSON_IsString(id))
            id = cJSON_GetObjectItemCaseSensitive(e, "name");
        size_t l;
        char *s = dup_str(id, &l);
        if (s)
            out[(*n)++] = s;
    }
    cJSON_Delete(root);
    *ids = out;
    return 0;
}

uint32_t oai_models_n_ctx(const char *body, size_t len, const char *id)
{
    cJSON *root = cJSON_ParseWithLength(body, len);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data"), *e;
    const cJSON *list = cJSON_IsArray(data) ? data : NULL;
    uint32_t n = 0;
    cJSON_ArrayForEach(e, list)
    {
        const cJSON *eid = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (id && *id && !(cJSON_IsString(eid) && eid->valuestring && !strcmp(eid->valuestring, id)))
            continue;
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(e, "meta");
        n = cJSON_IsObject(e) ? count(e, "max_model_len") : 0;
        if (!n && cJSON_IsObject(meta))
            n = count(meta, "n_ctx");
        if (!n && cJSON_IsObject(meta))
            n = count(meta, "n_ctx_train");
        break;
    }
    cJSON_Delete(root);
    return n;
}

uint32_t oai_props_n_ctx(const char *body, size_t len)
{
    cJSON *root = cJSON_ParseWithLength(body, len);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "default_generation_settings");
    uint32_t n = cJSON_IsObject(d) ? count(d, "n_ctx") : 0;
    if (!n && cJSON_IsObject(root))
        n = count(root, "n_ctx");
    cJSON_Delete(root);
    return n;
}

void oai_error_text(const char *body, size_t len, char *out, size_t cap)
{
    if (!cap)
        return;
    out[0] = 0;
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (cJSON_IsObject(root)) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
        if (e && !cJSON_IsNull(e))
            error_of(e, out, cap);
        else if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "message")))
            error_of(root, out, cap);
    }
    cJSON_Delete(root);
    if (!out[0]) {
        while (len && (*body == '\n' || *body == '\r' || *body == ' '))
            body++, len--;
        one_line(out, cap, body, len > 200 ? 200 : len);
    }
}
