/* Tensor list: grouped by block (blk.N) or flat, sortable by any column,
 * filtered as you type, with totals per type. Column widths follow the
 * content (measured once: the file does not change). */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "list.h"
#include "panes.h"
#include "screen.h"
#include "textesc.h"

enum { COL_ORDER, COL_NAME, COL_TYPE, COL_SHAPE, COL_PARAMS, COL_BYTES, COL_OFFSET, NCOLS };
static const char *const col_names[NCOLS] = {"file order", "name", "type", "shape", "params", "bytes", "offset"};

typedef struct {
    int64_t blk;     /* block number, -1 when the name has no blk.N prefix */
    uint32_t ti;     /* tensor index */
} tent;

typedef struct {
    int64_t ti;      /* tensor index, or -1 for a group header */
    int64_t blk;
    uint32_t n_in_group;
    uint64_t bytes_in_group;
} trow;

typedef struct {
    panel base;
    const gguf_file *f;
    void (*on_select)(void *, int64_t);
    void *ctx;
    tent *ents;
    uint32_t n;
    int64_t max_blk;
    bool *collapsed;     /* per block number */
    trow *rows;
    uint32_t nrows;
    list l;              /* cursor and view over rows (count: nrows) */
    int sort_col;
    bool sort_desc;
    bool flat;           /* one list across blocks (no group rows) */
    int cw[NCOLS];       /* content width of each column (header included) */
    int name_w[2];       /* of the name column: grouped (indented, blk.N. cut), flat */
    char match[128];     /* the search's text, lit in names ("" none) */
    char filter[128];
    size_t filter_len;
    bool typing;
    int64_t last_selected;
    /* totals of the filtered set, per type */
    uint32_t tot_n[GGTYPE_COUNT + 1];
    uint64_t tot_bytes[GGTYPE_COUNT + 1];
    uint64_t tot_params, all_bytes;
    uint32_t shown;
} tensors_pane;

static const gguf_tensor *T(const tensors_pane *t, uint32_t ti)
{
    return gguf_tensor_at(t->f, ti);
}

static int64_t parse_blk(gguf_str name)
{
    if (name.len < 5 || memcmp(name.ptr, "blk.", 4) != 0)
        return -1;
    int64_t v = 0;
    uint64_t i = 4;
    if (!isdigit((unsigned char)name.ptr[i]))
        return -1;
    for (; i < name.len && isdigit((unsigned char)name.ptr[i]) && v < 100000000; i++)
        v = v * 10 + (name.ptr[i] - '0');
    if (i < name.len && name.ptr[i] != '.')
        return -1;
    return v;
}

static const tensors_pane *sort_ctx;

