/* jinja: values and the interpreter. Semantics follow @huggingface/jinja 0.5
 * (see jinja.h); error messages follow its wording, with Jinja's type names
 * (integer, string, list, mapping...) where it names its own classes.
 *
 * Cost: step() counts statements, iterations and calls; work() counts the
 * bytes (and items) each operation touches, charged before the operation
 * runs, so no single operation runs far past jinja_limits.max_work; the
 * arena bounds memory (jinja_limits.max_bytes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

/* ----------------------------------------------------------------- values */

typedef struct jval jval;
typedef struct jscope jscope;

typedef struct {
    const char *p;
    size_t n;
} jstr;

typedef enum { JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_ARRAY, JV_OBJECT, JV_NS, JV_FUNC } jvtype;

/* builtin functions (JV_FUNC.bi) */
typedef enum {
    BI_MACRO, BI_CALLER, BI_RAISE, BI_RANGE, BI_NAMESPACE, BI_STRFTIME,
    BI_S_UPPER, BI_S_LOWER, BI_S_STRIP, BI_S_TITLE, BI_S_CAPITALIZE, BI_S_RSTRIP, BI_S_LSTRIP,
    BI_S_STARTSWITH, BI_S_ENDSWITH, BI_S_SPLIT, BI_S_REPLACE,
    BI_O_GET, BI_O_ITEMS, BI_O_KEYS, BI_O_VALUES, BI_O_DICTSORT,
} jbuiltin;

struct jval {
    uint8_t t;
    bool tuple;   /* ARRAY created from a tuple literal */
    bool kwargs;  /* OBJECT holding keyword arguments */
    bool intlike; /* FLOAT that is an integer by type (JavaScript: IntegerValue
                     holding a value beyond int64, Infinity or NaN) */
    union {
        bool b;
        int64_t i;
        double f;
        jstr s;
        struct {
            jval **v;
            size_t n, cap;
        } a;
        struct {
            jstr *k;
            jval **v;
            size_t n, cap;
        } o;
        struct {
            jbuiltin bi;
            jval *self;
            const jnode *node;
            jscope *env;
        } fn;
    } u;
};

struct jscope {
    jscope *parent;
    jstr *k;
    jval **v;
    size_t n, cap;
};

static jval V_UNDEF = {.t = JV_UNDEF};
static jval V_NONE = {.t = JV_NONE};
static jval V_TRUE = {.t = JV_BOOL, .u.b = true};
static jval V_FALSE = {.t = JV_BOOL, .u.b = false};

typedef struct {
    char *p;
    size_t n, cap;
} jbuf;

typedef struct {
    jarena a;
    jfail f;
    jinja_limits lim;
    int depth, max_depth_seen;
    uint64_t steps;
    uint64_t work;
    const jnode *cur; /* the expression or statement being evaluated (error positions) */
    jscope *global;
} jx;

enum { FLOW_NEXT = 0, FLOW_BREAK, FLOW_CONTINUE };

static _Noreturn void rerr(jx *x, const jnode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void rerr(jx *x, const jnode *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jfail_at(&x->f, n ? n->pos : (uint32_t)-1, JINJA_ERUNTIME, "%s", msg);
}

static void step(jx *x, const jnode *n)
{
    if (++x->steps > x->lim.max_steps)
        jfail_at(&x->f, n ? n->pos : (uint32_t)-1, JINJA_ELIMIT,
                 "template too costly: more than %llu steps (statements, loop iterations, calls; max_steps)",
                 (unsigned long long)x->lim.max_steps);
}

/* Bytes touched per list item walked or copied (a pointer), per scope or
 * mapping key compared (a string reference). */
#define W_ITEM sizeof(jval *)
#define W_KEY sizeof(jstr)

/* Charge n bytes of work, before doing it. */
static void work(jx *x, uint64_t n, const jnode *at)
{
    if (!at)
        at = x->cur;
    x->work += n;
    if (x->work > x->lim.max_work || x->work < n)
        jfail_at(&x->f, at ? at->pos : (uint32_t)-1, JINJA_ELIMIT,
                 "template too costly: more than %llu bytes of work (string and list operations; max_work)",
                 (unsigned long long)x->lim.max_work);
}

static void enter(jx *x, const jnode *n)
{
    if (++x->depth > x->max_depth_seen)
        x->max_depth_seen = x->depth;
    if (x->depth > x->lim.max_depth)
        jfail_at(&x->f, n ? n->pos : (uint32_t)-1, JINJA_ELIMIT,
                 "template too costly: nested deeper than %d levels (recursion?; max_depth)",
                 x->lim.max_depth);
}

static const char *tname(const jval *v)
{
    switch ((jvtype)v->t) {
    case JV_UNDEF: return "undefined";
    case JV_NONE: return "none";
    case JV_BOOL: return "boolean";
    case JV_INT: return "integer";
    case JV_FLOAT: return v->intlike ? "integer" : "float";
    case JV_STR: return "string";
    case JV_ARRAY: return v->tuple ? "tuple" : "list";
    case JV_OBJECT: return v->kwargs ? "keyword arguments" : "mapping";
    case JV_NS: return "namespace";
    case JV_FUNC: return "function";
    }
    return "?";
}

static jval *mk(jx *x, jvtype t)
{
    jval *v = ja_alloc(&x->a, sizeof *v);
    memset(v, 0, sizeof *v);
    v->t = (uint8_t)t;
    return v;
}

static jval *mk_int(jx *x, int64_t i)
{
    jval *v = mk(x, JV_INT);
    v->u.i = i;
    return v;
}

static jval *mk_float(jx *x, double f)
{
    jval *v = mk(x, JV_FLOAT);
    v->u.f = f;
    return v;
}

/* An integer-typed result computed in double precision (as JavaScript does). */
#define JS_SAFE_INT 9007199254740992.0 /* 2**53: JavaScript integers are exact up to here */

static jval *mk_intd(jx *x, double d)
{
    if (fabs(d) <= JS_SAFE_INT && floor(d) == d)
        return mk_int(x, (int64_t)d);
    jval *v = mk_float(x, d);
    v->intlike = true;
    return v;
}

static jval *mk_bool(bool b) { return b ? &V_TRUE : &V_FALSE; }

/* A string value referring to p (which must outlive the render). */
static jval *mk_str(jx *x, const char *p, size_t n)
{
    jval *v = mk(x, JV_STR);
    v->u.s.p = p;
    v->u.s.n = n;
    return v;
}

static jval *mk_arr(jx *x, size_t cap)
{
    jval *v = mk(x, JV_ARRAY);
    if (cap) {
        v->u.a.v = ja_alloc(&x->a, cap * sizeof(jval *));
        v->u.a.cap = cap;
    }
    return v;
}

static void arr_push(jx *x, jval *a, jval *e)
{
    if (a->u.a.n == a->u.a.cap) {
        size_t cap = a->u.a.cap ? a->u.a.cap * 2 : 8;
        jval **nv = ja_alloc(&x->a, cap * sizeof *nv);
        if (a->u.a.n)
            memcpy(nv, a->u.a.v, a->u.a.n * sizeof *nv);
        a->u.a.v = nv;
        a->u.a.cap = cap;
    }
    a->u.a.v[a->u.a.n++] = e;
}

static jval *mk_obj(jx *x, jvtype t)
{
    return mk(x, t);
}

static bool str_eq(jstr a, const char *p, size_t n) { return a.n == n && (n == 0 || !memcmp(a.p, p, n)); }

static long obj_find(const jval *o, const char *k, size_t n)
{
    for (size_t i = 0; i < o->u.o.n; i++)
        if (str_eq(o->u.o.k[i], k, n))
            return (long)i;
    return -1;
}

static jval *obj_get(const jval *o, const char *k, size_t n)
{
    long i = obj_find(o, k, n);
    return i < 0 ? NULL : o->u.o.v[i];
}

/* obj_find / obj_get charging the keys they walk (mappings can be large:
 * input JSON, namespace(pairs)). */
static long obj_find_w(jx *x, const jval *o, const char *k, size_t n, const jnode *at)
{
    work(x, 1 + W_KEY * o->u.o.n, at);
    return obj_find(o, k, n);
}

static jval *obj_get_w(jx *x, const jval *o, const char *k, size_t n, const jnode *at)
{
    work(x, 1 + W_KEY * o->u.o.n, at);
    return obj_get(o, k, n);
}

static void obj_set(jx *x, jval *o, const char *k, size_t n, jval *v)
{
    long i = obj_find_w(x, o, k, n, NULL);
    if (i >= 0) {
        o->u.o.v[i] = v;
        return;
    }
    if (o->u.o.n == o->u.o.cap) {
        size_t cap = o->u.o.cap ? o->u.o.cap * 2 : 8;
        jstr *nk = ja_alloc(&x->a, cap * sizeof *nk);
        jval **nv = ja_alloc(&x->a, cap * sizeof *nv);
        if (o->u.o.n) {
            memcpy(nk, o->u.o.k, o->u.o.n * sizeof *nk);
            memcpy(nv, o->u.o.v, o->u.o.n * sizeof *nv);
        }
        o->u.o.k = nk;
        o->u.o.v = nv;
        o->u.o.cap = cap;
    }
    o->u.o.k[o->u.o.n] = (jstr){k, n};
    o->u.o.v[o->u.o.n] = v;
    o->u.o.n++;
}

static jval *mk_fn(jx *x, jbuiltin bi, jval *self)
{
    jval *v = mk(x, JV_FUNC);
    v->u.fn.bi = bi;
    v->u.fn.self = self;
    return v;
}

static bool truthy(const jval *v)
{
    switch ((jvtype)v->t) {
    case JV_UNDEF:
    case JV_NONE: return false;
    case JV_BOOL: return v->u.b;
    case JV_INT: return v->u.i != 0;
    case JV_FLOAT: return v->u.f != 0 && !isnan(v->u.f);
    case JV_STR: return v->u.s.n > 0;
    case JV_ARRAY: return v->u.a.n > 0;
    case JV_OBJECT: return v->u.o.n > 0;
    case JV_NS:
    case JV_FUNC: return true;
    }
    return false;
}

static bool is_num(const jval *v) { return v->t == JV_INT || v->t == JV_FLOAT; }
static double num(const jval *v) { return v->t == JV_INT ? (double)v->u.i : v->t == JV_FLOAT ? v->u.f : v->t == JV_BOOL ? v->u.b : 0; }

/* ----------------------------------------------------------------- scopes */

static jscope *scope_new(jx *x, jscope *parent)
{
    jscope *s = ja_alloc(&x->a, sizeof *s);
    memset(s, 0, sizeof *s);
    s->parent = parent;
    return s;
}

static void scope_set(jx *x, jscope *s, const char *k, size_t n, jval *v)
{
    work(x, 1 + W_KEY * s->n, NULL);
    for (size_t i = 0; i < s->n; i++)
        if (str_eq(s->k[i], k, n)) {
            s->v[i] = v;
            return;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        jstr *nk = ja_alloc(&x->a, cap * sizeof *nk);
        jval **nv = ja_alloc(&x->a, cap * sizeof *nv);
        if (s->n) {
            memcpy(nk, s->k, s->n * sizeof *nk);
            memcpy(nv, s->v, s->n * sizeof *nv);
        }
        s->k = nk;
        s->v = nv;
        s->cap = cap;
    }
    s->k[s->n] = (jstr){k, n};
    s->v[s->n] = v;
    s->n++;
}

static jval *scope_get(jx *x, jscope *s, const char *k, size_t n)
{
    for (; s; s = s->parent) {
        work(x, 1 + W_KEY * s->n, NULL);
        for (size_t i = s->n; i-- > 0;)
            if (str_eq(s->k[i], k, n))
                return s->v[i];
    }
    return &V_UNDEF;
}

/* ------------------------------------------------------------------ buffers */

static void buf_grow(jx *x, jbuf *b, size_t add)
{
    if (b->cap - b->n >= add + 1)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->n < add + 1) {
        if (cap > SIZE_MAX / 2)
            jfail_at(&x->f, (uint32_t)-1, JINJA_ELIMIT, "output too large");
        cap *= 2;
    }
    char *p = ja_alloc(&x->a, cap);
    if (b->n)
        memcpy(p, b->p, b->n);
    b->p = p;
    b->cap = cap;
}

static void buf_add(jx *x, jbuf *b, const char *s, size_t n)
{
    if (!n)
        return;
    work(x, 4 + n, NULL);
    buf_grow(x, b, n);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void buf_adds(jx *x, jbuf *b, const char *s) { buf_add(x, b, s, strlen(s)); }

static void buf_addc(jx *x, jbuf *b, char c) { buf_add(x, b, &c, 1); }

static jval *buf_val(jx *x, jbuf *b) { return mk_str(x, b->p ? b->p : "", b->n); }

/* ------------------------------------------------------------ number text */

/* JavaScript's Number.prototype.toString(). */
static void js_num(jx *x, jbuf *b, double d)
{
    work(x, 128, NULL); /* up to 17 snprintf/strtod rounds */
    if (isnan(d)) {
        buf_adds(x, b, "NaN");
        return;
    }
    if (isinf(d)) {
        buf_adds(x, b, d < 0 ? "-Infinity" : "Infinity");
        return;
    }
    if (d == 0) {
        buf_addc(x, b, '0');
        return;
    }
    if (d < 0) {
        buf_addc(x, b, '-');
        d = -d;
    }
    /* the shortest digits that read back as d (as JavaScript prints): at each
     * precision try the correctly rounded mantissa, then its neighbours */
    char tmp[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d)
            break;
        char *e = strchr(tmp, 'e');
        int ex = atoi(e + 1);
        uint64_t m = 0;
        for (char *q = tmp; q < e; q++)
            if (*q >= '0' && *q <= '9')
                m = m * 10 + (uint64_t)(*q - '0');
        bool found = false;
        for (int dir = -1; dir <= 1 && !found; dir += 2) {
            uint64_t c = dir < 0 ? m - 1 : m + 1;
            char dig[24];
            int nd = snprintf(dig, sizeof dig, "%llu", (unsigned long long)c);
            if (nd != prec)
                continue; /* the neighbour changed the digit count: not of this precision */
            char cand[48];
            snprintf(cand, sizeof cand, "%c%s%se%d", dig[0], prec > 1 ? "." : "", dig + 1, ex);
            if (strtod(cand, NULL) == d) {
                snprintf(tmp, sizeof tmp, "%s", cand);
                found = true;
            }
        }
        if (found)
            break;
    }
    /* tmp: D[.DDD]e[+-]XX */
    char digits[24];
    int k = 0;
    const char *q = tmp;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9')
            digits[k++] = *q;
    digits[k] = 0;
    int e = atoi(q + 1);
    while (k > 1 && digits[k - 1] == '0')
        digits[--k] = 0;
    int n = e + 1;
    if (k <= n && n <= 21) {
        buf_add(x, b, digits, (size_t)k);
        for (int i = k; i < n; i++)
            buf_addc(x, b, '0');
    } else if (0 < n && n <= 21) {
        buf_add(x, b, digits, (size_t)n);
        buf_addc(x, b, '.');
        buf_add(x, b, digits + n, (size_t)(k - n));
    } else if (-6 < n && n <= 0) {
        buf_adds(x, b, "0.");
        for (int i = 0; i < -n; i++)
            buf_addc(x, b, '0');
        buf_add(x, b, digits, (size_t)k);
    } else {
        buf_addc(x, b, digits[0]);
        if (k > 1) {
            buf_addc(x, b, '.');
            buf_add(x, b, digits + 1, (size_t)(k - 1));
        }
        char ex[16];
        snprintf(ex, sizeof ex, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
        buf_adds(x, b, ex);
    }
}

static void js_int(jx *x, jbuf *b, int64_t i)
{
    work(x, 32, NULL); /* a conversion costs more than its bytes */
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)i);
    buf_adds(x, b, t);
}

