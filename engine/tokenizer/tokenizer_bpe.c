/* Byte-level BPE (tokenizer.ggml.model = "gpt2"): pre-tokenize into words,
 * map each byte to its GPT-2 byte-level character, then apply merges in rank
 * order (lowest rank first, leftmost first among equal ranks), as llama.cpp's
 * llm_tokenizer_bpe_session does. Symbols carry ids, so merging never builds
 * strings: a merge (left id, right id) maps to its rank and result id. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "tokenizer_unicode.h"

/* GPT-2's bytes_to_unicode: printable bytes stand for themselves, the
 * others for 256, 257, ... in byte order. */
static uint32_t byte_map[256];
static pthread_once_t byte_map_once = PTHREAD_ONCE_INIT;

static void byte_map_init(void)
{
    uint32_t n = 0;
    for (int c = 0; c < 256; c++) {
        bool keep = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
        byte_map[c] = keep ? (uint32_t)c : 256 + n++;
    }
}

static inline uint32_t byte_cp(uint8_t b)
{
    return byte_map[b];   /* initialised by tok__bpe_load before any use */
}

/* Inverse of byte_cp: -1 when cp is no byte-level character. */
static int cp_byte(uint32_t cp)
{
    if (cp < 0x21)
        return -1;
    if (cp <= 0x7E || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp < 256 || cp > 256 + 67)
        return -1;
    uint32_t n = 0;
    for (int c = 0; c < 256; c++) {
        bool keep = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
        if (!keep && 256 + n++ == cp)
            return c;
    }
    return -1;
}

static uint64_t mslot(const tok_vocab *v, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (h >> 20) & v->mmask;
}

tok_status tok__bpe_load(tok_vocab *v, const gguf_file *f, tok_error *err)
{
    pthread_once(&byte_map_once, byte_map_init);
    for (int b = 0; b < 256; b++) {
        uint8_t enc[4];
        size_t n = tok__utf8_put(byte_cp((uint8_t)b), enc);
        tok_id id = tok__intern(v, (const char *)enc, n);
        char one = (char)b;
        if (id == TOK_NULL)
            goto nomem;
        v->byte_sym[b] = (uint32_t)id;
        v->one_byte[b] = tok__lookup(v, &one, 1, tok__hash(&one, 1));
        if (v->one_byte[b] >= (tok_id)v->n_vocab)
            v->one_byte[b] = TOK_NULL;
    }

    const gguf_value *arr;
    if (gguf_get_arr(f, "tokenizer.ggml.merges", &arr) != GGUF_OK || arr->arr_type != GGUF_VT_STRING) {
        err->code = TOK_EFORMAT;
        snprintf(err->msg, sizeof err->msg, "tokenizer.ggml.merges: missing or not a string array");
        return TOK_EFORMAT;
    }
    uint64_t n = arr->arr_len;
    if (n > (1u << 26)) {
        err->code = TOK_EFORMAT;
        snprintf(err->msg, sizeof err->msg, "tokenizer.ggml.merges: %llu entries is too many",
                 (unsigned long long)n);
        return TOK_EFORMAT;
    }
    uint64_t cap = 1024;
    while (cap < 2 * n)
        cap *= 2;
    v->mkey = malloc(cap * sizeof *v->mkey);
    v->mrank = malloc(cap * sizeof *v->mrank);
    v->mres = malloc(cap * sizeof *v->mres);
    if (!v->mkey || !v->mrank || !v->mres)
        goto nomem;
    memset(v->mkey, 0xFF, cap * sizeof *v->mkey);
    v->mmask = cap - 1;
    char *cat = NULL;
    size_t cat_cap = 0;
    for (uint64_t i = 0; i < n; i++) {
        gguf_str s;
        if (gguf_arr_str(arr, i, &s) != GGUF_OK) {
            free(cat);
            err->code = TOK_EFORMAT;
            snprintf(err->msg, sizeof err->msg, "tokenizer.ggml.merges[%llu]: unreadable",
                     (unsigned long long)i);
            return TOK_EFORMAT;
        }
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        if (!sp)
            continue;   /* llama.cpp keeps it as ("", ""), which never matches */
        size_t ln = (size_t)(sp - s.ptr), rn = s.len - ln - 1;
        if (ln + rn > cat_cap) {
            char *c = realloc(cat, ln + rn);
            if (!c) {
                free(cat);
                goto nomem;
            }
            cat = c;
            cat_cap = ln + rn;
        }
        memcpy(cat, s.ptr, ln);
        memcpy(cat + ln, sp + 1, rn);
        tok_id l = tok__intern(v, s.ptr, ln), r = tok__intern(v, sp + 1, rn);
        tok_id res = tok__intern(v, cat, ln + rn);
        if (l == TOK_NULL || r == TOK_NULL || res == TOK_NULL) {
            free(cat);
            goto nomem;
        }
        uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
        uint64_t k = mslot(v, key);
        while (v->mkey[k] != UINT64_MAX && v->mkey[k] != key)
            k = (k + 1) & v->mmask;
        if (v->mkey[k] == UINT64_MAX) {   /* the first (lowest) rank wins */
            v->mkey[k] = key;
            v->mrank[k] = (int32_t)i;
            v->mres[k] = (uint32_t)res;
        }
    }
    free(cat);
    return TOK_OK;
nomem:
    err->code = TOK_ENOMEM;
    snprintf(err->msg, sizeof err->msg, "out of memory loading BPE merges");
    return TOK_ENOMEM;
}

