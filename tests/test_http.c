/* test_http: app/http.c (libcurl multi-socket on a libuv loop) against a small
 * scripted HTTP server on 127.0.0.1 run by this test: ranges, a server that
 * ignores ranges, 404, a truncated body, silence (timeout), cancellation,
 * streaming callbacks on the loop thread, connection refused, progress
 * within a request (throttled). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "http.h"

static int g_listen = -1;
static int g_port;
static char g_pattern[1000];

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return;
        p += k;
        n -= (size_t)k;
    }
}

static void sendf(int fd, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    send_all(fd, buf, (size_t)n);
}

static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char req[2048];
    size_t n = 0;
    while (n < sizeof req - 1) {
        ssize_t k = recv(fd, req + n, sizeof req - 1 - n, 0);
        if (k <= 0) break;
        n += (size_t)k;
        req[n] = 0;
        if (strstr(req, "\r\n\r\n")) break;
    }
    req[n] = 0;
    char path[256] = "";
    sscanf(req, "%*s %255s", path);
    if (strcmp(path, "/range") == 0) {
        long a = 0, b = 999;
        const char *r = strstr(req, "Range: bytes=");
        if (r) sscanf(r, "Range: bytes=%ld-%ld", &a, &b);
        sendf(fd, "HTTP/1.1 206 Partial Content\r\nContent-Length: %ld\r\n"
                  "Content-Range: bytes %ld-%ld/1000\r\nConnection: close\r\n\r\n", b - a + 1, a, b);
        send_all(fd, g_pattern + a, (size_t)(b - a + 1));
    } else if (strcmp(path, "/norange") == 0) {
        sendf(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n");
        send_all(fd, g_pattern, 1000);
    } else if (strcmp(path, "/trunc") == 0) {
        sendf(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n0123456789");
    } else if (strcmp(path, "/silent") == 0) {
        sleep(3);
    } else if (strcmp(path, "/chunks") == 0) {
        sendf(fd, "HTTP/1.1 200 OK\r\nContent-Length: 30\r\nConnection: close\r\n\r\n");
        for (int i = 0; i < 3; i++) {
            sendf(fd, "data:%03d\n\n", i);   /* 10 bytes */
            usleep(60000);
        }
    } else if (strcmp(path, "/drip") == 0) {
        sendf(fd, "HTTP/1.1 200 OK\r\nContent-Length: 600\r\nConnection: close\r\n\r\n");
        for (int i = 0; i < 20; i++) {
            send_all(fd, g_pattern + 30 * i, 30);
            usleep(30000);
        }
    } else {
        sendf(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope");
    }
    close(fd);
    return NULL;
}

static void *server_main(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(g_listen, NULL, NULL);
        if (fd < 0) return NULL;
        pthread_t t;
        if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd) == 0) pthread_detach(t);
        else close(fd);
    }
}

static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

/* ---- a loop on the main thread, a worker calling http_fetch ---- */

typedef struct {
    http_client *c;
    uv_async_t stop;
    void (*body)(http_client *c);
} fixture;

static void stop_cb(uv_async_t *a)
{
    fixture *f = a->data;
    http_client_free(f->c);
    uv_close((uv_handle_t *)&f->stop, NULL);
}

static void worker(void *arg)
{
    fixture *f = arg;
    f->body(f->c);
    uv_async_send(&f->stop);
}

static void run_on_worker(void (*body)(http_client *c))
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    fixture f = {.body = body};
    char err[200];
    f.c = http_client_new(&loop, err, sizeof err);
    assert_non_null(f.c);
    uv_async_init(&loop, &f.stop, stop_cb);
    f.stop.data = &f;
    uv_thread_t t;
    assert_int_equal(uv_thread_create(&t, worker, &f), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_thread_join(&t);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static char g_url[256];
static const char *url(const char *path)
{
    snprintf(g_url, sizeof g_url, "http://127.0.0.1:%d%s", g_port, path);
    return g_url;
}

static void body_range(http_client *c)
{
    char buf[64];
    http_result r;
    http_request rq = {.url = url("/range"), .range_first = 100, .range_last = 163};
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, NULL, &r), HTTP_OK);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.bytes, 64);
    assert_int_equal(r.total_size, 1000);
    assert_int_equal(r.content_length, 64);
    assert_memory_equal(buf, g_pattern + 100, 64);
}

static void body_norange(http_client *c)
{
    char buf[64];
    http_result r;
    http_request rq = {.url = url("/norange"), .range_first = 0, .range_last = 63};
    /* a server that ignores the range answers 200 with the whole body */
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, NULL, &r), HTTP_E_TOO_BIG);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.msg, "larger than 64 bytes"));
}

