/* rope: YaRN's arithmetic shared by every backend's rotary embedding, so
 * that the CPU backend and the Vulkan backend's cos/sin table compute the
 * same floats (ggml's ggml_rope_yarn_corr_dims and rope_yarn). */
#ifndef GGSCOPE_ROPE_H
#define GGSCOPE_ROPE_H

#include <stdint.h>

/* ggml_rope_yarn_corr_dims: YaRN's correction range [dims[0], dims[1]]. */
void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                         float dims[2]);
/* ggml's rope_yarn: cos and sin of rotation pair i0 with YaRN / mscale. */
void rope_yarn(float theta_extrap, float freq_scale, const float corr[2], uint32_t i0, float ext_factor,
               float mscale, float *c, float *s);

#endif
