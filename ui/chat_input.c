/* chat_input: see chat_input.h. */
#include "chat_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "afile.h"
#include "panel.h"
#include "rfile.h"

static size_t u8len(unsigned char c)
{
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

static bool reserve(chat_input *in, size_t need)
{
    if (need <= in->cap)
        return true;
    size_t nc = in->cap ? in->cap : 64;
    while (nc < need)
        nc *= 2;
    char *nb = realloc(in->buf, nc);
    if (!nb)
        return false;
    in->buf = nb;
    in->cap = nc;
    return true;
}

int chat_input_init(chat_input *in)
{
    memset(in, 0, sizeof *in);
    if (!reserve(in, 1))
        return -1;
    in->buf[0] = 0;
    return 0;
}

void chat_input_free(chat_input *in)
{
    for (size_t i = 0; i < in->nhist; i++)
        free(in->hist[i]);
    free(in->hist);
    free(in->hist_saved);
    free(in->buf);
    memset(in, 0, sizeof *in);
}

void chat_input_set(chat_input *in, const char *t)
{
    size_t n = strlen(t);
    if (!reserve(in, n + 1))
        return;
    memcpy(in->buf, t, n + 1);
    in->len = in->cur = n;
}

void chat_input_insert(chat_input *in, const char *s, size_t n)
{
    if (!reserve(in, in->len + n + 1))
        return;
    memmove(in->buf + in->cur + n, in->buf + in->cur, in->len - in->cur + 1);
    memcpy(in->buf + in->cur, s, n);
    in->len += n;
    in->cur += n;
}

/* A typed or pasted character (a code point) at the cursor. */
static void insert_char(chat_input *in, int key)
{
    char mb[8];
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t n = wcrtomb(mb, (wchar_t)key, &st);
    if (n != (size_t)-1)
        chat_input_insert(in, mb, n);
}

static bool printable(int key)
{
    return key >= 0x20 && key < 0x110000 && key != 0x7f;
}

static size_t prev_char(const chat_input *in, size_t i)
{
    while (i > 0 && ((unsigned char)in->buf[--i] & 0xC0) == 0x80) {
    }
    return i;
}

static size_t next_char(const chat_input *in, size_t i)
{
    if (i >= in->len)
        return in->len;
    i++;
    while (i < in->len && ((unsigned char)in->buf[i] & 0xC0) == 0x80)
        i++;
    return i;
}

static void delete_range(chat_input *in, size_t a, size_t b)
{
    memmove(in->buf + a, in->buf + b, in->len - b + 1);
    in->len -= b - a;
    in->cur = a;
}

static size_t line_start(const chat_input *in, size_t i)
{
    while (i > 0 && in->buf[i - 1] != '\n')
        i--;
    return i;
}

static size_t line_end(const chat_input *in, size_t i)
{
    while (i < in->len && in->buf[i] != '\n')
        i++;
    return i;
}

void chat_input_history_add(chat_input *in, const char *t)
{
    if (!in->nhist || strcmp(in->hist[in->nhist - 1], t)) {
        char **h = realloc(in->hist, (in->nhist + 1) * sizeof *h);
        if (h) {
            in->hist = h;
            in->hist[in->nhist] = strdup(t);
            if (in->hist[in->nhist])
                in->nhist++;
        }
    }
    in->hpos = in->nhist;
}

/* One entry as a line of the history file. */
static char *hist_encode(const char *t, size_t *n)
{
    size_t len = strlen(t), k = 0;
    char *o = malloc(2 * len + 2);
    if (!o)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (t[i] == '\n' || t[i] == '\\') {
            o[k++] = '\\';
            o[k++] = t[i] == '\n' ? 'n' : '\\';
        } else {
            o[k++] = t[i];
        }
    }
    o[k++] = '\n';
    *n = k;
    return o;
}

int chat_input_history_save(chat_input *in, const char *path, const char *t)
{
    (void)in;
    size_t n;
    char *line = hist_encode(t, &n);
    int fd = line ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
    bool ok = fd >= 0 && write(fd, line, n) == (ssize_t)n;
    if (fd >= 0)
        close(fd);
    free(line);
    return ok ? 0 : -1;
}

