/* Chat session logic without a terminal: a second turn evaluates only the
 * tokens after the prefix the KV cache shares with it (engine counters), and
 * its reply equals the reply of a fresh session; context overflow drops the
 * oldest turns and keeps the system prompt; cancellation; /regen and /edit
 * helpers; /set; save / load round trip (atomic, bad files rejected). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "chatsession.h"
#include "model.h"
#include "runner.h"
#include "session.h"
#include "testmodel.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    tu_model *tm;   /* the written-and-loaded model */
    runner *r;
    session *s;   /* the runner's (CPU: never replaced) */
    chs *c;
} fixture;

static fixture *open_fx(const char *tag, uint32_t n_ctx)
{
    fixture *fx = calloc(1, sizeof *fx);
    testmodel_params p = testmodel_default_params();
    p.n_layer = 1;
    p.n_embd = 64;
    p.n_ff = 64;
    fx->tm = tu_model_open(&p, tag);
    char msg[512];
    runner_params rp = {.backend = "cpu", .device = -1, .threads = 1, .n_ctx = n_ctx};
    if (runner_open(fx->tm->m, &rp, &fx->r, msg, sizeof msg))
        fail_msg("runner_open: %s", msg);
    fx->s = runner_session(fx->r);
    fx->c = chs_new(fx->tm->f, fx->r, msg, sizeof msg);
    if (!fx->c)
        fail_msg("chs_new: %s", msg);
    chs_settings cs = chs_get_settings(fx->c);
    cs.sp.temp = 0;
    cs.sp.repeat_penalty = 1;
    cs.n_predict = 6;
    chs_set_settings(fx->c, &cs);
    return fx;
}

static void close_fx(fixture *fx)
{
    chs_free(fx->c);
    runner_close(fx->r);
    tu_model_close(fx->tm);
    free(fx);
}

typedef struct {
    char text[4096];
    size_t len;
    int32_t ids[512];
    size_t n;
    chs_tokinfo ti[512];
    size_t cancel_after;
    atomic_bool cancel;
} collect;

static void on_tok(void *ctx, const char *t, size_t len, const chs_tokinfo *ti)
{
    collect *co = ctx;
    if (ti->id >= 0 && co->n < 512) {
        co->ti[co->n] = *ti;
        co->ids[co->n++] = ti->id;
    } else if (ti->id < 0 && co->n) {
        co->ti[co->n - 1].len += ti->len;   /* held bytes flushed at the end */
    }
    if (co->len + len < sizeof co->text) {
        memcpy(co->text + co->len, t, len);
        co->len += len;
        co->text[co->len] = 0;
    }
    if (co->cancel_after && co->n >= co->cancel_after)
        atomic_store(&co->cancel, true);
}

/* One turn: prompt, generate, append the reply. */
static chs_reply_stats turn(fixture *fx, const char *user, collect *co, int32_t **ids_out, size_t *n_out)
{
    if (user)
        assert_int_equal(chs_add(fx->c, "user", user, strlen(user)), 0);
    int32_t *ids;
    size_t n;
    char msg[512];
    unsigned dropped;
    if (chs_prompt(fx->c, &ids, &n, &dropped, msg, sizeof msg))
        fail_msg("chs_prompt: %s", msg);
    memset(co, 0, sizeof *co);
    atomic_init(&co->cancel, false);
    chs_sink sk = {on_tok, co, &co->cancel, 0, NULL};
    chs_settings st = chs_get_settings(fx->c);
    chs_reply_stats rs;
    if (chs_generate(fx->c, ids, n, &st, &sk, &rs, msg, sizeof msg))
        fail_msg("chs_generate: %s", msg);
    assert_int_equal(chs_add_reply(fx->c, co->text, co->len, co->ti, co->n, &rs), 0);
    if (ids_out) {
        *ids_out = ids;
        *n_out = n;
    } else {
        free(ids);
    }
    return rs;
}

