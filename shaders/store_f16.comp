#version 450
/* Convert n F32 values to F16 (round to nearest even, as ggml does) and
 * store them at half-element dst_off of a word-addressed F16 buffer.
 * One invocation per destination word; edge words keep their other half. */
layout(binding = 0) readonly buffer S { float src[]; };
layout(binding = 1) buffer D { uint dw[]; };
#include "common.glsl"

layout(push_constant) uniform P {
    uint src_off;
    uint dst_off;  /* in halves */
    uint n;
} p;

/* IEEE binary16 from binary32, round to nearest even (subnormals, inf, nan). */
uint f32_to_f16(float f)
{
    uint x = floatBitsToUint(f);
    uint sign = (x >> 16) & 0x8000u;
    uint ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u)  /* inf or nan */
        return sign | 0x7C00u | (ax > 0x7F800000u ? 0x200u : 0u);
    if (ax >= 0x477FF000u)  /* rounds to >= 65520: inf */
        return sign | 0x7C00u;
    if (ax < 0x38800000u) { /* subnormal half or zero */
        if (ax < 0x33000000u)
            return sign;    /* below half the smallest subnormal */
        uint e = ax >> 23;
        uint m = (ax & 0x7FFFFFu) | 0x800000u;
        uint shift = 126u - e;      /* 14..24 */
        uint q = m >> shift;
        uint rem = m & ((1u << shift) - 1u);
        uint halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (q & 1u) != 0u))
            q++;
        return sign | q;
    }
    uint h = ((ax >> 13) - (112u << 10));
    uint rem = ax & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u))
        h++;
    return sign | h;
}

void main()
{
    uint first = p.dst_off >> 1;
    uint w = first + group_index() * WG + gl_LocalInvocationIndex;
    uint end = p.dst_off + p.n;         /* half index one past the last */
    if (w * 2u >= end)
        return;
    uint word = 0u;
    bool need_old = (w * 2u < p.dst_off) || (w * 2u + 1u >= end);
    if (need_old)
        word = dw[w];
    [[unroll]] for (uint k = 0; k < 2u; k++) {
        uint e = w * 2u + k;
        if (e >= p.dst_off && e < end) {
            uint h = f32_to_f16(src[p.src_off + e - p.dst_off]);
            word = (word & ~(0xFFFFu << (16u * k))) | (h << (16u * k));
        }
    }
    dw[w] = word;
}
