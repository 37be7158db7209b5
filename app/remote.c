/* remote: see remote.h. */
#include "remote.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "clock.h"
#include "http.h"
#include "panel.h"   /* ui_fmt_bytes: the one byte formatter */

#define PIECE ((uint64_t)4 << 20)   /* bytes per request at most: progress between them */

static struct {
    pthread_mutex_t mu;
    bool started, failed;
    uv_loop_t loop;
    uv_async_t quit;
    http_client *client;
    pthread_t thread;
    atomic_bool quiet;
    atomic_uint_least64_t bytes, requests, opened_size;
    long timeout_ms;
    /* the latest read's progress, for remote_progress (under mu; cur_on: running) */
    char cur_name[64];
    uint64_t cur_done, cur_len;
    double cur_t0;
    bool cur_on;
} g_net = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define SHOW_AFTER_S 0.5   /* a read shows progress once it has taken this long */

static void *net_main(void *arg)
{
    (void)arg;
    uv_run(&g_net.loop, UV_RUN_DEFAULT);
    return NULL;
}

static void on_quit(uv_async_t *a)
{
    http_client_free(g_net.client);
    g_net.client = NULL;
    uv_close((uv_handle_t *)a, NULL);
}

/* At exit: stop the network thread, then say what was read. */
static void net_stop(void)
{
    uv_async_send(&g_net.quit);
    pthread_join(g_net.thread, NULL);
    uv_loop_close(&g_net.loop);
    const char *v = getenv("GGSCOPE_VERBOSE");
    if (isatty(STDERR_FILENO) || (v && *v && strcmp(v, "0") != 0)) {
        char a[32], b[32];
        uint64_t reqs = atomic_load(&g_net.requests);
        ui_fmt_bytes(atomic_load(&g_net.bytes), a, sizeof a);
        ui_fmt_bytes(atomic_load(&g_net.opened_size), b, sizeof b);
        fprintf(stderr, "ggscope: read %s of %s in %" PRIu64 " request%s\n", a, b, reqs, reqs == 1 ? "" : "s");
    }
}

static bool net_start(char *err, size_t errn)
{
    pthread_mutex_lock(&g_net.mu);
    bool ok = g_net.started;
    if (!ok && !g_net.failed) {
        const char *t = getenv("GGSCOPE_NET_TIMEOUT");
        g_net.timeout_ms = t && atol(t) > 0 ? atol(t) * 1000 : 30000;
        if (uv_loop_init(&g_net.loop) != 0) {
            snprintf(err, errn, "cannot start the event loop");
        } else if (!(g_net.client = http_client_new(&g_net.loop, err, errn))) {
            uv_loop_close(&g_net.loop);
        } else {
            uv_async_init(&g_net.loop, &g_net.quit, on_quit);
            if (pthread_create(&g_net.thread, NULL, net_main, NULL) != 0) {
                snprintf(err, errn, "cannot start the network thread");
            } else {
                ok = g_net.started = true;
                atexit(net_stop);
            }
        }
        g_net.failed = !ok;   /* handles stay open: the loop is never run again */
    } else if (!ok) {
        snprintf(err, errn, "the network client failed to start");
    }
    pthread_mutex_unlock(&g_net.mu);
    return ok;
}

/* One read's progress: between its requests and, through http's
 * on_progress, within one (the network thread). */
typedef struct {
    const char *url;
    uint64_t base;      /* bytes of the finished requests */
    uint64_t len;
    double t0;
    bool shown;         /* a line is on stderr */
} read_progress;

static const char *url_name(const char *url)
{
    const char *name = strrchr(url, '/');
    return name ? name + 1 : url;
}

/* "fetching NAME: x of y" on stderr (a terminal, not under the explorer),
 * and for remote_progress. */
static void show_progress(read_progress *p, uint64_t done)
{
    pthread_mutex_lock(&g_net.mu);
    snprintf(g_net.cur_name, sizeof g_net.cur_name, "%s", url_name(p->url));
    g_net.cur_done = done;
    g_net.cur_len = p->len;
    g_net.cur_t0 = p->t0;
    g_net.cur_on = true;
    pthread_mutex_unlock(&g_net.mu);
    if (atomic_load(&g_net.quiet) || !isatty(STDERR_FILENO) || clock_now_s() - p->t0 < SHOW_AFTER_S)
        return;
    char a[32], b[32];
    fprintf(stderr, "\rfetching %.60s: %s of %s\033[K", url_name(p->url), ui_fmt_bytes(done, a, sizeof a),
            ui_fmt_bytes(p->len, b, sizeof b));
    p->shown = true;
}

