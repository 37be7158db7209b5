/* backend_cpu_attn_split: ggml's split-KV flash attention for one query
 * (ops.cpp: ggml_compute_forward_flash_attn_ext_f16's split path,
 * ggml_flash_attn_ext_reduce_partials), what llama.cpp's CPU backend runs
 * for a decode step once its KV view (n_kv, padded to 256 cells) reaches 512
 * cells. ggml gives each of its nth threads one chunk of ceil(n_kv / nth)
 * cells; each chunk is the one-chunk form over its cells (the sink in the
 * first chunk only), leaving a partial {M, S, acc}; then, per head, the
 * partials are combined in chunk order. The result depends on nth: ggscope
 * cuts the view into as many chunks as its context has threads, whatever
 * number of them runs (tpool_run_dynamic may run fewer): work items are
 * (chunk, KV head) pairs from a shared counter, and the last item of a KV
 * head to finish combines its heads, so any thread can do any of it. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cpu_internal.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* the reduction's products are rounded apart, as in ggml's build */
#endif

/* acc[d] = fmaf(acc[d], so, fl(pc[d] * sn)) for d < hd: ggml's
 * VKQ_final[d]*scale_old + VKQ_chunk[d]*scale_new as its x86 builds compile
 * it (vmulps, then vfmadd231ps; the same per element at any width). */
static void combine_ref(float *acc, const float *pc, float so, float sn, uint32_t hd)
{
    for (uint32_t d = 0; d < hd; d++)
        acc[d] = fmaf(acc[d], so, pc[d] * sn);
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static void combine_simd(float *acc, const float *pc, float so, float sn,
                                                               uint32_t hd)
{
    const __m256 vso = _mm256_set1_ps(so), vsn = _mm256_set1_ps(sn);
    uint32_t d = 0;
    for (; d + 8 <= hd; d += 8)
        _mm256_storeu_ps(acc + d, _mm256_fmadd_ps(_mm256_loadu_ps(acc + d), vso,
                                                  _mm256_mul_ps(_mm256_loadu_ps(pc + d), vsn)));
    for (; d < hd; d++)
        acc[d] = fmaf(acc[d], so, pc[d] * sn);
}
#else
static void combine_simd(float *acc, const float *pc, float so, float sn, uint32_t hd)
{
    combine_ref(acc, pc, so, sn, hd);
}
#endif

void backend_cpu_attn_reduce(const float *part, uint32_t n, size_t stride, uint32_t hd, float *acc, float *out,
                             bool simd)
{
    float M = -INFINITY, S = 0.0f;
    memset(acc, 0, sizeof(float) * hd);
    for (uint32_t c = 0; c < n; c++) {
        const float *p = part + c * stride;
        const float Mc = p[0], Sc = p[1];
        if (Sc == 0.0f)
            continue;
        const float Mn = fmaxf(M, Mc), so = expf(M - Mn), sn = expf(Mc - Mn);
        if (simd)
            combine_simd(acc, p + 2, so, sn, hd);
        else
            combine_ref(acc, p + 2, so, sn, hd);
        const float t = Sc * sn; /* vmulss, then vfmadd132ss */
        S = fmaf(S, so, t);
        M = Mn;
    }
    if (S == 0.0f) { /* nothing seen: ggml leaves acc (zeros) unscaled */
        memcpy(out, acc, sizeof(float) * hd);
        return;
    }
    const float inv = 1.0f / S;
    for (uint32_t d = 0; d < hd; d++)
        out[d] = acc[d] * inv;
}

typedef struct {
    backend_cpu_attn_job *j;
    uint32_t n_kv, n_chunk, n_live, cs; /* view, chunks, chunks that start inside it, cells per chunk */
    float *part;                        /* [n_head][n_chunk][2 + head_dim] */
    atomic_uint *done;                  /* per KV head: its chunks finished */
} split_job;

static void split_task(void *arg, int ith, int nth)
{
    (void)ith, (void)nth;
    split_job *s = arg;
    backend_cpu_attn_job *j = s->j;
    const uint32_t hd = j->head_dim, G = j->n_head / j->n_head_kv, total = s->n_live * j->n_head_kv;
    const size_t ps = 2 + (size_t)hd, hs = (size_t)s->n_chunk * ps; /* a partial, a head's partials */
    float *work = malloc(sizeof(float) * backend_cpu_attn_chunk_work(G, hd));
    if (!work)
        return; /* checked by the caller through the sentinel */
    for (uint32_t i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed); i < total;
         i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) {
        const uint32_t c = i / j->n_head_kv, kvh = i % j->n_head_kv;
        const uint32_t c0 = c * s->cs, c1 = s->n_kv - c0 < s->cs ? s->n_kv : c0 + s->cs;
        backend_cpu_attn_chunk(j, kvh, c0, c1, work, s->part + (size_t)kvh * G * hs + (size_t)c * ps, hs);
        /* the last chunk of this KV head to finish combines its heads */
        if (atomic_fetch_add_explicit(&s->done[kvh], 1, memory_order_acq_rel) + 1 != s->n_live)
            continue;
        for (uint32_t g = 0; g < G; g++) {
            const uint32_t h = kvh * G + g;
            backend_cpu_attn_reduce(s->part + (size_t)h * hs, s->n_live, ps, hd, work, j->out + (size_t)h * hd,
                                    j->simd);
        }
    }
    free(work);
}

int backend_cpu_attn_split(void *ctx, backend_cpu_attn_job *j, uint32_t n_kv, uint32_t n_chunk)
{
    if (!n_chunk)
        n_chunk = 1;
    split_job s = {.j = j, .n_kv = n_kv, .n_chunk = n_chunk, .cs = (n_kv + n_chunk - 1) / n_chunk};
    /* ggml's threads whose chunk would start past the view have no cells
     * ({-inf, 0}, skipped when combining): only the others are computed */
    s.n_live = (n_kv + s.cs - 1) / s.cs;
    s.part = malloc(sizeof(float) * (size_t)j->n_head * n_chunk * (2 + (size_t)j->head_dim));
    s.done = malloc(sizeof(atomic_uint) * j->n_head_kv);
    if (!s.part || !s.done) {
        free(s.part);
        free(s.done);
        return BACKEND_ENOMEM;
    }
    for (uint32_t i = 0; i < j->n_head_kv; i++)
        atomic_init(&s.done[i], 0);
    atomic_store_explicit(&j->next, 0, memory_order_relaxed);
    backend_cpu_parallel(ctx, split_task, &s);
    free(s.part);
    free(s.done);
    return 0;
}
