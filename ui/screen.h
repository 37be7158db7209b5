/* screen: the screen manager (htop's ScreenManager). It owns the terminal
 * (ncurses), the pages and their panes' windows, the layout, the focus, one
 * key table, the title line, the key bar, the help overlay (`?`), a text
 * pager overlay, a one-line prompt and transient messages. It draws a frame
 * only when something marked it dirty, with exactly one doupdate().
 *
 * A page is one full screen of panes (the explorer today; the quantization
 * error and chat screens later): its own panes, layout function, focus and
 * title. Key bindings are global or per page.
 *
 * Threads: every function here must be called on the loop thread (the one
 * that called screen_new). The only exception is ui_job_progress() (job.h),
 * which workers call; it touches atomics and the runner's wake function only. */
#ifndef GGSCOPE_SCREEN_H
#define GGSCOPE_SCREEN_H

#include <stdbool.h>
#include <stdint.h>

#include "job.h"
#include "panel.h"

/* Layout of a page: place its panes with screen_place() inside the area
 * (top, left, rows, cols); a pane not placed is hidden. `zoom` is set when
 * the user asked for the focused pane alone. */
typedef void (*screen_layout_fn)(screen *s, int page, int top, int left, int rows, int cols,
                                 bool zoom, void *ctx);

/* A global key: handler returns PANEL_* flags. */
typedef struct {
    int key;             /* UIK_* or a character */
    const char *keyname; /* "?", "Tab", "/" */
    const char *label;   /* short label for the key bar, NULL: only in the help */
    const char *help;    /* one line for the help overlay */
    int page;            /* page id, or -1 for every page */
    int (*fn)(screen *s, int key, void *ctx);
    void *ctx;
} screen_binding;

typedef struct {
    bool mono;           /* force monochrome */
    bool mouse;          /* enable mouse reporting (default on) */
} screen_opts;

/* Take over the terminal (initscr, cbreak, noecho, keypad, mouse, colours).
 * NULL if the terminal cannot be initialised. */
screen *screen_new(const screen_opts *opts);

/* Give the terminal back (endwin) and free every page and pane (their
 * destroy callbacks run). Accepts NULL. Jobs must have finished first. */
void screen_free(screen *s);

/* Mouse reporting on (clicks and the wheel, as screen_opts.mouse) or off
 * (the terminal's own selection works). */
void screen_set_mouse(screen *s, bool on);

/* Restore the terminal without freeing anything (for a signal or fatal path). */
void screen_restore_terminal(screen *s);

/* Add a page; returns its id (>= 0) or -1. `title` is copied. */
int screen_add_page(screen *s, const char *name, screen_layout_fn layout, void *ctx);
/* Set the title line of a page. */
void screen_set_title(screen *s, int page, const char *title);
/* Show page `page` (its focus is kept). */
void screen_show_page(screen *s, int page);

/* Add a pane to a page; the screen owns it from now on (destroy on free). */
int screen_add_panel(screen *s, int page, panel *p);
/* From a layout function: give pane `p` its frame. */
void screen_place(screen *s, panel *p, int y, int x, int h, int w);
/* Focus a pane (switching page if needed). */
void screen_focus(screen *s, panel *p);
panel *screen_focused(const screen *s);

/* Bind a key (copied). Later bindings of the same key and page win. */
void screen_bind(screen *s, const screen_binding *b);

/* ---- input and output (loop thread) ---- */

/* Handle one key (UIK_* encoding); returns PANEL_* flags (PANEL_QUIT to leave). */
int screen_key(screen *s, int key);
/* Read and handle every pending key and mouse event without blocking. */
int screen_drain_input(screen *s);
/* The terminal changed size: re-read it and lay out again. */
void screen_resize(screen *s, int rows, int cols);
/* Ask for a redraw. */
void screen_dirty(screen *s);
/* Draw if dirty (one doupdate). Returns true when a frame was drawn. */
bool screen_render(screen *s);
/* Periodic tick (the app calls it every 100 ms; `now_ms` is unused: the
 * monotonic clock is read here): expires messages; true if it dirtied. */
bool screen_tick(screen *s, uint64_t now_ms);

/* ui_put of text from a file (a name, a key, a string): drawn in the
 * terminal form of engine/base/textesc.h (control characters as \xNN, invalid
 * bytes as \xNN, C1 and bidi controls as \uXXXX, backslash doubled); only
 * the part that can be on screen is escaped. Returns the columns used. */
int screen_put_text(WINDOW *w, int y, int x, int maxcols, const char *text, size_t len, attr_t a, bool ellipsis);

/* A transient message in the key bar line for ~4 s (control characters and
 * invalid bytes in it escaped). */
void screen_message(screen *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- overlays ---- */

/* Open a scrollable, word-wrapped text viewer over the panes (the text is
 * copied). Esc/q closes it. */
void screen_pager(screen *s, const char *title, const char *text, size_t len);
/* The help overlay: every key of the key table and of the current page's panes. */
void screen_help(screen *s);
/* A one-line prompt in the key bar line: `on_submit` gets the text on Enter
 * (not called on Esc). `on_change` (optional) gets it after each edit. */
void screen_prompt(screen *s, const char *label,
                   void (*on_submit)(screen *s, const char *text, void *ctx),
                   void (*on_change)(screen *s, const char *text, void *ctx), void *ctx);

/* ---- jobs (job.h) ---- */

/* Set how jobs run (copied). Without a runner they run synchronously. */
void screen_set_runner(screen *s, const ui_runner *r);
/* Start a job; `done` runs later on this thread. 0 on success. */
int screen_submit(screen *s, ui_job *j);
/* Called by the runner on the loop thread when `work` has returned. */
void screen_job_finished(screen *s, ui_job *j);
/* Cancel every running job; returns how many are still running. */
int screen_cancel_jobs(screen *s);
int screen_jobs_running(const screen *s);

#endif
