/* backend_cpu: the CPU reference backend.
 *
 * Plain C that follows ggml's CPU arithmetic operation by operation (the peer
 * oracle is llama.cpp; docs/engine.md lists the orders): RMS sums in double,
 * RoPE angles by repeated multiplication and a fused rotation, one-chunk and
 * tiled flash attention as ggml computes them (sliding windows and ring
 * caches in cell order), SwiGLU with ggml's vectorised expf, GeGLU through
 * ggml's F16 GELU table, YaRN as ggml-cpu contracts it, F16 weights
 * multiplied with F16-rounded activations, quantized weights through
 * kern_matmul (activations quantized on the fly). With the AVX2 or
 * AVX-512 kernels, logits are bit-identical to llama.cpp's x86-64 build. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cpu_internal.h"
#include "codec.h"
#include "cpufeat.h"
#include "ggtype.h"
#include "kernels.h"
#include "rope.h"

struct backend_buf {
    backend_dtype dtype;
    size_t n;
    void *data;   /* 64-byte aligned, inside raw */
    void *raw;
};

static float g_f16_table[65536];
static float g_gelu_table[65536]; /* ggml_table_gelu_f16, as floats */
static bool g_attn_simd;
static bool g_haswell; /* llama.cpp's haswell build's orders (cpufeat.h) */
static int g_f16_ready;
static atomic_bool g_attn_pairs; /* tests: tiled attention pair by pair */

void backend_cpu_attn_pairs(bool on)
{
    atomic_store(&g_attn_pairs, on);
}

bool backend_cpu_haswell(void)
{
    return g_haswell;
}

static void f16_table_init(void)
{
    /* Benign race: every thread writes identical values. */
    if (__atomic_load_n(&g_f16_ready, __ATOMIC_ACQUIRE))
        return;
    for (uint32_t i = 0; i < 65536; i++)
        g_f16_table[i] = codec_f16_to_f32((uint16_t)i);
    for (uint32_t i = 0; i < 65536; i++)
        g_gelu_table[i] = codec_f16_to_f32(codec_f32_to_f16(backend_cpu_gelu_f32(g_f16_table[i])));
    g_attn_simd = backend_cpu_attn_simd_available() && cpufeat_level_allowed() > CPUFEAT_SCALAR;
    const kern_simd ks = kern_simd_get();
    g_haswell = cpufeat_llama_variant() == CPUFEAT_LLAMA_HASWELL &&
                (ks == KERN_SIMD_AVX2 || ks == KERN_SIMD_AVX2_PLAIN);
    __atomic_store_n(&g_f16_ready, 1, __ATOMIC_RELEASE);
}

static inline float h2f(uint16_t h) { return g_f16_table[h]; }
static inline float round_f16(float x) { return h2f(codec_f32_to_f16(x)); }

static size_t dtype_size(backend_dtype t) { return t == BACKEND_F16 ? 2 : 4; }

/* Checked pointer to `n` elements at `v.off` of an F32 buffer (NULL if out of range). */
static float *f32_at(backend_view v, size_t n)
{
    if (!v.buf || v.buf->dtype != BACKEND_F32 || v.off > v.buf->n || n > v.buf->n - v.off)
        return NULL;
    return (float *)v.buf->data + v.off;
}

float *backend_cpu_f32(backend_view v, size_t n)
{
    return f32_at(v, n);
}

static uint16_t *f16_at(backend_view v, size_t n)
{
    if (!v.buf || v.buf->dtype != BACKEND_F16 || v.off > v.buf->n || n > v.buf->n - v.off)
        return NULL;
    return (uint16_t *)v.buf->data + v.off;
}

static int mul2(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

/* ---- buffers ---- */

static backend_buf *cpu_buf_new(void *ctx, backend_dtype dtype, size_t n)
{
    (void)ctx;
    size_t bytes;
    if ((dtype != BACKEND_F32 && dtype != BACKEND_F16) || mul2(n ? n : 1, dtype_size(dtype), &bytes))
        return NULL;
    backend_buf *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    /* 64-byte alignment for SIMD kernels; calloc leaves large buffers
     * untouched (not resident) until used. */
    if (bytes > SIZE_MAX - 128 || !(b->raw = calloc(1, bytes + 128))) {
        free(b);
        return NULL;
    }
    b->data = (void *)(((uintptr_t)b->raw + 63) & ~(uintptr_t)63);
    b->dtype = dtype;
    b->n = n;
    return b;
}

static void cpu_buf_free(void *ctx, backend_buf *b)
{
    (void)ctx;
    if (!b)
        return;
    free(b->raw);
    free(b);
}

static int cpu_buf_write(void *ctx, backend_buf *b, size_t off, const void *src, size_t n)
{
    (void)ctx;
    if (!b || off > b->n || n > b->n - off || (n && !src))
        return BACKEND_EARG;
    memcpy((char *)b->data + off * dtype_size(b->dtype), src, n * dtype_size(b->dtype));
    return 0;
}

static int cpu_buf_read(void *ctx, backend_buf *b, size_t off, void *dst, size_t n)
{
    (void)ctx;
    if (!b || off > b->n || n > b->n - off || (n && !dst))
        return BACKEND_EARG;
    memcpy(dst, (const char *)b->data + off * dtype_size(b->dtype), n * dtype_size(b->dtype));
    return 0;
}

/* ---- weights ---- */

static bool weight_ok(const backend_weight *w)
{
    if (!w || !w->data || !w->ne0 || !w->ne1)
        return false;
    return ggtype_row_size(w->type, w->ne0, NULL) == w->row_bytes && w->row_bytes;
}

/* An F32 vector weight of n elements (norm gains, biases). */
static const float *vec_weight(const backend_weight *w, uint32_t n)
{
    if (!w || w->type != GGTYPE_F32 || w->ne0 * w->ne1 != n || !w->data)
        return NULL;
    return (const float *)w->data;
}

/* ---- ops ---- */

static int cpu_get_rows(void *ctx, const backend_weight *w, const int32_t *ids, uint32_t n,
                        backend_view dst)
{
    (void)ctx;
    if (!weight_ok(w) || (n && !ids) || w->ne0 > SIZE_MAX / (n ? n : 1))
        return BACKEND_EARG;
    float *d = f32_at(dst, (size_t)n * w->ne0);
    if (!d)
        return BACKEND_EARG;
    for (uint32_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint64_t)ids[i] >= w->ne1)
            return BACKEND_EARG;
        const uint8_t *row = (const uint8_t *)w->data + (uint64_t)ids[i] * w->row_bytes;
        if (codec_dequantize(w->type, row, d + (size_t)i * w->ne0, w->ne0) != 0)
            return BACKEND_EUNSUPPORTED;
    }
    return 0;
}

