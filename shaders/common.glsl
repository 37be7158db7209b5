/* Shared declarations of every ggscope compute shader.
 *
 * Conventions: activations are F32 storage buffers; weights and F16 buffers
 * are bound as arrays of 32-bit words and decoded here byte by byte, so no
 * shader needs 8- or 16-bit storage (works on every Vulkan 1.1+ device).
 * Reductions use subgroup arithmetic when the build variant defines
 * USE_SUBGROUP (chosen at run time from the device's capabilities), else a
 * shared-memory tree. Specialization constant 0 is the workgroup size (a
 * power of two). */
#extension GL_EXT_control_flow_attributes : require
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

/* Flattened workgroup index of a 2-D dispatch (x up to 65535). */
uint group_index(void)
{
    return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
}

#ifdef WITH_REDUCE
shared float red_s[WG];

float wg_sum(float v)
{
#ifdef USE_SUBGROUP
    v = subgroupAdd(v);
    if (subgroupElect())
        red_s[gl_SubgroupID] = v;
    barrier();
    float r = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; i++)
        r += red_s[i];
    barrier();
    return r;
#else
    uint lid = gl_LocalInvocationIndex;
    red_s[lid] = v;
    barrier();
    [[unroll]] for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            red_s[lid] += red_s[lid + s];
        barrier();
    }
    float r = red_s[0];
    barrier();
    return r;
#endif
}

float wg_max(float v)
{
#ifdef USE_SUBGROUP
    v = subgroupMax(v);
    if (subgroupElect())
        red_s[gl_SubgroupID] = v;
    barrier();
    float r = red_s[0];
    for (uint i = 1; i < gl_NumSubgroups; i++)
        r = max(r, red_s[i]);
    barrier();
    return r;
#else
    uint lid = gl_LocalInvocationIndex;
    red_s[lid] = v;
    barrier();
    [[unroll]] for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            red_s[lid] = max(red_s[lid], red_s[lid + s]);
        barrier();
    }
    float r = red_s[0];
    barrier();
    return r;
#endif
}
#endif /* WITH_REDUCE */

/* ---- words as bytes: the buffer named by WORDS (a uint array) ---- */
#ifdef WORDS
uint rd_u8(uint b) { return (WORDS[b >> 2] >> ((b & 3u) * 8u)) & 0xFFu; }
/* b even */
uint rd_u16(uint b) { return (WORDS[b >> 2] >> ((b & 2u) * 8u)) & 0xFFFFu; }
float rd_f16(uint b) { return unpackHalf2x16(rd_u16(b)).x; }
/* 4 bytes at any byte address b (little-endian); branch-free, so it always
 * reads the next word too (buffers carry 16 bytes of padding). */
uint rd_u32(uint b)
{
    uint w = b >> 2, s = (b & 3u) * 8u;
    return (WORDS[w] >> s) | ((WORDS[w + 1u] << 1) << (31u - s));
}
/* A block read once into registers: SPAN_LOAD fills sp[0..n) with the words
 * from the one holding byte b on; SPAN_BITS then gives the 32 bits starting
 * `bit` bits after that word's start (each SSBO load is costly on some
 * devices, e.g. lavapipe, where a divergent load is a loop over lanes). */
#define SPAN_LOAD(sp, b, n) [[unroll]] for (uint i_ = 0u; i_ < (n); i_++) sp[i_] = WORDS[((b) >> 2) + i_]
#define SPAN_BITS(sp, bit) \
    ((sp[(bit) >> 5] >> ((bit) & 31u)) | ((sp[((bit) >> 5) + 1u] << 1) << (31u - ((bit) & 31u))))

/* Half element e of an F16 array starting at word 0. */
float rd_half(uint e) { return unpackHalf2x16(WORDS[e >> 1] >> ((e & 1u) * 16u)).x; }
#endif

/* ---- weight types: dequantize the 32 elements of sub-block s of a row ----
 * Define TYPE_xxx and WORDS before including; `base` is the row's byte
 * address, `ne0` the row length (only the float types allow a ragged tail). */
