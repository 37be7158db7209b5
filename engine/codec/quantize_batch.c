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
#include "cpufeat.h"
#include "quantize_internal.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define QB_INLINE static inline __attribute__((always_inline))

/* Macros rather than functions: a vector value never crosses a call (the
 * code is built for targets without 512-bit registers too).
 * QB_LEVEL2: l = clamp(nearest(v), 0, nmax) (make_qkx2 and the first fit of
 * make_qkx3); QB_LEVEL3: make_qkx3's v > 0 ? nearest(min(v, nmax)) : 0. */
#define QB_LEVEL2(v, inmax)                                                                      \
    __extension__({                                                                              \
        qz_vi l_ = QZ_VNEAREST(v);                                                               \
        l_ = QZ_SELI(l_ > QZ_VI(0), l_, QZ_VI(0));                                               \
        QZ_SELI(l_ < (inmax), l_, (inmax));                                                      \
    })
#define QB_LEVEL3(v, fnmax)                                                                      \
    __extension__({                                                                              \
        const qz_vf vm_ = QZ_SELF((v) < (fnmax), (v), (fnmax));                                  \
        QZ_VNEAREST(vm_) & ((v) > QZ_VF(0));                                                     \
    })
#define QB_ABS(v) ((qz_vf)((qz_vi)(v) & 0x7fffffff))

/* 32 vectors of 16 lanes, also seen as floats [element][lane]. */
typedef union {
    qz_vf v[32];
    float f[32][QZ_LANES];
    int32_t i[32][QZ_LANES];
} qb_tile;

/* X[i][g] = x[g*n + i], W likewise from w (NULL: x^2). */
QB_INLINE void qb_transpose(const int n, const float *x, const float *w, qb_tile *X, qb_tile *W)
{
    for (int g = 0; g < QZ_LANES; ++g)
        for (int i = 0; i < n; ++i) {
            const float xi = x[g * n + i];
            X->f[i][g] = xi;
            W->f[i][g] = w ? w[g * n + i] : xi * xi;
        }
}

QB_INLINE void qb_qkx(const int n, int nmax, const float *x, const float *weights, float rmin,
                      float rdelta, int nstep, bool use_mad, bool x3, float *scale_out,
                      float *the_min_out, uint8_t *L)
{
    qb_tile XT, WT;
    qb_transpose(n, x, weights, &XT, &WT);
    const qz_vf *X = XT.v, *W = WT.v;
    qb_tile LT;
    qz_vf *LF = LT.v;
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
        const qz_vf lf = QZ_VTOF(QB_LEVEL2(iscale * (X[i] - min), inmax));
        qz_vf diff = scale * lf + min - X[i];
        diff = use_mad ? QB_ABS(diff) : diff * diff;
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
            const qz_vf lf = QZ_VTOF(x3 ? QB_LEVEL3(v, fnmax) : QB_LEVEL2(v, inmax));
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
            diff = use_mad ? QB_ABS(diff) : diff * diff;
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
        qz_vi l = x3 ? QZ_SELI(won, QB_LEVEL3(v, fnmax), QB_LEVEL2(v, inmax)) : QB_LEVEL2(v, inmax);
        LF[i] = (qz_vf)(l & ~degenerate);
    }
    for (int g = 0; g < QZ_LANES; ++g)
        for (int i = 0; i < n; ++i)
            L[g * n + i] = (uint8_t)LT.i[i][g];
}

QZ_CLONES
static void qkx_generic(int n, int nmax, const float *x, const float *weights, float rmin,
                        float rdelta, int nstep, bool use_mad, bool x3, float *scale,
                        float *the_min, uint8_t *L)
{
    if (n == 32)
        qb_qkx(32, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, scale, the_min, L);
    else
        qb_qkx(16, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, scale, the_min, L);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The same search written with AVX-512 intrinsics. Beyond what the generic
 * form does, the candidate loop takes a float shortcut for the levels:
 * v = isc * (x - min) is monotonic in x (rounding is), so its extremes over a
 * group are at the data's min and max. When every lane's |v| stays below
 * 4e6 < 2^22, ggml's nearest_int is exact rounding to nearest even, and
 * clamping to the integers 0 and nmax before or after rounding gives the
 * same integer: the level is round(clamp(v, 0, nmax)), for make_qkx2 and
 * make_qkx3 alike, computed in float ((c + 1.5 * 2^23) - 1.5 * 2^23). When a
 * lane could leave that range (an overflowing inverse scale, NaN) the
 * candidate runs ggml's integer trick instead. */
#define QB_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define QB_AVX512_INLINE static inline __attribute__((always_inline)) QB_AVX512

QB_AVX512_INLINE __m512i q5_nearest(__m512 v)
{
    const __m512i bits = _mm512_castps_si512(_mm512_add_ps(v, _mm512_set1_ps(12582912.f)));
    return _mm512_sub_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x007fffff)),
                            _mm512_set1_epi32(0x00400000));
}

