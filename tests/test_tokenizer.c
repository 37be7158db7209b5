/* Tokenizer tests: the model authors' vectors for every vocabulary in
 * ../shared/fixtures/vocab (ids exact, detokenization round trip), special
 * tokens, the streaming UTF-8 decoder, pre-tokenizer fallback, bad metadata. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tokenizer.h"
#include "tokenizer_internal.h"
#include "tokenizer_pre.h"
#include "tokenizer_unicode.h"

typedef struct {
    gguf_file *f;
    tok_vocab *v;
} opened;

/* Open ../shared/fixtures/vocab/ggml-vocab-NAME.gguf; false if absent. */
static bool open_vocab(const char *name, opened *o)
{
    char rel[256];
    snprintf(rel, sizeof rel, "fixtures/vocab/ggml-vocab-%s.gguf", name);
    const char *path = tu_shared(rel);
    if (!path)
        return false;
    gguf_error ge;
    o->f = gguf_open(path, &ge);
    assert_non_null(o->f);
    tok_error te;
    o->v = tok_open(o->f, &te);
    if (!o->v)
        print_message("tok_open(%s): %s\n", name, te.msg);
    assert_non_null(o->v);
    return true;
}

static void close_vocab(opened *o)
{
    tok_close(o->v);
    gguf_close(o->f);
}

static size_t tokenize(const tok_vocab *v, const char *s, unsigned flags, tok_id *out, size_t cap)
{
    tok_id *ids;
    size_t n;
    assert_int_equal(tok_tokenize(v, s, strlen(s), flags, &ids, &n), TOK_OK);
    assert_true(n <= cap);
    if (n)
        memcpy(out, ids, n * sizeof *ids);
    free(ids);
    return n;
}

/* ---- the authors' vectors ---- */

/* Check one vocabulary's .inp/.out pair; returns the number of failures. */
static int check_vectors(const char *dir, const char *file, int *ncases)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    gguf_error ge;
    gguf_file *f = gguf_open(path, &ge);
    assert_non_null(f);
    tok_error te;
    tok_vocab *v = tok_open(f, &te);
    if (!v)
        print_message("%s: %s\n", file, te.msg);
    assert_non_null(v);

    char pin[1100], pout[1100];
    snprintf(pin, sizeof pin, "%s.inp", path);
    snprintf(pout, sizeof pout, "%s.out", path);
    size_t ni, no;
    char *inp = (char *)tu_read_file(pin, &ni), *outp = (char *)tu_read_file(pout, &no);
    assert_non_null(inp);
    assert_non_null(outp);

    /* .inp: strings separated by "\n__ggml_vocab_test__\n" (llama.cpp's test-tokenizer-0) */
    static const char sep[] = "\n__ggml_vocab_test__\n";
    int fails = 0, count = 0;
    char *ip = inp, *iend = inp + ni, *op = outp;
    while (ip < iend) {
        char *nx = memmem(ip, (size_t)(iend - ip), sep, sizeof sep - 1);
        size_t sl = nx ? (size_t)(nx - ip) : (size_t)(iend - ip);
        /* .out: one line of space-separated ids per string */
        char *eol = strchr(op, '\n');
        assert_non_null(eol);
        *eol = 0;
        tok_id want[4096];
        size_t nw = 0;
        for (char *q = op; *q;) {
            while (*q == ' ')
                q++;
            if (!*q)
                break;
            want[nw++] = (tok_id)strtol(q, &q, 10);
        }
        op = eol + 1;

        tok_id *got;
        size_t ng;
        assert_int_equal(tok_tokenize(v, ip, sl, 0, &got, &ng), TOK_OK);
        bool same = ng == nw && (!nw || !memcmp(got, want, nw * sizeof *got));
        if (!same) {
            fails++;
            print_message("%s: case %d '%.*s': got", file, count, (int)sl, ip);
            for (size_t k = 0; k < ng; k++)
                print_message(" %d", got[k]);
            print_message(" want");
            for (size_t k = 0; k < nw; k++)
                print_message(" %d", want[k]);
            print_message("\n");
        }
        /* detokenizing the expected ids gives the string back */
        char *text;
        size_t tl;
        assert_int_equal(tok_detokenize(v, want, nw, 0, &text, &tl), TOK_OK);
        if (tl != sl || memcmp(text, ip, sl)) {
            fails++;
            print_message("%s: case %d detokenized to '%s' instead of '%.*s'\n", file, count, text,
                          (int)sl, ip);
        }
        free(text);
        free(got);
        count++;
        ip = nx ? nx + sizeof sep - 1 : iend;
    }
    assert_true(*op == 0);   /* as many lines as strings */
    free(inp);
    free(outp);
    tok_close(v);
    gguf_close(f);
    *ncases = count;
    return fails;
}

static void test_vocab_vectors(void **state)
{
    (void)state;
    const char *dir = tu_shared("fixtures/vocab");
    if (!dir)
        TU_SKIP_NO_SHARED();
    char dirbuf[1024];
    snprintf(dirbuf, sizeof dirbuf, "%s", dir);
    DIR *d = opendir(dirbuf);
    assert_non_null(d);
    int files = 0, fails = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".gguf"))
            continue;
        int cases = 0;
        int f = check_vectors(dirbuf, e->d_name, &cases);
        print_message("%-36s %3d strings, %d failures\n", e->d_name, cases, f);
        assert_true(cases > 10);
        fails += f;
        files++;
    }
    closedir(d);
    assert_true(files >= 6);
    assert_int_equal(fails, 0);
}

/* ---- special tokens ---- */

