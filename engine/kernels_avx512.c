/* AVX-512 path (F, BW, VL, DQ and VNNI): the shared tiles with EVEX vpdpbusd,
 * plus 512-bit versions where they pay. Selected at run time by kernels.c. */
#include "kernels_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define KTARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define KSFX(name) name##_avx512
#define DOT_US(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))
#include "kernels_simd.inc"

void kern_fill_avx512(kern_tile_fn tab[GGTYPE_COUNT])
{
    fill_tiles_avx512(tab);
}

#else
void kern_fill_avx512(kern_tile_fn tab[GGTYPE_COUNT])
{
    (void)tab;
}
#endif