QB_AVX512_INLINE __m512i q5_level2(__m512 v, int nmax)
{
    return _mm512_min_epi32(_mm512_max_epi32(q5_nearest(v), _mm512_setzero_si512()),
                            _mm512_set1_epi32(nmax));
}

QB_AVX512_INLINE __m512i q5_level3(__m512 v, int nmax)
{
    const __m512 vm = _mm512_min_ps(v, _mm512_set1_ps((float)nmax)); /* v < nmax ? v : nmax */
    return _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ),
                                  q5_nearest(vm));
}

QB_AVX512_INLINE __m512 q5_abs(__m512 v)
{
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

QB_AVX512_INLINE __m512 q5_sel(__mmask16 m, __m512 a, __m512 b) /* m ? a : b */
{
    return _mm512_mask_blend_ps(m, b, a);
}

/* r[j] = row j of a 16x16 float matrix -> r[j] = column j. */
QB_AVX512_INLINE void q5_tr16(__m512 r[16])
{
    __m512 t[16];
    for (int k = 0; k < 8; ++k) {
        t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
#define Q5_PD(f, a, b) _mm512_castpd_ps(f(_mm512_castps_pd(a), _mm512_castps_pd(b)))
    for (int k = 0; k < 4; ++k) {
        r[4 * k] = Q5_PD(_mm512_unpacklo_pd, t[4 * k], t[4 * k + 2]);
        r[4 * k + 1] = Q5_PD(_mm512_unpackhi_pd, t[4 * k], t[4 * k + 2]);
        r[4 * k + 2] = Q5_PD(_mm512_unpacklo_pd, t[4 * k + 1], t[4 * k + 3]);
        r[4 * k + 3] = Q5_PD(_mm512_unpackhi_pd, t[4 * k + 1], t[4 * k + 3]);
    }
#undef Q5_PD
    for (int h = 0; h < 2; ++h)
        for (int k = 0; k < 4; ++k) {
            t[8 * h + k] = _mm512_shuffle_f32x4(r[8 * h + k], r[8 * h + k + 4], 0x88);
            t[8 * h + k + 4] = _mm512_shuffle_f32x4(r[8 * h + k], r[8 * h + k + 4], 0xdd);
        }
    for (int k = 0; k < 8; ++k) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
    }
}

/* X[i] = (x[g*n + i] for the 16 lanes g), W likewise from w (NULL: x*x). */
QB_AVX512_INLINE void q5_load_t(const int n, const float *x, const float *w, __m512 *X,
                                __m512 *W)
{
    for (int i0 = 0; i0 < n; i0 += 16) {
        __m512 r[16];
        for (int g = 0; g < 16; ++g)
            r[g] = _mm512_loadu_ps(x + g * n + i0);
        q5_tr16(r);
        for (int j = 0; j < 16; ++j)
            X[i0 + j] = r[j];
        if (w) {
            for (int g = 0; g < 16; ++g)
                r[g] = _mm512_loadu_ps(w + g * n + i0);
            q5_tr16(r);
            for (int j = 0; j < 16; ++j)
                W[i0 + j] = r[j];
        } else {
            for (int j = 0; j < 16; ++j)
                W[i0 + j] = _mm512_mul_ps(X[i0 + j], X[i0 + j]);
        }
    }
}

/* Sums of one candidate over G tiles (i outer, tiles inner, so the tiles'
 * sequential sums interleave), levels in float; lo / hi: clamp at 0 / nmax
 * (left out when the candidate's extremes show no value needs it). */
QB_AVX512_INLINE void q5_sums_fast(const int G, const int n, __m512 (*X)[32], __m512 (*W)[32],
                                   const __m512 *isc, const __m512 *min, __m512 fnmax, bool lo,
                                   bool hi, __m512 (*LF)[32], __m512 *sl, __m512 *sl2,
                                   __m512 *sxl)
{
    const __m512 magic = _mm512_set1_ps(12582912.f);
    for (int t = 0; t < G; ++t)
        sl[t] = sl2[t] = sxl[t] = _mm512_setzero_ps();
    for (int i = 0; i < n; ++i) {
        for (int t = 0; t < G; ++t) {
            __m512 v = _mm512_mul_ps(isc[t], _mm512_sub_ps(X[t][i], min[t]));
            if (lo)
                v = _mm512_max_ps(v, _mm512_setzero_ps());
            if (hi)
                v = _mm512_min_ps(v, fnmax);
            const __m512 lf = _mm512_sub_ps(_mm512_add_ps(v, magic), magic);
            LF[t][i] = lf;
            const __m512 wl = _mm512_mul_ps(W[t][i], lf);
            sl[t] = _mm512_add_ps(sl[t], wl);
            sl2[t] = _mm512_add_ps(sl2[t], _mm512_mul_ps(wl, lf));
            sxl[t] = _mm512_add_ps(sxl[t], _mm512_mul_ps(wl, X[t][i]));
        }
    }
}

/* G tiles of 16 groups side by side (G = 2 hides the latency of one tile's
 * sequential sums behind the other's work). */
QB_AVX512_INLINE void q5_qkx(const int G, const int n, int nmax, const float *x,
                             const float *weights, float rmin, float rdelta, int nstep,
                             bool use_mad, bool x3, bool avw, float *scale_out,
                             float *the_min_out, uint8_t *L)
{
    qb_tile XT[2], WT[2]; /* scratch for the results */
    __m512 X[2][32], W[2][32], LF[2][32];
    const __m512 fzero = _mm512_setzero_ps(), fnmax = _mm512_set1_ps((float)nmax);
    __m512 min[2], max[2], xmin[2], min0[2], sum_w[2], sum_x[2], scale[2], best_error[2];
    __m512 best_isc[2], best_from[2];
    __mmask16 degenerate[2], won[2], nan = 0;
    for (int t = 0; t < G; ++t) {
        const size_t off = (size_t)t * QZ_LANES * n;
        q5_load_t(n, x + off, avw || !weights ? NULL : weights + off, X[t], W[t]);
        if (avw) { /* ggml's Q4_K/Q5_K weights: sqrt(sum x^2 / n) + |x| */
            __m512 s2 = _mm512_add_ps(_mm512_setzero_ps(), W[t][0]);
            for (int i = 1; i < n; ++i)
                s2 = _mm512_add_ps(s2, W[t][i]);
            const __m512 av = _mm512_sqrt_ps(_mm512_div_ps(s2, _mm512_set1_ps((float)n)));
            for (int i = 0; i < n; ++i)
                W[t][i] = _mm512_add_ps(av, q5_abs(X[t][i]));
        }
        for (int i = 0; i < n; ++i) {
            /* NaN values: the integer path throughout (see q5_qx) */
            nan |= _mm512_cmp_ps_mask(X[t][i], X[t][i], _CMP_UNORD_Q);
        }
        __m512 mn = X[t][0], mx = X[t][0], sw = W[t][0], sx = _mm512_mul_ps(sw, X[t][0]);
        for (int i = 1; i < n; ++i) {
            mn = _mm512_min_ps(X[t][i], mn); /* x < min ? x : min */
            mx = _mm512_max_ps(X[t][i], mx); /* x > max ? x : max */
            sw = _mm512_add_ps(sw, W[t][i]);
            sx = _mm512_add_ps(sx, _mm512_mul_ps(W[t][i], X[t][i]));
        }
        xmin[t] = mn;
        mn = q5_sel(_mm512_cmp_ps_mask(mn, fzero, _CMP_GT_OQ), fzero, mn);
        degenerate[t] = x3 ? _mm512_cmp_ps_mask(mx, mn, _CMP_LE_OQ)
                           : _mm512_cmp_ps_mask(mx, mn, _CMP_EQ_OQ);
        min[t] = min0[t] = mn;
        max[t] = mx;
        sum_w[t] = sw;
        sum_x[t] = sx;
        /* first fit */
        const __m512 iscale = _mm512_div_ps(fnmax, _mm512_sub_ps(mx, mn));
        const __m512 sc = _mm512_div_ps(_mm512_set1_ps(1.f), iscale);
        __m512 be = fzero;
        for (int i = 0; i < n; ++i) {
            const __m512 lf = _mm512_cvtepi32_ps(
                q5_level2(_mm512_mul_ps(iscale, _mm512_sub_ps(X[t][i], mn)), nmax));
            __m512 diff = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(sc, lf), mn), X[t][i]);
            diff = use_mad ? q5_abs(diff) : _mm512_mul_ps(diff, diff);
            be = _mm512_add_ps(be, _mm512_mul_ps(W[t][i], diff));
        }
        scale[t] = sc;
        best_error[t] = be;
        best_isc[t] = iscale;
        best_from[t] = mn;
        won[t] = 0;
    }
    const __m512 lim = _mm512_set1_ps(4e6f);
    const __m512 flo = _mm512_set1_ps(-0.5f), fhi = _mm512_set1_ps((float)nmax + 0.5f);
    for (int is = 0; nstep >= 1 && is <= nstep; ++is) {
        const float c = rmin + rdelta * is + nmax;
        __m512 isc[2], sl[2], sl2[2], sxl[2];
        /* v = isc * (x - min) is monotonic in x (float rounding is): its
         * extremes are vlo at the data's min and vhi at its max. */
        __mmask16 sane = 0xFFFF, lo_idle = 0xFFFF, hi_idle = 0xFFFF;
        for (int t = 0; t < G; ++t) {
            const __m512 range = _mm512_sub_ps(max[t], min[t]);
            isc[t] = _mm512_div_ps(_mm512_set1_ps(c), range);
            const __m512 vlo = _mm512_mul_ps(isc[t], _mm512_sub_ps(xmin[t], min[t]));
            const __m512 vhi = _mm512_mul_ps(isc[t], range);
            sane &= _mm512_cmp_ps_mask(q5_abs(vlo), lim, _CMP_LT_OQ) &
                    _mm512_cmp_ps_mask(q5_abs(vhi), lim, _CMP_LT_OQ);
            /* every v lies between vlo and vhi whatever the sign of isc; a v
             * in (-0.5, 0) rounds to +0 like max(v, 0), one in (nmax, nmax +
             * 0.5) to nmax like min(v, nmax): no clamp needed there */
            lo_idle &= _mm512_cmp_ps_mask(vlo, flo, _CMP_GT_OQ) &
                       _mm512_cmp_ps_mask(vhi, flo, _CMP_GT_OQ);
            hi_idle &= _mm512_cmp_ps_mask(vlo, fhi, _CMP_LT_OQ) &
                       _mm512_cmp_ps_mask(vhi, fhi, _CMP_LT_OQ);
        }
        if (sane == 0xFFFF && !nan) {
            const bool lo = lo_idle != 0xFFFF, hi = hi_idle != 0xFFFF;
            if (!lo && !hi)
                q5_sums_fast(G, n, X, W, isc, min, fnmax, false, false, LF, sl, sl2, sxl);
            else if (!lo)
                q5_sums_fast(G, n, X, W, isc, min, fnmax, false, true, LF, sl, sl2, sxl);
            else
                q5_sums_fast(G, n, X, W, isc, min, fnmax, true, true, LF, sl, sl2, sxl);
        } else {
            for (int t = 0; t < G; ++t) {
                __m512 a = fzero, a2 = fzero, ax = fzero;
                for (int i = 0; i < n; ++i) {
                    const __m512 v = _mm512_mul_ps(isc[t], _mm512_sub_ps(X[t][i], min[t]));
                    const __m512 lf =
                        _mm512_cvtepi32_ps(x3 ? q5_level3(v, nmax) : q5_level2(v, nmax));
                    LF[t][i] = lf;
                    const __m512 wl = _mm512_mul_ps(W[t][i], lf);
                    a = _mm512_add_ps(a, wl);
                    a2 = _mm512_add_ps(a2, _mm512_mul_ps(wl, lf));
                    ax = _mm512_add_ps(ax, _mm512_mul_ps(wl, X[t][i]));
                }
                sl[t] = a;
                sl2[t] = a2;
                sxl[t] = ax;
            }
        }
        __m512 D[2], sc[2], m[2], err[2];
        for (int t = 0; t < G; ++t) {
            D[t] = _mm512_sub_ps(_mm512_mul_ps(sum_w[t], sl2[t]), _mm512_mul_ps(sl[t], sl[t]));
            sc[t] = _mm512_div_ps(
                _mm512_sub_ps(_mm512_mul_ps(sum_w[t], sxl[t]), _mm512_mul_ps(sum_x[t], sl[t])),
                D[t]);
            m[t] = _mm512_div_ps(
                _mm512_sub_ps(_mm512_mul_ps(sl2[t], sum_x[t]), _mm512_mul_ps(sl[t], sxl[t])),
                D[t]);
            const __mmask16 pos = _mm512_cmp_ps_mask(m[t], fzero, _CMP_GT_OQ);
            sc[t] = q5_sel(pos, _mm512_div_ps(sxl[t], sl2[t]), sc[t]);
            m[t] = q5_sel(pos, fzero, m[t]);
            err[t] = fzero;
        }
        for (int i = 0; i < n; ++i) {
            for (int t = 0; t < G; ++t) {
                __m512 diff =
                    _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(sc[t], LF[t][i]), m[t]), X[t][i]);
                diff = use_mad ? q5_abs(diff) : _mm512_mul_ps(diff, diff);
                err[t] = _mm512_add_ps(err[t], _mm512_mul_ps(W[t][i], diff));
            }
        }
        for (int t = 0; t < G; ++t) {
            const __mmask16 better = _mm512_cmp_ps_mask(D[t], fzero, _CMP_GT_OQ) &
                                     _mm512_cmp_ps_mask(err[t], best_error[t], _CMP_LT_OQ);
            best_error[t] = q5_sel(better, err[t], best_error[t]);
            scale[t] = q5_sel(better, sc[t], scale[t]);
            best_isc[t] = q5_sel(better, isc[t], best_isc[t]);
            best_from[t] = q5_sel(better, min[t], best_from[t]);
            won[t] |= better;
            min[t] = q5_sel(better, m[t], min[t]);
        }
    }
    for (int t = 0; t < G; ++t) {
        const __m512 sc = q5_sel(degenerate[t], fzero, scale[t]);
        const __m512 mn = q5_sel(degenerate[t], min0[t], min[t]);
        _mm512_storeu_ps(XT[t].f[0], sc); /* and -min, a sign flip as in C: */
        _mm512_storeu_ps(XT[t].f[1], _mm512_castsi512_ps(_mm512_xor_si512(
                                         _mm512_castps_si512(mn), _mm512_set1_epi32(INT32_MIN))));
        for (int g = 0; g < QZ_LANES; ++g) {
            scale_out[t * QZ_LANES + g] = XT[t].f[0][g];
            the_min_out[t * QZ_LANES + g] = XT[t].f[1][g];
        }
        for (int i = 0; i < n; ++i) {
            const __m512 v = _mm512_mul_ps(best_isc[t], _mm512_sub_ps(X[t][i], best_from[t]));
            __m512i l = q5_level2(v, nmax);
            if (x3)
                l = _mm512_mask_mov_epi32(l, won[t], q5_level3(v, nmax));
            l = _mm512_maskz_mov_epi32((__mmask16)~degenerate[t], l);
            _mm512_storeu_si512(WT[t].i[i], l);
        }
        uint8_t *Lt = L + (size_t)t * QZ_LANES * n;
        for (int i0 = 0; i0 < n; i0 += 16) {
            __m512 r[16];
            for (int j = 0; j < 16; ++j)
                r[j] = _mm512_loadu_ps(WT[t].f[i0 + j]);
            q5_tr16(r);
            for (int g = 0; g < QZ_LANES; ++g)
                _mm_storeu_si128((__m128i *)(Lt + g * n + i0),
                                 _mm512_cvtepi32_epi8(_mm512_castps_si512(r[g])));
        }
    }
}

