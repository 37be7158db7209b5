/* gpt-oss's chat (engine/template/harmony.h and what surrounds it):
 *  - harmony_parse: a reply's channels;
 *  - the tokenizer on an o200k-shaped vocabulary with the Harmony special
 *    tokens: the end-of-generation set (<|return|>, <|call|>, <|endoftext|>;
 *    not <|end|>), the user-defined tokens matched in plain text and
 *    rendered by detokenize (ids checked against ../shared/peer, llama.cpp);
 *  - the gpt-oss Jinja template rendered exactly as @huggingface/jinja does
 *    (tests/data/harmony/gpt-oss.cases.json; the template itself is not in
 *    the repository: $GGSCOPE_GPT_OSS_TEMPLATE or llama.cpp's copy under
 *    /tmp/llama-src, skipped visibly when absent);
 *  - the chat: a scripted Harmony reply streamed as the chat streams it,
 *    stopped at the end-of-generation token, and the next turn's prompt
 *    (only the final channel of earlier replies). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat.h"
#include "chatsession.h"
#include "gguf.h"
#include "harmony.h"
#include "jinja.h"
#include "model.h"
#include "runner.h"
#include "testmodel.h"
#include "testutil.h"
#include "tokenizer.h"

/* ---- harmony_parse ---- */

static void expect_parse(const char *text, const char *final, const char *analysis, bool channels)
{
    harmony_reply h;
    assert_int_equal(harmony_parse(text, strlen(text), &h), 0);
    if (strcmp(h.final, final) || strcmp(h.analysis, analysis) || h.channels != channels)
        fail_msg("[%s]: final [%s] analysis [%s] channels %d; expected [%s] [%s] %d", text, h.final, h.analysis,
                 h.channels, final, analysis, channels);
    assert_int_equal(h.final_len, strlen(final));
    assert_int_equal(h.analysis_len, strlen(analysis));
    harmony_reply_free(&h);
}

static void test_parse(void **state)
{
    (void)state;
    expect_parse("", "", "", false);
    expect_parse("plain words", "plain words", "", false);
    expect_parse("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hello!",
                 "Hello!", "Think.", true);
    expect_parse("<|channel|>final<|message|>Only the answer.<|return|>", "Only the answer.", "", true);
    /* cut off inside the analysis (n_predict): no final yet */
    expect_parse("<|channel|>analysis<|message|>Still thinking", "", "Still thinking", true);
    /* a tool call: the commentary channel counts as the answer */
    expect_parse("<|channel|>analysis<|message|>Need a tool.<|end|><|start|>assistant to=functions.f"
                 "<|channel|>commentary json<|message|>{\"a\": 1}<|call|>",
                 "{\"a\": 1}", "Need a tool.", true);
    /* llama.cpp's built-in format has no channels */
    expect_parse("<|message|>Hi", "Hi", "", true);
    /* two analysis messages, two finals */
    expect_parse("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|>"
                 "<|start|>assistant<|channel|>final<|message|>c<|end|><|start|>assistant<|channel|>final<|message|>d",
                 "c\nd", "a\nb", true);
    /* a message the model did not end: the next header ends it */
    expect_parse("<|channel|>final<|message|>x<|channel|>analysis<|message|>y", "x", "y", true);
    expect_parse("<|message|>a<|message|>b", "a\nb", "", true);
    /* a channel named like analysis is not analysis */
    expect_parse("<|channel|>analysis2<|message|>x", "x", "", true);
    /* the spans: offsets into the text, in order */
    const char *t = "<|channel|>analysis<|message|>ab<|end|><|start|>assistant<|channel|>final<|message|>cde";
    harmony_span sp[4];
    assert_int_equal(harmony_spans(t, strlen(t), sp, 1), 2);
    assert_int_equal(harmony_spans(t, strlen(t), sp, 4), 2);
    assert_int_equal(sp[0].off, 30);
    assert_int_equal(sp[0].len, 2);
    assert_true(sp[0].analysis);
    assert_int_equal(sp[1].off, strlen(t) - 3);
    assert_int_equal(sp[1].len, 3);
    assert_false(sp[1].analysis);
    assert_int_equal(harmony_spans("no markers", 10, sp, 4), 0);
    harmony_reply z = {0};
    harmony_reply_free(&z);
    harmony_reply_free(NULL);
}

