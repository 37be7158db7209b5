/* jinja: the interpreter (scopes, expressions, statements, macro calls, the
 * render entry). Semantics follow @huggingface/jinja 0.5 (see jinja.h); error
 * messages follow its wording, with Jinja's type names (integer, string,
 * list, mapping...) where it names its own classes.
 *
 * Cost: jx_step() counts statements, iterations and calls; jx_work() counts
 * the bytes (and items) each operation touches, charged before the operation
 * runs, so no single operation runs far past jinja_limits.max_work; the
 * arena bounds memory (jinja_limits.max_bytes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

/* ----------------------------------------------------------------- scopes */

jscope *jscope_new(jx *x, jscope *parent)
{
    jscope *s = ja_alloc(&x->a, sizeof *s);
    memset(s, 0, sizeof *s);
    s->parent = parent;
    return s;
}

static void jscope_set(jx *x, jscope *s, const char *k, size_t n, jval *v)
{
    jx_work(x, 1 + W_KEY * s->n, NULL);
    for (size_t i = 0; i < s->n; i++)
        if (jstr_eq(s->k[i], k, n)) {
            s->v[i] = v;
            return;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        s->k = ja_realloc(&x->a, s->k, s->n, cap, sizeof *s->k);
        s->v = ja_realloc(&x->a, s->v, s->n, cap, sizeof *s->v);
        s->cap = cap;
    }
    s->k[s->n] = (jstr){k, n};
    s->v[s->n] = v;
    s->n++;
}

static jval *jscope_get(jx *x, jscope *s, const char *k, size_t n)
{
    for (; s; s = s->parent) {
        jx_work(x, 1 + W_KEY * s->n, NULL);
        for (size_t i = s->n; i-- > 0;)
            if (jstr_eq(s->k[i], k, n))
                return s->v[i];
    }
    return &jv_undef;
}

/* ------------------------------------------------------------ evaluation */

static jval *jx_eval(jx *x, const jnode *n, jscope *sc);
static int jx_exec_list(jx *x, const jlist *l, jscope *sc, jbuf *out);

static void out_value(jx *x, jbuf *out, const jval *v, const jnode *at)
{
    if (v->t == JV_NONE || v->t == JV_UNDEF)
        return;
    jv_rt_str(x, out, v, at);
}

jargs jx_eval_args(jx *x, const jlist *args, jscope *sc, bool always_kw)
{
    jargs r = {0};
    size_t cap = args->n + 1;
    for (uint32_t i = 0; i < args->n; i++)
        if (args->v[i]->kind == JN_SPREAD) {
            jval *s = jx_eval(x, args->v[i]->a, sc);
            if (s->t != JV_ARRAY)
                jx_err(x, args->v[i], "Cannot unpack non-iterable type: %s", jv_tname(s));
            jx_work(x, W_ITEM * s->u.a.n, args->v[i]);
            cap += s->u.a.n;
        }
    r.v = ja_alloc(&x->a, cap * sizeof *r.v);
    for (uint32_t i = 0; i < args->n; i++) {
        const jnode *a = args->v[i];
        if (a->kind == JN_SPREAD) {
            jval *s = jx_eval(x, a->a, sc);
            if (s->t != JV_ARRAY)
                jx_err(x, a, "Cannot unpack non-iterable type: %s", jv_tname(s));
            for (size_t k = 0; k < s->u.a.n && r.n < cap; k++)
                r.v[r.n++] = s->u.a.v[k];
        } else if (a->kind != JN_KWARG && a->kind != JN_KWSPREAD) {
            r.v[r.n++] = jx_eval(x, a, sc);
        }
    }
    jval *kw = jv_obj(x, JV_OBJECT);
    kw->kwargs = true;
    for (uint32_t i = 0; i < args->n; i++) {
        const jnode *a = args->v[i];
        if (a->kind == JN_KWARG) {
            if (jv_find_w(x, kw, a->s, a->slen, a) >= 0)
                jx_err(x, a, "Got multiple values for keyword argument '%.*s'", (int)a->slen, a->s);
            jv_set(x, kw, a->s, a->slen, jx_eval(x, a->a, sc));
        } else if (a->kind == JN_KWSPREAD) {
            jval *m = jx_eval(x, a->a, sc);
            if (m->t != JV_OBJECT)
                jx_err(x, a, "Argument after ** must be a mapping, not %s", jv_tname(m));
            for (size_t k = 0; k < m->u.o.n; k++) {
                if (jv_find_w(x, kw, m->u.o.k[k].p, m->u.o.k[k].n, a) >= 0)
                    jx_err(x, a, "Got multiple values for keyword argument '%.*s'", (int)m->u.o.k[k].n, m->u.o.k[k].p);
                jv_set(x, kw, m->u.o.k[k].p, m->u.o.k[k].n, m->u.o.v[k]);
            }
        }
    }
    if (kw->u.o.n || always_kw)
        r.kw = kw;
    return r;
}

