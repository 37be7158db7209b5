/* A small backtracking regex engine (see tokenizer_regex.h). Semantics follow
 * ECMAScript as std::regex implements it: ordered alternation, greedy or lazy
 * quantifiers with backtracking, atomic lookahead. */
#include "tokenizer_regex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_unicode.h"

enum { RX_CLASS, RX_SEQ, RX_ALT, RX_REPEAT, RX_LOOK, RX_NLOOK, RX_BOL, RX_EOL };

typedef struct {
    uint8_t bits[32];      /* membership of codepoints 0..255 */
    bool high_all;         /* every codepoint >= 256 is a member (before negation) */
    bool negated;
    uint32_t nranges;      /* ranges for codepoints >= 256 */
    uint32_t (*ranges)[2];
} rx_class;

typedef struct rx_node rx_node;
struct rx_node {
    int type;
    int cls;               /* RX_CLASS: index into classes */
    int min, max;          /* RX_REPEAT: max < 0 = unbounded */
    bool greedy;
    int nkids;
    rx_node **kids;
};

struct tok__rx {
    rx_node *root;
    rx_class *classes;
    int nclasses;
    bool collapsed;
};

/* ---------------- compiling ---------------- */

typedef struct {
    const uint32_t *p;     /* pattern codepoints */
    size_t n, i;
    tok__rx *rx;
    char *err;
    size_t errcap;
    bool failed;
} parser;

static void perr(parser *ps, const char *msg)
{
    if (!ps->failed && ps->err && ps->errcap)
        snprintf(ps->err, ps->errcap, "regex: %s at %zu", msg, ps->i);
    ps->failed = true;
}

static rx_node *node_new(parser *ps, int type)
{
    rx_node *n = calloc(1, sizeof *n);
    if (!n)
        perr(ps, "out of memory");
    else
        n->type = type;
    return n;
}

static void node_free(rx_node *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->nkids; i++)
        node_free(n->kids[i]);
    free(n->kids);
    free(n);
}

static bool node_add(parser *ps, rx_node *n, rx_node *kid)
{
    rx_node **k = realloc(n->kids, (size_t)(n->nkids + 1) * sizeof *k);
    if (!k) {
        perr(ps, "out of memory");
        node_free(kid);
        return false;
    }
    n->kids = k;
    n->kids[n->nkids++] = kid;
    return true;
}

static int class_new(parser *ps)
{
    rx_class *c = realloc(ps->rx->classes, (size_t)(ps->rx->nclasses + 1) * sizeof *c);
    if (!c) {
        perr(ps, "out of memory");
        return -1;
    }
    ps->rx->classes = c;
    memset(&c[ps->rx->nclasses], 0, sizeof *c);
    return ps->rx->nclasses++;
}

static void class_range(parser *ps, rx_class *c, uint32_t lo, uint32_t hi)
{
    for (uint32_t x = lo; x <= hi && x < 256; x++)
        c->bits[x >> 3] |= (uint8_t)(1u << (x & 7));
    if (hi >= 256) {
        uint32_t (*r)[2] = realloc(c->ranges, (c->nranges + 1) * sizeof *r);
        if (!r) {
            perr(ps, "out of memory");
            return;
        }
        c->ranges = r;
        c->ranges[c->nranges][0] = lo < 256 ? 256 : lo;
        c->ranges[c->nranges][1] = hi;
        c->nranges++;
    }
}

/* ECMAScript \s \d \w as std::regex sees them in the "C" locale. */
static void class_pred(parser *ps, rx_class *c, uint32_t which, bool neg)
{
    uint8_t set[32] = {0};
    for (uint32_t x = 0; x < 128; x++) {
        bool in = which == 's' ? ((x >= 9 && x <= 13) || x == 32)
                : which == 'd' ? (x >= '0' && x <= '9')
                               : ((x >= '0' && x <= '9') || (x >= 'A' && x <= 'Z') ||
                                  (x >= 'a' && x <= 'z') || x == '_');
        if (in)
            set[x >> 3] |= (uint8_t)(1u << (x & 7));
    }
    if (neg) {
        for (int k = 0; k < 32; k++)
            set[k] = (uint8_t)~set[k];
        c->high_all = true;
    }
    for (int k = 0; k < 32; k++)
        c->bits[k] |= set[k];
    (void)ps;
}

/* \p{X} in a collapsed pattern: the category's stand-in byte plus its ASCII
 * members, as llama.cpp's unicode_regex_split spells them. */
