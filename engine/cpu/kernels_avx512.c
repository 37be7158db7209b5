/* AVX-512 path (F, BW, VL, DQ and VNNI): the shared tiles with EVEX vpdpbusd,
 * plus 512-bit versions where they pay. Selected at run time by kernels.c. */
#include "kernels_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>

#define KTARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define KSFX(name) name##_avx512
#define DOT_US(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))
#include "kernels_simd.inc"

/* ---- 512-bit tiles ----
 * 32-element block types, four rows at once: the 16 quant bytes of rows
 * r0..r3 fill the four 128-bit lanes of a zmm (low nibbles in one, high
 * nibbles in another), each token's 16+16 activation bytes are broadcast to
 * every lane, so one vpdpbusd pair yields the block dot of four rows (4 int32
 * lanes each) and the weight unpacking is shared by up to 4 tokens. */

#define K5 static KTARGET inline __attribute__((always_inline))

K5 uint16_t ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* f16 values at p[0..3] (+ off) -> [f0 x4, f1 x4, f2 x4, f3 x4] */
K5 __m512 h2f_quad(const uint8_t *const p[4], size_t off)
{
    uint64_t h = (uint64_t)ld16(p[0] + off) | (uint64_t)ld16(p[1] + off) << 16 |
                 (uint64_t)ld16(p[2] + off) << 32 | (uint64_t)ld16(p[3] + off) << 48;
    __m128 f = _mm_cvtph_ps(_mm_cvtsi64_si128((long long)h));
    const __m512i idx = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(f));
}

K5 __m512i quad16(const uint8_t *const p[4], size_t off)
{
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p[0] + off)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[1] + off)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[2] + off)), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[3] + off)), 3);
    return v;
}

K5 void q32x4_sub(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as,
                  int64_t nb, float *y, int64_t ys, const int NT, const int kind, const size_t bsz)
{
    const uint8_t *rp[4];
    for (int r = 0; r < 4; r++)
        rp[r] = w + (size_t)(r < nr ? r : 0) * rb; /* missing rows: computed, dropped */
    size_t qoff = kind == K32_Q4_1 ? 4 : kind == K32_Q5_0 ? 6 : kind == K32_Q5_1 ? 8 : 2;
    size_t hoff = kind == K32_Q5_0 ? 2 : 4;
    __m512 acc[4];
    for (int t = 0; t < NT; t++)
        acc[t] = _mm512_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    uint8_t tab[16];
    for (int i = 0; i < 16; i++)
        tab[i] = (uint8_t)(kern_iq4nl_values[i] + 128);
    const __m512i iq4tab = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)tab));
    for (int64_t b = 0; b < nb; b++) {
        size_t bo = (size_t)b * bsz;
        __m512i raw = quad16(rp, bo + qoff);
        __m512i ulo = _mm512_and_si512(raw, m4);
        __m512i uhi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
        if (kind == K32_Q5_0 || kind == K32_Q5_1) {
            uint64_t lo = 0, hi = 0;
            for (int r = 0; r < 4; r++) {
                uint32_t qh;
                memcpy(&qh, rp[r] + bo + hoff, 4);
                lo |= (uint64_t)(qh & 0xFFFF) << (16 * r);
                hi |= (uint64_t)(qh >> 16) << (16 * r);
            }
            const __m512i v16 = _mm512_set1_epi8(16);
            ulo = _mm512_mask_add_epi8(ulo, (__mmask64)lo, ulo, v16);
            uhi = _mm512_mask_add_epi8(uhi, (__mmask64)hi, uhi, v16);
        }
        if (kind == K32_IQ4_NL) {
            ulo = _mm512_shuffle_epi8(iq4tab, ulo);
            uhi = _mm512_shuffle_epi8(iq4tab, uhi);
        }
        __m512 dq = h2f_quad(rp, bo);
        __m512 mq = _mm512_setzero_ps();
        if (kind == K32_Q4_1 || kind == K32_Q5_1)
            mq = _mm512_mul_ps(h2f_quad(rp, bo + 2), _mm512_set1_ps(0.25f));
        for (int t = 0; t < NT; t++) {
            const kq8 *a = (const kq8 *)(act + (size_t)t * as) + b;
            __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)a->qs));
            __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(a->qs + 16)));
            /* offsets of the unsigned quants, spread over the 4 lanes of a row */
            __m512i p = kind == K32_Q4_0   ? _mm512_set1_epi32(-2 * a->s)
                        : kind == K32_Q5_0 ? _mm512_set1_epi32(-4 * a->s)
                        : kind == K32_IQ4_NL ? _mm512_set1_epi32(-32 * a->s)
                                             : _mm512_setzero_si512();
            p = _mm512_dpbusd_epi32(p, ulo, xlo);
            p = _mm512_dpbusd_epi32(p, uhi, xhi);
            __m512 dx = _mm512_set1_ps(a->d);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dq, dx), acc[t]);
            if (kind == K32_Q4_1 || kind == K32_Q5_1)
                acc[t] = _mm512_fmadd_ps(mq, _mm512_set1_ps(a->d * (float)a->s), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) {
        float v[16];
        _mm512_storeu_ps(v, acc[t]);
        for (int r = 0; r < nr; r++)
            y[t * ys + r] = (v[4 * r] + v[4 * r + 1]) + (v[4 * r + 2] + v[4 * r + 3]);
    }
}