/* ---- an o200k-shaped vocabulary ---- */

/* The Harmony specials appended to GPT-2's vocabulary (50257 tokens, whose
 * last is <|endoftext|>), in the order of o200k_harmony's ids 199998... */
static const char *const SPECIALS[] = {"<|startoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
                                       "<|start|>",       "<|end|>",    "<|message|>",   "<|call|>"};
enum { N_SPECIALS = 8, GPT2_N = 50257, ID_EOT = 50256 };
enum { ID_SOT = GPT2_N, ID_RETURN, ID_CONSTRAIN, ID_CHANNEL, ID_START, ID_END, ID_MESSAGE, ID_CALL };

/* GPT-2's vocabulary with pre-tokenizer "gpt-4o", the Harmony specials
 * (control tokens, as converted files store them), BOS <|startoftext|>, EOS
 * <|return|>, padding <|endoftext|>, as gpt-oss files have; in memory (*mem:
 * free it after gguf_close). NULL when ../shared is absent. With
 * $GGSCOPE_HARMONY_VOCAB_OUT set, the file is also written there (for
 * checking against ../shared/peer/peer tokenize / detokenize). */
static gguf_file *harmony_vocab(uint8_t **mem)
{
    const char *path = tu_shared("fixtures/vocab/ggml-vocab-gpt-2.gguf");
    if (!path)
        return NULL;
    gguf_error ge;
    gguf_file *base = gguf_open(path, &ge);
    assert_non_null(base);
    const gguf_value *toks, *types;
    assert_int_equal(gguf_get_arr(base, "tokenizer.ggml.tokens", &toks), GGUF_OK);
    assert_int_equal(gguf_get_arr(base, "tokenizer.ggml.token_type", &types), GGUF_OK);
    assert_int_equal(toks->arr_len, GPT2_N);
    const char **t = calloc(GPT2_N + N_SPECIALS, sizeof *t);
    int32_t *ty = calloc(GPT2_N + N_SPECIALS, sizeof *ty);
    char **own = calloc(GPT2_N, sizeof *own);
    assert_true(t && ty && own);
    for (uint64_t i = 0; i < GPT2_N; i++) {
        gguf_str s;
        int64_t v;
        assert_int_equal(gguf_arr_str(toks, i, &s), GGUF_OK);
        assert_int_equal(gguf_arr_i64(types, i, &v), GGUF_OK);
        own[i] = malloc(s.len + 1);
        memcpy(own[i], s.ptr, s.len);
        own[i][s.len] = 0;
        t[i] = own[i];
        ty[i] = (int32_t)v;
    }
    for (int k = 0; k < N_SPECIALS; k++) {
        t[GPT2_N + k] = SPECIALS[k];
        ty[GPT2_N + k] = 3; /* control */
    }
    gguf_writer *w = gguf_writer_new(0);
    assert_non_null(w);
    static const char *const REPLACED[] = {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                                           "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id",
                                           "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id",
                                           "general.architecture"};
    for (uint64_t i = 0; gguf_kv_at(base, i); i++) {
        const gguf_kv *kv = gguf_kv_at(base, i);
        bool skip = false;
        for (size_t r = 0; r < sizeof REPLACED / sizeof REPLACED[0]; r++)
            skip |= kv == gguf_find_kv(base, REPLACED[r]);
        if (!skip)
            assert_int_equal(gguf_writer_copy_kv(w, kv), GGUF_OK);
    }
    assert_int_equal(gguf_writer_set_str(w, "general.architecture", "gpt-oss"), GGUF_OK);
    assert_int_equal(gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt-4o"), GGUF_OK);
    assert_int_equal(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", t, GPT2_N + N_SPECIALS), GGUF_OK);
    assert_int_equal(gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, ty, GPT2_N + N_SPECIALS),
                     GGUF_OK);
    assert_int_equal(gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", ID_SOT), GGUF_OK);
    assert_int_equal(gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", ID_RETURN), GGUF_OK);
    assert_int_equal(gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", ID_EOT), GGUF_OK);
    size_t size;
    assert_int_equal(gguf_writer_to_memory(w, mem, &size), GGUF_OK);
    gguf_writer_free(w);
    for (uint64_t i = 0; i < GPT2_N; i++)
        free(own[i]);
    free(own);
    free(t);
    free(ty);
    gguf_close(base);
    const char *out = getenv("GGSCOPE_HARMONY_VOCAB_OUT");
    if (out) {
        FILE *fp = fopen(out, "wb");
        assert_non_null(fp);
        assert_int_equal(fwrite(*mem, 1, size, fp), size);
        fclose(fp);
    }
    gguf_file *f = gguf_open_memory(*mem, size, "harmony-vocab", &ge);
    assert_non_null(f);
    return f;
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

/* Expected values: llama.cpp through ../shared/peer's node-llama-cpp, on this
 * vocabulary written out (GGSCOPE_HARMONY_VOCAB_OUT): tokenize with and
 * without special parsing, detokenize with special false / true,
 * llama_vocab_is_eog and the token attributes. */
static void test_vocab(void **state)
{
    (void)state;
    uint8_t *mem;
    gguf_file *f = harmony_vocab(&mem);
    if (!f)
        TU_SKIP_NO_SHARED();
    tok_error te;
    tok_vocab *v = tok_open(f, &te);
    assert_non_null(v);

    /* the end-of-generation set: <|return|>, <|call|>, <|endoftext|>; <|end|> ends a message only */
    for (tok_id id = 0; id < GPT2_N + N_SPECIALS; id++) {
        bool want = id == ID_RETURN || id == ID_CALL || id == ID_EOT;
        if (tok_is_eog(v, id) != want)
            fail_msg("token %d: eog %d, expected %d", id, tok_is_eog(v, id), want);
    }
    static const tok_id USER[] = {ID_CONSTRAIN, ID_CHANNEL, ID_START, ID_END, ID_MESSAGE};
    for (size_t i = 0; i < sizeof USER / sizeof USER[0]; i++)
        assert_int_equal(tok_attr(v, USER[i]), TOK_ATTR_USER_DEFINED);
    static const tok_id CONTROL[] = {ID_EOT, ID_SOT, ID_RETURN, ID_CALL};
    for (size_t i = 0; i < sizeof CONTROL / sizeof CONTROL[0]; i++)
        assert_int_equal(tok_attr(v, CONTROL[i]), TOK_ATTR_CONTROL);
    assert_int_equal(tok_eos(v), ID_RETURN);
    assert_int_equal(tok_bos(v), ID_SOT);
    assert_false(tok_add_bos(v));

    /* the user-defined specials are matched in plain text, the control ones only when parsing specials */
    static const struct {
        const char *text;
        tok_id plain[32], special[32];
    } T[] = {
        {"<|start|>assistant<|channel|>final<|message|>Hi there<|end|>",
         {50261, 562, 10167, 50260, 20311, 50263, 17250, 612, 50262, -1},
         {50261, 562, 10167, 50260, 20311, 50263, 17250, 612, 50262, -1}},
        {"<|return|> and <|call|> and <|endoftext|> and <|startoftext|>",
         {27, 91, 7783, 91, 29, 290, 1279, 91, 13345, 91, 29, 290, 1279, 91, 437, 1659, 5239, 91, 29, 290, 1279, 91,
          9688, 1659, 5239, 91, 29, -1},
         {50258, 290, 220, 50264, 290, 220, 50256, 290, 220, 50257, -1}},
        {"x<|constrain|>json<|message|>{}", {87, 50259, 17752, 50263, 90, 92, -1}, {87, 50259, 17752, 50263, 90, 92, -1}},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        for (int sp = 0; sp < 2; sp++) {
            const tok_id *want = sp ? T[i].special : T[i].plain;
            tok_id ids[64];
            size_t n = tokenize(v, T[i].text, sp ? TOK_PARSE_SPECIAL : 0, ids, 64), nw = 0;
            while (want[nw] >= 0)
                nw++;
            if (n != nw || memcmp(ids, want, n * sizeof *ids))
                fail_msg("'%s' (special %d): %zu tokens, expected %zu (first difference at %zu)", T[i].text, sp,
                         n, nw, n);
        }
    }

    /* detokenize renders the user-defined tokens without TOK_DETOK_SPECIAL */
    static const tok_id IDS[] = {50261, 562, 10167, 50260, 20311, 50263, 17250, 50262, 50258, 50264, 50256, 50257, 50259};
    static const char *const WANT[2] = {
        "<|start|>assistant<|channel|>final<|message|>Hi<|end|><|constrain|>",
        "<|start|>assistant<|channel|>final<|message|>Hi<|end|><|return|><|call|><|endoftext|><|startoftext|><|constrain|>"};
    for (int sp = 0; sp < 2; sp++) {
        char *out;
        size_t len;
        assert_int_equal(tok_detokenize(v, IDS, sizeof IDS / sizeof IDS[0], sp ? TOK_DETOK_SPECIAL : 0, &out, &len),
                         TOK_OK);
        assert_string_equal(out, WANT[sp]);
        free(out);
    }
    tok_close(v);
    gguf_close(f);
    free(mem);
}

/* ---- the gpt-oss template ---- */

#define CASES "tests/data/harmony/gpt-oss.cases.json"

/* The gpt-oss template's text (malloc'd), or NULL when no copy is found. */
static char *gpt_oss_template(void)
{
    const char *env = getenv("GGSCOPE_GPT_OSS_TEMPLATE");
    const char *path = env && *env ? env : "/tmp/llama-src/models/templates/openai-gpt-oss-120b.jinja";
    return (char *)tu_read_file(path, NULL);
}

static time_t local_noon(const char *date)
{
    struct tm tm = {0};
    assert_int_equal(sscanf(date, "%d-%d-%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday), 3);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_hour = 12;
    tm.tm_isdst = -1;
    return mktime(&tm);
}

static void test_template_goldens(void **state)
{
    (void)state;
    char *src = gpt_oss_template();
    if (!src) {
        print_message("SKIP: no copy of the gpt-oss template (set GGSCOPE_GPT_OSS_TEMPLATE to "
                      "llama.cpp's models/templates/openai-gpt-oss-120b.jinja)\n");
        skip();
    }
    jinja_error e;
    jinja_template *t = jinja_parse(src, strlen(src), &e);
    if (!t)
        fail_msg("the gpt-oss template does not parse: line %d col %d: %s", e.line, e.col, e.msg);
    char *cj = (char *)tu_read_file(CASES, NULL);
    assert_non_null(cj);
    cJSON *arr = cJSON_Parse(cj);
    assert_true(cJSON_IsArray(arr));
    int cases = 0, raising = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, arr) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        cJSON *vars = cJSON_Duplicate(cJSON_GetObjectItem(c, "vars"), 1);
        if (!vars)
            vars = cJSON_CreateObject();
        static const char *KEYS[] = {"messages", "add_generation_prompt", "bos_token", "eos_token"};
        for (int k = 0; k < 4; k++)
            cJSON_AddItemToObject(vars, KEYS[k], cJSON_Duplicate(cJSON_GetObjectItem(c, KEYS[k]), 1));
        jinja_limits lim = {0};
        lim.now = local_noon(cJSON_GetObjectItem(c, "date")->valuestring);
        char *out = jinja_render(t, vars, &lim, NULL, &e);
        const cJSON *want = cJSON_GetObjectItem(c, "expected");
        if (want) {
            if (!out)
                fail_msg("%s: render failed: %s", name, e.msg);
            if (strcmp(out, want->valuestring))
                fail_msg("%s: rendered\n[%s]\nexpected\n[%s]", name, out, want->valuestring);
        } else {
            const cJSON *err = cJSON_GetObjectItem(c, "error");
            assert_non_null(err);
            if (out)
                fail_msg("%s: rendered instead of raising '%s'", name, err->valuestring);
            assert_int_equal(e.code, JINJA_ERAISE);
            assert_string_equal(e.msg, err->valuestring);
            raising++;
        }
        cases++;
        free(out);
        cJSON_Delete(vars);
    }
    print_message("gpt-oss template: %d golden cases (%d raising) rendered exactly\n", cases, raising);
    assert_true(cases >= 10);
    cJSON_Delete(arr);
    free(cj);
    jinja_free(t);
    free(src);
}

/* ---- the chat ---- */

/* A stand-in Harmony template (the shape of gpt-oss's, short): the analysis
 * of the last assistant turn only when no generation prompt follows, the
 * channel markup in content refused as the real template refuses it. */
static const char STAND_IN[] =
    "{%- for m in messages -%}"
    "{%- if m.role == 'assistant' -%}"
    "{%- if '<|channel|>analysis<|message|>' in m.content or '<|channel|>final<|message|>' in m.content -%}"
    "{{ raise_exception('channel tags in content') }}{%- endif -%}"
    "{%- if loop.last and not add_generation_prompt and m.thinking is defined -%}"
    "<|start|>assistant<|channel|>analysis<|message|>{{ m.thinking }}<|end|>{%- endif -%}"
    "<|start|>assistant<|channel|>final<|message|>{{ m.content }}<|end|>"
    "{%- else -%}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}";

/* What the chat's generation (chs_generate) makes of a reply's tokens: each
 * token's text through the streaming detokenizer without special tokens,
 * up to and without the first end-of-generation token (the runner stops
 * there). Returns the text (malloc'd) and the tokens used in *used. */
static char *stream_reply(const tok_vocab *v, const tok_id *ids, size_t n, size_t *used)
{
    tok_stream *ts = tok_stream_new(v, 0);
    assert_non_null(ts);
    char *text = calloc(1, 4096);
    size_t len = 0, i;
    for (i = 0; i < n; i++) {
        if (tok_is_eog(v, ids[i])) {
            i++;
            break;
        }
        size_t l;
        const char *p = tok_stream_push(ts, ids[i], &l);
        assert_non_null(p);
        assert_true(len + l < 4096);
        memcpy(text + len, p, l);
        len += l;
    }
    size_t l;
    const char *p = tok_stream_flush(ts, &l);
    memcpy(text + len, p, l);
    tok_stream_free(ts);
    *used = i;
    return text;
}

/* A one-layer random-weight model with the o200k-shaped vocabulary and
 * `tmpl` as its chat template, a CPU runner and a chat on it. */
typedef struct {
    tu_model *fx;
    runner *r;
    chs *c;
} chat_fx;

static bool open_chat(chat_fx *x, const char *tmpl)
{
    uint8_t *mem;
    gguf_file *vf = harmony_vocab(&mem);
    if (!vf)
        return false;
    testmodel_params p = testmodel_default_params();
    p.n_layer = 1;
    p.n_embd = 32;
    p.n_ff = 32;
    p.vocab = vf;
    p.chat_template = tmpl;
    x->fx = tu_model_open(&p, "harmony-chat");
    gguf_close(vf);
    free(mem);
    char msg[512];
    runner_params rp = {.backend = "cpu", .device = -1, .threads = 1, .n_ctx = 512};
    if (runner_open(x->fx->m, &rp, &x->r, msg, sizeof msg))
        fail_msg("runner_open: %s", msg);
    x->c = chs_new(x->fx->f, x->r, msg, sizeof msg);
    if (!x->c)
        fail_msg("chs_new: %s", msg);
    return true;
}

static void close_chat(chat_fx *x)
{
    chs_free(x->c);
    runner_close(x->r);
    tu_model_close(x->fx);
}

/* Tokenize text with specials parsed (the scripted reply). */
static size_t script(const tok_vocab *v, const char *text, tok_id *ids, size_t cap)
{
    return tokenize(v, text, TOK_PARSE_SPECIAL, ids, cap);
}

/* One conversation through the chat: a user turn, a scripted reply with an
 * analysis and a final channel (the <|end|> between them does not stop
 * it; <|return|> does, and what follows it is never reached), a second
 * user turn whose prompt keeps only the first reply's final channel. */
static void chat_conversation(const char *tmpl, const char *want_prefix)
{
    chat_fx x = {0};
    if (!open_chat(&x, tmpl))
        TU_SKIP_NO_SHARED();
    const tok_vocab *v = chs_vocab(x.c);
    assert_true(chat_template_is_harmony(chs_template(x.c)));
    assert_int_equal(chs_set_system(x.c, "Be brief."), 0);
    assert_int_equal(chs_add(x.c, "user", "Hi", 2), 0);
    size_t len;
    chat_result res;
    char *p1 = chs_render(x.c, true, &len, &res);
    assert_non_null(p1);
    assert_int_equal(res.format, CHAT_FORMAT_TEMPLATE);
    assert_true(strncmp(p1, want_prefix, strlen(want_prefix)) == 0);
    assert_true(len >= 18 && !strcmp(p1 + len - 18, "<|start|>assistant"));

    tok_id ids[128];
    size_t n = script(v,
                      "<|channel|>analysis<|message|>The user greets.<|end|>"
                      "<|start|>assistant<|channel|>final<|message|>Hello!<|return|>never<|end|>",
                      ids, 128);
    size_t used;
    char *reply = stream_reply(v, ids, n, &used);
    assert_string_equal(reply, "<|channel|>analysis<|message|>The user greets.<|end|>"
                               "<|start|>assistant<|channel|>final<|message|>Hello!");
    assert_int_equal(ids[used - 1], ID_RETURN);
    assert_int_equal(chs_add_reply(x.c, reply, strlen(reply), NULL, 0, NULL), 0);
    assert_int_equal(chs_add(x.c, "user", "Again", 5), 0);
    char *p2 = chs_render(x.c, true, &len, &res);
    assert_non_null(p2);
    if (res.format != CHAT_FORMAT_TEMPLATE)
        fail_msg("the second turn fell back: %s", res.status);
    const char *turn = "<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|end|>"
                       "<|start|>user<|message|>Again<|end|><|start|>assistant";
    if (!strstr(p2, turn) || strstr(p2, "The user greets."))
        fail_msg("second prompt:\n%s", p2);
    /* the same through the prompt builder the chat uses */
    int32_t *pids;
    size_t np;
    unsigned dropped;
    char msg[512];
    assert_int_equal(chs_prompt(x.c, &pids, &np, &dropped, msg, sizeof msg), 0);
    char *back;
    size_t bl;
    assert_int_equal(tok_detokenize(v, pids, np, TOK_DETOK_SPECIAL, &back, &bl), TOK_OK);
    assert_string_equal(back, p2);
    free(back);
    free(pids);

    /* a tool call ends the reply at <|call|> */
    n = script(v, "<|channel|>commentary to=functions.f json<|message|>{}<|call|><|start|>", ids, 128);
    char *call = stream_reply(v, ids, n, &used);
    assert_string_equal(call, "<|channel|>commentary to=functions.f json<|message|>{}");
    assert_int_equal(ids[used - 1], ID_CALL);
    free(call);
    free(reply);
    free(p1);
    free(p2);
    close_chat(&x);
}

static void test_chat_stand_in(void **state)
{
    (void)state;
    chat_conversation(STAND_IN, "<|start|>system<|message|>Be brief.<|end|><|start|>user<|message|>Hi<|end|>");
}

static void test_chat_gpt_oss(void **state)
{
    (void)state;
    char *src = gpt_oss_template();
    if (!src) {
        print_message("SKIP: no copy of the gpt-oss template (GGSCOPE_GPT_OSS_TEMPLATE)\n");
        skip();
    }
    chat_conversation(src, "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n");
    free(src);
}

/* Replies of random pieces (what a random-weight model writes): the next
 * prompt never falls back, through the stand-in and, when found, the real
 * template, and no channel body holds markup. */
static void test_noise(void **state)
{
    (void)state;
    static const char *const P[] = {"<|channel|>", "<|message|>", "<|start|>", "<|end|>", "<|constrain|>",
                                    "analysis",    "final",       "assistant", "x",       " ", "commentary"};
    char *real = gpt_oss_template();
    chat_template *ct[2] = {chat_template_new(STAND_IN, "", ""), real ? chat_template_new(real, "", "") : NULL};
    uint32_t seed = 12345;
    for (int it = 0; it < 1500; it++) {
        char text[512] = "";
        int n = 1 + it % 12;
        for (int k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            strcat(text, P[(seed >> 16) % (sizeof P / sizeof P[0])]);
        }
        harmony_reply h;
        assert_int_equal(harmony_parse(text, strlen(text), &h), 0);
        if (h.channels && (strstr(h.final, "<|channel|>") || strstr(h.final, "<|message|>") ||
                           strstr(h.analysis, "<|channel|>") || strstr(h.analysis, "<|message|>")))
            fail_msg("[%s]: markup in a body: [%s] [%s]", text, h.final, h.analysis);
        harmony_reply_free(&h);
        chat_message m[] = {{"user", "q"}, {"assistant", text}, {"user", "r"}};
        chat_opts o = {.add_generation_prompt = true};
        for (int t = 0; t < 2; t++) {
            if (!ct[t])
                continue;
            chat_result r;
            char *out = chat_render(ct[t], m, 3, &o, NULL, &r);
            assert_non_null(out);
            if (r.fallback)
                fail_msg("[%s] (%s template): %s", text, t ? "gpt-oss" : "stand-in", r.status);
            free(out);
        }
    }
    chat_template_free(ct[0]);
    chat_template_free(ct[1]);
    free(real);
}

/* The built-in format (a gpt-oss file without a template): llama.cpp's */
static void test_chat_builtin(void **state)
{
    (void)state;
    chat_template *ct = chat_template_new_builtin(CHAT_FORMAT_HARMONY, "", "");
    assert_true(chat_template_is_harmony(ct));
    chat_message m[] = {{"system", "S"}, {"user", "Hi"},
                        {"assistant", "<|channel|>analysis<|message|>t<|end|><|start|>assistant<|channel|>final<|message|>Yo"},
                        {"user", "Bye"}};
    chat_opts o = {.add_generation_prompt = true};
    chat_result r;
    char *out = chat_render(ct, m, 4, &o, NULL, &r);
    assert_string_equal(out, "<|start|>system<|message|>S<|end|><|start|>user<|message|>Hi<|end|>"
                             "<|start|>assistant<|message|>Yo<|return|><|start|>user<|message|>Bye<|end|>"
                             "<|start|>assistant");
    assert_string_equal(chat_format_name(r.format), "Harmony");
    free(out);
    chat_template_free(ct);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_vocab),
        cmocka_unit_test(test_template_goldens),
        cmocka_unit_test(test_chat_stand_in),
        cmocka_unit_test(test_chat_gpt_oss),
        cmocka_unit_test(test_chat_builtin),
        cmocka_unit_test(test_noise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
