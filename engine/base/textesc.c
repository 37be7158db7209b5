/* Escaping of untrusted text for a terminal and for JSON (see textesc.h). */
#include "textesc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char hexd[] = "0123456789abcdef";

/* Decode one strictly valid UTF-8 character of 2..4 bytes at s (n bytes
 * left, s[0] >= 0x80): returns its length and sets *cp, or 0 when the bytes
 * are not a valid character (stray continuation, overlong, surrogate, above
 * U+10FFFF, truncated). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        *cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        *cp = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        *cp = c & 0x07;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    *cp = (*cp << 6) | (s[1] & 0x3F);
    for (size_t k = 2; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        *cp = (*cp << 6) | (s[k] & 0x3F);
    }
    return len;
}

/* Valid code points that are escaped anyway: C1 controls, bidi controls
 * (ALM, LRM, RLM, LRE..RLO, LRI..PDI) and the line/paragraph separators. */
static bool cp_escaped(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Bytes copied unchanged in that form: plain ASCII, and with
 * TEXTESC_C0_ONLY every byte >= 0x80. */
static bool ascii_plain(unsigned char c, bool json, unsigned flags)
{
    if (c < 0x20 || c == 0x7F)
        return false;
    if (c >= 0x80)
        return !json && (flags & TEXTESC_C0_ONLY);
    if (json)
        return c != '"' && c != '\\';
    if (c == '\\')
        return (flags & TEXTESC_RAW_BACKSLASH) != 0;
    if (c == '"' && (flags & TEXTESC_DQUOTE))
        return false;
    if (c == '\'' && (flags & TEXTESC_SQUOTE))
        return false;
    return true;
}

static size_t put_u4(char *o, uint32_t cp)
{
    o[0] = '\\';
    o[1] = 'u';
    o[2] = hexd[(cp >> 12) & 15];
    o[3] = hexd[(cp >> 8) & 15];
    o[4] = hexd[(cp >> 4) & 15];
    o[5] = hexd[cp & 15];
    return 6;
}

/* The byte c as \xHH. */
static size_t put_x2(char *o, unsigned char c)
{
    o[0] = '\\';
    o[1] = 'x';
    o[2] = hexd[c >> 4];
    o[3] = hexd[c & 15];
    return 4;
}

/* One unit (a byte or a character) of s that is not plain ASCII: its escaped
 * (or copied) form into o (at most 6 bytes, *on its length). Returns the
 * bytes of s consumed (>= 1). */
static size_t unit(const unsigned char *s, size_t n, bool json, unsigned flags, char *o, size_t *on)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        const char *named = NULL;
        switch (c) {
        case '\n': named = "\\n"; break;
        case '\t': named = "\\t"; break;
        case '\r': named = "\\r"; break;
        case '\\': named = "\\\\"; break;
        case '"': named = "\\\""; break;
        case '\'': named = "\\'"; break;
        case '\b': named = json ? "\\b" : NULL; break;
        case '\f': named = json ? "\\f" : NULL; break;
        default: break;
        }
        if (named) {
            o[0] = named[0];
            o[1] = named[1];
            *on = 2;
        } else if (json) {
            *on = put_u4(o, c);
        } else {
            *on = put_x2(o, c);
        }
        return 1;
    }
    uint32_t cp = 0;
    size_t len = utf8_decode(s, n, &cp);
    if (!len) {
        if (json) {
            *on = put_u4(o, 0xFFFD);
        } else {
            *on = put_x2(o, c);
        }
        return 1;
    }
    if (cp_escaped(cp)) {
        *on = put_u4(o, cp);
        return len;
    }
    memcpy(o, s, len);
    *on = len;
    (void)flags;
    return len;
}

