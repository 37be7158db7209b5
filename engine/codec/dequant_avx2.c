/* codec: AVX2 dequantizers (compiled for avx2+fma+f16c by function attribute,
 * chosen at run time). Each computes the same float operations as its scalar
 * twin in dequant.c (no fused multiply-add), so the results are identical. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stddef.h>

#include "codec_internal.h"
#include "quant_blocks.h"
#include "quant_tables.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define TGT __attribute__((target("avx2,fma,f16c")))

TGT static inline float half_f(const uint8_t *p)
{
    return _cvtsh_ss(cdc_le16(p));
}

/* 8 unsigned / signed bytes at p, widened to 8 floats. */
TGT static inline __m256 u8x8_ps(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
}

TGT static inline __m256 i8x8_ps(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

TGT static void dq_f16(const void *src, float *y, uint64_t n)
{
    const uint8_t *p = src;
    uint64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; k++)
            _mm256_storeu_ps(y + i + 8 * k,
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * (i + 8 * k)))));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
    for (; i < n; i++)
        y[i] = _cvtsh_ss(cdc_le16(p + 2 * i));
}

TGT static void dq_bf16(const void *src, float *y, uint64_t n)
{
    const uint8_t *p = src;
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + 2 * i));
        __m256i lo = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(v));
        __m256i hi = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(v, 1));
        _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)));
        _mm256_storeu_ps(y + i + 8, _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16)));
    }
    for (; i < n; i++)
        y[i] = cdc_bf16_to_f32(cdc_le16(p + 2 * i));
}

TGT static void dq_q4_0(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m256i off = _mm256_set1_epi32(8);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q4_0), y += QK4_0) {
        const __m256 d = _mm256_set1_ps(half_f(b));
        const __m128i q = _mm_loadu_si128((const __m128i *)(b + 2));
        const __m128i lo = _mm_and_si128(q, m4), hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
        const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
        for (int k = 0; k < 4; k++) {
            __m256i x = _mm256_sub_epi32(_mm256_cvtepu8_epi32(parts[k]), off);
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(x), d));
        }
    }
}

TGT static void dq_q4_1(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q4_1), y += QK4_1) {
        const __m256 d = _mm256_set1_ps(half_f(b)), m = _mm256_set1_ps(half_f(b + 2));
        const __m128i q = _mm_loadu_si128((const __m128i *)(b + 4));
        const __m128i lo = _mm_and_si128(q, m4), hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
        const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
        for (int k = 0; k < 4; k++)
            _mm256_storeu_ps(y + 8 * k, _mm256_add_ps(_mm256_mul_ps(u8x8_ps(parts[k]), d), m));
    }
}

TGT static void dq_q8_0(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q8_0), y += QK8_0) {
        const __m256 d = _mm256_set1_ps(half_f(b));
        const __m128i q0 = _mm_loadu_si128((const __m128i *)(b + 2));
        const __m128i q1 = _mm_loadu_si128((const __m128i *)(b + 18));
        _mm256_storeu_ps(y + 0, _mm256_mul_ps(i8x8_ps(q0), d));
        _mm256_storeu_ps(y + 8, _mm256_mul_ps(i8x8_ps(_mm_srli_si128(q0, 8)), d));
        _mm256_storeu_ps(y + 16, _mm256_mul_ps(i8x8_ps(q1), d));
        _mm256_storeu_ps(y + 24, _mm256_mul_ps(i8x8_ps(_mm_srli_si128(q1, 8)), d));
    }
}

TGT static void dq_iq4_nl(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i kv = _mm_loadu_si128((const __m128i *)qt_kvalues_iq4nl);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq4_nl), y += QK4_NL) {
        const __m256 d = _mm256_set1_ps(half_f(b));
        const __m128i q = _mm_loadu_si128((const __m128i *)(b + 2));
        const __m128i lo = _mm_shuffle_epi8(kv, _mm_and_si128(q, m4));
        const __m128i hi = _mm_shuffle_epi8(kv, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
        const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
        for (int k = 0; k < 4; k++)
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(d, i8x8_ps(parts[k])));
    }
}

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