QB_AVX512_INLINE void qkx_avx512_body(int ntiles, int n, int nmax, const float *x,
                                      const float *weights, float rmin, float rdelta, int nstep,
                                      bool use_mad, bool x3, bool avw, float *scale,
                                      float *the_min, uint8_t *L)
{
    for (; ntiles >= 2; ntiles -= 2) {
        if (n == 32)
            q5_qkx(2, 32, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, avw, scale, the_min, L);
        else
            q5_qkx(2, 16, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, avw, scale, the_min, L);
        x += 2 * QZ_LANES * n;
        weights = weights ? weights + 2 * QZ_LANES * n : NULL;
        scale += 2 * QZ_LANES;
        the_min += 2 * QZ_LANES;
        L += 2 * QZ_LANES * n;
    }
    if (ntiles) {
        if (n == 32)
            q5_qkx(1, 32, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, avw, scale, the_min, L);
        else
            q5_qkx(1, 16, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, avw, scale, the_min, L);
    }
}

QB_AVX512 static void qkx_avx512(int ntiles, int n, int nmax, const float *x,
                                 const float *weights, float rmin, float rdelta, int nstep,
                                 bool use_mad, bool x3, float *scale, float *the_min, uint8_t *L)
{
    qkx_avx512_body(ntiles, n, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, false, scale,
                    the_min, L);
}

