/* AVX2 path (x86-64 with AVX2, FMA, F16C), with and without AVX-VNNI. The
 * tiles come from kernels_simd.inc, compiled here twice with different
 * targets; selected at run time by kernels.c. */
#include "kernels_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>

/* Plain AVX2: u8 x s8 products through maddubs (pairs to int16) + madd. */
#define KTARGET __attribute__((target("avx2,fma,f16c")))
#define KSFX(name) name##_avx2
#define DOT_US(acc, u, s) \
    _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#include "kernels_simd.inc"
#undef KTARGET
#undef KSFX
#undef DOT_US

/* AVX-VNNI (Alder Lake, Sapphire Rapids): vpdpbusd on 256-bit vectors. */
#define KTARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define KSFX(name) name##_avxvnni
#define DOT_US(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#include "kernels_simd.inc"
#undef KTARGET
#undef KSFX
#undef DOT_US

void kern_quant_avx2(kern_q8_fn *q8, kern_q8k_fn *q8k)
{
    *q8 = quant_q8_32_avx2;
    *q8k = quant_q8_K_avx2;
}

void kern_f16_avx2(kern_f16_ops *ops)
{
    ops->axpy = axpy_f16_avx2;
    ops->h2f = f16_to_f32_avx2;
    ops->f2h = f32_to_f16_avx2;
}

void kern_fill_avx2(kern_tile_fn tab[GGTYPE_COUNT], int vnni)
{
    if (vnni)
        fill_tiles_avxvnni(tab);
    else
        fill_tiles_avx2(tab);
}

#else
void kern_f16_avx2(kern_f16_ops *ops)
{
    (void)ops;
}

void kern_quant_avx2(kern_q8_fn *q8, kern_q8k_fn *q8k)
{
    (void)q8;
    (void)q8k;
}

void kern_fill_avx2(kern_tile_fn tab[GGTYPE_COUNT], int vnni)
{
    (void)tab;
    (void)vnni;
}
#endif
