/* codec: SIMD dequantizers written once for AVX2 and AVX-512. Included by
 * dequant_avx2.c and dequant_avx512.c, which define before including:
 *   TGT                     the target attribute
 *   EMIT_I8(y, v, s)        y[0..15] = (float)(int8)v[k] * s   (s a scalar float)
 *   EMIT_U8_SUB(y, v, s, m) y[0..15] = s * (float)(uint8)v[k] - m
 *   EMIT_U8_ADD(y, v, s, m) y[0..15] = (float)(uint8)v[k] * s + m
 *   SELECT16(y, bits, a, b) y[k] = bit k of bits ? a : b
 *   EMIT_GRID16(y, lo, hi, s, sg)  y[k] = (s * (float)(uint8)byte k of lo:hi) * (bit k of sg ? -1 : 1)
 *   EMIT_IQ1_16(y, lo, hi, s, da, db) y[k] = s * ((float)(int8)byte k of lo:hi + (k < 8 ? da : db))
 * Every kernel here does what its scalar twin in dequant.c does, in 16-lane
 * groups, with the same float operations (identical results). Not a header
 * for anyone else. */

TGT static inline float body_half(const uint8_t *p)
{
    return _cvtsh_ss(cdc_le16(p));
}

/* 16 bytes: (bit k of the 16-bit word w) ? 0x10 : 0, for k = 0..15. */
TGT static inline __m128i body_bits16(uint32_t w)
{
    const __m128i sel = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)128, 1, 2, 4, 8, 16, 32, 64, (char)128);
    const __m128i rep = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m128i bytes = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)w), rep);
    return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(bytes, sel), sel), _mm_set1_epi8(0x10));
}

TGT static void body_q5_0(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F), off = _mm_set1_epi8(16);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q5_0), y += QK5_0) {
        const float d = body_half(b);
        const uint32_t qh = cdc_le32(b + offsetof(block_q5_0, qh));
        const __m128i q = _mm_loadu_si128((const __m128i *)(b + offsetof(block_q5_0, qs)));
        const __m128i lo = _mm_or_si128(_mm_and_si128(q, m4), body_bits16(qh & 0xFFFF));
        const __m128i hi = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 4), m4), body_bits16(qh >> 16));
        EMIT_I8(y, _mm_sub_epi8(lo, off), d);
        EMIT_I8(y + 16, _mm_sub_epi8(hi, off), d);
    }
}

TGT static void body_q5_1(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q5_1), y += QK5_1) {
        const float d = body_half(b), m = body_half(b + 2);
        const uint32_t qh = cdc_le32(b + offsetof(block_q5_1, qh));
        const __m128i q = _mm_loadu_si128((const __m128i *)(b + offsetof(block_q5_1, qs)));
        EMIT_U8_ADD(y, _mm_or_si128(_mm_and_si128(q, m4), body_bits16(qh & 0xFFFF)), d, m);
        EMIT_U8_ADD(y + 16, _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 4), m4), body_bits16(qh >> 16)), d, m);
    }
}

TGT static void body_q2_K(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m2 = _mm_set1_epi8(3);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q2_K)) {
        const float d = body_half(b + offsetof(block_q2_K, d)), min = body_half(b + offsetof(block_q2_K, dmin));
        const uint8_t *sc = b + offsetof(block_q2_K, scales);
        const uint8_t *q = b + offsetof(block_q2_K, qs);
        int is = 0;
        for (int n = 0; n < QK_K; n += 128, q += 32) {
            const __m128i q0 = _mm_loadu_si128((const __m128i *)q);
            const __m128i q1 = _mm_loadu_si128((const __m128i *)(q + 16));
            for (int shift = 0; shift < 8; shift += 2) {
                const __m128i sh = _mm_cvtsi32_si128(shift);
                for (int half = 0; half < 2; half++, y += 16) {
                    const uint8_t s = sc[is++];
                    const float dl = d * (s & 0xF), ml = min * (s >> 4);
                    const __m128i v = _mm_and_si128(_mm_srl_epi16(half ? q1 : q0, sh), m2);
                    EMIT_U8_SUB(y, v, dl, ml);
                }
            }
        }
    }
}

