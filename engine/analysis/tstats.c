/* tstats: streaming statistics + histogram of dequantized tensor values. */
#include "tstats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"

#define CHUNK_ELEMS 65536u

/* Running moments of a set, merged chunk by chunk (Chan et al.). */
typedef struct {
    uint64_t n;
    double mean;
    double m2;   /* sum of squared deviations from the mean */
} moments;

static void moments_merge(moments *a, uint64_t nb, double mean_b, double m2_b)
{
    if (nb == 0)
        return;
    if (a->n == 0) {
        a->n = nb;
        a->mean = mean_b;
        a->m2 = m2_b;
        return;
    }
    double na = (double)a->n, n2 = (double)nb, n = na + n2;
    double delta = mean_b - a->mean;
    a->mean += delta * (n2 / n);
    a->m2 += m2_b + delta * delta * (na * n2 / n);
    a->n += nb;
}

static bool cancelled(const tstats_opts *o)
{
    return o->cancel && atomic_load_explicit(o->cancel, memory_order_relaxed);
}

int tstats_bin_of(const tstats_result *r, double v)
{
    if (!isfinite(v) || r->n_bins == 0)
        return -1;
    double span = r->max - r->min;
    if (!(span > 0))
        return 0;
    double f = (v - r->min) / span * (double)r->n_bins;
    if (f < 0)
        return 0;
    if (f >= (double)r->n_bins)
        return (int)r->n_bins - 1;
    return (int)f;
}

double tstats_bin_edge(const tstats_result *r, uint32_t i)
{
    if (r->n_bins == 0)
        return r->min;
    if (i >= r->n_bins)
        return r->max;
    return r->min + (r->max - r->min) * (double)i / (double)r->n_bins;
}

/* Dequantize elements [e, e + m) of the data at base into buf, unless the
 * run is cancelled. */
static tstats_status read_chunk(const tstats_opts *o, uint32_t type, const ggtype_traits *tr,
                                const uint8_t *base, uint64_t e, uint64_t m, float *buf)
{
    if (cancelled(o))
        return TSTATS_ECANCELLED;
    const uint8_t *src = base + e / tr->blck_size * tr->type_size;
    return codec_dequantize(type, src, buf, m) != 0 ? TSTATS_ETYPE : TSTATS_OK;
}

tstats_status tstats_compute_raw(uint32_t type, const void *data, uint64_t n_per_row,
                                 uint64_t n_rows, const tstats_opts *opts, tstats_result *out)
{
    static const tstats_opts defaults = {0};
    const tstats_opts *o = opts ? opts : &defaults;
    if (!out || (!data && n_rows && n_per_row))
        return TSTATS_EARG;
    const ggtype_traits *tr = ggtype_get(type);
    if (!tr || tr->blck_size == 0 || tr->type_size == 0)
        return TSTATS_ETYPE;
    if (n_per_row % tr->blck_size)
        return TSTATS_EARG;
    uint32_t n_bins = o->n_bins ? o->n_bins : 64;
    if (n_bins > TSTATS_MAX_BINS)
        return TSTATS_EARG;
    if (o->row_first > n_rows)
        return TSTATS_EARG;
    uint64_t rows = o->row_count ? o->row_count : n_rows - o->row_first;
    if (rows > n_rows - o->row_first)
        return TSTATS_EARG;
    if (n_per_row && rows > UINT64_MAX / n_per_row)
        return TSTATS_EARG;
    if (n_per_row && o->row_first > UINT64_MAX / n_per_row)
        return TSTATS_EARG;
    uint64_t e0 = o->row_first * n_per_row;
    uint64_t n = rows * n_per_row;

    memset(out, 0, sizeof *out);
    out->n_bins = n_bins;
    out->count = n;

    uint64_t chunk = CHUNK_ELEMS / tr->blck_size * tr->blck_size;
    if (chunk == 0)
        chunk = tr->blck_size;
    float *buf = malloc(chunk * sizeof(float));
    if (!buf)
        return TSTATS_ENOMEM;
    const uint8_t *base = data;
    uint64_t total_work = 2 * n;
    tstats_status st = TSTATS_OK;

    /* Pass 1: counts, range, moments. */
    moments mo = {0};
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (uint64_t done = 0; done < n; done += chunk) {
        uint64_t m = n - done < chunk ? n - done : chunk;
        if ((st = read_chunk(o, type, tr, base, e0 + done, m, buf)) != TSTATS_OK)
            goto out;
        uint64_t k = 0;
        double s = 0;
        for (uint64_t i = 0; i < m; i++) {
            float v = buf[i];
            if (isnan(v)) {
                out->nan++;
                continue;
            }
            if (isinf(v)) {
                out->inf++;
                continue;
            }
            if (v == 0.0f)
                out->zeros++;
            if (v < mn)
                mn = v;
            if (v > mx)
                mx = v;
            s += v;
            k++;
        }
        if (k) {
            double cm = s / (double)k, m2 = 0;
            for (uint64_t i = 0; i < m; i++) {
                float v = buf[i];
                if (isfinite(v)) {
                    double d = (double)v - cm;
                    m2 += d * d;
                }
            }
            moments_merge(&mo, k, cm, m2);
            sum += s;
        }
        if (o->progress)
            o->progress(o->user, done + m, total_work);
    }
    out->n_finite = mo.n;
    if (mo.n) {
        out->min = mn;
        out->max = mx;
        out->mean = mo.mean;
        out->std = sqrt(mo.m2 / (double)mo.n);
        out->absmax = fabs(mn) > fabs(mx) ? fabs(mn) : fabs(mx);
        out->sum = sum;
    }

    /* Pass 2: histogram over [min, max]. */
    if (mo.n) {
        for (uint64_t done = 0; done < n; done += chunk) {
            uint64_t m = n - done < chunk ? n - done : chunk;
            if ((st = read_chunk(o, type, tr, base, e0 + done, m, buf)) != TSTATS_OK)
                goto out;
            for (uint64_t i = 0; i < m; i++) {
                int b = tstats_bin_of(out, buf[i]);
                if (b >= 0)
                    out->bins[b]++;
            }
            if (o->progress)
                o->progress(o->user, n + done + m, total_work);
        }
    } else if (o->progress) {
        o->progress(o->user, total_work, total_work);
    }
out:
    free(buf);
    return st;
}

tstats_status tstats_compute(const gguf_tensor *t, const tstats_opts *opts, tstats_result *out)
{
    if (!t || !out)
        return TSTATS_EARG;
    if (!t->type_known || !t->data)
        return TSTATS_ETYPE;
    uint64_t ne0 = t->ne[0];
    if (ne0 == 0)
        return tstats_compute_raw(t->type, t->data, 0, 0, opts, out);
    return tstats_compute_raw(t->type, t->data, ne0, t->n_elements / ne0, opts, out);
}

const char *tstats_strerror(tstats_status s)
{
    switch (s) {
    case TSTATS_OK: return "ok";
    case TSTATS_ECANCELLED: return "cancelled";
    case TSTATS_ETYPE: return "this tensor type cannot be dequantized";
    case TSTATS_EARG: return "bad argument (row range or bin count)";
    case TSTATS_ENOMEM: return "out of memory";
    }
    return "unknown error";
}