static bool has(const tok_id *ids, size_t n, tok_id x)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == x)
            return true;
    return false;
}

static void test_special_tokens(void **state)
{
    (void)state;
    opened o;
    if (!open_vocab("qwen2", &o))
        TU_SKIP_NO_SHARED();
    tok_id ids[64];
    tok_id im_start = tok_find(o.v, "<|im_start|>", 12), im_end = tok_find(o.v, "<|im_end|>", 10);
    assert_int_equal(im_start, 151644);
    assert_int_equal(im_end, 151645);
    const char *s = "<|im_start|>user\nhi<|im_end|>";
    size_t n = tokenize(o.v, s, 0, ids, 64);   /* user content: no special tokens */
    assert_false(has(ids, n, im_start));
    assert_false(has(ids, n, im_end));
    n = tokenize(o.v, s, TOK_PARSE_SPECIAL, ids, 64);
    assert_true(n >= 4);
    assert_int_equal(ids[0], im_start);
    assert_int_equal(ids[n - 1], im_end);
    assert_true(tok_is_eog(o.v, im_end));
    assert_true(tok_is_eog(o.v, tok_eos(o.v)));
    assert_false(tok_is_eog(o.v, im_start));
    assert_true(tok_is_control(o.v, im_start));
    assert_false(tok_add_bos(o.v));
    /* a long text (the partitioner's pair filter is on): specials and a
     * user-defined token ([PAD151646], type 4: matched even without parsing) */
    {
        size_t cap = 12000, m = 0;
        char *big = malloc(cap);
        m += (size_t)sprintf(big + m, "<|im_start|>");
        while (m < 9000)
            m += (size_t)sprintf(big + m, "word %zu ", m);
        m += (size_t)sprintf(big + m, "[PAD151646]<|im_end|>");
        tok_id *lid;
        size_t ln;
        assert_int_equal(tok_tokenize(o.v, big, m, TOK_PARSE_SPECIAL, &lid, &ln), TOK_OK);
        assert_int_equal(lid[0], im_start);
        assert_int_equal(lid[ln - 2], 151646);
        assert_int_equal(lid[ln - 1], im_end);
        free(lid);
        assert_int_equal(tok_tokenize(o.v, big, m, 0, &lid, &ln), TOK_OK);
        assert_true(lid[0] != im_start);
        assert_true(has(lid, ln, 151646));
        assert_false(has(lid, ln, im_end));
        free(lid);
        free(big);
    }
    /* control tokens render only when asked */
    char buf[32];
    assert_int_equal(tok_piece(o.v, im_start, buf, sizeof buf, 0), 0);
    assert_int_equal(tok_piece(o.v, im_start, buf, sizeof buf, TOK_DETOK_SPECIAL), 12);
    assert_memory_equal(buf, "<|im_start|>", 12);
    close_vocab(&o);

    if (!open_vocab("llama-spm", &o))
        TU_SKIP_NO_SHARED();
    assert_true(tok_add_bos(o.v));
    assert_true(tok_add_space_prefix(o.v));
    n = tokenize(o.v, "<s>Hi", 0, ids, 64);
    assert_false(has(ids, n, 1));
    n = tokenize(o.v, "<s>Hi", TOK_PARSE_SPECIAL, ids, 64);
    assert_int_equal(ids[0], 1);
    n = tokenize(o.v, "Hi", TOK_ADD_SPECIAL, ids, 64);
    assert_int_equal(ids[0], tok_bos(o.v));
    assert_int_equal(tok_nl(o.v), 13);   /* <0x0A> */
    close_vocab(&o);

    if (!open_vocab("phi-3", &o))
        TU_SKIP_NO_SHARED();
    /* Phi-3: special tokens eat the white space that follows them (rstrip) */
    tok_id user = tok_find(o.v, "<|user|>", 8), end = tok_find(o.v, "<|end|>", 7);
    assert_int_equal(user, 32010);
    assert_true(tok_is_eog(o.v, end));
    tok_id a[64], b[64];
    size_t na = tokenize(o.v, "<|user|>\nHello<|end|>", TOK_PARSE_SPECIAL, a, 64);
    size_t nb = tokenize(o.v, "<|user|>Hello<|end|>", TOK_PARSE_SPECIAL, b, 64);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    assert_int_equal(a[0], user);
    assert_int_equal(a[na - 1], end);
    close_vocab(&o);
}

/* ---- streaming decoder ---- */

