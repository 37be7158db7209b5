/* testmodel's tokenizer keys: a vocabulary GGUF's tokenizer.* copied, the
 * o200k_harmony stand-in of gpt-oss, or a synthetic SentencePiece
 * vocabulary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testmodel_impl.h"

/* Harmony's special tokens (o200k_harmony, in their order there; its
 * reserved ids between them are left out). The stand-in appends those the
 * base vocabulary lacks (GPT-2's has <|endoftext|>). */
static const char *const HARMONY[] = {"<|startoftext|>", "<|endoftext|>", "<|return|>",
                                      "<|constrain|>",   "<|channel|>",   "<|start|>",
                                      "<|end|>",         "<|message|>",   "<|call|>"};
#define N_HARMONY (sizeof HARMONY / sizeof HARMONY[0])
enum { TOKEN_CONTROL = 3 };

/* Synthetic SentencePiece vocabulary of n tokens. */
static gguf_status synth_vocab(gguf_writer *w, uint32_t n)
{
    char **toks = calloc(n, sizeof *toks);
    float *scores = calloc(n, sizeof *scores);
    int32_t *types = calloc(n, sizeof *types);
    gguf_status st = GGUF_ENOMEM;
    if (!toks || !scores || !types)
        goto done;
    static const char *syl[] = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po",
                                "an", "el", "is", "ol", "um", "ra"};
    for (uint32_t i = 0; i < n; i++) {
        char b[32];
        if (i == 0)
            snprintf(b, sizeof b, "<unk>");
        else if (i == 1)
            snprintf(b, sizeof b, "<s>");
        else if (i == 2)
            snprintf(b, sizeof b, "</s>");
        else if (i < 259)
            snprintf(b, sizeof b, "<0x%02X>", i - 3);
        else {
            uint32_t k = i - 259;
            /* "\xe2\x96\x81" is SentencePiece's word-start mark */
            snprintf(b, sizeof b, "%s%s%s", (k & 1) ? "\xe2\x96\x81" : "", syl[k % 16],
                     syl[(k / 16) % 16]);
            if (k >= 256)
                snprintf(b + strlen(b), sizeof b - strlen(b), "%u", k / 256);
        }
        toks[i] = strdup(b);
        if (!toks[i])
            goto done;
        scores[i] = i < 259 ? 0.0f : -(float)(i - 259);
        types[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
    }
    if ((st = gguf_writer_set_str(w, "tokenizer.ggml.model", "llama")) ||
        (st = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, n)) ||
        (st = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, scores, n)) ||
        (st = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, types, n)) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0)) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1)) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2)))
        goto done;
    st = GGUF_OK;
done:
    for (uint32_t i = 0; toks && i < n; i++)
        free(toks[i]);
    free(toks);
    free(scores);
    free(types);
    return st;
}

/* The id of token `text` in `tokens`, or -1. */
static int64_t find_token(const gguf_value *tokens, const char *text)
{
    for (uint64_t i = 0; i < tokens->arr_len; i++) {
        gguf_str s;
        if (gguf_arr_str(tokens, i, &s) == GGUF_OK && gguf_str_eq(s, text))
            return (int64_t)i;
    }
    return -1;
}

/* Whether p->vocab gets the Harmony tokens appended. */
static bool needs_harmony(bool harmony, const gguf_value *tokens)
{
    return harmony && find_token(tokens, "<|start|>") < 0;
}

const char *testmodel__vocab_size(const testmodel_params *p, bool harmony, uint32_t *n)
{
    if (!p->vocab) {
        *n = p->n_vocab;
        return p->n_vocab < 259 ? "a synthetic vocabulary needs at least 259 tokens" : NULL;
    }
    const gguf_value *arr;
    if (gguf_get_arr(p->vocab, "tokenizer.ggml.tokens", &arr) != GGUF_OK ||
        arr->arr_type != GGUF_VT_STRING || arr->arr_len == 0 || arr->arr_len > (1u << 24))
        return "the vocabulary file has no tokenizer.ggml.tokens";
    uint64_t k = arr->arr_len;
    if (needs_harmony(harmony, arr))
        for (size_t i = 0; i < N_HARMONY; i++)
            k += find_token(arr, HARMONY[i]) < 0;
    *n = (uint32_t)k;
    return NULL;
}

