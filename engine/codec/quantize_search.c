/* quantize_search: ggml's scale searches (make_qx_quants, make_qkx2_quants,
 * make_qkx3_quants) in two forms that give identical bits:
 *
 *  - scalar: ggml's code, candidate after candidate;
 *  - lanes: QZ_LANES candidate scales at once, one per lane of plain arrays
 *    that the compiler turns into SIMD (the AVX-512 / AVX2 clones are picked
 *    at run time). Every lane performs exactly the float operations, in the
 *    same order, that the scalar code performs for its candidate; only the
 *    choice of the best candidate, which is sequential in ggml, stays a
 *    scalar scan over the lanes' results. Where a winning candidate changes
 *    the state later candidates start from (the min in make_qkx*), the lanes
 *    after it are computed again from the new state.
 *
 * The scalar form is the reference the tests compare the lanes with. */
#include "quantize_internal.h"

#ifdef __clang__
/* clang contracts a*b+c into an FMA by default where the target has one
 * (the AVX clones): ggml's reference does not. GCC in ISO C mode never does. */
#pragma STDC FP_CONTRACT OFF
#endif


/* ---- make_qx_quants ---- */

/* Weight of element i: the importance weight if given, else a function of x
 * chosen by rmse_type (ggml's choice). */
static inline float qx_weight(const float *qw, int rmse_type, const float *x, int i)
{
    if (qw)
        return qw[i];
    switch (rmse_type) {
    case 1: return x[i] * x[i];
    case 2: return 1;
    case 3: return fabsf(x[i]);
    default: return sqrtf(fabsf(x[i]));
    }
}

static inline int qx_level(float iscale, float x, int nmax)
{
    const int l = qz_nearest_int(iscale * x);
    return QZ_MAX(-nmax, QZ_MIN(nmax - 1, l));
}

/* The 18 candidates after the first fit: is = -9..9 without 0, n <= 32.
 * Lane sums for candidates [c0, c0 + QZ_LANES) of the list. */
QZ_CLONES
static void qx_lanes(int n, int nmax, const float *x, const float *w, float max, int c0,
                     float *isc, float *slx_out, float *sl2_out)
{
    for (int k = 0; k < QZ_LANES; k++) {
        const int c = c0 + k < 18 ? c0 + k : 17;
        const int is = c < 9 ? c - 9 : c - 8;
        isc[k] = -(nmax + 0.1f * is) / max;
    }
    qz_vf iscale, slx = QZ_VF(0), sl2 = QZ_VF(0);
    memcpy(&iscale, isc, sizeof iscale);
    const qz_vi lo = QZ_VI(-nmax), hi = QZ_VI(nmax - 1);
    for (int i = 0; i < n; ++i) {
        const float xi = x[i], wi = w[i], wx = wi * xi;
        qz_vi l = QZ_VNEAREST(iscale * xi);
        l = QZ_SELI(l < lo, lo, l);
        l = QZ_SELI(l > hi, hi, l);
        const qz_vf lf = QZ_VTOF(l);
        slx += wx * lf;
        sl2 += wi * lf * lf;
    }
    memcpy(slx_out, &slx, sizeof slx);
    memcpy(sl2_out, &sl2, sizeof sl2);
}

void qz_group_avx_weights(const float *x, float *w)
{
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l)
        sum_x2 += x[l] * x[l];
    const float av_x = sqrtf(sum_x2 / 32);
    for (int l = 0; l < 32; ++l)
        w[l] = av_x + fabsf(x[l]);
}

bool qz_group_max(int n, const float *x, int8_t *L, float *max)
{
    float mx = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            mx = x[i];
        }
    }
    *max = mx;
    if (amax < QZ_GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return false;
    }
    return true;
}

float qz_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type, const float *qw,
                        bool lanes)
{
    float max;
    if (!qz_group_max(n, x, L, &max))
        return 0.f;
    float iscale = -nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; ++i)
            L[i] = (int8_t)(nmax + qx_level(iscale, x[i], nmax));
        return 1 / iscale;
    }
    bool return_early = false;
    if (rmse_type < 0) {
        rmse_type = -rmse_type;
        return_early = true;
    }
    float w[32];
    const bool wbuf = lanes && n <= 32;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = qx_level(iscale, x[i], nmax);
        L[i] = (int8_t)(l + nmax);
        const float wi = qx_weight(qw, rmse_type, x, i);
        if (wbuf)
            w[i] = wi;
        sumlx += wi * x[i] * l;
        suml2 += wi * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    if (return_early)
        return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
    float best = scale * sumlx;
    if (wbuf) {
        float isc[QZ_LANES], slx[QZ_LANES], sl2[QZ_LANES];
        for (int c0 = 0; c0 < 18; c0 += QZ_LANES) {
            qx_lanes(n, nmax, x, w, max, c0, isc, slx, sl2);
            for (int k = 0; k < QZ_LANES && c0 + k < 18; k++) {
                if (sl2[k] > 0 && slx[k] * slx[k] > best * sl2[k]) {
                    for (int i = 0; i < n; ++i)
                        L[i] = (int8_t)(nmax + qx_level(isc[k], x[i], nmax));
                    scale = slx[k] / sl2[k];
                    best = scale * slx[k];
                }
            }
        }
        return scale;
    }
    for (int is = -9; is <= 9; ++is) {
        if (is == 0)
            continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = qx_level(iscale, x[i], nmax);
            const float wi = qx_weight(qw, rmse_type, x, i);
            sumlx += wi * x[i] * l;
            suml2 += wi * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i)
                L[i] = (int8_t)(nmax + qx_level(iscale, x[i], nmax));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* ---- make_qkx2_quants / make_qkx3_quants ---- */

