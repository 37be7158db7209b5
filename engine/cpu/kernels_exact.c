/* kernels_exact: tiles that follow the float order of llama.cpp's x86-64
 * AVX-512 build (ggml-cpu) bit for bit: single-token products on AVX-512
 * machines (batches there go through the repacked GEMM in kernels_avx512.c),
 * and every product on AVX2 machines (kernels_exact.inc, compiled for both). Integer partial sums are exact in any order; what is
 * reproduced is where they become floats and how those are summed:
 *   F32, F16  ggml_vec_dot_f32/_f16: 4 accumulators x 16 lanes over 64-element
 *             steps, (a0 + a2) + (a1 + a3), then a 16-lane tree sum;
 *   Q8_0      ggml_vec_dot_q8_0_q8_0: per block 8 lanes of 4-element sums,
 *             fma with fl(dw*dx), 8-lane tree sum (l, l+4), (0,2)(1,3), (0,1);
 *   Q4_0      repacked gemv: per block the 32-element sum, one fma with
 *             fl(dw*dx) into a single accumulator;
 *   Q4_K      repacked gemv: per super-block the scaled sum and the min sum,
 *             each one fma (with fl(d*dx) and fl(dmin*dx)), subtracted at the end;
 *   Q4_0, Q4_K with a row count that is not a multiple of 8 (ggml does not
 *             repack those): ggml_vec_dot_q4_0_q8_0 (the Q8_0 lanes) and
 *             ggml_vec_dot_q4_K_q8_K (8 scaled lanes, 4 min lanes);
 *   Q6_K      ggml_vec_dot_q6_K_q8_K: per super-block 8 lane sums, the -32
 *             offset from the bsums (chunk c in lane c), one fma with
 *             fl(dx*d), 8-lane tree sum.
 * llama.cpp's AVX2 ("haswell") build sums F32/F16 differently (4 x 8 lanes
 * over 32-element steps, tinyBLAS with 8 lanes): kern_fill_exact_haswell
 * puts those tiles in place of the zen4 ones (docs/kernels.md). */
#include <math.h>
#include <string.h>

#include "kernels_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define KT __attribute__((target("avx2,fma,f16c")))
#define KSFX(name) name##_a2
#define EXACT_VNNI 0
#include "kernels_exact.inc"
#undef KT
#undef KSFX
#undef EXACT_VNNI

#define KT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define KSFX(name) name##_512
#define EXACT_VNNI 1
#include "kernels_exact.inc"
#undef KSFX
#undef EXACT_VNNI
#define KI static KT inline __attribute__((always_inline))

/* Q4_0 (repacked in ggml: the full 32-element sum per block). Four rows per
 * zmm, one 128-bit lane each: two vpdpbusd give each row four partial sums,
 * added within the lane (exact integers) and gathered into four lanes. */
static KT void vec_q4_0(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int nt,
                        int64_t nb, float *y, int64_t ys)
{
    const uint8_t *rp[4];
    for (int r = 0; r < 4; r++)
        rp[r] = w + (size_t)(r < nr ? r : 0) * rb;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int t = 0; t < nt; t++) {
        const kq8 *a = (const kq8 *)(act + (size_t)t * as);
        __m128 acc = _mm_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            const size_t bo = (size_t)b * sizeof(block_q4_0);
            __m512i raw = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(rp[0] + bo + 2)));
            raw = _mm512_inserti32x4(raw, _mm_loadu_si128((const __m128i *)(rp[1] + bo + 2)), 1);
            raw = _mm512_inserti32x4(raw, _mm_loadu_si128((const __m128i *)(rp[2] + bo + 2)), 2);
            raw = _mm512_inserti32x4(raw, _mm_loadu_si128((const __m128i *)(rp[3] + bo + 2)), 3);
            __m512i ulo = _mm512_and_si512(raw, m4), uhi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
            __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)a[b].qs));
            __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(a[b].qs + 16)));
            __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ulo, xlo), uhi, xhi);
            p = _mm512_add_epi32(p, _mm512_shuffle_epi32(p, (_MM_PERM_ENUM)0x4e));
            p = _mm512_add_epi32(p, _mm512_shuffle_epi32(p, (_MM_PERM_ENUM)0xb1));
            __m128i P = _mm512_castsi512_si128(_mm512_maskz_compress_epi32(0x1111, p));
            P = _mm_sub_epi32(P, _mm_set1_epi32(8 * a[b].s));
            uint16_t h[4];
            for (int r = 0; r < 4; r++)
                memcpy(&h[r], rp[r] + bo, 2);
            uint64_t hh;
            memcpy(&hh, h, 8);
            __m128 dw = _mm_cvtph_ps(_mm_cvtsi64_si128((long long)hh));
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(P), _mm_mul_ps(dw, _mm_set1_ps(a[b].d)), acc);
        }
        float o[4];
        _mm_storeu_ps(o, acc);
        for (int r = 0; r < nr; r++)
            y[t * ys + r] = o[r];
    }
}

void kern_fill_exact_avx512(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn plain[GGTYPE_COUNT],
                            kern_tile_fn vec8[GGTYPE_COUNT])
{
    kern_tile_fn bat[GGTYPE_COUNT] = {0};
    fill_exact_512(vec, bat, plain);
    vec[GGTYPE_Q4_0] = vec_q4_0; /* the 512-bit form */
    /* one token: the eight-row tiles (the same integers and float order),
     * twice the four-row tiles' speed on a Zen 4 (docs/kernels.md) */
    fill_exact_vec8_512(vec8);
}

kern_tile_fn kern_exact_f16_hx(void)
{
    return vec_f16_hx_512;
}

void kern_fill_exact_avx2(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn bat[GGTYPE_COUNT],
                          kern_tile_fn plain[GGTYPE_COUNT], kern_tile_fn vec8[GGTYPE_COUNT])
{
    fill_exact_a2(vec, bat, plain);
    fill_exact_vec8_a2(vec8);
}

void kern_fill_exact_haswell(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn bat[GGTYPE_COUNT])
{
    fill_exact_hw_a2(vec, bat);
}
#else
kern_tile_fn kern_exact_f16_hx(void)
{
    return NULL;
}
void kern_fill_exact_haswell(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn bat[GGTYPE_COUNT])
{
    (void)vec, (void)bat;
}
void kern_fill_exact_avx512(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn plain[GGTYPE_COUNT],
                            kern_tile_fn vec8[GGTYPE_COUNT])
{
    (void)vec, (void)plain, (void)vec8;
}
void kern_fill_exact_avx2(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn bat[GGTYPE_COUNT],
                          kern_tile_fn plain[GGTYPE_COUNT], kern_tile_fn vec8[GGTYPE_COUNT])
{
    (void)vec, (void)bat, (void)plain, (void)vec8;
}
#endif
