#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "http.h"
#include "remote.h"
#include "textesc.h"

void app_error(const char *fmt, ...)
{
    /* Messages often quote a name, a key or a value from a file (engine
     * messages too): control characters, invalid bytes, C1 and bidi controls
     * are escaped here, so the line stays one line and inert (backslashes
     * are left alone: text already escaped passes unchanged). */
    char small[1024], *msg = small;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1)) != NULL)
        vsnprintf(msg, (size_t)n + 1, fmt, ap2);
    else if (!msg)
        msg = small;
    va_end(ap2);
    fputs("ggscope: ", stderr);
    app_put_text(stderr, msg, n < 0 ? 0 : strlen(msg), TEXTESC_RAW_BACKSLASH);
    fputc('\n', stderr);
    if (msg != small)
        free(msg);
}

void app_put_text(FILE *out, const char *s, size_t len, unsigned flags)
{
    char buf[1024];
    for (size_t i = 0; i < len;) {
        i += textesc_term(buf, sizeof buf, s + i, len - i, flags);
        fputs(buf, out);
    }
}

char *app_text(char *buf, size_t cap, const char *s, size_t len)
{
    static const char more[] = "…";
    if (textesc_term(buf, cap, s, len, 0) < len) {
        /* cut, then make room for the ellipsis */
        textesc_term(buf, cap - (sizeof more - 1), s, len, 0);
        strcat(buf, more);
    }
    return buf;
}

struct cJSON *app_json_text(const char *s, size_t len)
{
    char *q = textesc_json_quoted(s, len);
    if (!q)
        return NULL;
    cJSON *r = cJSON_CreateRaw(q);
    free(q);
    return r;
}

gguf_file *app_open_gguf(const char *path)
{
    if (http_is_url(path)) {
        app_error("%s: this command reads local files only (info, dump and the explorer read URLs): download it first", path);
        return NULL;
    }
    return app_open_any(path);
}

gguf_file *app_open_any(const char *path)
{
    gguf_error err;
    gguf_file *f = http_is_url(path) ? remote_open(path, &err) : gguf_open(path, &err);
    if (!f) {
        /* the message may quote a key or tensor name from the file */
        char buf[1024];
        gguf_error_format(&err, buf, sizeof buf);
        app_put_text(stderr, buf, strlen(buf), 0);
        fputc('\n', stderr);
    }
    return f;
}

bool app_stderr_is_tty(void)
{
    return isatty(2);
}

static int progress_last = -1;

void app_progress(const char *label, double done, double total)
{
    if (!app_stderr_is_tty())
        return;
    int pct = total > 0 ? (int)(100.0 * done / total) : 0;
    if (pct > 100)
        pct = 100;
    if (pct == progress_last)
        return;
    progress_last = pct;
    char bar[41];
    int fill = pct * 40 / 100;
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, ' ', (size_t)(40 - fill));
    bar[40] = 0;
    fprintf(stderr, "\r%s [%s] %3d%%", label, bar, pct);
    fflush(stderr);
}

void app_progress_end(void)
{
    if (app_stderr_is_tty() && progress_last >= 0)
        fputs("\r\033[K", stderr);
    progress_last = -1;
}
