/* jinja: values (constructors, mappings, output buffers), the render's error
 * and depth checks, and JavaScript-style equality. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

jval jv_undef = {.t = JV_UNDEF};
jval jv_none = {.t = JV_NONE};
jval jv_true = {.t = JV_BOOL, .u.b = true};
jval jv_false = {.t = JV_BOOL, .u.b = false};

/* ----------------------------------------------------------------- values */

_Noreturn void jx_err(jx *x, const jnode *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jfail_at(&x->f, n ? n->pos : (uint32_t)-1, JINJA_ERUNTIME, "%s", msg);
}

void jx_enter(jx *x, const jnode *n)
{
    if (++x->depth > x->max_depth_seen)
        x->max_depth_seen = x->depth;
    if (x->depth > x->lim.max_depth)
        jfail_at(&x->f, n ? n->pos : (uint32_t)-1, JINJA_ELIMIT,
                 "template too costly: nested deeper than %d levels (recursion?; max_depth)",
                 x->lim.max_depth);
}

const char *jv_tname(const jval *v)
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

/* An integer-typed result computed in double precision (as JavaScript does). */
jval *jv_intd(jx *x, double d)
{
    if (fabs(d) <= JS_SAFE_INT && floor(d) == d)
        return jv_int(x, (int64_t)d);
    jval *v = jv_float(x, d);
    v->intlike = true;
    return v;
}

jval *jv_arr(jx *x, size_t cap)
{
    jval *v = jv_new(x, JV_ARRAY);
    if (cap) {
        v->u.a.v = ja_alloc(&x->a, cap * sizeof(jval *));
        v->u.a.cap = cap;
    }
    return v;
}

void jv_push(jx *x, jval *a, jval *e)
{
    if (a->u.a.n == a->u.a.cap) {
        size_t cap = a->u.a.cap ? a->u.a.cap * 2 : 8;
        a->u.a.v = ja_realloc(&x->a, a->u.a.v, a->u.a.n, cap, sizeof *a->u.a.v);
        a->u.a.cap = cap;
    }
    a->u.a.v[a->u.a.n++] = e;
}

jval *jv_obj(jx *x, jvtype t)
{
    return jv_new(x, t);
}

static long jv_find(const jval *o, const char *k, size_t n)
{
    for (size_t i = 0; i < o->u.o.n; i++)
        if (jstr_eq(o->u.o.k[i], k, n))
            return (long)i;
    return -1;
}

jval *jv_get(const jval *o, const char *k, size_t n)
{
    long i = jv_find(o, k, n);
    return i < 0 ? NULL : o->u.o.v[i];
}

/* jv_find / jv_get charging the keys they walk (mappings can be large:
 * input JSON, namespace(pairs)). */
long jv_find_w(jx *x, const jval *o, const char *k, size_t n, const jnode *at)
{
    jx_work(x, 1 + W_KEY * o->u.o.n, at);
    return jv_find(o, k, n);
}

jval *jv_get_w(jx *x, const jval *o, const char *k, size_t n, const jnode *at)
{
    jx_work(x, 1 + W_KEY * o->u.o.n, at);
    return jv_get(o, k, n);
}

void jv_set(jx *x, jval *o, const char *k, size_t n, jval *v)
{
    long i = jv_find_w(x, o, k, n, NULL);
    if (i >= 0) {
        o->u.o.v[i] = v;
        return;
    }
    if (o->u.o.n == o->u.o.cap) {
        size_t cap = o->u.o.cap ? o->u.o.cap * 2 : 8;
        o->u.o.k = ja_realloc(&x->a, o->u.o.k, o->u.o.n, cap, sizeof *o->u.o.k);
        o->u.o.v = ja_realloc(&x->a, o->u.o.v, o->u.o.n, cap, sizeof *o->u.o.v);
        o->u.o.cap = cap;
    }
    o->u.o.k[o->u.o.n] = (jstr){k, n};
    o->u.o.v[o->u.o.n] = v;
    o->u.o.n++;
}

jval *jv_fn(jx *x, jbuiltin bi, jval *self)
{
    jval *v = jv_new(x, JV_FUNC);
    v->u.fn.bi = bi;
    v->u.fn.self = self;
    return v;
}

/* ------------------------------------------------------------------ buffers */

void jbuf_grow(jx *x, jbuf *b, size_t add)
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

/* --------------------------------------------------------------- equality */

static double jv_js_str_to_num(const char *s, size_t n)
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


/* JavaScript `a.value == b.value` (loose equality): containers by identity,
 * a container against a primitive through its text (`[] == ''`, `[1] == 1`). */
bool jv_loose_eq(jx *x, const jval *a, const jval *b, const jnode *at)
{
    bool an = a->t == JV_UNDEF || a->t == JV_NONE, bn = b->t == JV_UNDEF || b->t == JV_NONE;
    if (an || bn)
        return an && bn;
    if (jv_is_obj(a) && jv_is_obj(b))
        return a == b;
    if (jv_is_obj(a) || jv_is_obj(b)) {
        const jval *o = jv_is_obj(a) ? a : b, *p = jv_is_obj(a) ? b : a;
        jbuf t = {0};
        jv_js_str(x, &t, o, at);
        jval sv = {.t = JV_STR};
        sv.u.s.p = t.p ? t.p : "";
        sv.u.s.n = t.n;
        return jv_loose_eq(x, &sv, p, at);
    }
    if (a->t == JV_STR && b->t == JV_STR) {
        jx_work(x, 1 + (a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n), at);
        return jstr_eq(a->u.s, b->u.s.p, b->u.s.n);
    }
    jx_work(x, 1 + (a->t == JV_STR ? a->u.s.n : 0) + (b->t == JV_STR ? b->u.s.n : 0), at);
    double p = a->t == JV_STR ? jv_js_str_to_num(a->u.s.p, a->u.s.n) : jv_num(a);
    double q = b->t == JV_STR ? jv_js_str_to_num(b->u.s.p, b->u.s.n) : jv_num(b);
    return p == q;
}

/* JavaScript `a.value === b.value`. */
bool jv_strict_eq(jx *x, const jval *a, const jval *b)
{
    jx_work(x, W_ITEM + (a->t == JV_STR && b->t == JV_STR ? (a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n) : 0), NULL);
    /* none and undefined both hold JavaScript undefined */
    bool an = a->t == JV_UNDEF || a->t == JV_NONE, bn = b->t == JV_UNDEF || b->t == JV_NONE;
    if (an || bn)
        return an && bn;
    if (jv_is_obj(a) || jv_is_obj(b))
        return a == b;
    if (jv_is_num(a) && jv_is_num(b))
        return jv_num(a) == jv_num(b);
    if (a->t != b->t)
        return false;
    if (a->t == JV_BOOL)
        return a->u.b == b->u.b;
    return jstr_eq(a->u.s, b->u.s.p, b->u.s.n);
}

/* SameValueZero, used by `unique` (JavaScript Set). */
bool jv_same_value_zero(jx *x, const jval *a, const jval *b)
{
    if (jv_is_num(a) && jv_is_num(b) && isnan(jv_num(a)) && isnan(jv_num(b)))
        return true;
    return jv_strict_eq(x, a, b);
}
