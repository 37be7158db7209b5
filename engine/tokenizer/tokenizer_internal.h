/* Internals shared by the tokenizer*.c files (not part of the public API). */
#ifndef GGSCOPE_TOKENIZER_INTERNAL_H
#define GGSCOPE_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"
#include "tokenizer_pre.h"

/* A string of the table: text (not NUL-terminated), length, tok__hash. */
typedef struct {
    const char *p;
    uint32_t len, hash;
} tok__str;

/* A growable id vector. */
typedef struct {
    tok_id *v;
    size_t n, cap;
} tok__ids;

bool tok__ids_push(tok__ids *a, tok_id id);

struct tok_vocab {
    tok_model model;
    uint32_t n_vocab;

    /* Strings by id: ids < n_vocab are the tokens (pointing into the GGUF
     * mapping); ids >= n_vocab are "virtual" strings that BPE merges produce
     * but the vocabulary lacks (owned, in `arena`). */
    uint32_t n_str, cap_str;
    tok__str *strs;
    uint64_t *map;          /* open addressing: hash << 32 | (id + 1), 0 = empty */
    uint32_t map_mask;
    char **arena;           /* blocks holding virtual strings */
    size_t n_arena, arena_used;

    float *score;           /* n_vocab */
    uint32_t *attr;         /* n_vocab, TOK_ATTR_* */
    uint8_t *eog;           /* n_vocab bits */
    uint32_t max_token_len;

    /* BPE */
    uint64_t *mkey;         /* (left << 32 | right), UINT64_MAX = empty */
    int32_t *mrank;
    uint32_t *mres;         /* id (maybe virtual) of the merged string */
    uint64_t mmask;
    uint32_t byte_sym[256]; /* id of the byte-level character of each byte */
    tok_id one_byte[256];   /* token whose text is that single byte, or TOK_NULL */
    tok__pre *pre;
    tok__pre_info pre_info;
    bool ignore_merges;

    /* SPM */
    tok_id byte_tok[256];   /* <0xXX> (or the byte itself), or TOK_NULL */
    bool spm_split;         /* no token has U+2581 after another character: words merge independently */

    tok_id bos, eos, eot, eom, unk, pad, sep, nl;
    tok_id fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    bool add_bos, add_eos, add_space_prefix, clean_spaces;

    tok_id *special;        /* candidates for partitioning, longest text first */
    uint32_t n_special;

    char model_name[16];
    char pre_name[64];
    char warning[256];
};

/* FNV-1a over a byte string. */
static inline uint32_t tok__hash(const void *p, size_t n)
{
    const uint8_t *s = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 16777619u;
    return h;
}

/* Id of the string s[0..n) (tokens and virtual strings), or TOK_NULL. */
tok_id tok__lookup(const tok_vocab *v, const void *s, size_t n, uint32_t h);
/* Id of s, adding it as a virtual string when absent; TOK_NULL on ENOMEM. */
tok_id tok__intern(tok_vocab *v, const char *s, size_t n);

/* BPE (tokenizer_bpe.c): load merges and byte tables; tokenize raw text. */
tok_status tok__bpe_load(tok_vocab *v, const gguf_file *f, tok_error *err);
bool tok__bpe_tokenize(const tok_vocab *v, const char *text, size_t len, tok__ids *out);
/* Decode a byte-level token text into raw bytes (llama.cpp's llama_decode_text). */
size_t tok__bpe_decode(const char *text, size_t len, char *buf, size_t cap);

/* SPM (tokenizer_spm.c): tokenize text whose spaces are already U+2581. */
bool tok__spm_tokenize(const tok_vocab *v, const char *text, size_t len, tok__ids *out);

#endif