static void test_stream_split_emoji(void **state)
{
    (void)state;
    opened o;
    if (!open_vocab("llama-bpe", &o))
        TU_SKIP_NO_SHARED();
    /* "🦙" is three byte-level tokens in Llama 3's vocabulary */
    const char *emoji = "\xf0\x9f\xa6\x99";
    tok_id ids[16];
    size_t n = tokenize(o.v, emoji, 0, ids, 16);
    assert_true(n >= 2);
    tok_stream *s = tok_stream_new(o.v, 0);
    assert_non_null(s);
    char acc[64];
    size_t na = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *p = tok_stream_push(s, ids[i], &len);
        assert_non_null(p);
        if (i + 1 < n)
            assert_int_equal(len, 0);   /* nothing until the character is complete */
        memcpy(acc + na, p, len);
        na += len;
    }
    assert_int_equal(na, 4);
    assert_memory_equal(acc, emoji, 4);
    size_t len;
    tok_stream_flush(s, &len);
    assert_int_equal(len, 0);
    tok_stream_free(s);
    close_vocab(&o);

    if (!open_vocab("llama-spm", &o))
        TU_SKIP_NO_SHARED();
    /* SPM byte fallback: <0xF0> <0x9F> <0xA6> <0x99>, then "x", then a broken byte */
    tok_id seq[6];
    const uint8_t bytes[4] = {0xF0, 0x9F, 0xA6, 0x99};
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", bytes[i]);
        seq[i] = tok_find(o.v, name, 6);
        assert_true(seq[i] != TOK_NULL);
    }
    seq[4] = tok_find(o.v, "x", 1);
    seq[5] = tok_find(o.v, "<0xE2>", 6);
    s = tok_stream_new(o.v, 0);
    na = 0;
    for (int i = 0; i < 6; i++) {
        const char *p = tok_stream_push(s, seq[i], &len);
        if (i < 3)
            assert_int_equal(len, 0);
        memcpy(acc + na, p, len);
        na += len;
    }
    assert_int_equal(na, 5);
    assert_memory_equal(acc, "\xf0\x9f\xa6\x99x", 5);
    const char *p = tok_stream_flush(s, &len);   /* the lone 0xE2 becomes U+FFFD */
    assert_int_equal(len, 3);
    assert_memory_equal(p, "\xef\xbf\xbd", 3);
    /* a continuation byte with no lead is replaced at once */
    tok_id cont = tok_find(o.v, "<0x99>", 6);
    p = tok_stream_push(s, cont, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(p, "\xef\xbf\xbd", 3);
    tok_stream_free(s);

    /* tok_piece: SPM space and byte handling */
    char buf[16];
    tok_id hello = tok_find(o.v, "\xe2\x96\x81Hello", 8);
    assert_true(hello != TOK_NULL);
    assert_int_equal(tok_piece(o.v, hello, buf, sizeof buf, 0), 6);
    assert_memory_equal(buf, " Hello", 6);
    assert_int_equal(tok_piece(o.v, seq[0], buf, sizeof buf, 0), 1);
    assert_int_equal((uint8_t)buf[0], 0xF0);
    close_vocab(&o);
}

/* ---- files built in memory ---- */

/* A minimal byte-level BPE vocabulary: the 256 byte characters, "ab", and
 * the merge "a b"; `pre` may be NULL. */
static gguf_file *mini_bpe(const char *pre, uint8_t **mem)
{
    gguf_writer *w = gguf_writer_new(0);
    assert_non_null(w);
    char store[257][8];
    const char *toks[257];
    int n = 0;
    for (int c = 0; c < 256; c++) {
        int keep = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE);
        static int extra;
        if (c == 0)
            extra = 0;
        uint32_t cp = keep ? (uint32_t)c : 256u + (uint32_t)extra++;
        uint8_t enc[4];
        size_t l = tok__utf8_put(cp, enc);
        memcpy(store[n], enc, l);
        store[n][l] = 0;
        toks[n] = store[n];
        n++;
    }
    toks[n++] = "ab";
    const char *merges[] = {"a b"};
    assert_int_equal(gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2"), GGUF_OK);
    if (pre)
        assert_int_equal(gguf_writer_set_str(w, "tokenizer.ggml.pre", pre), GGUF_OK);
    assert_int_equal(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, (uint64_t)n), GGUF_OK);
    assert_int_equal(gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, 1), GGUF_OK);
    size_t size;
    assert_int_equal(gguf_writer_to_memory(w, mem, &size), GGUF_OK);
    gguf_writer_free(w);
    gguf_error ge;
    gguf_file *f = gguf_open_memory(*mem, size, "mini", &ge);
    assert_non_null(f);
    return f;
}

static void test_unknown_pre_warning(void **state)
{
    (void)state;
    uint8_t *mem;
    gguf_file *f = mini_bpe("no-such-pre-tokenizer", &mem);
    tok_error te;
    tok_vocab *v = tok_open(f, &te);
    assert_non_null(v);
    const char *w = tok_warning(v);
    assert_non_null(w);
    assert_non_null(strstr(w, "unknown pre-tokenizer 'no-such-pre-tokenizer'"));
    /* GPT-2 rules: " ab" -> Ġ + ab would need a merge "Ġ ab"; we get "Ġ" "ab" */
    tok_id ids[8];
    size_t n = tokenize(v, "ab ab", 0, ids, 8);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 256);   /* "ab" */
    assert_int_equal(ids[2], 256);
    char *text;
    assert_int_equal(tok_detokenize(v, ids, n, 0, &text, NULL), TOK_OK);
    assert_string_equal(text, "ab ab");
    free(text);
    tok_close(v);
    gguf_close(f);
    free(mem);

    f = mini_bpe("gpt-2", &mem);   /* a known one: no warning */
    v = tok_open(f, &te);
    assert_non_null(v);
    assert_null(tok_warning(v));
    tok_close(v);
    gguf_close(f);
    free(mem);
}