TGT static void body_q3_K(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m2 = _mm_set1_epi8(3), four = _mm_set1_epi8(4);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q3_K)) {
        const float d_all = body_half(b + offsetof(block_q3_K, d));
        const uint8_t *q = b + offsetof(block_q3_K, qs);
        const uint8_t *hm = b + offsetof(block_q3_K, hmask);
        const uint8_t *s12 = b + offsetof(block_q3_K, scales);
        int8_t scales[16];
        for (int j = 0; j < 16; j++) {
            const int lo = j < 8 ? (s12[j] & 0xF) : (s12[j - 8] >> 4);
            const int hi = (s12[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
            scales[j] = (int8_t)(lo | (hi << 4));
        }
        const __m128i h0 = _mm_loadu_si128((const __m128i *)hm);
        const __m128i h1 = _mm_loadu_si128((const __m128i *)(hm + 16));
        int is = 0, bit = 0;
        for (int n = 0; n < QK_K; n += 128, q += 32) {
            const __m128i q0 = _mm_loadu_si128((const __m128i *)q);
            const __m128i q1 = _mm_loadu_si128((const __m128i *)(q + 16));
            for (int shift = 0; shift < 8; shift += 2, bit++) {
                const __m128i sh = _mm_cvtsi32_si128(shift);
                const __m128i mbit = _mm_set1_epi8((char)(1 << bit));
                for (int half = 0; half < 2; half++, y += 16) {
                    const float dl = d_all * (scales[is++] - 32);
                    const __m128i v = _mm_and_si128(_mm_srl_epi16(half ? q1 : q0, sh), m2);
                    /* minus 4 where the hmask bit is clear */
                    const __m128i hb = _mm_and_si128(half ? h1 : h0, mbit);
                    const __m128i sub = _mm_andnot_si128(_mm_cmpeq_epi8(hb, mbit), four);
                    EMIT_I8(y, _mm_sub_epi8(v, sub), dl);
                }
            }
        }
    }
}

/* E8M0 exponent to 2^(x-127), halved (ggml_e8m0_to_fp32_half). */
static inline float body_e8m0_half(uint8_t x)
{
    const uint32_t bits = x < 2 ? UINT32_C(0x00200000) << x : (uint32_t)(x - 1) << 23;
    return cdc_f32_from_bits(bits);
}

static inline float body_ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7F)
        return 0.0f;
    const uint32_t e = (x >> 3) & 0xF, m = x & 7;
    if (e == 0)
        return (float)m * 0x1.0p-10f;
    return cdc_f32_from_bits(((e + 119) << 23) | (m << 20));
}

TGT static void body_mxfp4(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i kv = _mm_loadu_si128((const __m128i *)qt_kvalues_fp4);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_mxfp4), y += QK_MXFP4) {
        const float d = body_e8m0_half(b[0]);
        const __m128i q = _mm_loadu_si128((const __m128i *)(b + 1));
        EMIT_I8(y, _mm_shuffle_epi8(kv, _mm_and_si128(q, m4)), d);
        EMIT_I8(y + 16, _mm_shuffle_epi8(kv, _mm_and_si128(_mm_srli_epi16(q, 4), m4)), d);
    }
}

TGT static void body_nvfp4(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i kv = _mm_loadu_si128((const __m128i *)qt_kvalues_fp4);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_nvfp4)) {
        for (int s = 0; s < QK_NVFP4 / QK_NVFP4_SUB; s++, y += QK_NVFP4_SUB) {
            const float d = body_ue4m3_half(b[s]);
            const __m128i q = _mm_loadl_epi64((const __m128i *)(b + 4 + 8 * s));
            const __m128i v = _mm_unpacklo_epi64(_mm_and_si128(q, m4), _mm_and_si128(_mm_srli_epi16(q, 4), m4));
            EMIT_I8(y, _mm_shuffle_epi8(kv, v), d);
        }
    }
}