static void test_second_turn_reuses_prefix(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-reuse.gguf", 512);
    assert_int_equal(chs_set_system(fx->c, "You are terse."), 0);
    collect *co = calloc(1, sizeof *co);
    int32_t *ids1, *ids2;
    size_t n1, n2;
    chs_reply_stats r1 = turn(fx, "hello there", co, &ids1, &n1);
    assert_int_equal(r1.n_reused, 0);
    assert_int_equal(r1.n_eval, n1);
    assert_true(r1.n_gen >= 1);
    /* what the cache holds now: the prompt and every generated token that was fed back */
    size_t n_held = chs_held(fx->c);
    int32_t held[1024];
    memcpy(held, ids1, n1 * sizeof *ids1);
    size_t fed = r1.stop == CHS_STOP_EOG || r1.stop == CHS_STOP_LIMIT ? co->n - 1 : co->n;
    memcpy(held + n1, co->ids, fed * sizeof *held);
    assert_int_equal(n_held, n1 + fed);
    assert_int_equal(session_used(fx->s), n_held);

    session_reset_stats(fx->s);
    chs_reply_stats r2 = turn(fx, "and again", co, &ids2, &n2);
    session_stats ss = session_get_stats(fx->s);
    size_t lcp = 0;
    while (lcp < n_held && lcp < n2 && held[lcp] == ids2[lcp])
        lcp++;
    print_message("turn 1: %zu prompt tokens; turn 2: %zu prompt tokens, %u reused, %u evaluated\n", n1,
                  n2, r2.n_reused, r2.n_eval);
    assert_true(n2 > n1);
    assert_int_equal(r2.n_reused, lcp);
    assert_int_equal(r2.n_eval, n2 - lcp);
    /* the shared prefix covers at least the first turn's prompt but its last few tokens */
    assert_true(lcp + 4 >= n1);
    /* the engine's counters: only the new prompt tokens plus the reply's fed-back tokens */
    size_t fed2 = r2.stop == CHS_STOP_EOG || r2.stop == CHS_STOP_LIMIT ? co->n - 1 : co->n;
    assert_int_equal(ss.n_prompt_tokens + ss.n_gen_tokens, (n2 - lcp) + fed2);
    assert_true(ss.n_prompt_tokens + ss.n_gen_tokens < n2);

    /* the reply with reuse equals the reply of a fresh cache on the same prompt */
    char reply2[4096];
    snprintf(reply2, sizeof reply2, "%s", co->text);
    int32_t ids_reply2[512];
    size_t nr2 = co->n;
    memcpy(ids_reply2, co->ids, nr2 * sizeof *ids_reply2);
    chs_reset_cache(fx->c);
    chs_settings st = chs_get_settings(fx->c);
    chs_sink sk = {on_tok, co, NULL, 0, NULL};
    memset(co, 0, sizeof *co);
    chs_reply_stats r3;
    char msg[256];
    assert_int_equal(chs_generate(fx->c, ids2, n2, &st, &sk, &r3, msg, sizeof msg), 0);
    assert_int_equal(r3.n_reused, 0);
    assert_int_equal(co->n, nr2);
    assert_memory_equal(co->ids, ids_reply2, nr2 * sizeof *ids_reply2);
    assert_string_equal(co->text, reply2);
    /* the same prompt again: everything but the last token is reused */
    memset(co, 0, sizeof *co);
    session_reset_stats(fx->s);
    assert_int_equal(chs_generate(fx->c, ids2, n2, &st, &sk, &r3, msg, sizeof msg), 0);
    assert_int_equal(r3.n_reused, n2 - 1);
    assert_int_equal(r3.n_eval, 1);
    assert_memory_equal(co->ids, ids_reply2, nr2 * sizeof *ids_reply2);
    free(ids1);
    free(ids2);
    free(co);
    close_fx(fx);
}

