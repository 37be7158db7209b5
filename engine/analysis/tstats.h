/* tstats: streaming statistics and a histogram of a tensor's dequantized
 * values, shared by `ggscope dump --stats/--hist` and the explorer's
 * histogram view.
 *
 * The data is dequantized a chunk of blocks at a time (never the whole
 * tensor), in two passes: the first finds the range and the moments, the
 * second fills the histogram over [min, max]. Moments are accumulated per
 * chunk in double precision (sum and sum of squared deviations about the
 * chunk mean) and merged with Chan's formula, so the variance stays exact to
 * double rounding even for large tensors with a large mean.
 *
 * A progress callback is called between chunks; an atomic cancel flag is
 * polled between chunks too, so a worker thread can be stopped within one
 * chunk (~64K elements). Nothing here prints or touches a terminal. */
#ifndef GGSCOPE_TSTATS_H
#define GGSCOPE_TSTATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gguf.h"

typedef enum {
    TSTATS_OK = 0,
    TSTATS_ECANCELLED,  /* the cancel flag was set */
    TSTATS_ETYPE,       /* the tensor's type cannot be dequantized */
    TSTATS_EARG,        /* bad argument (row range, sizes) */
    TSTATS_ENOMEM,
} tstats_status;

#define TSTATS_MAX_BINS 4096

/* Results. NaN and Inf values are counted, not folded into the moments:
 * min/max/mean/std/absmax are over the finite values (n_finite of them); all
 * are 0 when there is no finite value. `std` is the population standard
 * deviation (divide by n_finite). */
typedef struct {
    uint64_t count;      /* elements looked at */
    uint64_t n_finite;
    uint64_t zeros;      /* values equal to 0 (+0 or -0) */
    uint64_t nan;
    uint64_t inf;        /* +Inf and -Inf */
    double min, max, mean, std, absmax;
    double sum;          /* sum of the finite values */
    uint32_t n_bins;     /* histogram over [min, max], bin width (max-min)/n_bins */
    uint64_t bins[TSTATS_MAX_BINS];
} tstats_result;

/* Progress: `done` of `total` work units (elements, counted twice: once per
 * pass). Called from the computing thread between chunks. */
typedef void (*tstats_progress_fn)(void *user, uint64_t done, uint64_t total);

typedef struct {
    uint32_t n_bins;            /* 1..TSTATS_MAX_BINS; 0 = 64 */
    uint64_t row_first;         /* rows (of ne[0] elements) to look at: */
    uint64_t row_count;         /*   [row_first, row_first+row_count); 0 = to the end */
    tstats_progress_fn progress;   /* optional */
    void *user;
    const atomic_bool *cancel;  /* optional: set it (any thread) to stop */
} tstats_opts;

/* Statistics of `n_rows` rows of `n_per_row` elements of ggml type `type`
 * stored at `data` (row size = ggtype_row_size(type, n_per_row)); the row
 * range of `opts` applies within these rows. The caller guarantees `data`
 * holds every row (gguf_tensor data is validated by the reader).
 * Returns TSTATS_OK and fills *out, or an error (out is then unspecified). */
tstats_status tstats_compute_raw(uint32_t type, const void *data, uint64_t n_per_row,
                                 uint64_t n_rows, const tstats_opts *opts, tstats_result *out);

/* Same for a tensor of an open file (rows = n_elements / ne[0]). */
tstats_status tstats_compute(const gguf_tensor *t, const tstats_opts *opts, tstats_result *out);

/* The bin a value falls into for a result's range, or -1 for NaN/Inf. */
int tstats_bin_of(const tstats_result *r, double v);

/* Lower edge of bin i (i may be n_bins: the upper end). */
double tstats_bin_edge(const tstats_result *r, uint32_t i);

/* A short English text for a status. */
const char *tstats_strerror(tstats_status s);

#endif