static bool class_prop(parser *ps, rx_class *c)
{
    /* at "{" after \p */
    char name[8];
    size_t k = 0;
    if (ps->i >= ps->n || ps->p[ps->i] != '{') {
        perr(ps, "\\p without {");
        return false;
    }
    ps->i++;
    while (ps->i < ps->n && ps->p[ps->i] != '}' && k < sizeof name - 1)
        name[k++] = (char)ps->p[ps->i++];
    name[k] = 0;
    if (ps->i >= ps->n || ps->p[ps->i] != '}') {
        perr(ps, "unterminated \\p{");
        return false;
    }
    ps->i++;
    ps->rx->collapsed = true;
    if (!strcmp(name, "N")) {
        class_range(ps, c, 0xD1, 0xD1);
        class_range(ps, c, '0', '9');
    } else if (!strcmp(name, "L") || !strcmp(name, "Lu") || !strcmp(name, "Ll") ||
               !strcmp(name, "Lt") || !strcmp(name, "Lm") || !strcmp(name, "Lo")) {
        class_range(ps, c, 0xD2, 0xD2);
        class_range(ps, c, 'A', 'Z');
        class_range(ps, c, 'a', 'z');
    } else if (!strcmp(name, "P")) {
        static const char *punct = "!\"#%&'()*,-./:;?@[\\]_{}";
        class_range(ps, c, 0xD3, 0xD3);
        for (const char *q = punct; *q; q++)
            class_range(ps, c, (uint8_t)*q, (uint8_t)*q);
    } else if (!strcmp(name, "M")) {
        class_range(ps, c, 0xD4, 0xD4);
    } else if (!strcmp(name, "S")) {
        static const char *sym = "$+<=>^`|~";
        class_range(ps, c, 0xD5, 0xD5);
        for (const char *q = sym; *q; q++)
            class_range(ps, c, (uint8_t)*q, (uint8_t)*q);
    } else {
        perr(ps, "unsupported \\p{} class");
        return false;
    }
    return true;
}

static int hexval(uint32_t c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (int)(c - 'A' + 10);
    return -1;
}

/* After a backslash: a single character escape. Returns the codepoint, or
 * fills the class (and returns UINT32_MAX) for \s \d \w \p. */
static uint32_t parse_escape(parser *ps, rx_class *c)
{
    if (ps->i >= ps->n) {
        perr(ps, "trailing backslash");
        return 0;
    }
    uint32_t e = ps->p[ps->i++];
    switch (e) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'f': return '\f';
    case 'v': return '\v';
    case '0': return 0;
    case 's': case 'd': case 'w':
        class_pred(ps, c, e, false);
        return UINT32_MAX;
    case 'S': case 'D': case 'W':
        class_pred(ps, c, e + 32, true);
        return UINT32_MAX;
    case 'p':
        class_prop(ps, c);
        return UINT32_MAX;
    case 'x': case 'u': {
        int digits = e == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (int k = 0; k < digits; k++) {
            int h = ps->i < ps->n ? hexval(ps->p[ps->i]) : -1;
            if (h < 0) {
                perr(ps, "bad hex escape");
                return 0;
            }
            v = v * 16 + (uint32_t)h;
            ps->i++;
        }
        return v;
    }
    default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
            perr(ps, "unsupported escape");
            return 0;
        }
        return e;   /* escaped punctuation stands for itself */
    }
}

static rx_node *class_node(parser *ps, int ci)
{
    rx_node *n = node_new(ps, RX_CLASS);
    if (n)
        n->cls = ci;
    return n;
}

static rx_node *parse_bracket(parser *ps)
{
    /* at the character after '[' */
    int ci = class_new(ps);
    if (ci < 0)
        return NULL;
    rx_class *c = &ps->rx->classes[ci];
    if (ps->i < ps->n && ps->p[ps->i] == '^') {
        c->negated = true;
        ps->i++;
    }
    bool first = true;
    while (!ps->failed) {
        if (ps->i >= ps->n) {
            perr(ps, "unterminated [");
            return NULL;
        }
        uint32_t ch = ps->p[ps->i];
        if (ch == ']' && !first) {
            ps->i++;
            break;
        }
        first = false;
        ps->i++;
        uint32_t lo = ch;
        if (ch == '\\') {
            lo = parse_escape(ps, c);
            c = &ps->rx->classes[ci];
            if (lo == UINT32_MAX)
                continue;
        }
        if (ps->i + 1 < ps->n && ps->p[ps->i] == '-' && ps->p[ps->i + 1] != ']') {
            ps->i++;
            uint32_t hi = ps->p[ps->i++];
            if (hi == '\\') {
                hi = parse_escape(ps, c);
                if (hi == UINT32_MAX) {
                    perr(ps, "class escape as range end");
                    return NULL;
                }
            }
            if (hi < lo) {
                perr(ps, "bad range");
                return NULL;
            }
            class_range(ps, c, lo, hi);
        } else {
            class_range(ps, c, lo, lo);
        }
    }
    return ps->failed ? NULL : class_node(ps, ci);
}

