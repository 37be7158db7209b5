/* chat: turn a conversation into the prompt text a model expects.
 *
 * The model's own `tokenizer.chat_template` (Jinja, see jinja.h) is used when
 * it parses and renders. When it is missing, fails to parse, or fails to
 * render (including a template that raises, e.g. Gemma refusing a system
 * turn), a built-in format is used instead: the one whose markers appear in
 * the template text (`<|im_start|>` -> ChatML, or Phi-4 with `<|im_sep|>`;
 * `<|start_header_id|>` -> Llama 3, `<start_of_turn>` -> Gemma,
 * `<|start_of_role|>` -> Granite, `<|user|>`/`<|assistant|>` + `<|end|>` ->
 * Phi-3, OLMo 2's `'<|user|>\n' + message['content'] + '\n'` -> OLMo 2,
 * `<|user|>` -> Zephyr, `[INST]` + `[SYSTEM_PROMPT]` -> Mistral v7 (v7 Tekken
 * when no `[INST] ` has a space after it), `[INST]` + `<<SYS>>` -> Llama 2,
 * `[INST]` -> Mistral, `<|start|>` + `<|channel|>` -> Harmony; ChatML when
 * nothing matches). A GGUF model without a
 * template gets the format of its architecture (chat_default_format). The
 * formats follow llama.cpp's llm_chat_apply_template, with the BOS text
 * written where the models' own templates write it. Every result says which
 * was used. */
#ifndef GGSCOPE_CHAT_H
#define GGSCOPE_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "jinja.h"

typedef enum {
    CHAT_FORMAT_TEMPLATE = 0,  /* the model's own Jinja template */
    CHAT_FORMAT_CHATML,
    CHAT_FORMAT_LLAMA2,
    CHAT_FORMAT_LLAMA3,
    CHAT_FORMAT_PHI3,
    CHAT_FORMAT_MISTRAL,
    CHAT_FORMAT_GEMMA,
    CHAT_FORMAT_ZEPHYR,
    CHAT_FORMAT_PHI4,              /* <|im_start|>role<|im_sep|>...<|im_end|> (Phi-4) */
    CHAT_FORMAT_GRANITE,           /* <|start_of_role|>role<|end_of_role|>... (Granite 3.x) */
    CHAT_FORMAT_MISTRAL_V7,        /* [SYSTEM_PROMPT] ...[/SYSTEM_PROMPT][INST] ...[/INST] */
    CHAT_FORMAT_MISTRAL_V7_TEKKEN, /* the same without the spaces (Mistral Small 3, Ministral) */
    CHAT_FORMAT_OLMO2,             /* <|user|>\n...\n<|assistant|>\n... (OLMo 2, Tülu 3) */
    CHAT_FORMAT_HARMONY,           /* <|start|>role<|message|>...<|end|> (gpt-oss, llama.cpp's built-in) */
    CHAT_FORMAT_COUNT
} chat_format;

/* One turn. role: "system", "user", "assistant" (others are passed through
 * to the template; built-in formats treat unknown roles as user turns). */
typedef struct {
    const char *role;
    const char *content;
} chat_message;

typedef struct chat_template chat_template;

/* Options of one render. Zeroed = no generation prompt, no extra system
 * prompt, fallback allowed, current time. */
typedef struct {
    bool add_generation_prompt;
    const char *system_prompt; /* prepended as a system turn unless msgs[0] is one; NULL: none */
    bool no_fallback;          /* fail instead of using a built-in format */
    time_t now;                /* clock for strftime_now (0 = now) */
} chat_opts;

/* What a render used. */
typedef struct {
    chat_format format;   /* CHAT_FORMAT_TEMPLATE, or the built-in format used */
    bool fallback;        /* a built-in format was used instead of the model's template */
    jinja_error error;    /* why (code JINJA_OK when no template error) */
    char status[640];     /* one line for a status bar, e.g. "chat format: Llama 3 (built-in; template: line 2, column 4: ...)" */
} chat_result;

/* A chat template from the model's template text (NULL or "" when the model
 * has none) and its BOS/EOS token strings (NULL = ""). The template is
 * parsed now; a parse failure is kept and reported by every render.
 * Returns NULL only when out of memory. Free with chat_template_free(). */
chat_template *chat_template_new(const char *template_text, const char *bos, const char *eos);

/* The chat template of a GGUF model: `tokenizer.chat_template` (none when
 * absent) with BOS/EOS texts from `tokenizer.ggml.bos_token_id` /
 * `eos_token_id` looked up in `tokenizer.ggml.tokens` ("" when absent).
 * bos/eos, when not NULL, override the model's. NULL only when out of memory
 * or g is NULL. */
struct gguf_file;
chat_template *chat_template_from_gguf(const struct gguf_file *g, const char *bos, const char *eos);

/* A chat template that always uses built-in `format` (not TEMPLATE). */
chat_template *chat_template_new_builtin(chat_format format, const char *bos, const char *eos);

/* Free; accepts NULL. */
void chat_template_free(chat_template *ct);

/* The built-in format chosen from a template's text (never TEMPLATE;
 * CHATML when no marker matches or text is NULL). `eos` may be NULL. */