/* Q8_0, two rows per zmm (32 bytes each), quants made unsigned by +128. */
K5 void q8x4_sub(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t nb,
                 float *y, int64_t ys, const int NT)
{
    const uint8_t *rp[4];
    for (int r = 0; r < 4; r++)
        rp[r] = w + (size_t)(r < nr ? r : 0) * rb;
    __m512 acc[2][4];
    for (int t = 0; t < NT; t++)
        acc[0][t] = acc[1][t] = _mm512_setzero_ps();
    const __m512i x80 = _mm512_set1_epi8((char)0x80);
    const __m512i lo2 = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i hi2 = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2);
    for (int64_t b = 0; b < nb; b++) {
        size_t bo = (size_t)b * sizeof(block_q8_0);
        __m512i u[2];
        for (int h = 0; h < 2; h++) {
            __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(rp[2 * h] + bo + 2)));
            v = _mm512_inserti64x4(v, _mm256_loadu_si256((const __m256i *)(rp[2 * h + 1] + bo + 2)), 1);
            u[h] = _mm512_xor_si512(v, x80);
        }
        uint64_t hh = (uint64_t)ld16(rp[0] + bo) | (uint64_t)ld16(rp[1] + bo) << 16 |
                      (uint64_t)ld16(rp[2] + bo) << 32 | (uint64_t)ld16(rp[3] + bo) << 48;
        __m512 d4 = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)hh)));
        __m512 dq[2] = {_mm512_permutexvar_ps(lo2, d4), _mm512_permutexvar_ps(hi2, d4)};
        for (int t = 0; t < NT; t++) {
            const kq8 *a = (const kq8 *)(act + (size_t)t * as) + b;
            __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)a->qs));
            /* -128 * (sum of the 4 activations of each lane): every lane is then
             * an exact partial dot, so nothing cancels after the conversion */
            __m512i lsum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), xv);
            __m512i init = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(lsum, 7));
            __m512 dx = _mm512_set1_ps(a->d);
            for (int h = 0; h < 2; h++) {
                __m512i p = _mm512_dpbusd_epi32(init, u[h], xv);
                acc[h][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dq[h], dx), acc[h][t]);
            }
        }
    }
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < 2; h++) {
            float v[16];
            _mm512_storeu_ps(v, acc[h][t]);
            for (int k = 0; k < 2; k++) {
                int r = 2 * h + k;
                if (r < nr) {
                    float s = 0;
                    for (int i = 0; i < 8; i++)
                        s += v[8 * k + i];
                    y[t * ys + r] = s;
                }
            }
        }
}

#define Q32X4_TILE(fname, kind, bsz)                                                          \
    static KTARGET void fname(const uint8_t *w, size_t rb, int nr, const uint8_t *act,        \
                              size_t as, int nt, int64_t nb, float *y, int64_t ys)            \
    {                                                                                         \
        switch (nt) {                                                                         \
        case 4: q32x4_sub(w, rb, nr, act, as, nb, y, ys, 4, kind, bsz); break;                \
        case 3: q32x4_sub(w, rb, nr, act, as, nb, y, ys, 3, kind, bsz); break;                \
        case 2: q32x4_sub(w, rb, nr, act, as, nb, y, ys, 2, kind, bsz); break;                \
        default: q32x4_sub(w, rb, nr, act, as, nb, y, ys, 1, kind, bsz); break;               \
        }                                                                                     \
    }

Q32X4_TILE(tile512_q4_0, K32_Q4_0, sizeof(block_q4_0))
Q32X4_TILE(tile512_q4_1, K32_Q4_1, sizeof(block_q4_1))
Q32X4_TILE(tile512_q5_0, K32_Q5_0, sizeof(block_q5_0))
Q32X4_TILE(tile512_q5_1, K32_Q5_1, sizeof(block_q5_1))
Q32X4_TILE(tile512_iq4_nl, K32_IQ4_NL, sizeof(block_iq4_nl))

static KTARGET void tile512_q8_0(const uint8_t *w, size_t rb, int nr, const uint8_t *act,
                                 size_t as, int nt, int64_t nb, float *y, int64_t ys)
{
    switch (nt) {
    case 4: q8x4_sub(w, rb, nr, act, as, nb, y, ys, 4); break;
    case 3: q8x4_sub(w, rb, nr, act, as, nb, y, ys, 3); break;
    case 2: q8x4_sub(w, rb, nr, act, as, nb, y, ys, 2); break;
    default: q8x4_sub(w, rb, nr, act, as, nb, y, ys, 1); break;
    }
}

/* Q4_K / Q5_K, one row x NT tokens: each zmm holds one 64-element half of a
 * 128-element group (sub-blocks 2j and 2j+1), products pairwise to int16 by
 * vpmaddubsw, scaled per sub-block by vpmaddwd. */
K5 void q45k_sub(const uint8_t *w, const uint8_t *act, size_t as, int64_t nb, float *y,
                 int64_t ys, const int NT, const int q5)
{
    __m512 acc[4];
    __m256 accm[4];
    for (int t = 0; t < NT; t++) {
        acc[t] = _mm512_setzero_ps();
        accm[t] = _mm256_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i mdup = _mm256_set_epi16(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + (size_t)b * (q5 ? sizeof(block_q5_K) : sizeof(block_q4_K));
        float d = h2f1_avx512(ld16(blk)), dmin = h2f1_avx512(ld16(blk + 2));
        uint32_t utmp[4];
        k4_scales_avx512(blk + 4, utmp);
        /* utmp bytes 0..7: scales, 8..15: mins */
        __m256i sm16 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)utmp));
        __m256i mins = _mm256_permutexvar_epi16(mdup, sm16);
        __m512i sm512 = _mm512_castsi256_si512(sm16);
        const uint8_t *qs = blk + (q5 ? 48 : 16);
        __m512i u[4], sc[4];
        __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)(blk + 16)) : _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
            u[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, m4)),
                                      _mm256_and_si256(_mm256_srli_epi16(q, 4), m4), 1);
            if (q5) {
                __mmask32 lo = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(1 << (2 * j))));
                __mmask32 hi = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(2 << (2 * j))));
                __mmask64 m = (__mmask64)((uint64_t)lo | ((uint64_t)hi << 32));
                u[j] = _mm512_mask_add_epi8(u[j], m, u[j], _mm512_set1_epi8(16));
            }
            __m512i idx = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * j)),
                                             _mm256_set1_epi16((short)(2 * j + 1)), 1);
            sc[j] = _mm512_permutexvar_epi16(idx, sm512);
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *a = &((const kq8k *)(act + (size_t)t * as) + b)->q;
            __m512i sumi = _mm512_setzero_si512();
            for (int j = 0; j < 4; j++) {
                __m512i p = _mm512_maddubs_epi16(u[j], _mm512_loadu_si512(a->qs + 64 * j));
                sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(p, sc[j]));
            }
            __m256i mm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a->bsums), mins);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(d * a->d), acc[t]);
            accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm), _mm256_set1_ps(dmin * a->d), accm[t]);
        }
    }
    for (int t = 0; t < NT; t++)
        y[t * ys] = _mm512_reduce_add_ps(acc[t]) - hsum_avx512(accm[t]);
}

#define Q45K_TILE(fname, q5)                                                                  \
    static KTARGET void fname(const uint8_t *w, size_t rb, int nr, const uint8_t *act,        \
                              size_t as, int nt, int64_t nb, float *y, int64_t ys)            \
    {                                                                                         \
        for (int r = 0; r < nr; r++) {                                                        \
            const uint8_t *wr = w + (size_t)r * rb;                                           \
            switch (nt) {                                                                     \
            case 4: q45k_sub(wr, act, as, nb, y + r, ys, 4, q5); break;                       \
            case 3: q45k_sub(wr, act, as, nb, y + r, ys, 3, q5); break;                       \
            case 2: q45k_sub(wr, act, as, nb, y + r, ys, 2, q5); break;                       \
            default: q45k_sub(wr, act, as, nb, y + r, ys, 1, q5); break;                      \
            }                                                                                 \
        }                                                                                     \
    }