jval *jargs_kw(const jargs *a, const char *k)
{
    return a->kw ? jv_get(a->kw, k, strlen(k)) : NULL;
}

/* Positional argument i, else keyword k, else NULL. */
jval *jargs_at(const jargs *a, size_t i, const char *k)
{
    if (i < a->n)
        return a->v[i];
    return k ? jargs_kw(a, k) : NULL;
}

/* An integer value as int64, clamped (huge JavaScript integers, Infinity); NaN -> 0. */
int64_t jv_int_of(const jval *v)
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
    int64_t st = stepv->t == JV_UNDEF ? 1 : jv_int_of(stepv);
    if (st == 0)
        jx_err(x, at, "Slice step cannot be zero");
    int64_t a, b;
    if (st > 0) {
        a = start->t == JV_UNDEF ? 0 : jv_int_of(start);
        a = a < 0 ? (n + a > 0 ? n + a : 0) : (a < n ? a : n);
        b = stop->t == JV_UNDEF ? n : jv_int_of(stop);
        b = b < 0 ? (n + b > 0 ? n + b : 0) : (b < n ? b : n);
    } else {
        a = start->t == JV_UNDEF ? n - 1 : jv_int_of(start);
        a = a < 0 ? (n + a > -1 ? n + a : -1) : (a < n - 1 ? a : n - 1);
        b = stop->t == JV_UNDEF ? -1 : jv_int_of(stop);
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
        jx_err(x, s, "Slice object must be an array or string");
    jval *a = s->a ? jx_eval(x, s->a, sc) : &jv_undef;
    jval *b = s->b ? jx_eval(x, s->b, sc) : &jv_undef;
    jval *c = s->c ? jx_eval(x, s->c, sc) : &jv_undef;
    if (!(jv_is_intv(a) || a->t == JV_UNDEF))
        jx_err(x, s, "Slice start must be numeric or undefined");
    if (!(jv_is_intv(b) || b->t == JV_UNDEF))
        jx_err(x, s, "Slice stop must be numeric or undefined");
    if (!(jv_is_intv(c) || c->t == JV_UNDEF))
        jx_err(x, s, "Slice step must be numeric or undefined");
    int64_t *idx;
    if (obj->t == JV_ARRAY) {
        size_t cnt = slice_indices(x, (int64_t)obj->u.a.n, a, b, c, &idx, s);
        jx_work(x, 1 + W_ITEM * cnt, s);
        jval *r = jv_arr(x, cnt);
        for (size_t i = 0; i < cnt; i++)
            r->u.a.v[i] = obj->u.a.v[idx[i]];
        r->u.a.n = cnt;
        return r;
    }
    size_t *off;
    size_t ncp = jstr_cp_offsets(x, obj->u.s.p, obj->u.s.n, &off);
    size_t cnt = slice_indices(x, (int64_t)ncp, a, b, c, &idx, s);
    jbuf buf = {0};
    for (size_t i = 0; i < cnt; i++)
        jbuf_add(x, &buf, obj->u.s.p + off[idx[i]], off[idx[i] + 1] - off[idx[i]]);
    return jbuf_val(x, &buf);
}

/* Methods of strings and mappings: `s.upper`, `d.items`... */
typedef struct {
    const char *name;
    jbuiltin bi;
} jmethod;

static const jmethod STR_METHODS[] = {
    {"upper", BI_S_UPPER}, {"lower", BI_S_LOWER}, {"strip", BI_S_STRIP}, {"title", BI_S_TITLE},
    {"capitalize", BI_S_CAPITALIZE}, {"rstrip", BI_S_RSTRIP}, {"lstrip", BI_S_LSTRIP},
    {"startswith", BI_S_STARTSWITH}, {"endswith", BI_S_ENDSWITH}, {"split", BI_S_SPLIT},
    {"replace", BI_S_REPLACE},
};

