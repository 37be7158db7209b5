/* qerr: quantization error per tensor / layer / role / file (see qerr.h). */
#include "qerr.h"

#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codec.h"
#include "cpufeat.h"
#include "ggtype.h"

#define CHUNK_TARGET 65536u
#define RELEASE_GROUP 16u /* chunks whose pages are released together */

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

const char *qerr_strerror(qerr_status s)
{
    switch (s) {
    case QERR_OK: return "ok";
    case QERR_ECANCELLED: return "cancelled";
    case QERR_EARG: return "bad argument";
    case QERR_ENOMEM: return "out of memory";
    case QERR_ETHREAD: return "cannot start threads";
    }
    return "unknown error";
}

/* ---- accumulation ---- */

typedef float vf8 __attribute__((vector_size(32)));
typedef double vd8 __attribute__((vector_size(64)));
typedef long long vl8 __attribute__((vector_size(64)));

#define ACC_BODY                                                                      \
    vd8 se = {0}, sr = {0}, sm = {0}, sd = {0}, mx = {0};                            \
    const vl8 absmask = (vl8){0} + 0x7fffffffffffffffLL;                              \
    size_t i = 0;                                                                     \
    for (; i + 8 <= n; i += 8) {                                                      \
        vf8 r, m;                                                                     \
        memcpy(&r, ref + i, sizeof r);                                                \
        memcpy(&m, meas + i, sizeof m);                                               \
        vd8 rd = __builtin_convertvector(r, vd8);                                     \
        vd8 md = __builtin_convertvector(m, vd8);                                     \
        vd8 e = md - rd;                                                              \
        se += e * e;                                                                  \
        sr += rd * rd;                                                                \
        sm += md * md;                                                                \
        sd += rd * md;                                                                \
        vd8 ea = (vd8)((vl8)e & absmask);                                             \
        vl8 gt = ea > mx;                                                             \
        mx = (vd8)(((vl8)ea & gt) | ((vl8)mx & ~gt));                                 \
    }                                                                                 \
    double s[5] = {0, 0, 0, 0, 0};                                                    \
    for (int k = 0; k < 8; k++) {                                                     \
        s[0] += se[k];                                                                \
        s[1] += sr[k];                                                                \
        s[2] += sm[k];                                                                \
        s[3] += sd[k];                                                                \
        if (mx[k] > s[4])                                                             \
            s[4] = mx[k];                                                             \
    }                                                                                 \
    for (; i < n; i++) {                                                              \
        double rd = ref[i], md = meas[i], e = md - rd;                                \
        s[0] += e * e;                                                                \
        s[1] += rd * rd;                                                              \
        s[2] += md * md;                                                              \
        s[3] += rd * md;                                                              \
        if (fabs(e) > s[4])                                                           \
            s[4] = fabs(e);                                                           \
    }                                                                                 \
    memcpy(out, s, sizeof s);

