/* codec: portable scalar dequantizers, one per ggml type. They are the
 * reference for the SIMD paths and compute exactly what ggml's
 * dequantize_row_* compute: the same float operations in the same order, so
 * the results are bit-identical. Block bytes are read with byte loads (any
 * alignment, any host byte order). */
#include <stddef.h>
#include <string.h>

#include "codec_internal.h"
#include "quant_blocks.h"
#include "quant_tables.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define B(type) ((const uint8_t *)src + i * sizeof(type))
#define OFF(type, field) offsetof(type, field)

/* ggml writes `v * (sign ? -1.f : 1.f)`; compilers turn that into a
 * negation (which also flips a NaN's sign, where a multiply would not), so
 * the codec defines it as the negation, on every path. */
static inline float apply_sign(float v, uint32_t signs, int j)
{
    return (signs & qt_kmask_iq2xs[j]) ? -v : v;
}

static inline int grid_byte(uint64_t g, int j)
{
    return (int)((g >> (8 * j)) & 0xff);
}

static inline int grid_sbyte(uint64_t g, int j)
{
    return (int)(int8_t)((g >> (8 * j)) & 0xff);
}

/* ---- plain element types ---- */

static void dq_f32(const void *src, float *y, uint64_t n)
{
    memcpy(y, src, n * sizeof(float));
}

static void dq_f16(const void *src, float *y, uint64_t n)
{
    const uint8_t *p = src;
    for (uint64_t i = 0; i < n; i++)
        y[i] = cdc_f16_to_f32(cdc_le16(p + 2 * i));
}

static void dq_bf16(const void *src, float *y, uint64_t n)
{
    const uint8_t *p = src;
    for (uint64_t i = 0; i < n; i++)
        y[i] = cdc_bf16_to_f32(cdc_le16(p + 2 * i));
}

static void dq_f64(const void *src, float *y, uint64_t n)
{
    const uint8_t *p = src;
    for (uint64_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, p + 8 * i, 8);
        y[i] = (float)v;
    }
}

static void dq_i8(const void *src, float *y, uint64_t n)
{
    const int8_t *p = src;
    for (uint64_t i = 0; i < n; i++)
        y[i] = (float)p[i];
}

static void dq_i16(const void *src, float *y, uint64_t n)
{
    const uint8_t *p = src;
    for (uint64_t i = 0; i < n; i++)
        y[i] = (float)(int16_t)cdc_le16(p + 2 * i);
}

static void dq_i32(const void *src, float *y, uint64_t n)
{
    const uint8_t *p = src;
    for (uint64_t i = 0; i < n; i++)
        y[i] = (float)(int32_t)cdc_le32(p + 4 * i);
}

static void dq_i64(const void *src, float *y, uint64_t n)
{
    const uint8_t *p = src;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t u = (uint64_t)cdc_le32(p + 8 * i) | ((uint64_t)cdc_le32(p + 8 * i + 4) << 32);
        y[i] = (float)(int64_t)u;
    }
}

/* ---- 32-element legacy blocks ---- */

static void dq_q4_0(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK4_0) {
        const uint8_t *b = B(block_q4_0);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_q4_0, qs);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const int x0 = (qs[j] & 0x0F) - 8, x1 = (qs[j] >> 4) - 8;
            y[j] = x0 * d;
            y[j + QK4_0 / 2] = x1 * d;
        }
    }
}

static void dq_q4_1(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK4_1) {
        const uint8_t *b = B(block_q4_1);
        const float d = cdc_half(b), m = cdc_half(b + 2);
        const uint8_t *qs = b + OFF(block_q4_1, qs);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const int x0 = qs[j] & 0x0F, x1 = qs[j] >> 4;
            y[j] = x0 * d + m;
            y[j + QK4_1 / 2] = x1 * d + m;
        }
    }
}

static void dq_q5_0(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK5_0) {
        const uint8_t *b = B(block_q5_0);
        const float d = cdc_half(b);
        const uint32_t qh = cdc_le32(b + OFF(block_q5_0, qh));
        const uint8_t *qs = b + OFF(block_q5_0, qs);
        for (int j = 0; j < QK5_0 / 2; j++) {
            const uint8_t xh0 = ((qh >> j) << 4) & 0x10, xh1 = (qh >> (j + 12)) & 0x10;
            const int32_t x0 = ((qs[j] & 0x0F) | xh0) - 16, x1 = ((qs[j] >> 4) | xh1) - 16;
            y[j] = x0 * d;
            y[j + QK5_0 / 2] = x1 * d;
        }
    }
}