static const jmethod OBJ_METHODS[] = {
    {"get", BI_O_GET}, {"items", BI_O_ITEMS}, {"keys", BI_O_KEYS}, {"values", BI_O_VALUES},
    {"dictsort", BI_O_DICTSORT},
};

/* Method k of self from table m (a function bound to self), or NULL. */
static jval *method(jx *x, jval *self, const jmethod *m, size_t nm, const char *k, size_t n)
{
    for (size_t i = 0; i < nm; i++)
        if (strlen(m[i].name) == n && !memcmp(m[i].name, k, n))
            return jv_fn(x, m[i].bi, self);
    return NULL;
}

static jval *str_builtin(jx *x, jval *s, const char *k, size_t n)
{
    if (n == 6 && !memcmp(k, "length", 6))
        return jv_int(x, jstr_js_length(x, s->u.s.p, s->u.s.n));
    return method(x, s, STR_METHODS, sizeof STR_METHODS / sizeof STR_METHODS[0], k, n);
}

jval *jx_obj_builtin(jx *x, jval *o, const char *k, size_t n)
{
    return method(x, o, OBJ_METHODS, sizeof OBJ_METHODS / sizeof OBJ_METHODS[0], k, n);
}

static jval *member(jx *x, jval *obj, jval *prop, const jnode *at)
{
    jval *r = NULL;
    if (obj->t == JV_OBJECT || obj->t == JV_NS) {
        if (prop->t != JV_STR)
            jx_err(x, at, "Cannot access property with non-string: got %s", jv_tname(prop));
        r = jv_get_w(x, obj, prop->u.s.p, prop->u.s.n, at);
        if (!r && obj->t == JV_OBJECT)
            r = jx_obj_builtin(x, obj, prop->u.s.p, prop->u.s.n);
    } else if (obj->t == JV_ARRAY || obj->t == JV_STR) {
        if (jv_is_intv(prop)) {
            int64_t i = jv_int_of(prop);
            if (obj->t == JV_ARRAY) {
                int64_t n = (int64_t)obj->u.a.n;
                if (i < 0)
                    i += n;
                if (i >= 0 && i < n)
                    r = obj->u.a.v[i];
            } else {
                size_t *off;
                int64_t n = (int64_t)jstr_cp_offsets(x, obj->u.s.p, obj->u.s.n, &off);
                if (i < 0)
                    i += n;
                if (i >= 0 && i < n)
                    r = jv_str(x, obj->u.s.p + off[i], off[i + 1] - off[i]);
            }
        } else if (prop->t == JV_STR) {
            if (obj->t == JV_STR)
                r = str_builtin(x, obj, prop->u.s.p, prop->u.s.n);
            else if (jstr_eq(prop->u.s, "length", 6))
                r = jv_int(x, (int64_t)obj->u.a.n);
        } else {
            jx_err(x, at, "Cannot access property with non-string/non-number: got %s", jv_tname(prop));
        }
    } else {
        if (prop->t != JV_STR)
            jx_err(x, at, "Cannot access property with non-string: got %s", jv_tname(prop));
    }
    return r ? r : &jv_undef;
}

static jval *eval_member(jx *x, const jnode *n, jscope *sc)
{
    jval *obj = jx_eval(x, n->a, sc);
    jval *prop;
    if (n->flag) {
        if (n->b->kind == JN_SLICE)
            return eval_slice(x, obj, n->b, sc);
        prop = jx_eval(x, n->b, sc);
    } else if (n->b->kind == JN_INT) {
        prop = jv_int(x, n->b->i);
    } else {
        prop = jv_str(x, n->b->s, n->b->slen);
    }
    return member(x, obj, prop, n);
}

/* An integer result: exact within 2**53, JavaScript doubles beyond. */
static jval *arith_int(jx *x, int64_t r, bool ovf, double approx)
{
    return ovf || r > (int64_t)JS_SAFE_INT || r < -(int64_t)JS_SAFE_INT ? jv_intd(x, approx) : jv_int(x, r);
}

