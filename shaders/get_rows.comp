#version 450
/* dst[i][:] = row ids[i] of the weight, dequantized. One workgroup per id;
 * only ids inside this dispatch's window [row0, row0 + n_rows) are written
 * (large tensors are dispatched once per window). */
#define WORDS wq
layout(binding = 0) readonly buffer W { uint wq[]; };
layout(binding = 1) readonly buffer I { uint ids[]; };
layout(binding = 2) writeonly buffer D { float dst[]; };
#include "common.glsl"

layout(push_constant) uniform P {
    uint ne0;
    uint n_rows;
    uint row_bytes;
    uint w_off;
    uint ids_off;
    uint n_ids;
    uint dst_off;
    uint row0;
} p;

void main()
{
    uint i = group_index();
    if (i >= p.n_ids)
        return;
    uint id = ids[p.ids_off + i];
    if (id < p.row0 || id - p.row0 >= p.n_rows)
        return;
    uint base = p.w_off + (id - p.row0) * p.row_bytes;
    uint nsub = (p.ne0 + 31u) / 32u;
    float v[32];
    for (uint s = gl_LocalInvocationIndex; s < nsub; s += WG) {
        dequant32(base, s, p.ne0, v);
        uint o = p.dst_off + i * p.ne0 + s * 32u;
        uint ne = min(32u, p.ne0 - s * 32u);
        for (uint e = 0; e < ne; e++)
            dst[o + e] = v[e];
    }
}
