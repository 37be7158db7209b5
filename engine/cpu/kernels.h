/* kernels: CPU compute kernels of the inference engine — matrix products (run on a
 * tpool) with weights of any ggml type, in integer
 * arithmetic with activations quantized on the fly (as ggml does) where the
 * type has a fast path. SIMD path (scalar, AVX2, AVX-512 with VNNI) chosen at
 * run time; GGSCOPE_SIMD=scalar|avx2|avx512 forces one. Never prints. */
#ifndef GGSCOPE_KERNELS_H
#define GGSCOPE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tpool.h"

/* ---- SIMD path ---- */

/* KERN_SIMD_AVX2 uses AVX-VNNI when the CPU has it; KERN_SIMD_AVX2_PLAIN is
 * AVX2 without VNNI even there (tests, comparisons; GGSCOPE_SIMD=avx2-plain). */
typedef enum {
    KERN_SIMD_SCALAR = 0, KERN_SIMD_AVX2 = 1, KERN_SIMD_AVX512 = 2, KERN_SIMD_AVX2_PLAIN = 3
} kern_simd;

/* The path in use: the best this CPU has, or the one GGSCOPE_SIMD names
 * (when the CPU has it), or the one kern_simd_set chose. */
kern_simd kern_simd_get(void);

/* Force a path (tests, benchmarks). Returns 0, or -1 when the CPU lacks it
 * (the path in use is then unchanged). Not thread-safe against running kernels. */
int kern_simd_set(kern_simd s);

/* Whether this CPU can run path s. */
bool kern_simd_available(kern_simd s);

/* "scalar", "avx2", "avx2+vnni", "avx512+vnni" for the path in use. */
const char *kern_simd_name(void);

/* ---- matrix products ---- */

/* Whether wtype has a fast integer/SIMD path (others work through a generic
 * dequantize path). */
bool kern_type_fast(uint32_t wtype);

/* Type the activations are quantized to for weights of wtype: GGTYPE_Q8_0,
 * GGTYPE_Q8_1, GGTYPE_Q8_K, or GGTYPE_F32 when they stay float. */
uint32_t kern_act_type(uint32_t wtype);

/* Scratch bytes kern_matmul needs for these shapes (activations quantized on
 * the fly). 0 when none is needed; (size_t)-1 for an unusable shape. */
size_t kern_matmul_scratch_size(uint32_t wtype, int64_t n_cols, int64_t n_tok);

/* y[t][r] = sum_c W[r][c] * x[t][c] for r < n_rows, t < n_tok.
 * W: n_rows rows of n_cols elements of ggml type wtype, row stride row_bytes
 * (in the mmap). x: n_tok x n_cols floats (row stride n_cols); y: n_tok x
 * n_rows floats (row stride n_rows). W and row_bytes keep the alignment of the
 * type's fields (2 bytes for f16 fields, 4 for F32; GGUF data always does).
 * Any ggml type of engine/gguf/ggtype.h works
 * (slow generic path for rare types). scratch: at least
 * kern_matmul_scratch_size bytes (NULL: allocated and freed inside, slower).
 * pool may be NULL (one thread). Returns 0, or -1 for an unknown type, a bad
 * shape (n_cols not a multiple of the block size, row_bytes too small), too
 * little scratch or no memory (y is then unspecified). */
int kern_matmul(tpool *pool, uint32_t wtype, const void *W, size_t row_bytes,
                int64_t n_rows, int64_t n_cols, const float *x, int64_t n_tok, float *y,
                void *scratch, size_t scratch_size);

/* Several products of the same activations, in one run of the pool: weights
 * of one type and n_cols (each its rows, row stride and output), as one
 * kern_matmul call each would compute them (the same floats), with the
 * activations prepared once and no wait between the matrices (q, k and v of
 * a layer; gate and up). */
#define KERN_MATMUL_MAX 4
typedef struct {
    const void *W;
    size_t row_bytes;
    int64_t n_rows;
    float *y; /* n_tok x n_rows */
} kern_mat;

/* n_mat (1..KERN_MATMUL_MAX) matrices; otherwise as kern_matmul. */
int kern_matmul_n(tpool *pool, uint32_t wtype, const kern_mat *mats, int n_mat, int64_t n_cols,
                  const float *x, int64_t n_tok, void *scratch, size_t scratch_size);

/* Expert products (ggml_mul_mat_id): for t < n_tok, s < n_used, with
 * e = ids[t * n_used + s] (0 <= e < n_expert),
 * y[(t * n_used + s) * n_rows + r] = sum_c W_e[r][c] * x[t * x_per_tok + (x_per_tok == 1 ? 0 : s)][c],
 * W_e = W + e * expert_bytes (n_rows rows, row_bytes apart). x_per_tok is 1
 * (every slot reads its token's row, quantized once) or n_used (one row per
 * slot). Every output in the one-token order kern_matmul uses for the type
 * (llama.cpp's mat-vec kernels), whatever n_tok; pairs are grouped by
 * expert, so a chunk of an expert's rows is read once for all of its
 * tokens, and only the chosen experts are read. F16 / BF16 weights: x
 * already rounded to that type (as kern_matmul expects). Returns 0, or -1
 * for bad arguments (an id out of range included) or no memory. */
int kern_matmul_id(tpool *pool, uint32_t wtype, const void *W, size_t row_bytes, size_t expert_bytes,
                   int64_t n_rows, int64_t n_cols, int64_t n_expert, const float *x, int64_t x_per_tok,
                   const int32_t *ids, int64_t n_tok, int64_t n_used, float *y);

/* Quantize one activation row of n floats to act_type (GGTYPE_Q8_0, Q8_1 or
 * Q8_K, ggml's block layout and rounding) into dst (ggtype_row_size bytes).
 * Exposes exactly what kern_matmul multiplies with, for tests. Returns 0 or -1. */
int kern_quantize_act(uint32_t act_type, const float *x, void *dst, int64_t n);

/* ---- small row helpers (F16 KV cache, attention) ---- */

/* dst[i] = f16(src[i]) (round to nearest even, as ggml) for i < n. */
void kern_f32_to_f16(const float *src, uint16_t *dst, int64_t n);

/* dst[i] = f32(src[i]) for i < n. */
void kern_f16_to_f32(const uint16_t *src, float *dst, int64_t n);

/* sum_i a[i] * b[i] (a in F16). */
float kern_dot_f16_f32(const uint16_t *a, const float *b, int64_t n);

/* y[i] += alpha * f32(x[i]) for i < n. */
void kern_axpy_f16(float alpha, const uint16_t *x, float *y, int64_t n);

#endif