static void dq_q5_1(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK5_1) {
        const uint8_t *b = B(block_q5_1);
        const float d = cdc_half(b), m = cdc_half(b + 2);
        const uint32_t qh = cdc_le32(b + OFF(block_q5_1, qh));
        const uint8_t *qs = b + OFF(block_q5_1, qs);
        for (int j = 0; j < QK5_1 / 2; j++) {
            const uint8_t xh0 = ((qh >> j) << 4) & 0x10, xh1 = (qh >> (j + 12)) & 0x10;
            const int x0 = (qs[j] & 0x0F) | xh0, x1 = (qs[j] >> 4) | xh1;
            y[j] = x0 * d + m;
            y[j + QK5_1 / 2] = x1 * d + m;
        }
    }
}

static void dq_q8_0(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK8_0) {
        const uint8_t *b = B(block_q8_0);
        const float d = cdc_half(b);
        const int8_t *qs = (const int8_t *)(b + OFF(block_q8_0, qs));
        for (int j = 0; j < QK8_0; j++)
            y[j] = qs[j] * d;
    }
}

/* q8_1 as ggml's (CPU-internal) layout: d, s, then 32 int8; s is not needed. */
static void dq_q8_1(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK8_1) {
        const uint8_t *b = B(block_q8_1);
        const float d = cdc_half(b);
        const int8_t *qs = (const int8_t *)(b + OFF(block_q8_1, qs));
        for (int j = 0; j < QK8_1; j++)
            y[j] = qs[j] * d;
    }
}

static void dq_q1_0(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK1_0) {
        const uint8_t *b = B(block_q1_0);
        const float d = cdc_half(b), neg_d = -d;
        const uint8_t *qs = b + OFF(block_q1_0, qs);
        for (int j = 0; j < QK1_0; j++)
            y[j] = ((qs[j / 8] >> (j % 8)) & 1) ? d : neg_d;
    }
}

static void dq_q2_0(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK2_0) {
        const uint8_t *b = B(block_q2_0);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_q2_0, qs);
        for (int j = 0; j < QK2_0; j++) {
            const int q = (qs[j / 4] >> ((j % 4) * 2)) & 3;
            y[j] = (q - 1) * d;
        }
    }
}

/* ---- FP4 ---- */

/* E8M0 exponent to 2^(x-127), halved (the FP4 table is doubled). */
static inline float e8m0_half(uint8_t x)
{
    const uint32_t bits = x < 2 ? UINT32_C(0x00200000) << x : (uint32_t)(x - 1) << 23;
    return cdc_f32_from_bits(bits);
}

/* UE4M3 (bias 7, the sign bit ignored, 0x7F = 0), halved: as ggml_ue4m3_to_fp32.
 * Every value is exact, so building it from bits equals ldexpf's result. */
static inline float ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7F)
        return 0.0f;
    const uint32_t e = (x >> 3) & 0xF, m = x & 7;
    if (e == 0)
        return (float)m * 0x1.0p-10f;
    return cdc_f32_from_bits(((e + 119) << 23) | (m << 20));
}

static void dq_mxfp4(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK_MXFP4) {
        const uint8_t *b = B(block_mxfp4);
        const float d = e8m0_half(b[0]);
        const uint8_t *qs = b + OFF(block_mxfp4, qs);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            y[j] = qt_kvalues_fp4[qs[j] & 0x0F] * d;
            y[j + QK_MXFP4 / 2] = qt_kvalues_fp4[qs[j] >> 4] * d;
        }
    }
}

static void dq_nvfp4(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_nvfp4);
        for (int s = 0; s < QK_NVFP4 / QK_NVFP4_SUB; s++, y += QK_NVFP4_SUB) {
            const float d = ue4m3_half(b[s]);
            const uint8_t *qs = b + OFF(block_nvfp4, qs) + s * (QK_NVFP4_SUB / 2);
            for (int j = 0; j < QK_NVFP4_SUB / 2; j++) {
                y[j] = qt_kvalues_fp4[qs[j] & 0x0F] * d;
                y[j + QK_NVFP4_SUB / 2] = qt_kvalues_fp4[qs[j] >> 4] * d;
            }
        }
    }
}