static jval *eval_binary(jx *x, const jnode *n, jscope *sc)
{
    jval *l = jx_eval(x, n->a, sc);
    jop op = (jop)n->op;
    if (op == JOP_AND)
        return jv_truthy(l) ? jx_eval(x, n->b, sc) : l;
    if (op == JOP_OR)
        return jv_truthy(l) ? l : jx_eval(x, n->b, sc);
    jval *r = jx_eval(x, n->b, sc);
    if (op == JOP_EQ)
        return jv_bool(jv_loose_eq(x, l, r, n));
    if (op == JOP_NE)
        return jv_bool(!jv_loose_eq(x, l, r, n));
    static const char *OPS[] = {"", "+", "-", "~", "*", "/", "//", "%", "**", "==", "!=", "<", ">", "<=", ">=",
                                "in", "not in", "and", "or", "not", "-", "+"};
    if (l->t == JV_UNDEF || r->t == JV_UNDEF) {
        if (r->t == JV_UNDEF && (op == JOP_IN || op == JOP_NOTIN))
            return jv_bool(op == JOP_NOTIN);
        jx_err(x, n, "Cannot perform operation %s on undefined values", OPS[op]);
    }
    if (l->t == JV_NONE || r->t == JV_NONE)
        jx_err(x, n, "Cannot perform operation on null values");
    if (op == JOP_CONCAT) {
        jbuf b = {0};
        jv_js_str(x, &b, l, n);
        jv_js_str(x, &b, r, n);
        return jbuf_val(x, &b);
    }
    bool lnum = jv_is_num(l) || l->t == JV_BOOL, rnum = jv_is_num(r) || r->t == JV_BOOL;
    if (op == JOP_POW && lnum && rnum) {
        double a = jv_num(l), b = jv_num(r);
        if (a == 0 && b < 0)
            jx_err(x, n, "0.0 cannot be raised to a negative power");
        double res = pow(a, b);
        if (!isfinite(res))
            jx_err(x, n, "Exponentiation result is not a finite real number");
        if ((l->t == JV_FLOAT && !l->intlike) || (r->t == JV_FLOAT && !r->intlike) || b < 0)
            return jv_float(x, res);
        return jv_intd(x, res);
    }
    if (jv_is_num(l) && jv_is_num(r)) {
        bool fl = (l->t == JV_FLOAT && !l->intlike) || (r->t == JV_FLOAT && !r->intlike);
        bool wide = !fl && (l->t == JV_FLOAT || r->t == JV_FLOAT); /* integers held as doubles */
        double a = jv_num(l), b = jv_num(r);
        int64_t ia = l->t == JV_INT ? l->u.i : 0, ib = r->t == JV_INT ? r->u.i : 0, ir;
        bool o;
        switch (op) {
        case JOP_ADD:
            if (fl) return jv_float(x, a + b);
            if (wide) return jv_intd(x, a + b);
            o = __builtin_add_overflow(ia, ib, &ir);
            return arith_int(x, ir, o, a + b);
        case JOP_SUB:
            if (fl) return jv_float(x, a - b);
            if (wide) return jv_intd(x, a - b);
            o = __builtin_sub_overflow(ia, ib, &ir);
            return arith_int(x, ir, o, a - b);
        case JOP_MUL:
            if (fl) return jv_float(x, a * b);
            if (wide) return jv_intd(x, a * b);
            o = __builtin_mul_overflow(ia, ib, &ir);
            return arith_int(x, ir, o, a * b);
        case JOP_DIV:
            return jv_float(x, a / b);
        case JOP_FLOORDIV:
            if (fl) return jv_float(x, floor(a / b));
            if (wide || ib == 0 || (ia == INT64_MIN && ib == -1))
                return jv_intd(x, floor(a / b)); /* Infinity, NaN, 2**63 */
            {
                int64_t q = ia / ib;
                if ((ia % ib != 0) && ((ia < 0) != (ib < 0)))
                    q--;
                return jv_int(x, q);
            }
        case JOP_MOD:
            if (fl) return jv_float(x, fmod(a, b));
            if (wide || ib == 0) return jv_intd(x, fmod(a, b)); /* NaN for % 0 */
            if (ib == -1) return jv_int(x, 0);
            return jv_int(x, ia % ib);
        case JOP_LT: return jv_bool(a < b);
        case JOP_GT: return jv_bool(a > b);
        case JOP_LE: return jv_bool(a <= b);
        case JOP_GE: return jv_bool(a >= b);
        default: break;
        }
    } else if (l->t == JV_ARRAY && r->t == JV_ARRAY) {
        if (op == JOP_ADD) {
            jx_work(x, 1 + W_ITEM * (l->u.a.n + r->u.a.n), n);
            jval *res = jv_arr(x, l->u.a.n + r->u.a.n);
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
                found = jv_strict_eq(x, r->u.a.v[i], l);
            return jv_bool(op == JOP_IN ? found : !found);
        }
    }
    if ((l->t == JV_STR || r->t == JV_STR) && op == JOP_ADD) {
        jbuf b = {0};
        jv_js_str(x, &b, l, n);
        jv_js_str(x, &b, r, n);
        return jbuf_val(x, &b);
    }
    if (l->t == JV_STR && r->t == JV_STR && (op == JOP_IN || op == JOP_NOTIN)) {
        bool found = jstr_find(x, r->u.s.p, r->u.s.n, l->u.s.p, l->u.s.n) != NULL;
        return jv_bool(op == JOP_IN ? found : !found);
    }
    if (l->t == JV_STR && r->t == JV_OBJECT && (op == JOP_IN || op == JOP_NOTIN)) {
        bool found = jv_find_w(x, r, l->u.s.p, l->u.s.n, n) >= 0;
        return jv_bool(op == JOP_IN ? found : !found);
    }
    jx_err(x, n, "Unknown operator \"%s\" between %s and %s", OPS[op], jv_tname(l), jv_tname(r));
}

