/* chatsession: a conversation with a model on the engine, without a
 * terminal: the transcript, rendering with the chat template, fitting the
 * context (dropping the oldest turns), prefix reuse of the KV cache,
 * generation with per-token sampling information, save / load.
 *
 * Threads. A chs has two sides:
 *   - the conversation side (messages, settings, rendering, save/load:
 *     every function not marked "worker") is used by one thread, the UI's
 *     loop thread;
 *   - the engine side (chs_generate, chs_held) uses the runner (its
 *     session and the tokens it holds). It is called by one thread at a time (the
 *     generation worker) and never while the conversation side changes the
 *     settings it was handed: chs_generate takes its settings by copy and
 *     its prompt as an array, so the loop thread may keep editing messages
 *     while a reply is generated.
 * The tokenizer and the template are immutable after chs_new. */
#ifndef GGSCOPE_CHATSESSION_H
#define GGSCOPE_CHATSESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat.h"
#include "gguf.h"
#include "sampler.h"
#include "runner.h"
#include "tokenizer.h"

/* Sampling information of one generated token (the token inspector). */
typedef struct {
    int32_t id;
    uint32_t off, len;        /* bytes of the reply's text this token produced */
    float prob, entropy;
    float t_s;                /* seconds from the start of the reply (chs_generate) to its sampling */
    int32_t n_alt;
    int32_t alt_id[SAMPLER_N_ALT];
    float alt_prob[SAMPLER_N_ALT];
} chs_tokinfo;

/* Why a reply ended. */
typedef enum {
    CHS_STOP_EOG = 0,     /* end-of-generation token (EOS, EOT, the template's end of turn) */
    CHS_STOP_LIMIT,       /* n_predict tokens */
    CHS_STOP_CTX,         /* the context is full */
    CHS_STOP_CANCEL,      /* the cancel flag was set */
    CHS_STOP_ERROR,
} chs_stop;

/* Figures of one reply. */
typedef struct {
    uint32_t n_prompt;    /* prompt tokens */
    uint32_t n_reused;    /* of which already in the KV cache */
    uint32_t n_eval;      /* prompt tokens evaluated now (n_prompt - n_reused) */
    uint32_t n_gen;       /* tokens generated */
    double t_prompt_s;    /* prompt evaluation */
    double t_first_s;     /* from the start to the first token sampled */
    double t_gen_s;       /* from the first token to the end */
    chs_stop stop;
} chs_reply_stats;

typedef struct {
    char *role;           /* "user", "assistant" (the system prompt is separate) */
    char *content;
    size_t len;
    bool dropped;         /* left out of the prompt to fit the context */
    chs_tokinfo *toks;    /* assistant replies generated here (else NULL) */
    size_t n_toks;
    bool has_stats;
    chs_reply_stats st;
    uint64_t id;          /* unique within the chs (caches of the UI) */
} chs_msg;

typedef struct {
    sampler_params sp;
    int32_t n_predict;    /* max tokens per reply (<= 0: until the context is full) */
} chs_settings;

typedef struct chs chs;

/* A conversation on runner `r` (not owned; it and `f` must outlive the
 * chs). Loads the tokenizer and the chat template of `f`. NULL with a
 * message in msg on failure (no tokenizer, out of memory). */
chs *chs_new(const gguf_file *f, runner *r, char *msg, size_t cap);
/* A conversation without a model (the remote chat: a server renders and
 * generates): messages, settings, save and load work; chs_vocab and
 * chs_template are NULL, chs_held is 0, and rendering, tokenizing,
 * planning and generating fail ("no model here: STATUS"). `status` is what
 * chs_format_status says. NULL with a message when out of memory. */
chs *chs_new_detached(const char *status, char *msg, size_t cap);
/* A detached conversation's status (the remote chat switched models); a
 * conversation with a model keeps the one its template gives. The thread
 * that reads chs_format_status. */
void chs_set_detached_status(chs *c, const char *status);
/* Free; accepts NULL. */
void chs_free(chs *c);

const tok_vocab *chs_vocab(const chs *c);
const chat_template *chs_template(const chs *c);
/* The status line of the last render ("chat format: ChatML (built-in; ...)"). */
const char *chs_format_status(const chs *c);

/* ---- the template, raw mode ---- */

/* Use `ct` (taken; freed with the chs, or now on failure) instead of the
 * model's template; `source` says where it comes from for /template and
 * /show ("FILE", "built-in Llama 3 (--format llama3)"). A strict template
 * (a file the user gave) fails instead of falling back to a built-in
 * format. 0, or -1 (out of memory, ct freed). */
int chs_set_template(chs *c, chat_template *ct, bool strict, const char *source);
/* Where the template comes from: "the model's own (...)" or chs_set_template's source. */
const char *chs_template_source(const chs *c);
/* Raw mode: no template; the prompt is the system prompt and every message
 * not dropped, concatenated as they are, tokenized as `ggscope run -p` does
 * (BOS as the model says, special tokens not parsed): the model continues
 * the text. */
