/* qerr_page: table, heatmap and histograms of quantization error (see qerr_page.h). */
#include "qerr_page.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "list.h"
#include "qerr.h"
#include "textesc.h"
#include "tstats.h"

#define VBINS 64

enum { MET_REL, MET_SQNR, MET_BPW, MET_COUNT };
static const char *const MET_NAME[MET_COUNT] = {"relative RMSE", "SQNR (dB)", "bits per weight"};

enum { COL_NAME, COL_TYPE, COL_REL, COL_SQNR, COL_MAX, COL_P95, COL_COS, COL_BPW, COL_COUNT };
static const char *const COL_TITLE[COL_COUNT] = {"tensor", "type", "rel_rmse", "sqnr_db",
                                                 "max_abs", "p95_abs", "cosine", "bpw"};

typedef struct qjob {
    ui_job job;
    struct qerr_page *q;
    const gguf_file *f, *parent;
    uint32_t type;
    qerr_status st;
    char err[160];
} qjob;

typedef struct vjob {
    ui_job job;
    struct qerr_page *q;
    const gguf_tensor *t;
    uint64_t ti;
    tstats_status st;
    tstats_result res;
    bool orphan;
} vjob;

struct qerr_page {
    screen *s;
    int page;
    const gguf_file *f, *parent;
    uint32_t type;
    void (*jump)(void *ctx, uint64_t ti);
    void *ctx;
    panel *table, *heat, *hist;
    /* results, written by the worker, published through `ready` */
    qerr_result *res;
    size_t cap;
    atomic_size_t ready;
    qjob *job;            /* running */
    bool started, finished, cancelled;
    char status[200];
    /* loop thread views */
    size_t seen;          /* results folded into the views below */
    size_t *order;        /* table order */
    int sort_col;
    bool sort_rev;
    size_t top, cur;      /* table scroll and cursor (positions in order) */
    int64_t sel;          /* selected result index, -1 none */
    int metric;
    /* heatmap grid: n_layers rows (+1 for tensors outside blk.N), roles columns */
    int n_layers;
    char (*roles)[64];
    int n_roles;
    int32_t *grid;        /* (n_layers + 1) * n_roles result indexes, -1 empty */
    int hy, hx;           /* heatmap cursor */
    /* value histogram of the selected tensor */
    vjob *vj;
    tstats_result *vres;
    int64_t vres_ti;
    bool colour;
};

static void pane_destroy(panel *p);

/* ---- the measurement job ---- */

static void on_result(void *user, const qerr_result *r)
{
    qerr_page *q = ((qjob *)user)->q;
    size_t n = atomic_load_explicit(&q->ready, memory_order_relaxed);
    if (n >= q->cap)
        return;
    q->res[n] = *r;
    atomic_store_explicit(&q->ready, n + 1, memory_order_release);
}

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    ui_job_progress(user, done, total);
}

static void q_work(ui_job *j)
{
    qjob *qj = (qjob *)j;
    qerr_opts o = {0};
    o.types = &qj->type;
    o.n_types = 1;
    o.progress = on_progress;
    o.on_result = on_result;
    o.user = qj;
    o.cancel = &j->cancel;
    qerr_report *r = qj->parent ? qerr_compare(qj->f, qj->parent, &o, &qj->st, qj->err, sizeof qj->err)
                                : qerr_requant(qj->f, &o, &qj->st, qj->err, sizeof qj->err);
    qerr_report_free(r);
}

static void q_done(ui_job *j)
{
    qjob *qj = (qjob *)j;
    qerr_page *q = qj->q;
    q->job = NULL;
    q->finished = true;
    q->cancelled = qj->st == QERR_ECANCELLED;
    if (qj->st != QERR_OK && qj->st != QERR_ECANCELLED)
        snprintf(q->status, sizeof q->status, "failed: %s", qj->err);
    screen_dirty(q->s);
    free(qj);
}

static void start(qerr_page *q)
{
    if (q->started)
        return;
    qjob *j = calloc(1, sizeof *j);
    if (!j)
        return;
    ui_job_init(&j->job, q_work, q_done, q);
    j->q = q;
    j->f = q->f;
    j->parent = q->parent;
    j->type = q->type;
    q->job = j;
    q->started = true;
    if (screen_submit(q->s, &j->job) != 0) {
        q->job = NULL;
        q->started = false;
        free(j);
    }
}

