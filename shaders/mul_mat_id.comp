#version 450
/* Expert products (ggml_mul_mat_id), one expert per dispatch: for each of
 * the n_pairs (token, slot) pairs that chose the expert, read from the pair
 * table (two words a pair: the x row, the y row),
 *     y[yrow][row0 + r] = sum_c W_e[r][c] * x[xrow][c].
 * Otherwise as mul_mat.comp: NCOLS pairs per workgroup (1: mat-vec, 8:
 * mat-mat, each sub-block dequantized once for all of them), NR rows per
 * workgroup, rows [row0, row0 + n_rows) of the expert bound as one window
 * (an expert larger than a binding is dispatched in several windows). */
#define WORDS wq
layout(binding = 0) readonly buffer W { uint wq[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };   /* the same, 16 bytes per load */
layout(binding = 2) writeonly buffer Y { float y[]; };
layout(binding = 3) readonly buffer T { uint pairs[]; };
#include "common.glsl"

layout(constant_id = 1) const uint NCOLS = 1;
layout(constant_id = 2) const uint NR = 1;

layout(push_constant) uniform P {
    uint ne0;       /* row length (input dim) */
    uint n_rows;    /* rows in this window */
    uint row_bytes;
    uint w_off;     /* byte offset of the window's first row */
    uint x_off;     /* element offsets and row strides */
    uint x_stride;
    uint y_off;
    uint y_stride;
    uint row0;      /* index inside the expert of the window's first row */
    uint n_pairs;   /* pairs of this expert */
    uint pairs_off; /* word offset of its first pair in the table */
} p;

shared float part[NR * NCOLS * WG];

void main()
{
    uint r0 = group_index() * NR;
    if (r0 >= p.n_rows)
        return;
    uint t0 = gl_WorkGroupID.z * NCOLS;
    uint lid = gl_LocalInvocationIndex;
    uint nsub = (p.ne0 + 31u) / 32u;
    float acc[NR * NCOLS];
    [[unroll]] for (uint k = 0; k < NR * NCOLS; k++)
        acc[k] = 0.0;
    float v[32];
    for (uint s = lid; s < nsub; s += WG) {
        uint xe = s * 32u;
        uint last = p.ne0 - 1u - xe;   /* v[e] is 0 past the row's end: clamp x reads */
        [[dont_unroll]] for (uint r = 0; r < NR; r++) {
            if (r0 + r >= p.n_rows)
                break;
            dequant32(p.w_off + (r0 + r) * p.row_bytes, s, p.ne0, v);
            [[dont_unroll]] for (uint t = 0; t < NCOLS; t++) {
                if (t0 + t >= p.n_pairs)
                    break;
                uint xo = p.x_off + pairs[p.pairs_off + 2u * (t0 + t)] * p.x_stride + xe;
                float a = 0.0;
                if (last >= 31u && (xo & 3u) == 0u) {
                    [[unroll]] for (uint e = 0; e < 8u; e++) {
                        vec4 xv = x4[(xo >> 2) + e];
                        a += v[4u * e] * xv.x + v[4u * e + 1u] * xv.y + v[4u * e + 2u] * xv.z +
                             v[4u * e + 3u] * xv.w;
                    }
                } else {
                    [[unroll]] for (uint e = 0; e < 32u; e++)
                        a += v[e] * x[xo + min(e, last)];
                }
                acc[r * NCOLS + t] += a;
            }
        }
    }
    const uint K = NR * NCOLS;
#ifdef USE_SUBGROUP
    [[unroll]] for (uint k = 0; k < K; k++) {
        float sg = subgroupAdd(acc[k]);
        if (subgroupElect())
            part[k * WG + gl_SubgroupID] = sg;
    }
    barrier();
    if (lid < K) {
        float sum = 0.0;
        for (uint i = 0; i < gl_NumSubgroups; i++)
            sum += part[lid * WG + i];
        acc[0] = sum;
    }
#else
    [[unroll]] for (uint k = 0; k < K; k++)
        part[k * WG + lid] = acc[k];
    barrier();
    [[unroll]] for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            [[unroll]] for (uint k = 0; k < K; k++)
                part[k * WG + lid] += part[k * WG + lid + s];
        barrier();
    }
    if (lid < K)
        acc[0] = part[lid * WG];
#endif
    if (lid < K) {
        uint r = lid / NCOLS, t = lid % NCOLS;
        if (r0 + r < p.n_rows && t0 + t < p.n_pairs)
            y[p.y_off + pairs[p.pairs_off + 2u * (t0 + t) + 1u] * p.y_stride + p.row0 + r0 + r] = acc[0];
    }
}
