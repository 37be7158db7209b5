/* jinja: arena, errors, preprocessing and the lexer.
 * The lexer follows @huggingface/jinja 0.5 (see jinja.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"
#include "textesc.h"

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

void *ja_realloc(jarena *a, const void *old, size_t n, size_t cap, size_t size)
{
    void *p = ja_alloc(a, cap * size);
    if (n)
        memcpy(p, old, n * size);
    return p;
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
 * its control characters as escapes (\n \r \t \xNN; backslashes and bytes
 * >= 0x80 as they are), so a message is one line of plain text (no newline,
 * no terminal escape sequence). The text is cut where its escaped form
 * reaches 507 bytes, never inside an escape. */
static void escape_controls(char *msg, size_t cap)
{
    enum { FLAGS = TEXTESC_C0_ONLY | TEXTESC_RAW_BACKSLASH, CUT = 507 };
    char tmp[sizeof ((jinja_error *)0)->msg];
    size_t len = strlen(msg);
    size_t i = textesc_term(tmp, CUT + 1, msg, len, FLAGS);
    size_t o = strlen(tmp);
    if (i < len && o < CUT) /* the escape that crosses the cut is kept whole */
        textesc_term(tmp + o, sizeof tmp - o, msg + i, 1, FLAGS);
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
        b->s = ja_realloc(a, b->s, b->n, cap, 1);
        b->map = ja_realloc(a, b->map, b->n, cap, sizeof *b->map);
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
        L->t = ja_realloc(L->a, L->t, L->nt, cap, sizeof *L->t);
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

jtok *jinja_tokenize(jinja_template *t, jfail *f, size_t *nt)
{
    ppbuf pp;
    preprocess(&t->arena, t->src, t->src_len, &pp);
    t->posmap = pp.map;
    t->posmap_len = pp.n;
    f->posmap = pp.map;
    f->posmap_len = pp.n;
    lexer L = {.a = &t->arena, .f = f, .src = pp.s, .len = pp.n};
    lex(&L);
    *nt = L.nt;
    return L.t;
}
