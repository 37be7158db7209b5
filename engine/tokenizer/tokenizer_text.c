/* Tokenizer front end, text side: partitioning on special tokens, the
 * tokenize / detokenize drivers and streaming decoding, as llama.cpp's
 * llama_vocab does them (loading: tokenizer.c). */
#include "tokenizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
/* ---------------- tokenizing ---------------- */

typedef struct {
    bool is_token;
    tok_id id;
    size_t off, len;
} fragment;

typedef struct {
    fragment *v;
    size_t n, cap;
} frags;

static bool frag_push(frags *a, fragment f)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        fragment *p = realloc(a->v, cap * sizeof *p);
        if (!p)
            return false;
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = f;
    return true;
}

static bool c_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Split the text around special tokens (llama.cpp's tokenizer_st_partition):
 * one token at a time, longest text first, every occurrence in every piece
 * of text not yet claimed. */
static bool partition(const tok_vocab *v, const char *text, size_t len, bool parse_special, frags *out)
{
    frags cur = {0}, next = {0};
    bool ok = frag_push(&cur, (fragment){false, TOK_NULL, 0, len});
    /* Which byte pairs occur in the text: a token with a pair that does not
     * occur cannot, and is skipped without a search (a filter only). */
    uint8_t *pairs = len >= 4096 && v->n_special > 8 ? calloc(8192, 1) : NULL;
    uint8_t bytes[32] = {0};
    if (pairs) {
        for (size_t i = 0; i + 1 < len; i++) {
            unsigned pr = (uint8_t)text[i] << 8 | (uint8_t)text[i + 1];
            pairs[pr >> 3] |= (uint8_t)(1u << (pr & 7));
        }
        for (size_t i = 0; i < len; i++)
            bytes[(uint8_t)text[i] >> 3] |= (uint8_t)(1u << ((uint8_t)text[i] & 7));
    }
    for (uint32_t k = 0; k < v->n_special && ok; k++) {
        tok_id id = v->special[k];
        uint32_t attr = v->attr[id];
        if (!parse_special && (attr & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN)))
            continue;
        const char *t = v->strs[id].p;
        size_t tl = v->strs[id].len;
        if (!tl)
            continue;
        if (pairs) {
            bool absent = !((bytes[(uint8_t)t[0] >> 3] >> ((uint8_t)t[0] & 7)) & 1);
            for (size_t i = 0; !absent && i + 1 < tl; i++) {
                unsigned pr = (uint8_t)t[i] << 8 | (uint8_t)t[i + 1];
                absent = !((pairs[pr >> 3] >> (pr & 7)) & 1);
            }
            if (absent)
                continue;
        }
        next.n = 0;
        for (size_t i = 0; i < cur.n && ok; i++) {
            fragment fr = cur.v[i];
            if (fr.is_token) {
                ok = frag_push(&next, fr);
                continue;
            }
            size_t pos = fr.off, end = fr.off + fr.len;
            const char *m;
            while (ok && pos < end && (m = memmem(text + pos, end - pos, t, tl))) {
                size_t mo = (size_t)(m - text), left = mo;
                if (attr & TOK_ATTR_LSTRIP)
                    while (left > pos && c_space(text[left - 1]))
                        left--;
                if (left > pos)
                    ok = frag_push(&next, (fragment){false, TOK_NULL, pos, left - pos});
                ok = ok && frag_push(&next, (fragment){true, id, 0, 0});
                pos = mo + tl;
                if (attr & TOK_ATTR_RSTRIP)
                    while (pos < end && c_space(text[pos]))
                        pos++;
            }
            if (ok && pos < end)
                ok = frag_push(&next, (fragment){false, TOK_NULL, pos, end - pos});
        }
        frags t2 = cur;
        cur = next;
        next = t2;
    }
    free(pairs);
    free(next.v);
    if (!ok) {
        free(cur.v);
        return false;
    }
    *out = cur;
    return true;
}

