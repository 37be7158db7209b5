/* kernels_gemm_avx2: the batched products of the AVX2 paths (kern_gemm_fn),
 * bit-identical to the exact batch tiles of kernels_exact.inc (ggml's float
 * order, docs/kernels.md), for Q4_0 (repacked or plain), Q8_0, Q4_K
 * (repacked; its mat-vec order from t_gemv on), Q6_K, and F32/F16 in the
 * haswell build's tinyBLAS order (at the end of the file).
 *
 * A chunk of KERN_GEMM_ROWS = 16 rows is unpacked once into the work buffer:
 * per 32 quants, two groups of 8 rows, and per group eight ymm of
 * "4 consecutive quants of 8 rows" (an 8x8 transpose of 32-bit words), plus
 * the scales of the 16 rows side by side. A token then costs, per 32 quants
 * and 8 rows, eight vpmaddubsw with the 4 activation bytes broadcast, and
 * the float work of 8 rows is one vector: the integer sums are exact in any
 * order, and every float operation of the tiles (cvt, fl(dw * dx), fma,
 * lane sums) is done lane-wise per row in the same order. */
#include <string.h>

#include "kernels_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define KT __attribute__((target("avx2,fma,f16c")))
#define K2 static KT inline __attribute__((always_inline))

K2 float h2f(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

K2 __m256i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* 16 packed nibbles -> 32 bytes: low nibbles (elements 0..15), then high. */
K2 __m256i nibbles(const uint8_t *qs)
{
    __m128i q = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
}

/* v[r] = 32 quants of row r; out + 32 g = quants 4g..4g+3 of rows 0..7. */
K2 void put8(uint8_t *out, const __m256i v[8])
{
    __m256i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int g = 0; g < 4; g++) {
        _mm256_storeu_si256((__m256i *)(out + 32 * g), _mm256_permute2x128_si256(u[g], u[4 + g], 0x20));
        _mm256_storeu_si256((__m256i *)(out + 32 * (g + 4)), _mm256_permute2x128_si256(u[g], u[4 + g], 0x31));
    }
}

/* The hsum8 of the tiles on 8 rows at once: lane sums (l, l+4), (0,2)(1,3), (0,1). */
K2 __m256 sum8(const __m256 a[8])
{
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                         _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
}

K2 void store8(float *y, __m256 v, int nr)
{
    if (nr >= 8) {
        _mm256_storeu_ps(y, v);
        return;
    }
    float o[8];
    _mm256_storeu_ps(o, v);
    for (int r = 0; r < nr; r++)
        y[r] = o[r];
}

/* ---- 32-element types: Q4_0, Q8_0 ----
 * Buffer: R [nb][2][8][32] quants (Q4_0: nibbles; Q8_0: the signed
 * bytes), dw [nb][16] the f16 scales as floats. */

typedef struct {
    uint8_t *R;
    float *dw;
    uint8_t *A; /* Q8_0: |R| in the same layout (vpmaddubsw's unsigned operand), or NULL */
} g32_buf;

enum { G_Q4_0, G_Q8_0, G_MXFP4 };

/* Packs for calls of fewer tokens prefetch the weight rows they read. */
#define G_PF_TOK 64

/* MXFP4's 16 values (kvalues_mxfp4) plus 12: unsigned bytes 0..24. */
K2 __m256i mxfp4_u(__m256i nib)
{
    const __m256i lut = _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, 12, 13, 14, 15,
                                         16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
    return _mm256_shuffle_epi8(lut, nib);
}

K2 void g32_pack(const uint8_t *w, size_t rbytes, int nr, int64_t nb, const g32_buf *gb, const int kind,
                 const bool pf)
{
    const size_t bsz = kind == G_Q4_0 ? 18 : kind == G_MXFP4 ? 17 : 34;
    const uint8_t *rp[16];
    for (int r = 0; r < 16; r++) /* missing rows repeat the last one; their lanes are not stored */
        rp[r] = w + (size_t)(r < nr ? r : nr - 1) * rbytes;
    const int ng = nr > 8 ? 2 : 1;
    for (int64_t b = 0; b < nb; b++) {
        for (int h = 0; h < ng; h++) {
            __m256i v[8];
            for (int r = 0; r < 8; r++) {
                const uint8_t *blk = rp[8 * h + r] + (size_t)b * bsz;
                /* pf (few tokens, as an expert gets in a MoE prompt: the
                 * weights' read matters): 16 row streams of small strides,
                 * which the hardware prefetcher lags behind (gpt-oss-shaped
                 * prompt 14 -> 19-21 tok/s); a dense 512-token batch
                 * measured slower with it */
                if (pf)
                    _mm_prefetch((const char *)blk + 8 * bsz, _MM_HINT_T0);
                if (kind == G_MXFP4) {
                    gb->dw[b * 16 + 8 * h + r] = kern_e8m0_half(blk[0]);
                    v[r] = mxfp4_u(nibbles(blk + 1));
                    continue;
                }
                gb->dw[b * 16 + 8 * h + r] = h2f(blk);
                v[r] = kind == G_Q4_0 ? nibbles(blk + 2) : _mm256_loadu_si256((const __m256i *)(blk + 2));
            }
            put8(gb->R + b * 512 + 256 * h, v);
            if (gb->A) {
                const uint8_t *src = gb->R + b * 512 + 256 * h;
                for (int g = 0; g < 8; g++) {
                    __m256i q = _mm256_load_si256((const __m256i *)(src + 32 * g));
                    _mm256_store_si256((__m256i *)(gb->A + b * 512 + 256 * h + 32 * g), _mm256_sign_epi8(q, q));
                }
            }
        }
    }
}