/* Items [0, n) of a row-wise or element-wise op in chunks over the pool (a
 * dynamic run: any thread takes any chunk, the caller alone can do all);
 * jobs under about 64 Ki element operations stay on the caller. An item's
 * result does not depend on the split. */
typedef struct {
    void (*fn)(void *arg, size_t i0, size_t i1);
    void *arg;
    size_t n, chunk;
    atomic_size_t next;
} par_job;

static void par_task(void *arg, int ith, int nth)
{
    (void)ith, (void)nth;
    par_job *j = arg;
    for (size_t i = atomic_fetch_add_explicit(&j->next, j->chunk, memory_order_relaxed); i < j->n;
         i = atomic_fetch_add_explicit(&j->next, j->chunk, memory_order_relaxed))
        j->fn(j->arg, i, j->n - i < j->chunk ? j->n : i + j->chunk);
}

static void par_for(void *ctx, size_t n, size_t cost, void (*fn)(void *arg, size_t i0, size_t i1), void *arg)
{
    const int nth = ctx ? backend_cpu_ctx_threads(ctx) : 1;
    if (nth < 2 || n < 2 || n * cost < 65536) {
        fn(arg, 0, n);
        return;
    }
    par_job j = {.fn = fn, .arg = arg, .n = n, .chunk = (n + 4 * (size_t)nth - 1) / (4 * (size_t)nth)};
    atomic_init(&j.next, 0);
    backend_cpu_parallel(ctx, par_task, &j);
}

typedef struct {
    const float *s, *g, *u;
    float *d;
    size_t n_cols;
    float eps;
    bool mul;
} rows_arg;

/* ggml_rms_norm (and ggml_mul by the vector g when mul) of rows [r0, r1) */
static void rms_rows(void *arg, size_t r0, size_t r1)
{
    const rows_arg *a = arg;
    const size_t n_cols = a->n_cols;
    for (size_t r = r0; r < r1; r++) {
        const float *x = a->s + r * n_cols;
        float *y = a->d + r * n_cols;
        double sum = 0.0;
        for (size_t c = 0; c < n_cols; c++)
            sum += (double)(x[c] * x[c]);
        float mean = (float)(sum / n_cols);
        float scale = 1.0f / sqrtf(mean + a->eps);
        for (size_t c = 0; c < n_cols; c++)
            y[c] = x[c] * scale;
        if (a->mul)
            for (size_t c = 0; c < n_cols; c++)
                y[c] = y[c] * a->g[c];
    }
}

/* dst = src (+ or *) the vector weight, broadcast over the rows. */
static int row_vec_op(backend_view src, const backend_weight *w, backend_view dst, uint32_t n_rows,
                      uint32_t n_cols, bool add)
{
    size_t n = (size_t)n_rows * n_cols;
    const float *s = f32_at(src, n), *g = vec_weight(w, n_cols);
    float *d = f32_at(dst, n);
    if (!s || !d || !g)
        return BACKEND_EARG;
    for (uint32_t r = 0; r < n_rows; r++)
        for (uint32_t c = 0; c < n_cols; c++) {
            const size_t i = (size_t)r * n_cols + c;
            d[i] = add ? s[i] + g[c] : s[i] * g[c];
        }
    return 0;
}

/* rms_norm then mul_w, row by row: exactly the two ops, in their float
 * order (the logits stay bit-identical to llama.cpp's). In place allowed. */