static bool merge_find(const tok_vocab *v, uint32_t l, uint32_t r, int32_t *rank, uint32_t *res)
{
    uint64_t key = (uint64_t)l << 32 | r;
    for (uint64_t k = mslot(v, key);; k = (k + 1) & v->mmask) {
        if (v->mkey[k] == key) {
            *rank = v->mrank[k];
            *res = v->mres[k];
            return true;
        }
        if (v->mkey[k] == UINT64_MAX)
            return false;
    }
}

typedef struct {
    uint32_t id;
    int32_t prev, next;
    uint32_t start, n;   /* raw bytes of the word */
} sym;

typedef struct {
    int32_t rank, left, right;
    uint32_t lid, rid, res;
} bigram;

typedef struct {
    uint32_t *cps;
    uint16_t *fl;
    size_t cap_cp;
    tok__sizes pieces, scratch;
    uint32_t *subject;
    size_t subject_cap;
    uint8_t *word;
    size_t cap_word;
    sym *syms;
    bigram *heap;
    size_t cap_sym, nheap;
} bpe_work;

#define BHEAP_T bigram
#define BHEAP_BEFORE(a, b) ((a)->rank < (b)->rank || ((a)->rank == (b)->rank && (a)->left < (b)->left))
#define BHEAP_NAME merges
#include "bheap.h"

static void try_pair(const tok_vocab *v, bpe_work *w, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return;
    bigram g;
    if (!merge_find(v, w->syms[l].id, w->syms[r].id, &g.rank, &g.res))
        return;
    g.left = l;
    g.right = r;
    g.lid = w->syms[l].id;
    g.rid = w->syms[r].id;
    merges_push(w->heap, &w->nheap, g);
}

/* Merge one word (raw bytes w->word[0..n)) and append its ids. */
static bool bpe_word(const tok_vocab *v, bpe_work *w, size_t n, tok__ids *out)
{
    if (v->ignore_merges) {
        /* the byte-level text of the whole word, looked up as one token */
        uint8_t stackbuf[256];
        uint8_t *enc = n * 2 <= sizeof stackbuf ? stackbuf : malloc(n * 2);
        if (!enc)
            return false;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            m += tok__utf8_put(byte_cp(w->word[i]), enc + m);
        tok_id id = tok__lookup(v, enc, m, tok__hash(enc, m));
        if (enc != stackbuf)
            free(enc);
        if (id != TOK_NULL && id < (tok_id)v->n_vocab)
            return tok__ids_push(out, id);
    }
    if (n == 1 && v->byte_sym[w->word[0]] < v->n_vocab)
        return tok__ids_push(out, (tok_id)v->byte_sym[w->word[0]]);
    if (n > w->cap_sym) {
        size_t cap = n < 64 ? 64 : n;
        sym *s = realloc(w->syms, cap * sizeof *s);
        if (!s)
            return false;
        w->syms = s;
        bigram *h = realloc(w->heap, 3 * cap * sizeof *h);
        if (!h)
            return false;
        w->heap = h;
        w->cap_sym = cap;
    }
    for (size_t i = 0; i < n; i++) {
        w->syms[i].id = v->byte_sym[w->word[i]];
        w->syms[i].prev = (int32_t)i - 1;
        w->syms[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        w->syms[i].start = (uint32_t)i;
        w->syms[i].n = 1;
    }
    w->nheap = 0;
    for (size_t i = 1; i < n; i++)
        try_pair(v, w, (int32_t)i - 1, (int32_t)i);
    while (w->nheap) {
        bigram g = merges_pop(w->heap, &w->nheap);
        sym *L = &w->syms[g.left], *R = &w->syms[g.right];
        if (L->n == 0 || R->n == 0 || L->id != g.lid || R->id != g.rid || L->next != g.right)
            continue;   /* outdated */
        L->id = g.res;
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0)
            w->syms[R->next].prev = g.left;
        /* heap room: at most 2 pushes per merge plus the initial n - 1 */
        try_pair(v, w, L->prev, g.left);
        try_pair(v, w, g.left, L->next);
    }
    for (int32_t i = 0; i >= 0; i = w->syms[i].next) {
        const sym *s = &w->syms[i];
        if (s->id < v->n_vocab) {
            if (!tok__ids_push(out, (tok_id)s->id))
                return false;
            continue;
        }
        /* not a token: each byte of its byte-level text that is a one-byte token */
        for (uint32_t k = 0; k < s->n; k++) {
            uint8_t enc[4];
            size_t m = tok__utf8_put(byte_cp(w->word[s->start + k]), enc);
            for (size_t j = 0; j < m; j++)
                if (v->one_byte[enc[j]] != TOK_NULL && !tok__ids_push(out, v->one_byte[enc[j]]))
                    return false;
        }
    }
    return true;
}