/* FloatValue.toString(): integral values keep one decimal ("2.0"). */
static void float_str(jx *x, jbuf *b, double d)
{
    if (d == 0 && signbit(d)) {
        buf_adds(x, b, "-0.0");
        return;
    }
    if (isfinite(d) && fmod(d, 1.0) == 0 && fabs(d) < 1e21) {
        char t[64];
        snprintf(t, sizeof t, "%.1f", d);
        buf_adds(x, b, t);
        return;
    }
    js_num(x, b, d);
}

/* ------------------------------------------------------------------- JSON */

typedef struct {
    int64_t indent;   /* 0 = none */
    bool ensure_ascii, sort_keys;
    const char *item_sep, *key_sep;
    size_t item_sep_n, key_sep_n;
} json_opts;

static void json_str(jx *x, jbuf *b, const char *s, size_t n, bool ascii)
{
    buf_addc(x, b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        char t[16];
        size_t run = i;
        while (run < n && (unsigned char)s[run] >= 0x20 && s[run] != '"' && s[run] != '\\' &&
               !(ascii && (unsigned char)s[run] >= 0x7f))
            run++;
        if (run > i) { /* characters written as they are, in one copy */
            buf_add(x, b, s + i, run - i);
            i = run;
            continue;
        }
        switch (c) {
        case '"': buf_adds(x, b, "\\\""); i++; continue;
        case '\\': buf_adds(x, b, "\\\\"); i++; continue;
        case '\b': buf_adds(x, b, "\\b"); i++; continue;
        case '\f': buf_adds(x, b, "\\f"); i++; continue;
        case '\n': buf_adds(x, b, "\\n"); i++; continue;
        case '\r': buf_adds(x, b, "\\r"); i++; continue;
        case '\t': buf_adds(x, b, "\\t"); i++; continue;
        default: break;
        }
        if (c < 0x20) {
            snprintf(t, sizeof t, "\\u%04x", c);
            buf_adds(x, b, t);
            i++;
            continue;
        }
        if (ascii && c >= 0x7f) {
            /* decode one UTF-8 character; write UTF-16 units */
            uint32_t cp = c;
            size_t l = 1;
            if (c >= 0xF0 && i + 3 < n) {
                cp = ((uint32_t)(c & 7) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                     ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
                l = 4;
            } else if (c >= 0xE0 && i + 2 < n) {
                cp = ((uint32_t)(c & 0xF) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
                l = 3;
            } else if (c >= 0xC0 && i + 1 < n) {
                cp = ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
                l = 2;
            }
            if (cp >= 0x10000) {
                uint32_t v = cp - 0x10000;
                snprintf(t, sizeof t, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                snprintf(t, sizeof t, "\\u%04x", cp);
            }
            buf_adds(x, b, t);
            i += l;
            continue;
        }
        buf_addc(x, b, (char)c);
        i++;
    }
    buf_addc(x, b, '"');
}

static void json_pad(jx *x, jbuf *b, const json_opts *o, int depth)
{
    buf_addc(x, b, '\n');
    for (int64_t i = 0; i < o->indent * depth; i++)
        buf_addc(x, b, ' ');
}

static int key_cmp(const void *a, const void *b)
{
    const jstr *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    return c ? c : (x->n < y->n ? -1 : x->n > y->n);
}

static void to_json(jx *x, jbuf *b, const jval *v, const json_opts *o, int depth, bool undef_null, const jnode *at)
{
    if (depth > x->lim.max_depth)
        jfail_at(&x->f, at ? at->pos : (uint32_t)-1, JINJA_ELIMIT, "value nested too deeply for JSON");
    switch ((jvtype)v->t) {
    case JV_NONE: buf_adds(x, b, "null"); return;
    case JV_UNDEF: buf_adds(x, b, undef_null ? "null" : "undefined"); return;
    case JV_INT: js_int(x, b, v->u.i); return;
    case JV_FLOAT:
        if (!isfinite(v->u.f))
            buf_adds(x, b, "null");
        else
            js_num(x, b, v->u.f);
        return;
    case JV_BOOL: buf_adds(x, b, v->u.b ? "true" : "false"); return;
    case JV_STR: json_str(x, b, v->u.s.p, v->u.s.n, o->ensure_ascii); return;
    case JV_ARRAY:
        if (v->tuple)
            rerr(x, at, "Cannot convert to JSON: tuple");
        work(x, W_ITEM * v->u.a.n, at);
        buf_addc(x, b, '[');
        for (size_t i = 0; i < v->u.a.n; i++) {
            if (i)
                buf_add(x, b, o->item_sep, o->item_sep_n);
            if (o->indent)
                json_pad(x, b, o, depth + 1);
            to_json(x, b, v->u.a.v[i], o, depth + 1, undef_null, at);
        }
        if (o->indent && v->u.a.n)
            json_pad(x, b, o, depth);
        buf_addc(x, b, ']');
        return;
    case JV_OBJECT:
    case JV_NS: {
        size_t n = v->u.o.n;
        work(x, 1 + W_KEY * n, at);
        size_t *order = ja_alloc(&x->a, (n ? n : 1) * sizeof *order);
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        if (o->sort_keys && n > 1) {
            /* stable insertion sort of indices by key */
            for (size_t i = 1; i < n; i++) {
                size_t t = order[i], j = i;
                while (j > 0 && (work(x, W_KEY + v->u.o.k[t].n, at), key_cmp(&v->u.o.k[order[j - 1]], &v->u.o.k[t]) > 0)) {
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = t;
            }
        }
        buf_addc(x, b, '{');
        for (size_t i = 0; i < n; i++) {
            if (i)
                buf_add(x, b, o->item_sep, o->item_sep_n);
            if (o->indent)
                json_pad(x, b, o, depth + 1);
            json_str(x, b, v->u.o.k[order[i]].p, v->u.o.k[order[i]].n, o->ensure_ascii);
            buf_add(x, b, o->key_sep, o->key_sep_n);
            to_json(x, b, v->u.o.v[order[i]], o, depth + 1, undef_null, at);
        }
        if (o->indent && n)
            json_pad(x, b, o, depth);
        buf_addc(x, b, '}');
        return;
    }
    case JV_FUNC:
        rerr(x, at, "Cannot convert to JSON: function");
    }
}

static json_opts json_default(void)
{
    return (json_opts){0, false, false, ", ", ": ", 2, 2};
}

/* --------------------------------------------------------- value to text */

static void rt_str(jx *x, jbuf *b, const jval *v, const jnode *at);

/* `value.toString()` of the JavaScript value inside (used by + and ~). */
static void js_str(jx *x, jbuf *b, const jval *v, const jnode *at)
{
    switch ((jvtype)v->t) {
    case JV_UNDEF: buf_adds(x, b, "undefined"); return;
    case JV_NONE: buf_adds(x, b, "undefined"); return; /* NullValue holds JavaScript undefined */
    case JV_BOOL: buf_adds(x, b, v->u.b ? "true" : "false"); return;
    case JV_INT: js_int(x, b, v->u.i); return;
    case JV_FLOAT: js_num(x, b, v->u.f); return;
    case JV_STR: buf_add(x, b, v->u.s.p, v->u.s.n); return;
    case JV_ARRAY:
        work(x, W_ITEM * v->u.a.n, at);
        for (size_t i = 0; i < v->u.a.n; i++) {
            if (i)
                buf_addc(x, b, ',');
            rt_str(x, b, v->u.a.v[i], at);
        }
        return;
    case JV_OBJECT:
    case JV_NS: buf_adds(x, b, "[object Map]"); return;
    case JV_FUNC: buf_adds(x, b, "[function]"); return;
    }
}

/* RuntimeValue.toString(): what `{{ value }}` prints. */
static void rt_str(jx *x, jbuf *b, const jval *v, const jnode *at)
{
    switch ((jvtype)v->t) {
    case JV_FLOAT:
        if (v->intlike)
            js_num(x, b, v->u.f);
        else
            float_str(x, b, v->u.f);
        return;
    case JV_ARRAY:
    case JV_OBJECT:
    case JV_NS: {
        json_opts o = json_default();
        to_json(x, b, v, &o, 0, false, at);
        return;
    }
    default: js_str(x, b, v, at); return;
    }
}

/* ------------------------------------------------------------ UTF-8 text */

static size_t u8len(unsigned char c)
{
    return c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

/* Split s into code points: offsets array (n+1 entries). */
static size_t cp_offsets(jx *x, const char *s, size_t n, size_t **out)
{
    work(x, n + 1, NULL);
    size_t *o = ja_alloc(&x->a, (n + 1) * sizeof *o);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        o[k++] = i;
        size_t l = u8len((unsigned char)s[i]);
        i = i + l > n ? n : i + l;
    }
    o[k] = n;
    *out = o;
    return k;
}

/* UTF-16 length (JavaScript's String.length). */
static int64_t js_length(jx *x, const char *s, size_t n)
{
    work(x, n + 1, NULL);
    int64_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t l = u8len((unsigned char)s[i]);
        k += l == 4 ? 2 : 1;
        i += l;
    }
    return k;
}

static jval *str_trim(jx *x, const jval *v, bool left, bool right)
{
    work(x, v->u.s.n + 1, NULL);
    const char *s = v->u.s.p;
    size_t a = 0, e = v->u.s.n, l;
    if (left)
        while (a < e && (l = jinja_ws_at(s + a, e - a)))
            a += l;
    if (right)
        while (e > a && (l = jinja_ws_before(s + a, e - a)))
            e -= l;
    return mk_str(x, s + a, e - a);
}

/* Simple case mappings of the scripts chat text meets most (Latin-1,
 * Latin Extended-A, Greek, Cyrillic, fullwidth Latin); other characters
 * are left as they are. */
static uint32_t cp_upper(uint32_t c)
{
    if (c >= 'a' && c <= 'z') return c - 32;
    if (c < 0x80) return c;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c == 0xB5) return 0x39C;
    if ((c >= 0x1C4 && c <= 0x1CC) || (c >= 0x1F1 && c <= 0x1F3)) {
        uint32_t base = c >= 0x1F1 ? 0x1F1 : 0x1C4 + (c - 0x1C4) / 3 * 3;
        return base;
    }
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x131) return 'I';
        if (c == 0x17F) return 'S';
        if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c & 1 ? c - 1 : c;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return c & 1 ? c : c - 1;
        return c;
    }
    if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 32;
    switch (c) {
    case 0x3AC: return 0x386;
    case 0x3AD: return 0x388;
    case 0x3AE: return 0x389;
    case 0x3AF: return 0x38A;
    case 0x3CC: return 0x38C;
    case 0x3CD: return 0x38E;
    case 0x3CE: return 0x38F;
    case 0x3CA: return 0x3AA;
    case 0x3CB: return 0x3AB;
    default: break;
    }
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return c & 1 ? c - 1 : c;
    if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
    return c;
}

static uint32_t cp_lower(uint32_t c)
{
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c < 0x80) return c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c == 0x178) return 0xFF;
    if ((c >= 0x1C4 && c <= 0x1CC) || (c >= 0x1F1 && c <= 0x1F3)) {
        uint32_t base = c >= 0x1F1 ? 0x1F1 : 0x1C4 + (c - 0x1C4) / 3 * 3;
        return base + 2;
    }
    if (c >= 0x100 && c <= 0x17F) {
        if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c & 1 ? c : c + 1;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return c & 1 ? c + 1 : c;
        return c;
    }
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    switch (c) {
    case 0x386: return 0x3AC;
    case 0x388: return 0x3AD;
    case 0x389: return 0x3AE;
    case 0x38A: return 0x3AF;
    case 0x38C: return 0x3CC;
    case 0x38E: return 0x3CD;
    case 0x38F: return 0x3CE;
    case 0x3AA: return 0x3CA;
    case 0x3AB: return 0x3CB;
    default: break;
    }
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return c & 1 ? c : c + 1;
    if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
    return c;
}

static size_t dec_cp(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t l = u8len(u[0]);
    if (l > n)
        l = 1;
    if (l == 1) {
        *cp = u[0];
        return 1;
    }
    uint32_t c = u[0] & (0x7F >> l);
    for (size_t i = 1; i < l; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *cp = u[0];
            return 1;
        }
        c = (c << 6) | (u[i] & 0x3F);
    }
    *cp = c;
    return l;
}