static void test_bad_metadata(void **state)
{
    (void)state;
    gguf_writer *w = gguf_writer_new(0);
    assert_int_equal(gguf_writer_set_str(w, "general.name", "no tokenizer"), GGUF_OK);
    uint8_t *mem;
    size_t size;
    assert_int_equal(gguf_writer_to_memory(w, &mem, &size), GGUF_OK);
    gguf_writer_free(w);
    gguf_error ge;
    gguf_file *f = gguf_open_memory(mem, size, "empty", &ge);
    assert_non_null(f);
    tok_error te;
    assert_null(tok_open(f, &te));
    assert_int_equal(te.code, TOK_ENOTFOUND);
    gguf_close(f);
    free(mem);

    /* token_type of the wrong element type, and an unsupported model */
    w = gguf_writer_new(0);
    const char *toks[] = {"<unk>", "a"};
    float types[] = {2, 1};
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 2);
    gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_FLOAT32, types, 2);
    assert_int_equal(gguf_writer_to_memory(w, &mem, &size), GGUF_OK);
    gguf_writer_free(w);
    f = gguf_open_memory(mem, size, "bad", &ge);
    assert_null(tok_open(f, &te));
    assert_int_equal(te.code, TOK_EFORMAT);
    gguf_close(f);
    free(mem);

    w = gguf_writer_new(0);
    gguf_writer_set_str(w, "tokenizer.ggml.model", "t5");
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 2);
    assert_int_equal(gguf_writer_to_memory(w, &mem, &size), GGUF_OK);
    gguf_writer_free(w);
    f = gguf_open_memory(mem, size, "t5", &ge);
    assert_null(tok_open(f, &te));
    assert_int_equal(te.code, TOK_EUNSUPPORTED);
    gguf_close(f);
    free(mem);
}

/* ---- pre-tokenizers and Unicode tables ---- */

static void split(const char *pre, const char *text, const char *const *want)
{
    tok__pre_info info;
    char err[128];
    tok__pre *p = tok__pre_new(pre, strlen(pre), &info, err, sizeof err);
    assert_non_null(p);
    assert_true(info.known);
    uint32_t cps[256];
    uint16_t fl[256];
    size_t n = 0, len = strlen(text);
    for (size_t i = 0; i < len;) {
        cps[n] = tok__utf8_next((const uint8_t *)text, len, &i);
        fl[n] = (uint16_t)tok__uflags(cps[n]);
        n++;
    }
    tok__sizes out = {0}, scratch = {0};
    uint32_t *subj = NULL;
    size_t subj_cap = 0;
    assert_true(tok__pre_split(p, cps, fl, n, &out, &scratch, &subj, &subj_cap));
    size_t at = 0, k = 0;
    for (; k < out.n; k++) {
        assert_non_null(want[k]);
        uint8_t buf[256];
        size_t m = 0;
        for (size_t i = 0; i < out.v[k]; i++)
            m += tok__utf8_put(cps[at + i], buf + m);
        at += out.v[k];
        if (m != strlen(want[k]) || memcmp(buf, want[k], m))
            print_message("%s piece %zu: '%.*s' want '%s'\n", pre, k, (int)m, buf, want[k]);
        assert_int_equal(m, strlen(want[k]));
        assert_memory_equal(buf, want[k], m);
    }
    assert_null(want[k]);
    tok__sizes_free(&out);
    tok__sizes_free(&scratch);
    free(subj);
    tok__pre_free(p);
}

static void test_pre_tokenizers(void **state)
{
    (void)state;
    assert_true(tok__uflags('a') & TOK_UC_L);
    assert_true(tok__uflags(0x4E2D) & TOK_UC_L);      /* 中 */
    assert_true(tok__uflags(0x0663) & TOK_UC_N);      /* Arabic-Indic 3 */
    assert_true(tok__uflags(0x3000) & TOK_UC_WS);
    assert_true(tok__uflags(0x0301) & TOK_UC_M);
    assert_true(tok__uflags(0x1F999) & TOK_UC_S);     /* 🦙 */
    assert_true(tok__uflags(0x0378) & TOK_UC_UNDEF);
    assert_int_equal(tok__ulowercase('S'), 's');
    assert_int_equal(tok__ulowercase(0x0130), 'i');

    const char *gpt2[] = {"Hello", "'s", " world", "  ", " 123", "!!", NULL};
    split("gpt-2", "Hello's world   123!!", gpt2);
    const char *llama3[] = {"Hello", "'S", " world", "  ", " ", "123", "4", " ...\n\n", NULL};
    split("llama-bpe", "Hello'S world   1234 ...\n\n", llama3);
    const char *qwen2[] = {"Hello", " world", " ", "1", "2", "3", " \xe4\xbd\xa0\xe5\xa5\xbd", "!\n", NULL};
    split("qwen2", "Hello world 123 \xe4\xbd\xa0\xe5\xa5\xbd!\n", qwen2);
    const char *dsc[] = {"int", " x", "=", "4", "2", ";", "\n", " ", "\xe4\xb8\xad\xe6\x96\x87", NULL};
    split("deepseek-coder", "int x=42;\n \xe4\xb8\xad\xe6\x96\x87", dsc);
    const char *def[] = {"a", ",", " b", "123", "45", NULL};
    split("default", "a, b12345", def);
}

/* Arbitrary bytes (malformed UTF-8 included): SPM keeps every byte (byte
 * fallback), so detokenizing gives the bytes back; BPE replaces malformed
 * bytes by U+FFFD like llama.cpp and must produce valid ids. */
