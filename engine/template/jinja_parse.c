/* jinja: arena, errors, preprocessing, lexer and parser.
 * The lexer and the grammar follow @huggingface/jinja 0.5 (see jinja.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

/* ------------------------------------------------------------------ arena */

void *ja_alloc(jarena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    jarena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 - sizeof(jarena_chunk) ? n : 65536 - sizeof(jarena_chunk);
        if (a->limit && (a->total + cap + sizeof(jarena_chunk) > a->limit || cap > a->limit))
        {
            if (a->limit % (1u << 20) == 0)
                jfail_at(a->fail, (uint32_t)-1, JINJA_ELIMIT, "template too costly: more than %zu MiB of memory (max_bytes)",
                         a->limit >> 20);
            jfail_at(a->fail, (uint32_t)-1, JINJA_ELIMIT, "template too costly: more than %zu bytes of memory (max_bytes)",
                     a->limit);
        }
        c = malloc(sizeof(jarena_chunk) + cap);
        if (!c)
            jfail_at(a->fail, (uint32_t)-1, JINJA_ENOMEM, "out of memory");
        a->total += sizeof(jarena_chunk) + cap;
        c->cap = cap;
        c->used = 0;
        /* a big block gets its own chunk behind the current one, so the
         * current chunk's free space stays usable */
        if (a->head && n > 65536 / 2) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

char *ja_memdup(jarena *a, const void *p, size_t n)
{
    char *d = ja_alloc(a, n + 1);
    if (n)
        memcpy(d, p, n);
    d[n] = 0;
    return d;
}

void ja_release(jarena *a)
{
    jarena_chunk *c = a->head;
    while (c) {
        jarena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->total = 0;
}

/* ------------------------------------------------------------------ errors */

static void locate(const jfail *f, uint32_t pos, jinja_error *e)
{
    e->line = e->col = 0;
    e->offset = 0;
    if (pos == (uint32_t)-1 || !f->src)
        return;
    size_t off = pos;
    if (f->posmap) {
        off = pos < f->posmap_len ? f->posmap[pos] : f->src_len;
    }
    if (off > f->src_len)
        off = f->src_len;
    int line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
        if (f->src[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    e->line = line;
    e->col = col;
    e->offset = off;
}

/* Messages quote template text (tokens, raise_exception's argument): write
 * its control characters as escapes, so a message is one line of plain
 * text (no newline, no terminal escape sequence). */
static void escape_controls(char *msg, size_t cap)
{
    char tmp[sizeof ((jinja_error *)0)->msg];
    size_t o = 0;
    for (const char *p = msg; *p && o + 5 < sizeof tmp; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != 0x7f) {
            tmp[o++] = (char)c;
            continue;
        }
        const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (esc)
            o += (size_t)snprintf(tmp + o, sizeof tmp - o, "%s", esc);
        else
            o += (size_t)snprintf(tmp + o, sizeof tmp - o, "\\x%02x", c);
    }
    tmp[o] = 0;
    snprintf(msg, cap, "%s", tmp);
}

_Noreturn void jfail_at(jfail *f, uint32_t pos, jinja_status code, const char *fmt, ...)
{
    jinja_error *e = f->err;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    escape_controls(e->msg, sizeof e->msg);
    locate(f, pos, e);
    longjmp(f->jb, 1);
}

const char *jinja_error_format(const jinja_error *err, char *buf, size_t cap)
{
    if (!buf || !cap)
        return buf;
    if (err->line > 0)
        snprintf(buf, cap, "line %d, column %d: %s", err->line, err->col, err->msg);
    else
        snprintf(buf, cap, "%s", err->msg);
    return buf;
}

/* ------------------------------------------------------------- whitespace */

/* Decode one UTF-8 code point; returns its length (1 for invalid bytes). */
static size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80 || n < 2) {
        *cp = u[0];
        return 1;
    }
    if ((u[0] & 0xE0) == 0xC0 && (u[1] & 0xC0) == 0x80) {
        *cp = ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
        return 2;
    }
    if ((u[0] & 0xF0) == 0xE0 && n >= 3 && (u[1] & 0xC0) == 0x80 && (u[2] & 0xC0) == 0x80) {
        *cp = ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
        return 3;
    }
    if ((u[0] & 0xF8) == 0xF0 && n >= 4 && (u[1] & 0xC0) == 0x80 && (u[2] & 0xC0) == 0x80 &&
        (u[3] & 0xC0) == 0x80) {
        *cp = ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) |
              ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
        return 4;
    }
    *cp = u[0];
    return 1;
}

static bool is_js_space(uint32_t c)
{
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

size_t jinja_ws_at(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned char c = (unsigned char)s[0];
    if (c < 0x80)
        return is_js_space(c) ? 1 : 0;
    if (c != 0xC2 && c != 0xE1 && c != 0xE2 && c != 0xE3 && c != 0xEF)
        return 0;
    uint32_t cp;
    size_t l = utf8_decode(s, n, &cp);
    return l > 1 && is_js_space(cp) ? l : 0;
}

size_t jinja_ws_before(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    if ((unsigned char)s[n - 1] < 0x80)
        return is_js_space((unsigned char)s[n - 1]) ? 1 : 0;
    for (size_t l = 2; l <= 3 && l <= n; l++)
        if (jinja_ws_at(s + n - l, l) == l)
            return l;
    return 0;
}

/* ------------------------------------------------------------ preprocess */

typedef struct {
    char *s;
    uint32_t *map;
    size_t n, cap;
} ppbuf;

static void pp_put(jarena *a, ppbuf *b, char c, uint32_t orig)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        char *s = ja_alloc(a, cap);
        uint32_t *m = ja_alloc(a, cap * sizeof *m);
        if (b->n) {
            memcpy(s, b->s, b->n);
            memcpy(m, b->map, b->n * sizeof *m);
        }
        b->s = s;
        b->map = m;
        b->cap = cap;
    }
    b->s[b->n] = c;
    b->map[b->n] = orig;
    b->n++;
}

/* Room for n bytes (the rewrites only ever shrink the text). */
static void pp_init(jarena *a, ppbuf *b, size_t n)
{
    b->cap = n + 1;
    b->s = ja_alloc(a, b->cap);
    b->map = ja_alloc(a, b->cap * sizeof *b->map);
    b->n = 0;
}

