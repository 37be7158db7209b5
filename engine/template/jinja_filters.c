/* jinja: tests (`is NAME`), filters, and the builtin functions and methods
 * (range, namespace, strftime_now, string and mapping methods). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"
#include "textesc.h"

/* --------------------------------------------------------------- tests */

/* Tests (`x is NAME`); b is the second operand of equalto (may be NULL). */
bool jx_run_test(jx *x, const char *name, size_t nl, const jval *v, const jval *b, const jnode *at)
{
#define IS(s) (nl == sizeof(s) - 1 && !memcmp(name, s, nl))
    if (IS("boolean")) return v->t == JV_BOOL;
    if (IS("callable")) return v->t == JV_FUNC;
    if (IS("odd") || IS("even")) {
        if (v->t != JV_INT && !(v->t == JV_FLOAT && v->intlike))
            jx_err(x, at, "cannot %.*s on %s", (int)nl, name, jv_tname(v));
        double r = v->t == JV_INT ? (double)(v->u.i % 2) : fmod(v->u.f, 2.0);
        return IS("odd") ? r != 0 : r == 0;
    }
    if (IS("false")) return v->t == JV_BOOL && !v->u.b;
    if (IS("true")) return v->t == JV_BOOL && v->u.b;
    if (IS("none")) return v->t == JV_NONE;
    if (IS("string")) return v->t == JV_STR;
    if (IS("number")) return jv_is_num(v);
    if (IS("integer")) return v->t == JV_INT || (v->t == JV_FLOAT && v->intlike);
    if (IS("iterable")) return (v->t == JV_ARRAY && !v->tuple) || v->t == JV_STR;
    if (IS("mapping")) return v->t == JV_OBJECT;
    if (IS("sequence")) return v->t == JV_ARRAY || v->t == JV_OBJECT || v->t == JV_STR;
    if (IS("lower") || IS("upper")) {
        if (v->t != JV_STR)
            return false;
        const jval *c = jv_case(x, v, IS("lower") ? 1 : 0);
        return jstr_eq(c->u.s, v->u.s.p, v->u.s.n);
    }
    if (IS("defined")) return v->t != JV_UNDEF;
    if (IS("undefined")) return v->t == JV_UNDEF;
    if (IS("equalto") || IS("eq")) return jv_strict_eq(x, v, b ? b : &jv_undef);
#undef IS
    jx_err(x, at, "Unknown test: %.*s", (int)nl, name);
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
    jx_work(x, 1 + n, NULL);
    jval *v = item;
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < n && p[j] != '.')
            j++;
        if (v->t == JV_OBJECT || v->t == JV_NS) {
            jval *r = jv_get_w(x, v, p + i, j - i, NULL);
            v = r ? r : &jv_undef;
        } else if (v->t == JV_ARRAY) {
            char *end;
            char tmp[32];
            size_t l = j - i < sizeof tmp - 1 ? j - i : sizeof tmp - 1;
            memcpy(tmp, p + i, l);
            tmp[l] = 0;
            long idx = strtol(tmp, &end, 10);
            if (end == tmp || idx < 0 || (size_t)idx >= v->u.a.n)
                return &jv_undef;
            v = v->u.a.v[idx];
        } else {
            return &jv_undef;
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
        jx_err(x, at, "Cannot compare %s with %s", jv_tname(a), jv_tname(b));
    if (a->t == JV_UNDEF)
        return 0;
    bool an = jv_is_num(a) || a->t == JV_BOOL, bn = jv_is_num(b) || b->t == JV_BOOL;
    if (an && bn) {
        double p = jv_num(a), q = jv_num(b);
        return p < q ? -1 : p > q ? 1 : 0;
    }
    if (a->t != b->t || (a->t == JV_ARRAY && a->tuple != b->tuple))
        jx_err(x, at, "Cannot compare different types: %s and %s", jv_tname(a), jv_tname(b));
    if (a->t != JV_STR)
        jx_err(x, at, "Cannot compare type: %s", jv_tname(a));
    size_t n = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
    jx_work(x, 1 + n, at);
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
        jx_step(c->x, c->at);
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
    jx_work(c->x, 1 + W_ITEM * arr->u.a.n, c->at);
    jval *r = jv_arr(c->x, arr->u.a.n);
    if (arr->u.a.n)
        memcpy(r->u.a.v, arr->u.a.v, arr->u.a.n * sizeof(jval *));
    r->u.a.n = arr->u.a.n;
    jval **tmp = ja_alloc(&c->x->a, (arr->u.a.n ? arr->u.a.n : 1) * sizeof *tmp);
    msort(c, r->u.a.v, tmp, r->u.a.n);
    return r;
}