static void enc_cp(jx *x, jbuf *b, uint32_t cp)
{
    char t[4];
    size_t n = 0;
    if (cp < 0x80) {
        t[n++] = (char)cp;
    } else if (cp < 0x800) {
        t[n++] = (char)(0xC0 | (cp >> 6));
        t[n++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        t[n++] = (char)(0xE0 | (cp >> 12));
        t[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[n++] = (char)(0x80 | (cp & 0x3F));
    } else {
        t[n++] = (char)(0xF0 | (cp >> 18));
        t[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        t[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[n++] = (char)(0x80 | (cp & 0x3F));
    }
    buf_add(x, b, t, n);
}

static bool cp_is_letter(uint32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || cp_upper(c) != c || cp_lower(c) != c;
}

/* mode 0 upper, 1 lower (JavaScript toUpperCase/toLowerCase for the scripts
 * above, with ß -> SS and the Greek final sigma), 2 title (/\b\w/ upper-cased),
 * 3 capitalize (first character upper-cased, the rest kept). */
static jval *str_case(jx *x, const jval *v, int mode)
{
    const char *s = v->u.s.p;
    size_t n = v->u.s.n;
    work(x, n + 1, NULL);
    if (mode == 2) {
        char *d = ja_memdup(&x->a, s, n);
        bool prev_word = false;
        for (size_t i = 0; i < n; i++) {
            char c = d[i];
            bool w = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
            if (w && !prev_word && c >= 'a' && c <= 'z')
                d[i] = (char)(c - 32);
            prev_word = w;
        }
        return mk_str(x, d, n);
    }
    jbuf b = {0};
    buf_grow(x, &b, n + 8);
    uint32_t prev = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80 && (mode != 3 || i == 0)) {
            /* ASCII (already charged above): no per-byte charge */
            if (b.cap - b.n < 2)
                buf_grow(x, &b, 1);
            if (mode == 1)
                c = c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
            else
                c = c >= 'a' && c <= 'z' ? (unsigned char)(c - 32) : c;
            b.p[b.n++] = (char)c;
            b.p[b.n] = 0;
            prev = c;
            i++;
            continue;
        }
        uint32_t cp;
        size_t l = dec_cp(s + i, n - i, &cp);
        if (mode == 3 && i > 0) {
            buf_add(x, &b, s + i, n - i);
            break;
        }
        static const char *const LIGS[] = {"FF", "FI", "FL", "FFI", "FFL", "ST", "ST"};
        if (mode == 0 || mode == 3) {
            if (cp == 0xDF) {
                buf_adds(x, &b, "SS");
            } else if (cp == 0x149) {
                buf_adds(x, &b, "\xCA\xBCN");
            } else if (cp >= 0xFB00 && cp <= 0xFB06) {
                buf_adds(x, &b, LIGS[cp - 0xFB00]);
            } else {
                uint32_t u = cp_upper(cp);
                if (u == cp)
                    buf_add(x, &b, s + i, l);
                else
                    enc_cp(x, &b, u);
            }
        } else if (cp == 0x130) {
            buf_adds(x, &b, "i\xCC\x87");
        } else {
            uint32_t lo = cp_lower(cp);
            if (cp == 0x3A3 && cp_is_letter(prev)) {
                uint32_t next = 0;
                if (i + l < n)
                    dec_cp(s + i + l, n - i - l, &next);
                if (!cp_is_letter(next))
                    lo = 0x3C2;
            }
            if (lo == cp)
                buf_add(x, &b, s + i, l);
            else
                enc_cp(x, &b, lo);
        }
        prev = cp;
        i += l;
    }
    return buf_val(x, &b);
}

/* The first nd in h, charging the bytes it passes and, per candidate
 * position, a call and the needle's length (an upper bound of the compare).
 * Not memmem: AddressSanitizer checks memmem's whole haystack on every call,
 * which makes replace and split quadratic in sanitizer builds. */
static const char *memfind(jx *x, const char *h, size_t hn, const char *nd, size_t nn)
{
    if (nn == 0)
        return h;
    if (nn > hn)
        return NULL;
    const char *p = h, *last = h + (hn - nn);
    while (p <= last) {
        const char *c = memchr(p, (unsigned char)nd[0], (size_t)(last - p) + 1);
        if (!c) {
            work(x, 32 + (size_t)(last - p) + 1, NULL);
            return NULL;
        }
        work(x, 32 + (size_t)(c - p) + nn, NULL);
        if (!memcmp(c, nd, nn))
            return c;
        p = c + 1;
    }
    return NULL;
}

static jval *str_replace(jx *x, const jval *s, const jval *old, const jval *nw, int64_t count, const jnode *at)
{
    if (count == 0)
        return (jval *)s;
    jbuf b = {0};
    const char *p = s->u.s.p, *e = p + s->u.s.n;
    int64_t left = count < 0 ? INT64_MAX : count;
    if (old->u.s.n == 0) {
        /* matches before every character and at the end */
        for (;;) {
            step(x, at);
            if (left > 0) {
                buf_add(x, &b, nw->u.s.p, nw->u.s.n);
                left--;
            }
            if (p >= e)
                break;
            size_t l = u8len((unsigned char)*p);
            if (p + l > e)
                l = (size_t)(e - p);
            buf_add(x, &b, p, l);
            p += l;
        }
        return buf_val(x, &b);
    }
    while (p < e && left > 0) {
        const char *f = memfind(x, p, (size_t)(e - p), old->u.s.p, old->u.s.n);
        if (!f)
            break;
        buf_add(x, &b, p, (size_t)(f - p));
        buf_add(x, &b, nw->u.s.p, nw->u.s.n);
        p = f + old->u.s.n;
        left--;
    }
    buf_add(x, &b, p, (size_t)(e - p));
    return buf_val(x, &b);
}

/* --------------------------------------------------------------- equality */

static double js_str_to_num(const char *s, size_t n)
{
    size_t a = 0, l;
    while (a < n && (l = jinja_ws_at(s + a, n - a)))
        a += l;
    while (n > a && (l = jinja_ws_before(s + a, n - a)))
        n -= l;
    if (a == n)
        return 0;
    char buf[64];
    if (n - a >= sizeof buf)
        return NAN;
    memcpy(buf, s + a, n - a);
    buf[n - a] = 0;
    if (!strcmp(buf, "Infinity") || !strcmp(buf, "+Infinity"))
        return INFINITY;
    if (!strcmp(buf, "-Infinity"))
        return -INFINITY;
    for (char *q = buf; *q; q++)
        if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-'))
            return NAN;
    char *end;
    double d = strtod(buf, &end);
    return *end ? NAN : d;
}

static bool is_obj(const jval *v) { return v->t == JV_ARRAY || v->t == JV_OBJECT || v->t == JV_NS || v->t == JV_FUNC; }

static void js_str(jx *x, jbuf *b, const jval *v, const jnode *at);

/* JavaScript `a.value == b.value` (loose equality): containers by identity,
 * a container against a primitive through its text (`[] == ''`, `[1] == 1`). */
static bool loose_eq(jx *x, const jval *a, const jval *b, const jnode *at)
{
    bool an = a->t == JV_UNDEF || a->t == JV_NONE, bn = b->t == JV_UNDEF || b->t == JV_NONE;
    if (an || bn)
        return an && bn;
    if (is_obj(a) && is_obj(b))
        return a == b;
    if (is_obj(a) || is_obj(b)) {
        const jval *o = is_obj(a) ? a : b, *p = is_obj(a) ? b : a;
        jbuf t = {0};
        js_str(x, &t, o, at);
        jval sv = {.t = JV_STR};
        sv.u.s.p = t.p ? t.p : "";
        sv.u.s.n = t.n;
        return loose_eq(x, &sv, p, at);
    }
    if (a->t == JV_STR && b->t == JV_STR) {
        work(x, 1 + (a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n), at);
        return str_eq(a->u.s, b->u.s.p, b->u.s.n);
    }
    work(x, 1 + (a->t == JV_STR ? a->u.s.n : 0) + (b->t == JV_STR ? b->u.s.n : 0), at);
    double p = a->t == JV_STR ? js_str_to_num(a->u.s.p, a->u.s.n) : num(a);
    double q = b->t == JV_STR ? js_str_to_num(b->u.s.p, b->u.s.n) : num(b);
    return p == q;
}

/* JavaScript `a.value === b.value`. */
static bool strict_eq(jx *x, const jval *a, const jval *b)
{
    work(x, W_ITEM + (a->t == JV_STR && b->t == JV_STR ? (a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n) : 0), NULL);
    /* none and undefined both hold JavaScript undefined */
    bool an = a->t == JV_UNDEF || a->t == JV_NONE, bn = b->t == JV_UNDEF || b->t == JV_NONE;
    if (an || bn)
        return an && bn;
    if (is_obj(a) || is_obj(b))
        return a == b;
    if (is_num(a) && is_num(b))
        return num(a) == num(b);
    if (a->t != b->t)
        return false;
    if (a->t == JV_BOOL)
        return a->u.b == b->u.b;
    return str_eq(a->u.s, b->u.s.p, b->u.s.n);
}

/* SameValueZero, used by `unique` (JavaScript Set). */
static bool same_value_zero(jx *x, const jval *a, const jval *b)
{
    if (is_num(a) && is_num(b) && isnan(num(a)) && isnan(num(b)))
        return true;
    return strict_eq(x, a, b);
}

/* ------------------------------------------------------------ evaluation */

static jval *eval(jx *x, const jnode *n, jscope *sc);
static int exec_list(jx *x, const jlist *l, jscope *sc, jbuf *out);
static jval *call_fn(jx *x, jval *fn, jval **args, size_t nargs, jscope *sc, const jnode *at);
static jval *apply_filter(jx *x, jval *operand, const jnode *f, jscope *sc);

static void out_value(jx *x, jbuf *out, const jval *v, const jnode *at)
{
    if (v->t == JV_NONE || v->t == JV_UNDEF)
        return;
    rt_str(x, out, v, at);
}

/* Arguments of a call: positional values then, when any were given, one
 * keyword-arguments object last. */
typedef struct {
    jval **v;
    size_t n;
    jval *kw; /* NULL when there were none */
} jargs;

static jargs eval_args(jx *x, const jlist *args, jscope *sc, bool always_kw)
{
    jargs r = {0};
    size_t cap = args->n + 1;
    for (uint32_t i = 0; i < args->n; i++)
        if (args->v[i]->kind == JN_SPREAD) {
            jval *s = eval(x, args->v[i]->a, sc);
            if (s->t != JV_ARRAY)
                rerr(x, args->v[i], "Cannot unpack non-iterable type: %s", tname(s));
            work(x, W_ITEM * s->u.a.n, args->v[i]);
            cap += s->u.a.n;
        }
    r.v = ja_alloc(&x->a, cap * sizeof *r.v);
    for (uint32_t i = 0; i < args->n; i++) {
        const jnode *a = args->v[i];
        if (a->kind == JN_SPREAD) {
            jval *s = eval(x, a->a, sc);
            if (s->t != JV_ARRAY)
                rerr(x, a, "Cannot unpack non-iterable type: %s", tname(s));
            for (size_t k = 0; k < s->u.a.n && r.n < cap; k++)
                r.v[r.n++] = s->u.a.v[k];
        } else if (a->kind != JN_KWARG && a->kind != JN_KWSPREAD) {
            r.v[r.n++] = eval(x, a, sc);
        }
    }
    jval *kw = mk_obj(x, JV_OBJECT);
    kw->kwargs = true;
    for (uint32_t i = 0; i < args->n; i++) {
        const jnode *a = args->v[i];
        if (a->kind == JN_KWARG) {
            if (obj_find_w(x, kw, a->s, a->slen, a) >= 0)
                rerr(x, a, "Got multiple values for keyword argument '%.*s'", (int)a->slen, a->s);
            obj_set(x, kw, a->s, a->slen, eval(x, a->a, sc));
        } else if (a->kind == JN_KWSPREAD) {
            jval *m = eval(x, a->a, sc);
            if (m->t != JV_OBJECT)
                rerr(x, a, "Argument after ** must be a mapping, not %s", tname(m));
            for (size_t k = 0; k < m->u.o.n; k++) {
                if (obj_find_w(x, kw, m->u.o.k[k].p, m->u.o.k[k].n, a) >= 0)
                    rerr(x, a, "Got multiple values for keyword argument '%.*s'", (int)m->u.o.k[k].n, m->u.o.k[k].p);
                obj_set(x, kw, m->u.o.k[k].p, m->u.o.k[k].n, m->u.o.v[k]);
            }
        }
    }
    if (kw->u.o.n || always_kw)
        r.kw = kw;
    return r;
}

static jval *kwget(const jargs *a, const char *k)
{
    return a->kw ? obj_get(a->kw, k, strlen(k)) : NULL;
}

/* Positional argument i, else keyword k, else NULL. */
static jval *argk(const jargs *a, size_t i, const char *k)
{
    if (i < a->n)
        return a->v[i];
    return k ? kwget(a, k) : NULL;
}

static bool is_intv(const jval *v) { return v->t == JV_INT || (v->t == JV_FLOAT && v->intlike); }

/* An integer value as int64, clamped (huge JavaScript integers, Infinity); NaN -> 0. */
static int64_t int_of(const jval *v)
{
    if (v->t == JV_INT)
        return v->u.i;
    double d = v->u.f;
    if (isnan(d))
        return 0;
    if (d >= 9.2e18)
        return INT64_MAX;
    if (d <= -9.2e18)
        return INT64_MIN + 1;
    return (int64_t)d;
}

/* slice() of @huggingface/jinja over n items: the chosen indices. */
static size_t slice_indices(jx *x, int64_t n, const jval *start, const jval *stop, const jval *stepv,
                            int64_t **out, const jnode *at)
{
    int64_t st = stepv->t == JV_UNDEF ? 1 : int_of(stepv);
    if (st == 0)
        rerr(x, at, "Slice step cannot be zero");
    int64_t a, b;
    if (st > 0) {
        a = start->t == JV_UNDEF ? 0 : int_of(start);
        a = a < 0 ? (n + a > 0 ? n + a : 0) : (a < n ? a : n);
        b = stop->t == JV_UNDEF ? n : int_of(stop);
        b = b < 0 ? (n + b > 0 ? n + b : 0) : (b < n ? b : n);
    } else {
        a = start->t == JV_UNDEF ? n - 1 : int_of(start);
        a = a < 0 ? (n + a > -1 ? n + a : -1) : (a < n - 1 ? a : n - 1);
        b = stop->t == JV_UNDEF ? -1 : int_of(stop);
        b = b < -1 ? (n + b > -1 ? n + b : -1) : (b < n - 1 ? b : n - 1);
    }
    size_t cnt = 0;
    if (st > 0 && b > a)
        cnt = (size_t)((b - a - 1) / st) + 1;
    else if (st < 0 && a > b)
        cnt = st == INT64_MIN ? 1 : (size_t)((a - b - 1) / (-st)) + 1;
    int64_t *idx = ja_alloc(&x->a, (cnt ? cnt : 1) * sizeof *idx);
    for (size_t i = 0; i < cnt; i++)
        idx[i] = a + (int64_t)i * st;
    *out = idx;
    return cnt;
}

static jval *eval_slice(jx *x, jval *obj, const jnode *s, jscope *sc)
{
    if (obj->t != JV_ARRAY && obj->t != JV_STR)
        rerr(x, s, "Slice object must be an array or string");
    jval *a = s->a ? eval(x, s->a, sc) : &V_UNDEF;
    jval *b = s->b ? eval(x, s->b, sc) : &V_UNDEF;
    jval *c = s->c ? eval(x, s->c, sc) : &V_UNDEF;
    if (!(is_intv(a) || a->t == JV_UNDEF))
        rerr(x, s, "Slice start must be numeric or undefined");
    if (!(is_intv(b) || b->t == JV_UNDEF))
        rerr(x, s, "Slice stop must be numeric or undefined");
    if (!(is_intv(c) || c->t == JV_UNDEF))
        rerr(x, s, "Slice step must be numeric or undefined");
    int64_t *idx;
    if (obj->t == JV_ARRAY) {
        size_t cnt = slice_indices(x, (int64_t)obj->u.a.n, a, b, c, &idx, s);
        work(x, 1 + W_ITEM * cnt, s);
        jval *r = mk_arr(x, cnt);
        for (size_t i = 0; i < cnt; i++)
            r->u.a.v[i] = obj->u.a.v[idx[i]];
        r->u.a.n = cnt;
        return r;
    }
    size_t *off;
    size_t ncp = cp_offsets(x, obj->u.s.p, obj->u.s.n, &off);
    size_t cnt = slice_indices(x, (int64_t)ncp, a, b, c, &idx, s);
    jbuf buf = {0};
    for (size_t i = 0; i < cnt; i++)
        buf_add(x, &buf, obj->u.s.p + off[idx[i]], off[idx[i] + 1] - off[idx[i]]);
    return buf_val(x, &buf);
}

static jval *str_builtin(jx *x, jval *s, const char *k, size_t n)
{
    static const struct {
        const char *name;
        jbuiltin bi;
    } M[] = {
        {"upper", BI_S_UPPER}, {"lower", BI_S_LOWER}, {"strip", BI_S_STRIP}, {"title", BI_S_TITLE},
        {"capitalize", BI_S_CAPITALIZE}, {"rstrip", BI_S_RSTRIP}, {"lstrip", BI_S_LSTRIP},
        {"startswith", BI_S_STARTSWITH}, {"endswith", BI_S_ENDSWITH}, {"split", BI_S_SPLIT},
        {"replace", BI_S_REPLACE},
    };
    if (n == 6 && !memcmp(k, "length", 6))
        return mk_int(x, js_length(x, s->u.s.p, s->u.s.n));
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        if (strlen(M[i].name) == n && !memcmp(M[i].name, k, n))
            return mk_fn(x, M[i].bi, s);
    return NULL;
}

static jval *obj_builtin(jx *x, jval *o, const char *k, size_t n)
{
    static const struct {
        const char *name;
        jbuiltin bi;
    } M[] = {
        {"get", BI_O_GET}, {"items", BI_O_ITEMS}, {"keys", BI_O_KEYS}, {"values", BI_O_VALUES},
        {"dictsort", BI_O_DICTSORT},
    };
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        if (strlen(M[i].name) == n && !memcmp(M[i].name, k, n))
            return mk_fn(x, M[i].bi, o);
    return NULL;
}

static jval *member(jx *x, jval *obj, jval *prop, const jnode *at)
{
    jval *r = NULL;
    if (obj->t == JV_OBJECT || obj->t == JV_NS) {
        if (prop->t != JV_STR)
            rerr(x, at, "Cannot access property with non-string: got %s", tname(prop));
        r = obj_get_w(x, obj, prop->u.s.p, prop->u.s.n, at);
        if (!r && obj->t == JV_OBJECT)
            r = obj_builtin(x, obj, prop->u.s.p, prop->u.s.n);
    } else if (obj->t == JV_ARRAY || obj->t == JV_STR) {
        if (is_intv(prop)) {
            int64_t i = int_of(prop);
            if (obj->t == JV_ARRAY) {
                int64_t n = (int64_t)obj->u.a.n;
                if (i < 0)
                    i += n;
                if (i >= 0 && i < n)
                    r = obj->u.a.v[i];
            } else {
                size_t *off;
                int64_t n = (int64_t)cp_offsets(x, obj->u.s.p, obj->u.s.n, &off);
                if (i < 0)
                    i += n;
                if (i >= 0 && i < n)
                    r = mk_str(x, obj->u.s.p + off[i], off[i + 1] - off[i]);
            }
        } else if (prop->t == JV_STR) {
            if (obj->t == JV_STR)
                r = str_builtin(x, obj, prop->u.s.p, prop->u.s.n);
            else if (str_eq(prop->u.s, "length", 6))
                r = mk_int(x, (int64_t)obj->u.a.n);
        } else {
            rerr(x, at, "Cannot access property with non-string/non-number: got %s", tname(prop));
        }
    } else {
        if (prop->t != JV_STR)
            rerr(x, at, "Cannot access property with non-string: got %s", tname(prop));
    }
    return r ? r : &V_UNDEF;
}

static jval *eval_member(jx *x, const jnode *n, jscope *sc)
{
    jval *obj = eval(x, n->a, sc);
    jval *prop;
    if (n->flag) {
        if (n->b->kind == JN_SLICE)
            return eval_slice(x, obj, n->b, sc);
        prop = eval(x, n->b, sc);
    } else if (n->b->kind == JN_INT) {
        prop = mk_int(x, n->b->i);
    } else {
        prop = mk_str(x, n->b->s, n->b->slen);
    }
    return member(x, obj, prop, n);
}

/* An integer result: exact within 2**53, JavaScript doubles beyond. */
static jval *arith_int(jx *x, int64_t r, bool ovf, double approx)
{
    return ovf || r > (int64_t)JS_SAFE_INT || r < -(int64_t)JS_SAFE_INT ? mk_intd(x, approx) : mk_int(x, r);
}

static jval *eval_binary(jx *x, const jnode *n, jscope *sc)
{
    jval *l = eval(x, n->a, sc);
    jop op = (jop)n->op;
    if (op == JOP_AND)
        return truthy(l) ? eval(x, n->b, sc) : l;
    if (op == JOP_OR)
        return truthy(l) ? l : eval(x, n->b, sc);
    jval *r = eval(x, n->b, sc);
    if (op == JOP_EQ)
        return mk_bool(loose_eq(x, l, r, n));
    if (op == JOP_NE)
        return mk_bool(!loose_eq(x, l, r, n));
    static const char *OPS[] = {"", "+", "-", "~", "*", "/", "//", "%", "**", "==", "!=", "<", ">", "<=", ">=",
                                "in", "not in", "and", "or", "not", "-", "+"};
    if (l->t == JV_UNDEF || r->t == JV_UNDEF) {
        if (r->t == JV_UNDEF && (op == JOP_IN || op == JOP_NOTIN))
            return mk_bool(op == JOP_NOTIN);
        rerr(x, n, "Cannot perform operation %s on undefined values", OPS[op]);
    }
    if (l->t == JV_NONE || r->t == JV_NONE)
        rerr(x, n, "Cannot perform operation on null values");
    if (op == JOP_CONCAT) {
        jbuf b = {0};
        js_str(x, &b, l, n);
        js_str(x, &b, r, n);
        return buf_val(x, &b);
    }
    bool lnum = is_num(l) || l->t == JV_BOOL, rnum = is_num(r) || r->t == JV_BOOL;
    if (op == JOP_POW && lnum && rnum) {
        double a = num(l), b = num(r);
        if (a == 0 && b < 0)
            rerr(x, n, "0.0 cannot be raised to a negative power");
        double res = pow(a, b);
        if (!isfinite(res))
            rerr(x, n, "Exponentiation result is not a finite real number");
        if ((l->t == JV_FLOAT && !l->intlike) || (r->t == JV_FLOAT && !r->intlike) || b < 0)
            return mk_float(x, res);
        return mk_intd(x, res);
    }
    if (is_num(l) && is_num(r)) {
        bool fl = (l->t == JV_FLOAT && !l->intlike) || (r->t == JV_FLOAT && !r->intlike);
        bool wide = !fl && (l->t == JV_FLOAT || r->t == JV_FLOAT); /* integers held as doubles */
        double a = num(l), b = num(r);
        int64_t ia = l->t == JV_INT ? l->u.i : 0, ib = r->t == JV_INT ? r->u.i : 0, ir;
        bool o;
        switch (op) {
        case JOP_ADD:
            if (fl) return mk_float(x, a + b);
            if (wide) return mk_intd(x, a + b);
            o = __builtin_add_overflow(ia, ib, &ir);
            return arith_int(x, ir, o, a + b);
        case JOP_SUB:
            if (fl) return mk_float(x, a - b);
            if (wide) return mk_intd(x, a - b);
            o = __builtin_sub_overflow(ia, ib, &ir);
            return arith_int(x, ir, o, a - b);
        case JOP_MUL:
            if (fl) return mk_float(x, a * b);
            if (wide) return mk_intd(x, a * b);
            o = __builtin_mul_overflow(ia, ib, &ir);
            return arith_int(x, ir, o, a * b);
        case JOP_DIV:
            return mk_float(x, a / b);
        case JOP_FLOORDIV:
            if (fl) return mk_float(x, floor(a / b));
            if (wide || ib == 0 || (ia == INT64_MIN && ib == -1))
                return mk_intd(x, floor(a / b)); /* Infinity, NaN, 2**63 */
            {
                int64_t q = ia / ib;
                if ((ia % ib != 0) && ((ia < 0) != (ib < 0)))
                    q--;
                return mk_int(x, q);
            }
        case JOP_MOD:
            if (fl) return mk_float(x, fmod(a, b));
            if (wide || ib == 0) return mk_intd(x, fmod(a, b)); /* NaN for % 0 */
            if (ib == -1) return mk_int(x, 0);
            return mk_int(x, ia % ib);
        case JOP_LT: return mk_bool(a < b);
        case JOP_GT: return mk_bool(a > b);
        case JOP_LE: return mk_bool(a <= b);
        case JOP_GE: return mk_bool(a >= b);
        default: break;
        }
    } else if (l->t == JV_ARRAY && r->t == JV_ARRAY) {
        if (op == JOP_ADD) {
            work(x, 1 + W_ITEM * (l->u.a.n + r->u.a.n), n);
            jval *res = mk_arr(x, l->u.a.n + r->u.a.n);
            for (size_t i = 0; i < l->u.a.n; i++)
                res->u.a.v[res->u.a.n++] = l->u.a.v[i];
            for (size_t i = 0; i < r->u.a.n; i++)
                res->u.a.v[res->u.a.n++] = r->u.a.v[i];
            return res;
        }
    } else if (r->t == JV_ARRAY) {
        if (op == JOP_IN || op == JOP_NOTIN) {
            bool found = false;
            for (size_t i = 0; i < r->u.a.n && !found; i++)
                found = strict_eq(x, r->u.a.v[i], l);
            return mk_bool(op == JOP_IN ? found : !found);
        }
    }
    if ((l->t == JV_STR || r->t == JV_STR) && op == JOP_ADD) {
        jbuf b = {0};
        js_str(x, &b, l, n);
        js_str(x, &b, r, n);
        return buf_val(x, &b);
    }
    if (l->t == JV_STR && r->t == JV_STR && (op == JOP_IN || op == JOP_NOTIN)) {
        bool found = memfind(x, r->u.s.p, r->u.s.n, l->u.s.p, l->u.s.n) != NULL;
        return mk_bool(op == JOP_IN ? found : !found);
    }
    if (l->t == JV_STR && r->t == JV_OBJECT && (op == JOP_IN || op == JOP_NOTIN)) {
        bool found = obj_find_w(x, r, l->u.s.p, l->u.s.n, n) >= 0;
        return mk_bool(op == JOP_IN ? found : !found);
    }
    rerr(x, n, "Unknown operator \"%s\" between %s and %s", OPS[op], tname(l), tname(r));
}

static jval *eval_unary(jx *x, const jnode *n, jscope *sc)
{
    jval *v = eval(x, n->a, sc);
    if (n->op == JOP_NOT)
        return mk_bool(!truthy(v));
    int sign = n->op == JOP_NEG ? -1 : 1;
    if (v->t == JV_FLOAT) {
        jval *r = mk_float(x, sign * v->u.f);
        r->intlike = v->intlike;
        return r;
    }
    if (v->t == JV_INT || v->t == JV_BOOL) {
        int64_t i = v->t == JV_BOOL ? v->u.b : v->u.i;
        if (sign < 0 && i == INT64_MIN)
            return mk_intd(x, 9223372036854775808.0);
        return mk_int(x, sign * i);
    }
    rerr(x, n, "Unknown operator \"%s\" for %s", sign < 0 ? "-" : "+", tname(v));
}

/* Tests (`x is NAME`); b is the second operand of equalto (may be NULL). */
static bool run_test(jx *x, const char *name, size_t nl, const jval *v, const jval *b, const jnode *at)
{
#define IS(s) (nl == sizeof(s) - 1 && !memcmp(name, s, nl))
    if (IS("boolean")) return v->t == JV_BOOL;
    if (IS("callable")) return v->t == JV_FUNC;
    if (IS("odd") || IS("even")) {
        if (v->t != JV_INT && !(v->t == JV_FLOAT && v->intlike))
            rerr(x, at, "cannot %.*s on %s", (int)nl, name, tname(v));
        double r = v->t == JV_INT ? (double)(v->u.i % 2) : fmod(v->u.f, 2.0);
        return IS("odd") ? r != 0 : r == 0;
    }
    if (IS("false")) return v->t == JV_BOOL && !v->u.b;
    if (IS("true")) return v->t == JV_BOOL && v->u.b;
    if (IS("none")) return v->t == JV_NONE;
    if (IS("string")) return v->t == JV_STR;
    if (IS("number")) return is_num(v);
    if (IS("integer")) return v->t == JV_INT || (v->t == JV_FLOAT && v->intlike);
    if (IS("iterable")) return (v->t == JV_ARRAY && !v->tuple) || v->t == JV_STR;
    if (IS("mapping")) return v->t == JV_OBJECT;
    if (IS("sequence")) return v->t == JV_ARRAY || v->t == JV_OBJECT || v->t == JV_STR;
    if (IS("lower") || IS("upper")) {
        if (v->t != JV_STR)
            return false;
        const jval *c = str_case(x, v, IS("lower") ? 1 : 0);
        return str_eq(c->u.s, v->u.s.p, v->u.s.n);
    }
    if (IS("defined")) return v->t != JV_UNDEF;
    if (IS("undefined")) return v->t == JV_UNDEF;
    if (IS("equalto") || IS("eq")) return strict_eq(x, v, b ? b : &V_UNDEF);
#undef IS
    rerr(x, at, "Unknown test: %.*s", (int)nl, name);
}

static bool is_test_name(const char *s, size_t n)
{
    static const char *T[] = {"boolean", "callable", "odd", "even", "false", "true", "none", "string",
                              "number", "integer", "iterable", "mapping", "sequence", "lower", "upper",
                              "defined", "undefined", "equalto", "eq"};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (strlen(T[i]) == n && !memcmp(T[i], s, n))
            return true;
    return false;
}

/* getAttributeValue: "a.b.0" paths. */
static jval *attr_path(jx *x, jval *item, const char *p, size_t n)
{
    work(x, 1 + n, NULL);
    jval *v = item;
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < n && p[j] != '.')
            j++;
        if (v->t == JV_OBJECT || v->t == JV_NS) {
            jval *r = obj_get_w(x, v, p + i, j - i, NULL);
            v = r ? r : &V_UNDEF;
        } else if (v->t == JV_ARRAY) {
            char *end;
            char tmp[32];
            size_t l = j - i < sizeof tmp - 1 ? j - i : sizeof tmp - 1;
            memcpy(tmp, p + i, l);
            tmp[l] = 0;
            long idx = strtol(tmp, &end, 10);
            if (end == tmp || idx < 0 || (size_t)idx >= v->u.a.n)
                return &V_UNDEF;
            v = v->u.a.v[idx];
        } else {
            return &V_UNDEF;
        }
        if (j >= n)
            return v;
        i = j + 1;
    }
}