/* The three text rewrites @huggingface/jinja makes before lexing. */
static void preprocess(jarena *a, const char *src, size_t len, ppbuf *out)
{
    if (len && src[len - 1] == '\n')
        len--;
    /* lstrip_blocks: spaces/tabs at a line start before {# {% {- go */
    ppbuf b1;
    pp_init(a, &b1, len);
    for (size_t i = 0; i < len;) {
        bool line_start = i == 0 || src[i - 1] == '\n' || src[i - 1] == '\r';
        if (line_start) {
            size_t j = i;
            while (j < len && (src[j] == ' ' || src[j] == '\t'))
                j++;
            if (j > i && j + 1 < len && src[j] == '{' && (src[j + 1] == '#' || src[j + 1] == '%' || src[j + 1] == '-'))
                i = j;
        }
        pp_put(a, &b1, src[i], (uint32_t)i);
        i++;
    }
    /* trim_blocks: a newline right after #} %} -} goes */
    ppbuf b2;
    pp_init(a, &b2, b1.n);
    for (size_t i = 0; i < b1.n;) {
        if (i + 2 < b1.n && (b1.s[i] == '#' || b1.s[i] == '%' || b1.s[i] == '-') && b1.s[i + 1] == '}' &&
            b1.s[i + 2] == '\n') {
            pp_put(a, &b2, b1.s[i], b1.map[i]);
            pp_put(a, &b2, b1.s[i + 1], b1.map[i + 1]);
            i += 3;
            continue;
        }
        pp_put(a, &b2, b1.s[i], b1.map[i]);
        i++;
    }
    /* {% generation %} / {% endgeneration %} markers are dropped */
    pp_init(a, out, b2.n);
    size_t floor_out = 0; /* output index before which whitespace may not be removed */
    for (size_t i = 0; i < b2.n;) {
        if (b2.s[i] == '{' && i + 1 < b2.n && b2.s[i + 1] == '%') {
            size_t j = i + 2, l;
            bool lstrip = false, rstrip = false;
            if (j < b2.n && b2.s[j] == '-') {
                lstrip = true;
                j++;
            }
            while ((l = jinja_ws_at(b2.s + j, b2.n - j)))
                j += l;
            if (b2.n - j >= 3 && !memcmp(b2.s + j, "end", 3) && b2.n - j >= 13 && !memcmp(b2.s + j + 3, "generation", 10))
                j += 3;
            if (b2.n - j >= 10 && !memcmp(b2.s + j, "generation", 10)) {
                j += 10;
                while ((l = jinja_ws_at(b2.s + j, b2.n - j)))
                    j += l;
                if (j < b2.n && b2.s[j] == '-') {
                    rstrip = true;
                    j++;
                }
                if (b2.n - j >= 2 && b2.s[j] == '%' && b2.s[j + 1] == '}') {
                    j += 2;
                    if (lstrip)
                        while (out->n > floor_out && (l = jinja_ws_before(out->s + floor_out, out->n - floor_out)))
                            out->n -= l;
                    size_t k = j;
                    while ((l = jinja_ws_at(b2.s + k, b2.n - k)))
                        k += l;
                    if (!rstrip)
                        for (size_t q = j; q < k; q++)
                            pp_put(a, out, b2.s[q], b2.map[q]);
                    i = k;
                    floor_out = out->n;
                    continue;
                }
            }
        }
        pp_put(a, out, b2.s[i], b2.map[i]);
        i++;
    }
}

/* ------------------------------------------------------------------ lexer */

typedef enum {
    T_EOF, T_TEXT, T_NUM, T_STR, T_IDENT, T_EQUALS, T_LPAREN, T_RPAREN, T_OPEN_STMT, T_CLOSE_STMT,
    T_OPEN_EXPR, T_CLOSE_EXPR, T_LBRACKET, T_RBRACKET, T_LBRACE, T_RBRACE, T_COMMA, T_DOT, T_COLON,
    T_PIPE, T_ADD, T_MUL, T_POW, T_CMP, T_UNARY, T_COMMENT,
} ttype;

typedef struct {
    uint8_t type;
    uint32_t pos;
    const char *s;
    size_t n;
} jtok;

typedef struct {
    jarena *a;
    jfail *f;
    const char *src;
    size_t len, cur;
    jtok *t;
    size_t nt, cap;
} lexer;

static void lex_push(lexer *L, ttype type, uint32_t pos, const char *s, size_t n)
{
    if (L->nt == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jtok *t = ja_alloc(L->a, cap * sizeof *t);
        if (L->nt)
            memcpy(t, L->t, L->nt * sizeof *t);
        L->t = t;
        L->cap = cap;
    }
    L->t[L->nt++] = (jtok){(uint8_t)type, pos, s, n};
}

static ttype lex_last(const lexer *L)
{
    return L->nt ? (ttype)L->t[L->nt - 1].type : T_EOF;
}