QB_AVX512 static void qkx2_avw_avx512(int ntiles, int nmax, const float *x, float rmin,
                                      float rdelta, int nstep, float *scale, float *the_min,
                                      uint8_t *L)
{
    qkx_avx512_body(ntiles, 32, nmax, x, NULL, rmin, rdelta, nstep, false, false, true, scale,
                    the_min, L);
}

static _Atomic int g_force_generic;

static bool have_avx512(void)
{
    static int have = -1;
    if (g_force_generic)
        return false;
    if (have < 0)
        have = cpufeat_get()->avx512 && cpufeat_level_allowed() >= CPUFEAT_AVX512;
    return have;
}
#endif

void qz_batch_force_generic(bool on)
{
#if defined(__x86_64__) && defined(__GNUC__)
    g_force_generic = on;
#else
    (void)on;
#endif
}

void qz_qkx_batch(int ntiles, int n, int nmax, const float *x, const float *weights, float rmin,
                  float rdelta, int nstep, bool use_mad, bool x3, float *scale, float *the_min,
                  uint8_t *L)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx512()) {
        qkx_avx512(ntiles, n, nmax, x, weights, rmin, rdelta, nstep, use_mad, x3, scale, the_min,
                   L);
        return;
    }
#endif
    for (int t = 0; t < ntiles; ++t) {
        const size_t off = (size_t)t * QZ_LANES * n;
        qkx_generic(n, nmax, x + off, weights ? weights + off : NULL, rmin, rdelta, nstep, use_mad,
                    x3, scale + t * QZ_LANES, the_min + t * QZ_LANES, L + off);
    }
}

