/* backend_cpu_moe: the mixture-of-experts ops of the CPU backend, in the
 * float order of llama.cpp's build_moe_ffn on its CPU backend
 * (llama-graph.cpp, ggml-cpu ops.cpp; see docs/kernels.md):
 *  - moe_route: ggml_soft_max over the experts (vectorised expf summed per 8
 *    or 16 lanes into a double, libm expf for the tail, (float)(1/sum)
 *    multiply), ggml_argsort (libstdc++'s std::sort, ported so that ties
 *    land where it leaves them), the weights' sum in double, clamped, divided;
 *  - matmul_id: kern_matmul_id (every output in the one-token order);
 *  - add_id, swiglu_oai (libm expf, no fma), moe_combine (products rounded,
 *    slot-ordered sums): element-wise, one rounding per ggml op.
 * Every float operation below is its own statement: nothing for a compiler
 * to contract into an fma (the project builds ISO C, -ffp-contract=off). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu_internal.h"
#include "codec.h"
#include "cpufeat.h"
#include "ggtype.h"
#include "kernels.h"

/* Whether n elements at a and m at b share memory. */
static bool overlap(backend_view a, size_t n, backend_view b, size_t m)
{
    return a.buf == b.buf && n && m && a.off < b.off + m && b.off < a.off + n;
}

/* ---- libstdc++'s std::sort (bits/stl_algo.h, stl_heap.h; GCC 11/12) ---- */

typedef struct {
    const float *d;
} sort_cmp;

/* comp(a, b): data[a] > data[b] (ggml's cmp_argsort for DESC) */
static inline bool gt(sort_cmp c, int32_t a, int32_t b)
{
    return c.d[a] > c.d[b];
}

static inline void iswap(int32_t *a, int32_t *b)
{
    int32_t t = *a;
    *a = *b;
    *b = t;
}

