/* http: libcurl's multi-socket interface on a libuv loop (see http.h).
 *
 * curl tells us which sockets to watch (on_socket) and when to wake it
 * (on_timer_set); libuv watches them (uv_poll_t) and wakes curl
 * (curl_multi_socket_action); finished transfers are collected after each
 * wake (collect_done). Requests from other threads and deferred
 * cancellations reach the loop through one uv_async_t. */
#include "http.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sock_ctx {
    uv_poll_t poll;
    curl_socket_t fd;
    http_client *c;
    struct sock_ctx *next;
} sock_ctx;

typedef struct fetch_job {
    http_client *c;
    const http_request *rq;
    char *buf;
    size_t cap;
    http_result res;
    bool too_big, want_cancel, finished;
    http_req *req;
    uv_cond_t cond;
    struct fetch_job *next;
} fetch_job;

struct http_req {
    http_client *c;
    CURL *easy;
    struct curl_slist *hdrs;
    char *body;
    http_callbacks cb;
    void *ud;
    http_result res;
    uint64_t t0_ns;
    void (*on_progress)(void *ud, int64_t bytes, int64_t total);
    void *progress_ud;
    uint64_t progress_ns;   /* the last on_progress call (t0_ns before the first) */
    long connect_ms, idle_ms;
    bool cancelled, stopped, got_body, finishing;
    char hostport[128];
    char errbuf[CURL_ERROR_SIZE];
    http_req *next;   /* c->reqs, then c->dead */
};

struct http_client {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;
    uv_async_t async;
    uv_mutex_t mu;          /* guards inbox, fetching and every fetch_job */
    fetch_job *inbox;       /* submitted by other threads, not started */
    fetch_job *fetching;    /* started on the loop */
    http_req *reqs;         /* running */
    http_req *dead;         /* cancelled, freed by the async callback */
    sock_ctx *socks;
    int active;
    int open_handles;       /* timer + async until both closed */
    bool freeing;
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static CURLcode g_init_rc = CURLE_FAILED_INIT;
static void global_init(void) { g_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

bool http_is_url(const char *s)
{
    return s && (strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0);
}

/* "host:port" of a URL for messages (no credentials, no path). */
static void url_hostport(const char *url, char *out, size_t n)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *at = p, *end = p + strcspn(p, "/?#");
    for (const char *q = p; q < end; q++)
        if (*q == '@') at = q + 1;
    size_t len = (size_t)(end - at);
    if (len >= n) len = n - 1;
    memcpy(out, at, len);
    out[len] = 0;
}

/* ---------------------------------------------------------------- sockets */

static void collect_done(http_client *c);

static void on_poll(uv_poll_t *h, int status, int events)
{
    sock_ctx *s = h->data;
    int flags = 0, running = 0;
    if (status < 0) flags |= CURL_CSELECT_ERR;
    if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    http_client *c = s->c;
    curl_multi_socket_action(c->multi, s->fd, flags, &running);
    collect_done(c);
}

static void sock_closed(uv_handle_t *h) { free(h->data); }

static void sock_close(http_client *c, sock_ctx *s)
{
    for (sock_ctx **pp = &c->socks; *pp; pp = &(*pp)->next)
        if (*pp == s) { *pp = s->next; break; }
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, sock_closed);
}

static int on_socket(CURL *e, curl_socket_t fd, int action, void *userp, void *socketp)
{
    (void)e;
    http_client *c = userp;
    sock_ctx *s = socketp;
    if (action == CURL_POLL_REMOVE) {
        if (s) {
            curl_multi_assign(c->multi, fd, NULL);
            sock_close(c, s);
        }
        return 0;
    }
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return -1;
        s->fd = fd;
        s->c = c;
        if (uv_poll_init_socket(c->loop, &s->poll, fd) != 0) { free(s); return -1; }
        s->poll.data = s;
        s->next = c->socks;
        c->socks = s;
        curl_multi_assign(c->multi, fd, s);
    }
    int ev = 0;
    if (action & CURL_POLL_IN) ev |= UV_READABLE;
    if (action & CURL_POLL_OUT) ev |= UV_WRITABLE;
    uv_poll_start(&s->poll, ev, on_poll);
    return 0;
}

static void on_timeout(uv_timer_t *t)
{
    http_client *c = t->data;
    int running = 0;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    collect_done(c);
}

