/* Private to the kernels: activation layouts and the per-ISA tile table. */
#ifndef GGSCOPE_KERNELS_INTERNAL_H
#define GGSCOPE_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ggtype.h"
#include "quant_blocks.h"

/* Quantized activations for the 32-element types (both ggml's Q8_0 and Q8_1
 * cases): the int8 quants, the scale (f16-rounded, as ggml stores it) and the
 * integer sum of the quants (Q8_1's "s" without its rounding; also used to
 * correct unsigned-nibble products). */
typedef struct {
    int8_t qs[32];
    float d;
    int32_t s;
    float ds; /* d * s */
} kq8;
_Static_assert(sizeof(kq8) == 44, "kq8");

/* Activations of the K-quants: ggml's block_q8_K plus the scaled sums of
 * each 16- and 32-element group (for the repacked GEMM). */
typedef struct {
    block_q8_K q;
    float ds16[16]; /* d * bsums[g] */
    float ds32[8];  /* d * (bsums[2j] + bsums[2j+1]) */
} kq8k;
_Static_assert(sizeof(kq8k) == 292 + 96, "kq8k");

/* Tile: y[t * y_stride + r] = dot(row r of W, activation row t) for r < nr,
 * t < nt (nr <= KERN_TILE_R, nt <= KERN_TILE_T). W rows are row_bytes apart,
 * activation rows act_stride bytes apart; nb is the number of blocks (or of
 * elements for the float types) per row. */
typedef void (*kern_tile_fn)(const uint8_t *w, size_t row_bytes, int nr, const uint8_t *act,
                             size_t act_stride, int nt, int64_t nb, float *y, int64_t y_stride);

#define KERN_TILE_R 4
#define KERN_TILE_R8 8 /* rows of the one-token tiles of the vec8 table */
#define KERN_TILE_T 4

/* Batched GEMM on weights repacked per call into a 16-row interleaved
 * layout (in tmp, kern_gemm_tmp_size bytes per thread): y[t * y_stride + r]
 * for r < nr <= KERN_GEMM_ROWS, t < nt (any count). n_cols: elements per row. */
typedef void (*kern_gemm_fn)(const uint8_t *w, size_t row_bytes, int nr, const uint8_t *act,
                             size_t act_stride, int64_t nt, int64_t n_cols, float *y,
                             int64_t y_stride, void *tmp, int64_t t_gemv, int plain);
/* t_gemv: the token rows from t_gemv on are the ones ggml's repacked kernels
 * compute with their mat-vec form (the last n_tok % 4 of the whole product),
 * which for Q4_K sums in a different order. plain: the weight has a row
 * count that is not a multiple of 8, which ggml does not repack: Q4_0 and
 * Q4_K then take its plain kernels' order (tinyBLAS / vec_dot). */
#define KERN_GEMM_ROWS 16
#define KERN_GEMM_ROWS_F 64 /* rows of a chunk of the AVX2 F32/F16 GEMM */
#define KERN_GEMM_MIN_TOK 8
static inline size_t kern_gemm_tmp_size(int64_t n_cols)
{
    /* per 32 columns: 16 rows x 32 bytes of quants (twice: the AVX2 Q8_0
     * GEMM keeps their absolute values too) + 2 x 2 x 16 floats of scales;
     * 32 KiB of float accumulators (the AVX2 GEMM: 64 tokens x 16 rows x 8
     * lanes) and 4 KiB of Q8_0 block scales (16 blocks x 2 x 4 tokens) */
    return (size_t)(n_cols / 32) * (1024 + 256) + 128 + 32768 + 4096;
}
void kern_fill_gemm_avx512(kern_gemm_fn tab[GGTYPE_COUNT]);
/* AVX2 (vpmaddubsw) GEMM in the exact tiles' float order (kernels_gemm_avx2.c). */
void kern_fill_gemm_avx2(kern_gemm_fn tab[GGTYPE_COUNT]);

/* Activation quantizers of one row (nb blocks), bit-identical to the scalar ones. */
typedef void (*kern_q8_fn)(const float *x, kq8 *y, int64_t nb);
typedef void (*kern_q8k_fn)(const float *x, kq8k *y, int64_t nb);
void kern_quant_avx2(kern_q8_fn *q8, kern_q8k_fn *q8k);

/* F16 row helpers of the SIMD paths (F16C). */
typedef struct {
    void (*axpy)(float alpha, const uint16_t *x, float *y, int64_t n);
    void (*h2f)(const uint16_t *src, float *dst, int64_t n);
    void (*f2h)(const float *src, uint16_t *dst, int64_t n);
} kern_f16_ops;
void kern_f16_avx2(kern_f16_ops *ops);

/* A work buffer of at least size bytes for thread ith of pool p, kept by the
 * pool between runs (only thread ith may use it during a run). NULL when p is
 * NULL or memory is short. */

/* Tests: with on != 0, kern_matmul on the AVX2 paths uses only the plain
 * exact tiles (4 rows, kernels_exact.inc), not the fast one-token and batch
 * kernels built on them, so a test can compare the two bit for bit. */
void kern_reference_tiles(int on);
/* One token's chunks by lanes (on, the default) or from the shared counter
 * (tests, comparisons; GGSCOPE_NO_LANES=1 starts a process with lanes off). */
void kern_one_token_lanes(int on);