/* compareRuntimeValues */
static int cmp_values(jx *x, const jval *a, const jval *b, bool case_sensitive, const jnode *at)
{
    if (a->t == JV_NONE && b->t == JV_NONE)
        return 0;
    if (a->t == JV_NONE || b->t == JV_NONE || (a->t == JV_UNDEF) != (b->t == JV_UNDEF))
        rerr(x, at, "Cannot compare %s with %s", tname(a), tname(b));
    if (a->t == JV_UNDEF)
        return 0;
    bool an = is_num(a) || a->t == JV_BOOL, bn = is_num(b) || b->t == JV_BOOL;
    if (an && bn) {
        double p = num(a), q = num(b);
        return p < q ? -1 : p > q ? 1 : 0;
    }
    if (a->t != b->t || (a->t == JV_ARRAY && a->tuple != b->tuple))
        rerr(x, at, "Cannot compare different types: %s and %s", tname(a), tname(b));
    if (a->t != JV_STR)
        rerr(x, at, "Cannot compare type: %s", tname(a));
    size_t n = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
    work(x, 1 + n, at);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)a->u.s.p[i], d = (unsigned char)b->u.s.p[i];
        if (!case_sensitive) {
            if (c >= 'A' && c <= 'Z') c = (unsigned char)(c + 32);
            if (d >= 'A' && d <= 'Z') d = (unsigned char)(d + 32);
        }
        if (c != d)
            return c < d ? -1 : 1;
    }
    return a->u.s.n < b->u.s.n ? -1 : a->u.s.n > b->u.s.n;
}

