/* quantize_k: ggml's K-quant quantizers (Q2_K .. Q6_K), reference path and
 * importance-matrix path, reproduced operation for operation so that the
 * output matches ggml byte for byte. See quantize_internal.h. */
#include "quantize_internal.h"

#include <stdbool.h>

/* ---- scale searches ---- */

/* Q3_K's group search: symmetric, then up to 5 passes moving single values
 * to a better level (weights x^2). L receives levels + nmax. */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L, bool do_rmse)
{
    float max;
    if (!qz_group_max(n, x, L, &max))
        return 0.f;
    const float iscale = -nmax / max;
    if (do_rmse) {
        float sumlx = 0;
        float suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = qz_nearest_int(iscale * x[i]);
            l = QZ_MAX(-nmax, QZ_MIN(nmax - 1, l));
            L[i] = (int8_t)l;
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        for (int itry = 0; itry < 5; ++itry) {
            int n_changed = 0;
            for (int i = 0; i < n; ++i) {
                const float w = x[i] * x[i];
                float slx = sumlx - w * x[i] * L[i];
                if (slx > 0) {
                    float sl2 = suml2 - w * L[i] * L[i];
                    int new_l = qz_nearest_int(x[i] * sl2 / slx);
                    new_l = QZ_MAX(-nmax, QZ_MIN(nmax - 1, new_l));
                    if (new_l != L[i]) {
                        slx += w * x[i] * new_l;
                        sl2 += w * new_l * new_l;
                        if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                            L[i] = (int8_t)new_l;
                            sumlx = slx;
                            suml2 = sl2;
                            ++n_changed;
                        }
                    }
                }
            }
            if (!n_changed)
                break;
        }
        for (int i = 0; i < n; ++i)
            L[i] = (int8_t)(L[i] + nmax);
        return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
    }
    for (int i = 0; i < n; ++i) {
        int l = qz_nearest_int(iscale * x[i]);
        l = QZ_MAX(-nmax, QZ_MIN(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
    }
    return 1 / iscale;
}

/* Unsigned quantization of the (non-negative) sub-block scales to [0, nmax]
 * with importance weights; the importance paths' second level. */
static float make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *quant_weights)
{
    float max = 0;
    for (int i = 0; i < n; ++i)
        max = QZ_MAX(max, x[i]);
    if (max < QZ_GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    float iscale = nmax / max;
    for (int i = 0; i < n; ++i)
        L[i] = (uint8_t)qz_nearest_int(iscale * x[i]);
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * L[i];
        const float w = quant_weights[i];
        best_mse += w * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0)
            continue;
        const float iscale_is = (0.1f * is + nmax) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            int l = qz_nearest_int(iscale_is * x[i]);
            l = QZ_MIN(nmax, l);
            const float diff = x[i] - scale_is * l;
            const float w = quant_weights[i];
            mse += w * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = qz_nearest_int(iscale * x[i]);
        l = QZ_MIN(nmax, l);
        L[i] = (uint8_t)l;
        const float w = quant_weights[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = quant_weights[i];
            float slx = sumlx - w * x[i] * L[i];
            float sl2 = suml2 - w * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                int new_l = qz_nearest_int(x[i] * sl2 / slx);
                new_l = QZ_MIN(nmax, new_l);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* 6-bit scale j and min j of the packed 12-byte Q4_K/Q5_K scales. */
static inline void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

/* Pack eight 6-bit scale/min pairs into Q4_K/Q5_K's 12 bytes. */
static inline void pack_scale_min_k4(uint8_t *scales, const uint8_t *ls, const uint8_t *lm)
{
    for (int j = 0; j < QK_K / 32; ++j) {
        if (j < 4) {
            scales[j] = ls[j];
            scales[j + 4] = lm[j];
        } else {
            scales[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            scales[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            scales[j - 0] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

/* Four 2-bit planes of 32 values per 128 into qs (Q2_K, Q3_K). */
static inline void pack_2bit(uint8_t *qs, const uint8_t *L)
{
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
}

/* ---- Q2_K ---- */

static void q2_K_final(const float *x, block_q2_K *y, uint8_t *L)
{
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = qz_f32(y->d) * (y->scales[j] & 0xF);
        if (!d)
            continue;
        const float dm = qz_f32(y->dmin) * (y->scales[j] >> 4);
        qz_levels_div(x + 16 * j, 16, dm, d, 0, 3, 0, L + 16 * j);
    }
    pack_2bit(y->qs, L);
}

static void q2_K_ref(const float *x, block_q2_K *y, bool lanes)
{
    uint8_t L[QK_K];
    float weights[16];
    float mins[QK_K / 16];
    float scales[QK_K / 16];
    const float q4scale = 15.f;

    float max_scale = 0;
    float max_min = 0;
    if (lanes) { /* the 16 groups at once */
        float wall[QK_K];
        for (int l = 0; l < QK_K; ++l)
            wall[l] = fabsf(x[l]);
        qz_qkx_batch(1, 16, 3, x, wall, -0.5f, 0.1f, 15, true, false, scales, mins, L);
    }
    for (int j = 0; j < QK_K / 16; ++j) {
        if (!lanes) {
            for (int l = 0; l < 16; ++l)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = qz_make_qkx_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j],
                                           -0.5f, 0.1f, 15, true, false, false);
        }
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < QK_K / 16; ++j)
            y->scales[j] = (uint8_t)qz_nearest_int(iscale * scales[j]);
        y->d = qz_f16(max_scale / q4scale);
    } else {
        for (int j = 0; j < QK_K / 16; ++j)
            y->scales[j] = 0;
        y->d = qz_f16(0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < QK_K / 16; ++j) {
            const int l = qz_nearest_int(iscale * mins[j]);
            y->scales[j] |= (uint8_t)((unsigned)l << 4); /* ggml shifts the int */
        }
        y->dmin = qz_f16(max_min / q4scale);
    } else {
        y->dmin = qz_f16(0.f);
    }
    q2_K_final(x, y, L);
}

static void q2_K_imatrix(const float *x, block_q2_K *y, const float *qw, bool lanes)
{
    uint8_t L[QK_K];
    float mins[QK_K / 16];
    float scales[QK_K / 16];
    float sw[QK_K / 16];
    float weight[16];
    uint8_t Ls[QK_K / 16], Lm[QK_K / 16];

    memset(sw, 0, sizeof sw);
    float sumx2 = 0;
    for (int j = 0; j < QK_K; ++j)
        sumx2 += x[j] * x[j];
    const float sigma2 = sumx2 / QK_K;
    float wall[QK_K];
    for (int j = 0; j < QK_K / 16; ++j) {
        const float *w = qw + 16 * j;
        for (int l = 0; l < 16; ++l)
            weight[l] = w[l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
        for (int l = 0; l < QK_K / 16; ++l)
            sw[j] += weight[l];
        if (lanes)
            memcpy(wall + 16 * j, weight, sizeof weight);
        else
            scales[j] = qz_make_qkx_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], -0.9f,
                                           0.05f, 36, false, true, false);
    }
    if (lanes)
        qz_qkx_batch(1, 16, 3, x, wall, -0.9f, 0.05f, 36, false, true, scales, mins, L);
    const float dm = make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
    const float mm = make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
    y->d = qz_f16(dm);
    y->dmin = qz_f16(mm);
    for (int j = 0; j < QK_K / 16; ++j)
        y->scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    q2_K_final(x, y, L);
}

void qz_row_q2_K(const float *x, block_q2_K *y, int64_t nb, const float *qw, bool lanes)
{
    for (int64_t i = 0; i < nb; ++i) {
        if (qw)
            q2_K_imatrix(x + QK_K * i, y + i, qw + QK_K * i, lanes);
        else
            q2_K_ref(x + QK_K * i, y + i, lanes);
    }
}

/* ---- Q3_K ---- */

/* Store the 16 6-bit scales Ls (0..63) into Q3_K's 12 bytes. */
static void q3_K_pack_scales(block_q3_K *y, const int8_t *Ls)
{
    memset(y->scales, 0, 12);
    for (int j = 0; j < QK_K / 16; ++j) {
        int8_t l = Ls[j];
        if (j < 8)
            y->scales[j] = (uint8_t)(l & 0xF);
        else
            y->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
        l = (int8_t)(l >> 4);
        y->scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
    }
}

static void q3_K_final(const float *x, block_q3_K *y, int8_t *L)
{
    for (int j = 0; j < QK_K / 16; ++j) {
        int8_t sc = (int8_t)(j < 8 ? y->scales[j] & 0xF : y->scales[j - 8] >> 4);
        sc = (int8_t)((sc | (((y->scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
        const float d = qz_f32(y->d) * sc;
        if (!d)
            continue;
        /* (x + 0) / d rounds like x / d: x + 0 is x, or +0 for -0 */
        qz_levels_div(x + 16 * j, 16, 0.f, d, -4, 3, 4, (uint8_t *)L + 16 * j);
    }
    /* high bit of the first 32 quants in bit 0 of hmask[0..31], etc. */
    memset(y->hmask, 0, QK_K / 8);
    int m = 0;
    uint8_t hm = 1;
    for (int j = 0; j < QK_K; ++j) {
        const int hi = L[j] >> 2; /* levels 0..7: bit 2 to hmask */
        y->hmask[m] |= (uint8_t)(hi * hm);
        L[j] = (int8_t)(L[j] & 3);
        if (++m == QK_K / 8) {
            m = 0;
            hm = (uint8_t)(hm << 1);
        }
    }
    pack_2bit(y->qs, (const uint8_t *)L);
}

static void q3_K_ref(const float *x, block_q3_K *y)
{
    int8_t L[QK_K];
    float scales[QK_K / 16];
    int8_t Ls[QK_K / 16];

    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
        const float scale = fabsf(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }
    if (max_scale) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            int8_t l = (int8_t)qz_nearest_int(iscale * scales[j]);
            Ls[j] = (int8_t)(QZ_MAX(-32, QZ_MIN(31, l)) + 32);
        }
        q3_K_pack_scales(y, Ls);
        y->d = qz_f16(1 / iscale);
    } else {
        memset(y->scales, 0, 12);
        y->d = qz_f16(0.f);
    }
    q3_K_final(x, y, L);
}

static void q3_K_imatrix(const float *x, block_q3_K *y, const float *qw, bool lanes)
{
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float weight[16];
    float sw[QK_K / 16];
    int8_t Ls[QK_K / 16];

    float sumx2 = 0;
    for (int j = 0; j < QK_K; ++j)
        sumx2 += x[j] * x[j];
    const float sigma2 = 2 * sumx2 / QK_K;
    for (int j = 0; j < QK_K / 16; ++j) {
        const float *w = qw + 16 * j;
        for (int l = 0; l < 16; ++l)
            weight[l] = w[l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
        float sumw = 0;
        for (int l = 0; l < 16; ++l)
            sumw += weight[l];
        sw[j] = sumw;
        scales[j] = qz_make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight, lanes);
    }
    const float d_block = qz_make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw, lanes);
    q3_K_pack_scales(y, Ls);
    y->d = qz_f16(d_block);
    q3_K_final(x, y, L);
}

void qz_row_q3_K(const float *x, block_q3_K *y, int64_t nb, const float *qw, bool lanes)
{
    for (int64_t i = 0; i < nb; ++i) {
        if (qw)
            q3_K_imatrix(x + QK_K * i, y + i, qw + QK_K * i, lanes);
        else
            q3_K_ref(x + QK_K * i, y + i);
    }
}

/* ---- Q4_K and Q5_K ---- */

/* Weights of the 8 sub-blocks of a super-block for the Q4_K/Q5_K searches:
 * ggml's reference choice (qw NULL) or the importance path's; sw receives
 * the sums of each sub-block's weights (importance path only). */
static void k4_weights(const float *x, const float *qw, float *weights, float *sw)
{
    if (!qw) {
        for (int j = 0; j < QK_K / 32; ++j)
            qz_group_avx_weights(x + 32 * j, weights + 32 * j);
        return;
    }
    float sum_x2 = 0;
    for (int l = 0; l < QK_K; ++l)
        sum_x2 += x[l] * x[l];
    const float sigma2 = 2 * sum_x2 / QK_K;
    for (int j = 0; j < QK_K / 32; ++j) {
        const float *w = qw + 32 * j;
        for (int l = 0; l < 32; ++l)
            weights[32 * j + l] = w[l] * sqrtf(sigma2 + x[32 * j + l] * x[32 * j + l]);
        float sumw = 0;
        for (int l = 0; l < 32; ++l)
            sumw += weights[32 * j + l];
        sw[j] = sumw;
    }
}

/* Scales and mins of the 8 sub-blocks of 32 of `nsb` (1 to K4_BATCH)
 * consecutive super-blocks: make_qkx2_quants (qw NULL) or make_qkx3_quants.
 * With lanes, 16 sub-blocks per tile are searched together (qz_qkx_batch;
 * an odd super-block count is padded with zeros). */
#define K4_BATCH 4
static void k4_search(const float *x, const float *qw, int nsb, int nmax, float rmin, float rdelta,
                      int nstep, float *scales, float *mins, float *sw, uint8_t *L, bool lanes)
{
    float weights[K4_BATCH * QK_K];
    if (lanes && !qw) { /* the weights are computed inside the batch search */
        float xb[K4_BATCH * QK_K];
        uint8_t Lb[K4_BATCH * QK_K];
        float sb[8 * K4_BATCH], mb[8 * K4_BATCH];
        if (nsb & 1) {
            memcpy(xb, x, (size_t)nsb * QK_K * sizeof(float));
            memset(xb + QK_K * nsb, 0, QK_K * sizeof(float));
            x = xb;
        }
        qz_qkx2_batch_avw((nsb + 1) / 2, nmax, x, rmin, rdelta, nstep, sb, mb, Lb);
        memcpy(scales, sb, (size_t)nsb * 8 * sizeof(float));
        memcpy(mins, mb, (size_t)nsb * 8 * sizeof(float));
        memcpy(L, Lb, (size_t)nsb * QK_K);
        return;
    }
    for (int b = 0; b < nsb; ++b)
        k4_weights(x + QK_K * b, qw ? qw + QK_K * b : NULL, weights + QK_K * b, sw + 8 * b);
    if (qw) { /* the importance path's search */
        rmin = -0.9f;
        rdelta = 0.05f;
        nstep = 36;
    }
    if (lanes) {
        float xb[K4_BATCH * QK_K];
        uint8_t Lb[K4_BATCH * QK_K];
        float sb[8 * K4_BATCH], mb[8 * K4_BATCH];
        const int ntiles = (nsb + 1) / 2;
        if (nsb & 1) {
            memcpy(xb, x, (size_t)nsb * QK_K * sizeof(float));
            memset(xb + QK_K * nsb, 0, QK_K * sizeof(float));
            memset(weights + QK_K * nsb, 0, QK_K * sizeof(float));
            x = xb;
        }
        qz_qkx_batch(ntiles, 32, nmax, x, weights, rmin, rdelta, nstep, false, qw != NULL, sb, mb,
                     Lb);
        memcpy(scales, sb, (size_t)nsb * 8 * sizeof(float));
        memcpy(mins, mb, (size_t)nsb * 8 * sizeof(float));
        memcpy(L, Lb, (size_t)nsb * QK_K);
        return;
    }
    for (int j = 0; j < nsb * (QK_K / 32); ++j)
        scales[j] = qz_make_qkx_quants(32, nmax, x + 32 * j, weights + 32 * j, L + 32 * j, &mins[j],
                                       rmin, rdelta, nstep, false, qw != NULL, false);
}

/* ggml's reference coding of the 8 scales and mins: 6-bit codes against
 * the super-block maxima. */
static void k4_pack_ref(const float *scales, const float *mins, uint8_t *scales12, uint16_t *d,
                        uint16_t *dmin)
{
    uint8_t ls[QK_K / 32], lm[QK_K / 32];
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; ++j) {
        const uint8_t s = (uint8_t)qz_nearest_int(inv_scale * scales[j]);
        const uint8_t m = (uint8_t)qz_nearest_int(inv_min * mins[j]);
        ls[j] = QZ_MIN(63, s);
        lm[j] = QZ_MIN(63, m);
    }
    pack_scale_min_k4(scales12, ls, lm);
    *d = qz_f16(max_scale / 63.f);
    *dmin = qz_f16(max_min / 63.f);
}

/* The importance path's coding (make_qp_quants weighted by sw). */
static void k4_pack_imatrix(const float *scales, const float *mins, const float *sw,
                            uint8_t *scales12, uint16_t *d, uint16_t *dmin)
{
    uint8_t Ls[QK_K / 32], Lm[QK_K / 32];
    const float d_block = make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
    const float m_block = make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
    for (int j = 0; j < QK_K / 32; ++j) {
        Ls[j] = QZ_MIN(63, Ls[j]);
        Lm[j] = QZ_MIN(63, Lm[j]);
    }
    pack_scale_min_k4(scales12, Ls, Lm);
    *d = qz_f16(d_block);
    *dmin = qz_f16(m_block);
}

/* Final levels of a Q4_K/Q5_K super-block from its stored scales. */
static void k4_levels(const float *x, const uint8_t *scales12, uint16_t dh, uint16_t dminh, int nmax,
                      uint8_t *L)
{
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, scales12, &sc, &m);
        const float d = qz_f32(dh) * sc;
        if (!d)
            continue;
        const float dm = qz_f32(dminh) * m;
        qz_levels_div(x + 32 * j, 32, dm, d, 0, nmax, 0, L + 32 * j);
    }
}

/* Scales, mins and final levels of nsb (<= K4_BATCH) consecutive
 * super-blocks, y0[b].scales/d/dmin being block b's fields (type-agnostic:
 * Q4_K and Q5_K share the layout of these three fields). */
static void k4_blocks(const float *x, const float *qw, int nsb, int nmax, float rmin, float rdelta,
                      int nstep, uint8_t *scales12[K4_BATCH], uint16_t *d[K4_BATCH],
                      uint16_t *dmin[K4_BATCH], uint8_t *L, bool lanes)
{
    float scales[8 * K4_BATCH], mins[8 * K4_BATCH], sw[8 * K4_BATCH];
    k4_search(x, qw, nsb, nmax, rmin, rdelta, nstep, scales, mins, sw, L, lanes);
    for (int b = 0; b < nsb; ++b) {
        if (qw)
            k4_pack_imatrix(scales + 8 * b, mins + 8 * b, sw + 8 * b, scales12[b], d[b], dmin[b]);
        else
            k4_pack_ref(scales + 8 * b, mins + 8 * b, scales12[b], d[b], dmin[b]);
        k4_levels(x + QK_K * b, scales12[b], *d[b], *dmin[b], nmax, L + QK_K * b);
    }
}

void qz_row_q4_K(const float *x, block_q4_K *y, int64_t nb, const float *qw, bool lanes)
{
    uint8_t L[K4_BATCH * QK_K];
    for (int64_t i = 0; i < nb; i += K4_BATCH) {
        const int nsb = nb - i >= K4_BATCH ? K4_BATCH : (int)(nb - i);
        uint8_t *sc[K4_BATCH];
        uint16_t *d[K4_BATCH], *dm[K4_BATCH];
        for (int b = 0; b < nsb; ++b) {
            sc[b] = y[i + b].scales;
            d[b] = &y[i + b].d;
            dm[b] = &y[i + b].dmin;
        }
        k4_blocks(x + QK_K * i, qw ? qw + QK_K * i : NULL, nsb, 15, -1.f, 0.1f, 20, sc, d, dm, L,
                  lanes);
        for (int b = 0; b < nsb; ++b) {
            const uint8_t *Lb = L + QK_K * b;
            uint8_t *q = y[i + b].qs;
            for (int j = 0; j < QK_K; j += 64) {
                for (int l = 0; l < 32; ++l)
                    q[l] = (uint8_t)(Lb[j + l] | (Lb[j + l + 32] << 4));
                q += 32;
            }
        }
    }
}

void qz_row_q5_K(const float *x, block_q5_K *y, int64_t nb, const float *qw, bool lanes)
{
    uint8_t L[K4_BATCH * QK_K];
    for (int64_t i = 0; i < nb; i += K4_BATCH) {
        const int nsb = nb - i >= K4_BATCH ? K4_BATCH : (int)(nb - i);
        uint8_t *sc[K4_BATCH];
        uint16_t *d[K4_BATCH], *dm[K4_BATCH];
        for (int b = 0; b < nsb; ++b) {
            sc[b] = y[i + b].scales;
            d[b] = &y[i + b].d;
            dm[b] = &y[i + b].dmin;
        }
        k4_blocks(x + QK_K * i, qw ? qw + QK_K * i : NULL, nsb, 31, -0.5f, 0.1f, 15, sc, d, dm, L,
                  lanes);
        for (int b = 0; b < nsb; ++b) {
            const uint8_t *Lb = L + QK_K * b;
            uint8_t *qh = y[i + b].qh;
            uint8_t *ql = y[i + b].qs;
            memset(qh, 0, QK_K / 8);
            uint8_t m1 = 1, m2 = 2;
            for (int n = 0; n < QK_K; n += 64) {
                for (int j = 0; j < 32; ++j) { /* levels 0..31: bit 4 to qh */
                    const int l1 = Lb[n + j], l2 = Lb[n + j + 32];
                    qh[j] |= (uint8_t)((l1 >> 4) * m1 | (l2 >> 4) * m2);
                    ql[j] = (uint8_t)((l1 & 15) | ((l2 & 15) << 4));
                }
                m1 = (uint8_t)(m1 << 2);
                m2 = (uint8_t)(m2 << 2);
                ql += 32;
            }
        }
    }
}

/* ---- Q6_K ---- */

void qz_row_q6_K(const float *x, block_q6_K *y, int64_t nb, const float *qw, bool lanes)
{
    int8_t L[QK_K];
    float scales[QK_K / 16];

    for (int64_t i = 0; i < nb; ++i, x += QK_K, ++y) {
        float max_scale = 0;
        float max_abs_scale = 0;
        if (lanes) /* the 16 groups at once */
            qz_qx1_batch(16, 32, x, qw ? qw + QK_K * i : NULL, scales, L);
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            if (!lanes)
                scales[ib] = qz_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1,
                                               qw ? qw + QK_K * i + 16 * ib : NULL, false);
            const float scale = scales[ib];
            const float abs_scale = fabsf(scale);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scale;
            }
        }
        if (max_abs_scale < QZ_GROUP_MAX_EPS) {
            memset(y, 0, sizeof *y);
            y->d = qz_f16(0.f);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y->d = qz_f16(1 / iscale);
        for (int ib = 0; ib < QK_K / 16; ++ib)
            y->scales[ib] = (int8_t)QZ_MIN(127, qz_nearest_int(iscale * scales[ib]));
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = qz_f32(y->d) * y->scales[j];
            if (!d)
                continue;
            /* (x + 0) / d rounds like x / d: x + 0 is x, or +0 for -0 */
            qz_levels_div(x + 16 * j, 16, 0.f, d, -32, 31, 32, (uint8_t *)L + 16 * j);
        }
        uint8_t *ql = y->ql;
        uint8_t *qh = y->qh;
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; ++l) {
                const uint8_t q1 = L[j + l + 0] & 0xF;
                const uint8_t q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF;
                const uint8_t q4 = L[j + l + 96] & 0xF;
                ql[l + 0] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                  ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
            }
            ql += 64;
            qh += 32;
        }
    }
}
