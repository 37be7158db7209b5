/* engine_cli: what the engine commands (run, bench, logits, chat) share:
 * option parsing for --backend/--threads/--ctx, opening a model and its
 * runner (engine/run/runner.h) with the engine's messages printed, token id
 * lists and number formatting. */
#ifndef GGSCOPE_ENGINE_CLI_H
#define GGSCOPE_ENGINE_CLI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cliopt.h"

#include "backend.h"
#include "runner.h"
#include "gguf.h"
#include "model.h"
#include "sampler.h"
#include "session.h"
#include "tokenizer.h"

typedef struct {
    const char *backend;   /* "auto", "vulkan" or "cpu" */
    bool has_device;       /* --device N given */
    int device;            /* its N (a Vulkan device index, see `ggscope devices`) */
    int threads;           /* 0 = one per core */
    uint32_t n_ctx;        /* 0 = session default */
    runner_weights weights;/* --weights auto|copy|map */
    /* (optional, for a caller that opens on a worker) the runner's cancel
     * flag and the progress of the weights' copy or upload, used when the
     * open prints nothing (ecli_open_msg, ecli_open_file with msg) */
    const atomic_bool *cancel;
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
} ecli_opts;

/* Everything an engine command holds open. */
typedef struct {
    gguf_file *f;
    model *m;
    runner *r;             /* backend and session (runner_backend, runner_session) */
} ecli_engine;

/* Ids of the common and sampling options (cliopt.h), the rows that go into
 * a command's long-option table and the short options of the common ones. */
enum {
    ECLI_OPT_BACKEND = 0x200, ECLI_OPT_DEVICE, ECLI_OPT_WEIGHTS,
    ECLI_OPT_TEMP, ECLI_OPT_TOP_K, ECLI_OPT_TOP_P, ECLI_OPT_MIN_P,
    ECLI_OPT_REPEAT_PENALTY, ECLI_OPT_REPEAT_LAST_N, ECLI_OPT_SEED
};
#define ECLI_COMMON_SHORTOPTS "t:c:"
#define ECLI_COMMON_LONGOPTS                                                                \
    {"backend", required_argument, 0, ECLI_OPT_BACKEND},                                    \
    {"device", required_argument, 0, ECLI_OPT_DEVICE},                                      \
    {"weights", required_argument, 0, ECLI_OPT_WEIGHTS},                                    \
    {"threads", required_argument, 0, 't'}, {"ctx", required_argument, 0, 'c'}
#define ECLI_SAMPLING_LONGOPTS                                                              \
    {"temp", required_argument, 0, ECLI_OPT_TEMP},                                          \
    {"top-k", required_argument, 0, ECLI_OPT_TOP_K},                                        \
    {"top-p", required_argument, 0, ECLI_OPT_TOP_P},                                        \
    {"min-p", required_argument, 0, ECLI_OPT_MIN_P},                                        \
    {"repeat-penalty", required_argument, 0, ECLI_OPT_REPEAT_PENALTY},                      \
    {"repeat-last-n", required_argument, 0, ECLI_OPT_REPEAT_LAST_N},                        \
    {"seed", required_argument, 0, ECLI_OPT_SEED}

/* If option id (from cliopt_next; name as typed, val its value or NULL when
 * missing) is --backend/--device/--weights/--threads/-t/--ctx/-c, store it and return
 * 1; return -1 (message printed) on a bad value, 0 otherwise. */
int ecli_common_opt(int id, const char *name, const char *val, ecli_opts *o);

/* Open FILE, bind the model, create a backend and a session of n_ctx
 * positions. Prints the error and returns the exit status on failure (2 for
 * a bad file, 1 otherwise), 0 on success. */
int ecli_open(const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e);
/* ecli_open printing nothing (no backend line, no progress bar): on failure
 * the message (without "ggscope: ", escaped for a terminal) is in msg and e
 * is closed. For a caller that owns the screen (the chat). */
int ecli_open_msg(const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e, char *msg, size_t cap);
/* ecli_open / ecli_open_msg (msg NULL: printing) on a file someone already
 * opened (f, or NULL: open path): the engine becomes one more owner of f
 * (gguf_retain), so the explorer and the chat map and validate it once. */
int ecli_open_file(gguf_file *f, const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e, char *msg,
                   size_t cap);
/* ecli_open in two steps, so that a command can check its input against the
 * model before a backend is announced on stderr: ecli_open_model opens FILE
 * and binds the model (2 for a bad file); ecli_open_backend then creates the
 * backend (printing which one) and the session. Each prints the error and
 * returns the exit status on failure; ecli_open_model has then closed e,
 * ecli_open_backend leaves that to the caller (ecli_close). */