#ifdef WORDS
#if defined(TYPE_F32)
#define QK_SUB 1
void dequant32(uint base, uint s, uint ne0, out float v[32])
{
    uint w0 = (base >> 2) + s * 32u;
    [[unroll]] for (uint e = 0; e < 32u; e++)
        v[e] = (s * 32u + e < ne0) ? uintBitsToFloat(WORDS[w0 + e]) : 0.0;
}
#elif defined(TYPE_F16)
void dequant32(uint base, uint s, uint ne0, out float v[32])
{
    uint b0 = base + s * 64u;
    [[unroll]] for (uint e = 0; e < 16u; e++) {
        vec2 f = unpackHalf2x16(rd_u32(b0 + 4u * e));
        v[2u * e] = s * 32u + 2u * e < ne0 ? f.x : 0.0;
        v[2u * e + 1u] = s * 32u + 2u * e + 1u < ne0 ? f.y : 0.0;
    }
}
#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1) || defined(TYPE_Q8_0)
/* the 32-element block types: d [m] [qh] qs */
#if defined(TYPE_Q4_0)
#define BLOCK_BYTES 18u
#define QS_AT 2u
#elif defined(TYPE_Q4_1)
#define BLOCK_BYTES 20u
#define QS_AT 4u
#elif defined(TYPE_Q5_0)
#define BLOCK_BYTES 22u
#define QH_AT 2u
#define QS_AT 6u
#elif defined(TYPE_Q5_1)
#define BLOCK_BYTES 24u
#define QH_AT 4u
#define QS_AT 8u
#else
#define BLOCK_BYTES 34u
#define QS_AT 2u
#endif
#define SPAN_WORDS ((BLOCK_BYTES + 3u) / 4u + 1u)
void dequant32(uint base, uint s, uint ne0, out float v[32])
{
    uint b = base + s * BLOCK_BYTES;
    uint sp[SPAN_WORDS];
    SPAN_LOAD(sp, b, SPAN_WORDS);
    uint sh = (b & 3u) * 8u;
    float d = unpackHalf2x16(SPAN_BITS(sp, sh)).x;
#if defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
    float m = unpackHalf2x16(SPAN_BITS(sp, sh + 16u)).x;
#endif
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
    uint qh = SPAN_BITS(sp, sh + 8u * QH_AT);
#endif
#if defined(TYPE_Q8_0)
    [[unroll]] for (uint j = 0; j < 8u; j++) {
        uint q = SPAN_BITS(sp, sh + 8u * QS_AT + 32u * j);
        [[unroll]] for (uint k = 0; k < 4u; k++)
            v[4u * j + k] = float(bitfieldExtract(int(q), int(8u * k), 8)) * d;
    }
#else
    [[unroll]] for (uint j = 0; j < 4u; j++) {
        uint q = SPAN_BITS(sp, sh + 8u * QS_AT + 32u * j);
        [[unroll]] for (uint k = 0; k < 4u; k++) {
            uint i = 4u * j + k;
            uint qb = (q >> (8u * k)) & 0xFFu;
            uint x0 = qb & 0xFu, x1 = qb >> 4;
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
            x0 |= ((qh >> i) << 4) & 0x10u;
            x1 |= (qh >> (i + 12u)) & 0x10u;
#endif
#if defined(TYPE_Q4_0)
            v[i] = (float(int(x0)) - 8.0) * d;
            v[i + 16u] = (float(int(x1)) - 8.0) * d;
#elif defined(TYPE_Q5_0)
            v[i] = (float(int(x0)) - 16.0) * d;
            v[i + 16u] = (float(int(x1)) - 16.0) * d;
#else
            v[i] = float(x0) * d + m;
            v[i + 16u] = float(x1) * d + m;
#endif
        }
    }
#endif
}
#elif defined(TYPE_Q2_K)
/* block: scales[16] qs[64] d dmin (84 bytes) */
void dequant32(uint base, uint s, uint ne0, out float v[32])
{
    uint b = base + (s >> 3) * 84u;
    uint sub = s & 7u, half_ = sub >> 2, j = sub & 3u;
    float d = rd_f16(b + 80u), dmin = rd_f16(b + 82u);
    [[unroll]] for (uint h = 0; h < 2u; h++) {
        uint sc = rd_u8(b + half_ * 8u + j * 2u + h);
        float dl = d * float(sc & 0xFu), ml = dmin * float(sc >> 4);
        [[unroll]] for (uint w = 0; w < 4u; w++) {
            uint q = WORDS[(b + 16u + half_ * 32u + h * 16u + 4u * w) >> 2]; /* 84-byte blocks: aligned */
            [[unroll]] for (uint k = 0; k < 4u; k++)
                v[h * 16u + 4u * w + k] = dl * float((q >> (8u * k + 2u * j)) & 3u) - ml;
        }
    }
}
#elif defined(TYPE_Q3_K)
/* block: hmask[32] qs[64] scales[12] d (110 bytes) */
void dequant32(uint base, uint s, uint ne0, out float v[32])
{
    uint b = base + (s >> 3) * 110u;
    uint sub = s & 7u, half_ = sub >> 2, j = sub & 3u;
    float d = rd_f16(b + 108u);
    uint mbit = half_ * 4u + j;
    [[unroll]] for (uint h = 0; h < 2u; h++) {
        uint is = half_ * 8u + j * 2u + h;
        uint lo = is < 8u ? (rd_u8(b + 96u + is) & 0xFu) : (rd_u8(b + 96u + is - 8u) >> 4);
        uint hi = (rd_u8(b + 104u + (is & 3u)) >> (2u * (is >> 2))) & 3u;
        float dl = d * (float(int(lo | (hi << 4))) - 32.0);
        [[unroll]] for (uint w = 0; w < 4u; w++) {
            uint q = rd_u32(b + 32u + half_ * 32u + h * 16u + 4u * w);
            uint hm = rd_u32(b + h * 16u + 4u * w);
            [[unroll]] for (uint k = 0; k < 4u; k++) {
                int qv = int((q >> (8u * k + 2u * j)) & 3u);
                qv -= ((hm >> (8u * k + mbit)) & 1u) != 0u ? 0 : 4;
                v[h * 16u + 4u * w + k] = dl * float(qv);
            }
        }
    }
}
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
#ifdef TYPE_Q4_K
#define BLOCK_BYTES 144u
#define QS_AT 16u
#else
#define BLOCK_BYTES 176u
#define QS_AT 48u
#endif
/* block: d dmin scales[12] (qh[32]) qs[128] */
void dequant32(uint base, uint s, uint ne0, out float v[32])
{
    uint b = base + (s >> 3) * BLOCK_BYTES;
    uint sub = s & 7u, g = sub >> 1, hi = sub & 1u;
    float d = rd_f16(b), dmin = rd_f16(b + 2u);
    uint sc, mn;
    if (sub < 4u) {
        sc = rd_u8(b + 4u + sub) & 63u;
        mn = rd_u8(b + 8u + sub) & 63u;
    } else {
        sc = (rd_u8(b + 8u + sub) & 0xFu) | ((rd_u8(b + sub) >> 6) << 4);
        mn = (rd_u8(b + 8u + sub) >> 4) | ((rd_u8(b + 4u + sub) >> 6) << 4);
    }
    float d1 = d * float(sc), m1 = dmin * float(mn);
    [[unroll]] for (uint w = 0; w < 8u; w++) {
        uint q = WORDS[(b + QS_AT + g * 32u + 4u * w) >> 2];   /* 144/176-byte blocks: aligned */
#ifdef TYPE_Q5_K
        uint qh = WORDS[(b + 16u + 4u * w) >> 2];
#endif
        [[unroll]] for (uint k = 0; k < 4u; k++) {
            uint x = (q >> (8u * k + 4u * hi)) & 0xFu;
#ifdef TYPE_Q5_K
            x += ((qh >> (8u * k + sub)) & 1u) << 4;
#endif
            v[4u * w + k] = d1 * float(x) - m1;
        }
    }
}
#elif defined(TYPE_Q6_K)
/* block: ql[128] qh[64] scales[16] (int8) d (210 bytes) */
void dequant32(uint base, uint s, uint ne0, out float v[32])
{
    uint b = base + (s >> 3) * 210u;
    uint sub = s & 7u, h = sub >> 2, quarter = sub & 3u;
    float d = rd_f16(b + 208u);
    [[unroll]] for (uint p = 0; p < 2u; p++) {
        float dl = d * float(bitfieldExtract(int(rd_u8(b + 192u + h * 8u + p + 2u * quarter)), 0, 8));
        [[unroll]] for (uint w = 0; w < 4u; w++) {
            uint ql = rd_u32(b + h * 64u + (quarter & 1u) * 32u + p * 16u + 4u * w);
            uint qh = rd_u32(b + 128u + h * 32u + p * 16u + 4u * w);
            [[unroll]] for (uint k = 0; k < 4u; k++) {
                uint lo = (ql >> (8u * k + 4u * (quarter >> 1))) & 0xFu;
                uint hb = (qh >> (8u * k + 2u * quarter)) & 3u;
                v[p * 16u + 4u * w + k] = dl * (float(int(lo | (hb << 4))) - 32.0);
            }
        }
    }
}
#elif defined(TYPE_MXFP4)
/* block: e (E8M0) qs[16] (17 bytes): element j is E2M1 nibble qs[j] & 15,
 * element j + 16 is qs[j] >> 4, from the doubled table times 2^(e - 128)
 * (the halved scale, built from bits as the codec's e8m0_half) */
const float KV_FP4[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0,
                                   0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);
void dequant32(uint base, uint s, uint ne0, out float v[32])
{
    uint b = base + s * 17u;
    uint sp[6];
    SPAN_LOAD(sp, b, 6u);
    uint sh = (b & 3u) * 8u;
    uint e = SPAN_BITS(sp, sh) & 0xFFu;
    float d = uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23));
    [[unroll]] for (uint j = 0; j < 4u; j++) {
        uint q = SPAN_BITS(sp, sh + 8u + 32u * j);
        [[unroll]] for (uint k = 0; k < 4u; k++) {
            uint qb = (q >> (8u * k)) & 0xFFu;
            v[4u * j + k] = KV_FP4[qb & 0xFu] * d;
            v[4u * j + k + 16u] = KV_FP4[qb >> 4] * d;
        }
    }
}
#endif
#endif /* WORDS */
