/* harmony: a gpt-oss reply split into its channels (see harmony.h). */
#include "harmony.h"

#include <stdlib.h>
#include <string.h>

#define MARK_MESSAGE "<|message|>"
#define MARK_CHANNEL "<|channel|>"

/* A growing string that starts as "" (so that it is never NULL). */
typedef struct {
    char *p;
    size_t n, cap;
} hbuf;

static bool hb_add(hbuf *b, const char *s, size_t n, bool sep)
{
    size_t extra = n + (sep && b->n ? 1 : 0);
    if (b->cap - b->n < extra + 1) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < extra + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return false;
        b->p = p;
        b->cap = cap;
    }
    if (sep && b->n)
        b->p[b->n++] = '\n';
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

/* The first of the body terminators in s[0..n), or n: the ends of a
 * message, and the markers of a next one (a message the model did not end),
 * so that no body holds channel markup. */
static size_t body_end(const char *s, size_t n)
{
    static const char *const ENDS[] = {"<|end|>", "<|return|>", "<|call|>", "<|start|>", MARK_CHANNEL, MARK_MESSAGE};
    size_t e = n;
    for (size_t i = 0; i < sizeof ENDS / sizeof ENDS[0]; i++) {
        const char *p = memmem(s, e, ENDS[i], strlen(ENDS[i]));
        if (p)
            e = (size_t)(p - s);
    }
    return e;
}

/* Whether the header h[0..n) names the analysis channel. */
static bool header_is_analysis(const char *h, size_t n)
{
    const char *c = memmem(h, n, MARK_CHANNEL, strlen(MARK_CHANNEL));
    if (!c)
        return false;
    c += strlen(MARK_CHANNEL);
    size_t rest = n - (size_t)(c - h), w = 0;
    while (w < rest && c[w] != ' ' && c[w] != '<')
        w++;
    return w == 8 && !memcmp(c, "analysis", 8);
}

size_t harmony_spans(const char *text, size_t len, harmony_span *out, size_t cap)
{
    const size_t ml = strlen(MARK_MESSAGE);
    size_t n = 0, at = 0; /* where the next header starts */
    const char *m = text ? memmem(text, len, MARK_MESSAGE, ml) : NULL;
    while (m) {
        size_t mo = (size_t)(m - text), bs = mo + ml;
        size_t be = bs + body_end(text + bs, len - bs);
        if (n < cap)
            out[n] = (harmony_span){bs, be - bs, header_is_analysis(text + at, mo - at)};
        n++;
        at = be;
        m = memmem(text + at, len - at, MARK_MESSAGE, ml);
    }
    return n;
}

int harmony_parse(const char *text, size_t len, harmony_reply *out)
{
    memset(out, 0, sizeof *out);
    hbuf fin = {0}, ana = {0};
    bool ok = hb_add(&fin, "", 0, false) && hb_add(&ana, "", 0, false);
    size_t n = harmony_spans(text, len, NULL, 0);
    if (!n) {
        ok = ok && hb_add(&fin, text, text ? len : 0, false);
    } else {
        out->channels = true;
        harmony_span *sp = malloc(n * sizeof *sp);
        ok = ok && sp;
        if (ok)
            harmony_spans(text, len, sp, n);
        for (size_t i = 0; ok && i < n; i++)
            ok = hb_add(sp[i].analysis ? &ana : &fin, text + sp[i].off, sp[i].len, true);
        free(sp);
    }
    if (!ok) {
        free(fin.p);
        free(ana.p);
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->final = fin.p;
    out->final_len = fin.n;
    out->analysis = ana.p;
    out->analysis_len = ana.n;
    return 0;
}

void harmony_reply_free(harmony_reply *r)
{
    if (!r)
        return;
    free(r->final);
    free(r->analysis);
    memset(r, 0, sizeof *r);
}