static void acc_sums_generic(const float *ref, const float *meas, size_t n, double out[5])
{
    ACC_BODY
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f,avx512dq,avx2,fma"))) static void
acc_sums_avx512(const float *ref, const float *meas, size_t n, double out[5])
{
    ACC_BODY
}
#define HAVE_AVX512_PATH 1
#endif

static void acc_sums(const float *ref, const float *meas, size_t n, double out[5])
{
#ifdef HAVE_AVX512_PATH
    static _Atomic int have = -1;   /* GGSCOPE_SIMD=scalar|avx2 forces the generic code (cpufeat.h) */
    if (have < 0)
        have = cpufeat_get()->avx512 && cpufeat_level_allowed() >= CPUFEAT_AVX512;
    if (have) {
        acc_sums_avx512(ref, meas, n, out);
        return;
    }
#endif
    acc_sums_generic(ref, meas, n, out);
}

static inline uint32_t abs_bucket(float a)
{
    uint32_t b;
    memcpy(&b, &a, 4);
    return (b & 0x7fffffffu) >> (23 - QERR_HIST_MANT);
}

static void hist_add_generic(uint64_t *hist, const float *ref, const float *meas, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hist[abs_bucket(meas[i] - ref[i])]++;
}

#ifdef HAVE_AVX512_PATH
#include <immintrin.h>
#if QERR_HIST_BINS > 65536
#error "the AVX-512 histogram path keeps bucket numbers in 16 bits"
#endif
/* acc_sums and hist_add_generic in one pass, 16 pairs at a time: the sums in
 * double with fused multiply-adds (two sets of accumulators, the low and high
 * 8 pairs), the buckets from the float difference (the same bits as
 * abs_bucket) into a small buffer, then counted. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) static void
acc_fused_avx512(const float *ref, const float *meas, size_t n, double out[5], uint64_t *hist)
{
    enum { BLK = 512 };
    uint16_t idx[BLK] __attribute__((aligned(64)));
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    const __m512d absd = _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffLL));
    __m512d se0 = _mm512_setzero_pd(), sr0 = se0, sm0 = se0, sd0 = se0, mx0 = se0;
    __m512d se1 = se0, sr1 = se0, sm1 = se0, sd1 = se0, mx1 = se0;
    size_t i = 0;
    while (i + 16 <= n) {
        size_t m = n - i;
        if (m > BLK)
            m = BLK;
        m &= ~(size_t)15;
        for (size_t j = 0; j < m; j += 16) {
            const __m512 r = _mm512_loadu_ps(ref + i + j), q = _mm512_loadu_ps(meas + i + j);
            const __m512d r0 = _mm512_cvtps_pd(_mm512_castps512_ps256(r));
            const __m512d r1 = _mm512_cvtps_pd(
                _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(r), 1)));
            const __m512d q0 = _mm512_cvtps_pd(_mm512_castps512_ps256(q));
            const __m512d q1 = _mm512_cvtps_pd(
                _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(q), 1)));
            const __m512d e0 = _mm512_sub_pd(q0, r0), e1 = _mm512_sub_pd(q1, r1);
            se0 = _mm512_fmadd_pd(e0, e0, se0);
            se1 = _mm512_fmadd_pd(e1, e1, se1);
            sr0 = _mm512_fmadd_pd(r0, r0, sr0);
            sr1 = _mm512_fmadd_pd(r1, r1, sr1);
            sm0 = _mm512_fmadd_pd(q0, q0, sm0);
            sm1 = _mm512_fmadd_pd(q1, q1, sm1);
            sd0 = _mm512_fmadd_pd(r0, q0, sd0);
            sd1 = _mm512_fmadd_pd(r1, q1, sd1);
            mx0 = _mm512_max_pd(mx0, _mm512_and_pd(e0, absd));
            mx1 = _mm512_max_pd(mx1, _mm512_and_pd(e1, absd));
            const __m512 e = _mm512_sub_ps(q, r);
            const __m512i bk = _mm512_srli_epi32(
                _mm512_and_si512(_mm512_castps_si512(e), absm), 23 - QERR_HIST_MANT);
            _mm256_store_si256((__m256i *)(idx + j), _mm512_cvtepi32_epi16(bk));
        }
        if (hist)
            for (size_t j = 0; j < m; j += 4) {
                hist[idx[j]]++;
                hist[idx[j + 1]]++;
                hist[idx[j + 2]]++;
                hist[idx[j + 3]]++;
            }
        i += m;
    }
    double sv[5][16];
    _mm512_storeu_pd(sv[0], se0);
    _mm512_storeu_pd(sv[0] + 8, se1);
    _mm512_storeu_pd(sv[1], sr0);
    _mm512_storeu_pd(sv[1] + 8, sr1);
    _mm512_storeu_pd(sv[2], sm0);
    _mm512_storeu_pd(sv[2] + 8, sm1);
    _mm512_storeu_pd(sv[3], sd0);
    _mm512_storeu_pd(sv[3] + 8, sd1);
    _mm512_storeu_pd(sv[4], mx0);
    _mm512_storeu_pd(sv[4] + 8, mx1);
    double s[5] = {0, 0, 0, 0, 0};
    for (int k = 0; k < 16; k++) {
        for (int c = 0; c < 4; c++)
            s[c] += sv[c][k];
        if (sv[4][k] > s[4])
            s[4] = sv[4][k];
    }
    for (; i < n; i++) {
        double rd = ref[i], md = meas[i], e = md - rd;
        s[0] += e * e;
        s[1] += rd * rd;
        s[2] += md * md;
        s[3] += rd * md;
        if (fabs(e) > s[4])
            s[4] = fabs(e);
        if (hist)
            hist[abs_bucket(meas[i] - ref[i])]++;
    }
    memcpy(out, s, sizeof s);
}
#endif

/* The sums of acc_sums; when hist is not NULL, also counts every pair's
 * bucket into hist (returns true) or leaves hist alone (false). */
static bool acc_sums_hist(const float *ref, const float *meas, size_t n, double out[5],
                          uint64_t *hist)
{
#ifdef HAVE_AVX512_PATH
    static _Atomic int have = -1;
    if (have < 0)
        have = cpufeat_get()->avx512 && cpufeat_level_allowed() >= CPUFEAT_AVX512;
    if (have) {
        acc_fused_avx512(ref, meas, n, out, hist);
        return hist != NULL;
    }
#endif
    acc_sums(ref, meas, n, out);
    return false;
}

void qerr_acc_add(qerr_acc *acc, uint64_t *hist, const float *ref, const float *meas, size_t n)
{
    double s[5];
    const bool counted = acc_sums_hist(ref, meas, n, s, hist);
    if (isfinite(s[0]) && isfinite(s[1]) && isfinite(s[2]) && isfinite(s[3])) {
        acc->n += n;
        acc->sum_err2 += s[0];
        acc->sum_ref2 += s[1];
        acc->sum_meas2 += s[2];
        acc->sum_dot += s[3];
        if (s[4] > acc->max_abs)
            acc->max_abs = s[4];
        if (hist && !counted)
            hist_add_generic(hist, ref, meas, n);
        return;
    }
    if (counted) /* take the pairs back out: the slow path counts the finite ones */
        for (size_t i = 0; i < n; i++)
            hist[abs_bucket(meas[i] - ref[i])]--;
    /* some value is NaN or Inf: the slow path skips those pairs */
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(ref[i]) || !isfinite(meas[i])) {
            acc->n_nonfinite++;
            continue;
        }
        double rd = ref[i], md = meas[i], e = md - rd;
        acc->n++;
        acc->sum_err2 += e * e;
        acc->sum_ref2 += rd * rd;
        acc->sum_meas2 += md * md;
        acc->sum_dot += rd * md;
        if (fabs(e) > acc->max_abs)
            acc->max_abs = fabs(e);
        if (hist)
            hist[abs_bucket(meas[i] - ref[i])]++;
    }
}

void qerr_acc_merge(qerr_acc *acc, const qerr_acc *b)
{
    acc->n += b->n;
    acc->n_nonfinite += b->n_nonfinite;
    acc->sum_err2 += b->sum_err2;
    acc->sum_ref2 += b->sum_ref2;
    acc->sum_meas2 += b->sum_meas2;
    acc->sum_dot += b->sum_dot;
    if (b->max_abs > acc->max_abs)
        acc->max_abs = b->max_abs;
}

