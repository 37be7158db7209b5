/* SentencePiece BPE (tokenizer.ggml.model = "llama"), as llama.cpp's
 * llm_tokenizer_spm_session: start from UTF-8 characters, repeatedly merge
 * the adjacent pair whose concatenation is the highest-scoring token (the
 * leftmost among equal scores), then emit each final piece as its token or,
 * failing that, as byte tokens <0xXX>. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "tokenizer_unicode.h"

typedef struct {
    uint32_t start, n;      /* bytes of the text; n == 0: merged away */
    int32_t prev, next;
} sym;

typedef struct {
    float score;
    int32_t left, right;
    uint32_t size;
} bigram;

typedef struct {
    sym *syms;
    bigram *heap;
    size_t nheap;
} spm_work;

/* max-heap: higher score first, then smaller left */
#define BHEAP_T bigram
#define BHEAP_BEFORE(a, b) ((a)->score > (b)->score || ((a)->score == (b)->score && (a)->left < (b)->left))
#define BHEAP_NAME merges
#include "bheap.h"

static void try_pair(const tok_vocab *v, spm_work *w, const char *text, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return;
    const sym *L = &w->syms[l], *R = &w->syms[r];
    uint32_t size = L->n + R->n;   /* R follows L in the text */
    const char *s = text + L->start;
    tok_id id = tok__lookup(v, s, size, tok__hash(s, size));
    if (id == TOK_NULL || id >= (tok_id)v->n_vocab)
        return;
    bigram g = {v->score[id], l, r, size};
    merges_push(w->heap, &w->nheap, g);
}

static bool is_space(const char *text, const sym *s)
{
    return s->n == 3 && !memcmp(text + s->start, "\xe2\x96\x81", 3);
}

static void merge_all(const tok_vocab *v, spm_work *w, const char *text)
{
    while (w->nheap) {
        bigram g = merges_pop(w->heap, &w->nheap);
        sym *L = &w->syms[g.left], *R = &w->syms[g.right];
        if (L->n == 0 || R->n == 0 || L->n + R->n != g.size)
            continue;
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0)
            w->syms[R->next].prev = g.left;
        try_pair(v, w, text, L->prev, g.left);
        try_pair(v, w, text, g.left, L->next);
    }
}

bool tok__spm_tokenize(const tok_vocab *v, const char *text, size_t len, tok__ids *out)
{
    if (len == 0)
        return true;
    spm_work w = {malloc(len * sizeof(sym)), malloc(3 * len * sizeof(bigram)), 0};
    if (!w.syms || !w.heap) {
        free(w.syms);
        free(w.heap);
        return false;
    }
    int32_t ns = 0;
    for (size_t off = 0; off < len;) {
        size_t n = tok__utf8_len((uint8_t)text[off]);
        if (n > len - off)
            n = len - off;
        w.syms[ns].start = (uint32_t)off;
        w.syms[ns].n = (uint32_t)n;
        w.syms[ns].prev = ns - 1;
        off += n;
        w.syms[ns].next = off == len ? -1 : ns + 1;
        ns++;
    }
    /* When no token has U+2581 after another character, no merge can join a
     * character to a following U+2581: each word (a U+2581 run and what
     * follows it) then merges on its own, with the same result and small heaps. */
    int32_t seg = 0;
    while (seg < ns) {
        int32_t end = seg + 1;
        if (v->spm_split)
            while (end < ns && !(is_space(text, &w.syms[end]) && !is_space(text, &w.syms[end - 1])))
                end++;
        else
            end = ns;
        for (int32_t i = seg + 1; i < end; i++)
            try_pair(v, &w, text, i - 1, i);
        merge_all(v, &w, text);
        seg = end;
    }
    bool ok = true;
    for (int32_t i = 0; i >= 0 && ok; i = w.syms[i].next) {
        const sym *s = &w.syms[i];
        const char *p = text + s->start;
        tok_id id = tok__lookup(v, p, s->n, tok__hash(p, s->n));
        if (id != TOK_NULL && id < (tok_id)v->n_vocab) {
            ok = tok__ids_push(out, id);
            continue;
        }
        for (uint32_t k = 0; k < s->n && ok; k++) {
            tok_id b = v->byte_tok[(uint8_t)p[k]];
            if (b == TOK_NULL)
                b = v->unk;
            if (b != TOK_NULL)
                ok = tok__ids_push(out, b);
        }
    }
    free(w.syms);
    free(w.heap);
    return ok;
}