static jval *obj_items(jx *x, const jval *o)
{
    jx_work(x, 1 + W_KEY * o->u.o.n, NULL);
    jval *r = jv_arr(x, o->u.o.n);
    for (size_t i = 0; i < o->u.o.n; i++) {
        jval *pair = jv_arr(x, 2);
        pair->u.a.v[0] = jv_str(x, o->u.o.k[i].p, o->u.o.k[i].n);
        pair->u.a.v[1] = o->u.o.v[i];
        pair->u.a.n = 2;
        r->u.a.v[r->u.a.n++] = pair;
    }
    return r;
}

jval *jv_keys(jx *x, const jval *o)
{
    jx_work(x, 1 + W_KEY * o->u.o.n, NULL);
    jval *r = jv_arr(x, o->u.o.n);
    for (size_t i = 0; i < o->u.o.n; i++)
        r->u.a.v[r->u.a.n++] = jv_str(x, o->u.o.k[i].p, o->u.o.k[i].n);
    return r;
}

static jval *tojson_filter(jx *x, jval *v, const jargs *a, const jnode *at)
{
    json_opts o = jv_json_default();
    jval *ind = jargs_kw(a, "indent");
    if (ind && ind->t != JV_INT && ind->t != JV_NONE)
        jx_err(x, at, "If set, indent must be a number");
    jval *ea = jargs_kw(a, "ensure_ascii");
    if (ea && ea->t != JV_BOOL)
        jx_err(x, at, "If set, ensure_ascii must be a boolean");
    jval *sk = jargs_kw(a, "sort_keys");
    if (sk && sk->t != JV_BOOL)
        jx_err(x, at, "If set, sort_keys must be a boolean");
    jval *sep = jargs_kw(a, "separators");
    if (ind && ind->t == JV_INT) {
        if (ind->u.i < 0 || ind->u.i > 64)
            jx_err(x, at, "indent out of range");
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
            jx_err(x, at, "separators must be a tuple of two strings");
        o.item_sep = sep->u.a.v[0]->u.s.p;
        o.item_sep_n = sep->u.a.v[0]->u.s.n;
        o.key_sep = sep->u.a.v[1]->u.s.p;
        o.key_sep_n = sep->u.a.v[1]->u.s.n;
    }
    jbuf b = {0};
    jv_to_json(x, &b, v, &o, 0, true, at);
    return jbuf_val(x, &b);
}