/* ---- value histogram job ---- */

static void v_progress(void *user, uint64_t done, uint64_t total)
{
    ui_job_progress(user, done, total);
}

static void v_work(ui_job *j)
{
    vjob *v = (vjob *)j;
    tstats_opts o = {.n_bins = VBINS, .progress = v_progress, .user = j, .cancel = &j->cancel};
    v->st = tstats_compute(v->t, &o, &v->res);
}

static void v_done(ui_job *j)
{
    vjob *v = (vjob *)j;
    qerr_page *q = v->q;
    if (!v->orphan && q->vj == v) {
        q->vj = NULL;
        if (v->st == TSTATS_OK) {
            if (!q->vres)
                q->vres = malloc(sizeof *q->vres);
            if (q->vres) {
                *q->vres = v->res;
                q->vres_ti = (int64_t)v->ti;
            }
        }
        screen_dirty(q->s);
    }
    free(v);
}

static void vhist_want(qerr_page *q, uint64_t ti)
{
    if (q->vres && q->vres_ti == (int64_t)ti)
        return;
    if (q->vj) {
        if (q->vj->ti == ti)
            return;
        q->vj->orphan = true;
        ui_job_cancel(&q->vj->job);
        q->vj = NULL;
    }
    vjob *v = calloc(1, sizeof *v);
    if (!v)
        return;
    ui_job_init(&v->job, v_work, v_done, q);
    v->q = q;
    v->t = gguf_tensor_at(q->f, ti);
    v->ti = ti;
    q->vj = v;
    if (screen_submit(q->s, &v->job) != 0) {
        q->vj = NULL;
        free(v);
    }
}

/* ---- views ---- */

static double metric_of(const qerr_result *r, int m)
{
    switch (m) {
    case MET_REL: return r->m.rel_rmse;
    case MET_SQNR: return r->m.sqnr_db;
    default: return r->bpw;
    }
}

static double col_value(const qerr_result *r, int c)
{
    switch (c) {
    case COL_REL: return r->m.rel_rmse;
    case COL_SQNR: return r->m.sqnr_db;
    case COL_MAX: return r->m.max_abs;
    case COL_P95: return r->m.p95_abs;
    case COL_COS: return r->m.cosine;
    case COL_BPW: return r->bpw;
    default: return 0;
    }
}

static qerr_page *sort_ctx;
static int cmp_order(const void *pa, const void *pb)
{
    const qerr_page *q = sort_ctx;
    const qerr_result *a = &q->res[*(const size_t *)pa], *b = &q->res[*(const size_t *)pb];
    int c = 0;
    if (q->sort_col == COL_NAME)
        c = a->tensor < b->tensor ? -1 : a->tensor > b->tensor;
    else if (q->sort_col == COL_TYPE)
        c = strcmp(ggtype_name(a->type), ggtype_name(b->type));
    else {
        double x = col_value(a, q->sort_col), y = col_value(b, q->sort_col);
        /* worst first: big errors, small SQNR / cosine */
        bool asc = q->sort_col == COL_SQNR || q->sort_col == COL_COS;
        c = x == y ? 0 : ((x < y) == asc ? -1 : 1);
        if (isnan(x) != isnan(y))
            c = isnan(x) ? 1 : -1;
    }
    if (q->sort_rev)
        c = -c;
    if (!c)
        c = a->tensor < b->tensor ? -1 : a->tensor > b->tensor;
    return c;
}

static void resort(qerr_page *q)
{
    size_t n = q->seen;
    for (size_t i = 0; i < n; i++)
        q->order[i] = i;
    sort_ctx = q;
    qsort(q->order, n, sizeof *q->order, cmp_order);
    if (q->sel >= 0)
        for (size_t i = 0; i < n; i++)
            if ((int64_t)q->order[i] == q->sel)
                q->cur = i;
}

/* Draw a result's tensor name, escaped (screen_put_text): the full name from
 * the file (r->name is cut at a NUL). Returns the columns used. */