static void body_404(http_client *c)
{
    char buf[64];
    http_result r;
    http_request rq = {.url = url("/missing.gguf"), .range_first = -1, .fail_on_status = true};
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, NULL, &r), HTTP_E_STATUS);
    assert_string_equal(r.msg, "HTTP 404 Not Found");
    rq.fail_on_status = false;
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, NULL, &r), HTTP_OK);
    assert_int_equal(r.status, 404);
    assert_memory_equal(buf, "nope", 4);
}

static void body_trunc(http_client *c)
{
    char buf[200];
    http_result r;
    http_request rq = {.url = url("/trunc"), .range_first = -1};
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, NULL, &r), HTTP_E_TRUNCATED);
    assert_string_equal(r.msg, "the body was cut short: 10 of 100 bytes");
}

static void body_timeout(http_client *c)
{
    char buf[16];
    http_result r;
    http_request rq = {.url = url("/silent"), .range_first = -1, .idle_timeout_ms = 1000};
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, NULL, &r), HTTP_E_TIMEOUT);
    assert_non_null(strstr(r.msg, "timed out: no data from 127.0.0.1:"));
    assert_true(r.total_s < 2.9);
}

static atomic_bool g_cancel;
static void *raise_cancel(void *arg)
{
    (void)arg;
    usleep(100000);
    atomic_store(&g_cancel, true);
    return NULL;
}

static void body_cancel(http_client *c)
{
    char buf[16];
    http_result r;
    http_request rq = {.url = url("/silent"), .range_first = -1};
    atomic_store(&g_cancel, false);
    pthread_t t;
    pthread_create(&t, NULL, raise_cancel, NULL);
    uint64_t t0 = uv_hrtime();
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, &g_cancel, &r), HTTP_E_CANCELLED);
    double s = (double)(uv_hrtime() - t0) * 1e-9;
    pthread_join(t, NULL);
    assert_true(s >= 0.09 && s < 0.5);
}

static void body_refused(http_client *c)
{
    int port, fd = listen_loopback(&port);
    assert_true(fd >= 0);
    close(fd);   /* nobody listens there now */
    char u[64], buf[16];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/x", port);
    http_result r;
    http_request rq = {.url = u, .range_first = -1};
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, NULL, &r), HTTP_E_CONNECT);
    char want[64];
    snprintf(want, sizeof want, "connection refused (127.0.0.1:%d)", port);
    assert_string_equal(r.msg, want);
}

/* on_progress: within one request, on the loop thread, throttled */
typedef struct {
    int n;
    int64_t bytes[64], total[64];
    uint64_t t_ns[64];
} prog_log;

static void on_prog(void *ud, int64_t bytes, int64_t total)
{
    prog_log *p = ud;
    if (p->n < 64) {
        p->bytes[p->n] = bytes;
        p->total[p->n] = total;
        p->t_ns[p->n++] = uv_hrtime();
    }
}

static void body_progress(http_client *c)
{
    char buf[600];
    http_result r;
    prog_log p = {0};
    uint64_t t0 = uv_hrtime();
    http_request rq = {.url = url("/drip"), .range_first = -1, .on_progress = on_prog, .progress_ud = &p};
    assert_int_equal(http_fetch(c, &rq, buf, sizeof buf, NULL, &r), HTTP_OK);
    assert_int_equal(r.bytes, 600);
    assert_memory_equal(buf, g_pattern, 600);
    /* 20 pieces over ~600 ms: a few calls, 100 ms apart at least, growing */
    assert_true(p.n >= 3 && p.n <= 20);
    for (int i = 0; i < p.n; i++) {
        assert_int_equal(p.total[i], 600);
        assert_true(p.bytes[i] > 0 && p.bytes[i] <= 600);
        uint64_t prev = i ? p.t_ns[i - 1] : t0;
        assert_true(p.t_ns[i] - prev >= (uint64_t)HTTP_PROGRESS_MS * 1000000u - 2000000u);
        if (i)
            assert_true(p.bytes[i] > p.bytes[i - 1]);
    }
    assert_true(p.bytes[0] < 600);
    /* a quick request reports nothing */
    prog_log q = {0};
    http_request rq2 = {.url = url("/range"), .range_first = 0, .range_last = 99, .on_progress = on_prog,
                        .progress_ud = &q};
    assert_int_equal(http_fetch(c, &rq2, buf, sizeof buf, NULL, &r), HTTP_OK);
    assert_int_equal(q.n, 0);
}

