/* codec internals shared by the codec's own files (not a public API):
 * inline f16/bf16 conversions and the per-path dequantizer tables. */
#ifndef GGSCOPE_CODEC_INTERNAL_H
#define GGSCOPE_CODEC_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "ggtype.h"

static inline uint32_t cdc_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float cdc_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE half -> float, the portable bit-exact way ggml computes it
 * (exact for every finite value; NaNs keep their payload, quieted). */
static inline float cdc_f16_to_f32(uint16_t h)
{
    const uint32_t w = (uint32_t)h << 16;
    const uint32_t sign = w & UINT32_C(0x80000000);
    const uint32_t two_w = w + w;
    /* normal (and inf/NaN): rebias the exponent by 0xE0 and scale by 2^-112 */
    const float normalized = cdc_f32_from_bits((two_w >> 4) + (UINT32_C(0xE0) << 23)) * 0x1.0p-112f;
    /* subnormal: the mantissa placed under the exponent of 0.5, minus 0.5 */
    const float denormalized = cdc_f32_from_bits((two_w >> 17) | (UINT32_C(126) << 23)) - 0.5f;
    const uint32_t bits = sign | (two_w < (UINT32_C(1) << 27) ? cdc_f32_bits(denormalized)
                                                              : cdc_f32_bits(normalized));
    return cdc_f32_from_bits(bits);
}

/* float -> IEEE half, round to nearest even (as F16C with imm 0, and as
 * ggml's portable code: NaN -> 0x7E00 with the sign kept). */
static inline uint16_t cdc_f32_to_f16(float f)
{
    float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
    const uint32_t w = cdc_f32_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & UINT32_C(0x80000000);
    uint32_t bias = shl1_w & UINT32_C(0xFF000000);
    if (bias < UINT32_C(0x71000000))
        bias = UINT32_C(0x71000000);
    base = cdc_f32_from_bits((bias >> 1) + UINT32_C(0x07800000)) + base;
    const uint32_t bits = cdc_f32_bits(base);
    const uint32_t exp_bits = (bits >> 13) & UINT32_C(0x00007C00);
    const uint32_t mantissa_bits = bits & UINT32_C(0x00000FFF);
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return (uint16_t)((sign >> 16) | (shl1_w > UINT32_C(0xFF000000) ? UINT32_C(0x7E00) : nonsign));
}

static inline float cdc_bf16_to_f32(uint16_t h)
{
    return cdc_f32_from_bits((uint32_t)h << 16);
}

/* float -> bfloat16 as ggml_compute_fp32_to_bf16: NaNs are truncated and
 * forced quiet (bit 6), everything else rounds to nearest even. */
static inline uint16_t cdc_f32_to_bf16(float f)
{
    const uint32_t u = cdc_f32_bits(f);
    if ((u & UINT32_C(0x7fffffff)) > UINT32_C(0x7f800000))
        return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (UINT32_C(0x7fff) + ((u >> 16) & 1))) >> 16);
}

/* Little-endian loads from unaligned block bytes. */
static inline uint16_t cdc_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t cdc_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline float cdc_half(const uint8_t *p)
{
    return cdc_f16_to_f32(cdc_le16(p));
}

/* A dequantizer: `nb` whole blocks (or elements for block size 1) of `src`
 * to `dst`. */
typedef void (*cdc_dequant_fn)(const void *src, float *dst, uint64_t nb);

/* Per-path tables indexed by type id; NULL = the path has no kernel for the type. */
extern const cdc_dequant_fn cdc_dequant_scalar[GGTYPE_COUNT];
/* Fill `t` with the AVX2 / AVX-512 kernels (entries left alone where the
 * path has none). Only called when the CPU has the features. */
void cdc_dequant_avx2_table(cdc_dequant_fn t[GGTYPE_COUNT]);
void cdc_dequant_avx512_table(cdc_dequant_fn t[GGTYPE_COUNT]);

#endif