typedef struct {
    jx *x;
    const jnode *at;
    bool cs, reverse;
    const jval *attr; /* NULL, or a path (string or integer) */
    int by;           /* dictsort: 0 key, 1 value; -1 not dictsort */
} sort_ctx;

static const jval *sort_key(sort_ctx *c, jval *v)
{
    if (c->by >= 0)
        return v->u.a.v[c->by];
    if (!c->attr)
        return v;
    if (c->attr->t == JV_STR)
        return attr_path(c->x, v, c->attr->u.s.p, c->attr->u.s.n);
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)c->attr->u.i);
    return attr_path(c->x, v, t, strlen(t));
}

/* Stable merge sort with a comparator that may fail (longjmp). */
static void msort(sort_ctx *c, jval **v, jval **tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    msort(c, v, tmp, h);
    msort(c, v + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        step(c->x, c->at);
        int r = cmp_values(c->x, sort_key(c, v[i]), sort_key(c, v[j]), c->cs, c->at);
        if (c->reverse)
            r = -r;
        tmp[k++] = r <= 0 ? v[i++] : v[j++];
    }
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static jval *sorted(sort_ctx *c, const jval *arr)
{
    work(c->x, 1 + W_ITEM * arr->u.a.n, c->at);
    jval *r = mk_arr(c->x, arr->u.a.n);
    if (arr->u.a.n)
        memcpy(r->u.a.v, arr->u.a.v, arr->u.a.n * sizeof(jval *));
    r->u.a.n = arr->u.a.n;
    jval **tmp = ja_alloc(&c->x->a, (arr->u.a.n ? arr->u.a.n : 1) * sizeof *tmp);
    msort(c, r->u.a.v, tmp, r->u.a.n);
    return r;
}

static jval *obj_items(jx *x, const jval *o)
{
    work(x, 1 + W_KEY * o->u.o.n, NULL);
    jval *r = mk_arr(x, o->u.o.n);
    for (size_t i = 0; i < o->u.o.n; i++) {
        jval *pair = mk_arr(x, 2);
        pair->u.a.v[0] = mk_str(x, o->u.o.k[i].p, o->u.o.k[i].n);
        pair->u.a.v[1] = o->u.o.v[i];
        pair->u.a.n = 2;
        r->u.a.v[r->u.a.n++] = pair;
    }
    return r;
}

static jval *obj_keys(jx *x, const jval *o)
{
    work(x, 1 + W_KEY * o->u.o.n, NULL);
    jval *r = mk_arr(x, o->u.o.n);
    for (size_t i = 0; i < o->u.o.n; i++)
        r->u.a.v[r->u.a.n++] = mk_str(x, o->u.o.k[i].p, o->u.o.k[i].n);
    return r;
}

static jval *tojson_filter(jx *x, jval *v, const jargs *a, const jnode *at)
{
    json_opts o = json_default();
    jval *ind = kwget(a, "indent");
    if (ind && ind->t != JV_INT && ind->t != JV_NONE)
        rerr(x, at, "If set, indent must be a number");
    jval *ea = kwget(a, "ensure_ascii");
    if (ea && ea->t != JV_BOOL)
        rerr(x, at, "If set, ensure_ascii must be a boolean");
    jval *sk = kwget(a, "sort_keys");
    if (sk && sk->t != JV_BOOL)
        rerr(x, at, "If set, sort_keys must be a boolean");
    jval *sep = kwget(a, "separators");
    if (ind && ind->t == JV_INT) {
        if (ind->u.i < 0 || ind->u.i > 64)
            rerr(x, at, "indent out of range");
        o.indent = ind->u.i;
        if (o.indent) {
            o.item_sep = ",";
            o.item_sep_n = 1;
        }
    }
    o.ensure_ascii = ea && ea->u.b;
    o.sort_keys = sk && sk->u.b;
    if (sep && sep->t != JV_NONE) {
        if (sep->t != JV_ARRAY || sep->u.a.n != 2 || sep->u.a.v[0]->t != JV_STR || sep->u.a.v[1]->t != JV_STR)
            rerr(x, at, "separators must be a tuple of two strings");
        o.item_sep = sep->u.a.v[0]->u.s.p;
        o.item_sep_n = sep->u.a.v[0]->u.s.n;
        o.key_sep = sep->u.a.v[1]->u.s.p;
        o.key_sep_n = sep->u.a.v[1]->u.s.n;
    }
    jbuf b = {0};
    to_json(x, &b, v, &o, 0, true, at);
    return buf_val(x, &b);
}

/* JavaScript parseInt(s, 10) / parseFloat(s); false when NaN. */
static bool js_parse_num(jx *x, const char *s, size_t n, bool as_int, double *out)
{
    work(x, 1 + n, NULL);
    size_t i = 0, l;
    while (i < n && (l = jinja_ws_at(s + i, n - i)))
        i += l;
    char buf[128];
    size_t k = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        buf[k++] = s[i++];
    if (!as_int && n - i >= 8 && !memcmp(s + i, "Infinity", 8)) {
        *out = buf[0] == '-' ? -INFINITY : INFINITY;
        return true;
    }
    size_t digits = 0;
    while (i < n && k < sizeof buf - 8 && s[i] >= '0' && s[i] <= '9') {
        buf[k++] = s[i++];
        digits++;
    }
    if (!as_int) {
        if (i < n && s[i] == '.') {
            buf[k++] = s[i++];
            while (i < n && k < sizeof buf - 8 && s[i] >= '0' && s[i] <= '9') {
                buf[k++] = s[i++];
                digits++;
            }
        }
        if (digits && i + 1 < n && (s[i] == 'e' || s[i] == 'E')) {
            size_t j = i + 1;
            char eb[8] = {'e'};
            size_t ek = 1;
            if (j < n && (s[j] == '+' || s[j] == '-'))
                eb[ek++] = s[j++];
            if (j < n && s[j] >= '0' && s[j] <= '9') {
                memcpy(buf + k, eb, ek);
                k += ek;
                while (j < n && k < sizeof buf - 1 && s[j] >= '0' && s[j] <= '9')
                    buf[k++] = s[j++];
            }
        }
    }
    buf[k] = 0;
    if (!digits)
        return false;
    *out = strtod(buf, NULL);
    return true;
}

static jval *filter_by_name(jx *x, jval *v, const char *f, size_t fl, const jnode *at)
{
#define FIS(s) (fl == sizeof(s) - 1 && !memcmp(f, s, fl))
    if (FIS("safe"))
        return v;
    if (FIS("tojson")) {
        jargs none = {0};
        return tojson_filter(x, v, &none, at);
    }
    switch ((jvtype)v->t) {
    case JV_ARRAY:
        if (FIS("list")) return v;
        if (FIS("first")) return v->u.a.n ? v->u.a.v[0] : &V_UNDEF;
        if (FIS("last")) return v->u.a.n ? v->u.a.v[v->u.a.n - 1] : &V_UNDEF;
        if (FIS("length")) return mk_int(x, (int64_t)v->u.a.n);
        if (FIS("reverse")) {
            work(x, 1 + W_ITEM * v->u.a.n, at);
            jval *r = mk_arr(x, v->u.a.n);
            for (size_t i = v->u.a.n; i-- > 0;)
                r->u.a.v[r->u.a.n++] = v->u.a.v[i];
            return r;
        }
        if (FIS("sort")) {
            sort_ctx c = {x, at, false, false, NULL, -1};
            return sorted(&c, v);
        }
        if (FIS("join")) {
            jbuf b = {0};
            work(x, 1 + W_ITEM * v->u.a.n, at);
            for (size_t i = 0; i < v->u.a.n; i++)
                if (v->u.a.v[i]->t != JV_UNDEF && v->u.a.v[i]->t != JV_NONE)
                    js_str(x, &b, v->u.a.v[i], at);
            return buf_val(x, &b);
        }
        if (FIS("string")) {
            jbuf b = {0};
            json_opts o = json_default();
            to_json(x, &b, v, &o, 0, false, at);
            return buf_val(x, &b);
        }
        if (FIS("unique")) {
            jval *r = mk_arr(x, v->u.a.n);
            for (size_t i = 0; i < v->u.a.n; i++) {
                bool seen = false;
                for (size_t j = 0; j < r->u.a.n && !seen; j++) {
                    step(x, at);
                    seen = same_value_zero(x, r->u.a.v[j], v->u.a.v[i]);
                }
                if (!seen)
                    r->u.a.v[r->u.a.n++] = v->u.a.v[i];
            }
            return r;
        }
        rerr(x, at, "Unknown list filter: %.*s", (int)fl, f);
    case JV_STR:
        if (FIS("length")) return mk_int(x, js_length(x, v->u.s.p, v->u.s.n));
        if (FIS("upper")) return str_case(x, v, 0);
        if (FIS("lower")) return str_case(x, v, 1);
        if (FIS("title")) return str_case(x, v, 2);
        if (FIS("capitalize")) return str_case(x, v, 3);
        if (FIS("trim")) return str_trim(x, v, true, true);
        if (FIS("indent")) {
            jbuf b = {0};
            const char *p = v->u.s.p, *e = p + v->u.s.n;
            bool first = true;
            for (;;) {
                const char *nl = memchr(p, '\n', (size_t)(e - p));
                const char *le = nl ? nl : e;
                if (!first && le > p)
                    buf_adds(x, &b, "    ");
                buf_add(x, &b, p, (size_t)(le - p));
                if (!nl)
                    break;
                buf_addc(x, &b, '\n');
                p = nl + 1;
                first = false;
            }
            return buf_val(x, &b);
        }
        if (FIS("join") || FIS("string")) return v;
        if (FIS("int") || FIS("float")) {
            double d;
            bool ok = js_parse_num(x, v->u.s.p, v->u.s.n, FIS("int"), &d);
            if (FIS("int"))
                return ok ? mk_intd(x, d) : mk_int(x, 0);
            return mk_float(x, ok ? d : 0);
        }
        rerr(x, at, "Unknown string filter: %.*s", (int)fl, f);
    case JV_INT:
    case JV_FLOAT:
        if (FIS("abs")) {
            if (v->t == JV_INT)
                return v->u.i == INT64_MIN ? mk_intd(x, 9223372036854775808.0) : mk_int(x, v->u.i < 0 ? -v->u.i : v->u.i);
            return v->intlike ? mk_intd(x, fabs(v->u.f)) : mk_float(x, fabs(v->u.f));
        }
        if (FIS("int")) {
            if (v->t == JV_INT)
                return mk_int(x, v->u.i);
            return mk_intd(x, floor(v->u.f));
        }
        if (FIS("float")) return mk_float(x, num(v));
        if (FIS("string")) {
            jbuf b = {0};
            rt_str(x, &b, v, at);
            return buf_val(x, &b);
        }
        rerr(x, at, "Unknown number filter: %.*s", (int)fl, f);
    case JV_OBJECT:
        if (FIS("items")) return obj_items(x, v);
        if (FIS("length")) return mk_int(x, (int64_t)v->u.o.n);
        {
            jval *b = obj_builtin(x, v, f, fl);
            if (b)
                return call_fn(x, b, NULL, 0, NULL, at);
        }
        rerr(x, at, "Unknown mapping filter: %.*s", (int)fl, f);
    case JV_BOOL:
        if (FIS("bool")) return v;
        if (FIS("int")) return mk_int(x, v->u.b);
        if (FIS("float")) return mk_float(x, v->u.b);
        if (FIS("string")) return mk_str(x, v->u.b ? "true" : "false", v->u.b ? 4 : 5);
        rerr(x, at, "Unknown boolean filter: %.*s", (int)fl, f);
    default:
        break;
    }
    rerr(x, at, "Cannot apply filter \"%.*s\" to type: %s", (int)fl, f, tname(v));
#undef FIS
}

static jval *apply_filter(jx *x, jval *v, const jnode *fn, jscope *sc)
{
    if (fn->kind == JN_IDENT)
        return filter_by_name(x, v, fn->s, fn->slen, fn);
    if (fn->kind != JN_CALL || fn->a->kind != JN_IDENT)
        rerr(x, fn, "Unknown filter");
    const char *f = fn->a->s;
    size_t fl = fn->a->slen;
#define FIS(s) (fl == sizeof(s) - 1 && !memcmp(f, s, fl))
    if (FIS("tojson")) {
        jargs a = eval_args(x, &fn->body, sc, false);
        return tojson_filter(x, v, &a, fn);
    }
    if (FIS("join")) {
        if (v->t != JV_STR && v->t != JV_ARRAY)
            rerr(x, fn, "Cannot apply filter \"join\" to type: %s", tname(v));
        jargs a = eval_args(x, &fn->body, sc, false);
        jval *sep = argk(&a, 0, "separator");
        if (sep && sep->t != JV_STR)
            rerr(x, fn, "separator must be a string");
        jbuf b = {0};
        if (v->t == JV_STR) {
            size_t *off;
            size_t n = cp_offsets(x, v->u.s.p, v->u.s.n, &off);
            for (size_t i = 0; i < n; i++) {
                if (i && sep)
                    buf_add(x, &b, sep->u.s.p, sep->u.s.n);
                buf_add(x, &b, v->u.s.p + off[i], off[i + 1] - off[i]);
            }
        } else {
            work(x, 1 + W_ITEM * v->u.a.n, fn);
            for (size_t i = 0; i < v->u.a.n; i++) {
                if (i && sep)
                    buf_add(x, &b, sep->u.s.p, sep->u.s.n);
                if (v->u.a.v[i]->t != JV_UNDEF && v->u.a.v[i]->t != JV_NONE)
                    js_str(x, &b, v->u.a.v[i], fn);
            }
        }
        return buf_val(x, &b);
    }
    if (FIS("int") || FIS("float")) {
        bool is_int = FIS("int");
        jargs a = eval_args(x, &fn->body, sc, false);
        jval *def = argk(&a, 0, "default");
        if (v->t == JV_STR) {
            double d;
            if (!js_parse_num(x, v->u.s.p, v->u.s.n, is_int, &d))
                return def ? def : is_int ? mk_int(x, 0) : mk_float(x, 0);
            return is_int ? mk_intd(x, d) : mk_float(x, d);
        }
        if (is_num(v))
            return v;
        if (v->t == JV_BOOL)
            return is_int ? mk_int(x, v->u.b) : mk_float(x, v->u.b);
        rerr(x, fn, "Cannot apply filter \"%.*s\" to type: %s", (int)fl, f, tname(v));
    }
    if (FIS("default")) {
        jargs a = eval_args(x, &fn->body, sc, false);
        jval *def = a.n > 0 ? a.v[0] : mk_str(x, "", 0);
        jval *boolean = argk(&a, 1, "boolean");
        if (boolean && boolean->t != JV_BOOL)
            rerr(x, fn, "`default` filter flag must be a boolean");
        if (v->t == JV_UNDEF || (boolean && boolean->u.b && !truthy(v)))
            return def;
        return v;
    }
    if (v->t == JV_ARRAY) {
        if (FIS("sort")) {
            jargs a = eval_args(x, &fn->body, sc, false);
            jval *rev = argk(&a, 0, "reverse"), *cs = argk(&a, 1, "case_sensitive"), *at = argk(&a, 2, "attribute");
            if (rev && rev->t != JV_BOOL)
                rerr(x, fn, "reverse must be a boolean");
            if (cs && cs->t != JV_BOOL)
                rerr(x, fn, "case_sensitive must be a boolean");
            if (at && at->t != JV_STR && at->t != JV_INT && at->t != JV_NONE)
                rerr(x, fn, "attribute must be a string, integer, or null");
            sort_ctx c = {x, fn, cs && cs->u.b, rev && rev->u.b, at && at->t != JV_NONE ? at : NULL, -1};
            return sorted(&c, v);
        }
        if (FIS("selectattr") || FIS("rejectattr")) {
            bool sel = FIS("selectattr");
            for (size_t i = 0; i < v->u.a.n; i++)
                if (v->u.a.v[i]->t != JV_OBJECT && v->u.a.v[i]->t != JV_NS)
                    rerr(x, fn, "`%.*s` can only be applied to array of objects", (int)fl, f);
            for (uint32_t i = 0; i < fn->body.n; i++)
                if (fn->body.v[i]->kind != JN_STR)
                    rerr(x, fn, "arguments of `%.*s` must be strings", (int)fl, f);
            if (fn->body.n == 0)
                rerr(x, fn, "`%.*s` needs an attribute name", (int)fl, f);
            const jnode *attr = fn->body.v[0];
            const jnode *test = fn->body.n > 1 ? fn->body.v[1] : NULL;
            jval *tv = fn->body.n > 2 ? mk_str(x, fn->body.v[2]->s, fn->body.v[2]->slen) : NULL;
            if (test && !is_test_name(test->s, test->slen))
                rerr(x, fn, "Unknown test: %.*s", (int)test->slen, test->s);
            jval *r = mk_arr(x, v->u.a.n);
            for (size_t i = 0; i < v->u.a.n; i++) {
                step(x, fn);
                jval *av = obj_get_w(x, v->u.a.v[i], attr->s, attr->slen, fn);
                bool res = av ? (test ? run_test(x, test->s, test->slen, av, tv, fn) : truthy(av)) : false;
                if (sel == res)
                    r->u.a.v[r->u.a.n++] = v->u.a.v[i];
            }
            return r;
        }
        if (FIS("map")) {
            jargs a = eval_args(x, &fn->body, sc, false);
            jval *attr = kwget(&a, "attribute");
            if (!attr)
                rerr(x, fn, "`map` expressions without `attribute` set are not currently supported.");
            if (attr->t != JV_STR)
                rerr(x, fn, "attribute must be a string");
            jval *def = kwget(&a, "default");
            work(x, 1 + W_ITEM * v->u.a.n, fn);
            jval *r = mk_arr(x, v->u.a.n);
            for (size_t i = 0; i < v->u.a.n; i++) {
                jval *it = v->u.a.v[i];
                if (it->t != JV_OBJECT && it->t != JV_NS)
                    rerr(x, fn, "items in map must be an object");
                jval *mv = attr_path(x, it, attr->u.s.p, attr->u.s.n);
                r->u.a.v[r->u.a.n++] = mv->t == JV_UNDEF ? (def ? def : &V_UNDEF) : mv;
            }
            return r;
        }
        rerr(x, fn, "Unknown list filter: %.*s", (int)fl, f);
    }
    if (v->t == JV_STR) {
        if (FIS("indent")) {
            jargs a = eval_args(x, &fn->body, sc, false);
            jval *w = argk(&a, 0, "width"), *first = argk(&a, 1, "first"), *blank = argk(&a, 2, "blank");
            if (w && w->t != JV_INT)
                rerr(x, fn, "width must be a number");
            int64_t width = w ? w->u.i : 4;
            if (width < 0 || width > 4096)
                rerr(x, fn, "width out of range");
            jbuf b = {0};
            const char *p = v->u.s.p, *e = p + v->u.s.n;
            bool isfirst = true;
            for (;;) {
                const char *nl = memchr(p, '\n', (size_t)(e - p));
                const char *le = nl ? nl : e;
                bool skip = (!(first && truthy(first)) && isfirst) || (!(blank && truthy(blank)) && le == p);
                if (!skip)
                    for (int64_t k = 0; k < width; k++)
                        buf_addc(x, &b, ' ');
                buf_add(x, &b, p, (size_t)(le - p));
                if (!nl)
                    break;
                buf_addc(x, &b, '\n');
                p = nl + 1;
                isfirst = false;
            }
            return buf_val(x, &b);
        }
        if (FIS("replace")) {
            jargs a = eval_args(x, &fn->body, sc, true);
            jval **args = ja_alloc(&x->a, (a.n + 1) * sizeof *args);
            if (a.n)
                memcpy(args, a.v, a.n * sizeof *args);
            args[a.n] = a.kw;
            return call_fn(x, mk_fn(x, BI_S_REPLACE, v), args, a.n + 1, sc, fn);
        }
        rerr(x, fn, "Unknown string filter: %.*s", (int)fl, f);
    }
    if (v->t == JV_OBJECT) {
        jval *b = obj_builtin(x, v, f, fl);
        if (b) {
            jargs a = eval_args(x, &fn->body, sc, false);
            jval **args = ja_alloc(&x->a, (a.n + 1) * sizeof *args);
            if (a.n)
                memcpy(args, a.v, a.n * sizeof *args);
            size_t n = a.n;
            if (a.kw)
                args[n++] = a.kw;
            return call_fn(x, b, args, n, sc, fn);
        }
        rerr(x, fn, "Unknown mapping filter: %.*s", (int)fl, f);
    }
    rerr(x, fn, "Cannot apply filter \"%.*s\" to type: %s", (int)fl, f, tname(v));
#undef FIS
}

/* Bind a macro's (or a call block's) parameters in `scope`. */
static void bind_params(jx *x, const char *name, const jlist *params, bool varargs, bool kwargs, jval **args,
                        size_t nargs, jscope *scope, const jnode *at)
{
    jval *kw = NULL;
    if (nargs && args[nargs - 1]->t == JV_OBJECT && args[nargs - 1]->kwargs)
        kw = args[--nargs];
    bool *used = kw ? ja_alloc(&x->a, (kw->u.o.n + 1) * sizeof *used) : NULL;
    if (kw)
        memset(used, 0, (kw->u.o.n + 1) * sizeof *used);
    const jnode **pending = ja_alloc(&x->a, (params->n + 1) * sizeof *pending);
    size_t npending = 0;
    for (uint32_t i = 0; i < params->n; i++) {
        const jnode *p = params->v[i];
        jval *v = i < nargs ? args[i] : NULL;
        if (!v && kw) {
            long k = obj_find_w(x, kw, p->s, p->slen, at);
            if (k >= 0 && !used[k]) {
                v = kw->u.o.v[k];
                used[k] = true;
            }
        }
        if (!v && p->kind == JN_KWARG)
            pending[npending++] = p;
        scope_set(x, scope, p->s, p->slen, v ? v : &V_UNDEF);
    }
    if (kwargs) {
        jval *rest = mk_obj(x, JV_OBJECT);
        for (size_t k = 0; kw && k < kw->u.o.n; k++)
            if (!used[k])
                obj_set(x, rest, kw->u.o.k[k].p, kw->u.o.k[k].n, kw->u.o.v[k]);
        scope_set(x, scope, "kwargs", 6, rest);
    } else {
        for (size_t k = 0; kw && k < kw->u.o.n; k++)
            if (!used[k])
                rerr(x, at, "macro %s takes no keyword argument '%.*s'", name, (int)kw->u.o.k[k].n, kw->u.o.k[k].p);
    }
    if (varargs) {
        work(x, 1 + W_ITEM * nargs, at);
        jval *rest = mk_arr(x, 0);
        for (size_t i = params->n; i < nargs; i++)
            arr_push(x, rest, args[i]);
        scope_set(x, scope, "varargs", 7, rest);
    } else if (nargs > params->n) {
        rerr(x, at, "macro %s takes not more than %u argument(s)", name, params->n);
    }
    for (size_t i = 0; i < npending; i++)
        scope_set(x, scope, pending[i]->s, pending[i]->slen, eval(x, pending[i]->a, scope));
}

static jval *render_body(jx *x, const jlist *body, jscope *sc, const jnode *at)
{
    jbuf b = {0};
    int flow = exec_list(x, body, sc, &b);
    if (flow != FLOW_NEXT)
        rerr(x, at, "'%s' outside of a loop", flow == FLOW_BREAK ? "break" : "continue");
    return buf_val(x, &b);
}

static const char *MONTHS[] = {"January", "February", "March", "April", "May", "June", "July",
                               "August", "September", "October", "November", "December"};

static jval *call_fn(jx *x, jval *fn, jval **args, size_t nargs, jscope *sc, const jnode *at)
{
    step(x, at);
    jval *self = fn->u.fn.self;
    jval *a0 = nargs > 0 ? args[0] : NULL;
    jval *a1 = nargs > 1 ? args[1] : NULL;
    switch (fn->u.fn.bi) {
    case BI_MACRO: {
        const jnode *m = fn->u.fn.node;
        char name[80];
        snprintf(name, sizeof name, "'%.*s'", (int)(m->slen > 60 ? 60 : m->slen), m->s);
        enter(x, at);
        jscope *ms = scope_new(x, sc ? sc : x->global);
        bind_params(x, name, &m->args, m->flag, m->flag2, args, nargs, ms, at);
        jval *r = render_body(x, &m->body, ms, at);
        x->depth--;
        return r;
    }
    case BI_CALLER: {
        const jnode *cb = fn->u.fn.node;
        enter(x, at);
        jscope *cs = scope_new(x, fn->u.fn.env);
        bind_params(x, "None", &cb->args, cb->flag, cb->flag2, args, nargs, cs, at);
        jval *r = render_body(x, &cb->body, cs, at);
        x->depth--;
        return r;
    }
    case BI_RAISE: {
        jbuf b = {0};
        for (size_t i = 0; i < nargs; i++) {
            if (i)
                buf_addc(x, &b, ',');
            rt_str(x, &b, args[i], at);
        }
        jfail_at(&x->f, at ? at->pos : (uint32_t)-1, JINJA_ERAISE, "%s", b.p ? b.p : "");
    }
    case BI_RANGE: {
        /* integers beyond 2**53 (held as doubles) are integers too: the
         * count check below refuses them in user words */
        for (size_t i = 0; i < nargs; i++)
            if (!is_intv(args[i]))
                rerr(x, at, "range() arguments must be integers, got %s", tname(args[i]));
        if (nargs < 1 || nargs > 3)
            rerr(x, at, "range() takes 1 to 3 arguments");
        int64_t start = 0, stop, st = 1;
        if (nargs == 1) {
            stop = int_of(args[0]);
        } else {
            start = int_of(args[0]);
            stop = int_of(args[1]);
            if (nargs == 3)
                st = int_of(args[2]);
        }
        if (st == 0)
            rerr(x, at, "range() step must not be zero");
        /* the item count, without overflow: |stop - start| < 2**64 */
        uint64_t cnt = 0;
        if (st > 0 && stop > start)
            cnt = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)st + 1;
        else if (st < 0 && start > stop)
            cnt = ((uint64_t)start - (uint64_t)stop - 1) / (st == INT64_MIN ? (uint64_t)1 << 63 : (uint64_t)-st) + 1;
        if (cnt > JINJA_MAX_RANGE)
            jfail_at(&x->f, at ? at->pos : (uint32_t)-1, JINJA_ELIMIT, "range(): too many items (%llu; at most %d)",
                     (unsigned long long)cnt, JINJA_MAX_RANGE);
        work(x, 1 + W_ITEM * cnt, at);
        jval *r = mk_arr(x, (size_t)cnt);
        for (uint64_t k = 0; k < cnt; k++)
            r->u.a.v[r->u.a.n++] = mk_int(x, (int64_t)((uint64_t)start + k * (uint64_t)st)); /* in range: wraps back */
        return r;
    }
    case BI_NAMESPACE: {
        jval *ns = mk_obj(x, JV_NS);
        size_t npos = nargs;
        jval *kw = NULL;
        if (npos && args[npos - 1]->t == JV_OBJECT && args[npos - 1]->kwargs)
            kw = args[--npos];
        if (npos > 1)
            rerr(x, at, "namespace expected at most 1 argument, got %zu", npos);
        if (npos == 1) {
            jval *src = args[0];
            if (src->t == JV_OBJECT) {
                work(x, 1 + W_KEY * src->u.o.n, at);
                for (size_t i = 0; i < src->u.o.n; i++)
                    obj_set(x, ns, src->u.o.k[i].p, src->u.o.k[i].n, src->u.o.v[i]);
            } else if (src->t == JV_ARRAY) {
                for (size_t i = 0; i < src->u.a.n; i++) {
                    jval *pr = src->u.a.v[i];
                    if (pr->t != JV_ARRAY || pr->u.a.n != 2)
                        rerr(x, at, "namespace expected an object or an iterable of [key, value] pairs");
                    if (pr->u.a.v[0]->t != JV_STR)
                        rerr(x, at, "namespace keys must be strings");
                    obj_set(x, ns, pr->u.a.v[0]->u.s.p, pr->u.a.v[0]->u.s.n, pr->u.a.v[1]);
                }
            } else {
                rerr(x, at, "'%s' object is not iterable", tname(src));
            }
        }
        for (size_t i = 0; kw && i < kw->u.o.n; i++)
            obj_set(x, ns, kw->u.o.k[i].p, kw->u.o.k[i].n, kw->u.o.v[i]);
        return ns;
    }
    case BI_STRFTIME: {
        if (!a0 || a0->t != JV_STR)
            rerr(x, at, "strftime_now() needs a format string");
        time_t now = x->lim.now ? x->lim.now : time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        jbuf b = {0};
        const char *p = a0->u.s.p, *e = p + a0->u.s.n;
        char t[16];
        while (p < e) {
            if (*p == '%' && p + 1 < e && strchr("YmdbBHM%", p[1])) {
                switch (p[1]) {
                case 'Y': snprintf(t, sizeof t, "%d", tm.tm_year + 1900); break;
                case 'm': snprintf(t, sizeof t, "%02d", tm.tm_mon + 1); break;
                case 'd': snprintf(t, sizeof t, "%02d", tm.tm_mday); break;
                case 'b': snprintf(t, sizeof t, "%.3s", MONTHS[tm.tm_mon]); break;
                case 'B': snprintf(t, sizeof t, "%s", MONTHS[tm.tm_mon]); break;
                case 'H': snprintf(t, sizeof t, "%02d", tm.tm_hour); break;
                case 'M': snprintf(t, sizeof t, "%02d", tm.tm_min); break;
                default: snprintf(t, sizeof t, "%%"); break;
                }
                buf_adds(x, &b, t);
                p += 2;
            } else {
                buf_addc(x, &b, *p++);
            }
        }
        return buf_val(x, &b);
    }
    case BI_S_UPPER: return str_case(x, self, 0);
    case BI_S_LOWER: return str_case(x, self, 1);
    case BI_S_TITLE: return str_case(x, self, 2);
    case BI_S_CAPITALIZE: return str_case(x, self, 3);
    case BI_S_STRIP: return str_trim(x, self, true, true);
    case BI_S_LSTRIP: return str_trim(x, self, true, false);
    case BI_S_RSTRIP: return str_trim(x, self, false, true);
    case BI_S_STARTSWITH:
    case BI_S_ENDSWITH: {
        bool sw = fn->u.fn.bi == BI_S_STARTSWITH;
        const char *nm = sw ? "startswith" : "endswith";
        if (!a0)
            rerr(x, at, "%s() requires at least one argument", nm);
        jval **pats = &a0;
        size_t np = 1;
        if (a0->t == JV_ARRAY) {
            pats = a0->u.a.v;
            np = a0->u.a.n;
            for (size_t i = 0; i < np; i++)
                if (pats[i]->t != JV_STR)
                    rerr(x, at, "%s() tuple elements must be strings", nm);
        } else if (a0->t != JV_STR) {
            rerr(x, at, "%s() argument must be a string or tuple of strings", nm);
        }
        for (size_t i = 0; i < np; i++) {
            jstr p = pats[i]->u.s;
            work(x, 1 + p.n, at);
            if (p.n <= self->u.s.n &&
                (p.n == 0 || !memcmp(sw ? self->u.s.p : self->u.s.p + self->u.s.n - p.n, p.p, p.n)))
                return &V_TRUE;
        }
        return &V_FALSE;
    }
    case BI_S_SPLIT: {
        jval *sep = a0 ? a0 : &V_NONE;
        if (sep->t != JV_STR && sep->t != JV_NONE)
            rerr(x, at, "sep argument must be a string or null");
        jval *ms = a1 ? a1 : NULL;
        if (ms && ms->t != JV_INT)
            rerr(x, at, "maxsplit argument must be a number");
        int64_t maxsplit = ms ? ms->u.i : -1;
        jval *r = mk_arr(x, 0);
        const char *p = self->u.s.p, *e = p + self->u.s.n;
        if (sep->t == JV_NONE) {
            work(x, 1 + self->u.s.n, at);
            size_t l;
            while (p < e && (l = jinja_ws_at(p, (size_t)(e - p))))
                p += l;
            while (p < e) {
                const char *w = p;
                while (p < e && !jinja_ws_at(p, (size_t)(e - p)))
                    p += u8len((unsigned char)*p) <= (size_t)(e - p) ? u8len((unsigned char)*p) : 1;
                if (maxsplit != -1 && (int64_t)r->u.a.n >= maxsplit) {
                    arr_push(x, r, mk_str(x, w, (size_t)(e - w)));
                    break;
                }
                arr_push(x, r, mk_str(x, w, (size_t)(p - w)));
                while (p < e && (l = jinja_ws_at(p, (size_t)(e - p))))
                    p += l;
            }
            return r;
        }
        if (sep->u.s.n == 0)
            rerr(x, at, "empty separator");
        for (;;) {
            step(x, at);
            const char *f = memfind(x, p, (size_t)(e - p), sep->u.s.p, sep->u.s.n);
            if (!f || (maxsplit != -1 && (int64_t)r->u.a.n >= maxsplit)) {
                arr_push(x, r, mk_str(x, p, (size_t)(e - p)));
                break;
            }
            arr_push(x, r, mk_str(x, p, (size_t)(f - p)));
            p = f + sep->u.s.n;
        }
        return r;
    }
    case BI_S_REPLACE: {
        if (nargs < 2)
            rerr(x, at, "replace() requires at least two arguments");
        if (a0->t != JV_STR || a1->t != JV_STR)
            rerr(x, at, "replace() arguments must be strings");
        jval *count = &V_NONE;
        if (nargs > 2) {
            if (args[2]->t == JV_OBJECT && args[2]->kwargs) {
                jval *c = obj_get(args[2], "count", 5);
                count = c ? c : &V_NONE;
            } else {
                count = args[2];
            }
        }
        if (count->t != JV_INT && count->t != JV_NONE)
            rerr(x, at, "replace() count argument must be a number or null");
        return str_replace(x, self, a0, a1, count->t == JV_INT ? count->u.i : -1, at);
    }
    case BI_O_GET: {
        if (!a0 || a0->t != JV_STR)
            rerr(x, at, "Object key must be a string: got %s", a0 ? tname(a0) : "undefined");
        jval *v = obj_get_w(x, self, a0->u.s.p, a0->u.s.n, at);
        return v ? v : a1 ? a1 : &V_NONE;
    }
    case BI_O_ITEMS: return obj_items(x, self);
    case BI_O_KEYS: return obj_keys(x, self);
    case BI_O_VALUES: {
        work(x, 1 + W_ITEM * self->u.o.n, at);
        jval *r = mk_arr(x, self->u.o.n);
        for (size_t i = 0; i < self->u.o.n; i++)
            r->u.a.v[r->u.a.n++] = self->u.o.v[i];
        return r;
    }
    case BI_O_DICTSORT: {
        size_t npos = nargs;
        jval *kw = NULL;
        if (npos && args[npos - 1]->t == JV_OBJECT && args[npos - 1]->kwargs)
            kw = args[--npos];
        jval *cs = npos > 0 ? args[0] : kw ? obj_get(kw, "case_sensitive", 14) : NULL;
        jval *by = npos > 1 ? args[1] : kw ? obj_get(kw, "by", 2) : NULL;
        jval *rev = npos > 2 ? args[2] : kw ? obj_get(kw, "reverse", 7) : NULL;
        if (cs && cs->t != JV_BOOL)
            rerr(x, at, "case_sensitive must be a boolean");
        if (by && by->t != JV_STR)
            rerr(x, at, "by must be a string");
        if (by && !str_eq(by->u.s, "key", 3) && !str_eq(by->u.s, "value", 5))
            rerr(x, at, "by must be either 'key' or 'value'");
        if (rev && rev->t != JV_BOOL)
            rerr(x, at, "reverse must be a boolean");
        sort_ctx c = {x, at, cs && cs->u.b, rev && rev->u.b, NULL, by && str_eq(by->u.s, "value", 5) ? 1 : 0};
        return sorted(&c, obj_items(x, self));
    }
    }
    rerr(x, at, "Cannot call something that is not a function");
}

