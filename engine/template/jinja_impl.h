/* Private declarations shared by jinja_parse.c and jinja_eval.c. Not part of
 * the public API: include jinja.h instead. */
#ifndef GGSCOPE_JINJA_IMPL_H
#define GGSCOPE_JINJA_IMPL_H

#include <setjmp.h>
#include <stdarg.h>

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

/* Unicode whitespace as JavaScript's \s sees it: the byte length of the
 * whitespace character at s[0..n), or 0. */
size_t jinja_ws_at(const char *s, size_t n);
/* Byte length of the whitespace character that ends s[0..n), or 0. */
size_t jinja_ws_before(const char *s, size_t n);

#endif
