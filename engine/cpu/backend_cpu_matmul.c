/* backend_cpu_matmul: context (thread pool, scratch) and matrix products of
 * the CPU backend, through the kernels module (kernels.h): integer dot
 * products with activations quantized on the fly, as ggml does. */
#include <stdlib.h>
#include <string.h>

#include "backend_cpu_internal.h"
#include "codec.h"
#include "ggtype.h"
#include "kernels.h"
#include "kernels_internal.h"

typedef struct {
    bool float_path;   /* GGSCOPE_MATMUL=float: dequantize + float dots (debugging) */
    tpool *pool;
    float *xr;           /* activations rounded to F16 / BF16 for such weights */
    size_t xr_n;
    void *scratch;
    size_t scratch_size;
} cpu_ctx;

void *backend_cpu_ctx_new(int n_threads)
{
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    const char *mm = getenv("GGSCOPE_MATMUL");
    c->float_path = mm && !strcmp(mm, "float");
    c->pool = tpool_new(n_threads);
    if (!c->pool) {
        free(c);
        return NULL;
    }
    return c;
}

void backend_cpu_ctx_free(void *ctx)
{
    cpu_ctx *c = ctx;
    if (!c)
        return;
    tpool_free(c->pool);
    free(c->xr);
    free(c->scratch);
    free(c);
}

int backend_cpu_ctx_threads(void *ctx)
{
    return tpool_threads(((cpu_ctx *)ctx)->pool);
}

tpool *backend_cpu_ctx_pool(void *ctx)
{
    return ((cpu_ctx *)ctx)->pool;
}

void backend_cpu_parallel(void *ctx, void (*fn)(void *arg, int ith, int nth), void *arg)
{
    tpool_run_dynamic(((cpu_ctx *)ctx)->pool, fn, arg);
}

/* Plain path: dequantize each weight row, dot in double with every token. */
static int matmul_float(const backend_weight *w, const float *x, uint32_t n_tok, float *y)
{
    const uint64_t K = w->ne0, N = w->ne1;
    float *row = malloc(sizeof(float) * K);
    if (!row)
        return BACKEND_ENOMEM;
    for (uint64_t r = 0; r < N; r++) {
        if (codec_dequantize(w->type, (const uint8_t *)w->data + r * w->row_bytes, row, K)) {
            free(row);
            return BACKEND_EUNSUPPORTED;
        }
        for (uint32_t t = 0; t < n_tok; t++) {
            const float *xt = x + (size_t)t * K;
            double s = 0.0;
            for (uint64_t c = 0; c < K; c++)
                s += (double)row[c] * xt[c];
            y[(size_t)t * N + r] = (float)s;
        }
    }
    free(row);
    return 0;
}

int backend_cpu_matmul_n(void *ctx, const backend_weight *const *ws, int n_w, const float *x, uint32_t n_tok,
                         float *const *ys)
{
    cpu_ctx *c = ctx;
    if (n_w < 1 || n_w > KERN_MATMUL_MAX)
        return BACKEND_EARG;
    if (c->float_path) {
        for (int i = 0; i < n_w; i++) {
            int rc = matmul_float(ws[i], x, n_tok, ys[i]);
            if (rc)
                return rc;
        }
        return 0;
    }
    const backend_weight *w = ws[0];
    size_t need = kern_matmul_scratch_size(w->type, (int64_t)w->ne0, n_tok);
    if (need == (size_t)-1)
        return BACKEND_EARG;
    if (need > c->scratch_size) {
        void *p = malloc(need);
        if (!p)
            return BACKEND_ENOMEM;
        free(c->scratch);
        c->scratch = p;
        c->scratch_size = need;
    }
    if (w->type == GGTYPE_F16 || w->type == GGTYPE_BF16) {
        /* ggml multiplies F16 / BF16 weights with activations converted to
         * the same type: round them the same way */
        size_t n = (size_t)n_tok * w->ne0;
        if (n > c->xr_n) {
            float *p = malloc(sizeof(float) * n);
            if (!p)
                return BACKEND_ENOMEM;
            free(c->xr);
            c->xr = p;
            c->xr_n = n;
        }
        if (w->type == GGTYPE_F16) {
            /* F16C where the CPU has it (bit-identical to the codec's) */
            uint16_t h[1024];
            for (size_t i = 0; i < n; i += 1024) {
                size_t m = n - i < 1024 ? n - i : 1024;
                kern_f32_to_f16(x + i, h, (int64_t)m);
                kern_f16_to_f32(h, c->xr + i, (int64_t)m);
            }
        } else {
            for (size_t i = 0; i < n; i++)
                c->xr[i] = codec_bf16_to_f32(codec_f32_to_bf16(x[i]));
        }
        x = c->xr;
    }
    kern_mat mats[KERN_MATMUL_MAX];
    for (int i = 0; i < n_w; i++)
        mats[i] = (kern_mat){ws[i]->data, ws[i]->row_bytes, (int64_t)ws[i]->ne1, ys[i]};
    int rc = kern_matmul_n(c->pool, w->type, mats, n_w, (int64_t)w->ne0, x, n_tok, c->scratch,
                           c->scratch_size);
    return rc ? BACKEND_EUNSUPPORTED : 0;
}

void backend_cpu_matmul_sizes(const backend_weight *w, uint32_t n_tok, uint64_t *act, uint64_t *rounded,
                              uint64_t *per_thread)
{
    *act = *rounded = *per_thread = 0;
    size_t need = kern_matmul_scratch_size(w->type, (int64_t)w->ne0, n_tok ? n_tok : 1);
    if (need == (size_t)-1)
        return;
    *act = need;
    if (w->type == GGTYPE_F16 || w->type == GGTYPE_BF16)
        *rounded = sizeof(float) * (uint64_t)n_tok * w->ne0;
    /* mm_worker: the GEMM's tile buffer, or a row of floats */
    uint64_t g = kern_gemm_tmp_size((int64_t)w->ne0), r = sizeof(float) * w->ne0;
    *per_thread = g > r ? g : r;
}