static jval *eval_unary(jx *x, const jnode *n, jscope *sc)
{
    jval *v = jx_eval(x, n->a, sc);
    if (n->op == JOP_NOT)
        return jv_bool(!jv_truthy(v));
    int sign = n->op == JOP_NEG ? -1 : 1;
    if (v->t == JV_FLOAT) {
        jval *r = jv_float(x, sign * v->u.f);
        r->intlike = v->intlike;
        return r;
    }
    if (v->t == JV_INT || v->t == JV_BOOL) {
        int64_t i = v->t == JV_BOOL ? v->u.b : v->u.i;
        if (sign < 0 && i == INT64_MIN)
            return jv_intd(x, 9223372036854775808.0);
        return jv_int(x, sign * i);
    }
    jx_err(x, n, "Unknown operator \"%s\" for %s", sign < 0 ? "-" : "+", jv_tname(v));
}


/* Bind a macro's (or a call block's) parameters in `scope`. */
void jx_bind_params(jx *x, const char *name, const jlist *params, bool varargs, bool kwargs, jval **args,
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
            long k = jv_find_w(x, kw, p->s, p->slen, at);
            if (k >= 0 && !used[k]) {
                v = kw->u.o.v[k];
                used[k] = true;
            }
        }
        if (!v && p->kind == JN_KWARG)
            pending[npending++] = p;
        jscope_set(x, scope, p->s, p->slen, v ? v : &jv_undef);
    }
    if (kwargs) {
        jval *rest = jv_obj(x, JV_OBJECT);
        for (size_t k = 0; kw && k < kw->u.o.n; k++)
            if (!used[k])
                jv_set(x, rest, kw->u.o.k[k].p, kw->u.o.k[k].n, kw->u.o.v[k]);
        jscope_set(x, scope, "kwargs", 6, rest);
    } else {
        for (size_t k = 0; kw && k < kw->u.o.n; k++)
            if (!used[k])
                jx_err(x, at, "macro %s takes no keyword argument '%.*s'", name, (int)kw->u.o.k[k].n, kw->u.o.k[k].p);
    }
    if (varargs) {
        jx_work(x, 1 + W_ITEM * nargs, at);
        jval *rest = jv_arr(x, 0);
        for (size_t i = params->n; i < nargs; i++)
            jv_push(x, rest, args[i]);
        jscope_set(x, scope, "varargs", 7, rest);
    } else if (nargs > params->n) {
        jx_err(x, at, "macro %s takes not more than %u argument(s)", name, params->n);
    }
    for (size_t i = 0; i < npending; i++)
        jscope_set(x, scope, pending[i]->s, pending[i]->slen, jx_eval(x, pending[i]->a, scope));
}

