/* jinja: values as text (JavaScript numbers, JSON, str()) and UTF-8 string
 * operations (length, case, trim, replace). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

/* ------------------------------------------------------------ number text */

/* JavaScript's Number.prototype.toString(). */
static void js_num(jx *x, jbuf *b, double d)
{
    jx_work(x, 128, NULL); /* up to 17 snprintf/strtod rounds */
    if (isnan(d)) {
        jbuf_adds(x, b, "NaN");
        return;
    }
    if (isinf(d)) {
        jbuf_adds(x, b, d < 0 ? "-Infinity" : "Infinity");
        return;
    }
    if (d == 0) {
        jbuf_addc(x, b, '0');
        return;
    }
    if (d < 0) {
        jbuf_addc(x, b, '-');
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
        jbuf_add(x, b, digits, (size_t)k);
        for (int i = k; i < n; i++)
            jbuf_addc(x, b, '0');
    } else if (0 < n && n <= 21) {
        jbuf_add(x, b, digits, (size_t)n);
        jbuf_addc(x, b, '.');
        jbuf_add(x, b, digits + n, (size_t)(k - n));
    } else if (-6 < n && n <= 0) {
        jbuf_adds(x, b, "0.");
        for (int i = 0; i < -n; i++)
            jbuf_addc(x, b, '0');
        jbuf_add(x, b, digits, (size_t)k);
    } else {
        jbuf_addc(x, b, digits[0]);
        if (k > 1) {
            jbuf_addc(x, b, '.');
            jbuf_add(x, b, digits + 1, (size_t)(k - 1));
        }
        char ex[16];
        snprintf(ex, sizeof ex, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
        jbuf_adds(x, b, ex);
    }
}

static void js_int(jx *x, jbuf *b, int64_t i)
{
    jx_work(x, 32, NULL); /* a conversion costs more than its bytes */
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)i);
    jbuf_adds(x, b, t);
}

/* FloatValue.toString(): integral values keep one decimal ("2.0"). */
static void float_str(jx *x, jbuf *b, double d)
{
    if (d == 0 && signbit(d)) {
        jbuf_adds(x, b, "-0.0");
        return;
    }
    if (isfinite(d) && fmod(d, 1.0) == 0 && fabs(d) < 1e21) {
        char t[64];
        snprintf(t, sizeof t, "%.1f", d);
        jbuf_adds(x, b, t);
        return;
    }
    js_num(x, b, d);
}

/* ------------------------------------------------------------------- JSON */

static void json_str(jx *x, jbuf *b, const char *s, size_t n, bool ascii)
{
    jbuf_addc(x, b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        char t[16];
        size_t run = i;
        while (run < n && (unsigned char)s[run] >= 0x20 && s[run] != '"' && s[run] != '\\' &&
               !(ascii && (unsigned char)s[run] >= 0x7f))
            run++;
        if (run > i) { /* characters written as they are, in one copy */
            jbuf_add(x, b, s + i, run - i);
            i = run;
            continue;
        }
        switch (c) {
        case '"': jbuf_adds(x, b, "\\\""); i++; continue;
        case '\\': jbuf_adds(x, b, "\\\\"); i++; continue;
        case '\b': jbuf_adds(x, b, "\\b"); i++; continue;
        case '\f': jbuf_adds(x, b, "\\f"); i++; continue;
        case '\n': jbuf_adds(x, b, "\\n"); i++; continue;
        case '\r': jbuf_adds(x, b, "\\r"); i++; continue;
        case '\t': jbuf_adds(x, b, "\\t"); i++; continue;
        default: break;
        }
        if (c < 0x20) {
            snprintf(t, sizeof t, "\\u%04x", c);
            jbuf_adds(x, b, t);
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
            jbuf_adds(x, b, t);
            i += l;
            continue;
        }
        jbuf_addc(x, b, (char)c);
        i++;
    }
    jbuf_addc(x, b, '"');
}

static void json_pad(jx *x, jbuf *b, const json_opts *o, int depth)
{
    jbuf_addc(x, b, '\n');
    for (int64_t i = 0; i < o->indent * depth; i++)
        jbuf_addc(x, b, ' ');
}

static int key_cmp(const void *a, const void *b)
{
    const jstr *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    return c ? c : (x->n < y->n ? -1 : x->n > y->n);
}

