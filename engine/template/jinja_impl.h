/* Private declarations shared by the jinja_*.c files (lexer, parser, values,
 * interpreter, filters). Not part of the public API: include jinja.h instead. */
#ifndef GGSCOPE_JINJA_IMPL_H
#define GGSCOPE_JINJA_IMPL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <string.h>

#include "jinja.h"

#define JINJA_MAX_SOURCE (1u << 20) /* real chat templates are < 64 KiB */
#define JINJA_MAX_PARSE_DEPTH 200
#define JINJA_MAX_PARAMS 1000       /* parameters of one macro or call block */

/* ---- arena: bump allocation in chunks; failures longjmp to the owner ---- */
typedef struct jarena_chunk {
    struct jarena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} jarena_chunk;

typedef struct jfail jfail;

typedef struct {
    jarena_chunk *head;
    size_t total;   /* bytes obtained from malloc */
    size_t limit;   /* 0 = none */
    jfail *fail;    /* where allocation failures go */
} jarena;

/* Where errors go: a jump buffer, the error to fill and the position map. */
struct jfail {
    jmp_buf jb;
    jinja_error *err;
    const char *src;        /* the original template text */
    size_t src_len;
    const uint32_t *posmap; /* preprocessed offset -> original offset */
    size_t posmap_len;
};

void *ja_alloc(jarena *a, size_t n);
char *ja_memdup(jarena *a, const void *p, size_t n); /* NUL-terminated copy */
/* A growing array moved: a new block of `cap` elements of `size` bytes
 * holding a copy of the first n elements of `old` (the old block stays in
 * the arena). */
void *ja_realloc(jarena *a, const void *old, size_t n, size_t cap, size_t size);
void ja_release(jarena *a);

/* Fill the error (position `pos` in the preprocessed text, or (uint32_t)-1
 * when unknown) and longjmp to f->jb. */