int chat_input_history_load(chat_input *in, const char *path)
{
    rfile_status st;
    int err = 0;
    size_t dlen;
    char *data = rfile_read(path, 64u << 20, RFILE_REGULAR, &dlen, &st, &err);
    if (!data)
        return st == RFILE_EOPEN && err == ENOENT ? 0 : -1;
    struct {
        const char *data;
        size_t len;
    } d = {data, dlen};
    /* the line starts of the last entries */
    size_t nl = 0;
    for (size_t i = 0; i < d.len; i++)
        nl += d.data[i] == '\n';
    size_t skip = nl > CHAT_INPUT_HIST_KEEP ? nl - CHAT_INPUT_HIST_KEEP : 0, from = 0;
    for (size_t i = 0; i < d.len && skip; i++)
        if (d.data[i] == '\n' && !--skip)
            from = i + 1;
    char *e = malloc(d.len + 1);
    for (size_t p = from; e && p < d.len;) {
        size_t k = 0;
        for (; p < d.len && d.data[p] != '\n'; p++) {
            if (d.data[p] == '\\' && p + 1 < d.len && (d.data[p + 1] == 'n' || d.data[p + 1] == '\\'))
                e[k++] = d.data[++p] == 'n' ? '\n' : '\\';
            else
                e[k++] = d.data[p];
        }
        p++;
        e[k] = 0;
        if (k && memchr(e, 0, k) == NULL)
            chat_input_history_add(in, e);
    }
    if (nl > 2 * CHAT_INPUT_HIST_KEEP) {   /* rewrite with the entries kept */
        afile af = {.fd = -1};
        if (afile_open(&af, path) == 0 && afile_write(&af, d.data + from, d.len - from) == 0)
            afile_commit(&af);
        afile_close(&af);
    }
    free(e);
    free(data);
    return 0;
}

static void history_move(chat_input *in, int d)
{
    if (!in->nhist)
        return;
    if (in->hpos == in->nhist && d < 0) {
        free(in->hist_saved);
        in->hist_saved = strdup(in->buf ? in->buf : "");
    }
    if (d < 0 && in->hpos > 0)
        in->hpos--;
    else if (d > 0 && in->hpos < in->nhist)
        in->hpos++;
    else
        return;
    chat_input_set(in, in->hpos < in->nhist ? in->hist[in->hpos] : (in->hist_saved ? in->hist_saved : ""));
}

/* ↑ ↓: to the same column of the line above / below, or through the
 * history from the first / last line. */
static void vertical(chat_input *in, int key)
{
    size_t ls = line_start(in, in->cur);
    bool first = ls == 0, last = line_end(in, in->cur) == in->len;
    if ((key == UIK_UP && first) || (key == UIK_DOWN && last)) {
        history_move(in, key == UIK_UP ? -1 : 1);
        return;
    }
    size_t col = in->cur - ls;
    size_t ns = key == UIK_UP ? line_start(in, ls - 1) : line_end(in, in->cur) + 1;
    size_t ne = line_end(in, ns);
    in->cur = ns + col < ne ? ns + col : ne;
    while (in->cur > ns && ((unsigned char)in->buf[in->cur] & 0xC0) == 0x80)
        in->cur--;
}

/* Alt+B / Alt+F stop at words: letters, digits and any non-ASCII byte. */
static bool word_char(char c)
{
    unsigned char u = (unsigned char)c;
    return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '_';
}

