/* qerr_page internals, shared by qerr_page.c (the page: jobs, keys, title,
 * layout), qerr_page_table.c (the table: tensors, aggregates, skipped
 * tensors) and qerr_page_heat.c (the heatmap and the histograms). */
#ifndef GGSCOPE_QERR_PAGE_IMPL_H
#define GGSCOPE_QERR_PAGE_IMPL_H

#include <stdatomic.h>

#include "qerr.h"
#include "qerr_page.h"
#include "tstats.h"

#define QP_MAX_TYPES 32
#define QP_MAX_ROLES 64

enum { QP_MET_REL, QP_MET_SQNR, QP_MET_BPW, QP_MET_COUNT };
/* Table views: `v` cycles them (the last only when something was skipped). */
enum { QP_VIEW_TENSORS, QP_VIEW_LAYERS, QP_VIEW_ROLES, QP_VIEW_FILE, QP_VIEW_SKIPPED, QP_VIEW_COUNT };
enum { QP_COL_NAME, QP_COL_TYPE, QP_COL_REL, QP_COL_SQNR, QP_COL_MAX, QP_COL_P95, QP_COL_COS, QP_COL_BPW,
       QP_COL_COUNT };

typedef struct qp_qjob qp_qjob;
typedef struct qp_vjob qp_vjob;

/* A reason for skipping, with how many tensors it stopped. */
typedef struct {
    char what[200];    /* "ne[0]=64 is not a multiple of q4_K's block of 256" */
    uint64_t count;
} qp_reason;

struct qerr_page {
    screen *s;
    int page;
    const gguf_file *f, *parent;
    uint32_t types[QP_MAX_TYPES];
    int n_types, tcur;    /* candidate types (requant) and the one shown */
    void (*jump)(void *ctx, uint64_t ti);
    void *ctx;
    panel *table, *heat, *hist;
    /* results, written by the worker, published through `ready` */
    qerr_result *res;
    size_t cap;
    atomic_size_t ready;
    qp_qjob *job;         /* running */
    bool started, finished, cancelled;
    char status[200];
    /* handed over by the job when it finishes (loop thread from then on) */
    qerr_issue *issues;
    size_t n_issues;
    qerr_aggregate *aggs[3];   /* layers, roles, file */
    size_t n_aggs[3];
    /* loop thread views, of the results of types[tcur] */
    size_t seen;          /* results folded into the views below */
    size_t *order;        /* table order: result indexes of the shown type */
    size_t n_order;
    int sort_col;
    bool sort_rev;
    size_t top, cur;      /* table scroll and cursor (positions in order) */
    int view;
    size_t vtop, vcur;    /* scroll and cursor of the other views */
    int64_t sel;          /* selected result index, -1 none */
    int metric;
    /* whole-file figures of the shown type, from the results so far */
    qerr_metrics total;
    double total_bpw;
    uint64_t total_n;
    /* heatmap grid: n_layers rows (+1 for tensors outside blk.N), roles columns */
    int n_layers;
    char (*roles)[64];
    int n_roles;
    int32_t *grid;        /* (n_layers + 1) * QP_MAX_ROLES result indexes, -1 empty */
    int hy, hx;           /* heatmap cursor */
    /* value histogram of the selected tensor */
    qp_vjob *vj;
    tstats_result *vres;
    int64_t vres_ti;
    bool colour;
};

struct qp_qjob {
    ui_job job;
    qerr_page *q;
    const gguf_file *f, *parent;
    uint32_t types[QP_MAX_TYPES];
    size_t n_types;
    qerr_status st;
    char err[160];
    /* copied from the report on the worker, handed to the page in q_done */
    qerr_issue *issues;
    size_t n_issues;
    qerr_aggregate *aggs[3];
    size_t n_aggs[3];
};

struct qp_vjob {
    ui_job job;
    qerr_page *q;
    const gguf_tensor *t;
    uint64_t ti;
    tstats_status st;
    tstats_result res;
    bool orphan;
};

/* qerr_page.c */
void qp_fold(qerr_page *q);                   /* fold new results into the views */
void qp_select(qerr_page *q, int64_t i);      /* select result i (table row, heat cell) */
void qp_resort(qerr_page *q);
void qp_refresh_title(qerr_page *q);
void qp_fmtv(char *b, size_t cap, double v, const char *fmt);   /* "-", "∞", "-∞" or fmt */
int qp_put_name(const qerr_page *q, WINDOW *w, int y, int x, int maxcols, const qerr_result *r, attr_t a);
int qp_role_index(const qerr_page *q, const char *role);
/* Skip reasons of the shown type, grouped (caller frees); *n set. */
qp_reason *qp_reasons(const qerr_page *q, size_t *n, uint64_t *total);
/* Aggregates of view v (QP_VIEW_LAYERS..FILE) of the shown type, at most cap. */
size_t qp_view_aggs(const qerr_page *q, int v, const qerr_aggregate **out, size_t cap);
const char *qp_type_name(const qerr_page *q);   /* the shown type's name */
void qp_vhist_want(qerr_page *q, uint64_t ti);
void qp_pane_destroy(panel *p);

/* Level 0 (best) .. 4 (worst) of a result on metric m's fixed bands; -1: no data. */
int qp_level(int metric, const qerr_result *r);

extern const panel_ops qp_table_ops, qp_heat_ops, qp_hist_ops;
extern const char *const QP_MET_NAME[QP_MET_COUNT];
#define QP_HEAT_PAIR0 48

#endif
