/* qerr_page: the page of quantization error (see qerr_page.h): the jobs, the
 * views shared by the panes, the title, the keys and the layout. The panes
 * are in qerr_page_table.c and qerr_page_heat.c. */
#include "qerr_page_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"

#define VBINS 64

const char *const QP_MET_NAME[QP_MET_COUNT] = {"relative RMSE", "SQNR (dB)", "bits per weight"};

static void rebuild(qerr_page *q);

/* ---- the measurement job ---- */

static void on_result(void *user, const qerr_result *r)
{
    qerr_page *q = ((qp_qjob *)user)->q;
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

static void *dup_mem(const void *p, size_t n, size_t size)
{
    void *d = malloc(n ? n * size : 1);
    if (d && n)
        memcpy(d, p, n * size);
    return d;
}

static void q_work(ui_job *j)
{
    qp_qjob *qj = (qp_qjob *)j;
    qerr_opts o = {0};
    o.types = qj->types;
    o.n_types = qj->n_types;
    o.progress = on_progress;
    o.on_result = on_result;
    o.user = qj;
    o.cancel = &j->cancel;
    qerr_report *r = qj->parent ? qerr_compare(qj->f, qj->parent, &o, &qj->st, qj->err, sizeof qj->err)
                                : qerr_requant(qj->f, &o, &qj->st, qj->err, sizeof qj->err);
    if (r) {   /* the reasons for skipping and the aggregates, as the CLI prints them */
        qj->n_issues = qerr_report_issue_count(r);
        qj->issues = malloc(qj->n_issues ? qj->n_issues * sizeof *qj->issues : 1);
        if (qj->issues)
            for (size_t i = 0; i < qj->n_issues; i++)
                qj->issues[i] = *qerr_report_issue_at(r, i);
        else
            qj->n_issues = 0;
        size_t (*get[3])(const qerr_report *, const qerr_aggregate **) = {qerr_report_layers, qerr_report_roles,
                                                                          qerr_report_totals};
        for (int k = 0; k < 3; k++) {
            const qerr_aggregate *a;
            size_t n = get[k](r, &a);
            qj->aggs[k] = dup_mem(a, n, sizeof *a);
            qj->n_aggs[k] = qj->aggs[k] ? n : 0;
        }
    }
    qerr_report_free(r);
}

static void q_done(ui_job *j)
{
    qp_qjob *qj = (qp_qjob *)j;
    qerr_page *q = qj->q;
    q->job = NULL;
    q->finished = true;
    q->cancelled = qj->st == QERR_ECANCELLED;
    if (qj->st != QERR_OK && qj->st != QERR_ECANCELLED)
        snprintf(q->status, sizeof q->status, "failed: %s", qj->err);
    q->issues = qj->issues;
    q->n_issues = qj->n_issues;
    for (int k = 0; k < 3; k++) {
        q->aggs[k] = qj->aggs[k];
        q->n_aggs[k] = qj->n_aggs[k];
    }
    qp_fold(q);
    rebuild(q);   /* with the report's whole-file row */
    qp_refresh_title(q);
    screen_dirty(q->s);
    free(qj);
}

static void start(qerr_page *q)
{
    if (q->started)
        return;
    qp_qjob *j = calloc(1, sizeof *j);
    if (!j)
        return;
    ui_job_init(&j->job, q_work, q_done, q);
    j->q = q;
    j->f = q->f;
    j->parent = q->parent;
    memcpy(j->types, q->types, sizeof j->types);
    j->n_types = (size_t)q->n_types;
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
    qp_vjob *v = (qp_vjob *)j;
    tstats_opts o = {.n_bins = VBINS, .progress = v_progress, .user = j, .cancel = &j->cancel};
    v->st = tstats_compute(v->t, &o, &v->res);
}

static void v_done(ui_job *j)
{
    qp_vjob *v = (qp_vjob *)j;
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

void qp_vhist_want(qerr_page *q, uint64_t ti)
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
    qp_vjob *v = calloc(1, sizeof *v);
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

const char *qp_type_name(const qerr_page *q)
{
    return ggtype_name(q->types[q->tcur]);
}

static bool shown(const qerr_page *q, const qerr_result *r)
{
    return q->parent || r->type == q->types[q->tcur];
}

static double col_value(const qerr_result *r, int c)
{
    switch (c) {
    case QP_COL_REL: return r->m.rel_rmse;
    case QP_COL_SQNR: return r->m.sqnr_db;
    case QP_COL_MAX: return r->m.max_abs;
    case QP_COL_P95: return r->m.p95_abs;
    case QP_COL_COS: return r->m.cosine;
    case QP_COL_BPW: return r->bpw;
    default: return 0;
    }
}

static qerr_page *sort_ctx;
static int cmp_order(const void *pa, const void *pb)
{
    const qerr_page *q = sort_ctx;
    const qerr_result *a = &q->res[*(const size_t *)pa], *b = &q->res[*(const size_t *)pb];
    int c = 0;
    if (q->sort_col == QP_COL_NAME)
        c = a->tensor < b->tensor ? -1 : a->tensor > b->tensor;
    else if (q->sort_col == QP_COL_TYPE)
        c = strcmp(ggtype_name(a->type), ggtype_name(b->type));
    else {
        double x = col_value(a, q->sort_col), y = col_value(b, q->sort_col);
        /* worst first: big errors, small SQNR / cosine */
        bool asc = q->sort_col == QP_COL_SQNR || q->sort_col == QP_COL_COS;
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

void qp_resort(qerr_page *q)
{
    size_t n = 0;
    for (size_t i = 0; i < q->seen; i++)
        if (shown(q, &q->res[i]))
            q->order[n++] = i;
    q->n_order = n;
    sort_ctx = q;
    qsort(q->order, n, sizeof *q->order, cmp_order);
    if (q->sel >= 0)
        for (size_t i = 0; i < n; i++)
            if ((int64_t)q->order[i] == q->sel)
                q->cur = i;
    if (q->cur >= n)
        q->cur = n ? n - 1 : 0;
}

int qp_put_name(const qerr_page *q, WINDOW *w, int y, int x, int maxcols, const qerr_result *r, attr_t a)
{
    if (r->tensor < gguf_tensor_count(q->f)) {
        const gguf_tensor *t = gguf_tensor_at(q->f, r->tensor);
        return screen_put_text(w, y, x, maxcols, t->name.ptr, (size_t)t->name.len, a, true);
    }
    return screen_put_text(w, y, x, maxcols, r->name, strlen(r->name), a, true);
}

/* The heatmap column of a tensor: its role, and ".bias" for a bias (a
 * layer's attn_q.weight and attn_q.bias would share the role's cell). */
static const char *col_key(const char *name, const char *role, char *buf, size_t cap)
{
    size_t n = strlen(name);
    if (n > 5 && !strcmp(name + n - 5, ".bias")) {
        snprintf(buf, cap, "%.58s.bias", role);
        return buf;
    }
    return role;
}

static int col_of(const qerr_page *q, const qerr_result *r)
{
    char b[64];
    return qp_role_index(q, col_key(r->name, r->role, b, sizeof b));
}

int qp_role_index(const qerr_page *q, const char *role)
{
    for (int i = 0; i < q->n_roles; i++)
        if (!strcmp(q->roles[i], role))
            return i;
    return -1;
}

static void rebuild(qerr_page *q)
{
    int rows = q->n_layers + 1;
    for (int i = 0; i < rows * QP_MAX_ROLES; i++)
        q->grid[i] = -1;
    qerr_acc acc = {0};
    double bits = 0;
    for (size_t i = 0; i < q->seen; i++) {
        const qerr_result *r = &q->res[i];
        if (!shown(q, r))
            continue;
        qerr_acc_merge(&acc, &r->acc);
        bits += r->bpw * (double)r->elements;
        int c = col_of(q, r);
        int y = r->layer >= 0 && r->layer < q->n_layers ? r->layer : q->n_layers;
        if (c >= 0)
            q->grid[y * QP_MAX_ROLES + c] = (int32_t)i;
    }
    qerr_metrics_of(&acc, NULL, &q->total);
    q->total_n = acc.n;
    q->total_bpw = acc.n ? bits / (double)acc.n : 0;
    /* once finished: the report's whole-file row (the CLI's figures) */
    const qerr_aggregate *fa;
    if (qp_view_aggs(q, QP_VIEW_FILE, &fa, 1) == 1 && fa->tensors) {
        q->total = fa->m;
        q->total_n = fa->acc.n;
        q->total_bpw = fa->elements ? fa->bits / (double)fa->elements : 0;
    }
    qp_resort(q);
}

void qp_fold(qerr_page *q)
{
    size_t n = atomic_load_explicit(&q->ready, memory_order_acquire);
    if (n == q->seen)
        return;
    for (size_t i = q->seen; i < n; i++) {
        const qerr_result *r = &q->res[i];
        char b[64];
        const char *key = col_key(r->name, r->role, b, sizeof b);
        if (qp_role_index(q, key) < 0 && q->n_roles < QP_MAX_ROLES) {
            snprintf(q->roles[q->n_roles], 64, "%s", key);
            q->n_roles++;
        }
    }
    q->seen = n;
    rebuild(q);
    qp_refresh_title(q);
}

void qp_select(qerr_page *q, int64_t i)
{
    q->sel = i;
    if (i < 0)
        return;
    const qerr_result *r = &q->res[i];
    for (size_t k = 0; k < q->n_order; k++)
        if ((int64_t)q->order[k] == i)
            q->cur = k;
    int c = col_of(q, r);
    if (c >= 0) {
        q->hx = c;
        q->hy = r->layer >= 0 && r->layer < q->n_layers ? r->layer : q->n_layers;
    }
}

void qp_fmtv(char *b, size_t cap, double v, const char *fmt)
{
    if (isnan(v))
        snprintf(b, cap, "-");
    else if (isinf(v))
        snprintf(b, cap, v > 0 ? "∞" : "-∞");
    else
        snprintf(b, cap, fmt, v);
}

/* Fixed bands, the same whatever the data: SQNR >= 40, 30, 20, 10 dB (the
 * relative RMSE of the same bands: 1%, 3.2%, 10%, 32%), so q8_0 (~45 dB),
 * q4_K (~24 dB) and q2_K (~14 dB) look different; bits per weight <= 3, 5,
 * 7, 9. */
int qp_level(int metric, const qerr_result *r)
{
    if (metric == QP_MET_BPW) {
        double b = r->bpw;
        if (isnan(b))
            return -1;
        return b <= 3 ? 0 : b <= 5 ? 1 : b <= 7 ? 2 : b <= 9 ? 3 : 4;
    }
    double s = r->m.sqnr_db;   /* = -20 log10(rel_rmse) */
    if (isnan(s) || !r->acc.n)
        return -1;
    return s >= 40 ? 0 : s >= 30 ? 1 : s >= 20 ? 2 : s >= 10 ? 3 : 4;
}

static bool type_specific(const qerr_page *q, const qerr_issue *is)
{
    return !q->parent && (!strncmp(is->msg, "ne[0]", 5) || !strncmp(is->msg, "element count", 13));
}

qp_reason *qp_reasons(const qerr_page *q, size_t *n, uint64_t *total)
{
    *n = 0;
    *total = 0;
    qp_reason *v = calloc(q->n_issues ? q->n_issues : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < q->n_issues; i++) {
        const qerr_issue *is = &q->issues[i];
        if (type_specific(q, is) && is->type != q->types[q->tcur])
            continue;
        char what[200];
        static const char *const KIND[] = {"not in the parent", "only in the parent", "", ""};
        if (is->kind == QERR_ISSUE_ONLY_MEASURED || is->kind == QERR_ISSUE_ONLY_REF)
            snprintf(what, sizeof what, "%s", KIND[is->kind]);
        else if (is->kind == QERR_ISSUE_SHAPE)
            snprintf(what, sizeof what, "shapes differ");
        else
            snprintf(what, sizeof what, "%s", is->msg);
        size_t k = 0;
        while (k < *n && strcmp(v[k].what, what))
            k++;
        if (k == *n)
            snprintf(v[(*n)++].what, sizeof v->what, "%s", what);
        v[k].count++;
        (*total)++;
    }
    return v;
}

size_t qp_view_aggs(const qerr_page *q, int view, const qerr_aggregate **out, size_t cap)
{
    int k = view == QP_VIEW_LAYERS ? 0 : view == QP_VIEW_ROLES ? 1 : 2;
    size_t n = 0;
    for (size_t i = 0; i < q->n_aggs[k] && n < cap; i++) {
        const qerr_aggregate *a = &q->aggs[k][i];
        if (q->parent || a->type == q->types[q->tcur])
            out[n++] = a;
    }
    return n;
}

/* The title line: the figures first (they must survive 80 columns), then the
 * files; a parent that cannot be the same model is said so. */
void qp_refresh_title(qerr_page *q)
{
    char figs[200] = "", warn[160] = "", tl[96] = "", title[900];
    if (!q->parent)
        snprintf(tl, sizeof tl, "%s · ", qp_type_name(q));
    if (q->n_types > 1)
        snprintf(tl, sizeof tl, "%s %d/%d · ", qp_type_name(q), q->tcur + 1, q->n_types);
    if (q->total_n) {
        char s[32];
        qp_fmtv(s, sizeof s, q->total.sqnr_db, "%.2f");
        snprintf(figs, sizeof figs, "SQNR %s dB · %.2f bpw%s · ", s, q->total_bpw, q->job ? " so far" : "");
    } else if (q->finished) {
        snprintf(figs, sizeof figs, "nothing measured · ");
    }
    if (q->parent && q->total_n && q->total.rel_rmse > 1)
        snprintf(warn, sizeof warn, "⚠ NOT THE SAME MODEL? relative error %.3g > 1 · ", q->total.rel_rmse);
    const char *path = gguf_path(q->f), *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (q->parent) {
        const char *pp = gguf_path(q->parent), *pb = strrchr(pp, '/');
        snprintf(title, sizeof title, " ggscope qerr  %s%s%s vs %s", warn, figs, base, pb ? pb + 1 : pp);
    } else {
        snprintf(title, sizeof title, " ggscope qerr  %s%s%s re-quantized", tl, figs, base);
    }
    screen_set_title(q->s, q->page, title);
}

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
        int hw = cols >= 160 ? cols * 3 / 5 : cols / 2;   /* wide: room for whole role names */
        screen_place(s, q->table, top, left, th, cols);
        screen_place(s, q->heat, top + th, left, rows - th, hw);
        screen_place(s, q->hist, top + th, left + hw, rows - th, cols - hw);
    } else {
        th = rows * 35 / 100;
        int hh = (rows - th) * 65 / 100;
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
    q->metric = (q->metric + 1) % QP_MET_COUNT;
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_type(screen *s, int key, void *ctx)
{
    (void)s;
    (void)key;
    qerr_page *q = ctx;
    if (q->n_types < 2)
        return PANEL_HANDLED;
    /* keep the selected tensor, at the next type */
    uint64_t ti = q->sel >= 0 ? q->res[q->sel].tensor : UINT64_MAX;
    q->tcur = (q->tcur + 1) % q->n_types;
    q->sel = -1;
    q->cur = q->top = q->vcur = q->vtop = 0;
    rebuild(q);
    for (size_t k = 0; k < q->n_order; k++)
        if (q->res[q->order[k]].tensor == ti)
            qp_select(q, (int64_t)q->order[k]);
    qp_refresh_title(q);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_view(screen *s, int key, void *ctx)
{
    (void)s;
    (void)key;
    qerr_page *q = ctx;
    size_t nr;
    uint64_t tot;
    free(qp_reasons(q, &nr, &tot));
    int n = nr ? QP_VIEW_COUNT : QP_VIEW_SKIPPED;
    q->view = (q->view + 1) % n;
    q->vcur = q->vtop = 0;
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

void qp_pane_destroy(panel *p)
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

qerr_page *qerr_page_new(screen *s, const gguf_file *f, const gguf_file *parent, const uint32_t *types,
                         size_t n_types, void (*jump)(void *ctx, uint64_t ti), void *ctx)
{
    qerr_page *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->s = s;
    q->f = f;
    q->parent = parent;
    q->n_types = 1;
    q->types[0] = GGTYPE_Q4_K;
    if (!parent && types && n_types) {
        q->n_types = n_types < QP_MAX_TYPES ? (int)n_types : QP_MAX_TYPES;
        memcpy(q->types, types, (size_t)q->n_types * sizeof *types);
    }
    q->jump = jump;
    q->ctx = ctx;
    q->sel = -1;
    q->vres_ti = -1;
    q->sort_col = QP_COL_REL;
    q->cap = (size_t)gguf_tensor_count(f) * (size_t)q->n_types;
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
    q->roles = calloc(QP_MAX_ROLES, sizeof *q->roles);
    q->grid = calloc((size_t)(q->n_layers + 1) * QP_MAX_ROLES, sizeof *q->grid);
    /* heatmap columns, deterministic: roles of blk.N matrices in file order,
     * then their vectors (only against a parent: re-quantization skips
     * vectors), then the roles outside blk.N */
    for (int pass = 0; pass < 3 && q->roles; pass++)
        for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            char nm[256], role[64];
            int l = qerr_name_role(gguf_str_copy(t->name, nm, sizeof nm), role, sizeof role);
            bool mat = t->n_dims >= 2 && t->n_elements != t->ne[0];
            if (!mat && !parent)
                continue;
            int want = l >= 0 ? (mat ? 0 : 1) : 2;
            char b[64];
            const char *key = col_key(nm, role, b, sizeof b);
            if (want == pass && qp_role_index(q, key) < 0 && q->n_roles < QP_MAX_ROLES)
                snprintf(q->roles[q->n_roles++], 64, "%s", key);
        }
    q->page = screen_add_page(s, "qerr", layout, q);
    q->table = mk(&qp_table_ops, q);
    q->heat = mk(&qp_heat_ops, q);
    q->hist = mk(&qp_hist_ops, q);
    if (!q->res || !q->order || !q->roles || !q->grid || q->page < 0 || !q->table || !q->heat || !q->hist) {
        free(q->table);
        free(q->heat);
        free(q->hist);
        qerr_page_free(q);
        return NULL;
    }
    for (int i = 0; i < (q->n_layers + 1) * QP_MAX_ROLES; i++)
        q->grid[i] = -1;
    screen_add_panel(s, q->page, q->table);
    screen_add_panel(s, q->page, q->heat);
    screen_add_panel(s, q->page, q->hist);
    static const short HEAT_FG[5] = {COLOR_GREEN, COLOR_CYAN, COLOR_YELLOW, COLOR_MAGENTA, COLOR_RED};
    q->colour = ui_attr(UI_C_BAR) != A_NORMAL && COLOR_PAIRS > QP_HEAT_PAIR0 + 5;
    if (q->colour)
        for (int l = 0; l < 5; l++)
            if (init_pair((short)(QP_HEAT_PAIR0 + l), HEAT_FG[l], -1) == ERR)
                q->colour = false;
    qp_refresh_title(q);
    const screen_binding binds[] = {
        {'m', "m", "metric", "heatmap metric: relative RMSE, SQNR, bits per weight", q->page, key_metric, q},
        {'v', "v", "view", "table: tensors, per layer, per role, whole file, skipped tensors", q->page, key_view, q},
        {'t', "t", "type", "next candidate type of --types", q->page, key_type, q},
        {UIK_ESC, "Esc", "cancel", "cancel the measurement", q->page, key_cancel, q},
    };
    for (size_t i = 0; i < sizeof binds / sizeof binds[0]; i++)
        if (binds[i].key != 't' || q->n_types > 1)
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
    free(q->issues);
    for (int k = 0; k < 3; k++)
        free(q->aggs[k]);
    free(q);
}