jval *jx_render_body(jx *x, const jlist *body, jscope *sc, const jnode *at)
{
    jbuf b = {0};
    int flow = jx_exec_list(x, body, sc, &b);
    if (flow != FLOW_NEXT)
        jx_err(x, at, "'%s' outside of a loop", flow == FLOW_BREAK ? "break" : "continue");
    return jbuf_val(x, &b);
}

static jval *eval_call(jx *x, const jnode *n, jscope *sc)
{
    jargs a = jx_eval_args(x, &n->body, sc, false);
    jval *fn = jx_eval(x, n->a, sc);
    if (fn->t != JV_FUNC)
        jx_err(x, n, "Cannot call something that is not a function: got %s", jv_tname(fn));
    size_t nargs = a.n;
    if (a.kw)
        a.v[nargs++] = a.kw; /* jx_eval_args left room for it */
    return jx_call(x, fn, a.v, nargs, sc, n);
}

static jval *jx_eval(jx *x, const jnode *n, jscope *sc)
{
    if (!n)
        return &jv_undef;
    jx_enter(x, n);
    const jnode *outer = x->cur;
    x->cur = n;
    jval *r = NULL;
    switch ((jnode_kind)n->kind) {
    case JN_STR:
    case JN_TEXT: r = jv_str(x, n->s, n->slen); break;
    case JN_INT:
        r = n->i > (int64_t)JS_SAFE_INT || n->i < -(int64_t)JS_SAFE_INT ? jv_intd(x, (double)n->i) : jv_int(x, n->i);
        break;
    case JN_FLOAT:
        r = n->flag ? jv_intd(x, n->f) : jv_float(x, n->f); /* flag: an integer literal beyond int64 */
        break;
    case JN_IDENT: r = jscope_get(x, sc, n->s, n->slen); break;
    case JN_ARRAY:
    case JN_TUPLE:
        r = jv_arr(x, n->body.n);
        for (uint32_t i = 0; i < n->body.n; i++)
            r->u.a.v[r->u.a.n++] = jx_eval(x, n->body.v[i], sc);
        r->tuple = n->kind == JN_TUPLE;
        break;
    case JN_OBJECT:
        r = jv_obj(x, JV_OBJECT);
        for (uint32_t i = 0; i < n->body.n; i++) {
            jval *k = jx_eval(x, n->body.v[i], sc);
            if (k->t != JV_STR)
                jx_err(x, n->body.v[i], "Object keys must be strings: got %s", jv_tname(k));
            jv_set(x, r, k->u.s.p, k->u.s.n, jx_eval(x, n->alt.v[i], sc));
        }
        break;
    case JN_MEMBER: r = eval_member(x, n, sc); break;
    case JN_CALL: r = eval_call(x, n, sc); break;
    case JN_BINARY: r = eval_binary(x, n, sc); break;
    case JN_UNARY: r = eval_unary(x, n, sc); break;
    case JN_FILTER: r = jx_apply_filter(x, jx_eval(x, n->a, sc), n->b, sc); break;
    case JN_TEST: {
        jval *v = jx_eval(x, n->a, sc);
        bool t = jx_run_test(x, n->s, n->slen, v, NULL, n);
        r = jv_bool(n->flag ? !t : t);
        break;
    }
    case JN_SELECT: r = jv_truthy(jx_eval(x, n->b, sc)) ? jx_eval(x, n->a, sc) : &jv_undef; break;
    case JN_TERNARY: r = jv_truthy(jx_eval(x, n->a, sc)) ? jx_eval(x, n->b, sc) : jx_eval(x, n->c, sc); break;
    default: jx_err(x, n, "unexpected expression");
    }
    x->cur = outer;
    x->depth--;
    return r;
}

/* ------------------------------------------------------------- statements */

static void assign_target(jx *x, const jnode *target, jval *v, jscope *sc, bool in_for)
{
    if (target->kind == JN_IDENT) {
        jscope_set(x, sc, target->s, target->slen, v);
        return;
    }
    if (target->kind == JN_TUPLE) {
        if (in_for ? (v->t != JV_ARRAY || v->tuple) : v->t != JV_ARRAY)
            jx_err(x, target, in_for ? "Cannot unpack non-iterable type: %s" : "Cannot unpack non-iterable type in set: %s",
                 jv_tname(v));
        if (v->u.a.n != target->body.n)
            jx_err(x, target, "Too %s items to unpack", target->body.n > v->u.a.n ? "few" : "many");
        for (uint32_t i = 0; i < target->body.n; i++) {
            const jnode *e = target->body.v[i];
            if (e->kind != JN_IDENT)
                jx_err(x, e, "Cannot unpack to non-identifier");
            jscope_set(x, sc, e->s, e->slen, v->u.a.v[i]);
        }
        return;
    }
    jx_err(x, target, "Invalid assignment target");
}