static int put_name(const qerr_page *q, WINDOW *w, int y, int x, int maxcols, const qerr_result *r, attr_t a)
{
    if (r->tensor < gguf_tensor_count(q->f)) {
        const gguf_tensor *t = gguf_tensor_at(q->f, r->tensor);
        return screen_put_text(w, y, x, maxcols, t->name.ptr, (size_t)t->name.len, a, true);
    }
    return screen_put_text(w, y, x, maxcols, r->name, strlen(r->name), a, true);
}

static int role_index(qerr_page *q, const char *role)
{
    for (int i = 0; i < q->n_roles; i++)
        if (!strcmp(q->roles[i], role))
            return i;
    return -1;
}

/* Fold newly published results into the table order and the heatmap grid. */
static void fold_results(qerr_page *q)
{
    size_t n = atomic_load_explicit(&q->ready, memory_order_acquire);
    if (n == q->seen)
        return;
    for (size_t i = q->seen; i < n; i++) {
        const qerr_result *r = &q->res[i];
        if (role_index(q, r->role) < 0 && q->n_roles < 64) {
            snprintf(q->roles[q->n_roles], 64, "%s", r->role);
            q->n_roles++;
        }
    }
    q->seen = n;
    /* rebuild the grid (cheap: a few hundred cells) */
    int rows = q->n_layers + 1;
    for (int i = 0; i < rows * 64; i++)
        q->grid[i] = -1;
    for (size_t i = 0; i < n; i++) {
        const qerr_result *r = &q->res[i];
        int c = role_index(q, r->role);
        int y = r->layer >= 0 && r->layer < q->n_layers ? r->layer : q->n_layers;
        if (c >= 0)
            q->grid[y * 64 + c] = (int32_t)i;
    }
    if (q->sel < 0 && n)
        q->sel = -1;
    resort(q);
}

static void select_result(qerr_page *q, int64_t i)
{
    q->sel = i;
    if (i < 0)
        return;
    const qerr_result *r = &q->res[i];
    for (size_t k = 0; k < q->seen; k++)
        if ((int64_t)q->order[k] == i)
            q->cur = k;
    int c = role_index(q, r->role);
    if (c >= 0) {
        q->hx = c;
        q->hy = r->layer >= 0 && r->layer < q->n_layers ? r->layer : q->n_layers;
    }
}

static void fmtv(char *b, size_t cap, double v, const char *fmt)
{
    if (isnan(v))
        snprintf(b, cap, "-");
    else if (isinf(v))
        snprintf(b, cap, v > 0 ? "∞" : "-∞");
    else
        snprintf(b, cap, fmt, v);
}

/* ---- table pane ---- */

static void table_title(panel *p, char *buf, size_t cap)
{
    qerr_page *q = p->self;
    size_t n = atomic_load_explicit(&q->ready, memory_order_acquire);
    char what[96];
    if (q->parent)
        snprintf(what, sizeof what, "vs parent");
    else
        snprintf(what, sizeof what, "re-quantized to %s", ggtype_name(q->type));
    if (q->job)
        snprintf(buf, cap, "%s · %3d%% · %zu tensors · Esc cancels", what,
                 (int)(ui_job_fraction(&q->job->job) * 100), n);
    else if (q->status[0])
        snprintf(buf, cap, "%s · %s", what, q->status);
    else
        snprintf(buf, cap, "%s · %zu tensors%s · sort %s%s", what, n, q->cancelled ? " (cancelled)" : "",
                 COL_TITLE[q->sort_col], q->sort_rev ? " ↑" : "");
}