/* Q4_0 repacked (vec_q4_0_r) and MXFP4 repacked (ggml's
 * gemv_q4_b32_8x8_q8_0_lut for block_mxfp4x8, its gemm alike): per block the
 * exact 32-element sum, one fma with fl(dw * dx) (MXFP4: dw =
 * kern_e8m0_half(e)), from +0. NT tokens x ng groups of 8 rows. The weights
 * are held unsigned (Q4_0: the nibbles, 8 x the activation sum taken out;
 * MXFP4: the values plus 12, 12 x the sum taken out); two-product sums add
 * in int16 before vpmaddwd, all eight groups for Q4_0 (below 2^15 with
 * nibbles), four at a time for MXFP4 (a group's sums reach 6096). */
K2 void g_bsum(const g32_buf *gb, int64_t nb, const uint8_t *act, size_t as, float *y, int64_t ys, int nr,
               const int NT, const int ng, const int kind)
{
    const int G16 = kind == G_MXFP4 ? 4 : 8, off = kind == G_MXFP4 ? 12 : 8;
    __m256 acc[3][2];
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < ng; h++)
            acc[t][h] = _mm256_setzero_ps();
    const __m256i one = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *R = gb->R + b * 512;
        __m256i s[3][2];
        for (int t = 0; t < NT; t++)
            for (int h = 0; h < ng; h++)
                s[t][h] = _mm256_setzero_si256();
        for (int g0 = 0; g0 < 8; g0 += G16) {
            __m256i s16[3][2];
            for (int t = 0; t < NT; t++)
                for (int h = 0; h < ng; h++)
                    s16[t][h] = _mm256_setzero_si256();
            for (int g = g0; g < g0 + G16; g++) {
                __m256i w0 = _mm256_loadu_si256((const __m256i *)(R + 32 * g));
                __m256i w1 = ng == 2 ? _mm256_loadu_si256((const __m256i *)(R + 256 + 32 * g)) : w0;
                for (int t = 0; t < NT; t++) {
                    const kq8 *A = (const kq8 *)(act + (size_t)t * as) + b;
                    __m256i xb = bcast4(A->qs + 4 * g);
                    s16[t][0] = _mm256_add_epi16(s16[t][0], _mm256_maddubs_epi16(w0, xb));
                    if (ng == 2)
                        s16[t][1] = _mm256_add_epi16(s16[t][1], _mm256_maddubs_epi16(w1, xb));
                }
            }
            for (int t = 0; t < NT; t++)
                for (int h = 0; h < ng; h++)
                    s[t][h] = _mm256_add_epi32(s[t][h], _mm256_madd_epi16(s16[t][h], one));
        }
        for (int t = 0; t < NT; t++) {
            const kq8 *A = (const kq8 *)(act + (size_t)t * as) + b;
            const __m256i o = _mm256_set1_epi32(off * A->s);
            const __m256 dx = _mm256_set1_ps(A->d);
            for (int h = 0; h < ng; h++) {
                __m256i p = _mm256_sub_epi32(s[t][h], o);
                __m256 d = _mm256_mul_ps(_mm256_loadu_ps(gb->dw + b * 16 + 8 * h), dx);
                acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, acc[t][h]);
            }
        }
    }
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < ng; h++)
            store8(y + t * ys + 8 * h, acc[t][h], nr - 8 * h);
}

/* g_bsum over every token: Q4_0 three at a time, MXFP4 two (its int16
 * partial sums take 2 x 2 x 3 accumulators). */
K2 void g_bsum_all(const g32_buf *gb, int64_t nb, const uint8_t *act, size_t as, int64_t nt, float *y, int64_t ys,
                   int nr, const int ng, const int kind)
{
    const int NT = kind == G_MXFP4 ? 2 : 3;
    int64_t t = 0;
    for (; t + NT <= nt; t += NT)
        g_bsum(gb, nb, act + (size_t)t * as, as, y + t * ys, ys, nr, NT, ng, kind);
    for (; t < nt; t++)
        g_bsum(gb, nb, act + (size_t)t * as, as, y + t * ys, ys, nr, 1, ng, kind);
}