TGT static void dq_q4_K(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q4_K)) {
        const float d = half_f(b), min = half_f(b + 2);
        const uint8_t *sc = b + offsetof(block_q4_K, scales);
        const uint8_t *q = b + offsetof(block_q4_K, qs);
        for (int is = 0; is < 8; is += 2, q += 32, y += 64) {
            uint8_t s, m;
            scale_min_k4(is, sc, &s, &m);
            const __m256 d1 = _mm256_set1_ps(d * s), m1 = _mm256_set1_ps(min * m);
            scale_min_k4(is + 1, sc, &s, &m);
            const __m256 d2 = _mm256_set1_ps(d * s), m2 = _mm256_set1_ps(min * m);
            for (int h = 0; h < 2; h++) {
                const __m128i v = _mm_loadu_si128((const __m128i *)(q + 16 * h));
                const __m128i lo = _mm_and_si128(v, m4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
                float *yl = y + 16 * h, *yh = y + 32 + 16 * h;
                _mm256_storeu_ps(yl, _mm256_sub_ps(_mm256_mul_ps(d1, u8x8_ps(lo)), m1));
                _mm256_storeu_ps(yl + 8, _mm256_sub_ps(_mm256_mul_ps(d1, u8x8_ps(_mm_srli_si128(lo, 8))), m1));
                _mm256_storeu_ps(yh, _mm256_sub_ps(_mm256_mul_ps(d2, u8x8_ps(hi)), m2));
                _mm256_storeu_ps(yh + 8, _mm256_sub_ps(_mm256_mul_ps(d2, u8x8_ps(_mm_srli_si128(hi, 8))), m2));
            }
        }
    }
}

TGT static void dq_q5_K(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F), sixteen = _mm_set1_epi8(16);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q5_K)) {
        const float d = half_f(b), min = half_f(b + 2);
        const uint8_t *sc = b + offsetof(block_q5_K, scales);
        const uint8_t *ql = b + offsetof(block_q5_K, qs);
        const uint8_t *qh = b + offsetof(block_q5_K, qh);
        int bit = 0;
        for (int is = 0; is < 8; is += 2, ql += 32, y += 64, bit += 2) {
            uint8_t s, m;
            scale_min_k4(is, sc, &s, &m);
            const __m256 d1 = _mm256_set1_ps(d * s), m1 = _mm256_set1_ps(min * m);
            scale_min_k4(is + 1, sc, &s, &m);
            const __m256 d2 = _mm256_set1_ps(d * s), m2 = _mm256_set1_ps(min * m);
            const __m128i u1 = _mm_set1_epi8((char)(1 << bit)), u2 = _mm_set1_epi8((char)(2 << bit));
            for (int h = 0; h < 2; h++) {
                const __m128i v = _mm_loadu_si128((const __m128i *)(ql + 16 * h));
                const __m128i hb = _mm_loadu_si128((const __m128i *)(qh + 16 * h));
                /* +16 where the high bit is set */
                const __m128i h1 = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(hb, u1), u1), sixteen);
                const __m128i h2 = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(hb, u2), u2), sixteen);
                const __m128i lo = _mm_or_si128(_mm_and_si128(v, m4), h1);
                const __m128i hi = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(v, 4), m4), h2);
                float *yl = y + 16 * h, *yh = y + 32 + 16 * h;
                _mm256_storeu_ps(yl, _mm256_sub_ps(_mm256_mul_ps(d1, u8x8_ps(lo)), m1));
                _mm256_storeu_ps(yl + 8, _mm256_sub_ps(_mm256_mul_ps(d1, u8x8_ps(_mm_srli_si128(lo, 8))), m1));
                _mm256_storeu_ps(yh, _mm256_sub_ps(_mm256_mul_ps(d2, u8x8_ps(hi)), m2));
                _mm256_storeu_ps(yh + 8, _mm256_sub_ps(_mm256_mul_ps(d2, u8x8_ps(_mm_srli_si128(hi, 8))), m2));
            }
        }
    }
}