TGT static void body_tq2_0(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    const __m128i m2 = _mm_set1_epi8(3), one = _mm_set1_epi8(1);
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_tq2_0)) {
        const float d = body_half(b + offsetof(block_tq2_0, d));
        for (int j = 0; j < QK_K / 4; j += 32) {
            const __m128i q0 = _mm_loadu_si128((const __m128i *)(b + j));
            const __m128i q1 = _mm_loadu_si128((const __m128i *)(b + j + 16));
            for (int l = 0; l < 4; l++, y += 32) {
                const __m128i sh = _mm_cvtsi32_si128(2 * l);
                EMIT_I8(y, _mm_sub_epi8(_mm_and_si128(_mm_srl_epi16(q0, sh), m2), one), d);
                EMIT_I8(y + 16, _mm_sub_epi8(_mm_and_si128(_mm_srl_epi16(q1, sh), m2), one), d);
            }
        }
    }
}

/* q1_0: bit set -> d, clear -> -d (a select, no arithmetic on the values). */
TGT static void body_q1_0(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q1_0)) {
        const float d = body_half(b), neg_d = -d;
        for (int k = 0; k < QK1_0 / 16; k++, y += 16)
            SELECT16(y, cdc_le16(b + 2 + 2 * k), d, neg_d);
    }
}

/* ---- IQ types: 16 values (two 8-value grid rows) at a time ---- */

/* The branch-free deltas below build the bits of +-0.125 (IQ1S_DELTA and
 * IQ1M_DELTA in quant_blocks.h); the random-block test compares them with the
 * scalar code, which uses the constants. */

TGT static void body_iq2_xxs(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq2_xxs)) {
        const float d = body_half(b);
        const uint8_t *qs = b + offsetof(block_iq2_xxs, qs);
        for (int ib32 = 0; ib32 < QK_K / 32; ib32++) {
            const uint8_t *aux8 = qs + 8 * ib32;
            const uint32_t aux1 = cdc_le32(aux8 + 4);
            const float db = d * (0.5f + (aux1 >> 28)) * 0.25f;
            for (int l = 0; l < 4; l += 2, y += 16) {
                const uint32_t sg = qt_ksigns_iq2xs[(aux1 >> 7 * l) & 127] |
                                    ((uint32_t)qt_ksigns_iq2xs[(aux1 >> 7 * (l + 1)) & 127] << 8);
                EMIT_GRID16(y, qt_iq2xxs_grid[aux8[l]], qt_iq2xxs_grid[aux8[l + 1]], db, sg);
            }
        }
    }
}

TGT static void body_iq2_xs(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq2_xs)) {
        const float d = body_half(b);
        const uint8_t *qs = b + offsetof(block_iq2_xs, qs);
        const uint8_t *sc = b + offsetof(block_iq2_xs, scales);
        for (int ib32 = 0; ib32 < QK_K / 32; ib32++) {
            const float db[2] = {d * (0.5f + (sc[ib32] & 0xf)) * 0.25f, d * (0.5f + (sc[ib32] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l += 2, y += 16) {
                const uint16_t q0 = cdc_le16(qs + 2 * (4 * ib32 + l)), q1 = cdc_le16(qs + 2 * (4 * ib32 + l + 1));
                const uint32_t sg = qt_ksigns_iq2xs[q0 >> 9] | ((uint32_t)qt_ksigns_iq2xs[q1 >> 9] << 8);
                EMIT_GRID16(y, qt_iq2xs_grid[q0 & 511], qt_iq2xs_grid[q1 & 511], db[l / 2], sg);
            }
        }
    }
}

TGT static void body_iq2_s(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq2_s)) {
        const float d = body_half(b);
        const uint8_t *qs = b + offsetof(block_iq2_s, qs);
        const uint8_t *qh = b + offsetof(block_iq2_s, qh);
        const uint8_t *sc = b + offsetof(block_iq2_s, scales);
        const uint8_t *signs = qs + QK_K / 8;
        for (int ib32 = 0; ib32 < QK_K / 32; ib32++, qs += 4, signs += 4) {
            const float db[2] = {d * (0.5f + (sc[ib32] & 0xf)) * 0.25f, d * (0.5f + (sc[ib32] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l += 2, y += 16) {
                const uint64_t g0 = qt_iq2s_grid[qs[l] | ((qh[ib32] << (8 - 2 * l)) & 0x300)];
                const uint64_t g1 = qt_iq2s_grid[qs[l + 1] | ((qh[ib32] << (8 - 2 * (l + 1))) & 0x300)];
                EMIT_GRID16(y, g0, g1, db[l / 2], signs[l] | ((uint32_t)signs[l + 1] << 8));
            }
        }
    }
}

TGT static void body_iq3_xxs(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq3_xxs)) {
        const float d = body_half(b);
        const uint8_t *qs = b + offsetof(block_iq3_xxs, qs);
        const uint8_t *scales_and_signs = qs + QK_K / 4;
        for (int ib32 = 0; ib32 < QK_K / 32; ib32++, qs += 8) {
            const uint32_t aux32 = cdc_le32(scales_and_signs + 4 * ib32);
            const float db = d * (0.5f + (aux32 >> 28)) * 0.5f;
            for (int l = 0; l < 4; l += 2, y += 16) {
                const uint32_t sg = qt_ksigns_iq2xs[(aux32 >> 7 * l) & 127] |
                                    ((uint32_t)qt_ksigns_iq2xs[(aux32 >> 7 * (l + 1)) & 127] << 8);
                const uint64_t lo = qt_iq3xxs_grid[qs[2 * l]] | ((uint64_t)qt_iq3xxs_grid[qs[2 * l + 1]] << 32);
                const uint64_t hi = qt_iq3xxs_grid[qs[2 * l + 2]] | ((uint64_t)qt_iq3xxs_grid[qs[2 * l + 3]] << 32);
                EMIT_GRID16(y, lo, hi, db, sg);
            }
        }
    }
}