/* Q8_0 (vec_dot_q8_0 / tinyBLAS) and Q4_0 not repacked (vec_q4_0_plain):
 * per block 8 lanes of 4-element sums (here: lane g of a row = vector g),
 * fma with fl(dw * dx), then the 8-lane sum. The lanes are independent
 * chains, so a pass takes NG of them (from g0) for NT tokens and 8 rows
 * (group h) over blocks b0..b1; the accumulators live in accp (16 per token)
 * between passes, so that a span of blocks stays in L1 while the tokens walk
 * over it. */
K2 void g_lanes8(const g32_buf *gb, int64_t b0, int64_t b1, const uint8_t *act, size_t as, __m256 *accp,
                 int h, int g0, const int NG, const int NT, const int kind)
{
    __m256 acc[4][8];
    for (int t = 0; t < NT; t++)
        for (int g = 0; g < NG; g++)
            acc[t][g] = b0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps((const float *)(accp + t * 16 + 8 * h + g0 + g));
    const __m256i one = _mm256_set1_epi16(1);
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t *R = gb->R + b * 512 + 256 * h;
        const __m256 dw = _mm256_loadu_ps(gb->dw + b * 16 + 8 * h);
        __m256 d[4];
        for (int t = 0; t < NT; t++)
            d[t] = _mm256_mul_ps(dw, _mm256_set1_ps(((const kq8 *)(act + (size_t)t * as) + b)->d));
        for (int g = 0; g < NG; g++) {
            __m256i w = _mm256_load_si256((const __m256i *)(R + 32 * (g0 + g))), sg = w;
            if (kind == G_Q8_0)
                w = _mm256_sign_epi8(w, w); /* -128 -> 0x80 = 128 unsigned */
            for (int t = 0; t < NT; t++) {
                const int8_t *x = ((const kq8 *)(act + (size_t)t * as) + b)->qs + 4 * (g0 + g);
                __m256i xb = bcast4(x), p;
                if (kind == G_Q8_0)
                    p = _mm256_madd_epi16(_mm256_maddubs_epi16(w, _mm256_sign_epi8(xb, sg)), one);
                else
                    p = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w, xb), one),
                                         _mm256_set1_epi32(8 * (x[0] + x[1] + x[2] + x[3])));
                acc[t][g] = _mm256_fmadd_ps(d[t], _mm256_cvtepi32_ps(p), acc[t][g]);
            }
        }
    }
    for (int t = 0; t < NT; t++)
        for (int g = 0; g < NG; g++)
            _mm256_store_ps((float *)(accp + t * 16 + 8 * h + g0 + g), acc[t][g]);
}

/* Tokens in slices of G_TSLICE, blocks in spans of G_KSPAN (16 rows of
 * Q8_0: 16 KiB); the accumulators of a slice take G_TSLICE x 16 x 32 bytes. */
#define G_TSLICE 64
#define G_KSPAN 16

/* g_lanes8 for Q8_0, 4 tokens and lanes g0, g0 + 1 of group h, with the
 * work that does not depend on the lane done once per span: |w| comes
 * packed (gb->A) and fl(dw * dx) from D ([block - b0][group][token], filled
 * by g_q8_scales). The same operations per lane as g_lanes8, in the same
 * order. */
K2 void g_q8_pass(const g32_buf *gb, const __m256 *D, int64_t b0, int64_t b1, const uint8_t *act, size_t as,
                  __m256 *accp, int h, int g0)
{
    __m256 acc[4][2];
    for (int t = 0; t < 4; t++)
        for (int g = 0; g < 2; g++)
            acc[t][g] = b0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps((const float *)(accp + t * 16 + 8 * h + g0 + g));
    const __m256i one = _mm256_set1_epi16(1);
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t *R = gb->R + b * 512 + 256 * h + 32 * g0, *A = gb->A + b * 512 + 256 * h + 32 * g0;
        const __m256 *d = D + ((b - b0) * 2 + h) * 4;
        for (int g = 0; g < 2; g++) {
            const __m256i w = _mm256_load_si256((const __m256i *)(A + 32 * g));
            const __m256i sg = _mm256_load_si256((const __m256i *)(R + 32 * g));
            for (int t = 0; t < 4; t++) {
                const int8_t *x = ((const kq8 *)(act + (size_t)t * as) + b)->qs + 4 * (g0 + g);
                __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(w, _mm256_sign_epi8(bcast4(x), sg)), one);
                acc[t][g] = _mm256_fmadd_ps(d[t], _mm256_cvtepi32_ps(p), acc[t][g]);
            }
        }
    }
    for (int t = 0; t < 4; t++)
        for (int g = 0; g < 2; g++)
            _mm256_store_ps((float *)(accp + t * 16 + 8 * h + g0 + g), acc[t][g]);
}