Q45K_TILE(tile512_q4_K, 0)
Q45K_TILE(tile512_q5_K, 1)


/* ---- repacked GEMM for prompt batches ----
 * A chunk of 16 rows is unpacked once into unsigned bytes (u) with a float
 * scale and offset per 32 (or 16) elements, w = dw * u + mw, laid out so that
 * one zmm holds 4 consecutive quants of all 16 rows; then each token's block
 * costs 8 vpdpbusd with broadcast activations, one int->float conversion and
 * two FMAs for 16 rows. */

typedef struct {
    uint8_t *R; /* [nb32][8][16][4] */
    float *dw;  /* [nb32][H][16] */
    float *mw;  /* [nb32][H][16] */
    int H;      /* scale groups per 32 elements: 1, or 2 (per 16) */
    int32_t *MP; /* Q4_K: [nb32 / 2][16] the mins of a pair of sub-blocks as int16 (mn0, mn1) */
} rp_buf;

K5 void rp_put(const rp_buf *rb, int64_t b, int r, __m256i u, float dw0, float mw0, float dw1,
               float mw1)
{
    const __m256i vidx = _mm256_setr_epi32(0, 64, 128, 192, 256, 320, 384, 448);
    _mm256_i32scatter_epi32(rb->R + b * 512 + r * 4, vidx, u, 1);
    float *dw = rb->dw + b * rb->H * 16, *mw = rb->mw + b * rb->H * 16;
    dw[r] = dw0;
    mw[r] = mw0;
    if (rb->H == 2) {
        dw[16 + r] = dw1;
        mw[16 + r] = mw1;
    }
}

enum { RP_Q4_0, RP_Q4_1, RP_Q5_0, RP_Q5_1, RP_Q8_0, RP_IQ4_NL, RP_Q4_K, RP_Q5_K, RP_Q6_K, RP_Q2_K, RP_Q3_K };

/* Two int16 in one dword, a in the low half (vpdpwssd's pairs). */
K5 int32_t pair16(int a, int b)
{
    return (int32_t)((uint32_t)(uint16_t)(int16_t)a | (uint32_t)(uint16_t)(int16_t)b << 16);
}

K5 void rp_row(const uint8_t *row, int64_t nb32, const rp_buf *rb, int r, const int kind)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    if (kind == RP_Q4_K || kind == RP_Q5_K) {
        for (int64_t B = 0; B < nb32 / 8; B++) {
            const uint8_t *blk = row + (size_t)B * (kind == RP_Q5_K ? 176 : 144);
            float d = h2f1_avx512(ld16(blk)), dmin = h2f1_avx512(ld16(blk + 2));
            uint32_t utmp[4];
            k4_scales_avx512(blk + 4, utmp);
            const uint8_t *sc = (const uint8_t *)utmp, *mn = sc + 8;
            const uint8_t *qs = blk + (kind == RP_Q5_K ? 48 : 16);
            __m256i qh = kind == RP_Q5_K ? _mm256_loadu_si256((const __m256i *)(blk + 16))
                                         : _mm256_setzero_si256();
            for (int j = 0; j < 4; j++) {
                __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
                __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                if (kind == RP_Q5_K) {
                    const __m256i m10 = _mm256_set1_epi8(0x10);
                    __m256i hb = _mm256_srli_epi16(qh, 2 * j);
                    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hb, 4), m10));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hb, 3), m10));
                }
                if (kind == RP_Q4_K) { /* integer scale and min, then the super-block's d and dmin */
                    rp_put(rb, 8 * B + 2 * j, r, lo, sc[2 * j], mn[2 * j], d, dmin);
                    rp_put(rb, 8 * B + 2 * j + 1, r, hi, sc[2 * j + 1], mn[2 * j + 1], d, dmin);
                    continue;
                }
                rp_put(rb, 8 * B + 2 * j, r, lo, d * sc[2 * j], -dmin * mn[2 * j], 0, 0);
                rp_put(rb, 8 * B + 2 * j + 1, r, hi, d * sc[2 * j + 1], -dmin * mn[2 * j + 1], 0, 0);
            }
            if (kind == RP_Q4_K)
                for (int j = 0; j < 4; j++)
                    rb->MP[(4 * B + j) * 16 + r] = pair16(mn[2 * j], mn[2 * j + 1]);
        }
        return;
    }
    if (kind == RP_Q2_K || kind == RP_Q3_K) {
        const __m256i m3 = _mm256_set1_epi8(3), m1 = _mm256_set1_epi8(1);
        for (int64_t B = 0; B < nb32 / 8; B++) {
            const uint8_t *qs, *hmask = NULL;
            float d, dmin = 0, dw[16], mw[16];
            if (kind == RP_Q2_K) {
                const block_q2_K *x = (const block_q2_K *)(row + (size_t)B * sizeof(block_q2_K));
                d = h2f1_avx512(ld16((const uint8_t *)&x->d));
                dmin = h2f1_avx512(ld16((const uint8_t *)&x->dmin));
                for (int g = 0; g < 16; g++) {
                    dw[g] = d * (float)(x->scales[g] & 15);
                    mw[g] = -dmin * (float)(x->scales[g] >> 4);
                }
                qs = x->qs;
            } else {
                const block_q3_K *x = (const block_q3_K *)(row + (size_t)B * sizeof(block_q3_K));
                d = h2f1_avx512(ld16((const uint8_t *)&x->d));
                int8_t s16[16];
                kern_q3k_scales(x->scales, s16);
                for (int g = 0; g < 16; g++) {
                    dw[g] = d * (float)s16[g];
                    mw[g] = -4.0f * dw[g];
                }
                qs = x->qs;
                hmask = x->hmask;
            }
            __m256i hm = hmask ? _mm256_loadu_si256((const __m256i *)hmask) : _mm256_setzero_si256();
            for (int n = 0; n < 2; n++) {
                __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * n));
                for (int j = 0; j < 4; j++) {
                    int k = 4 * n + j;
                    __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3);
                    if (hmask)
                        u = _mm256_or_si256(u, _mm256_slli_epi16(
                                                   _mm256_and_si256(_mm256_srli_epi16(hm, k), m1), 2));
                    rp_put(rb, 8 * B + k, r, u, dw[2 * k], mw[2 * k], dw[2 * k + 1], mw[2 * k + 1]);
                }
            }
        }
        return;
    }
    uint8_t tab[16];
    for (int i = 0; i < 16; i++)
        tab[i] = (uint8_t)(kern_iq4nl_values[i] + 128);
    const __m256i iq4tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tab));
    const size_t bsz = kind == RP_Q4_0 || kind == RP_IQ4_NL ? 18 : kind == RP_Q4_1 ? 20
                       : kind == RP_Q5_0 ? 22 : kind == RP_Q5_1 ? 24 : 34;
    for (int64_t b = 0; b < nb32; b++) {
        const uint8_t *blk = row + (size_t)b * bsz;
        float d = h2f1_avx512(ld16(blk));
        __m256i u;
        float mw;
        switch (kind) {
        case RP_Q4_0: u = nibbles_avx512(blk + 2); mw = -8.0f * d; break;
        case RP_Q4_1: u = nibbles_avx512(blk + 4); mw = h2f1_avx512(ld16(blk + 2)); break;
        case RP_Q5_0:
            u = _mm256_or_si256(nibbles_avx512(blk + 6), bits_to_0x10_avx512(blk + 2));
            mw = -16.0f * d;
            break;
        case RP_Q5_1:
            u = _mm256_or_si256(nibbles_avx512(blk + 8), bits_to_0x10_avx512(blk + 4));
            mw = h2f1_avx512(ld16(blk + 2));
            break;
        case RP_Q8_0:
            u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(blk + 2)), _mm256_set1_epi8((char)0x80));
            mw = -128.0f * d;
            break;
        default: /* RP_IQ4_NL */
            u = _mm256_shuffle_epi8(iq4tab, nibbles_avx512(blk + 2));
            mw = -128.0f * d;
            break;
        }
        rp_put(rb, b, r, u, d, mw, 0, 0);
    }
}