static double bucket_mid(uint32_t k)
{
    if (k == 0)
        return 0.0;
    uint32_t lo = k << (23 - QERR_HIST_MANT), hi = (k + 1) << (23 - QERR_HIST_MANT);
    float flo, fhi;
    memcpy(&flo, &lo, 4);
    if (hi >= 0x7f800000u)
        return flo;
    memcpy(&fhi, &hi, 4);
    return 0.5 * ((double)flo + (double)fhi);
}

double qerr_hist_quantile(const uint64_t *hist, uint64_t n, double q)
{
    if (!hist || n == 0)
        return NAN;
    uint64_t rank = (uint64_t)ceil(q * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    uint64_t c = 0;
    for (uint32_t k = 0; k < QERR_HIST_BINS; k++) {
        c += hist[k];
        if (c >= rank)
            return bucket_mid(k);
    }
    return NAN;
}

void qerr_metrics_of(const qerr_acc *a, const uint64_t *hist, qerr_metrics *m)
{
    memset(m, 0, sizeof *m);
    double n = (double)a->n;
    m->max_abs = a->max_abs;
    m->rmse = a->n ? sqrt(a->sum_err2 / n) : 0.0;
    if (a->sum_ref2 > 0)
        m->rel_rmse = sqrt(a->sum_err2 / a->sum_ref2);
    else
        m->rel_rmse = a->sum_err2 > 0 ? INFINITY : 0.0;
    if (a->sum_err2 == 0) {
        m->sqnr_db = INFINITY;
        m->sqnr_inf = true;
    } else if (a->sum_ref2 == 0) {
        m->sqnr_db = -INFINITY;
    } else {
        m->sqnr_db = 10.0 * log10(a->sum_ref2 / a->sum_err2);
    }
    if (a->sum_ref2 == 0 && a->sum_meas2 == 0)
        m->cosine = 1.0;
    else if (a->sum_ref2 == 0 || a->sum_meas2 == 0)
        m->cosine = 0.0;
    else {
        double c = a->sum_dot / sqrt(a->sum_ref2 * a->sum_meas2);
        m->cosine = c > 1 ? 1 : c < -1 ? -1 : c;
    }
    if (hist && a->n) {
        m->has_percentiles = true;
        m->median_abs = qerr_hist_quantile(hist, a->n, 0.5);
        m->p95_abs = qerr_hist_quantile(hist, a->n, 0.95);
    } else {
        m->median_abs = m->p95_abs = NAN;
    }
}

int qerr_name_role(const char *name, char *role, size_t cap)
{
    int layer = -1;
    const char *p = name;
    if (!strncmp(name, "blk.", 4)) {
        char *end;
        long v = strtol(name + 4, &end, 10);
        if (end != name + 4 && *end == '.' && v >= 0 && v < 1000000) {
            layer = (int)v;
            p = end + 1;
        }
    }
    const char *dot = strrchr(p, '.');
    size_t len = strlen(p);
    if (dot && (!strcmp(dot, ".weight") || !strcmp(dot, ".bias")))
        len = (size_t)(dot - p);
    if (cap) {
        if (len >= cap)
            len = cap - 1;
        memcpy(role, p, len);
        role[len] = 0;
    }
    return layer;
}

/* ---- the work ---- */

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
} item;

typedef struct {
    qerr_report *rep;
    item *items;
    size_t n_items;
    atomic_size_t cursor;
    pthread_mutex_t mu;
    const qerr_opts *o;
    atomic_uint_least64_t done_elems;
    uint64_t total_elems;
    atomic_bool failed;        /* out of memory or a codec error */
    atomic_bool stop;
    size_t max_chunk;
    size_t max_qbytes;
} run_ctx;

typedef struct {
    run_ctx *rc;
    int ith;
    float *a, *b;
    uint8_t *q;
    uint64_t *hist;
    size_t cur;                /* item of the partial, or SIZE_MAX */
    uint64_t chunks;
    qerr_acc acc;
} worker;

static uint64_t u64_gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void finalize_item(run_ctx *rc, item *it)
{
    qerr_report *rep = rc->rep;
    qerr_result *r = &rep->res[it->slot];
    r->acc = it->acc;
    qerr_metrics_of(&it->acc, it->hist, &r->m);
    memset(r->ehist, 0, sizeof r->ehist);
    if (it->hist && r->m.max_abs > 0) {
        for (uint32_t k = 0; k < QERR_HIST_BINS; k++) {
            if (!it->hist[k])
                continue;
            double v = bucket_mid(k);
            int bi = (int)(v / r->m.max_abs * QERR_EHIST_BINS);
            if (bi >= QERR_EHIST_BINS)
                bi = QERR_EHIST_BINS - 1;
            if (bi < 0)
                bi = 0;
            r->ehist[bi] += it->hist[k];
        }
    } else if (it->hist) {
        r->ehist[0] = it->acc.n;
    }
    uint64_t *th = rep->total_hist[it->total_slot];
    if (th && it->hist)
        for (uint32_t k = 0; k < QERR_HIST_BINS; k++)
            th[k] += it->hist[k];
    if (rep->ghist && it->hist) {
        size_t stride = rep->g_layers + rep->n_gnames, base = it->total_slot * stride;
        size_t idx[2] = {SIZE_MAX, SIZE_MAX};
        if (r->layer >= 0 && (size_t)r->layer < rep->g_layers)
            idx[0] = base + (size_t)r->layer;
        if (it->role_idx >= 0)
            idx[1] = base + rep->g_layers + (size_t)it->role_idx;
        for (int g = 0; g < 2; g++) {
            if (idx[g] == SIZE_MAX)
                continue;
            if (!rep->ghist[idx[g]])
                rep->ghist[idx[g]] = calloc(QERR_HIST_BINS, sizeof(uint64_t));
            uint64_t *gh = rep->ghist[idx[g]];
            if (gh)
                for (uint32_t k = 0; k < QERR_HIST_BINS; k++)
                    gh[k] += it->hist[k];
        }
    }
    free(it->hist);
    it->hist = NULL;
    rep->done[it->slot] = true;
    if (rc->o->on_result)
        rc->o->on_result(rc->o->user, r);
}