static rx_node *parse_alt(parser *ps);

static rx_node *parse_atom(parser *ps)
{
    uint32_t ch = ps->p[ps->i++];
    if (ch == '(') {
        int type = RX_SEQ;
        if (ps->i + 1 < ps->n && ps->p[ps->i] == '?') {
            uint32_t k = ps->p[ps->i + 1];
            if (k == ':')
                type = RX_SEQ;
            else if (k == '=')
                type = RX_LOOK;
            else if (k == '!')
                type = RX_NLOOK;
            else {
                perr(ps, "unsupported group");
                return NULL;
            }
            ps->i += 2;
        }
        rx_node *inner = parse_alt(ps);
        if (!inner)
            return NULL;
        if (ps->i >= ps->n || ps->p[ps->i] != ')') {
            perr(ps, "missing )");
            node_free(inner);
            return NULL;
        }
        ps->i++;
        if (type == RX_SEQ)
            return inner;
        rx_node *look = node_new(ps, type);
        if (!look || !node_add(ps, look, inner)) {
            node_free(look);
            return NULL;
        }
        return look;
    }
    if (ch == '[')
        return parse_bracket(ps);
    if (ch == '^')
        return node_new(ps, RX_BOL);
    if (ch == '$')
        return node_new(ps, RX_EOL);
    int ci = class_new(ps);
    if (ci < 0)
        return NULL;
    if (ch == '.') {
        class_range(ps, &ps->rx->classes[ci], 0, 0x10FFFF);
        class_range(ps, &ps->rx->classes[ci], '\n', '\n');   /* toggled below */
        rx_class *c = &ps->rx->classes[ci];
        c->bits['\n' >> 3] &= (uint8_t)~(1u << ('\n' & 7));
        c->bits['\r' >> 3] &= (uint8_t)~(1u << ('\r' & 7));
        return class_node(ps, ci);
    }
    if (ch == '\\') {
        uint32_t lit = parse_escape(ps, &ps->rx->classes[ci]);
        if (ps->failed)
            return NULL;
        if (lit != UINT32_MAX)
            class_range(ps, &ps->rx->classes[ci], lit, lit);
        return class_node(ps, ci);
    }
    if (ch == ')' || ch == '|' || ch == '*' || ch == '+' || ch == '?' || ch == '{') {
        perr(ps, "unexpected metacharacter");
        return NULL;
    }
    class_range(ps, &ps->rx->classes[ci], ch, ch);
    return class_node(ps, ci);
}

static bool parse_int(parser *ps, int *out)
{
    int v = 0;
    bool any = false;
    while (ps->i < ps->n && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9' && v < 100000) {
        v = v * 10 + (int)(ps->p[ps->i++] - '0');
        any = true;
    }
    *out = v;
    return any;
}

