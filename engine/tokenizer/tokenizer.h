/* tokenizer: text <-> token ids exactly as a model's own tokenizer does,
 * loaded from the tokenizer.ggml.* metadata of an open GGUF file.
 *
 * Models (tokenizer.ggml.model):
 *   "llama"  SentencePiece BPE: scores, U+2581 for spaces, <0xXX> byte
 *            fallback, add-space-prefix and add-BOS rules from the metadata.
 *   "gpt2"   byte-level BPE with merges, after the pre-tokenizer named by
 *            tokenizer.ggml.pre (llama-bpe, qwen2, deepseek-coder, ... see
 *            docs/tokenizer.md). An unknown pre-tokenizer falls back to
 *            GPT-2's rules and tok_warning() says so.
 * The algorithms, special-token handling and decoding follow llama.cpp
 * (llama-vocab.cpp), the reference the tests compare against.
 *
 * Special tokens: control (and unknown-type) tokens are recognised in text
 * only with TOK_PARSE_SPECIAL; user-defined tokens (type 4, e.g. added
 * words) are always recognised, as in the model's reference tokenizer.
 *
 * A tok_vocab is immutable after tok_open and may be used from several
 * threads at once. It points into the GGUF mapping (token strings are not
 * copied): the gguf_file must stay open until tok_close. The engine never
 * prints; warnings are returned by tok_warning(). */
#ifndef GGSCOPE_TOKENIZER_H
#define GGSCOPE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef int32_t tok_id;
#define TOK_NULL ((tok_id)-1)

typedef enum {
    TOK_OK = 0,
    TOK_ENOTFOUND,     /* the file has no tokenizer (no tokenizer.ggml.model / tokens) */
    TOK_EFORMAT,       /* tokenizer metadata malformed (wrong types, sizes, ids) */
    TOK_EUNSUPPORTED,  /* tokenizer.ggml.model is neither "llama" nor "gpt2" */
    TOK_ENOMEM,
    TOK_EARG,
} tok_status;

typedef struct {
    tok_status code;
    char msg[256];
} tok_error;

typedef enum { TOK_MODEL_SPM, TOK_MODEL_BPE } tok_model;

/* Token attributes (llama.cpp's llama_token_attr bits). */
enum {
    TOK_ATTR_UNKNOWN = 1 << 0,
    TOK_ATTR_UNUSED = 1 << 1,
    TOK_ATTR_NORMAL = 1 << 2,
    TOK_ATTR_CONTROL = 1 << 3,
    TOK_ATTR_USER_DEFINED = 1 << 4,
    TOK_ATTR_BYTE = 1 << 5,
    TOK_ATTR_LSTRIP = 1 << 7,
    TOK_ATTR_RSTRIP = 1 << 8,
};

/* Tokenize flags. */
enum {
    TOK_ADD_SPECIAL = 1u << 0,    /* add BOS (and EOS) as the metadata says */
    TOK_PARSE_SPECIAL = 1u << 1,  /* recognise control tokens written in the text */
};

/* Detokenize / piece flags. */
enum {
    TOK_DETOK_SPECIAL = 1u << 0,         /* render control/unknown tokens as their text (else "") */
    TOK_DETOK_REMOVE_SPECIAL = 1u << 1,  /* drop a leading BOS / trailing EOS the model adds */
    TOK_DETOK_CLEAN = 1u << 2,           /* the vocabulary's clean-up of " ." " 's" ... */
};

typedef struct tok_vocab tok_vocab;

/* Load the tokenizer of `f`. Returns NULL on error and fills *err (if not
 * NULL). Load builds hash tables (token -> id, merge pair -> rank). */
tok_vocab *tok_open(const gguf_file *f, tok_error *err);
/* Free; accepts NULL. */
void tok_close(tok_vocab *v);
const char *tok_strerror(tok_status code);
/* A warning from loading (e.g. "unknown pre-tokenizer 'x': using GPT-2's
 * rules"), or NULL. Owned by v. */
const char *tok_warning(const tok_vocab *v);

/* ---- tokenizing ---- */

/* Tokenize text[0..len) (UTF-8; malformed bytes are handled as the
 * reference does). On success *out is a malloc'd array of *n ids (free()
 * it; NULL when *n is 0). Returns TOK_OK, TOK_ENOMEM, or TOK_EARG (NULL
 * arguments, text over 512 MiB). */