TGT static void body_iq3_s(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq3_s)) {
        const float d = body_half(b);
        const uint8_t *qs = b + offsetof(block_iq3_s, qs);
        const uint8_t *qh = b + offsetof(block_iq3_s, qh);
        const uint8_t *signs = b + offsetof(block_iq3_s, signs);
        const uint8_t *sc = b + offsetof(block_iq3_s, scales);
        for (int ib32 = 0; ib32 < QK_K / 32; ib32 += 2, qh += 2) {
            const float db[2] = {d * (1 + 2 * (sc[ib32 / 2] & 0xf)), d * (1 + 2 * (sc[ib32 / 2] >> 4))};
            for (int h = 0; h < 2; h++, qs += 8, signs += 4) {
                uint64_t g[4];
                for (int l = 0; l < 4; l++)
                    g[l] = qt_iq3s_grid[qs[2 * l] | ((qh[h] << (8 - 2 * l)) & 256)] |
                           ((uint64_t)qt_iq3s_grid[qs[2 * l + 1] | ((qh[h] << (7 - 2 * l)) & 256)] << 32);
                EMIT_GRID16(y, g[0], g[1], db[h], signs[0] | ((uint32_t)signs[1] << 8));
                EMIT_GRID16(y + 16, g[2], g[3], db[h], signs[2] | ((uint32_t)signs[3] << 8));
                y += 32;
            }
        }
    }
}

TGT static void body_iq1_s(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq1_s)) {
        const float d = body_half(b);
        const uint8_t *qs = b + offsetof(block_iq1_s, qs);
        const uint8_t *qhp = b + offsetof(block_iq1_s, qh);
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4) {
            const uint16_t qh = cdc_le16(qhp + 2 * ib);
            const float dl = d * (2 * ((qh >> 12) & 7) + 1);
            const float delta = cdc_f32_from_bits(0x3e000000u | ((uint32_t)(qh & 0x8000) << 16)); /* +-0.125 */
            for (int l = 0; l < 4; l += 2, y += 16)
                EMIT_IQ1_16(y, qt_iq1s_grid[qs[l] | (((qh >> 3 * l) & 7) << 8)],
                            qt_iq1s_grid[qs[l + 1] | (((qh >> 3 * (l + 1)) & 7) << 8)], dl, delta, delta);
        }
    }
}