/* JavaScript parseInt(s, 10) / parseFloat(s); false when NaN. */
static bool js_parse_num(jx *x, const char *s, size_t n, bool as_int, double *out)
{
    jx_work(x, 1 + n, NULL);
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

/* The indent filter: every line but the first (all with `first`) and but
 * the blank ones (all with `blank`) prefixed with `width` spaces. */
static jval *indent(jx *x, const jval *v, int64_t width, bool first, bool blank)
{
    jbuf b = {0};
    const char *p = v->u.s.p, *e = p + v->u.s.n;
    bool isfirst = true;
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        bool skip = (!first && isfirst) || (!blank && le == p);
        if (!skip)
            for (int64_t k = 0; k < width; k++)
                jbuf_addc(x, &b, ' ');
        jbuf_add(x, &b, p, (size_t)(le - p));
        if (!nl)
            break;
        jbuf_addc(x, &b, '\n');
        p = nl + 1;
        isfirst = false;
    }
    return jbuf_val(x, &b);
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
        if (FIS("first")) return v->u.a.n ? v->u.a.v[0] : &jv_undef;
        if (FIS("last")) return v->u.a.n ? v->u.a.v[v->u.a.n - 1] : &jv_undef;
        if (FIS("length")) return jv_int(x, (int64_t)v->u.a.n);
        if (FIS("reverse")) {
            jx_work(x, 1 + W_ITEM * v->u.a.n, at);
            jval *r = jv_arr(x, v->u.a.n);
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
            jx_work(x, 1 + W_ITEM * v->u.a.n, at);
            for (size_t i = 0; i < v->u.a.n; i++)
                if (v->u.a.v[i]->t != JV_UNDEF && v->u.a.v[i]->t != JV_NONE)
                    jv_js_str(x, &b, v->u.a.v[i], at);
            return jbuf_val(x, &b);
        }
        if (FIS("string")) {
            jbuf b = {0};
            json_opts o = jv_json_default();
            jv_to_json(x, &b, v, &o, 0, false, at);
            return jbuf_val(x, &b);
        }
        if (FIS("unique")) {
            jval *r = jv_arr(x, v->u.a.n);
            for (size_t i = 0; i < v->u.a.n; i++) {
                bool seen = false;
                for (size_t j = 0; j < r->u.a.n && !seen; j++) {
                    jx_step(x, at);
                    seen = jv_same_value_zero(x, r->u.a.v[j], v->u.a.v[i]);
                }
                if (!seen)
                    r->u.a.v[r->u.a.n++] = v->u.a.v[i];
            }
            return r;
        }
        jx_err(x, at, "Unknown list filter: %.*s", (int)fl, f);
    case JV_STR:
        if (FIS("length")) return jv_int(x, jstr_js_length(x, v->u.s.p, v->u.s.n));
        if (FIS("upper")) return jv_case(x, v, 0);
        if (FIS("lower")) return jv_case(x, v, 1);
        if (FIS("title")) return jv_case(x, v, 2);
        if (FIS("capitalize")) return jv_case(x, v, 3);
        if (FIS("trim")) return jv_trim(x, v, true, true);
        if (FIS("indent")) return indent(x, v, 4, false, false);
        if (FIS("join") || FIS("string")) return v;
        if (FIS("int") || FIS("float")) {
            double d;
            bool ok = js_parse_num(x, v->u.s.p, v->u.s.n, FIS("int"), &d);
            if (FIS("int"))
                return ok ? jv_intd(x, d) : jv_int(x, 0);
            return jv_float(x, ok ? d : 0);
        }
        jx_err(x, at, "Unknown string filter: %.*s", (int)fl, f);
    case JV_INT:
    case JV_FLOAT:
        if (FIS("abs")) {
            if (v->t == JV_INT)
                return v->u.i == INT64_MIN ? jv_intd(x, 9223372036854775808.0) : jv_int(x, v->u.i < 0 ? -v->u.i : v->u.i);
            return v->intlike ? jv_intd(x, fabs(v->u.f)) : jv_float(x, fabs(v->u.f));
        }
        if (FIS("int")) {
            if (v->t == JV_INT)
                return jv_int(x, v->u.i);
            return jv_intd(x, floor(v->u.f));
        }
        if (FIS("float")) return jv_float(x, jv_num(v));
        if (FIS("string")) {
            jbuf b = {0};
            jv_rt_str(x, &b, v, at);
            return jbuf_val(x, &b);
        }
        jx_err(x, at, "Unknown number filter: %.*s", (int)fl, f);
    case JV_OBJECT:
        if (FIS("items")) return obj_items(x, v);
        if (FIS("length")) return jv_int(x, (int64_t)v->u.o.n);
        {
            jval *b = jx_obj_builtin(x, v, f, fl);
            if (b)
                return jx_call(x, b, NULL, 0, NULL, at);
        }
        jx_err(x, at, "Unknown mapping filter: %.*s", (int)fl, f);
    case JV_BOOL:
        if (FIS("bool")) return v;
        if (FIS("int")) return jv_int(x, v->u.b);
        if (FIS("float")) return jv_float(x, v->u.b);
        if (FIS("string")) return jv_str(x, v->u.b ? "true" : "false", v->u.b ? 4 : 5);
        jx_err(x, at, "Unknown boolean filter: %.*s", (int)fl, f);
    default:
        break;
    }
    jx_err(x, at, "Cannot apply filter \"%.*s\" to type: %s", (int)fl, f, jv_tname(v));
#undef FIS
}

