/* list: the cursor and scrolling of a pane that shows `count` rows `page`
 * at a time, written once for every pane and page that scrolls (explorer
 * panes, qerr table, chat transcript, the pager).
 *
 * Keys (list_key): ↑ k / ↓ j one row; PgUp / PgDn a page (page - 1 rows,
 * one row of the last page stays in view), the view scrolling along so the
 * cursor keeps its line; Home / End G the first / last row. A list without
 * a cursor (a pager, a transcript) moves its view the same way
 * (list_scroll_key). Pane-specific aliases (g, b, space) are the pane's.
 *
 * A plain struct, no allocation, no ncurses: tests drive it directly. */
#ifndef GGSCOPE_LIST_H
#define GGSCOPE_LIST_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint64_t count;   /* rows */
    uint64_t cur;     /* the cursor's row: < count (0 when empty) */
    uint64_t top;     /* the first row shown */
    uint64_t page;    /* rows shown at a time (>= 1) */
} list;

/* Results of list_key / list_scroll_key, or-ed. */
enum { LIST_IGNORED = 0, LIST_HANDLED = 1 << 0, LIST_MOVED = 1 << 1 };

/* Set the row count and the page height (0 counts as 1), then list_fit. */
void list_set(list *l, uint64_t count, uint64_t page);

/* Keep the cursor on a row and in view, moving the view the least; no
 * empty rows below the last while the rows fill the page. */
void list_fit(list *l);

/* The largest `top`: the last page. */
uint64_t list_max_top(const list *l);

/* Go to `row` (clamped to the last row); kept in view. Returns whether the
 * cursor moved. */
bool list_goto(list *l, uint64_t row);

/* Move the cursor by d rows (clamped); kept in view. Returns whether it moved. */
bool list_move(list *l, int64_t d);

/* Put the cursor in the middle of the view (revealing a search result). */
void list_center(list *l);

/* A cursor key (see above). LIST_IGNORED when it is not one; else
 * LIST_HANDLED, with LIST_MOVED when the cursor or the view moved. */
int list_key(list *l, int key);

/* Without a cursor: move the view by d rows (clamped to 0..list_max_top).
 * Returns whether it moved. */
bool list_scroll(list *l, int64_t d);

/* The mouse wheel: move the view by d rows (clamped), the cursor dragged
 * along to stay in view. Returns whether the view moved. */
bool list_wheel(list *l, int64_t d);

/* list_key for a list without a cursor: the same keys move the view. */
int list_scroll_key(list *l, int key);

#endif
