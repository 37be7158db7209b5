#version 450
/* Element-wise steps of the mixture-of-experts feed-forward, one variant per
 * define, one invocation per output element:
 *   OP_ADD_ID     dst[r][c] = a[r][c] + b[ids[r]][c]        (ggml_add_id: the
 *                 experts' biases, b an F32 weight of n_cols-wide rows)
 *   OP_SWIGLU_OAI dst[i] = x / (1 + exp(-alpha x)) * (y + 1),
 *                 x = min(a[i], limit), y = clamp(b[i], -limit, limit)
 *                 (ggml_swiglu_oai, gpt-oss's clamped SwiGLU)
 *   OP_COMBINE    dst[t][c] = a[t n_used][c] b[t n_used] + a[t n_used + 1][c] b[t n_used + 1] + ...
 *                 (each product rounded, summed from the first slot on:
 *                 ggml_mul then ggml_add slot after slot)
 * dst may alias a (and b) for ADD_ID and SWIGLU_OAI. */
layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer D { float dst[]; };
#ifdef OP_ADD_ID
layout(binding = 3) readonly buffer I { uint ids[]; };
#endif
#include "common.glsl"

layout(push_constant) uniform P {
    uint a_off;
    uint b_off;
    uint dst_off;
    uint n;         /* output elements */
    uint n_cols;
    uint ids_off;   /* ADD_ID: word offset of the row ids */
    uint n_used;    /* COMBINE: slots per token */
    float alpha;    /* SWIGLU_OAI */
    float limit;
} p;

void main()
{
    uint i = group_index() * WG + gl_LocalInvocationIndex;
    if (i >= p.n)
        return;
#if defined(OP_ADD_ID)
    uint r = i / p.n_cols, c = i - r * p.n_cols;
    dst[p.dst_off + i] = a[p.a_off + i] + b[p.b_off + ids[p.ids_off + r] * p.n_cols + c];
#elif defined(OP_SWIGLU_OAI)
    float g = a[p.a_off + i], u = b[p.b_off + i];
    float x = p.limit < g ? p.limit : g;
    float y = u < -p.limit ? -p.limit : (p.limit < u ? p.limit : u);
    precise float glu = x / (1.0 + exp(p.alpha * -x));
    dst[p.dst_off + i] = glu * (y + 1.0);
#elif defined(OP_COMBINE)
    uint t = i / p.n_cols, c = i - t * p.n_cols;
    uint s0 = t * p.n_used;
    precise float acc = a[p.a_off + s0 * p.n_cols + c] * b[p.b_off + s0];
    for (uint s = 1u; s < p.n_used; s++) {
        precise float prod = a[p.a_off + (s0 + s) * p.n_cols + c] * b[p.b_off + s0 + s];
        acc = acc + prod;
    }
    dst[p.dst_off + i] = acc;
#endif
}
