/* testmodel: write random-weight GGUF models (deterministic for a seed) of
 * the dense families llama, qwen2, qwen3, gemma3, phi3, smollm3, olmo2,
 * granite and mistral3 and of the mixture-of-experts ones (llama with
 * experts = Mixtral, qwen3moe, gpt-oss), with exactly the keys and tensors
 * llama.cpp's loader expects of each, for tests, comparisons with the peer
 * oracle and benchmarks. The vocabulary is copied from a vocabulary GGUF
 * (e.g. ../shared/fixtures/vocab/ggml-vocab-llama-spm.gguf;
 * testmodel_arch_vocab names the one that fits a family; for gpt-oss a
 * vocabulary without the Harmony tokens becomes an o200k_harmony stand-in:
 * pre-tokenizer gpt-4o, <|startoftext|> <|endoftext|> <|return|>
 * <|constrain|> <|channel|> <|start|> <|end|> <|message|> <|call|> appended
 * as control tokens where missing, bos <|startoftext|>, eos <|return|>) or,
 * without one, a small synthetic SentencePiece vocabulary is written (<unk>,
 * <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then made-up pieces). */
#ifndef GGSCOPE_TESTMODEL_H
#define GGSCOPE_TESTMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef struct {
    const char *arch;          /* a family name: testmodel_arch_name(i) */
    uint32_t n_embd, n_layer, n_ff, n_head, n_head_kv;
    uint32_t n_ctx;            /* context_length written (default 2048) */
    uint32_t n_vocab;          /* synthetic vocabulary size (>= 259) when vocab == NULL */
    const gguf_file *vocab;    /* copy tokenizer.* from here (may be NULL) */
    uint32_t wtype;            /* ggml type of the matrices (attn, ffn, output) */
    int32_t embd_type;         /* type of token_embd; -1 = wtype */
    bool tied;                 /* no output.weight (tied embeddings; not olmo2) */
    bool rope_freqs;           /* a Llama-3.1-style rope_freqs.weight (llama, granite, mistral3) */
    float rope_freq_base;      /* 0 = 10000 */
    float rope_scale_linear;   /* 0 = no rope scaling keys; else type linear + factor */
    float rms_eps;             /* 0 = 1e-5 */
    bool qkv_bias;             /* Q/K/V biases (always for qwen2; phi3: attn_qkv.bias) */
    uint64_t seed;
    /* Fill rows from a pool of 64 random rows per tensor shape (fast: for
     * the big benchmark model); false = every row drawn anew. */
    bool pooled_rows;
    /* tokenizer.chat_template (NULL: the vocabulary file's, if any) */
    const char *chat_template;

    /* Family fields: testmodel_arch_params fills them per family; llama and
     * qwen2 take none (they must stay 0 / false there), the other families
     * only those marked with their name. A 0 means "key not written" unless
     * said otherwise; keys are named "ARCH.<key>". */
    uint32_t head_dim;         /* qwen3, gemma3, smollm3, mistral3: attention.key_length and
                                  value_length; may differ from n_embd / n_head (the
                                  projections are then n_head * head_dim wide); 0 = n_embd /
                                  n_head, keys not written */
    uint32_t n_rot;            /* phi3: rope.dimension_count below the head size (partial
                                  rotary, e.g. Phi-4-mini); 0 = the head size */
    uint32_t n_ctx_orig;       /* rope.scaling.original_context_length (new families) */
    float rope_scale_yarn;     /* new families: rope.scaling.type yarn + factor (not with
                                  rope_scale_linear) */
    float yarn_beta_fast;      /* with yarn: rope.scaling.yarn_beta_fast (llama.cpp: 32) */
    float yarn_beta_slow;      /* with yarn: rope.scaling.yarn_beta_slow (llama.cpp: 1) */
    float yarn_log_mul;        /* with yarn: rope.scaling.yarn_log_multiplier */
    float rope_attn_factor;    /* rope.scaling.attn_factor (new families); phi3 with
                                  rope_factors: 0 = the converter's value,
                                  sqrt(1 + ln(n_ctx / n_ctx_orig) / ln(n_ctx_orig)) */
    bool rope_factors;         /* phi3: rope_factors_long / _short.weight [n_rot / 2] */
    uint32_t sliding_window;   /* gemma3, olmo2 (OLMo-3 files): attention.sliding_window;
                                  phi3 writes it always, even 0 (llama.cpp ignores it) */
    uint32_t swa_pattern;      /* gemma3: attention.sliding_window_pattern as a u32 (0 = not
                                  written: llama.cpp's 6, every 6th layer full); olmo2 with a
                                  sliding window: the same key as a bool array, layer il
                                  sliding iff il % n < n - 1 (0 = 4, the converter's rule) */
    float rope_freq_base_swa;  /* gemma3, olmo2: rope.freq_base_swa (gemma3 default 10000) */
    float logit_softcap;       /* gemma3: final_logit_softcapping */
    float embedding_scale;     /* granite: embedding_scale */
    float residual_scale;      /* granite: residual_scale */
    float attention_scale;     /* granite: attention.scale */
    float logit_scale;         /* granite: logit_scale (required there: never 0) */
    float attn_temp_scale;     /* mistral3: attention.temperature_scale */
    bool out_bias;             /* granite, mistral3: attn_output.bias, ffn_{gate,up,down}.bias */

    /* Mixture of experts: llama with n_expert > 0 (Mixtral: experts n_ff wide),
     * qwen3moe and gpt-oss (always). Keys expert_count, expert_used_count. */
    uint32_t n_expert;         /* experts per layer (<= 1024) */
    uint32_t n_expert_used;    /* experts per token, 1..n_expert */
    uint32_t expert_ff;        /* qwen3moe, gpt-oss: expert_feed_forward_length, the experts'
                                  width (gpt-oss: required; qwen3moe 0 = key absent, width
                                  n_ff / n_expert_used as llama.cpp falls back) */
    int32_t expert_type;       /* type of ffn_{gate,up,down}_exps; -1 = wtype, except gpt-oss:
                                  MXFP4 when wtype is a quantized type (unused without
                                  experts) */
    /* Matrix types by llama-quantize's Q4_K_M mix (Q4_K; Q6_K output and attn_v /
     * ffn_down(_exps) on its use_more_bits layers; 8 experts: attn_k / attn_v Q8_0,
     * attn_output Q5_K; the router stays F32): wtype, embd_type and expert_type
     * are then ignored. */
    bool q4_K_M;
    /* Quantized matrices of the types Q4_0 Q5_0 Q8_0 Q4_K Q5_K Q6_K MXFP4 as random
     * blocks written directly (no float rows, no quantizer; other types as without
     * it): random quants, f16 scales / E8M0 exponents chosen so that the values have
     * the usual spread (finite, normal f16 scales of 2^-12 or more). For the
     * multi-gigabyte benchmark files; norms, biases and the router stay as
     * without it. */
    bool fast_random;
} testmodel_params;

