/* chat_page: files under $XDG_STATE_HOME (the input history, the copy
 * fallback, the autosaved conversations), copying through OSC 52, the
 * mouse (see chat_page.h). */
#include "chat_page_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "afile.h"
#include "textesc.h"

#define OSC52_MAX_BYTES 74000   /* ~100 KB of base64: what terminals commonly take */

/* mkdir -p of path (modes 0700). */
static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

int chat_page_state_dir(char *buf, size_t cap, const char *sub)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(buf, cap, "%s/ggscope%s%s", xdg, sub ? "/" : "", sub ? sub : "");
    else if (home && home[0] == '/')
        n = snprintf(buf, cap, "%s/.local/state/ggscope%s%s", home, sub ? "/" : "", sub ? sub : "");
    else
        return -1;
    if (n < 0 || (size_t)n >= cap)
        return -1;
    return mkdirs(buf);
}

void chat_page_expand(char *buf, size_t cap, const char *path)
{
    const char *home = getenv("HOME");
    if (path[0] == '~' && (path[1] == '/' || !path[1]) && home && *home)
        snprintf(buf, cap, "%s%s", home, path + 1);
    else
        snprintf(buf, cap, "%s", path);
}

/* ---- copying ---- */

static char *base64(const char *s, size_t n, size_t *out)
{
    static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *b = malloc((n + 2) / 3 * 4 + 1);
    if (!b)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)s[i + 2];
        b[k++] = T[v >> 18 & 63];
        b[k++] = T[v >> 12 & 63];
        b[k++] = i + 1 < n ? T[v >> 6 & 63] : '=';
        b[k++] = i + 2 < n ? T[v & 63] : '=';
    }
    b[k] = 0;
    *out = k;
    return b;
}

static void write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* OSC 52 to the terminal (between frames: ncurses has flushed its output).
 * Inside tmux, also wrapped in tmux's DCS passthrough, which reaches the
 * outer terminal when tmux's allow-passthrough is on (tmux itself takes the
 * plain one when its set-clipboard is on). */
static bool osc52(const char *text, size_t len)
{
    size_t bl;
    char *b = base64(text, len, &bl);
    if (!b)
        return false;
    const char *tmux = getenv("TMUX");
    textesc_buf o = {0};
    textesc_buf_put(&o, "\033]52;c;", 7);
    textesc_buf_put(&o, b, bl);
    textesc_buf_put(&o, "\a", 1);
    if (tmux && *tmux) {
        textesc_buf_put(&o, "\033Ptmux;\033\033]52;c;", 15);
        textesc_buf_put(&o, b, bl);
        textesc_buf_put(&o, "\a\033\\", 3);
    }
    bool ok = o.ptr != NULL;
    if (ok)
        write_all(STDOUT_FILENO, o.ptr, o.len);
    textesc_buf_free(&o);
    free(b);
    return ok;
}

void chat_page_copy(chat_page *u, const char *text, size_t len, const char *what)
{
    char path[1100];
    if (chat_page_state_dir(path, sizeof path - 16, NULL) == 0)
        strcat(path, "/copied.txt");
    else
        snprintf(path, sizeof path, "/tmp/ggscope-copied-%u.txt", (unsigned)getuid());
    afile af = {.fd = -1};
    bool filed = afile_open(&af, path) == 0 && afile_write(&af, text, len) == 0 && afile_commit(&af) == 0;
    int ferr = af.err;
    afile_close(&af);
    bool sent = len <= OSC52_MAX_BYTES && osc52(text, len);
    if (sent && filed)
        screen_message(u->s, "copied %s, %zu bytes: clipboard (OSC 52) and %s", what, len, path);
    else if (filed)
        screen_message(u->s, "%s (%zu bytes) is too long for the terminal's clipboard: copied to %s", what, len, path);
    else if (sent)
        screen_message(u->s, "copied %s (%zu bytes) to the clipboard (OSC 52); %s: %s", what, len, path,
                       strerror(ferr));
    else
        screen_message(u->s, "cannot copy %s: %s: %s", what, path, strerror(ferr));
}

void chat_page_set_mouse(chat_page *u, bool on)
{
    screen_set_mouse(u->s, on);
    u->mouse_off = !on;
    screen_message(u->s, on ? "mouse on: the wheel scrolls (m or /mouse off releases it)"
                            : "mouse off: the terminal's own selection works (m or /mouse on takes it back)");
}

/* ---- the conversation's fingerprint, the autosave ---- */

uint64_t chat_page_sig(const chat_page *u)
{
    uint64_t h = 1469598103934665603ull;
    size_t n = chs_count(u->c);
    for (size_t i = 0; i < n; i++) {
        h ^= chs_at(u->c, i)->id + 0x9e3779b97f4a7c15ull * (chs_at(u->c, i)->dropped + 1);
        h *= 1099511628211ull;
    }
    for (const char *p = chs_system(u->c); *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ull;
    }
    return h ^ n;
}

int chat_page_autosave(chat_page *u, char *msg, size_t cap)
{
    if (!u || !chs_count(u->c) || chat_page_sig(u) == u->saved_sig)
        return 0;
    char dir[1024], path[1200];
    if (chat_page_state_dir(dir, sizeof dir, "sessions")) {
        snprintf(msg, cap, "the conversation was not saved: cannot create %s", dir);
        return -1;
    }
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(path, sizeof path, "%s/chat-%s-%ld.json", dir, stamp, (long)getpid());
    char err[512];
    if (chs_save(u->c, path, err, sizeof err)) {
        snprintf(msg, cap, "the conversation was not saved: %s", err);
        return -1;
    }
    u->saved_sig = chat_page_sig(u);
    snprintf(msg, cap, "conversation saved to %s (ggscope chat --load FILE continues it)", path);
    return 1;
}

/* ---- the input history ---- */

void chat_page_history_load(chat_page *u)
{
    char dir[1000];
    u->hist_path[0] = 0;
    if (chat_page_state_dir(dir, sizeof dir, NULL))
        return;
    snprintf(u->hist_path, sizeof u->hist_path, "%s/chat_history", dir);
    chat_input_history_load(&u->ed, u->hist_path);
}

void chat_page_history_add(chat_page *u, const char *t)
{
    chat_input_history_add(&u->ed, t);
    if (u->hist_path[0])
        chat_input_history_save(&u->ed, u->hist_path, t);
}
