/* bench_make_big_model OUT [N_LAYERS]: write a TinyLlama-1.1B-shaped GGUF
 * (llama, n_embd 2048, n_ff 5632, 32 heads / 4 KV heads, 32000-token
 * vocabulary; F16 matrices, F32 norms; 22 layers ≈ 2.2 GB) with the GGUF
 * writer, tensor data produced by the fill callback (deterministic
 * pseudo-random values, roughly normal, std 0.02). For the explorer's
 * benchmarks (time to first frame, histogram of the largest tensor). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "ggtype.h"
#include "gguf.h"

enum { N_EMBD = 2048, N_FF = 5632, N_HEAD = 32, N_HEAD_KV = 4, N_VOCAB = 32000 };

typedef struct {
    uint32_t type;
    uint64_t n;
    uint64_t seed;
} tinfo;

static tinfo *infos;

static int fill(void *user, uint64_t i, void *dst, uint64_t size)
{
    (void)user;
    tinfo *t = &infos[i];
    uint64_t s = t->seed * 0x9E3779B97F4A7C15ull + 1;
    if (t->type == GGTYPE_F32) {
        float *f = dst;
        for (uint64_t k = 0; k < t->n; k++)
            f[k] = 1.0f;   /* norm weights */
        return size == t->n * 4 ? 0 : -1;
    }
    /* F16: a precomputed table of 4096 half values (sum of 4 uniforms ≈
     * normal), indexed by a xorshift stream: fast enough for 2 GB */
    static uint16_t table[4096];
    static int ready;
    if (!ready) {
        uint64_t r = 12345;
        for (int k = 0; k < 4096; k++) {
            double acc = 0;
            for (int j = 0; j < 4; j++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                acc += (double)(r >> 11) / 9007199254740992.0 - 0.5;
            }
            table[k] = codec_f32_to_f16((float)(acc * 0.0346));
        }
        ready = 1;
    }
    uint16_t *h = dst;
    for (uint64_t k = 0; k < t->n; k += 4) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        for (int j = 0; j < 4 && k + (uint64_t)j < t->n; j++)
            h[k + (uint64_t)j] = table[(s >> (12 * j)) & 4095];
    }
    return size == t->n * 2 ? 0 : -1;
}

static gguf_writer *w;
static int nt;

static void add(const char *name, uint32_t type, uint32_t nd, uint64_t a, uint64_t b)
{
    uint64_t ne[2] = {a, b};
    gguf_writer_add_tensor(w, name, type, nd, ne, NULL);
    infos[nt] = (tinfo){type, a * (nd > 1 ? b : 1), (uint64_t)nt + 1};
    nt++;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.gguf [N_LAYERS (22)]\n", argv[0]);
        return 2;
    }
    int n_layer = argc > 2 ? atoi(argv[2]) : 22;
    if (n_layer < 1 || n_layer > 200) {
        fprintf(stderr, "N_LAYERS must be 1..200\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    w = gguf_writer_new(32);
    infos = calloc((size_t)(3 + 9 * n_layer), sizeof *infos);
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_str(w, "general.name", "ggscope big bench model");
    gguf_writer_set_u32(w, "general.file_type", 1);
    gguf_writer_set_u32(w, "llama.context_length", 2048);
    gguf_writer_set_u32(w, "llama.embedding_length", N_EMBD);
    gguf_writer_set_u32(w, "llama.feed_forward_length", N_FF);
    gguf_writer_set_u32(w, "llama.block_count", (uint32_t)n_layer);
    gguf_writer_set_u32(w, "llama.attention.head_count", N_HEAD);
    gguf_writer_set_u32(w, "llama.attention.head_count_kv", N_HEAD_KV);
    gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_writer_set_u32(w, "llama.rope.dimension_count", N_EMBD / N_HEAD);
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    char **toks = malloc(N_VOCAB * sizeof *toks);
    float *scores = malloc(N_VOCAB * sizeof *scores);
    int32_t *types = malloc(N_VOCAB * sizeof *types);
    for (int i = 0; i < N_VOCAB; i++) {
        toks[i] = malloc(24);
        snprintf(toks[i], 24, i < 3 ? (i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>") : "▁tok%d", i);
        scores[i] = -(float)i;
        types[i] = i < 3 ? 3 : 1;
    }
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, N_VOCAB);
    gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, scores, N_VOCAB);
    gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, types, N_VOCAB);
    gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    add("token_embd.weight", GGTYPE_F16, 2, N_EMBD, N_VOCAB);
    for (int l = 0; l < n_layer; l++) {
        char n[64];
#define T(suffix, type, nd, a, b)                               \
    snprintf(n, sizeof n, "blk.%d." suffix, l);                 \
    add(n, type, nd, a, b)
        T("attn_norm.weight", GGTYPE_F32, 1, N_EMBD, 1);
        T("attn_q.weight", GGTYPE_F16, 2, N_EMBD, N_EMBD);
        T("attn_k.weight", GGTYPE_F16, 2, N_EMBD, N_EMBD / N_HEAD * N_HEAD_KV);
        T("attn_v.weight", GGTYPE_F16, 2, N_EMBD, N_EMBD / N_HEAD * N_HEAD_KV);
        T("attn_output.weight", GGTYPE_F16, 2, N_EMBD, N_EMBD);
        T("ffn_norm.weight", GGTYPE_F32, 1, N_EMBD, 1);
        T("ffn_gate.weight", GGTYPE_F16, 2, N_EMBD, N_FF);
        T("ffn_up.weight", GGTYPE_F16, 2, N_EMBD, N_FF);
        T("ffn_down.weight", GGTYPE_F16, 2, N_FF, N_EMBD);
#undef T
    }
    add("output_norm.weight", GGTYPE_F32, 1, N_EMBD, 1);
    add("output.weight", GGTYPE_F16, 2, N_EMBD, N_VOCAB);
    gguf_status st = gguf_writer_write(w, argv[1], fill, NULL);
    gguf_writer_free(w);
    for (int i = 0; i < N_VOCAB; i++)
        free(toks[i]);
    free(toks);
    free(scores);
    free(types);
    free(infos);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != GGUF_OK) {
        fprintf(stderr, "write failed: %s\n", gguf_strerror(st));
        return 1;
    }
    printf("wrote %s (%d tensors) in %.1f s\n", argv[1], nt,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