K5 int32_t ld32(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

K5 void gemm_core(const rp_buf *rb, int64_t nb32, const uint8_t *act, size_t as, float *y,
                  int64_t ys, __mmask16 m, const int NT, const int H, const int KQ)
{
    __m512 acc[4];
    for (int t = 0; t < NT; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb32; b++) {
        __m512i W[8];
        for (int g = 0; g < 8; g++)
            W[g] = _mm512_loadu_si512(rb->R + b * 512 + 64 * g);
        const float *dwp = rb->dw + b * H * 16, *mwp = rb->mw + b * H * 16;
        __m512 dw0 = _mm512_loadu_ps(dwp), mw0 = _mm512_loadu_ps(mwp);
        __m512 dw1 = H == 2 ? _mm512_loadu_ps(dwp + 16) : dw0;
        __m512 mw1 = H == 2 ? _mm512_loadu_ps(mwp + 16) : mw0;
        for (int t = 0; t < NT; t++) {
            const int8_t *xq;
            float dx, ds0, ds1 = 0;
            if (KQ) {
                const kq8k *A = (const kq8k *)(act + (size_t)t * as) + b / 8;
                int j = (int)(b % 8);
                xq = A->q.qs + 32 * j;
                dx = A->q.d;
                if (H == 2) {
                    ds0 = A->ds16[2 * j];
                    ds1 = A->ds16[2 * j + 1];
                } else {
                    ds0 = A->ds32[j];
                }
            } else {
                const kq8 *a = (const kq8 *)(act + (size_t)t * as) + b;
                xq = a->qs;
                dx = a->d;
                ds0 = a->ds;
            }
            __m512 vdx = _mm512_set1_ps(dx);
            if (H == 1) {
                __m512i p = _mm512_setzero_si512();
                for (int g = 0; g < 8; g++)
                    p = _mm512_dpbusd_epi32(p, W[g], _mm512_set1_epi32(ld32(xq + 4 * g)));
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw0, vdx), acc[t]);
                acc[t] = _mm512_fmadd_ps(mw0, _mm512_set1_ps(ds0), acc[t]);
            } else {
                __m512i p0 = _mm512_setzero_si512(), p1 = _mm512_setzero_si512();
                for (int g = 0; g < 4; g++) {
                    p0 = _mm512_dpbusd_epi32(p0, W[g], _mm512_set1_epi32(ld32(xq + 4 * g)));
                    p1 = _mm512_dpbusd_epi32(p1, W[g + 4], _mm512_set1_epi32(ld32(xq + 16 + 4 * g)));
                }
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), _mm512_mul_ps(dw0, vdx), acc[t]);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1), _mm512_mul_ps(dw1, vdx), acc[t]);
                acc[t] = _mm512_fmadd_ps(mw0, _mm512_set1_ps(ds0), acc[t]);
                acc[t] = _mm512_fmadd_ps(mw1, _mm512_set1_ps(ds1), acc[t]);
            }
        }
    }
    for (int t = 0; t < NT; t++)
        _mm512_mask_storeu_ps(y + t * ys, m, acc[t]);
}

/* ---- ggml's float order (see docs/kernels.md, "Matching llama.cpp bit for bit") ----
 * The integer sums are exact whatever the order; what must match llama.cpp's
 * x86 kernels is where they become floats and how those are accumulated:
 *   Q4_0 (repacked 8x8 in ggml): per block one fma of the 32-element sum
 *        with fl(dw*dx) into a single accumulator;
 *   Q8_0 (tinyBLAS / vec_dot): per block one fma per 4-element lane group
 *        into 8 accumulators, then the 8 summed as (l, l+4), (0,2)(1,3), (0,1);
 *   Q6_K (vec_dot): per super-block 8 lane sums (scaled by the int8 group
 *        scales; the -32 offset taken from the bsums, chunk c's in lane c)
 *        times fl(dx*d), then the same 8-lane sum;
 *   Q4_K (repacked 8x8): per pair of sub-blocks (gemm rows) or per
 *        super-block (the trailing mat-vec rows) one fma for the scales and
 *        one for the mins, the two subtracted at the end. */

K5 __m512 hsum8v(const __m512 *a)
{
    __m512 b0 = _mm512_add_ps(a[0], a[4]), b1 = _mm512_add_ps(a[1], a[5]);
    __m512 b2 = _mm512_add_ps(a[2], a[6]), b3 = _mm512_add_ps(a[3], a[7]);
    return _mm512_add_ps(_mm512_add_ps(b0, b2), _mm512_add_ps(b1, b3));
}

K5 __m512i dot4(__m512i w, const int8_t *x)
{
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_set1_epi32(ld32(x)));
}

/* One token of Q4_K: in ggml's mat-vec order (the last n % 4 rows of a
 * product) and not repacked (plain). */
