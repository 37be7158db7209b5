/* quantize: ggml's reference quantizers, byte-exact, for F16, BF16, the
 * legacy block types (Q4_0 .. Q8_0), MXFP4, the ternary types and the 4-bit
 * non-linear types; the K-quants live in quantize_k.c. What is reproduced is
 * what ggml_quantize_chunk() writes: without an importance matrix that is
 * quantize_row_*_ref() for every type except IQ4_NL and IQ4_XS, whose chunk
 * path searches 15 candidate scales where the _ref function searches 3.
 *
 * Thread-safe: no mutable state, only small stack buffers. */
#include "codec.h"
#include "ggtype.h"
#include "quant_tables.h"
#include "quantize_internal.h"

#include <float.h>
#include <stdbool.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* as ggml: no a*b+c -> FMA (see quantize_search.c) */
#endif

/* ---- F16, BF16 ---- */

static void row_f16(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    (void)lanes;
    (void)qw;
    uint16_t *y = vy;
    for (int64_t i = 0; i < n; ++i)
        y[i] = cdc_f32_to_f16(x[i]);
}

static void row_bf16(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    (void)lanes;
    (void)qw;
    uint16_t *y = vy;
    for (int64_t i = 0; i < n; ++i)
        y[i] = cdc_f32_to_bf16(x[i]);
}

/* ---- Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: reference paths ---- */

/* Value of largest magnitude (the first one on ties), as ggml picks it. */
static inline float signed_absmax(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void q4_0_ref(const float *x, block_q4_0 *y)
{
    const float max = signed_absmax(x, QK4_0);
    const float d = max / -8;
    const float id = d ? 1.0f / d : 0.0f;
    y->d = qz_f16(d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
        const float x0 = x[0 + j] * id;
        const float x1 = x[QK4_0 / 2 + j] * id;
        const uint8_t xi0 = (uint8_t)QZ_MIN(15, (int8_t)qz_cvtt(x0 + 8.5f));
        const uint8_t xi1 = (uint8_t)QZ_MIN(15, (int8_t)qz_cvtt(x1 + 8.5f));
        y->qs[j] = (uint8_t)(xi0 | (xi1 << 4));
    }
}

static void min_max(const float *x, int n, float *pmin, float *pmax)
{
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < min)
            min = x[j];
        if (x[j] > max)
            max = x[j];
    }
    *pmin = min;
    *pmax = max;
}