static void table_draw(panel *p, WINDOW *w, bool focused)
{
    qerr_page *q = p->self;
    fold_results(q);
    int h = p->ih, W = p->iw;
    int nw = W - 6 - 6 * 10;
    if (nw < 12)
        nw = 12;
    if (nw > 40)
        nw = 40;
    char line[512];
    snprintf(line, sizeof line, "%-*s %-6s %9s %9s %9s %9s %9s %6s", nw, "tensor", "type", "rel_rmse",
             "sqnr_db", "max_abs", "p95_abs", "cosine", "bpw");
    ui_put(w, 0, 0, W, line, SIZE_MAX, ui_attr(UI_C_HEADER), false);
    if (!q->seen) {
        ui_put(w, 2, 1, W - 1, q->job ? "measuring…" : "no tensor measured (see ggscope qerr for reasons)", SIZE_MAX,
               ui_attr(UI_C_DIM), false);
        return;
    }
    int rows = h - 1;
    list l = {q->seen, q->cur, q->top, rows > 0 ? (uint64_t)rows : 1};
    list_fit(&l);
    q->cur = (size_t)l.cur;
    q->top = (size_t)l.top;
    for (int y = 0; y < rows && q->top + (size_t)y < q->seen; y++) {
        size_t k = q->top + (size_t)y;
        const qerr_result *r = &q->res[q->order[k]];
        char a[6][32];
        fmtv(a[0], 32, r->m.rel_rmse, "%.4g");
        fmtv(a[1], 32, r->m.sqnr_db, "%.2f");
        fmtv(a[2], 32, r->m.max_abs, "%.3g");
        fmtv(a[3], 32, r->m.p95_abs, "%.3g");
        fmtv(a[4], 32, r->m.cosine, "%.6f");
        fmtv(a[5], 32, r->bpw, "%.2f");
        attr_t at = k == q->cur ? ui_attr(focused ? UI_C_SELECT : UI_C_SELECT_DIM) : A_NORMAL;
        if (k == q->cur)
            ui_fill(w, y + 1, 0, W, at);
        int x = ui_put(w, y + 1, 0, nw, k == q->cur ? "›" : " ", SIZE_MAX, at, false);
        put_name(q, w, y + 1, x, nw - x, r, at);
        snprintf(line, sizeof line, " %-6s %9s %9s %9s %9s %9s %6s%s", ggtype_name(r->type), a[0], a[1],
                 a[2], a[3], a[4], a[5], r->requantized ? " *" : "");
        ui_put(w, y + 1, nw, W - nw, line, SIZE_MAX, at, false);
    }
}