K5 void gemm_exact_tok(const rp_buf *rb, int64_t nb32, const uint8_t *a, float *y, __mmask16 m,
                       const int plain)
{
    __m512 acc[8], accm = _mm512_setzero_ps();
    for (int l = 0; l < 8; l++)
        acc[l] = _mm512_setzero_ps();
    const kq8k *A = (const kq8k *)a;
    __m512 am[4];
    for (int k = 0; k < 4; k++)
        am[k] = _mm512_setzero_ps();
    for (int64_t B = 0; B < nb32 / 8; B++) {
        const float dx = A[B].q.d;
        const int8_t *xs = A[B].q.qs;
        if (plain) { /* Q4_K, ggml_vec_dot_q4_K_q8_K: 8 scaled lanes, 4 min lanes */
            __m512 d = _mm512_mul_ps(_mm512_set1_ps(dx), _mm512_loadu_ps(rb->dw + 8 * B * 32 + 16));
            __m512 dmin = _mm512_sub_ps(_mm512_setzero_ps(),
                                        _mm512_mul_ps(_mm512_set1_ps(dx), _mm512_loadu_ps(rb->mw + 8 * B * 32 + 16)));
            __m512i I[8];
            for (int l = 0; l < 8; l++)
                I[l] = _mm512_setzero_si512();
            for (int sb = 0; sb < 8; sb++) {
                int64_t b = 8 * B + sb;
                const uint8_t *R = rb->R + b * 512;
                __m512i sc = _mm512_cvtps_epi32(_mm512_loadu_ps(rb->dw + b * 32));
                for (int g = 0; g < 8; g++)
                    I[g] = _mm512_add_epi32(I[g], _mm512_mullo_epi32(sc, dot4(_mm512_loadu_si512(R + 64 * g),
                                                                              xs + 32 * sb + 4 * g)));
            }
            for (int k = 0; k < 4; k++) {
                const int16_t *bs = A[B].q.bsums;
                __m512i mn0 = _mm512_cvtps_epi32(_mm512_loadu_ps(rb->mw + (8 * B + 2 * k) * 32));
                __m512i mn1 = _mm512_cvtps_epi32(_mm512_loadu_ps(rb->mw + (8 * B + 2 * k + 1) * 32));
                __m512i prod = _mm512_add_epi32(_mm512_mullo_epi32(mn0, _mm512_set1_epi32(bs[4 * k] + bs[4 * k + 1])),
                                                _mm512_mullo_epi32(mn1, _mm512_set1_epi32(bs[4 * k + 2] + bs[4 * k + 3])));
                am[k] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(prod), am[k]);
            }
            for (int l = 0; l < 8; l++)
                acc[l] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(I[l]), acc[l]);
            continue;
        }
        /* Q4_K, mat-vec order: one fma per super-block for scales and mins */
        __m512 ddx = _mm512_mul_ps(_mm512_loadu_ps(rb->dw + 8 * B * 32 + 16), _mm512_set1_ps(dx));
        __m512 mdx = _mm512_mul_ps(_mm512_loadu_ps(rb->mw + 8 * B * 32 + 16), _mm512_set1_ps(dx));
        __m512i S = _mm512_setzero_si512(), Mi = _mm512_setzero_si512();
        for (int sb = 0; sb < 4; sb++) {
            for (int h = 0; h < 2; h++) {
                int64_t b = 8 * B + 2 * sb + h;
                const uint8_t *R = rb->R + b * 512;
                const int8_t *xq = xs + 32 * (2 * sb + h);
                __m512i p = _mm512_setzero_si512();
                for (int g = 0; g < 8; g++)
                    p = _mm512_dpbusd_epi32(p, _mm512_loadu_si512(R + 64 * g), _mm512_set1_epi32(ld32(xq + 4 * g)));
                int bs = A[B].q.bsums[2 * (2 * sb + h)] + A[B].q.bsums[2 * (2 * sb + h) + 1];
                S = _mm512_add_epi32(S, _mm512_mullo_epi32(_mm512_cvtps_epi32(_mm512_loadu_ps(rb->dw + b * 32)), p));
                Mi = _mm512_add_epi32(Mi, _mm512_mullo_epi32(_mm512_cvtps_epi32(_mm512_loadu_ps(rb->mw + b * 32)),
                                                             _mm512_set1_epi32(bs)));
            }
        }
        acc[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S), ddx, acc[0]);
        accm = _mm512_fmadd_ps(_mm512_cvtepi32_ps(Mi), mdx, accm);
    }
    if (plain) {
        __m512 mm = _mm512_add_ps(_mm512_add_ps(am[0], am[2]), _mm512_add_ps(am[1], am[3]));
        _mm512_mask_storeu_ps(y, m, _mm512_add_ps(hsum8v(acc), mm));
        return;
    }
    _mm512_mask_storeu_ps(y, m, _mm512_sub_ps(acc[0], accm));
}

/* ggml's orders for Q4_0 (repacked: one fma of the block sum), Q8_0 and
 * Q4_0 not repacked (8 lanes), Q4_K repacked (pairs of sub-blocks), several
 * tokens per pass over the unpacked weights. */
K5 void gemm_exact_q4_0(const rp_buf *rb, int64_t nb32, const uint8_t *act, size_t as, float *y,
                        int64_t ys, __mmask16 m, const int NT)
{
    __m512 acc[4];
    for (int t = 0; t < NT; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb32; b++) {
        const uint8_t *R = rb->R + b * 512;
        __m512i W[8];
        for (int g = 0; g < 8; g++)
            W[g] = _mm512_loadu_si512(R + 64 * g);
        __m512 dw = _mm512_loadu_ps(rb->dw + b * 16);
        for (int t = 0; t < NT; t++) {
            const kq8 *A = (const kq8 *)(act + (size_t)t * as) + b;
            __m512i p = _mm512_setzero_si512();
            for (int g = 0; g < 8; g++)
                p = _mm512_dpbusd_epi32(p, W[g], _mm512_set1_epi32(ld32(A->qs + 4 * g)));
            p = _mm512_sub_epi32(p, _mm512_set1_epi32(8 * A->s));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, _mm512_set1_ps(A->d)), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++)
        _mm512_mask_storeu_ps(y + t * ys, m, acc[t]);
}

/* The 8-lane form of tinyBLAS / vec_dot: Q8_0 (quants stored +128) and
 * Q4_0 not repacked (nibbles, +8). */