void chs_set_raw(chs *c, bool raw);
bool chs_raw(const chs *c);

/* ---- settings ---- */

/* Defaults: the sampler's, n_predict 512. */
chs_settings chs_default_settings(void);
chs_settings chs_get_settings(const chs *c);
void chs_set_settings(chs *c, const chs_settings *st);
/* `/set NAME VALUE`: temp, top_k, top_p, min_p, repeat_penalty,
 * repeat_last_n, seed, n_predict. 0, or -1 with a message. */
int chs_set(chs *c, const char *name, const char *value, char *msg, size_t cap);
/* The names chs_set accepts, NULL-terminated. */
extern const char *const chs_setting_names[];

/* ---- the conversation ---- */

/* The system prompt ("" = none); copied. 0 or -1 (out of memory). */
int chs_set_system(chs *c, const char *text);
const char *chs_system(const chs *c);
/* Append a message (role "user" or "assistant"); copied. 0 or -1. */
int chs_add(chs *c, const char *role, const char *text, size_t len);
/* Append an assistant reply with its tokens' information and figures
 * (both copied; toks may be NULL). 0 or -1. */
int chs_add_reply(chs *c, const char *text, size_t len, const chs_tokinfo *toks, size_t n_toks,
                  const chs_reply_stats *st);
size_t chs_count(const chs *c);
const chs_msg *chs_at(const chs *c, size_t i);
/* Remove every message (the system prompt stays). */
void chs_clear(chs *c);
/* Remove the last message when it is an assistant reply; returns true when
 * the conversation now ends with a user message (ready to regenerate). */
bool chs_pop_reply(chs *c);
/* Remove the last user message and what follows it; its text is returned
 * (malloc'd) for editing, NULL when there is none. */
char *chs_pop_user(chs *c);

/* The prompt text of the messages that are not dropped (the system prompt
 * first), with a generation prompt when `gen` is set. malloc'd, length in
 * *len; NULL on failure (res, when not NULL, says why). */
char *chs_render(chs *c, bool gen, size_t *len, chat_result *res);

/* Tokenize a rendered prompt as the chat does: special tokens parsed, BOS
 * added only when the model asks for it and the text does not already
 * begin with it. 0 or -1. */
int chs_tokenize(const chs *c, const char *text, size_t len, int32_t **ids, size_t *n);
/* The same on a vocabulary (ggscope run --template). */
int chs_tokenize_vocab(const tok_vocab *v, const char *text, size_t len, int32_t **ids, size_t *n);

/* The prompt of the next reply: the conversation rendered with a generation
 * prompt and tokenized. When it does not leave room for a reply
 * (min(n_predict, n_ctx / 4) tokens), the oldest turns (a user message and
 * the replies after it) are marked dropped, the system prompt kept, until
 * it does; *n_dropped says how many messages were dropped now. Returns 0,
 * or -1 with a message (the last message alone does not fit, no message,
 * out of memory). *ids is malloc'd. The same as chs_plan_new, _build and
 * _apply in a row, on the calling thread. */
int chs_prompt(chs *c, int32_t **ids, size_t *n, unsigned *n_dropped, char *msg, size_t cap);

/* ---- building a prompt off the loop thread ----
 *
 * Rendering runs a template from the model file and tokenizing a long
 * conversation takes time: neither belongs on the UI's thread. A plan is a
 * copy of what a prompt is built from (system prompt, the messages not
 * dropped, the template, the tokenizer, n_ctx and the room a reply needs),
 * made on the loop thread by chs_plan_new; chs_plan_build renders and
 * tokenizes it on any thread, without touching the chs; chs_plan_apply
 * brings the result back (the messages dropped) on the loop thread.
 *
 * The cut (how many of the oldest turns to drop) is binary-searched: one
 * render when the conversation fits, about log2(turns) + 2 when it does not.
 * The plan keeps pointers to the chs's template and tokenizer: the chs must
 * outlive it. */
typedef struct chs_plan chs_plan;

/* A plan for the next reply (fit = true: drop the oldest turns until a reply
 * fits) or for showing the prompt as it is (fit = false: no dropping, the
 * text and tokens are kept whatever their size). NULL with a message when
 * there is no message to answer (fit only) or out of memory. */
chs_plan *chs_plan_new(const chs *c, bool fit, char *msg, size_t cap);

/* Render and tokenize (any thread; `cancel` polled between renders, may be
 * NULL). 0 done, 1 cancelled, -1 failed (chs_plan_error says why). */
int chs_plan_build(chs_plan *p, const atomic_bool *cancel);