static jval *eval_call(jx *x, const jnode *n, jscope *sc)
{
    jargs a = eval_args(x, &n->body, sc, false);
    jval *fn = eval(x, n->a, sc);
    if (fn->t != JV_FUNC)
        rerr(x, n, "Cannot call something that is not a function: got %s", tname(fn));
    size_t nargs = a.n;
    if (a.kw)
        a.v[nargs++] = a.kw; /* eval_args left room for it */
    return call_fn(x, fn, a.v, nargs, sc, n);
}

static jval *eval(jx *x, const jnode *n, jscope *sc)
{
    if (!n)
        return &V_UNDEF;
    enter(x, n);
    const jnode *outer = x->cur;
    x->cur = n;
    jval *r = NULL;
    switch ((jnode_kind)n->kind) {
    case JN_STR:
    case JN_TEXT: r = mk_str(x, n->s, n->slen); break;
    case JN_INT:
        r = n->i > (int64_t)JS_SAFE_INT || n->i < -(int64_t)JS_SAFE_INT ? mk_intd(x, (double)n->i) : mk_int(x, n->i);
        break;
    case JN_FLOAT:
        r = n->flag ? mk_intd(x, n->f) : mk_float(x, n->f); /* flag: an integer literal beyond int64 */
        break;
    case JN_IDENT: r = scope_get(x, sc, n->s, n->slen); break;
    case JN_ARRAY:
    case JN_TUPLE:
        r = mk_arr(x, n->body.n);
        for (uint32_t i = 0; i < n->body.n; i++)
            r->u.a.v[r->u.a.n++] = eval(x, n->body.v[i], sc);
        r->tuple = n->kind == JN_TUPLE;
        break;
    case JN_OBJECT:
        r = mk_obj(x, JV_OBJECT);
        for (uint32_t i = 0; i < n->body.n; i++) {
            jval *k = eval(x, n->body.v[i], sc);
            if (k->t != JV_STR)
                rerr(x, n->body.v[i], "Object keys must be strings: got %s", tname(k));
            obj_set(x, r, k->u.s.p, k->u.s.n, eval(x, n->alt.v[i], sc));
        }
        break;
    case JN_MEMBER: r = eval_member(x, n, sc); break;
    case JN_CALL: r = eval_call(x, n, sc); break;
    case JN_BINARY: r = eval_binary(x, n, sc); break;
    case JN_UNARY: r = eval_unary(x, n, sc); break;
    case JN_FILTER: r = apply_filter(x, eval(x, n->a, sc), n->b, sc); break;
    case JN_TEST: {
        jval *v = eval(x, n->a, sc);
        bool t = run_test(x, n->s, n->slen, v, NULL, n);
        r = mk_bool(n->flag ? !t : t);
        break;
    }
    case JN_SELECT: r = truthy(eval(x, n->b, sc)) ? eval(x, n->a, sc) : &V_UNDEF; break;
    case JN_TERNARY: r = truthy(eval(x, n->a, sc)) ? eval(x, n->b, sc) : eval(x, n->c, sc); break;
    default: rerr(x, n, "unexpected expression");
    }
    x->cur = outer;
    x->depth--;
    return r;
}