static int cpu_rms_norm_mul(void *ctx, backend_view src, const backend_weight *w, backend_view dst,
                            uint32_t n_rows, uint32_t n_cols, float eps)
{
    size_t n = (size_t)n_rows * n_cols;
    const float *s = f32_at(src, n), *g = vec_weight(w, n_cols);
    float *d = f32_at(dst, n);
    if (!s || !d || !g || !n_cols)
        return BACKEND_EARG;
    rows_arg a = {.s = s, .g = g, .d = d, .n_cols = n_cols, .eps = eps, .mul = true};
    par_for(ctx, n_rows, 3 * (size_t)n_cols, rms_rows, &a);
    return 0;
}

static int cpu_add_w(void *ctx, backend_view src, const backend_weight *w, backend_view dst,
                     uint32_t n_rows, uint32_t n_cols)
{
    (void)ctx;
    return row_vec_op(src, w, dst, n_rows, n_cols, true);
}

static void add_range(void *arg, size_t i0, size_t i1)
{
    const rows_arg *a = arg;
    for (size_t i = i0; i < i1; i++)
        a->d[i] = a->s[i] + a->u[i];
}

static int cpu_add(void *ctx, backend_view a, backend_view b, backend_view dst, size_t n)
{
    const float *x = f32_at(a, n), *y = f32_at(b, n);
    float *d = f32_at(dst, n);
    if (!x || !y || !d)
        return BACKEND_EARG;
    rows_arg ra = {.s = x, .u = y, .d = d};
    par_for(ctx, n, 1, add_range, &ra);
    return 0;
}

static int cpu_matmul_n(void *ctx, const backend_weight *const *w, int n, backend_view x, uint32_t n_tok,
                        const backend_view *y)
{
    if (n < 1 || n > BACKEND_MATMUL_N_MAX)
        return BACKEND_EARG;
    float *ys[BACKEND_MATMUL_N_MAX];
    for (int i = 0; i < n; i++) {
        if (!weight_ok(w[i]) || w[i]->ne0 > UINT32_MAX || w[i]->ne1 > UINT32_MAX || w[i]->ne0 != w[0]->ne0 ||
            w[i]->type != w[0]->type)
            return BACKEND_EARG;
        ys[i] = f32_at(y[i], (size_t)n_tok * w[i]->ne1);
        if (!ys[i] || y[i].buf == x.buf)
            return BACKEND_EARG;
        for (int j = 0; j < i; j++)
            if (y[j].buf == y[i].buf)
                return BACKEND_EARG;
    }
    const float *xs = f32_at(x, (size_t)n_tok * w[0]->ne0);
    if (!xs)
        return BACKEND_EARG;
    return backend_cpu_matmul_n(ctx, w, n, xs, n_tok, ys);
}

static int cpu_matmul(void *ctx, const backend_weight *w, backend_view x, uint32_t n_tok,
                      backend_view y)
{
    return cpu_matmul_n(ctx, &w, 1, x, n_tok, &y);
}

/* x86-64 with FMA: the rotation's fmaf become instructions rather than
 * calls into libm (the same fused results; 2 calls per pair were most of a
 * rope). */
#if CPUFEAT_CLONES
#define CPU_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define CPU_FMA_CLONES
#endif

/* Angles exactly as ggml computes them (ggml_rope_cache_init, ops.cpp
 * 5975-5989): theta_i = p * base^(-2i/n_rot), by repeated float
 * multiplication, divided by the frequency factor, then rope_yarn (times
 * freq_scale; YaRN and mscale when asked). */
CPU_FMA_CLONES static void rope_row(float *x, uint32_t n_head, uint32_t head_dim, float p,
                     const backend_rope_params *rp, const float corr[2], float *cs)
{
    const uint32_t n_rot = rp->n_rot;
    const float theta_scale = powf(rp->freq_base, -2.0f / (float)n_rot);
    const float mscale = rp->attn_factor == 0.0f ? 1.0f : rp->attn_factor;
    float theta = p;
    for (uint32_t i0 = 0; i0 < n_rot; i0 += 2) {
        float ff = rp->freq_factors ? rp->freq_factors[i0 / 2] : 1.0f;
        rope_yarn(theta / ff, rp->freq_scale, corr, i0, rp->ext_factor, mscale, &cs[i0], &cs[i0 + 1]);
        theta *= theta_scale;
    }
    for (uint32_t h = 0; h < n_head; h++) {
        float *v = x + (size_t)h * head_dim;
        for (uint32_t i0 = 0; i0 < n_rot; i0 += 2) {
            float c = cs[i0], s = cs[i0 + 1];
            uint32_t a, b;
            if (rp->mode == BACKEND_ROPE_NEOX) {
                a = i0 / 2;
                b = i0 / 2 + n_rot / 2;
            } else {
                a = i0;
                b = i0 + 1;
            }
            float x0 = v[a], x1 = v[b];
            /* as ggml's build computes it (GCC contracts the first product) */
            v[a] = fmaf(x0, c, -(x1 * s));
            v[b] = fmaf(x0, s, x1 * c);
        }
    }
}

typedef struct {
    float *d;
    size_t row;
    uint32_t n_head, head_dim;
    const int32_t *pos;
    const backend_rope_params *p;
    float corr[2];
    atomic_bool fail;
} rope_arg;

static void rope_tokens(void *arg, size_t t0, size_t t1)
{
    rope_arg *a = arg;
    float *cs = malloc(sizeof(float) * a->p->n_rot);
    if (!cs) {
        atomic_store(&a->fail, true);
        return;
    }
    for (size_t t = t0; t < t1; t++)
        rope_row(a->d + t * a->row, a->n_head, a->head_dim, (float)a->pos[t], a->p, a->corr, cs);
    free(cs);
}