static void flush(worker *w)
{
    if (w->cur == SIZE_MAX)
        return;
    run_ctx *rc = w->rc;
    item *it = &rc->items[w->cur];
    pthread_mutex_lock(&rc->mu);
    if (!it->hist)
        it->hist = calloc(QERR_HIST_BINS, sizeof *it->hist);
    if (!it->hist)
        atomic_store(&rc->failed, true);
    else
        for (uint32_t k = 0; k < QERR_HIST_BINS; k++)
            it->hist[k] += w->hist[k];
    qerr_acc_merge(&it->acc, &w->acc);
    it->merged += w->chunks;
    if (it->merged == it->n_chunks && !atomic_load(&rc->failed))
        finalize_item(rc, it);
    pthread_mutex_unlock(&rc->mu);
    w->cur = SIZE_MAX;
    w->chunks = 0;
    memset(&w->acc, 0, sizeof w->acc);
    memset(w->hist, 0, QERR_HIST_BINS * sizeof *w->hist);
}

/* Dequantize elements [e0, e0+n) of tensor t (flat sequence of blocks). */
static int deq_range(const gguf_tensor *t, uint64_t e0, uint64_t n, float *dst)
{
    const ggtype_traits *tr = ggtype_get(t->type);
    uint64_t off = e0 / tr->blck_size * tr->type_size;
    return codec_dequantize(t->type, t->data + off, dst, n);
}

/* Release the pages of elements [e0, e0+n) of t: from the page holding the
 * first byte to the one holding the last (excluded). Safe on a read-only file
 * mapping even when another thread reads them: they are read again. */
static void release(const gguf_tensor *t, uint64_t e0, uint64_t n)
{
    static _Atomic long pg = 0;
    if (!pg)
        pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0)
        return;
    const ggtype_traits *tr = ggtype_get(t->type);
    uintptr_t a = (uintptr_t)(t->data + e0 / tr->blck_size * tr->type_size);
    uintptr_t b = (uintptr_t)(t->data + (e0 + n) / tr->blck_size * tr->type_size);
    a &= ~(uintptr_t)(pg - 1);
    b &= ~(uintptr_t)(pg - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_DONTNEED);
}

static int do_chunk(worker *w, item *it, uint64_t c)
{
    uint64_t e0 = c * it->chunk;
    uint64_t n = it->src->n_elements - e0;
    if (n > it->chunk)
        n = it->chunk;
    if (it->ref) {
        if (deq_range(it->src, e0, n, w->b) != 0 || deq_range(it->ref, e0, n, w->a) != 0)
            return -1;
    } else {
        if (deq_range(it->src, e0, n, w->a) != 0)
            return -1;
        if (codec_quantize(it->qtype, w->a, w->q, 1, n, NULL) == 0)
            return -1;
        if (codec_dequantize(it->qtype, w->q, w->b, n) != 0)
            return -1;
    }
    qerr_acc_add(&w->acc, w->hist, w->a, w->b, (size_t)n);
    /* pages go back RELEASE_GROUP chunks at a time (each madvise costs a TLB
     * shootdown on every CPU): when chunk c ends a group or the tensor, from
     * the group's first element to c's last */
    if (w->rc->o->release_pages && ((c + 1) % RELEASE_GROUP == 0 || c + 1 == it->n_chunks)) {
        uint64_t g0 = c / RELEASE_GROUP * RELEASE_GROUP * it->chunk;
        release(it->src, g0, e0 + n - g0);
        if (it->ref)
            release(it->ref, g0, e0 + n - g0);
    }
    return 0;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    run_ctx *rc = w->rc;
    const qerr_opts *o = rc->o;
    size_t i = atomic_load(&rc->cursor);
    while (i < rc->n_items) {
        if ((o->cancel && atomic_load(o->cancel)) || atomic_load(&rc->failed) ||
            atomic_load(&rc->stop)) {
            atomic_store(&rc->stop, true);
            break;
        }
        item *it = &rc->items[i];
        uint64_t c = atomic_fetch_add(&it->next, 1);
        if (c >= it->n_chunks) {
            if (w->cur == i)
                flush(w);
            size_t exp = i;
            atomic_compare_exchange_strong(&rc->cursor, &exp, i + 1);
            i = atomic_load(&rc->cursor);
            continue;
        }
        if (w->cur != i) {
            flush(w);
            w->cur = i;
        }
        if (do_chunk(w, it, c) != 0) {
            atomic_store(&rc->failed, true);
            break;
        }
        w->chunks++;
        uint64_t n = it->src->n_elements - c * it->chunk;
        if (n > it->chunk)
            n = it->chunk;
        uint64_t d = atomic_fetch_add(&rc->done_elems, n) + n;
        if (w->ith == 0 && o->progress)
            o->progress(o->user, d, rc->total_elems);
    }
    if (!atomic_load(&rc->stop) && !atomic_load(&rc->failed))
        flush(w);
    return NULL;
}

/* ---- report building ---- */