static void test_random_bytes(void **state)
{
    (void)state;
    static const char *const names[] = {"llama-spm", "llama-bpe", "qwen2", "deepseek-coder"};
    for (int k = 0; k < 4; k++) {
        opened o;
        if (!open_vocab(names[k], &o))
            TU_SKIP_NO_SHARED();
        uint32_t r = 99u + (uint32_t)k;
        for (int iter = 0; iter < 200; iter++) {
            char buf[64];
            size_t n = 1 + (size_t)(iter % 63);
            for (size_t i = 0; i < n; i++) {
                r = r * 1664525u + 1013904223u;
                buf[i] = (char)(r >> 24);
            }
            tok_id *ids;
            size_t m;
            assert_int_equal(tok_tokenize(o.v, buf, n, TOK_PARSE_SPECIAL, &ids, &m), TOK_OK);
            for (size_t i = 0; i < m; i++)
                assert_true(ids[i] >= 0 && (uint32_t)ids[i] < tok_n_vocab(o.v));
            /* (a space after a stray lead byte is swallowed into its "character"
             * as U+2581, exactly as llama.cpp does, so leave spaces out) */
            if (tok_model_kind(o.v) == TOK_MODEL_SPM && !memchr(buf, '<', n) && !memchr(buf, ' ', n)) {
                char *text;
                size_t tl;
                assert_int_equal(tok_detokenize(o.v, ids, m, 0, &text, &tl), TOK_OK);
                assert_int_equal(tl, n);
                assert_memory_equal(text, buf, n);
                free(text);
            }
            free(ids);
        }
        close_vocab(&o);
    }
}

/* SPM merges word by word when the vocabulary allows it: the result must be
 * the one of merging the whole text at once (llama.cpp's way). */
static void test_spm_word_split_equivalence(void **state)
{
    (void)state;
    opened o;
    if (!open_vocab("llama-spm", &o))
        TU_SKIP_NO_SHARED();
    assert_true(o.v->spm_split);
    static const char *const parts[] = {"Hello", " world", "  ", "\n", "\t", "don't", " 123",
                                        "\xe4\xbd\xa0\xe5\xa5\xbd", "\xf0\x9f\xa6\x99", "   x",
                                        "int main() {", " \xd0\x9f\xd1\x80\xd0\xb8", "."};
    char text[8192];
    size_t n = 0;
    uint32_t r = 7;
    while (n < sizeof text - 64) {
        r = r * 1103515245u + 12345u;
        const char *p = parts[(r >> 16) % (sizeof parts / sizeof parts[0])];
        memcpy(text + n, p, strlen(p));
        n += strlen(p);
    }
    tok_id *a, *b;
    size_t na, nb;
    assert_int_equal(tok_tokenize(o.v, text, n, 0, &a, &na), TOK_OK);
    o.v->spm_split = false;
    assert_int_equal(tok_tokenize(o.v, text, n, 0, &b, &nb), TOK_OK);
    o.v->spm_split = true;
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    free(a);
    free(b);
    close_vocab(&o);
}

/* ---- the pre-tokenizers of the dense families ---- */

/* llama.cpp's ids (the peer, node-llama-cpp 3.22.1) for Llama 3's vocabulary with
 * tokenizer.ggml.pre replaced; strings from its test vectors and a few more. */
