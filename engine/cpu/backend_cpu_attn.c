/* backend_cpu_attn: the arithmetic the CPU backend shares with ggml's CPU
 * backend (llama.cpp's x86-64 AVX-512 build) so that logits agree bit for
 * bit: its F16 dot product order, its two flash-attention forms, its
 * vectorised expf and SwiGLU. Each piece exists as plain C (the reference,
 * used without AVX2) and as AVX2 + FMA + F16C code chosen at run time; both
 * give the same bits, because both follow ggml's order of float operations
 * (a 16-lane ggml vector is two 8-lane AVX2 vectors here).
 *
 * Orders, from llama.cpp's ggml-cpu sources (vec.h, ops.cpp, simd-mappings.h):
 *  - F16 dot (one-chunk attention scores): 4 accumulators x 16 lanes of FMAs
 *    over 64-element steps; then (a0 + a2) + (a1 + a3) lane-wise and the
 *    16 lanes summed as (l, l+8), (l, l+4), (l, l+2), (l, l+1); leftovers
 *    added in double.
 *  - tiled attention (batches of 64 or more queries): each score one fma
 *    chain over the head dimension from +0; KV in tiles of 64 cells; the
 *    tile's weights from the vectorised expf, summed per 16 as above into a
 *    double; V accumulated by one fma chain per output element.
 *  - vectorised expf: an Arm optimized-routines polynomial with its
 *    published coefficients, scaled by 2^n at the end.
 * With hw (llama.cpp's AVX2 "haswell" build): the F16 dot in 4 x 8 lanes over
 * 32-element steps, softmax sums per 8 lanes, and that build's own expf. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend_cpu_internal.h"
#include "codec.h"
#include "kernels.h"

/* ---- plain C ---- */

float backend_cpu_v_expf(float x)
{
    float z = fmaf(x, 0x1.715476p+0f, 0x1.8p23f);
    float n = z - 0x1.8p23f;
    float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    if (fabsf(n) > 192.0f)
        return n <= 0.0f ? 0.0f : INFINITY;
    float u = b * b;
    float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                   u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    return ldexpf(j, (int)n);
}

/* The haswell build's expf (its AVX2 form of the same polynomial): j
 * without the constant 1 term, result fma(j, k, k) with k = 2^n from the
 * exponent bits; |n| > 126 through two scale factors, |n| > 192 saturated. */
float backend_cpu_v_expf_hw(float x)
{
    float z = fmaf(x, 0x1.715476p+0f, 0x1.8p23f);
    float n = z - 0x1.8p23f;
    float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    uint32_t zb, kb, e;
    memcpy(&zb, &z, 4);
    e = zb << 23;
    kb = e + 0x3f800000u;
    float k, u = b * b;
    memcpy(&k, &kb, 4);
    float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                   0x1.ffffecp-1f * b);
    if (!(fabsf(n) > 126.0f))
        return fmaf(j, k, k);
    uint32_t g = n <= 0.0f ? 0x82000000u : 0u, s1b = g + 0x7f000000u, s2b = e - g;
    float s1, s2;
    memcpy(&s1, &s1b, 4);
    memcpy(&s2, &s2b, 4);
    if (fabsf(n) > 192.0f)
        return s1 * s1;
    return fmaf(s2, j, s2) * s1;
}

/* ggml's sum of 16 lanes: (l, l+8), then (l, l+4), (l, l+2), (l, l+1). */
static float reduce16(const float *a)
{
    float b[8], c[4];
    for (int l = 0; l < 8; l++)
        b[l] = a[l] + a[l + 8];
    for (int l = 0; l < 4; l++)
        c[l] = b[l] + b[l + 4];
    return (c[0] + c[2]) + (c[1] + c[3]);
}

/* The haswell build's sum of 8 lanes (softmax, tinyBLAS): (l, l+4), then
 * (0,2)(1,3), (0,1). */
static float reduce8(const float *a)
{
    float c[4];
    for (int l = 0; l < 4; l++)
        c[l] = a[l] + a[l + 4];
    return (c[0] + c[2]) + (c[1] + c[3]);
}

static inline float h2f(uint16_t h) { return codec_f16_to_f32(h); }

/* The haswell build's ggml_vec_dot_f16: 4 accumulators x 8 lanes over
 * 32-element steps, (a0 + a2) + (a1 + a3), halves added (l, l+4), then two
 * hadds: (0+1) + (2+3); leftovers in double. */
