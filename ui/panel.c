/* panel: colours and UTF-8 text helpers shared by every pane. */
#include "panel.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static attr_t attrs[UI_C_COUNT];

void ui_colors_init(bool mono)
{
    /* Monochrome first: every role stays distinguishable without colour. */
    attrs[UI_C_NORMAL] = A_NORMAL;
    attrs[UI_C_FRAME] = A_NORMAL;
    attrs[UI_C_FRAME_FOCUS] = A_BOLD;
    attrs[UI_C_TITLE] = A_REVERSE;
    attrs[UI_C_SELECT] = A_REVERSE;
    attrs[UI_C_SELECT_DIM] = A_UNDERLINE;
    attrs[UI_C_DIM] = A_DIM;
    attrs[UI_C_KEY] = A_REVERSE;
    attrs[UI_C_HEADER] = A_UNDERLINE;
    attrs[UI_C_GROUP] = A_BOLD;
    attrs[UI_C_NUMBER] = A_NORMAL;
    attrs[UI_C_STRING] = A_NORMAL;
    attrs[UI_C_BAR] = A_NORMAL;
    attrs[UI_C_MATCH] = A_BOLD | A_UNDERLINE;
    attrs[UI_C_ERROR] = A_BOLD;
    attrs[UI_C_FIELD] = A_UNDERLINE;
    attrs[UI_C_FIELD_CUR] = A_REVERSE;
    attrs[UI_C_STATUS] = A_REVERSE;
    if (mono || !has_colors() || start_color() == ERR)
        return;
    use_default_colors();
    static const struct { ui_color role; short fg, bg; attr_t extra; } pal[] = {
        {UI_C_FRAME, COLOR_BLUE, -1, 0},
        {UI_C_FRAME_FOCUS, COLOR_CYAN, -1, A_BOLD},
        {UI_C_TITLE, COLOR_BLACK, COLOR_CYAN, 0},
        {UI_C_SELECT, COLOR_BLACK, COLOR_CYAN, 0},
        {UI_C_SELECT_DIM, COLOR_BLACK, COLOR_WHITE, 0},
        {UI_C_KEY, COLOR_BLACK, COLOR_CYAN, 0},
        {UI_C_HEADER, COLOR_YELLOW, -1, A_BOLD},
        {UI_C_GROUP, COLOR_GREEN, -1, A_BOLD},
        {UI_C_NUMBER, COLOR_CYAN, -1, 0},
        {UI_C_STRING, COLOR_YELLOW, -1, 0},
        {UI_C_BAR, COLOR_GREEN, -1, 0},
        {UI_C_MATCH, COLOR_BLACK, COLOR_YELLOW, 0},
        {UI_C_ERROR, COLOR_RED, -1, A_BOLD},
        {UI_C_FIELD, COLOR_MAGENTA, -1, 0},
        {UI_C_FIELD_CUR, COLOR_BLACK, COLOR_MAGENTA, 0},
        {UI_C_STATUS, COLOR_BLACK, COLOR_WHITE, 0},
    };
    for (size_t i = 0; i < sizeof pal / sizeof pal[0]; i++) {
        short pair = (short)(i + 1);
        if (pair >= COLOR_PAIRS)
            break;
        if (init_pair(pair, pal[i].fg, pal[i].bg) == ERR)
            continue;
        attrs[pal[i].role] = COLOR_PAIR(pair) | pal[i].extra;
    }
}

attr_t ui_attr(ui_color c)
{
    return (unsigned)c < UI_C_COUNT ? attrs[c] : A_NORMAL;
}

/* Decode one character: returns bytes used (>= 1) and the symbol to show. */
static size_t next_char(const char *s, size_t len, mbstate_t *st, wchar_t *wc)
{
    unsigned char c = (unsigned char)s[0];
    if (c < 0x20 || c == 0x7f) {
        *wc = c == '\n' ? L'↵' : c == '\t' ? L'→' : L'·';
        return 1;
    }
    if (c < 0x80) {
        *wc = (wchar_t)c;
        return 1;
    }
    size_t n = mbrtowc(wc, s, len, st);
    if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
        memset(st, 0, sizeof *st);
        *wc = L'\xFFFD';
        return 1;
    }
    /* C1 controls, bidi controls and line / paragraph separators never reach
     * the terminal raw (a caller that shows file text escapes it first:
     * screen_put_text; this is the last line of defence) */
    wchar_t c1 = *wc;
    if ((c1 >= 0x80 && c1 <= 0x9f) || c1 == 0x061c || c1 == 0x200e || c1 == 0x200f ||
        (c1 >= 0x202a && c1 <= 0x202e) || (c1 >= 0x2066 && c1 <= 0x2069) || c1 == 0x2028 || c1 == 0x2029)
        *wc = L'·';
    return n;
}

static int char_width(wchar_t wc)
{
    int w = wcwidth(wc);
    return w < 0 ? 1 : w;
}