void qz_qkx2_batch_avw(int ntiles, int nmax, const float *x, float rmin, float rdelta, int nstep,
                       float *scale, float *the_min, uint8_t *L)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx512()) {
        qkx2_avw_avx512(ntiles, nmax, x, rmin, rdelta, nstep, scale, the_min, L);
        return;
    }
#endif
    float w[QZ_LANES * 32];
    for (int t = 0; t < ntiles; ++t) {
        const float *xt = x + (size_t)t * QZ_LANES * 32;
        for (int g = 0; g < QZ_LANES; ++g)
            qz_group_avx_weights(xt + 32 * g, w + 32 * g);
        qkx_generic(32, nmax, xt, w, rmin, rdelta, nstep, false, false, scale + t * QZ_LANES,
                    the_min + t * QZ_LANES, L + (size_t)t * QZ_LANES * 32);
    }
}

/* sum w*x*l and sum w*l^2 for the levels l = nearest(iscale*x) in [lo, hi]. */
QB_INLINE void qb_qx_sums(const int n, const qz_vf *X, const qz_vf *W, const qz_vf *isc, const qz_vi *lop,
                          const qz_vi *hip, qz_vf *sumlx_out, qz_vf *suml2_out)
{
    const qz_vf iscale = *isc;
    const qz_vi lo = *lop, hi = *hip;
    qz_vf sumlx = QZ_VF(0), suml2 = QZ_VF(0);
    for (int i = 0; i < n; ++i) {
        qz_vi l = QZ_VNEAREST(iscale * X[i]);
        l = QZ_SELI(l < lo, lo, l);
        l = QZ_SELI(l > hi, hi, l);
        const qz_vf lf = QZ_VTOF(l);
        sumlx += W[i] * X[i] * lf;
        suml2 += W[i] * lf * lf;
    }
    *sumlx_out = sumlx;
    *suml2_out = suml2;
}

