/* backend_cpu_matmul: context and matrix products of the CPU backend. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cpu_internal.h"
#include "codec.h"
#include "ggtype.h"

typedef struct {
    int n_threads;
} cpu_ctx;

void *backend_cpu_ctx_new(int n_threads)
{
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    c->n_threads = n_threads;
    return c;
}

void backend_cpu_ctx_free(void *ctx)
{
    free(ctx);
}

int backend_cpu_ctx_threads(void *ctx)
{
    return ((cpu_ctx *)ctx)->n_threads;
}

void backend_cpu_parallel(void *ctx, void (*fn)(void *arg, int ith, int nth), void *arg)
{
    (void)ctx;
    fn(arg, 0, 1);
}

bool backend_cpu_matmul_supports(uint32_t type)
{
    const ggtype_traits *t = ggtype_get(type);
    return t && (t->is_quantized || type == GGTYPE_F32 || type == GGTYPE_F16 || type == GGTYPE_BF16);
}

/* Generic path: dequantize each weight row, dot with every token's activations.
 * F16/BF16 weights meet activations rounded to the same type, as in ggml. */
int backend_cpu_matmul(void *ctx, const backend_weight *w, const float *x, uint32_t n_tok, float *y)
{
    (void)ctx;
    const uint64_t K = w->ne0, N = w->ne1;
    float *row = malloc(sizeof(float) * K);
    float *xr = NULL;
    if (!row)
        return BACKEND_ENOMEM;
    const float *xs = x;
    if (w->type == GGTYPE_F16 || w->type == GGTYPE_BF16) {
        xr = malloc(sizeof(float) * K * n_tok);
        if (!xr) {
            free(row);
            return BACKEND_ENOMEM;
        }
        for (uint64_t i = 0; i < K * n_tok; i++)
            xr[i] = w->type == GGTYPE_F16 ? codec_f16_to_f32(codec_f32_to_f16(x[i]))
                                          : codec_bf16_to_f32(codec_f32_to_bf16(x[i]));
        xs = xr;
    }
    int rc = 0;
    for (uint64_t r = 0; r < N; r++) {
        if (codec_dequantize(w->type, (const uint8_t *)w->data + r * w->row_bytes, row, K)) {
            rc = BACKEND_EUNSUPPORTED;
            break;
        }
        for (uint32_t t = 0; t < n_tok; t++) {
            const float *xt = xs + (size_t)t * K;
            float s = 0.0f;
            for (uint64_t c = 0; c < K; c++)
                s += row[c] * xt[c];
            y[(size_t)t * N + r] = s;
        }
    }
    free(xr);
    free(row);
    return rc;
}
