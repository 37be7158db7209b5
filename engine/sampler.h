/* sampler: choose the next token from logits.
 *
 * Chain (as llama.cpp's default order): repetition penalty over the last
 * `repeat_last_n` accepted tokens -> top-k -> top-p -> min-p -> temperature
 * -> a draw from the remaining candidates with the sampler's own PRNG
 * (xoshiro256**, seeded with `seed`): the same seed, logits and history give
 * the same tokens on every machine. temp <= 0 means greedy (argmax, lowest
 * id on ties) after the penalty. */
#ifndef GGSCOPE_SAMPLER_H
#define GGSCOPE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    float temp;             /* <= 0: greedy; default 0.8 */
    int32_t top_k;          /* <= 0: off; default 40 */
    float top_p;            /* >= 1: off; default 0.95 */
    float min_p;            /* <= 0: off; default 0.05 */
    float repeat_penalty;   /* 1: off; default 1.1 */
    int32_t repeat_last_n;  /* window of the penalty; default 64 */
    uint64_t seed;          /* default 42 */
} sampler_params;

#define SAMPLER_N_ALT 5

/* What the token inspector shows about one choice. Probabilities are those
 * of the full distribution softmax(penalized logits / T) (T = 1 when greedy),
 * before truncation by top-k/p/min-p. Entropy in nats. */
typedef struct {
    int32_t token;
    float prob;                       /* of the chosen token */
    float entropy;
    int32_t n_alt;                    /* <= SAMPLER_N_ALT */
    int32_t alt_id[SAMPLER_N_ALT];    /* most probable tokens, best first */
    float alt_prob[SAMPLER_N_ALT];
    int32_t n_candidates;             /* tokens left after top-k/p/min-p */
} sampler_result;

typedef struct sampler sampler;

/* Defaults listed in sampler_params. */
sampler_params sampler_default_params(void);

/* A sampler for a vocabulary of n_vocab tokens; NULL on failure or bad params. */
sampler *sampler_new(const sampler_params *p, uint32_t n_vocab);
void sampler_free(sampler *s);   /* accepts NULL */

/* Record a token in the penalty window (prompt tokens and chosen tokens). */
void sampler_accept(sampler *s, int32_t token);
/* Forget the window and re-seed the PRNG with the original seed. */
void sampler_reset(sampler *s);

/* Choose a token from n_vocab logits (not modified). Fills *out when not NULL.
 * Does NOT accept the token (call sampler_accept). Returns the token, or -1
 * when the logits are unusable (all NaN / -inf). */
int32_t sampler_sample(sampler *s, const float *logits, sampler_result *out);

/* The PRNG alone (for tests): next 64-bit value / uniform double in [0, 1). */
uint64_t sampler_rand_u64(sampler *s);
double sampler_rand_unit(sampler *s);

#endif
