/* jinja: a lexer, parser and interpreter for the Jinja subset that chat
 * templates (`tokenizer.chat_template`) use.
 *
 * The reference for every behaviour is @huggingface/jinja (the interpreter
 * behind transformers.js and llama.cpp's peer), including its quirks:
 * templates are lexed with lstrip_blocks and trim_blocks on, one trailing
 * newline of the template is dropped, `strip()`/`lstrip()`/`rstrip()` ignore
 * their argument and strip JavaScript whitespace, booleans print as
 * `true`/`false`, `==` is JavaScript's loose equality (objects by identity),
 * and `tojson` writes `", "`/`": "` separators (JSON.stringify numbers).
 *
 * Supported: text, `{{ }}`, `{% %}`, `{# #}`, whitespace control `-`;
 * statements if/elif/else, for (loop.*, else, filtering `if`, break,
 * continue, tuple unpacking), set (plain, tuple, `ns.attr`, block form),
 * macro (defaults, varargs, kwargs), call blocks (`caller()`), filter blocks,
 * `{% generation %}` markers (dropped); expressions: literals, lists,
 * tuples, dicts, arithmetic, `~`, comparisons, in / not in, and / or / not,
 * `a if c else b`, indexing, slicing, attributes, calls with keyword
 * arguments and `*`/`**` unpacking, filters, tests; globals raise_exception,
 * range, namespace, strftime_now.
 *
 * Memory: a parsed template owns one arena; each render uses its own arena,
 * freed before jinja_render returns, so nothing leaks on any error path.
 * Limits (depth, steps, work, bytes: jinja_limits) stop hostile templates
 * with an error. */
#ifndef GGSCOPE_JINJA_H
#define GGSCOPE_JINJA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

typedef enum {
    JINJA_OK = 0,
    JINJA_ESYNTAX,   /* the template does not lex or parse */
    JINJA_ERUNTIME,  /* an operation failed while rendering (bad types, unknown filter...) */
    JINJA_ERAISE,    /* the template called raise_exception(msg); msg is the message */
    JINJA_ELIMIT,    /* a limit was hit: nesting depth, steps, memory, output size */
    JINJA_ENOMEM,    /* malloc failed */
    JINJA_EARG,      /* bad argument from the caller */
} jinja_status;

/* An error: code, where in the template source (1-based line and column,
 * column counted in bytes; 0 when unknown) and one line of text. */
typedef struct {
    jinja_status code;
    int line;
    int col;
    size_t offset;   /* byte offset in the template source */
    char msg[512];
} jinja_error;

/* Default limits of one render (what a zero field of jinja_limits means).
 * Real chat templates stay far below them: a 10,000-message conversation
 * (1 MB of prompt) renders through each golden template with at most 2 % of
 * the steps, 13 % of the work and 15 % of the memory (docs/chat-templates.md). */
#define JINJA_DEFAULT_MAX_DEPTH 200
#define JINJA_DEFAULT_MAX_STEPS 5000000u          /* 5 M */
#define JINJA_DEFAULT_MAX_WORK (1ull << 28)       /* 256 Mi bytes touched */
#define JINJA_DEFAULT_MAX_BYTES ((size_t)256 << 20) /* 256 MiB */
#define JINJA_MAX_RANGE 1000000                   /* range(): at most this many items */

/* Limits of one render. Zero fields take the defaults above. A render that
 * reaches one stops with JINJA_ELIMIT and a message "template too costly:
 * ..." naming the limit.
 *  - max_steps: statements executed + loop iterations + calls + sort
 *    comparisons;
 *  - max_work: bytes touched by every operation: each string copied,
 *    concatenated, scanned (`in`, replace, split, length), compared,
 *    case-mapped, sliced, converted (tojson, string) counts its bytes, each
 *    list or mapping walked or copied (concatenation, `in`, join, sort,
 *    slicing, key lookups) counts its items;
 *  - max_bytes: memory the render allocates (strings, lists, mappings,
 *    scopes, the output): the render's arena, garbage included (it is freed
 *    only when the render ends), so it also bounds the live bytes. */
typedef struct {
    int max_depth;          /* nested macro calls / expression evaluation */
    uint64_t max_steps;     /* see above */
    size_t max_bytes;       /* see above */
    time_t now;             /* the clock of strftime_now (0 = the current time) */
    uint64_t max_work;      /* see above */
} jinja_limits;

/* What one render used (filled also when it fails). */
typedef struct {
    uint64_t steps;
    uint64_t work;          /* bytes touched (see jinja_limits) */
    size_t bytes;           /* memory allocated (the arena's size at the end) */
    int max_depth;          /* deepest nesting reached */
} jinja_stats;

typedef struct jinja_template jinja_template;

/* Parse `src` (`len` bytes; need not be NUL-terminated). Returns the template
 * or NULL with *err filled (JINJA_ESYNTAX with the position, JINJA_ENOMEM,
 * JINJA_ELIMIT for sources over 1 MiB or nesting deeper than 200).
 * Free with jinja_free(). */
jinja_template *jinja_parse(const char *src, size_t len, jinja_error *err);

/* Free a template; accepts NULL. */
void jinja_free(jinja_template *t);

/* Render with the variables of `vars` (a cJSON object, may be NULL: no
 * variables; JSON numbers that are integral become integers). `limits` may
 * be NULL. Returns a malloc'd NUL-terminated string (its length in *out_len
 * when not NULL), or NULL with *err filled. The template is not modified:
 * one template may be rendered from several threads at once. */
char *jinja_render(const jinja_template *t, const cJSON *vars, const jinja_limits *limits,
                   size_t *out_len, jinja_error *err);

/* As jinja_render, and fills *stats (when not NULL) with what the render
 * used, whether it succeeded or not. */
char *jinja_render_stats(const jinja_template *t, const cJSON *vars, const jinja_limits *limits,
                         size_t *out_len, jinja_stats *stats, jinja_error *err);

/* "line L, column C: message" (or just the message when the position is
 * unknown) into buf. Returns buf. */
const char *jinja_error_format(const jinja_error *err, char *buf, size_t cap);

#endif