/* D[(b - b0) * 2 + h][t] = fl(dw * dx) of block b, group h, token t (4 tokens). */
K2 void g_q8_scales(const g32_buf *gb, int64_t b0, int64_t b1, const uint8_t *act, size_t as, int ng, __m256 *D)
{
    for (int64_t b = b0; b < b1; b++)
        for (int h = 0; h < ng; h++) {
            const __m256 dw = _mm256_loadu_ps(gb->dw + b * 16 + 8 * h);
            for (int t = 0; t < 4; t++)
                D[((b - b0) * 2 + h) * 4 + t] =
                    _mm256_mul_ps(dw, _mm256_set1_ps(((const kq8 *)(act + (size_t)t * as) + b)->d));
        }
}

K2 void g_lanes8_all(const g32_buf *gb, int64_t nb, const uint8_t *act, size_t as, int64_t nt, float *y,
                     int64_t ys, int nr, __m256 *accb, __m256 *D, const int kind)
{
    const int ng = nr > 8 ? 2 : 1;
    for (int64_t t0 = 0; t0 < nt; t0 += G_TSLICE) {
        int64_t t1 = t0 + G_TSLICE < nt ? t0 + G_TSLICE : nt;
        for (int64_t b0 = 0; b0 < nb; b0 += G_KSPAN) {
            int64_t b1 = b0 + G_KSPAN < nb ? b0 + G_KSPAN : nb;
            int64_t t = t0;
            for (; t + 4 <= t1; t += 4) {
                if (kind == G_Q8_0) {
                    g_q8_scales(gb, b0, b1, act + (size_t)t * as, as, ng, D);
                    for (int h = 0; h < ng; h++)
                        for (int g0 = 0; g0 < 8; g0 += 2)
                            g_q8_pass(gb, D, b0, b1, act + (size_t)t * as, as, accb + (t - t0) * 16, h, g0);
                    continue;
                }
                for (int h = 0; h < ng; h++)
                    for (int g0 = 0; g0 < 8; g0 += 2)
                        g_lanes8(gb, b0, b1, act + (size_t)t * as, as, accb + (t - t0) * 16, h, g0, 2, 4, kind);
            }
            for (; t < t1; t++)
                for (int h = 0; h < ng; h++)
                    g_lanes8(gb, b0, b1, act + (size_t)t * as, as, accb + (t - t0) * 16, h, 0, 8, 1, kind);
        }
        for (int64_t t = t0; t < t1; t++)
            for (int h = 0; h < ng; h++)
                store8(y + t * ys + 8 * h, sum8(accb + ((t - t0) * 2 + h) * 8), nr - 8 * h);
    }
}

K2 void g32_any(const uint8_t *w, size_t rbytes, int nr, const uint8_t *act, size_t as, int64_t nt,
                int64_t n_cols, float *y, int64_t ys, void *tmp, int plain, const int kind)
{
    const int64_t nb = n_cols / 32;
    uint8_t *base = (uint8_t *)(((uintptr_t)tmp + 63) & ~(uintptr_t)63);
    /* R, dw, the accumulators (32 KiB), then for Q8_0 |R| and the scales of a span */
    g32_buf gb = {base, (float *)(void *)(base + nb * 512), NULL};
    __m256 *accb = (__m256 *)(void *)(base + nb * 576 + 64);
    __m256 *D = NULL;
    if (kind == G_Q8_0) {
        gb.A = base + nb * 576 + 64 + 32768;
        D = (__m256 *)(void *)(gb.A + nb * 512);
    }
    g32_pack(w, rbytes, nr, nb, &gb, kind, nt < G_PF_TOK);
    const int ng = nr > 8 ? 2 : 1;
    if (kind == G_MXFP4 || (kind == G_Q4_0 && !plain)) {
        if (kind == G_MXFP4 && ng == 2)
            g_bsum_all(&gb, nb, act, as, nt, y, ys, nr, 2, G_MXFP4);
        else if (kind == G_MXFP4)
            g_bsum_all(&gb, nb, act, as, nt, y, ys, nr, 1, G_MXFP4);
        else if (ng == 2)
            g_bsum_all(&gb, nb, act, as, nt, y, ys, nr, 2, G_Q4_0);
        else
            g_bsum_all(&gb, nb, act, as, nt, y, ys, nr, 1, G_Q4_0);
        return;
    }
    if (kind == G_Q8_0)
        g_lanes8_all(&gb, nb, act, as, nt, y, ys, nr, accb, D, G_Q8_0);
    else
        g_lanes8_all(&gb, nb, act, as, nt, y, ys, nr, accb, NULL, G_Q4_0);
}

