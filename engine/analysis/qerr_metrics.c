/* qerr: the measurement: error sums and histograms (scalar / AVX-512),
 * metrics and quantiles, tensor-name roles (see qerr.h). */
#include "qerr.h"

#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codec.h"
#include "cpufeat.h"
#include "ggtype.h"
#include "qerr_internal.h"

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

double qerr__bucket_mid(uint32_t k)
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
            return qerr__bucket_mid(k);
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