static int cpu_rope(void *ctx, backend_view x, uint32_t n_tok, uint32_t n_head, uint32_t head_dim,
                    const int32_t *pos, const backend_rope_params *p)
{
    size_t row = (size_t)n_head * head_dim;
    float *d = f32_at(x, row * n_tok);
    if (!d || !p || (n_tok && !pos) || !p->n_rot || (p->n_rot & 1) || p->n_rot > head_dim ||
        (p->mode != BACKEND_ROPE_NORMAL && p->mode != BACKEND_ROPE_NEOX))
        return BACKEND_EARG;
    float corr[2] = {0.0f, 0.0f};
    if (p->ext_factor != 0.0f) /* (ggml computes them always; unused without YaRN) */
        rope_yarn_corr_dims((int)p->n_rot, (int)p->n_ctx_orig, p->freq_base, p->beta_fast, p->beta_slow,
                                   corr);
    rope_arg a = {.d = d, .row = row, .n_head = n_head, .head_dim = head_dim, .pos = pos, .p = p,
                  .corr = {corr[0], corr[1]}};
    atomic_init(&a.fail, false);
    par_for(ctx, n_tok, 2 * row, rope_tokens, &a);
    return atomic_load(&a.fail) ? BACKEND_ENOMEM : 0;
}

typedef struct {
    const float *s;
    uint16_t *d;
} f16_arg;

static void f16_range(void *arg, size_t i0, size_t i1)
{
    const f16_arg *a = arg;
    kern_f32_to_f16(a->s + i0, a->d + i0, (int64_t)(i1 - i0)); /* round to nearest even (F16C where there is one) */
}

static int cpu_store_f16(void *ctx, backend_view src, uint32_t n_rows, uint32_t n_cols,
                         backend_view dst, uint32_t dst_row)
{
    size_t n = (size_t)n_rows * n_cols;
    const float *s = f32_at(src, n);
    backend_view dv = dst;
    dv.off += (size_t)dst_row * n_cols;
    uint16_t *d = f16_at(dv, n);
    if (!s || !d)
        return BACKEND_EARG;
    f16_arg a = {s, d};
    par_for(ctx, n, 1, f16_range, &a);
    return 0;
}

typedef backend_cpu_attn_job attn_job; /* backend_cpu_internal.h */

/* One (token, head) pair, with the arithmetic of ggml's CPU flash attention
 * (what llama.cpp runs by default): the query rounded to F16, scores against
 * positions 0..pos in order, an online softmax whose running weighted sum of
 * V rows is kept in F16 (rescaled when the maximum grows), divided by the
 * float sum at the end. attn_one_cells: the loop over the cells [c0, c1)
 * of the rows (ggml's one chunk; a KV chunk of its split form), leaving M,
 * S and the accumulator acc; the sink joins when c0 is 0. */
static inline void attn_one_cells(const attn_job *j, uint32_t t, uint32_t h, uint32_t c0, uint32_t c1, float *acc,
                                  float *qh, float *Mp, float *Sp)
{
    const uint32_t hd = j->head_dim, kvrow = j->n_head_kv * hd;
    const uint32_t kvh = h / (j->n_head / j->n_head_kv);
    uint32_t r[4];
    backend_cpu_attn_rows(j->pos0 + t, j->n_swa, j->n_cells, r);
    const float *q = j->q + ((size_t)t * j->n_head + h) * hd;
    for (uint32_t d = 0; d < hd; d++) {
        qh[d] = round_f16(q[d]);
        acc[d] = 0.0f;
    }
    float S = 0.0f, M = -INFINITY;
    const bool simd = j->simd && hd % 8 == 0;
    /* the visible cells in cell order; ggml skips masked ones (ops.cpp 8734-8737) */
    for (uint32_t seg = 0; seg < 4; seg += 2) {
        const uint32_t lo = r[seg] > c0 ? r[seg] : c0, hi = r[seg + 1] < c1 ? r[seg + 1] : c1;
        for (uint32_t p = lo; p < hi; p++) {
            const uint16_t *k = j->k + (size_t)p * kvrow + (size_t)kvh * hd;
            const uint16_t *v = j->v + (size_t)p * kvrow + (size_t)kvh * hd;
            float sd = simd ? backend_cpu_dot_f16(qh, k, hd, g_haswell) : backend_cpu_dot_f16_ref(qh, k, hd, g_haswell);
            float s = sd * j->scale;
            float ms = 1.0f, vs = 1.0f;
            bool rescale = false;
            if (s > M) {
                float Mold = M;
                M = s;
                ms = expf(Mold - M);
                rescale = true;
            } else {
                vs = expf(s - M);
            }
            if (simd) {
                backend_cpu_attn_mad(acc, v, ms, rescale, vs, hd);
            } else {
                for (uint32_t d = 0; d < hd; d++) {
                    if (rescale)
                        acc[d] = round_f16(acc[d] * ms);
                    acc[d] = round_f16(fmaf(h2f(v[d]), vs, acc[d]));
                }
            }
            S = S * ms + vs; /* not fused in ggml's build either */
        }
    }
    if (j->sinks && c0 == 0) /* after the loop, on the F16 accumulator's values as floats */
        backend_cpu_attn_sink(j->sinks[h], &M, &S, acc, hd, false);
    *Mp = M;
    *Sp = S;
}