int ecli_open_model(const char *path, ecli_engine *e);
int ecli_open_backend(const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e);
/* The context positions a session of n_ctx (0: the default) will have. */
uint32_t ecli_ctx_size(const ecli_engine *e, uint32_t n_ctx);
void ecli_close(ecli_engine *e);

/* cliopt_next for the engine commands: the next option or argument that is
 * not a common option (nor, when sp is given, a sampling option): those are
 * stored into o / sp. ECLI_OPT_ERROR (message printed) on a bad value. */
#define ECLI_OPT_ERROR (-2)
int ecli_next_opt(cliopt *p, ecli_opts *o, sampler_params *sp);

/* If option id is a sampling option (--temp, --top-k, --top-p, --min-p,
 * --repeat-penalty, --repeat-last-n, --seed), store its value into sp and
 * return 1; -1 (message printed: the allowed range) on a bad value; 0
 * otherwise. The one parser of these options, for run and chat. */
int ecli_sampling_opt(int id, const char *name, const char *val, sampler_params *sp);

/* Parse "1,2,3" into a malloc'd array (*n ids). Returns false (message printed) on bad input. */
bool ecli_parse_ids(const char *s, int32_t **ids, uint32_t *n);

/* Parse a whole number / float argument; false (message printed) when invalid. */
bool ecli_parse_long(const char *opt, const char *s, long lo, long hi, long *out);
bool ecli_parse_float(const char *opt, const char *s, float *out);

/* Print a float as JavaScript prints the double of that float (shortest
 * round-trip form, e.g. 17.023767471313477, 1e-7): the peer's JSON numbers. */
void ecli_print_js_number(FILE *out, double v);

/* Text side of a model: tokenizing prompts, printing tokens. */
typedef struct ecli_text ecli_text;
/* The model's tokenizer; NULL only when out of memory. Without a usable
 * tokenizer, ecli_tokenize fails with a message and pieces print as [id]. */
ecli_text *ecli_text_new(const gguf_file *f);
void ecli_text_free(ecli_text *t);
/* Tokenize a prompt (BOS added as the model asks). false (message printed) on failure. */
bool ecli_tokenize(ecli_text *t, const char *text, int32_t **ids, uint32_t *n);
/* Write the text of a token (bytes may be a partial UTF-8 sequence). */
void ecli_print_piece(ecli_text *t, int32_t id, FILE *out);
/* Write what the streaming decoder still holds (end of output). */
void ecli_flush_text(ecli_text *t, FILE *out);
/* Whether a token ends generation (EOS / EOT). */
bool ecli_is_eog(ecli_text *t, int32_t id);
/* The tokenizer's vocabulary (runner_gen.eog), NULL when it has none. */
const tok_vocab *ecli_vocab(const ecli_text *t);

/* Help lines for the sampling options (ecli_sampling_opt). */
#define ECLI_SAMPLING_HELP                                                                          \
    "  --temp T              temperature, >= 0 (default 0.8; 0 = greedy)\n"                         \
    "  --top-k K             keep the K most likely tokens (default 40; 0 = off)\n"                  \
    "  --top-p P             nucleus sampling, 0..1 (default 0.95; 1 = off)\n"                       \
    "  --min-p P             drop tokens below P x the best one's probability\n"                \
    "                        (0..1, default 0.05; 0 = off)\n"                                  \
    "  --repeat-penalty R    penalty of recent tokens, > 0 (default 1.1; 1 = off)\n"                 \
    "  --repeat-last-n N     window of the penalty (default 64)\n"                                  \
    "  --seed S              random seed (default 42)\n"

/* Help lines for the common options. */
#define ECLI_COMMON_HELP                                                                   \
    "  --backend B           auto | vulkan | cpu (default auto: Vulkan on a GPU,\n"       \
    "                        else the CPU)\n"                                                \
    "  --device N            Vulkan device N (see `ggscope devices`;\n"                   \
    "                        or GGSCOPE_VK_DEVICE=N)\n"                                   \
    "  --weights W           the CPU's weights: copy (into memory, huge pages:\n"    \
    "                        faster), map (read in place from the file) or auto\n"    \
    "                        (default: copy a dense model that fits in half the\n"   \
    "                        available memory)\n"                                     \
    "  -t, --threads N       worker threads (default: one per core)\n"

#endif
