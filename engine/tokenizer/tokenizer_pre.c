/* Pre-tokenizers: the word-splitting regular expressions of byte-level BPE
 * vocabularies, keyed by `tokenizer.ggml.pre`. The expressions are the ones
 * llama.cpp (src/llama-vocab.cpp) uses, so that words split identically;
 * the GPT-2 and Llama-3 expressions run on hand-written matchers that follow
 * llama.cpp's own (unicode.cpp), the others on tokenizer_regex. */
#include "tokenizer_pre.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_regex.h"
#include "tokenizer_unicode.h"

#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RX_LLAMA3                                                                            \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" \
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN2                                                                             \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" \
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN35                                                                   \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"                    \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|" \
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_SEED_CODER                                                                        \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" \
    "\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_BAILINGMOE                                                                    \
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?" \
    "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
/* Tekken (Mistral NeMo / Small 3 / Ministral) and GPT-4o (o200k: Phi-4-mini,
 * Llama 4): llama.cpp rewrites the upper/lower-case letter classes of the
 * original patterns as lookaheads, which the collapsed subject turns into
 * "ASCII upper or any non-ASCII letter" / "ASCII lower or any non-ASCII letter". */
#define RX_CASED_WORD(tail)                                                            \
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+" tail "|"       \
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" tail
#define RX_CONTRACTION_OPT "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
#define RX_TEKKEN                                                                        \
    RX_CASED_WORD("") "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_GPT4O                                                                                 \
    RX_CASED_WORD(RX_CONTRACTION_OPT) "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|" \
    "\\s+(?!\\S)|\\s+"
#define RX_CJK "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+"
#define RX_PORO " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"

enum { F_IGNORE_MERGES = 1, F_ADD_BOS = 2, F_NO_CLEAN = 4, F_BOS_NULL = 8 };

typedef struct {
    const char *names;        /* space-separated */
    unsigned flags;
    const char *rx[7];        /* NULL-terminated */
} pre_def;