/* The stand-in's tokens, token types and (when the base has them) scores:
 * the base's, then the Harmony tokens it lacks; then its special ids. */
static gguf_status write_harmony(gguf_writer *w, const gguf_file *v, const gguf_value *tokens)
{
    const uint64_t n0 = tokens->arr_len;
    const gguf_value *types = NULL, *scores = NULL;
    gguf_get_arr(v, "tokenizer.ggml.token_type", &types);
    gguf_get_arr(v, "tokenizer.ggml.scores", &scores);
    const uint64_t cap = n0 + N_HARMONY;
    char **toks = calloc(cap, sizeof *toks);
    int32_t *ty = calloc(cap, sizeof *ty);
    float *sc = calloc(cap, sizeof *sc);
    int64_t id[N_HARMONY];
    gguf_status st = GGUF_ENOMEM;
    uint64_t n = n0;
    if (!toks || !ty || !sc)
        goto done;
    for (uint64_t i = 0; i < n0; i++) {
        gguf_str s;
        int64_t t = 1;
        double f = 0;
        if ((st = gguf_arr_str(tokens, i, &s)))
            goto done;
        if (!(toks[i] = malloc(s.len + 1))) {
            st = GGUF_ENOMEM;
            goto done;
        }
        memcpy(toks[i], s.ptr, s.len);
        toks[i][s.len] = 0;
        if (types && i < types->arr_len)
            gguf_arr_i64(types, i, &t);
        if (scores && i < scores->arr_len)
            gguf_arr_f64(scores, i, &f);
        ty[i] = (int32_t)t;
        sc[i] = (float)f;
    }
    for (size_t h = 0; h < N_HARMONY; h++) {
        id[h] = find_token(tokens, HARMONY[h]);
        if (id[h] < 0) {
            id[h] = (int64_t)n;
            if (!(toks[n] = strdup(HARMONY[h]))) {
                st = GGUF_ENOMEM;
                goto done;
            }
            n++;
        }
        ty[id[h]] = TOKEN_CONTROL;
    }
    if ((st = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, n)) ||
        (st = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, ty, n)) ||
        (scores &&
         (st = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, sc, n))) ||
        (st = gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt-4o")) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)id[0])) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)id[2])) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)id[1])))
        goto done;
    st = GGUF_OK;
done:
    for (uint64_t i = 0; toks && i < n; i++)
        free(toks[i]);
    free(toks);
    free(ty);
    free(sc);
    return st;
}

/* Whether kv's key is `key`. */
static bool key_is(const gguf_kv *kv, const char *key)
{
    return kv->key.len == strlen(key) && !memcmp(kv->key.ptr, key, kv->key.len);
}

gguf_status testmodel__write_vocab(gguf_writer *w, const testmodel_params *p, bool harmony)
{
    if (!p->vocab)
        return synth_vocab(w, p->n_vocab);
    const gguf_value *tokens = NULL;
    if (gguf_get_arr(p->vocab, "tokenizer.ggml.tokens", &tokens) != GGUF_OK)
        return GGUF_EARG;
    const bool stand_in = needs_harmony(harmony, tokens);
    static const char *const replaced[] = {
        "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.scores",
        "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.padding_token_id"};
    gguf_status st;
    for (uint64_t i = 0; i < gguf_kv_count(p->vocab); i++) {
        const gguf_kv *kv = gguf_kv_at(p->vocab, i);
        if (p->chat_template && key_is(kv, "tokenizer.chat_template"))
            continue; /* the caller writes its own */
        bool skip = false;
        for (size_t k = 0; stand_in && k < sizeof replaced / sizeof replaced[0]; k++)
            skip = skip || key_is(kv, replaced[k]);
        if (!skip && kv->key.len > 10 && !memcmp(kv->key.ptr, "tokenizer.", 10) &&
            (st = gguf_writer_copy_kv(w, kv)))
            return st;
    }
    return stand_in ? write_harmony(w, p->vocab, tokens) : GGUF_OK;
}