/* make_qx_quants with rmse_type 1 (weights qw, or x^2 when NULL). */
QB_INLINE void qb_qx(const int n, int nmax, const float *x, const float *qw, float *scale_out,
                     int8_t *L)
{
    qb_tile XT, WT;
    qb_transpose(n, x, qw, &XT, &WT);
    const qz_vf *X = XT.v, *W = WT.v;
    const qz_vf fzero = QZ_VF(0);
    const qz_vi lo = QZ_VI(-nmax), hi = QZ_VI(nmax - 1);
    qz_vf max = fzero, amax = fzero;
    for (int i = 0; i < n; ++i) {
        const qz_vf ax = QB_ABS(X[i]);
        const qz_vi gt = ax > amax;
        amax = QZ_SELF(gt, ax, amax);
        max = QZ_SELF(gt, X[i], max);
    }
    const qz_vi zero_group = amax < QZ_VF(QZ_GROUP_MAX_EPS);
    qz_vf iscale = (float)-nmax / max;
    qz_vf sumlx, suml2;
    qb_qx_sums(n, X, W, &iscale, &lo, &hi, &sumlx, &suml2);
    qz_vf scale = QZ_SELF(suml2 != fzero, sumlx / suml2, fzero);
    qz_vf best = scale * sumlx;
    qz_vf best_isc = iscale;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0)
            continue;
        const float c = nmax + 0.1f * is;
        const qz_vf isc = -c / max;
        qb_qx_sums(n, X, W, &isc, &lo, &hi, &sumlx, &suml2);
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
        WT.v[i] = (qz_vf)((l + nmax) & ~zero_group);
    }
    for (int g = 0; g < QZ_LANES; ++g)
        for (int i = 0; i < n; ++i)
            L[g * n + i] = (int8_t)WT.i[i][g];
}