/* ------------------------------------------------------------- statements */

static void assign_target(jx *x, const jnode *target, jval *v, jscope *sc, bool in_for)
{
    if (target->kind == JN_IDENT) {
        scope_set(x, sc, target->s, target->slen, v);
        return;
    }
    if (target->kind == JN_TUPLE) {
        if (in_for ? (v->t != JV_ARRAY || v->tuple) : v->t != JV_ARRAY)
            rerr(x, target, in_for ? "Cannot unpack non-iterable type: %s" : "Cannot unpack non-iterable type in set: %s",
                 tname(v));
        if (v->u.a.n != target->body.n)
            rerr(x, target, "Too %s items to unpack", target->body.n > v->u.a.n ? "few" : "many");
        for (uint32_t i = 0; i < target->body.n; i++) {
            const jnode *e = target->body.v[i];
            if (e->kind != JN_IDENT)
                rerr(x, e, "Cannot unpack to non-identifier");
            scope_set(x, sc, e->s, e->slen, v->u.a.v[i]);
        }
        return;
    }
    rerr(x, target, "Invalid assignment target");
}

static void exec_set(jx *x, const jnode *n, jscope *sc)
{
    jval *rhs = n->b ? eval(x, n->b, sc) : render_body(x, &n->body, sc, n);
    const jnode *t = n->a;
    if (t->kind == JN_MEMBER) {
        jval *obj = eval(x, t->a, sc);
        if (obj->t != JV_NS)
            rerr(x, t, "cannot assign attribute on non-namespace object");
        if (t->flag || t->b->kind != JN_IDENT)
            rerr(x, t, "Cannot assign to member with non-identifier property");
        obj_set(x, obj, t->b->s, t->b->slen, rhs);
        return;
    }
    assign_target(x, t, rhs, sc, false);
}