static float dot_f16_hw_ref(const float *q, const uint16_t *k, uint32_t n)
{
    float acc[4][8] = {{0}};
    uint32_t np = n & ~31u;
    for (uint32_t i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++)
                acc[j][l] = fmaf(h2f(k[i + 8 * j + l]), q[i + 8 * j + l], acc[j][l]);
    float a[8], c[4];
    for (int l = 0; l < 8; l++)
        a[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    for (int l = 0; l < 4; l++)
        c[l] = a[l] + a[l + 4];
    double s = (c[0] + c[1]) + (c[2] + c[3]);
    for (uint32_t i = np; i < n; i++)
        s += (double)(q[i] * h2f(k[i]));
    return (float)s;
}

float backend_cpu_dot_f16_ref(const float *q, const uint16_t *k, uint32_t n, bool hw)
{
    if (hw)
        return dot_f16_hw_ref(q, k, n);
    float acc[4][16] = {{0}};
    uint32_t np = n & ~63u;
    for (uint32_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++)
                acc[j][l] = fmaf(h2f(k[i + 16 * j + l]), q[i + 16 * j + l], acc[j][l]);
    float a[16];
    for (int l = 0; l < 16; l++)
        a[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    double s = reduce16(a);
    for (uint32_t i = np; i < n; i++)
        s += (double)(q[i] * h2f(k[i]));
    return (float)s;
}

/* Cells past the last visible one of a tile's mask (1 + its highest bit). */
static inline uint32_t mask_len(uint64_t m)
{
    return m ? 64u - (uint32_t)__builtin_clzll(m) : 0;
}

void backend_cpu_attn_sink(float sink, float *M, float *S, float *acc, uint32_t hd, bool tiled)
{
    float ms = 1.0f, vs = 1.0f;
    if (sink > *M) {
        ms = expf(*M - sink);
        if (!tiled)
            *M = sink;
        for (uint32_t d = 0; d < hd; d++)
            acc[d] *= ms;
    } else {
        vs = expf(sink - *M);
    }
    if (tiled) {
        *S = fmaf(*S, ms, vs);
    } else {
        const float t = *S * ms; /* two roundings, as ggml's one-chunk form */
        *S = t + vs;
    }
}

void backend_cpu_attn_tiled_ref(const float *q, const uint16_t *k, const uint16_t *v, size_t stride,
                                const uint32_t r[4], uint32_t hd, float scale, const float *sink, float *acc,
                                float *out, bool hw)
{
    for (uint32_t d = 0; d < hd; d++)
        acc[d] = 0.0f;
    float S = 0.0f, M = -INFINITY, kq[64], P[64];
    const uint32_t end = r[3] > r[1] ? r[3] : r[1];
    for (uint32_t ic = 0; ic < end; ic += 64) {
        /* ggml skips a tile none of whose cells the query sees (ops.cpp
         * 9027-9049 can_skip, 9080-9083 skip[tq]: its weights are zeroed) */
        const uint64_t m = backend_cpu_attn_tile_mask(r, ic);
        if (!m)
            continue;
        const uint32_t nt = mask_len(m);
        float tmax = -INFINITY;
        for (uint32_t t = 0; t < 64; t++) {
            kq[t] = -INFINITY; /* masked: score + (-inf) */
            if (!(m >> t & 1))
                continue;
            const uint16_t *kr = k + (size_t)(ic + t) * stride;
            float a = 0.0f;
            for (uint32_t d = 0; d < hd; d++)
                a = fmaf(q[d], h2f(kr[d]), a);
            kq[t] = a * scale;
            tmax = kq[t] > tmax ? kq[t] : tmax;
        }
        float Mn = fmaxf(M, tmax);
        if (Mn > M) {
            float ms = expf(M - Mn);
            for (uint32_t d = 0; d < hd; d++)
                acc[d] *= ms;
            S *= ms;
        }
        M = Mn;
        double sum = 0.0;
        for (int t = 0; t < 64; t++)
            P[t] = hw ? backend_cpu_v_expf_hw(kq[t] - M) : backend_cpu_v_expf(kq[t] - M);
        for (int b = 0; b < 64; b += hw ? 8 : 16)
            sum += (double)(hw ? reduce8(P + b) : reduce16(P + b));
        S = (float)((double)S + sum);
        for (uint32_t t = 0; t < nt; t++) {
            const uint16_t *vr = v + (size_t)(ic + t) * stride;
            for (uint32_t d = 0; d < hd; d++)
                acc[d] = fmaf(P[t], h2f(vr[d]), acc[d]);
        }
    }
    if (sink)
        backend_cpu_attn_sink(*sink, &M, &S, acc, hd, true);
    float inv = S == 0.0f ? 0.0f : 1.0f / S;
    for (uint32_t d = 0; d < hd; d++)
        out[d] = acc[d] * inv;
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma,f16c")))

/* The kernels' CPU check (cpufeat.h: AVX2 + FMA + F16C). */
bool backend_cpu_attn_simd_available(void)
{
    return kern_simd_available(KERN_SIMD_AVX2_PLAIN);
}

/* The 16-lane sum of reduce16 over lo (lanes 0-7) and hi (lanes 8-15). */
TGT static inline float hsum16(__m256 lo, __m256 hi)
{
    __m256 b = _mm256_add_ps(lo, hi);
    __m128 c = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
    __m128 d = _mm_add_ps(c, _mm_movehl_ps(c, c));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

TGT static inline __m256 ld8h(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* r[l][j] <- r[j][l]: an 8x8 transpose of floats */
TGT static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

TGT static inline float hsum8(__m256 x)
{
    __m128 c = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    __m128 d = _mm_add_ps(c, _mm_movehl_ps(c, c));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

TGT static float dot_f16_hw(const float *q, const uint16_t *k, uint32_t n)
{
    __m256 a[4];
    for (int i = 0; i < 4; i++)
        a[i] = _mm256_setzero_ps();
    uint32_t np = n & ~31u;
    for (uint32_t i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_fmadd_ps(ld8h(k + i + 8 * j), _mm256_loadu_ps(q + i + 8 * j), a[j]);
    __m256 b = _mm256_add_ps(_mm256_add_ps(a[0], a[2]), _mm256_add_ps(a[1], a[3]));
    __m128 c = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
    c = _mm_hadd_ps(c, c);
    double s = _mm_cvtss_f32(_mm_hadd_ps(c, c));
    for (uint32_t i = np; i < n; i++)
        s += (double)(q[i] * h2f(k[i]));
    return (float)s;
}

/* ggml_vec_dot_f16 (zen4 order) with its accumulators in named registers
 * (an array of them was zeroed on the stack with rep stos on every call, a
 * sixth of the dot's time). */
TGT static inline float dot_f16_regs(const float *q, const uint16_t *k, uint32_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    const uint32_t np = n & ~63u;
    for (uint32_t i = 0; i < np; i += 64) { /* ggml accumulator j/2, lanes 8*(j%2).. */
        a0 = _mm256_fmadd_ps(ld8h(k + i), _mm256_loadu_ps(q + i), a0);
        a1 = _mm256_fmadd_ps(ld8h(k + i + 8), _mm256_loadu_ps(q + i + 8), a1);
        a2 = _mm256_fmadd_ps(ld8h(k + i + 16), _mm256_loadu_ps(q + i + 16), a2);
        a3 = _mm256_fmadd_ps(ld8h(k + i + 24), _mm256_loadu_ps(q + i + 24), a3);
        a4 = _mm256_fmadd_ps(ld8h(k + i + 32), _mm256_loadu_ps(q + i + 32), a4);
        a5 = _mm256_fmadd_ps(ld8h(k + i + 40), _mm256_loadu_ps(q + i + 40), a5);
        a6 = _mm256_fmadd_ps(ld8h(k + i + 48), _mm256_loadu_ps(q + i + 48), a6);
        a7 = _mm256_fmadd_ps(ld8h(k + i + 56), _mm256_loadu_ps(q + i + 56), a7);
    }
    __m256 lo = _mm256_add_ps(_mm256_add_ps(a0, a4), _mm256_add_ps(a2, a6));
    __m256 hi = _mm256_add_ps(_mm256_add_ps(a1, a5), _mm256_add_ps(a3, a7));
    float r = hsum16(lo, hi);
    if (np == n)
        return r;
    double s = r;
    for (uint32_t i = np; i < n; i++)
        s += (double)(q[i] * h2f(k[i]));
    return (float)s;
}

TGT float backend_cpu_dot_f16(const float *q, const uint16_t *k, uint32_t n, bool hw)
{
    return hw ? dot_f16_hw(q, k, n) : dot_f16_regs(q, k, n);
}

TGT void backend_cpu_dot_f16_run(const float *q, const uint16_t *k, size_t stride, uint32_t n, bool hw, float scale,
                                 float *out, uint32_t cnt)
{
    if (hw) {
        for (uint32_t c = 0; c < cnt; c++)
            out[c] = dot_f16_hw(q, k + (size_t)c * stride, n) * scale;
        return;
    }
    for (uint32_t c = 0; c < cnt; c++)
        out[c] = dot_f16_regs(q, k + (size_t)c * stride, n) * scale;
}

/* 2^n * j for the lanes of ggml's expf, exact when the result is normal;
 * other lanes (|n| > 125) go through the plain C form. */
TGT static __m256 v_expf8(__m256 x)
{
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
    const __m256 absn = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    const __m256 big = _mm256_cmp_ps(absn, _mm256_set1_ps(125.0f), _CMP_GT_OQ);
    __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    __m256 res = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(j), e));
    if (_mm256_movemask_ps(big)) {
        float xs[8], rs[8];
        _mm256_storeu_ps(xs, x);
        _mm256_storeu_ps(rs, res);
        int m = _mm256_movemask_ps(big);
        for (int l = 0; l < 8; l++)
            if (m & (1 << l))
                rs[l] = backend_cpu_v_expf(xs[l]);
        res = _mm256_loadu_ps(rs);
    }
    return res;
}

/* backend_cpu_v_expf_hw on 8 lanes (the same operations) */
TGT static __m256 v_expf8_hw(__m256 x)
{
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_set1_epi32(0x3f800000)));
    const __m256 absn = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    const __m256 c = _mm256_cmp_ps(absn, _mm256_set1_ps(126.0f), _CMP_GT_OQ);
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    if (!_mm256_movemask_ps(c))
        return _mm256_fmadd_ps(j, k, k);
    float xs[8], rs[8];
    _mm256_storeu_ps(xs, x);
    for (int l = 0; l < 8; l++)
        rs[l] = backend_cpu_v_expf_hw(xs[l]);
    return _mm256_loadu_ps(rs);
}

TGT float backend_cpu_v_expf_simd(float x)
{
    float r[8];
    _mm256_storeu_ps(r, v_expf8(_mm256_set1_ps(x)));
    return r[0];
}

/* One 64-cell tile of ggml's tiled flash attention, after the scores kq
 * (masked cells -inf): the running maximum, acc rescaled when it grows, the
 * weights P = expf(kq - M) (vectorised, masked cells exactly 0) and their
 * sum added to S in ggml's lane order. */
TGT static inline void tile_softmax(const float *kq, uint32_t nt, uint32_t hd, float *acc, float *P, float *Mp,
                                    float *Sp, bool hw)
{
    float M = *Mp, S = *Sp;
    float tmax = -INFINITY;
    for (uint32_t t = 0; t < nt; t++)
        tmax = kq[t] > tmax ? kq[t] : tmax;
    float Mn = fmaxf(M, tmax);
    if (Mn > M) {
        float ms = expf(M - Mn);
        __m256 vms = _mm256_set1_ps(ms);
        for (uint32_t d = 0; d < hd; d += 8)
            _mm256_storeu_ps(acc + d, _mm256_mul_ps(_mm256_loadu_ps(acc + d), vms));
        S *= ms;
    }
    M = Mn;
    double sum = 0.0;
    const __m256 vM = _mm256_set1_ps(M);
    __m256 e[8];
    for (int b = 0; b < 8; b++) {
        e[b] = _mm256_setzero_ps();
        if ((uint32_t)(8 * b) < nt) {
            __m256 x = _mm256_loadu_ps(kq + 8 * b);
            /* masked cells: exactly 0, as ggml's expf gives for -inf */
            e[b] = _mm256_and_ps(hw ? v_expf8_hw(_mm256_sub_ps(x, vM)) : v_expf8(_mm256_sub_ps(x, vM)),
                                 _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ));
        }
        _mm256_storeu_ps(P + 8 * b, e[b]);
    }
    for (int b = 0; b < 8; b += hw ? 1 : 2)
        sum += (double)(hw ? hsum8(e[b]) : hsum16(e[b], e[b + 1]));
    *Mp = M;
    *Sp = (float)((double)S + sum);
}

/* Lanes l of 8 whose bit l is set in bits (one byte of a tile mask). */
TGT static inline __m256i lanes_of(uint32_t bits)
{
    const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), sel), sel);
}

