/* http: HTTP(S) requests through libcurl's multi-socket interface, driven by a
 * libuv loop (uv_poll_t per socket, one uv_timer_t for curl's timeouts), so
 * no thread ever blocks on the network and the loop keeps answering keys.
 *
 * Two ways in:
 *   - on the loop thread: http_start() with callbacks, http_cancel();
 *   - from any other thread (a worker parsing a remote file's header, say):
 *     http_fetch(), which hands the request to the loop (uv_async_t) and
 *     waits for its body, stopping early when a cancel flag is raised.
 * A command that owns the loop runs it (uv_run) while a worker calls
 * http_fetch(); a request never runs on the calling thread.
 *
 * Errors are one line meant for a user: "connection refused (127.0.0.1:8089)",
 * "timed out after 10 s without data", "the body was cut short: 812 of 4096
 * bytes", "HTTP 404 Not Found". */
#ifndef GGSCOPE_HTTP_H
#define GGSCOPE_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct http_client http_client;
typedef struct http_req http_req;

enum {
    HTTP_OK = 0,
    HTTP_E_CONNECT,    /* refused, unreachable, DNS */
    HTTP_E_TIMEOUT,    /* connect timeout, or no data for idle_timeout_ms */
    HTTP_E_TRUNCATED,  /* the connection closed before the announced length */
    HTTP_E_STATUS,     /* an HTTP status >= 400 (http_fetch only; see fail_on_status) */
    HTTP_E_TOO_BIG,    /* http_fetch: the body is larger than the buffer */
    HTTP_E_CANCELLED,  /* http_fetch: the cancel flag was raised */
    HTTP_E_OTHER,      /* TLS, protocol, out of memory... (message says) */
};

typedef struct {
    const char *url;              /* http:// or https:// */
    const char *method;           /* NULL: GET, or POST when body != NULL */
    const char *body;             /* copied; may hold NULs (body_len) */
    size_t body_len;
    const char *const *headers;   /* NULL-terminated "Name: value" lines, copied */
    int64_t range_first;          /* a Range request when >= 0 ... */
    int64_t range_last;           /* ... inclusive; -1: to the end */
    long connect_timeout_ms;      /* 0: 10 s */
    long idle_timeout_ms;         /* no byte for this long ends it; 0: 30 s */
    bool follow_redirects;        /* false: a 3xx is reported as it is */
    bool fail_on_status;          /* http_fetch: status >= 400 is HTTP_E_STATUS */
    /* (optional) progress within the request (libcurl's XFERINFOFUNCTION):
     * body bytes received so far and the announced length (-1: unknown),
     * on the loop thread, every HTTP_PROGRESS_MS at most, the first one that
     * long after the start (a quick request reports nothing) */
    void (*on_progress)(void *ud, int64_t bytes, int64_t total);
    void *progress_ud;
} http_request;

#define HTTP_PROGRESS_MS 100

typedef struct {
    int err;                      /* HTTP_OK or HTTP_E_* */
    long status;                  /* the last response's status, 0 if none */
    int64_t bytes;                /* body bytes received */
    int64_t content_length;       /* announced, -1 if unknown */
    int64_t total_size;           /* from Content-Range "bytes a-b/N", -1 if none */
    double ttfb_s, total_s;       /* time to the first body byte; in all */
    char msg[256];                /* one line when err != HTTP_OK */
} http_result;

typedef struct {
    /* A response header line (without CR LF), status known. Optional. */
    void (*on_header)(void *ud, long status, const char *line, size_t len);
    /* Body bytes as they arrive. Return false to stop the request (then
     * on_done reports HTTP_E_CANCELLED). Optional. */
    bool (*on_data)(void *ud, long status, const char *p, size_t len);
    /* Exactly once, unless the request was cancelled with http_cancel(). */
    void (*on_done)(void *ud, const http_result *r);
} http_callbacks;

/* A client on `loop` (curl_global_init is done once per process). Returns
 * NULL on failure with a line in err. Loop thread only. */
http_client *http_client_new(uv_loop_t *loop, char *err, size_t errn);

/* Cancels what is still running (no callbacks) and closes the client's
 * handles; the loop must run once more for them to close (uv_run). Loop
 * thread, also from inside an on_done callback. NULL ok. */
void http_client_free(http_client *c);

/* Number of requests started and not yet done (loop thread). */
int http_client_active(const http_client *c);

/* Starts a request (loop thread). Returns NULL with a line in err when it
 * cannot start; then no callback is ever called. */
http_req *http_start(http_client *c, const http_request *rq, const http_callbacks *cb,
                     void *ud, char *err, size_t errn);

/* Stops a request (loop thread, also from inside its callbacks): no callback
 * is called for it afterwards; its memory is freed later. NULL ok. */
void http_cancel(http_req *r);

/* From a thread other than the loop's: runs the request on the loop and
 * waits for it, the body into buf (at most cap bytes). Stops within ~20 ms of
 * *cancel becoming true (cancel may be NULL). Returns err (HTTP_OK or
 * HTTP_E_*) and fills *res. */
int http_fetch(http_client *c, const http_request *rq, void *buf, size_t cap,
               const atomic_bool *cancel, http_result *res);

/* Whether s looks like a URL this module takes ("http://", "https://"). */
bool http_is_url(const char *s);

#endif
