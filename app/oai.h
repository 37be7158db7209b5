/* oai: the text of the OpenAI-compatible chat API (llama-server, vLLM,
 * Ollama), without any I/O: server-sent events framed incrementally, the
 * objects of a streamed /v1/chat/completions reply (chat.completion.chunk)
 * parsed, the request body built, a /v1/models list and an error body read.
 * Everything the server sends is untrusted: sizes are bounded, strings are
 * copied, numbers are checked. Any thread; no globals.
 *
 * Streaming: bytes arrive in pieces cut anywhere (inside a line, between CR
 * and LF, inside a UTF-8 character); oai_sse_feed holds the unfinished event
 * and hands each complete one to a callback. */
#ifndef GGSCOPE_OAI_H
#define GGSCOPE_OAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- server-sent events ---- */

/* The largest event oai_sse_feed holds (bytes of its data lines). */
#define OAI_SSE_MAX_EVENT (4u << 20)

/* One event: its data lines joined with "\n". `error` is set when the event
 * came as "error: ..." lines (llama-server's form for an error in the middle
 * of a stream) instead of "data: ...". */
typedef struct {
    const char *data;
    size_t len;
    bool error;
} oai_event;

typedef void (*oai_event_fn)(void *ud, const oai_event *ev);

typedef struct {
    char *line;           /* the line being read */
    size_t llen, lcap;
    char *data;           /* the event being assembled */
    size_t dlen, dcap;
    bool has_data;        /* a data (or error) line was seen */
    bool error;
    bool cr;              /* the last byte was CR (an LF right after it ends nothing) */
    bool too_big;
} oai_sse;

void oai_sse_init(oai_sse *s);
void oai_sse_free(oai_sse *s);
/* Feed bytes; each complete event goes to fn (in order, before the call
 * returns). Returns 0, or -1 when out of memory or an event grew over
 * OAI_SSE_MAX_EVENT (the stream cannot be trusted any further). */
int oai_sse_feed(oai_sse *s, const char *p, size_t n, oai_event_fn fn, void *ud);
/* Whether bytes of an unfinished event are held (the stream was cut). */
bool oai_sse_pending(const oai_sse *s);

/* ---- a streamed reply's chunk ---- */

#define OAI_TOP_MAX 8      /* alternatives kept per token */
#define OAI_TEXT_MAX 64    /* bytes kept of a token's text (logprobs) */

typedef struct {
    char text[OAI_TEXT_MAX + 1];   /* NUL-terminated; may be cut */
    size_t len;                    /* bytes of the token (not cut) */
    int32_t id;                    /* the server's token id, -1 when not given */
    float logprob;
} oai_tok;

typedef struct {
    oai_tok tok;
    int n_top;
    oai_tok top[OAI_TOP_MAX];
} oai_logprob;

typedef struct {
    bool done;               /* "data: [DONE]" */
    char *content;           /* choices[0].delta.content (malloc'd, NULL: none) */
    size_t content_len;
    char *reasoning;         /* choices[0].delta.reasoning_content (or .reasoning) */
    size_t reasoning_len;
    char finish[32];         /* choices[0].finish_reason, "" when null or absent */
    bool has_usage;          /* usage: prompt_tokens, completion_tokens */
    uint32_t prompt_tokens, completion_tokens;
    bool has_timings;        /* llama-server's timings (ms) */
    double prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n;
    char error[256];         /* an error object's message, one line ("" none) */
    oai_logprob *lp;         /* choices[0].logprobs.content[] (malloc'd) */
    size_t n_lp;
    char model[128];         /* "model", when given */
} oai_chunk;

/* Parse one event of a streamed reply. 0 with *out filled (free with
 * oai_chunk_free), or -1 with one line in msg (not JSON, not an object).
 * An event flagged `error`, or an object with an "error" member, fills
 * out->error. */
int oai_chunk_parse(const oai_event *ev, oai_chunk *out, char *msg, size_t cap);
void oai_chunk_free(oai_chunk *c);

/* ---- the request ---- */

typedef struct {
    const char *role;     /* "system", "user", "assistant" */
    const char *content;
    size_t len;
} oai_msg;

typedef struct {
    const char *model;        /* NULL or "": not sent (the server's default) */
    double temperature, top_p, min_p, repeat_penalty;
    int32_t top_k;            /* sent when > 0 */
    int32_t max_tokens;       /* sent when > 0 */
    bool have_seed;
    uint64_t seed;
    int top_logprobs;         /* > 0: "logprobs": true, "top_logprobs": N */
} oai_params;

/* The JSON body of a streamed /v1/chat/completions request (malloc'd,
 * NUL-terminated), NULL when out of memory. Message text is sent as it is
 * (invalid UTF-8 replaced). min_p and repeat_penalty (llama.cpp's names)
 * are sent when they are not neutral (> 0; != 1). */
char *oai_request_json(const oai_msg *m, size_t n, const oai_params *p);

/* ---- other bodies ---- */

/* The model ids of a /v1/models body ({"data": [{"id": ...}, ...]}, or
 * Ollama's {"models": [{"name"|"model": ...}]}): *ids is malloc'd, an array
 * of *n malloc'd strings (free with oai_models_free). 0, or -1 with a line. */
int oai_models_parse(const char *body, size_t len, char ***ids, size_t *n, char *msg, size_t cap);
void oai_models_free(char **ids, size_t n);

/* The context size a /v1/models body gives for model `id` (NULL or "": the
 * first listed): vLLM's "max_model_len", or llama-server's "meta": its
 * "n_ctx" (newer servers: the slot's context), else "n_ctx_train" (the
 * model's training context); 0 when absent (Ollama) or not a count. */
uint32_t oai_models_n_ctx(const char *body, size_t len, const char *id);

/* The context size in llama-server's /props body
 * (default_generation_settings.n_ctx, or n_ctx), 0 when absent. */
uint32_t oai_props_n_ctx(const char *body, size_t len);

/* The message of an error body ({"error": {"message": ...}} or {"error":
 * "..."} or {"message": ...}; else the body's first line), one line fit for
 * a terminal, in out (capacity cap). */
void oai_error_text(const char *body, size_t len, char *out, size_t cap);

#endif