tok_status tok_tokenize(const tok_vocab *v, const char *text, size_t len, unsigned flags,
                        tok_id **out, size_t *n)
{
    if (!v || !out || !n || (!text && len) || len > (size_t)INT32_MAX / 4)
        return TOK_EARG;
    *out = NULL;
    *n = 0;
    tok__ids ids = {0};
    frags fr = {0};
    char *buf = NULL;
    bool ok = true;
    if (len && !partition(v, text, len, flags & TOK_PARSE_SPECIAL, &fr))
        goto nomem;
    bool add = flags & TOK_ADD_SPECIAL;
    if (add && v->add_bos && !tok__ids_push(&ids, v->bos))
        goto nomem;
    if (v->model == TOK_MODEL_SPM) {
        bool prev_special = true;   /* the first piece of text gets the prefix space */
        for (size_t i = 0; i < fr.n && ok; i++) {
            if (fr.v[i].is_token) {
                ok = tok__ids_push(&ids, fr.v[i].id);
                prev_special = true;
                continue;
            }
            /* escape: ' ' -> U+2581 (3 bytes) */
            const char *s = text + fr.v[i].off;
            size_t sl = fr.v[i].len, m = 0;
            char *nb = realloc(buf, 3 * (sl + 1));
            if (!nb)
                goto nomem;
            buf = nb;
            if (v->add_space_prefix && prev_special) {
                memcpy(buf, "\xe2\x96\x81", 3);
                m = 3;
            }
            for (size_t j = 0; j < sl; j++) {
                if (s[j] == ' ') {
                    memcpy(buf + m, "\xe2\x96\x81", 3);
                    m += 3;
                } else {
                    buf[m++] = s[j];
                }
            }
            ok = tok__spm_tokenize(v, buf, m, &ids);
            prev_special = false;
        }
    } else {
        for (size_t i = 0; i < fr.n && ok; i++)
            ok = fr.v[i].is_token ? tok__ids_push(&ids, fr.v[i].id)
                                  : tok__bpe_tokenize(v, text + fr.v[i].off, fr.v[i].len, &ids);
    }
    if (!ok)
        goto nomem;
    if (add && v->add_eos && !tok__ids_push(&ids, v->eos))
        goto nomem;
    free(buf);
    free(fr.v);
    *out = ids.v;
    *n = ids.n;
    return TOK_OK;
nomem:
    free(buf);
    free(fr.v);
    free(ids.v);
    return TOK_ENOMEM;
}

/* ---------------- detokenizing ---------------- */

static size_t put(char *buf, size_t cap, size_t o, const char *s, size_t n)
{
    if (o < cap)
        memcpy(buf + o, s, n <= cap - o ? n : cap - o);
    return o + n;
}

/* llama.cpp's token_to_piece with `lstrip` leading spaces skipped. */
static size_t piece(const tok_vocab *v, tok_id id, char *buf, size_t cap, bool special, int lstrip)
{
    if (id < 0 || (uint32_t)id >= v->n_vocab)
        return 0;
    uint32_t attr = v->attr[id];
    if (!special && (attr & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL)))
        return 0;
    const char *t = v->strs[id].p;
    size_t tl = v->strs[id].len;
    char tmp[256];
    char *big = NULL;
    const char *src = NULL;
    size_t sn = 0;
    if (attr & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED)) {
        src = t, sn = tl;
    } else if (attr & TOK_ATTR_NORMAL) {
        char *dst = tmp;
        size_t need = v->model == TOK_MODEL_SPM ? tl : tok__bpe_decode(t, tl, NULL, 0);
        if (need > sizeof tmp) {
            big = malloc(need);
            if (!big)
                return 0;
            dst = big;
        }
        if (v->model == TOK_MODEL_SPM) {
            for (size_t i = 0; i < tl;) {
                if (i + 3 <= tl && !memcmp(t + i, "\xe2\x96\x81", 3)) {
                    dst[sn++] = ' ';
                    i += 3;
                } else {
                    dst[sn++] = t[i++];
                }
            }
        } else {
            sn = tok__bpe_decode(t, tl, dst, need);
        }
        src = dst;
    } else if (attr & TOK_ATTR_BYTE) {
        if (tl >= 6) {
            char hex[3] = {t[3], t[4], 0};
            tmp[0] = (char)strtol(hex, NULL, 16);
            src = tmp, sn = 1;
        }
    }
    size_t o = 0;
    if (src) {
        for (int i = 0; i < lstrip && sn && *src == ' '; i++)
            src++, sn--;
        o = put(buf, cap, 0, src, sn);
    }
    free(big);
    return o;
}

size_t tok_piece(const tok_vocab *v, tok_id id, char *buf, size_t cap, unsigned flags)
{
    return v ? piece(v, id, buf, cap, flags & TOK_DETOK_SPECIAL, 0) : 0;
}

