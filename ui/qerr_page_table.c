/* qerr_page_table: the table pane of the qerr page — the tensors (sortable),
 * the per-layer, per-role and whole-file rows (the CLI's), and why tensors
 * were skipped (see qerr_page.h). */
#include "qerr_page_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "list.h"

static const char *const COL_TITLE[QP_COL_COUNT] = {"tensor", "type", "rel_rmse", "sqnr_db",
                                                    "max_abs", "p95_abs", "cosine", "bpw"};
static const char *const VIEW_NAME[QP_VIEW_COUNT] = {"tensors", "per layer", "per role", "whole file",
                                                     "skipped"};

static void table_title(panel *p, char *buf, size_t cap)
{
    qerr_page *q = p->self;
    char what[96];
    if (q->parent)
        snprintf(what, sizeof what, "vs parent");
    else
        snprintf(what, sizeof what, "re-quantized to %s", qp_type_name(q));
    size_t nr;
    uint64_t skipped;
    free(qp_reasons(q, &nr, &skipped));
    char sk[48] = "";
    if (skipped)
        snprintf(sk, sizeof sk, " · %llu skipped", (unsigned long long)skipped);
    if (q->job)
        snprintf(buf, cap, "%s · %3d%% · %zu tensors · %s · Esc cancels", what,
                 (int)(ui_job_fraction(&q->job->job) * 100), q->n_order, VIEW_NAME[q->view]);
    else if (q->status[0])
        snprintf(buf, cap, "%s · %s", what, q->status);
    else if (q->view == QP_VIEW_TENSORS)
        snprintf(buf, cap, "%s · %zu tensors%s%s · sort %s%s", what, q->n_order, sk,
                 q->cancelled ? " (cancelled)" : "", COL_TITLE[q->sort_col], q->sort_rev ? " ↑" : "");
    else
        snprintf(buf, cap, "%s · %s%s%s · v next", what, VIEW_NAME[q->view], sk, q->cancelled ? " (cancelled)" : "");
}

/* Narrow panes keep whole names and the key figures: tensor, type, rel_rmse,
 * sqnr_db, bpw (max_abs, p95_abs, cosine from 110 columns on). */
static bool wide(int W)
{
    return W >= 108;
}

static int name_width(int W)
{
    int nw = wide(W) ? W - 6 - 6 * 10 : W - 7 - 3 * 10 - 8;
    return nw < 12 ? 12 : nw > 40 ? 40 : nw;
}

/* The figure columns after the name: all, or the narrow set. */
static void figures(char *line, size_t cap, int W, const char *type, char a[6][32], const char *tail)
{
    if (wide(W))
        snprintf(line, cap, " %-6s %9s %9s %9s %9s %9s %6s%s", type, a[0], a[1], a[2], a[3], a[4], a[5], tail);
    else
        snprintf(line, cap, " %-6s %9s %9s %6s%s", type, a[0], a[1], a[5], tail);
}

/* The reasons tensors were skipped, grouped, from line y on. */
static void draw_reasons(qerr_page *q, WINDOW *w, int y, int W, int H, size_t top)
{
    size_t n;
    uint64_t total;
    qp_reason *v = qp_reasons(q, &n, &total);
    if (!v)
        return;
    for (size_t k = top; k < n && y < H; k++, y++)
        ui_putf(w, y, 1, W - 1, A_NORMAL, "%6llu × %s", (unsigned long long)v[k].count, v[k].what);
    free(v);
}

