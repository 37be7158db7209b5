/* session: one inference context on a model: F16 KV cache, scratch buffers,
 * and the forward pass as a sequence of backend ops.
 *
 * A session is used by one thread at a time (the chat's worker thread);
 * session_cancel may be called from any thread. */
#ifndef GGSCOPE_SESSION_H
#define GGSCOPE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "model.h"

typedef struct session session;

typedef struct {
    uint32_t n_ctx;       /* KV cache positions (0 = min(model's context_length, 4096)) */
    uint32_t n_batch;     /* max tokens per forward chunk (0 = 512, llama.cpp's ubatch) */
    int n_threads;        /* CPU threads when the session makes its own CPU backend (0 = all cores) */
    backend *be;          /* backend to use (not owned), or NULL: a CPU backend of n_threads */
} session_params;

/* Counters of a session (for speed figures and for checking prefix reuse). */
typedef struct {
    uint64_t n_prompt_tokens;  /* tokens evaluated in calls with n > 1 */
    uint64_t n_gen_tokens;     /* tokens evaluated in calls with n == 1 */
    uint64_t n_evals;          /* successful session_eval calls */
    double t_prompt_s;         /* wall time spent in those calls */
    double t_gen_s;
} session_stats;

/* The sizes a session of `m` allocates (session_new sizes its buffers from
 * this, and the memory estimate, engine/run/memest, reads it): element
 * counts of each buffer. */
typedef struct {
    uint32_t n_ctx, n_batch;   /* after the defaults (n_batch <= n_ctx) */
    uint32_t n_swa_cells;      /* rows of a sliding layer's ring (0: sliding layers keep n_ctx rows) */
    uint32_t logit_rows;       /* rows of the logits buffer (the output head's products) */
    uint64_t kv;               /* F16 elements of the K cache (the V cache has as many) */
    uint64_t f32;              /* F32 elements of the scratch buffers (x, xb, q, att, k, v, g, u,
                                * logits, and the experts' router, weights and outputs) */
    uint64_t host_bytes;       /* host arrays beside them: positions, chosen experts */
} session_plan;

/* Fill *out with the sizes of a session of `m` with parameters p (NULL:
 * the defaults); p->be is not used. Returns 0, or -1 when a size
 * overflows. */
int session_plan_make(const model *m, const session_params *p, session_plan *out);

/* Rows of layer il's KV cache under plan pl: n_ctx, or the ring of a sliding layer. */
uint32_t session_plan_layer_rows(const model *m, const session_plan *pl, uint32_t il);

/* Create a session for `m` (which must outlive it). On a backend with
 * weight_prepare (Vulkan) the model must have been prepared for that backend
 * (model_prepare) and stay so while the session lives. Returns NULL on
 * failure with a message in msg (if not NULL); a shape-only model
 * (model_load_shapes) is refused. */
session *session_new(const model *m, const session_params *p, char *msg, size_t cap);

/* Free; accepts NULL. Frees the backend only when the session made it. */
void session_free(session *s);

/* Evaluate tokens[0..n-1] at positions pos..pos+n-1. `pos` must be <= the
 * number of cached positions (session_used): positions from pos on are
 * overwritten (the cache is truncated to pos first). Token ids must be
 * < n_vocab and pos + n <= n_ctx.
 * logits: when not NULL, receives n_vocab floats of the last token, or, when
 * `all` is true, n * n_vocab floats (row i = logits after token i).
 * Returns 0, or a negative BACKEND_E* code (BACKEND_ECANCELLED when
 * session_cancel was called; the cache then holds positions < pos only).
 * On failure the message is available from session_error. */
int session_eval(session *s, const int32_t *tokens, uint32_t n, uint32_t pos, float *logits,
                 bool all);

/* Keep only the first n_keep cached positions (prefix reuse); n_keep larger
 * than the used count is clamped. */
void session_kv_truncate(session *s, uint32_t n_keep);

/* Ask a running session_eval (on another thread) to stop at the next layer
 * boundary; it then returns BACKEND_ECANCELLED. The flag is cleared whenever
 * a session_eval returns; a cancel made while no eval runs stops the next one.
 * Thread-safe. */
void session_cancel(session *s);

uint32_t session_n_ctx(const session *s);
uint32_t session_used(const session *s);       /* cached positions */
uint32_t session_n_vocab(const session *s);
session_stats session_get_stats(const session *s);
void session_reset_stats(session *s);
/* Bytes of the KV cache. */
uint64_t session_kv_bytes(const session *s);
/* The last error message ("" when none). */
const char *session_error(const session *s);

#endif