int ui_width(const char *s, size_t len)
{
    if (len == SIZE_MAX)
        len = strlen(s);
    mbstate_t st;
    memset(&st, 0, sizeof st);
    int cols = 0;
    for (size_t i = 0; i < len;) {
        wchar_t wc;
        i += next_char(s + i, len - i, &st, &wc);
        cols += char_width(wc);
    }
    return cols;
}

size_t ui_fit(const char *s, size_t len, int cols)
{
    mbstate_t st;
    memset(&st, 0, sizeof st);
    int used = 0;
    size_t i = 0;
    while (i < len) {
        wchar_t wc;
        size_t n = next_char(s + i, len - i, &st, &wc);
        int cw = char_width(wc);
        if (used + cw > cols)
            break;
        used += cw;
        i += n;
    }
    return i;
}

int ui_put(WINDOW *w, int y, int x, int maxcols, const char *s, size_t len, attr_t a, bool ellipsis)
{
    if (maxcols <= 0 || !s)
        return 0;
    if (len == SIZE_MAX)
        len = strlen(s);
    int limit = maxcols;
    if (ellipsis && ui_width(s, len) > maxcols)
        limit = maxcols - 1;
    wchar_t buf[512];
    int nb = 0, used = 0;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    wmove(w, y, x);
    wattr_set(w, a, PAIR_NUMBER(a), NULL);
    for (size_t i = 0; i < len;) {
        wchar_t wc;
        i += next_char(s + i, len - i, &st, &wc);
        int cw = char_width(wc);
        if (used + cw > limit)
            break;
        if (cw == 0 && nb == 0)
            continue;   /* a combining mark with nothing to combine with */
        buf[nb++] = wc;
        used += cw;
        if (nb == (int)(sizeof buf / sizeof buf[0]) - 1) {
            waddnwstr(w, buf, nb);
            nb = 0;
        }
    }
    if (ellipsis && limit < maxcols) {
        buf[nb++] = L'…';
        used++;
    }
    if (nb)
        waddnwstr(w, buf, nb);
    wattr_set(w, A_NORMAL, 0, NULL);
    return used;
}

int ui_putf(WINDOW *w, int y, int x, int maxcols, attr_t a, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ui_put(w, y, x, maxcols, buf, SIZE_MAX, a, false);
}

void ui_fill(WINDOW *w, int y, int x, int n, attr_t a)
{
    if (n <= 0)
        return;
    wattr_set(w, a, PAIR_NUMBER(a), NULL);
    mvwhline(w, y, x, ' ', n);
    wattr_set(w, A_NORMAL, 0, NULL);
}

char *ui_fmt_count(uint64_t n, char *buf, size_t cap)
{
    static const char *suf[] = {"", "K", "M", "B", "T"};
    double v = (double)n;
    int i = 0;
    while (v >= 1000 && i < 4) {
        v /= 1000;
        i++;
    }
    if (i == 0)
        snprintf(buf, cap, "%" PRIu64, n);
    else
        snprintf(buf, cap, v < 10 ? "%.2f%s" : v < 100 ? "%.1f%s" : "%.0f%s", v, suf[i]);
    return buf;
}

char *ui_fmt_bytes(uint64_t n, char *buf, size_t cap)
{
    static const char *suf[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    if (i == 0)
        snprintf(buf, cap, "%" PRIu64 " B", n);
    else
        snprintf(buf, cap, v < 100 ? "%.1f %s" : "%.0f %s", v, suf[i]);
    return buf;
}

char *ui_fmt_shape(const uint64_t *ne, uint32_t n_dims, char *buf, size_t cap)
{
    size_t off = 0;
    if (cap)
        buf[0] = 0;
    if (n_dims == 0)
        n_dims = 1;
    for (uint32_t i = 0; i < n_dims && i < 4 && off < cap; i++) {
        int k = snprintf(buf + off, cap - off, i ? "×%" PRIu64 : "%" PRIu64, ne[i]);
        if (k < 0)
            break;
        off += (size_t)k;
    }
    return buf;
}

void ui_box(WINDOW *w, attr_t a)
{
    wattr_set(w, a, PAIR_NUMBER(a), NULL);
    if (MB_CUR_MAX > 1) {
        /* Unicode line drawing: does not depend on the terminal's alternate
         * character set (which some TERM settings inside tmux lack) */
        static const wchar_t ch[6][2] = {{L'│', 0}, {L'─', 0}, {L'┌', 0}, {L'┐', 0}, {L'└', 0}, {L'┘', 0}};
        cchar_t c[6];
        for (int i = 0; i < 6; i++)
            setcchar(&c[i], ch[i], a, PAIR_NUMBER(a), NULL);
        wborder_set(w, &c[0], &c[0], &c[1], &c[1], &c[2], &c[3], &c[4], &c[5]);
    } else {
        box(w, 0, 0);
    }
    wattr_set(w, A_NORMAL, 0, NULL);
}