/* ---- K-quants ---- */

/* The 6-bit scale and min j (0..7) of q4_K/q5_K's 12 packed bytes. */
static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static void dq_q2_K(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_q2_K);
        const float d = cdc_half(b + OFF(block_q2_K, d)), min = cdc_half(b + OFF(block_q2_K, dmin));
        const uint8_t *sc = b + OFF(block_q2_K, scales);
        const uint8_t *q = b + OFF(block_q2_K, qs);
        int is = 0;
        for (int n = 0; n < QK_K; n += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    const uint8_t s = sc[is++];
                    const float dl = d * (s & 0xF), ml = min * (s >> 4);
                    for (int l = 0; l < 16; l++)
                        *y++ = dl * ((int8_t)((q[l + 16 * half] >> shift) & 3)) - ml;
                }
            }
        }
    }
}

/* q3_K's sixteen 6-bit scales (biased by 32) from its 12 bytes. */
static inline void q3k_scales(const uint8_t *s12, int8_t out[16])
{
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? (s12[j] & 0xF) : (s12[j - 8] >> 4);
        const int hi = (s12[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        out[j] = (int8_t)(lo | (hi << 4));
    }
}

static void dq_q3_K(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_q3_K);
        const float d_all = cdc_half(b + OFF(block_q3_K, d));
        const uint8_t *q = b + OFF(block_q3_K, qs);
        const uint8_t *hm = b + OFF(block_q3_K, hmask);
        int8_t scales[16];
        q3k_scales(b + OFF(block_q3_K, scales), scales);
        uint8_t m = 1;
        int is = 0;
        for (int n = 0; n < QK_K; n += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int half = 0; half < 2; half++) {
                    const float dl = d_all * (scales[is++] - 32);
                    for (int l = 16 * half; l < 16 * half + 16; l++)
                        *y++ = dl * ((int8_t)((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                }
            }
        }
    }
}

static void dq_q4_K(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_q4_K);
        const float d = cdc_half(b), min = cdc_half(b + 2);
        const uint8_t *sc = b + OFF(block_q4_K, scales);
        const uint8_t *q = b + OFF(block_q4_K, qs);
        for (int is = 0; is < 8; is += 2, q += 32) {
            uint8_t s, m;
            scale_min_k4(is, sc, &s, &m);
            const float d1 = d * s, m1 = min * m;
            scale_min_k4(is + 1, sc, &s, &m);
            const float d2 = d * s, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

static void dq_q5_K(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_q5_K);
        const float d = cdc_half(b), min = cdc_half(b + 2);
        const uint8_t *sc = b + OFF(block_q5_K, scales);
        const uint8_t *ql = b + OFF(block_q5_K, qs);
        const uint8_t *qh = b + OFF(block_q5_K, qh);
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t s, m;
            scale_min_k4(is, sc, &s, &m);
            const float d1 = d * s, m1 = min * m;
            scale_min_k4(is + 1, sc, &s, &m);
            const float d2 = d * s, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

static void dq_q6_K(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_q6_K);
        const float d = cdc_half(b + OFF(block_q6_K, d));
        const uint8_t *ql = b + OFF(block_q6_K, ql);
        const uint8_t *qh = b + OFF(block_q6_K, qh);
        const int8_t *sc = (const int8_t *)(b + OFF(block_q6_K, scales));
        for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int8_t q1 = (int8_t)((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int8_t q3 = (int8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * sc[is] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
        }
    }
}

static void dq_q8_K(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK_K) {
        const uint8_t *b = B(block_q8_K);
        const float d = cdc_f32_from_bits(cdc_le32(b));
        const int8_t *qs = (const int8_t *)(b + OFF(block_q8_K, qs));
        for (int j = 0; j < QK_K; j++)
            y[j] = d * qs[j];
    }
}

/* ---- ternary ---- */

