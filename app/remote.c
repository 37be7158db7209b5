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
} g_net = {.mu = PTHREAD_MUTEX_INITIALIZER};

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

static void fmt_bytes(char *buf, size_t cap, uint64_t n)
{
    if (n < 1024)
        snprintf(buf, cap, "%" PRIu64 " bytes", n);
    else if (n < (uint64_t)1 << 20)
        snprintf(buf, cap, "%.1f KiB", (double)n / 1024.0);
    else if (n < (uint64_t)1 << 30)
        snprintf(buf, cap, "%.1f MiB", (double)n / 1048576.0);
    else
        snprintf(buf, cap, "%.1f GiB", (double)n / 1073741824.0);
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
        fmt_bytes(a, sizeof a, atomic_load(&g_net.bytes));
        fmt_bytes(b, sizeof b, atomic_load(&g_net.opened_size));
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

/* Progress of one read on stderr (a terminal, not under the explorer). */
static void show_progress(const char *url, uint64_t done, uint64_t len, double t0, bool *shown)
{
    if (atomic_load(&g_net.quiet) || !isatty(STDERR_FILENO) || clock_now_s() - t0 < 0.5)
        return;
    char a[32], b[32];
    fmt_bytes(a, sizeof a, done);
    fmt_bytes(b, sizeof b, len);
    const char *name = strrchr(url, '/');
    fprintf(stderr, "\rfetching %.60s: %s of %s\033[K", name ? name + 1 : url, a, b);
    *shown = true;
}

/* gguf_source.read over HTTP range requests (see gguf.h). */
static int64_t net_read(void *ctx, const char *url, uint64_t off, uint64_t len, void *dst, uint64_t *total,
                        const atomic_bool *cancel, gguf_error *err)
{
    (void)ctx;
    uint64_t done = 0;
    double t0 = clock_now_s();
    bool shown = false;
    int64_t rc = 0;
    while (done < len) {
        uint64_t piece = len - done < PIECE ? len - done : PIECE;
        http_request rq = {.url = url, .range_first = (int64_t)(off + done), .range_last = (int64_t)(off + done + piece - 1),
                           .connect_timeout_ms = g_net.timeout_ms, .idle_timeout_ms = g_net.timeout_ms,
                           .follow_redirects = true, .fail_on_status = true};
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
        show_progress(url, done, len, t0, &shown);
    }
    if (shown)
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