TGT void backend_cpu_attn_tiled(const float *q, const uint16_t *k, const uint16_t *v, size_t stride,
                                const uint32_t r[4], uint32_t hd, float scale, const float *sink, float *acc,
                                float *out, bool hw)
{
    for (uint32_t d = 0; d < hd; d++)
        acc[d] = 0.0f;
    float S = 0.0f, M = -INFINITY;
    float kq[64] __attribute__((aligned(32))), P[64] __attribute__((aligned(32)));
    const int32_t rs = (int32_t)(stride * 2); /* bytes between cells */
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const uint32_t end = r[3] > r[1] ? r[3] : r[1];
    for (uint32_t ic = 0; ic < end; ic += 64) {
        const uint64_t m = backend_cpu_attn_tile_mask(r, ic);
        if (!m)
            continue; /* as backend_cpu_attn_tiled_ref */
        const uint32_t nt = mask_len(m);
        /* scores, 8 cells at a time: lane c holds cell ic+g+c's fma chain;
         * two dimensions per 32-bit gather */
        for (uint32_t g = 0; g < 64; g += 8) {
            const uint32_t bits = (uint32_t)(m >> g) & 0xFF;
            if (!bits) {
                _mm256_storeu_ps(kq + g, _mm256_set1_ps(-INFINITY));
                continue;
            }
            __m256i valid = lanes_of(bits);
            __m256i off = _mm256_mullo_epi32(lane, _mm256_set1_epi32(rs));
            const uint16_t *kb = k + (size_t)(ic + g) * stride;
            __m256 a = _mm256_setzero_ps();
            for (uint32_t d = 0; d < hd; d += 2) {
                __m256i w = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)(kb + d), off,
                                                        valid, 1);
                /* low halves: dimension d, high halves: d + 1; packed to 8 + 8 halves */
                __m256i pk = _mm256_packus_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0xFFFF)),
                                                 _mm256_srli_epi32(w, 16));
                pk = _mm256_permute4x64_epi64(pk, 0xD8);
                __m128i lo16 = _mm256_castsi256_si128(pk), hi16 = _mm256_extracti128_si256(pk, 1);
                a = _mm256_fmadd_ps(_mm256_set1_ps(q[d]), _mm256_cvtph_ps(lo16), a);
                a = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 1]), _mm256_cvtph_ps(hi16), a);
            }
            a = _mm256_mul_ps(a, _mm256_set1_ps(scale));
            a = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), a, _mm256_castsi256_ps(valid));
            _mm256_storeu_ps(kq + g, a);
        }
        tile_softmax(kq, nt, hd, acc, P, &M, &S, hw);
        for (uint32_t d = 0; d < hd; d += 8) {
            __m256 a = _mm256_loadu_ps(acc + d);
            for (uint32_t t = 0; t < nt; t++)
                a = _mm256_fmadd_ps(_mm256_set1_ps(P[t]), ld8h(v + (size_t)(ic + t) * stride + d), a);
            _mm256_storeu_ps(acc + d, a);
        }
    }
    if (sink)
        backend_cpu_attn_sink(*sink, &M, &S, acc, hd, true);
    float inv = S == 0.0f ? 0.0f : 1.0f / S;
    __m256 vinv = _mm256_set1_ps(inv);
    for (uint32_t d = 0; d < hd; d += 8)
        _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_loadu_ps(acc + d), vinv));
}

