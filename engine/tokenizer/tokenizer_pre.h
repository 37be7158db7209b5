/* tokenizer_pre: the pre-tokenizers of byte-level BPE vocabularies (internal
 * to the tokenizer module). A pre-tokenizer splits text into words with the
 * regular expressions llama.cpp associates with `tokenizer.ggml.pre`. */
#ifndef GGSCOPE_TOKENIZER_PRE_H
#define GGSCOPE_TOKENIZER_PRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tok__pre tok__pre;

/* Per-pre-tokenizer settings llama.cpp attaches to the name. */
typedef struct {
    bool known;          /* false: the name was unknown, GPT-2's rules are used */
    bool ignore_merges;  /* a word that is a whole token is not merged */
    bool add_bos;        /* default for add_bos_token */
    bool clean_spaces;   /* detokenizer's clean-up of " ." " 's" etc. */
    bool bos_null;       /* no BOS token by default */
} tok__pre_info;

/* Build the pre-tokenizer for `name` (len bytes; NULL/empty = "default").
 * Returns NULL on allocation failure or a pattern that fails to compile
 * (message in err). */
tok__pre *tok__pre_new(const char *name, size_t len, tok__pre_info *info, char *err, size_t errcap);
void tok__pre_free(tok__pre *p);

/* A growable vector of piece lengths. */
typedef struct {
    size_t *v;
    size_t n, cap;
} tok__sizes;

/* Split cps[0..n) (flags[i] = tok__uflags(cps[i])) into pieces; their
 * lengths in codepoints replace *out's content. `scratch` is working memory
 * reused between calls (free with tok__sizes_free). Returns false on
 * allocation failure. */
bool tok__pre_split(const tok__pre *p, const uint32_t *cps, const uint16_t *flags, size_t n,
                    tok__sizes *out, tok__sizes *scratch, uint32_t **subject, size_t *subject_cap);
void tok__sizes_free(tok__sizes *s);

/* Names of the pre-tokenizers with a table entry, NULL-terminated (for docs and tests). */
extern const char *const tok__pre_names[];

#endif