/* Level of one value for candidate scale iscale (x3: make_qkx3's rounding,
 * safe for a min at or near max). */
static inline int qkx_level(float iscale, float xm, int nmax, bool x3)
{
    if (x3) {
        const float v = iscale * xm;
        return v > 0 ? qz_nearest_int(v < nmax ? v : nmax) : 0;
    }
    const int l = qz_nearest_int(iscale * xm);
    return QZ_MAX(0, QZ_MIN(nmax, l));
}

/* Sums over the whole group, fixed during the search. */
typedef struct {
    float sum_w, sum_x;
} qkx_totals;

/* Lanes: candidates is0 .. is0 + QZ_LANES - 1 from the current min. Lv[i]
 * receives the levels of value i in every lane. */
QZ_CLONES
static void qkx_lanes(int n, int nmax, const float *x, const float *w, float min, float max,
                      float rmin, float rdelta, int is0, bool use_mad, bool x3, qkx_totals tot,
                      float *D_out, float *ts_out, float *tm_out, float *err_out, qz_vi *Lv)
{
    float isc[QZ_LANES];
    for (int k = 0; k < QZ_LANES; k++)
        isc[k] = (rmin + rdelta * (is0 + k) + nmax) / (max - min);
    qz_vf iscale, sl = QZ_VF(0), sl2 = QZ_VF(0), sxl = QZ_VF(0);
    memcpy(&iscale, isc, sizeof iscale);
    const qz_vf fnmax = QZ_VF(nmax), fzero = QZ_VF(0);
    const qz_vi inmax = QZ_VI(nmax), izero = QZ_VI(0);
    for (int i = 0; i < n; ++i) {
        const float xi = x[i], wi = w[i];
        const qz_vf v = iscale * (x[i] - min);
        qz_vi l;
        if (x3) {
            const qz_vf vm = QZ_SELF(v < fnmax, v, fnmax);
            l = QZ_VNEAREST(vm) & (v > fzero);
        } else {
            l = QZ_VNEAREST(v);
            l = QZ_SELI(l > izero, l, izero);
            l = QZ_SELI(l < inmax, l, inmax);
        }
        Lv[i] = l;
        const qz_vf lf = QZ_VTOF(l), wl = wi * lf;
        sl += wl;
        sl2 += wl * lf;
        sxl += wl * xi;
    }
    const qz_vf D = tot.sum_w * sl2 - sl * sl;
    qz_vf s = (tot.sum_w * sxl - tot.sum_x * sl) / D;
    qz_vf m = (sl2 * tot.sum_x - sl * sxl) / D;
    const qz_vf s0 = sxl / sl2;
    const qz_vi pos = m > fzero;
    s = QZ_SELF(pos, s0, s);
    m = QZ_SELF(pos, fzero, m);
    qz_vf err = QZ_VF(0);
    for (int i = 0; i < n; ++i) {
        qz_vf diff = s * QZ_VTOF(Lv[i]) + m - x[i];
        diff = use_mad ? (qz_vf)((qz_vi)diff & 0x7fffffff) : diff * diff;
        err += w[i] * diff;
    }
    memcpy(D_out, &D, sizeof D);
    memcpy(ts_out, &s, sizeof s);
    memcpy(tm_out, &m, sizeof m);
    memcpy(err_out, &err, sizeof err);
}

float qz_make_qkx_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                         float *the_min, float rmin, float rdelta, int nstep, bool use_mad, bool x3,
                         bool lanes)
{
    float wb[32] = {0};
    const float *w = weights;
    if (!w) { /* make_qkx3 without weights: x^2 */
        for (int i = 0; i < n && i < 32; ++i)
            wb[i] = x[i] * x[i];
        w = wb;
    }
    float min = x[0];
    float max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        const float wi = w[i];
        sum_w += wi;
        sum_x += wi * x[i];
    }
    if (min > 0)
        min = 0;
    if (x3 ? max <= min : max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = qz_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)QZ_MAX(0, QZ_MIN(nmax, l));
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    if (lanes && n <= 32) {
        const qkx_totals tot = {sum_w, sum_x};
        float D[QZ_LANES], ts[QZ_LANES], tm[QZ_LANES], err[QZ_LANES];
        qz_vi Lv[32];
        int is = 0;
        while (is <= nstep) {
            qkx_lanes(n, nmax, x, w, min, max, rmin, rdelta, is, use_mad, x3, tot, D, ts, tm, err, Lv);
            const int cnt = QZ_MIN(QZ_LANES, nstep + 1 - is);
            int next = is + cnt;
            for (int k = 0; k < cnt; k++) {
                if (D[k] > 0 && err[k] < best_error) {
                    for (int i = 0; i < n; ++i)
                        L[i] = (uint8_t)Lv[i][k];
                    best_error = err[k];
                    scale = ts[k];
                    min = tm[k];
                    next = is + k + 1; /* later candidates start from the new min */
                    break;
                }
            }
            is = next;
        }
        *the_min = -min;
        return scale;
    }
    uint8_t Laux[256];
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = qkx_level(iscale, x[i] - min, nmax, x3);
            Laux[i] = (uint8_t)l;
            const float wi = w[i];
            sum_l += wi * l;
            sum_l2 += wi * l * l;
            sum_xl += wi * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += w[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}