static int on_timer_set(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    http_client *c = userp;
    if (c->freeing) return 0;
    if (timeout_ms < 0) uv_timer_stop(&c->timer);
    else uv_timer_start(&c->timer, on_timeout, (uint64_t)timeout_ms, 0);
    return 0;
}

/* ---------------------------------------------------------------- requests */

static size_t on_header_cb(char *p, size_t size, size_t nitems, void *ud)
{
    http_req *r = ud;
    size_t n = size * nitems, len = n;
    if (r->cancelled) return 0;
    while (len && (p[len - 1] == '\n' || p[len - 1] == '\r')) len--;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {   /* a new response (redirects) */
        r->res.content_length = -1;
        r->res.total_size = -1;
    } else if (len > 15 && strncasecmp(p, "content-length:", 15) == 0) {
        char tmp[32];
        size_t k = len - 15 < sizeof tmp - 1 ? len - 15 : sizeof tmp - 1;
        memcpy(tmp, p + 15, k);
        tmp[k] = 0;
        char *end;
        long long v = strtoll(tmp, &end, 10);
        if (end != tmp && v >= 0) r->res.content_length = v;
    } else if (len > 14 && strncasecmp(p, "content-range:", 14) == 0) {
        const char *slash = memchr(p, '/', len);
        if (slash && slash + 1 < p + len && slash[1] != '*') {
            char tmp[32];
            size_t k = (size_t)(p + len - slash - 1);
            if (k > sizeof tmp - 1) k = sizeof tmp - 1;
            memcpy(tmp, slash + 1, k);
            tmp[k] = 0;
            char *end;
            long long v = strtoll(tmp, &end, 10);
            if (end != tmp && v >= 0) r->res.total_size = v;
        }
    }
    if (r->cb.on_header && len) {
        long st = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &st);
        r->cb.on_header(r->ud, st, p, len);
    }
    return n;
}

static size_t on_write_cb(char *p, size_t size, size_t nmemb, void *ud)
{
    http_req *r = ud;
    size_t n = size * nmemb;
    if (r->cancelled || r->stopped) return 0;
    if (!r->got_body) {
        r->got_body = true;
        r->res.ttfb_s = (double)(uv_hrtime() - r->t0_ns) * 1e-9;
    }
    long st = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &st);
    r->res.bytes += (int64_t)n;
    if (r->cb.on_data && !r->cb.on_data(r->ud, st, p, n)) {
        r->stopped = true;
        return 0;
    }
    return n;
}

/* libcurl's progress callback (the loop thread, inside curl's calls):
 * on_progress, throttled to one call per HTTP_PROGRESS_MS. */
static int on_xferinfo(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dlnow, (void)ultotal, (void)ulnow;
    http_req *r = ud;
    if (r->cancelled || r->stopped || !r->got_body)
        return 0;
    uint64_t now = uv_hrtime();
    if (now - r->progress_ns < (uint64_t)HTTP_PROGRESS_MS * 1000000u)
        return 0;
    r->progress_ns = now;
    r->on_progress(r->progress_ud, r->res.bytes, dltotal > 0 ? (int64_t)dltotal : r->res.content_length);
    return 0;
}

static void req_free(http_req *r)
{
    if (!r) return;
    if (r->easy) curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->hdrs);
    free(r->body);
    free(r);
}

static void unlink_req(http_req **list, http_req *r)
{
    for (http_req **pp = list; *pp; pp = &(*pp)->next)
        if (*pp == r) { *pp = r->next; r->next = NULL; return; }
}

