/* kernels_exact: mat-vec tiles (one token) that follow the float order of
 * llama.cpp's x86-64 AVX-512 build (ggml-cpu) bit for bit, used for
 * single-token products on AVX-512 machines so that generation agrees with
 * llama.cpp exactly (the batched path is the repacked GEMM in
 * kernels_avx512.c). Integer partial sums are exact in any order; what is
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
 *             fl(dx*d), 8-lane tree sum. */
#include <math.h>
#include <string.h>

#include "kernels_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define KT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define KI static KT inline __attribute__((always_inline))

KI float hsum8(__m256 x)
{
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

KI float h2f(uint16_t h)
{
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/* lane L = sum of w[4L..4L+3] * x[4L..4L+3] (signed bytes; x in -127..127) */
KI __m256i dot8s(__m256i w, __m256i x)
{
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

/* lane L = sum of u[4L..4L+3] * x[4L..4L+3] (u unsigned) */
KI __m256i dot8u(__m256i u, __m256i x)
{
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, x);
}

/* The totals of four 8-lane integer vectors, as lanes 0..3. */
KI __m128i hsum4x8(__m256i a, __m256i b, __m256i c, __m256i d)
{
    __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

KI __m256i nib_lo_hi(const uint8_t *qs16)
{
    __m128i q = _mm_loadu_si128((const __m128i *)qs16);
    __m128i m = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}

static KT void vec_q8_0(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int nt,
                        int64_t nb, float *y, int64_t ys)
{
    const block_q8_0 *rp[4];
    for (int r = 0; r < 4; r++)
        rp[r] = (const block_q8_0 *)(w + (size_t)(r < nr ? r : 0) * rb);
    for (int t = 0; t < nt; t++) {
        const kq8 *a = (const kq8 *)(act + (size_t)t * as);
        __m256 acc[4];
        for (int r = 0; r < 4; r++)
            acc[r] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            __m256i xv = _mm256_loadu_si256((const __m256i *)a[b].qs);
            for (int r = 0; r < 4; r++) { /* four independent chains */
                __m256i p = dot8s(_mm256_loadu_si256((const __m256i *)rp[r][b].qs), xv);
                float s = h2f(rp[r][b].d) * a[b].d;
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(s), _mm256_cvtepi32_ps(p), acc[r]);
            }
        }
        for (int r = 0; r < nr; r++)
            y[t * ys + r] = hsum8(acc[r]);
    }
}

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

/* The 8 six-bit scales (bytes 0-7) and mins (bytes 8-15) of a K-quant block. */
KI void k4_unpack(const uint8_t *scales, uint32_t u[4])
{
    const uint32_t m1 = 0x3f3f3f3f, m2 = 0x0f0f0f0f, m3 = 0x03030303;
    memcpy(u, scales, 12);
    u[3] = ((u[2] >> 4) & m2) | (((u[1] >> 6) & m3) << 4);
    const uint32_t aux = u[1] & m1;
    u[1] = (u[2] & m2) | (((u[0] >> 6) & m3) << 4);
    u[2] = aux;
    u[0] &= m1;
}

KI int32_t hsum_epi32x4(__m128i v)
{
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1));
    return _mm_cvtsi128_si32(v);
}

static KT void vec_q4_K(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int nt,
                        int64_t nb, float *y, int64_t ys)
{
    const uint8_t *rp[4];
    for (int r = 0; r < 4; r++)
        rp[r] = w + (size_t)(r < nr ? r : 0) * rb;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int t = 0; t < nt; t++) {
        const kq8k *a = (const kq8k *)(act + (size_t)t * as);
        __m128 acc = _mm_setzero_ps(), accm = _mm_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            const int8_t *xq = a[b].q.qs;
            /* 32-element sums of the activations' bsums, 8 x int16 */
            const __m128i bs32 = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)a[b].q.bsums),
                                                _mm_loadu_si128((const __m128i *)a[b].q.bsums + 1));
            __m256i xv[8];
            for (int j = 0; j < 8; j++)
                xv[j] = _mm256_loadu_si256((const __m256i *)(xq + 32 * j));
            __m256i sv[4];
            int32_t M[4];
            float D[4], Dm[4];
            for (int r = 0; r < 4; r++) {
                const block_q4_K *x = (const block_q4_K *)rp[r] + b;
                uint32_t u[4];
                k4_unpack(x->scales, u);
                const uint8_t *sc = (const uint8_t *)u;
                __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(u + 2)));
                M[r] = hsum_epi32x4(_mm_madd_epi16(mins, bs32));
                __m256i s = _mm256_setzero_si256();
                for (int j = 0; j < 4; j++) {
                    __m256i q = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * j));
                    __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                    __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xv[2 * j]), _mm256_set1_epi16(sc[2 * j]));
                    __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xv[2 * j + 1]),
                                                   _mm256_set1_epi16(sc[2 * j + 1]));
                    s = _mm256_add_epi32(s, _mm256_add_epi32(pl, ph));
                }
                sv[r] = s;
                D[r] = h2f(x->d);
                Dm[r] = h2f(x->dmin);
            }
            __m128i S = hsum4x8(sv[0], sv[1], sv[2], sv[3]);
            __m128 dx = _mm_set1_ps(a[b].q.d);
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(S), _mm_mul_ps(_mm_loadu_ps(D), dx), acc);
            accm = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_loadu_si128((const __m128i *)M)),
                                _mm_mul_ps(_mm_loadu_ps(Dm), dx), accm);
        }
        float o[4];
        _mm_storeu_ps(o, _mm_sub_ps(acc, accm));
        for (int r = 0; r < nr; r++)
            y[t * ys + r] = o[r];
    }
}