static int cmp_str(gguf_str a, gguf_str b)
{
    uint64_t n = a.len < b.len ? a.len : b.len;
    int c = memcmp(a.ptr, b.ptr, (size_t)n);
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

static int cmp_ent(const void *pa, const void *pb)
{
    const tent *a = pa, *b = pb;
    const tensors_pane *t = sort_ctx;
    /* grouped: non-block tensors first, then blocks by number */
    if (!t->flat && a->blk != b->blk)
        return a->blk < b->blk ? -1 : 1;
    const gguf_tensor *x = T(t, a->ti), *y = T(t, b->ti);
    int c = 0;
    switch (t->sort_col) {
    case COL_NAME: c = cmp_str(x->name, y->name); break;
    case COL_TYPE: c = strcmp(ggtype_name(x->type), ggtype_name(y->type)); break;
    case COL_SHAPE:
        for (int d = 3; d >= 0 && !c; d--)
            c = (x->ne[d] > y->ne[d]) - (x->ne[d] < y->ne[d]);
        break;
    case COL_PARAMS: c = (x->n_elements > y->n_elements) - (x->n_elements < y->n_elements); break;
    case COL_BYTES: c = (x->n_bytes > y->n_bytes) - (x->n_bytes < y->n_bytes); break;
    case COL_OFFSET:
        c = (x->shard > y->shard) - (x->shard < y->shard);
        if (!c)
            c = (x->offset > y->offset) - (x->offset < y->offset);
        break;
    default: break;
    }
    if (t->sort_desc)
        c = -c;
    if (!c)
        c = (a->ti > b->ti) - (a->ti < b->ti);
    return c;
}

static bool ci_contains(const char *hay, size_t hn, const char *needle, size_t nn)
{
    if (nn == 0)
        return true;
    for (size_t i = 0; i + nn <= hn; i++) {
        size_t k = 0;
        while (k < nn && tolower((unsigned char)hay[i + k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == nn)
            return true;
    }
    return false;
}

static bool matches(const tensors_pane *t, const gguf_tensor *x)
{
    if (!t->filter_len)
        return true;
    if (ci_contains(x->name.ptr, (size_t)x->name.len, t->filter, t->filter_len))
        return true;
    const char *tn = ggtype_name(x->type);
    return strlen(tn) == t->filter_len && ci_contains(tn, strlen(tn), t->filter, t->filter_len);
}

/* Rebuild the visible rows (sort, filter, groups), keeping the selection. */
static void rebuild(tensors_pane *t)
{
    int64_t keep = t->nrows && t->l.cur < t->nrows ? t->rows[t->l.cur].ti : -1;
    int64_t keep_blk = t->nrows && t->l.cur < t->nrows ? t->rows[t->l.cur].blk : -2;
    sort_ctx = t;
    qsort(t->ents, t->n, sizeof *t->ents, cmp_ent);
    memset(t->tot_n, 0, sizeof t->tot_n);
    memset(t->tot_bytes, 0, sizeof t->tot_bytes);
    t->tot_params = t->all_bytes = 0;
    t->shown = 0;
    t->nrows = 0;
    for (uint32_t i = 0; i < t->n;) {
        int64_t blk = t->flat ? -1 : t->ents[i].blk;
        uint32_t j = i;
        uint32_t hdr = UINT32_MAX;
        if (blk >= 0) {
            hdr = t->nrows;
            t->rows[t->nrows++] = (trow){-1, blk, 0, 0};
        }
        bool fold = blk >= 0 && !t->filter_len && t->collapsed[blk];
        for (; j < t->n && (t->flat || t->ents[j].blk == blk); j++) {
            const gguf_tensor *x = T(t, t->ents[j].ti);
            if (!matches(t, x))
                continue;
            uint32_t ty = x->type < GGTYPE_COUNT ? x->type : GGTYPE_COUNT;
            t->tot_n[ty]++;
            t->tot_bytes[ty] += x->n_bytes;
            t->tot_params += x->n_elements;
            t->all_bytes += x->n_bytes;
            t->shown++;
            if (hdr != UINT32_MAX) {
                t->rows[hdr].n_in_group++;
                t->rows[hdr].bytes_in_group += x->n_bytes;
            }
            if (!fold)
                t->rows[t->nrows++] = (trow){t->ents[j].ti, t->flat ? -1 : blk, 0, 0};
        }
        if (hdr != UINT32_MAX && t->rows[hdr].n_in_group == 0)
            t->nrows = hdr;   /* an empty group is not shown */
        i = j;
    }
    /* keep the selection; else the first tensor row */
    t->l.cur = 0;
    for (uint32_t r = 0; r < t->nrows; r++)
        if (t->rows[r].ti >= 0) {
            t->l.cur = r;
            break;
        }
    for (uint32_t r = 0; r < t->nrows; r++)
        if ((keep >= 0 && t->rows[r].ti == keep) || (keep < 0 && t->rows[r].ti < 0 && t->rows[r].blk == keep_blk)) {
            t->l.cur = r;
            break;
        }
}

static void notify(tensors_pane *t)
{
    int64_t ti = t->nrows ? t->rows[t->l.cur].ti : -1;
    if (ti != t->last_selected) {
        t->last_selected = ti;
        if (t->on_select)
            t->on_select(t->ctx, ti);
    }
}

static void tensors_title(panel *p, char *buf, size_t cap)
{
    tensors_pane *t = p->self;
    char sortinfo[64] = "";
    if (t->sort_col != COL_ORDER || t->flat)
        snprintf(sortinfo, sizeof sortinfo, " · %ssort: %s %s", t->flat ? "flat · " : "", col_names[t->sort_col],
                 t->sort_col == COL_ORDER ? "" : t->sort_desc ? "↓" : "↑");
    if (t->filter_len || t->typing)
        snprintf(buf, cap, "%u of %u · filter: %s%s%s", t->shown, t->n, t->filter, t->typing ? "▏" : "", sortinfo);
    else
        snprintf(buf, cap, "%u%s", t->n, sortinfo);
}

typedef struct {
    int col;
    int width;
} colspec;

/* Columns that fit in `w`, each as wide as its content and a gap; the name
 * column shrinks to 18 before a column drops from the right; what is left
 * over stays at the right end. */
static int layout_cols(const tensors_pane *t, int w, colspec *cs)
{
    int order[] = {COL_TYPE, COL_SHAPE, COL_PARAMS, COL_BYTES, COL_OFFSET};
    int n = 0, used = 0, name = t->name_w[t->flat] + 1;
    int name_min = name < 18 ? name : 18;
    cs[n++] = (colspec){COL_NAME, 0};
    for (int i = 0; i < 5; i++) {
        int c = order[i], cw = t->cw[c] + 2;
        if (used + cw + name_min > w)
            break;
        cs[n++] = (colspec){c, cw};
        used += cw;
    }
    cs[0].width = w - used < name ? w - used : name;
    return n;
}

static void cell_text(const tensors_pane *t, const gguf_tensor *x, int col, char *buf, size_t cap)
{
    switch (col) {
    case COL_TYPE: snprintf(buf, cap, "%s", x->type_known ? ggtype_name(x->type) : "?"); break;
    case COL_SHAPE: ui_fmt_shape(x->ne, x->n_dims, buf, cap); break;
    case COL_PARAMS: ui_fmt_count(x->n_elements, buf, cap); break;
    case COL_BYTES: ui_fmt_bytes(x->n_bytes, buf, cap); break;
    case COL_OFFSET:
        if (gguf_shard_count(t->f) > 1)
            snprintf(buf, cap, "%u:0x%" PRIx64, x->shard, x->abs_offset);
        else
            snprintf(buf, cap, "0x%" PRIx64, x->abs_offset);
        break;
    default: buf[0] = 0;
    }
}

/* Columns of a name from the file in its escaped form (as drawn). */
static int esc_width(const char *s, size_t n)
{
    char buf[512];
    textesc_term(buf, sizeof buf, s, n, 0);
    return ui_width(buf, SIZE_MAX);
}

/* The content widths of the columns (every tensor, and the headers with a
 * sort arrow). */
static void measure(tensors_pane *t)
{
    for (int c = 0; c < NCOLS; c++)
        t->cw[c] = ui_width(col_names[c], SIZE_MAX) + 1;
    t->name_w[0] = t->name_w[1] = 2 + t->cw[COL_NAME];
    for (uint32_t i = 0; i < t->n; i++) {
        const gguf_tensor *x = T(t, t->ents[i].ti);
        char cell[48];
        for (int c = COL_TYPE; c < NCOLS; c++) {
            cell_text(t, x, c, cell, sizeof cell);
            int wd = ui_width(cell, SIZE_MAX);
            if (wd > t->cw[c])
                t->cw[c] = wd;
        }
        int nw = esc_width(x->name.ptr, (size_t)x->name.len);
        const char *d = t->ents[i].blk >= 0 ? memchr(x->name.ptr + 4, '.', (size_t)x->name.len - 4) : NULL;
        int gw = d ? 4 + esc_width(d + 1, (size_t)(x->name.ptr + x->name.len - d - 1)) : 2 + nw;
        if (gw > t->name_w[0])
            t->name_w[0] = gw;
        if (2 + nw > t->name_w[1])
            t->name_w[1] = 2 + nw;
    }
}

static void draw_totals(tensors_pane *t, WINDOW *w, int y, int width)
{
    char buf[1024];
    size_t o = 0;
    char b1[32], b2[32];
    o += (size_t)snprintf(buf + o, sizeof buf - o, "Σ %u tensors %s params %s", t->shown,
                          ui_fmt_count(t->tot_params, b1, sizeof b1), ui_fmt_bytes(t->all_bytes, b2, sizeof b2));
    for (uint32_t ty = 0; ty <= GGTYPE_COUNT && o < sizeof buf - 64; ty++)
        if (t->tot_n[ty])
            o += (size_t)snprintf(buf + o, sizeof buf - o, " │ %s %u · %s", ty < GGTYPE_COUNT ? ggtype_name(ty) : "?",
                                  t->tot_n[ty], ui_fmt_bytes(t->tot_bytes[ty], b1, sizeof b1));
    ui_fill(w, y, 0, width, ui_attr(UI_C_HEADER));
    ui_put(w, y, 1, width - 1, buf, SIZE_MAX, ui_attr(UI_C_HEADER), true);
}

static int table_height(const panel *p)
{
    return p->ih - 2;   /* header and totals lines */
}

static void tensors_draw(panel *p, WINDOW *w, bool focused)
{
    tensors_pane *t = p->self;
    int width = p->iw, h = table_height(p);
    if (h < 1)
        return;
    if (h > 0)
        list_set(&t->l, t->nrows, (uint64_t)h);
    colspec cs[NCOLS];
    int nc = layout_cols(t, width, cs);
    const char *hl = t->filter_len ? t->filter : t->match[0] ? t->match : NULL;
    /* header */
    int x = 0;
    for (int c = 0; c < nc; c++) {
        char hd[32];
        snprintf(hd, sizeof hd, "%s%s", c == 0 ? "  " : "", col_names[cs[c].col]);
        if (cs[c].col == t->sort_col)
            snprintf(hd + strlen(hd), sizeof hd - strlen(hd), "%s", t->sort_desc ? "↓" : "↑");
        ui_put(w, 0, x, cs[c].width - 1, hd, SIZE_MAX, ui_attr(UI_C_HEADER), true);
        x += cs[c].width;
    }
    attr_t selattr = ui_attr(focused ? UI_C_SELECT : UI_C_SELECT_DIM);
    for (int y = 0; y < h; y++) {
        uint32_t r = t->l.top + (uint32_t)y;
        if (r >= t->nrows)
            break;
        trow *row = &t->rows[r];
        bool sel = r == t->l.cur;
        attr_t sa = sel ? selattr : 0;
        if (sel) {
            ui_fill(w, y + 1, 0, width, selattr);
            ui_put(w, y + 1, 0, 1, "›", SIZE_MAX, selattr, false);   /* visible without colours too */
        }
        if (row->ti < 0) {
            bool fold = !t->filter_len && t->collapsed[row->blk];
            char b[32];
            int xx = 1 + ui_putf(w, y + 1, 1, width - 1, sa ? sa : ui_attr(UI_C_GROUP), "%s blk.%" PRId64, fold ? "▸" : "▾",
                             row->blk);
            ui_putf(w, y + 1, xx, width - xx, sa ? sa : ui_attr(UI_C_DIM), "  %u tensors · %s", row->n_in_group,
                    ui_fmt_bytes(row->bytes_in_group, b, sizeof b));
            continue;
        }
        const gguf_tensor *xt = T(t, (uint32_t)row->ti);
        x = 0;
        for (int c = 0; c < nc; c++) {
            if (cs[c].col == COL_NAME) {
                int ind = row->blk >= 0 ? 4 : 2;
                if (cs[c].width - ind - 1 < 1)
                    continue;
                gguf_str nm = xt->name;
                if (row->blk >= 0) {   /* strip "blk.N." inside a group */
                    const char *d = memchr(nm.ptr + 4, '.', (size_t)nm.len - 4);
                    if (d) {
                        nm.len -= (uint64_t)(d + 1 - nm.ptr);
                        nm.ptr = d + 1;
                    }
                }
                panes_put_match(w, y + 1, ind, cs[c].width - ind - 1, nm.ptr, (size_t)nm.len, sa, hl, PANES_ELLIPSIS);
            } else {
                char cell[48];
                cell_text(t, xt, cs[c].col, cell, sizeof cell);
                ui_color role = cs[c].col == COL_TYPE ? UI_C_STRING : UI_C_NORMAL;
                ui_put(w, y + 1, x, cs[c].width - 1, cell, SIZE_MAX, sa ? sa : ui_attr(role), true);
            }
            x += cs[c].width;
        }
    }
    if (t->nrows == 0)
        ui_put(w, 1, 2, width - 2, t->filter_len ? "no tensor matches the filter" : "no tensors", SIZE_MAX,
               ui_attr(UI_C_DIM), false);
    draw_totals(t, w, p->ih - 1, width);
}

static void move_to(tensors_pane *t, int64_t r)
{
    if (t->nrows == 0)
        return;
    t->l.count = t->nrows;
    list_goto(&t->l, r < 0 ? 0 : (uint64_t)r);
    notify(t);
}

static int toggle_group(tensors_pane *t, int want /* -1 toggle */)
{
    if (!t->nrows || t->filter_len)
        return PANEL_HANDLED;
    trow *row = &t->rows[t->l.cur];
    if (row->blk < 0)
        return PANEL_HANDLED;
    bool now = t->collapsed[row->blk];
    bool next = want < 0 ? !now : want;
    if (row->ti >= 0 && !next)
        return PANEL_HANDLED;
    t->collapsed[row->blk] = next;
    int64_t blk = row->blk;
    rebuild(t);
    for (uint32_t r = 0; r < t->nrows; r++)
        if (t->rows[r].ti < 0 && t->rows[r].blk == blk)
            t->l.cur = r;
    notify(t);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int tensors_key(panel *p, int key)
{
    tensors_pane *t = p->self;
    if (key == UIK_CTRL('u') && (t->typing || t->filter_len)) {   /* clear the filter (as a shell's line) */
        t->filter_len = 0;
        t->filter[0] = 0;
        rebuild(t);
        notify(t);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    if (t->typing) {
        if (key == UIK_ENTER || key == UIK_ESC || key == UIK_DOWN || key == UIK_UP) {
            t->typing = false;
            if (key == UIK_ESC) {
                t->filter_len = 0;
                t->filter[0] = 0;
                rebuild(t);
                notify(t);
            }
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        if (key == UIK_BACKSPACE) {
            while (t->filter_len > 0 && ((unsigned char)t->filter[--t->filter_len] & 0xC0) == 0x80)
                ;
            t->filter[t->filter_len] = 0;
        } else if (key >= 0x20 && key < 0x7f && t->filter_len + 1 < sizeof t->filter) {
            t->filter[t->filter_len++] = (char)key;
            t->filter[t->filter_len] = 0;
        } else {
            return PANEL_HANDLED;
        }
        rebuild(t);
        notify(t);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    list_set(&t->l, t->nrows, (uint64_t)(table_height(p) > 0 ? table_height(p) : 1));
    if (list_key(&t->l, key)) {
        if (t->nrows)
            notify(t);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    switch (key) {
    case UIK_LEFT: case 'h': return toggle_group(t, 1);
    case UIK_RIGHT: case 'l': return toggle_group(t, 0);
    case UIK_ENTER: case ' ':
        if (t->nrows && t->rows[t->l.cur].ti < 0)
            return toggle_group(t, -1);
        return PANEL_IGNORED;   /* the explorer focuses the detail pane */
    case 'f':
        t->typing = true;
        break;
    case UIK_ESC:
        if (!t->filter_len)
            return PANEL_IGNORED;
        t->filter_len = 0;
        t->filter[0] = 0;
        rebuild(t);
        notify(t);
        break;
    case 's':
        t->sort_col = (t->sort_col + 1) % NCOLS;
        rebuild(t);
        break;
    case 'a':   /* flat across blocks, largest first (as ncdu) / grouped by block */
        t->flat = !t->flat;
        if (t->flat && t->sort_col == COL_ORDER)
            t->sort_col = COL_BYTES, t->sort_desc = true;
        rebuild(t);
        notify(t);
        if (p->scr)
            screen_focus(p->scr, p);   /* lays the page out again: the names' width changed */
        break;
    case 'S': case 'r':
        t->sort_desc = !t->sort_desc;
        rebuild(t);
        break;
    case '1': case '2': case '3': case '4': case '5': case '6': {
        int c = key - '0';
        if (t->sort_col == c)
            t->sort_desc = !t->sort_desc;
        else
            t->sort_col = c, t->sort_desc = false;
        rebuild(t);
        break;
    }
    case '0':
        t->sort_col = COL_ORDER;
        t->sort_desc = false;
        rebuild(t);
        break;
    case '+': case '*':
        if (t->max_blk >= 0)
            memset(t->collapsed, 0, (size_t)t->max_blk + 1);
        rebuild(t);
        break;
    case '-':
        if (t->max_blk >= 0)
            memset(t->collapsed, 1, (size_t)t->max_blk + 1);
        rebuild(t);
        notify(t);
        break;
    default:
        return PANEL_IGNORED;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int tensors_mouse(panel *p, int y, int x, int event)
{
    tensors_pane *t = p->self;
    if (event == UI_MOUSE_WHEEL_UP)
        move_to(t, (int64_t)t->l.cur - 3);
    else if (event == UI_MOUSE_WHEEL_DOWN)
        move_to(t, (int64_t)t->l.cur + 3);
    else if (y == 0) {   /* a click on the header sorts by that column */
        colspec cs[NCOLS];
        int nc = layout_cols(t, p->iw, cs), xx = 0;
        for (int c = 0; c < nc; c++) {
            if (x >= xx && x < xx + cs[c].width) {
                if (t->sort_col == cs[c].col)
                    t->sort_desc = !t->sort_desc;
                else
                    t->sort_col = cs[c].col, t->sort_desc = false;
                rebuild(t);
                break;
            }
            xx += cs[c].width;
        }
    } else if (y <= table_height(p)) {
        uint32_t r = t->l.top + (uint32_t)(y - 1);
        if (r < t->nrows) {
            move_to(t, r);
            if (event == UI_MOUSE_DOUBLE && t->rows[r].ti < 0)
                return toggle_group(t, -1);
        }
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static bool tensors_typing(panel *p)
{
    return ((tensors_pane *)p->self)->typing;
}

static const char *tensors_hints(panel *p)
{
    tensors_pane *t = p->self;
    if (t->typing)
        return "type to filter  ⏎ keep  Esc/^U clear";
    return t->flat ? "f filter  s sort  a grouped" : "f filter  s sort  a flat";
}

static void tensors_destroy(panel *p)
{
    tensors_pane *t = p->self;
    free(t->ents);
    free(t->rows);
    free(t->collapsed);
    free(t);
}

static const panel_keyhelp tensors_keys[] = {
    {"↑↓ j k", "move"},
    {"PgUp PgDn", "page"},
    {"Home End G", "first / last"},
    {"⏎ Space", "fold/unfold a block group; on a tensor: show its detail"},
    {"← h / → l", "fold / unfold the group"},
    {"+ / -", "unfold / fold every block"},
    {"f", "filter as you type (name or type); ⏎ keeps it, Esc or Ctrl+U clears it"},
    {"a", "flat list across blocks (largest first) / grouped by block"},
    {"s / S", "next sort column / reverse the order"},
    {"0-6", "sort by file order, name, type, shape, params, bytes, offset (again: reverse)"},
    {NULL, NULL},
};

static const panel_ops tensors_ops = {
    .name = "Tensors",
    .title = tensors_title,
    .draw = tensors_draw,
    .on_key = tensors_key,
    .on_mouse = tensors_mouse,
    .hints = tensors_hints,
    .typing = tensors_typing,
    .destroy = tensors_destroy,
    .keys = tensors_keys,
};

panel *tensors_pane_new(const gguf_file *f, void (*on_select)(void *ctx, int64_t ti), void *ctx)
{
    tensors_pane *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->base.ops = &tensors_ops;
    t->base.self = t;
    t->f = f;
    t->on_select = on_select;
    t->ctx = ctx;
    uint64_t n = gguf_tensor_count(f);
    if (n > UINT32_MAX / 2)
        n = UINT32_MAX / 2;
    t->n = (uint32_t)n;
    t->ents = calloc(n ? n : 1, sizeof *t->ents);
    t->rows = calloc(2 * n + 1, sizeof *t->rows);
    t->max_blk = -1;
    for (uint32_t i = 0; i < t->n && t->ents; i++) {
        t->ents[i].ti = i;
        t->ents[i].blk = parse_blk(T(t, i)->name);
        if (t->ents[i].blk > t->max_blk)
            t->max_blk = t->ents[i].blk;
    }
    t->collapsed = calloc((size_t)(t->max_blk + 2), 1);
    if (!t->ents || !t->rows || !t->collapsed) {
        tensors_destroy(&t->base);
        return NULL;
    }
    /* Large models start with their blocks folded, small ones unfolded. */
    if (t->n > 64)
        memset(t->collapsed, 1, (size_t)t->max_blk + 1);
    t->last_selected = -2;
    measure(t);
    rebuild(t);
    /* start on the first tensor row */
    for (uint32_t r = 0; r < t->nrows; r++)
        if (t->rows[r].ti >= 0) {
            t->l.cur = r;
            break;
        }
    return &t->base;
}

void tensors_pane_reveal(panel *p, uint64_t ti)
{
    tensors_pane *t = p->self;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t r = 0; r < t->nrows; r++)
            if (t->rows[r].ti == (int64_t)ti) {
                t->l.cur = r;
                if (p->ih > 4) {
                    list_set(&t->l, t->nrows, (uint64_t)table_height(p));
                    list_center(&t->l);
                }
                notify(t);
                return;
            }
        /* hidden: clear the filter and unfold its group */
        t->filter_len = 0;
        t->filter[0] = 0;
        t->typing = false;
        int64_t b = parse_blk(T(t, (uint32_t)ti)->name);
        if (b >= 0)
            t->collapsed[b] = 0;
        rebuild(t);
    }
}

int tensors_pane_width(const panel *p)
{
    const tensors_pane *t = p->self;
    int w = t->name_w[t->flat] + 1;
    for (int c = COL_TYPE; c < NCOLS; c++)
        w += t->cw[c] + 2;
    return w + 2;
}

void tensors_pane_set_match(panel *p, const char *q)
{
    tensors_pane *t = p->self;
    snprintf(t->match, sizeof t->match, "%s", q ? q : "");
}

int64_t tensors_pane_selected(const panel *p)
{
    const tensors_pane *t = p->self;
    return t->nrows ? t->rows[t->l.cur].ti : -1;
}
