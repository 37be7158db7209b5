#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
/* y[t][r] = sum_c W[r][c] * x[t][c] for CPU devices (lavapipe / llvmpipe):
 * one weight row per invocation. A workgroup is one subgroup (WG = the
 * subgroup size); lane l computes rows base + l + WG * i (i < NR) for NCOLS
 * tokens, each over the whole row: no shared memory, no barrier, no
 * reduction. On llvmpipe a load whose address differs between lanes is a
 * loop over the lanes, one pass per load instruction, so each lane reads its
 * row in as few and as wide loads as it can (Q4_0: 8 blocks in 9 loads of
 * 16 bytes when rows are 16-byte aligned; Q6_K: a superblock in 14), as
 * 64-bit components (half the per-lane fetches of 32-bit ones), and the activations are read once per subgroup
 * (each lane one vec4 of a 32-element sub-block) and handed to every lane
 * by subgroupBroadcast. The weight type is a build define (as mul_mat.comp);
 * rows [row0, row0 + n_rows) of the weight are bound as one window. */
#define WORDS wq
layout(binding = 0) readonly buffer W { uint wq[]; };
layout(binding = 0) readonly buffer W8 { u64vec2 wq8[]; };   /* the same, 16 bytes per load */
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(binding = 1) readonly buffer X8 { u64vec2 x8[]; };   /* the same as 64-bit words */
layout(binding = 2) writeonly buffer Y { float y[]; };
#include "common.glsl"

/* Tokens per workgroup (NCOLS) and rows per invocation (NR): defines, not
 * specialisation constants, so that glslc unrolls every loop below and every
 * array stays in registers. The backend builds NCOLS 1 (a batch: one token
 * per workgroup z; 8 ran slower per token on llvmpipe) and NR 1. */
#ifndef NCOLS
#define NCOLS 1u
#endif
#ifndef NR
#define NR 1u
#endif

layout(push_constant) uniform P {   /* as mul_mat.comp */
    uint ne0;
    uint n_rows;
    uint row_bytes;
    uint w_off;
    uint x_off;
    uint x_stride;
    uint y_off;
    uint y_stride;
    uint row0;
    uint n_tok;
} p;

/* Lane `lane`'s vec4 of sub-block s of token t: elements s*32 + 4*(lane%8) .. +3
 * (zero past the row's end). */
vec4 load_x(uint t, uint s, uint lane)
{
    uint xo = p.x_off + t * p.x_stride + s * 32u;
    uint e0 = s * 32u + 4u * (lane & 7u);
    if (s * 32u + 32u <= p.ne0 && (xo & 3u) == 0u)
        return x4[(xo >> 2) + (lane & 7u)];
    vec4 r = vec4(0.0);
    [[unroll]] for (uint k = 0; k < 4u; k++)
        if (e0 + k < p.ne0)
            r[k] = x[xo + 4u * (lane & 7u) + k];
    return r;
}

/* The vec4 at vec4 index i of x in one 16-byte load of two 64-bit words
 * (llvmpipe fetches a load component by component for each lane: 64-bit
 * components halve the fetches). */
vec4 load_x8(uint i)
{
    u64vec2 v = x8[i];
    return vec4(uintBitsToFloat(unpackUint2x32(v.x)), uintBitsToFloat(unpackUint2x32(v.y)));
}

/* Element e (< 32) of the sub-block whose vec4s the lanes hold in xl. */
#define XB(xl, e) subgroupBroadcast((xl)[(e) & 3u], (e) >> 2)