void jv_to_json(jx *x, jbuf *b, const jval *v, const json_opts *o, int depth, bool undef_null, const jnode *at)
{
    if (depth > x->lim.max_depth)
        jfail_at(&x->f, at ? at->pos : (uint32_t)-1, JINJA_ELIMIT, "value nested too deeply for JSON");
    switch ((jvtype)v->t) {
    case JV_NONE: jbuf_adds(x, b, "null"); return;
    case JV_UNDEF: jbuf_adds(x, b, undef_null ? "null" : "undefined"); return;
    case JV_INT: js_int(x, b, v->u.i); return;
    case JV_FLOAT:
        if (!isfinite(v->u.f))
            jbuf_adds(x, b, "null");
        else
            js_num(x, b, v->u.f);
        return;
    case JV_BOOL: jbuf_adds(x, b, v->u.b ? "true" : "false"); return;
    case JV_STR: json_str(x, b, v->u.s.p, v->u.s.n, o->ensure_ascii); return;
    case JV_ARRAY:
        if (v->tuple)
            jx_err(x, at, "Cannot convert to JSON: tuple");
        jx_work(x, W_ITEM * v->u.a.n, at);
        jbuf_addc(x, b, '[');
        for (size_t i = 0; i < v->u.a.n; i++) {
            if (i)
                jbuf_add(x, b, o->item_sep, o->item_sep_n);
            if (o->indent)
                json_pad(x, b, o, depth + 1);
            jv_to_json(x, b, v->u.a.v[i], o, depth + 1, undef_null, at);
        }
        if (o->indent && v->u.a.n)
            json_pad(x, b, o, depth);
        jbuf_addc(x, b, ']');
        return;
    case JV_OBJECT:
    case JV_NS: {
        size_t n = v->u.o.n;
        jx_work(x, 1 + W_KEY * n, at);
        size_t *order = ja_alloc(&x->a, (n ? n : 1) * sizeof *order);
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        if (o->sort_keys && n > 1) {
            /* stable insertion sort of indices by key */
            for (size_t i = 1; i < n; i++) {
                size_t t = order[i], j = i;
                while (j > 0 && (jx_work(x, W_KEY + v->u.o.k[t].n, at), key_cmp(&v->u.o.k[order[j - 1]], &v->u.o.k[t]) > 0)) {
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = t;
            }
        }
        jbuf_addc(x, b, '{');
        for (size_t i = 0; i < n; i++) {
            if (i)
                jbuf_add(x, b, o->item_sep, o->item_sep_n);
            if (o->indent)
                json_pad(x, b, o, depth + 1);
            json_str(x, b, v->u.o.k[order[i]].p, v->u.o.k[order[i]].n, o->ensure_ascii);
            jbuf_add(x, b, o->key_sep, o->key_sep_n);
            jv_to_json(x, b, v->u.o.v[order[i]], o, depth + 1, undef_null, at);
        }
        if (o->indent && n)
            json_pad(x, b, o, depth);
        jbuf_addc(x, b, '}');
        return;
    }
    case JV_FUNC:
        jx_err(x, at, "Cannot convert to JSON: function");
    }
}

json_opts jv_json_default(void)
{
    return (json_opts){0, false, false, ", ", ": ", 2, 2};
}

/* --------------------------------------------------------- value to text */


/* `value.toString()` of the JavaScript value inside (used by + and ~). */
void jv_js_str(jx *x, jbuf *b, const jval *v, const jnode *at)
{
    switch ((jvtype)v->t) {
    case JV_UNDEF: jbuf_adds(x, b, "undefined"); return;
    case JV_NONE: jbuf_adds(x, b, "undefined"); return; /* NullValue holds JavaScript undefined */
    case JV_BOOL: jbuf_adds(x, b, v->u.b ? "true" : "false"); return;
    case JV_INT: js_int(x, b, v->u.i); return;
    case JV_FLOAT: js_num(x, b, v->u.f); return;
    case JV_STR: jbuf_add(x, b, v->u.s.p, v->u.s.n); return;
    case JV_ARRAY:
        jx_work(x, W_ITEM * v->u.a.n, at);
        for (size_t i = 0; i < v->u.a.n; i++) {
            if (i)
                jbuf_addc(x, b, ',');
            jv_rt_str(x, b, v->u.a.v[i], at);
        }
        return;
    case JV_OBJECT:
    case JV_NS: jbuf_adds(x, b, "[object Map]"); return;
    case JV_FUNC: jbuf_adds(x, b, "[function]"); return;
    }
}

/* RuntimeValue.toString(): what `{{ value }}` prints. */
void jv_rt_str(jx *x, jbuf *b, const jval *v, const jnode *at)
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
        json_opts o = jv_json_default();
        jv_to_json(x, b, v, &o, 0, false, at);
        return;
    }
    default: jv_js_str(x, b, v, at); return;
    }
}

/* ------------------------------------------------------------ UTF-8 text */

size_t jstr_u8len(unsigned char c)
{
    return c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

/* Split s into code points: offsets array (n+1 entries). */
size_t jstr_cp_offsets(jx *x, const char *s, size_t n, size_t **out)
{
    jx_work(x, n + 1, NULL);
    size_t *o = ja_alloc(&x->a, (n + 1) * sizeof *o);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        o[k++] = i;
        size_t l = jstr_u8len((unsigned char)s[i]);
        i = i + l > n ? n : i + l;
    }
    o[k] = n;
    *out = o;
    return k;
}

/* UTF-16 length (JavaScript's String.length). */
int64_t jstr_js_length(jx *x, const char *s, size_t n)
{
    jx_work(x, n + 1, NULL);
    int64_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t l = jstr_u8len((unsigned char)s[i]);
        k += l == 4 ? 2 : 1;
        i += l;
    }
    return k;
}

