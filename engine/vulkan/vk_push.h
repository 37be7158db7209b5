/* C mirrors of the shaders' push-constant blocks (shaders/NAME.comp), field
 * for field: 32-bit scalars only, so std430 and C layouts agree. */
#ifndef GGSCOPE_VK_PUSH_H
#define GGSCOPE_VK_PUSH_H

#include <stdint.h>

typedef struct {   /* mul_mat.comp */
    uint32_t ne0, n_rows, row_bytes, w_off, x_off, x_stride, y_off, y_stride, row0, n_tok;
} vk_push_mul_mat;

typedef struct {   /* get_rows.comp */
    uint32_t ne0, n_rows, row_bytes, w_off, ids_off, n_ids, dst_off, row0;
} vk_push_get_rows;

typedef struct {   /* rms_norm.comp */
    uint32_t src_off, dst_off, n_rows, n_cols;
    float eps;
    uint32_t w_off;   /* rms_norm_mul only */
} vk_push_rms_norm;

typedef struct {   /* binary.comp */
    uint32_t a_off, b_off, dst_off, n, n_cols;
} vk_push_binary;

typedef struct {   /* rope.comp */
    uint32_t x_off, n_tok, n_head, head_dim, n_rot, cs_off;
} vk_push_rope;

typedef struct {   /* store_f16.comp */
    uint32_t src_off, dst_off, n;
} vk_push_store_f16;

/* The attention sinks one dispatch carries (sinks[] in attention.comp). */
#define VK_ATTN_SINKS 16u

typedef struct {   /* attention.comp */
    uint32_t q_off, k_off, v_off, o_off, n_tok, pos0, n_head, n_head_kv, head_dim;
    float scale;
    uint32_t n_swa, n_cells;   /* backend_attn_params: window, ring rows (0: none) */
    uint32_t h0, nh;           /* the heads of this dispatch: h0 .. h0 + nh - 1 */
    uint32_t has_sinks;
    float sinks[VK_ATTN_SINKS];   /* head h0 + i's sink */
} vk_push_attention;

_Static_assert(sizeof(vk_push_mul_mat) <= 128, "push constants: mul_mat");
_Static_assert(sizeof(vk_push_get_rows) <= 128, "push constants: get_rows");
_Static_assert(sizeof(vk_push_rms_norm) <= 128, "push constants: rms_norm");
_Static_assert(sizeof(vk_push_binary) <= 128, "push constants: binary");
_Static_assert(sizeof(vk_push_rope) <= 128, "push constants: rope");
_Static_assert(sizeof(vk_push_store_f16) <= 128, "push constants: store_f16");
_Static_assert(sizeof(vk_push_attention) <= 128, "push constants: attention");

/* The attention shader's largest head dimension (MAXD in attention.comp). */
#define VK_ATTN_MAX_HEAD_DIM 256u

#endif
