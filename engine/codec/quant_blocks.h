/* Block layouts of ggml's quantized types (little-endian, packed as ggml packs
 * them). Private to the codec and the compute kernels. */
#ifndef GGSCOPE_QUANT_BLOCKS_H
#define GGSCOPE_QUANT_BLOCKS_H

#include <stdint.h>

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK_K 256
#define K_SCALE_SIZE 12
#define QK4_NL 32
#define QK_MXFP4 32

typedef uint16_t gg_half;

typedef struct { gg_half d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
typedef struct { gg_half d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;
typedef struct { gg_half d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;
typedef struct { gg_half d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
typedef struct { gg_half d; int8_t qs[QK8_0]; } block_q8_0;
typedef struct { gg_half d, s; int8_t qs[QK8_1]; } block_q8_1;

typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; gg_half d, dmin; } block_q2_K;
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; gg_half d; } block_q3_K;
typedef struct { gg_half d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K;
typedef struct { gg_half d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; gg_half d; } block_q6_K;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;

typedef struct { gg_half d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
typedef struct { gg_half d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; } block_iq4_xs;
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4;

_Static_assert(sizeof(block_q4_0) == 18, "q4_0");
_Static_assert(sizeof(block_q4_1) == 20, "q4_1");
_Static_assert(sizeof(block_q5_0) == 22, "q5_0");
_Static_assert(sizeof(block_q5_1) == 24, "q5_1");
_Static_assert(sizeof(block_q8_0) == 34, "q8_0");
_Static_assert(sizeof(block_q8_1) == 36, "q8_1");
_Static_assert(sizeof(block_q2_K) == 84, "q2_K");
_Static_assert(sizeof(block_q3_K) == 110, "q3_K");
_Static_assert(sizeof(block_q4_K) == 144, "q4_K");
_Static_assert(sizeof(block_q5_K) == 176, "q5_K");
_Static_assert(sizeof(block_q6_K) == 210, "q6_K");
_Static_assert(sizeof(block_q8_K) == 292, "q8_K");
_Static_assert(sizeof(block_iq4_nl) == 18, "iq4_nl");
_Static_assert(sizeof(block_iq4_xs) == 136, "iq4_xs");
_Static_assert(sizeof(block_mxfp4) == 17, "mxfp4");

/* IQ1/2/3, TQ, NVFP4, Q1_0, Q2_0 (ggml-common.h layouts). */
#define QK_NVFP4 64
#define QK_NVFP4_SUB 16
#define QK1_0 128
#define QK2_0 64
#define IQ3S_N_SCALE (QK_K / 64)
#define IQ1S_DELTA 0.125f
#define IQ1M_DELTA 0.125f

typedef struct { gg_half d; uint16_t qs[QK_K / 8]; } block_iq2_xxs;
typedef struct { gg_half d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } block_iq2_xs;
typedef struct { gg_half d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; } block_iq2_s;
typedef struct { gg_half d; uint8_t qs[3 * QK_K / 8]; } block_iq3_xxs;
typedef struct { gg_half d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[IQ3S_N_SCALE]; } block_iq3_s;
typedef struct { gg_half d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } block_iq1_s;
/* iq1_m: the f16 super-block scale is spread over the top nibbles of scales[] */
typedef struct { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; } block_iq1_m;
typedef struct { uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; uint8_t qh[QK_K / 64]; gg_half d; } block_tq1_0;
typedef struct { uint8_t qs[QK_K / 4]; gg_half d; } block_tq2_0;
/* nvfp4: one UE4M3 scale per 16 elements, then the E2M1 codes */
typedef struct { uint8_t d[QK_NVFP4 / QK_NVFP4_SUB]; uint8_t qs[QK_NVFP4 / 2]; } block_nvfp4;
typedef struct { gg_half d; uint8_t qs[QK1_0 / 8]; } block_q1_0;
typedef struct { gg_half d; uint8_t qs[QK2_0 / 4]; } block_q2_0;

_Static_assert(sizeof(block_iq2_xxs) == 66, "iq2_xxs");
_Static_assert(sizeof(block_iq2_xs) == 74, "iq2_xs");
_Static_assert(sizeof(block_iq2_s) == 82, "iq2_s");
_Static_assert(sizeof(block_iq3_xxs) == 98, "iq3_xxs");
_Static_assert(sizeof(block_iq3_s) == 110, "iq3_s");
_Static_assert(sizeof(block_iq1_s) == 50, "iq1_s");
_Static_assert(sizeof(block_iq1_m) == 56, "iq1_m");
_Static_assert(sizeof(block_tq1_0) == 54, "tq1_0");
_Static_assert(sizeof(block_tq2_0) == 66, "tq2_0");
_Static_assert(sizeof(block_nvfp4) == 36, "nvfp4");
_Static_assert(sizeof(block_q1_0) == 18, "q1_0");
_Static_assert(sizeof(block_q2_0) == 18, "q2_0");

#endif
