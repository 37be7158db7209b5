/* qrecipe: the quantize recipe: which type each tensor of a model gets for a
 * mix (q4_K_M, q8_0, ...) and --tensor-type style overrides, as llama.cpp's
 * llama_tensor_get_type does (docs/qerr.md, "The quantize recipe"). Policy
 * only: `ggscope quantize` (app/cmd_quantize.c) reads the options, checks
 * the file and writes it. */
#ifndef GGSCOPE_QRECIPE_H
#define GGSCOPE_QRECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef enum {
    QRECIPE_OK = 0,
    QRECIPE_EMIX,    /* unknown mix name */
    QRECIPE_ESPEC,   /* an override is not REGEX=TYPE with a TYPE that has a quantizer (or f32),
                      * or there are QRECIPE_MAX_OVERRIDES already */
    QRECIPE_EREGEX,  /* an override's REGEX does not compile */
    QRECIPE_ENOMEM
} qrecipe_status;

#define QRECIPE_MAX_OVERRIDES 32

typedef struct qrecipe qrecipe;

/* An empty recipe (no mix yet, no override); NULL when out of memory. */
qrecipe *qrecipe_new(void);
/* Frees the recipe; accepts NULL. */
void qrecipe_free(qrecipe *r);

/* Choose the mix by name, case-insensitive (the names of `ggscope quantize
 * --help`: f32 f16 bf16 q4_0 ... q4_K_M ... mxfp4). QRECIPE_EMIX (msg set)
 * when unknown; the mix is then unchanged. msg may be NULL. */
qrecipe_status qrecipe_set_mix(qrecipe *r, const char *name, char *msg, size_t cap);
/* Whether a mix was chosen; its name as listed ("q4_K_M") and its
 * general.file_type (llama_ftype). */
bool qrecipe_has_mix(const qrecipe *r);
const char *qrecipe_mix_name(const qrecipe *r);
uint32_t qrecipe_file_type(const qrecipe *r);

/* Add an override "REGEX=TYPE" (POSIX extended REGEX, split at the last '=';
 * TYPE a ggml type name with a quantizer, or f32): tensors whose name
 * matches get TYPE; the first matching override wins. QRECIPE_ESPEC,
 * QRECIPE_EREGEX or QRECIPE_ENOMEM with msg set on failure. */
qrecipe_status qrecipe_add_override(qrecipe *r, const char *spec, char *msg, size_t cap);

/* What the per-layer rules need of the model: its layer count and whether it
 * has an output.weight (without one, token_embd.weight is treated as it). */
void qrecipe_set_model(qrecipe *r, int n_layer, bool has_output);
/* qrecipe_set_model from a file: the layer count is ARCH.block_count, or
 * (when absent or 0) one more than the highest layer in the tensor names. */
void qrecipe_fit(qrecipe *r, const gguf_file *f);

/* The type tensor t (named name) gets: its own type for integer tensors
 * (copied), F32 for 1-D tensors, norms and names not ending in ".weight",
 * else the first matching override or the mix's rule, then the fallback
 * when the type's block does not divide a row (q2_K q3_K iq4_xs tq* ->
 * iq4_nl, q4_K -> q5_0, q5_K -> q5_1, q6_K -> q8_0, f16 when that still does
 * not fit). A mix must have been chosen. */
uint32_t qrecipe_type(const qrecipe *r, const gguf_tensor *t, const char *name);

#endif