static void exec_set(jx *x, const jnode *n, jscope *sc)
{
    jval *rhs = n->b ? jx_eval(x, n->b, sc) : jx_render_body(x, &n->body, sc, n);
    const jnode *t = n->a;
    if (t->kind == JN_MEMBER) {
        jval *obj = jx_eval(x, t->a, sc);
        if (obj->t != JV_NS)
            jx_err(x, t, "cannot assign attribute on non-namespace object");
        if (t->flag || t->b->kind != JN_IDENT)
            jx_err(x, t, "Cannot assign to member with non-identifier property");
        jv_set(x, obj, t->b->s, t->b->slen, rhs);
        return;
    }
    assign_target(x, t, rhs, sc, false);
}

static int exec_for(jx *x, const jnode *n, jscope *sc, jbuf *out)
{
    jscope *scope = jscope_new(x, sc);
    const jnode *test = NULL;
    jval *it;
    if (n->b->kind == JN_SELECT) {
        it = jx_eval(x, n->b->a, scope);
        test = n->b->b;
    } else {
        it = jx_eval(x, n->b, scope);
    }
    if (it->t == JV_OBJECT)
        it = jv_keys(x, it);
    else if (it->t != JV_ARRAY)
        jx_err(x, n->b, "Expected iterable or object type in for loop: got %s", jv_tname(it));
    jx_work(x, 1 + W_ITEM * it->u.a.n, n);
    jval *items = jv_arr(x, it->u.a.n);
    for (size_t i = 0; i < it->u.a.n; i++) {
        jval *cur = it->u.a.v[i];
        if (n->a->kind == JN_TUPLE && (cur->t != JV_ARRAY || cur->tuple))
            jx_err(x, n->a, "Cannot unpack non-iterable type: %s", jv_tname(cur));
        if (test) {
            jx_step(x, n);
            jscope *ls = jscope_new(x, scope);
            assign_target(x, n->a, cur, ls, true);
            if (!jv_truthy(jx_eval(x, test, ls)))
                continue;
        }
        items->u.a.v[items->u.a.n++] = cur;
    }
    bool none = true;
    size_t cnt = items->u.a.n;
    for (size_t i = 0; i < cnt; i++) {
        jx_step(x, n);
        jval *loop = jv_obj(x, JV_OBJECT);
        jv_set(x, loop, "index", 5, jv_int(x, (int64_t)i + 1));
        jv_set(x, loop, "index0", 6, jv_int(x, (int64_t)i));
        jv_set(x, loop, "revindex", 8, jv_int(x, (int64_t)(cnt - i)));
        jv_set(x, loop, "revindex0", 9, jv_int(x, (int64_t)(cnt - i - 1)));
        jv_set(x, loop, "first", 5, jv_bool(i == 0));
        jv_set(x, loop, "last", 4, jv_bool(i == cnt - 1));
        jv_set(x, loop, "length", 6, jv_int(x, (int64_t)cnt));
        jv_set(x, loop, "previtem", 8, i > 0 ? items->u.a.v[i - 1] : &jv_undef);
        jv_set(x, loop, "nextitem", 8, i + 1 < cnt ? items->u.a.v[i + 1] : &jv_undef);
        jscope_set(x, scope, "loop", 4, loop);
        assign_target(x, n->a, items->u.a.v[i], scope, true);
        size_t mark = out->n;
        int flow = jx_exec_list(x, &n->body, scope, out);
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
        int flow = jx_exec_list(x, &n->alt, scope, out);
        if (flow != FLOW_NEXT)
            return flow;
    }
    return FLOW_NEXT;
}

