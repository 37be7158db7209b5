/* Escaping of untrusted text (names, keys, strings read from a file) for a
 * terminal and for JSON. Pure functions: no allocation except in the growable
 * buffer, no I/O. See docs/gguf.md ("Text from a file") for the forms. */
#ifndef GGSCOPE_TEXTESC_H
#define GGSCOPE_TEXTESC_H

#include <stdbool.h>
#include <stddef.h>

/* Flags of the terminal form. */
enum {
    TEXTESC_DQUOTE = 1, /* also escape '"' as \" (text shown inside double quotes) */
    TEXTESC_SQUOTE = 2, /* also escape '\'' as \' (text shown inside single quotes) */
    TEXTESC_RAW_BACKSLASH = 4, /* leave '\' as it is (a viewer of long text, where
                                * readability beats an unambiguous form) */    TEXTESC_C0_ONLY = 8, /* escape only C0 controls and DEL: every byte >= 0x80
                          * is copied as it is, one by one (valid or not, C1
                          * and bidi controls included). With RAW_BACKSLASH:
                          * jinja's error messages, one line quoting the
                          * template's own bytes */
};

/* A growable string: zero-initialise it ({0}); `ptr` is NUL-terminated once
 * anything was appended; free with textesc_buf_free. */
typedef struct {
    char *ptr;
    size_t len, cap;
} textesc_buf;

/* Terminal form of `len` bytes of `src` (may hold NULs) into `dst` (capacity
 * `cap`, NUL-terminated when cap > 0). Valid UTF-8 passes unchanged except:
 * backslash -> \\, \n \t \r, other C0 controls and DEL -> \xNN, each byte of
 * an invalid, overlong, surrogate or truncated sequence -> \xNN, C1 controls,
 * bidi controls and U+2028/U+2029 -> \uXXXX. Never cuts an escape or a
 * character: stops at the first one that does not fit. Returns the number of
 * bytes of `src` consumed (len when everything fit). */
size_t textesc_term(char *dst, size_t cap, const char *src, size_t len, unsigned flags);

/* JSON string contents (without the quotes) of `len` bytes of `src`, same
 * contract as textesc_term: '"' and '\' escaped, \b \f \n \r \t, other C0
 * controls and DEL -> \u00XX (NUL -> \u0000), C1/bidi/U+2028/U+2029 ->
 * \uXXXX, each invalid byte -> \ufffd (U+FFFD). Valid UTF-8 passes unchanged,
 * so the output is always valid UTF-8 and valid JSON. Returns bytes consumed. */
size_t textesc_json(char *dst, size_t cap, const char *src, size_t len);

/* Append the terminal form (flags as textesc_term) / the JSON string
 * contents of `src` to `b`. Return 0, or -1 when out of memory (b keeps what
 * it had). */
int textesc_term_append(textesc_buf *b, const char *src, size_t len, unsigned flags);
int textesc_json_append(textesc_buf *b, const char *src, size_t len);

/* Append `len` bytes as they are. Returns 0 or -1 (out of memory). */
int textesc_buf_put(textesc_buf *b, const char *s, size_t len);

/* A complete JSON string: '"', the JSON form of src, '"'; malloc'd (the
 * caller frees), NULL when out of memory. For cJSON_CreateRaw. */
char *textesc_json_quoted(const char *src, size_t len);

/* Whether the terminal form of src equals src (nothing to escape). */
bool textesc_term_plain(const char *src, size_t len, unsigned flags);

/* Free b's memory and zero it. Accepts NULL. */
void textesc_buf_free(textesc_buf *b);

/* Byte form, for a name quoted in a one-line message (the GGUF reader's
 * errors): C0 controls, DEL and '\' -> \xNN; every other byte is copied as
 * it is (UTF-8 is not checked, so a cut may split a character). A byte goes
 * in only when it still leaves room for "..." and the NUL: when the rest of
 * src does not fit that way, the output ends with "..." instead. `dst` is
 * NUL-terminated when cap > 0 (and gets "" when cap < 4 and src is not
 * empty: no room for the cut mark). Returns dst. */
char *textesc_bytes(char *dst, size_t cap, const char *src, size_t len);

#endif