bool chat_input_key(chat_input *in, int key)
{
    if (in->pasting && key != UIK_PASTE_END) {
        if (key == '\n' || key == '\t' || printable(key))
            insert_char(in, key);
        return true;
    }
    switch (key) {
    case UIK_PASTE_BEGIN: in->pasting = true; break;
    case UIK_PASTE_END: in->pasting = false; break;
    case UIK_ALT('\n'): chat_input_insert(in, "\n", 1); break;
    case UIK_BACKSPACE:
        if (in->cur)
            delete_range(in, prev_char(in, in->cur), in->cur);
        break;
    case UIK_DC:
        if (in->cur < in->len)
            delete_range(in, in->cur, next_char(in, in->cur));
        break;
    case UIK_LEFT: in->cur = prev_char(in, in->cur); break;
    case UIK_RIGHT: in->cur = next_char(in, in->cur); break;
    case UIK_HOME: case UIK_CTRL('a'): in->cur = line_start(in, in->cur); break;
    case UIK_END: case UIK_CTRL('e'): in->cur = line_end(in, in->cur); break;
    case UIK_CTRL('u'): chat_input_set(in, ""); break;
    case UIK_CTRL('w'): {
        size_t a = in->cur;
        while (a > 0 && in->buf[a - 1] == ' ')
            a--;
        while (a > 0 && in->buf[a - 1] != ' ' && in->buf[a - 1] != '\n')
            a--;
        delete_range(in, a, in->cur);
        break;
    }
    case UIK_CTRL('k'): delete_range(in, in->cur, line_end(in, in->cur)); break;
    case UIK_ALT('b'): {
        size_t a = in->cur;
        while (a > 0 && !word_char(in->buf[a - 1]))
            a--;
        while (a > 0 && word_char(in->buf[a - 1]))
            a--;
        in->cur = a;
        break;
    }
    case UIK_ALT('f'): {
        size_t a = in->cur;
        while (a < in->len && !word_char(in->buf[a]))
            a++;
        while (a < in->len && word_char(in->buf[a]))
            a++;
        in->cur = a;
        break;
    }
    case UIK_UP: case UIK_DOWN: vertical(in, key); break;
    default:
        if (!printable(key))
            return false;
        insert_char(in, key);
    }
    return true;
}

int chat_input_rows(const chat_input *in, int max)
{
    int lines = 1;
    for (size_t i = 0; i < in->len; i++)
        lines += in->buf[i] == '\n';
    return lines < max ? lines : max;
}

void chat_input_draw(const chat_input *in, WINDOW *w, int rows, int cols, bool focused, const char *placeholder)
{
    /* hard-wrapped rows of the input, with "› " in front */
    int tw = cols - 2 > 1 ? cols - 2 : 1;
    size_t starts[512];
    int nrows = 0, cur_row = 0, cur_col = 0;
    size_t i = 0;
    starts[nrows++] = 0;
    int col = 0;
    for (;;) {
        if (i == in->cur) {
            cur_row = nrows - 1;
            cur_col = col;
        }
        if (i >= in->len)
            break;
        if (in->buf[i] == '\n') {
            i++;
            if (nrows < 512)
                starts[nrows++] = i;
            col = 0;
            continue;
        }
        size_t cl = u8len((unsigned char)in->buf[i]);
        if (i + cl > in->len)
            cl = in->len - i;
        int cw = ui_width(in->buf + i, cl);
        if (col + cw > tw - 1) {
            if (nrows < 512)
                starts[nrows++] = i;
            col = 0;
        }
        col += cw;
        i += cl;
    }
    int first = cur_row - rows + 1 > 0 ? cur_row - rows + 1 : 0;
    for (int r = 0; r < rows && first + r < nrows; r++) {
        int ri = first + r;
        size_t a = starts[ri];
        size_t b = ri + 1 < nrows ? starts[ri + 1] : in->len;
        if (b > a && in->buf[b - 1] == '\n')
            b--;
        ui_put(w, r, 0, 2, ri == 0 ? "\xe2\x80\xba " : "  ", SIZE_MAX, ui_attr(UI_C_KEY) | A_BOLD, false);
        ui_put(w, r, 2, cols - 2, in->buf + a, b - a, ui_attr(UI_C_NORMAL), false);
    }
    if (!in->len)
        ui_put(w, 0, 4, cols - 4, placeholder, SIZE_MAX, ui_attr(UI_C_DIM), true);
    if (focused && cur_row >= first && cur_row - first < rows) {
        size_t e = next_char(in, in->cur);
        const char *ch = in->cur < in->len && in->buf[in->cur] != '\n' ? in->buf + in->cur : " ";
        size_t cl = in->cur < in->len && in->buf[in->cur] != '\n' ? e - in->cur : 1;
        ui_put(w, cur_row - first, 2 + cur_col, cols - 2 - cur_col, ch, cl, A_REVERSE, false);
    }
}