static const pre_def PRE_DEFS[] = {
    /* first entry: GPT-2, also the fallback for unknown names */
    {"gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert "
     "exaone4 mpt olmo jais jina-v1-en jina-v2-code roberta-bpe gpt-neox",
     0, {RX_GPT2}},
    {"trillion granite-docling", F_NO_CLEAN, {RX_GPT2}},
    {"default", 0,
     {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {"llama-bpe llama3 llama-v3 falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano",
     F_IGNORE_MERGES | F_ADD_BOS, {RX_LLAMA3}},
    {"dbrx smaug-bpe", 0, {RX_LLAMA3}},
    {"chatglm-bpe glm4", F_BOS_NULL, {RX_LLAMA3}},
    {"qwen2 deepseek-r1-qwen kormo f2llmv2 hunyuan solar-open grok-2", F_NO_CLEAN, {RX_QWEN2}},
    {"stablelm2 megrez", 0, {RX_QWEN2}},
    {"qwen35", F_NO_CLEAN, {RX_QWEN35}},
    {"deepseek-llm", F_NO_CLEAN,
     {"[\r\n]",
      "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf"
      "\xc7\x84-\xca\x93\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd"
      "\xcd\xbf\xce\x86\xce\x88-\xce\x8a\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-"
      "\xd2\x81\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85\xe1\x8e\xa0-\xe1\x8f"
      "\xb5\xe1\x8f\xb8-\xe1\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf\xe1\xb4"
      "\x80-\xe1\xb4\xab\xe1\xb5\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-\xe1\xbc"
      "\x95\xe1\xbc\x98-\xe1\xbc\x9d\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d\xe1\xbd"
      "\x90-\xe1\xbd\x97\xe1\xbd\x99\xe1\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd\xe1\xbe"
      "\x80-\xe1\xbe\xb4\xe1\xbe\xb6-\xe1\xbe\xbc\xe1\xbe\xbe\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf"
      "\x86-\xe1\xbf\x8c\xe1\xbf\x90-\xe1\xbf\x93\xe1\xbf\x96-\xe1\xbf\x9b\xe1\xbf\xa0-\xe1\xbf"
      "\xac\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87\xe2\x84"
      "\x8a-\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d\xe2\x84\xa4\xe2\x84\xa6\xe2\x84"
      "\xa8\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-\xe2\x84"
      "\xbf\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-\xe2\xb1"
      "\xbb\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99"
      "\x80-\xea\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf\xea\x9d\xb1-\xea\x9e"
      "\x87\xea\x9e\x8b-\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86\xef\xac"
      "\x93-\xef\xac\x97\xef\xbc\xa1-\xef\xbc\xba\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0"
      "\x90\x91\x8f\xf0\x90\x92\xb0-\xf0\x90\x93\x93\xf0\x90\x93\x98-\xf0\x90\x93\xbb\xf0\x90"
      "\xb2\x80-\xf0\x90\xb2\xb2\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2\xf0\x91\xa2\xa0-\xf0\x91\xa3"
      "\x9f\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+",
      "\\s?[!-/:-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f"
      "\xe3\x80\x80-\xe3\x80\x82]+",
      "\\s+$", RX_CJK, "\\p{N}+"}},
    {"deepseek-coder", F_NO_CLEAN,
     {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RX_CJK, "\\p{N}"}},
    {"deepseek-v3 hunyuan-dense joyai-llm hy_v4", F_NO_CLEAN,
     {"\\p{N}{1,3}",
      "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
      "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}},
    {"falcon", 0, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]"}},
    {"starcoder refact codeshell exaone minerva-7b mellum2", 0, {"\\p{N}", RX_GPT2}},
    {"command-r smollm", F_NO_CLEAN, {"\\p{N}", RX_GPT2}},
    {"poro-chat", F_NO_CLEAN, {RX_PORO}},
    {"bloom gpt3-finnish", 0, {RX_PORO}},
    {"viking", F_NO_CLEAN, {RX_PORO, "\\p{N}"}},
    {"seed-coder", F_NO_CLEAN, {RX_SEED_CODER}},
    {"bailingmoe bailingmoe2 llada-moe", F_NO_CLEAN, {RX_BAILINGMOE}},
    {"tekken", F_NO_CLEAN | F_IGNORE_MERGES | F_ADD_BOS, {RX_TEKKEN}},
    {"gpt-4o llama4 kanana2 talkie minimax-m2", F_NO_CLEAN, {RX_GPT4O}},
};
#define N_DEFS (sizeof PRE_DEFS / sizeof PRE_DEFS[0])

const char *const tok__pre_names[] = {
    "default", "gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "mpt",
    "starcoder", "refact", "command-r", "smollm", "gpt-neox", "qwen35", "deepseek-v3", "dbrx",
    "stablelm2", "olmo", "poro-chat", "viking", "chatglm-bpe", "seed-coder", "bailingmoe", "tekken",
    "gpt-4o", "smaug-bpe", NULL,
};

enum { STEP_GPT2, STEP_LLAMA3, STEP_RX };

typedef struct {
    int kind;
    tok__rx *rx;
} pre_step;

struct tok__pre {
    pre_step steps[7];
    int nsteps;
    bool need_collapsed, need_wide;
};

static bool name_in(const char *names, const char *name, size_t len, const char **first)
{
    const char *p = names;
    *first = NULL;
    while (*p) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == len && !memcmp(p, name, len))
            return true;
        p += n;
        while (*p == ' ')
            p++;
    }
    return false;
}

tok__pre *tok__pre_new(const char *name, size_t len, tok__pre_info *info, char *err, size_t errcap)
{
    const pre_def *def = NULL;
    const char *dummy;
    if (!name || !len) {
        name = "default";
        len = 7;
    }
    for (size_t i = 0; i < N_DEFS && !def; i++)
        if (name_in(PRE_DEFS[i].names, name, len, &dummy))
            def = &PRE_DEFS[i];
    memset(info, 0, sizeof *info);
    info->known = def != NULL;
    if (!def)
        def = &PRE_DEFS[0];
    info->ignore_merges = def->flags & F_IGNORE_MERGES;
    info->add_bos = def->flags & F_ADD_BOS;
    info->clean_spaces = !(def->flags & F_NO_CLEAN);
    info->bos_null = def->flags & F_BOS_NULL;

    tok__pre *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    for (int i = 0; i < 7 && def->rx[i]; i++) {
        pre_step *s = &p->steps[p->nsteps++];
        if (!strcmp(def->rx[i], RX_GPT2)) {
            s->kind = STEP_GPT2;
        } else if (!strcmp(def->rx[i], RX_LLAMA3)) {
            s->kind = STEP_LLAMA3;
        } else {
            s->kind = STEP_RX;
            s->rx = tok__rx_compile(def->rx[i], err, errcap);
            if (!s->rx) {
                tok__pre_free(p);
                return NULL;
            }
            if (tok__rx_collapsed(s->rx))
                p->need_collapsed = true;
            else
                p->need_wide = true;
        }
    }
    return p;
}

void tok__pre_free(tok__pre *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nsteps; i++)
        tok__rx_free(p->steps[i].rx);
    free(p);
}

void tok__sizes_free(tok__sizes *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static bool push(tok__sizes *s, size_t x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        size_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return false;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return true;
}

/* State of a hand-written matcher over one piece [ini, end). */
typedef struct {
    const uint32_t *cps;
    const uint16_t *fl;
    size_t ini, end, prev;
    tok__sizes *out;
    bool ok;
} hw;

#define OUT_OF_RANGE 0xFFFFFFFFu

static inline uint32_t hw_cpt(const hw *h, size_t pos)
{
    return pos >= h->ini && pos < h->end ? h->cps[pos] : OUT_OF_RANGE;
}

static inline uint32_t hw_flags(const hw *h, size_t pos)
{
    return pos >= h->ini && pos < h->end ? h->fl[pos] : 0;
}

static size_t hw_add(hw *h, size_t end)
{
    size_t len = end - h->prev;
    if (len > 0 && !push(h->out, len))
        h->ok = false;
    h->prev = end;
    return len;
}

#define IS_WS(f) ((f) & TOK_UC_WS)
#define IS_L(f) ((f) & TOK_UC_L)
#define IS_N(f) ((f) & TOK_UC_N)

/* 's|'t|'re|'ve|'m|'ll|'d at *pos (case-insensitive when ci): adds the
 * piece, moves *pos past it and returns true; false when none is there. */
static bool hw_contraction(hw *h, size_t *pos, bool ci)
{
    size_t p = *pos;
    if (hw_cpt(h, p) != '\'' || p + 1 >= h->end)
        return false;
    uint32_t c1 = hw_cpt(h, p + 1);
    if (ci)
        c1 = tok__ulowercase(c1);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        *pos += hw_add(h, p + 2);
        return true;
    }
    if (p + 2 < h->end) {
        uint32_t c2 = hw_cpt(h, p + 2);
        if (ci)
            c2 = tok__ulowercase(c2);
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
            *pos += hw_add(h, p + 3);
            return true;
        }
    }
    return false;
}

