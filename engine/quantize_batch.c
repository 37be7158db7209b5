/* quantize_batch: ggml's scale searches make_qkx2_quants / make_qkx3_quants
 * and make_qx_quants (rmse_type 1) for QZ_LANES independent groups at once,
 * one group per lane.
 *
 * The lanes of quantize_search.c run 16 candidate scales of ONE group side
 * by side; a candidate that wins changes the min later candidates start
 * from, so the lanes after it run again, and a search of 21 candidates
 * costs several passes. Here each lane is a different group (16 sub-blocks
 * of a row, contiguous in x) and walks ggml's candidates in ggml's order,
 * one after the other, with its own min, best error and scale: every lane
 * performs exactly the scalar float operations of its group, in the same
 * order (each sum still accumulates element 0, 1, 2, ... sequentially), so
 * the results are the scalar code's bits. Nothing is re-run; the
 * comparisons of the scalar loop become per-lane selects.
 *
 * The winner's levels are not copied candidate after candidate: each lane
 * remembers the winning candidate's inverse scale and the min it was
 * computed from, and the levels are computed once more from those at the
 * end (the same operations on the same inputs, hence the same levels).
 *
 * The scalar code stays the reference (tests/test_quantize_fast.c). */
#include "quantize_internal.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#else
/* The helpers below take and return vector values; they are always inlined,
 * so no vector ever crosses a call (the ABI note does not apply). */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define QB_INLINE static inline __attribute__((always_inline))

/* l = clamp(nearest(v), 0, nmax) (make_qkx2 and the first fit of make_qkx3). */
QB_INLINE qz_vi qb_level2(qz_vf v, qz_vi inmax)
{
    qz_vi l = QZ_VNEAREST(v);
    const qz_vi izero = QZ_VI(0);
    l = QZ_SELI(l > izero, l, izero);
    return QZ_SELI(l < inmax, l, inmax);
}

/* make_qkx3's level: v > 0 ? nearest(min(v, nmax)) : 0. */
QB_INLINE qz_vi qb_level3(qz_vf v, qz_vf fnmax)
{
    const qz_vf vm = QZ_SELF(v < fnmax, v, fnmax);
    return QZ_VNEAREST(vm) & (v > QZ_VF(0));
}

QB_INLINE qz_vf qb_abs(qz_vf v)
{
    return (qz_vf)((qz_vi)v & 0x7fffffff);
}

QB_INLINE void qb_qkx(const int n, int nmax, const float *x, const float *weights, float rmin,
                      float rdelta, int nstep, bool use_mad, bool x3, float *scale_out,
                      float *the_min_out, uint8_t *L)
{
    qz_vf X[32], W[32], LF[32];
    for (int i = 0; i < n; ++i) {
        float xt[QZ_LANES], wt[QZ_LANES];
        for (int g = 0; g < QZ_LANES; ++g) {
            xt[g] = x[g * n + i];
            wt[g] = weights ? weights[g * n + i] : x[g * n + i] * x[g * n + i];
        }
        memcpy(&X[i], xt, sizeof X[i]);
        memcpy(&W[i], wt, sizeof W[i]);
    }
    const qz_vf fzero = QZ_VF(0), fnmax = QZ_VF(nmax);
    const qz_vi inmax = QZ_VI(nmax);
    qz_vf min = X[0], max = X[0];
    qz_vf sum_w = W[0];
    qz_vf sum_x = sum_w * X[0];
    for (int i = 1; i < n; ++i) {
        min = QZ_SELF(X[i] < min, X[i], min);
        max = QZ_SELF(X[i] > max, X[i], max);
        sum_w += W[i];
        sum_x += W[i] * X[i];
    }
    min = QZ_SELF(min > fzero, fzero, min);
    const qz_vi degenerate = x3 ? (max <= min) : (max == min);
    const qz_vf min0 = min;

    /* first fit */
    qz_vf iscale = fnmax / (max - min);
    qz_vf scale = 1 / iscale;
    qz_vf best_error = fzero;
    for (int i = 0; i < n; ++i) {
        const qz_vf lf = QZ_VTOF(qb_level2(iscale * (X[i] - min), inmax));
        qz_vf diff = scale * lf + min - X[i];
        diff = use_mad ? qb_abs(diff) : diff * diff;
        best_error += W[i] * diff;
    }
    qz_vf best_isc = iscale, best_from = min; /* the winner's inverse scale and min */
    qz_vi won = QZ_VI(0);                     /* a candidate (not the first fit) won */

    for (int is = 0; nstep >= 1 && is <= nstep; ++is) {
        const float c = rmin + rdelta * is + nmax;
        const qz_vf isc = c / (max - min);
        qz_vf sl = fzero, sl2 = fzero, sxl = fzero;
        for (int i = 0; i < n; ++i) {
            const qz_vf v = isc * (X[i] - min);
            const qz_vf lf = QZ_VTOF(x3 ? qb_level3(v, fnmax) : qb_level2(v, inmax));
            LF[i] = lf;
            const qz_vf wl = W[i] * lf;
            sl += wl;
            sl2 += wl * lf;
            sxl += wl * X[i];
        }
        const qz_vf D = sum_w * sl2 - sl * sl;
        qz_vf s = (sum_w * sxl - sum_x * sl) / D;
        qz_vf m = (sl2 * sum_x - sl * sxl) / D;
        const qz_vi pos = m > fzero;
        s = QZ_SELF(pos, sxl / sl2, s);
        m = QZ_SELF(pos, fzero, m);
        qz_vf err = fzero;
        for (int i = 0; i < n; ++i) {
            qz_vf diff = s * LF[i] + m - X[i];
            diff = use_mad ? qb_abs(diff) : diff * diff;
            err += W[i] * diff;
        }
        const qz_vi better = (D > fzero) & (err < best_error);
        best_error = QZ_SELF(better, err, best_error);
        scale = QZ_SELF(better, s, scale);
        best_isc = QZ_SELF(better, isc, best_isc);
        best_from = QZ_SELF(better, min, best_from);
        won |= better;
        min = QZ_SELF(better, m, min);
    }
    scale = QZ_SELF(degenerate, fzero, scale);
    min = QZ_SELF(degenerate, min0, min);
    float sc[QZ_LANES], mn[QZ_LANES];
    const qz_vf nmin = -min;
    memcpy(sc, &scale, sizeof sc);
    memcpy(mn, &nmin, sizeof mn);
    for (int g = 0; g < QZ_LANES; ++g) {
        scale_out[g] = sc[g];
        the_min_out[g] = mn[g];
    }
    for (int i = 0; i < n; ++i) {
        const qz_vf v = best_isc * (X[i] - best_from);
        qz_vi l = x3 ? QZ_SELI(won, qb_level3(v, fnmax), qb_level2(v, inmax)) : qb_level2(v, inmax);
        l &= ~degenerate;
        int32_t lt[QZ_LANES];
        memcpy(lt, &l, sizeof lt);
        for (int g = 0; g < QZ_LANES; ++g)
            L[g * n + i] = (uint8_t)lt[g];
    }
}

