/* runner: a model running on a backend chosen by policy, for every engine
 * command and the chat: the backend choice (--backend auto|vulkan|cpu,
 * --device, threads), the weight upload, the session, evaluation with the
 * fall back to the CPU when the device fails, and the one generation loop
 * (prompt, sample, stop).
 *
 * Never prints: errors are a status code and a message in a caller-owned
 * buffer (msg, cap; msg may be NULL); what the caller may show (which
 * backend runs and why, the fallback notice) is returned as text.
 *
 * A runner is used by one thread at a time (runner_cancel excepted). */
#ifndef GGSCOPE_RUNNER_H
#define GGSCOPE_RUNNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "model.h"
#include "sampler.h"
#include "session.h"
#include "tokenizer.h"

enum {
    RUNNER_OK = 0,
    RUNNER_EBACKEND = -1,   /* the backend asked for cannot run (message says why) */
    RUNNER_ESESSION = -2,   /* the session cannot be made (session_new's message) */
    RUNNER_EEVAL = -3,      /* an evaluation failed */
    RUNNER_ESAMPLE = -4,    /* bad sampling parameters, or logits not finite */
    RUNNER_ENOMEM = -5,
    RUNNER_ECALLBACK = -6,  /* on_token asked to stop with an error */
    RUNNER_EARG = -7,       /* the prompt does not fit the context */
    RUNNER_ECANCELLED = -8, /* runner_open: p->cancel was set while the weights were copied */
};

typedef struct runner runner;

/* Where the CPU backend reads the weights from (runner_params.weights). */
typedef enum {
    RUNNER_WEIGHTS_AUTO = 0, /* a copy (model_copy) for a dense model whose copy takes at most half the
                              * available memory; else the file mapping */
    RUNNER_WEIGHTS_COPY,     /* a copy in memory, whatever the model (the mapping when the copy fails) */
    RUNNER_WEIGHTS_MAP,      /* the file mapping, in place */
} runner_weights;

typedef struct {
    const char *backend;   /* "auto" (or NULL), "vulkan", "cpu" */
    int device;            /* Vulkan device index; -1: GGSCOPE_VK_DEVICE or the automatic choice */
    int threads;           /* CPU threads (0 = one per core) */
    uint32_t n_ctx;        /* context positions (0 = session default) */
    runner_weights weights;/* the CPU backend's weights: copied into memory or mapped */
    /* (optional) progress of the weights' upload to a device or copy into
     * memory, bytes; called on the opening thread */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    const atomic_bool *cancel; /* (optional) set: the copy stops and runner_open returns RUNNER_ECANCELLED */
    /* (optional) the fallback notice, called on the evaluating thread when it
     * happens (also kept for runner_take_notice) */
    void (*notice)(void *ctx, const char *text);
    void *ctx;
} runner_params;

/* Open `m` (which must outlive the runner) on the backend p->backend asks for:
 *  - cpu: the CPU backend;
 *  - vulkan: the Vulkan backend, or RUNNER_EBACKEND when there is no
 *    driver, no usable device, or the model has a type it cannot run (or
 *    this build has no Vulkan backend);
 *  - auto: Vulkan when a hardware device exists (or a software one was
 *    asked for by index) and the model's types are supported, else the CPU.
 * On a device, the weights are uploaded (p->progress). On the CPU, they
 * are copied into memory or used from the mapping as p->weights says
 * (p->progress; a failed copy keeps the mapping); runner_backend_info says
 * which, and why in auto. Then a session of
 * p->n_ctx positions. Returns RUNNER_OK with *out set, or a RUNNER_E* code
 * with a message in msg (*out NULL): RUNNER_EBACKEND ("--backend vulkan:
 * no Vulkan driver ..."), RUNNER_ESESSION (session_new's message; a
 * shape-only model, model_load_shapes). */
int runner_open(model *m, const runner_params *p, runner **out, char *msg, size_t cap);
/* What --backend auto chooses (device: as p->device), without opening it:
 * true for a Vulkan device, false for the CPU with why in why. */
bool runner_auto_vulkan(int device, char *why, size_t cap);

/* Free the session, the device copies of the weights and the backend; accepts NULL. */
void runner_close(runner *r);

/* Which backend runs and, when auto chose the CPU, why: "vulkan on NAME
 * (discrete, device 0)", "cpu, 4 threads (auto: no Vulkan device)". */
const char *runner_backend_info(const runner *r);
/* One line describing a backend ("vulkan on NAME (discrete, device 0)",
 * "cpu, 2 threads") into buf. */
void runner_describe_backend(const backend *b, char *buf, size_t cap);