static void draw_empty(qerr_page *q, WINDOW *w, int W, int H)
{
    if (q->job) {
        ui_put(w, 2, 1, W - 1, "measuring…", SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    size_t n;
    uint64_t total;
    free(qp_reasons(q, &n, &total));
    if (q->status[0])
        ui_putf(w, 1, 1, W - 1, ui_attr(UI_C_ERROR), "nothing measured: %s", q->status);
    else if (total)
        ui_putf(w, 1, 1, W - 1, ui_attr(UI_C_ERROR), "nothing measured%s%s: %llu tensor(s) skipped, because:",
                q->parent ? "" : " at ", q->parent ? "" : qp_type_name(q), (unsigned long long)total);
    else
        ui_put(w, 1, 1, W - 1, q->cancelled ? "nothing measured (cancelled)" : "nothing measured: no tensor",
               SIZE_MAX, ui_attr(UI_C_ERROR), false);
    draw_reasons(q, w, 2, W, H, 0);
}

static void draw_tensors(qerr_page *q, WINDOW *w, bool focused, int W, int H)
{
    int nw = name_width(W);
    char line[512], hd[6][32] = {"rel_rmse", "sqnr_db", "max_abs", "p95_abs", "cosine", "bpw"};
    snprintf(line, sizeof line, "%-*s", nw, "tensor");
    figures(line + strlen(line), sizeof line - strlen(line), W, "type", hd, "");
    ui_put(w, 0, 0, W, line, SIZE_MAX, ui_attr(UI_C_HEADER), false);
    if (!q->n_order) {
        draw_empty(q, w, W, H);
        return;
    }
    int rows = H - 1;
    list l = {q->n_order, q->cur, q->top, rows > 0 ? (uint64_t)rows : 1};
    list_fit(&l);
    q->cur = (size_t)l.cur;
    q->top = (size_t)l.top;
    for (int y = 0; y < rows && q->top + (size_t)y < q->n_order; y++) {
        size_t k = q->top + (size_t)y;
        const qerr_result *r = &q->res[q->order[k]];
        char a[6][32];
        qp_fmtv(a[0], 32, r->m.rel_rmse, "%.4g");
        qp_fmtv(a[1], 32, r->m.sqnr_db, "%.2f");
        qp_fmtv(a[2], 32, r->m.max_abs, "%.3g");
        qp_fmtv(a[3], 32, r->m.p95_abs, "%.3g");
        qp_fmtv(a[4], 32, r->m.cosine, "%.6f");
        qp_fmtv(a[5], 32, r->bpw, "%.2f");
        attr_t at = k == q->cur ? ui_attr(focused ? UI_C_SELECT : UI_C_SELECT_DIM) : A_NORMAL;
        if (k == q->cur)
            ui_fill(w, y + 1, 0, W, at);
        int x = ui_put(w, y + 1, 0, nw, k == q->cur ? "›" : " ", SIZE_MAX, at, false);
        qp_put_name(q, w, y + 1, x, nw - x, r, at);
        figures(line, sizeof line, W, ggtype_name(r->type), a, r->requantized ? " *" : "");
        ui_put(w, y + 1, nw, W - nw, line, SIZE_MAX, at, false);
    }
}

/* Rows of the current non-tensor view (aggregates or reasons). */
static size_t view_rows(const qerr_page *q)
{
    if (q->view == QP_VIEW_SKIPPED) {
        size_t n;
        uint64_t total;
        free(qp_reasons(q, &n, &total));
        return n;
    }
    const qerr_aggregate *a[1024];
    return q->finished ? qp_view_aggs(q, q->view, a, 1024) : 0;
}

static void draw_aggs(qerr_page *q, WINDOW *w, bool focused, int W, int H)
{
    int nw = name_width(W);
    char line[512];
    if (q->view == QP_VIEW_SKIPPED) {
        ui_put(w, 0, 0, W, "tensors  why they were not measured", SIZE_MAX, ui_attr(UI_C_HEADER), false);
        list l = {view_rows(q), q->vcur, q->vtop, H > 1 ? (uint64_t)(H - 1) : 1};
        list_fit(&l);
        q->vcur = (size_t)l.cur;
        q->vtop = (size_t)l.top;
        draw_reasons(q, w, 1, W, H, q->vtop);
        return;
    }
    static const char *const KEY[] = {"", "layer", "role", "whole file"};
    char hd[6][32] = {"rel_rmse", "sqnr_db", "max_abs", "p95_abs", "cosine", "bpw"};
    snprintf(line, sizeof line, "%-*s", nw, KEY[q->view]);
    figures(line + strlen(line), sizeof line - strlen(line), W, "type", hd, " tensors");
    ui_put(w, 0, 0, W, line, SIZE_MAX, ui_attr(UI_C_HEADER), false);
    if (!q->finished) {
        ui_put(w, 2, 1, W - 1, "measuring… (these rows come when the measurement has finished)", SIZE_MAX,
               ui_attr(UI_C_DIM), false);
        return;
    }
    const qerr_aggregate *v[1024];
    size_t n = qp_view_aggs(q, q->view, v, 1024);
    if (!n) {
        ui_put(w, 2, 1, W - 1, "nothing measured (v: skipped tensors)", SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    int rows = H - 1;
    list l = {n, q->vcur, q->vtop, rows > 0 ? (uint64_t)rows : 1};
    list_fit(&l);
    q->vcur = (size_t)l.cur;
    q->vtop = (size_t)l.top;
    for (int y = 0; y < rows && q->vtop + (size_t)y < n; y++) {
        size_t k = q->vtop + (size_t)y;
        const qerr_aggregate *g = v[k];
        attr_t at = k == q->vcur ? ui_attr(focused ? UI_C_SELECT : UI_C_SELECT_DIM) : A_NORMAL;
        if (k == q->vcur)
            ui_fill(w, y + 1, 0, W, at);
        int x = ui_put(w, y + 1, 0, nw, k == q->vcur ? "›" : " ", SIZE_MAX, at, false);
        screen_put_text(w, y + 1, x, nw - x, g->key, strlen(g->key), at, true);
        const char *tn = g->type == UINT32_MAX ? "-" : ggtype_name(g->type);
        if (!g->tensors) {
            snprintf(line, sizeof line, " %-6s (nothing measured)", tn);
        } else {
            char a[6][32];
            qp_fmtv(a[0], 32, g->m.rel_rmse, "%.4g");
            qp_fmtv(a[1], 32, g->m.sqnr_db, "%.2f");
            qp_fmtv(a[2], 32, g->m.max_abs, "%.3g");
            qp_fmtv(a[3], 32, g->m.p95_abs, "%.3g");
            qp_fmtv(a[4], 32, g->m.cosine, "%.6f");
            qp_fmtv(a[5], 32, g->elements ? g->bits / (double)g->elements : NAN, "%.2f");
            char n[32];
            snprintf(n, sizeof n, " %7llu", (unsigned long long)g->tensors);
            figures(line, sizeof line, W, tn, a, n);
        }
        ui_put(w, y + 1, nw, W - nw, line, SIZE_MAX, at, false);
    }
}

static void table_draw(panel *p, WINDOW *w, bool focused)
{
    qerr_page *q = p->self;
    qp_fold(q);
    if (q->view == QP_VIEW_TENSORS)
        draw_tensors(q, w, focused, p->iw, p->ih);
    else
        draw_aggs(q, w, focused, p->iw, p->ih);
}

static int table_key(panel *p, int key)
{
    qerr_page *q = p->self;
    qp_fold(q);
    if (q->view != QP_VIEW_TENSORS) {
        list l = {view_rows(q), q->vcur, q->vtop, p->ih > 1 ? (uint64_t)(p->ih - 1) : 1};
        if (!list_key(&l, key))
            return PANEL_IGNORED;
        q->vcur = (size_t)l.cur;
        q->vtop = (size_t)l.top;
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    size_t n = q->n_order;
    list l = {n, q->cur, q->top, p->ih > 1 ? (uint64_t)(p->ih - 1) : 1};   /* below the header */
    if (list_key(&l, key)) {
        q->cur = (size_t)l.cur;
        q->top = (size_t)l.top;
        if (n)
            qp_select(q, (int64_t)q->order[q->cur]);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    switch (key) {
    case 's':
        q->sort_col = (q->sort_col + 1) % QP_COL_COUNT;
        qp_resort(q);
        return PANEL_HANDLED | PANEL_REDRAW;
    case 'S':
        q->sort_rev = !q->sort_rev;
        qp_resort(q);
        return PANEL_HANDLED | PANEL_REDRAW;
    case UIK_ENTER:
        if (n && q->jump)
            q->jump(q->ctx, q->res[q->order[q->cur]].tensor);
        return PANEL_HANDLED | PANEL_REDRAW;
    default:
        return PANEL_IGNORED;
    }
}

static const panel_keyhelp table_keys[] = {
    {"↑↓ PgUp PgDn Home End", "move"},
    {"s / S", "sort column (tensor, type, rel_rmse, sqnr, max, p95, cosine, bpw) / reverse"},
    {"v", "view: tensors, per layer, per role, whole file, skipped tensors"},
    {"⏎", "show the tensor in the explorer"},
    {NULL, NULL},
};

static const char *table_hints(panel *p)
{
    qerr_page *q = p->self;
    return q->view == QP_VIEW_TENSORS ? "s sort  S reverse  ⏎ explorer" : "";
}

const panel_ops qp_table_ops = {
    .name = "Quantization error",
    .title = table_title,
    .draw = table_draw,
    .on_key = table_key,
    .hints = table_hints,
    .keys = table_keys,
    .destroy = qp_pane_destroy,
};
