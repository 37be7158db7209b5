/* textesc: terminal and JSON escaping of untrusted text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "textesc.h"

/* Terminal form of n bytes (whole, via the growable buffer). */
static char *term(const char *s, size_t n, unsigned flags)
{
    textesc_buf b = {0};
    assert_int_equal(textesc_term_append(&b, s, n, flags), 0);
    if (!b.ptr)
        return calloc(1, 1);
    /* the caller-buffer form agrees when it has room */
    char big[4096];
    assert_int_equal(textesc_term(big, sizeof big, s, n, flags), n);
    assert_string_equal(big, b.ptr);
    return b.ptr;
}

static char *json(const char *s, size_t n)
{
    textesc_buf b = {0};
    assert_int_equal(textesc_json_append(&b, s, n), 0);
    if (!b.ptr)
        return calloc(1, 1);
    char big[4096];
    assert_int_equal(textesc_json(big, sizeof big, s, n), n);
    assert_string_equal(big, b.ptr);
    return b.ptr;
}

#define TERM_EQ(lit, want)                                                      \
    do {                                                                        \
        char *got_ = term(lit, sizeof(lit) - 1, 0);                             \
        assert_string_equal(got_, want);                                        \
        free(got_);                                                             \
    } while (0)
#define JSON_EQ(lit, want)                                                      \
    do {                                                                        \
        char *got_ = json(lit, sizeof(lit) - 1);                                \
        assert_string_equal(got_, want);                                        \
        free(got_);                                                             \
    } while (0)

/* Strict UTF-8 check of a NUL-terminated string, and no raw byte < 0x20 or
 * 0x7f, no raw C1 / bidi code point. */
static void assert_clean(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char c = *p;
        assert_true(c >= 0x20 && c != 0x7f);
        if (c < 0x80) {
            p++;
            continue;
        }
        int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        assert_true(len > 0);
        uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
        for (int k = 1; k < len; k++) {
            assert_int_equal(p[k] & 0xC0, 0x80);
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        assert_true(cp >= (len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u));
        assert_false(cp >= 0xD800 && cp <= 0xDFFF);
        assert_true(cp <= 0x10FFFF);
        assert_false(cp >= 0x80 && cp <= 0x9F);
        assert_false(cp >= 0x202A && cp <= 0x202E);
        assert_false(cp >= 0x2066 && cp <= 0x2069);
        p += len;
    }
}

static void test_c0_controls(void **state)
{
    (void)state;
    for (int c = 0; c < 0x20; c++) {
        char in[3] = {'a', (char)c, 'b'};
        char *t = term(in, 3, 0), *j = json(in, 3);
        char want[16];
        const char *tn = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
        if (tn)
            snprintf(want, sizeof want, "a%sb", tn);
        else
            snprintf(want, sizeof want, "a\\x%02xb", c);
        assert_string_equal(t, want);
        const char *jn = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (jn)
            snprintf(want, sizeof want, "a%sb", jn);
        else
            snprintf(want, sizeof want, "a\\u%04xb", c);
        assert_string_equal(j, want);
        assert_clean(t);
        assert_clean(j);
        free(t);
        free(j);
    }
    TERM_EQ("\x7f", "\\x7f");
    JSON_EQ("\x7f", "\\u007f");
    TERM_EQ("\x1b[2J", "\\x1b[2J");
    JSON_EQ("\x1b[2J", "\\u001b[2J");
}

static void test_nul_in_middle(void **state)
{
    (void)state;
    TERM_EQ("ab\0cd", "ab\\x00cd");
    JSON_EQ("ab\0cd", "ab\\u0000cd");
    TERM_EQ("\0", "\\x00");
}

static void test_backslash_and_quotes(void **state)
{
    (void)state;
    TERM_EQ("a\\x1b", "a\\\\x1b"); /* a literal backslash is never taken for an escape */
    JSON_EQ("a\\b\"c'", "a\\\\b\\\"c'");
    TERM_EQ("say \"hi\" 'x'", "say \"hi\" 'x'");
    char *t = term("say \"hi\" 'x'", 12, TEXTESC_DQUOTE);
    assert_string_equal(t, "say \\\"hi\\\" 'x'");
    free(t);
    t = term("say \"hi\" 'x'", 12, TEXTESC_SQUOTE);
    assert_string_equal(t, "say \"hi\" \\'x\\'");
    free(t);
    t = term("a\\n\x1b", 4, TEXTESC_RAW_BACKSLASH);
    assert_string_equal(t, "a\\n\\x1b");
    free(t);
}