/* Shared body of textesc_term and textesc_json. */
static size_t esc_into(char *dst, size_t cap, const char *src, size_t len, bool json, unsigned flags)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0, o = 0;
    if (cap == 0)
        return 0;
    size_t room = cap - 1; /* keep one byte for the NUL */
    while (i < len) {
        size_t j = i;
        while (j < len && ascii_plain(s[j], json, flags))
            j++;
        if (j > i) {
            size_t k = j - i;
            if (k > room - o)
                k = room - o;
            memcpy(dst + o, s + i, k);
            o += k;
            i += k;
            if (i < j)
                break;
            continue;
        }
        char u[8];
        size_t un = 0, used = unit(s + i, len - i, json, flags, u, &un);
        if (un > room - o)
            break;
        memcpy(dst + o, u, un);
        o += un;
        i += used;
    }
    dst[o] = 0;
    return i;
}

size_t textesc_term(char *dst, size_t cap, const char *src, size_t len, unsigned flags)
{
    return esc_into(dst, cap, src, len, false, flags);
}

size_t textesc_json(char *dst, size_t cap, const char *src, size_t len)
{
    return esc_into(dst, cap, src, len, true, 0);
}

static int buf_reserve(textesc_buf *b, size_t more)
{
    if (more > SIZE_MAX - b->len - 1)
        return -1;
    size_t need = b->len + more + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->ptr, cap);
    if (!p)
        return -1;
    b->ptr = p;
    b->cap = cap;
    return 0;
}

int textesc_buf_put(textesc_buf *b, const char *s, size_t len)
{
    if (buf_reserve(b, len) != 0)
        return -1;
    if (len)
        memcpy(b->ptr + b->len, s, len);
    b->len += len;
    b->ptr[b->len] = 0;
    return 0;
}

static int esc_append(textesc_buf *b, const char *src, size_t len, bool json, unsigned flags)
{
    size_t old = b->len;
    /* Reserve for the plain case; grow while escapes expand it. */
    if (buf_reserve(b, len + 16) != 0)
        return -1;
    size_t i = 0;
    for (;;) {
        i += esc_into(b->ptr + b->len, b->cap - b->len, src + i, len - i, json, flags);
        b->len += strlen(b->ptr + b->len);
        if (i >= len)
            return 0;
        if (buf_reserve(b, (len - i) * 2 + 16) != 0) {
            b->len = old;
            b->ptr[old] = 0;
            return -1;
        }
    }
}

int textesc_term_append(textesc_buf *b, const char *src, size_t len, unsigned flags)
{
    return esc_append(b, src, len, false, flags);
}

int textesc_json_append(textesc_buf *b, const char *src, size_t len)
{
    return esc_append(b, src, len, true, 0);
}

char *textesc_json_quoted(const char *src, size_t len)
{
    textesc_buf b = {0};
    if (textesc_buf_put(&b, "\"", 1) != 0 || textesc_json_append(&b, src, len) != 0 || textesc_buf_put(&b, "\"", 1) != 0) {
        textesc_buf_free(&b);
        return NULL;
    }
    return b.ptr;
}

bool textesc_term_plain(const char *src, size_t len, unsigned flags)
{
    const unsigned char *s = (const unsigned char *)src;
    for (size_t i = 0; i < len;) {
        if (ascii_plain(s[i], false, flags)) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t l = s[i] >= 0x80 ? utf8_decode(s + i, len - i, &cp) : 0;
        if (!l || cp_escaped(cp))
            return false;
        i += l;
    }
    return true;
}

void textesc_buf_free(textesc_buf *b)
{
    if (!b)
        return;
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

char *textesc_bytes(char *dst, size_t cap, const char *src, size_t len)
{
    if (cap == 0)
        return dst;
    size_t k = 0; /* k <= cap - 4 after each unit: "..." and the NUL always fit */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        bool esc = c < 0x20 || c == 0x7f || c == '\\';
        if (k + (esc ? 4 : 1) + 4 > cap) {
            if (cap >= 4) {
                memcpy(dst + k, "...", 3);
                k += 3;
            }
            break;
        }
        if (esc) {
            dst[k++] = '\\';
            dst[k++] = 'x';
            dst[k++] = hexd[c >> 4];
            dst[k++] = hexd[c & 15];
        } else {
            dst[k++] = (char)c;
        }
    }
    dst[k] = 0;
    return dst;
}
