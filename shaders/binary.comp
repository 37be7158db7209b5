#version 450
/* Element-wise ops, one variant per define:
 *   OP_ADD      dst[i] = a[i] + b[i]
 *   OP_SILU_MUL dst[i] = silu(a[i]) * b[i]    (the gated FFN)
 *   OP_ADD_ROW  dst[i] = a[i] + b[i % n_cols] (bias)
 *   OP_GELU_MUL dst[i] = gelu(a[i]) * b[i]    (GELU with the tanh approximation;
 *               0 below -10 and the identity above 10, as ggml's table)
 *   OP_SCALE    dst[i] = a[i] * s, s the float whose bits are n_cols (b unused)
 * dst may alias a or b. */
layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer D { float dst[]; };
#include "common.glsl"

layout(push_constant) uniform P {
    uint a_off;
    uint b_off;
    uint dst_off;
    uint n;
    uint n_cols;
} p;

void main()
{
    uint i = group_index() * WG + gl_LocalInvocationIndex;
    if (i >= p.n)
        return;
    float av = a[p.a_off + i];
#if defined(OP_ADD)
    dst[p.dst_off + i] = av + b[p.b_off + i];
#elif defined(OP_SILU_MUL)
    dst[p.dst_off + i] = av / (1.0 + exp(-av)) * b[p.b_off + i];
#elif defined(OP_ADD_ROW)
    dst[p.dst_off + i] = av + b[p.b_off + i % p.n_cols];
#elif defined(OP_GELU_MUL)
    float g = av <= -10.0 ? 0.0
            : av >= 10.0  ? av
                          : 0.5 * av * (1.0 + tanh(0.79788456080286535588 * av * (1.0 + 0.044715 * av * av)));
    dst[p.dst_off + i] = g * b[p.b_off + i];
#elif defined(OP_SCALE)
    dst[p.dst_off + i] = av * uintBitsToFloat(p.n_cols);
#endif
}