/* TEXTESC_C0_ONLY: only C0 controls and DEL are escaped; every byte >= 0x80
 * (valid UTF-8, C1, bidi, invalid bytes) is copied, and with RAW_BACKSLASH
 * the backslash too (jinja's error messages). */
static void test_c0_only(void **state)
{
    (void)state;
    const unsigned f = TEXTESC_C0_ONLY | TEXTESC_RAW_BACKSLASH;
    const char in[] = "a\\n\\x1b\n\t\r\x1b\x7f\x01 \xc2\x85\xe2\x80\xae\xff\xc3 \xe4\xb8\xad";
    char *t = term(in, sizeof in - 1, f);
    assert_string_equal(t, "a\\n\\x1b\\n\\t\\r\\x1b\\x7f\\x01 \xc2\x85\xe2\x80\xae\xff\xc3 \xe4\xb8\xad");
    free(t);
    t = term("a\\\x1b", 3, TEXTESC_C0_ONLY); /* without RAW_BACKSLASH */
    assert_string_equal(t, "a\\\\\\x1b");
    free(t);
    t = term("\0\xff", 2, f);
    assert_memory_equal(t, "\\x00\xff", 6);
    free(t);
    assert_true(textesc_term_plain("x\\\xff\xe2\x80\xae", 6, f));
    assert_false(textesc_term_plain("x\xff", 2, 0));
    assert_false(textesc_term_plain("x\x1b", 2, f));
    /* bytes >= 0x80 are copied one by one: a cut may split a character */
    char d[4];
    assert_int_equal(textesc_term(d, sizeof d, "a\xe4\xb8\xad", 4, f), 3);
    assert_memory_equal(d, "a\xe4\xb8", 4);
}

static void test_c1_and_bidi(void **state)
{
    (void)state;
    for (unsigned cp = 0x80; cp <= 0x9F; cp++) {
        char in[2] = {(char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F))};
        char want[8];
        snprintf(want, sizeof want, "\\u%04x", cp);
        char *t = term(in, 2, 0), *j = json(in, 2);
        assert_string_equal(t, want);
        assert_string_equal(j, want);
        free(t);
        free(j);
    }
    /* RLO, LRO, PDF, LRI..PDI, LRM, RLM, ALM, LS, PS */
    TERM_EQ("a\xE2\x80\xAE" "b", "a\\u202eb");
    TERM_EQ("\xE2\x80\xAA\xE2\x80\xAB\xE2\x80\xAC\xE2\x80\xAD", "\\u202a\\u202b\\u202c\\u202d");
    TERM_EQ("\xE2\x81\xA6\xE2\x81\xA7\xE2\x81\xA8\xE2\x81\xA9", "\\u2066\\u2067\\u2068\\u2069");
    TERM_EQ("\xE2\x80\x8E\xE2\x80\x8F\xD8\x9C", "\\u200e\\u200f\\u061c");
    TERM_EQ("\xE2\x80\xA8\xE2\x80\xA9", "\\u2028\\u2029");
    JSON_EQ("x\xE2\x80\xAEy", "x\\u202ey");
    /* Latin-1 letters just above C1 are left alone */
    TERM_EQ("\xC2\xA0\xC3\xA9", "\xC2\xA0\xC3\xA9");
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    TERM_EQ("a\xff" "b", "a\\xffb");
    JSON_EQ("a\xff" "b", "a\\ufffdb");
    TERM_EQ("\x80\xbf", "\\x80\\xbf");        /* stray continuation bytes */
    TERM_EQ("\xC0\xAF", "\\xc0\\xaf");        /* overlong '/' */
    TERM_EQ("\xC1\xBF", "\\xc1\\xbf");        /* overlong */
    TERM_EQ("\xE0\x80\xAF", "\\xe0\\x80\\xaf"); /* overlong 3 bytes */
    TERM_EQ("\xF0\x80\x80\xAF", "\\xf0\\x80\\x80\\xaf");
    TERM_EQ("\xED\xA0\x80", "\\xed\\xa0\\x80"); /* surrogate D800 */
    TERM_EQ("\xED\xBF\xBF", "\\xed\\xbf\\xbf"); /* surrogate DFFF */
    TERM_EQ("\xF4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
    TERM_EQ("\xF5\x80\x80\x80", "\\xf5\\x80\\x80\\x80");
    TERM_EQ("\xFE\xFF", "\\xfe\\xff");
    /* truncated sequences: at the end, and followed by ASCII */
    TERM_EQ("\xE4\xB8", "\\xe4\\xb8");
    TERM_EQ("\xE4\xB8" "A", "\\xe4\\xb8A");
    TERM_EQ("\xF0\x9F\x98", "\\xf0\\x9f\\x98");
    TERM_EQ("\xC3", "\\xc3");
    JSON_EQ("\xE4\xB8" "A", "\\ufffd\\ufffdA");
    JSON_EQ("\xED\xA0\x80", "\\ufffd\\ufffd\\ufffd");
    /* every byte 0x80..0xff alone */
    for (int c = 0x80; c <= 0xFF; c++) {
        char in[1] = {(char)c}, want[8];
        snprintf(want, sizeof want, "\\x%02x", c);
        char *t = term(in, 1, 0), *j = json(in, 1);
        assert_string_equal(t, want);
        assert_string_equal(j, "\\ufffd");
        free(t);
        free(j);
    }
}

