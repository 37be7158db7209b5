/* The runner: backend choice messages, the generation loop's stops, and the
 * fall back to the CPU when the device is lost mid-generation
 * (GGSCOPE_VK_FAIL_AFTER, on lavapipe): the greedy tokens of a run and of a
 * chat reply after the fallback equal a CPU-only run's, and the notice is
 * reported, never printed. The fallback tests need stories260K (../shared)
 * and a Vulkan device; they skip visibly without them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "chatsession.h"
#include "model.h"
#include "runner.h"
#include "testmodel.h"

typedef struct {
    gguf_file *f;
    model *m;
} mfile;

static void mfile_open(mfile *mf, const char *path)
{
    gguf_error err;
    mf->f = gguf_open(path, &err);
    assert_non_null(mf->f);
    model_status st;
    char msg[512];
    mf->m = model_load(mf->f, &st, msg, sizeof msg);
    if (!mf->m)
        fail_msg("model_load: %s", msg);
}

static void mfile_close(mfile *mf)
{
    model_free(mf->m);
    gguf_close(mf->f);
}

typedef struct {
    int32_t ids[256];
    uint32_t n;
} toks;

static int keep_token(void *ctx, int32_t tok, const sampler_result *sr)
{
    (void)sr;
    toks *t = ctx;
    if (t->n < 256)
        t->ids[t->n++] = tok;
    return 0;
}

static runner_gen greedy(toks *out, int32_t n_predict)
{
    runner_gen g = {.sp = sampler_default_params(), .n_predict = n_predict, .on_token = keep_token, .ctx = out};
    g.sp.temp = 0;
    return g;
}

static void test_cpu_loop(void **state)
{
    (void)state;
    testmodel_params p = testmodel_default_params();
    p.n_layer = 1;
    p.n_embd = 64;
    p.n_ff = 64;
    tu_model *fx = tu_model_open(&p, "runner.gguf");
    char msg[512];

    runner *r = NULL;
    runner_params rp = {.backend = "gpu", .device = -1, .threads = 1, .n_ctx = 16};
    assert_int_equal(runner_open(fx->m, &rp, &r, msg, sizeof msg), RUNNER_EBACKEND);
    assert_null(r);
    assert_string_equal(msg, "--backend: unknown backend 'gpu' (auto, vulkan, cpu)");

    rp.backend = "cpu";
    assert_int_equal(runner_open(fx->m, &rp, &r, msg, sizeof msg), RUNNER_OK);
    snprintf(msg, sizeof msg, "cpu, 1 thread, weights in memory (%.1f MB)", model_copy_bytes(fx->m) / 1e6);
    assert_string_equal(runner_backend_info(r), msg);
    assert_int_equal(runner_n_ctx(r), 16);

    int32_t prompt[4] = {1, 2, 3, 4};
    toks a = {0}, b = {0};
    runner_stats st;
    /* n_predict 0: the prompt only */
    runner_gen g = greedy(&a, 0);
    assert_int_equal(runner_generate(r, prompt, 4, &g, &st, msg, sizeof msg), RUNNER_OK);
    assert_int_equal(st.stop, RUNNER_STOP_LIMIT);
    assert_int_equal(st.n_gen, 0);
    assert_int_equal(st.n_eval, 4);
    /* the limit; the prompt reused but its last token */
    g = greedy(&a, 5);
    assert_int_equal(runner_generate(r, prompt, 4, &g, &st, msg, sizeof msg), RUNNER_OK);
    assert_int_equal(st.stop, RUNNER_STOP_LIMIT);
    assert_int_equal(a.n, 5);
    assert_int_equal(st.n_reused, 3);
    uint32_t held;
    runner_cached(r, &held);
    assert_int_equal(held, 4 + 4);   /* the last token sampled is not evaluated */
    /* the context: positions 4..15 evaluated, one more token sampled */
    g = greedy(&b, -1);
    runner_truncate(r, 0);
    assert_int_equal(runner_generate(r, prompt, 4, &g, &st, msg, sizeof msg), RUNNER_OK);
    assert_int_equal(st.stop, RUNNER_STOP_CTX);
    assert_int_equal(b.n, 16 - 4 + 1);
    assert_memory_equal(a.ids, b.ids, 5 * sizeof a.ids[0]);   /* greedy: the same start */
    /* one position reserved: one token fewer */
    toks c = {0};
    g = greedy(&c, -1);
    g.ctx_reserve = 1;
    assert_int_equal(runner_generate(r, prompt, 4, &g, &st, msg, sizeof msg), RUNNER_OK);
    assert_int_equal(c.n, 16 - 4);
    /* a prompt that does not fit */
    int32_t big[16] = {0};
    assert_int_equal(runner_generate(r, big, 16, &g, &st, msg, sizeof msg), RUNNER_EARG);
    assert_string_equal(msg, "the prompt (16 tokens) does not fit the context (16)");
    assert_int_equal(st.stop, RUNNER_STOP_ERROR);
    assert_false(runner_take_notice(r, msg, sizeof msg));

    runner_close(r);
    tu_model_close(fx);
}

/* A runner on Vulkan that loses its device after `fail_after` submits, or
 * NULL (skip) when there is no Vulkan device. */
