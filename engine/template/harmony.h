/* harmony: the channels of a reply in OpenAI's Harmony format (gpt-oss).
 *
 * A gpt-oss reply, generated after the prompt's `<|start|>assistant`, is a
 * run of messages, each `<|channel|>NAME<|message|>BODY` ended by `<|end|>`
 * (another message follows, opened by `<|start|>assistant`), `<|return|>`
 * (the end of the reply) or `<|call|>` (a tool call): e.g.
 *
 *   <|channel|>analysis<|message|>The user greets.<|end|>
 *   <|start|>assistant<|channel|>final<|message|>Hello!
 *
 * (the tokenizer renders `<|channel|>`, `<|message|>`, `<|start|>` and
 * `<|end|>` as text, llama.cpp's user-defined tokens; the end-of-generation
 * `<|return|>` / `<|call|>` are not in the text). The analysis channel is the
 * model's reasoning ("thinking"), which the Harmony template drops from
 * earlier turns; the final and commentary channels are the answer. */
#ifndef GGSCOPE_HARMONY_H
#define GGSCOPE_HARMONY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *final;          /* the final (and commentary) channels' bodies, joined by "\n"; never NULL */
    size_t final_len;
    char *analysis;       /* the analysis channels' bodies, joined by "\n"; never NULL ("" when none) */
    size_t analysis_len;
    bool channels;        /* the text had `<|message|>` markers (else final is the whole text) */
} harmony_reply;

/* One message body of a reply: text[off, off + len), in the analysis
 * channel or not (final, commentary). */
typedef struct {
    size_t off, len;
    bool analysis;
} harmony_span;

/* The message bodies of text[0..len) in order, as harmony_parse finds them:
 * the first `cap` are written to out (may be NULL when cap is 0); returns
 * how many there are (0 when the text has no `<|message|>`). */
size_t harmony_spans(const char *text, size_t len, harmony_span *out, size_t cap);

/* Split text[0..len) (a reply as generated) into its channels. A body runs
 * from `<|message|>` to the next `<|end|>`, `<|return|>`, `<|call|>`,
 * `<|start|>`, `<|channel|>`, `<|message|>` (a next message the model did
 * not end) or the end of the text, so that no body holds channel markup
 * (the Harmony template refuses it); its channel is the word after the
 * `<|channel|>` of its header (no `<|channel|>`: final). Text outside bodies
 * (headers such as `<|start|>assistant`) is dropped. A text without
 * `<|message|>` is all final. Returns 0 with *out filled (free with
 * harmony_reply_free), or -1 when out of memory (*out empty). */
int harmony_parse(const char *text, size_t len, harmony_reply *out);

/* Free the strings; accepts a zeroed or emptied reply. */
void harmony_reply_free(harmony_reply *r);

#endif