static void test_valid_passes(void **state)
{
    (void)state;
    const char *s = "plain ASCII ~ 0123 | 中文字符 日本語 한국어 "
                    "\xF0\x9F\x98\x80 \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 é ñ Ω ▁the \xEF\xBF\xBD \xF4\x8F\xBF\xBF";
    char *t = term(s, strlen(s), 0), *j = json(s, strlen(s));
    assert_string_equal(t, s);
    assert_string_equal(j, s);
    assert_true(textesc_term_plain(s, strlen(s), 0));
    assert_false(textesc_term_plain("a\x1b", 2, 0));
    assert_false(textesc_term_plain("a\xE2\x80\xAE", 4, 0));
    assert_false(textesc_term_plain("a\\", 2, 0));
    free(t);
    free(j);
}

static void test_every_input_is_clean(void **state)
{
    (void)state;
    /* all 2-byte strings, and 3-byte strings with a lead byte >= 0xE0 */
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) {
            char in[2] = {(char)a, (char)b};
            char *t = term(in, 2, 0), *j = json(in, 2);
            assert_clean(t);
            assert_clean(j);
            free(t);
            free(j);
        }
    for (int a = 0xE0; a < 0xF8; a++)
        for (int b = 0x70; b < 0xC8; b++)
            for (int c = 0x70; c < 0xC8; c += 7) {
                char in[3] = {(char)a, (char)b, (char)c};
                char t[64], j[64];
                assert_int_equal(textesc_term(t, sizeof t, in, 3, 0), 3);
                assert_int_equal(textesc_json(j, sizeof j, in, 3), 3);
                assert_clean(t);
                assert_clean(j);
            }
}

static void test_truncation(void **state)
{
    (void)state;
    char d[8];
    /* room for 7 bytes: "ab", the 4-byte escape, "c" */
    assert_int_equal(textesc_term(d, sizeof d, "ab\x1b" "cdef", 7, 0), 4);
    assert_string_equal(d, "ab\\x1bc");
    assert_int_equal(textesc_term(d, 6, "ab\x1b" "cd", 5, 0), 2);
    assert_string_equal(d, "ab");
    /* never a cut character */
    assert_int_equal(textesc_term(d, 4, "a中b", 5, 0), 1);
    assert_string_equal(d, "a");
    assert_int_equal(textesc_json(d, 6, "\xff", 1), 0);
    assert_string_equal(d, "");
    assert_int_equal(textesc_term(d, 0, "x", 1, 0), 0);
    assert_int_equal(textesc_term(d, 1, "x", 1, 0), 0);
    assert_string_equal(d, "");
    /* empty input */
    assert_int_equal(textesc_term(d, sizeof d, "", 0, 0), 0);
    assert_string_equal(d, "");
}