/* The result of a finished transfer, as one line for a user. */
static void fill_result(http_req *r, CURLcode rc)
{
    http_result *res = &r->res;
    long st = 0, os_errno = 0;
    double connect_s = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &os_errno);
    curl_easy_getinfo(r->easy, CURLINFO_CONNECT_TIME, &connect_s);
    res->status = st;
    res->total_s = (double)(uv_hrtime() - r->t0_ns) * 1e-9;
    res->msg[0] = 0;
    const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_OK:
        res->err = HTTP_OK;
        break;
    case CURLE_WRITE_ERROR:
        if (r->stopped) {
            res->err = HTTP_E_CANCELLED;
            snprintf(res->msg, sizeof res->msg, "stopped");
            break;
        }
        res->err = HTTP_E_OTHER;
        snprintf(res->msg, sizeof res->msg, "%.250s", detail);
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
        res->err = HTTP_E_CONNECT;
        snprintf(res->msg, sizeof res->msg, "unknown host (%s)", r->hostport);
        break;
    case CURLE_COULDNT_CONNECT:
        res->err = HTTP_E_CONNECT;
        if (os_errno == ECONNREFUSED)
            snprintf(res->msg, sizeof res->msg, "connection refused (%s)", r->hostport);
        else
            snprintf(res->msg, sizeof res->msg, "cannot connect to %.100s: %.120s", r->hostport,
                     os_errno ? strerror((int)os_errno) : detail);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        res->err = HTTP_E_TIMEOUT;
        if (connect_s <= 0)
            snprintf(res->msg, sizeof res->msg, "could not connect to %s within %ld s", r->hostport,
                     (r->connect_ms + 999) / 1000);
        else
            snprintf(res->msg, sizeof res->msg, "timed out: no data from %s for %ld s", r->hostport,
                     (r->idle_ms + 999) / 1000);
        break;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
        res->err = HTTP_E_TRUNCATED;
        if (res->content_length >= 0)
            snprintf(res->msg, sizeof res->msg, "the body was cut short: %lld of %lld bytes",
                     (long long)res->bytes, (long long)res->content_length);
        else
            snprintf(res->msg, sizeof res->msg, "the connection to %s was lost after %lld bytes",
                     r->hostport, (long long)res->bytes);
        break;
    case CURLE_GOT_NOTHING:
        res->err = HTTP_E_TRUNCATED;
        snprintf(res->msg, sizeof res->msg, "%s closed the connection without a response", r->hostport);
        break;
    default:
        res->err = HTTP_E_OTHER;
        snprintf(res->msg, sizeof res->msg, "%.250s", detail);
        break;
    }
}

static void collect_done(http_client *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        http_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (!r || r->cancelled) continue;   /* freed by the async callback */
        CURLcode rc = m->data.result;
        curl_multi_remove_handle(c->multi, r->easy);
        unlink_req(&c->reqs, r);
        c->active--;
        fill_result(r, rc);
        r->finishing = true;   /* http_cancel(r) from on_done is a no-op */
        if (r->cb.on_done) r->cb.on_done(r->ud, &r->res);
        req_free(r);
    }
}

http_req *http_start(http_client *c, const http_request *rq, const http_callbacks *cb, void *ud,
                     char *err, size_t errn)
{
    if (!http_is_url(rq->url)) {
        snprintf(err, errn, "not an http:// or https:// URL");
        return NULL;
    }
    http_req *r = calloc(1, sizeof *r);
    if (!r || !(r->easy = curl_easy_init())) {
        free(r);
        snprintf(err, errn, "out of memory");
        return NULL;
    }
    r->c = c;
    if (cb) r->cb = *cb;
    r->ud = ud;
    r->res.content_length = -1;
    r->res.total_size = -1;
    r->connect_ms = rq->connect_timeout_ms > 0 ? rq->connect_timeout_ms : 10000;
    r->idle_ms = rq->idle_timeout_ms > 0 ? rq->idle_timeout_ms : 30000;
    url_hostport(rq->url, r->hostport, sizeof r->hostport);
    CURL *e = r->easy;
    bool ok = curl_easy_setopt(e, CURLOPT_URL, rq->url) == CURLE_OK;
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, rq->follow_redirects ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 8L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, r->connect_ms);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (r->idle_ms + 999) / 1000);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "ggscope/" GGSCOPE_VERSION);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");   /* identity: byte ranges stay exact */
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    if (rq->on_progress) {
        r->on_progress = rq->on_progress;
        r->progress_ud = rq->progress_ud;
        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_xferinfo);
        curl_easy_setopt(e, CURLOPT_XFERINFODATA, r);
        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    }
    if (rq->range_first >= 0) {
        char range[64];
        if (rq->range_last >= rq->range_first)
            snprintf(range, sizeof range, "%lld-%lld", (long long)rq->range_first, (long long)rq->range_last);
        else
            snprintf(range, sizeof range, "%lld-", (long long)rq->range_first);
        curl_easy_setopt(e, CURLOPT_RANGE, range);
    }
    for (const char *const *h = rq->headers; ok && h && *h; h++) {
        struct curl_slist *n = curl_slist_append(r->hdrs, *h);
        if (!n) ok = false; else r->hdrs = n;
    }
    if (r->hdrs) curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
    if (ok && rq->body) {
        r->body = malloc(rq->body_len ? rq->body_len : 1);
        if (!r->body) ok = false;
        else {
            memcpy(r->body, rq->body, rq->body_len);
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
        }
    }
    if (ok && rq->method) ok = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rq->method) == CURLE_OK;
    if (!ok) {
        snprintf(err, errn, "cannot set up the request to %s", r->hostport);
        req_free(r);
        return NULL;
    }
    r->t0_ns = r->progress_ns = uv_hrtime();
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        snprintf(err, errn, "cannot start the request to %s", r->hostport);
        req_free(r);
        return NULL;
    }
    r->next = c->reqs;
    c->reqs = r;
    c->active++;
    return r;
}