/* The pairs of a grouped tile go six at a time through register tiles of
 * 6 pairs x 16 lanes (llama.cpp's simd_gemm on AVX2 is 6 x 2 vectors too):
 * 12 accumulators, the two vectors of the tile loaded once for six fmas. */
#define ATTN_NP 6

/* Scores of NP pairs over 16 cells of the transposed key tile kt (row d at
 * kt + 64 d): each cell's fma chain over d in order from +0. */
TGT static inline __attribute__((always_inline)) void sc_tile(const float *kt, uint32_t hd,
                                                               const float *const *qs, float *const *ss,
                                                               const int NP)
{
    __m256 a[ATTN_NP][2];
    for (int p = 0; p < NP; p++)
        a[p][0] = a[p][1] = _mm256_setzero_ps();
    for (uint32_t d = 0; d < hd; d++) {
        const __m256 k0 = _mm256_loadu_ps(kt + (size_t)d * 64), k1 = _mm256_loadu_ps(kt + (size_t)d * 64 + 8);
        for (int p = 0; p < NP; p++) {
            const __m256 x = _mm256_broadcast_ss(qs[p] + d);
            a[p][0] = _mm256_fmadd_ps(x, k0, a[p][0]);
            a[p][1] = _mm256_fmadd_ps(x, k1, a[p][1]);
        }
    }
    for (int p = 0; p < NP; p++) {
        _mm256_storeu_ps(ss[p], a[p][0]);
        _mm256_storeu_ps(ss[p] + 8, a[p][1]);
    }
}

