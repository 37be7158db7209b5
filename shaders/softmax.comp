#version 450
/* In-place softmax of each row; one workgroup per row. */
#define WITH_REDUCE
layout(binding = 0) buffer X { float x[]; };
#include "common.glsl"

layout(push_constant) uniform P {
    uint off;
    uint n_rows;
    uint n_cols;
} p;

void main()
{
    uint r = group_index();
    if (r >= p.n_rows)
        return;
    uint o = p.off + r * p.n_cols;
    float m = -1.0 / 0.0;
    for (uint c = gl_LocalInvocationIndex; c < p.n_cols; c += WG)
        m = max(m, x[o + c]);
    m = wg_max(m);
    float s = 0.0;
    for (uint c = gl_LocalInvocationIndex; c < p.n_cols; c += WG) {
        float e = exp(x[o + c] - m);
        x[o + c] = e;
        s += e;
    }
    s = wg_sum(s);
    float inv = 1.0 / s;
    for (uint c = gl_LocalInvocationIndex; c < p.n_cols; c += WG)
        x[o + c] *= inv;
}