/* Why chs_plan_new/_build failed ("" when it did not). */
const char *chs_plan_error(const chs_plan *p);
/* After a successful build: the rendered prompt (owned by the plan). */
const char *chs_plan_text(const chs_plan *p, size_t *len);
/* After a successful build: the prompt's tokens, owned by the plan, or
 * taken (malloc'd, the caller frees; the plan then holds none). */
const int32_t *chs_plan_ids(const chs_plan *p, size_t *n);
int32_t *chs_plan_take_ids(chs_plan *p, size_t *n);
/* Renders the build made (tests, the cost bound). */
unsigned chs_plan_renders(const chs_plan *p);
/* Loop thread, after a successful build: mark the messages the cut left
 * out as dropped and take the format status of the render. Returns 0 with
 * the number of messages dropped now in *n_dropped (may be NULL), or -1
 * when the transcript changed since chs_plan_new (nothing done). */
int chs_plan_apply(chs *c, const chs_plan *p, unsigned *n_dropped);
/* Free; accepts NULL. */
void chs_plan_free(chs_plan *p);

/* ---- the engine side (worker) ---- */

/* Receives each generated token: `text` is the newly complete UTF-8 text
 * (may be empty), `ti` its sampling information, ti->off/len its bytes in
 * the reply. At the end, bytes of an incomplete character still held come
 * with ti->id == -1 (as U+FFFD): they belong to the token before. */
typedef struct {
    void (*on_token)(void *ctx, const char *text, size_t len, const chs_tokinfo *ti);
    void *ctx;
    const atomic_bool *cancel;   /* polled before every token and every prompt chunk (may be NULL) */
    unsigned delay_ms;           /* sleep after each token (tests: slow generation down) */
    /* (optional) prompt evaluation progress (runner_gen.on_prompt): tokens
     * evaluated of those to evaluate now */
    void (*on_prompt)(void *ctx, uint32_t done, uint32_t total);
} chs_sink;

/* Generate a reply to prompt ids[0..n) (from chs_prompt) with settings `st`:
 * the tokens the session already holds are compared with ids, the cache is
 * truncated to the common prefix and only the rest is evaluated (in chunks,
 * checking the cancel flag); then tokens are sampled until an end-of-
 * generation token, n_predict, the end of the context, or cancellation.
 * Fills *out. Returns 0 (also when cancelled), or -1 with a message. */
int chs_generate(chs *c, const int32_t *ids, size_t n, const chs_settings *st, const chs_sink *sink,
                 chs_reply_stats *out, char *msg, size_t cap);
/* Tokens the session holds (the prefix a next prompt may reuse). */
size_t chs_held(const chs *c);
/* Forget the KV cache (next prompt evaluated from scratch). */
void chs_reset_cache(chs *c);

/* ---- files ---- */

/* Write the conversation and settings as JSON to `path`, atomically (a
 * temporary file in the same directory, then rename). 0, or -1 with a message. */
int chs_save(const chs *c, const char *path, char *msg, size_t cap);
/* The largest session file /load reads, and the most messages it takes. */
#define CHS_FILE_MAX_BYTES (16u << 20)
#define CHS_FILE_MAX_MESSAGES 200000u

/* A session file's contents, checked (chs_session_parse). */
typedef struct {
    char *system;         /* "" when none */
    chs_settings st;      /* the base settings with the file's applied */
    chs_msg *m;           /* role, content, len, dropped */
    size_t n;
} chs_file;

/* Parse and check a session file's bytes buf[0..len) (need not be
 * NUL-terminated; untrusted): version 1, settings numbers in range, each
 * message a role ("user", "assistant") and a content string, every string
 * valid UTF-8 without control characters other than tab, CR and LF, at
 * most CHS_FILE_MAX_MESSAGES messages. Settings absent from the file keep
 * those of `base`. 0 with *out filled (free with chs_file_free), or -1 with
 * one line in msg (where: "messages[3].content", a byte offset for JSON
 * syntax) and *out empty. Never prints; any thread. */
int chs_session_parse(const char *buf, size_t len, const chs_settings *base, chs_file *out, char *msg,
                      size_t cap);
/* Read `path` (a regular file of at most CHS_FILE_MAX_BYTES) and parse it;
 * messages start with the path. Any thread. */
int chs_session_read(const char *path, const chs_settings *base, chs_file *out, char *msg, size_t cap);
/* Free the contents; accepts an emptied or zeroed chs_file. */
void chs_file_free(chs_file *f);
/* Loop thread: replace the conversation and settings with f's, taking its
 * contents (f is emptied). */
void chs_load_file(chs *c, chs_file *f);

/* Replace the conversation and settings with those of a file chs_save
 * wrote (chs_session_read, then chs_load_file). On failure (-1, message)
 * nothing changes. */
int chs_load(chs *c, const char *path, char *msg, size_t cap);

#endif