static int add_issue(qerr_report *r, qerr_issue_kind kind, const char *name, uint32_t type,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#include <stdarg.h>
static int add_issue(qerr_report *r, qerr_issue_kind kind, const char *name, uint32_t type,
                     const char *fmt, ...)
{
    if (r->n_issues == r->cap_issues) {
        size_t nc = r->cap_issues ? r->cap_issues * 2 : 16;
        qerr_issue *ni = realloc(r->issues, nc * sizeof *ni);
        if (!ni)
            return -1;
        r->issues = ni;
        r->cap_issues = nc;
    }
    qerr_issue *is = &r->issues[r->n_issues++];
    memset(is, 0, sizeof *is);
    is->kind = kind;
    is->type = type;
    snprintf(is->name, sizeof is->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(is->msg, sizeof is->msg, fmt, ap);
    va_end(ap);
    return 0;
}

static void set_err(char *err, size_t cap, const char *fmt, const char *arg)
{
    if (err && cap)
        snprintf(err, cap, fmt, arg ? arg : "");
}

static bool type_dequantizable(uint32_t type)
{
    const ggtype_traits *t = ggtype_get(type);
    return t && (t->is_float || t->is_quantized);
}

static double bpw_of(uint32_t type)
{
    const ggtype_traits *t = ggtype_get(type);
    return t ? 8.0 * t->type_size / t->blck_size : 0.0;
}

static double tensor_bpw(const gguf_tensor *t)
{
    return t->n_elements ? 8.0 * (double)t->n_bytes / (double)t->n_elements : 0.0;
}

static size_t agg_find(qerr_aggregate **arr, size_t *n, size_t *cap, const char *key, int layer,
                       uint32_t type)
{
    for (size_t i = 0; i < *n; i++)
        if ((*arr)[i].type == type && !strcmp((*arr)[i].key, key))
            return i;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        qerr_aggregate *na = realloc(*arr, nc * sizeof *na);
        if (!na)
            return SIZE_MAX;
        *arr = na;
        *cap = nc;
    }
    qerr_aggregate *a = &(*arr)[*n];
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, "%s", key);
    a->layer = layer;
    a->type = type;
    return (*n)++;
}

static int cmp_layer(const void *pa, const void *pb)
{
    const qerr_aggregate *a = pa, *b = pb;
    if (a->layer != b->layer)
        return a->layer < b->layer ? -1 : 1;
    return a->type < b->type ? -1 : a->type > b->type;
}

static int cmp_role(const void *pa, const void *pb)
{
    const qerr_aggregate *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    if (c)
        return c;
    return a->type < b->type ? -1 : a->type > b->type;
}

static int gname_index(const qerr_report *rep, const char *role)
{
    for (size_t i = 0; i < rep->n_gnames; i++)
        if (!strcmp(rep->gnames[i], role))
            return (int)i;
    return -1;
}

/* The histogram of a layer (layer >= 0) or role aggregate of type ty, or NULL. */
static const uint64_t *group_hist(const qerr_report *rep, uint32_t ty, int layer, const char *role)
{
    if (!rep->ghist)
        return NULL;
    size_t slot = SIZE_MAX;
    for (size_t t = 0; t < rep->n_totals; t++)
        if (rep->totals[t].type == ty)
            slot = t;
    if (slot == SIZE_MAX)
        return NULL;
    size_t stride = rep->g_layers + rep->n_gnames;
    if (layer >= 0)
        return (size_t)layer < rep->g_layers ? rep->ghist[slot * stride + (size_t)layer] : NULL;
    int ri = gname_index(rep, role);
    return ri >= 0 ? rep->ghist[slot * stride + rep->g_layers + (size_t)ri] : NULL;
}

/* Give every item its role index and allocate the group histogram table
 * (NULL entries: filled when first used). Returns -1 on no memory. */
static int groups_init(qerr_report *rep, item *items, size_t n)
{
    int maxl = -1;
    rep->gnames = calloc(MAX_HIST_ROLES, sizeof *rep->gnames);
    if (!rep->gnames)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const qerr_result *r = &rep->res[items[i].slot];
        if (r->layer > maxl)
            maxl = r->layer;
        int ri = gname_index(rep, r->role);
        if (ri < 0 && rep->n_gnames < MAX_HIST_ROLES) {
            snprintf(rep->gnames[rep->n_gnames], 64, "%s", r->role);
            ri = (int)rep->n_gnames++;
        }
        items[i].role_idx = ri;
    }
    rep->g_layers = maxl + 1 > MAX_HIST_LAYERS ? MAX_HIST_LAYERS : (size_t)(maxl + 1);
    size_t cells = rep->n_totals * (rep->g_layers + rep->n_gnames);
    rep->ghist = calloc(cells ? cells : 1, sizeof *rep->ghist);
    return rep->ghist ? 0 : -1;
}

static int build_aggregates(qerr_report *rep, bool compare, const qerr_opts *o)
{
    size_t cl = 0, cr = 0;
    for (size_t i = 0; i < rep->n_items; i++) {
        if (!rep->done[i])
            continue;
        const qerr_result *r = &rep->res[i];
        uint32_t ty = compare ? UINT32_MAX : r->type;
        qerr_aggregate *targets[3] = {NULL, NULL, NULL};
        if (r->layer >= 0) {
            char key[32];
            snprintf(key, sizeof key, "blk.%d", r->layer);
            size_t k = agg_find(&rep->layers, &rep->n_layers, &cl, key, r->layer, ty);
            if (k == SIZE_MAX)
                return -1;
            targets[0] = &rep->layers[k];
        }
        size_t k = agg_find(&rep->roles, &rep->n_roles, &cr, r->role, -1, ty);
        if (k == SIZE_MAX)
            return -1;
        targets[1] = &rep->roles[k];
        for (size_t t = 0; t < rep->n_totals; t++)
            if (rep->totals[t].type == ty)
                targets[2] = &rep->totals[t];
        for (int t = 0; t < 3; t++) {
            qerr_aggregate *a = targets[t];
            if (!a)
                continue;
            a->tensors++;
            a->elements += r->elements;
            a->bits += r->bpw * (double)r->elements;
            a->ref_bits += r->ref_bpw * (double)r->elements;
            qerr_acc_merge(&a->acc, &r->acc);
        }
    }
    (void)o;
    for (size_t i = 0; i < rep->n_layers; i++) {
        const uint64_t *h = group_hist(rep, rep->layers[i].type, rep->layers[i].layer, NULL);
        qerr_metrics_of(&rep->layers[i].acc, h, &rep->layers[i].m);
        /* a group whose histogram could not be kept has no percentiles */
        if (!h)
            rep->layers[i].m.has_percentiles = false;
    }
    for (size_t i = 0; i < rep->n_roles; i++) {
        const uint64_t *h = group_hist(rep, rep->roles[i].type, -1, rep->roles[i].key);
        qerr_metrics_of(&rep->roles[i].acc, h, &rep->roles[i].m);
    }
    for (size_t i = 0; i < rep->n_totals; i++)
        qerr_metrics_of(&rep->totals[i].acc, rep->total_hist[i], &rep->totals[i].m);
    if (rep->n_layers)
        qsort(rep->layers, rep->n_layers, sizeof *rep->layers, cmp_layer);
    if (rep->n_roles)
        qsort(rep->roles, rep->n_roles, sizeof *rep->roles, cmp_role);
    return 0;
}