static void attn_one(const attn_job *j, uint32_t t, uint32_t h, float *acc, float *qh)
{
    const uint32_t hd = j->head_dim;
    float S, M;
    attn_one_cells(j, t, h, 0, UINT32_MAX, acc, qh, &M, &S);
    float inv = S == 0.0f ? 0.0f : 1.0f / S;
    float *o = j->out + ((size_t)t * j->n_head + h) * hd;
    for (uint32_t d = 0; d < hd; d++)
        o[d] = acc[d] * inv;
}

/* Cells per pass of attn_one_group_cells. */
#define ATTN_RUN 64

/* attn_one (SIMD inner loops) for the G heads that share KV head kvh, head
 * after head, each in runs of up to ATTN_RUN cells: the run's scores first
 * (independent dot products), then its softmax steps (only M and S chain
 * them; the expf calls overlap), then its V rows into the accumulator held
 * in registers (backend_cpu_attn_mad_run). The same floats as attn_one per
 * head: each head's operations are the same ones in the same order, only
 * no longer interleaved with the next step's. acc and qh: G x head_dim
 * floats each; sm: 2 x G (S, then M). attn_one_group_cells: over the
 * cells [c0, c1), as attn_one_cells. */
static inline void attn_one_group_cells(const attn_job *j, uint32_t t, uint32_t kvh, uint32_t c0, uint32_t c1,
                                        float *acc, float *qh, float *sm)
{
    const uint32_t hd = j->head_dim, kvrow = j->n_head_kv * hd, G = j->n_head / j->n_head_kv;
    uint32_t r[4];
    backend_cpu_attn_rows(j->pos0 + t, j->n_swa, j->n_cells, r);
    float *S = sm, *M = sm + G;
    float sc[ATTN_RUN], msr[ATTN_RUN], vsr[ATTN_RUN];
    for (uint32_t g = 0; g < G; g++) {
        const float *q = j->q + ((size_t)t * j->n_head + (size_t)kvh * G + g) * hd;
        float *qg = qh + (size_t)g * hd, *ag = acc + (size_t)g * hd;
        for (uint32_t d = 0; d < hd; d++) {
            qg[d] = round_f16(q[d]);
            ag[d] = 0.0f;
        }
        float Sg = 0.0f, Mg = -INFINITY;
        for (uint32_t seg = 0; seg < 4; seg += 2) {
            const uint32_t lo = r[seg] > c0 ? r[seg] : c0, hi = r[seg + 1] < c1 ? r[seg + 1] : c1;
            for (uint32_t p0 = lo; p0 < hi; p0 += ATTN_RUN) {
                const uint32_t n = hi - p0 < ATTN_RUN ? hi - p0 : ATTN_RUN;
                const uint16_t *k = j->k + (size_t)p0 * kvrow + (size_t)kvh * hd;
                const uint16_t *v = j->v + (size_t)p0 * kvrow + (size_t)kvh * hd;
                backend_cpu_dot_f16_run(qg, k, kvrow, hd, g_haswell, j->scale, sc, n);
                for (uint32_t i = 0; i < n; i++) {
                    float s = sc[i], ms = 1.0f, vs = 1.0f;
                    if (s > Mg) {
                        float Mold = Mg;
                        Mg = s;
                        ms = expf(Mold - s);
                    } else {
                        vs = expf(s - Mg);
                    }
                    msr[i] = ms;
                    vsr[i] = vs;
                    Sg = Sg * ms + vs;
                }
                backend_cpu_attn_mad_run(ag, v, kvrow, msr, vsr, n, hd);
            }
        }
        S[g] = Sg;
        M[g] = Mg;
    }
    if (j->sinks && c0 == 0)
        for (uint32_t g = 0; g < G; g++)
            backend_cpu_attn_sink(j->sinks[kvh * G + g], M + g, S + g, acc + (size_t)g * hd, hd, false);
}

static void attn_one_group(const attn_job *j, uint32_t t, uint32_t kvh, float *acc, float *qh, float *sm)
{
    const uint32_t hd = j->head_dim, G = j->n_head / j->n_head_kv;
    const float *S = sm;
    attn_one_group_cells(j, t, kvh, 0, UINT32_MAX, acc, qh, sm);
    for (uint32_t g = 0; g < G; g++) {
        float inv = S[g] == 0.0f ? 0.0f : 1.0f / S[g];
        float *o = j->out + ((size_t)t * j->n_head + (size_t)kvh * G + g) * hd;
        for (uint32_t d = 0; d < hd; d++)
            o[d] = acc[(size_t)g * hd + d] * inv;
    }
}

/* The attention of the one-chunk form picks: by groups of heads (SIMD) unless
 * the tests ask for pairs. */
static bool attn_by_group(const attn_job *j)
{
    return j->simd && j->head_dim % 8 == 0 && !atomic_load_explicit(&g_attn_pairs, memory_order_relaxed);
}