static int exec_stmt(jx *x, const jnode *n, jscope *sc, jbuf *out)
{
    jx_step(x, n);
    x->cur = n;
    switch ((jnode_kind)n->kind) {
    case JN_TEXT: jbuf_add(x, out, n->s, n->slen); return FLOW_NEXT;
    case JN_COMMENT: return FLOW_NEXT;
    case JN_OUTPUT: out_value(x, out, jx_eval(x, n->a, sc), n); return FLOW_NEXT;
    case JN_IF: {
        jx_enter(x, n);
        bool t = jv_truthy(jx_eval(x, n->a, sc));
        int flow = jx_exec_list(x, t ? &n->body : &n->alt, sc, out);
        x->depth--;
        return flow;
    }
    case JN_FOR: {
        jx_enter(x, n);
        int flow = exec_for(x, n, sc, out);
        x->depth--;
        return flow;
    }
    case JN_SET: exec_set(x, n, sc); return FLOW_NEXT;
    case JN_MACRO: {
        jval *f = jv_fn(x, BI_MACRO, NULL);
        f->u.fn.node = n;
        jscope_set(x, sc, n->s, n->slen, f);
        return FLOW_NEXT;
    }
    case JN_CALLBLOCK: {
        jval *caller = jv_fn(x, BI_CALLER, NULL);
        caller->u.fn.node = n;
        caller->u.fn.env = sc;
        const jnode *call = n->a;
        jargs a = jx_eval_args(x, &call->body, sc, true);
        jval *fn = jx_eval(x, call->a, sc);
        if (fn->t != JV_FUNC)
            jx_err(x, call, "Cannot call something that is not a function: got %s", jv_tname(fn));
        jscope *env = jscope_new(x, sc);
        jscope_set(x, env, "caller", 6, caller);
        a.v[a.n] = a.kw;
        out_value(x, out, jx_call(x, fn, a.v, a.n + 1, env, call), n);
        return FLOW_NEXT;
    }
    case JN_BREAK: return FLOW_BREAK;
    case JN_CONTINUE: return FLOW_CONTINUE;
    case JN_FILTERBLOCK: {
        jval *body = jx_render_body(x, &n->body, sc, n);
        out_value(x, out, jx_apply_filter(x, body, n->b, sc), n);
        return FLOW_NEXT;
    }
    default: out_value(x, out, jx_eval(x, n, sc), n); return FLOW_NEXT;
    }
}

static int jx_exec_list(jx *x, const jlist *l, jscope *sc, jbuf *out)
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
        return &jv_none;
    if (cJSON_IsFalse(j))
        return &jv_false;
    if (cJSON_IsTrue(j))
        return &jv_true;
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (isfinite(d) && floor(d) == d)
            return jv_intd(x, d);
        return jv_float(x, d);
    }
    if (cJSON_IsString(j))
        return jv_str(x, j->valuestring ? j->valuestring : "", j->valuestring ? strlen(j->valuestring) : 0);
    if (cJSON_IsArray(j)) {
        jval *a = jv_arr(x, 0);
        for (const cJSON *c = j->child; c; c = c->next)
            jv_push(x, a, from_json(x, c, depth + 1));
        return a;
    }
    if (cJSON_IsObject(j)) {
        jval *o = jv_obj(x, JV_OBJECT);
        for (const cJSON *c = j->child; c; c = c->next) {
            const char *k = c->string ? c->string : "";
            jv_set(x, o, k, strlen(k), from_json(x, c, depth + 1));
        }
        return o;
    }
    return &jv_undef;
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
        jscope *g = jscope_new(x, NULL);
        x->global = g;
        jscope_set(x, g, "false", 5, &jv_false);
        jscope_set(x, g, "true", 4, &jv_true);
        jscope_set(x, g, "none", 4, &jv_none);
        jscope_set(x, g, "False", 5, &jv_false);
        jscope_set(x, g, "True", 4, &jv_true);
        jscope_set(x, g, "None", 4, &jv_none);
        jscope_set(x, g, "raise_exception", 15, jv_fn(x, BI_RAISE, NULL));
        jscope_set(x, g, "range", 5, jv_fn(x, BI_RANGE, NULL));
        jscope_set(x, g, "strftime_now", 12, jv_fn(x, BI_STRFTIME, NULL));
        jscope_set(x, g, "namespace", 9, jv_fn(x, BI_NAMESPACE, NULL));
        if (vars && cJSON_IsObject(vars))
            for (const cJSON *c = vars->child; c; c = c->next)
                if (c->string)
                    jscope_set(x, g, c->string, strlen(c->string), from_json(x, c, 1));
        jbuf out = {0};
        int flow = jx_exec_list(x, &t->body, g, &out);
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