static KT void vec_q6_K(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int nt,
                        int64_t nb, float *y, int64_t ys)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    for (int t = 0; t < nt; t++) {
        const kq8k *a = (const kq8k *)(act + (size_t)t * as);
        for (int r = 0; r < nr; r++) {
            const block_q6_K *x = (const block_q6_K *)(w + (size_t)r * rb);
            __m256 acc = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                const int8_t *xq = a[b].q.qs;
                __m256i sumi = _mm256_setzero_si256();
                for (int n = 0; n < 2; n++) {
                    __m256i ql0 = _mm256_loadu_si256((const __m256i *)(x[b].ql + 64 * n));
                    __m256i ql1 = _mm256_loadu_si256((const __m256i *)(x[b].ql + 64 * n + 32));
                    __m256i qh = _mm256_loadu_si256((const __m256i *)(x[b].qh + 32 * n));
                    __m256i u[4];
                    u[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
                    u[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
                    u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
                    u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                           _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
                    for (int k = 0; k < 4; k++) {
                        int c = 4 * n + k; /* 32-element chunk; 16-groups 2c, 2c+1 */
                        __m256i sc = _mm256_set_m128i(_mm_set1_epi16(x[b].scales[2 * c + 1]),
                                                      _mm_set1_epi16(x[b].scales[2 * c]));
                        __m256i p = _mm256_maddubs_epi16(u[k], _mm256_loadu_si256((const __m256i *)(xq + 32 * c)));
                        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(sc, p));
                    }
                }
                /* the -32 offset, lane c: 32 * (sc[2c] bsums[2c] + sc[2c+1] bsums[2c+1]) */
                __m256i off = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a[b].q.bsums),
                                                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[b].scales)));
                sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(off, 5));
                float d = a[b].q.d * h2f(x[b].d);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
            }
            y[t * ys + r] = hsum8(acc);
        }
    }
}

/* F32 / F16: ggml_vec_dot_f32 / _f16 (K a multiple of 64; the tail as ggml
 * does it: in float for F32, in double for F16). */
KI __m512 ldw(const uint8_t *w, int64_t i, int f16)
{
    return f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i)))
               : _mm512_loadu_ps((const float *)w + i);
}

KI float vec_float1(const uint8_t *w, const float *x, int64_t n, int f16)
{
    __m512 s[4];
    for (int j = 0; j < 4; j++)
        s[j] = _mm512_setzero_ps();
    int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            s[j] = _mm512_fmadd_ps(ldw(w, i + 16 * j, f16), _mm512_loadu_ps(x + i + 16 * j), s[j]);
    __m512 v = _mm512_add_ps(_mm512_add_ps(s[0], s[2]), _mm512_add_ps(s[1], s[3]));
    float r = _mm512_reduce_add_ps(v);
    if (f16) {
        double d = r;
        for (int64_t i = np; i < n; i++)
            d += (double)(kern_h2f(((const uint16_t *)w)[i]) * x[i]);
        return (float)d;
    }
    /* the F32 tail as GCC built ggml's loop: groups of 8 as a product then
     * an add, the last n % 8 fused */
    const float *wf = (const float *)w;
    int64_t n8 = np + ((n - np) & ~(int64_t)7);
    for (int64_t i = np; i < n8; i++)
        r = r + wf[i] * x[i];
    for (int64_t i = n8; i < n; i++)
        r = fmaf(wf[i], x[i], r);
    return r;
}

static KT void vec_f32(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int nt,
                       int64_t n, float *y, int64_t ys)
{
    for (int t = 0; t < nt; t++)
        for (int r = 0; r < nr; r++)
            y[t * ys + r] = vec_float1(w + (size_t)r * rb, (const float *)(act + (size_t)t * as), n, 0);
}