TGT static void dq_q6_K(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F), m2 = _mm_set1_epi8(3), off = _mm_set1_epi8(32);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q6_K)) {
        const float d = half_f(b + offsetof(block_q6_K, d));
        const uint8_t *ql = b + offsetof(block_q6_K, ql);
        const uint8_t *qh = b + offsetof(block_q6_K, qh);
        const int8_t *sc = (const int8_t *)(b + offsetof(block_q6_K, scales));
        for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int h = 0; h < 2; h++) { /* l = 16h .. 16h+15, scale index is = h */
                const __m128i a = _mm_loadu_si128((const __m128i *)(ql + 16 * h));
                const __m128i c = _mm_loadu_si128((const __m128i *)(ql + 32 + 16 * h));
                const __m128i hb = _mm_loadu_si128((const __m128i *)(qh + 16 * h));
                __m128i q[4];
                q[0] = _mm_or_si128(_mm_and_si128(a, m4), _mm_slli_epi16(_mm_and_si128(hb, m2), 4));
                q[1] = _mm_or_si128(_mm_and_si128(c, m4), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 2), m2), 4));
                q[2] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), m4),
                                    _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 4), m2), 4));
                q[3] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(c, 4), m4),
                                    _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 6), m2), 4));
                for (int k = 0; k < 4; k++) {
                    const __m128i v = _mm_sub_epi8(q[k], off);
                    const __m256 s = _mm256_set1_ps(d * sc[h + 2 * k]);
                    float *yo = y + 32 * k + 16 * h;
                    _mm256_storeu_ps(yo, _mm256_mul_ps(s, i8x8_ps(v)));
                    _mm256_storeu_ps(yo + 8, _mm256_mul_ps(s, i8x8_ps(_mm_srli_si128(v, 8))));
                }
            }
        }
    }
}

TGT static void dq_iq4_xs(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i kv = _mm_loadu_si128((const __m128i *)qt_kvalues_iq4nl);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq4_xs)) {
        const float d = half_f(b);
        const uint16_t scales_h = cdc_le16(b + offsetof(block_iq4_xs, scales_h));
        const uint8_t *scales_l = b + offsetof(block_iq4_xs, scales_l);
        const uint8_t *qs = b + offsetof(block_iq4_xs, qs);
        for (int ib = 0; ib < QK_K / 32; ib++, y += 32, qs += 16) {
            const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
            const __m256 dl = _mm256_set1_ps(d * (ls - 32));
            const __m128i q = _mm_loadu_si128((const __m128i *)qs);
            const __m128i lo = _mm_shuffle_epi8(kv, _mm_and_si128(q, m4));
            const __m128i hi = _mm_shuffle_epi8(kv, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
            const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
            for (int k = 0; k < 4; k++)
                _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(dl, i8x8_ps(parts[k])));
        }
    }
}

#define EMIT_I8(y, v, s)                                                                      \
    do {                                                                                      \
        const __m256 s_ = _mm256_set1_ps(s);                                                  \
        _mm256_storeu_ps((y), _mm256_mul_ps(i8x8_ps(v), s_));                                 \
        _mm256_storeu_ps((y) + 8, _mm256_mul_ps(i8x8_ps(_mm_srli_si128((v), 8)), s_));        \
    } while (0)
#define EMIT_U8_SUB(y, v, s, m)                                                                        \
    do {                                                                                               \
        const __m256 s_ = _mm256_set1_ps(s), m_ = _mm256_set1_ps(m);                                   \
        _mm256_storeu_ps((y), _mm256_sub_ps(_mm256_mul_ps(s_, u8x8_ps(v)), m_));                       \
        _mm256_storeu_ps((y) + 8, _mm256_sub_ps(_mm256_mul_ps(s_, u8x8_ps(_mm_srli_si128((v), 8))), m_)); \
    } while (0)