/* a_p[0..8 NV) += sum over cells t < nt of P_p[t] * vt[t hd + 0..8 NV) for
 * NP pairs (NV = 1 or 2 vectors): each output's fma chain over the cells in
 * order. */
TGT static inline __attribute__((always_inline)) void v_tile(float *const *as, const float *vt, uint32_t hd,
                                                              const float *const *ps, uint32_t nt, const int NP,
                                                              const int NV)
{
    __m256 o[ATTN_NP][2];
    for (int p = 0; p < NP; p++)
        for (int c = 0; c < NV; c++)
            o[p][c] = _mm256_loadu_ps(as[p] + 8 * c);
    for (uint32_t t = 0; t < nt; t++) {
        const __m256 w0 = _mm256_loadu_ps(vt + (size_t)t * hd);
        const __m256 w1 = NV == 2 ? _mm256_loadu_ps(vt + (size_t)t * hd + 8) : w0;
        for (int p = 0; p < NP; p++) {
            const __m256 x = _mm256_broadcast_ss(ps[p] + t);
            o[p][0] = _mm256_fmadd_ps(x, w0, o[p][0]);
            if (NV == 2)
                o[p][1] = _mm256_fmadd_ps(x, w1, o[p][1]);
        }
    }
    for (int p = 0; p < NP; p++)
        for (int c = 0; c < NV; c++)
            _mm256_storeu_ps(as[p] + 8 * c, o[p][c]);
}

/* sc_tile / v_tile with a constant pair count (1..ATTN_NP) */
TGT static void sc_tile_n(const float *kt, uint32_t hd, const float *const *qs, float *const *ss, int np)
{
    switch (np) {
    case 6: sc_tile(kt, hd, qs, ss, 6); break;
    case 5: sc_tile(kt, hd, qs, ss, 5); break;
    case 4: sc_tile(kt, hd, qs, ss, 4); break;
    case 3: sc_tile(kt, hd, qs, ss, 3); break;
    case 2: sc_tile(kt, hd, qs, ss, 2); break;
    default: sc_tile(kt, hd, qs, ss, 1); break;
    }
}