static void put_utf8(char *d, size_t *n, uint32_t cp)
{
    if (cp < 0x80) {
        d[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        d[(*n)++] = (char)(0xC0 | (cp >> 6));
        d[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        d[(*n)++] = (char)(0xE0 | (cp >> 12));
        d[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        d[(*n)++] = (char)(0xF0 | (cp >> 18));
        d[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        d[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string literal's body up to the closing quote, escapes decoded. */
static void lex_string(lexer *L, char q)
{
    uint32_t start = (uint32_t)L->cur;
    L->cur++;
    /* the decoded text is never longer than the literal */
    size_t end = L->cur;
    while (end < L->len && L->src[end] != q)
        end += L->src[end] == '\\' ? 2 : 1;
    if (end > L->len)
        end = L->len;
    char *d = ja_alloc(L->a, end - L->cur + 1);
    size_t n = 0;
    while (L->cur < L->len && L->src[L->cur] != q) {
        char c = L->src[L->cur];
        if (c == '\\') {
            if (++L->cur >= L->len)
                jfail_at(L->f, start, JINJA_ESYNTAX, "unexpected end of input in a string");
            char e = L->src[L->cur++];
            if (e == 'x' || e == 'u') {
                size_t w = e == 'x' ? 2 : 4;
                uint32_t cp = 0;
                for (size_t k = 0; k < w; k++) {
                    int h = L->cur + k < L->len ? hexval(L->src[L->cur + k]) : -1;
                    if (h < 0)
                        jfail_at(L->f, (uint32_t)L->cur, JINJA_ESYNTAX, "invalid hexadecimal escape sequence \\%c", e);
                    cp = cp * 16 + (uint32_t)h;
                }
                L->cur += w;
                /* a surrogate pair written as two \u escapes is one character */
                if (cp >= 0xD800 && cp < 0xDC00 && L->cur + 6 <= L->len && L->src[L->cur] == '\\' &&
                    L->src[L->cur + 1] == 'u') {
                    uint32_t lo = 0;
                    bool ok = true;
                    for (size_t k = 0; k < 4; k++) {
                        int h = hexval(L->src[L->cur + 2 + k]);
                        if (h < 0)
                            ok = false;
                        lo = lo * 16 + (uint32_t)(h < 0 ? 0 : h);
                    }
                    if (ok && lo >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        L->cur += 6;
                    }
                }
                if (cp >= 0xD800 && cp < 0xE000)
                    cp = 0xFFFD; /* a lone surrogate cannot be UTF-8 */
                put_utf8(d, &n, cp);
                continue;
            }
            char r;
            switch (e) {
            case 'n': r = '\n'; break;
            case 't': r = '\t'; break;
            case 'r': r = '\r'; break;
            case 'b': r = '\b'; break;
            case 'f': r = '\f'; break;
            case 'v': r = '\v'; break;
            case '\'': r = '\''; break;
            case '"': r = '"'; break;
            case '\\': r = '\\'; break;
            default:
                jfail_at(L->f, (uint32_t)L->cur - 2, JINJA_ESYNTAX, "unexpected escaped character: %c", e);
            }
            d[n++] = r;
            continue;
        }
        d[n++] = c;
        L->cur++;
    }
    if (L->cur >= L->len)
        jfail_at(L->f, start, JINJA_ESYNTAX, "unexpected end of input: unterminated string");
    L->cur++; /* closing quote */
    d[n] = 0;
    lex_push(L, T_STR, start, d, n);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static size_t lex_digits(lexer *L)
{
    size_t s = L->cur;
    while (L->cur < L->len && is_digit(L->src[L->cur]))
        L->cur++;
    if (L->cur > s && L->cur >= L->len)
        jfail_at(L->f, (uint32_t)s, JINJA_ESYNTAX, "unexpected end of input");
    return L->cur - s;
}

static void strip_trailing_ws(lexer *L)
{
    if (L->nt && L->t[L->nt - 1].type == T_TEXT) {
        jtok *t = &L->t[L->nt - 1];
        size_t l;
        while ((l = jinja_ws_before(t->s, t->n)))
            t->n -= l;
        if (t->n == 0)
            L->nt--;
    }
}

static void skip_ws(lexer *L)
{
    size_t l;
    while (L->cur < L->len && (l = jinja_ws_at(L->src + L->cur, L->len - L->cur)))
        L->cur += l;
}

static const struct {
    const char *seq;
    ttype type;
} SEQS[] = {
    {"{%", T_OPEN_STMT}, {"%}", T_CLOSE_STMT}, {"{{", T_OPEN_EXPR}, {"}}", T_CLOSE_EXPR},
    {"(", T_LPAREN}, {")", T_RPAREN}, {"{", T_LBRACE}, {"}", T_RBRACE}, {"[", T_LBRACKET},
    {"]", T_RBRACKET}, {",", T_COMMA}, {".", T_DOT}, {":", T_COLON}, {"|", T_PIPE},
    {"<=", T_CMP}, {">=", T_CMP}, {"==", T_CMP}, {"!=", T_CMP}, {"<", T_CMP}, {">", T_CMP},
    {"+", T_ADD}, {"-", T_ADD}, {"~", T_ADD}, {"**", T_POW}, {"*", T_MUL}, {"//", T_MUL},
    {"/", T_MUL}, {"%", T_MUL}, {"=", T_EQUALS},
};

static void lex(lexer *L)
{
    int curly = 0;
    const char *s = L->src;
    while (L->cur < L->len) {
        ttype last = lex_last(L);
        if (last == T_EOF || last == T_CLOSE_STMT || last == T_CLOSE_EXPR || last == T_COMMENT) {
            size_t st = L->cur;
            while (L->cur < L->len &&
                   !(s[L->cur] == '{' && L->cur + 1 < L->len &&
                     (s[L->cur + 1] == '%' || s[L->cur + 1] == '{' || s[L->cur + 1] == '#')))
                L->cur++;
            if (L->cur > st) {
                lex_push(L, T_TEXT, (uint32_t)st, s + st, L->cur - st);
                continue;
            }
        }
        size_t rem = L->len - L->cur;
        const char *p = s + L->cur;
        if (rem >= 2 && p[0] == '{' && p[1] == '#') {
            uint32_t st = (uint32_t)L->cur;
            L->cur += 2;
            bool strip_before = L->cur < L->len && s[L->cur] == '-';
            if (strip_before)
                L->cur++;
            size_t cs = L->cur;
            while (!(L->cur + 1 < L->len && s[L->cur] == '#' && s[L->cur + 1] == '}')) {
                if (L->cur + 2 >= L->len)
                    jfail_at(L->f, st, JINJA_ESYNTAX, "missing end of comment tag '#}'");
                L->cur++;
            }
            size_t ce = L->cur;
            bool strip_after = ce > cs && s[ce - 1] == '-';
            if (strip_before)
                strip_trailing_ws(L);
            lex_push(L, T_COMMENT, st, s + cs, ce - cs - strip_after);
            L->cur += 2;
            if (strip_after)
                skip_ws(L);
            continue;
        }
        if (rem >= 3 && p[0] == '{' && p[1] == '%' && p[2] == '-') {
            strip_trailing_ws(L);
            lex_push(L, T_OPEN_STMT, (uint32_t)L->cur, p, 2);
            L->cur += 3;
            continue;
        }
        if (rem >= 3 && p[0] == '{' && p[1] == '{' && p[2] == '-') {
            strip_trailing_ws(L);
            lex_push(L, T_OPEN_EXPR, (uint32_t)L->cur, p, 2);
            curly = 0;
            L->cur += 3;
            continue;
        }
        {
            size_t st = L->cur, l;
            while (L->cur < L->len && (l = jinja_ws_at(s + L->cur, L->len - L->cur)))
                L->cur += l;
            if (L->cur > st && L->cur >= L->len)
                jfail_at(L->f, (uint32_t)st, JINJA_ESYNTAX, "unexpected end of input inside a tag");
        }
        rem = L->len - L->cur;
        p = s + L->cur;
        if (rem == 0)
            break;
        if (rem >= 3 && p[0] == '-' && p[1] == '%' && p[2] == '}') {
            lex_push(L, T_CLOSE_STMT, (uint32_t)L->cur, p + 1, 2);
            L->cur += 3;
            skip_ws(L);
            continue;
        }
        if (rem >= 3 && p[0] == '-' && p[1] == '}' && p[2] == '}') {
            lex_push(L, T_CLOSE_EXPR, (uint32_t)L->cur, p + 1, 2);
            L->cur += 3;
            skip_ws(L);
            continue;
        }
        char c = p[0];
        if (c == '-' || c == '+') {
            ttype lt = lex_last(L);
            if (lt == T_TEXT || lt == T_EOF)
                jfail_at(L->f, (uint32_t)L->cur, JINJA_ESYNTAX, "unexpected character: %c", c);
            if (!(lt == T_IDENT || lt == T_NUM || lt == T_STR || lt == T_RPAREN || lt == T_RBRACKET)) {
                uint32_t st = (uint32_t)L->cur;
                L->cur++;
                size_t nd = lex_digits(L);
                if (nd > 0 && L->cur + 1 < L->len && s[L->cur] == '.' && is_digit(s[L->cur + 1])) {
                    L->cur++;
                    lex_digits(L);
                }
                if (nd > 0)
                    lex_push(L, T_NUM, st, s + st, L->cur - st);
                else
                    lex_push(L, T_UNARY, st, s + st, 1);
                continue;
            }
        }
        bool matched = false;
        for (size_t k = 0; k < sizeof SEQS / sizeof SEQS[0]; k++) {
            size_t sl = strlen(SEQS[k].seq);
            if (SEQS[k].type == T_CLOSE_EXPR && curly > 0)
                continue;
            if (rem >= sl && !memcmp(p, SEQS[k].seq, sl)) {
                lex_push(L, SEQS[k].type, (uint32_t)L->cur, p, sl);
                if (SEQS[k].type == T_OPEN_EXPR)
                    curly = 0;
                else if (SEQS[k].type == T_LBRACE)
                    curly++;
                else if (SEQS[k].type == T_RBRACE)
                    curly--;
                L->cur += sl;
                matched = true;
                break;
            }
        }
        if (matched)
            continue;
        if (c == '\'' || c == '"') {
            lex_string(L, c);
            continue;
        }
        if (is_digit(c)) {
            uint32_t st = (uint32_t)L->cur;
            lex_digits(L);
            if (lex_last(L) != T_DOT && L->cur + 1 < L->len && s[L->cur] == '.' && is_digit(s[L->cur + 1])) {
                L->cur++;
                lex_digits(L);
            }
            lex_push(L, T_NUM, st, s + st, L->cur - st);
            continue;
        }
        if (is_word(c)) {
            uint32_t st = (uint32_t)L->cur;
            while (L->cur < L->len && is_word(s[L->cur]))
                L->cur++;
            lex_push(L, T_IDENT, st, s + st, L->cur - st);
            continue;
        }
        if ((unsigned char)c >= 0x80) {
            uint32_t cp;
            size_t l = utf8_decode(p, rem, &cp);
            jfail_at(L->f, (uint32_t)L->cur, JINJA_ESYNTAX, "unexpected character: %.*s", (int)l, p);
        }
        jfail_at(L->f, (uint32_t)L->cur, JINJA_ESYNTAX, "unexpected character: %c", c);
    }
    lex_push(L, T_EOF, (uint32_t)L->len, "", 0);
}

/* ----------------------------------------------------------------- parser */

typedef struct {
    jarena *a;
    jfail *f;
    jtok *t;
    size_t nt, cur;
    int depth;
} parser;

static const char *TNAMES[] = {
    "end of template", "text", "number", "string", "identifier", "'='", "'('", "')'", "'{%'", "'%}'",
    "'{{'", "'}}'", "'['", "']'", "'{'", "'}'", "','", "'.'", "':'", "'|'", "operator", "operator",
    "'**'", "comparison", "unary operator", "comment",
};

static jtok *P(parser *p) { return &p->t[p->cur]; }

static bool is_t(parser *p, ttype t) { return p->t[p->cur].type == t; }

static bool tok_is(const jtok *t, const char *word)
{
    return t->type == T_IDENT && strlen(word) == t->n && !memcmp(t->s, word, t->n);
}

static bool is_ident(parser *p, const char *word) { return tok_is(P(p), word); }

static bool is_ident2(parser *p, const char *w1, const char *w2)
{
    return tok_is(P(p), w1) && p->cur + 1 < p->nt && tok_is(&p->t[p->cur + 1], w2);
}

static _Noreturn void perr(parser *p, const char *what)
{
    jtok *t = P(p);
    if (t->type == T_EOF)
        jfail_at(p->f, t->pos, JINJA_ESYNTAX, "%s, got the end of the template", what);
    jfail_at(p->f, t->pos, JINJA_ESYNTAX, "%s, got %s '%.*s'", what, TNAMES[t->type], (int)(t->n > 40 ? 40 : t->n), t->s);
}

static jtok *expect(parser *p, ttype t, const char *what)
{
    if (!is_t(p, t))
        perr(p, what);
    return &p->t[p->cur++];
}

static void expect_ident(parser *p, const char *w)
{
    if (!is_ident(p, w)) {
        char m[64];
        snprintf(m, sizeof m, "expected '%s'", w);
        perr(p, m);
    }
    p->cur++;
}

/* {% name ...: the current token opens a statement named one of `names`. */
static bool is_stmt(parser *p, const char *const *names)
{
    if (!is_t(p, T_OPEN_STMT) || p->cur + 1 >= p->nt)
        return false;
    for (; *names; names++)
        if (tok_is(&p->t[p->cur + 1], *names))
            return true;
    return false;
}

static jnode *node(parser *p, jnode_kind k, uint32_t pos)
{
    jnode *n = ja_alloc(p->a, sizeof *n);
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)k;
    n->pos = pos;
    return n;
}

typedef struct {
    jnode **v;
    uint32_t n, cap;
} nvec;

static void nv_push(parser *p, nvec *v, jnode *n)
{
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 8;
        jnode **nv = ja_alloc(p->a, cap * sizeof *nv);
        if (v->n)
            memcpy(nv, v->v, v->n * sizeof *nv);
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = n;
}

static jlist nv_list(nvec *v) { return (jlist){v->v, v->n}; }

static void enter(parser *p)
{
    if (++p->depth > JINJA_MAX_PARSE_DEPTH)
        jfail_at(p->f, P(p)->pos, JINJA_ELIMIT, "template nested deeper than %d levels", JINJA_MAX_PARSE_DEPTH);
}

static jnode *parse_any(parser *p);
static jnode *parse_expr(parser *p);
static jnode *parse_primary(parser *p);
static jnode *parse_call(parser *p, jnode *callee);

/* Statements until one of `ends` opens; error at the end of the template. */
static jlist parse_until(parser *p, const char *const *ends, const char *what)
{
    nvec v = {0};
    while (!is_stmt(p, ends)) {
        if (is_t(p, T_EOF)) {
            char m[96];
            snprintf(m, sizeof m, "missing {%% %s %%}", what);
            perr(p, m);
        }
        nv_push(p, &v, parse_any(p));
    }
    return nv_list(&v);
}

static jnode *parse_seq(parser *p, bool primary)
{
    uint32_t pos = P(p)->pos;
    jnode *first = primary ? parse_primary(p) : parse_expr(p);
    if (!is_t(p, T_COMMA))
        return first;
    nvec v = {0};
    nv_push(p, &v, first);
    while (is_t(p, T_COMMA)) {
        p->cur++;
        nv_push(p, &v, primary ? parse_primary(p) : parse_expr(p));
    }
    jnode *n = node(p, JN_TUPLE, pos);
    n->body = nv_list(&v);
    return n;
}

static jlist parse_args(parser *p, bool params)
{
    expect(p, T_LPAREN, "expected '('");
    nvec v = {0};
    bool saw_kw = false, saw_spread = false;
    while (!is_t(p, T_RPAREN)) {
        if (is_t(p, T_EOF))
            perr(p, "expected ')'");
        jtok *t = P(p);
        bool kwspread = t->type == T_POW;
        bool spread = t->type == T_MUL && t->n == 1 && t->s[0] == '*';
        if (params && (kwspread || spread))
            perr(p, "argument unpacking is not allowed in parameter declarations");
        if (kwspread) {
            p->cur++;
            jnode *n = node(p, JN_KWSPREAD, t->pos);
            n->a = parse_expr(p);
            nv_push(p, &v, n);
            if (is_t(p, T_COMMA))
                p->cur++;
            if (!is_t(p, T_RPAREN))
                perr(p, "'**' must be applied to the final argument");
            break;
        }
        jnode *arg;
        if (spread) {
            if (saw_spread)
                perr(p, "only one '*' argument unpacking is allowed");
            saw_spread = true;
            p->cur++;
            arg = node(p, JN_SPREAD, t->pos);
            arg->a = parse_expr(p);
        } else {
            arg = parse_expr(p);
            if (is_t(p, T_EQUALS)) {
                p->cur++;
                if (arg->kind != JN_IDENT)
                    jfail_at(p->f, arg->pos, JINJA_ESYNTAX, "expected an identifier before '='");
                jnode *kw = node(p, JN_KWARG, arg->pos);
                kw->s = arg->s;
                kw->slen = arg->slen;
                kw->a = parse_expr(p);
                arg = kw;
            }
            if (params) {
                if (arg->kind != JN_IDENT && arg->kind != JN_KWARG)
                    jfail_at(p->f, arg->pos, JINJA_ESYNTAX, "expected an identifier for a parameter");
                /* the duplicate search below is quadratic; real macros take a handful */
                if (v.n >= JINJA_MAX_PARAMS)
                    jfail_at(p->f, arg->pos, JINJA_ELIMIT, "template too costly: a macro with more than %d parameters",
                             JINJA_MAX_PARAMS);
                for (uint32_t k = 0; k < v.n; k++)
                    if (v.v[k]->slen == arg->slen && !memcmp(v.v[k]->s, arg->s, arg->slen))
                        jfail_at(p->f, arg->pos, JINJA_ESYNTAX, "duplicate parameter name: %.*s", (int)arg->slen, arg->s);
            }
            if (arg->kind == JN_KWARG)
                saw_kw = true;
            else if (saw_kw)
                jfail_at(p->f, arg->pos, JINJA_ESYNTAX,
                         params ? "non-default argument follows default argument"
                                : "positional arguments must come before keyword arguments");
            else if (saw_spread && arg->kind != JN_SPREAD)
                jfail_at(p->f, arg->pos, JINJA_ESYNTAX, "positional arguments must not follow '*' unpacking");
        }
        nv_push(p, &v, arg);
        if (is_t(p, T_COMMA))
            p->cur++;
    }
    expect(p, T_RPAREN, "expected ')'");
    return nv_list(&v);
}

static jnode *parse_subscript(parser *p)
{
    uint32_t pos = P(p)->pos;
    jnode *parts[4] = {0};
    int n = 0;
    bool slice = false;
    while (!is_t(p, T_RBRACKET)) {
        if (is_t(p, T_EOF))
            perr(p, "expected ']'");
        if (n >= 4)
            perr(p, "expected at most 3 parts in a slice");
        if (is_t(p, T_COLON)) {
            parts[n++] = NULL;
            p->cur++;
            slice = true;
        } else {
            parts[n++] = parse_expr(p);
            if (is_t(p, T_COLON)) {
                p->cur++;
                slice = true;
            }
        }
    }
    if (n == 0)
        perr(p, "expected an index or a slice");
    if (slice) {
        if (n > 3)
            perr(p, "expected at most 3 parts in a slice");
        jnode *s = node(p, JN_SLICE, pos);
        s->a = parts[0];
        s->b = n > 1 ? parts[1] : NULL;
        s->c = n > 2 ? parts[2] : NULL;
        return s;
    }
    return parts[0];
}

static jnode *parse_member(parser *p, jnode *obj)
{
    while (is_t(p, T_DOT) || is_t(p, T_LBRACKET)) {
        jtok *op = &p->t[p->cur++];
        jnode *m = node(p, JN_MEMBER, op->pos);
        m->a = obj;
        if (op->type == T_LBRACKET) {
            enter(p);
            m->flag = true;
            m->b = parse_subscript(p);
            p->depth--;
            expect(p, T_RBRACKET, "expected ']'");
        } else {
            m->b = parse_primary(p);
            if (m->b->kind != JN_IDENT && m->b->kind != JN_INT)
                jfail_at(p->f, m->b->pos, JINJA_ESYNTAX, "expected an identifier or an integer after '.'");
        }
        obj = m;
    }
    return obj;
}

static jnode *parse_call(parser *p, jnode *callee)
{
    for (;;) {
        jnode *c = node(p, JN_CALL, callee->pos);
        c->a = callee;
        c->body = parse_args(p, false);
        callee = parse_member(p, c);
        if (!is_t(p, T_LPAREN))
            return callee;
    }
}

static jnode *parse_primary(parser *p)
{
    enter(p);
    jtok *t = &p->t[p->cur];
    jnode *n = NULL;
    switch (t->type) {
    case T_NUM: {
        p->cur++;
        char buf[64];
        size_t l = t->n < sizeof buf - 1 ? t->n : sizeof buf - 1;
        memcpy(buf, t->s, l);
        buf[l] = 0;
        if (memchr(t->s, '.', t->n)) {
            n = node(p, JN_FLOAT, t->pos);
            n->f = strtod(buf, NULL);
        } else {
            n = node(p, JN_INT, t->pos);
            errno = 0;
            long long v = strtoll(buf, NULL, 10);
            if (errno == ERANGE) {
                n->kind = JN_FLOAT;
                n->flag = true; /* still an integer by type */
                n->f = strtod(buf, NULL);
            } else {
                n->i = v;
            }
        }
        break;
    }
    case T_STR: {
        p->cur++;
        size_t total = t->n;
        size_t k = p->cur;
        while (p->t[k].type == T_STR)
            total += p->t[k++].n;
        n = node(p, JN_STR, t->pos);
        if (k == p->cur) {
            n->s = t->s;
            n->slen = t->n;
        } else {
            char *d = ja_alloc(p->a, total + 1);
            size_t o = 0;
            memcpy(d, t->s, t->n);
            o = t->n;
            while (p->cur < k) {
                memcpy(d + o, p->t[p->cur].s, p->t[p->cur].n);
                o += p->t[p->cur].n;
                p->cur++;
            }
            d[o] = 0;
            n->s = d;
            n->slen = o;
        }
        break;
    }
    case T_IDENT:
        p->cur++;
        n = node(p, JN_IDENT, t->pos);
        n->s = t->s;
        n->slen = t->n;
        break;
    case T_LPAREN:
        p->cur++;
        n = parse_seq(p, false);
        expect(p, T_RPAREN, "expected ')'");
        break;
    case T_LBRACKET: {
        p->cur++;
        nvec v = {0};
        while (!is_t(p, T_RBRACKET)) {
            if (is_t(p, T_EOF))
                perr(p, "expected ']'");
            nv_push(p, &v, parse_expr(p));
            if (is_t(p, T_COMMA))
                p->cur++;
        }
        p->cur++;
        n = node(p, JN_ARRAY, t->pos);
        n->body = nv_list(&v);
        break;
    }
    case T_LBRACE: {
        p->cur++;
        nvec k = {0}, v = {0};
        while (!is_t(p, T_RBRACE)) {
            if (is_t(p, T_EOF))
                perr(p, "expected '}'");
            nv_push(p, &k, parse_expr(p));
            expect(p, T_COLON, "expected ':' between a key and its value");
            nv_push(p, &v, parse_expr(p));
            if (is_t(p, T_COMMA))
                p->cur++;
        }
        p->cur++;
        n = node(p, JN_OBJECT, t->pos);
        n->body = nv_list(&k);
        n->alt = nv_list(&v);
        break;
    }
    default:
        perr(p, "unexpected token");
    }
    p->depth--;
    return n;
}

static jnode *parse_unary_sign(parser *p)
{
    jtok *t = P(p);
    if ((t->type == T_UNARY || t->type == T_ADD) && t->n == 1 && (t->s[0] == '-' || t->s[0] == '+')) {
        p->cur++;
        enter(p);
        jnode *n = node(p, JN_UNARY, t->pos);
        n->op = t->s[0] == '-' ? JOP_NEG : JOP_POS;
        n->a = parse_unary_sign(p);
        p->depth--;
        return n;
    }
    jnode *m = parse_member(p, parse_primary(p));
    if (is_t(p, T_LPAREN))
        return parse_call(p, m);
    return m;
}

static jnode *parse_filter_expr(parser *p)
{
    jnode *operand = parse_unary_sign(p);
    while (is_t(p, T_PIPE)) {
        uint32_t pos = P(p)->pos;
        p->cur++;
        jnode *f = parse_primary(p);
        if (f->kind != JN_IDENT)
            jfail_at(p->f, f->pos, JINJA_ESYNTAX, "expected an identifier for the filter");
        if (is_t(p, T_LPAREN))
            f = parse_call(p, f);
        jnode *n = node(p, JN_FILTER, pos);
        n->a = operand;
        n->b = f;
        operand = n;
    }
    return operand;
}

static jnode *parse_test_expr(parser *p)
{
    jnode *operand = parse_filter_expr(p);
    while (is_ident(p, "is")) {
        uint32_t pos = P(p)->pos;
        p->cur++;
        bool neg = is_ident(p, "not");
        if (neg)
            p->cur++;
        jnode *t = parse_primary(p);
        if (t->kind != JN_IDENT)
            jfail_at(p->f, t->pos, JINJA_ESYNTAX, "expected an identifier for the test");
        jnode *n = node(p, JN_TEST, pos);
        n->a = operand;
        n->s = t->s;
        n->slen = t->slen;
        n->flag = neg;
        operand = n;
    }
    return operand;
}

static jnode *binary(parser *p, jtok *t, jop op, jnode *l, jnode *r)
{
    jnode *n = node(p, JN_BINARY, t->pos);
    n->op = (uint8_t)op;
    n->a = l;
    n->b = r;
    return n;
}

static jnode *parse_pow(parser *p)
{
    jnode *l = parse_test_expr(p);
    while (is_t(p, T_POW)) {
        jtok *t = &p->t[p->cur++];
        l = binary(p, t, JOP_POW, l, parse_test_expr(p));
    }
    return l;
}

static jnode *parse_mul(parser *p)
{
    jnode *l = parse_pow(p);
    while (is_t(p, T_MUL)) {
        jtok *t = &p->t[p->cur++];
        jop op = t->n == 2 ? JOP_FLOORDIV : t->s[0] == '*' ? JOP_MUL : t->s[0] == '/' ? JOP_DIV : JOP_MOD;
        l = binary(p, t, op, l, parse_pow(p));
    }
    return l;
}

static jnode *parse_add(parser *p)
{
    jnode *l = parse_mul(p);
    while (is_t(p, T_ADD)) {
        jtok *t = &p->t[p->cur++];
        jop op = t->s[0] == '+' ? JOP_ADD : t->s[0] == '-' ? JOP_SUB : JOP_CONCAT;
        l = binary(p, t, op, l, parse_mul(p));
    }
    return l;
}

static jnode *parse_cmp(parser *p)
{
    jnode *l = parse_add(p);
    for (;;) {
        jtok *t = P(p);
        jop op;
        if (is_ident2(p, "not", "in")) {
            op = JOP_NOTIN;
            p->cur += 2;
        } else if (is_ident(p, "in")) {
            op = JOP_IN;
            p->cur++;
        } else if (is_t(p, T_CMP)) {
            p->cur++;
            if (t->n == 2)
                op = t->s[0] == '<' ? JOP_LE : t->s[0] == '>' ? JOP_GE : t->s[0] == '=' ? JOP_EQ : JOP_NE;
            else
                op = t->s[0] == '<' ? JOP_LT : JOP_GT;
        } else {
            return l;
        }
        l = binary(p, t, op, l, parse_add(p));
    }
}

static jnode *parse_not(parser *p)
{
    if (is_ident(p, "not")) {
        jtok *t = &p->t[p->cur++];
        enter(p);
        jnode *n = node(p, JN_UNARY, t->pos);
        n->op = JOP_NOT;
        n->a = parse_not(p);
        p->depth--;
        return n;
    }
    return parse_cmp(p);
}

static jnode *parse_and(parser *p)
{
    jnode *l = parse_not(p);
    while (is_ident(p, "and")) {
        jtok *t = &p->t[p->cur++];
        l = binary(p, t, JOP_AND, l, parse_not(p));
    }
    return l;
}

static jnode *parse_or(parser *p)
{
    jnode *l = parse_and(p);
    while (is_ident(p, "or")) {
        jtok *t = &p->t[p->cur++];
        l = binary(p, t, JOP_OR, l, parse_and(p));
    }
    return l;
}

static jnode *parse_expr(parser *p)
{
    enter(p);
    jnode *a = parse_or(p);
    if (is_ident(p, "if")) {
        uint32_t pos = P(p)->pos;
        p->cur++;
        jnode *test = parse_or(p);
        if (is_ident(p, "else")) {
            p->cur++;
            jnode *n = node(p, JN_TERNARY, pos);
            n->a = test;
            n->b = a;
            n->c = parse_expr(p);
            a = n;
        } else {
            jnode *n = node(p, JN_SELECT, pos);
            n->a = a;
            n->b = test;
            a = n;
        }
    }
    p->depth--;
    return a;
}

static bool uses_name(const jnode *n, const char *name, int depth);

static bool list_uses(const jlist *l, const char *name, int depth)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (uses_name(l->v[i], name, depth))
            return true;
    return false;
}

/* Whether an identifier `name` appears anywhere under n (varargs/kwargs). */
static bool uses_name(const jnode *n, const char *name, int depth)
{
    if (!n || depth > 4 * JINJA_MAX_PARSE_DEPTH)
        return false;
    if (n->kind == JN_IDENT && n->slen == strlen(name) && !memcmp(n->s, name, n->slen))
        return true;
    return uses_name(n->a, name, depth + 1) || uses_name(n->b, name, depth + 1) ||
           uses_name(n->c, name, depth + 1) || list_uses(&n->body, name, depth + 1) ||
           list_uses(&n->alt, name, depth + 1) || list_uses(&n->args, name, depth + 1);
}

static jnode *parse_if(parser *p, uint32_t pos)
{
    static const char *const STOP[] = {"elif", "else", "endif", NULL};
    static const char *const END[] = {"endif", NULL};
    enter(p);
    jnode *n = node(p, JN_IF, pos);
    n->a = parse_expr(p);
    expect(p, T_CLOSE_STMT, "expected '%}'");
    n->body = parse_until(p, STOP, "endif");
    if (is_stmt(p, (const char *const[]){"elif", NULL})) {
        uint32_t epos = P(p)->pos;
        p->cur += 2;
        jnode *e = parse_if(p, epos);
        jnode **v = ja_alloc(p->a, sizeof *v);
        v[0] = e;
        n->alt = (jlist){v, 1};
    } else if (is_stmt(p, (const char *const[]){"else", NULL})) {
        p->cur += 2;
        expect(p, T_CLOSE_STMT, "expected '%}'");
        n->alt = parse_until(p, END, "endif");
    }
    p->depth--;
    return n;
}

static jnode *parse_statement(parser *p)
{
    jtok *open = expect(p, T_OPEN_STMT, "expected '{%'");
    jtok *t = P(p);
    if (t->type != T_IDENT)
        perr(p, "expected a statement name");
    uint32_t pos = open->pos;
    jnode *n;
    enter(p);
    if (tok_is(t, "set")) {
        p->cur++;
        n = node(p, JN_SET, pos);
        n->a = parse_seq(p, false);
        if (is_t(p, T_EQUALS)) {
            p->cur++;
            n->b = parse_seq(p, false);
        } else {
            expect(p, T_CLOSE_STMT, "expected '=' or '%}'");
            n->body = parse_until(p, (const char *const[]){"endset", NULL}, "endset");
            p->cur++;
            expect_ident(p, "endset");
        }
        expect(p, T_CLOSE_STMT, "expected '%}'");
    } else if (tok_is(t, "if")) {
        p->cur++;
        n = parse_if(p, pos);
        expect(p, T_OPEN_STMT, "expected '{%'");
        expect_ident(p, "endif");
        expect(p, T_CLOSE_STMT, "expected '%}'");
    } else if (tok_is(t, "macro")) {
        p->cur++;
        n = node(p, JN_MACRO, pos);
        jnode *name = parse_primary(p);
        if (name->kind != JN_IDENT)
            jfail_at(p->f, name->pos, JINJA_ESYNTAX, "expected an identifier after 'macro'");
        n->s = name->s;
        n->slen = name->slen;
        n->args = parse_args(p, true);
        expect(p, T_CLOSE_STMT, "expected '%}'");
        n->body = parse_until(p, (const char *const[]){"endmacro", NULL}, "endmacro");
        p->cur++;
        expect_ident(p, "endmacro");
        expect(p, T_CLOSE_STMT, "expected '%}'");
        n->flag = list_uses(&n->body, "varargs", 0);
        n->flag2 = list_uses(&n->body, "kwargs", 0);
    } else if (tok_is(t, "for")) {
        p->cur++;
        n = node(p, JN_FOR, pos);
        n->a = parse_seq(p, true);
        if (n->a->kind != JN_IDENT && n->a->kind != JN_TUPLE)
            jfail_at(p->f, n->a->pos, JINJA_ESYNTAX, "expected an identifier or a tuple for the loop variable");
        if (!is_ident(p, "in"))
            perr(p, "expected 'in' after the loop variable");
        p->cur++;
        n->b = parse_expr(p);
        expect(p, T_CLOSE_STMT, "expected '%}'");
        n->body = parse_until(p, (const char *const[]){"endfor", "else", NULL}, "endfor");
        if (is_stmt(p, (const char *const[]){"else", NULL})) {
            p->cur += 2;
            expect(p, T_CLOSE_STMT, "expected '%}'");
            n->alt = parse_until(p, (const char *const[]){"endfor", NULL}, "endfor");
        }
        expect(p, T_OPEN_STMT, "expected '{%'");
        expect_ident(p, "endfor");
        expect(p, T_CLOSE_STMT, "expected '%}'");
    } else if (tok_is(t, "call")) {
        p->cur++;
        n = node(p, JN_CALLBLOCK, pos);
        if (is_t(p, T_LPAREN))
            n->args = parse_args(p, true);
        jnode *callee = parse_primary(p);
        if (callee->kind != JN_IDENT)
            jfail_at(p->f, callee->pos, JINJA_ESYNTAX, "expected an identifier after 'call'");
        jnode *c = node(p, JN_CALL, callee->pos);
        c->a = callee;
        c->body = parse_args(p, false);
        n->a = c;
        expect(p, T_CLOSE_STMT, "expected '%}'");
        n->body = parse_until(p, (const char *const[]){"endcall", NULL}, "endcall");
        p->cur++;
        expect_ident(p, "endcall");
        expect(p, T_CLOSE_STMT, "expected '%}'");
        n->flag = list_uses(&n->body, "varargs", 0);
        n->flag2 = list_uses(&n->body, "kwargs", 0);
    } else if (tok_is(t, "break") || tok_is(t, "continue")) {
        n = node(p, tok_is(t, "break") ? JN_BREAK : JN_CONTINUE, pos);
        p->cur++;
        expect(p, T_CLOSE_STMT, "expected '%}'");
    } else if (tok_is(t, "filter")) {
        p->cur++;
        n = node(p, JN_FILTERBLOCK, pos);
        jnode *f = parse_primary(p);
        if (f->kind == JN_IDENT && is_t(p, T_LPAREN))
            f = parse_call(p, f);
        if (f->kind != JN_IDENT && f->kind != JN_CALL)
            jfail_at(p->f, f->pos, JINJA_ESYNTAX, "expected a filter name");
        n->b = f;
        expect(p, T_CLOSE_STMT, "expected '%}'");
        n->body = parse_until(p, (const char *const[]){"endfilter", NULL}, "endfilter");
        p->cur++;
        expect_ident(p, "endfilter");
        expect(p, T_CLOSE_STMT, "expected '%}'");
    } else {
        jfail_at(p->f, t->pos, JINJA_ESYNTAX, "unknown statement '%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
    }
    p->depth--;
    return n;
}

static jnode *parse_any(parser *p)
{
    jtok *t = P(p);
    switch (t->type) {
    case T_COMMENT: {
        p->cur++;
        return node(p, JN_COMMENT, t->pos);
    }
    case T_TEXT: {
        p->cur++;
        jnode *n = node(p, JN_TEXT, t->pos);
        n->s = t->s;
        n->slen = t->n;
        return n;
    }
    case T_OPEN_STMT:
        return parse_statement(p);
    case T_OPEN_EXPR: {
        p->cur++;
        jnode *n = node(p, JN_OUTPUT, t->pos);
        n->a = parse_expr(p);
        expect(p, T_CLOSE_EXPR, "expected '}}'");
        return n;
    }
    default:
        perr(p, "unexpected token");
    }
}

/* ------------------------------------------------------------------ entry */

jinja_template *jinja_parse(const char *src, size_t len, jinja_error *err)
{
    jinja_error dummy;
    if (!err)
        err = &dummy;
    memset(err, 0, sizeof *err);
    if (!src) {
        err->code = JINJA_EARG;
        snprintf(err->msg, sizeof err->msg, "no template text");
        return NULL;
    }
    if (len > JINJA_MAX_SOURCE) {
        err->code = JINJA_ELIMIT;
        snprintf(err->msg, sizeof err->msg, "template larger than %u bytes", JINJA_MAX_SOURCE);
        return NULL;
    }
    jinja_template *t = calloc(1, sizeof *t);
    jfail *f = calloc(1, sizeof *f);
    if (!t || !f) {
        free(t);
        free(f);
        err->code = JINJA_ENOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return NULL;
    }
    f->err = err;
    t->arena.fail = f;
    t->arena.limit = 0;
    if (setjmp(f->jb)) {
        ja_release(&t->arena);
        free(t);
        free(f);
        return NULL;
    }
    t->src = ja_memdup(&t->arena, src, len);
    t->src_len = len;
    f->src = t->src;
    f->src_len = len;
    ppbuf pp;
    preprocess(&t->arena, t->src, len, &pp);
    t->posmap = pp.map;
    t->posmap_len = pp.n;
    f->posmap = pp.map;
    f->posmap_len = pp.n;
    lexer L = {.a = &t->arena, .f = f, .src = pp.s, .len = pp.n};
    lex(&L);
    parser p = {.a = &t->arena, .f = f, .t = L.t, .nt = L.nt};
    nvec body = {0};
    while (!is_t(&p, T_EOF))
        nv_push(&p, &body, parse_any(&p));
    t->body = nv_list(&body);
    t->arena.fail = NULL;
    free(f);
    return t;
}

void jinja_free(jinja_template *t)
{
    if (!t)
        return;
    ja_release(&t->arena);
    free(t);
}