QZ_CLONES
void qz_qkx_batch(int n, int nmax, const float *x, const float *weights, float rmin, float rdelta,
                  int nstep, bool use_mad, bool x3, float *scale, float *the_min, uint8_t *L)
{
    if (n == 32)
        qb_qkx(32, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, scale, the_min, L);
    else
        qb_qkx(16, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, scale, the_min, L);
}

/* make_qx_quants with rmse_type 1 (weights qw, or x^2 when NULL). */
QB_INLINE void qb_qx(const int n, int nmax, const float *x, const float *qw, float *scale_out,
                     int8_t *L)
{
    qz_vf X[32], W[32];
    for (int i = 0; i < n; ++i) {
        float xt[QZ_LANES], wt[QZ_LANES];
        for (int g = 0; g < QZ_LANES; ++g) {
            xt[g] = x[g * n + i];
            wt[g] = qw ? qw[g * n + i] : x[g * n + i] * x[g * n + i];
        }
        memcpy(&X[i], xt, sizeof X[i]);
        memcpy(&W[i], wt, sizeof W[i]);
    }
    const qz_vf fzero = QZ_VF(0);
    const qz_vi lo = QZ_VI(-nmax), hi = QZ_VI(nmax - 1);
    qz_vf max = fzero, amax = fzero;
    for (int i = 0; i < n; ++i) {
        const qz_vf ax = qb_abs(X[i]);
        const qz_vi gt = ax > amax;
        amax = QZ_SELF(gt, ax, amax);
        max = QZ_SELF(gt, X[i], max);
    }
    const qz_vi zero_group = amax < QZ_VF(QZ_GROUP_MAX_EPS);
    qz_vf iscale = (float)-nmax / max;
    qz_vf sumlx = fzero, suml2 = fzero;
    for (int i = 0; i < n; ++i) {
        qz_vi l = QZ_VNEAREST(iscale * X[i]);
        l = QZ_SELI(l < lo, lo, l);
        l = QZ_SELI(l > hi, hi, l);
        const qz_vf lf = QZ_VTOF(l);
        sumlx += W[i] * X[i] * lf;
        suml2 += W[i] * lf * lf;
    }
    qz_vf scale = QZ_SELF(suml2 != fzero, sumlx / suml2, fzero);
    qz_vf best = scale * sumlx;
    qz_vf best_isc = iscale;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0)
            continue;
        const float c = nmax + 0.1f * is;
        const qz_vf isc = -c / max;
        sumlx = suml2 = fzero;
        for (int i = 0; i < n; ++i) {
            qz_vi l = QZ_VNEAREST(isc * X[i]);
            l = QZ_SELI(l < lo, lo, l);
            l = QZ_SELI(l > hi, hi, l);
            const qz_vf lf = QZ_VTOF(l);
            sumlx += W[i] * X[i] * lf;
            suml2 += W[i] * lf * lf;
        }
        const qz_vi better = (suml2 > fzero) & (sumlx * sumlx > best * suml2);
        const qz_vf s = sumlx / suml2;
        scale = QZ_SELF(better, s, scale);
        best = QZ_SELF(better, s * sumlx, best);
        best_isc = QZ_SELF(better, isc, best_isc);
    }
    scale = QZ_SELF(zero_group, fzero, scale);
    float sc[QZ_LANES];
    memcpy(sc, &scale, sizeof sc);
    for (int g = 0; g < QZ_LANES; ++g)
        scale_out[g] = sc[g];
    for (int i = 0; i < n; ++i) {
        qz_vi l = QZ_VNEAREST(best_isc * X[i]);
        l = QZ_SELI(l < lo, lo, l);
        l = QZ_SELI(l > hi, hi, l);
        l = (l + nmax) & ~zero_group;
        int32_t lt[QZ_LANES];
        memcpy(lt, &l, sizeof lt);
        for (int g = 0; g < QZ_LANES; ++g)
            L[g * n + i] = (int8_t)lt[g];
    }
}

QZ_CLONES
void qz_qx1_batch(int n, int nmax, const float *x, const float *qw, float *scale, int8_t *L)
{
    if (n == 32)
        qb_qx(32, nmax, x, qw, scale, L);
    else
        qb_qx(16, nmax, x, qw, scale, L);
}