QZ_CLONES
static void qx1_generic(int n, int nmax, const float *x, const float *qw, float *scale, int8_t *L)
{
    if (n == 32)
        qb_qx(32, nmax, x, qw, scale, L);
    else
        qb_qx(16, nmax, x, qw, scale, L);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* make_qx_quants (rmse_type 1) with AVX-512 intrinsics. The level
 * clamp(nearest(isc * x), -nmax, nmax - 1) is computed in float as
 * round(clamp(isc * x, -nmax, nmax - 1)) when every lane's |isc * max| (the
 * largest |v| of the group: |x| <= |max| and rounding is monotonic) is below
 * 4e6, where both are the same integer; otherwise with ggml's trick. */
QB_AVX512_INLINE __m512 q5_qx_level(__m512 v, bool sane, __m512 flo, __m512 fhi, __m512i ilo,
                                    __m512i ihi)
{
    if (sane) {
        const __m512 magic = _mm512_set1_ps(12582912.f);
        v = _mm512_min_ps(_mm512_max_ps(v, flo), fhi);
        return _mm512_sub_ps(_mm512_add_ps(v, magic), magic);
    }
    return _mm512_cvtepi32_ps(_mm512_min_epi32(_mm512_max_epi32(q5_nearest(v), ilo), ihi));
}