#define PRE_NTEXTS 9
#define PRE_MAXIDS 27
static const char *const PRE_TEXTS[PRE_NTEXTS] = {
    "ied 4 \302\275 months",
    "w048 7tuijk dsdfhu",
    ("Hello, y'all! How are you \360\237\230\201 ?\346\210\221\346\203\263\345\234\250apple"
     "\345\267\245\344\275\2341314151\345\244\251\357\275\236"),
    "C\341\273\255a Vi\341\273\207t",
    "HTTPServer iPhone McDonald's",
    "CAN'T won't I'M they'RE",
    "path/to/file\n/usr/bin//x\r\n",
    "1234567 89",
    "snake_case camelCase PascalCase SCREAMING_CASE",
};
static const struct {
    const char *pre;
    int ids[PRE_NTEXTS][PRE_MAXIDS];   /* -1 ends a row */
} PRE_WANT[] = {
    {"tekken",
     {{1142, 220, 19, 220, 27154, 4038, -1},
      {86, 15, 19, 23, 220, 22, 83, 2005, 42908, 11729, 3013, 17156, -1},
      {9906, 11, 379, 65948, 0, 2650, 527, 499, 27623, 223, 949, 37046, 101067, 19000, 23182, 102301, 16, 18,
       16, 19, 16, 20, 16, 36827, 21909, -1},
      {34, 91163, 101798, -1},
      {9412, 5592, 602, 7084, 4584, 18735, 596, -1},
      {43055, 17773, 2834, 956, 358, 28703, 814, 95253, -1},
      {2398, 33529, 24849, 198, 55438, 8923, 322, 87, 319, -1},
      {16, 17, 18, 19, 20, 21, 22, 220, 23, 24, -1},
      {73239, 19640, 50252, 4301, 58459, 4301, 7683, 16294, 1753, 29640, -1}}},
    {"gpt-4o",
     {{1142, 220, 19, 220, 27154, 4038, -1},
      {86, 23904, 220, 22, 83, 2005, 42908, 11729, 3013, 17156, -1},
      {9906, 11, 379, 65948, 0, 2650, 527, 499, 27623, 223, 949, 37046, 101067, 19000, 23182, 102301, 9263,
       18136, 16, 36827, 21909, -1},
      {34, 91163, 11655, 26298, 83, -1},
      {9412, 5592, 602, 7084, 4584, 18735, 596, -1},
      {43055, 17773, 2834, 956, 358, 28703, 814, 95253, -1},
      {2398, 33529, 24849, 198, 55438, 8923, 322, 87, 319, -1},
      {4513, 10961, 22, 220, 4578, -1},
      {73239, 19640, 50252, 4301, 58459, 4301, 7683, 16294, 1753, 29640, -1}}},
    {"dbrx",
     {{1142, 220, 19, 220, 27154, 4038, -1},
      {86, 23904, 220, 22, 83, 2005, 42908, 11729, 3013, 17156, -1},
      {9906, 11, 379, 65948, 0, 2650, 527, 499, 27623, 223, 949, 37046, 101067, 19000, 23182, 102301, 9263,
       18136, 16, 36827, 21909, -1},
      {34, 91163, 11655, 26298, 83, -1},
      {9412, 5592, 12443, 32014, 596, -1},
      {43055, 17773, 2834, 956, 358, 28703, 814, 95253, -1},
      {2398, 33529, 24849, 198, 55438, 8923, 322, 87, 319, -1},
      {4513, 10961, 22, 220, 4578, -1},
      {73239, 19640, 50252, 4301, 58459, 4301, 7683, 16294, 1753, 29640, -1}}},
    {"smaug-bpe",
     {{1142, 220, 19, 220, 27154, 4038, -1},
      {86, 23904, 220, 22, 83, 2005, 42908, 11729, 3013, 17156, -1},
      {9906, 11, 379, 65948, 0, 2650, 527, 499, 27623, 223, 949, 37046, 101067, 19000, 23182, 102301, 9263,
       18136, 16, 36827, 21909, -1},
      {34, 91163, 11655, 26298, 83, -1},
      {9412, 5592, 12443, 32014, 596, -1},
      {43055, 17773, 2834, 956, 358, 28703, 814, 95253, -1},
      {2398, 33529, 24849, 198, 55438, 8923, 322, 87, 319, -1},
      {4513, 10961, 22, 220, 4578, -1},
      {73239, 19640, 50252, 4301, 58459, 4301, 7683, 16294, 1753, 29640, -1}}},
    {"olmo",
     {{1142, 220, 19, 2188, 121, 4038, -1},
      {86, 23904, 220, 22, 83, 2005, 42908, 11729, 3013, 17156, -1},
      {9906, 11, 379, 6, 543, 0, 2650, 527, 499, 27623, 223, 949, 37046, 101067, 19000, 23182, 102301, 1032,
       975, 9690, 36827, 21909, -1},
      {34, 91163, 11655, 26298, 83, -1},
      {9412, 5592, 12443, 32014, 596, -1},
      {43055, 6, 51, 2834, 956, 358, 6, 44, 814, 6, 793, -1},
      {2398, 14, 998, 14, 1213, 198, 14, 7208, 14, 7006, 322, 87, 319, -1},
      {4513, 1774, 3080, 220, 4578, -1},
      {73239, 62, 5756, 50252, 4301, 58459, 4301, 7683, 16294, 1753, 62, 41471, -1}}},
    {"refact",
     {{1142, 220, 19, 220, 27154, 4038, -1},
      {86, 15, 19, 23, 220, 22, 83, 2005, 42908, 11729, 3013, 17156, -1},
      {9906, 11, 379, 6, 543, 0, 2650, 527, 499, 27623, 223, 949, 37046, 101067, 19000, 23182, 102301, 16, 18,
       16, 19, 16, 20, 16, 36827, 21909, -1},
      {34, 91163, 11655, 26298, 83, -1},
      {9412, 5592, 12443, 32014, 596, -1},
      {43055, 6, 51, 2834, 956, 358, 6, 44, 814, 6, 793, -1},
      {2398, 14, 998, 14, 1213, 198, 14, 7208, 14, 7006, 322, 87, 319, -1},
      {16, 17, 18, 19, 20, 21, 22, 220, 23, 24, -1},
      {73239, 62, 5756, 50252, 4301, 58459, 4301, 7683, 16294, 1753, 62, 41471, -1}}},
    {"smollm",
     {{1142, 220, 19, 220, 27154, 4038, -1},
      {86, 15, 19, 23, 220, 22, 83, 2005, 42908, 11729, 3013, 17156, -1},
      {9906, 11, 379, 6, 543, 0, 2650, 527, 499, 27623, 223, 949, 37046, 101067, 19000, 23182, 102301, 16, 18,
       16, 19, 16, 20, 16, 36827, 21909, -1},
      {34, 91163, 11655, 26298, 83, -1},
      {9412, 5592, 12443, 32014, 596, -1},
      {43055, 6, 51, 2834, 956, 358, 6, 44, 814, 6, 793, -1},
      {2398, 14, 998, 14, 1213, 198, 14, 7208, 14, 7006, 322, 87, 319, -1},
      {16, 17, 18, 19, 20, 21, 22, 220, 23, 24, -1},
      {73239, 62, 5756, 50252, 4301, 58459, 4301, 7683, 16294, 1753, 62, 41471, -1}}},
};

/* Llama 3's vocabulary (../shared) with tokenizer.ggml.pre set to `pre` and
 * without tokenizer.ggml.add_bos_token, so that the pre-tokenizer's own
 * add_bos default shows; in memory (*mem: free it after gguf_close). */
static gguf_file *with_pre(const gguf_file *base, const char *pre, uint8_t **mem)
{
    gguf_writer *w = gguf_writer_new(0);
    assert_non_null(w);
    const gguf_kv *skip_pre = gguf_find_kv(base, "tokenizer.ggml.pre");
    const gguf_kv *skip_bos = gguf_find_kv(base, "tokenizer.ggml.add_bos_token");
    for (uint64_t i = 0; gguf_kv_at(base, i); i++) {
        const gguf_kv *kv = gguf_kv_at(base, i);
        if (kv != skip_pre && kv != skip_bos)
            assert_int_equal(gguf_writer_copy_kv(w, kv), GGUF_OK);
    }
    assert_int_equal(gguf_writer_set_str(w, "tokenizer.ggml.pre", pre), GGUF_OK);
    size_t size;
    assert_int_equal(gguf_writer_to_memory(w, mem, &size), GGUF_OK);
    gguf_writer_free(w);
    gguf_error ge;
    gguf_file *f = gguf_open_memory(*mem, size, pre, &ge);
    assert_non_null(f);
    return f;
}

