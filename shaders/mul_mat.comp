#version 450
/* y[t][r] = sum_c W[r][c] * x[t][c]: mat-vec (NCOLS = 1) and mat-mat
 * (NCOLS tokens per workgroup, each sub-block dequantized once for all of
 * them). One workgroup per weight row; the weight type is a build define
 * (TYPE_F32 ... TYPE_Q6_K). Rows [row0, row0 + n_rows) of the weight are
 * bound as one window (large tensors are dispatched in several windows). */
#define WITH_REDUCE
#define WORDS wq
layout(binding = 0) readonly buffer W { uint wq[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };
#include "common.glsl"

layout(constant_id = 1) const uint NCOLS = 1;

layout(push_constant) uniform P {
    uint ne0;       /* row length (input dim) */
    uint n_rows;    /* rows in this window */
    uint row_bytes;
    uint w_off;     /* byte offset of the window's first row */
    uint x_off;     /* element offsets and row strides */
    uint x_stride;
    uint y_off;
    uint y_stride;
    uint row0;      /* global index of the window's first row */
    uint n_tok;
} p;

void main()
{
    uint r = group_index();
    if (r >= p.n_rows)
        return;
    uint t0 = gl_WorkGroupID.z * NCOLS;
    uint lid = gl_LocalInvocationIndex;
    uint base = p.w_off + r * p.row_bytes;
    uint nsub = (p.ne0 + 31u) / 32u;
    float acc[NCOLS];
    [[unroll]] for (uint t = 0; t < NCOLS; t++)
        acc[t] = 0.0;
    float v[32];
    for (uint s = lid; s < nsub; s += WG) {
        dequant32(base, s, p.ne0, v);
        uint xe = s * 32u;
        uint last = p.ne0 - 1u - xe;   /* v[e] is 0 past the row's end: clamp x reads */
        [[dont_unroll]] for (uint t = 0; t < NCOLS; t++) {
            if (t0 + t < p.n_tok) {
                uint xo = p.x_off + (t0 + t) * p.x_stride + xe;
                float a = 0.0;
                [[unroll]] for (uint e = 0; e < 32u; e++)
                    a += v[e] * x[xo + min(e, last)];
                acc[t] += a;
            }
        }
    }
    [[unroll]] for (uint t = 0; t < NCOLS; t++) {
        float sum = wg_sum(acc[t]);
        if (lid == 0u && t0 + t < p.n_tok)
            y[p.y_off + (t0 + t) * p.y_stride + p.row0 + r] = sum;
    }
}