jval *jx_apply_filter(jx *x, jval *v, const jnode *fn, jscope *sc)
{
    if (fn->kind == JN_IDENT)
        return filter_by_name(x, v, fn->s, fn->slen, fn);
    if (fn->kind != JN_CALL || fn->a->kind != JN_IDENT)
        jx_err(x, fn, "Unknown filter");
    const char *f = fn->a->s;
    size_t fl = fn->a->slen;
#define FIS(s) (fl == sizeof(s) - 1 && !memcmp(f, s, fl))
    if (FIS("tojson")) {
        jargs a = jx_eval_args(x, &fn->body, sc, false);
        return tojson_filter(x, v, &a, fn);
    }
    if (FIS("join")) {
        if (v->t != JV_STR && v->t != JV_ARRAY)
            jx_err(x, fn, "Cannot apply filter \"join\" to type: %s", jv_tname(v));
        jargs a = jx_eval_args(x, &fn->body, sc, false);
        jval *sep = jargs_at(&a, 0, "separator");
        if (sep && sep->t != JV_STR)
            jx_err(x, fn, "separator must be a string");
        jbuf b = {0};
        if (v->t == JV_STR) {
            size_t *off;
            size_t n = jstr_cp_offsets(x, v->u.s.p, v->u.s.n, &off);
            for (size_t i = 0; i < n; i++) {
                if (i && sep)
                    jbuf_add(x, &b, sep->u.s.p, sep->u.s.n);
                jbuf_add(x, &b, v->u.s.p + off[i], off[i + 1] - off[i]);
            }
        } else {
            jx_work(x, 1 + W_ITEM * v->u.a.n, fn);
            for (size_t i = 0; i < v->u.a.n; i++) {
                if (i && sep)
                    jbuf_add(x, &b, sep->u.s.p, sep->u.s.n);
                if (v->u.a.v[i]->t != JV_UNDEF && v->u.a.v[i]->t != JV_NONE)
                    jv_js_str(x, &b, v->u.a.v[i], fn);
            }
        }
        return jbuf_val(x, &b);
    }
    if (FIS("int") || FIS("float")) {
        bool is_int = FIS("int");
        jargs a = jx_eval_args(x, &fn->body, sc, false);
        jval *def = jargs_at(&a, 0, "default");
        if (v->t == JV_STR) {
            double d;
            if (!js_parse_num(x, v->u.s.p, v->u.s.n, is_int, &d))
                return def ? def : is_int ? jv_int(x, 0) : jv_float(x, 0);
            return is_int ? jv_intd(x, d) : jv_float(x, d);
        }
        if (jv_is_num(v))
            return v;
        if (v->t == JV_BOOL)
            return is_int ? jv_int(x, v->u.b) : jv_float(x, v->u.b);
        jx_err(x, fn, "Cannot apply filter \"%.*s\" to type: %s", (int)fl, f, jv_tname(v));
    }
    if (FIS("default")) {
        jargs a = jx_eval_args(x, &fn->body, sc, false);
        jval *def = a.n > 0 ? a.v[0] : jv_str(x, "", 0);
        jval *boolean = jargs_at(&a, 1, "boolean");
        if (boolean && boolean->t != JV_BOOL)
            jx_err(x, fn, "`default` filter flag must be a boolean");
        if (v->t == JV_UNDEF || (boolean && boolean->u.b && !jv_truthy(v)))
            return def;
        return v;
    }
    if (v->t == JV_ARRAY) {
        if (FIS("sort")) {
            jargs a = jx_eval_args(x, &fn->body, sc, false);
            jval *rev = jargs_at(&a, 0, "reverse"), *cs = jargs_at(&a, 1, "case_sensitive"), *at = jargs_at(&a, 2, "attribute");
            if (rev && rev->t != JV_BOOL)
                jx_err(x, fn, "reverse must be a boolean");
            if (cs && cs->t != JV_BOOL)
                jx_err(x, fn, "case_sensitive must be a boolean");
            if (at && at->t != JV_STR && at->t != JV_INT && at->t != JV_NONE)
                jx_err(x, fn, "attribute must be a string, integer, or null");
            sort_ctx c = {x, fn, cs && cs->u.b, rev && rev->u.b, at && at->t != JV_NONE ? at : NULL, -1};
            return sorted(&c, v);
        }
        if (FIS("selectattr") || FIS("rejectattr")) {
            bool sel = FIS("selectattr");
            for (size_t i = 0; i < v->u.a.n; i++)
                if (v->u.a.v[i]->t != JV_OBJECT && v->u.a.v[i]->t != JV_NS)
                    jx_err(x, fn, "`%.*s` can only be applied to array of objects", (int)fl, f);
            for (uint32_t i = 0; i < fn->body.n; i++)
                if (fn->body.v[i]->kind != JN_STR)
                    jx_err(x, fn, "arguments of `%.*s` must be strings", (int)fl, f);
            if (fn->body.n == 0)
                jx_err(x, fn, "`%.*s` needs an attribute name", (int)fl, f);
            const jnode *attr = fn->body.v[0];
            const jnode *test = fn->body.n > 1 ? fn->body.v[1] : NULL;
            jval *tv = fn->body.n > 2 ? jv_str(x, fn->body.v[2]->s, fn->body.v[2]->slen) : NULL;
            if (test && !is_test_name(test->s, test->slen))
                jx_err(x, fn, "Unknown test: %.*s", (int)test->slen, test->s);
            jval *r = jv_arr(x, v->u.a.n);
            for (size_t i = 0; i < v->u.a.n; i++) {
                jx_step(x, fn);
                jval *av = jv_get_w(x, v->u.a.v[i], attr->s, attr->slen, fn);
                bool res = av ? (test ? jx_run_test(x, test->s, test->slen, av, tv, fn) : jv_truthy(av)) : false;
                if (sel == res)
                    r->u.a.v[r->u.a.n++] = v->u.a.v[i];
            }
            return r;
        }
        if (FIS("map")) {
            jargs a = jx_eval_args(x, &fn->body, sc, false);
            jval *attr = jargs_kw(&a, "attribute");
            if (!attr)
                jx_err(x, fn, "`map` expressions without `attribute` set are not currently supported.");
            if (attr->t != JV_STR)
                jx_err(x, fn, "attribute must be a string");
            jval *def = jargs_kw(&a, "default");
            jx_work(x, 1 + W_ITEM * v->u.a.n, fn);
            jval *r = jv_arr(x, v->u.a.n);
            for (size_t i = 0; i < v->u.a.n; i++) {
                jval *it = v->u.a.v[i];
                if (it->t != JV_OBJECT && it->t != JV_NS)
                    jx_err(x, fn, "items in map must be an object");
                jval *mv = attr_path(x, it, attr->u.s.p, attr->u.s.n);
                r->u.a.v[r->u.a.n++] = mv->t == JV_UNDEF ? (def ? def : &jv_undef) : mv;
            }
            return r;
        }
        jx_err(x, fn, "Unknown list filter: %.*s", (int)fl, f);
    }
    if (v->t == JV_STR) {
        if (FIS("indent")) {
            jargs a = jx_eval_args(x, &fn->body, sc, false);
            jval *w = jargs_at(&a, 0, "width"), *first = jargs_at(&a, 1, "first"), *blank = jargs_at(&a, 2, "blank");
            if (w && w->t != JV_INT)
                jx_err(x, fn, "width must be a number");
            int64_t width = w ? w->u.i : 4;
            if (width < 0 || width > 4096)
                jx_err(x, fn, "width out of range");
            return indent(x, v, width, first && jv_truthy(first), blank && jv_truthy(blank));
        }
        if (FIS("replace")) {
            jargs a = jx_eval_args(x, &fn->body, sc, true);
            jval **args = ja_alloc(&x->a, (a.n + 1) * sizeof *args);
            if (a.n)
                memcpy(args, a.v, a.n * sizeof *args);
            args[a.n] = a.kw;
            return jx_call(x, jv_fn(x, BI_S_REPLACE, v), args, a.n + 1, sc, fn);
        }
        jx_err(x, fn, "Unknown string filter: %.*s", (int)fl, f);
    }
    if (v->t == JV_OBJECT) {
        jval *b = jx_obj_builtin(x, v, f, fl);
        if (b) {
            jargs a = jx_eval_args(x, &fn->body, sc, false);
            jval **args = ja_alloc(&x->a, (a.n + 1) * sizeof *args);
            if (a.n)
                memcpy(args, a.v, a.n * sizeof *args);
            size_t n = a.n;
            if (a.kw)
                args[n++] = a.kw;
            return jx_call(x, b, args, n, sc, fn);
        }
        jx_err(x, fn, "Unknown mapping filter: %.*s", (int)fl, f);
    }
    jx_err(x, fn, "Cannot apply filter \"%.*s\" to type: %s", (int)fl, f, jv_tname(v));
#undef FIS
}