/* __push_heap */
static void push_heap(int32_t *f, int64_t hole, int64_t top, int32_t v, sort_cmp c)
{
    int64_t parent = (hole - 1) / 2;
    while (hole > top && gt(c, f[parent], v)) {
        f[hole] = f[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    f[hole] = v;
}

/* __adjust_heap */
static void adjust_heap(int32_t *f, int64_t hole, int64_t len, int32_t v, sort_cmp c)
{
    const int64_t top = hole;
    int64_t child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (gt(c, f[child], f[child - 1]))
            child--;
        f[hole] = f[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        f[hole] = f[child - 1];
        hole = child - 1;
    }
    push_heap(f, hole, top, v, c);
}

/* __partial_sort(first, last, last): __heap_select (= __make_heap here),
 * then __sort_heap */
static void heap_sort(int32_t *f, int64_t len, sort_cmp c)
{
    if (len >= 2)
        for (int64_t parent = (len - 2) / 2;; parent--) {
            adjust_heap(f, parent, len, f[parent], c);
            if (parent == 0)
                break;
        }
    for (int64_t last = len; last > 1;) {
        --last;
        const int32_t v = f[last];
        f[last] = f[0];
        adjust_heap(f, 0, last, v, c);
    }
}

/* __move_median_to_first */
static void median_to_first(int32_t *r, int32_t *a, int32_t *b, int32_t *m, sort_cmp c)
{
    if (gt(c, *a, *b)) {
        if (gt(c, *b, *m))
            iswap(r, b);
        else if (gt(c, *a, *m))
            iswap(r, m);
        else
            iswap(r, a);
    } else if (gt(c, *a, *m)) {
        iswap(r, a);
    } else if (gt(c, *b, *m)) {
        iswap(r, m);
    } else {
        iswap(r, b);
    }
}

/* __unguarded_partition of [f, l) around *pivot (pivot = f - 1). The bounds
 * checks never fire for a strict weak order (libstdc++'s median-of-three
 * guarantees a stop on each side); they keep NaN scores, which break that
 * order, inside the range. */
static int32_t *partition(int32_t *f, int32_t *l, const int32_t *pivot, sort_cmp c)
{
    int32_t *const end = l;
    for (;;) {
        while (f < end && gt(c, *f, *pivot))
            ++f;
        --l;
        while (l > pivot && gt(c, *pivot, *l))
            --l;
        if (!(f < l))
            return f;
        iswap(f, l);
        ++f;
    }
}

/* __introsort_loop (_S_threshold 16) */
static void introsort(int32_t *f, int32_t *l, int64_t depth, sort_cmp c)
{
    while (l - f > 16) {
        if (depth == 0) {
            heap_sort(f, l - f, c);
            return;
        }
        --depth;
        int32_t *mid = f + (l - f) / 2;
        median_to_first(f, f + 1, mid, l - 1, c);
        int32_t *cut = partition(f + 1, l, f, c);
        introsort(cut, l, depth, c);
        l = cut;
    }
}

/* __unguarded_linear_insert (first: the start of the whole range, the same
 * kind of never-firing bound as in partition) */
static void linear_insert(int32_t *first, int32_t *i, sort_cmp c)
{
    const int32_t v = *i;
    int32_t *next = i - 1;
    while (i > first && gt(c, v, *next)) {
        *i = *next;
        i = next;
        --next;
    }
    *i = v;
}

/* __insertion_sort */
static void insertion_sort(int32_t *f, int32_t *l, sort_cmp c)
{
    if (f == l)
        return;
    for (int32_t *i = f + 1; i != l; ++i) {
        if (gt(c, *i, *f)) {
            const int32_t v = *i;
            memmove(f + 1, f, (size_t)(i - f) * sizeof *f);
            *f = v;
        } else {
            linear_insert(f, i, c);
        }
    }
}

void backend_cpu_heapsort_desc(const float *data, int32_t *idx, int64_t n)
{
    sort_cmp c = {data};
    for (int64_t j = 0; j < n; j++)
        idx[j] = (int32_t)j;
    heap_sort(idx, n, c);
}

void backend_cpu_argsort_desc(const float *data, int32_t *idx, int64_t n)
{
    sort_cmp c = {data};
    for (int64_t j = 0; j < n; j++)
        idx[j] = (int32_t)j;
    if (n <= 0)
        return;
    int64_t lg = 63 - __builtin_clzll((unsigned long long)n); /* std::__lg */
    introsort(idx, idx + n, 2 * lg, c);
    if (n > 16) { /* __final_insertion_sort */
        insertion_sort(idx, idx + 16, c);
        for (int32_t *i = idx + 16; i != idx + n; ++i)
            linear_insert(idx, i, c);
    } else {
        insertion_sort(idx, idx + n, c);
    }
}

/* ---- the router ---- */

static bool haswell_order(void)
{
    const kern_simd ks = kern_simd_get();
    return cpufeat_llama_variant() == CPUFEAT_LLAMA_HASWELL && (ks == KERN_SIMD_AVX2 || ks == KERN_SIMD_AVX2_PLAIN);
}

/* ggml's lane sums: 8 lanes (l, l+4), (0,2)(1,3), (0,1); 16 lanes (l, l+8) first. */
static float sum8(const float *a)
{
    float c[4];
    for (int l = 0; l < 4; l++)
        c[l] = a[l] + a[l + 4];
    const float s02 = c[0] + c[2], s13 = c[1] + c[3];
    return s02 + s13;
}

static float sum16(const float *a)
{
    float b[8];
    for (int l = 0; l < 8; l++)
        b[l] = a[l] + a[l + 8];
    return sum8(b);
}

/* ggml_compute_forward_soft_max_f32 for one row (ops.cpp; scale 1, no mask,
 * no sinks): max by MAX from -inf, ggml_vec_soft_max_f32 (vec.cpp: the
 * vectorised expf over whole vectors, each summed into a double, libm expf
 * for the rest), then every value times (float)(1.0 / sum). */
void backend_cpu_softmax_row(const float *src, float *dst, int64_t n, bool hw)
{
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        max = max > src[i] ? max : src[i];
    const int64_t lanes = hw ? 8 : 16;
    double sum = 0.0;
    int64_t i = 0;
    for (; i + lanes - 1 < n; i += lanes) {
        float v[16];
        for (int64_t l = 0; l < lanes; l++) {
            const float d = src[i + l] - max;
            v[l] = hw ? backend_cpu_v_expf_hw(d) : backend_cpu_v_expf(d);
        }
        memcpy(dst + i, v, sizeof(float) * (size_t)lanes);
        sum += (double)(hw ? sum8(v) : sum16(v));
    }
    for (; i < n; i++) {
        const float d = src[i] - max;
        const float v = expf(d);
        sum += (double)v;
        dst[i] = v;
    }
    sum = 1.0 / sum;
    const float s = (float)sum;
    for (i = 0; i < n; i++)
        dst[i] *= s;
}

int backend_cpu_moe_route(void *ctx, backend_view logits, uint32_t n_tok, uint32_t n_expert, uint32_t n_used,
                          backend_moe_gating gating, bool norm, int32_t *ids, backend_view weights)
{
    (void)ctx;
    if (!n_expert || n_expert > INT32_MAX || !n_used || n_used > n_expert || (n_tok && !ids) ||
        (gating != BACKEND_MOE_SOFTMAX && gating != BACKEND_MOE_TOPK_SOFTMAX))
        return BACKEND_EARG;
    const float *lg = backend_cpu_f32(logits, (size_t)n_tok * n_expert);
    float *wt = backend_cpu_f32(weights, (size_t)n_tok * n_used);
    if (!lg || !wt)
        return BACKEND_EARG;
    float *p = malloc(sizeof(float) * n_expert);
    int32_t *idx = malloc(sizeof(int32_t) * n_expert);
    if (!p || !idx) {
        free(p);
        free(idx);
        return BACKEND_ENOMEM;
    }
    const bool hw = haswell_order();
    for (uint32_t t = 0; t < n_tok; t++) {
        const float *l = lg + (size_t)t * n_expert;
        float *w = wt + (size_t)t * n_used;
        if (gating == BACKEND_MOE_SOFTMAX)
            backend_cpu_softmax_row(l, p, n_expert, hw);
        else
            memcpy(p, l, sizeof(float) * n_expert);
        backend_cpu_argsort_desc(p, idx, n_expert);
        for (uint32_t k = 0; k < n_used; k++) {
            ids[(size_t)t * n_used + k] = idx[k];
            w[k] = p[idx[k]];
        }
        if (gating == BACKEND_MOE_TOPK_SOFTMAX)
            backend_cpu_softmax_row(w, w, n_used, hw);
        if (norm) {
            /* ggml_sum_rows (a double sum), ggml_clamp (MAX(MIN(x, inf), min)), ggml_div */
            double sd = 0.0;
            for (uint32_t k = 0; k < n_used; k++)
                sd += (double)w[k];
            float s = (float)sd;
            s = s < INFINITY ? s : INFINITY;
            s = s > 6.103515625e-5f ? s : 6.103515625e-5f;
            for (uint32_t k = 0; k < n_used; k++)
                w[k] = w[k] / s;
        }
    }
    free(p);
    free(idx);
    return 0;
}

/* ---- expert products ---- */

int backend_cpu_matmul_id(void *ctx, const backend_weight *w, backend_view x, uint32_t x_per_tok,
                          const int32_t *ids, uint32_t n_tok, uint32_t n_used, backend_view y)
{
    if (!w || !w->data || !w->ne0 || !w->ne1 || !w->row_bytes || w->ne0 > UINT32_MAX || w->ne1 > UINT32_MAX ||
        ggtype_row_size(w->type, w->ne0, NULL) != w->row_bytes || !n_used ||
        (x_per_tok != 1 && x_per_tok != n_used) || (n_tok && !ids))
        return BACKEND_EARG;
    const uint64_t n_exp = w->ne2 ? w->ne2 : 1;
    uint64_t eb;
    if (__builtin_mul_overflow(w->ne1, w->row_bytes, &eb) || eb > SIZE_MAX || n_exp > INT32_MAX ||
        eb > SIZE_MAX / n_exp)
        return BACKEND_EARG;
    size_t nx, ny;
    if (__builtin_mul_overflow((size_t)n_tok * x_per_tok, (size_t)w->ne0, &nx) ||
        __builtin_mul_overflow((size_t)n_tok * n_used, (size_t)w->ne1, &ny) || (uint64_t)n_tok * n_used > INT32_MAX)
        return BACKEND_EARG;
    const float *xs = backend_cpu_f32(x, nx);
    float *ys = backend_cpu_f32(y, ny);
    if (!xs || !ys || overlap(x, nx, y, ny))
        return BACKEND_EARG;
    for (size_t i = 0; i < (size_t)n_tok * n_used; i++)
        if (ids[i] < 0 || (uint64_t)ids[i] >= n_exp)
            return BACKEND_EARG;
    if (!n_tok)
        return 0;
    float *xr = NULL;
    if (w->type == GGTYPE_F16 || w->type == GGTYPE_BF16) {
        /* ggml multiplies F16 / BF16 weights with activations converted to that type */
        xr = malloc(sizeof(float) * nx);
        if (!xr)
            return BACKEND_ENOMEM;
        if (w->type == GGTYPE_F16) {
            uint16_t h[1024];
            for (size_t i = 0; i < nx; i += 1024) {
                const size_t m = nx - i < 1024 ? nx - i : 1024;
                kern_f32_to_f16(xs + i, h, (int64_t)m);
                kern_f16_to_f32(h, xr + i, (int64_t)m);
            }
        } else {
            for (size_t i = 0; i < nx; i++)
                xr[i] = codec_bf16_to_f32(codec_f32_to_bf16(xs[i]));
        }
        xs = xr;
    }
    const int rc = kern_matmul_id(backend_cpu_ctx_pool(ctx), w->type, w->data, w->row_bytes, (size_t)eb,
                                  (int64_t)w->ne1, (int64_t)w->ne0, (int64_t)n_exp, xs, x_per_tok, ids, n_tok,
                                  n_used, ys);
    free(xr);
    return rc ? BACKEND_EUNSUPPORTED : 0;
}

/* ---- element-wise ---- */

/* ggml_add_id: each row plus its expert's bias row (ggml_vec_add_f32). */
int backend_cpu_add_id(void *ctx, backend_view src, const backend_weight *b, const int32_t *ids, backend_view dst,
                       uint32_t n_rows, uint32_t n_cols)
{
    (void)ctx;
    if (!b || b->type != GGTYPE_F32 || !b->data || b->ne0 != n_cols || !b->ne1 || (n_rows && !ids) ||
        b->ne1 > SIZE_MAX / (n_cols ? n_cols : 1))
        return BACKEND_EARG;
    const size_t n = (size_t)n_rows * n_cols;
    const float *s = backend_cpu_f32(src, n);
    float *d = backend_cpu_f32(dst, n);
    if (!s || !d)
        return BACKEND_EARG;
    for (uint32_t r = 0; r < n_rows; r++)
        if (ids[r] < 0 || (uint64_t)ids[r] >= b->ne1)
            return BACKEND_EARG;
    const float *bias = b->data;
    for (uint32_t r = 0; r < n_rows; r++) {
        const float *br = bias + (size_t)ids[r] * n_cols;
        for (uint32_t c = 0; c < n_cols; c++)
            d[(size_t)r * n_cols + c] = s[(size_t)r * n_cols + c] + br[c];
    }
    return 0;
}

/* ggml_swiglu_oai (ops.cpp, ggml_compute_forward_swiglu_oai_f32): x =
 * std::min(g, limit), y = std::clamp(u, -limit, limit),
 * x / (1 + expf(alpha * -x)) * (y + 1), each step rounded (scalar, no fma in
 * llama.cpp's build either). */
int backend_cpu_swiglu_oai(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                           uint32_t n_cols, float alpha, float limit)
{
    (void)ctx;
    const size_t n = (size_t)n_rows * n_cols;
    const float *g = backend_cpu_f32(gate, n), *u = backend_cpu_f32(up, n);
    float *d = backend_cpu_f32(dst, n);
    if (!g || !u || !d)
        return BACKEND_EARG;
    for (size_t i = 0; i < n; i++) {
        const float x = limit < g[i] ? limit : g[i];
        const float ui = u[i];
        const float y = ui < -limit ? -limit : (limit < ui ? limit : ui);
        const float ax = alpha * -x;
        const float e = expf(ax);
        const float den = 1.0f + e;
        const float glu = x / den;
        const float y1 = y + 1.0f;
        d[i] = glu * y1;
    }
    return 0;
}

/* ggml_mul (y * w per slot row, rounded), then ggml_add slot after slot. */
int backend_cpu_moe_combine(void *ctx, backend_view y, backend_view w, uint32_t n_tok, uint32_t n_used,
                            uint32_t n_cols, backend_view dst)
{
    (void)ctx;
    size_t ny;
    if (!n_used || __builtin_mul_overflow((size_t)n_tok * n_used, (size_t)n_cols, &ny))
        return BACKEND_EARG;
    const float *ys = backend_cpu_f32(y, ny), *ws = backend_cpu_f32(w, (size_t)n_tok * n_used);
    float *d = backend_cpu_f32(dst, (size_t)n_tok * n_cols);
    if (!ys || !ws || !d || overlap(dst, (size_t)n_tok * n_cols, y, ny) ||
        overlap(dst, (size_t)n_tok * n_cols, w, (size_t)n_tok * n_used))
        return BACKEND_EARG;
    for (uint32_t t = 0; t < n_tok; t++) {
        float *dt = d + (size_t)t * n_cols;
        for (uint32_t s = 0; s < n_used; s++) {
            const float *yr = ys + ((size_t)t * n_used + s) * n_cols;
            const float ww = ws[(size_t)t * n_used + s];
            for (uint32_t c = 0; c < n_cols; c++) {
                const float prod = yr[c] * ww;
                dt[c] = s ? dt[c] + prod : prod;
            }
        }
    }
    return 0;
}
