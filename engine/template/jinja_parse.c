/* jinja: the parser (tokens to the AST) and jinja_parse / jinja_free.
 * The grammar follows @huggingface/jinja 0.5 (see jinja.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

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
        v->v = ja_realloc(p->a, v->v, v->n, cap, sizeof *v->v);
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
    parser p = {.a = &t->arena, .f = f};
    p.t = jinja_tokenize(t, f, &p.nt);
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