void backend_cpu_attn_chunk(const backend_cpu_attn_job *j, uint32_t kvh, uint32_t c0, uint32_t c1, float *work,
                            float *part, size_t stride)
{
    const uint32_t hd = j->head_dim, G = j->n_head / j->n_head_kv;
    float *acc = work, *qh = work + (size_t)G * hd, *sm = work + (size_t)2 * G * hd;
    if (attn_by_group(j)) {
        attn_one_group_cells(j, 0, kvh, c0, c1, acc, qh, sm);
    } else {
        for (uint32_t g = 0; g < G; g++)
            attn_one_cells(j, 0, kvh * G + g, c0, c1, acc + (size_t)g * hd, qh, sm + G + g, sm + g);
    }
    for (uint32_t g = 0; g < G; g++) {
        float *p = part + g * stride;
        p[0] = sm[G + g];
        p[1] = sm[g];
        memcpy(p + 2, acc + (size_t)g * hd, sizeof(float) * hd);
    }
}

static void attn_one_task(attn_job *j)
{
    const uint32_t G = j->n_head / j->n_head_kv, hd = j->head_dim, total = j->n_tok * j->n_head_kv;
    float *buf = malloc(sizeof(float) * ((size_t)2 * G * hd + 2 * (size_t)G));
    if (!buf)
        return; /* checked by the caller through the sentinel */
    for (uint32_t i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed); i < total;
         i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed))
        attn_one_group(j, i / j->n_head_kv, i % j->n_head_kv, buf, buf + (size_t)G * hd, buf + (size_t)2 * G * hd);
    free(buf);
}

/* Queries per work item of the grouped tiled attention. */
#define ATTN_QB BACKEND_CPU_ATTN_QB

/* Tiled attention on AVX2: items of ATTN_QB queries x the heads of one KV
 * head (backend_cpu_attn_tiled_group: each key/value tile converted once). */
static void attn_group_task(attn_job *j)
{
    const uint32_t G = j->n_head / j->n_head_kv, hd = j->head_dim;
    const uint32_t nblk = (j->n_tok + ATTN_QB - 1) / ATTN_QB, total = nblk * j->n_head_kv;
    float *work = malloc(sizeof(float) * backend_cpu_attn_group_work(ATTN_QB * G, hd));
    if (!work)
        return; /* checked by the caller through the sentinel */
    for (uint32_t i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed); i < total;
         i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) {
        const uint32_t blk = i / j->n_head_kv, kvh = i % j->n_head_kv, t0 = blk * ATTN_QB;
        const uint32_t nq = j->n_tok - t0 < ATTN_QB ? j->n_tok - t0 : ATTN_QB;
        const size_t qo = ((size_t)t0 * j->n_head + (size_t)kvh * G) * hd;
        backend_cpu_attn_tiled_group(j->q + qo, j->n_head, j->k + (size_t)kvh * hd, j->v + (size_t)kvh * hd,
                                     (size_t)j->n_head_kv * hd, j->pos0, j->n_swa, j->n_cells, t0, nq, G, hd,
                                     j->scale, j->sinks ? j->sinks + (size_t)kvh * G : NULL, work, j->out + qo,
                                     g_haswell);
    }
    free(work);
}

uint64_t backend_cpu_attn_thread_bytes(uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim)
{
    if (!n_head_kv || !head_dim)
        return 0;
    const uint32_t G = n_head / n_head_kv;
    /* the largest of attn_group_task's, attn_one_task's and attn_task's buffers; the
     * split form's work (attn_one_task's) plus a thread's share of its partials */
    uint64_t a = sizeof(float) * backend_cpu_attn_group_work(ATTN_QB * G, head_dim);
    uint64_t b = sizeof(float) * (backend_cpu_attn_chunk_work(G, head_dim) + (uint64_t)n_head * (head_dim + 2));
    return a > b ? a : b;
}

static void attn_task(void *arg, int ith, int nth)
{
    attn_job *j = arg;
    uint32_t total = j->n_tok * j->n_head;
    if (j->n_tok >= 64 && j->head_dim % (g_haswell ? 8 : 16) == 0 && j->simd &&
        !atomic_load_explicit(&g_attn_pairs, memory_order_relaxed)) {
        (void)ith, (void)nth;
        attn_group_task(j);
        return;
    }
    if (j->n_tok < 64 && j->simd && j->head_dim % 8 == 0 &&
        !atomic_load_explicit(&g_attn_pairs, memory_order_relaxed)) {
        (void)ith, (void)nth;
        attn_one_task(j);
        return;
    }
    float *sc = malloc(sizeof(float) * 2 * (size_t)j->head_dim);
    if (!sc)
        return; /* checked by the caller through the sentinel below */
    float *qh = sc + j->head_dim;
    /* ggml's tiled form for batches of 64 or more queries, else one chunk */
    const bool tiled = j->n_tok >= 64 && j->head_dim % (g_haswell ? 8 : 16) == 0;
    const uint32_t hd = j->head_dim, kvrow = j->n_head_kv * hd;
    (void)ith, (void)nth;
    for (uint32_t i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed); i < total;
         i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) {
        uint32_t t = i / j->n_head, h = i % j->n_head;
        if (!tiled) {
            attn_one(j, t, h, sc, qh);
            continue;
        }
        const uint32_t kvh = h / (j->n_head / j->n_head_kv);
        const float *q = j->q + ((size_t)t * j->n_head + h) * hd;
        float *o = j->out + ((size_t)t * j->n_head + h) * hd;
        const uint16_t *k = j->k + (size_t)kvh * hd, *v = j->v + (size_t)kvh * hd;
        uint32_t r[4];
        backend_cpu_attn_rows(j->pos0 + t, j->n_swa, j->n_cells, r);
        const float *sink = j->sinks ? j->sinks + h : NULL;
        if (j->simd)
            backend_cpu_attn_tiled(q, k, v, kvrow, r, hd, j->scale, sink, sc, o, g_haswell);
        else
            backend_cpu_attn_tiled_ref(q, k, v, kvrow, r, hd, j->scale, sink, sc, o, g_haswell);
    }
    free(sc);
}

