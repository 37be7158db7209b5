#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app.h"

void app_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ggscope: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

gguf_file *app_open_gguf(const char *path)
{
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    if (!f) {
        char buf[1024];
        fprintf(stderr, "%s\n", gguf_error_format(&err, buf, sizeof buf));
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