/* tekken (Mistral Small 3 / Ministral), gpt-4o (Phi-4-mini), dbrx (Phi-4,
 * OLMo 2), smaug-bpe (SmolLM3 files), olmo, refact (Granite 3), smollm: the
 * ids llama.cpp gives, its add_bos defaults, and its clean-up of spaces on
 * detokenizing (on for refact, dbrx, smaug-bpe and olmo; off for the others). */
static void test_family_pre_tokenizers(void **state)
{
    (void)state;
    const char *path = tu_shared("fixtures/vocab/ggml-vocab-llama-bpe.gguf");
    if (!path)
        TU_SKIP_NO_SHARED();
    gguf_error ge;
    gguf_file *base = gguf_open(path, &ge);
    assert_non_null(base);
    int fails = 0;
    for (size_t k = 0; k < sizeof PRE_WANT / sizeof PRE_WANT[0]; k++) {
        uint8_t *mem;
        gguf_file *f = with_pre(base, PRE_WANT[k].pre, &mem);
        tok_error te;
        tok_vocab *v = tok_open(f, &te);
        assert_non_null(v);
        assert_null(tok_warning(v));   /* a known name */
        for (int t = 0; t < PRE_NTEXTS; t++) {
            const int *want = PRE_WANT[k].ids[t];
            size_t nw = 0;
            while (want[nw] >= 0)
                nw++;
            tok_id *got;
            size_t ng;
            assert_int_equal(tok_tokenize(v, PRE_TEXTS[t], strlen(PRE_TEXTS[t]), 0, &got, &ng), TOK_OK);
            bool same = ng == nw;
            for (size_t i = 0; same && i < nw; i++)
                same = got[i] == want[i];
            if (!same) {
                fails++;
                print_message("%s: '%s': got", PRE_WANT[k].pre, PRE_TEXTS[t]);
                for (size_t i = 0; i < ng; i++)
                    print_message(" %d", got[i]);
                print_message("\n");
            }
            free(got);
        }
        /* llama.cpp: tekken (like llama-bpe) adds BOS unless the file says otherwise */
        assert_int_equal(tok_add_bos(v), !strcmp(PRE_WANT[k].pre, "tekken"));
        static const tok_id ids[] = {9906, 1174, 1917, 364, 274, 662, 7566, 949, 1541, 364, 83};
        bool clean = !strcmp(PRE_WANT[k].pre, "refact") || !strcmp(PRE_WANT[k].pre, "dbrx") ||
                     !strcmp(PRE_WANT[k].pre, "smaug-bpe") || !strcmp(PRE_WANT[k].pre, "olmo");
        char *text;
        assert_int_equal(tok_detokenize(v, ids, 11, TOK_DETOK_CLEAN, &text, NULL), TOK_OK);
        assert_string_equal(text, clean ? "Hello, world's. Yes? don 't" : "Hello , world ' s . Yes ? don 't");
        free(text);
        tok_close(v);
        gguf_close(f);
        free(mem);
    }
    gguf_close(base);
    assert_int_equal(fails, 0);
}

/* Gemma 3's SentencePiece setup on Llama 2's vocabulary (../shared): no
 * space prefix (tokenizer.ggml.add_space_prefix = false), control tokens
 * <start_of_turn> <end_of_turn> <start_of_image> and user-defined tokens
 * <table> <h1> "\\n\\n\\n" <br> appended (ids 32000..32006). Ids from llama.cpp
 * (the peer), without and with parsing special tokens: user-defined tokens
 * are matched either way, control tokens only when parsing them. */