static rx_node *parse_seq(parser *ps)
{
    rx_node *seq = node_new(ps, RX_SEQ);
    if (!seq)
        return NULL;
    while (ps->i < ps->n && ps->p[ps->i] != '|' && ps->p[ps->i] != ')') {
        rx_node *a = parse_atom(ps);
        if (!a) {
            node_free(seq);
            return NULL;
        }
        while (ps->i < ps->n) {
            uint32_t q = ps->p[ps->i];
            int mn, mx;
            if (q == '*') {
                mn = 0, mx = -1;
                ps->i++;
            } else if (q == '+') {
                mn = 1, mx = -1;
                ps->i++;
            } else if (q == '?') {
                mn = 0, mx = 1;
                ps->i++;
            } else if (q == '{') {
                size_t save = ps->i++;
                if (!parse_int(ps, &mn)) {
                    ps->i = save;
                    perr(ps, "bad {}");
                    break;
                }
                mx = mn;
                if (ps->i < ps->n && ps->p[ps->i] == ',') {
                    ps->i++;
                    if (!parse_int(ps, &mx))
                        mx = -1;
                }
                if (ps->i >= ps->n || ps->p[ps->i] != '}' || (mx >= 0 && mx < mn)) {
                    perr(ps, "bad {}");
                    break;
                }
                ps->i++;
            } else {
                break;
            }
            rx_node *r = node_new(ps, RX_REPEAT);
            if (!r || !node_add(ps, r, a)) {
                node_free(r);
                a = NULL;
                break;
            }
            r->min = mn;
            r->max = mx;
            r->greedy = true;
            if (ps->i < ps->n && ps->p[ps->i] == '?') {
                r->greedy = false;
                ps->i++;
            }
            a = r;
        }
        if (ps->failed || !a) {
            node_free(a);
            node_free(seq);
            return NULL;
        }
        if (!node_add(ps, seq, a)) {
            node_free(seq);
            return NULL;
        }
    }
    return seq;
}

static rx_node *parse_alt(parser *ps)
{
    rx_node *first = parse_seq(ps);
    if (!first)
        return NULL;
    if (ps->i >= ps->n || ps->p[ps->i] != '|')
        return first;
    rx_node *alt = node_new(ps, RX_ALT);
    if (!alt || !node_add(ps, alt, first)) {
        node_free(alt);
        return NULL;
    }
    while (ps->i < ps->n && ps->p[ps->i] == '|') {
        ps->i++;
        rx_node *s = parse_seq(ps);
        if (!s || !node_add(ps, alt, s)) {
            node_free(alt);
            return NULL;
        }
    }
    return alt;
}

tok__rx *tok__rx_compile(const char *pattern, char *err, size_t errcap)
{
    size_t blen = strlen(pattern), n = 0;
    uint32_t *cps = malloc((blen + 1) * sizeof *cps);
    tok__rx *rx = calloc(1, sizeof *rx);
    if (!cps || !rx) {
        free(cps);
        free(rx);
        if (err && errcap)
            snprintf(err, errcap, "regex: out of memory");
        return NULL;
    }
    bool non_ascii = false;
    for (size_t i = 0; i < blen;) {
        cps[n] = tok__utf8_next((const uint8_t *)pattern, blen, &i);
        non_ascii |= cps[n] >= 0x80;
        n++;
    }
    parser ps = {cps, n, 0, rx, err, errcap, false};
    rx->root = parse_alt(&ps);
    if (!ps.failed && ps.i != n)
        perr(&ps, "unbalanced )");
    if (!ps.failed && rx->collapsed && non_ascii)
        perr(&ps, "pattern mixes \\p{} classes and non-ASCII characters");
    free(cps);
    if (ps.failed || !rx->root) {
        if (!ps.failed && err && errcap)
            snprintf(err, errcap, "regex: compile failed");
        tok__rx_free(rx);
        return NULL;
    }
    return rx;
}

void tok__rx_free(tok__rx *rx)
{
    if (!rx)
        return;
    node_free(rx->root);
    for (int i = 0; i < rx->nclasses; i++)
        free(rx->classes[i].ranges);
    free(rx->classes);
    free(rx);
}

bool tok__rx_collapsed(const tok__rx *rx)
{
    return rx->collapsed;
}

uint32_t tok__rx_subject(uint32_t cp, uint32_t f, bool collapsed)
{
    if (cp < 0x80)
        return cp;
    if (f & TOK_UC_WS)
        return 0x0B;
    if (!collapsed)
        return cp;
    if (f & TOK_UC_N) return 0xD1;
    if (f & TOK_UC_L) return 0xD2;
    if (f & TOK_UC_P) return 0xD3;
    if (f & TOK_UC_M) return 0xD4;
    if (f & TOK_UC_S) return 0xD5;
    return 0xD0;
}

/* ---------------- matching ---------------- */

static bool class_has(const rx_class *c, uint32_t x)
{
    bool in;
    if (x < 256) {
        in = (c->bits[x >> 3] >> (x & 7)) & 1;
    } else {
        in = c->high_all;
        for (uint32_t k = 0; !in && k < c->nranges; k++)
            in = x >= c->ranges[k][0] && x <= c->ranges[k][1];
    }
    return in != c->negated;
}

