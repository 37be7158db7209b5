/* panel: one rectangular pane of a screen (htop's Panel). A pane draws its
 * content and answers keys; the screen manager (screen.h) owns its window,
 * frame, position, focus and the key bar.
 *
 * Threads: every function here and every callback of panel_ops runs on the
 * loop thread only (the thread that created the screen). Workers never call
 * them; see job.h for how workers hand results back. */
#ifndef GGSCOPE_PANEL_H
#define GGSCOPE_PANEL_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct panel panel;
typedef struct screen screen;

/* Keys: a Unicode code point for characters (Enter is '\n', Esc 27, Tab '\t',
 * Backspace UIK_BACKSPACE), ncurses' KEY_* codes as UIK_FN(KEY_*). */
#define UIK_FN(k) (0x200000 | (k))
#define UIK_UP UIK_FN(KEY_UP)
#define UIK_DOWN UIK_FN(KEY_DOWN)
#define UIK_LEFT UIK_FN(KEY_LEFT)
#define UIK_RIGHT UIK_FN(KEY_RIGHT)
#define UIK_PGUP UIK_FN(KEY_PPAGE)
#define UIK_PGDN UIK_FN(KEY_NPAGE)
#define UIK_HOME UIK_FN(KEY_HOME)
#define UIK_END UIK_FN(KEY_END)
#define UIK_BTAB UIK_FN(KEY_BTAB)
#define UIK_BACKSPACE UIK_FN(KEY_BACKSPACE)
#define UIK_DC UIK_FN(KEY_DC)
#define UIK_ESC 27
#define UIK_ENTER '\n'
#define UIK_TAB '\t'
#define UIK_CTRL(c) ((c) & 0x1f)

/* Results of on_key / on_mouse, or-ed together. */
enum {
    PANEL_IGNORED = 0,       /* not mine: the screen tries its key table */
    PANEL_HANDLED = 1 << 0,
    PANEL_REDRAW = 1 << 1,   /* the screen must redraw */
    PANEL_QUIT = 1 << 2,     /* leave the application */
};

/* Mouse events given to on_mouse (coordinates relative to the content area). */
enum { UI_MOUSE_CLICK = 1, UI_MOUSE_DOUBLE, UI_MOUSE_WHEEL_UP, UI_MOUSE_WHEEL_DOWN };

/* One line of a pane's help: key name and what it does. */
typedef struct {
    const char *key;
    const char *help;
} panel_keyhelp;

typedef struct {
    const char *name;   /* "Metadata", "Tensors", ... */
    /* Text of the frame's top line (after the name); may be NULL. */
    void (*title)(panel *p, char *buf, size_t cap);
    /* Draw the content into `w` (already erased; size p->ih x p->iw). */
    void (*draw)(panel *p, WINDOW *w, bool focused);
    /* A key while the pane has the focus. Returns PANEL_* flags. */
    int (*on_key)(panel *p, int key);
    /* The content area changed size (optional). */
    void (*on_resize)(panel *p, int h, int w);
    /* A mouse event inside the content area (optional). */
    int (*on_mouse)(panel *p, int y, int x, int event);
    /* Short hints for the key bar while focused, e.g. "f filter  s sort" (optional). */
    const char *(*hints)(panel *p);
    /* Whether the pane is reading text (a filter line): then every printable
     * key goes to it, even those of the global key table (optional). */
    bool (*typing)(panel *p);
    /* Free the pane's state (optional). */
    void (*destroy)(panel *p);
    const panel_keyhelp *keys;   /* for the help overlay, NULL-terminated */
} panel_ops;

struct panel {
    const panel_ops *ops;
    void *self;        /* the pane's own state */
    screen *scr;       /* set by screen_add_panel */
    int page;          /* page it belongs to */
    WINDOW *frame;     /* owned by the screen */
    WINDOW *win;       /* content area (inside the frame) */
    int y, x, h, w;    /* frame position and size; h == 0: hidden */
    int ih, iw;        /* content size */
};

/* ---- colours / attributes (monochrome fallbacks when colours are absent or NO_COLOR is set) ---- */
typedef enum {
    UI_C_NORMAL, UI_C_FRAME, UI_C_FRAME_FOCUS, UI_C_TITLE, UI_C_SELECT, UI_C_SELECT_DIM,
    UI_C_DIM, UI_C_KEY, UI_C_HEADER, UI_C_GROUP, UI_C_NUMBER, UI_C_STRING, UI_C_BAR,
    UI_C_MATCH, UI_C_ERROR, UI_C_FIELD, UI_C_FIELD_CUR, UI_C_STATUS,
    UI_C_COUNT
} ui_color;

/* Set up colour pairs (after initscr). `mono` forces the monochrome palette. */
void ui_colors_init(bool mono);
/* Attribute for a role. */
attr_t ui_attr(ui_color c);

/* ---- text helpers (UTF-8 in, wide characters out) ---- */

/* Display width in columns of `len` bytes of UTF-8 (SIZE_MAX: up to NUL).
 * Control characters count as one column (they are drawn as symbols);
 * invalid bytes as one column each. */
int ui_width(const char *s, size_t len);

/* Draw `len` bytes of UTF-8 (SIZE_MAX: NUL-terminated) at (y, x), at most
 * `maxcols` columns, with attribute `a`. Newline, tab and other control
 * characters are shown as visible symbols (↵ → ·); invalid bytes as �. A wide
 * character that would cross the limit is not drawn. When `ellipsis` is set
 * and the text does not fit, the last column shows "…". Returns the columns used. */
int ui_put(WINDOW *w, int y, int x, int maxcols, const char *s, size_t len, attr_t a, bool ellipsis);

/* printf-style ui_put (no ellipsis). */
int ui_putf(WINDOW *w, int y, int x, int maxcols, attr_t a, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Draw a frame around `w` in attribute `a` (Unicode lines in a UTF-8 locale, else ACS). */
void ui_box(WINDOW *w, attr_t a);

/* Fill `n` columns with spaces in attribute `a`. */
void ui_fill(WINDOW *w, int y, int x, int n, attr_t a);

/* Byte length of the prefix of `s` (len bytes) that fits in `cols` columns. */
size_t ui_fit(const char *s, size_t len, int cols);

/* "4.1K", "1.3M", "7.2B" for parameter counts (3 significant figures). */
char *ui_fmt_count(uint64_t n, char *buf, size_t cap);
/* "512 B", "16 KiB", "1.1 MiB", "2.0 GiB". */
char *ui_fmt_bytes(uint64_t n, char *buf, size_t cap);
/* Shape "64×64×1": ne[0..n_dims-1] joined by ×. */
char *ui_fmt_shape(const uint64_t *ne, uint32_t n_dims, char *buf, size_t cap);

#endif
