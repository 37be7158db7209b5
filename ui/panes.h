/* panes: the explorer's panes (metadata tree, tensor list, tensor detail).
 * Every function runs on the loop thread (see screen.h). */
#ifndef GGSCOPE_PANES_H
#define GGSCOPE_PANES_H

#include <stdint.h>

#include "gguf.h"
#include "panel.h"

/* Metadata tree of `f` (not owned; must outlive the pane). */
panel *meta_pane_new(const gguf_file *f);
/* Light matches of q (NULL: none) in keys and values; the pane copies q. */
void meta_pane_set_match(panel *p, const char *q);
/* Show key `kv` (and, when elem >= 0, element `elem` of its array): expand
 * what hides it and put the cursor on it. */
void meta_pane_reveal(panel *p, uint64_t kv, int64_t elem);

/* Tensor list of `f`. `on_select` is called when the selected tensor changes
 * (tensor index, or -1 on a group row). */
panel *tensors_pane_new(const gguf_file *f, void (*on_select)(void *ctx, int64_t ti), void *ctx);
/* Columns the list wants (frame included) to show every column whole. */
int tensors_pane_width(const panel *p);
/* Light matches of q (NULL: none) in the names; the pane copies q. */
void tensors_pane_set_match(panel *p, const char *q);
/* Select tensor `ti` (clearing a filter that hides it). */
void tensors_pane_reveal(panel *p, uint64_t ti);
int64_t tensors_pane_selected(const panel *p);

/* Views of the tensor detail pane. */
enum { DETAIL_HEX, DETAIL_VALUES, DETAIL_HIST };

/* Detail of one tensor of `f`: hex, values, histogram. */
panel *detail_pane_new(const gguf_file *f);
void detail_pane_set_tensor(panel *p, int64_t ti);
void detail_pane_set_view(panel *p, int view);
/* Values view: put row `row` at the top. */
void detail_pane_goto_row(panel *p, uint64_t row);
/* Cancel the histogram job if one runs; true if one did. */
bool detail_pane_cancel(panel *p);

/* Flags of panes_put_match. */
enum {
    PANES_ELLIPSIS = 1 << 0,   /* "…" in the last column when the text is cut */
    PANES_ESCAPED = 1 << 1,    /* s is in its terminal form already (drawn as is) */
};
/* Draw s[0..n) as screen_put_text does (text from the file, escaped; at
 * most maxcols columns), its first case-insensitive match of q (NULL or "":
 * none) lit as a match. Returns the columns used. */
int panes_put_match(WINDOW *w, int y, int x, int maxcols, const char *s, size_t n, attr_t a, const char *q,
                    unsigned flags);
/* Byte offset of the first case-insensitive (ASCII) match of q[0..qn) in
 * s[0..n), or SIZE_MAX. */
size_t panes_find(const char *s, size_t n, const char *q, size_t qn);

#endif