static int table_key(panel *p, int key)
{
    qerr_page *q = p->self;
    fold_results(q);
    size_t n = q->seen;
    list l = {n, q->cur, q->top, p->ih > 1 ? (uint64_t)(p->ih - 1) : 1};   /* below the header */
    if (list_key(&l, key)) {
        q->cur = (size_t)l.cur;
        q->top = (size_t)l.top;
        if (n)
            select_result(q, (int64_t)q->order[q->cur]);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    switch (key) {
    case 's':
        q->sort_col = (q->sort_col + 1) % COL_COUNT;
        resort(q);
        return PANEL_HANDLED | PANEL_REDRAW;
    case 'S':
        q->sort_rev = !q->sort_rev;
        resort(q);
        return PANEL_HANDLED | PANEL_REDRAW;
    case UIK_ENTER:
        if (n && q->jump)
            q->jump(q->ctx, q->res[q->order[q->cur]].tensor);
        return PANEL_HANDLED | PANEL_REDRAW;
    default:
        return PANEL_IGNORED;
    }
    if (n)
        select_result(q, (int64_t)q->order[q->cur]);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static const panel_keyhelp table_keys[] = {
    {"↑↓ PgUp PgDn Home End", "move"},
    {"s / S", "sort column (tensor, type, rel_rmse, sqnr, max, p95, cosine, bpw) / reverse"},
    {"⏎", "show the tensor in the explorer"},
    {NULL, NULL},
};

static const char *table_hints(panel *p)
{
    (void)p;
    return "s sort  S reverse  ⏎ explorer";
}

static const panel_ops table_ops = {
    .name = "Quantization error",
    .title = table_title,
    .draw = table_draw,
    .on_key = table_key,
    .hints = table_hints,
    .keys = table_keys,
    .destroy = pane_destroy,
};

/* ---- heatmap pane ---- */

static const char *const SHADES[5] = {"·", "░", "▒", "▓", "█"};
static const short HEAT_FG[5] = {COLOR_GREEN, COLOR_CYAN, COLOR_YELLOW, COLOR_MAGENTA, COLOR_RED};
#define HEAT_PAIR0 48

static void heat_title(panel *p, char *buf, size_t cap)
{
    qerr_page *q = p->self;
    snprintf(buf, cap, "%s · m cycles", MET_NAME[q->metric]);
}

/* Level 0 (good) .. 4 (bad) of a value within [lo, hi]. */
static int level_of(const qerr_page *q, double v, double lo, double hi)
{
    if (isnan(v))
        return 0;
    double t;
    if (q->metric == MET_REL) {
        if (v <= 0 || lo <= 0)
            return v <= lo ? 0 : 4;
        t = hi > lo ? (log(v) - log(lo)) / (log(hi) - log(lo)) : 0;
    } else if (q->metric == MET_SQNR) {
        if (isinf(v))
            return v > 0 ? 0 : 4;
        t = hi > lo ? (hi - v) / (hi - lo) : 0;   /* low SQNR is bad */
    } else {
        t = hi > lo ? (v - lo) / (hi - lo) : 0;
    }
    int l = (int)(t * 5);
    return l < 0 ? 0 : l > 4 ? 4 : l;
}

static void heat_draw(panel *p, WINDOW *w, bool focused)
{
    qerr_page *q = p->self;
    fold_results(q);
    int W = p->iw, H = p->ih;
    if (!q->n_roles) {
        ui_put(w, 1, 1, W - 1, q->job ? "waiting for results…" : "no results", SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < q->seen; i++) {
        double v = metric_of(&q->res[i], q->metric);
        if (isfinite(v) && !(q->metric == MET_REL && v <= 0)) {
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
    }
    const int cw = 6, lw = 6;
    int vis_cols = (W - lw) / cw;
    if (vis_cols < 1)
        vis_cols = 1;
    int c0 = q->hx >= vis_cols ? q->hx - vis_cols + 1 : 0;
    for (int c = c0; c < q->n_roles && c - c0 < vis_cols; c++) {
        /* attn_q -> a_q, ffn_down -> f_down: the part that differs fits */
        char ab[64];
        const char *r = q->roles[c];
        if (!strncmp(r, "attn_", 5))
            snprintf(ab, sizeof ab, "a_%s", r + 5);
        else if (!strncmp(r, "ffn_", 4))
            snprintf(ab, sizeof ab, "f_%s", r + 4);
        else
            snprintf(ab, sizeof ab, "%s", r);
        screen_put_text(w, 0, lw + (c - c0) * cw, cw - 1, ab, strlen(ab), ui_attr(UI_C_HEADER), false);
    }
    int rows = q->n_layers + 1, vis_rows = H - 3;
    if (vis_rows < 1)
        vis_rows = 1;
    int r0 = q->hy >= vis_rows ? q->hy - vis_rows + 1 : 0;
    for (int y = r0; y < rows && y - r0 < vis_rows; y++) {
        int sy = 1 + y - r0;
        bool any = false;
        for (int c = 0; c < q->n_roles; c++)
            any |= q->grid[y * 64 + c] >= 0;
        char lab[16];
        if (y < q->n_layers)
            snprintf(lab, sizeof lab, "blk.%d", y);
        else
            snprintf(lab, sizeof lab, "other");
        ui_put(w, sy, 0, lw - 1, lab, SIZE_MAX, any ? ui_attr(UI_C_DIM) : ui_attr(UI_C_DIM), false);
        for (int c = c0; c < q->n_roles && c - c0 < vis_cols; c++) {
            int x = lw + (c - c0) * cw;
            int32_t ri = q->grid[y * 64 + c];
            bool cur = y == q->hy && c == q->hx;
            if (ri < 0) {
                ui_put(w, sy, x, cw - 1, cur ? "[ · ]" : "  ·", SIZE_MAX, ui_attr(UI_C_DIM), false);
                continue;
            }
            int lv = level_of(q, metric_of(&q->res[ri], q->metric), lo, hi);
            attr_t a = q->colour ? COLOR_PAIR(HEAT_PAIR0 + lv) : A_NORMAL;
            const char *blk = q->colour ? "█" : SHADES[lv];
            if (cur) {
                ui_put(w, sy, x, 1, "[", SIZE_MAX, focused ? A_BOLD : A_NORMAL, false);
                ui_put(w, sy, x + 4, 1, "]", SIZE_MAX, focused ? A_BOLD : A_NORMAL, false);
            }
            for (int k = 1; k < 4; k++)
                ui_put(w, sy, x + k, 1, blk, SIZE_MAX, a, false);
        }
    }
    /* legend and the cursor's value */
    int ly = H - 2;
    if (ly > 1) {
        int x = 0;
        x += ui_put(w, ly, x, W, "good ", SIZE_MAX, ui_attr(UI_C_DIM), false);
        for (int l = 0; l < 5; l++)
            x += ui_put(w, ly, x, W - x, q->colour ? "█" : SHADES[l], SIZE_MAX,
                        q->colour ? COLOR_PAIR(HEAT_PAIR0 + l) : A_NORMAL, false);
        char b[2][32];
        fmtv(b[0], 32, lo, "%.4g");
        fmtv(b[1], 32, hi, "%.4g");
        ui_putf(w, ly, x, W - x, ui_attr(UI_C_DIM), " bad   %s %s … %s", MET_NAME[q->metric], b[0], b[1]);
    }
    int32_t ri = q->hy <= q->n_layers && q->hx < q->n_roles ? q->grid[q->hy * 64 + q->hx] : -1;
    if (ri >= 0 && H - 1 > 1) {
        const qerr_result *r = &q->res[ri];
        char b[3][32];
        fmtv(b[0], 32, r->m.rel_rmse, "%.4g");
        fmtv(b[1], 32, r->m.sqnr_db, "%.2f");
        fmtv(b[2], 32, r->bpw, "%.2f");
        int x = put_name(q, w, H - 1, 0, W / 2, r, A_BOLD);
        ui_putf(w, H - 1, x, W - x, A_BOLD, "  %s  rel %s  sqnr %s dB  %s bpw", ggtype_name(r->type), b[0], b[1], b[2]);
    }
}

static int heat_key(panel *p, int key)
{
    qerr_page *q = p->self;
    fold_results(q);
    int rows = q->n_layers + 1;
    switch (key) {
    case UIK_UP: case 'k': if (q->hy > 0) q->hy--; break;
    case UIK_DOWN: case 'j': if (q->hy + 1 < rows) q->hy++; break;
    case UIK_LEFT: case 'h': if (q->hx > 0) q->hx--; break;
    case UIK_RIGHT: case 'l': if (q->hx + 1 < q->n_roles) q->hx++; break;
    case UIK_HOME: q->hx = q->hy = 0; break;
    case UIK_ENTER: {
        int32_t ri = q->n_roles ? q->grid[q->hy * 64 + q->hx] : -1;
        if (ri >= 0 && q->jump)
            q->jump(q->ctx, q->res[ri].tensor);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    default: return PANEL_IGNORED;
    }
    int32_t ri = q->n_roles ? q->grid[q->hy * 64 + q->hx] : -1;
    if (ri >= 0)
        select_result(q, ri);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static const panel_keyhelp heat_keys[] = {
    {"←↑↓→ h j k l", "move between cells (layer × role)"},
    {"Home", "first cell (blk.0, first role)"},
    {"m", "metric: relative RMSE, SQNR, bits per weight"},
    {"⏎", "show the cell's tensor in the explorer"},
    {NULL, NULL},
};

static const char *heat_hints(panel *p)
{
    (void)p;
    return "arrows cell  ⏎ explorer";
}

static const panel_ops heat_ops = {
    .name = "Heatmap",
    .title = heat_title,
    .draw = heat_draw,
    .on_key = heat_key,
    .hints = heat_hints,
    .keys = heat_keys,
    .destroy = pane_destroy,
};

/* ---- histogram pane ---- */

static void bars(WINDOW *w, int y0, int x0, int h, int width, const uint64_t *bins, int nb)
{
    static const char *const B[9] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    if (width < 1 || h < 1)
        return;
    double mx = 0;
    double *col = calloc((size_t)width, sizeof *col);
    if (!col)
        return;
    for (int i = 0; i < nb; i++)
        col[(int64_t)i * width / nb] += (double)bins[i];
    for (int c = 0; c < width; c++)
        mx = fmax(mx, col[c]);
    for (int c = 0; c < width && mx > 0; c++) {
        double v = log1p(col[c]) / log1p(mx) * h * 8;
        for (int r = 0; r < h; r++) {
            int k = (int)v - r * 8;
            k = k < 0 ? 0 : k > 8 ? 8 : k;
            ui_put(w, y0 + h - 1 - r, x0 + c, 1, B[k], SIZE_MAX, ui_attr(UI_C_BAR), false);
        }
    }
    free(col);
}

static void hist_title(panel *p, char *buf, size_t cap)
{
    qerr_page *q = p->self;
    buf[0] = 0;
    if (q->sel < 0)
        return;
    const qerr_result *r = &q->res[q->sel];   /* the full name, escaped */
    if (r->tensor < gguf_tensor_count(q->f))
        textesc_term(buf, cap, gguf_tensor_at(q->f, r->tensor)->name.ptr, (size_t)gguf_tensor_at(q->f, r->tensor)->name.len, 0);
    else
        textesc_term(buf, cap, r->name, strlen(r->name), 0);
}

static void hist_draw(panel *p, WINDOW *w, bool focused)
{
    (void)focused;
    qerr_page *q = p->self;
    fold_results(q);
    int W = p->iw, H = p->ih;
    if (q->sel < 0 && q->seen)
        select_result(q, (int64_t)q->order[q->cur]);
    if (q->sel < 0) {
        ui_put(w, 1, 1, W - 1, "select a tensor", SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    const qerr_result *r = &q->res[q->sel];
    int half = W / 2;
    char b[2][32];
    fmtv(b[0], 32, r->m.max_abs, "%.4g");
    ui_putf(w, 0, 0, half - 1, ui_attr(UI_C_HEADER), "|error| 0 … %s", b[0]);
    bars(w, 1, 0, H - 3, half - 2, r->ehist, QERR_EHIST_BINS);
    fmtv(b[0], 32, r->m.median_abs, "%.3g");
    fmtv(b[1], 32, r->m.p95_abs, "%.3g");
    ui_putf(w, H - 1, 0, half - 1, ui_attr(UI_C_DIM), "median %s  p95 %s", b[0], b[1]);
    vhist_want(q, r->tensor);
    if (q->vres && q->vres_ti == (int64_t)r->tensor) {
        const tstats_result *v = q->vres;
        ui_putf(w, 0, half, W - half, ui_attr(UI_C_HEADER), "values %.4g … %.4g", v->min, v->max);
        bars(w, 1, half, H - 3, W - half - 1, v->bins, (int)v->n_bins);
        ui_putf(w, H - 1, half, W - half, ui_attr(UI_C_DIM), "mean %.3g  std %.3g", v->mean, v->std);
    } else if (q->vj) {
        ui_putf(w, 1, half, W - half, ui_attr(UI_C_DIM), "values: computing… %3d%%",
                (int)(ui_job_fraction(&q->vj->job) * 100));
    }
}

static const panel_ops hist_ops = {
    .name = "Histograms",
    .title = hist_title,
    .draw = hist_draw,
    .destroy = pane_destroy,
};

/* ---- page ---- */

static void layout(screen *s, int page, int top, int left, int rows, int cols, bool zoom, void *ctx)
{
    (void)page;
    qerr_page *q = ctx;
    panel *f = screen_focused(s);
    if (zoom) {
        screen_place(s, f, top, left, rows, cols);
        return;
    }
    int th = rows * 45 / 100;
    if (cols >= 110) {
        int hw = cols / 2;
        screen_place(s, q->table, top, left, th, cols);
        screen_place(s, q->heat, top + th, left, rows - th, hw);
        screen_place(s, q->hist, top + th, left + hw, rows - th, cols - hw);
    } else {
        int hh = (rows - th) * 60 / 100;
        screen_place(s, q->table, top, left, th, cols);
        screen_place(s, q->heat, top + th, left, hh, cols);
        screen_place(s, q->hist, top + th + hh, left, rows - th - hh, cols);
    }
}

static int key_metric(screen *s, int key, void *ctx)
{
    (void)s;
    (void)key;
    qerr_page *q = ctx;
    q->metric = (q->metric + 1) % MET_COUNT;
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_cancel(screen *s, int key, void *ctx)
{
    (void)key;
    qerr_page *q = ctx;
    if (q->job) {
        ui_job_cancel(&q->job->job);
        screen_message(s, "cancelling…");
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static void pane_destroy(panel *p)
{
    free(p);   /* the page's state is freed by qerr_page_free */
}

static panel *mk(const panel_ops *ops, qerr_page *q)
{
    panel *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ops = ops;
    p->self = q;
    return p;
}

qerr_page *qerr_page_new(screen *s, const gguf_file *f, const gguf_file *parent, uint32_t type,
                         void (*jump)(void *ctx, uint64_t ti), void *ctx)
{
    qerr_page *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->s = s;
    q->f = f;
    q->parent = parent;
    q->type = type;
    q->jump = jump;
    q->ctx = ctx;
    q->sel = -1;
    q->vres_ti = -1;
    q->sort_col = COL_REL;
    q->cap = (size_t)gguf_tensor_count(f);
    int maxl = -1;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        char nm[256], role[64];
        int l = qerr_name_role(gguf_str_copy(gguf_tensor_at(f, i)->name, nm, sizeof nm), role, sizeof role);
        if (l > maxl && l < 100000)
            maxl = l;
    }
    q->n_layers = maxl + 1;
    q->res = calloc(q->cap ? q->cap : 1, sizeof *q->res);
    q->order = calloc(q->cap ? q->cap : 1, sizeof *q->order);
    q->roles = calloc(64, sizeof *q->roles);
    q->grid = calloc((size_t)(q->n_layers + 1) * 64, sizeof *q->grid);
    /* heatmap columns, deterministic: roles of blk.N matrices in file order,
     * then their vectors, then the roles outside blk.N */
    for (int pass = 0; pass < 3 && q->roles; pass++)
        for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            char nm[256], role[64];
            int l = qerr_name_role(gguf_str_copy(t->name, nm, sizeof nm), role, sizeof role);
            bool mat = t->n_dims >= 2 && t->n_elements != t->ne[0];
            int want = l >= 0 ? (mat ? 0 : 1) : 2;
            if (want == pass && role_index(q, role) < 0 && q->n_roles < 64)
                snprintf(q->roles[q->n_roles++], 64, "%s", role);
        }
    q->page = screen_add_page(s, "qerr", layout, q);
    q->table = mk(&table_ops, q);
    q->heat = mk(&heat_ops, q);
    q->hist = mk(&hist_ops, q);
    if (!q->res || !q->order || !q->roles || !q->grid || q->page < 0 || !q->table || !q->heat || !q->hist) {
        free(q->table);
        free(q->heat);
        free(q->hist);
        qerr_page_free(q);
        return NULL;
    }
    screen_add_panel(s, q->page, q->table);
    screen_add_panel(s, q->page, q->heat);
    screen_add_panel(s, q->page, q->hist);
    q->colour = ui_attr(UI_C_BAR) != A_NORMAL && COLOR_PAIRS > HEAT_PAIR0 + 5;
    if (q->colour)
        for (int l = 0; l < 5; l++)
            if (init_pair((short)(HEAT_PAIR0 + l), HEAT_FG[l], -1) == ERR)
                q->colour = false;
    char title[512];
    const char *path = gguf_path(f), *base = strrchr(path, '/');
    if (parent) {
        const char *pp = gguf_path(parent), *pb = strrchr(pp, '/');
        snprintf(title, sizeof title, " ggscope qerr  %s vs %s", base ? base + 1 : path, pb ? pb + 1 : pp);
    } else {
        snprintf(title, sizeof title, " ggscope qerr  %s re-quantized to %s", base ? base + 1 : path,
                 ggtype_name(type));
    }
    screen_set_title(s, q->page, title);
    const screen_binding binds[] = {
        {'m', "m", "metric", "heatmap metric: relative RMSE, SQNR, bits per weight", q->page, key_metric, q},
        {UIK_ESC, "Esc", "cancel", "cancel the measurement", q->page, key_cancel, q},
    };
    for (size_t i = 0; i < sizeof binds / sizeof binds[0]; i++)
        screen_bind(s, &binds[i]);
    return q;
}

void qerr_page_show(qerr_page *q)
{
    screen_show_page(q->s, q->page);
    start(q);
    screen_dirty(q->s);
}

int qerr_page_id(const qerr_page *q)
{
    return q->page;
}

void qerr_page_free(qerr_page *q)
{
    if (!q)
        return;
    free(q->res);
    free(q->order);
    free(q->roles);
    free(q->grid);
    free(q->vres);
    free(q);
}