static void test_range(void **s) { (void)s; run_on_worker(body_range); }
static void test_norange(void **s) { (void)s; run_on_worker(body_norange); }
static void test_404(void **s) { (void)s; run_on_worker(body_404); }
static void test_trunc(void **s) { (void)s; run_on_worker(body_trunc); }
static void test_timeout(void **s) { (void)s; run_on_worker(body_timeout); }
static void test_cancel(void **s) { (void)s; run_on_worker(body_cancel); }
static void test_refused(void **s) { (void)s; run_on_worker(body_refused); }
static void test_progress(void **s) { (void)s; run_on_worker(body_progress); }

/* ---- streaming on the loop thread: on_data per piece, on_done once ---- */

typedef struct {
    int pieces, done;
    char text[64];
    size_t len;
    http_result res;
    http_client *c;
} stream_state;

static bool st_data(void *ud, long status, const char *p, size_t n)
{
    stream_state *s = ud;
    assert_int_equal(status, 200);
    s->pieces++;
    if (s->len + n < sizeof s->text) memcpy(s->text + s->len, p, n), s->len += n;
    return true;
}

static void st_done(void *ud, const http_result *r)
{
    stream_state *s = ud;
    s->done++;
    s->res = *r;
    http_client_free(s->c);
}

static void test_stream(void **st)
{
    (void)st;
    uv_loop_t loop;
    uv_loop_init(&loop);
    char err[200];
    stream_state s = {0};
    s.c = http_client_new(&loop, err, sizeof err);
    http_request rq = {.url = url("/chunks"), .range_first = -1};
    http_callbacks cb = {.on_data = st_data, .on_done = st_done};
    assert_non_null(http_start(s.c, &rq, &cb, &s, err, sizeof err));
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(s.done, 1);
    assert_int_equal(s.res.err, HTTP_OK);
    assert_true(s.pieces >= 2);   /* the pieces arrived 60 ms apart */
    s.text[s.len] = 0;
    assert_string_equal(s.text, "data:000\n\ndata:001\n\ndata:002\n\n");
    assert_true(s.res.ttfb_s < s.res.total_s);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* http_cancel from inside on_data: no more callbacks, nothing leaks. */
static bool cancel_data(void *ud, long status, const char *p, size_t n)
{
    (void)status, (void)p, (void)n;
    stream_state *s = ud;
    s->pieces++;
    return true;
}

static http_req *g_req;
static void cancel_timer(uv_timer_t *t)
{
    stream_state *s = t->data;
    http_cancel(g_req);
    http_client_free(s->c);
    uv_close((uv_handle_t *)t, NULL);
}

static void test_cancel_on_loop(void **st)
{
    (void)st;
    uv_loop_t loop;
    uv_loop_init(&loop);
    char err[200];
    stream_state s = {0};
    s.c = http_client_new(&loop, err, sizeof err);
    http_request rq = {.url = url("/chunks"), .range_first = -1};
    http_callbacks cb = {.on_data = cancel_data, .on_done = st_done};
    g_req = http_start(s.c, &rq, &cb, &s, err, sizeof err);
    assert_non_null(g_req);
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    t.data = &s;
    uv_timer_start(&t, cancel_timer, 80, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(s.done, 0);
    assert_true(s.pieces >= 1 && s.pieces < 3);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_is_url(void **st)
{
    (void)st;
    assert_true(http_is_url("http://x/y.gguf"));
    assert_true(http_is_url("https://huggingface.co/a/b.gguf"));
    assert_false(http_is_url("model.gguf"));
    assert_false(http_is_url("ftp://x/y"));
    assert_false(http_is_url(NULL));
}

int main(void)
{
    for (size_t i = 0; i < sizeof g_pattern; i++) g_pattern[i] = (char)('a' + (i * 7 + i / 26) % 26);
    g_listen = listen_loopback(&g_port);
    if (g_listen < 0) {
        fprintf(stderr, "SKIP: cannot listen on 127.0.0.1\n");
        return 0;
    }
    pthread_t srv;
    pthread_create(&srv, NULL, server_main, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_is_url),      cmocka_unit_test(test_range),
        cmocka_unit_test(test_norange),     cmocka_unit_test(test_404),
        cmocka_unit_test(test_trunc),       cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_cancel),      cmocka_unit_test(test_refused),
        cmocka_unit_test(test_stream),      cmocka_unit_test(test_cancel_on_loop),
        cmocka_unit_test(test_progress),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    shutdown(g_listen, SHUT_RDWR);
    close(g_listen);
    pthread_join(srv, NULL);
    return rc;
}
