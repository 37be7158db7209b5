/* backend_cpu_internal: private pieces of the CPU backend (context, thread
 * fan-out, matmul dispatch). Not part of the public API. */
#ifndef GGSCOPE_BACKEND_CPU_INTERNAL_H
#define GGSCOPE_BACKEND_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* Context of a CPU backend with n_threads workers (0 = one per core); NULL on failure. */
void *backend_cpu_ctx_new(int n_threads);
void backend_cpu_ctx_free(void *ctx);
int backend_cpu_ctx_threads(void *ctx);

/* Run fn(arg, ith, nth) on the context's threads as tpool_run_dynamic does:
 * fn takes its work from a shared counter (a thread may not be called). */
void backend_cpu_parallel(void *ctx, void (*fn)(void *arg, int ith, int nth), void *arg);

/* y (n_tok x w->ne1) = x (n_tok x w->ne0) . W^T. Arguments already checked. */
int backend_cpu_matmul(void *ctx, const backend_weight *w, const float *x, uint32_t n_tok, float *y);

/* ggml's CPU arithmetic (backend_cpu_attn.c): each function in plain C
 * (_ref) and with AVX2/FMA/F16C, the same bits; the latter usable when
 * backend_cpu_attn_simd_available() and, for the two attention pieces, the
 * head dimension is a multiple of 8. */
bool backend_cpu_attn_simd_available(void);
/* hw: the order of llama.cpp's haswell (AVX2) build, else its zen4 build's. */
/* ggml_vec_dot_f16 of an F16-rounded query (as floats) with an F16 key. */
float backend_cpu_dot_f16_ref(const float *q, const uint16_t *k, uint32_t n, bool hw);
float backend_cpu_dot_f16(const float *q, const uint16_t *k, uint32_t n, bool hw);
/* One query row of ggml's tiled flash attention (batches of 64+ queries):
 * keys/values k[c * stride + d], cells 0..n_kv-1, acc scratch of hd floats. */
void backend_cpu_attn_tiled_ref(const float *q, const uint16_t *k, const uint16_t *v, size_t stride,
                                uint32_t n_kv, uint32_t hd, float scale, float *acc, float *out, bool hw);
void backend_cpu_attn_tiled(const float *q, const uint16_t *k, const uint16_t *v, size_t stride,
                            uint32_t n_kv, uint32_t hd, float scale, float *acc, float *out, bool hw);
/* backend_cpu_attn_tiled (SIMD) for nq consecutive queries t0.. (query i
 * attends to cells 0..pos0+t0+i) x nh heads of one KV head, each key/value
 * tile converted once for all of them; query (i, j) at q + (i*q_tok + j)*hd,
 * its output at the same offset of out. The same bits as calling
 * backend_cpu_attn_tiled per pair. work: backend_cpu_attn_group_work floats. */
void backend_cpu_attn_tiled_group(const float *q, size_t q_tok, const uint16_t *k, const uint16_t *v,
                                  size_t stride, uint32_t pos0, uint32_t t0, uint32_t nq, uint32_t nh,
                                  uint32_t hd, float scale, float *work, float *out, bool hw);
static inline size_t backend_cpu_attn_group_work(uint32_t n_pairs, uint32_t hd)
{
    return (size_t)128 * hd + (size_t)n_pairs * (hd + 2);
}
/* Tests: with on, the CPU backend's attention goes (query, head) pair by
 * pair instead of by groups of heads sharing a KV head (both forms). */
void backend_cpu_attn_pairs(bool on);
/* One-chunk flash attention's F16 accumulator step. */
void backend_cpu_attn_mad(float *acc, const uint16_t *v, float ms, bool rescale, float vs, uint32_t n);
/* ggml's vectorised expf, one element; and the SIMD form (for tests). */
float backend_cpu_v_expf(float x);
float backend_cpu_v_expf_simd(float x);
/* The haswell build's form of that expf (it rounds differently). */
float backend_cpu_v_expf_hw(float x);
/* d = silu(g) * u over n8 (a multiple of 8) elements, ggml's arithmetic. */
void backend_cpu_silu_mul(const float *g, const float *u, float *d, size_t n8, bool hw);

#endif
