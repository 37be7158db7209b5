/* backend_cpu_internal: private pieces of the CPU backend (context, thread
 * fan-out, matmul dispatch). Not part of the public API. */
#ifndef GGSCOPE_BACKEND_CPU_INTERNAL_H
#define GGSCOPE_BACKEND_CPU_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

/* Context of a CPU backend with n_threads workers (0 = one per core); NULL on failure. */
void *backend_cpu_ctx_new(int n_threads);
void backend_cpu_ctx_free(void *ctx);
int backend_cpu_ctx_threads(void *ctx);

/* Run fn(arg, ith, nth) for ith = 0..nth-1 on the context's threads; returns when all are done. */
void backend_cpu_parallel(void *ctx, void (*fn)(void *arg, int ith, int nth), void *arg);

/* Whether matmul handles weights of `type`. */
bool backend_cpu_matmul_supports(uint32_t type);

/* y (n_tok x w->ne1) = x (n_tok x w->ne0) . W^T. Arguments already checked. */
int backend_cpu_matmul(void *ctx, const backend_weight *w, const float *x, uint32_t n_tok, float *y);

/* Attention inner loops with AVX2/FMA/F16C (backend_cpu_attn.c); same results
 * as the scalar code. Usable when backend_cpu_attn_simd_available() and the
 * head dimension is a multiple of 8. */
bool backend_cpu_attn_simd_available(void);
double backend_cpu_attn_dot(const float *q, const uint16_t *k, uint32_t n);
void backend_cpu_attn_mad(float *acc, const uint16_t *v, float ms, bool rescale, float vs, uint32_t n);

#endif