static void dq_tq1_0(const void *src, float *y, uint64_t nb)
{
    static const uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
    enum { NQS = sizeof(((block_tq1_0 *)0)->qs), NQH = sizeof(((block_tq1_0 *)0)->qh) };
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_tq1_0);
        const float d = cdc_half(b + OFF(block_tq1_0, d));
        const uint8_t *qs = b + OFF(block_tq1_0, qs), *qh = b + OFF(block_tq1_0, qh);
        int j = 0;
        for (; j < NQS - NQS % 32; j += 32)
            for (int n = 0; n < 5; n++)
                for (int m = 0; m < 32; m++) {
                    const uint8_t q = (uint8_t)(qs[j + m] * pow3[n]);
                    const int16_t xi = (int16_t)(((uint16_t)q * 3) >> 8);
                    *y++ = (float)(xi - 1) * d;
                }
        for (; j < NQS; j += 16)
            for (int n = 0; n < 5; n++)
                for (int m = 0; m < 16; m++) {
                    const uint8_t q = (uint8_t)(qs[j + m] * pow3[n]);
                    const int16_t xi = (int16_t)(((uint16_t)q * 3) >> 8);
                    *y++ = (float)(xi - 1) * d;
                }
        for (int n = 0; n < 4; n++)
            for (int k = 0; k < NQH; k++) {
                const uint8_t q = (uint8_t)(qh[k] * pow3[n]);
                const int16_t xi = (int16_t)(((uint16_t)q * 3) >> 8);
                *y++ = (float)(xi - 1) * d;
            }
    }
}

static void dq_tq2_0(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_tq2_0);
        const float d = cdc_half(b + OFF(block_tq2_0, d));
        const uint8_t *qs = b + OFF(block_tq2_0, qs);
        for (int j = 0; j < QK_K / 4; j += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++) {
                    const int8_t q = (qs[j + m] >> (l * 2)) & 3;
                    *y++ = (float)(q - 1) * d;
                }
    }
}

/* ---- IQ types ---- */

static void dq_iq2_xxs(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_iq2_xxs);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_iq2_xxs, qs);
        for (int ib32 = 0; ib32 < QK_K / 32; ib32++) {
            const uint8_t *aux8 = qs + 8 * ib32;
            const uint32_t aux1 = cdc_le32(aux8 + 4);
            const float db = d * (0.5f + (aux1 >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint64_t grid = qt_iq2xxs_grid[aux8[l]];
                const uint8_t signs = qt_ksigns_iq2xs[(aux1 >> 7 * l) & 127];
                for (int j = 0; j < 8; j++)
                    y[j] = apply_sign(db * grid_byte(grid, j), signs, j);
            }
        }
    }
}

static void dq_iq2_xs(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_iq2_xs);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_iq2_xs, qs);
        const uint8_t *sc = b + OFF(block_iq2_xs, scales);
        for (int ib32 = 0; ib32 < QK_K / 32; ib32++) {
            float db[2];
            db[0] = d * (0.5f + (sc[ib32] & 0xf)) * 0.25f;
            db[1] = d * (0.5f + (sc[ib32] >> 4)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint16_t q = cdc_le16(qs + 2 * (4 * ib32 + l));
                const uint64_t grid = qt_iq2xs_grid[q & 511];
                const uint8_t signs = qt_ksigns_iq2xs[q >> 9];
                for (int j = 0; j < 8; j++)
                    y[j] = apply_sign(db[l / 2] * grid_byte(grid, j), signs, j);
            }
        }
    }
}

static void dq_iq2_s(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_iq2_s);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_iq2_s, qs);
        const uint8_t *qh = b + OFF(block_iq2_s, qh);
        const uint8_t *sc = b + OFF(block_iq2_s, scales);
        const uint8_t *signs = qs + QK_K / 8;
        for (int ib32 = 0; ib32 < QK_K / 32; ib32++, qs += 4, signs += 4) {
            float db[2];
            db[0] = d * (0.5f + (sc[ib32] & 0xf)) * 0.25f;
            db[1] = d * (0.5f + (sc[ib32] >> 4)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                const float dl = db[l / 2];
                const uint64_t grid = qt_iq2s_grid[qs[l] | ((qh[ib32] << (8 - 2 * l)) & 0x300)];
                for (int j = 0; j < 8; j++)
                    y[j] = apply_sign(dl * grid_byte(grid, j), signs[l], j);
            }
        }
    }
}