/* A continuation: match seq->kids[idx..] (kind 0) or one more iteration of a
 * repeat (kind 1, `count` done so far, the last one started at `from`), then
 * `next`. */
typedef struct cont {
    const rx_node *n;
    int kind, idx;
    int count;
    size_t from;
    const struct cont *next;
} cont;

typedef struct {
    const tok__rx *rx;
    const uint32_t *s;
    size_t n;
    size_t end;
    unsigned depth;
} matcher;

static bool m_node(matcher *m, const rx_node *nd, size_t pos, const cont *k);
static bool m_rep(matcher *m, const rx_node *nd, int count, size_t pos, const cont *k);

static bool m_cont(matcher *m, size_t pos, const cont *k)
{
    if (!k) {
        m->end = pos;
        return true;
    }
    if (k->kind == 1) {
        if (pos == k->from && k->count > k->n->min)
            return false;   /* an empty iteration cannot help */
        return m_rep(m, k->n, k->count, pos, k->next);
    }
    if (k->idx >= k->n->nkids)
        return m_cont(m, pos, k->next);
    cont c = {k->n, 0, k->idx + 1, 0, 0, k->next};
    return m_node(m, k->n->kids[k->idx], pos, &c);
}

static bool m_rep(matcher *m, const rx_node *nd, int count, size_t pos, const cont *k)
{
    bool can_more = nd->max < 0 || count < nd->max;
    cont c = {nd, 1, 0, count + 1, pos, k};
    if (count < nd->min)
        return m_node(m, nd->kids[0], pos, &c);
    if (nd->greedy) {
        if (can_more && m_node(m, nd->kids[0], pos, &c))
            return true;
        return m_cont(m, pos, k);
    }
    if (m_cont(m, pos, k))
        return true;
    return can_more && m_node(m, nd->kids[0], pos, &c);
}

static bool m_node(matcher *m, const rx_node *nd, size_t pos, const cont *k)
{
    if (++m->depth > 4000) {   /* pathological pattern: give up on this start */
        m->depth--;
        return false;
    }
    bool ok = false;
    switch (nd->type) {
    case RX_CLASS:
        ok = pos < m->n && class_has(&m->rx->classes[nd->cls], m->s[pos]) && m_cont(m, pos + 1, k);
        break;
    case RX_SEQ: {
        cont c = {nd, 0, 0, 0, 0, k};
        ok = m_cont(m, pos, &c);
        break;
    }
    case RX_ALT:
        for (int i = 0; i < nd->nkids && !ok; i++)
            ok = m_node(m, nd->kids[i], pos, k);
        break;
    case RX_REPEAT:
        if (nd->kids[0]->type == RX_CLASS) {
            /* one character per iteration: count the run, then back off */
            const rx_class *c = &m->rx->classes[nd->kids[0]->cls];
            size_t run = 0, lim = nd->max < 0 ? m->n - pos : (size_t)nd->max;
            while (run < lim && pos + run < m->n && class_has(c, m->s[pos + run]))
                run++;
            if (run < (size_t)nd->min)
                break;
            if (nd->greedy) {
                for (size_t r = run + 1; r-- > (size_t)nd->min && !ok;)
                    ok = m_cont(m, pos + r, k);
            } else {
                for (size_t r = (size_t)nd->min; r <= run && !ok; r++)
                    ok = m_cont(m, pos + r, k);
            }
        } else {
            ok = m_rep(m, nd, 0, pos, k);
        }
        break;
    case RX_LOOK:
    case RX_NLOOK: {
        size_t save = m->end;
        bool hit = m_node(m, nd->kids[0], pos, NULL);
        m->end = save;
        ok = (hit == (nd->type == RX_LOOK)) && m_cont(m, pos, k);
        break;
    }
    case RX_BOL:
        ok = pos == 0 && m_cont(m, pos, k);
        break;
    case RX_EOL:
        ok = pos == m->n && m_cont(m, pos, k);
        break;
    }
    m->depth--;
    return ok;
}

bool tok__rx_search(const tok__rx *rx, const uint32_t *s, size_t n, size_t from,
                    size_t *mb, size_t *me)
{
    matcher m = {rx, s, n, 0, 0};
    for (size_t p = from; p < n; p++) {
        m.depth = 0;
        if (m_node(&m, rx->root, p, NULL) && m.end > p) {
            *mb = p;
            *me = m.end;
            return true;
        }
    }
    return false;
}
