/* Scalar reference tiles: one dot product per (row, token), written for
 * clarity. The SIMD paths are tested against these and against dequantized
 * weights. */
#include <math.h>

#include "kernels_internal.h"

const int8_t kern_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113};

/* MXFP4's values (E2M1 doubled, ggml's kvalues_mxfp4). */
const int8_t kern_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* Element j of an MXFP4 block's 32 values (low nibbles first, as Q4_0). */
static inline int mxfp4_q(const block_mxfp4 *x, int j)
{
    return kern_mxfp4_values[j < 16 ? x->qs[j] & 15 : x->qs[j - 16] >> 4];
}

/* MXFP4 in ggml's repacked gemv order (gemv_q4_b32_8x8_q8_0_lut_avx, what
 * it runs when 8 | rows): per block the exact 32-element sum, one fma with
 * fl(E8M0/2 * dx) into one accumulator from +0. The AVX2 tiles give the same bits. */
static float dot_mxfp4(const uint8_t *w, const kq8 *a, int64_t nb)
{
    const block_mxfp4 *x = (const block_mxfp4 *)w;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int sumi = 0;
        for (int j = 0; j < 32; j++)
            sumi += mxfp4_q(&x[b], j) * a[b].qs[j];
        const float sc = kern_e8m0_half(x[b].e) * a[b].d;
        acc = fmaf((float)sumi, sc, acc);
    }
    return acc;
}

/* MXFP4 not repacked (rows % 8 != 0): ggml_vec_dot_mxfp4_q8_0's AVX2 order,
 * blocks in pairs: lane l of the even (odd) blocks' accumulator gets
 * fma(fl(dx * E8M0/2), sum of elements 4l..4l+3, lane); the two added, the
 * 8 lanes summed (l, l+4), (0,2)(1,3), (0,1); an odd last block added as
 * fma(d, sum, total) (the contraction GCC makes of `sumf += d * sum`). */
static float dot_mxfp4_plain(const uint8_t *w, const kq8 *a, int64_t nb)
{
    const block_mxfp4 *x = (const block_mxfp4 *)w;
    float acc[2][8] = {{0}};
    int64_t ib = 0;
    for (; ib + 1 < nb; ib += 2)
        for (int h = 0; h < 2; h++) {
            const float sc = a[ib + h].d * kern_e8m0_half(x[ib + h].e);
            for (int l = 0; l < 8; l++) {
                int s = 0;
                for (int j = 4 * l; j < 4 * l + 4; j++)
                    s += mxfp4_q(&x[ib + h], j) * a[ib + h].qs[j];
                acc[h][l] = fmaf(sc, (float)s, acc[h][l]);
            }
        }
    float v[8], c[4];
    for (int l = 0; l < 8; l++)
        v[l] = acc[0][l] + acc[1][l];
    for (int l = 0; l < 4; l++)
        c[l] = v[l] + v[l + 4];
    float sumf = (c[0] + c[2]) + (c[1] + c[3]);
    for (; ib < nb; ib++) {
        int s = 0;
        for (int j = 0; j < 32; j++)
            s += mxfp4_q(&x[ib], j) * a[ib].qs[j];
        sumf = fmaf(a[ib].d * kern_e8m0_half(x[ib].e), (float)s, sumf);
    }
    return sumf;
}

static float dot_q4_0(const uint8_t *w, const kq8 *a, int64_t nb)
{
    const block_q4_0 *x = (const block_q4_0 *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            sumi += ((x[b].qs[j] & 15) - 8) * a[b].qs[j];
            sumi += ((x[b].qs[j] >> 4) - 8) * a[b].qs[j + 16];
        }
        acc += (float)sumi * kern_h2f(x[b].d) * a[b].d;
    }
    return acc;
}

static float dot_q4_1(const uint8_t *w, const kq8 *a, int64_t nb)
{
    const block_q4_1 *x = (const block_q4_1 *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            sumi += (x[b].qs[j] & 15) * a[b].qs[j];
            sumi += (x[b].qs[j] >> 4) * a[b].qs[j + 16];
        }
        acc += (float)sumi * kern_h2f(x[b].d) * a[b].d + kern_h2f(x[b].m) * a[b].d * (float)a[b].s;
    }
    return acc;
}

static float dot_q5_0(const uint8_t *w, const kq8 *a, int64_t nb)
{
    const block_q5_0 *x = (const block_q5_0 *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        uint32_t qh;
        memcpy(&qh, x[b].qh, 4);
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            int v0 = ((x[b].qs[j] & 15) | (int)(((qh >> j) & 1) << 4)) - 16;
            int v1 = ((x[b].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4)) - 16;
            sumi += v0 * a[b].qs[j] + v1 * a[b].qs[j + 16];
        }
        acc += (float)sumi * kern_h2f(x[b].d) * a[b].d;
    }
    return acc;
}