static void on_request_progress(void *ud, int64_t bytes, int64_t total)
{
    (void)total;
    read_progress *p = ud;
    show_progress(p, p->base + (uint64_t)bytes);
}

bool remote_progress(char *buf, size_t cap)
{
    pthread_mutex_lock(&g_net.mu);
    bool on = g_net.cur_on && clock_now_s() - g_net.cur_t0 >= SHOW_AFTER_S;
    if (on) {
        char a[32], b[32];
        snprintf(buf, cap, "fetching %s: %s of %s", g_net.cur_name, ui_fmt_bytes(g_net.cur_done, a, sizeof a),
                 ui_fmt_bytes(g_net.cur_len, b, sizeof b));
    }
    pthread_mutex_unlock(&g_net.mu);
    return on;
}

/* gguf_source.read over HTTP range requests (see gguf.h). */
static int64_t net_read(void *ctx, const char *url, uint64_t off, uint64_t len, void *dst, uint64_t *total,
                        const atomic_bool *cancel, gguf_error *err)
{
    (void)ctx;
    uint64_t done = 0;
    read_progress prog = {.url = url, .len = len, .t0 = clock_now_s()};
    int64_t rc = 0;
    while (done < len) {
        uint64_t piece = len - done < PIECE ? len - done : PIECE;
        prog.base = done;
        http_request rq = {.url = url, .range_first = (int64_t)(off + done), .range_last = (int64_t)(off + done + piece - 1),
                           .connect_timeout_ms = g_net.timeout_ms, .idle_timeout_ms = g_net.timeout_ms,
                           .follow_redirects = true, .fail_on_status = true,
                           .on_progress = on_request_progress, .progress_ud = &prog};
        http_result res;
        int e = http_fetch(g_net.client, &rq, (uint8_t *)dst + done, (size_t)piece, cancel, &res);
        atomic_fetch_add(&g_net.requests, 1);
        if (res.bytes > 0)
            atomic_fetch_add(&g_net.bytes, (uint64_t)res.bytes);
        if (e == HTTP_OK && res.status == 200 && res.content_length == 0 && off + done == 0) {
            *total = 0;   /* an empty file (nginx answers 200): the reader says so */
            break;
        }
        if (res.status >= 200 && res.status < 300 && res.status != 206) {
            err->code = GGUF_EIO;
            rc = -1;
            snprintf(err->msg, sizeof err->msg,
                     "the server ignores range requests (HTTP %ld for bytes=%" PRId64 "-%" PRId64 "): download the file instead",
                     res.status, rq.range_first, rq.range_last);
            break;
        }
        if (e == HTTP_E_STATUS && res.status == 416 && off + done == 0 && res.total_size == 0) {
            *total = 0;   /* an empty file: the reader says so */
            break;
        }
        if (e != HTTP_OK) {
            err->code = e == HTTP_E_STATUS && (res.status == 404 || res.status == 410) ? GGUF_ENOTFOUND : GGUF_EIO;
            if (e == HTTP_E_OTHER && strstr(res.msg, "edirect"))
                snprintf(err->msg, sizeof err->msg, "gave up after following 8 redirects (%.180s)", res.msg);
            else
                snprintf(err->msg, sizeof err->msg, "%s", res.msg);
            rc = -1;
            break;
        }
        if (res.total_size < 0) {
            err->code = GGUF_EIO;
            rc = -1;
            snprintf(err->msg, sizeof err->msg, "the server sent no Content-Range (HTTP %ld; expected 206 with bytes A-B/SIZE)",
                     res.status);
            break;
        }
        *total = (uint64_t)res.total_size;
        done += (uint64_t)res.bytes;
        if ((uint64_t)res.bytes < piece)
            break;   /* the end of the file (or short: the reader says so) */
        show_progress(&prog, done);
    }
    pthread_mutex_lock(&g_net.mu);
    g_net.cur_on = false;
    pthread_mutex_unlock(&g_net.mu);
    if (prog.shown)
        fputs("\r\033[K", stderr);
    return rc < 0 ? -1 : (int64_t)done;
}

gguf_file *remote_open(const char *url, gguf_error *err)
{
    char msg[256];
    if (!net_start(msg, sizeof msg)) {
        memset(err, 0, sizeof *err);
        err->code = GGUF_EIO;
        snprintf(err->path, sizeof err->path, "%s", url);
        snprintf(err->msg, sizeof err->msg, "%s", msg);
        return NULL;
    }
    gguf_source src = {net_read, NULL, 0};
    gguf_file *f = gguf_open_source(&src, url, err);
    if (f)
        atomic_fetch_add(&g_net.opened_size, gguf_file_size(f));
    return f;
}

void remote_set_quiet(bool quiet)
{
    atomic_store(&g_net.quiet, quiet);
}