K5 void gemm_exact_lanes8(const rp_buf *rb, int64_t nb32, const uint8_t *act, size_t as, float *y,
                          int64_t ys, __mmask16 m, const int NT, const int off)
{
    __m512 acc[2][8];
    for (int t = 0; t < NT; t++)
        for (int g = 0; g < 8; g++)
            acc[t][g] = _mm512_setzero_ps();
    /* the offset's share of each 4-element group, -off * (x0 + x1 + x2 + x3),
     * is where each group's vpdpbusd starts (exact integers, as before) */
    int32_t ns[2][8] __attribute__((aligned(32)));
    const __m256i ones = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < nb32; b++) {
        const uint8_t *R = rb->R + b * 512;
        __m512 dw = _mm512_loadu_ps(rb->dw + b * 16);
        for (int t = 0; t < NT; t++) {
            const kq8 *A = (const kq8 *)(act + (size_t)t * as) + b;
            __m256i s4 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, _mm256_loadu_si256((const __m256i *)A->qs));
            _mm256_store_si256((__m256i *)ns[t], _mm256_sub_epi32(_mm256_setzero_si256(),
                                                                   _mm256_slli_epi32(s4, off == 128 ? 7 : 3)));
        }
        for (int g = 0; g < 8; g++) {
            __m512i W = _mm512_loadu_si512(R + 64 * g);
            for (int t = 0; t < NT; t++) {
                const kq8 *A = (const kq8 *)(act + (size_t)t * as) + b;
                __m512i p = _mm512_dpbusd_epi32(_mm512_set1_epi32(ns[t][g]), W, _mm512_set1_epi32(ld32(A->qs + 4 * g)));
                acc[t][g] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(A->d)), _mm512_cvtepi32_ps(p), acc[t][g]);
            }
        }
    }
    for (int t = 0; t < NT; t++)
        _mm512_mask_storeu_ps(y + t * ys, m, hsum8v(acc[t]));
}

K5 void gemm_exact_q4_K(const rp_buf *rb, int64_t nb32, const uint8_t *act, size_t as, float *y,
                        int64_t ys, __mmask16 m, const int NT)
{
    __m512 acc[4], accm[4];
    for (int t = 0; t < NT; t++)
        acc[t] = accm[t] = _mm512_setzero_ps();
    for (int64_t B = 0; B < nb32 / 8; B++) {
        __m512 D = _mm512_loadu_ps(rb->dw + 8 * B * 32 + 16), Dm = _mm512_loadu_ps(rb->mw + 8 * B * 32 + 16);
        for (int sb = 0; sb < 4; sb++) {
            __m512i S[4], Mi[4];
            for (int t = 0; t < NT; t++)
                S[t] = Mi[t] = _mm512_setzero_si512();
            /* the pair's mins: one vpdpwssd of (mn0, mn1) with the two
             * sub-blocks' bsums (each of 32 elements: |bs| <= 4064) */
            __m512i mp = _mm512_loadu_si512(rb->MP + (4 * B + sb) * 16);
            for (int t = 0; t < NT; t++) {
                const int16_t *bs = ((const kq8k *)(act + (size_t)t * as) + B)->q.bsums + 4 * sb;
                Mi[t] = _mm512_dpwssd_epi32(Mi[t], mp, _mm512_set1_epi32(pair16(bs[0] + bs[1], bs[2] + bs[3])));
            }
            for (int h = 0; h < 2; h++) {
                int64_t b = 8 * B + 2 * sb + h;
                const uint8_t *R = rb->R + b * 512;
                __m512i W[8];
                for (int g = 0; g < 8; g++)
                    W[g] = _mm512_loadu_si512(R + 64 * g);
                __m512i sc = _mm512_cvtps_epi32(_mm512_loadu_ps(rb->dw + b * 32));
                for (int t = 0; t < NT; t++) {
                    const kq8k *A = (const kq8k *)(act + (size_t)t * as) + B;
                    const int8_t *xq = A->q.qs + 32 * (2 * sb + h);
                    __m512i p = _mm512_setzero_si512();
                    for (int g = 0; g < 8; g++)
                        p = _mm512_dpbusd_epi32(p, W[g], _mm512_set1_epi32(ld32(xq + 4 * g)));
                    S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(sc, p));
                }
            }
            for (int t = 0; t < NT; t++) {
                __m512 dx = _mm512_set1_ps(((const kq8k *)(act + (size_t)t * as) + B)->q.d);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(D, dx), acc[t]);
                accm[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(Mi[t]), _mm512_mul_ps(Dm, dx), accm[t]);
            }
        }
    }
    for (int t = 0; t < NT; t++)
        _mm512_mask_storeu_ps(y + t * ys, m, _mm512_sub_ps(acc[t], accm[t]));
}

/* Q6_K for prompt batches. A chunk of 16 rows is unpacked once: the 6-bit
 * quants as the other types' (4 of 16 rows per zmm), and per row the int16
 * scale pairs of two consecutive chunks (sc of chunk c, sc of chunk c + 1,
 * for the chunks' first and second 16 elements) and -32 sc0, -32 sc1 of each
 * chunk. A token's pair of chunks is then, per lane g of ggml's 8 (a chunk's
 * elements 4g..4g+3), two vpdpbusd whose sums (|p| <= 4 * 63 * 128, an int16)
 * are packed into one dword and one vpdpwssd with the scale pair; the -32
 * offset is one vpdpwssd per chunk with its two bsums, into lane c as
 * vec_dot has it. The same integers as two vpmulld per lane. */
typedef struct {
    uint8_t *R;  /* [nb32][8][16][4]: the quants */
    int32_t *SP; /* [nb32 / 2][2][16]: (sc of chunk c, of chunk c + 1) for the first / second 16 elements */
    int32_t *O;  /* [nb32][16]: (-32 sc0, -32 sc1) */
    float *D;    /* [nb32 / 8][16]: the super-block's d */
} rp6_buf;

K5 void rp6_row(const uint8_t *row, int64_t nb32, const rp6_buf *rb, int r)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    const __m256i vidx = _mm256_setr_epi32(0, 64, 128, 192, 256, 320, 384, 448);
    for (int64_t B = 0; B < nb32 / 8; B++) {
        const block_q6_K *x = (const block_q6_K *)(row + (size_t)B * sizeof(block_q6_K));
        const int8_t *sc = x->scales;
        rb->D[B * 16 + r] = h2f1_avx512(ld16((const uint8_t *)&x->d));
        for (int n = 0; n < 2; n++) {
            __m256i ql0 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * n));
            __m256i ql1 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * n + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * n));
            __m256i u[4];
            u[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
            u[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
            u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
            u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
            for (int jj = 0; jj < 4; jj++) {
                int k = 4 * n + jj;
                int64_t b = 8 * B + k;
                _mm256_i32scatter_epi32(rb->R + b * 512 + r * 4, vidx, u[jj], 1);
                rb->O[b * 16 + r] = pair16(-32 * sc[2 * k], -32 * sc[2 * k + 1]);
            }
        }
        for (int k = 0; k < 8; k += 2)
            for (int h = 0; h < 2; h++)
                rb->SP[(8 * B + k + h) * 16 + r] = pair16(sc[2 * k + h], sc[2 * k + 2 + h]);
    }
}