/* Per-ISA kernels fill in the entries they implement (indexed by ggml type). */
void kern_fill_scalar(kern_tile_fn tab[GGTYPE_COUNT]);
void kern_fill_avx2(kern_tile_fn tab[GGTYPE_COUNT], int vnni);
void kern_fill_avx512(kern_tile_fn tab[GGTYPE_COUNT]);
/* Tiles in ggml's float order (kernels_exact.c): vec for one token, bat for
 * batches (AVX2 only: AVX-512 batches go through the GEMM), plain for weights
 * ggml does not repack (row count not a multiple of 8). */
/* One token on F16 weights with F16 activations (AVX-512 build, zen4
 * order, n % 64 == 0), or NULL. */
kern_tile_fn kern_exact_f16_hx(void);
/* Tiles ahead the AVX-512 one-token eight-row tiles prefetch: 1, or 2 while
 * a worker of kern_matmul's run alone (set per worker for the run). */
extern _Thread_local int kern_pf_tiles;
void kern_fill_exact_avx512(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn plain[GGTYPE_COUNT],
                            kern_tile_fn vec8[GGTYPE_COUNT]);
void kern_fill_exact_avx2(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn bat[GGTYPE_COUNT],
                          kern_tile_fn plain[GGTYPE_COUNT], kern_tile_fn vec8[GGTYPE_COUNT]);
/* Overrides in vec / bat the orders that llama.cpp's haswell (AVX2) build
 * sums differently from its zen4 build (F32, F16; see docs/kernels.md). */
void kern_fill_exact_haswell(kern_tile_fn vec[GGTYPE_COUNT], kern_tile_fn bat[GGTYPE_COUNT]);

/* Half conversions (ggml's: round to nearest even, denormals, inf/nan). */
static inline float kern_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {
            float f = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24 */
            memcpy(&bits, &f, 4);
            bits |= sign;
        }
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t kern_f2h(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* nan */
        return (uint16_t)(sign | 0x7e00);
    if (ax >= 0x477ff000u) /* rounds to >= 65520: inf */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000u) { /* below the smallest normal half: denormal or zero */
        float a;
        memcpy(&a, &ax, 4);
        /* a * 2^24 rounded to nearest even by the FPU */
        float r = a * 16777216.0f;
        uint32_t m = (uint32_t)__builtin_rintf(r);
        return (uint16_t)(sign | m);
    }
    uint32_t mant_odd = (ax >> 13) & 1;
    ax += 0xfffu + mant_odd; /* round to nearest even on the dropped 13 bits */
    return (uint16_t)(sign | (((ax >> 13) - (112u << 10)) & 0x7fff));
}

static inline float kern_bf2f(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Decode the 6-bit scale and min number j of a Q4_K / Q5_K block. */
static inline void kern_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* The 16 signed 6-bit scales of a Q3_K block (already minus 32). */
static inline void kern_q3k_scales(const uint8_t *s12, int8_t out[16])
{
    uint32_t aux[4];
    memcpy(aux, s12, 12);
    const uint32_t kmask1 = 0x03030303u, kmask2 = 0x0f0f0f0fu;
    uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    memcpy(out, aux, 16);
    for (int i = 0; i < 16; i++)
        out[i] = (int8_t)(out[i] - 32);
}

extern const int8_t kern_iq4nl_values[16];
extern const int8_t kern_mxfp4_values[16];

/* An MXFP4 block's E8M0 exponent as half its power of two
 * (ggml_e8m0_to_fp32_half: 2^(x-128), denormal for x < 2). */
static inline float kern_e8m0_half(uint8_t x)
{
    const uint32_t bits = x < 2 ? 0x00200000u << x : (uint32_t)(x - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* MXFP4 tile in ggml_vec_dot_mxfp4_q8_0's order (weights ggml does not
 * repack: rows % 8 != 0); plain C, for every path. */
void kern_tile_mxfp4_plain(const uint8_t *w, size_t row_bytes, int nr, const uint8_t *act, size_t act_stride,
                           int nt, int64_t nb, float *y, int64_t y_stride);

/* The one-token tile of wtype on the path in use (ggml's mat-vec order for
 * the types that have it, the driver's own tile otherwise) and the rows it
 * takes per call (*tile_r); plain: the weight's row count is not a multiple
 * of 8. NULL for the types of the generic path. */
kern_tile_fn kern_vec_tile(uint32_t wtype, int plain, int *tile_r);
/* The batched GEMM of the path in use when it sums every token in the
 * one-token order (t_gemv 0): the AVX2 GEMM of Q4_0, Q8_0, Q6_K and
 * repacked Q4_K (ggml's gemm and gemv orders agree for the first three);
 * NULL otherwise (the tiles then). */
kern_gemm_fn kern_vec_gemm(uint32_t wtype, int plain);
/* The F32 tile of the path in use (the generic path's dot of a dequantized row). */
kern_tile_fn kern_f32_tile(void);
/* Bytes of one activation row of n_cols in the internal layout (kq8 /
 * kq8k blocks) for act_type, or 0 for a bad shape. */
size_t kern_act_row_bytes(uint32_t act_type, int64_t n_cols);
/* Quantize one activation row into the internal layout (the path in use). */
void kern_act_row(uint32_t act_type, const float *x, uint8_t *dst, int64_t n);

#endif