static int cpu_attention(void *ctx, backend_view q, backend_view k, backend_view v,
                         backend_view out, uint32_t n_tok, uint32_t pos0, uint32_t n_head,
                         uint32_t n_head_kv, uint32_t head_dim, const backend_attn_params *ap)
{
    if (!n_head || !n_head_kv || n_head % n_head_kv || !head_dim || !ap || (uint64_t)pos0 + n_tok > UINT32_MAX)
        return BACKEND_EARG;
    /* A ring must still hold every position its first query sees: the
     * oldest, lo, not overwritten by the newest, pos0 + n_tok - 1 (the
     * session sizes the ring as llama.cpp's SWA cache: >= n_swa + n_ubatch). */
    const uint64_t lo = ap->n_swa && pos0 >= ap->n_swa ? pos0 + 1 - ap->n_swa : 0;
    if (ap->n_cells && n_tok && (uint64_t)pos0 + n_tok - 1 - lo >= ap->n_cells)
        return BACKEND_EARG;
    const float scale = ap->scale;
    size_t qn = (size_t)n_tok * n_head * head_dim;
    size_t kvn = (ap->n_cells ? (size_t)ap->n_cells : (size_t)pos0 + n_tok) * n_head_kv * head_dim;
    attn_job j = {
        .q = f32_at(q, qn), .k = f16_at(k, kvn), .v = f16_at(v, kvn), .out = f32_at(out, qn),
        .n_tok = n_tok, .pos0 = pos0, .n_head = n_head, .n_head_kv = n_head_kv,
        .head_dim = head_dim, .n_swa = ap->n_swa, .n_cells = ap->n_cells, .sinks = ap->sinks, .scale = scale,
        .simd = g_attn_simd,
    };
    if (!j.q || !j.k || !j.v || !j.out || q.buf == out.buf)
        return BACKEND_EARG;
    /* Poison the output so a worker that could not allocate is detected. */
    for (size_t i = 0; i < qn; i++)
        j.out[i] = NAN;
    atomic_init(&j.next, 0);
    /* one query and llama.cpp's view has 512+ cells: ggml's split-KV form,
     * one KV chunk per thread of the context (as llama.cpp's per thread) */
    const uint32_t n_kv = n_tok ? backend_cpu_attn_n_kv(pos0 + n_tok - 1, ap->n_cells) : 0;
    if (n_tok == 1 && n_kv >= BACKEND_CPU_ATTN_SPLIT_MIN) {
        int rc = backend_cpu_attn_split(ctx, &j, n_kv, (uint32_t)backend_cpu_ctx_threads(ctx));
        if (rc)
            return rc;
    } else {
        backend_cpu_parallel(ctx, attn_task, &j);
    }
    for (size_t i = 0; i < qn; i += head_dim)
        if (isnan(j.out[i]))
            return BACKEND_ENOMEM;
    return 0;
}

/* ggml's SwiGLU per row: the first n_cols & ~15 (haswell build: ~7) elements with its vectorised
 * expf, the rest with libm's expf. */
static void silu_rows(void *arg, size_t r0, size_t r1)
{
    const rows_arg *a = arg;
    const size_t n_cols = a->n_cols, nv = n_cols & (g_haswell ? ~(size_t)7 : ~(size_t)15);
    for (size_t r = r0; r < r1; r++) {
        const float *gr = a->g + r * n_cols, *ur = a->u + r * n_cols;
        float *dr = a->d + r * n_cols;
        size_t i = 0;
        if (g_attn_simd) {
            backend_cpu_silu_mul(gr, ur, dr, nv, g_haswell);
        } else {
            for (; i < nv; i++)
                dr[i] = gr[i] / (1.0f + (g_haswell ? backend_cpu_v_expf_hw(-gr[i]) : backend_cpu_v_expf(-gr[i]))) *
                        ur[i];
        }
        for (i = nv; i < n_cols; i++)
            dr[i] = gr[i] / (1.0f + expf(-gr[i])) * ur[i];
    }
}

/* The views of a gated activation (gate, up, dst: n_rows x n_cols) as a
 * rows_arg; false when one is out of its buffer. */
static bool glu_arg(backend_view gate, backend_view up, backend_view dst, uint32_t n_rows, uint32_t n_cols,
                    rows_arg *a)
{
    const size_t n = (size_t)n_rows * n_cols;
    *a = (rows_arg){.g = f32_at(gate, n), .u = f32_at(up, n), .d = f32_at(dst, n), .n_cols = n_cols};
    return a->g && a->u && a->d;
}