static KT void gemm_q4_0(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nt,
                         int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv, int plain)
{
    (void)t_gemv; /* Q4_0: ggml's gemm and gemv sum alike */
    g32_any(w, rb, nr, act, as, nt, n_cols, y, ys, tmp, plain, G_Q4_0);
}

static KT void gemm_q8_0(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nt,
                         int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv, int plain)
{
    (void)t_gemv, (void)plain;
    g32_any(w, rb, nr, act, as, nt, n_cols, y, ys, tmp, 0, G_Q8_0);
}

static KT void gemm_mxfp4(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nt,
                          int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv, int plain)
{
    (void)t_gemv, (void)plain; /* repacked rows only (kern_vec_gemm) */
    g32_any(w, rb, nr, act, as, nt, n_cols, y, ys, tmp, 0, G_MXFP4);
}

/* ---- K-quants: Q4_K, Q6_K ----
 * Per super-block (256 quants) of 16 rows: R [8 sub-blocks][2][8][32]
 * quants (Q4_K: nibbles; Q6_K: the 6-bit values), then per row int32
 * words holding two int16 factors for vpmaddwd: Q4_K the scale twice per
 * sub-block (SC [8][16]) and the two mins of a pair (MN [4][16]); Q6_K the
 * scale of each 16-quant half twice (SC [8][2][16]) and 32 x the scales of
 * the 16-groups 2L, 2L+1 (MN [8][16], the -32 offset of lane L); then the
 * float d (and Q4_K's dmin) of the 16 rows. */

typedef struct {
    uint8_t *R;
    int32_t *SC, *MN;
    float *D, *DM;
} gk_buf;

enum { G_Q4_K, G_Q6_K };

K2 int32_t pair16(int a, int b)
{
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | (uint32_t)(uint16_t)(int16_t)b << 16);
}

K2 void gk_layout(uint8_t *base, int64_t nsb, gk_buf *gb, const int kind)
{
    gb->R = base;
    gb->SC = (int32_t *)(void *)(base + nsb * 4096);
    const int nsc = kind == G_Q4_K ? 8 * 16 : 16 * 16, nmn = kind == G_Q4_K ? 4 * 16 : 8 * 16;
    gb->MN = gb->SC + nsb * nsc;
    gb->D = (float *)(void *)(gb->MN + nsb * nmn);
    gb->DM = gb->D + nsb * 16;
}

K2 void gk_pack(const uint8_t *w, size_t rbytes, int nr, int64_t nsb, const gk_buf *gb, const int kind,
                const bool pf)
{
    const uint8_t *rp[16];
    for (int r = 0; r < 16; r++)
        rp[r] = w + (size_t)(r < nr ? r : nr - 1) * rbytes;
    const int ng = nr > 8 ? 2 : 1;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    for (int64_t B = 0; B < nsb; B++) {
        uint8_t *R = gb->R + B * 4096;
        for (int h = 0; h < ng; h++) {
            __m256i v[8][8]; /* [sub-block][row] */
            for (int r = 0; r < 8; r++) {
                const int row = 8 * h + r;
                if (pf) /* as g32_pack */
                    for (int l = 0; l < 3; l++)
                        _mm_prefetch((const char *)rp[row] + (size_t)(B + 2) * (rbytes / (size_t)nsb) + 64 * (size_t)l, _MM_HINT_T0);
                if (kind == G_Q4_K) {
                    const block_q4_K *x = (const block_q4_K *)rp[row] + B;
                    uint8_t sc[8], mn[8];
                    for (int j = 0; j < 8; j++)
                        kern_scale_min_k4(j, x->scales, &sc[j], &mn[j]);
                    for (int j = 0; j < 8; j++)
                        gb->SC[B * 128 + 16 * j + row] = pair16(sc[j], sc[j]);
                    for (int j = 0; j < 4; j++)
                        gb->MN[B * 64 + 16 * j + row] = pair16(mn[2 * j], mn[2 * j + 1]);
                    gb->D[B * 16 + row] = h2f((const uint8_t *)&x->d);
                    gb->DM[B * 16 + row] = h2f((const uint8_t *)&x->dmin);
                    for (int j = 0; j < 4; j++) {
                        __m256i q = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * j));
                        v[2 * j][r] = _mm256_and_si256(q, m4);
                        v[2 * j + 1][r] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                    }
                } else {
                    const block_q6_K *x = (const block_q6_K *)rp[row] + B;
                    for (int c = 0; c < 8; c++) {
                        gb->SC[B * 256 + 32 * c + row] = pair16(x->scales[2 * c], x->scales[2 * c]);
                        gb->SC[B * 256 + 32 * c + 16 + row] = pair16(x->scales[2 * c + 1], x->scales[2 * c + 1]);
                        gb->MN[B * 128 + 16 * c + row] = pair16(32 * x->scales[2 * c], 32 * x->scales[2 * c + 1]);
                    }
                    gb->D[B * 16 + row] = h2f((const uint8_t *)&x->d);
                    for (int n = 0; n < 2; n++) {
                        __m256i ql0 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * n));
                        __m256i ql1 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * n + 32));
                        __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * n));
                        v[4 * n][r] = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                                                      _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
                        v[4 * n + 1][r] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                                          _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
                        v[4 * n + 2][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                                          _mm256_and_si256(qh, m30));
                        v[4 * n + 3][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                                          _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
                    }
                }
            }
            for (int s = 0; s < 8; s++)
                put8(R + 512 * s + 256 * h, v[s]);
        }
    }
}