static void test_gemma_style_spm(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int plain[32], special[32];   /* -1 ends */
    } W[] = {
        {"<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
         {29966, 2962, 29918, 974, 29918, 685, 29958, 1792, 13, 10994, 29966, 355, 29918, 974, 29918, 685,
          29958, 13, 29966, 2962, 29918, 974, 29918, 685, 29958, 4299, 13, -1},
         {32000, 1792, 13, 10994, 32001, 13, 32000, 4299, 13, -1}},
        {"a<table>b <h1>Title</h1>",
         {29874, 32003, 29890, 29871, 32004, 7030, 829, 29882, 29896, 29958, -1},
         {29874, 32003, 29890, 29871, 32004, 7030, 829, 29882, 29896, 29958, -1}},
        {"x\n\n\ny",
         {29916, 32005, 29891, -1},
         {29916, 32005, 29891, -1}},
        {"    four spaces",
         {1678, 3023, 8162, -1},
         {1678, 3023, 8162, -1}},
        {"<start_of_image> img",
         {29966, 2962, 29918, 974, 29918, 3027, 29958, 10153, -1},
         {32002, 10153, -1}},
        {" leading space",
         {8236, 2913, -1},
         {8236, 2913, -1}},
        {"Hello world",
         {10994, 3186, -1},
         {10994, 3186, -1}},
        {"<end_of_turn>",
         {29966, 355, 29918, 974, 29918, 685, 29958, -1},
         {32001, -1}},
        {"\n\n\n\n\n\n",
         {32005, 32005, -1},
         {32005, 32005, -1}},
        {"<unk><s></s>",
         {29966, 2960, 5299, 29879, 2565, 29879, 29958, -1},
         {0, 1, 2, -1}},
    };
    const char *path = tu_shared("fixtures/vocab/ggml-vocab-llama-spm.gguf");
    if (!path)
        TU_SKIP_NO_SHARED();
    gguf_error ge;
    gguf_file *base = gguf_open(path, &ge);
    assert_non_null(base);
    const gguf_value *toks, *sc, *tt;
    assert_int_equal(gguf_get_arr(base, "tokenizer.ggml.tokens", &toks), GGUF_OK);
    assert_int_equal(gguf_get_arr(base, "tokenizer.ggml.scores", &sc), GGUF_OK);
    assert_int_equal(gguf_get_arr(base, "tokenizer.ggml.token_type", &tt), GGUF_OK);
    static const char *const extra[] = {"<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<table>",
                                        "<h1>", "\n\n\n", "<br>"};
    static const int32_t extra_type[] = {3, 3, 3, 4, 4, 4, 4};   /* control, user-defined */
    size_t n = (size_t)toks->arr_len, m = n + 7;
    char **text = calloc(m, sizeof *text);
    float *score = calloc(m, sizeof *score);
    int32_t *type = calloc(m, sizeof *type);
    assert_true(text && score && type);
    for (size_t i = 0; i < n; i++) {
        gguf_str g;
        double x;
        int64_t t;
        assert_int_equal(gguf_arr_str(toks, i, &g), GGUF_OK);
        text[i] = strndup(g.ptr, (size_t)g.len);
        assert_int_equal(gguf_arr_f64(sc, i, &x), GGUF_OK);
        assert_int_equal(gguf_arr_i64(tt, i, &t), GGUF_OK);
        score[i] = (float)x;
        type[i] = (int32_t)t;
    }
    for (size_t k = 0; k < 7; k++) {
        text[n + k] = strdup(extra[k]);
        type[n + k] = extra_type[k];
    }
    gguf_writer *w = gguf_writer_new(0);
    assert_int_equal(gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"), GGUF_OK);
    assert_int_equal(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)text, m), GGUF_OK);
    assert_int_equal(gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, score, m), GGUF_OK);
    assert_int_equal(gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, type, m), GGUF_OK);
    assert_int_equal(gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false), GGUF_OK);
    uint8_t *mem;
    size_t size;
    assert_int_equal(gguf_writer_to_memory(w, &mem, &size), GGUF_OK);
    gguf_writer_free(w);
    for (size_t i = 0; i < m; i++)
        free(text[i]);
    free(text);
    free(score);
    free(type);
    gguf_close(base);

    gguf_file *f = gguf_open_memory(mem, size, "gemma-style", &ge);
    assert_non_null(f);
    tok_error te;
    tok_vocab *v = tok_open(f, &te);
    assert_non_null(v);
    assert_false(tok_add_space_prefix(v));
    assert_true(tok_add_bos(v));   /* SPM's default */
    int fails = 0;
    for (size_t k = 0; k < sizeof W / sizeof W[0]; k++) {
        for (int sp = 0; sp < 2; sp++) {
            const int *want = sp ? W[k].special : W[k].plain;
            tok_id *got;
            size_t ng, nw = 0;
            while (want[nw] >= 0)
                nw++;
            assert_int_equal(tok_tokenize(v, W[k].text, strlen(W[k].text), sp ? TOK_PARSE_SPECIAL : 0, &got, &ng),
                             TOK_OK);
            bool same = ng == nw;
            for (size_t i = 0; same && i < nw; i++)
                same = got[i] == want[i];
            if (!same) {
                fails++;
                print_message("'%s' (special %d): got", W[k].text, sp);
                for (size_t i = 0; i < ng; i++)
                    print_message(" %d", got[i]);
                print_message("\n");
            }
            free(got);
        }
    }
    tok_close(v);
    gguf_close(f);
    free(mem);
    assert_int_equal(fails, 0);
}

/* tok_bpe_piece_bytes: byte-level characters back to bytes; others refused */
static void test_bpe_piece_bytes(void **state)
{
    (void)state;
    char buf[16];
    const char *w = "\xc3\xa4\xc2\xb8\xc4\xb8\xc3\xa7\xc4\xb7\xc4\xae";   /* ä¸ĸçķĮ: 世界 */
    assert_int_equal(tok_bpe_piece_bytes(w, strlen(w), buf, sizeof buf), 6);
    assert_memory_equal(buf, "\xe4\xb8\x96\xe7\x95\x8c", 6);
    assert_int_equal(tok_bpe_piece_bytes("\xc4\xa0the", 5, buf, sizeof buf), 4);   /* Ġthe */
    assert_memory_equal(buf, " the", 4);
    assert_int_equal(tok_bpe_piece_bytes("\xc4\x8a", 2, buf, sizeof buf), 1);   /* Ċ */
    assert_int_equal(buf[0], '\n');
    assert_int_equal(tok_bpe_piece_bytes("a b", 3, buf, sizeof buf), SIZE_MAX);   /* a space is none */
    assert_int_equal(tok_bpe_piece_bytes("\xe4\xb8\x96", 3, buf, sizeof buf), SIZE_MAX);   /* 世 itself */
    assert_int_equal(tok_bpe_piece_bytes("abcdef", 6, buf, 2), 6);   /* the length beyond cap */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pre_tokenizers),
        cmocka_unit_test(test_unknown_pre_warning),
        cmocka_unit_test(test_bad_metadata),
        cmocka_unit_test(test_special_tokens),
        cmocka_unit_test(test_stream_split_emoji),
        cmocka_unit_test(test_spm_word_split_equivalence),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_vocab_vectors),
        cmocka_unit_test(test_family_pre_tokenizers),
        cmocka_unit_test(test_gemma_style_spm),
        cmocka_unit_test(test_bpe_piece_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