static float dot_q5_1(const uint8_t *w, const kq8 *a, int64_t nb)
{
    const block_q5_1 *x = (const block_q5_1 *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        uint32_t qh;
        memcpy(&qh, x[b].qh, 4);
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            int v0 = (x[b].qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            int v1 = (x[b].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            sumi += v0 * a[b].qs[j] + v1 * a[b].qs[j + 16];
        }
        acc += (float)sumi * kern_h2f(x[b].d) * a[b].d + kern_h2f(x[b].m) * a[b].d * (float)a[b].s;
    }
    return acc;
}

static float dot_q8_0(const uint8_t *w, const kq8 *a, int64_t nb)
{
    const block_q8_0 *x = (const block_q8_0 *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int sumi = 0;
        for (int j = 0; j < 32; j++)
            sumi += x[b].qs[j] * a[b].qs[j];
        acc += (float)sumi * kern_h2f(x[b].d) * a[b].d;
    }
    return acc;
}

static float dot_iq4_nl(const uint8_t *w, const kq8 *a, int64_t nb)
{
    const block_iq4_nl *x = (const block_iq4_nl *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            sumi += kern_iq4nl_values[x[b].qs[j] & 15] * a[b].qs[j];
            sumi += kern_iq4nl_values[x[b].qs[j] >> 4] * a[b].qs[j + 16];
        }
        acc += (float)sumi * kern_h2f(x[b].d) * a[b].d;
    }
    return acc;
}

static float dot_q2_K(const uint8_t *w, const kq8k *a, int64_t nb)
{
    const block_q2_K *x = (const block_q2_K *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int summs = 0, sumi = 0;
        for (int g = 0; g < 16; g++)
            summs += (x[b].scales[g] >> 4) * a[b].q.bsums[g];
        for (int n = 0; n < 2; n++) {
            const uint8_t *q = x[b].qs + 32 * n;
            for (int j = 0; j < 4; j++) {
                for (int h = 0; h < 2; h++) {
                    int g = n * 8 + j * 2 + h, s = 0;
                    for (int l = 0; l < 16; l++)
                        s += ((q[h * 16 + l] >> (2 * j)) & 3) * a[b].q.qs[n * 128 + j * 32 + h * 16 + l];
                    sumi += (x[b].scales[g] & 15) * s;
                }
            }
        }
        acc += a[b].q.d * (kern_h2f(x[b].d) * (float)sumi - kern_h2f(x[b].dmin) * (float)summs);
    }
    return acc;
}

static float dot_q3_K(const uint8_t *w, const kq8k *a, int64_t nb)
{
    const block_q3_K *x = (const block_q3_K *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int8_t sc[16];
        kern_q3k_scales(x[b].scales, sc);
        int sumi = 0;
        for (int n = 0; n < 2; n++) {
            const uint8_t *q = x[b].qs + 32 * n;
            for (int j = 0; j < 4; j++) {
                uint8_t m = (uint8_t)(1u << (4 * n + j));
                for (int h = 0; h < 2; h++) {
                    int s = 0;
                    for (int l = 0; l < 16; l++) {
                        int v = ((q[h * 16 + l] >> (2 * j)) & 3) - ((x[b].hmask[h * 16 + l] & m) ? 0 : 4);
                        s += v * a[b].q.qs[n * 128 + j * 32 + h * 16 + l];
                    }
                    sumi += sc[n * 8 + j * 2 + h] * s;
                }
            }
        }
        acc += kern_h2f(x[b].d) * a[b].q.d * (float)sumi;
    }
    return acc;
}

static float dot_q4_K(const uint8_t *w, const kq8k *a, int64_t nb)
{
    const block_q4_K *x = (const block_q4_K *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int sumi = 0, summ = 0;
        for (int j = 0; j < 4; j++) {
            uint8_t sc1, m1, sc2, m2;
            kern_scale_min_k4(2 * j, x[b].scales, &sc1, &m1);
            kern_scale_min_k4(2 * j + 1, x[b].scales, &sc2, &m2);
            const uint8_t *q = x[b].qs + 32 * j;
            const int8_t *y = a[b].q.qs + 64 * j;
            int s1 = 0, s2 = 0;
            for (int l = 0; l < 32; l++) {
                s1 += (q[l] & 15) * y[l];
                s2 += (q[l] >> 4) * y[l + 32];
            }
            sumi += sc1 * s1 + sc2 * s2;
            summ += m1 * (a[b].q.bsums[4 * j] + a[b].q.bsums[4 * j + 1]) +
                    m2 * (a[b].q.bsums[4 * j + 2] + a[b].q.bsums[4 * j + 3]);
        }
        acc += a[b].q.d * (kern_h2f(x[b].d) * (float)sumi - kern_h2f(x[b].dmin) * (float)summ);
    }
    return acc;
}