void http_cancel(http_req *r)
{
    if (!r || r->cancelled || r->finishing) return;
    http_client *c = r->c;
    r->cancelled = true;
    unlink_req(&c->reqs, r);
    c->active--;
    r->next = c->dead;
    c->dead = r;
    uv_async_send(&c->async);   /* never remove a handle inside curl's callbacks */
}

/* ---------------------------------------------------------------- fetch */

static bool fetch_data(void *ud, long status, const char *p, size_t n)
{
    (void)status;
    fetch_job *j = ud;   /* only the loop writes buf until finished */
    if (n > j->cap - (size_t)j->res.bytes) {
        j->too_big = true;
        return false;
    }
    memcpy(j->buf + j->res.bytes, p, n);
    j->res.bytes += (int64_t)n;
    return true;
}

static void fetch_finish_locked(http_client *c, fetch_job *j)
{
    for (fetch_job **pp = &c->fetching; *pp; pp = &(*pp)->next)
        if (*pp == j) { *pp = j->next; break; }
    j->finished = true;
    j->req = NULL;
    uv_cond_signal(&j->cond);
}

static void fetch_done(void *ud, const http_result *r)
{
    fetch_job *j = ud;
    http_client *c = NULL;
    int64_t got = j->res.bytes;
    j->res = *r;
    j->res.bytes = got;
    if (j->too_big) {
        j->res.err = HTTP_E_TOO_BIG;
        snprintf(j->res.msg, sizeof j->res.msg, "the response is larger than %zu bytes", j->cap);
    } else if (j->res.err == HTTP_OK && j->rq->fail_on_status && j->res.status >= 400) {
        j->res.err = HTTP_E_STATUS;
        snprintf(j->res.msg, sizeof j->res.msg, "HTTP %ld%s", j->res.status,
                 j->res.status == 404 ? " Not Found" : j->res.status == 401 ? " Unauthorized"
                 : j->res.status == 403 ? " Forbidden" : j->res.status == 416 ? " Range Not Satisfiable"
                 : j->res.status >= 500 ? " server error" : "");
    }
    c = j->c;
    uv_mutex_lock(&c->mu);
    fetch_finish_locked(c, j);
    uv_mutex_unlock(&c->mu);
}

static void on_async(uv_async_t *a)
{
    http_client *c = a->data;
    while (c->dead) {   /* deferred cancellations */
        http_req *r = c->dead;
        c->dead = r->next;
        curl_multi_remove_handle(c->multi, r->easy);
        req_free(r);
    }
    uv_mutex_lock(&c->mu);
    for (fetch_job *j = c->fetching, *nx; j; j = nx) {
        nx = j->next;
        if (!j->want_cancel) continue;
        http_cancel(j->req);
        j->res.err = HTTP_E_CANCELLED;
        snprintf(j->res.msg, sizeof j->res.msg, "stopped");
        fetch_finish_locked(c, j);
    }
    fetch_job *in = c->inbox;
    c->inbox = NULL;
    while (in) {
        fetch_job *j = in;
        in = j->next;
        if (j->want_cancel) {
            j->res.err = HTTP_E_CANCELLED;
            snprintf(j->res.msg, sizeof j->res.msg, "stopped");
            j->finished = true;
            uv_cond_signal(&j->cond);
            continue;
        }
        static const http_callbacks fcb = {.on_data = fetch_data, .on_done = fetch_done};
        char err[200];
        j->req = http_start(c, j->rq, &fcb, j, err, sizeof err);
        if (!j->req) {
            j->res.err = HTTP_E_OTHER;
            snprintf(j->res.msg, sizeof j->res.msg, "%s", err);
            j->finished = true;
            uv_cond_signal(&j->cond);
            continue;
        }
        j->next = c->fetching;
        c->fetching = j;
    }
    uv_mutex_unlock(&c->mu);
    if (c->dead) uv_async_send(&c->async);   /* cancelled just now */
}

