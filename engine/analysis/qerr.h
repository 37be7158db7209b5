/* qerr: quantization error of a GGUF file, per tensor, per layer, per role
 * and for the whole file.
 *
 * Two modes, both streaming over chunks of whole blocks (64K elements at a
 * time, never a whole tensor in memory), multi-threaded over chunks:
 *   - qerr_compare: a file (the measured side) against a parent (the
 *     reference), tensors paired by name. Shape mismatches and tensors present
 *     on one side only are listed as issues, not errors.
 *   - qerr_requant: every 2-D (or more) float or quantized tensor of one file
 *     quantized to each candidate type that has a reference quantizer
 *     (codec_can_quantize) and measured against its own dequantized values.
 *     Tensors that were already quantized are flagged `requantized`.
 *
 * Metrics (see docs/qerr.md), with e = measured - reference over the elements
 * finite on both sides, accumulated in double precision:
 *   RMSE, relative RMSE (RMSE / RMS of the reference), max |e|, median and
 *   95th percentile of |e|, SQNR = 10 log10(sum ref^2 / sum e^2) in dB, cosine
 *   similarity of the two sides, bits per weight of each side.
 * The percentiles come from a histogram of |e| with one bucket per float32
 * exponent and 8 leading mantissa bits (65536 buckets, exact for 0): the
 * reported value is the middle of the bucket holding the nearest-rank order
 * statistic, within a relative 2^-9 (0.2%) of the exact value.
 * Zero error gives SQNR = +INFINITY with `sqnr_inf` set (never NaN).
 *
 * Nothing here prints; a progress callback and an atomic cancel flag let a
 * worker thread drive it. */
#ifndef GGSCOPE_QERR_H
#define GGSCOPE_QERR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef enum {
    QERR_OK = 0,
    QERR_ECANCELLED,   /* the cancel flag was set (results so far are kept) */
    QERR_EARG,         /* bad argument (no type, bad regex, unknown type) */
    QERR_ENOMEM,
    QERR_ETHREAD,      /* threads could not be started */
} qerr_status;

/* Histogram of |e|: bucket = float32 bits of |e| >> (23 - QERR_HIST_MANT). */
#define QERR_HIST_MANT 8
#define QERR_HIST_BINS (1u << (8 + QERR_HIST_MANT))
/* Coarse histogram of |e| kept per result (for display): linear over [0, max_abs]. */
#define QERR_EHIST_BINS 64

/* Running sums of one comparison (mergeable by adding). */
typedef struct {
    uint64_t n;             /* elements compared (finite on both sides) */
    uint64_t n_nonfinite;   /* elements skipped: NaN or Inf on either side */
    double sum_err2;        /* sum e^2 */
    double sum_ref2;        /* sum ref^2 */
    double sum_meas2;       /* sum meas^2 */
    double sum_dot;         /* sum ref * meas */
    double max_abs;         /* max |e| */
} qerr_acc;

typedef struct {
    double rmse;
    double rel_rmse;        /* rmse / rms(ref); 0 when both are 0; +INFINITY when only the reference is 0 */
    double max_abs;
    double p95_abs;         /* NaN when has_percentiles is false */
    double median_abs;
    double sqnr_db;         /* +INFINITY when there is no error at all; -INFINITY when the reference is all 0 */
    bool sqnr_inf;          /* sqnr_db == +INFINITY */
    double cosine;          /* 1 when both sides are all 0; 0 when only one is */
    bool has_percentiles;
} qerr_metrics;

/* One tensor compared at one type. */
typedef struct {
    uint64_t tensor;        /* index in the measured file (requant: the file) */
    char name[256];
    uint32_t n_dims;
    uint64_t ne[4];
    uint64_t elements;
    uint32_t type;          /* the measured side's type (requant: the candidate) */
    uint32_t ref_type;      /* the reference side's type (requant: the tensor's own) */
    bool requantized;       /* requant mode: the tensor was already quantized */
    double bpw;             /* bits per weight of the measured side */
    double ref_bpw;
    int layer;              /* N of "blk.N.", -1 otherwise */
    char role[64];          /* "attn_q", "ffn_down", "token_embd", "output" */
    qerr_acc acc;
    qerr_metrics m;
    uint64_t ehist[QERR_EHIST_BINS];   /* |e| over [0, m.max_abs], linear bins */
} qerr_result;

typedef enum {
    QERR_ISSUE_ONLY_MEASURED = 0,  /* compare: tensor absent from the parent */
    QERR_ISSUE_ONLY_REF,           /* compare: tensor absent from the measured file */
    QERR_ISSUE_SHAPE,              /* compare: shapes differ */
    QERR_ISSUE_SKIPPED,            /* not measurable (type, block size, 1-D) */
} qerr_issue_kind;