void main()
{
    const uint lane = gl_SubgroupInvocationID;
    const uint rbase = group_index() * (WG * NR);
    const uint t0 = gl_WorkGroupID.z * NCOLS;
    uint rows[NR];
    [[unroll]] for (uint r = 0; r < NR; r++)   /* past the end: read the last row, store nothing */
        rows[r] = min(rbase + lane + WG * r, p.n_rows - 1u);
    uint toks[NCOLS];
    [[unroll]] for (uint t = 0; t < NCOLS; t++)
        toks[t] = min(t0 + t, p.n_tok - 1u);
    float acc[NR * NCOLS];
    [[unroll]] for (uint k = 0; k < NR * NCOLS; k++)
        acc[k] = 0.0;
    const uint nsub = (p.ne0 + 31u) / 32u;
    uint s = 0;
#if defined(TYPE_Q4_0)
    /* Chunks of 8 blocks (144 bytes = 9 uvec4) when rows and the window are
     * 16-byte aligned and x is vec4-aligned. */
    const bool wide = ((p.w_off | p.row_bytes) & 15u) == 0u && ((p.x_off | p.x_stride) & 3u) == 0u;
    const uint nchunk = wide ? p.ne0 / 256u : 0u;
    for (uint ch = 0; ch < nchunk; ch++) {
        uint wd[NR * 36];
        [[unroll]] for (uint r = 0; r < NR; r++) {
            uint wb = ((p.w_off + rows[r] * p.row_bytes) >> 4) + 9u * ch;
            [[unroll]] for (uint i = 0; i < 9u; i++) {
                u64vec2 u8 = wq8[wb + i];
                uvec2 lo = unpackUint2x32(u8.x), hi = unpackUint2x32(u8.y);
                wd[r * 36u + 4u * i] = lo.x;
                wd[r * 36u + 4u * i + 1u] = lo.y;
                wd[r * 36u + 4u * i + 2u] = hi.x;
                wd[r * 36u + 4u * i + 3u] = hi.y;
            }
        }
        [[unroll]] for (uint j = 0; j < 8u; j++) {
            const uint o = 18u * j;   /* the block's byte in the chunk */
            vec4 xl[NCOLS];
            [[unroll]] for (uint t = 0; t < NCOLS; t++)
                xl[t] = load_x8(((p.x_off + toks[t] * p.x_stride) >> 2) + (ch * 8u + j) * 8u + (lane & 7u));
            [[unroll]] for (uint r = 0; r < NR; r++) {
                const uint b = r * 36u;
                float d = unpackHalf2x16(wd[b + (o >> 2)] >> ((o & 2u) * 8u)).x;
                uint q[4];
                [[unroll]] for (uint k = 0; k < 4u; k++) {
                    const uint qb = o + 2u + 4u * k;
                    q[k] = (qb & 2u) == 0u ? wd[b + (qb >> 2)]
                                           : (wd[b + (qb >> 2)] >> 16) | (wd[b + (qb >> 2) + 1u] << 16);
                }
                [[unroll]] for (uint t = 0; t < NCOLS; t++) {
                    float a = 0.0;
                    [[unroll]] for (uint k = 0; k < 4u; k++)
                        [[unroll]] for (uint bb = 0; bb < 4u; bb++) {
                            const uint i = 4u * k + bb;
                            a += (float((q[k] >> (8u * bb)) & 0xFu) - 8.0) * XB(xl[t], i);
                            a += (float((q[k] >> (8u * bb + 4u)) & 0xFu) - 8.0) * XB(xl[t], i + 16u);
                        }
                    acc[r * NCOLS + t] += d * a;
                }
            }
        }
    }
    s = nchunk * 8u;
#elif defined(TYPE_Q6_K)
    /* A superblock (210 bytes) in 14 uvec4 from the 16-byte boundary below
     * it, realigned in registers (its byte address is even: 2 bytes of a
     * 4-byte word at most), when x is vec4-aligned. */
    const bool wide = ((p.w_off | p.row_bytes) & 1u) == 0u && ((p.x_off | p.x_stride) & 3u) == 0u;
    const uint nsb = wide ? p.ne0 / 256u : 0u;
    for (uint sb = 0; sb < nsb; sb++) {
        [[unroll]] for (uint r = 0; r < NR; r++) {
            const uint bs = p.w_off + rows[r] * p.row_bytes + 210u * sb;
            uint u[57];
            [[unroll]] for (uint i = 0; i < 14u; i++) {
                u64vec2 u8 = wq8[(bs >> 4) + i];
                uvec2 lo = unpackUint2x32(u8.x), hi = unpackUint2x32(u8.y);
                u[4u * i] = lo.x;
                u[4u * i + 1u] = lo.y;
                u[4u * i + 2u] = hi.x;
                u[4u * i + 3u] = hi.y;
            }
            u[56] = 0u;   /* only bytes past the superblock come from there */
            const uint wq_ = (bs >> 2) & 3u;
            const bool half_ = (bs & 2u) != 0u;
            uint lw[54];
            [[unroll]] for (uint k = 0; k < 54u; k++)
                lw[k] = wq_ == 0u ? u[k] : wq_ == 1u ? u[k + 1u] : wq_ == 2u ? u[k + 2u] : u[k + 3u];
            uint a[53];   /* ql[0..31] qh[32..47] scales[48..51] d[52] */
            [[unroll]] for (uint k = 0; k < 53u; k++)
                a[k] = half_ ? (lw[k] >> 16) | (lw[k + 1u] << 16) : lw[k];
            const float d = unpackHalf2x16(a[52]).x;
            [[unroll]] for (uint t = 0; t < NCOLS; t++) {
                const uint xb = ((p.x_off + toks[t] * p.x_stride) >> 2) + sb * 64u + (lane & 7u);
                float tot = 0.0;
                [[unroll]] for (uint hh = 0; hh < 2u; hh++) {
                    vec4 xl[4];
                    [[unroll]] for (uint c = 0; c < 4u; c++)
                        xl[c] = load_x8(xb + 8u * (4u * hh + c));
                    float gs[8];   /* by scale: (l / 16) + 2 * c */
                    [[unroll]] for (uint m = 0; m < 8u; m++)
                        gs[m] = 0.0;
                    [[unroll]] for (uint w = 0; w < 8u; w++) {
                        const uint qa = a[16u * hh + w], qb = a[16u * hh + 8u + w], qh = a[32u + 8u * hh + w];
                        const uint g = w >> 2;
                        [[unroll]] for (uint i = 0; i < 4u; i++) {
                            uint q1 = ((qa >> (8u * i)) & 0xFu) | (((qh >> (8u * i)) & 3u) << 4);
                            uint q2 = ((qb >> (8u * i)) & 0xFu) | (((qh >> (8u * i + 2u)) & 3u) << 4);
                            uint q3 = ((qa >> (8u * i + 4u)) & 0xFu) | (((qh >> (8u * i + 4u)) & 3u) << 4);
                            uint q4 = ((qb >> (8u * i + 4u)) & 0xFu) | (((qh >> (8u * i + 6u)) & 3u) << 4);
                            gs[g] += (float(q1) - 32.0) * subgroupBroadcast(xl[0][i], w);
                            gs[g + 2u] += (float(q2) - 32.0) * subgroupBroadcast(xl[1][i], w);
                            gs[g + 4u] += (float(q3) - 32.0) * subgroupBroadcast(xl[2][i], w);
                            gs[g + 6u] += (float(q4) - 32.0) * subgroupBroadcast(xl[3][i], w);
                        }
                    }
                    [[unroll]] for (uint m = 0; m < 8u; m++) {
                        const uint si = 8u * hh + m;
                        tot += float(bitfieldExtract(int(a[48u + (si >> 2)]), int(8u * (si & 3u)), 8)) * gs[m];
                    }
                }
                acc[r * NCOLS + t] += d * tot;
            }
        }
    }
    s = nsb * 8u;
#endif
    float v[32];
    for (; s < nsub; s++) {
        vec4 xl[NCOLS];
        [[unroll]] for (uint t = 0; t < NCOLS; t++)
            xl[t] = load_x(toks[t], s, lane);
        [[unroll]] for (uint r = 0; r < NR; r++) {
            dequant32(p.w_off + rows[r] * p.row_bytes, s, p.ne0, v);
            [[unroll]] for (uint t = 0; t < NCOLS; t++) {
                float a = 0.0;
                [[unroll]] for (uint e = 0; e < 32u; e++)
                    a += v[e] * XB(xl[t], e);
                acc[r * NCOLS + t] += a;
            }
        }
    }
    [[unroll]] for (uint r = 0; r < NR; r++) {
        uint row = rbase + lane + WG * r;
        if (row < p.n_rows)
            [[unroll]] for (uint t = 0; t < NCOLS; t++)
                if (t0 + t < p.n_tok)
                    y[p.y_off + (t0 + t) * p.y_stride + p.row0 + row] = acc[r * NCOLS + t];
    }
}
