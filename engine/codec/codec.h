/* codec: dequantization, reference quantization and block anatomy for every
 * ggml tensor type (see ggtype.h for the ids). Data is little-endian. */
#ifndef GGSCOPE_CODEC_H
#define GGSCOPE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Dequantize `n` elements of `type` (n a multiple of the block size) from
 * `src` (n / blck_size * type_size bytes, any alignment) to `dst` (n floats,
 * not overlapping src). Uses the fastest path this CPU has (AVX-512, AVX2,
 * scalar); every path gives results bit-identical to ggml's dequantize_row_*.
 * Thread-safe. Returns 0, or -1 for an unknown type, a bad n or NULL buffers
 * (n = 0 succeeds). */
int codec_dequantize(uint32_t type, const void *src, float *dst, uint64_t n);

/* Same, forced to the portable scalar code (the reference for the SIMD paths). */
int codec_dequantize_scalar(uint32_t type, const void *src, float *dst, uint64_t n);

/* Name of the dequantization path codec_dequantize uses for `type`
 * ("avx512", "avx2", "scalar"). */
const char *codec_dequantize_path(uint32_t type);

/* The dequantization path can be forced, to compare the paths or work around
 * a CPU problem: the environment variable GGSCOPE_SIMD=scalar|avx2|avx512 is
 * read on first use; codec_set_simd overrides it. */

/* Whether this CPU (and this build) can run `path` ("scalar", "avx2", "avx512"). */
bool codec_simd_supported(const char *path);

/* Use `path` from now on ("scalar", "avx2", "avx512"; NULL or "auto" = the
 * fastest this CPU has). Returns 0, or -1 when the path is unknown or not
 * supported here (nothing changes then). Do not call while another thread is
 * dequantizing. */
int codec_set_simd(const char *path);

/* Whether `type` has a reference quantizer. */
bool codec_can_quantize(uint32_t type);

/* Quantize `nrows` rows of `n_per_row` floats to `type` with ggml's reference
 * algorithm. `imatrix` (n_per_row weights, may be NULL) is used where the type
 * takes one. Returns the bytes written to dst, or 0 on error (type without a
 * quantizer, n_per_row not a multiple of the block size). */
size_t codec_quantize(uint32_t type, const float *src, void *dst, uint64_t nrows,
                      uint64_t n_per_row, const float *imatrix);

/* What a block field holds. */
typedef enum {
    CODEC_FIELD_SCALE = 0,  /* one value (scale, min, offset) shared by all its elements */
    CODEC_FIELD_QUANTS = 1, /* one packed code per element: element k (k < elem_count) has
                             * bits [k*w, (k+1)*w) of raw, w = field bits / elem_count */
    CODEC_FIELD_OTHER = 2,  /* anything else (signs, base-3 trits, high index bits, sums) */
    CODEC_FIELD_GRID = 3,   /* an index into the type's codebook (value = the index; the
                             * row's entries feed its elem_count consecutive elements) */
} codec_field_kind;

/* One field of a quantized block, for the block-aware hex view. */
typedef struct {
    char name[24];          /* "d", "scales[3]", "qs[17]" */
    uint32_t byte_offset;   /* within the block */
    uint32_t byte_len;      /* bytes spanned (a split field spans all the bytes it touches) */
    uint32_t bit_offset;    /* for sub-byte fields: first bit within the bytes, else 0 */
    uint32_t bit_len;       /* 0 = whole bytes */
    uint64_t raw;           /* raw bits of the field (little-endian, shifted down) */
    double value;           /* decoded value (f16 -> float, 6-bit scale -> int, the
                             * first element's code for QUANTS fields) */
    char text[48];          /* human form of the decoded value: "0.0123", "3, 12" */
    uint32_t elem_first;    /* elements of the block this field feeds: */
    uint32_t elem_count;    /*   elem_first + k*elem_stride, k < elem_count */
    uint32_t elem_stride;
    codec_field_kind kind;
} codec_field;

/* Fields of the block at `block` (type_size bytes) of `type`, in the order
 * of the block's layout (a 6-bit scale split over several bytes spans them).
 * Writes at most `cap` fields (fields may be NULL when cap is 0); returns the
 * total count (may exceed cap), or -1 for unknown types. Full detail (every
 * scale and every quant byte) for the legacy, K, IQ4, FP4 and ternary types;
 * the IQ1/IQ2/IQ3 types list d, every grid index (with its codebook row in
 * the text), sign group and sub-block scale; plain element types (F32, F16,
 * I8, ...) list their single value. */
int codec_block_anatomy(uint32_t type, const void *block, codec_field *fields, int cap);

/* IEEE half and bfloat16 conversions, exactly as ggml does them. */
float codec_f16_to_f32(uint16_t h);
uint16_t codec_f32_to_f16(float f);
float codec_bf16_to_f32(uint16_t h);
uint16_t codec_f32_to_bf16(float f);

#endif
