/* screen: pages, layout, focus, key table, title line, key bar, overlays,
 * the running jobs; the keys read from the terminal are screen_input.c's. */
#include "screen_int.h"
#include "clock.h"

#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "list.h"
#include "textesc.h"

static uint64_t now_ms(void)
{
    return (uint64_t)(clock_now_s() * 1e3);
}

/* ---- built-in keys ---- */

static int key_quit(screen *s, int key, void *ctx)
{
    (void)s, (void)key, (void)ctx;
    return PANEL_HANDLED | PANEL_QUIT;
}

static int key_help(screen *s, int key, void *ctx)
{
    (void)key, (void)ctx;
    screen_help(s);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_tab(screen *s, int key, void *ctx)
{
    (void)ctx;
    page_t *pg = &s->pages[s->cur];
    if (pg->n == 0)
        return PANEL_HANDLED;
    int d = key == UIK_BTAB ? pg->n - 1 : 1;
    pg->focus = (pg->focus + d) % pg->n;
    screen_relayout(s);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_zoom(screen *s, int key, void *ctx)
{
    (void)key, (void)ctx;
    s->pages[s->cur].zoom = !s->pages[s->cur].zoom;
    screen_relayout(s);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_repaint(screen *s, int key, void *ctx)
{
    (void)key, (void)ctx;
    s->full_repaint = true;
    return PANEL_HANDLED | PANEL_REDRAW;
}

screen *screen_new(const screen_opts *opts)
{
    screen *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    setlocale(LC_ALL, "");
    if (!initscr()) {
        free(s);
        return NULL;
    }
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    s->mono = (opts && opts->mono) || getenv("NO_COLOR");
    ui_colors_init(s->mono);
    if (!opts || opts->mouse)
        screen_set_mouse(s, true);
    refresh();
    getmaxyx(stdscr, s->rows, s->cols);
    s->dirty = true;
    static const screen_binding builtins[] = {
        {'?', "?", "help", "this help (any key closes it)", -1, key_help, NULL},
        {UIK_TAB, "Tab", "pane", "focus the next pane (Shift+Tab: previous)", -1, key_tab, NULL},
        {UIK_BTAB, "S-Tab", NULL, "focus the previous pane", -1, key_tab, NULL},
        {'z', "z", NULL, "zoom: the focused pane alone (again: all panes)", -1, key_zoom, NULL},
        {UIK_CTRL('l'), "^L", NULL, "repaint the whole terminal", -1, key_repaint, NULL},
        {'q', "q", "quit", "quit (the terminal is restored)", -1, key_quit, NULL},
    };
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        screen_bind(s, &builtins[i]);
    return s;
}

void screen_set_mouse(screen *s, bool on)
{
    (void)s;
    mousemask(on ? BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON1_DOUBLE_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED : 0,
              NULL);
    if (on)
        mouseinterval(0);
}

void screen_restore_terminal(screen *s)
{
    (void)s;
    if (!isendwin())
        endwin();
}

static void panel_windows_free(panel *p)
{
    if (p->win)
        delwin(p->win);
    if (p->frame)
        delwin(p->frame);
    p->win = p->frame = NULL;
}

void screen_free(screen *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->npages; i++) {
        page_t *pg = &s->pages[i];
        for (int k = 0; k < pg->n; k++) {
            panel *p = pg->panels[k];
            panel_windows_free(p);
            if (p->ops->destroy)
                p->ops->destroy(p);
        }
    }
    if (s->titlew)
        delwin(s->titlew);
    if (s->barw)
        delwin(s->barw);
    if (s->overw)
        delwin(s->overw);
    screen_restore_terminal(s);
    free(s->binds);
    free(s->pager_text);
    free(s->plines);
    free(s);
}

int screen_add_page(screen *s, const char *name, screen_layout_fn layout, void *ctx)
{
    if (s->npages >= MAX_PAGES)
        return -1;
    page_t *pg = &s->pages[s->npages];
    memset(pg, 0, sizeof *pg);
    snprintf(pg->name, sizeof pg->name, "%s", name);
    pg->layout = layout;
    pg->ctx = ctx;
    return s->npages++;
}

void screen_set_title(screen *s, int page, const char *title)
{
    if (page < 0 || page >= s->npages)
        return;
    textesc_term(s->pages[page].title, sizeof s->pages[page].title, title, strlen(title), TEXTESC_RAW_BACKSLASH);
    s->dirty = true;
}

void screen_show_page(screen *s, int page)
{
    if (page < 0 || page >= s->npages || page == s->cur)
        return;
    page_t *old = &s->pages[s->cur];
    for (int k = 0; k < old->n; k++) {
        panel_windows_free(old->panels[k]);
        old->panels[k]->h = 0;
    }
    s->cur = page;
    s->full_repaint = true;
    screen_relayout(s);
}

int screen_add_panel(screen *s, int page, panel *p)
{
    if (page < 0 || page >= s->npages || s->pages[page].n >= MAX_PANELS)
        return -1;
    p->scr = s;
    p->page = page;
    p->h = 0;
    s->pages[page].panels[s->pages[page].n++] = p;
    if (page == s->cur)
        screen_relayout(s);
    return 0;
}

void screen_place(screen *s, panel *p, int y, int x, int h, int w)
{
    (void)s;
    if (h < 3 || w < 4) {
        panel_windows_free(p);
        p->h = p->w = p->ih = p->iw = 0;
        return;
    }
    if (p->frame && p->y == y && p->x == x && p->h == h && p->w == w)
        return;
    panel_windows_free(p);
    p->y = y, p->x = x, p->h = h, p->w = w;
    p->frame = newwin(h, w, y, x);
    p->win = newwin(h - 2, w - 2, y + 1, x + 1);
    if (!p->frame || !p->win) {
        panel_windows_free(p);
        p->h = 0;
        return;
    }
    p->ih = h - 2;
    p->iw = w - 2;
    if (p->ops->on_resize)
        p->ops->on_resize(p, p->ih, p->iw);
}

void screen_relayout(screen *s)
{
    if (s->titlew)
        delwin(s->titlew);
    if (s->barw)
        delwin(s->barw);
    s->titlew = newwin(1, s->cols, 0, 0);
    s->barw = newwin(1, s->cols, s->rows - 1, 0);
    if (s->npages) {
        page_t *pg = &s->pages[s->cur];
        /* Everything unplaced; the layout places (and so shows) what it wants. */
        for (int k = 0; k < pg->n; k++) {
            panel_windows_free(pg->panels[k]);
            pg->panels[k]->h = pg->panels[k]->w = 0;
        }
        if (pg->layout && s->rows > 2)
            pg->layout(s, s->cur, 1, 0, s->rows - 2, s->cols, pg->zoom, pg->ctx);
    }
    s->pager_wrap_cols = -1;
    s->dirty = true;
}

void screen_focus(screen *s, panel *p)
{
    if (!p || p->page < 0 || p->page >= s->npages)
        return;
    page_t *pg = &s->pages[p->page];
    for (int k = 0; k < pg->n; k++)
        if (pg->panels[k] == p)
            pg->focus = k;
    if (p->page != s->cur)
        screen_show_page(s, p->page);
    else
        screen_relayout(s);
}

panel *screen_focused(const screen *s)
{
    if (s->npages == 0)
        return NULL;
    const page_t *pg = &s->pages[s->cur];
    return pg->n ? pg->panels[pg->focus] : NULL;
}

void screen_bind(screen *s, const screen_binding *b)
{
    screen_binding *nb = realloc(s->binds, (size_t)(s->nbinds + 1) * sizeof *nb);
    if (!nb)
        return;
    s->binds = nb;
    s->binds[s->nbinds++] = *b;
}

void screen_dirty(screen *s)
{
    s->dirty = true;
}

int screen_put_text(WINDOW *w, int y, int x, int maxcols, const char *text, size_t len, attr_t a, bool ellipsis)
{
    /* only what can be on screen is escaped: cheap for any length */
    char buf[2048];
    size_t used = textesc_term(buf, sizeof buf, text, len, 0);
    if (used < len && ellipsis && ui_width(buf, SIZE_MAX) <= maxcols && maxcols > 1) {
        int n = ui_put(w, y, x, maxcols - 1, buf, SIZE_MAX, a, false);
        return n + ui_put(w, y, x + n, 1, "…", SIZE_MAX, a, false);
    }
    return ui_put(w, y, x, maxcols, buf, SIZE_MAX, a, ellipsis);
}

void screen_message(screen *s, const char *fmt, ...)
{
    char raw[sizeof s->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* a message may quote a name or a key from a file */
    textesc_term(s->msg, sizeof s->msg, raw, strlen(raw), TEXTESC_RAW_BACKSLASH);
    s->msg_until = now_ms() + 4000;
    s->dirty = true;
}

bool screen_tick(screen *s, uint64_t now)
{
    (void)now;
    if (s->msg[0] && now_ms() >= s->msg_until) {
        s->msg[0] = 0;
        s->dirty = true;
        return true;
    }
    return false;
}

/* ---- pager ---- */

void screen_pager(screen *s, const char *title, const char *text, size_t len)
{
    free(s->pager_text);
    s->pager_text = NULL;
    /* Line breaks are kept and tabs become 4 spaces; other control
     * characters, invalid bytes, C1 and bidi controls are escaped (a
     * backslash is left as it is: this is a reader's view). */
    textesc_buf b = {0};
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && text[e] != '\n' && text[e] != '\t')
            e++;
        if (textesc_term_append(&b, text + i, e - i, TEXTESC_RAW_BACKSLASH) != 0 ||
            (e < len && textesc_buf_put(&b, text[e] == '\t' ? "    " : "\n", text[e] == '\t' ? 4 : 1) != 0)) {
            textesc_buf_free(&b);
            return;
        }
        i = e + 1;
    }
    if (!b.ptr && textesc_buf_put(&b, "", 0) != 0)
        return;
    s->pager_text = b.ptr;
    s->pager_len = b.len;
    textesc_term(s->pager_title, sizeof s->pager_title, title, strlen(title), TEXTESC_RAW_BACKSLASH);
    s->pager_open = true;
    s->pager_top = 0;
    s->pager_wrap_cols = -1;
    s->dirty = true;
}

static void pager_push(screen *s, size_t off, size_t len)
{
    if (s->nplines == s->plines_cap) {
        size_t cap = s->plines_cap ? s->plines_cap * 2 : 256;
        line_t *n = realloc(s->plines, cap * sizeof *n);
        if (!n)
            return;
        s->plines = n;
        s->plines_cap = cap;
    }
    s->plines[s->nplines++] = (line_t){off, len};
}

static void pager_wrap(screen *s, int cols)
{
    s->nplines = 0;
    s->pager_wrap_cols = cols;
    const char *t = s->pager_text;
    size_t i = 0, n = s->pager_len;
    while (i <= n) {
        size_t e = i;
        while (e < n && t[e] != '\n')
            e++;
        /* the logical line [i, e) wrapped into pieces of <= cols columns */
        size_t a = i;
        do {
            size_t fit = ui_fit(t + a, e - a, cols);
            if (fit == 0 && a < e)
                fit = 1;
            size_t b = a + fit;
            if (b < e) {
                size_t sp = b;
                while (sp > a && t[sp - 1] != ' ')
                    sp--;
                if (sp > a + fit / 2)
                    b = sp;
            }
            pager_push(s, a, b - a);
            a = b;
        } while (a < e);
        i = e + 1;
    }
}

int screen_pager_key(screen *s, int key)
{
    int page = s->rows - 4;
    list l = {s->nplines, 0, s->pager_top, page > 0 ? (uint64_t)page : 1};
    switch (key) {   /* the pager's own aliases, as in less */
    case UIK_ENTER: key = UIK_DOWN; break;
    case 'b': key = UIK_PGUP; break;
    case ' ': key = UIK_PGDN; break;
    case 'g': key = UIK_HOME; break;
    }
    if (list_scroll_key(&l, key)) {
        s->pager_top = (size_t)l.top;
    } else {
        s->pager_open = false;
        s->full_repaint = true;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static void pager_draw(screen *s)
{
    int h = s->rows - 2, w = s->cols;
    if (h < 3 || w < 10)
        return;
    if (s->overw)
        delwin(s->overw);
    s->overw = newwin(h, w, 1, 0);
    if (!s->overw)
        return;
    WINDOW *o = s->overw;
    werase(o);
    ui_box(o, ui_attr(UI_C_FRAME_FOCUS));
    if (s->pager_wrap_cols != w - 2)
        pager_wrap(s, w - 2);
    int page = h - 2;
    size_t max_top = s->nplines > (size_t)page ? s->nplines - (size_t)page : 0;
    if (s->pager_top > max_top)
        s->pager_top = max_top;
    char t[200];
    snprintf(t, sizeof t, " %s · lines %zu–%zu of %zu ", s->pager_title, s->nplines ? s->pager_top + 1 : 0,
             s->pager_top + (size_t)page < s->nplines ? s->pager_top + (size_t)page : s->nplines, s->nplines);
    ui_put(o, 0, 2, w - 4, t, SIZE_MAX, ui_attr(UI_C_FRAME_FOCUS), true);
    for (int r = 0; r < page && s->pager_top + (size_t)r < s->nplines; r++) {
        line_t *l = &s->plines[s->pager_top + (size_t)r];
        ui_put(o, 1 + r, 1, w - 2, s->pager_text + l->off, l->len, A_NORMAL, false);
    }
    wnoutrefresh(o);
}

void screen_help(screen *s)
{
    size_t cap = 8192, len = 0;
    char *t = malloc(cap);
    if (!t)
        return;
#define ADD(...)                                                                  \
    do {                                                                          \
        int k_ = snprintf(t + len, cap - len, __VA_ARGS__);                       \
        if (k_ > 0 && len + (size_t)k_ < cap)                                     \
            len += (size_t)k_;                                                    \
    } while (0)
/* "  KEY       help" with KEY padded to 12 columns (display width, not bytes) */
#define KEYLINE(k, h)                                                             \
    do {                                                                          \
        int pad_ = 12 - ui_width((k), SIZE_MAX);                                  \
        ADD("  %s%*s %s\n", (k), pad_ > 0 ? pad_ : 0, "", (h));                   \
    } while (0)
    ADD("Keys everywhere\n");
    for (int i = 0; i < s->nbinds; i++) {
        screen_binding *b = &s->binds[i];
        if ((b->page != -1 && b->page != s->cur) || !b->help)
            continue;
        KEYLINE(b->keyname, b->help);
    }
    KEYLINE("mouse", "click focuses a pane and selects a row; the wheel scrolls");
    if (s->npages) {
        page_t *pg = &s->pages[s->cur];
        for (int k = 0; k < pg->n; k++) {
            const panel_ops *ops = pg->panels[k]->ops;
            if (!ops->keys)
                continue;
            ADD("\n%s pane\n", ops->name);
            for (const panel_keyhelp *h = ops->keys; h->key; h++)
                KEYLINE(h->key, h->help);
        }
    }
    ADD("\nAny other key closes this help; arrows, PgUp/PgDn scroll it.");
#undef KEYLINE
#undef ADD
    screen_pager(s, "Help", t, len);
    free(t);
}

/* ---- prompt ---- */

void screen_prompt(screen *s, const char *label,
                   void (*on_submit)(screen *s, const char *text, void *ctx),
                   void (*on_change)(screen *s, const char *text, void *ctx), void *ctx)
{
    snprintf(s->prompt_label, sizeof s->prompt_label, "%s", label);
    s->prompt_buf[0] = 0;
    s->prompt_len = 0;
    s->prompt_submit = on_submit;
    s->prompt_change = on_change;
    s->prompt_ctx = ctx;
    s->prompt_open = true;
    s->dirty = true;
}

int screen_prompt_key(screen *s, int key)
{
    if (key == UIK_ESC) {
        s->prompt_open = false;
    } else if (key == UIK_ENTER) {
        s->prompt_open = false;
        if (s->prompt_submit)
            s->prompt_submit(s, s->prompt_buf, s->prompt_ctx);
    } else if (key == UIK_BACKSPACE) {
        while (s->prompt_len > 0) {
            unsigned char c = (unsigned char)s->prompt_buf[--s->prompt_len];
            if ((c & 0xC0) != 0x80)
                break;
        }
        s->prompt_buf[s->prompt_len] = 0;
        if (s->prompt_change)
            s->prompt_change(s, s->prompt_buf, s->prompt_ctx);
    } else if (key >= 0x20 && key < 0x110000 && key != 0x7f) {
        char mb[8];
        mbstate_t st;
        memset(&st, 0, sizeof st);
        size_t n = wcrtomb(mb, (wchar_t)key, &st);
        if (n != (size_t)-1 && s->prompt_len + n < sizeof s->prompt_buf) {
            memcpy(s->prompt_buf + s->prompt_len, mb, n);
            s->prompt_len += n;
            s->prompt_buf[s->prompt_len] = 0;
            if (s->prompt_change)
                s->prompt_change(s, s->prompt_buf, s->prompt_ctx);
        }
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* ---- drawing ---- */

static void draw_panel(screen *s, panel *p, bool focused)
{
    (void)s;
    WINDOW *f = p->frame;
    werase(f);
    attr_t fa = ui_attr(focused ? UI_C_FRAME_FOCUS : UI_C_FRAME);
    ui_box(f, fa);
    char title[256];
    title[0] = 0;
    if (p->ops->title)
        p->ops->title(p, title, sizeof title);
    char full[800], esc[700];
    /* a pane's title may quote a name from the file: escaped (text already
     * escaped by the pane passes unchanged) */
    textesc_term(esc, sizeof esc, title, strlen(title), TEXTESC_RAW_BACKSLASH);
    snprintf(full, sizeof full, " %s%s%s ", p->ops->name, esc[0] ? "  " : "", esc);
    ui_put(f, 0, 1, p->w - 2, full, SIZE_MAX, focused ? ui_attr(UI_C_TITLE) : fa | A_BOLD, true);
    wnoutrefresh(f);
    werase(p->win);
    p->ops->draw(p, p->win, focused);
    wnoutrefresh(p->win);
}

static void draw_bar(screen *s)
{
    WINDOW *b = s->barw;
    werase(b);
    if (s->prompt_open) {
        int x = ui_put(b, 0, 0, s->cols, s->prompt_label, SIZE_MAX, ui_attr(UI_C_KEY), false);
        x += ui_put(b, 0, x, s->cols - x, " ", 1, A_NORMAL, false);
        /* show the end of the text when it is longer than the line */
        const char *t = s->prompt_buf;
        while (ui_width(t, SIZE_MAX) > s->cols - x - 2)
            t++;
        while ((*t & 0xC0) == 0x80)
            t++;
        x += ui_put(b, 0, x, s->cols - x, t, SIZE_MAX, A_NORMAL, false);
        ui_put(b, 0, x, s->cols - x, "▏", SIZE_MAX, A_BOLD, false);
        wnoutrefresh(b);
        return;
    }
    if (s->msg[0]) {
        ui_put(b, 0, 0, s->cols, s->msg, SIZE_MAX, ui_attr(UI_C_STATUS), true);
        ui_fill(b, 0, ui_width(s->msg, SIZE_MAX), s->cols, ui_attr(UI_C_STATUS));
        wnoutrefresh(b);
        return;
    }
    int x = 0;
    panel *f = screen_focused(s);
    if (s->pager_open) {
        x += ui_put(b, 0, x, s->cols - x, " ↑↓ PgUp PgDn Home End ", SIZE_MAX, ui_attr(UI_C_KEY), false);
        ui_put(b, 0, x, s->cols - x, " scroll   any other key closes", SIZE_MAX, A_NORMAL, false);
        wnoutrefresh(b);
        return;
    }
    if (f && f->ops->hints) {
        const char *h = f->ops->hints(f);
        if (h && *h) {
            x += ui_put(b, 0, x, s->cols - x, h, SIZE_MAX, A_NORMAL, false);
            x += ui_put(b, 0, x, s->cols - x, "  ", 2, A_NORMAL, false);
        }
    }
    /* the page's keys first, then the global ones (q quit last); none
     * while a pane takes every key (typing) */
    bool typing = f && f->ops->typing && f->ops->typing(f);
    for (int i = 0; i < 2 * s->nbinds && x < s->cols && !typing; i++) {
        screen_binding *bd = &s->binds[i % s->nbinds];
        bool pass_global = i >= s->nbinds;
        if (!bd->label || (bd->page != -1 && bd->page != s->cur) || (bd->page == -1) != pass_global)
            continue;
        x += ui_put(b, 0, x, s->cols - x, bd->keyname, SIZE_MAX, ui_attr(UI_C_KEY), false);
        x += ui_put(b, 0, x, s->cols - x, " ", 1, A_NORMAL, false);
        x += ui_put(b, 0, x, s->cols - x, bd->label, SIZE_MAX, A_NORMAL, false);
        x += ui_put(b, 0, x, s->cols - x, "  ", 2, A_NORMAL, false);
    }
    wnoutrefresh(b);
}

static void draw_title(screen *s)
{
    WINDOW *t = s->titlew;
    werase(t);
    attr_t a = ui_attr(UI_C_STATUS);
    ui_fill(t, 0, 0, s->cols, a);
    const char *title = s->npages ? s->pages[s->cur].title : "ggscope";
    panel *f = screen_focused(s);
    char right[64];
    snprintf(right, sizeof right, " [%s] ", f ? f->ops->name : "");
    int rw = ui_width(right, SIZE_MAX);
    int room = s->cols - rw;
    ui_put(t, 0, 0, room > 0 ? room : s->cols, title, SIZE_MAX, a, true);
    if (room > 20)
        ui_put(t, 0, room, rw, right, SIZE_MAX, a | A_BOLD, false);
    wnoutrefresh(t);
}

bool screen_render(screen *s)
{
    if (!s->dirty)
        return false;
    if (!s->titlew || !s->barw)
        screen_relayout(s);
    if (s->full_repaint) {
        clearok(curscr, TRUE);
        s->full_repaint = false;
    }
    wnoutrefresh(stdscr);
    draw_title(s);
    if (s->npages) {
        page_t *pg = &s->pages[s->cur];
        for (int k = 0; k < pg->n; k++)
            if (pg->panels[k]->frame)
                draw_panel(s, pg->panels[k], k == pg->focus);
    }
    if (s->pager_open)
        pager_draw(s);
    draw_bar(s);
    doupdate();
    s->dirty = false;
    return true;
}

/* ---- jobs (the screen's list of running ones) ---- */

void screen_set_runner(screen *s, const ui_runner *r)
{
    s->runner = *r;
    s->has_runner = true;
}

int screen_submit(screen *s, ui_job *j)
{
    j->next_active = s->active;
    s->active = j;
    if (s->has_runner) {
        j->wake = s->runner.wake;
        j->wake_ctx = s->runner.ctx;
        if (s->runner.submit(s->runner.ctx, j) == 0)
            return 0;
        s->active = j->next_active;
        return -1;
    }
    j->work(j);
    screen_job_finished(s, j);
    return 0;
}

void screen_job_finished(screen *s, ui_job *j)
{
    for (ui_job **pp = &s->active; *pp; pp = &(*pp)->next_active) {
        if (*pp == j) {
            *pp = j->next_active;
            break;
        }
    }
    s->dirty = true;
    if (j->done)
        j->done(j);
}

int screen_cancel_jobs(screen *s)
{
    int n = 0;
    for (ui_job *j = s->active; j; j = j->next_active) {
        ui_job_cancel(j);
        n++;
    }
    return n;
}

int screen_jobs_running(const screen *s)
{
    int n = 0;
    for (ui_job *j = s->active; j; j = j->next_active)
        n++;
    return n;
}