TGT static void body_iq1_m(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_iq1_m)) {
        const uint8_t *sc8 = b + offsetof(block_iq1_m, scales);
        const uint16_t s0 = cdc_le16(sc8), s1 = cdc_le16(sc8 + 2), s2 = cdc_le16(sc8 + 4), s3 = cdc_le16(sc8 + 6);
        const float d = _cvtsh_ss((uint16_t)((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000)));
        const uint8_t *qs = b + offsetof(block_iq1_m, qs);
        const uint8_t *qh = b + offsetof(block_iq1_m, qh);
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4, qh += 2, y += 32) {
            const uint16_t sc = cdc_le16(sc8 + 2 * (ib / 2));
            const float dl1 = d * (2 * ((sc >> (6 * (ib % 2) + 0)) & 0x7) + 1);
            const float dl2 = d * (2 * ((sc >> (6 * (ib % 2) + 3)) & 0x7) + 1);
            /* +-IQ1M_DELTA (0.125 = 0x3e000000) without branches: the sign bit from bit 3 of each nibble */
            const float dt0 = cdc_f32_from_bits(0x3e000000u | ((uint32_t)(qh[0] & 0x08) << 28));
            const float dt1 = cdc_f32_from_bits(0x3e000000u | ((uint32_t)(qh[0] & 0x80) << 24));
            const float dt2 = cdc_f32_from_bits(0x3e000000u | ((uint32_t)(qh[1] & 0x08) << 28));
            const float dt3 = cdc_f32_from_bits(0x3e000000u | ((uint32_t)(qh[1] & 0x80) << 24));
            EMIT_IQ1_16(y, qt_iq1s_grid[qs[0] | ((qh[0] << 8) & 0x700)], qt_iq1s_grid[qs[1] | ((qh[0] << 4) & 0x700)],
                        dl1, dt0, dt1);
            EMIT_IQ1_16(y + 16, qt_iq1s_grid[qs[2] | ((qh[1] << 8) & 0x700)],
                        qt_iq1s_grid[qs[3] | ((qh[1] << 4) & 0x700)], dl2, dt2, dt3);
        }
    }
}

TGT static void body_q8_1(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q8_1), y += QK8_1) {
        const float d = body_half(b);
        EMIT_I8(y, _mm_loadu_si128((const __m128i *)(b + 4)), d);
        EMIT_I8(y + 16, _mm_loadu_si128((const __m128i *)(b + 20)), d);
    }
}

TGT static void body_q8_K(const void *src, float *y, uint64_t nb)
{
    const uint8_t *b = src;
    for (uint64_t i = 0; i < nb; i++, b += sizeof(block_q8_K)) {
        const float d = cdc_f32_from_bits(cdc_le32(b));
        for (int j = 0; j < QK_K; j += 16, y += 16)
            EMIT_I8(y, _mm_loadu_si128((const __m128i *)(b + 4 + j)), d);
    }
}

/* Add the kernels of this body to a path's table. */
static void body_fill(cdc_dequant_fn t[GGTYPE_COUNT])
{
    t[GGTYPE_Q5_0] = body_q5_0;
    t[GGTYPE_Q5_1] = body_q5_1;
    t[GGTYPE_Q2_K] = body_q2_K;
    t[GGTYPE_Q3_K] = body_q3_K;
    t[GGTYPE_MXFP4] = body_mxfp4;
    t[GGTYPE_NVFP4] = body_nvfp4;
    t[GGTYPE_TQ2_0] = body_tq2_0;
    t[GGTYPE_Q1_0] = body_q1_0;
    t[GGTYPE_Q8_1] = body_q8_1;
    t[GGTYPE_Q8_K] = body_q8_K;
    t[GGTYPE_IQ2_XXS] = body_iq2_xxs;
    t[GGTYPE_IQ2_XS] = body_iq2_xs;
    t[GGTYPE_IQ2_S] = body_iq2_s;
    t[GGTYPE_IQ3_XXS] = body_iq3_xxs;
    t[GGTYPE_IQ3_S] = body_iq3_s;
    t[GGTYPE_IQ1_S] = body_iq1_s;
    t[GGTYPE_IQ1_M] = body_iq1_m;
}