tok_status tok_tokenize(const tok_vocab *v, const char *text, size_t len, unsigned flags,
                        tok_id **out, size_t *n);

/* ---- detokenizing ---- */

/* The text of one token into buf (no NUL added); returns its length, which
 * may exceed cap (then only cap bytes are written). flags: TOK_DETOK_SPECIAL.
 * SPM: U+2581 becomes a space and <0xXX> byte tokens their byte; BPE: the
 * byte-level characters become their bytes. May be an incomplete UTF-8
 * sequence (byte tokens). */
size_t tok_piece(const tok_vocab *v, tok_id id, char *buf, size_t cap, unsigned flags);

/* The bytes a byte-level BPE piece ("gpt2" model: `Ġ` for a space, `Ċ` for
 * a newline, `ä¸ĸ` for the first bytes of `世`) stands for: each character
 * of text[0..len) mapped back to its byte, into buf. Returns the length
 * (which may exceed cap: then cap bytes are written), or SIZE_MAX when a
 * character is no byte-level one (an added token written as plain text).
 * Needs no vocabulary; thread-safe. The bytes may be any (control
 * characters, a split UTF-8 sequence): escape them before display. */
size_t tok_bpe_piece_bytes(const char *text, size_t len, char *buf, size_t cap);

/* The text of n tokens, as llama.cpp's llama_detokenize (for SPM the space
 * added in front of the first word is removed). Result is malloc'd and
 * NUL-terminated (*len excludes the NUL). Returns TOK_OK or TOK_ENOMEM. */
tok_status tok_detokenize(const tok_vocab *v, const tok_id *ids, size_t n, unsigned flags,
                          char **out, size_t *len);

/* Streaming decoder: feeds one token at a time and returns only complete
 * UTF-8 characters; bytes of a character split across tokens are held until
 * it is complete. Malformed sequences come out as U+FFFD, so the output is
 * always valid UTF-8. */
typedef struct tok_stream tok_stream;
/* flags: TOK_DETOK_SPECIAL. NULL on allocation failure. */
tok_stream *tok_stream_new(const tok_vocab *v, unsigned flags);
void tok_stream_free(tok_stream *s);
/* Append token id; returns the newly complete text (valid until the next
 * call on s; not NUL-terminated) and its length in *len. NULL only on
 * allocation failure. */
const char *tok_stream_push(tok_stream *s, tok_id id, size_t *len);
/* End of stream: returns what is still held (as U+FFFD) and resets. */
const char *tok_stream_flush(tok_stream *s, size_t *len);

/* ---- vocabulary ---- */

uint32_t tok_n_vocab(const tok_vocab *v);
/* Bytes of host memory the tokenizer's tables take (the token texts stay in
 * the file's mapping and are not counted; the pre-tokenizer's compiled
 * expressions neither). */
uint64_t tok_mem_bytes(const tok_vocab *v);
tok_model tok_model_kind(const tok_vocab *v);
/* Special ids (TOK_NULL when the model has none). */
tok_id tok_bos(const tok_vocab *v);
tok_id tok_eos(const tok_vocab *v);
tok_id tok_nl(const tok_vocab *v);
/* Whether tokenizing with TOK_ADD_SPECIAL adds BOS; whether SPM text gets a leading space. */
bool tok_add_bos(const tok_vocab *v);
bool tok_add_space_prefix(const tok_vocab *v);
/* The token's text as stored (not NUL-terminated; *len its length); NULL
 * when id is out of range. */
const char *tok_text(const tok_vocab *v, tok_id id, size_t *len);
/* TOK_ATTR_* bits (0 when id is out of range). */
uint32_t tok_attr(const tok_vocab *v, tok_id id);
bool tok_is_control(const tok_vocab *v, tok_id id);
/* End of generation: eos, eot, <|im_end|>, <|eot_id|>, <|end|>, ... */
bool tok_is_eog(const tok_vocab *v, tok_id id);
/* The id whose text is exactly text[0..len), or TOK_NULL. */
tok_id tok_find(const tok_vocab *v, const char *text, size_t len);

#endif