TGT static void v_tile_n(float *const *as, const float *vt, uint32_t hd, const float *const *ps, uint32_t nt,
                         int np, int nv)
{
    if (nv == 1) {
        for (int p = 0; p < np; p++) /* a head dimension of 8 (mod 16): its last 8 outputs */
            v_tile(as + p, vt, hd, ps + p, nt, 1, 1);
        return;
    }
    switch (np) {
    case 6: v_tile(as, vt, hd, ps, nt, 6, 2); break;
    case 5: v_tile(as, vt, hd, ps, nt, 5, 2); break;
    case 4: v_tile(as, vt, hd, ps, nt, 4, 2); break;
    case 3: v_tile(as, vt, hd, ps, nt, 3, 2); break;
    case 2: v_tile(as, vt, hd, ps, nt, 2, 2); break;
    default: v_tile(as, vt, hd, ps, nt, 1, 2); break;
    }
}

/* The next n <= ATTN_NP pairs from *cur on whose query sees the tile (tm:
 * each query's cells, nh pairs per query). */
static int next_pairs(const uint64_t *tm, uint32_t nh, uint32_t np, uint32_t *cur, uint32_t out[ATTN_NP])
{
    int n = 0;
    for (; *cur < np && n < ATTN_NP; (*cur)++)
        if (tm[*cur / nh])
            out[n++] = *cur;
    return n;
}

/* backend_cpu_attn_tiled for nq consecutive queries x nh heads sharing one
 * KV head, the same floats per (query, head) pair: each 64-cell tile of keys
 * and values is converted to F32 once (keys transposed, one cell per lane)
 * and serves every pair, instead of being gathered and converted again for
 * each of them. Pair (i, j) is query t0 + i (at position pos0 + t0 + i,
 * its cells from backend_cpu_attn_rows) and head j: its query at q + (i * q_tok + j) * hd, its output at the same
 * place in out. work: backend_cpu_attn_group_work(nq * nh, hd) floats. */