static const char *MONTHS[] = {"January", "February", "March", "April", "May", "June", "July",
                               "August", "September", "October", "November", "December"};

jval *jx_call(jx *x, jval *fn, jval **args, size_t nargs, jscope *sc, const jnode *at)
{
    jx_step(x, at);
    jval *self = fn->u.fn.self;
    jval *a0 = nargs > 0 ? args[0] : NULL;
    jval *a1 = nargs > 1 ? args[1] : NULL;
    switch (fn->u.fn.bi) {
    case BI_MACRO: {
        const jnode *m = fn->u.fn.node;
        char name[80];
        snprintf(name, sizeof name, "'%.*s'", (int)(m->slen > 60 ? 60 : m->slen), m->s);
        jx_enter(x, at);
        jscope *ms = jscope_new(x, sc ? sc : x->global);
        jx_bind_params(x, name, &m->args, m->flag, m->flag2, args, nargs, ms, at);
        jval *r = jx_render_body(x, &m->body, ms, at);
        x->depth--;
        return r;
    }
    case BI_CALLER: {
        const jnode *cb = fn->u.fn.node;
        jx_enter(x, at);
        jscope *cs = jscope_new(x, fn->u.fn.env);
        jx_bind_params(x, "None", &cb->args, cb->flag, cb->flag2, args, nargs, cs, at);
        jval *r = jx_render_body(x, &cb->body, cs, at);
        x->depth--;
        return r;
    }
    case BI_RAISE: {
        jbuf b = {0};
        for (size_t i = 0; i < nargs; i++) {
            if (i)
                jbuf_addc(x, &b, ',');
            jv_rt_str(x, &b, args[i], at);
        }
        /* the template's own words, NUL bytes included (escaped here, as
         * "%s" would stop at one), and never an empty message */
        char msg[sizeof x->f.err->msg];
        textesc_term(msg, sizeof msg, b.p ? b.p : "", b.n, TEXTESC_C0_ONLY | TEXTESC_RAW_BACKSLASH);
        jfail_at(&x->f, at ? at->pos : (uint32_t)-1, JINJA_ERAISE, "%s",
                 msg[0] ? msg : "raise_exception() with an empty message");
    }
    case BI_RANGE: {
        /* integers beyond 2**53 (held as doubles) are integers too: the
         * count check below refuses them in user words */
        for (size_t i = 0; i < nargs; i++)
            if (!jv_is_intv(args[i]))
                jx_err(x, at, "range() arguments must be integers, got %s", jv_tname(args[i]));
        if (nargs < 1 || nargs > 3)
            jx_err(x, at, "range() takes 1 to 3 arguments");
        int64_t start = 0, stop, st = 1;
        if (nargs == 1) {
            stop = jv_int_of(args[0]);
        } else {
            start = jv_int_of(args[0]);
            stop = jv_int_of(args[1]);
            if (nargs == 3)
                st = jv_int_of(args[2]);
        }
        if (st == 0)
            jx_err(x, at, "range() step must not be zero");
        /* the item count, without overflow: |stop - start| < 2**64 */
        uint64_t cnt = 0;
        if (st > 0 && stop > start)
            cnt = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)st + 1;
        else if (st < 0 && start > stop)
            cnt = ((uint64_t)start - (uint64_t)stop - 1) / (st == INT64_MIN ? (uint64_t)1 << 63 : (uint64_t)-st) + 1;
        if (cnt > JINJA_MAX_RANGE)
            jfail_at(&x->f, at ? at->pos : (uint32_t)-1, JINJA_ELIMIT, "range(): too many items (%llu; at most %d)",
                     (unsigned long long)cnt, JINJA_MAX_RANGE);
        jx_work(x, 1 + W_ITEM * cnt, at);
        jval *r = jv_arr(x, (size_t)cnt);
        for (uint64_t k = 0; k < cnt; k++)
            r->u.a.v[r->u.a.n++] = jv_int(x, (int64_t)((uint64_t)start + k * (uint64_t)st)); /* in range: wraps back */
        return r;
    }
    case BI_NAMESPACE: {
        jval *ns = jv_obj(x, JV_NS);
        size_t npos = nargs;
        jval *kw = NULL;
        if (npos && args[npos - 1]->t == JV_OBJECT && args[npos - 1]->kwargs)
            kw = args[--npos];
        if (npos > 1)
            jx_err(x, at, "namespace expected at most 1 argument, got %zu", npos);
        if (npos == 1) {
            jval *src = args[0];
            if (src->t == JV_OBJECT) {
                jx_work(x, 1 + W_KEY * src->u.o.n, at);
                for (size_t i = 0; i < src->u.o.n; i++)
                    jv_set(x, ns, src->u.o.k[i].p, src->u.o.k[i].n, src->u.o.v[i]);
            } else if (src->t == JV_ARRAY) {
                for (size_t i = 0; i < src->u.a.n; i++) {
                    jval *pr = src->u.a.v[i];
                    if (pr->t != JV_ARRAY || pr->u.a.n != 2)
                        jx_err(x, at, "namespace expected an object or an iterable of [key, value] pairs");
                    if (pr->u.a.v[0]->t != JV_STR)
                        jx_err(x, at, "namespace keys must be strings");
                    jv_set(x, ns, pr->u.a.v[0]->u.s.p, pr->u.a.v[0]->u.s.n, pr->u.a.v[1]);
                }
            } else {
                jx_err(x, at, "'%s' object is not iterable", jv_tname(src));
            }
        }
        for (size_t i = 0; kw && i < kw->u.o.n; i++)
            jv_set(x, ns, kw->u.o.k[i].p, kw->u.o.k[i].n, kw->u.o.v[i]);
        return ns;
    }
    case BI_STRFTIME: {
        if (!a0 || a0->t != JV_STR)
            jx_err(x, at, "strftime_now() needs a format string");
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
                jbuf_adds(x, &b, t);
                p += 2;
            } else {
                jbuf_addc(x, &b, *p++);
            }
        }
        return jbuf_val(x, &b);
    }
    case BI_S_UPPER: return jv_case(x, self, 0);
    case BI_S_LOWER: return jv_case(x, self, 1);
    case BI_S_TITLE: return jv_case(x, self, 2);
    case BI_S_CAPITALIZE: return jv_case(x, self, 3);
    case BI_S_STRIP: return jv_trim(x, self, true, true);
    case BI_S_LSTRIP: return jv_trim(x, self, true, false);
    case BI_S_RSTRIP: return jv_trim(x, self, false, true);
    case BI_S_STARTSWITH:
    case BI_S_ENDSWITH: {
        bool sw = fn->u.fn.bi == BI_S_STARTSWITH;
        const char *nm = sw ? "startswith" : "endswith";
        if (!a0)
            jx_err(x, at, "%s() requires at least one argument", nm);
        jval **pats = &a0;
        size_t np = 1;
        if (a0->t == JV_ARRAY) {
            pats = a0->u.a.v;
            np = a0->u.a.n;
            for (size_t i = 0; i < np; i++)
                if (pats[i]->t != JV_STR)
                    jx_err(x, at, "%s() tuple elements must be strings", nm);
        } else if (a0->t != JV_STR) {
            jx_err(x, at, "%s() argument must be a string or tuple of strings", nm);
        }
        for (size_t i = 0; i < np; i++) {
            jstr p = pats[i]->u.s;
            jx_work(x, 1 + p.n, at);
            if (p.n <= self->u.s.n &&
                (p.n == 0 || !memcmp(sw ? self->u.s.p : self->u.s.p + self->u.s.n - p.n, p.p, p.n)))
                return &jv_true;
        }
        return &jv_false;
    }
    case BI_S_SPLIT: {
        jval *sep = a0 ? a0 : &jv_none;
        if (sep->t != JV_STR && sep->t != JV_NONE)
            jx_err(x, at, "sep argument must be a string or null");
        jval *ms = a1 ? a1 : NULL;
        if (ms && ms->t != JV_INT)
            jx_err(x, at, "maxsplit argument must be a number");
        int64_t maxsplit = ms ? ms->u.i : -1;
        jval *r = jv_arr(x, 0);
        const char *p = self->u.s.p, *e = p + self->u.s.n;
        if (sep->t == JV_NONE) {
            jx_work(x, 1 + self->u.s.n, at);
            size_t l;
            while (p < e && (l = jinja_ws_at(p, (size_t)(e - p))))
                p += l;
            while (p < e) {
                const char *w = p;
                while (p < e && !jinja_ws_at(p, (size_t)(e - p)))
                    p += jstr_u8len((unsigned char)*p) <= (size_t)(e - p) ? jstr_u8len((unsigned char)*p) : 1;
                if (maxsplit != -1 && (int64_t)r->u.a.n >= maxsplit) {
                    jv_push(x, r, jv_str(x, w, (size_t)(e - w)));
                    break;
                }
                jv_push(x, r, jv_str(x, w, (size_t)(p - w)));
                while (p < e && (l = jinja_ws_at(p, (size_t)(e - p))))
                    p += l;
            }
            return r;
        }
        if (sep->u.s.n == 0)
            jx_err(x, at, "empty separator");
        for (;;) {
            jx_step(x, at);
            const char *f = jstr_find(x, p, (size_t)(e - p), sep->u.s.p, sep->u.s.n);
            if (!f || (maxsplit != -1 && (int64_t)r->u.a.n >= maxsplit)) {
                jv_push(x, r, jv_str(x, p, (size_t)(e - p)));
                break;
            }
            jv_push(x, r, jv_str(x, p, (size_t)(f - p)));
            p = f + sep->u.s.n;
        }
        return r;
    }
    case BI_S_REPLACE: {
        if (nargs < 2)
            jx_err(x, at, "replace() requires at least two arguments");
        if (a0->t != JV_STR || a1->t != JV_STR)
            jx_err(x, at, "replace() arguments must be strings");
        jval *count = &jv_none;
        if (nargs > 2) {
            if (args[2]->t == JV_OBJECT && args[2]->kwargs) {
                jval *c = jv_get(args[2], "count", 5);
                count = c ? c : &jv_none;
            } else {
                count = args[2];
            }
        }
        if (count->t != JV_INT && count->t != JV_NONE)
            jx_err(x, at, "replace() count argument must be a number or null");
        return jv_replace(x, self, a0, a1, count->t == JV_INT ? count->u.i : -1, at);
    }
    case BI_O_GET: {
        if (!a0 || a0->t != JV_STR)
            jx_err(x, at, "Object key must be a string: got %s", a0 ? jv_tname(a0) : "undefined");
        jval *v = jv_get_w(x, self, a0->u.s.p, a0->u.s.n, at);
        return v ? v : a1 ? a1 : &jv_none;
    }
    case BI_O_ITEMS: return obj_items(x, self);
    case BI_O_KEYS: return jv_keys(x, self);
    case BI_O_VALUES: {
        jx_work(x, 1 + W_ITEM * self->u.o.n, at);
        jval *r = jv_arr(x, self->u.o.n);
        for (size_t i = 0; i < self->u.o.n; i++)
            r->u.a.v[r->u.a.n++] = self->u.o.v[i];
        return r;
    }
    case BI_O_DICTSORT: {
        size_t npos = nargs;
        jval *kw = NULL;
        if (npos && args[npos - 1]->t == JV_OBJECT && args[npos - 1]->kwargs)
            kw = args[--npos];
        jval *cs = npos > 0 ? args[0] : kw ? jv_get(kw, "case_sensitive", 14) : NULL;
        jval *by = npos > 1 ? args[1] : kw ? jv_get(kw, "by", 2) : NULL;
        jval *rev = npos > 2 ? args[2] : kw ? jv_get(kw, "reverse", 7) : NULL;
        if (cs && cs->t != JV_BOOL)
            jx_err(x, at, "case_sensitive must be a boolean");
        if (by && by->t != JV_STR)
            jx_err(x, at, "by must be a string");
        if (by && !jstr_eq(by->u.s, "key", 3) && !jstr_eq(by->u.s, "value", 5))
            jx_err(x, at, "by must be either 'key' or 'value'");
        if (rev && rev->t != JV_BOOL)
            jx_err(x, at, "reverse must be a boolean");
        sort_ctx c = {x, at, cs && cs->u.b, rev && rev->u.b, NULL, by && jstr_eq(by->u.s, "value", 5) ? 1 : 0};
        return sorted(&c, obj_items(x, self));
    }
    }
    jx_err(x, at, "Cannot call something that is not a function");
}