static void test_quoted_and_long(void **state)
{
    (void)state;
    char *q = textesc_json_quoted("a\0\"\xff", 4);
    assert_non_null(q);
    assert_string_equal(q, "\"a\\u0000\\\"\\ufffd\"");
    free(q);
    q = textesc_json_quoted("", 0);
    assert_string_equal(q, "\"\"");
    free(q);
    /* a long string of escapes grows the buffer correctly */
    size_t n = 100000;
    char *in = malloc(n);
    for (size_t i = 0; i < n; i++)
        in[i] = (char)(i % 3 == 0 ? 0x1b : i % 3 == 1 ? 'x' : 0xff);
    textesc_buf b = {0};
    assert_int_equal(textesc_buf_put(&b, "<", 1), 0);
    assert_int_equal(textesc_term_append(&b, in, n, 0), 0);
    size_t third = (n + 2) / 3;
    assert_int_equal(b.len, 1 + third * 4 + (n / 3 + ((n % 3) > 1)) * 1 + (n / 3) * 4);
    assert_int_equal(strlen(b.ptr), b.len);
    assert_memory_equal(b.ptr, "<\\x1bx\\xff\\x1b", 14);
    textesc_buf_free(&b);
    assert_null(b.ptr);
    textesc_buf_free(NULL);
    free(in);
}

/* The byte form (textesc_bytes): the GGUF reader's quoting of names in its
 * error messages, pinned byte for byte. */
static void test_bytes_form(void **state)
{
    (void)state;
    char d[200];
    assert_ptr_equal(textesc_bytes(d, sizeof d, "blk.0.attn", 10), d);
    assert_string_equal(d, "blk.0.attn");
    /* C0 controls, DEL and backslash as \xNN (lowercase); NUL too */
    textesc_bytes(d, sizeof d, "a\nb\\c\x7f\x1b\0z", 9);
    assert_string_equal(d, "a\\x0ab\\x5cc\\x7f\\x1b\\x00z");
    /* bytes from 0x80 up are copied unchecked; quotes stay as they are */
    textesc_bytes(d, sizeof d, "\xc3\xa9\xff'\"", 5);
    assert_string_equal(d, "\xc3\xa9\xff'\"");
    /* a unit goes in only with room left for "..." and the NUL */
    textesc_bytes(d, 10, "abcdef", 6);
    assert_string_equal(d, "abcdef");
    textesc_bytes(d, 10, "abcdefg", 7);
    assert_string_equal(d, "abcdef...");
    textesc_bytes(d, 10, "abc\ndef", 7);
    assert_string_equal(d, "abc...");
    textesc_bytes(d, 12, "ab\x01", 3);
    assert_string_equal(d, "ab\\x01");
    /* tiny buffers */
    textesc_bytes(d, 5, "a", 1);
    assert_string_equal(d, "a");
    textesc_bytes(d, 4, "a", 1);
    assert_string_equal(d, "...");
    memcpy(d, "zz", 3);
    textesc_bytes(d, 3, "a", 1);
    assert_string_equal(d, "");
    textesc_bytes(d, 1, "", 0);
    assert_string_equal(d, "");
    memcpy(d, "zz", 3);
    textesc_bytes(d, 0, "a", 1);
    assert_string_equal(d, "zz");
    /* the reader's cap: a 300-byte name is cut to 196 bytes and "..." */
    char name[300];
    memset(name, 'n', sizeof name);
    textesc_bytes(d, sizeof d, name, sizeof name);
    assert_int_equal(strlen(d), 199);
    assert_memory_equal(d + 196, "...", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c0_controls),       cmocka_unit_test(test_nul_in_middle),
        cmocka_unit_test(test_backslash_and_quotes), cmocka_unit_test(test_c1_and_bidi),
        cmocka_unit_test(test_invalid_utf8),      cmocka_unit_test(test_valid_passes),
        cmocka_unit_test(test_every_input_is_clean), cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_quoted_and_long),   cmocka_unit_test(test_bytes_form),
        cmocka_unit_test(test_c0_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