jval *jv_trim(jx *x, const jval *v, bool left, bool right)
{
    jx_work(x, v->u.s.n + 1, NULL);
    const char *s = v->u.s.p;
    size_t a = 0, e = v->u.s.n, l;
    if (left)
        while (a < e && (l = jinja_ws_at(s + a, e - a)))
            a += l;
    if (right)
        while (e > a && (l = jinja_ws_before(s + a, e - a)))
            e -= l;
    return jv_str(x, s + a, e - a);
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
    size_t l = jstr_u8len(u[0]);
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
    jbuf_add(x, b, t, n);
}

static bool cp_is_letter(uint32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || cp_upper(c) != c || cp_lower(c) != c;
}

/* mode 0 upper, 1 lower (JavaScript toUpperCase/toLowerCase for the scripts
 * above, with ß -> SS and the Greek final sigma), 2 title (/\b\w/ upper-cased),
 * 3 capitalize (first character upper-cased, the rest kept). */
jval *jv_case(jx *x, const jval *v, int mode)
{
    const char *s = v->u.s.p;
    size_t n = v->u.s.n;
    jx_work(x, n + 1, NULL);
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
        return jv_str(x, d, n);
    }
    jbuf b = {0};
    jbuf_grow(x, &b, n + 8);
    uint32_t prev = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80 && (mode != 3 || i == 0)) {
            /* ASCII (already charged above): no per-byte charge */
            if (b.cap - b.n < 2)
                jbuf_grow(x, &b, 1);
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
            jbuf_add(x, &b, s + i, n - i);
            break;
        }
        static const char *const LIGS[] = {"FF", "FI", "FL", "FFI", "FFL", "ST", "ST"};
        if (mode == 0 || mode == 3) {
            if (cp == 0xDF) {
                jbuf_adds(x, &b, "SS");
            } else if (cp == 0x149) {
                jbuf_adds(x, &b, "\xCA\xBCN");
            } else if (cp >= 0xFB00 && cp <= 0xFB06) {
                jbuf_adds(x, &b, LIGS[cp - 0xFB00]);
            } else {
                uint32_t u = cp_upper(cp);
                if (u == cp)
                    jbuf_add(x, &b, s + i, l);
                else
                    enc_cp(x, &b, u);
            }
        } else if (cp == 0x130) {
            jbuf_adds(x, &b, "i\xCC\x87");
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
                jbuf_add(x, &b, s + i, l);
            else
                enc_cp(x, &b, lo);
        }
        prev = cp;
        i += l;
    }
    return jbuf_val(x, &b);
}

/* The first nd in h, charging the bytes it passes and, per candidate
 * position, a call and the needle's length (an upper bound of the compare).
 * Not memmem: AddressSanitizer checks memmem's whole haystack on every call,
 * which makes replace and split quadratic in sanitizer builds. */
const char *jstr_find(jx *x, const char *h, size_t hn, const char *nd, size_t nn)
{
    if (nn == 0)
        return h;
    if (nn > hn)
        return NULL;
    const char *p = h, *last = h + (hn - nn);
    while (p <= last) {
        const char *c = memchr(p, (unsigned char)nd[0], (size_t)(last - p) + 1);
        if (!c) {
            jx_work(x, 32 + (size_t)(last - p) + 1, NULL);
            return NULL;
        }
        jx_work(x, 32 + (size_t)(c - p) + nn, NULL);
        if (!memcmp(c, nd, nn))
            return c;
        p = c + 1;
    }
    return NULL;
}

jval *jv_replace(jx *x, const jval *s, const jval *old, const jval *nw, int64_t count, const jnode *at)
{
    if (count == 0)
        return (jval *)s;
    jbuf b = {0};
    const char *p = s->u.s.p, *e = p + s->u.s.n;
    int64_t left = count < 0 ? INT64_MAX : count;
    if (old->u.s.n == 0) {
        /* matches before every character and at the end */
        for (;;) {
            jx_step(x, at);
            if (left > 0) {
                jbuf_add(x, &b, nw->u.s.p, nw->u.s.n);
                left--;
            }
            if (p >= e)
                break;
            size_t l = jstr_u8len((unsigned char)*p);
            if (p + l > e)
                l = (size_t)(e - p);
            jbuf_add(x, &b, p, l);
            p += l;
        }
        return jbuf_val(x, &b);
    }
    while (p < e && left > 0) {
        const char *f = jstr_find(x, p, (size_t)(e - p), old->u.s.p, old->u.s.n);
        if (!f)
            break;
        jbuf_add(x, &b, p, (size_t)(f - p));
        jbuf_add(x, &b, nw->u.s.p, nw->u.s.n);
        p = f + old->u.s.n;
        left--;
    }
    jbuf_add(x, &b, p, (size_t)(e - p));
    return jbuf_val(x, &b);
}
