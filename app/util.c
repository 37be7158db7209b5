#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "textesc.h"

void app_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ggscope: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
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
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
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
