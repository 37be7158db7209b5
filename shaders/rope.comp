#version 450
/* Rotary position embedding, in place. One invocation per rotated pair.
 * The cos/sin of every (token, pair) come from a table the host computed
 * exactly as ggml does, frequency factors, YaRN ramp and mscale included
 * (GPU sin/cos of large angles are not accurate enough, and the table is
 * shared by q, k and every layer of a batch). The rotation is written as the
 * CPU backend's (one fma each, the other product rounded first); a driver
 * may still not fuse it (lavapipe: 1 ulp apart).
 * NEOX (spec constant 1) rotates (x[i], x[i + n_rot/2]), else (x[2i], x[2i+1]). */
layout(binding = 0) buffer X { float x[]; };
layout(binding = 1) readonly buffer T { vec2 cs[]; };
#include "common.glsl"

layout(constant_id = 1) const bool NEOX = false;

layout(push_constant) uniform P {
    uint x_off;
    uint n_tok;
    uint n_head;
    uint head_dim;
    uint n_rot;
    uint cs_off;   /* in vec2 units */
} p;

void main()
{
    uint half_rot = p.n_rot / 2u;
    uint i = group_index() * WG + gl_LocalInvocationIndex;
    if (i >= p.n_tok * p.n_head * half_rot)
        return;
    uint j = i % half_rot;
    uint h = (i / half_rot) % p.n_head;
    uint t = i / (half_rot * p.n_head);
    vec2 c = cs[p.cs_off + t * half_rot + j];
    uint o = p.x_off + (t * p.n_head + h) * p.head_dim;
    uint i0 = NEOX ? o + j : o + 2u * j;
    uint i1 = NEOX ? o + j + half_rot : o + 2u * j + 1u;
    float x0 = x[i0], x1 = x[i1];
    precise float y0 = fma(x0, c.x, -(x1 * c.y));
    precise float y1 = fma(x0, c.y, x1 * c.x);
    x[i0] = y0;
    x[i1] = y1;
}
