#version 450
/* Fused causal attention over an F16 KV cache (scores, online softmax,
 * weighted sum of V): one workgroup per (query token, head) of the heads
 * h0 .. h0 + nh - 1 of this dispatch. The KV rows a query at position
 * P = pos0 + t sees are visited in chunks of WG, one row per invocation:
 * positions lo .. P (lo = P + 1 - n_swa with a sliding window, else 0), at
 * row p of a linear cache or row p % n_cells of a ring, in row order as the
 * CPU backend visits them (backend_attn_params); each invocation accumulates
 * up to MAXD / WG output dimensions. With sinks, head h0 + i's sink joins
 * the softmax denominator: the running maximum starts at it with weight 1
 * (gpt-oss, ggml_flash_attn_ext_add_sinks). */
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
    uint n_swa;     /* sliding window in positions, 0 = none */
    uint n_cells;   /* ring rows, 0 = linear cache */
    uint h0;        /* first head of this dispatch */
    uint nh;        /* heads of this dispatch */
    uint has_sinks;
    float sinks[16];   /* VK_ATTN_SINKS: head h0 + i's sink */
} p;

shared float q_s[MAXD];
shared float w_s[WG];

float rd_v(uint e) { return unpackHalf2x16(vw[e >> 1] >> ((e & 1u) * 16u)).x; }

/* Row of the j-th visible cell: [r0, r0 + len0) then [r2, ...). */
uint cell_row(uint j, uint r0, uint len0, uint r2) { return j < len0 ? r0 + j : r2 + (j - len0); }

void main()
{
    uint g = group_index();
    if (g >= p.n_tok * p.nh)
        return;
    uint t = g / p.nh, h = p.h0 + g % p.nh;
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
    bool sink = p.has_sinks != 0u;
    float m = sink ? p.sinks[h - p.h0] : -1.0 / 0.0, l = sink ? 1.0 : 0.0;
    /* the visible rows (the CPU's backend_cpu_attn_rows) */
    uint P = p.pos0 + t;
    uint lo = p.n_swa != 0u && P >= p.n_swa ? P + 1u - p.n_swa : 0u;
    uint ra = p.n_cells != 0u ? lo % p.n_cells : lo, rb = p.n_cells != 0u ? P % p.n_cells : P;
    uint r0 = ra <= rb ? ra : 0u, len0 = rb + 1u - r0, r2 = ra;   /* wrapped: rows 0..rb, then ra.. */
    uint n_kv = len0 + (ra <= rb ? 0u : p.n_cells - ra);
    for (uint c0 = 0; c0 < n_kv; c0 += WG) {
        uint pos = c0 + lid;
        float sc = -1.0 / 0.0;
        if (pos < n_kv) {
            uint ke = p.k_off + cell_row(pos, r0, len0, r2) * kv_stride + kvh * hd;
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
                uint ve = p.v_off + kvh * hd + d;
                for (uint j = 0; j < nc; j++)
                    a += w_s[j] * rd_v(ve + cell_row(c0 + j, r0, len0, r2) * kv_stride);
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
