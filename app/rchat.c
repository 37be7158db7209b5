/* rchat: see rchat.h. */
#include "rchat.h"

#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat_page.h"
#include "clock.h"
#include "http.h"
#include "oai.h"

#define BODY_MAX (1u << 20)   /* a models list, /props, an error body */
#define TOP_LOGPROBS 5

/* Token texts the inspector shows, by id (loop thread). */
typedef struct {
    int32_t id;
    char *text;
} tokent;

/* A body read whole (a models list, /props, an error). */
typedef struct {
    char *p;
    size_t len, cap;
    bool done;
    http_result res;
} body_t;

/* A reply being streamed: made by the worker (on its stack), run by the loop. */
enum { CALL_QUEUED, CALL_RUNNING, CALL_DONE };

typedef struct {
    rchat *rc;
    const char *body;
    const chs_sink *sink;
    int state;                 /* CALL_*, under rc->mu */
    bool cancel_req;           /* under rc->mu */
    pthread_cond_t cv;
    http_req *hr;
    /* loop thread only, until CALL_DONE */
    long status;
    oai_sse sse;
    body_t err;                /* the body of an HTTP error */
    double t0, t_first, t_last;
    size_t total;              /* reply bytes given to the sink */
    uint32_t n_tok;            /* tokens (content chunks, or logprobs entries) */
    bool thinking;             /* inside the <think> block of reasoning_content */
    bool done_seen, cancelled, failed;
    double t_cancel_seen, t_closed;   /* Esc: the worker saw the flag; the loop closed the request */
    char finish[32];
    oai_chunk last;            /* usage and timings, when a chunk had them */
    bool has_usage, has_timings;
    char msg[400];
} call;

struct rchat {
    char *base;                /* the URL without a trailing "/" or "/v1" */
    char *model;               /* "" when unknown */
    char *auth;                /* "Authorization: Bearer ..." or NULL */
    long timeout_ms;
    uint32_t n_ctx;            /* /props's context size, 0: unknown */
    char **models;
    uint32_t *models_ctx;      /* each model's context in the models list (vLLM, llama-server), 0: none */
    size_t n_models;
    chs *page_c;   /* the conversation, the page's (borrowed; /models NAME sets its status) */
    chs *c;                    /* owned by the page once attached (release) */
    chat_page *pg;
    screen *s;
    uv_loop_t *loop;
    http_client *http;
    uv_async_t async;
    bool async_open, closed;
    pthread_mutex_t mu;
    call *cur;                 /* the reply in flight, under mu */
    http_req *models_req;
    body_t models_body;
    tokent *toks;              /* open addressing, by id */
    size_t ntoks, captoks;
    char status[600];
};

/* ---- bodies read whole ---- */

static bool body_add(body_t *b, const char *p, size_t n)
{
    if (b->len + n > BODY_MAX)
        return false;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np)
            return false;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
    return true;
}

static bool body_data(void *ud, long status, const char *p, size_t len)
{
    (void)status;
    return body_add(ud, p, len);
}

static void body_done(void *ud, const http_result *r)
{
    body_t *b = ud;
    b->res = *r;
    b->done = true;
}

static const char *const *headers(const rchat *r, const char *h[4], bool json)
{
    size_t k = 0;
    if (json) {
        h[k++] = "Content-Type: application/json";
        h[k++] = "Accept: text/event-stream";
    }
    if (r->auth)
        h[k++] = r->auth;
    h[k] = NULL;
    return h;
}

static http_request get_request(const char *url, const char *const *hdr)
{
    return (http_request){.url = url, .headers = hdr, .range_first = -1, .range_last = -1,
                          .connect_timeout_ms = 5000, .idle_timeout_ms = 10000};
}

/* One line on a body that failed: the transport's message, or the status and
 * the server's own message. "" when it did not fail. */