void qerr_report_free(qerr_report *r)
{
    if (!r)
        return;
    free(r->res);
    free(r->done);
    free(r->out);
    free(r->issues);
    free(r->layers);
    free(r->roles);
    free(r->totals);
    if (r->total_hist)
        for (size_t i = 0; i < r->n_totals; i++)
            free(r->total_hist[i]);
    free(r->total_hist);
    if (r->ghist)
        for (size_t i = 0; i < r->n_totals * (r->g_layers + r->n_gnames); i++)
            free(r->ghist[i]);
    free(r->ghist);
    free(r->gnames);
    free(r);
}

size_t qerr_report_count(const qerr_report *r) { return r ? r->n_out : 0; }
const qerr_result *qerr_report_at(const qerr_report *r, size_t i)
{
    return r && i < r->n_out ? &r->out[i] : NULL;
}
size_t qerr_report_issue_count(const qerr_report *r) { return r ? r->n_issues : 0; }
const qerr_issue *qerr_report_issue_at(const qerr_report *r, size_t i)
{
    return r && i < r->n_issues ? &r->issues[i] : NULL;
}
size_t qerr_report_layers(const qerr_report *r, const qerr_aggregate **out)
{
    *out = r ? r->layers : NULL;
    return r ? r->n_layers : 0;
}
size_t qerr_report_roles(const qerr_report *r, const qerr_aggregate **out)
{
    *out = r ? r->roles : NULL;
    return r ? r->n_roles : 0;
}
size_t qerr_report_totals(const qerr_report *r, const qerr_aggregate **out)
{
    *out = r ? r->totals : NULL;
    return r ? r->n_totals : 0;
}

/* Fill a result slot's identity. */
static void init_result(qerr_result *r, uint64_t ti, const gguf_tensor *t)
{
    memset(r, 0, sizeof *r);
    r->tensor = ti;
    gguf_str_copy(t->name, r->name, sizeof r->name);
    r->n_dims = t->n_dims;
    memcpy(r->ne, t->ne, sizeof r->ne);
    r->elements = t->n_elements;
    r->layer = qerr_name_role(r->name, r->role, sizeof r->role);
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n > 256 ? 256 : n) : 1;
}

/* Run the items on the threads; then build the report's outputs. */
static qerr_status run_items(run_ctx *rc, bool compare)
{
    qerr_report *rep = rc->rep;
    const qerr_opts *o = rc->o;
    int nt = o->n_threads > 0 ? o->n_threads : online_cpus();
    if (nt > 256)
        nt = 256;
    qerr_status st = QERR_OK;
    worker *ws = calloc((size_t)nt, sizeof *ws);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    if (!ws || !th) {
        free(ws);
        free(th);
        return QERR_ENOMEM;
    }
    int started = 0;
    bool oom = false;
    for (int t = 0; t < nt; t++) {
        worker *w = &ws[t];
        w->rc = rc;
        w->ith = t;
        w->cur = SIZE_MAX;
        w->a = malloc((rc->max_chunk + 1) * sizeof(float));
        w->b = malloc((rc->max_chunk + 1) * sizeof(float));
        w->q = malloc(rc->max_qbytes ? rc->max_qbytes : 1);
        w->hist = calloc(QERR_HIST_BINS, sizeof *w->hist);
        if (!w->a || !w->b || !w->q || !w->hist)
            oom = true;
    }
    if (!oom && rc->n_items) {
        for (int t = 1; t < nt; t++) {
            if (pthread_create(&th[t], NULL, worker_main, &ws[t]) != 0)
                break;
            started++;
        }
        worker_main(&ws[0]);
        for (int t = 1; t <= started; t++)
            pthread_join(th[t], NULL);
    }
    for (int t = 0; t < nt; t++) {
        free(ws[t].a);
        free(ws[t].b);
        free(ws[t].q);
        free(ws[t].hist);
    }
    free(ws);
    free(th);
    for (size_t i = 0; i < rc->n_items; i++)
        free(rc->items[i].hist);
    if (oom || atomic_load(&rc->failed))
        return QERR_ENOMEM;
    if (o->cancel && atomic_load(o->cancel))
        st = QERR_ECANCELLED;
    rep->out = malloc((rep->n_items ? rep->n_items : 1) * sizeof *rep->out);
    if (!rep->out)
        return QERR_ENOMEM;
    for (size_t i = 0; i < rep->n_items; i++)
        if (rep->done[i])
            rep->out[rep->n_out++] = rep->res[i];
    if (build_aggregates(rep, compare, o) != 0)
        return QERR_ENOMEM;
    return st;
}

