/* The embedded demo model: a small Llama-architecture GGUF that ggscope writes
 * itself, once, into the user's cache directory.
 *
 * Its weights are built so that greedy decoding recites DEMO_TEXT: every word
 * of the text is one token whose embedding is a unit vector of its own, the
 * transformer blocks barely touch the residual stream (their output
 * projections are tiny), and the output matrix maps each word's direction to
 * the next word's logit: a word-bigram table folded into `output.weight`.
 * The text has no word with two different successors, so the bigram is exact. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app.h"
#include "codec.h"
#include "demo.h"
#include "ggtype.h"

#define N_EMBD 256
#define N_FF 512
#define N_LAYER 2
#define N_HEAD 4
#define N_HEAD_KV 2
#define N_CTX 512
#define ALPHA 8.0f

static const char DEMO_TEXT[] =
    "Once upon a time, ggscope opened one GGUF file. It showed every tensor in hex, measured "
    "quantization error layer by layer, and chatted with models on its own engine. The end.";

static const char CHAT_TEMPLATE[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_BYTE = 6 };

typedef struct {
    char **tok;
    float *score;
    int32_t *type;
    uint32_t n, cap;
} vocab;

static int vocab_find(const vocab *v, const char *s)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (!strcmp(v->tok[i], s))
            return (int)i;
    return -1;
}

static int vocab_add(vocab *v, const char *s, float score, int32_t type)
{
    int have = vocab_find(v, s);
    if (have >= 0)
        return have;
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 512;
        v->tok = realloc(v->tok, v->cap * sizeof *v->tok);
        v->score = realloc(v->score, v->cap * sizeof *v->score);
        v->type = realloc(v->type, v->cap * sizeof *v->type);
        if (!v->tok || !v->score || !v->type)
            abort();
    }
    v->tok[v->n] = strdup(s);
    v->score[v->n] = score;
    v->type[v->n] = type;
    return (int)v->n++;
}

/* xorshift64*: a small deterministic generator, so the demo file is the same everywhere. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static float rnd_normal(void)
{
    float u[2];
    for (int k = 0; k < 2; k++) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        u[k] = (float)(((rng_state * 2685821657736338717ULL) >> 40) + 1) / 16777217.0f;
    }
    return sqrtf(-2.0f * logf(u[0])) * cosf(6.2831853f * u[1]);
}

/* Add a 2-D tensor of rows x cols floats, stored as `type` (quantized with the
 * reference quantizers). */
static void add_matrix(gguf_writer *w, const char *name, uint32_t type, const float *x, int rows, int cols)
{
    uint64_t ne[2] = {(uint64_t)cols, (uint64_t)rows};
    size_t bytes = (size_t)ggtype_row_size(type, (uint64_t)cols, NULL) * (size_t)rows;
    void *q = malloc(bytes);
    if (type == GGTYPE_F32 || !q || codec_quantize(type, x, q, (uint64_t)rows, (uint64_t)cols, NULL) != bytes)
        gguf_writer_add_tensor(w, name, GGTYPE_F32, 2, ne, x);
    else
        gguf_writer_add_tensor(w, name, type, 2, ne, q);
    free(q);
}

static void fill_normal(float *x, size_t n, float sigma)
{
    for (size_t i = 0; i < n; i++)
        x[i] = sigma * rnd_normal();
}

