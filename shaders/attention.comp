#version 450
/* Fused causal attention over an F16 KV cache (scores, online softmax,
 * weighted sum of V): one workgroup per (query token, head). The positions
 * 0 .. pos0 + t are visited in chunks of WG, one position per invocation;
 * each invocation accumulates up to MAXD / WG output dimensions. */
#define WITH_REDUCE
#define WORDS kw
layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer K { uint kw[]; };
layout(binding = 2) readonly buffer V { uint vw[]; };
layout(binding = 3) writeonly buffer O { float o[]; };
#include "common.glsl"

#define MAXD 256u

layout(push_constant) uniform P {
    uint q_off;
    uint k_off;   /* in halves */
    uint v_off;   /* in halves */
    uint o_off;
    uint n_tok;
    uint pos0;
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    float scale;
} p;

shared float q_s[MAXD];
shared float w_s[WG];

float rd_v(uint e) { return unpackHalf2x16(vw[e >> 1] >> ((e & 1u) * 16u)).x; }

void main()
{
    uint g = group_index();
    if (g >= p.n_tok * p.n_head)
        return;
    uint t = g / p.n_head, h = g % p.n_head;
    uint kvh = h / (p.n_head / p.n_head_kv);
    uint lid = gl_LocalInvocationIndex;
    uint hd = p.head_dim;
    uint kv_stride = p.n_head_kv * hd;
    uint qo = p.q_off + (t * p.n_head + h) * hd;
    for (uint d = lid; d < hd; d += WG)
        q_s[d] = q[qo + d];
    barrier();

    const uint NACC = MAXD / WG > 0u ? MAXD / WG : 1u;
    float acc[NACC];
    [[unroll]] for (uint k = 0; k < NACC; k++)
        acc[k] = 0.0;
    float m = -1.0 / 0.0, l = 0.0;
    uint n_kv = p.pos0 + t + 1u;
    for (uint c0 = 0; c0 < n_kv; c0 += WG) {
        uint pos = c0 + lid;
        float sc = -1.0 / 0.0;
        if (pos < n_kv) {
            uint ke = p.k_off + pos * kv_stride + kvh * hd;
            float dot = 0.0;
            if ((ke & 1u) == 0u && (hd & 1u) == 0u) {
                for (uint d = 0; d < hd; d += 2u) {
                    vec2 kk = unpackHalf2x16(kw[(ke + d) >> 1]);
                    dot += q_s[d] * kk.x + q_s[d + 1u] * kk.y;
                }
            } else {
                for (uint d = 0; d < hd; d++)
                    dot += q_s[d] * rd_half(ke + d);
            }
            sc = dot * p.scale;
        }
        float mc = wg_max(sc);
        float mn = max(m, mc);
        float f = exp(m - mn);
        float wv = pos < n_kv ? exp(sc - mn) : 0.0;
        w_s[lid] = wv;
        float ls = wg_sum(wv); /* its barriers also publish w_s */
        l = l * f + ls;
        m = mn;
        uint nc = min(WG, n_kv - c0);
        [[unroll]] for (uint k = 0; k < NACC; k++) {
            uint d = lid + k * WG;
            if (d < hd) {
                float a = acc[k] * f;
                uint ve = p.v_off + c0 * kv_stride + kvh * hd + d;
                for (uint j = 0; j < nc; j++)
                    a += w_s[j] * rd_v(ve + j * kv_stride);
                acc[k] = a;
            }
        }
        barrier();
    }
    uint oo = p.o_off + (t * p.n_head + h) * hd;
    [[unroll]] for (uint k = 0; k < NACC; k++) {
        uint d = lid + k * WG;
        if (d < hd)
            o[oo + d] = acc[k] / l;
    }
}