static int exec_for(jx *x, const jnode *n, jscope *sc, jbuf *out)
{
    jscope *scope = scope_new(x, sc);
    const jnode *test = NULL;
    jval *it;
    if (n->b->kind == JN_SELECT) {
        it = eval(x, n->b->a, scope);
        test = n->b->b;
    } else {
        it = eval(x, n->b, scope);
    }
    if (it->t == JV_OBJECT)
        it = obj_keys(x, it);
    else if (it->t != JV_ARRAY)
        rerr(x, n->b, "Expected iterable or object type in for loop: got %s", tname(it));
    work(x, 1 + W_ITEM * it->u.a.n, n);
    jval *items = mk_arr(x, it->u.a.n);
    for (size_t i = 0; i < it->u.a.n; i++) {
        jval *cur = it->u.a.v[i];
        if (n->a->kind == JN_TUPLE && (cur->t != JV_ARRAY || cur->tuple))
            rerr(x, n->a, "Cannot unpack non-iterable type: %s", tname(cur));
        if (test) {
            step(x, n);
            jscope *ls = scope_new(x, scope);
            assign_target(x, n->a, cur, ls, true);
            if (!truthy(eval(x, test, ls)))
                continue;
        }
        items->u.a.v[items->u.a.n++] = cur;
    }
    bool none = true;
    size_t cnt = items->u.a.n;
    for (size_t i = 0; i < cnt; i++) {
        step(x, n);
        jval *loop = mk_obj(x, JV_OBJECT);
        obj_set(x, loop, "index", 5, mk_int(x, (int64_t)i + 1));
        obj_set(x, loop, "index0", 6, mk_int(x, (int64_t)i));
        obj_set(x, loop, "revindex", 8, mk_int(x, (int64_t)(cnt - i)));
        obj_set(x, loop, "revindex0", 9, mk_int(x, (int64_t)(cnt - i - 1)));
        obj_set(x, loop, "first", 5, mk_bool(i == 0));
        obj_set(x, loop, "last", 4, mk_bool(i == cnt - 1));
        obj_set(x, loop, "length", 6, mk_int(x, (int64_t)cnt));
        obj_set(x, loop, "previtem", 8, i > 0 ? items->u.a.v[i - 1] : &V_UNDEF);
        obj_set(x, loop, "nextitem", 8, i + 1 < cnt ? items->u.a.v[i + 1] : &V_UNDEF);
        scope_set(x, scope, "loop", 4, loop);
        assign_target(x, n->a, items->u.a.v[i], scope, true);
        size_t mark = out->n;
        int flow = exec_list(x, &n->body, scope, out);
        if (flow != FLOW_NEXT) {
            /* the iteration's partial output is dropped, as the reference does */
            out->n = mark;
            if (out->p)
                out->p[mark] = 0;
            if (flow == FLOW_BREAK)
                break;
            continue;
        }
        none = false;
    }
    if (none) {
        int flow = exec_list(x, &n->alt, scope, out);
        if (flow != FLOW_NEXT)
            return flow;
    }
    return FLOW_NEXT;
}

static int exec_stmt(jx *x, const jnode *n, jscope *sc, jbuf *out)
{
    step(x, n);
    x->cur = n;
    switch ((jnode_kind)n->kind) {
    case JN_TEXT: buf_add(x, out, n->s, n->slen); return FLOW_NEXT;
    case JN_COMMENT: return FLOW_NEXT;
    case JN_OUTPUT: out_value(x, out, eval(x, n->a, sc), n); return FLOW_NEXT;
    case JN_IF: {
        enter(x, n);
        bool t = truthy(eval(x, n->a, sc));
        int flow = exec_list(x, t ? &n->body : &n->alt, sc, out);
        x->depth--;
        return flow;
    }
    case JN_FOR: {
        enter(x, n);
        int flow = exec_for(x, n, sc, out);
        x->depth--;
        return flow;
    }
    case JN_SET: exec_set(x, n, sc); return FLOW_NEXT;
    case JN_MACRO: {
        jval *f = mk_fn(x, BI_MACRO, NULL);
        f->u.fn.node = n;
        scope_set(x, sc, n->s, n->slen, f);
        return FLOW_NEXT;
    }
    case JN_CALLBLOCK: {
        jval *caller = mk_fn(x, BI_CALLER, NULL);
        caller->u.fn.node = n;
        caller->u.fn.env = sc;
        const jnode *call = n->a;
        jargs a = eval_args(x, &call->body, sc, true);
        jval *fn = eval(x, call->a, sc);
        if (fn->t != JV_FUNC)
            rerr(x, call, "Cannot call something that is not a function: got %s", tname(fn));
        jscope *env = scope_new(x, sc);
        scope_set(x, env, "caller", 6, caller);
        a.v[a.n] = a.kw;
        out_value(x, out, call_fn(x, fn, a.v, a.n + 1, env, call), n);
        return FLOW_NEXT;
    }
    case JN_BREAK: return FLOW_BREAK;
    case JN_CONTINUE: return FLOW_CONTINUE;
    case JN_FILTERBLOCK: {
        jval *body = render_body(x, &n->body, sc, n);
        out_value(x, out, apply_filter(x, body, n->b, sc), n);
        return FLOW_NEXT;
    }
    default: out_value(x, out, eval(x, n, sc), n); return FLOW_NEXT;
    }
}

static int exec_list(jx *x, const jlist *l, jscope *sc, jbuf *out)
{
    for (uint32_t i = 0; i < l->n; i++) {
        int flow = exec_stmt(x, l->v[i], sc, out);
        if (flow != FLOW_NEXT)
            return flow;
    }
    return FLOW_NEXT;
}

/* ------------------------------------------------------------------ input */

static jval *from_json(jx *x, const cJSON *j, int depth)
{
    if (depth > 256)
        jfail_at(&x->f, (uint32_t)-1, JINJA_ELIMIT, "input variables nested too deeply");
    if (cJSON_IsNull(j))
        return &V_NONE;
    if (cJSON_IsFalse(j))
        return &V_FALSE;
    if (cJSON_IsTrue(j))
        return &V_TRUE;
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (isfinite(d) && floor(d) == d)
            return mk_intd(x, d);
        return mk_float(x, d);
    }
    if (cJSON_IsString(j))
        return mk_str(x, j->valuestring ? j->valuestring : "", j->valuestring ? strlen(j->valuestring) : 0);
    if (cJSON_IsArray(j)) {
        jval *a = mk_arr(x, 0);
        for (const cJSON *c = j->child; c; c = c->next)
            arr_push(x, a, from_json(x, c, depth + 1));
        return a;
    }
    if (cJSON_IsObject(j)) {
        jval *o = mk_obj(x, JV_OBJECT);
        for (const cJSON *c = j->child; c; c = c->next) {
            const char *k = c->string ? c->string : "";
            obj_set(x, o, k, strlen(k), from_json(x, c, depth + 1));
        }
        return o;
    }
    return &V_UNDEF;
}

/* ------------------------------------------------------------------ entry */

char *jinja_render(const jinja_template *t, const cJSON *vars, const jinja_limits *limits, size_t *out_len,
                   jinja_error *err)
{
    return jinja_render_stats(t, vars, limits, out_len, NULL, err);
}

char *jinja_render_stats(const jinja_template *t, const cJSON *vars, const jinja_limits *limits, size_t *out_len,
                         jinja_stats *stats, jinja_error *err)
{
    jinja_error dummy;
    if (!err)
        err = &dummy;
    memset(err, 0, sizeof *err);
    if (!t) {
        err->code = JINJA_EARG;
        snprintf(err->msg, sizeof err->msg, "no template");
        return NULL;
    }
    jx *x = calloc(1, sizeof *x);
    if (!x) {
        err->code = JINJA_ENOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return NULL;
    }
    if (limits)
        x->lim = *limits;
    if (x->lim.max_depth <= 0)
        x->lim.max_depth = JINJA_DEFAULT_MAX_DEPTH;
    if (!x->lim.max_steps)
        x->lim.max_steps = JINJA_DEFAULT_MAX_STEPS;
    if (!x->lim.max_bytes)
        x->lim.max_bytes = JINJA_DEFAULT_MAX_BYTES;
    if (!x->lim.max_work)
        x->lim.max_work = JINJA_DEFAULT_MAX_WORK;
    x->f.err = err;
    x->f.src = t->src;
    x->f.src_len = t->src_len;
    x->f.posmap = t->posmap;
    x->f.posmap_len = t->posmap_len;
    x->a.fail = &x->f;
    x->a.limit = x->lim.max_bytes;
    char *result = NULL;
    if (setjmp(x->f.jb) == 0) {
        jscope *g = scope_new(x, NULL);
        x->global = g;
        scope_set(x, g, "false", 5, &V_FALSE);
        scope_set(x, g, "true", 4, &V_TRUE);
        scope_set(x, g, "none", 4, &V_NONE);
        scope_set(x, g, "False", 5, &V_FALSE);
        scope_set(x, g, "True", 4, &V_TRUE);
        scope_set(x, g, "None", 4, &V_NONE);
        scope_set(x, g, "raise_exception", 15, mk_fn(x, BI_RAISE, NULL));
        scope_set(x, g, "range", 5, mk_fn(x, BI_RANGE, NULL));
        scope_set(x, g, "strftime_now", 12, mk_fn(x, BI_STRFTIME, NULL));
        scope_set(x, g, "namespace", 9, mk_fn(x, BI_NAMESPACE, NULL));
        if (vars && cJSON_IsObject(vars))
            for (const cJSON *c = vars->child; c; c = c->next)
                if (c->string)
                    scope_set(x, g, c->string, strlen(c->string), from_json(x, c, 1));
        jbuf out = {0};
        int flow = exec_list(x, &t->body, g, &out);
        if (flow != FLOW_NEXT)
            jfail_at(&x->f, (uint32_t)-1, JINJA_ERUNTIME, "'%s' outside of a loop", flow == FLOW_BREAK ? "break" : "continue");
        result = malloc(out.n + 1);
        if (!result)
            jfail_at(&x->f, (uint32_t)-1, JINJA_ENOMEM, "out of memory");
        if (out.n)
            memcpy(result, out.p, out.n);
        result[out.n] = 0;
        if (out_len)
            *out_len = out.n;
    } else {
        result = NULL;
    }
    if (stats) {
        stats->steps = x->steps;
        stats->work = x->work;
        stats->bytes = x->a.total;
        stats->max_depth = x->max_depth_seen;
    }
    ja_release(&x->a);
    free(x);
    return result;
}