/* Q4_K repacked (vec_q4_K_pairs): per pair of sub-blocks the scaled sum
 * and the min sum, one fma each with fl(d * dx) and fl(dmin * dx); with GV
 * (the tokens ggml computes as mat-vec, vec_q4_K) one fma each per
 * super-block. NT tokens, 8 rows (group h); the 8 two-product sums of a
 * sub-block stay below 2^15 and add in int16. */
K2 void g_q4_K(const gk_buf *gb, int64_t nsb, const uint8_t *act, size_t as, float *y, int64_t ys, int nr,
               int h, const int NT, const int GV)
{
    __m256 acc[3], accm[3];
    for (int t = 0; t < NT; t++)
        acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t B = 0; B < nsb; B++) {
        const uint8_t *R = gb->R + B * 4096 + 256 * h;
        const __m256 D = _mm256_loadu_ps(gb->D + B * 16 + 8 * h), Dm = _mm256_loadu_ps(gb->DM + B * 16 + 8 * h);
        __m256i S[3], M[3];
        for (int j = 0; j < 4; j++) {
            if (!GV || j == 0)
                for (int t = 0; t < NT; t++)
                    S[t] = M[t] = _mm256_setzero_si256();
            for (int hh = 0; hh < 2; hh++) {
                const int s = 2 * j + hh;
                __m256i i16[3];
                for (int t = 0; t < NT; t++)
                    i16[t] = _mm256_setzero_si256();
                for (int g = 0; g < 8; g++) {
                    __m256i w = _mm256_load_si256((const __m256i *)(R + 512 * s + 32 * g));
                    for (int t = 0; t < NT; t++) {
                        const kq8k *A = (const kq8k *)(act + (size_t)t * as) + B;
                        i16[t] = _mm256_add_epi16(i16[t], _mm256_maddubs_epi16(w, bcast4(A->q.qs + 32 * s + 4 * g)));
                    }
                }
                const __m256i sc = _mm256_loadu_si256((const __m256i *)(gb->SC + B * 128 + 16 * s + 8 * h));
                for (int t = 0; t < NT; t++)
                    S[t] = _mm256_add_epi32(S[t], _mm256_madd_epi16(i16[t], sc));
            }
            const __m256i mn = _mm256_loadu_si256((const __m256i *)(gb->MN + B * 64 + 16 * j + 8 * h));
            for (int t = 0; t < NT; t++) {
                const int16_t *bs = ((const kq8k *)(act + (size_t)t * as) + B)->q.bsums;
                __m256i bp = _mm256_set1_epi32(pair16(bs[4 * j] + bs[4 * j + 1], bs[4 * j + 2] + bs[4 * j + 3]));
                M[t] = _mm256_add_epi32(M[t], _mm256_madd_epi16(mn, bp));
            }
            if (!GV || j == 3)
                for (int t = 0; t < NT; t++) {
                    const __m256 dx = _mm256_set1_ps(((const kq8k *)(act + (size_t)t * as) + B)->q.d);
                    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[t]), _mm256_mul_ps(D, dx), acc[t]);
                    accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(M[t]), _mm256_mul_ps(Dm, dx), accm[t]);
                }
        }
    }
    for (int t = 0; t < NT; t++)
        store8(y + t * ys + 8 * h, _mm256_sub_ps(acc[t], accm[t]), nr - 8 * h);
}

/* Q6_K (vec_dot_q6_K_q8_K): per super-block 8 integer lanes (lane g of a
 * row = the quants 4g..4g+3 of every 32-quant chunk, each times its group's
 * scale, less the -32 offset of groups 2g, 2g+1), one fma with fl(dx * d)
 * per lane, the 8-lane sum at the end. The float work is once per
 * super-block, so the accumulators stay in accp (8 per token and row group)
 * and a super-block's quants serve all the tokens of a slice from L1. */
