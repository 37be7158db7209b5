/* qerr internals shared by qerr_metrics.c, qerr_report.c and qerr_run.c:
 * the report's layout, the work items and the report building that the
 * runs call. Not part of the public API (qerr.h). */
#ifndef GGSCOPE_QERR_INTERNAL_H
#define GGSCOPE_QERR_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "qerr.h"

struct qerr_report {
    qerr_result *res;      /* n_items slots */
    bool *done;            /* slot finished */
    size_t n_items;
    qerr_result *out;      /* finished results, in slot order (built at the end) */
    size_t n_out;
    qerr_issue *issues;
    size_t n_issues, cap_issues;
    qerr_aggregate *layers, *roles, *totals;
    size_t n_layers, n_roles, n_totals;
    uint64_t **total_hist; /* one per type slot (n_totals) */
    /* histograms of the layer and role aggregates, allocated when first used:
     * ghist[slot * (g_layers + n_gnames) + layer] and [... + g_layers + role] */
    char (*gnames)[64];
    size_t n_gnames;
    size_t g_layers;
    uint64_t **ghist;
};

#define MAX_HIST_LAYERS 512
#define MAX_HIST_ROLES 128

/* One unit of work: a tensor measured against one candidate type (requant)
 * or against the parent's tensor (compare). */
typedef struct {
    const gguf_tensor *src;    /* requant: the tensor; compare: the measured side */
    const gguf_tensor *ref;    /* compare: the parent's; requant: NULL */
    uint32_t qtype;            /* requant: candidate type */
    uint64_t chunk;            /* elements per chunk */
    uint64_t n_chunks;
    atomic_uint_least64_t next;
    uint64_t merged;           /* chunks merged (under the run's mutex) */
    qerr_acc acc;
    uint64_t *hist;
    size_t slot;
    uint32_t total_slot;
    int role_idx;              /* in rep->gnames, or -1 */
} qerr__item;

/* The middle of histogram bucket k (a value of |error|). */
double qerr__bucket_mid(uint32_t k);

/* Append an issue to r (message printf-formatted); -1 when out of memory. */
int qerr__add_issue(qerr_report *r, qerr_issue_kind kind, const char *name, uint32_t type,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* snprintf(err, cap, fmt, arg) when err is given (arg NULL: ""). */
void qerr__set_err(char *err, size_t cap, const char *fmt, const char *arg);
/* Whether the codec can turn a tensor of this type into floats. */
bool qerr__type_dequantizable(uint32_t type);
/* Bits per weight of a type / of a tensor as stored. */
double qerr__bpw_of(uint32_t type);
double qerr__tensor_bpw(const gguf_tensor *t);
/* A report of n_items result slots and n_totals file totals; NULL when out of memory. */
qerr_report *qerr__report_new(size_t n_items, size_t n_totals);
/* The layer and role groups of the items' histograms; -1 when out of memory. */
int qerr__groups_init(qerr_report *rep, qerr__item *items, size_t n);
/* The layer, role and file aggregates of the finished results; -1 when out of memory. */
int qerr__build_aggregates(qerr_report *rep, bool compare, const qerr_opts *o);

#endif