/* The tail of both patterns at pos, where nws whitespace characters start:
 * \s+(?!\S) (all but the last, when a character follows), \s+, or else one
 * character of its own. Adds the piece; returns the position after it. */
static size_t hw_spaces(hw *h, size_t pos, size_t nws)
{
    if (nws > 1 && hw_cpt(h, pos + nws) != OUT_OF_RANGE)
        pos += nws - 1;
    else if (nws > 0)
        pos += nws;
    else
        pos++;
    hw_add(h, pos);
    return pos;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static void split_gpt2(hw *h)
{
    for (size_t pos = h->ini; pos < h->end && h->ok;) {
        uint32_t cpt = hw_cpt(h, pos), f = hw_flags(h, pos);
        if (hw_contraction(h, &pos, false))
            continue;
        uint32_t f2 = cpt == ' ' ? hw_flags(h, pos + 1) : f;
        if (IS_L(f2)) {
            pos += cpt == ' ';
            while (IS_L(f2))
                f2 = hw_flags(h, ++pos);
            hw_add(h, pos);
            continue;
        }
        if (IS_N(f2)) {
            pos += cpt == ' ';
            while (IS_N(f2))
                f2 = hw_flags(h, ++pos);
            hw_add(h, pos);
            continue;
        }
        if (!(f2 & (TOK_UC_WS | TOK_UC_L | TOK_UC_N)) && f2) {
            pos += cpt == ' ';
            while (!(f2 & (TOK_UC_WS | TOK_UC_L | TOK_UC_N)) && f2)
                f2 = hw_flags(h, ++pos);
            hw_add(h, pos);
            continue;
        }
        size_t nws = 0;
        while (IS_WS(hw_flags(h, pos + nws)))
            nws++;
        pos = hw_spaces(h, pos, nws);
    }
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ */
static void split_llama3(hw *h)
{
    for (size_t pos = h->ini; pos < h->end && h->ok;) {
        uint32_t cpt = hw_cpt(h, pos), f = hw_flags(h, pos);
        if (hw_contraction(h, &pos, true))
            continue;
        if (!(cpt == '\r' || cpt == '\n' || IS_N(f))) {
            if (IS_L(f) || IS_L(hw_flags(h, pos + 1))) {
                pos++;
                while (IS_L(hw_flags(h, pos)))
                    pos++;
                hw_add(h, pos);
                continue;
            }
        }
        if (IS_N(f)) {
            size_t ini = pos;
            while (IS_N(hw_flags(h, pos))) {
                if (++pos - ini >= 3) {
                    hw_add(h, pos);
                    ini = pos;
                }
            }
            hw_add(h, pos);
            continue;
        }
        uint32_t f2 = cpt == ' ' ? hw_flags(h, pos + 1) : f;
        if (!(f2 & (TOK_UC_WS | TOK_UC_L | TOK_UC_N)) && f) {
            pos += cpt == ' ';
            while (!(f2 & (TOK_UC_WS | TOK_UC_L | TOK_UC_N)) && f2)
                f2 = hw_flags(h, ++pos);
            uint32_t c2 = hw_cpt(h, pos);
            while (c2 == '\r' || c2 == '\n')
                c2 = hw_cpt(h, ++pos);
            hw_add(h, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (IS_WS(hw_flags(h, pos + nws))) {
            uint32_t c2 = hw_cpt(h, pos + nws);
            if (c2 == '\r' || c2 == '\n')
                last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) {
            pos = last_rn;
            hw_add(h, pos);
            continue;
        }
        pos = hw_spaces(h, pos, nws);
    }
}

bool tok__pre_split(const tok__pre *p, const uint32_t *cps, const uint16_t *flags, size_t n,
                    tok__sizes *out, tok__sizes *scratch, uint32_t **subject, size_t *subject_cap)
{
    out->n = 0;
    if (n == 0)
        return true;
    if (!push(out, n))
        return false;
    for (int si = 0; si < p->nsteps; si++) {
        const pre_step *st = &p->steps[si];
        tok__sizes tmp = *scratch;
        tmp.n = 0;
        bool ok = true;
        if (st->kind == STEP_RX) {
            bool col = tok__rx_collapsed(st->rx);
            if (*subject_cap < n) {
                uint32_t *s = realloc(*subject, n * sizeof *s);
                if (!s)
                    return false;
                *subject = s;
                *subject_cap = n;
            }
            uint32_t *s = *subject;
            for (size_t i = 0; i < n; i++)
                s[i] = tok__rx_subject(cps[i], flags[i], col);
            size_t start = 0;
            for (size_t k = 0; k < out->n && ok; k++) {
                size_t len = out->v[k], at = 0, mb, me;
                while (ok && at < len && tok__rx_search(st->rx, s + start, len, at, &mb, &me)) {
                    if (mb > at)
                        ok = push(&tmp, mb - at);
                    ok = ok && push(&tmp, me - mb);
                    at = me;
                }
                if (ok && at < len)
                    ok = push(&tmp, len - at);
                start += len;
            }
        } else {
            size_t start = 0;
            for (size_t k = 0; k < out->n && ok; k++) {
                hw h = {cps, flags, start, start + out->v[k], start, &tmp, true};
                if (st->kind == STEP_GPT2)
                    split_gpt2(&h);
                else
                    split_llama3(&h);
                ok = h.ok;
                start += out->v[k];
            }
        }
        /* swap: tmp becomes the current pieces, the old vector the scratch */
        *scratch = *out;
        *out = tmp;
        if (!ok)
            return false;
    }
    return true;
}
