#version 450
/* The mixture-of-experts router (backend.h moe_route), one workgroup per
 * token: its n_expert logits, the softmax over them (unless topk_softmax),
 * the n_used best scores by repeated arg-max (equal scores: the lower
 * expert first, as a stable sort leaves them), then their weights: the
 * probabilities (softmax gating) or the softmax of the chosen logits
 * (topk_softmax), divided by their sum (clamped below at 2^-14) when norm.
 * The chosen ids go to `ids` (host-visible: the host reads them back), the
 * weights to `wt`, best first. */
#define WITH_REDUCE
layout(binding = 0) readonly buffer L { float lg[]; };
layout(binding = 1) writeonly buffer Wt { float wt[]; };
layout(binding = 2) writeonly buffer I { uint ids[]; };
#include "common.glsl"

layout(push_constant) uniform P {
    uint l_off;     /* element offsets */
    uint w_off;
    uint ids_off;   /* word offset of the ids */
    uint n_tok;
    uint n_expert;
    uint n_used;
    uint topk_softmax;
    uint norm;
} p;

#define MAXE 1024u   /* VK_MOE_MAX_EXPERT */
#define MAXK 64u     /* VK_MOE_MAX_USED */
#define NONE 0xFFFFFFFFu
shared float sc[MAXE];
shared uint taken[MAXE];
shared float best_v[WG];
shared uint best_i[WG];
shared uint chosen[MAXK];

/* Whether (v, i) beats (bv, bi): a higher score, or the same with a lower index. */
bool beats(float v, uint i, float bv, uint bi)
{
    return i != NONE && (bi == NONE || v > bv || (v == bv && i < bi));
}

void main()
{
    uint t = group_index();
    if (t >= p.n_tok)
        return;
    uint lid = gl_LocalInvocationIndex;
    uint n = p.n_expert;
    uint base = p.l_off + t * n;
    float mx = uintBitsToFloat(0xFF800000u);   /* -inf */
    for (uint i = lid; i < n; i += WG) {
        float v = lg[base + i];
        sc[i] = v;
        taken[i] = 0u;
        mx = v > mx ? v : mx;
    }
    if (p.topk_softmax == 0u) {
        float m = wg_max(mx);   /* (its barriers order the writes above) */
        float s = 0.0;
        for (uint i = lid; i < n; i += WG) {
            float e = exp(sc[i] - m);
            sc[i] = e;
            s += e;
        }
        float inv = 1.0 / wg_sum(s);
        for (uint i = lid; i < n; i += WG)
            sc[i] *= inv;
    }
    barrier();

    for (uint k = 0; k < p.n_used; k++) {
        float bv = 0.0;
        uint bi = NONE;
        for (uint i = lid; i < n; i += WG)   /* rising i: an equal score keeps the lower index */
            if (taken[i] == 0u && beats(sc[i], i, bv, bi)) {
                bv = sc[i];
                bi = i;
            }
        best_v[lid] = bv;
        best_i[lid] = bi;
        barrier();
        [[unroll]] for (uint s = WG / 2; s > 0; s >>= 1) {
            if (lid < s && beats(best_v[lid + s], best_i[lid + s], best_v[lid], best_i[lid])) {
                best_v[lid] = best_v[lid + s];
                best_i[lid] = best_i[lid + s];
            }
            barrier();
        }
        if (lid == 0u) {
            uint c = best_i[0] < n ? best_i[0] : 0u;
            chosen[k] = c;
            taken[c] = 1u;
        }
        barrier();
    }

    if (lid != 0u)
        return;
    float w[MAXK];
    for (uint k = 0; k < p.n_used; k++)
        w[k] = sc[chosen[k]];
    if (p.topk_softmax != 0u) {
        float m = uintBitsToFloat(0xFF800000u);
        for (uint k = 0; k < p.n_used; k++)
            m = m > w[k] ? m : w[k];
        float s = 0.0;
        for (uint k = 0; k < p.n_used; k++) {
            w[k] = exp(w[k] - m);
            s += w[k];
        }
        float inv = 1.0 / s;
        for (uint k = 0; k < p.n_used; k++)
            w[k] *= inv;
    }
    if (p.norm != 0u) {
        float s = 0.0;
        for (uint k = 0; k < p.n_used; k++)
            s += w[k];
        s = s > 6.103515625e-5 ? s : 6.103515625e-5;
        for (uint k = 0; k < p.n_used; k++)
            w[k] = w[k] / s;
    }
    for (uint k = 0; k < p.n_used; k++) {
        wt[p.w_off + t * p.n_used + k] = w[k];
        ids[p.ids_off + t * p.n_used + k] = chosen[k];
    }
}