static bool utf8_valid(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : 9;
        if (k == 9 || i + k >= n + (k ? 0 : 1))
            return false;
        for (size_t j = 1; j <= k; j++)
            if (((unsigned char)s[i + j] & 0xC0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

static void test_token_info(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-info.gguf", 256);
    chs_settings cs = chs_get_settings(fx->c);
    cs.n_predict = 40;   /* random weights: plenty of byte tokens */
    chs_set_settings(fx->c, &cs);
    collect *co = calloc(1, sizeof *co);
    turn(fx, "hi", co, NULL, NULL);
    const chs_msg *m = chs_at(fx->c, 1);
    assert_non_null(m);
    /* the streamed text is valid UTF-8 (split characters held, malformed
     * bytes as U+FFFD) and the tokens' byte ranges tile it */
    assert_true(utf8_valid(m->content, m->len));
    size_t covered = 0;
    for (size_t i = 0; i < m->n_toks; i++) {
        assert_int_equal(m->toks[i].off, covered);
        covered += m->toks[i].len;
    }
    assert_int_equal(covered, m->len);
    size_t held = 0;
    for (size_t i = 0; i < m->n_toks; i++)
        held += m->toks[i].len == 0;
    print_message("reply: %zu tokens, %zu bytes, %zu tokens that completed no character\n", m->n_toks, m->len,
                  held);
    assert_string_equal(m->role, "assistant");
    assert_true(m->n_toks >= 1);
    for (size_t i = 0; i < m->n_toks; i++) {
        const chs_tokinfo *t = &m->toks[i];
        assert_true(t->prob > 0 && t->prob <= 1.0f);
        assert_true(t->entropy >= 0);
        assert_true(t->n_alt >= 1 && t->n_alt <= SAMPLER_N_ALT);
        /* greedy: the chosen token is the most probable one */
        assert_int_equal(t->alt_id[0], t->id);
        for (int k = 1; k < t->n_alt; k++)
            assert_true(t->alt_prob[k] <= t->alt_prob[k - 1]);
    }
    free(co);
    close_fx(fx);
}

static void test_cancel(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-cancel.gguf", 256);
    chs_settings cs = chs_get_settings(fx->c);
    cs.n_predict = 100;
    chs_set_settings(fx->c, &cs);
    assert_int_equal(chs_add(fx->c, "user", "go", 2), 0);
    int32_t *ids;
    size_t n;
    char msg[256];
    assert_int_equal(chs_prompt(fx->c, &ids, &n, NULL, msg, sizeof msg), 0);
    collect *co = calloc(1, sizeof *co);
    atomic_init(&co->cancel, false);
    co->cancel_after = 3;
    chs_sink sk = {on_tok, co, &co->cancel, 0, NULL};
    chs_reply_stats rs;
    assert_int_equal(chs_generate(fx->c, ids, n, &cs, &sk, &rs, msg, sizeof msg), 0);
    if (rs.stop == CHS_STOP_EOG)
        assert_true(rs.n_gen <= 3);
    else {
        assert_int_equal(rs.stop, CHS_STOP_CANCEL);
        assert_int_equal(rs.n_gen, 3);   /* stopped within one token */
    }
    /* a pending engine cancel does not break the next reply */
    session_cancel(fx->s);
    chs_sink sk2 = {on_tok, co, NULL, 0, NULL};
    co->cancel_after = 0;
    assert_int_equal(chs_generate(fx->c, ids, n, &cs, &sk2, &rs, msg, sizeof msg), 0);
    assert_int_not_equal(rs.stop, CHS_STOP_CANCEL);
    free(ids);
    free(co);
    close_fx(fx);
}

static void test_overflow_drops_oldest(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-overflow.gguf", 256);
    assert_int_equal(chs_set_system(fx->c, "SYS"), 0);
    char line[64];
    for (int i = 0; i < 6; i++) {
        snprintf(line, sizeof line, "question number %d", i);
        assert_int_equal(chs_add(fx->c, "user", line, strlen(line)), 0);
        snprintf(line, sizeof line, "answer number %d", i);
        assert_int_equal(chs_add(fx->c, "assistant", line, strlen(line)), 0);
    }
    assert_int_equal(chs_add(fx->c, "user", "last", 4), 0);
    int32_t *ids;
    size_t n;
    unsigned dropped = 0;
    char msg[256];
    assert_int_equal(chs_prompt(fx->c, &ids, &n, &dropped, msg, sizeof msg), 0);
    chs_settings st = chs_get_settings(fx->c);
    assert_true(dropped > 0);
    assert_true(dropped % 2 == 0);   /* whole turns: a question and its answer */
    assert_true(n + (size_t)st.n_predict <= 256);
    for (unsigned i = 0; i < dropped; i++)
        assert_true(chs_at(fx->c, i)->dropped);
    assert_false(chs_at(fx->c, dropped)->dropped);
    assert_false(chs_at(fx->c, chs_count(fx->c) - 1)->dropped);
    size_t len;
    char *text = chs_render(fx->c, true, &len, NULL);
    assert_non_null(strstr(text, "SYS"));
    assert_null(strstr(text, "question number 0"));
    assert_non_null(strstr(text, "last"));
    free(text);
    /* a reply still fits */
    collect *co = calloc(1, sizeof *co);
    chs_sink sk = {on_tok, co, NULL, 0, NULL};
    chs_reply_stats rs;
    assert_int_equal(chs_generate(fx->c, ids, n, &st, &sk, &rs, msg, sizeof msg), 0);
    assert_int_not_equal(rs.stop, CHS_STOP_ERROR);
    free(ids);
    /* a single message longer than the context is an error, not a crash */
    chs_clear(fx->c);
    char big[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_int_equal(chs_add(fx->c, "user", big, strlen(big)), 0);
    assert_int_equal(chs_prompt(fx->c, &ids, &n, &dropped, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "does not fit"));
    free(co);
    close_fx(fx);
}

static void test_regen_edit_set(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-edit.gguf", 128);
    chs *c = fx->c;
    assert_false(chs_pop_reply(c));
    assert_null(chs_pop_user(c));
    chs_add(c, "user", "one", 3);
    chs_add(c, "assistant", "uno", 3);
    chs_add(c, "user", "two", 3);
    chs_add(c, "assistant", "dos", 3);
    assert_true(chs_pop_reply(c));
    assert_int_equal(chs_count(c), 3);
    assert_true(chs_pop_reply(c));   /* already ends with the user message */
    chs_add(c, "assistant", "dos", 3);
    char *t = chs_pop_user(c);
    assert_string_equal(t, "two");
    free(t);
    assert_int_equal(chs_count(c), 2);
    char msg[256];
    assert_int_equal(chs_set(c, "temp", "0.25", msg, sizeof msg), 0);
    assert_int_equal(chs_set(c, "top_k", "7", msg, sizeof msg), 0);
    assert_int_equal(chs_set(c, "seed", "18446744073709551615", msg, sizeof msg), 0);
    assert_int_equal(chs_set(c, "n_predict", "33", msg, sizeof msg), 0);
    assert_int_equal(chs_set(c, "temp", "abc", msg, sizeof msg), -1);
    assert_int_equal(chs_set(c, "repeat_penalty", "0", msg, sizeof msg), -1);
    assert_int_equal(chs_set(c, "bogus", "1", msg, sizeof msg), -1);
    chs_settings st = chs_get_settings(c);
    assert_true(st.sp.temp == 0.25f);
    assert_int_equal(st.sp.top_k, 7);
    assert_true(st.sp.seed == UINT64_MAX);
    assert_int_equal(st.n_predict, 33);
    close_fx(fx);
}

static void test_save_load(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-save.gguf", 128);
    chs *c = fx->c;
    char msg[256];
    chs_set_system(c, "be \"kind\"\n");
    const char *uni = "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80\nline 2";
    chs_add(c, "user", uni, strlen(uni));
    chs_add(c, "assistant", "fine", 4);
    chs_set(c, "temp", "0.5", msg, sizeof msg);
    chs_set(c, "seed", "12345678901234567", msg, sizeof msg);
    chs_set(c, "n_predict", "77", msg, sizeof msg);
    char path[600];
    snprintf(path, sizeof path, "%s", tu_tmp_path("chs-session.json"));
    assert_int_equal(chs_save(c, path, msg, sizeof msg), 0);
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    assert_int_not_equal(access(tmp, F_OK), 0);   /* renamed into place */

    chs_clear(c);
    chs_set_system(c, "");
    chs_set(c, "temp", "1.5", msg, sizeof msg);
    assert_int_equal(chs_load(c, path, msg, sizeof msg), 0);
    assert_string_equal(chs_system(c), "be \"kind\"\n");
    assert_int_equal(chs_count(c), 2);
    assert_string_equal(chs_at(c, 0)->role, "user");
    assert_string_equal(chs_at(c, 0)->content, uni);
    assert_string_equal(chs_at(c, 1)->content, "fine");
    chs_settings st = chs_get_settings(c);
    assert_true(st.sp.temp == 0.5f);
    assert_true(st.sp.seed == 12345678901234567ull);
    assert_int_equal(st.n_predict, 77);

    /* bad files: rejected, the conversation unchanged */
    const char *bad[] = {"{", "[]", "{\"ggscope_chat\":2,\"messages\":[]}",
                         "{\"ggscope_chat\":1,\"messages\":[{\"role\":\"user\"}]}",
                         "{\"ggscope_chat\":1,\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}",
                         "{\"ggscope_chat\":1,\"settings\":{\"temp\":\"hot\"},\"messages\":[]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *fp = fopen(path, "wb");
        fputs(bad[i], fp);
        fclose(fp);
        assert_int_equal(chs_load(c, path, msg, sizeof msg), -1);
        assert_int_equal(chs_count(c), 2);
        assert_string_equal(chs_system(c), "be \"kind\"\n");
    }
    assert_int_equal(chs_load(c, "/nonexistent/dir/x.json", msg, sizeof msg), -1);
    assert_int_equal(chs_save(c, "/nonexistent/dir/x.json", msg, sizeof msg), -1);
    remove(path);
    close_fx(fx);
}

/* A long conversation (10,000 messages) that does not fit: the prompt is
 * built in a handful of renders (the cut is binary-searched), not one
 * render per dropped turn (quadratic: minutes). */
static void test_long_conversation_prompt(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-long.gguf", 256);
    char line[64];
    for (int i = 0; i < 5000; i++) {
        snprintf(line, sizeof line, "question %d", i);
        assert_int_equal(chs_add(fx->c, "user", line, strlen(line)), 0);
        snprintf(line, sizeof line, "answer %d", i);
        assert_int_equal(chs_add(fx->c, "assistant", line, strlen(line)), 0);
    }
    assert_int_equal(chs_add(fx->c, "user", "last", 4), 0);
    int32_t *ids;
    size_t n;
    unsigned dropped = 0;
    char msg[256];
    double t0 = now_s();
    assert_int_equal(chs_prompt(fx->c, &ids, &n, &dropped, msg, sizeof msg), 0);
    double dt = now_s() - t0;
    print_message("prompt of 10,001 messages built in %.3f s, %u dropped, %zu tokens\n", dt, dropped, n);
    assert_true(dt < 10.0);
    chs_settings st = chs_get_settings(fx->c);
    assert_true(n + (size_t)st.n_predict <= 256);
    assert_true(dropped > 9900);
    for (unsigned i = 0; i < dropped; i++)
        assert_true(chs_at(fx->c, i)->dropped);
    assert_false(chs_at(fx->c, dropped)->dropped);
    assert_string_equal(chs_at(fx->c, dropped)->role, "user");
    free(ids);
    close_fx(fx);
}

/* The smallest cut is found: with one turn fewer dropped it would not fit. */
static void test_prompt_cut_is_minimal(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-cut.gguf", 256);
    char line[64];
    for (int i = 0; i < 40; i++) {
        snprintf(line, sizeof line, "question number %d", i);
        assert_int_equal(chs_add(fx->c, "user", line, strlen(line)), 0);
        snprintf(line, sizeof line, "answer number %d", i);
        assert_int_equal(chs_add(fx->c, "assistant", line, strlen(line)), 0);
    }
    assert_int_equal(chs_add(fx->c, "user", "last", 4), 0);
    int32_t *ids;
    size_t n;
    unsigned dropped = 0;
    char msg[256];
    assert_int_equal(chs_prompt(fx->c, &ids, &n, &dropped, msg, sizeof msg), 0);
    free(ids);
    assert_true(dropped >= 2 && dropped % 2 == 0);
    /* un-drop the last dropped turn: the prompt no longer fits */
    size_t keep = dropped - 2;
    chs_msg *m = (chs_msg *)chs_at(fx->c, keep);
    m->dropped = false;
    ((chs_msg *)chs_at(fx->c, keep + 1))->dropped = false;
    size_t len;
    char *text = chs_render(fx->c, true, &len, NULL);
    int32_t *t2;
    size_t n2;
    assert_int_equal(chs_tokenize(fx->c, text, len, &t2, &n2), 0);
    chs_settings st = chs_get_settings(fx->c);
    assert_true(n2 + (size_t)st.n_predict > 256);
    free(t2);
    free(text);
    close_fx(fx);
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    fclose(fp);
}

/* Hostile session files: each one clear message, nothing changed. */
static void test_load_hostile(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-hostile.gguf", 128);
    chs *c = fx->c;
    char msg[256];
    chs_add(c, "user", "keep", 4);
    char path[600];
    snprintf(path, sizeof path, "%s", tu_tmp_path("chs-hostile.json"));
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"ggscope_chat\":1,\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff utf-8\"}]}", "UTF-8"},
        {"{\"ggscope_chat\":1,\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\"}]}", "UTF-8"},
        {"{\"ggscope_chat\":1,\"system\":\"\xed\xa0\x80\",\"messages\":[]}", "UTF-8"},
        {"{\"ggscope_chat\":1,\"messages\":[{\"role\":\"user\",\"content\":\"esc \\u001b[2J\"}]}", "control character"},
        {"{\"ggscope_chat\":1,\"messages\":[{\"role\":\"user\",\"content\":\"csi \xc2\x9b" "2J\"}]}", "control character"},
        {"{\"ggscope_chat\":1,\"settings\":{\"temp\":1e300},\"messages\":[]}", "settings.temp"},
        {"{\"ggscope_chat\":1,\"messages\":[{\"role\":\"user\",\"content\":7}]}", "messages[0]"},
        {"{\"ggscope_chat\":1,\"messages\":[1]}", "messages[0]"},
        {"{\"ggscope_chat\":1,\"messages\":{}}", "messages"},
        {"{\"ggscope_chat\":1,\"messages\":[], \"settings\":[]}", "settings"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].json, strlen(cases[i].json));
        msg[0] = 0;
        assert_int_equal(chs_load(c, path, msg, sizeof msg), -1);
        if (!strstr(msg, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, msg, cases[i].want);
        assert_int_equal(chs_count(c), 1);
    }
    /* deep JSON */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 64);
    size_t k = (size_t)sprintf(deep, "{\"ggscope_chat\":1,\"messages\":");
    for (size_t i = 0; i < depth; i++)
        deep[k++] = '[';
    for (size_t i = 0; i < depth; i++)
        deep[k++] = ']';
    deep[k++] = '}';
    write_file(path, deep, k);
    free(deep);
    assert_int_equal(chs_load(c, path, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "JSON"));
    /* a 100 MB file: refused by size, before reading it */
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(ftruncate(fileno(fp), 100 << 20), 0);
    fclose(fp);
    assert_int_equal(chs_load(c, path, msg, sizeof msg), -1);
    if (!strstr(msg, "too large") || !strstr(msg, "MiB"))
        fail_msg("'%s'", msg);
    /* not a regular file (a FIFO would block, /dev/zero never ends) */
    assert_int_equal(chs_load(c, "/dev/zero", msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "not a regular file"));
    assert_int_equal(chs_load(c, "/tmp", msg, sizeof msg), -1);
    assert_int_equal(chs_count(c), 1);
    /* the parser alone, on a buffer */
    chs_file sf;
    const char *ok = "{\"ggscope_chat\":1,\"system\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":\"tab\\there\\nok\"}]}";
    chs_settings base = chs_default_settings();
    assert_int_equal(chs_session_parse(ok, strlen(ok), &base, &sf, msg, sizeof msg), 0);
    assert_int_equal(sf.n, 1);
    assert_string_equal(sf.m[0].content, "tab\there\nok");
    chs_file_free(&sf);
    remove(path);
    close_fx(fx);
}

/* The plan API the chat uses off the loop thread: a copy (the conversation
 * may change meanwhile), O(log turns) renders, cancellation, apply refused
 * when the transcript changed. */
/* A conversation without a model (the remote chat): messages, settings,
 * save and load work; what needs the model fails with a message. */
static void test_detached(void **state)
{
    (void)state;
    char msg[512];
    chs *c = chs_new_detached("remote: m at http://127.0.0.1:1", msg, sizeof msg);
    assert_non_null(c);
    assert_null(chs_vocab(c));
    assert_null(chs_template(c));
    assert_string_equal(chs_format_status(c), "remote: m at http://127.0.0.1:1");
    assert_int_equal(chs_held(c), 0);
    chs_reset_cache(c);
    assert_int_equal(chs_set_system(c, "be brief"), 0);
    assert_int_equal(chs_add(c, "user", "hi", 2), 0);
    chs_reply_stats st = {.n_gen = 1};
    assert_int_equal(chs_add_reply(c, "yo", 2, NULL, 0, &st), 0);
    assert_int_equal(chs_set(c, "temp", "0", msg, sizeof msg), 0);
    size_t len;
    assert_null(chs_render(c, true, &len, NULL));
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(chs_tokenize(c, "x", 1, &ids, &n), -1);
    assert_null(chs_plan_new(c, true, msg, sizeof msg));
    assert_non_null(strstr(msg, "no model here"));
    chs_settings ss = chs_get_settings(c);
    chs_reply_stats rs;
    assert_int_equal(chs_generate(c, NULL, 0, &ss, NULL, &rs, msg, sizeof msg), -1);
    char path[600];
    snprintf(path, sizeof path, "%s", tu_tmp_path("chs-detached.json"));
    assert_int_equal(chs_save(c, path, msg, sizeof msg), 0);
    chs *d = chs_new_detached("", msg, sizeof msg);
    assert_int_equal(chs_load(d, path, msg, sizeof msg), 0);
    assert_int_equal(chs_count(d), 2);
    assert_string_equal(chs_at(d, 1)->content, "yo");
    assert_string_equal(chs_system(d), "be brief");
    assert_true(chs_get_settings(d).sp.temp == 0);
    unlink(path);
    chs_free(d);
    chs_free(c);
}

static void test_plan(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-plan.gguf", 256);
    char line[64], msg[256];
    for (int i = 0; i < 2000; i++) {
        snprintf(line, sizeof line, "question %d", i);
        assert_int_equal(chs_add(fx->c, "user", line, strlen(line)), 0);
        snprintf(line, sizeof line, "answer %d", i);
        assert_int_equal(chs_add(fx->c, "assistant", line, strlen(line)), 0);
    }
    assert_int_equal(chs_add(fx->c, "user", "last", 4), 0);
    chs_plan *p = chs_plan_new(fx->c, true, msg, sizeof msg);
    assert_non_null(p);
    atomic_bool cancel;
    atomic_init(&cancel, true);
    assert_int_equal(chs_plan_build(p, &cancel), 1);   /* cancelled before any render */
    assert_int_equal(chs_plan_renders(p), 0);
    atomic_store(&cancel, false);
    assert_int_equal(chs_plan_build(p, &cancel), 0);
    print_message("2,001 messages: %u renders\n", chs_plan_renders(p));
    assert_true(chs_plan_renders(p) <= 14);   /* 1 + ceil(log2(2001 cut points)) + 1 */
    size_t n;
    assert_non_null(chs_plan_ids(p, &n));
    assert_true(n > 0 && n + 6 <= 256);
    /* the transcript changed since the plan was made: apply refuses */
    chs_plan *q = chs_plan_new(fx->c, true, msg, sizeof msg);
    assert_int_equal(chs_plan_build(q, NULL), 0);
    assert_int_equal(chs_add(fx->c, "assistant", "x", 1), 0);
    unsigned dropped = 1;
    assert_int_equal(chs_plan_apply(fx->c, q, &dropped), -1);
    assert_int_equal(dropped, 0);
    assert_false(chs_at(fx->c, 0)->dropped);
    chs_plan_free(q);
    chs_plan_free(p);
    /* nothing to answer */
    chs_clear(fx->c);
    assert_null(chs_plan_new(fx->c, true, msg, sizeof msg));
    assert_non_null(strstr(msg, "no message"));
    close_fx(fx);
}

static uint32_t pp_calls, pp_done, pp_total, pp_last;
static bool pp_monotonic;

static void on_pp(void *ctx, uint32_t done, uint32_t total)
{
    (void)ctx;
    if (pp_calls && done < pp_last)
        pp_monotonic = false;
    pp_calls++;
    pp_last = done;
    pp_done = done;
    pp_total = total;
}

/* The prompt's evaluation reported in chunks (the chat's progress line):
 * 0 first, then after each chunk, up to the tokens evaluated. */
static void test_prompt_progress(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-progress.gguf", 512);
    char text[800] = "";
    for (int i = 0; i < 60; i++)
        strcat(text, "word ");
    assert_int_equal(chs_add(fx->c, "user", text, strlen(text)), 0);
    int32_t *ids;
    size_t n;
    char msg[512];
    assert_int_equal(chs_prompt(fx->c, &ids, &n, NULL, msg, sizeof msg), 0);
    collect *co = calloc(1, sizeof *co);
    atomic_init(&co->cancel, false);
    chs_sink sk = {on_tok, co, NULL, 0, on_pp};
    chs_settings st = chs_get_settings(fx->c);
    chs_reply_stats rs;
    pp_calls = 0;
    pp_monotonic = true;
    assert_int_equal(chs_generate(fx->c, ids, n, &st, &sk, &rs, msg, sizeof msg), 0);
    assert_true(n > 64);
    assert_true(pp_calls >= 3);   /* 0, then one per 32-token chunk */
    assert_true(pp_monotonic);
    assert_int_equal(pp_total, rs.n_eval);
    assert_int_equal(pp_done, rs.n_eval);
    /* every token carries its time from the start of the reply, in order */
    for (size_t i = 1; i < co->n; i++)
        assert_true(co->ti[i].t_s >= co->ti[i - 1].t_s);
    assert_true(co->n == 0 || co->ti[0].t_s > 0);
    free(ids);
    free(co);
    close_fx(fx);
}

/* Raw mode: the prompt is the system prompt and the messages as they are,
 * tokenized as `ggscope run -p` (TOK_ADD_SPECIAL); a --template given by
 * the user does not fall back. */
static void test_raw_and_template(void **state)
{
    (void)state;
    fixture *fx = open_fx("chs-raw.gguf", 512);
    assert_int_equal(chs_add(fx->c, "user", "Once upon", 9), 0);
    assert_int_equal(chs_add(fx->c, "assistant", " a time", 7), 0);
    assert_int_equal(chs_add(fx->c, "user", " there", 6), 0);
    chs_set_raw(fx->c, true);
    assert_true(chs_raw(fx->c));
    size_t len;
    char *t = chs_render(fx->c, true, &len, NULL);
    assert_string_equal(t, "Once upon a time there");
    int32_t *ids, *want;
    size_t n, nw;
    char msg[512];
    assert_int_equal(chs_prompt(fx->c, &ids, &n, NULL, msg, sizeof msg), 0);
    assert_int_equal(tok_tokenize(chs_vocab(fx->c), t, len, TOK_ADD_SPECIAL, &want, &nw), TOK_OK);
    assert_int_equal(n, nw);
    assert_memory_equal(ids, want, n * sizeof *ids);
    assert_non_null(strstr(chs_format_status(fx->c), "raw"));
    free(t);
    free(ids);
    free(want);
    chs_set_raw(fx->c, false);
    /* a strict template that fails: an error, no built-in fallback */
    chat_template *bad = chat_template_new("{{ raise_exception('no') }}", "", "");
    assert_int_equal(chs_set_template(fx->c, bad, true, "bad.jinja (--template)"), 0);
    assert_string_equal(chs_template_source(fx->c), "bad.jinja (--template)");
    assert_int_equal(chs_prompt(fx->c, &ids, &n, NULL, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "no"));
    chat_template *ok = chat_template_new_builtin(CHAT_FORMAT_LLAMA3, "", "");
    assert_int_equal(chs_set_template(fx->c, ok, true, "built-in Llama 3 (--format llama3)"), 0);
    t = chs_render(fx->c, true, &len, NULL);
    assert_non_null(strstr(t, "<|start_header_id|>user<|end_header_id|>"));
    free(t);
    close_fx(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_turn_reuses_prefix),
        cmocka_unit_test(test_token_info),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_overflow_drops_oldest),
        cmocka_unit_test(test_regen_edit_set),
        cmocka_unit_test(test_save_load),
        cmocka_unit_test(test_long_conversation_prompt),
        cmocka_unit_test(test_prompt_cut_is_minimal),
        cmocka_unit_test(test_load_hostile),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_prompt_progress),
        cmocka_unit_test(test_raw_and_template),
        cmocka_unit_test(test_detached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