K2 void g_q6_K(const gk_buf *gb, int64_t B, const uint8_t *act, size_t as, __m256 *accp, int h, const int NT)
{
    const uint8_t *R = gb->R + B * 4096 + 256 * h;
    const __m256 D = _mm256_loadu_ps(gb->D + B * 16 + 8 * h);
    for (int g = 0; g < 8; g++) {
        __m256i I[4];
        for (int t = 0; t < NT; t++)
            I[t] = _mm256_setzero_si256();
        for (int c = 0; c < 8; c++) {
            __m256i w = _mm256_load_si256((const __m256i *)(R + 512 * c + 32 * g));
            __m256i sc = _mm256_loadu_si256((const __m256i *)(gb->SC + B * 256 + 32 * c + 16 * (g >= 4) + 8 * h));
            for (int t = 0; t < NT; t++) {
                const kq8k *A = (const kq8k *)(act + (size_t)t * as) + B;
                __m256i p = _mm256_maddubs_epi16(w, bcast4(A->q.qs + 32 * c + 4 * g));
                I[t] = _mm256_add_epi32(I[t], _mm256_madd_epi16(p, sc));
            }
        }
        const __m256i off = _mm256_loadu_si256((const __m256i *)(gb->MN + B * 128 + 16 * g + 8 * h));
        for (int t = 0; t < NT; t++) {
            const kq8k *A = (const kq8k *)(act + (size_t)t * as) + B;
            __m256i bp = _mm256_set1_epi32(pair16(A->q.bsums[2 * g], A->q.bsums[2 * g + 1]));
            __m256i v = _mm256_sub_epi32(I[t], _mm256_madd_epi16(off, bp));
            __m256 d = _mm256_mul_ps(_mm256_set1_ps(A->q.d), D);
            float *ap = (float *)(accp + t * 16 + 8 * h + g);
            __m256 a0 = B == 0 ? _mm256_setzero_ps() : _mm256_load_ps(ap);
            _mm256_store_ps(ap, _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(v), a0));
        }
    }
}

K2 void gk_any(const uint8_t *w, size_t rbytes, int nr, const uint8_t *act, size_t as, int64_t nt,
               int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv, const int kind)
{
    const int64_t nsb = n_cols / QK_K;
    uint8_t *base = (uint8_t *)(((uintptr_t)tmp + 63) & ~(uintptr_t)63);
    gk_buf gb;
    gk_layout(base, nsb, &gb, kind);
    gk_pack(w, rbytes, nr, nsb, &gb, kind, nt < G_PF_TOK);
    const int ng = nr > 8 ? 2 : 1;
    if (kind == G_Q4_K) {
        for (int h = 0; h < ng; h++) {
            int64_t t = 0;
#define AT(t) act + (size_t)(t) * as, as, y + (t) * ys, ys, nr, h
            for (; t + 2 <= nt && t + 2 <= t_gemv; t += 2)
                g_q4_K(&gb, nsb, AT(t), 2, 0);
            for (; t < nt && t < t_gemv; t++)
                g_q4_K(&gb, nsb, AT(t), 1, 0);
            for (; t < nt; t++)
                g_q4_K(&gb, nsb, AT(t), 1, 1);
#undef AT
        }
        return;
    }
    __m256 *accb = (__m256 *)(void *)(base + nsb * 5696 + 64);
    for (int64_t t0 = 0; t0 < nt; t0 += G_TSLICE) {
        int64_t t1 = t0 + G_TSLICE < nt ? t0 + G_TSLICE : nt;
        for (int64_t B = 0; B < nsb; B++)
            for (int h = 0; h < ng; h++) {
                int64_t t = t0;
                for (; t + 4 <= t1; t += 4)
                    g_q6_K(&gb, B, act + (size_t)t * as, as, accb + (t - t0) * 16, h, 4);
                for (; t < t1; t++)
                    g_q6_K(&gb, B, act + (size_t)t * as, as, accb + (t - t0) * 16, h, 1);
            }
        for (int64_t t = t0; t < t1; t++)
            for (int h = 0; h < ng; h++)
                store8(y + t * ys + 8 * h, sum8(accb + (t - t0) * 16 + 8 * h), nr - 8 * h);
    }
}

static KT void gemm_q4_K(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nt,
                         int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv, int plain)
{
    (void)plain; /* not repacked in ggml: kern_matmul keeps the tiles */
    gk_any(w, rb, nr, act, as, nt, n_cols, y, ys, tmp, t_gemv, G_Q4_K);
}

static KT void gemm_q6_K(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nt,
                         int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv, int plain)
{
    (void)t_gemv, (void)plain; /* one order for every Q6_K product */
    gk_any(w, rb, nr, act, as, nt, n_cols, y, ys, tmp, 0, G_Q6_K);
}