typedef struct {
    qerr_issue_kind kind;
    char name[256];
    uint32_t type;          /* candidate type for SKIPPED in requant mode, else the tensor's */
    char msg[160];
} qerr_issue;

/* An aggregate over several results of one measured type (requant) or of
 * the whole comparison (compare: type = UINT32_MAX). Weighted by element
 * count: the sums and the |e| histograms are added. Percentiles for the file,
 * for layers below 512 and for the first 128 roles (others: none). */
typedef struct {
    char key[64];           /* "blk.3", "attn_q", "file" */
    int layer;              /* layer aggregates: N; else -1 */
    uint32_t type;
    uint64_t tensors;
    uint64_t elements;
    double bits, ref_bits;  /* sum of bpw * elements of each side */
    qerr_acc acc;
    qerr_metrics m;
} qerr_aggregate;

typedef void (*qerr_progress_fn)(void *user, uint64_t done, uint64_t total);
/* Called once per finished result, from a computing thread, serialized (one at a time). */
typedef void (*qerr_result_fn)(void *user, const qerr_result *r);

typedef struct {
    const uint32_t *types;  /* requant: candidate types (each with a quantizer) */
    size_t n_types;
    const char *filter;     /* POSIX extended regex on tensor names; NULL = all */
    int n_threads;          /* <= 0: one per online CPU */
    qerr_progress_fn progress;   /* optional; `done`/`total` are elements */
    qerr_result_fn on_result;    /* optional */
    void *user;
    const atomic_bool *cancel;   /* optional */
    /* The tensors' data are read-only file mappings (gguf_open, not
     * gguf_open_memory): release the pages of each measured chunk with
     * madvise(MADV_DONTNEED) so the resident size stays small on big files
     * (the pages stay in the page cache; a later read maps them again). */
    bool release_pages;
} qerr_opts;

typedef struct qerr_report qerr_report;

/* Measure `f` (measured side) against `parent` (reference). Returns a report
 * (also on QERR_ECANCELLED, holding what finished), or NULL with *st set and
 * a message in err. Free with qerr_report_free. */
qerr_report *qerr_compare(const gguf_file *f, const gguf_file *parent, const qerr_opts *o,
                          qerr_status *st, char *err, size_t cap);

/* Re-quantize the tensors of `f` to o->types and measure each against its own
 * values. Same returns as qerr_compare. */
qerr_report *qerr_requant(const gguf_file *f, const qerr_opts *o, qerr_status *st, char *err,
                          size_t cap);

void qerr_report_free(qerr_report *r);   /* accepts NULL */

/* Results in tensor order, then candidate type order (unfinished ones of a
 * cancelled run are left out). */
size_t qerr_report_count(const qerr_report *r);
const qerr_result *qerr_report_at(const qerr_report *r, size_t i);
size_t qerr_report_issue_count(const qerr_report *r);
const qerr_issue *qerr_report_issue_at(const qerr_report *r, size_t i);
/* Aggregates: per layer (by layer, then type), per role (by name, then type),
 * whole file (one per type). */
size_t qerr_report_layers(const qerr_report *r, const qerr_aggregate **out);
size_t qerr_report_roles(const qerr_report *r, const qerr_aggregate **out);
size_t qerr_report_totals(const qerr_report *r, const qerr_aggregate **out);

/* ---- building blocks (also used by the tests) ---- */

/* Add n element pairs to acc; hist (QERR_HIST_BINS counters) may be NULL. */
void qerr_acc_add(qerr_acc *acc, uint64_t *hist, const float *ref, const float *meas, size_t n);
/* acc += b (and histograms, when both given). */
void qerr_acc_merge(qerr_acc *acc, const qerr_acc *b);
/* Metrics of an accumulator; hist (may be NULL: no percentiles). */
void qerr_metrics_of(const qerr_acc *acc, const uint64_t *hist, qerr_metrics *m);
/* The q-quantile (0 < q <= 1) of |e| from a histogram of n values: the middle
 * of the bucket holding the value of rank ceil(q n) (1-based); 0 for bucket 0. */
double qerr_hist_quantile(const uint64_t *hist, uint64_t n, double q);

/* Layer and role of a tensor name: "blk.12.attn_q.weight" -> 12, "attn_q";
 * "output.weight" -> -1, "output". */
int qerr_name_role(const char *name, char *role, size_t cap);

const char *qerr_strerror(qerr_status s);

#endif
