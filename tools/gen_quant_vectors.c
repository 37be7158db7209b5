/* gen_quant_vectors: quantization test vectors from ggml itself.
 *
 * Writes tests/data/quant-vectors.gguf: an F32 tensor `src` (rows of varied
 * data: Gaussian at several scales, heavy tails, sparse, outliers, ...), an
 * F32 tensor `imatrix` (one importance weight per column) and, for each type
 * codec_quantize handles, what ggml_quantize_chunk() makes of `src`: `q.TYPE`
 * without importance weights and `qi.TYPE` with `imatrix` (only for the types
 * that use one). The ggml used is the peer oracle's (../shared/peer: the
 * libggml-base.so of node-llama-cpp), loaded with dlopen; nothing of ggml is
 * compiled into ggscope. Not part of the build; run by hand:
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iengine tools/gen_quant_vectors.c \
 *      build/libggengine.a -ldl -lm -o /tmp/gen_quant_vectors
 *   /tmp/gen_quant_vectors \
 *      ~/.cache/ggscope-peer/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so \
 *      tests/data/quant-vectors.gguf
 *
 * (run ../shared/peer/peer once first so that the cache exists). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"
#include "gguf.h"

typedef size_t (*quantize_chunk_fn)(int type, const float *src, void *dst, int64_t start,
                                    int64_t nrows, int64_t n_per_row, const float *imatrix);

enum { N = 1024, R = 6 };

static uint64_t rng = UINT64_C(0x9E3779B97F4A7C15);

static double unit(void) /* (0, 1] */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((double)(rng >> 11) + 1.0) / 9007199254740992.0;
}

static double normal(void)
{
    return sqrt(-2.0 * log(unit())) * cos(6.283185307179586 * unit());
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBGGML_BASE.so OUT.gguf\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    const quantize_chunk_fn chunk = (quantize_chunk_fn)dlsym(lib, "ggml_quantize_chunk");
    if (!chunk) {
        fprintf(stderr, "ggml_quantize_chunk not found\n");
        return 1;
    }

    static float src[R * N], imatrix[N];
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < N; i++) {
            const double g = normal();
            double v;
            switch (r) {
            case 0: v = 0.02 * g; break;                            /* weight-like */
            case 1: v = g * g * g; break;                           /* heavy tails */
            case 2: v = unit() < 0.8 ? 0.0 : g; break;              /* sparse */
            case 3: v = i % 37 == 3 ? 40.0 * g : 0.1 * g; break;    /* outliers */
            case 4: v = fabs(g) + 0.5 * (i / 256); break;           /* positive, shifting */
            default: v = pow(10.0, -3.0 + 6.0 * (i / 128) / 7.0) * g; break; /* 1e-3 .. 1e3 */
            }
            src[r * N + i] = (float)v;
        }
    }
    for (int i = 0; i < N; i++)
        imatrix[i] = (float)pow(10.0, 4.0 * unit() - 2.0);

    gguf_writer *w = gguf_writer_new(32);
    gguf_writer_set_str(w, "general.architecture", "fixture");
    gguf_writer_set_str(w, "general.name", "quant-vectors");
    gguf_writer_set_str(w, "fixture.generator", "tools/gen_quant_vectors.c with the peer's ggml_quantize_chunk");
    const uint64_t ne2[2] = {N, R}, ne1[1] = {N};
    gguf_writer_add_tensor(w, "src", GGTYPE_F32, 2, ne2, src);
    gguf_writer_add_tensor(w, "imatrix", GGTYPE_F32, 1, ne1, imatrix);
    for (uint32_t type = 0; type < GGTYPE_COUNT; type++) {
        if (!codec_can_quantize(type) || type == GGTYPE_F16 || type == GGTYPE_BF16)
            continue;
        const size_t rb = (size_t)ggtype_row_size(type, N, NULL);
        uint8_t *plain = calloc(R, rb), *weighted = calloc(R, rb);
        chunk((int)type, src, plain, 0, R, N, NULL);
        chunk((int)type, src, weighted, 0, R, N, imatrix);
        char name[64];
        snprintf(name, sizeof name, "q.%s", ggtype_name(type));
        gguf_writer_add_tensor(w, name, type, 2, ne2, plain);
        if (memcmp(plain, weighted, R * rb) != 0) {
            snprintf(name, sizeof name, "qi.%s", ggtype_name(type));
            gguf_writer_add_tensor(w, name, type, 2, ne2, weighted);
        }
        free(plain);
        free(weighted);
    }
    const gguf_status st = gguf_writer_write(w, argv[2], NULL, NULL);
    gguf_writer_free(w);
    if (st != GGUF_OK) {
        fprintf(stderr, "writing %s: %s\n", argv[2], gguf_strerror(st));
        return 1;
    }
    return 0;
}