TGT void backend_cpu_attn_tiled_group(const float *q, size_t q_tok, const uint16_t *k, const uint16_t *v,
                                      size_t stride, uint32_t pos0, uint32_t n_swa, uint32_t n_cells, uint32_t t0,
                                      uint32_t nq, uint32_t nh, uint32_t hd, float scale, const float *sinks,
                                      float *work, float *out, bool hw)
{
    nq = nq < BACKEND_CPU_ATTN_QB ? nq : BACKEND_CPU_ATTN_QB;
    const uint32_t np = nq * nh;
    float *kt = work;                 /* [hd][64]: key tile, transposed */
    float *vt = kt + (size_t)64 * hd; /* [64][hd]: value tile */
    float *acc = vt + (size_t)64 * hd;
    float *Ms = acc + (size_t)np * hd, *Ss = Ms + np;
    float *sc = Ss + np; /* [np][64]: the scores, then the weights, of the tile */
    for (size_t i = 0; i < (size_t)np * hd; i++)
        acc[i] = 0.0f;
    for (uint32_t p = 0; p < np; p++) {
        Ms[p] = -INFINITY;
        Ss[p] = 0.0f;
    }
    uint32_t end = 0, rows[BACKEND_CPU_ATTN_QB][4];
    for (uint32_t i = 0; i < nq; i++) {
        backend_cpu_attn_rows(pos0 + t0 + i, n_swa, n_cells, rows[i]);
        end = rows[i][1] > end ? rows[i][1] : end;
        end = rows[i][3] > end ? rows[i][3] : end;
    }
    for (uint32_t ic = 0; ic < end; ic += 64) {
        /* the cells each query sees in this tile (a tile no query sees is skipped) */
        uint64_t tm[BACKEND_CPU_ATTN_QB], any = 0;
        for (uint32_t i = 0; i < nq; i++)
            any |= tm[i] = backend_cpu_attn_tile_mask(rows[i], ic);
        if (!any)
            continue;
        const uint32_t ntile = mask_len(any);
        /* K transposed (dimension-major) eight cells x eight dimensions at a
         * time: F16C conversion (exact) and an 8x8 transpose in registers */
        uint32_t c8 = ntile & ~7u;
        for (uint32_t c = 0; c < c8; c += 8)
            for (uint32_t d = 0; d < hd; d += 8) {
                __m256 r[8];
                for (int l = 0; l < 8; l++)
                    r[l] = ld8h(k + (size_t)(ic + c + (uint32_t)l) * stride + d);
                transpose8(r);
                for (int l = 0; l < 8; l++)
                    _mm256_storeu_ps(kt + (size_t)(d + (uint32_t)l) * 64 + c, r[l]);
            }
        for (uint32_t c = 0; c < 64; c++) {
            const uint16_t *kr = k + (size_t)(ic + c) * stride, *vr = v + (size_t)(ic + c) * stride;
            if (c < ntile) {
                if (c >= c8)
                    for (uint32_t d = 0; d < hd; d++)
                        kt[(size_t)d * 64 + c] = h2f(kr[d]);
                for (uint32_t d = 0; d < hd; d += 8)
                    _mm256_storeu_ps(vt + (size_t)c * hd + d, ld8h(vr + d));
            } else {
                for (uint32_t d = 0; d < hd; d++)
                    kt[(size_t)d * 64 + c] = 0.0f; /* as the masked gather's lanes */
            }
        }
        /* the scores of the pairs whose query sees the tile, ATTN_NP pairs
         * x 16 cells at a time (the slice of the key tile stays in L1 while
         * the pairs walk over it) */
        uint32_t pp[ATTN_NP], cur;
        int n;
        for (uint32_t c0 = 0; c0 < ntile; c0 += 16)
            for (cur = 0; (n = next_pairs(tm, nh, np, &cur, pp)) > 0;) {
                const float *qs[ATTN_NP];
                float *ss[ATTN_NP];
                for (int p = 0; p < n; p++) {
                    qs[p] = q + ((size_t)(pp[p] / nh) * q_tok + pp[p] % nh) * hd;
                    ss[p] = sc + (size_t)pp[p] * 64 + c0;
                }
                sc_tile_n(kt + c0, hd, qs, ss, n);
            }
        /* per pair: the scaled scores (cells not seen: -inf) and the tile's
         * softmax, the weights P (exactly 0 for cells not seen) written over
         * the scores */
        for (uint32_t pi = 0; pi < np; pi++) {
            const uint64_t m = tm[pi / nh];
            if (!m)
                continue;
            float *row = sc + (size_t)pi * 64;
            for (uint32_t g = 0; g < 8; g++) {
                __m256 x = _mm256_set1_ps(-INFINITY);
                if (8 * g < ntile) {
                    __m256i valid = lanes_of((uint32_t)(m >> (8 * g)) & 0xFF);
                    x = _mm256_blendv_ps(x, _mm256_mul_ps(_mm256_loadu_ps(row + 8 * g), _mm256_set1_ps(scale)),
                                         _mm256_castsi256_ps(valid));
                }
                _mm256_storeu_ps(row + 8 * g, x);
            }
            tile_softmax(row, mask_len(m), hd, acc + (size_t)pi * hd, row, Ms + pi, Ss + pi, hw);
        }
        /* the values, ATTN_NP pairs x 16 outputs at a time, over the cells
         * the pairs' queries see (a cell a pair does not see has P = 0 there,
         * as in llama.cpp's gemm over the whole tile) */
        for (cur = 0; (n = next_pairs(tm, nh, np, &cur, pp)) > 0;) {
            const float *ps[ATTN_NP];
            float *as[ATTN_NP];
            uint32_t nt = 0;
            for (int p = 0; p < n; p++) {
                const uint32_t l = mask_len(tm[pp[p] / nh]);
                nt = l > nt ? l : nt;
                ps[p] = sc + (size_t)pp[p] * 64;
            }
            for (uint32_t d0 = 0; d0 < hd; d0 += 16) {
                for (int p = 0; p < n; p++)
                    as[p] = acc + (size_t)pp[p] * hd + d0;
                v_tile_n(as, vt + d0, hd, ps, nt, n, hd - d0 >= 16 ? 2 : 1);
            }
        }
    }
    for (uint32_t pi = 0; pi < np; pi++) {
        if (sinks)
            backend_cpu_attn_sink(sinks[pi % nh], Ms + pi, Ss + pi, acc + (size_t)pi * hd, hd, true);
        float inv = Ss[pi] == 0.0f ? 0.0f : 1.0f / Ss[pi];
        __m256 vinv = _mm256_set1_ps(inv);
        float *o = out + ((size_t)(pi / nh) * q_tok + pi % nh) * hd;
        for (uint32_t d = 0; d < hd; d += 8)
            _mm256_storeu_ps(o + d, _mm256_mul_ps(_mm256_loadu_ps(acc + (size_t)pi * hd + d), vinv));
    }
}

/* acc[d] = f16(acc[d] * ms) when rescale, then acc[d] = f16(fma(f32(v[d]), vs, acc[d])). */
TGT void backend_cpu_attn_mad(float *acc, const uint16_t *v, float ms, bool rescale, float vs,
                              uint32_t n)
{
    const __m256 vms = _mm256_set1_ps(ms), vvs = _mm256_set1_ps(vs);
    for (uint32_t d = 0; d < n; d += 8) {
        __m256 a = _mm256_loadu_ps(acc + d);
        if (rescale)
            a = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(a, vms), _MM_FROUND_TO_NEAREST_INT));
        a = _mm256_fmadd_ps(ld8h(v + d), vvs, a);
        _mm256_storeu_ps(acc + d, _mm256_cvtph_ps(_mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)));
    }
}

/* backend_cpu_attn_mad_run on NB x 8 dims: their accumulators stay in
 * registers from cell to cell, so only the F16 rounding's latency chains
 * them (NB independent chains), not a store and reload per cell. */