/* ---- F32 / F16: tinyBLAS of llama.cpp's haswell build ----
 * One 8-lane fma accumulator per output over the K steps of 8, then hsum8
 * (bat_f32_hw / bat_f16_hw; kern_matmul takes this only where those apply:
 * 8 | K, 4 | rows, haswell order). Chunks of KERN_GEMM_ROWS_F rows (the
 * activations come from L3 once per chunk), tiles of 4 rows x 3 tokens; K
 * in spans of G_FSPAN with the accumulators in the work buffer between
 * spans, so that a span of the tokens of a slice stays in L1 while the rows
 * pass over it. */
#define G_FSPAN 256
#define G_FSLICE (G_TSLICE * KERN_GEMM_ROWS / KERN_GEMM_ROWS_F) /* tokens: the same 32 KiB */

K2 __m256 ldw(const uint8_t *w, int64_t i, const int f16)
{
    return f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i)))
               : _mm256_loadu_ps((const float *)w + i);
}

K2 void g_flt(const uint8_t *w, size_t rb, const uint8_t *act, size_t as, int64_t k0, int64_t k1,
              __m256 *accp, const int NT, const int f16)
{
    __m256 acc[4][3];
    for (int r = 0; r < 4; r++)
        for (int t = 0; t < NT; t++)
            acc[r][t] = k0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps((const float *)(accp + t * KERN_GEMM_ROWS_F + r));
    for (int64_t k = k0; k < k1; k += 8) {
        __m256 xv[3];
        for (int t = 0; t < NT; t++)
            xv[t] = _mm256_loadu_ps((const float *)(act + (size_t)t * as) + k);
        for (int r = 0; r < 4; r++) {
            __m256 wv = ldw(w + (size_t)r * rb, k, f16);
            for (int t = 0; t < NT; t++)
                acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int t = 0; t < NT; t++)
            _mm256_store_ps((float *)(accp + t * KERN_GEMM_ROWS_F + r), acc[r][t]);
}

K2 float hsum8(__m256 x)
{
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

K2 void gf_any(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nt, int64_t n_cols,
               float *y, int64_t ys, void *tmp, const int f16)
{
    __m256 *accb = (__m256 *)(void *)(((uintptr_t)tmp + 63) & ~(uintptr_t)63);
    for (int64_t t0 = 0; t0 < nt; t0 += G_FSLICE) {
        int64_t t1 = t0 + G_FSLICE < nt ? t0 + G_FSLICE : nt;
        for (int64_t k0 = 0; k0 < n_cols; k0 += G_FSPAN) {
            int64_t k1 = k0 + G_FSPAN < n_cols ? k0 + G_FSPAN : n_cols;
            for (int r = 0; r + 4 <= nr; r += 4) {
                const uint8_t *wr = w + (size_t)r * rb;
                int64_t t = t0;
                for (; t + 3 <= t1; t += 3)
                    g_flt(wr, rb, act + (size_t)t * as, as, k0, k1, accb + (t - t0) * KERN_GEMM_ROWS_F + r, 3, f16);
                for (; t < t1; t++)
                    g_flt(wr, rb, act + (size_t)t * as, as, k0, k1, accb + (t - t0) * KERN_GEMM_ROWS_F + r, 1, f16);
            }
        }
        for (int64_t t = t0; t < t1; t++)
            for (int r = 0; r < nr; r++)
                y[t * ys + r] = hsum8(accb[(t - t0) * KERN_GEMM_ROWS_F + r]);
    }
}

static KT void gemm_f32(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nt,
                        int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv, int plain)
{
    (void)t_gemv, (void)plain;
    gf_any(w, rb, nr, act, as, nt, n_cols, y, ys, tmp, 0);
}

static KT void gemm_f16(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nt,
                        int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv, int plain)
{
    (void)t_gemv, (void)plain;
    gf_any(w, rb, nr, act, as, nt, n_cols, y, ys, tmp, 1);
}

void kern_fill_gemm_avx2(kern_gemm_fn tab[GGTYPE_COUNT])
{
    tab[GGTYPE_Q4_0] = gemm_q4_0;
    tab[GGTYPE_Q8_0] = gemm_q8_0;
    tab[GGTYPE_Q4_K] = gemm_q4_K;
    tab[GGTYPE_Q6_K] = gemm_q6_K;
    tab[GGTYPE_MXFP4] = gemm_mxfp4;
    tab[GGTYPE_F32] = gemm_f32; /* haswell order only: see kern_matmul */
    tab[GGTYPE_F16] = gemm_f16;
}

#else
void kern_fill_gemm_avx2(kern_gemm_fn tab[GGTYPE_COUNT])
{
    (void)tab;
}
#endif