/* The current backend and session: they change when the device fails
 * (runner_eval), so do not keep them across evaluations. */
backend *runner_backend(const runner *r);
session *runner_session(const runner *r);
/* Context positions and KV cache bytes (the same after a fallback). */
/* runner_n_ctx, runner_kv_bytes, runner_backend_info, runner_cancel and
 * runner_take_notice accept NULL (no runner: the remote chat): 0, "no local
 * backend", nothing. */
uint32_t runner_n_ctx(const runner *r);
uint64_t runner_kv_bytes(const runner *r);
uint32_t runner_n_vocab(const runner *r);

/* The tokens of the cached positions: *n = session_used. */
const int32_t *runner_cached(const runner *r, uint32_t *n);
/* Keep the first n_keep cached positions. */
void runner_truncate(runner *r, uint32_t n_keep);

/* Ask a running evaluation (another thread) to stop, as session_cancel. Thread-safe. */
void runner_cancel(runner *r);

/* session_eval (same arguments, same codes), remembering the token of each
 * cached position; when a non-CPU backend fails with a device error
 * (BACKEND_EDEVICE, BACKEND_ENOMEM), switches to a new CPU backend and
 * session, re-evaluates the cached tokens there and retries, so that the
 * work survives; the notice ("the vulkan backend failed (...); continuing
 * on the CPU") goes to p->notice and runner_take_notice. On failure msg
 * gets "evaluation failed: WHY". */
int runner_eval(runner *r, const int32_t *tokens, uint32_t n, uint32_t pos, float *logits, bool all,
                char *msg, size_t cap);

/* Replace p->notice and its context (fn NULL: none; runner_take_notice still works). */
void runner_set_notice(runner *r, void (*fn)(void *ctx, const char *text), void *ctx);
/* The fallback notice not yet taken, copied into buf: true once per fallback. */
bool runner_take_notice(runner *r, char *buf, size_t cap);

/* ---- generation ---- */

typedef enum {
    RUNNER_STOP_EOG = 0,   /* an end-of-generation token */
    RUNNER_STOP_LIMIT,     /* n_predict tokens */
    RUNNER_STOP_CTX,       /* the context is full */
    RUNNER_STOP_CANCEL,    /* the cancel flag was set */
    RUNNER_STOP_ERROR,
} runner_stop;

typedef struct {
    sampler_params sp;
    int32_t n_predict;        /* most tokens to generate; < 0: until the context is full */
    uint32_t ctx_reserve;     /* positions left unused at the end of the context */
    uint32_t prompt_chunk;    /* prompt tokens per evaluation between cancel checks; 0: all at once */
    const tok_vocab *eog;     /* stop after an end-of-generation token of this vocabulary (NULL: never) */
    bool want_info;           /* fill the sampler_result given to on_token (else NULL) */
    /* each token sampled (the end-of-generation one too); nonzero stops with RUNNER_ECALLBACK */
    int (*on_token)(void *ctx, int32_t token, const sampler_result *sr);
    void *ctx;
    const atomic_bool *cancel;   /* polled before every token and prompt chunk (may be NULL) */
    unsigned delay_ms;           /* sleep after each token (tests: slow generation down) */
    /* (optional) prompt evaluation progress: called before the first prompt
     * chunk with done = 0 and after each chunk; total = the prompt tokens
     * evaluated now (the reused prefix not counted) */
    void (*on_prompt)(void *ctx, uint32_t done, uint32_t total);
} runner_gen;

/* Figures of one generation. */
typedef struct {
    uint32_t n_prompt;    /* prompt tokens */
    uint32_t n_reused;    /* of which already in the KV cache */
    uint32_t n_eval;      /* prompt tokens evaluated now */
    uint32_t n_gen;       /* tokens sampled */
    double t_prompt_s;    /* from the start to the end of the prompt */
    double t_first_s;     /* from the start to the first token sampled */
    double t_gen_s;       /* from the first token to the end */
    runner_stop stop;
} runner_stats;

/* Generate after prompt ids[0..n): the cached tokens are compared with ids,
 * the cache is truncated to the common prefix and only the rest is
 * evaluated (runner_eval: with the fallback); then tokens are sampled
 * (every prompt token in the penalty window) and evaluated until an
 * end-of-generation token, n_predict, the end of the context, or the
 * cancel flag. Returns RUNNER_OK (also when cancelled), or a RUNNER_E*
 * code with a message. *st (may be NULL) is filled in both cases. */
int runner_generate(runner *r, const int32_t *ids, uint32_t n, const runner_gen *g, runner_stats *st,
                    char *msg, size_t cap);

#endif