static float dot_q5_K(const uint8_t *w, const kq8k *a, int64_t nb)
{
    const block_q5_K *x = (const block_q5_K *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int sumi = 0, summ = 0;
        for (int j = 0; j < 4; j++) {
            uint8_t sc1, m1, sc2, m2;
            kern_scale_min_k4(2 * j, x[b].scales, &sc1, &m1);
            kern_scale_min_k4(2 * j + 1, x[b].scales, &sc2, &m2);
            const uint8_t *q = x[b].qs + 32 * j;
            const int8_t *y = a[b].q.qs + 64 * j;
            uint8_t u1 = (uint8_t)(1u << (2 * j)), u2 = (uint8_t)(2u << (2 * j));
            int s1 = 0, s2 = 0;
            for (int l = 0; l < 32; l++) {
                s1 += ((q[l] & 15) + ((x[b].qh[l] & u1) ? 16 : 0)) * y[l];
                s2 += ((q[l] >> 4) + ((x[b].qh[l] & u2) ? 16 : 0)) * y[l + 32];
            }
            sumi += sc1 * s1 + sc2 * s2;
            summ += m1 * (a[b].q.bsums[4 * j] + a[b].q.bsums[4 * j + 1]) +
                    m2 * (a[b].q.bsums[4 * j + 2] + a[b].q.bsums[4 * j + 3]);
        }
        acc += a[b].q.d * (kern_h2f(x[b].d) * (float)sumi - kern_h2f(x[b].dmin) * (float)summ);
    }
    return acc;
}

static float dot_q6_K(const uint8_t *w, const kq8k *a, int64_t nb)
{
    const block_q6_K *x = (const block_q6_K *)w;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int sumi = 0;
        for (int n = 0; n < 2; n++) {
            const uint8_t *ql = x[b].ql + 64 * n, *qh = x[b].qh + 32 * n;
            const int8_t *sc = x[b].scales + 8 * n, *y = a[b].q.qs + 128 * n;
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                sumi += sc[is] * q1 * y[l] + sc[is + 2] * q2 * y[l + 32] +
                        sc[is + 4] * q3 * y[l + 64] + sc[is + 6] * q4 * y[l + 96];
            }
        }
        acc += kern_h2f(x[b].d) * a[b].q.d * (float)sumi;
    }
    return acc;
}

static float dot_f32(const uint8_t *w, const float *a, int64_t n)
{
    const float *x = (const float *)w;
    float acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += x[i] * a[i];
    return acc;
}

static float dot_f16(const uint8_t *w, const float *a, int64_t n)
{
    const uint16_t *x = (const uint16_t *)w;
    float acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += kern_h2f(x[i]) * a[i];
    return acc;
}

static float dot_bf16(const uint8_t *w, const float *a, int64_t n)
{
    const uint16_t *x = (const uint16_t *)w;
    float acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += kern_bf2f(x[i]) * a[i];
    return acc;
}

#define SCALAR_TILE(name, act_t)                                                            \
    static void tile_##name(const uint8_t *w, size_t row_bytes, int nr, const uint8_t *act,  \
                            size_t act_stride, int nt, int64_t nb, float *y,                 \
                            int64_t y_stride)                                                \
    {                                                                                        \
        for (int t = 0; t < nt; t++)                                                         \
            for (int r = 0; r < nr; r++)                                                     \
                y[t * y_stride + r] = dot_##name(w + (size_t)r * row_bytes,                  \
                                                 (const act_t *)(act + (size_t)t * act_stride), \
                                                 nb);                                        \
    }

SCALAR_TILE(q4_0, kq8)
SCALAR_TILE(q4_1, kq8)
SCALAR_TILE(q5_0, kq8)
SCALAR_TILE(q5_1, kq8)
SCALAR_TILE(q8_0, kq8)
SCALAR_TILE(iq4_nl, kq8)
SCALAR_TILE(mxfp4, kq8)
SCALAR_TILE(mxfp4_plain, kq8)
SCALAR_TILE(q2_K, kq8k)
SCALAR_TILE(q3_K, kq8k)
SCALAR_TILE(q4_K, kq8k)
SCALAR_TILE(q5_K, kq8k)
SCALAR_TILE(q6_K, kq8k)
SCALAR_TILE(f32, float)
SCALAR_TILE(f16, float)
SCALAR_TILE(bf16, float)

void kern_tile_mxfp4_plain(const uint8_t *w, size_t row_bytes, int nr, const uint8_t *act, size_t act_stride,
                           int nt, int64_t nb, float *y, int64_t y_stride)
{
    tile_mxfp4_plain(w, row_bytes, nr, act, act_stride, nt, nb, y, y_stride);
}

void kern_fill_scalar(kern_tile_fn tab[GGTYPE_COUNT])
{
    tab[GGTYPE_Q4_0] = tile_q4_0;
    tab[GGTYPE_Q4_1] = tile_q4_1;
    tab[GGTYPE_Q5_0] = tile_q5_0;
    tab[GGTYPE_Q5_1] = tile_q5_1;
    tab[GGTYPE_Q8_0] = tile_q8_0;
    tab[GGTYPE_IQ4_NL] = tile_iq4_nl;
    tab[GGTYPE_MXFP4] = tile_mxfp4;
    tab[GGTYPE_Q2_K] = tile_q2_K;
    tab[GGTYPE_Q3_K] = tile_q3_K;
    tab[GGTYPE_Q4_K] = tile_q4_K;
    tab[GGTYPE_Q5_K] = tile_q5_K;
    tab[GGTYPE_Q6_K] = tile_q6_K;
    tab[GGTYPE_F32] = tile_f32;
    tab[GGTYPE_F16] = tile_f16;
    tab[GGTYPE_BF16] = tile_bf16;
}
