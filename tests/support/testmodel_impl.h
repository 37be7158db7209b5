/* testmodel's private declarations, shared by testmodel.c (families, keys,
 * tensor lists), testmodel_fill.c (random tensor data) and testmodel_vocab.c
 * (the tokenizer keys). Not for the tests: they use testmodel.h. */
#ifndef GGSCOPE_TESTMODEL_IMPL_H
#define GGSCOPE_TESTMODEL_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "testmodel.h"

/* What a tensor holds (how testmodel__fill draws its values). */
enum {
    TESTMODEL__MATRIX,     /* uniform, std `scale` (random blocks with fast_random) */
    TESTMODEL__NORM,       /* 1 +- 0.25 */
    TESTMODEL__BIAS,       /* uniform, std `scale` (always as floats) */
    TESTMODEL__ROPE_FREQS, /* 1 .. 4.5 */
    TESTMODEL__ROPE_LONG,  /* rising, as Phi-3's long factors */
    TESTMODEL__ROPE_SHORT, /* near 1 */
};

typedef struct {
    char name[64];
    uint32_t type;
    uint64_t ne0, ne1, ne2; /* ne1 = 1 for vectors, ne2 = 1 below 3-D */
    uint32_t n_dims;
    int kind;               /* TESTMODEL__* */
    float scale;            /* std of the random values */
} testmodel__tensor;

typedef struct {
    const testmodel_params *p;
    testmodel__tensor *t;
    uint32_t n, cap;
    int err;
} testmodel__maker;

/* gguf_writer_write's callback: the data of tensor i of the maker `user`
 * (rows of ne0 values drawn from (seed, tensor, row); with fast_random,
 * TESTMODEL__MATRIX tensors of a type testmodel__fast_type knows are random
 * blocks with sane scales instead). Returns 0, or -1 (bad size, no memory,
 * a type without a quantizer). */
int testmodel__fill(void *user, uint64_t i, void *dst, uint64_t size);

/* Whether fast_random writes `type` as random blocks (Q4_0 Q5_0 Q8_0 Q4_K
 * Q5_K Q6_K MXFP4); other types go through floats and the quantizer. */
bool testmodel__fast_type(uint32_t type);

/* The vocabulary size of the file: p->vocab's token count (plus the Harmony
 * tokens it lacks when `harmony`), else p->n_vocab (>= 259). Returns NULL,
 * or what is wrong. */
const char *testmodel__vocab_size(const testmodel_params *p, bool harmony, uint32_t *n);

/* The tokenizer.* keys: copied from p->vocab (without its chat template when
 * p->chat_template replaces it), with `harmony` (gpt-oss) and a vocabulary
 * without <|start|>: the o200k_harmony stand-in (pre-tokenizer gpt-4o, the
 * Harmony special tokens appended as control tokens, bos <|startoftext|>,
 * eos <|return|>, padding <|endoftext|>); without p->vocab the synthetic
 * SentencePiece vocabulary of p->n_vocab tokens. */
gguf_status testmodel__write_vocab(gguf_writer *w, const testmodel_params *p, bool harmony);

#endif