int demo_write(const char *path)
{
    vocab v = {0};
    vocab_add(&v, "<unk>", 0, TT_UNKNOWN);
    vocab_add(&v, "<s>", 0, TT_CONTROL);
    vocab_add(&v, "</s>", 0, TT_CONTROL);
    int im_start = vocab_add(&v, "<|im_start|>", 0, TT_CONTROL);
    int im_end = vocab_add(&v, "<|im_end|>", 0, TT_CONTROL);
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        vocab_add(&v, s, 0, TT_BYTE);
    }
    for (int ch = 0x20; ch < 0x7f; ch++) {
        char s[4] = {(char)ch, 0};
        if (ch == ' ')
            strcpy(s, "\xe2\x96\x81"); /* ▁ */
        vocab_add(&v, s, -1000.0f, TT_NORMAL);
    }
    /* the words of the text (with SentencePiece's ▁ for the leading space) and
     * every prefix of them, so BPE merges reach each whole word */
    int words[64], n_words = 0;
    char *text = strdup(DEMO_TEXT);
    for (char *w = strtok(text, " "); w && n_words < 64; w = strtok(NULL, " ")) {
        char piece[64];
        snprintf(piece, sizeof piece, "\xe2\x96\x81%s", w);
        size_t len = strlen(piece);
        for (size_t k = 4; k < len; k++) {
            char pre[64];
            memcpy(pre, piece, k);
            pre[k] = 0;
            vocab_add(&v, pre, -(float)(100 - k), TT_NORMAL);
        }
        words[n_words++] = vocab_add(&v, piece, -(float)(100 - len), TT_NORMAL);
    }
    free(text);
    uint32_t n_vocab = v.n;
    int newline = vocab_find(&v, "<0x0A>");

    /* embeddings: one unit direction per word (and for the newline that ends
     * the chat prompt); small random vectors for every other token */
    float *embd = calloc((size_t)n_vocab * N_EMBD, sizeof *embd);
    float *out = calloc((size_t)n_vocab * N_EMBD, sizeof *out);
    int dir_of[1024];
    for (uint32_t t = 0; t < n_vocab; t++) {
        dir_of[t] = -1;
        fill_normal(embd + (size_t)t * N_EMBD, N_EMBD, 0.05f);
    }
    fill_normal(out, (size_t)n_vocab * N_EMBD, 0.01f);
    int dirs[65], n_dirs = 0;
    dirs[n_dirs++] = newline;
    for (int i = 0; i < n_words; i++)
        dirs[n_dirs++] = words[i];
    for (int d = 0; d < n_dirs; d++) {
        float *e = embd + (size_t)dirs[d] * N_EMBD;
        memset(e, 0, N_EMBD * sizeof *e);
        e[d] = 1.0f;
        dir_of[dirs[d]] = d;
    }
    /* the bigram: newline -> first word -> ... -> last word -> <|im_end|> */
    for (int d = 0; d < n_dirs; d++) {
        int next = d + 1 < n_dirs ? dirs[d + 1] : im_end;
        out[(size_t)next * N_EMBD + (size_t)d] = ALPHA;
    }
    (void)dir_of;

    gguf_writer *w = gguf_writer_new(32);
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_str(w, "general.type", "model");
    gguf_writer_set_str(w, "general.name", "ggscope demo");
    gguf_writer_set_str(w, "general.basename", "ggscope-demo");
    gguf_writer_set_str(w, "general.size_label", "1M");
    gguf_writer_set_str(w, "general.license", "MIT");
    gguf_writer_set_str(w, "general.description",
                        "A tiny model written by ggscope itself. Greedy decoding recites a short text: "
                        "its output matrix holds a word-bigram table.");
    gguf_writer_set_u32(w, "general.file_type", 15); /* MOSTLY_Q4_K_M */
    gguf_writer_set_u32(w, "general.quantization_version", 2);
    gguf_writer_set_u32(w, "llama.context_length", N_CTX);
    gguf_writer_set_u32(w, "llama.embedding_length", N_EMBD);
    gguf_writer_set_u32(w, "llama.block_count", N_LAYER);
    gguf_writer_set_u32(w, "llama.feed_forward_length", N_FF);
    gguf_writer_set_u32(w, "llama.attention.head_count", N_HEAD);
    gguf_writer_set_u32(w, "llama.attention.head_count_kv", N_HEAD_KV);
    gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
    gguf_writer_set_u32(w, "llama.rope.dimension_count", N_EMBD / N_HEAD);
    gguf_writer_set_u32(w, "llama.vocab_size", n_vocab);
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v.tok, n_vocab);
    gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, v.score, n_vocab);
    gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, v.type, n_vocab);
    gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)im_end);
    gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", 0);
    gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false);
    gguf_writer_set_str(w, "tokenizer.chat_template", CHAT_TEMPLATE);
    gguf_writer_set_str(w, "ggscope.demo_text", DEMO_TEXT);
    (void)im_start;

    float *ones = malloc(N_EMBD * sizeof *ones);
    for (int i = 0; i < N_EMBD; i++)
        ones[i] = 1.0f;
    uint64_t ne_norm[1] = {N_EMBD};
    add_matrix(w, "token_embd.weight", GGTYPE_Q8_0, embd, (int)n_vocab, N_EMBD);
    size_t big = (size_t)N_FF * N_EMBD;
    float *m = malloc(big * sizeof *m);
    char name[64];
    for (int l = 0; l < N_LAYER; l++) {
        /* a mix of types, different in each layer, so the explorer has them all to show */
        static const struct { const char *name; int rows, cols; float sigma; uint32_t type[N_LAYER]; } mats[] = {
            {"attn_q", N_EMBD, N_EMBD, 0.02f, {GGTYPE_Q4_K, GGTYPE_F16}},
            {"attn_k", N_EMBD * N_HEAD_KV / N_HEAD, N_EMBD, 0.02f, {GGTYPE_Q4_K, GGTYPE_Q3_K}},
            {"attn_v", N_EMBD * N_HEAD_KV / N_HEAD, N_EMBD, 0.02f, {GGTYPE_Q6_K, GGTYPE_Q5_0}},
            {"attn_output", N_EMBD, N_EMBD, 0.0005f, {GGTYPE_Q4_0, GGTYPE_BF16}},
            {"ffn_gate", N_FF, N_EMBD, 0.02f, {GGTYPE_Q4_K, GGTYPE_IQ4_NL}},
            {"ffn_up", N_FF, N_EMBD, 0.02f, {GGTYPE_Q4_K, GGTYPE_IQ4_XS}},
            {"ffn_down", N_EMBD, N_FF, 0.0005f, {GGTYPE_Q5_K, GGTYPE_Q2_K}},
        };
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", l);
        gguf_writer_add_tensor(w, name, GGTYPE_F32, 1, ne_norm, ones);
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", l);
        gguf_writer_add_tensor(w, name, GGTYPE_F32, 1, ne_norm, ones);
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
            fill_normal(m, (size_t)mats[k].rows * (size_t)mats[k].cols, mats[k].sigma);
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, mats[k].name);
            add_matrix(w, name, mats[k].type[l], m, mats[k].rows, mats[k].cols);
        }
    }
    gguf_writer_add_tensor(w, "output_norm.weight", GGTYPE_F32, 1, ne_norm, ones);
    add_matrix(w, "output.weight", GGTYPE_Q6_K, out, (int)n_vocab, N_EMBD);
    afile a = {.fd = -1};
    int rc = app_out_open(&a, path, "the demo model");
    if (rc == APP_OK) {
        if (gguf_writer_write_to(w, &a, NULL, NULL) == GGUF_EIO) {
            app_out_error(&a);
            rc = APP_FAIL;
        } else {
            rc = app_out_commit(&a);
        }
    }
    app_out_close(&a);
    gguf_writer_free(w);
    free(m);
    free(ones);
    free(embd);
    free(out);
    for (uint32_t i = 0; i < v.n; i++)
        free(v.tok[i]);
    free(v.tok);
    free(v.score);
    free(v.type);
    return rc == APP_OK ? 0 : -1;
}

const char *demo_text(void)
{
    return DEMO_TEXT;
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

const char *app_demo_path(void)
{
    static char path[4096];
    const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[4000];
    if (cache && *cache)
        snprintf(dir, sizeof dir, "%s/ggscope", cache);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/ggscope", home);
    else
        snprintf(dir, sizeof dir, "/tmp/ggscope-cache");
    snprintf(path, sizeof path, "%s/ggscope-demo-1M-v%s-Q4_K_M.gguf", dir, GGSCOPE_VERSION);
    struct stat st;
    if (stat(path, &st) == 0)
        return path;
    if (mkdir_p(dir) != 0) {
        app_error("cannot create the cache directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    if (demo_write(path) != 0)
        return NULL;   /* demo_write said why */
    return path;
}
