/* tokenizer_regex: a small backtracking regex engine for the subset of
 * ECMAScript syntax that pre-tokenizer patterns use (internal to the
 * tokenizer module).
 *
 * Supported: literals, escapes (\r \n \t \f \v \xHH \uHHHH \s \S \d \D \w \W,
 * escaped punctuation), character classes with ranges and negation, \p{L}
 * \p{N} \p{P} \p{S} \p{M} (and \p{Lu} \p{Ll} \p{Lt} \p{Lm} \p{Lo} = \p{L}),
 * groups (?:...) and (...), alternation, ? * + {n} {n,} {n,m} (greedy or lazy),
 * lookahead (?=...) (?!...), ^ and $.
 *
 * Like llama.cpp, a pattern that uses a \p{..} class runs on a "collapsed"
 * subject (ASCII kept, every other codepoint replaced by one byte standing
 * for its category, white space by 0x0B) and must be ASCII itself; any other
 * pattern runs on the codepoints themselves with non-ASCII white space
 * replaced by 0x0B (tok__rx_subject builds either). */
#ifndef GGSCOPE_TOKENIZER_REGEX_H
#define GGSCOPE_TOKENIZER_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tok__rx tok__rx;

/* Compile `pattern` (UTF-8). NULL on error with a message in err. */
tok__rx *tok__rx_compile(const char *pattern, char *err, size_t errcap);
void tok__rx_free(tok__rx *rx);
/* Whether the pattern runs on the collapsed subject. */
bool tok__rx_collapsed(const tok__rx *rx);

/* Subject codepoint for cp with category flags f (tok__uflags) in either mode. */
uint32_t tok__rx_subject(uint32_t cp, uint32_t f, bool collapsed);

/* Find the first non-empty match in s[from..n) (the subject is s[0..n); $
 * matches at n). Returns true with [*mb, *me). */
bool tok__rx_search(const tok__rx *rx, const uint32_t *s, size_t n, size_t from,
                    size_t *mb, size_t *me);

#endif