static uint64_t chunk_for(uint64_t n, uint64_t l)
{
    uint64_t c = CHUNK_TARGET / l * l;
    if (c == 0)
        c = l;
    return c > n ? n : c;
}

static qerr_report *finish(qerr_report *rep, item *items, qerr_status s, qerr_status *st,
                           char *err, size_t cap)
{
    free(items);
    if (st)
        *st = s;
    if (s != QERR_OK && s != QERR_ECANCELLED) {
        set_err(err, cap, "%s", qerr_strerror(s));
        qerr_report_free(rep);
        return NULL;
    }
    return rep;
}

static qerr_report *report_new(size_t n_items, size_t n_totals)
{
    qerr_report *rep = calloc(1, sizeof *rep);
    if (!rep)
        return NULL;
    rep->res = calloc(n_items ? n_items : 1, sizeof *rep->res);
    rep->done = calloc(n_items ? n_items : 1, sizeof *rep->done);
    rep->totals = calloc(n_totals, sizeof *rep->totals);
    rep->total_hist = calloc(n_totals, sizeof *rep->total_hist);
    rep->n_totals = n_totals;
    if (!rep->res || !rep->done || !rep->totals || !rep->total_hist) {
        qerr_report_free(rep);
        return NULL;
    }
    for (size_t i = 0; i < n_totals; i++) {
        rep->total_hist[i] = calloc(QERR_HIST_BINS, sizeof(uint64_t));
        if (!rep->total_hist[i]) {
            qerr_report_free(rep);
            return NULL;
        }
        snprintf(rep->totals[i].key, sizeof rep->totals[i].key, "file");
        rep->totals[i].layer = -1;
    }
    return rep;
}

static bool name_selected(const regex_t *re, const char *name)
{
    return !re || regexec(re, name, 0, NULL, 0) == 0;
}

/* Compile the options' --filter regex, if any. Returns false (error set) on a bad one. */
static bool compile_filter(const qerr_opts *o, regex_t *re, bool *have_re, qerr_status *st, char *err, size_t cap)
{
    *have_re = false;
    if (!o->filter || !*o->filter)
        return true;
    if (regcomp(re, o->filter, REG_EXTENDED | REG_NOSUB) != 0) {
        set_err(err, cap, "bad regular expression '%s'", o->filter);
        if (st)
            *st = QERR_EARG;
        return false;
    }
    *have_re = true;
    return true;
}

qerr_report *qerr_requant(const gguf_file *f, const qerr_opts *o, qerr_status *st, char *err,
                          size_t cap)
{
    if (!f || !o || !o->types || o->n_types == 0) {
        set_err(err, cap, "%s", "no candidate type");
        if (st)
            *st = QERR_EARG;
        return NULL;
    }
    for (size_t k = 0; k < o->n_types; k++)
        if (!codec_can_quantize(o->types[k]) || !ggtype_get(o->types[k])) {
            set_err(err, cap, "type %s has no reference quantizer", ggtype_name(o->types[k]));
            if (st)
                *st = QERR_EARG;
            return NULL;
        }
    regex_t re;
    bool have_re;
    if (!compile_filter(o, &re, &have_re, st, err, cap))
        return NULL;
    uint64_t nt = gguf_tensor_count(f);
    size_t max_items = (size_t)nt * o->n_types;
    qerr_report *rep = report_new(max_items, o->n_types);
    item *items = calloc(max_items ? max_items : 1, sizeof *items);
    if (!rep || !items) {
        if (have_re)
            regfree(&re);
        return finish(rep, items, QERR_ENOMEM, st, err, cap);
    }
    for (size_t k = 0; k < o->n_types; k++)
        rep->totals[k].type = o->types[k];
    run_ctx rc;
    memset(&rc, 0, sizeof rc);
    rc.rep = rep;
    rc.o = o;
    rc.items = items;
    size_t n = 0;
    char name[256];
    for (uint64_t ti = 0; ti < nt; ti++) {
        const gguf_tensor *t = gguf_tensor_at(f, ti);
        gguf_str_copy(t->name, name, sizeof name);
        if (!name_selected(have_re ? &re : NULL, name))
            continue;
        if (!t->type_known || !type_dequantizable(t->type) || !t->data) {
            add_issue(rep, QERR_ISSUE_SKIPPED, name, t->type, "type %s cannot be dequantized",
                      ggtype_name(t->type));
            continue;
        }
        if (t->n_dims < 2 || t->n_elements == t->ne[0]) {
            add_issue(rep, QERR_ISSUE_SKIPPED, name, t->type, "1-D tensor (kept in float by quantizers)");
            continue;
        }
        const ggtype_traits *st_tr = ggtype_get(t->type);
        for (size_t k = 0; k < o->n_types; k++) {
            const ggtype_traits *qt = ggtype_get(o->types[k]);
            if (t->ne[0] % qt->blck_size != 0) {
                add_issue(rep, QERR_ISSUE_SKIPPED, name, o->types[k],
                          "ne[0]=%llu is not a multiple of %s's block of %u",
                          (unsigned long long)t->ne[0], qt->name, qt->blck_size);
                continue;
            }
            uint64_t l = st_tr->blck_size / u64_gcd(st_tr->blck_size, qt->blck_size) * qt->blck_size;
            if (t->n_elements % l != 0) {
                add_issue(rep, QERR_ISSUE_SKIPPED, name, o->types[k], "element count not a multiple of %llu",
                          (unsigned long long)l);
                continue;
            }
            item *it = &items[n];
            it->src = t;
            it->qtype = o->types[k];
            it->chunk = chunk_for(t->n_elements, l);
            it->n_chunks = (t->n_elements + it->chunk - 1) / it->chunk;
            it->slot = n;
            it->total_slot = (uint32_t)k;
            if (it->chunk > rc.max_chunk)
                rc.max_chunk = it->chunk;
            size_t qb = (size_t)(it->chunk / qt->blck_size * qt->type_size);
            if (qb > rc.max_qbytes)
                rc.max_qbytes = qb;
            qerr_result *r = &rep->res[n];
            init_result(r, ti, t);
            r->type = o->types[k];
            r->ref_type = t->type;
            r->requantized = st_tr->is_quantized;
            r->bpw = bpw_of(o->types[k]);
            r->ref_bpw = tensor_bpw(t);
            rc.total_elems += t->n_elements;
            n++;
        }
    }
    if (have_re)
        regfree(&re);
    rep->n_items = n;
    rc.n_items = n;
    if (groups_init(rep, items, n) != 0)
        return finish(rep, items, QERR_ENOMEM, st, err, cap);
    pthread_mutex_init(&rc.mu, NULL);
    qerr_status s = run_items(&rc, false);
    pthread_mutex_destroy(&rc.mu);
    return finish(rep, items, s, st, err, cap);
}

