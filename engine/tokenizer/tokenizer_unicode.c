/* Lookups in the generated Unicode tables, and UTF-8 coding. */
#include "tokenizer_unicode.h"

#include <pthread.h>

int tok__uspace(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20;
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
        return 1;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

static uint32_t uflags_search(uint32_t cp)
{
    uint32_t lo = 0, hi = tok__ucat_nranges;   /* last range with first <= cp */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tok__ucat_ranges[mid].first <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return tok__ucat_ranges[lo].flags;
}

/* The Basic Multilingual Plane expanded into a direct table (64 KiB), built once. */
static uint8_t bmp[0x10000];
static pthread_once_t bmp_once = PTHREAD_ONCE_INIT;

static void bmp_init(void)
{
    for (uint32_t cp = 0; cp < 0x10000; cp++)
        bmp[cp] = (uint8_t)uflags_search(cp);
}

uint32_t tok__uflags(uint32_t cp)
{
    uint32_t f;
    if (cp < 0x10000) {
        pthread_once(&bmp_once, bmp_init);
        f = bmp[cp];
    } else if (cp < 0x110000) {
        f = uflags_search(cp);
    } else {
        return TOK_UC_UNDEF;
    }
    if (tok__uspace(cp))
        f |= TOK_UC_WS;
    return f;
}

uint32_t tok__ulowercase(uint32_t cp)
{
    uint32_t lo = 0, hi = tok__ulower_n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tok__ulower[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < tok__ulower_n && tok__ulower[lo].cp == cp ? tok__ulower[lo].to : cp;
}

size_t tok__utf8_len(uint8_t lead)
{
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[lead >> 4];
}

uint32_t tok__utf8_next(const uint8_t *s, size_t n, size_t *i)
{
    size_t k = *i;
    uint8_t c = s[k];
    if (c < 0x80) {
        *i = k + 1;
        return c;
    }
    /* same acceptance rules as llama.cpp's unicode_cpt_from_utf8 */
    if (!(c & 0x40))
        goto bad;
    if (!(c & 0x20)) {
        if (k + 1 >= n || (s[k + 1] & 0xC0) != 0x80)
            goto bad;
        *i = k + 2;
        return ((uint32_t)(c & 0x1F) << 6) | (s[k + 1] & 0x3F);
    }
    if (!(c & 0x10)) {
        if (k + 2 >= n || (s[k + 1] & 0xC0) != 0x80 || (s[k + 2] & 0xC0) != 0x80)
            goto bad;
        *i = k + 3;
        return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[k + 1] & 0x3F) << 6) | (s[k + 2] & 0x3F);
    }
    if (!(c & 0x08)) {
        if (k + 3 >= n || (s[k + 1] & 0xC0) != 0x80 || (s[k + 2] & 0xC0) != 0x80 ||
            (s[k + 3] & 0xC0) != 0x80)
            goto bad;
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[k + 1] & 0x3F) << 12) |
                      ((uint32_t)(s[k + 2] & 0x3F) << 6) | (s[k + 3] & 0x3F);
        if (cp > 0x10FFFF)
            goto bad;   /* llama.cpp would throw later; we keep the text usable */
        *i = k + 4;
        return cp;
    }
bad:
    *i = k + 1;
    return 0xFFFD;
}

size_t tok__utf8_put(uint32_t cp, uint8_t *out)
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}