static void dq_iq3_xxs(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_iq3_xxs);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_iq3_xxs, qs);
        const uint8_t *scales_and_signs = qs + QK_K / 4;
        for (int ib32 = 0; ib32 < QK_K / 32; ib32++, qs += 8) {
            const uint32_t aux32 = cdc_le32(scales_and_signs + 4 * ib32);
            const float db = d * (0.5f + (aux32 >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t signs = qt_ksigns_iq2xs[(aux32 >> 7 * l) & 127];
                const uint32_t g1 = qt_iq3xxs_grid[qs[2 * l]], g2 = qt_iq3xxs_grid[qs[2 * l + 1]];
                for (int j = 0; j < 4; j++) {
                    y[j] = apply_sign(db * grid_byte(g1, j), signs, j);
                    y[j + 4] = apply_sign(db * grid_byte(g2, j), signs, j + 4);
                }
            }
        }
    }
}

static void dq_iq3_s(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_iq3_s);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_iq3_s, qs);
        const uint8_t *qh = b + OFF(block_iq3_s, qh);
        const uint8_t *signs = b + OFF(block_iq3_s, signs);
        const uint8_t *sc = b + OFF(block_iq3_s, scales);
        for (int ib32 = 0; ib32 < QK_K / 32; ib32 += 2, qh += 2) {
            const float db[2] = {d * (1 + 2 * (sc[ib32 / 2] & 0xf)), d * (1 + 2 * (sc[ib32 / 2] >> 4))};
            for (int h = 0; h < 2; h++, qs += 8, signs += 4) {
                for (int l = 0; l < 4; l++, y += 8) {
                    const uint32_t g1 = qt_iq3s_grid[qs[2 * l] | ((qh[h] << (8 - 2 * l)) & 256)];
                    const uint32_t g2 = qt_iq3s_grid[qs[2 * l + 1] | ((qh[h] << (7 - 2 * l)) & 256)];
                    for (int j = 0; j < 4; j++) {
                        y[j] = apply_sign(db[h] * grid_byte(g1, j), signs[l], j);
                        y[j + 4] = apply_sign(db[h] * grid_byte(g2, j), signs[l], j + 4);
                    }
                }
            }
        }
    }
}

static void dq_iq1_s(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_iq1_s);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_iq1_s, qs);
        const uint8_t *qhp = b + OFF(block_iq1_s, qh);
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4) {
            const uint16_t qh = cdc_le16(qhp + 2 * ib);
            const float dl = d * (2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint64_t grid = qt_iq1s_grid[qs[l] | (((qh >> 3 * l) & 7) << 8)];
                for (int j = 0; j < 8; j++)
                    y[j] = dl * (grid_sbyte(grid, j) + delta);
            }
        }
    }
}

/* iq1_m's f16 super-block scale, spread over the top nibbles of its 4 scale words. */
static inline uint16_t iq1m_scale_bits(const uint8_t *sc8)
{
    const uint16_t s0 = cdc_le16(sc8), s1 = cdc_le16(sc8 + 2), s2 = cdc_le16(sc8 + 4), s3 = cdc_le16(sc8 + 6);
    return (uint16_t)((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000));
}

static void dq_iq1_m(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_iq1_m);
        const uint8_t *sc8 = b + OFF(block_iq1_m, scales);
        const float d = cdc_f16_to_f32(iq1m_scale_bits(sc8));
        const uint8_t *qs = b + OFF(block_iq1_m, qs);
        const uint8_t *qh = b + OFF(block_iq1_m, qh);
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4, qh += 2) {
            const uint16_t sc = cdc_le16(sc8 + 2 * (ib / 2));
            const float dl1 = d * (2 * ((sc >> (6 * (ib % 2) + 0)) & 0x7) + 1);
            const float dl2 = d * (2 * ((sc >> (6 * (ib % 2) + 3)) & 0x7) + 1);
            const uint16_t idx[4] = {
                (uint16_t)(qs[0] | ((qh[0] << 8) & 0x700)), (uint16_t)(qs[1] | ((qh[0] << 4) & 0x700)),
                (uint16_t)(qs[2] | ((qh[1] << 8) & 0x700)), (uint16_t)(qs[3] | ((qh[1] << 4) & 0x700)),
            };
            const float delta[4] = {
                qh[0] & 0x08 ? -IQ1M_DELTA : IQ1M_DELTA, qh[0] & 0x80 ? -IQ1M_DELTA : IQ1M_DELTA,
                qh[1] & 0x08 ? -IQ1M_DELTA : IQ1M_DELTA, qh[1] & 0x80 ? -IQ1M_DELTA : IQ1M_DELTA,
            };
            for (int l = 0; l < 4; l++, y += 8) {
                const uint64_t grid = qt_iq1s_grid[idx[l]];
                const float dl = l < 2 ? dl1 : dl2;
                for (int j = 0; j < 8; j++)
                    y[j] = dl * (grid_sbyte(grid, j) + delta[l]);
            }
        }
    }
}