static bool same_shape(const gguf_tensor *a, const gguf_tensor *b)
{
    for (int d = 0; d < 4; d++)
        if (a->ne[d] != b->ne[d])
            return false;
    return true;
}

qerr_report *qerr_compare(const gguf_file *f, const gguf_file *parent, const qerr_opts *o,
                          qerr_status *st, char *err, size_t cap)
{
    if (!f || !parent || !o) {
        set_err(err, cap, "%s", "missing file");
        if (st)
            *st = QERR_EARG;
        return NULL;
    }
    regex_t re;
    bool have_re;
    if (!compile_filter(o, &re, &have_re, st, err, cap))
        return NULL;
    uint64_t nt = gguf_tensor_count(f);
    qerr_report *rep = report_new((size_t)nt, 1);
    item *items = calloc(nt ? (size_t)nt : 1, sizeof *items);
    if (!rep || !items) {
        if (have_re)
            regfree(&re);
        return finish(rep, items, QERR_ENOMEM, st, err, cap);
    }
    rep->totals[0].type = UINT32_MAX;
    run_ctx rc;
    memset(&rc, 0, sizeof rc);
    rc.rep = rep;
    rc.o = o;
    rc.items = items;
    size_t n = 0;
    char name[256];
    for (uint64_t ti = 0; ti < nt; ti++) {
        const gguf_tensor *t = gguf_tensor_at(f, ti);
        gguf_str_copy(t->name, name, sizeof name);
        if (!name_selected(have_re ? &re : NULL, name))
            continue;
        const gguf_tensor *p = gguf_find_tensor(parent, name);
        if (!p) {
            add_issue(rep, QERR_ISSUE_ONLY_MEASURED, name, t->type, "not in the parent");
            continue;
        }
        if (!same_shape(t, p)) {
            char a[96], b[96];
            snprintf(a, sizeof a, "%llux%llux%llux%llu", (unsigned long long)t->ne[0],
                     (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                     (unsigned long long)t->ne[3]);
            snprintf(b, sizeof b, "%llux%llux%llux%llu", (unsigned long long)p->ne[0],
                     (unsigned long long)p->ne[1], (unsigned long long)p->ne[2],
                     (unsigned long long)p->ne[3]);
            add_issue(rep, QERR_ISSUE_SHAPE, name, t->type, "shape %s vs %s in the parent", a, b);
            continue;
        }
        if (!t->type_known || !p->type_known || !type_dequantizable(t->type) ||
            !type_dequantizable(p->type) || !t->data || !p->data) {
            add_issue(rep, QERR_ISSUE_SKIPPED, name, t->type, "type %s or %s cannot be dequantized",
                      ggtype_name(t->type), ggtype_name(p->type));
            continue;
        }
        if (t->n_elements == 0)
            continue;
        const ggtype_traits *a = ggtype_get(t->type), *b = ggtype_get(p->type);
        uint64_t l = a->blck_size / u64_gcd(a->blck_size, b->blck_size) * b->blck_size;
        if (t->n_elements % l != 0) {
            add_issue(rep, QERR_ISSUE_SKIPPED, name, t->type, "element count not a multiple of %llu",
                      (unsigned long long)l);
            continue;
        }
        item *it = &items[n];
        it->src = t;
        it->ref = p;
        it->chunk = chunk_for(t->n_elements, l);
        it->n_chunks = (t->n_elements + it->chunk - 1) / it->chunk;
        it->slot = n;
        it->total_slot = 0;
        if (it->chunk > rc.max_chunk)
            rc.max_chunk = it->chunk;
        qerr_result *r = &rep->res[n];
        init_result(r, ti, t);
        r->type = t->type;
        r->ref_type = p->type;
        r->bpw = tensor_bpw(t);
        r->ref_bpw = tensor_bpw(p);
        rc.total_elems += t->n_elements;
        n++;
    }
    uint64_t np = gguf_tensor_count(parent);
    for (uint64_t i = 0; i < np; i++) {
        const gguf_tensor *p = gguf_tensor_at(parent, i);
        gguf_str_copy(p->name, name, sizeof name);
        if (!name_selected(have_re ? &re : NULL, name))
            continue;
        if (!gguf_find_tensor(f, name))
            add_issue(rep, QERR_ISSUE_ONLY_REF, name, p->type, "only in the parent");
    }
    if (have_re)
        regfree(&re);
    rep->n_items = n;
    rc.n_items = n;
    if (groups_init(rep, items, n) != 0)
        return finish(rep, items, QERR_ENOMEM, st, err, cap);
    pthread_mutex_init(&rc.mu, NULL);
    qerr_status s = run_items(&rc, true);
    pthread_mutex_destroy(&rc.mu);
    return finish(rep, items, s, st, err, cap);
}