/* One token, vec_dot's float order: per super-block the 8 lanes times
 * fl(dx * d), then the 8-lane sum. */
K5 void gemm_q6_tok(const rp6_buf *rb, int64_t nb32, const uint8_t *a, float *y, __mmask16 m)
{
    __m512 acc[8];
    for (int l = 0; l < 8; l++)
        acc[l] = _mm512_setzero_ps();
    const kq8k *A = (const kq8k *)a;
    const __m512i lo16 = _mm512_set1_epi32(0xFFFF);
    for (int64_t B = 0; B < nb32 / 8; B++) {
        const int8_t *xs = A[B].q.qs;
        __m512i I[8];
        for (int l = 0; l < 8; l++)
            I[l] = _mm512_setzero_si512();
        for (int c = 0; c < 8; c += 2) {
            int64_t b = 8 * B + c;
            const uint8_t *R0 = rb->R + b * 512, *R1 = R0 + 512;
            __m512i sp0 = _mm512_loadu_si512(rb->SP + b * 16), sp1 = _mm512_loadu_si512(rb->SP + b * 16 + 16);
            for (int g = 0; g < 8; g++) {
                __m512i p0 = dot4(_mm512_loadu_si512(R0 + 64 * g), xs + 32 * c + 4 * g);
                __m512i p1 = dot4(_mm512_loadu_si512(R1 + 64 * g), xs + 32 * c + 32 + 4 * g);
                __m512i pk = _mm512_ternarylogic_epi32(_mm512_slli_epi32(p1, 16), p0, lo16, 0xF8); /* a | (b & c) */
                I[g] = _mm512_dpwssd_epi32(I[g], pk, g < 4 ? sp0 : sp1);
            }
            for (int h = 0; h < 2; h++)
                I[c + h] = _mm512_dpwssd_epi32(I[c + h], _mm512_loadu_si512(rb->O + (b + h) * 16),
                                               _mm512_set1_epi32(ld32((const int8_t *)&A[B].q.bsums[2 * (c + h)])));
        }
        __m512 d = _mm512_mul_ps(_mm512_set1_ps(A[B].q.d), _mm512_loadu_ps(rb->D + B * 16));
        for (int l = 0; l < 8; l++)
            acc[l] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(I[l]), acc[l]);
    }
    _mm512_mask_storeu_ps(y, m, hsum8v(acc));
}

K5 void gemm_any(const uint8_t *w, size_t rbytes, int nr, const uint8_t *act, size_t as,
                 int64_t nt, int64_t n_cols, float *y, int64_t ys, void *tmp, int64_t t_gemv,
                 int plain, const int kind)
{
    if (kind == RP_Q6_K) {
        int64_t nb32 = n_cols / 32;
        uint8_t *base = (uint8_t *)(((uintptr_t)tmp + 63) & ~(uintptr_t)63);
        rp6_buf rb = {base, (int32_t *)(base + nb32 * 512), (int32_t *)(base + nb32 * 576),
                      (float *)(base + nb32 * 640)};
        for (int r = 0; r < 16; r++) /* missing rows repeat the last one; their lanes are not stored */
            rp6_row(w + (size_t)(r < nr ? r : nr - 1) * rbytes, nb32, &rb, r);
        for (int64_t t = 0; t < nt; t++)
            gemm_q6_tok(&rb, nb32, act + (size_t)t * as, y + t * ys, (__mmask16)((1u << nr) - 1));
        return;
    }
    const bool exact = kind == RP_Q4_0 || kind == RP_Q8_0 || kind == RP_Q4_K;
    const int H = kind == RP_Q2_K || kind == RP_Q3_K || kind == RP_Q4_K ? 2 : 1;
    const int KQ = kind >= RP_Q4_K;
    int64_t nb32 = n_cols / 32;
    uint8_t *base = (uint8_t *)(((uintptr_t)tmp + 63) & ~(uintptr_t)63);
    rp_buf rb = {base, (float *)(base + nb32 * 512), (float *)(base + nb32 * 512 + nb32 * H * 64), H,
                 (int32_t *)(base + nb32 * 512 + nb32 * H * 128)};
    for (int r = 0; r < 16; r++) /* missing rows repeat the last one; their lanes are not stored */
        rp_row(w + (size_t)(r < nr ? r : nr - 1) * rbytes, nb32, &rb, r, kind);
    __mmask16 m = (__mmask16)((1u << nr) - 1);
    if (exact) {
        int64_t t = 0;
#define AT(t) act + (size_t)(t) * as, as, y + (t) * ys, ys, m
        if (kind == RP_Q4_0 && !plain) {
            for (; t + 4 <= nt; t += 4)
                gemm_exact_q4_0(&rb, nb32, AT(t), 4);
            for (; t < nt; t++)
                gemm_exact_q4_0(&rb, nb32, AT(t), 1);
        } else if (kind == RP_Q8_0 || kind == RP_Q4_0) {
            const int off = kind == RP_Q8_0 ? 128 : 8;
            for (; t + 2 <= nt; t += 2)
                gemm_exact_lanes8(&rb, nb32, AT(t), 2, off);
            for (; t < nt; t++)
                gemm_exact_lanes8(&rb, nb32, AT(t), 1, off);
        } else if (kind == RP_Q4_K && !plain) { /* pairwise order before t_gemv */
            for (; t + 4 <= nt && t + 4 <= t_gemv; t += 4)
                gemm_exact_q4_K(&rb, nb32, AT(t), 4);
            for (; t < nt && t < t_gemv; t++)
                gemm_exact_q4_K(&rb, nb32, AT(t), 1);
        }
#undef AT
        for (; t < nt; t++)
            gemm_exact_tok(&rb, nb32, act + (size_t)t * as, y + t * ys, m, plain); /* Q4_K only */
        return;
    }
    int64_t t = 0;
    for (; t + 4 <= nt; t += 4)
        gemm_core(&rb, nb32, act + (size_t)t * as, as, y + t * ys, ys, m, 4, H, KQ);
    switch (nt - t) {
    case 3: gemm_core(&rb, nb32, act + (size_t)t * as, as, y + t * ys, ys, m, 3, H, KQ); break;
    case 2: gemm_core(&rb, nb32, act + (size_t)t * as, as, y + t * ys, ys, m, 2, H, KQ); break;
    case 1: gemm_core(&rb, nb32, act + (size_t)t * as, as, y + t * ys, ys, m, 1, H, KQ); break;
    default: break;
    }
}