bool tok__bpe_tokenize(const tok_vocab *v, const char *text, size_t len, tok__ids *out)
{
    bpe_work w;
    memset(&w, 0, sizeof w);
    bool ok = false;
    w.cps = malloc((len + 1) * sizeof *w.cps);
    w.fl = malloc((len + 1) * sizeof *w.fl);
    if (!w.cps || !w.fl)
        goto done;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = tok__utf8_next((const uint8_t *)text, len, &i);
        w.cps[n] = cp;
        w.fl[n] = (uint16_t)tok__uflags(cp);
        n++;
    }
    if (!tok__pre_split(v->pre, w.cps, w.fl, n, &w.pieces, &w.scratch, &w.subject, &w.subject_cap))
        goto done;
    size_t at = 0;
    for (size_t k = 0; k < w.pieces.n; k++) {
        size_t pl = w.pieces.v[k];
        if (pl * 4 > w.cap_word) {
            uint8_t *b = realloc(w.word, pl * 4);
            if (!b)
                goto done;
            w.word = b;
            w.cap_word = pl * 4;
        }
        size_t m = 0;
        for (size_t i = 0; i < pl; i++)
            m += tok__utf8_put(w.cps[at + i], w.word + m);
        at += pl;
        if (!bpe_word(v, &w, m, out))
            goto done;
    }
    ok = true;
done:
    free(w.cps);
    free(w.fl);
    tok__sizes_free(&w.pieces);
    tok__sizes_free(&w.scratch);
    free(w.subject);
    free(w.word);
    free(w.syms);
    free(w.heap);
    return ok;
}

size_t tok_bpe_piece_bytes(const char *text, size_t len, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        int b = cp_byte(tok__utf8_next((const uint8_t *)text, len, &i));
        if (b < 0)
            return SIZE_MAX;
        if (o < cap)
            buf[o] = (char)b;
        o++;
    }
    return o;
}

size_t tok__bpe_decode(const char *text, size_t len, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t i0 = i;
        uint32_t cp = tok__utf8_next((const uint8_t *)text, len, &i);
        int b = cp_byte(cp);
        if (b >= 0) {
            if (o < cap)
                buf[o] = (char)b;
            o++;
            continue;
        }
        /* as llama.cpp: "[UNK_BYTE_0x" + the character's bytes in hex + the token text + "]" */
        char tmp[32];
        int k = snprintf(tmp, sizeof tmp, "[UNK_BYTE_0x");
        for (size_t j = i0; j < i && k < 28; j++)
            k += snprintf(tmp + k, sizeof tmp - (size_t)k, "%02x", (uint8_t)text[j]);
        for (int j = 0; j < k; j++, o++)
            if (o < cap)
                buf[o] = tmp[j];
        for (size_t j = 0; j < len; j++, o++)
            if (o < cap)
                buf[o] = text[j];
        if (o < cap)
            buf[o] = ']';
        o++;
    }
    return o;
}
