/* Writes a TinyLlama-1.1B-shaped Llama GGUF (F16 weights, 32000-token vocabulary,
 * about 2.2 GB) for benchmarks: bench_make_model OUT.gguf [n_layers]. The weights
 * are pseudo-random (roughly normal, sigma 0.02); the file opens in llama.cpp. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "gguf.h"

enum { N_EMBD = 2048, N_FF = 5632, N_HEAD = 32, N_HEAD_KV = 4, N_VOCAB = 32000 };

static uint16_t half_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = x & 0x7fffff;
    if (e <= 0)
        return (uint16_t)sign;
    if (e >= 31)
        return (uint16_t)(sign | 0x7bff);
    return (uint16_t)(sign | ((uint32_t)e << 10) | (m >> 13));
}

typedef struct {
    uint64_t state;
} gen;

static int fill(void *user, uint64_t i, void *dst, uint64_t size)
{
    gen *g = user;
    uint16_t *h = dst;
    g->state ^= (i + 1) * 0x9e3779b97f4a7c15ULL;
    /* a table of 4096 normal-ish values, walked with a random stride */
    static uint16_t table[4096];
    static int ready;
    if (!ready) {
        uint64_t s = 42;
        for (int k = 0; k < 4096; k++) {
            float acc = 0;
            for (int j = 0; j < 12; j++) {
                s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                acc += (float)(s >> 40) / 16777216.0f;
            }
            table[k] = half_of(0.02f * (acc - 6.0f));
        }
        ready = 1;
    }
    uint64_t s = g->state;
    for (uint64_t k = 0; k < size / 2; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[k] = table[s & 4095];
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.gguf [n_layers (default 22)]\n", argv[0]);
        return 2;
    }
    int n_layer = argc > 2 ? atoi(argv[2]) : 22;
    gguf_writer *w = gguf_writer_new(32);
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_str(w, "general.name", "TinyLlama-shaped benchmark model");
    gguf_writer_set_u32(w, "general.file_type", 1);
    gguf_writer_set_u32(w, "llama.context_length", 2048);
    gguf_writer_set_u32(w, "llama.embedding_length", N_EMBD);
    gguf_writer_set_u32(w, "llama.block_count", (uint32_t)n_layer);
    gguf_writer_set_u32(w, "llama.feed_forward_length", N_FF);
    gguf_writer_set_u32(w, "llama.attention.head_count", N_HEAD);
    gguf_writer_set_u32(w, "llama.attention.head_count_kv", N_HEAD_KV);
    gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
    gguf_writer_set_u32(w, "llama.rope.dimension_count", N_EMBD / N_HEAD);
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    char **toks = malloc(N_VOCAB * sizeof *toks);
    float *scores = malloc(N_VOCAB * sizeof *scores);
    int32_t *types = malloc(N_VOCAB * sizeof *types);
    for (int i = 0; i < N_VOCAB; i++) {
        char buf[32];
        if (i < 3)
            snprintf(buf, sizeof buf, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else if (i < 259)
            snprintf(buf, sizeof buf, "<0x%02X>", i - 3);
        else
            snprintf(buf, sizeof buf, "\xe2\x96\x81tok%d", i);
        toks[i] = strdup(buf);
        scores[i] = -(float)i;
        types[i] = i < 3 ? (i == 0 ? 2 : 3) : i < 259 ? 6 : 1;
    }
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, N_VOCAB);
    gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, scores, N_VOCAB);
    gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, types, N_VOCAB);
    gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    uint64_t ne[2];
    ne[0] = N_EMBD, ne[1] = N_VOCAB;
    gguf_writer_add_tensor(w, "token_embd.weight", GGTYPE_F16, 2, ne, NULL);
    char name[64];
    for (int l = 0; l < n_layer; l++) {
        static const struct { const char *n; int rows, cols; } m[] = {
            {"attn_q", N_EMBD, N_EMBD}, {"attn_k", N_EMBD / 8, N_EMBD}, {"attn_v", N_EMBD / 8, N_EMBD},
            {"attn_output", N_EMBD, N_EMBD}, {"ffn_gate", N_FF, N_EMBD}, {"ffn_up", N_FF, N_EMBD}, {"ffn_down", N_EMBD, N_FF}};
        ne[0] = N_EMBD;
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", l);
        gguf_writer_add_tensor(w, name, GGTYPE_F16, 1, ne, NULL);
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", l);
        gguf_writer_add_tensor(w, name, GGTYPE_F16, 1, ne, NULL);
        for (int k = 0; k < 7; k++) {
            ne[0] = (uint64_t)m[k].cols, ne[1] = (uint64_t)m[k].rows;
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, m[k].n);
            gguf_writer_add_tensor(w, name, GGTYPE_F16, 2, ne, NULL);
        }
    }
    ne[0] = N_EMBD;
    gguf_writer_add_tensor(w, "output_norm.weight", GGTYPE_F16, 1, ne, NULL);
    ne[0] = N_EMBD, ne[1] = N_VOCAB;
    gguf_writer_add_tensor(w, "output.weight", GGTYPE_F16, 2, ne, NULL);
    gen g = {0x1234567};
    gguf_status st = gguf_writer_write(w, argv[1], fill, &g);
    gguf_writer_free(w);
    for (int i = 0; i < N_VOCAB; i++)
        free(toks[i]);
    free(toks);
    free(scores);
    free(types);
    if (st != GGUF_OK) {
        fprintf(stderr, "cannot write %s: %s\n", argv[1], gguf_strerror(st));
        return 1;
    }
    return 0;
}
