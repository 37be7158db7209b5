/* kernels_gemm_avx2: the batched products of the AVX2 paths (kern_gemm_fn),
 * bit-identical to the exact batch tiles of kernels_exact.inc (ggml's float
 * order, docs/kernels.md), for Q4_0, Q8_0, Q4_K and Q6_K.
 *
 * A chunk of KERN_GEMM_ROWS = 16 rows is unpacked once into the work buffer:
 * per 32 quants, two groups of 8 rows, and per group eight ymm of
 * "4 consecutive quants of 8 rows" (an 8x8 transpose of 32-bit words), plus
 * the scales of the 16 rows side by side. A token then costs, per 32 quants
 * and 8 rows, eight vpmaddubsw with the 4 activation bytes broadcast, and
 * the float work of 8 rows is one vector: the integer sums are exact in any
 * order, and every float operation of the tiles (cvt, fl(dw * dx), fma,
 * lane sums) is done lane-wise per row in the same order. */
#include <stdbool.h>
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
 * Buffer: R [nb][2][8][32] quants (Q4_0: nibbles; Q8_0: |w|), S the same
 * with the signed Q8_0 quants, dw [nb][16] the f16 scales as floats. */

typedef struct {
    uint8_t *R, *S;
    float *dw;
} g32_buf;

enum { G_Q4_0, G_Q8_0 };

K2 void g32_pack(const uint8_t *w, size_t rbytes, int nr, int64_t nb, const g32_buf *gb, const int kind)
{
    const size_t bsz = kind == G_Q4_0 ? 18 : 34;
    const uint8_t *rp[16];
    for (int r = 0; r < 16; r++) /* missing rows repeat the last one; their lanes are not stored */
        rp[r] = w + (size_t)(r < nr ? r : nr - 1) * rbytes;
    const int ng = nr > 8 ? 2 : 1;
    for (int64_t b = 0; b < nb; b++) {
        for (int h = 0; h < ng; h++) {
            __m256i v[8], s[8];
            for (int r = 0; r < 8; r++) {
                const uint8_t *blk = rp[8 * h + r] + (size_t)b * bsz;
                gb->dw[b * 16 + 8 * h + r] = h2f(blk);
                if (kind == G_Q4_0) {
                    v[r] = nibbles(blk + 2);
                } else {
                    s[r] = _mm256_loadu_si256((const __m256i *)(blk + 2));
                    v[r] = _mm256_sign_epi8(s[r], s[r]); /* -128 -> 0x80 = 128 unsigned */
                }
            }
            put8(gb->R + b * 512 + 256 * h, kind == G_Q8_0 ? s : v);
        }
    }
}

/* Q4_0 repacked in ggml: per block the 32-element sum, one fma with
 * fl(dw * dx) (vec_q4_0_r). NT tokens x ng groups of 8 rows; the eight
 * 2-product sums of a row stay below 2^15 (nibbles), so they add in int16. */
K2 void g_q4_0(const g32_buf *gb, int64_t nb, const uint8_t *act, size_t as, float *y, int64_t ys, int nr,
               const int NT, const int ng)
{
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
        for (int g = 0; g < 8; g++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(R + 32 * g));
            __m256i w1 = ng == 2 ? _mm256_loadu_si256((const __m256i *)(R + 256 + 32 * g)) : w0;
            for (int t = 0; t < NT; t++) {
                const kq8 *A = (const kq8 *)(act + (size_t)t * as) + b;
                __m256i xb = bcast4(A->qs + 4 * g);
                s[t][0] = _mm256_add_epi16(s[t][0], _mm256_maddubs_epi16(w0, xb));
                if (ng == 2)
                    s[t][1] = _mm256_add_epi16(s[t][1], _mm256_maddubs_epi16(w1, xb));
            }
        }
        for (int t = 0; t < NT; t++) {
            const kq8 *A = (const kq8 *)(act + (size_t)t * as) + b;
            const __m256i o8 = _mm256_set1_epi32(8 * A->s);
            const __m256 dx = _mm256_set1_ps(A->d);
            for (int h = 0; h < ng; h++) {
                __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(s[t][h], one), o8);
                __m256 d = _mm256_mul_ps(_mm256_loadu_ps(gb->dw + b * 16 + 8 * h), dx);
                acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, acc[t][h]);
            }
        }
    }
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < ng; h++)
            store8(y + t * ys + 8 * h, acc[t][h], nr - 8 * h);
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

K2 void g_lanes8_all(const g32_buf *gb, int64_t nb, const uint8_t *act, size_t as, int64_t nt, float *y,
                     int64_t ys, int nr, __m256 *accb, const int kind)
{
    const int ng = nr > 8 ? 2 : 1;
    for (int64_t t0 = 0; t0 < nt; t0 += G_TSLICE) {
        int64_t t1 = t0 + G_TSLICE < nt ? t0 + G_TSLICE : nt;
        for (int64_t b0 = 0; b0 < nb; b0 += G_KSPAN) {
            int64_t b1 = b0 + G_KSPAN < nb ? b0 + G_KSPAN : nb;
            int64_t t = t0;
            for (; t + 4 <= t1; t += 4)
                for (int h = 0; h < ng; h++)
                    for (int g0 = 0; g0 < 8; g0 += 2)
                        g_lanes8(gb, b0, b1, act + (size_t)t * as, as, accb + (t - t0) * 16, h, g0, 2, 4, kind);
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
    g32_buf gb = {base, base + nb * 512, (float *)(base + nb * 1024)}; /* then the accumulators */
    g32_pack(w, rbytes, nr, nb, &gb, kind);
    const int ng = nr > 8 ? 2 : 1;
    if (kind == G_Q4_0 && !plain) {
        int64_t t = 0;
        if (ng == 2) {
            for (; t + 2 <= nt; t += 2)
                g_q4_0(&gb, nb, act + (size_t)t * as, as, y + t * ys, ys, nr, 2, 2);
            for (; t < nt; t++)
                g_q4_0(&gb, nb, act + (size_t)t * as, as, y + t * ys, ys, nr, 1, 2);
        } else {
            for (; t + 3 <= nt; t += 3)
                g_q4_0(&gb, nb, act + (size_t)t * as, as, y + t * ys, ys, nr, 3, 1);
            for (; t < nt; t++)
                g_q4_0(&gb, nb, act + (size_t)t * as, as, y + t * ys, ys, nr, 1, 1);
        }
        return;
    }
    __m256 *accb = (__m256 *)(void *)(base + nb * 1088 + 64);
    if (kind == G_Q8_0)
        g_lanes8_all(&gb, nb, act, as, nt, y, ys, nr, accb, G_Q8_0);
    else
        g_lanes8_all(&gb, nb, act, as, nt, y, ys, nr, accb, G_Q4_0);
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

void kern_fill_gemm_avx2(kern_gemm_fn tab[GGTYPE_COUNT])
{
    tab[GGTYPE_Q4_0] = gemm_q4_0;
    tab[GGTYPE_Q8_0] = gemm_q8_0;
}

#else
void kern_fill_gemm_avx2(kern_gemm_fn tab[GGTYPE_COUNT])
{
    (void)tab;
}
#endif