/* llama.cpp's clean_up_tokenization_spaces passes, in place. */
static size_t clean_spaces(char *text, size_t total)
{
    size_t t1 = total, i;
    total = total ? 1 : 0;
    for (i = 1; i < t1; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
            total--;
        text[total++] = x;
    }
    size_t t2 = total;
    total = total ? 1 : 0;
    for (i = 1; i < t2; i++) {
        char x = text[i];
        if (x == '\'' && i + 1 < t2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
            total--;
            text[++i] = '\0';
        }
        text[total++] = x;
    }
    size_t t3 = total;
    total = total ? 1 : 0;
    for (i = 1; i < t3; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < t3) {
            char x1 = text[i + 1];
            if (x1 == 's' || x1 == 'm')
                total--;
            else if (i + 2 < t3 && ((x1 == 'r' && text[i + 2] == 'e') || (x1 == 'v' && text[i + 2] == 'e')))
                total--;
        }
        text[total++] = x;
    }
    return total;
}

tok_status tok_detokenize(const tok_vocab *v, const tok_id *ids, size_t n, unsigned flags,
                          char **out, size_t *len)
{
    if (!v || !out || (!ids && n))
        return TOK_EARG;
    bool remove_space = v->add_space_prefix;
    if ((flags & TOK_DETOK_REMOVE_SPECIAL) && v->add_bos && n && ids[0] == v->bos) {
        remove_space = false;
        ids++, n--;
    }
    if ((flags & TOK_DETOK_REMOVE_SPECIAL) && v->add_eos && n && ids[n - 1] == v->eos)
        n--;
    bool special = flags & TOK_DETOK_SPECIAL;
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += piece(v, ids[i], NULL, 0, special, i == 0 && remove_space);
    char *s = malloc(total + 1);
    if (!s)
        return TOK_ENOMEM;
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        o += piece(v, ids[i], s + o, total - o, special, i == 0 && remove_space);
    if ((flags & TOK_DETOK_CLEAN) && v->clean_spaces)
        o = clean_spaces(s, o);
    s[o] = 0;
    *out = s;
    if (len)
        *len = o;
    return TOK_OK;
}

/* ---------------- streaming ---------------- */

struct tok_stream {
    const tok_vocab *v;
    bool special;
    char held[8];
    size_t nheld;
    char *out;
    size_t cap;
};

tok_stream *tok_stream_new(const tok_vocab *v, unsigned flags)
{
    tok_stream *s = calloc(1, sizeof *s);
    if (s) {
        s->v = v;
        s->special = flags & TOK_DETOK_SPECIAL;
    }
    return s;
}

void tok_stream_free(tok_stream *s)
{
    if (s)
        free(s->out);
    free(s);
}

/* Length of the well-formed UTF-8 sequence at p[0..n): > 0 complete; 0 a
 * valid but incomplete prefix; -1 malformed (the first byte must go). */
static int utf8_seq(const uint8_t *p, size_t n)
{
    uint8_t c = p[0];
    if (c < 0x80)
        return 1;
    int need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return -1;
    }
    for (int k = 1; k < need; k++) {
        if ((size_t)k >= n)
            return 0;
        uint8_t b = p[k];
        if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            return -1;
    }
    return need;
}

const char *tok_stream_push(tok_stream *s, tok_id id, size_t *len)
{
    size_t pn = piece(s->v, id, NULL, 0, s->special, 0);
    size_t need = s->nheld + pn;
    /* worst case: every byte becomes U+FFFD (3 bytes) */
    if (3 * need + 1 > s->cap) {
        char *o = realloc(s->out, 3 * need + 16);
        if (!o)
            return NULL;
        s->out = o;
        s->cap = 3 * need + 16;
    }
    uint8_t *in = malloc(need ? need : 1);
    if (!in)
        return NULL;
    memcpy(in, s->held, s->nheld);
    piece(s->v, id, (char *)in + s->nheld, pn, s->special, 0);
    size_t o = 0, i = 0;
    s->nheld = 0;
    while (i < need) {
        int k = utf8_seq(in + i, need - i);
        if (k > 0) {
            memcpy(s->out + o, in + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else if (k == 0) {
            s->nheld = need - i;   /* at most 3 bytes */
            memcpy(s->held, in + i, s->nheld);
            break;
        } else {
            memcpy(s->out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    free(in);
    *len = o;
    return s->out;
}

const char *tok_stream_flush(tok_stream *s, size_t *len)
{
    size_t o = 0;
    if (s->nheld) {
        if (s->cap < 4) {
            char *n = realloc(s->out, 16);
            if (!n)
                return NULL;
            s->out = n;
            s->cap = 16;
        }
        memcpy(s->out, "\xef\xbf\xbd", 3);
        o = 3;
        s->nheld = 0;
    }
    *len = o;
    return s->out ? s->out : "";
}

