/* testmodel: write Llama- or Qwen2-architecture GGUF models with random
 * weights (deterministic for a seed), for tests, comparisons with the peer
 * oracle and benchmarks. The vocabulary is copied from a vocabulary GGUF
 * (e.g. ../shared/fixtures/vocab/ggml-vocab-llama-spm.gguf) or, without one,
 * a small synthetic SentencePiece vocabulary is written (<unk>, <s>, </s>,
 * the 256 byte tokens <0x00>..<0xFF>, then made-up pieces). */
#ifndef GGSCOPE_TESTMODEL_H
#define GGSCOPE_TESTMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef struct {
    const char *arch;          /* "llama" or "qwen2" */
    uint32_t n_embd, n_layer, n_ff, n_head, n_head_kv;
    uint32_t n_ctx;            /* context_length written (default 2048) */
    uint32_t n_vocab;          /* synthetic vocabulary size (>= 259) when vocab == NULL */
    const gguf_file *vocab;    /* copy tokenizer.* from here (may be NULL) */
    uint32_t wtype;            /* ggml type of the matrices (attn, ffn, output) */
    int32_t embd_type;         /* type of token_embd; -1 = wtype */
    bool tied;                 /* no output.weight (tied embeddings) */
    bool rope_freqs;           /* write a Llama-3.1-style rope_freqs.weight */
    float rope_freq_base;      /* 0 = 10000 */
    float rope_scale_linear;   /* 0 = no rope scaling keys; else type linear + factor */
    float rms_eps;             /* 0 = 1e-5 */
    bool qkv_bias;             /* Q/K/V biases (always for qwen2) */
    uint64_t seed;
    /* Fill rows from a pool of 64 random rows per tensor shape (fast: for
     * the big benchmark model); false = every row drawn anew. */
    bool pooled_rows;
} testmodel_params;

/* Defaults: a tiny llama (n_embd 256, 2 layers, n_ff 256, 4 heads, 2 KV
 * heads, synthetic 300-token vocabulary, F32, seed 1). */
testmodel_params testmodel_default_params(void);

/* Write the model to `path`. Returns 0, or -1 with a message in msg. */
int testmodel_write(const testmodel_params *p, const char *path, char *msg, size_t cap);

#endif