/* Defaults: a tiny llama (n_embd 256, 2 layers, n_ff 256, 4 heads, 2 KV
 * heads, synthetic 300-token vocabulary, F32, seed 1, expert_type -1). */
testmodel_params testmodel_default_params(void);

/* The defaults of a family: the tiny llama's shapes and weights with what
 * the family needs to show its features (llama and qwen2: exactly
 * testmodel_default_params with that arch):
 *   qwen3    head_dim 128 (QD 512 != n_embd), rope base 1e6, eps 1e-6
 *   gemma3   6 layers (5 sliding, 1 full), 1 KV head, head_dim 128, n_ff 512,
 *            sliding_window 16, rope base 1e6, eps 1e-6, tied
 *   phi3     fused attn_qkv and ffn_up, rope_factors long/short, n_ctx 4096,
 *            n_ctx_orig 1024, sliding_window 0
 *   smollm3  4 layers (layer 3 has no rope: llama.cpp's fixed step of 4, there
 *            is no key), rope base 5e6, eps 1e-6
 *   olmo2    no pre-norms, post-norms, whole-projection Q/K norms, output.weight,
 *            rope base 5e5, eps 1e-6
 *   granite  embedding 12, residual 0.22, attention 0.015625, logit 8
 *   mistral3 yarn factor 4, n_ctx_orig 32 (a 64-token prompt crosses it),
 *            beta fast 32 / slow 1, log_mul 1, temperature_scale 0.1, base 1e6
 *   qwen3moe qwen3's, with 8 experts, 2 used, expert_ff 256
 *   gpt-oss  8 heads, 2 KV heads, head_dim 64 (QD 512), 32 experts, 4 used,
 *            expert_ff 256, sliding_window 128 (even layers), rope base 150000,
 *            yarn factor 32, n_ctx_orig 4096 (the published files' keys), q/k/v/o
 *            biases, attn_sinks, router and expert biases, output.weight
 * Only gemma3 ties the output by default (tied models predict their input
 * token with a large logit). An unknown arch gives the llama defaults with arch NULL. */
testmodel_params testmodel_arch_params(const char *arch);

/* The i-th family name (0 = "llama"), NULL past the last. */
const char *testmodel_arch_name(size_t i);

/* The file name in ../shared/fixtures/vocab of the vocabulary that suits
 * `arch` (e.g. "ggml-vocab-qwen2.gguf"), NULL for an unknown arch;
 * *stand_in (may be NULL) is set when it only stands in for the family's own
 * tokenizer (gemma3, mistral3: llama-spm; olmo2, granite: gpt-2). */
const char *testmodel_arch_vocab(const char *arch, bool *stand_in);

/* Write the model to `path`. Returns 0, or -1 with a message in msg. */
int testmodel_write(const testmodel_params *p, const char *path, char *msg, size_t cap);

#endif