#define EMIT_U8_ADD(y, v, s, m)                                                                        \
    do {                                                                                               \
        const __m256 s_ = _mm256_set1_ps(s), m_ = _mm256_set1_ps(m);                                   \
        _mm256_storeu_ps((y), _mm256_add_ps(_mm256_mul_ps(u8x8_ps(v), s_), m_));                       \
        _mm256_storeu_ps((y) + 8, _mm256_add_ps(_mm256_mul_ps(u8x8_ps(_mm_srli_si128((v), 8)), s_), m_)); \
    } while (0)
#define SELECT16(y, bits, a, b)                                                                   \
    do {                                                                                          \
        const __m256i sel_ = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);                       \
        const __m256 a_ = _mm256_set1_ps(a), b_ = _mm256_set1_ps(b);                              \
        const __m256i lo_ = _mm256_and_si256(_mm256_set1_epi32((int)((bits) & 0xFF)), sel_);       \
        const __m256i hi_ = _mm256_and_si256(_mm256_set1_epi32((int)((bits) >> 8)), sel_);         \
        _mm256_storeu_ps((y), _mm256_blendv_ps(b_, a_, _mm256_castsi256_ps(_mm256_cmpeq_epi32(lo_, sel_))));     \
        _mm256_storeu_ps((y) + 8, _mm256_blendv_ps(b_, a_, _mm256_castsi256_ps(_mm256_cmpeq_epi32(hi_, sel_)))); \
    } while (0)
/* 8 lanes: bit k of `bits` (k < 8) set -> the sign bit, else 0 */
TGT static inline __m256 sign8(uint32_t bits)
{
    const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i m = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)(bits & 0xFF)), sel), sel);
    return _mm256_castsi256_ps(_mm256_and_si256(m, _mm256_set1_epi32(INT32_MIN)));
}
/* (s * grid) negated where the sign bit is set (the scalar code's apply_sign) */
#define EMIT_GRID16(y, lo, hi, s, sg)                                                                      \
    do {                                                                                                   \
        const __m256 s_ = _mm256_set1_ps(s);                                                               \
        _mm256_storeu_ps((y), _mm256_xor_ps(_mm256_mul_ps(s_, u8x8_ps(_mm_cvtsi64_si128((long long)(lo)))), \
                                            sign8(sg)));                                                   \
        _mm256_storeu_ps((y) + 8, _mm256_xor_ps(_mm256_mul_ps(s_, u8x8_ps(_mm_cvtsi64_si128((long long)(hi)))), \
                                                sign8((sg) >> 8)));                                        \
    } while (0)
#define EMIT_IQ1_16(y, lo, hi, s, da, db)                                                                  \
    do {                                                                                                   \
        const __m256 s_ = _mm256_set1_ps(s);                                                               \
        _mm256_storeu_ps((y), _mm256_mul_ps(s_, _mm256_add_ps(i8x8_ps(_mm_cvtsi64_si128((long long)(lo))), \
                                                              _mm256_set1_ps(da))));                       \
        _mm256_storeu_ps((y) + 8, _mm256_mul_ps(s_, _mm256_add_ps(i8x8_ps(_mm_cvtsi64_si128((long long)(hi))), \
                                                                  _mm256_set1_ps(db))));                   \
    } while (0)
#include "dequant_simd_body.h"

void cdc_dequant_avx2_table(cdc_dequant_fn t[GGTYPE_COUNT])
{
    body_fill(t);
    t[GGTYPE_F16] = dq_f16;
    t[GGTYPE_BF16] = dq_bf16;
    t[GGTYPE_Q4_0] = dq_q4_0;
    t[GGTYPE_Q4_1] = dq_q4_1;
    t[GGTYPE_Q8_0] = dq_q8_0;
    t[GGTYPE_Q4_K] = dq_q4_K;
    t[GGTYPE_Q5_K] = dq_q5_K;
    t[GGTYPE_Q6_K] = dq_q6_K;
    t[GGTYPE_IQ4_NL] = dq_iq4_nl;
    t[GGTYPE_IQ4_XS] = dq_iq4_xs;
}
#endif
