/* rope: YaRN's arithmetic shared by the backends (rope.h). */
#include <math.h>

#include "rope.h"

/* ggml's MAX / MIN (ggml-impl.h), NaN and int operands included. */
#define GG_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GG_MIN(a, b) ((a) < (b) ? (a) : (b))

/* ggml_rope_yarn_corr_dims (ggml.c:4469-4481), in libggml-base: plain float
 * operations (no fma there), left to right as written. */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base)
{
    return n_dims * logf(n_ctx_orig / (n_rot * 2 * (float)M_PI)) / (2 * logf(base));
}

void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2])
{
    float start = floorf(yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    float end = ceilf(yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    dims[0] = GG_MAX(0, start);
    dims[1] = GG_MIN(n_dims - 1, end);
}

/* ggml's rope_yarn (ops.cpp:5951-5973) for pair i0 of angle theta_extrap
 * (= theta / ff): cos and sin times mscale. The YaRN mix and mscale as
 * llama.cpp's x86 builds contract them (fma). ext_factor 0: cosf(ti) *
 * mscale, which for mscale 1 is exactly cosf(ti) (the engine before YaRN). */
void rope_yarn(float theta_extrap, float freq_scale, const float corr[2], uint32_t i0, float ext_factor, float mscale,
               float *c, float *s)
{
    const float theta_interp = freq_scale * theta_extrap;
    float theta = theta_interp;
    if (ext_factor != 0.0f) {
        /* rope_yarn_ramp: i0 / 2 in int */
        const float y = ((float)(int)(i0 / 2) - corr[0]) / GG_MAX(0.001f, corr[1] - corr[0]);
        const float ramp_mix = (1 - GG_MIN(1, GG_MAX(0, y))) * ext_factor;
        theta = fmaf(theta_interp, 1 - ramp_mix, theta_extrap * ramp_mix);
        mscale *= fmaf(logf(1.0f / freq_scale), 0.1f, 1.0f);
    }
    *c = cosf(theta) * mscale;
    *s = sinf(theta) * mscale;
}
