#version 450
/* dst[r][:] = src[r][:] / sqrt(mean(src[r][:]^2) + eps); one workgroup per row.
 * With WITH_WEIGHT (variant rms_norm_mul), also times the norm weight w[c]
 * (rms_norm followed by mul_w, fused). */
#define WITH_REDUCE
layout(binding = 0) readonly buffer S { float src[]; };
layout(binding = 1) buffer D { float dst[]; };
#ifdef WITH_WEIGHT
layout(binding = 2) readonly buffer WT { float w[]; };
#endif
#include "common.glsl"

layout(push_constant) uniform P {
    uint src_off;
    uint dst_off;
    uint n_rows;
    uint n_cols;
    float eps;
    uint w_off;
} p;

void main()
{
    uint r = group_index();
    if (r >= p.n_rows)
        return;
    uint so = p.src_off + r * p.n_cols, d0 = p.dst_off + r * p.n_cols;
    float ss = 0.0;
    for (uint c = gl_LocalInvocationIndex; c < p.n_cols; c += WG)
        ss += src[so + c] * src[so + c];
    ss = wg_sum(ss);
    float scale = 1.0 / sqrt(ss / float(p.n_cols) + p.eps);
    for (uint c = gl_LocalInvocationIndex; c < p.n_cols; c += WG)
#ifdef WITH_WEIGHT
        dst[d0 + c] = src[so + c] * scale * w[p.w_off + c];
#else
        dst[d0 + c] = src[so + c] * scale;
#endif
}