static void dq_iq4_nl(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++, y += QK4_NL) {
        const uint8_t *b = B(block_iq4_nl);
        const float d = cdc_half(b);
        const uint8_t *qs = b + OFF(block_iq4_nl, qs);
        for (int j = 0; j < QK4_NL / 2; j++) {
            y[j] = d * qt_kvalues_iq4nl[qs[j] & 0xf];
            y[j + QK4_NL / 2] = d * qt_kvalues_iq4nl[qs[j] >> 4];
        }
    }
}

static void dq_iq4_xs(const void *src, float *y, uint64_t nb)
{
    for (uint64_t i = 0; i < nb; i++) {
        const uint8_t *b = B(block_iq4_xs);
        const float d = cdc_half(b);
        const uint16_t scales_h = cdc_le16(b + OFF(block_iq4_xs, scales_h));
        const uint8_t *scales_l = b + OFF(block_iq4_xs, scales_l);
        const uint8_t *qs = b + OFF(block_iq4_xs, qs);
        for (int ib = 0; ib < QK_K / 32; ib++, y += 32, qs += 16) {
            const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
            const float dl = d * (ls - 32);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * qt_kvalues_iq4nl[qs[j] & 0xf];
                y[j + 16] = dl * qt_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

const cdc_dequant_fn cdc_dequant_scalar[GGTYPE_COUNT] = {
    [GGTYPE_F32] = dq_f32,         [GGTYPE_F16] = dq_f16,         [GGTYPE_BF16] = dq_bf16,
    [GGTYPE_F64] = dq_f64,         [GGTYPE_I8] = dq_i8,           [GGTYPE_I16] = dq_i16,
    [GGTYPE_I32] = dq_i32,         [GGTYPE_I64] = dq_i64,         [GGTYPE_Q4_0] = dq_q4_0,
    [GGTYPE_Q4_1] = dq_q4_1,       [GGTYPE_Q5_0] = dq_q5_0,       [GGTYPE_Q5_1] = dq_q5_1,
    [GGTYPE_Q8_0] = dq_q8_0,       [GGTYPE_Q8_1] = dq_q8_1,       [GGTYPE_Q2_K] = dq_q2_K,
    [GGTYPE_Q3_K] = dq_q3_K,       [GGTYPE_Q4_K] = dq_q4_K,       [GGTYPE_Q5_K] = dq_q5_K,
    [GGTYPE_Q6_K] = dq_q6_K,       [GGTYPE_Q8_K] = dq_q8_K,       [GGTYPE_IQ2_XXS] = dq_iq2_xxs,
    [GGTYPE_IQ2_XS] = dq_iq2_xs,   [GGTYPE_IQ2_S] = dq_iq2_s,     [GGTYPE_IQ3_XXS] = dq_iq3_xxs,
    [GGTYPE_IQ3_S] = dq_iq3_s,     [GGTYPE_IQ1_S] = dq_iq1_s,     [GGTYPE_IQ1_M] = dq_iq1_m,
    [GGTYPE_IQ4_NL] = dq_iq4_nl,   [GGTYPE_IQ4_XS] = dq_iq4_xs,   [GGTYPE_TQ1_0] = dq_tq1_0,
    [GGTYPE_TQ2_0] = dq_tq2_0,     [GGTYPE_MXFP4] = dq_mxfp4,     [GGTYPE_NVFP4] = dq_nvfp4,
    [GGTYPE_Q1_0] = dq_q1_0,       [GGTYPE_Q2_0] = dq_q2_0,
};
