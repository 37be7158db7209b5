/* libFuzzer target for the tokenizers: at start-up load every
 * ggml-vocab-*.gguf of ${GGSCOPE_SHARED:-../shared}/fixtures/vocab (when
 * absent: a note, and a small synthetic SentencePiece vocabulary written by
 * testmodel), then for each input: the first byte picks the vocabulary, the
 * rest is text, tokenized with and without special-token parsing, then
 * detokenized (whole and through the streaming decoder).
 *
 * Invariants checked (abort() on violation):
 *  - every id is in [0, n_vocab);
 *  - the streaming decoder's output is valid UTF-8;
 *  - byte-level BPE vocabularies, text that is valid UTF-8, no special
 *    parsing: detokenize(tokenize(x)) == x (the pre-tokenizers split, they
 *    never normalise; llama.cpp holds the same);
 *  - SentencePiece, text without spaces, '<' or U+2581:
 *    detokenize(tokenize(x)) == x (byte fallback keeps every byte; a space
 *    after a stray lead byte is swallowed into that character as U+2581, as
 *    in llama.cpp; '<' can start a user-defined token; U+2581 itself is the
 *    SentencePiece space and comes back as ' '). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "testmodel.h"
#include "tokenizer.h"

#define MAX_VOCABS 16

typedef struct {
    gguf_file *f;
    tok_vocab *v;
    char name[128];
} fz_vocab;

static fz_vocab vocabs[MAX_VOCABS];
static int n_vocabs;

static void add_vocab(const char *path, const char *name)
{
    if (n_vocabs == MAX_VOCABS)
        return;
    gguf_error gerr;
    gguf_file *f = gguf_open(path, &gerr);
    if (!f) {
        char line[512];
        fprintf(stderr, "fuzz_tokenizer: %s\n", gguf_error_format(&gerr, line, sizeof line));
        return;
    }
    tok_error terr;
    tok_vocab *v = tok_open(f, &terr);
    if (!v) {
        fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path, terr.msg);
        gguf_close(f);
        return;
    }
    vocabs[n_vocabs].f = f;
    vocabs[n_vocabs].v = v;
    snprintf(vocabs[n_vocabs].name, sizeof vocabs[n_vocabs].name, "%s", name);
    n_vocabs++;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *root = getenv("GGSCOPE_SHARED");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fixtures/vocab", root ? root : "../shared");
    DIR *d = opendir(dir);
    if (d) {
        char *names[64];
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d)) && n < 64) {
            size_t l = strlen(e->d_name);
            if (!strncmp(e->d_name, "ggml-vocab-", 11) && l > 5 && !strcmp(e->d_name + l - 5, ".gguf"))
                names[n++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, (size_t)n, sizeof *names, name_cmp); /* the first byte's meaning is stable */
        for (int i = 0; i < n; i++) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            add_vocab(path, names[i]);
            free(names[i]);
        }
    }
    if (n_vocabs == 0) {
        fprintf(stderr, "fuzz_tokenizer: no vocabularies in %s (../shared absent?): "
                        "using a synthetic SentencePiece vocabulary\n", dir);
        char path[] = "/tmp/fuzz_tokenizer_XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
            abort();
        close(fd);
        testmodel_params p = testmodel_default_params();
        p.n_embd = 32;
        p.n_ff = 32;
        p.n_layer = 1;
        p.n_head = 2;
        p.n_head_kv = 1;
        p.n_vocab = 600;
        char msg[256];
        if (testmodel_write(&p, path, msg, sizeof msg) != 0) {
            fprintf(stderr, "fuzz_tokenizer: %s\n", msg);
            abort();
        }
        add_vocab(path, "synthetic");
        unlink(path); /* the mapping stays valid */
        if (n_vocabs == 0)
            abort();
    } else {
        fprintf(stderr, "fuzz_tokenizer: %d vocabularies from %s\n", n_vocabs, dir);
    }
    return 0;
}

static bool valid_utf8(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t l;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            l = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            l = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            l = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + l > n)
            return false;
        for (size_t k = 1; k < l; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((l == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (l == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        i += l;
    }
    return true;
}

static void check_ids(const fz_vocab *fv, const tok_id *ids, size_t n)
{
    uint32_t nv = tok_n_vocab(fv->v);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= nv) {
            fprintf(stderr, "%s: id %d out of range [0, %u)\n", fv->name, ids[i], nv);
            abort();
        }
}

static void check_stream(const fz_vocab *fv, const tok_id *ids, size_t n)
{
    tok_stream *s = tok_stream_new(fv->v, TOK_DETOK_SPECIAL);
    if (!s)
        abort();
    for (size_t i = 0; i <= n; i++) {
        size_t l;
        const char *t = i < n ? tok_stream_push(s, ids[i], &l) : tok_stream_flush(s, &l);
        if (!t)
            abort();
        if (!valid_utf8((const uint8_t *)t, l)) {
            fprintf(stderr, "%s: streaming decoder gave invalid UTF-8\n", fv->name);
            abort();
        }
    }
    tok_stream_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const fz_vocab *fv = &vocabs[data[0] % n_vocabs];
    const char *text = (const char *)data + 1;
    size_t n = size - 1;

    for (int special = 0; special <= 1; special++) {
        unsigned flags = special ? TOK_PARSE_SPECIAL | TOK_ADD_SPECIAL : 0;
        tok_id *ids = NULL;
        size_t m = 0;
        if (tok_tokenize(fv->v, text, n, flags, &ids, &m) != TOK_OK)
            abort();
        check_ids(fv, ids, m);
        char *back = NULL;
        size_t bl = 0;
        if (tok_detokenize(fv->v, ids, m, special ? TOK_DETOK_SPECIAL : 0, &back, &bl) != TOK_OK)
            abort();
        if (!special) {
            bool rt = false;
            if (tok_model_kind(fv->v) == TOK_MODEL_BPE)
                rt = valid_utf8(data + 1, n);
            else if (strcmp(fv->name, "synthetic"))   /* a real SPM vocabulary, with byte fallback */
                rt = !memchr(text, ' ', n) && !memchr(text, '<', n) && !memmem(text, n, "\xe2\x96\x81", 3);
            /* (the synthetic vocabulary of a checkout without ../shared has
             * no byte fallback: characters it lacks become <unk>, so it has
             * no round trip to check) */
            if (rt && (bl != n || memcmp(back, text, n))) {
                fprintf(stderr, "%s: detokenize(tokenize(x)) != x: %zu bytes in, %zu out\n", fv->name, n, bl);
                abort();
            }
        }
        free(back);
        check_stream(fv, ids, m);
        free(ids);
    }
    return 0;
}