chat_format chat_detect_format(const char *template_text, const char *eos);

/* The built-in format for a model without a chat template, by its
 * `general.architecture`: gemma* -> Gemma, phi3 -> Phi-3 (Phi-4 when the
 * vocabulary has `<|im_sep|>` and no `<|assistant|>`), granite* -> Granite, mistral3 -> Mistral v7
 * Tekken (v7 when `tokenizer.ggml.pre` is not "tekken"), olmo2 -> OLMo 2
 * (ChatML when the vocabulary has `<|im_start|>`: OLMo 3), gpt-oss -> Harmony; ChatML for the
 * others (qwen3, smollm3, ...) and when g is NULL. */
chat_format chat_default_format(const struct gguf_file *g);

/* "ChatML", "Llama 2", "Llama 3", "Phi-3", "Mistral", "Gemma", "Zephyr",
 * "Phi-4", "Granite", "Mistral v7", "Mistral v7 Tekken", "OLMo 2", "Harmony";
 * "template" for CHAT_FORMAT_TEMPLATE. */
const char *chat_format_name(chat_format f);

/* The format named `name`: one of chatml, llama2, llama3, phi3, mistral,
 * gemma, zephyr, phi4, granite, mistral-v7, mistral-v7-tekken, olmo2,
 * harmony, without regard to case, spaces, '-', '_', '.' ("Llama 3",
 * "mistralv7"); not TEMPLATE.
 * false when no format has that name. */
bool chat_format_from_name(const char *name, chat_format *out);
/* The names chat_format_from_name takes, ", "-separated, into buf. */
void chat_format_names(char *buf, size_t cap);

/* A reply's reasoning in Qwen3 / DeepSeek-R1 style: text[0..len) holds
 * `</think>`. The thinking is text[*t_off, +*t_len) (after `<think>` when
 * one comes before, else from the start: a generation prompt may open the
 * block; new lines around it trimmed), the answer starts at *a_off (after
 * `</think>` and the new lines that follow). false: no `</think>`. */
bool chat_think_split(const char *text, size_t len, size_t *t_off, size_t *t_len, size_t *a_off);

/* Whether renders of ct take the Harmony format (gpt-oss): its text was
 * detected as Harmony, or it is the built-in format. */
bool chat_template_is_harmony(const chat_template *ct);

/* A short description of the template for display: "model template
 * (Jinja, N bytes)", "model template (does not parse; fallback Llama 3)",
 * "built-in Gemma", "no template (fallback ChatML)". Valid until freed. */
const char *chat_template_describe(const chat_template *ct);

/* The BOS / EOS texts the template renders with (never NULL). */
const char *chat_template_bos(const chat_template *ct);
const char *chat_template_eos(const chat_template *ct);

/* The template's parse error, or NULL when it parsed (or there is none). */
const jinja_error *chat_template_parse_error(const chat_template *ct);

/* Render msgs[0..n). Returns a malloc'd NUL-terminated prompt (length in
 * *len when not NULL) and fills *res (may be NULL). Returns NULL when the
 * template fails and opts->no_fallback is set, or on out of memory; *res
 * then holds the error. opts may be NULL (defaults).
 * Harmony (a template detected as such, or the built-in format): an
 * assistant turn whose content is a reply as generated, with channel markup
 * (harmony.h), is passed as its final channel, with the analysis channel as
 * the message's `thinking` field (the template drops it from earlier turns).
 * Other templates: an assistant turn with a `<think>` block
 * (chat_think_split) is passed as its answer, with the thinking as the
 * message's `reasoning_content` (as llama.cpp does: templates that use it,
 * e.g. Qwen3's for turns after the last user message, write it back; the
 * others drop it). */
char *chat_render(const chat_template *ct, const chat_message *msgs, size_t n, const chat_opts *opts,
                  size_t *len, chat_result *res);

/* As chat_render, with the messages as a JSON array of objects (each with
 * "role" and "content"; other fields, e.g. "tool_calls", reach the template
 * unchanged; built-in formats print non-string contents as JSON). */
char *chat_render_json(const chat_template *ct, const cJSON *messages, const chat_opts *opts, size_t *len,
                       chat_result *res);

/* The text to append to a prompt that held msgs[0..n_prev) (rendered
 * without a generation prompt) so that it holds msgs[0..n) rendered with
 * opts: the full render of msgs[0..n) minus the render of msgs[0..n_prev)
 * when the latter is its prefix. When it is not (templates that change
 * earlier turns, e.g. by dropping old reasoning), the whole render is
 * returned and *reset is set: the caller must start the prompt over.
 * Returns malloc'd text or NULL as chat_render does. */
char *chat_render_delta(const chat_template *ct, const chat_message *msgs, size_t n_prev, size_t n,
                        const chat_opts *opts, size_t *len, bool *reset, chat_result *res);

/* The length of the longest common prefix of a[0..an) and b[0..bn), backed
 * off so that it does not end inside a UTF-8 character: how much of a prompt
 * already evaluated (a) the new render (b) keeps. */
size_t chat_common_prefix(const char *a, size_t an, const char *b, size_t bn);

#endif