static runner *open_failing(model *m, const char *fail_after)
{
    setenv("GGSCOPE_VK_FAIL_AFTER", fail_after, 1);
    runner_params rp = {.backend = "vulkan", .device = -1, .n_ctx = 128};
    runner *r = NULL;
    char msg[512];
    int rc = runner_open(m, &rp, &r, msg, sizeof msg);
    unsetenv("GGSCOPE_VK_FAIL_AFTER");
    if (rc != RUNNER_OK) {
        print_message("SKIP: no Vulkan backend: %s\n", msg);
        return NULL;
    }
    assert_non_null(strstr(runner_backend_info(r), "vulkan"));
    return r;
}

static const int32_t P[] = {1, 403, 407, 261, 378};

static void test_fallback_run(void **state)
{
    (void)state;
    const char *path = tu_shared("models/stories260K.gguf");
    if (!path)
        TU_SKIP_NO_SHARED();
    mfile mf;
    mfile_open(&mf, path);
    char msg[512];
    runner_params rp = {.backend = "cpu", .device = -1, .n_ctx = 128};
    runner *cpu = NULL;
    assert_int_equal(runner_open(mf.m, &rp, &cpu, msg, sizeof msg), RUNNER_OK);
    toks want = {0}, got = {0};
    runner_gen g = greedy(&want, 32);
    runner_stats st;
    assert_int_equal(runner_generate(cpu, P, 5, &g, &st, msg, sizeof msg), RUNNER_OK);
    runner_close(cpu);
    runner *r = open_failing(mf.m, "6");
    if (!r) {
        mfile_close(&mf);
        skip();
    }
    g = greedy(&got, 32);
    assert_int_equal(runner_generate(r, P, 5, &g, &st, msg, sizeof msg), RUNNER_OK);
    assert_string_equal(runner_backend(r)->ops->name, "cpu");
    assert_true(runner_take_notice(r, msg, sizeof msg));
    assert_non_null(strstr(msg, "the vulkan backend failed ("));
    assert_non_null(strstr(msg, "); continuing on the CPU"));
    assert_false(runner_take_notice(r, msg, sizeof msg));   /* once */
    assert_int_equal(got.n, want.n);
    assert_memory_equal(got.ids, want.ids, want.n * sizeof want.ids[0]);
    runner_close(r);
    mfile_close(&mf);
}

typedef struct {
    int32_t ids[256];
    size_t n;
} reply;

static void on_reply_token(void *ctx, const char *text, size_t len, const chs_tokinfo *ti)
{
    (void)text;
    (void)len;
    reply *rp = ctx;
    if (ti->id >= 0 && rp->n < 256)
        rp->ids[rp->n++] = ti->id;
}

/* A greedy reply of the chat on runner r to "Once upon a time". */
static void chat_reply(const gguf_file *f, runner *r, reply *out)
{
    char msg[512];
    chs *c = chs_new(f, r, msg, sizeof msg);
    if (!c)
        fail_msg("chs_new: %s", msg);
    chs_settings cs = chs_get_settings(c);
    cs.sp.temp = 0;
    cs.sp.repeat_penalty = 1;
    cs.n_predict = 24;
    chs_set_settings(c, &cs);
    assert_int_equal(chs_add(c, "user", "Once upon a time", 16), 0);
    int32_t *ids;
    size_t n;
    unsigned dropped;
    assert_int_equal(chs_prompt(c, &ids, &n, &dropped, msg, sizeof msg), 0);
    chs_sink sk = {.on_token = on_reply_token, .ctx = out};
    chs_reply_stats rs;
    if (chs_generate(c, ids, n, &cs, &sk, &rs, msg, sizeof msg))
        fail_msg("chs_generate: %s", msg);
    assert_int_equal(rs.n_gen, out->n);
    free(ids);
    chs_free(c);
}

static void test_fallback_chat(void **state)
{
    (void)state;
    const char *path = tu_shared("models/stories260K.gguf");
    if (!path)
        TU_SKIP_NO_SHARED();
    mfile mf;
    mfile_open(&mf, path);
    char msg[512];
    runner_params rp = {.backend = "cpu", .device = -1, .n_ctx = 128};
    runner *cpu = NULL;
    assert_int_equal(runner_open(mf.m, &rp, &cpu, msg, sizeof msg), RUNNER_OK);
    reply want = {0}, got = {0};
    chat_reply(mf.f, cpu, &want);
    runner_close(cpu);
    runner *r = open_failing(mf.m, "4");
    if (!r) {
        mfile_close(&mf);
        skip();
    }
    chat_reply(mf.f, r, &got);
    assert_string_equal(runner_backend(r)->ops->name, "cpu");
    assert_true(runner_take_notice(r, msg, sizeof msg));
    assert_non_null(strstr(msg, "continuing on the CPU"));
    assert_true(want.n > 4);
    assert_int_equal(got.n, want.n);
    assert_memory_equal(got.ids, want.ids, want.n * sizeof want.ids[0]);
    runner_close(r);
    mfile_close(&mf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_loop),
        cmocka_unit_test(test_fallback_run),
        cmocka_unit_test(test_fallback_chat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