static int cpu_silu_mul(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                        uint32_t n_cols)
{
    rows_arg a;
    if (!glu_arg(gate, up, dst, n_rows, n_cols, &a))
        return BACKEND_EARG;
    par_for(ctx, n_rows, 8 * (size_t)n_cols, silu_rows, &a);
    return 0;
}

/* ggml_gelu_f32 (vec.h:968) as llama.cpp's x86 builds compile it (GCC
 * contracts 1 + A*x*x into an fma): the values of ggml's F16 GELU table. */
float backend_cpu_gelu_f32(float x)
{
    const float GELU_COEF_A = 0.044715f, SQRT_2_OVER_PI = 0.79788456080286535587989211986876f;
    return (0.5f * x) * (1.0f + tanhf((SQRT_2_OVER_PI * x) * fmaf(GELU_COEF_A * x, x, 1.0f)));
}

/* ggml_geglu_split on the CPU: ggml_vec_geglu_f32 (vec.h:1415-1428) with
 * GGML_GELU_FP16 (always defined, vec.h:46), the whole row through the same
 * loop (no SIMD part, so rows do not matter): 0 at or below -10, x * g at
 * or above 10, else the table entry of x rounded to F16, times g. */
static void gelu_range(void *arg, size_t i0, size_t i1)
{
    const rows_arg *a = arg;
    for (size_t i = i0; i < i1; i++) {
        const float x = a->g[i];
        if (x <= -10.0f)
            a->d[i] = 0.0f;
        else if (x >= 10.0f)
            a->d[i] = x * a->u[i];
        else
            a->d[i] = g_gelu_table[codec_f32_to_f16(x)] * a->u[i];
    }
}

static int cpu_gelu_mul(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                        uint32_t n_cols)
{
    rows_arg a;
    if (!glu_arg(gate, up, dst, n_rows, n_cols, &a))
        return BACKEND_EARG;
    par_for(ctx, (size_t)n_rows * n_cols, 4, gelu_range, &a);
    return 0;
}

/* ggml_scale (bias 0): ggml_vec_scale_f32 (vec.h:703), y[i] * v whether its
 * AVX2 loop or its scalar tail does it (one rounding either way). */
static int cpu_scale(void *ctx, backend_view src, backend_view dst, size_t n, float s)
{
    (void)ctx;
    const float *x = f32_at(src, n);
    float *d = f32_at(dst, n);
    if (!x || !d)
        return BACKEND_EARG;
    for (size_t i = 0; i < n; i++)
        d[i] = x[i] * s;
    return 0;
}

static int cpu_sync(void *ctx)
{
    (void)ctx;
    return 0;
}

static const backend_ops CPU_OPS = {
    .name = "cpu",
    .caps = BACKEND_CAP_ROPE_EXT | BACKEND_CAP_ATTN_SWA | BACKEND_CAP_ATTN_SINKS | BACKEND_CAP_MOE,
    .free = backend_cpu_ctx_free,
    .buf_new = cpu_buf_new,
    .buf_free = cpu_buf_free,
    .buf_write = cpu_buf_write,
    .buf_read = cpu_buf_read,
    .weight_prepare = NULL,
    .weight_release = NULL,
    .get_rows = cpu_get_rows,
    .rms_norm_mul = cpu_rms_norm_mul,
    .add_w = cpu_add_w,
    .add = cpu_add,
    .matmul = cpu_matmul,
    .matmul_n = cpu_matmul_n,
    .rope = cpu_rope,
    .store_f16 = cpu_store_f16,
    .attention = cpu_attention,
    .silu_mul = cpu_silu_mul,
    .gelu_mul = cpu_gelu_mul,
    .scale = cpu_scale,
    .moe_route = backend_cpu_moe_route,
    .matmul_id = backend_cpu_matmul_id,
    .add_id = backend_cpu_add_id,
    .swiglu_oai = backend_cpu_swiglu_oai,
    .moe_combine = backend_cpu_moe_combine,
    .sync = cpu_sync,
};

backend *backend_cpu_new(int n_threads)
{
    f16_table_init();
    backend *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->ops = &CPU_OPS;
    b->ctx = backend_cpu_ctx_new(n_threads);
    if (!b->ctx) {
        free(b);
        return NULL;
    }
    return b;
}

int backend_cpu_threads(const backend *b)
{
    if (!b || b->ops != &CPU_OPS)
        return 1;
    return backend_cpu_ctx_threads(b->ctx);
}

void backend_free(backend *b)
{
    if (!b)
        return;
    if (b->ops && b->ops->free)
        b->ops->free(b->ctx);
    free(b);
}

const char *backend_strerror(int code)
{
    switch (code) {
    case BACKEND_OK: return "ok";
    case BACKEND_ENOMEM: return "out of memory";
    case BACKEND_EARG: return "bad argument (sizes, offsets or types)";
    case BACKEND_EUNSUPPORTED: return "not supported by this backend";
    case BACKEND_EDEVICE: return "device error";
    case BACKEND_ECANCELLED: return "cancelled";
    default: return "unknown backend error";
    }
}
