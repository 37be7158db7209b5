/* quantize internals shared by quantize.c (dispatch, legacy and non-linear
 * types) and quantize_k.c (the K-quants). Not a public API.
 *
 * Every quantizer here reproduces ggml's reference code float operation for
 * float: the same order of operations, float (never double) arithmetic, the
 * `nearest_int` rounding trick, and the x86 results of the float -> integer
 * conversions ggml relies on (see qz_cvtt). The build uses ISO C11, so no
 * multiply-add is ever contracted into an FMA: that too is what ggml's
 * portable code does. */
#ifndef GGSCOPE_QUANTIZE_INTERNAL_H
#define GGSCOPE_QUANTIZE_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "codec_internal.h"
#include "cpufeat.h"
#include "quant_blocks.h"

/* ggml's threshold below which a group counts as all zeros. */
#define QZ_GROUP_MAX_EPS 1e-15f

#define QZ_MIN(a, b) ((a) < (b) ? (a) : (b))
#define QZ_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Round to nearest (ties to even) by ggml's magic-number trick. Exact for
 * |f| <= 4194303; beyond that it returns what ggml's code returns (garbage
 * but deterministic), and NaN gives 0. */
static inline int qz_nearest_int(float f)
{
    union {
        float f;
        int32_t i;
    } u = {f + 12582912.f};
    return (u.i & 0x007fffff) - 0x00400000;
}

/* float -> int32 by truncation, as the x86 instruction cvttss2si does it:
 * NaN and values out of the int32 range give INT32_MIN. ggml converts floats
 * straight to int8_t/uint8_t, which compilers do through that instruction;
 * this keeps the same result without the C undefined behaviour. */
static inline int32_t qz_cvtt(float f)
{
    if (!(f > -2147483904.0f && f < 2147483648.0f))
        return INT32_MIN;
    return (int32_t)f;
}

/* The same for lroundf on x86-64: a value that does not fit a long gives
 * LONG_MIN. */
static inline long qz_lroundf(float f)
{
    if (!(f >= -9223372036854775808.0f && f < 9223372036854775808.0f))
        return LONG_MIN;
    return lroundf(f);
}

/* ---- lanes: 16 floats / ints as GCC/clang vector values ----
 * Used only as local variables (never passed by value), so the code builds
 * for any x86-64 and the AVX-512 / AVX2 clones (QZ_CLONES) use full-width
 * registers. Each lane performs plain IEEE single operations, exactly the
 * scalar code's. */
#define QZ_LANES 16
typedef float qz_vf __attribute__((vector_size(64)));
typedef int32_t qz_vi __attribute__((vector_size(64)));
#define QZ_VF(s) ((qz_vf){0} + (float)(s))     /* broadcast */
#define QZ_VI(s) ((qz_vi){0} + (int32_t)(s))
#define QZ_SELI(m, a, b) (((m) & (a)) | (~(m) & (b)))   /* m ? a : b per lane */
#define QZ_SELF(m, a, b) ((qz_vf)QZ_SELI((m), (qz_vi)(a), (qz_vi)(b)))
#define QZ_VNEAREST(v) ((((qz_vi)((v) + 12582912.f)) & 0x007fffff) - 0x00400000)
#define QZ_VTOF(vi) __builtin_convertvector((vi), qz_vf)

#if CPUFEAT_CLONES
#define QZ_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define QZ_CLONES
#endif

static inline uint16_t qz_f16(float f)
{
    return cdc_f32_to_f16(f);
}

static inline float qz_f32(uint16_t h)
{
    return cdc_f16_to_f32(h);
}

/* Row quantizers of the K-quants (quantize_k.c): `nb` super-blocks of x into
 * y. `qw` is the row's importance matrix (NULL: ggml's reference path).
 * `lanes`: use the lane-parallel scale searches (same bits, faster). */
void qz_row_q2_K(const float *x, block_q2_K *y, int64_t nb, const float *qw, bool lanes);
void qz_row_q3_K(const float *x, block_q3_K *y, int64_t nb, const float *qw, bool lanes);
void qz_row_q4_K(const float *x, block_q4_K *y, int64_t nb, const float *qw, bool lanes);
void qz_row_q5_K(const float *x, block_q5_K *y, int64_t nb, const float *qw, bool lanes);
void qz_row_q6_K(const float *x, block_q6_K *y, int64_t nb, const float *qw, bool lanes);

/* ggml's reference weights of a 32-value group for the qkx2 search:
 * sqrt(mean x^2) + |x|. */
void qz_group_avx_weights(const float *x, float *w);

/* The signed value of largest magnitude of x[0..n) into *max; false (and
 * L[0..n) zeroed) when the group is all below QZ_GROUP_MAX_EPS. */
bool qz_group_max(int n, const float *x, int8_t *L, float *max);

/* ggml's scale searches (quantize_search.c), n <= 32. make_qx_quants:
 * symmetric levels [-nmax, nmax-1] stored +nmax in L, returns the scale.
 * make_qkx2_quants (x3 false; weights required) / make_qkx3_quants (x3
 * true; weights NULL = x^2): levels [0, nmax] with a min, returns the scale
 * and *the_min = -min. `lanes` as above. */
float qz_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type, const float *qw,
                        bool lanes);
float qz_make_qkx_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                         float *the_min, float rmin, float rdelta, int nstep, bool use_mad, bool x3,
                         bool lanes);

/* The same searches for QZ_LANES independent groups of n (16 or 32) values
 * at once (quantize_batch.c): group g is x[g*n .. g*n+n), its weights
 * weights[g*n ..] (NULL: x^2), its levels L[g*n ..]; scale[g], the_min[g]
 * as the single-group functions return them. Same bits as the scalar code.
 * qz_qkx_batch does ntiles * QZ_LANES groups (consecutive). qz_qx1_batch is
 * make_qx_quants with rmse_type 1, QZ_LANES groups. */
void qz_qkx_batch(int ntiles, int n, int nmax, const float *x, const float *weights, float rmin,
                  float rdelta, int nstep, bool use_mad, bool x3, float *scale, float *the_min,
                  uint8_t *L);
/* qz_qkx_batch for n = 32, make_qkx2 (no mad, not x3) with ggml's Q4_K/Q5_K
 * weights sqrt(sum x^2 / 32) + |x| of each group computed inside. */
void qz_qkx2_batch_avw(int ntiles, int nmax, const float *x, float rmin, float rdelta, int nstep,
                       float *scale, float *the_min, uint8_t *L);
/* Tests only: true makes the batch searches skip their AVX-512 kernels and
 * run the portable vector code (process-wide). */
void qz_batch_force_generic(bool on);
void qz_levels_div(const float *x, int n, float dm, float d, int lo, int hi, int off, uint8_t *L);
void qz_qx1_batch(int n, int nmax, const float *x, const float *qw, float *scale, int8_t *L);

/* codec_quantize with a choice of search: lanes false = ggml's scalar code
 * throughout (the reference the tests hold the lanes to). */
size_t qz_quantize(uint32_t type, const float *src, void *dst, uint64_t nrows, uint64_t n_per_row,
                   const float *imatrix, bool lanes);

#endif