static void q4_1_ref(const float *x, block_q4_1 *y)
{
    float min, max;
    min_max(x, QK4_1, &min, &max);
    const float d = (max - min) / ((1 << 4) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    y->d = qz_f16(d);
    y->m = qz_f16(min);
    for (int j = 0; j < QK4_1 / 2; ++j) {
        const float x0 = (x[0 + j] - min) * id;
        const float x1 = (x[QK4_1 / 2 + j] - min) * id;
        const uint8_t xi0 = (uint8_t)QZ_MIN(15, (int8_t)qz_cvtt(x0 + 0.5f));
        const uint8_t xi1 = (uint8_t)QZ_MIN(15, (int8_t)qz_cvtt(x1 + 0.5f));
        y->qs[j] = (uint8_t)(xi0 | (xi1 << 4));
    }
}

/* Low nibbles into qs, fifth bits into the 32-bit qh (Q5_0, Q5_1). */
static inline void pack5(const uint8_t *L, uint8_t *qs, uint8_t *qh_bytes)
{
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        const uint8_t xi0 = L[j];
        const uint8_t xi1 = L[j + 16];
        qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
        qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
        qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    qh_bytes[0] = (uint8_t)qh;
    qh_bytes[1] = (uint8_t)(qh >> 8);
    qh_bytes[2] = (uint8_t)(qh >> 16);
    qh_bytes[3] = (uint8_t)(qh >> 24);
}

static void q5_0_ref(const float *x, block_q5_0 *y)
{
    const float max = signed_absmax(x, QK5_0);
    const float d = max / -16;
    const float id = d ? 1.0f / d : 0.0f;
    y->d = qz_f16(d);
    uint8_t L[QK5_0];
    for (int j = 0; j < QK5_0; ++j)
        L[j] = (uint8_t)QZ_MIN(31, (int8_t)qz_cvtt(x[j] * id + 16.5f));
    pack5(L, y->qs, y->qh);
}

static void q5_1_ref(const float *x, block_q5_1 *y)
{
    float min, max;
    min_max(x, QK5_1, &min, &max);
    const float d = (max - min) / ((1 << 5) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    y->d = qz_f16(d);
    y->m = qz_f16(min);
    uint8_t L[QK5_1];
    for (int j = 0; j < QK5_1; ++j)
        L[j] = (uint8_t)qz_cvtt((x[j] - min) * id + 0.5f);
    pack5(L, y->qs, y->qh);
}

static void q8_0_ref(const float *x, block_q8_0 *y)
{
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; j++)
        amax = QZ_MAX(amax, fabsf(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    y->d = qz_f16(d);
    for (int j = 0; j < QK8_0; ++j)
        y->qs[j] = (int8_t)qz_cvtt(roundf(x[j] * id));
}

/* ---- the same with an importance matrix (ggml's quantize_row_*_impl) ---- */

static float row_sigma2(const float *x, int64_t n)
{
    float sum_x2 = 0;
    for (int64_t j = 0; j < n; ++j)
        sum_x2 += x[j] * x[j];
    return sum_x2 / n;
}

static void legacy_weights(const float *xb, const float *qw, float sigma2, float *weight)
{
    for (int j = 0; j < 32; ++j)
        weight[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
}

static void row_q4_0(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    block_q4_0 *y = vy;
    const int64_t nb = n / QK4_0;
    if (!qw) {
        for (int64_t i = 0; i < nb; ++i)
            q4_0_ref(x + QK4_0 * i, y + i);
        return;
    }
    const float sigma2 = row_sigma2(x, n);
    float weight[QK4_0];
    int8_t L[QK4_0];
    for (int64_t i = 0; i < nb; ++i) {
        legacy_weights(x + QK4_0 * i, qw + QK4_0 * i, sigma2, weight);
        const float d = qz_make_qx_quants(QK4_0, 8, x + QK4_0 * i, L, 1, weight, lanes);
        y[i].d = qz_f16(d);
        for (int j = 0; j < 16; ++j)
            y[i].qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
    }
}

static void row_q4_1(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    block_q4_1 *y = vy;
    const int64_t nb = n / QK4_1;
    if (!qw) {
        for (int64_t i = 0; i < nb; ++i)
            q4_1_ref(x + QK4_1 * i, y + i);
        return;
    }
    const float sigma2 = row_sigma2(x, n);
    float weight[QK4_1];
    uint8_t L[QK4_1];
    for (int64_t i = 0; i < nb; ++i) {
        legacy_weights(x + QK4_1 * i, qw + QK4_1 * i, sigma2, weight);
        float min;
        const float d = qz_make_qkx_quants(QK4_1, 15, x + QK4_1 * i, weight, L, &min, -0.9f, 0.05f,
                                           36, false, true, lanes);
        y[i].d = qz_f16(d);
        y[i].m = qz_f16(-min);
        for (int j = 0; j < 16; ++j)
            y[i].qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
    }
}

static void row_q5_0(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    block_q5_0 *y = vy;
    const int64_t nb = n / QK5_0;
    if (!qw) {
        for (int64_t i = 0; i < nb; ++i)
            q5_0_ref(x + QK5_0 * i, y + i);
        return;
    }
    const float sigma2 = row_sigma2(x, n);
    float weight[QK5_0];
    int8_t L[QK5_0];
    for (int64_t i = 0; i < nb; ++i) {
        legacy_weights(x + QK5_0 * i, qw + QK5_0 * i, sigma2, weight);
        const float d = qz_make_qx_quants(QK5_0, 16, x + QK5_0 * i, L, 1, weight, lanes);
        y[i].d = qz_f16(d);
        pack5((const uint8_t *)L, y[i].qs, y[i].qh);
    }
}

static void row_q5_1(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    block_q5_1 *y = vy;
    const int64_t nb = n / QK5_1;
    if (!qw) {
        for (int64_t i = 0; i < nb; ++i)
            q5_1_ref(x + QK5_1 * i, y + i);
        return;
    }
    const float sigma2 = row_sigma2(x, n);
    float weight[QK5_1];
    uint8_t L[QK5_1];
    for (int64_t i = 0; i < nb; ++i) {
        legacy_weights(x + QK5_1 * i, qw + QK5_1 * i, sigma2, weight);
        float min;
        const float d = qz_make_qkx_quants(QK5_1, 31, x + QK5_1 * i, weight, L, &min, -0.9f, 0.05f,
                                           36, false, true, lanes);
        y[i].d = qz_f16(d);
        y[i].m = qz_f16(-min);
        pack5(L, y[i].qs, y[i].qh);
    }
}

static void row_q8_0(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    (void)lanes;
    (void)qw; /* ggml's Q8_0 takes no importance */
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / QK8_0; ++i)
        q8_0_ref(x + QK8_0 * i, y + i);
}

/* ---- MXFP4 ---- */

/* 2^(e-128): the E8M0 scale, halved because the value table is doubled. */
static inline float e8m0_half(uint8_t e)
{
    const uint32_t bits = e < 2 ? UINT32_C(0x00200000) << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Index of the table value nearest to x/e (the first one on ties). */
static inline int best_index_mxfp4(float x, float e)
{
    int best_index = 0;
    float best_err = fabsf(qt_kvalues_fp4[0] * e - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf(qt_kvalues_fp4[i] * e - x);
        if (err < best_err) {
            best_index = i;
            best_err = err;
        }
    }
    return best_index;
}

static void row_mxfp4(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    (void)lanes;
    (void)qw;
    block_mxfp4 *y = vy;
    for (int64_t i = 0; i < n / QK_MXFP4; ++i, x += QK_MXFP4) {
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; j++)
            if (amax < fabsf(x[j]))
                amax = fabsf(x[j]);
        const uint8_t e = amax > 0.0f ? (uint8_t)qz_cvtt(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = e8m0_half(e);
        y[i].e = e;
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            const int x0 = best_index_mxfp4(x[0 + j], d);
            const int x1 = best_index_mxfp4(x[QK_MXFP4 / 2 + j], d);
            y[i].qs[j] = (uint8_t)(x0 | (x1 << 4));
        }
    }
}

/* ---- TQ1_0, TQ2_0 (ternary) ---- */

/* Ternary digit of v = x/amax: round(v) + 1 in {0, 1, 2}. */
static inline int trit(float v)
{
    return (int)(qz_lroundf(v) + 1);
}

static void row_tq1_0(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    (void)lanes;
    (void)qw;
    block_tq1_0 *y = vy;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j++)
            amax = QZ_MAX(amax, fabsf(x[j]));
        const float d = amax;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = qz_f16(d);
        /* 5 trits per byte: 32 bytes x 5, then 16 bytes x 5; byte = ceil(q*256/243) */
        const size_t nqs = sizeof y->qs;
        for (size_t j = 0; j < nqs - nqs % 32; j += 32) {
            for (size_t m = 0; m < 32; ++m) {
                uint8_t q = 0;
                for (size_t k = 0; k < 5; ++k)
                    q = (uint8_t)(q * 3 + trit(x[m + k * 32] * id));
                y[i].qs[j + m] = (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
            }
            x += 5 * 32;
        }
        for (size_t j = nqs - nqs % 32; j < nqs; j += 16) {
            for (size_t m = 0; m < 16; ++m) {
                uint8_t q = 0;
                for (size_t k = 0; k < 5; ++k)
                    q = (uint8_t)(q * 3 + trit(x[m + k * 16] * id));
                y[i].qs[j + m] = (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
            }
            x += 5 * 16;
        }
        /* 4 trits per byte in qh, shifted up to the top trit */
        const size_t nqh = sizeof y->qh;
        for (size_t j = 0; j < nqh; ++j) {
            uint8_t q = 0;
            for (size_t m = 0; m < 4; ++m)
                q = (uint8_t)(q * 3 + trit(x[j + m * nqh] * id));
            q = (uint8_t)(q * 3);
            y[i].qh[j] = (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
        }
        x += 4 * nqh;
    }
}

static void row_tq2_0(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    (void)lanes;
    (void)qw;
    block_tq2_0 *y = vy;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j++)
            amax = QZ_MAX(amax, fabsf(x[j]));
        const float d = amax;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = qz_f16(d);
        for (size_t j = 0; j < sizeof y->qs; j += 32) {
            for (size_t m = 0; m < 32; ++m) {
                uint8_t q = 0;
                for (size_t k = 0; k < 4; ++k)
                    q = (uint8_t)(q + ((trit(x[m + k * 32] * id) & 3) << (2 * k)));
                y[i].qs[j + m] = q;
            }
            x += 4 * 32;
        }
    }
}

/* ---- IQ4_NL, IQ4_XS ---- */

/* Index of the sorted table value nearest to x; a value exactly between two
 * levels takes the upper one (branch-free binary search, n a power of 2). */
static inline int best_index_int8(int n, const int8_t *val, float x)
{
    const float x2 = x + x;
    int idx = 0;
    for (int step = n >> 1; step > 0; step >>= 1) {
        const int j = idx + step;
        idx = (x2 >= (float)(val[j - 1] + val[j])) ? j : idx;
    }
    return idx;
}

/* best_index_int8 for many values at once (n a multiple of 16): the number
 * of midpoints val[m-1] + val[m] that 2x reaches. The midpoints increase
 * strictly, so that count is the index the binary search finds, for every
 * float (NaN: 0). */
QZ_CLONES
static void iq4_index_many(const float *x, float scale, int n, uint8_t *L)
{
    const int8_t *v = qt_kvalues_iq4nl;
    for (int j0 = 0; j0 < n; j0 += QZ_LANES) {
        qz_vf xv;
        memcpy(&xv, x + j0, sizeof xv);
        const qz_vf a = xv * scale, x2 = a + a;
        qz_vi idx = QZ_VI(0);
        for (int m = 1; m < 16; m++)
            idx -= x2 >= QZ_VF(v[m - 1] + v[m]); /* true = -1 */
        for (int j = 0; j < QZ_LANES; j++)
            L[j0 + j] = (uint8_t)idx[j];
    }
}

/* The 15 trial scales id = (itry - 127) / max, itry = -7..7, in lanes:
 * each lane sums w*q*x and w*q*q over the 32 values in ggml's order. */
QZ_CLONES
static void iq4_tries(const float *xb, const float *weight, float max, float *sqx_out,
                      float *sq2_out)
{
    const int8_t *v = qt_kvalues_iq4nl;
    float idk[QZ_LANES];
    for (int k = 0; k < QZ_LANES; k++)
        idk[k] = (k - 7 + v[0]) / max; /* lane 15 is spare */
    qz_vf id, sqx = QZ_VF(0), sq2 = QZ_VF(0);
    memcpy(&id, idk, sizeof id);
    for (int j = 0; j < 32; j++) {
        const float xj = xb[j], wj = weight[j];
        const qz_vf a = id * xj, x2 = a + a;
        qz_vi q = QZ_VI(v[0]);
        for (int m = 1; m < 16; m++)
            q += (x2 >= QZ_VF(v[m - 1] + v[m])) & QZ_VI(v[m] - v[m - 1]);
        const qz_vf qf = QZ_VTOF(q), wq = wj * qf;
        sqx += wq * xj;
        sq2 += wq * qf;
    }
    memcpy(sqx_out, &sqx, sizeof sqx);
    memcpy(sq2_out, &sq2, sizeof sq2);
}

/* ggml's quantize_row_iq4_nl_impl for 16 levels: one super-block of `sbs`
 * values (32 for IQ4_NL: one scale; 256 for IQ4_XS: 8 sub-block scales of 6
 * bits under an f16 super-scale). ntry = 7 (ggml_quantize_chunk's path). */
static void iq4_block(int sbs, const float *x, uint16_t *dh, uint8_t *q4, uint16_t *scales_h,
                      uint8_t *scales_l, const float *qw, bool lanes)
{
    enum { BS = 32, NTRY = 7, NV = 16 };
    const int8_t *values = qt_kvalues_iq4nl;
    float scales[QK_K / BS];
    float weight[BS];
    uint8_t L[QK_K];

    float sigma2 = 0;
    for (int j = 0; j < sbs; ++j)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / sbs;

    memset(q4, 0, (size_t)sbs / 2);
    dh[0] = qz_f16(0.f);

    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < sbs / BS; ++ib) {
        const float *xb = x + ib * BS;
        uint8_t *Lb = L + ib * BS;
        if (qw) {
            const float *w = qw + ib * BS;
            for (int j = 0; j < BS; ++j)
                weight[j] = w[j] * sqrtf(sigma2 + xb[j] * xb[j]);
        } else {
            for (int j = 0; j < BS; ++j)
                weight[j] = xb[j] * xb[j];
        }
        float amax = 0, max = 0;
        for (int j = 0; j < BS; ++j) {
            const float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < QZ_GROUP_MAX_EPS) {
            scales[ib] = 0;
            memset(Lb, 0, BS);
            continue;
        }
        float d = -max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        if (lanes)
            iq4_index_many(xb, id, BS, Lb);
        for (int j = 0; j < BS; ++j) {
            const int l = lanes ? Lb[j] : best_index_int8(NV, values, id * xb[j]);
            Lb[j] = (uint8_t)l;
            const float q = values[l];
            const float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        if (lanes) {
            float sqx[16], sq2[16];
            iq4_tries(xb, weight, max, sqx, sq2);
            for (int k = 0; k < 2 * NTRY + 1; ++k) {
                if (sq2[k] > 0 && sqx[k] * sqx[k] > best * sq2[k]) {
                    d = sqx[k] / sq2[k];
                    best = d * sqx[k];
                }
            }
        }
        for (int itry = -NTRY; itry <= NTRY && !lanes; ++itry) {
            id = (itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < BS; ++j) {
                const float al = id * xb[j];
                const int l = best_index_int8(NV, values, al);
                const float q = values[l];
                const float w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        const float abs_d = fabsf(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }

    if (sbs / BS > 1) {
        const int nb = sbs / BS;
        memset(scales_h, 0, (size_t)((nb + 7) / 8) * sizeof(uint16_t));
        const float d = -max_scale / 32;
        dh[0] = qz_f16(d);
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < nb; ++ib) {
            int l = qz_nearest_int(id * scales[ib]);
            l = QZ_MAX(-32, QZ_MIN(31, l));
            const float dl = d * l;
            const float idl = dl ? 1 / dl : 0.f;
            uint8_t *Lb = L + ib * BS;
            const float *xb = x + ib * BS;
            if (lanes)
                iq4_index_many(xb, idl, BS, Lb);
            else
                for (int j = 0; j < BS; ++j)
                    Lb[j] = (uint8_t)best_index_int8(NV, values, idl * xb[j]);
            l += 32;
            const uint8_t l_l = (uint8_t)(l & 0xf);
            const uint8_t l_h = (uint8_t)(l >> 4);
            if (ib % 2 == 0)
                scales_l[ib / 2] = l_l;
            else
                scales_l[ib / 2] |= (uint8_t)(l_l << 4);
            scales_h[ib / 8] |= (uint16_t)(l_h << 2 * (ib % 8));
        }
    } else {
        dh[0] = qz_f16(scales[0]);
        const float id = scales[0] ? 1 / scales[0] : 0;
        if (lanes)
            iq4_index_many(x, id, sbs, L);
        else
            for (int j = 0; j < sbs; ++j)
                L[j] = (uint8_t)best_index_int8(NV, values, id * x[j]);
    }

    for (int i = 0; i < sbs / 32; ++i)
        for (int j = 0; j < 16; ++j)
            q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

static void row_iq4_nl(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    block_iq4_nl *y = vy;
    for (int64_t i = 0; i < n / QK4_NL; ++i)
        iq4_block(QK4_NL, x + QK4_NL * i, &y[i].d, y[i].qs, NULL, NULL,
                  qw ? qw + QK4_NL * i : NULL, lanes);
}

static void row_iq4_xs(const float *x, void *vy, int64_t n, const float *qw, bool lanes)
{
    block_iq4_xs *y = vy;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        /* scales_h is not 2-aligned inside the packed block: go through a copy */
        uint16_t sh = 0;
        iq4_block(QK_K, x + QK_K * i, &y[i].d, y[i].qs, &sh, y[i].scales_l,
                  qw ? qw + QK_K * i : NULL, lanes);
        y[i].scales_h = sh;
    }
}

/* ---- K-quants: adapters to the common row signature ---- */

static void row_q2_K(const float *x, void *y, int64_t n, const float *qw, bool lanes)
{
    qz_row_q2_K(x, y, n / QK_K, qw, lanes);
}
static void row_q3_K(const float *x, void *y, int64_t n, const float *qw, bool lanes)
{
    qz_row_q3_K(x, y, n / QK_K, qw, lanes);
}
static void row_q4_K(const float *x, void *y, int64_t n, const float *qw, bool lanes)
{
    qz_row_q4_K(x, y, n / QK_K, qw, lanes);
}
static void row_q5_K(const float *x, void *y, int64_t n, const float *qw, bool lanes)
{
    qz_row_q5_K(x, y, n / QK_K, qw, lanes);
}
static void row_q6_K(const float *x, void *y, int64_t n, const float *qw, bool lanes)
{
    qz_row_q6_K(x, y, n / QK_K, qw, lanes);
}

/* ---- dispatch ---- */

/* Quantizes one row of n values (n a multiple of the block size). */
typedef void (*row_fn)(const float *x, void *y, int64_t n, const float *qw, bool lanes);

static row_fn quantizer(uint32_t type)
{
    switch (type) {
    case GGTYPE_F16: return row_f16;
    case GGTYPE_BF16: return row_bf16;
    case GGTYPE_Q4_0: return row_q4_0;
    case GGTYPE_Q4_1: return row_q4_1;
    case GGTYPE_Q5_0: return row_q5_0;
    case GGTYPE_Q5_1: return row_q5_1;
    case GGTYPE_Q8_0: return row_q8_0;
    case GGTYPE_Q2_K: return row_q2_K;
    case GGTYPE_Q3_K: return row_q3_K;
    case GGTYPE_Q4_K: return row_q4_K;
    case GGTYPE_Q5_K: return row_q5_K;
    case GGTYPE_Q6_K: return row_q6_K;
    case GGTYPE_IQ4_NL: return row_iq4_nl;
    case GGTYPE_IQ4_XS: return row_iq4_xs;
    case GGTYPE_TQ1_0: return row_tq1_0;
    case GGTYPE_TQ2_0: return row_tq2_0;
    case GGTYPE_MXFP4: return row_mxfp4;
    default: return NULL;
    }
}

bool codec_can_quantize(uint32_t type)
{
    return quantizer(type) != NULL;
}

size_t qz_quantize(uint32_t type, const float *src, void *dst, uint64_t nrows, uint64_t n_per_row,
                   const float *imatrix, bool lanes)
{
    const row_fn fn = quantizer(type);
    if (!fn || !src || !dst || n_per_row == 0 || n_per_row > (uint64_t)INT64_MAX)
        return 0;
    bool overflow = false;
    const uint64_t row_size = ggtype_row_size(type, n_per_row, &overflow);
    if (row_size == 0 || overflow)
        return 0;
    if (nrows > SIZE_MAX / row_size || nrows > SIZE_MAX / sizeof(float) / n_per_row)
        return 0;
    uint8_t *out = dst;
    for (uint64_t r = 0; r < nrows; ++r)
        fn(src + r * n_per_row, out + r * row_size, (int64_t)n_per_row, imatrix, lanes);
    return (size_t)(nrows * row_size);
}

size_t codec_quantize(uint32_t type, const float *src, void *dst, uint64_t nrows,
                      uint64_t n_per_row, const float *imatrix)
{
    return qz_quantize(type, src, dst, nrows, n_per_row, imatrix, true);
}