#define GEMM_FN(fname, kind)                                                                  \
    static KTARGET void fname(const uint8_t *w, size_t rb, int nr, const uint8_t *act,        \
                              size_t as, int64_t nt, int64_t n_cols, float *y, int64_t ys,    \
                              void *tmp, int64_t t_gemv, int plain)                           \
    {                                                                                         \
        gemm_any(w, rb, nr, act, as, nt, n_cols, y, ys, tmp, t_gemv, plain, kind);            \
    }

GEMM_FN(gemm_q4_0, RP_Q4_0)
GEMM_FN(gemm_q4_1, RP_Q4_1)
GEMM_FN(gemm_q5_0, RP_Q5_0)
GEMM_FN(gemm_q5_1, RP_Q5_1)
GEMM_FN(gemm_q8_0, RP_Q8_0)
GEMM_FN(gemm_iq4_nl, RP_IQ4_NL)
GEMM_FN(gemm_q4_K, RP_Q4_K)
GEMM_FN(gemm_q5_K, RP_Q5_K)
GEMM_FN(gemm_q6_K, RP_Q6_K)
GEMM_FN(gemm_q2_K, RP_Q2_K)
GEMM_FN(gemm_q3_K, RP_Q3_K)

void kern_fill_gemm_avx512(kern_gemm_fn tab[GGTYPE_COUNT])
{
    tab[GGTYPE_Q4_0] = gemm_q4_0;
    tab[GGTYPE_Q4_1] = gemm_q4_1;
    tab[GGTYPE_Q5_0] = gemm_q5_0;
    tab[GGTYPE_Q5_1] = gemm_q5_1;
    tab[GGTYPE_Q8_0] = gemm_q8_0;
    tab[GGTYPE_IQ4_NL] = gemm_iq4_nl;
    tab[GGTYPE_Q4_K] = gemm_q4_K;
    tab[GGTYPE_Q5_K] = gemm_q5_K;
    tab[GGTYPE_Q6_K] = gemm_q6_K;
    tab[GGTYPE_Q2_K] = gemm_q2_K;
    tab[GGTYPE_Q3_K] = gemm_q3_K;
}


/* ---- float weights, 512-bit: 4 rows x up to 4 tokens of 16-lane FMAs,
 * the tail through masked loads ---- */

K5 __m512 fl_load16(const uint8_t *w, int64_t i, __mmask16 m, const int kind)
{
    if (kind == KF_F32)
        return _mm512_maskz_loadu_ps(m, (const float *)w + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + i);
    if (kind == KF_F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* one 16-element step of the 4 x NT accumulators (mask m: the tail) */
#define FL512_STEP(m)                                                                         \
    do {                                                                                      \
        __m512 xv[4];                                                                         \
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) xv[t] =                          \
            _mm512_maskz_loadu_ps((m), (const float *)(act + (size_t)t * as) + i);            \
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {                                 \
            __m512 wv = fl_load16(rp[r], i, (m), kind);                                       \
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) acc[r][t] =                  \
                _mm512_fmadd_ps(wv, xv[t], acc[r][t]);                                        \
        }                                                                                     \
    } while (0)

K5 void fl512_sub(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int64_t n,
                  float *y, int64_t ys, const int NT, const int kind)
{
    const uint8_t *rp[4];
    for (int r = 0; r < 4; r++)
        rp[r] = w + (size_t)(r < nr ? r : 0) * rb;
    /* loops over r and t unrolled and the result reduced with constant
     * indices: otherwise gcc keeps acc in memory and stores every
     * accumulator after each fma (half the tile's speed) */
    __m512 acc[4][4];
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        _Pragma("GCC unroll 4") for (int t = 0; t < 4; t++) acc[r][t] = _mm512_setzero_ps();
    const int64_t n16 = n & ~(int64_t)15;
    int64_t i = 0;
    for (; i < n16; i += 16)
        FL512_STEP((__mmask16)0xFFFF);
    if (i < n)
        FL512_STEP((__mmask16)((1u << (n - i)) - 1));
    float o[4][4];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++)
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) o[t][r] = _mm512_reduce_add_ps(acc[r][t]);
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < nr; r++)
            y[t * ys + r] = o[t][r];
}

#define FL512_TILE(fname, kind)                                                               \
    static KTARGET void fname(const uint8_t *w, size_t rb, int nr, const uint8_t *act,        \
                              size_t as, int nt, int64_t nb, float *y, int64_t ys)            \
    {                                                                                         \
        switch (nt) {                                                                         \
        case 4: fl512_sub(w, rb, nr, act, as, nb, y, ys, 4, kind); break;                     \
        case 3: fl512_sub(w, rb, nr, act, as, nb, y, ys, 3, kind); break;                     \
        case 2: fl512_sub(w, rb, nr, act, as, nb, y, ys, 2, kind); break;                     \
        default: fl512_sub(w, rb, nr, act, as, nb, y, ys, 1, kind); break;                    \
        }                                                                                     \
    }

FL512_TILE(tile512_f32, KF_F32)
FL512_TILE(tile512_f16, KF_F16)
FL512_TILE(tile512_bf16, KF_BF16)

void kern_fill_avx512(kern_tile_fn tab[GGTYPE_COUNT])
{
    fill_tiles_avx512(tab);
    tab[GGTYPE_Q4_0] = tile512_q4_0;
    tab[GGTYPE_Q4_1] = tile512_q4_1;
    tab[GGTYPE_Q5_0] = tile512_q5_0;
    tab[GGTYPE_Q5_1] = tile512_q5_1;
    tab[GGTYPE_IQ4_NL] = tile512_iq4_nl;
    tab[GGTYPE_Q8_0] = tile512_q8_0;
    tab[GGTYPE_Q4_K] = tile512_q4_K;
    tab[GGTYPE_Q5_K] = tile512_q5_K;
    tab[GGTYPE_F32] = tile512_f32;
    tab[GGTYPE_F16] = tile512_f16;
    tab[GGTYPE_BF16] = tile512_bf16;
}

#else
void kern_fill_avx512(kern_tile_fn tab[GGTYPE_COUNT])
{
    (void)tab;
}

void kern_fill_gemm_avx512(kern_gemm_fn tab[GGTYPE_COUNT])
{
    (void)tab;
}
#endif