#define MAD_RUN(NB)                                                                                         \
    TGT static void mad_run_##NB(float *acc, const uint16_t *v, size_t stride, const float *ms,             \
                                 const float *vs, uint32_t n)                                               \
    {                                                                                                       \
        __m256 a[NB];                                                                                       \
        for (int b = 0; b < NB; b++)                                                                        \
            a[b] = _mm256_loadu_ps(acc + 8 * b);                                                            \
        for (uint32_t i = 0; i < n; i++) {                                                                  \
            const uint16_t *vr = v + (size_t)i * stride;                                                    \
            if (ms[i] != 1.0f) {                                                                            \
                const __m256 vms = _mm256_set1_ps(ms[i]);                                                   \
                for (int b = 0; b < NB; b++)                                                                \
                    a[b] = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(a[b], vms), _MM_FROUND_TO_NEAREST_INT)); \
            }                                                                                               \
            const __m256 vvs = _mm256_set1_ps(vs[i]);                                                       \
            for (int b = 0; b < NB; b++)                                                                    \
                a[b] = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_fmadd_ps(ld8h(vr + 8 * b), vvs, a[b]),      \
                                                       _MM_FROUND_TO_NEAREST_INT));                        \
        }                                                                                                   \
        for (int b = 0; b < NB; b++)                                                                        \
            _mm256_storeu_ps(acc + 8 * b, a[b]);                                                            \
    }
MAD_RUN(8)
MAD_RUN(4)
MAD_RUN(1)
#undef MAD_RUN

TGT void backend_cpu_attn_mad_run(float *acc, const uint16_t *v, size_t stride, const float *ms, const float *vs,
                                  uint32_t n, uint32_t n_dim)
{
    uint32_t d = 0;
    for (; d + 64 <= n_dim; d += 64)
        mad_run_8(acc + d, v + d, stride, ms, vs, n);
    for (; d + 32 <= n_dim; d += 32)
        mad_run_4(acc + d, v + d, stride, ms, vs, n);
    for (; d + 8 <= n_dim; d += 8)
        mad_run_1(acc + d, v + d, stride, ms, vs, n);
}

/* d[i] = silu(g[i]) * u[i] for i < n8 (a multiple of 8): ggml's x / (1 + expf(-x)) * u. */
TGT void backend_cpu_silu_mul(const float *g, const float *u, float *d, size_t n8, bool hw)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    for (size_t i = 0; i < n8; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 nx = _mm256_sub_ps(_mm256_setzero_ps(), x);
        __m256 e = hw ? v_expf8_hw(nx) : v_expf8(nx);
        __m256 s = _mm256_div_ps(x, _mm256_add_ps(one, e));
        _mm256_storeu_ps(d + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
    }
}
#else
bool backend_cpu_attn_simd_available(void) { return false; }
float backend_cpu_dot_f16(const float *q, const uint16_t *k, uint32_t n, bool hw)
{
    return backend_cpu_dot_f16_ref(q, k, n, hw);
}
void backend_cpu_attn_tiled(const float *q, const uint16_t *k, const uint16_t *v, size_t stride,
                            const uint32_t r[4], uint32_t hd, float scale, const float *sink, float *acc, float *out,
                            bool hw)
{
    backend_cpu_attn_tiled_ref(q, k, v, stride, r, hd, scale, sink, acc, out, hw);
}
void backend_cpu_attn_mad(float *acc, const uint16_t *v, float ms, bool rescale, float vs, uint32_t n)
{
    (void)acc, (void)v, (void)ms, (void)rescale, (void)vs, (void)n;
}
void backend_cpu_attn_mad_run(float *acc, const uint16_t *v, size_t stride, const float *ms, const float *vs,
                              uint32_t n, uint32_t n_dim)
{
    (void)acc, (void)v, (void)stride, (void)ms, (void)vs, (void)n, (void)n_dim;
}
void backend_cpu_dot_f16_run(const float *q, const uint16_t *k, size_t stride, uint32_t n, bool hw, float scale,
                             float *out, uint32_t cnt)
{
    for (uint32_t c = 0; c < cnt; c++)
        out[c] = backend_cpu_dot_f16_ref(q, k + (size_t)c * stride, n, hw) * scale;
}
void backend_cpu_attn_tiled_group(const float *q, size_t q_tok, const uint16_t *k, const uint16_t *v,
                                  size_t stride, uint32_t pos0, uint32_t n_swa, uint32_t n_cells, uint32_t t0,
                                  uint32_t nq, uint32_t nh, uint32_t hd, float scale, const float *sinks, float *work,
                                  float *out, bool hw)
{
    (void)q, (void)q_tok, (void)k, (void)v, (void)stride, (void)pos0, (void)t0, (void)nq, (void)nh, (void)hd;
    (void)n_swa, (void)n_cells, (void)sinks;
    (void)scale, (void)work, (void)out, (void)hw;
}
void backend_cpu_silu_mul(const float *g, const float *u, float *d, size_t n8, bool hw)
{
    (void)g, (void)u, (void)d, (void)n8, (void)hw;
}
float backend_cpu_v_expf_simd(float x) { return backend_cpu_v_expf(x); }
#endif