int http_fetch(http_client *c, const http_request *rq, void *buf, size_t cap,
               const atomic_bool *cancel, http_result *res)
{
    fetch_job j = {.c = c, .rq = rq, .buf = buf, .cap = cap};
    j.res.content_length = j.res.total_size = -1;
    if (uv_cond_init(&j.cond) != 0) {
        memset(res, 0, sizeof *res);
        res->err = HTTP_E_OTHER;
        snprintf(res->msg, sizeof res->msg, "out of resources");
        return res->err;
    }
    uv_mutex_lock(&c->mu);
    if (c->freeing) {
        j.res.err = HTTP_E_CANCELLED;
        snprintf(j.res.msg, sizeof j.res.msg, "the network client is closed");
        j.finished = true;
    } else {
        j.next = c->inbox;
        c->inbox = &j;
        uv_async_send(&c->async);
    }
    while (!j.finished) {
        if (uv_cond_timedwait(&j.cond, &c->mu, 20 * 1000000ull) != 0 && cancel &&
            atomic_load(cancel) && !j.want_cancel) {
            j.want_cancel = true;
            uv_async_send(&c->async);
        }
    }
    uv_mutex_unlock(&c->mu);
    uv_cond_destroy(&j.cond);
    *res = j.res;
    return res->err;
}

/* ---------------------------------------------------------------- client */

http_client *http_client_new(uv_loop_t *loop, char *err, size_t errn)
{
    pthread_once(&g_once, global_init);
    if (g_init_rc != CURLE_OK) {
        snprintf(err, errn, "libcurl failed to start: %s", curl_easy_strerror(g_init_rc));
        return NULL;
    }
    http_client *c = calloc(1, sizeof *c);
    if (!c || !(c->multi = curl_multi_init()) || uv_mutex_init(&c->mu) != 0) {
        if (c && c->multi) curl_multi_cleanup(c->multi);
        free(c);
        snprintf(err, errn, "out of memory");
        return NULL;
    }
    c->loop = loop;
    uv_timer_init(loop, &c->timer);
    c->timer.data = c;
    uv_async_init(loop, &c->async, on_async);
    c->async.data = c;
    c->open_handles = 2;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer_set);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    return c;
}

int http_client_active(const http_client *c) { return c ? c->active : 0; }

static void client_handle_closed(uv_handle_t *h)
{
    http_client *c = h->data;
    if (--c->open_handles == 0) {
        uv_mutex_destroy(&c->mu);
        free(c);
    }
}

void http_client_free(http_client *c)
{
    if (!c) return;
    uv_mutex_lock(&c->mu);
    c->freeing = true;
    for (fetch_job *j = c->inbox, *nx; j; j = nx) {
        nx = j->next;
        j->res.err = HTTP_E_CANCELLED;
        snprintf(j->res.msg, sizeof j->res.msg, "the network client is closed");
        j->finished = true;
        uv_cond_signal(&j->cond);
    }
    c->inbox = NULL;
    for (fetch_job *j = c->fetching, *nx; j; j = nx) {
        nx = j->next;
        j->res.err = HTTP_E_CANCELLED;
        snprintf(j->res.msg, sizeof j->res.msg, "the network client is closed");
        j->finished = true;
        uv_cond_signal(&j->cond);
    }
    c->fetching = NULL;
    uv_mutex_unlock(&c->mu);
    for (http_req *lists[2] = {c->reqs, c->dead}, **l = lists; l < lists + 2; l++)
        while (*l) {
            http_req *r = *l;
            *l = r->next;
            curl_multi_remove_handle(c->multi, r->easy);
            req_free(r);
        }
    c->reqs = c->dead = NULL;
    curl_multi_cleanup(c->multi);
    c->multi = NULL;
    while (c->socks) sock_close(c, c->socks);
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, client_handle_closed);
    uv_close((uv_handle_t *)&c->async, client_handle_closed);
}