static KT void vec_f16(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int nt,
                       int64_t n, float *y, int64_t ys)
{
    for (int t = 0; t < nt; t++)
        for (int r = 0; r < nr; r++)
            y[t * ys + r] = vec_float1(w + (size_t)r * rb, (const float *)(act + (size_t)t * as), n, 1);
}

/* Q4_0 without repacking (ggml_vec_dot_q4_0_q8_0): the Q8_0 lanes. */
static KT void vec_q4_0_plain(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int nt,
                              int64_t nb, float *y, int64_t ys)
{
    for (int t = 0; t < nt; t++) {
        const kq8 *a = (const kq8 *)(act + (size_t)t * as);
        for (int r = 0; r < nr; r++) {
            const block_q4_0 *x = (const block_q4_0 *)(w + (size_t)r * rb);
            __m256 acc = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                __m256i q = _mm256_sub_epi8(nib_lo_hi(x[b].qs), _mm256_set1_epi8(8));
                __m256i p = dot8s(q, _mm256_loadu_si256((const __m256i *)a[b].qs));
                float s = h2f(x[b].d) * a[b].d;
                acc = _mm256_fmadd_ps(_mm256_set1_ps(s), _mm256_cvtepi32_ps(p), acc);
            }
            y[t * ys + r] = hsum8(acc);
        }
    }
}

/* Q4_K without repacking (ggml_vec_dot_q4_K_q8_K): 8 lanes of scaled sums,
 * 4 lanes of mins, summed apart and added. */
static KT void vec_q4_K_plain(const uint8_t *w, size_t rb, int nr, const uint8_t *act, size_t as, int nt,
                              int64_t nb, float *y, int64_t ys)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int t = 0; t < nt; t++) {
        const kq8k *a = (const kq8k *)(act + (size_t)t * as);
        for (int r = 0; r < nr; r++) {
            const block_q4_K *x = (const block_q4_K *)(w + (size_t)r * rb);
            __m256 acc = _mm256_setzero_ps();
            __m128 accm = _mm_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                const float d = a[b].q.d * h2f(x[b].d), dmin = -a[b].q.d * h2f(x[b].dmin);
                const int8_t *xq = a[b].q.qs;
                const int16_t *bs = a[b].q.bsums;
                __m256i sumi = _mm256_setzero_si256();
                int32_t prod[4];
                for (int j = 0; j < 4; j++) {
                    uint8_t sc1, m1, sc2, m2;
                    kern_scale_min_k4(2 * j, x[b].scales, &sc1, &m1);
                    kern_scale_min_k4(2 * j + 1, x[b].scales, &sc2, &m2);
                    __m256i q = _mm256_loadu_si256((const __m256i *)(x[b].qs + 32 * j));
                    __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                    __m256i d1 = dot8u(lo, _mm256_loadu_si256((const __m256i *)(xq + 64 * j)));
                    __m256i d2 = dot8u(hi, _mm256_loadu_si256((const __m256i *)(xq + 64 * j + 32)));
                    sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(_mm256_mullo_epi32(d1, _mm256_set1_epi32(sc1)),
                                                                   _mm256_mullo_epi32(d2, _mm256_set1_epi32(sc2))));
                    prod[j] = m1 * (bs[4 * j] + bs[4 * j + 1]) + m2 * (bs[4 * j + 2] + bs[4 * j + 3]);
                }
                accm = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(_mm_loadu_si128((const __m128i *)prod)), accm);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
            }
            accm = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));
            accm = _mm_add_ss(accm, _mm_movehdup_ps(accm));
            y[t * ys + r] = hsum8(acc) + _mm_cvtss_f32(accm);
        }
    }
}

void kern_fill_vec_avx512(kern_tile_fn tab[GGTYPE_COUNT], kern_tile_fn plain[GGTYPE_COUNT])
{
    plain[GGTYPE_Q4_0] = vec_q4_0_plain;
    plain[GGTYPE_Q4_K] = vec_q4_K_plain;
    tab[GGTYPE_Q8_0] = vec_q8_0;
    tab[GGTYPE_Q4_0] = vec_q4_0;
    tab[GGTYPE_Q4_K] = vec_q4_K;
    tab[GGTYPE_Q6_K] = vec_q6_K;
    tab[GGTYPE_F32] = vec_f32;
    tab[GGTYPE_F16] = vec_f16;
}
#else
void kern_fill_vec_avx512(kern_tile_fn tab[GGTYPE_COUNT], kern_tile_fn plain[GGTYPE_COUNT])
{
    (void)tab, (void)plain;
}
#endif
