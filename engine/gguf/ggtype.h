/* ggtype: traits of every ggml tensor type id (table-driven, one row per type). */
#ifndef GGSCOPE_GGTYPE_H
#define GGSCOPE_GGTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    GGTYPE_F32 = 0, GGTYPE_F16 = 1, GGTYPE_Q4_0 = 2, GGTYPE_Q4_1 = 3,
    GGTYPE_Q5_0 = 6, GGTYPE_Q5_1 = 7, GGTYPE_Q8_0 = 8, GGTYPE_Q8_1 = 9,
    GGTYPE_Q2_K = 10, GGTYPE_Q3_K = 11, GGTYPE_Q4_K = 12, GGTYPE_Q5_K = 13,
    GGTYPE_Q6_K = 14, GGTYPE_Q8_K = 15, GGTYPE_IQ2_XXS = 16, GGTYPE_IQ2_XS = 17,
    GGTYPE_IQ3_XXS = 18, GGTYPE_IQ1_S = 19, GGTYPE_IQ4_NL = 20, GGTYPE_IQ3_S = 21,
    GGTYPE_IQ2_S = 22, GGTYPE_IQ4_XS = 23, GGTYPE_I8 = 24, GGTYPE_I16 = 25,
    GGTYPE_I32 = 26, GGTYPE_I64 = 27, GGTYPE_F64 = 28, GGTYPE_IQ1_M = 29,
    GGTYPE_BF16 = 30, GGTYPE_TQ1_0 = 34, GGTYPE_TQ2_0 = 35, GGTYPE_MXFP4 = 39,
    GGTYPE_NVFP4 = 40, GGTYPE_Q1_0 = 41, GGTYPE_Q2_0 = 42,
    GGTYPE_COUNT = 43
} ggtype;

typedef struct {
    const char *name;      /* ggml's name, e.g. "q4_K" */
    uint32_t blck_size;    /* elements per block */
    uint32_t type_size;    /* bytes per block */
    bool is_quantized;
    bool is_float;         /* F32, F16, BF16, F64 */
} ggtype_traits;

/* Traits of type id `id`, or NULL for a retired or unknown id. */
const ggtype_traits *ggtype_get(uint32_t id);

/* Name of `id` ("q4_K"), or "unknown" for ids without traits. Never NULL. */
const char *ggtype_name(uint32_t id);

/* Type id whose name matches `name` case-insensitively ("Q4_K", "q4_k"), or -1. */
int ggtype_from_name(const char *name);

/* Bytes for a row of `n` elements of type `id`. Returns 0 when the type is
 * unknown or `n` is not a multiple of the block size; sets *overflow (if not
 * NULL) when the size does not fit in 64 bits. */
uint64_t ggtype_row_size(uint32_t id, uint64_t n, bool *overflow);

/* Name of a `general.file_type` value from the spec's list ("MOSTLY_Q4_K_M"), or NULL. */
const char *ggtype_file_type_name(uint32_t file_type);

#endif