QB_AVX512_INLINE void q5_qx(const int n, int nmax, const float *x, const float *qw,
                            float *scale_out, int8_t *L)
{
    qb_tile XT, WT;
    qb_transpose(n, x, qw, &XT, &WT);
    __m512 X[32], WX[32], W[32];
    for (int i = 0; i < n; ++i) {
        X[i] = _mm512_loadu_ps(XT.f[i]);
        W[i] = _mm512_loadu_ps(WT.f[i]);
        WX[i] = _mm512_mul_ps(W[i], X[i]);
    }
    const __m512 fzero = _mm512_setzero_ps();
    const __m512 flo = _mm512_set1_ps((float)-nmax), fhi = _mm512_set1_ps((float)(nmax - 1));
    const __m512i ilo = _mm512_set1_epi32(-nmax), ihi = _mm512_set1_epi32(nmax - 1);
    __m512 max = fzero, amax = fzero;
    for (int i = 0; i < n; ++i) {
        const __m512 ax = q5_abs(X[i]);
        const __mmask16 gt = _mm512_cmp_ps_mask(ax, amax, _CMP_GT_OQ);
        amax = q5_sel(gt, ax, amax);
        max = q5_sel(gt, X[i], max);
    }
    const __mmask16 zero_group =
        _mm512_cmp_ps_mask(amax, _mm512_set1_ps(QZ_GROUP_MAX_EPS), _CMP_LT_OQ);
    /* a NaN value would round to 0 by ggml's trick but clamp to -nmax in
     * float: a group with one takes the integer path throughout */
    __mmask16 nan = 0;
    for (int i = 0; i < n; ++i)
        nan |= _mm512_cmp_ps_mask(X[i], X[i], _CMP_UNORD_Q);
    const __m512 lim = _mm512_set1_ps(4e6f);
    __m512 iscale = _mm512_div_ps(_mm512_set1_ps((float)-nmax), max);
    bool sane = !nan &&
                _mm512_cmp_ps_mask(q5_abs(_mm512_mul_ps(iscale, max)), lim, _CMP_LT_OQ) == 0xFFFF;
    __m512 sumlx = fzero, suml2 = fzero;
    for (int i = 0; i < n; ++i) {
        const __m512 lf = q5_qx_level(_mm512_mul_ps(iscale, X[i]), sane, flo, fhi, ilo, ihi);
        sumlx = _mm512_add_ps(sumlx, _mm512_mul_ps(WX[i], lf));
        suml2 = _mm512_add_ps(suml2, _mm512_mul_ps(_mm512_mul_ps(W[i], lf), lf));
    }
    /* suml2 ? sumlx / suml2 : 0 (NaN counts as true) */
    __m512 scale = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(suml2, fzero, _CMP_NEQ_UQ),
                                       _mm512_div_ps(sumlx, suml2));
    __m512 best = _mm512_mul_ps(scale, sumlx);
    __m512 best_isc = iscale;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0)
            continue;
        const float c = nmax + 0.1f * is;
        const __m512 isc = _mm512_div_ps(_mm512_set1_ps(-c), max);
        sane = !nan &&
               _mm512_cmp_ps_mask(q5_abs(_mm512_mul_ps(isc, max)), lim, _CMP_LT_OQ) == 0xFFFF;
        sumlx = suml2 = fzero;
        for (int i = 0; i < n; ++i) {
            const __m512 lf = q5_qx_level(_mm512_mul_ps(isc, X[i]), sane, flo, fhi, ilo, ihi);
            sumlx = _mm512_add_ps(sumlx, _mm512_mul_ps(WX[i], lf));
            suml2 = _mm512_add_ps(suml2, _mm512_mul_ps(_mm512_mul_ps(W[i], lf), lf));
        }
        const __mmask16 better =
            _mm512_cmp_ps_mask(suml2, fzero, _CMP_GT_OQ) &
            _mm512_cmp_ps_mask(_mm512_mul_ps(sumlx, sumlx), _mm512_mul_ps(best, suml2), _CMP_GT_OQ);
        const __m512 sc = _mm512_div_ps(sumlx, suml2);
        scale = q5_sel(better, sc, scale);
        best = q5_sel(better, _mm512_mul_ps(sc, sumlx), best);
        best_isc = q5_sel(better, isc, best_isc);
    }
    scale = q5_sel(zero_group, fzero, scale);
    _mm512_storeu_ps(XT.f[0], scale);
    for (int g = 0; g < QZ_LANES; ++g)
        scale_out[g] = XT.f[0][g];
    for (int i = 0; i < n; ++i) {
        const __m512 v = _mm512_mul_ps(best_isc, X[i]);
        __m512i l = _mm512_min_epi32(_mm512_max_epi32(q5_nearest(v), ilo), ihi);
        l = _mm512_maskz_mov_epi32((__mmask16)~zero_group,
                                   _mm512_add_epi32(l, _mm512_set1_epi32(nmax)));
        _mm512_storeu_si512(WT.i[i], l);
    }
    for (int g = 0; g < QZ_LANES; ++g)
        for (int i = 0; i < n; ++i)
            L[g * n + i] = (int8_t)WT.i[i][g];
}

QB_AVX512 static void qx1_avx512(int n, int nmax, const float *x, const float *qw, float *scale,
                                 int8_t *L)
{
    if (n == 32)
        q5_qx(32, nmax, x, qw, scale, L);
    else
        q5_qx(16, nmax, x, qw, scale, L);
}
#endif

void qz_qx1_batch(int n, int nmax, const float *x, const float *qw, float *scale, int8_t *L)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx512()) {
        qx1_avx512(n, nmax, x, qw, scale, L);
        return;
    }
#endif
    qx1_generic(n, nmax, x, qw, scale, L);
}

/* L[i] = off + clamp(nearest((x[i] + dm) / d), lo, hi), n a multiple of
 * QZ_LANES: the final levels of the K-quants, the scalar operations lane by
 * lane (a division is exact in any width). */
QZ_CLONES
static void levels_div(const float *x, int n, float dm, float d, int lo, int hi, int off,
                       uint8_t *L)
{
    for (int i = 0; i < n; i += QZ_LANES) {
        qz_vf xv;
        memcpy(&xv, x + i, sizeof xv);
        qz_vi l = QZ_VNEAREST((xv + dm) / d);
        l = QZ_SELI(l < QZ_VI(lo), QZ_VI(lo), l);
        l = QZ_SELI(l > QZ_VI(hi), QZ_VI(hi), l);
        l += off;
        int32_t lt[QZ_LANES];
        memcpy(lt, &l, sizeof lt);
        for (int k = 0; k < QZ_LANES; ++k)
            L[i + k] = (uint8_t)lt[k];
    }
}

/* (a plain function: clang emits a target_clones resolver only for calls in
 * the clone's own file) */
void qz_levels_div(const float *x, int n, float dm, float d, int lo, int hi, int off, uint8_t *L)
{
    levels_div(x, n, dm, d, lo, hi, off, L);
}
