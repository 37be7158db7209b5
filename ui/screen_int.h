/* screen's internal header: the screen's state, shared by screen.c (pages,
 * layout, overlays, drawing, jobs) and screen_input.c (keys from the
 * terminal). Not for other modules. */
#ifndef GGSCOPE_SCREEN_INT_H
#define GGSCOPE_SCREEN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "screen.h"

#define MAX_PAGES 8
#define MAX_PANELS 8

typedef struct {
    char name[32];
    char title[512];
    screen_layout_fn layout;
    void *ctx;
    panel *panels[MAX_PANELS];
    int n;
    int focus;
    bool zoom;
} page_t;

typedef struct {
    size_t off, len;
} line_t;

struct screen {
    page_t pages[MAX_PAGES];
    int npages, cur;
    screen_binding *binds;
    int nbinds;
    int rows, cols;
    WINDOW *titlew, *barw, *overw;
    bool dirty, full_repaint;
    bool mono;
    char msg[256];
    uint64_t msg_until;
    /* pager overlay */
    bool pager_open;
    char pager_title[128];
    char *pager_text;
    size_t pager_len;
    line_t *plines;
    size_t nplines, plines_cap;
    int pager_wrap_cols;
    size_t pager_top;
    /* prompt */
    bool prompt_open;
    char prompt_label[32];
    char prompt_buf[256];
    size_t prompt_len;
    void (*prompt_submit)(screen *, const char *, void *);
    void (*prompt_change)(screen *, const char *, void *);
    void *prompt_ctx;
    /* jobs */
    ui_runner runner;
    bool has_runner;
    ui_job *active;
};

/* Place the panes of the page shown again (its layout function). */
void screen_relayout(screen *s);
/* A key while the pager / the prompt is open. Returns PANEL_* flags. */
int screen_pager_key(screen *s, int key);
int screen_prompt_key(screen *s, int key);

#endif