static void body_error(const body_t *b, char *out, size_t cap)
{
    out[0] = 0;
    if (b->res.err != HTTP_OK) {
        snprintf(out, cap, "%s", b->res.msg);
    } else if (b->res.status >= 400) {
        char t[256];
        oai_error_text(b->p ? b->p : "", b->len, t, sizeof t);
        snprintf(out, cap, "HTTP %ld: %s", b->res.status, t);
    }
}

/* ---- the models list and the context size ---- */

static void set_models(rchat *r, const body_t *b, char *err, size_t cap)
{
    body_error(b, err, cap);
    if (err[0])
        return;
    char **ids;
    size_t n;
    if (oai_models_parse(b->p ? b->p : "", b->len, &ids, &n, err, cap))
        return;
    uint32_t *ctx = calloc(n ? n : 1, sizeof *ctx);
    if (!ctx) {
        oai_models_free(ids, n);
        snprintf(err, cap, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        ctx[i] = oai_models_n_ctx(b->p ? b->p : "", b->len, ids[i]);
    oai_models_free(r->models, r->n_models);
    free(r->models_ctx);
    r->models = ids;
    r->models_ctx = ctx;
    r->n_models = n;
    if (!r->model[0] && n) {
        char *m = strdup(ids[0]);
        if (m) {
            free(r->model);
            r->model = m;
        }
    }
}

/* Before the terminal is ours: /v1/models and /props on a loop of our own. */
static void ask_server(rchat *r)
{
    uv_loop_t loop;
    char err[256] = "";
    if (uv_loop_init(&loop) != 0)
        return;
    http_client *hc = http_client_new(&loop, err, sizeof err);
    body_t bm = {0}, bp = {0};
    if (hc) {
        char um[1100], up[1100];
        snprintf(um, sizeof um, "%s/v1/models", r->base);
        snprintf(up, sizeof up, "%s/props", r->base);
        const char *h[4];
        http_request qm = get_request(um, headers(r, h, false)), qp = get_request(up, qm.headers);
        http_callbacks cb = {NULL, body_data, body_done};
        if (!http_start(hc, &qm, &cb, &bm, err, sizeof err))
            bm.done = true, bm.res.err = HTTP_E_OTHER, snprintf(bm.res.msg, sizeof bm.res.msg, "%s", err);
        if (!http_start(hc, &qp, &cb, &bp, err, sizeof err))
            bp.done = true, bp.res.err = HTTP_E_OTHER;
        while (!bm.done || !bp.done)
            uv_run(&loop, UV_RUN_ONCE);
        http_client_free(hc);
        uv_run(&loop, UV_RUN_DEFAULT);
        set_models(r, &bm, err, sizeof err);
        if (bp.res.err == HTTP_OK && bp.res.status == 200)
            r->n_ctx = oai_props_n_ctx(bp.p ? bp.p : "", bp.len);
    }
    uv_loop_close(&loop);
    free(bm.p);
    free(bp.p);
    if (r->model[0])
        snprintf(r->status, sizeof r->status, "remote: %.200s at %.300s", r->model, r->base);
    else
        snprintf(r->status, sizeof r->status, "remote: %.300s (models unknown: %.200s)", r->base,
                 err[0] ? err : "the list is empty");
}

static void models_done(void *ud, const http_result *res)
{
    rchat *r = (rchat *)(void *)((char *)ud - offsetof(rchat, models_body));   /* ud: &r->models_body */
    r->models_req = NULL;
    body_t *b = &r->models_body;
    b->res = *res;
    char err[300];
    set_models(r, b, err, sizeof err);
    free(b->p);
    memset(b, 0, sizeof *b);
    if (err[0]) {
        screen_message(r->s, "/models: %s", err);
        screen_dirty(r->s);
        return;
    }
    size_t cap = 256 + r->n_models * 8, len = 0;
    for (size_t i = 0; i < r->n_models; i++)
        cap += strlen(r->models[i]);
    char *t = malloc(cap);
    if (!t)
        return;
    len += (size_t)snprintf(t, cap, "%zu model%s at %s (the chat uses the one marked *; --model NAME picks another)\n\n",
                            r->n_models, r->n_models == 1 ? "" : "s", r->base);
    for (size_t i = 0; i < r->n_models && len < cap; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s %s\n", strcmp(r->models[i], r->model) ? " " : "*",
                                r->models[i]);
    screen_pager(r->s, "Models", t, len < cap ? len : cap - 1);
    screen_dirty(r->s);
    free(t);
}

/* ---- token texts (the inspector) ---- */

static uint32_t hash_id(int32_t id)
{
    return (uint32_t)id * 2654435761u;
}

static int32_t tok_put(rchat *r, const oai_tok *t)
{
    int32_t id = t->id;
    if (id < 0) {   /* no id from the server: one made from the text (FNV-1a), shown as it is */
        uint32_t h = 2166136261u;
        for (const char *p = t->text; *p; p++)
            h = (h ^ (unsigned char)*p) * 16777619u;
        id = (int32_t)(0x40000000u | (h & 0x3FFFFFFFu));
    }
    if ((r->ntoks + 1) * 2 > r->captoks) {
        size_t nc = r->captoks ? r->captoks * 2 : 1024;
        tokent *nt = calloc(nc, sizeof *nt);
        if (!nt)
            return id;
        for (size_t i = 0; i < r->captoks; i++)
            if (r->toks[i].text) {
                size_t k = hash_id(r->toks[i].id) & (nc - 1);
                while (nt[k].text)
                    k = (k + 1) & (nc - 1);
                nt[k] = r->toks[i];
            }
        free(r->toks);
        r->toks = nt;
        r->captoks = nc;
    }
    size_t k = hash_id(id) & (r->captoks - 1);
    while (r->toks[k].text && r->toks[k].id != id)
        k = (k + 1) & (r->captoks - 1);
    if (!r->toks[k].text && (r->toks[k].text = strdup(t->text))) {
        r->toks[k].id = id;
        r->ntoks++;
    }
    return id;
}

static bool src_piece(void *ctx, int32_t id, char *buf, size_t cap)
{
    rchat *r = ctx;
    if (!r->captoks || !cap)
        return false;
    size_t k = hash_id(id) & (r->captoks - 1);
    while (r->toks[k].text) {
        if (r->toks[k].id == id) {
            snprintf(buf, cap, "%s", r->toks[k].text);
            return true;
        }
        k = (k + 1) & (r->captoks - 1);
    }
    return false;
}

/* ---- a reply: the stream (loop thread) ---- */

static void emit(call *c, const char *text, size_t len, const chs_tokinfo *ti0)
{
    chs_tokinfo ti = ti0 ? *ti0 : (chs_tokinfo){.id = -1};
    ti.off = (uint32_t)c->total;
    ti.len = (uint32_t)len;
    double t = clock_now_s();
    if (!c->t_first)
        c->t_first = t;
    c->t_last = t;
    c->sink->on_token(c->sink->ctx, text, len, &ti);
    c->total += len;
}

static chs_tokinfo tokinfo(rchat *r, const oai_logprob *l)
{
    chs_tokinfo ti = {.id = tok_put(r, &l->tok), .prob = expf(l->tok.logprob)};
    for (int k = 0; k < l->n_top && ti.n_alt < SAMPLER_N_ALT; k++) {
        float p = expf(l->top[k].logprob);
        ti.alt_id[ti.n_alt] = tok_put(r, &l->top[k]);
        ti.alt_prob[ti.n_alt++] = p;
        if (p > 0)
            ti.entropy -= p * logf(p);   /* over the alternatives sent: a lower bound */
    }
    return ti;
}

/* The reply's text: reasoning in a <think> block, then the content, split
 * into the tokens of its logprobs when there are any. */
static void on_chunk(call *c, const oai_chunk *k)
{
    if (k->reasoning_len) {
        if (!c->thinking)
            emit(c, "<think>\n", 8, NULL);
        c->thinking = true;
        emit(c, k->reasoning, k->reasoning_len, NULL);
    }
    if (k->content_len && c->thinking) {
        emit(c, "\n</think>\n\n", 11, NULL);
        c->thinking = false;
    }
    size_t off = 0;
    for (size_t i = 0; i < k->n_lp && k->content; i++) {
        size_t tl = k->lp[i].tok.len, left = k->content_len - off;
        if (tl > left || i + 1 == k->n_lp)
            tl = left;
        chs_tokinfo ti = tokinfo(c->rc, &k->lp[i]);
        emit(c, k->content + off, tl, &ti);
        off += tl;
        c->n_tok++;
    }
    if (off < k->content_len) {
        emit(c, k->content + off, k->content_len - off, NULL);
        if (!k->n_lp)
            c->n_tok++;
    }
    if (k->finish[0])
        snprintf(c->finish, sizeof c->finish, "%s", k->finish);
    if (k->has_usage) {
        c->has_usage = true;
        c->last.prompt_tokens = k->prompt_tokens;
        c->last.completion_tokens = k->completion_tokens;
    }
    if (k->has_timings) {
        c->has_timings = true;
        c->last.prompt_n = k->prompt_n;
        c->last.prompt_ms = k->prompt_ms;
        c->last.cache_n = k->cache_n;
    }
}

static void on_event(void *ud, const oai_event *ev)
{
    call *c = ud;
    if (c->failed || c->done_seen)
        return;
    oai_chunk k;
    char msg[300];
    if (oai_chunk_parse(ev, &k, msg, sizeof msg)) {
        c->failed = true;
        snprintf(c->msg, sizeof c->msg, "%s", msg);
        return;
    }
    if (k.error[0]) {
        c->failed = true;
        snprintf(c->msg, sizeof c->msg, "the server: %s", k.error);
    } else if (k.done) {
        c->done_seen = true;
    } else {
        on_chunk(c, &k);
    }
    oai_chunk_free(&k);
}

static bool call_data(void *ud, long status, const char *p, size_t len)
{
    call *c = ud;
    c->status = status;
    if (status >= 400)
    {
        body_add(&c->err, p, len);   /* the error body (what fits) */
        return true;
    }
    if (oai_sse_feed(&c->sse, p, len, on_event, c)) {
        c->failed = true;
        snprintf(c->msg, sizeof c->msg, "the stream could not be read (an event over %u MiB, or out of memory)",
                 OAI_SSE_MAX_EVENT >> 20);
        return false;
    }
    return !c->failed;
}

/* Under rc->mu. */
static void call_finish(call *c)
{
    c->state = CALL_DONE;
    pthread_cond_signal(&c->cv);
}

static void call_done(void *ud, const http_result *res)
{
    call *c = ud;
    rchat *r = c->rc;
    if (c->thinking)
        emit(c, "\n</think>\n", 10, NULL);
    if (!c->failed) {
        if (res->status >= 400) {
            char t[256];
            oai_error_text(c->err.p ? c->err.p : "", c->err.len, t, sizeof t);
            snprintf(c->msg, sizeof c->msg, "the server answered HTTP %ld: %s", res->status, t);
            c->failed = true;
        } else if (res->err != HTTP_OK) {
            if (c->n_tok)
                snprintf(c->msg, sizeof c->msg, "the stream broke off after %u tokens: %s", c->n_tok, res->msg);
            else
                snprintf(c->msg, sizeof c->msg, "%s", res->msg);
            c->failed = true;
        } else if (!c->done_seen && !c->finish[0]) {
            snprintf(c->msg, sizeof c->msg, "the server closed the stream before the end of the reply%s",
                     oai_sse_pending(&c->sse) ? " (cut inside an event)" : "");
            c->failed = true;
        }
    }
    pthread_mutex_lock(&r->mu);
    c->hr = NULL;
    call_finish(c);
    pthread_mutex_unlock(&r->mu);
}

/* Loop thread: start the queued reply, or cancel the running one. */
static void async_cb(uv_async_t *h)
{
    rchat *r = h->data;
    pthread_mutex_lock(&r->mu);
    call *c = r->cur;
    if (c && c->state == CALL_QUEUED) {
        if (c->cancel_req || r->closed) {
            c->cancelled = true;
            call_finish(c);
        } else {
            char url[1100], err[256];
            snprintf(url, sizeof url, "%s/v1/chat/completions", r->base);
            const char *hd[4];
            http_request q = {.url = url, .method = "POST", .body = c->body, .body_len = strlen(c->body),
                              .headers = headers(r, hd, true), .range_first = -1, .range_last = -1,
                              .connect_timeout_ms = 10000, .idle_timeout_ms = r->timeout_ms};
            http_callbacks cb = {NULL, call_data, call_done};
            c->t0 = clock_now_s();
            c->hr = http_start(r->http, &q, &cb, c, err, sizeof err);
            if (c->hr) {
                c->state = CALL_RUNNING;
            } else {
                c->failed = true;
                snprintf(c->msg, sizeof c->msg, "%s", err);
                call_finish(c);
            }
        }
    } else if (c && c->state == CALL_RUNNING && c->cancel_req) {
        http_cancel(c->hr);   /* the connection is closed now; no callback follows */
        c->t_closed = clock_now_s();
        c->hr = NULL;
        c->cancelled = true;
        call_finish(c);
    }
    pthread_mutex_unlock(&r->mu);
}

/* ---- the chat source ---- */

static void *src_begin(void *ctx, const chs *c, char *msg, size_t cap)
{
    rchat *r = ctx;
    chs_settings stv = chs_get_settings(c), *st = &stv;
    size_t n = chs_count(c), k = 0;
    oai_msg *m = malloc((n + 1) * sizeof *m);
    if (!m) {
        snprintf(msg, cap, "out of memory");
        return NULL;
    }
    if (chs_system(c)[0])
        m[k++] = (oai_msg){"system", chs_system(c), strlen(chs_system(c))};
    for (size_t i = 0; i < n; i++) {
        const chs_msg *cm = chs_at(c, i);
        if (!cm->dropped)
            m[k++] = (oai_msg){cm->role, cm->content, cm->len};
    }
    oai_params p = {.model = r->model, .temperature = st->sp.temp, .top_p = st->sp.top_p, .min_p = st->sp.min_p,
                    .repeat_penalty = st->sp.repeat_penalty, .top_k = st->sp.top_k, .max_tokens = st->n_predict,
                    .have_seed = true, .seed = st->sp.seed, .top_logprobs = TOP_LOGPROBS};
    char *body = oai_request_json(m, k, &p);
    free(m);
    if (!body)
        snprintf(msg, cap, "out of memory");
    return body;
}

static void src_end(void *ctx, void *req)
{
    (void)ctx;
    free(req);
}

/* GGSCOPE_REMOTE_LOG=FILE (tests): for each reply stopped with Esc, a line
 * "esc_close_ms T": from the cancel flag to the request closed on the loop,
 * at most (the worker polls the flag every 10 ms: counted in full). */
static void log_cancel(const call *c)
{
    const char *path = getenv("GGSCOPE_REMOTE_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "esc_close_ms %.1f\n", (c->t_closed - c->t_cancel_seen) * 1e3 + 10.0);
        fclose(f);
    }
}

static int src_generate(void *ctx, void *req, const chs_sink *sink, chs_reply_stats *out, char *msg, size_t cap)
{
    rchat *r = ctx;
    call c = {.rc = r, .body = req, .sink = sink, .state = CALL_QUEUED};
    oai_sse_init(&c.sse);
    pthread_cond_init(&c.cv, NULL);
    pthread_mutex_lock(&r->mu);
    r->cur = &c;
    uv_async_send(&r->async);
    while (c.state != CALL_DONE) {
        if (!c.cancel_req && sink->cancel && atomic_load(sink->cancel)) {
            c.cancel_req = true;
            c.t_cancel_seen = clock_now_s();
            uv_async_send(&r->async);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c.cv, &r->mu, &ts);
    }
    r->cur = NULL;
    pthread_mutex_unlock(&r->mu);
    /* the loop is done with c: the figures of the stream */
    chs_reply_stats st = {.stop = CHS_STOP_EOG};
    st.n_gen = c.has_usage && c.last.completion_tokens ? c.last.completion_tokens : c.n_tok;
    if (c.has_usage) {
        st.n_prompt = c.last.prompt_tokens;
        st.n_eval = st.n_prompt;
    }
    if (c.has_timings) {
        st.n_reused = c.last.cache_n > 0 && c.last.cache_n <= st.n_prompt ? (uint32_t)c.last.cache_n : 0;
        st.n_eval = st.n_prompt - st.n_reused;
        st.t_prompt_s = c.last.prompt_ms / 1e3;
    }
    if (c.t_first) {
        st.t_first_s = c.t_first - c.t0;
        st.t_gen_s = c.t_last - c.t_first;
    }
    if (c.cancelled)
        st.stop = CHS_STOP_CANCEL;
    else if (c.failed)
        st.stop = CHS_STOP_ERROR;
    else if (!strcmp(c.finish, "length"))
        st.stop = CHS_STOP_LIMIT;
    *out = st;
    if (c.failed && !c.cancelled)
        snprintf(msg, cap, "%s", c.msg);
    if (c.t_closed > 0)
        log_cancel(&c);
    oai_sse_free(&c.sse);
    free(c.err.p);
    pthread_cond_destroy(&c.cv);
    return c.failed && !c.cancelled ? -1 : 0;
}

static bool src_command(void *ctx, const char *name, const char *arg)
{
    rchat *r = ctx;
    if (strcmp(name, "/models"))
        return false;
    if (*arg) {   /* /models NAME: the next replies ask for NAME (the body is built on this thread) */
        bool known = r->n_models == 0;   /* no list: the server will say */
        for (size_t i = 0; i < r->n_models && !known; i++)
            known = strcmp(r->models[i], arg) == 0;
        char *m = known ? strdup(arg) : NULL;
        if (!m) {
            if (known)
                screen_message(r->s, "/models: out of memory");
            else
                screen_message(r->s, "/models: the server lists no model '%s' (/models lists them)", arg);
            return true;
        }
        free(r->model);
        r->model = m;
        snprintf(r->status, sizeof r->status, "remote: %.200s at %.300s", r->model, r->base);
        chs_set_detached_status(r->page_c, r->status);
        screen_message(r->s, "the next replies come from %s", r->model);
        return true;
    }
    if (r->models_req || !r->http)
        return true;
    char url[1100], err[256];
    snprintf(url, sizeof url, "%s/v1/models", r->base);
    const char *h[4];
    http_request q = get_request(url, headers(r, h, false));
    http_callbacks cb = {NULL, body_data, models_done};
    r->models_body.res.err = HTTP_OK;
    r->models_req = http_start(r->http, &q, &cb, &r->models_body, err, sizeof err);
    if (!r->models_req)
        screen_message(r->s, "/models: %s", err);
    else
        screen_message(r->s, "/models: asking %s…", r->base);
    return true;
}

/* /props's n_ctx (llama-server), else the models list's figure for the
 * model asked for (vLLM's max_model_len), else 0: the page shows "N tokens". */
static uint32_t src_n_ctx(void *ctx)
{
    const rchat *r = ctx;
    for (size_t i = 0; !r->n_ctx && i < r->n_models; i++)
        if (!strcmp(r->models[i], r->model))
            return r->models_ctx[i];
    return r->n_ctx;
}

static const chat_source SOURCE = {
    .begin = src_begin,
    .generate = src_generate,
    .end = src_end,
    .piece = src_piece,
    .command = src_command,
    .n_ctx = src_n_ctx,
    .no_probs = " token inspector: the server returned no token probabilities (Tab: transcript, i: close)",
};

/* ---- the chat ---- */

static void release_chs(void *ctx)
{
    chs_free(ctx);
}

rchat *rchat_new(const rchat_opts *o, char *err, size_t cap)
{
    if (!http_is_url(o->url)) {
        snprintf(err, cap, "--remote: '%s' is not an http:// or https:// URL", o->url);
        return NULL;
    }
    rchat *r = calloc(1, sizeof *r);
    if (!r)
        goto oom;
    pthread_mutex_init(&r->mu, NULL);
    r->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 120000;
    r->base = strdup(o->url);
    r->model = strdup(o->model ? o->model : "");
    if (!r->base || !r->model)
        goto oom;
    size_t n = strlen(r->base);
    while (n && r->base[n - 1] == '/')
        r->base[--n] = 0;
    if (n >= 3 && !strcmp(r->base + n - 3, "/v1"))
        r->base[n -= 3] = 0;
    if (o->api_key && asprintf(&r->auth, "Authorization: Bearer %s", o->api_key) < 0) {
        r->auth = NULL;
        goto oom;
    }
    ask_server(r);
    r->c = chs_new_detached(r->status, err, cap);
    if (!r->c) {
        rchat_free(r);
        return NULL;
    }
    chs_set_settings(r->c, &o->settings);
    if (o->system)
        chs_set_system(r->c, o->system);
    if (o->session)
        chs_load_file(r->c, o->session);
    return r;
oom:
    snprintf(err, cap, "out of memory");
    rchat_free(r);
    return NULL;
}

int rchat_attach(rchat *r, uv_loop_t *loop, screen *s)
{
    char err[256];
    r->loop = loop;
    r->s = s;
    r->http = http_client_new(loop, err, sizeof err);
    if (!r->http || uv_async_init(loop, &r->async, async_cb) != 0) {
        http_client_free(r->http);
        r->http = NULL;
        return -1;
    }
    r->async.data = r;
    r->async_open = true;
    chat_page_engine pe = {r->base, r->c, NULL, release_chs, r->c, 0};
    r->page_c = r->c;   /* borrowed: /models NAME renames it */
    r->c = NULL;   /* the page's now */
    r->pg = chat_page_new(&pe);
    if (!r->pg)
        return -1;
    chat_page_set_source(r->pg, &SOURCE, r);
    int id = chat_page_attach(r->pg, s, -1);
    if (id >= 0 && strstr(r->status, "models unknown"))
        screen_message(s, "%s", r->status);
    return id;
}

void rchat_show(rchat *r)
{
    if (r && r->pg)
        chat_page_show(r->pg);
}

void rchat_cancel(rchat *r)
{
    if (r && r->pg)
        chat_page_cancel(r->pg);
}

void rchat_close(rchat *r)
{
    if (!r || r->closed)
        return;
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    pthread_mutex_unlock(&r->mu);
    http_client_free(r->http);   /* cancels /models; a reply has ended with the jobs */
    r->http = NULL;
    r->models_req = NULL;
    if (r->async_open)
        uv_close((uv_handle_t *)&r->async, NULL);
}

void rchat_autosave(rchat *r, char *note, size_t cap)
{
    note[0] = 0;
    if (r && r->pg && chat_page_autosave(r->pg, note, cap) == 0)
        note[0] = 0;
}

void rchat_free(rchat *r)
{
    if (!r)
        return;
    chat_page_free(r->pg);
    chs_free(r->c);
    for (size_t i = 0; i < r->captoks; i++)
        free(r->toks[i].text);
    free(r->toks);
    free(r->models_body.p);
    oai_models_free(r->models, r->n_models);
    free(r->models_ctx);
    free(r->base);
    free(r->model);
    if (r->auth) {
        memset(r->auth, 0, strlen(r->auth));   /* the key */
        free(r->auth);
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}
