/* backend_cpu_attn: the inner loops of the CPU backend's attention with
 * AVX2 + FMA + F16C (chosen at run time), computing exactly what the scalar
 * code in backend_cpu.c computes: the F16 conversions round to nearest even
 * in both, products of F16 values are exact in float and the score sums are
 * kept in double. */
#include <stdbool.h>
#include <stdint.h>

#include "backend_cpu_internal.h"
#include "kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma,f16c")))

/* The kernels' CPUID check (clang 14's __builtin_cpu_supports lacks "f16c"). */
bool backend_cpu_attn_simd_available(void)
{
    return kern_simd_available(KERN_SIMD_AVX2_PLAIN);
}

/* sum_d q[d] * f32(k[d]) for n a multiple of 8, summed in double. */
TGT double backend_cpu_attn_dot(const float *q, const uint16_t *k, uint32_t n)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (uint32_t d = 0; d < n; d += 8) {
        __m256 kf = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + d)));
        __m256 p = _mm256_mul_ps(_mm256_loadu_ps(q + d), kf);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(p)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(p, 1)));
    }
    __m256d s = _mm256_add_pd(s0, s1);
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
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
        __m256 vf = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d)));
        a = _mm256_fmadd_ps(vf, vvs, a);
        _mm256_storeu_ps(acc + d, _mm256_cvtph_ps(_mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)));
    }
}
#else
bool backend_cpu_attn_simd_available(void) { return false; }
double backend_cpu_attn_dot(const float *q, const uint16_t *k, uint32_t n)
{
    (void)q, (void)k, (void)n;
    return 0;
}
void backend_cpu_attn_mad(float *acc, const uint16_t *v, float ms, bool rescale, float vs, uint32_t n)
{
    (void)acc, (void)v, (void)ms, (void)rescale, (void)vs, (void)n;
}
#endif