_Noreturn void jfail_at(jfail *f, uint32_t pos, jinja_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- AST ---- */
typedef enum {
    /* expressions */
    JN_STR, JN_INT, JN_FLOAT, JN_IDENT, JN_ARRAY, JN_TUPLE, JN_OBJECT, JN_MEMBER, JN_SLICE,
    JN_CALL, JN_KWARG, JN_SPREAD, JN_KWSPREAD, JN_BINARY, JN_UNARY, JN_FILTER, JN_TEST,
    JN_SELECT, JN_TERNARY,
    /* statements */
    JN_IF, JN_FOR, JN_SET, JN_MACRO, JN_CALLBLOCK, JN_BREAK, JN_CONTINUE, JN_FILTERBLOCK,
    JN_COMMENT, JN_OUTPUT, JN_TEXT,
} jnode_kind;

typedef enum {
    JOP_NONE, JOP_ADD, JOP_SUB, JOP_CONCAT, JOP_MUL, JOP_DIV, JOP_FLOORDIV, JOP_MOD, JOP_POW,
    JOP_EQ, JOP_NE, JOP_LT, JOP_GT, JOP_LE, JOP_GE, JOP_IN, JOP_NOTIN, JOP_AND, JOP_OR,
    JOP_NOT, JOP_NEG, JOP_POS,
} jop;

typedef struct jnode jnode;
typedef struct {
    jnode **v;
    uint32_t n;
} jlist;

/* One node. Field use by kind:
 *  STR/TEXT/IDENT: s,slen   INT: i   FLOAT: f
 *  ARRAY/TUPLE: body = items   OBJECT: body = keys, alt = values
 *  MEMBER: a = object, b = property, flag = computed
 *  SLICE: a,b,c = start, stop, step (NULL when absent)
 *  CALL: a = callee, body = args   KWARG: s = name, a = value   SPREAD/KWSPREAD: a
 *  BINARY: op, a, b   UNARY: op, a   FILTER: a = operand, b = filter (IDENT or CALL)
 *  TEST: a = operand, s = test name, flag = negated   SELECT: a = lhs, b = test
 *  TERNARY: a = cond, b = true value, c = false value
 *  IF: a = test, body, alt   FOR: a = loop target, b = iterable, body, alt = else
 *  SET: a = target, b = value (NULL: block form, body)
 *  MACRO: s = name, args = parameters, body; flag = uses varargs, flag2 = uses kwargs
 *  CALLBLOCK: a = call (CALL), args = caller parameters, body (same flags as MACRO)
 *  FILTERBLOCK: b = filter, body   OUTPUT: a = expression */
struct jnode {
    uint8_t kind;
    uint8_t op;
    bool flag, flag2;
    uint32_t pos;
    jnode *a, *b, *c;
    jlist body, alt, args;
    const char *s;
    size_t slen;
    int64_t i;
    double f;
};

struct jinja_template {
    jarena arena;
    jlist body;
    char *src;          /* original text (copy) */
    size_t src_len;
    uint32_t *posmap;   /* in arena */
    size_t posmap_len;
};

/* ---- tokens (jinja_lex.c) ---- */
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

/* Preprocess (the text rewrites @huggingface/jinja makes before lexing) and
 * tokenize t->src: sets t's and f's position maps; returns the tokens (in
 * t's arena), *nt of them, the last one T_EOF. Errors longjmp to f. */
jtok *jinja_tokenize(jinja_template *t, jfail *f, size_t *nt);

/* Unicode whitespace as JavaScript's \s sees it: the byte length of the
 * whitespace character at s[0..n), or 0. */
size_t jinja_ws_at(const char *s, size_t n);
/* Byte length of the whitespace character that ends s[0..n), or 0. */
size_t jinja_ws_before(const char *s, size_t n);

/* ==================================================== render (jinja_*.c) */

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

/* The shared undefined, none, true and false values (jinja_value.c). */
extern jval jv_undef, jv_none, jv_true, jv_false;

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

/* Bytes touched per list item walked or copied (a pointer), per scope or
 * mapping key compared (a string reference). */
#define W_ITEM sizeof(jval *)
#define W_KEY sizeof(jstr)

/* 2**53: JavaScript integers are exact up to here */
#define JS_SAFE_INT 9007199254740992.0

typedef struct {
    int64_t indent;   /* 0 = none */
    bool ensure_ascii, sort_keys;
    const char *item_sep, *key_sep;
    size_t item_sep_n, key_sep_n;
} json_opts;

/* Arguments of a call: positional values then, when any were given, one
 * keyword-arguments object last. */
typedef struct {
    jval **v;
    size_t n;
    jval *kw; /* NULL when there were none */
} jargs;

/* Every function below takes the render context x; those that can fail
 * (limits, memory, type errors) longjmp to x->f and never return an error.
 * Values live in x's arena until the render ends. */

/* jinja_value.c: errors, constructors, mappings, equality */
/* A runtime error (JINJA_ERUNTIME) at n's position (unknown when NULL). */
_Noreturn void jx_err(jx *x, const jnode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* One level deeper (calls, nested expressions), checked against max_depth;
 * the caller decrements x->depth on its way out. */
void jx_enter(jx *x, const jnode *n);
/* Jinja's name of v's type, for messages ("integer", "mapping"...). */
const char *jv_tname(const jval *v);
/* An integer-typed result computed in double precision (as JavaScript does). */
jval *jv_intd(jx *x, double d);
jval *jv_arr(jx *x, size_t cap);
void jv_push(jx *x, jval *a, jval *e);
jval *jv_obj(jx *x, jvtype t); /* JV_OBJECT or JV_NS, empty */
jval *jv_fn(jx *x, jbuiltin bi, jval *self);
/* Mapping lookup: the value, or NULL; the _w forms charge the keys walked
 * (jv_find_w returns the index or -1). jv_set replaces or appends. */
jval *jv_get(const jval *o, const char *k, size_t n);
long jv_find_w(jx *x, const jval *o, const char *k, size_t n, const jnode *at);
jval *jv_get_w(jx *x, const jval *o, const char *k, size_t n, const jnode *at);
void jv_set(jx *x, jval *o, const char *k, size_t n, jval *v);
/* Room for `add` more bytes and a NUL in b. */
void jbuf_grow(jx *x, jbuf *b, size_t add);
/* JavaScript ==, === and SameValueZero (`in`, unique). */
bool jv_loose_eq(jx *x, const jval *a, const jval *b, const jnode *at);
bool jv_strict_eq(jx *x, const jval *a, const jval *b);
bool jv_same_value_zero(jx *x, const jval *a, const jval *b);

/* jinja_text.c: values as text, UTF-8 strings */
void jv_to_json(jx *x, jbuf *b, const jval *v, const json_opts *o, int depth, bool undef_null, const jnode *at);
json_opts jv_json_default(void); /* tojson's defaults */
/* Append v as JavaScript's String(v) / as the template prints it. */
void jv_js_str(jx *x, jbuf *b, const jval *v, const jnode *at);
void jv_rt_str(jx *x, jbuf *b, const jval *v, const jnode *at);
size_t jstr_u8len(unsigned char c); /* length of the UTF-8 sequence led by c */
/* Byte offsets of s's code points into *out, then n; returns their count. */
size_t jstr_cp_offsets(jx *x, const char *s, size_t n, size_t **out);
int64_t jstr_js_length(jx *x, const char *s, size_t n); /* UTF-16 units */
jval *jv_trim(jx *x, const jval *v, bool left, bool right);
jval *jv_case(jx *x, const jval *v, int mode);
/* First occurrence of nd in h (NULL when none), charging the work. */
const char *jstr_find(jx *x, const char *h, size_t hn, const char *nd, size_t nn);
jval *jv_replace(jx *x, const jval *s, const jval *old, const jval *nw, int64_t count, const jnode *at);

/* jinja_eval.c: the interpreter */
jargs jx_eval_args(jx *x, const jlist *args, jscope *sc, bool always_kw);
jval *jargs_kw(const jargs *a, const char *k);            /* keyword k, or NULL */
jval *jargs_at(const jargs *a, size_t i, const char *k);  /* position i, else keyword k */
int64_t jv_int_of(const jval *v); /* clamped to int64; NaN -> 0 */
jval *jx_obj_builtin(jx *x, jval *o, const char *k, size_t n); /* mapping method k, or NULL */
/* Bind a macro's (or a call block's) parameters in `scope`. */
void jx_bind_params(jx *x, const char *name, const jlist *params, bool varargs, bool kwargs, jval **args,
                    size_t nargs, jscope *scope, const jnode *at);
jscope *jscope_new(jx *x, jscope *parent);
jval *jx_render_body(jx *x, const jlist *body, jscope *sc, const jnode *at); /* body's output, a string */

/* jinja_filters.c: tests, filters, builtin functions and methods */
bool jx_run_test(jx *x, const char *name, size_t nl, const jval *v, const jval *b, const jnode *at);
jval *jv_keys(jx *x, const jval *o);
jval *jx_apply_filter(jx *x, jval *v, const jnode *fn, jscope *sc);
jval *jx_call(jx *x, jval *fn, jval **args, size_t nargs, jscope *sc, const jnode *at);

/* Small helpers used on every node: inline. */

/* One step (statement, iteration, call), checked against max_steps. */
static inline void jx_step(jx *x, const jnode *n)
{
    if (++x->steps > x->lim.max_steps)
        jfail_at(&x->f, n ? n->pos : (uint32_t)-1, JINJA_ELIMIT,
                 "template too costly: more than %llu steps (statements, loop iterations, calls; max_steps)",
                 (unsigned long long)x->lim.max_steps);
}

/* Charge n bytes of work, before doing it. */
static inline void jx_work(jx *x, uint64_t n, const jnode *at)
{
    if (!at)
        at = x->cur;
    x->work += n;
    if (x->work > x->lim.max_work || x->work < n)
        jfail_at(&x->f, at ? at->pos : (uint32_t)-1, JINJA_ELIMIT,
                 "template too costly: more than %llu bytes of work (string and list operations; max_work)",
                 (unsigned long long)x->lim.max_work);
}

static inline jval *jv_new(jx *x, jvtype t)
{
    jval *v = ja_alloc(&x->a, sizeof *v);
    memset(v, 0, sizeof *v);
    v->t = (uint8_t)t;
    return v;
}

static inline jval *jv_int(jx *x, int64_t i)
{
    jval *v = jv_new(x, JV_INT);
    v->u.i = i;
    return v;
}

static inline jval *jv_float(jx *x, double f)
{
    jval *v = jv_new(x, JV_FLOAT);
    v->u.f = f;
    return v;
}

static inline jval *jv_bool(bool b) { return b ? &jv_true : &jv_false; }

/* A string value referring to p (which must outlive the render). */
static inline jval *jv_str(jx *x, const char *p, size_t n)
{
    jval *v = jv_new(x, JV_STR);
    v->u.s.p = p;
    v->u.s.n = n;
    return v;
}

static inline bool jstr_eq(jstr a, const char *p, size_t n) { return a.n == n && (n == 0 || !memcmp(a.p, p, n)); }

static inline bool jv_truthy(const jval *v)
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

static inline bool jv_is_num(const jval *v) { return v->t == JV_INT || v->t == JV_FLOAT; }

static inline double jv_num(const jval *v) { return v->t == JV_INT ? (double)v->u.i : v->t == JV_FLOAT ? v->u.f : v->t == JV_BOOL ? v->u.b : 0; }

static inline bool jv_is_obj(const jval *v) { return v->t == JV_ARRAY || v->t == JV_OBJECT || v->t == JV_NS || v->t == JV_FUNC; }

static inline bool jv_is_intv(const jval *v) { return v->t == JV_INT || (v->t == JV_FLOAT && v->intlike); }

static inline void jbuf_add(jx *x, jbuf *b, const char *s, size_t n)
{
    if (!n)
        return;
    jx_work(x, 4 + n, NULL);
    jbuf_grow(x, b, n);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static inline void jbuf_adds(jx *x, jbuf *b, const char *s) { jbuf_add(x, b, s, strlen(s)); }

static inline void jbuf_addc(jx *x, jbuf *b, char c) { jbuf_add(x, b, &c, 1); }

static inline jval *jbuf_val(jx *x, jbuf *b) { return jv_str(x, b->p ? b->p : "", b->n); }

#endif
