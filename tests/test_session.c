/* Session: chunked evaluation equals one batch, last-row logits equal the
 * --all rows, prefix reuse (counters show only new tokens are evaluated),
 * truncation, cancellation, argument checks; model loading errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "ggtype.h"
#include "model.h"
#include "session.h"
#include "testmodel.h"

typedef struct {
    char path[512];
    gguf_file *f;
    model *m;
} fixture;

static fixture *open_model(const testmodel_params *p, const char *tag)
{
    fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->path, sizeof fx->path, "%s", tu_tmp_path(tag));
    char msg[512];
    if (testmodel_write(p, fx->path, msg, sizeof msg))
        fail_msg("testmodel_write: %s", msg);
    gguf_error err;
    fx->f = gguf_open(fx->path, &err);
    assert_non_null(fx->f);
    model_status st;
    fx->m = model_load(fx->f, &st, msg, sizeof msg);
    if (!fx->m)
        fail_msg("model_load: %s", msg);
    return fx;
}

static void close_model(fixture *fx)
{
    model_free(fx->m);
    gguf_close(fx->f);
    remove(fx->path);
    free(fx);
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += (double)(a[i] - b[i]) * (a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den ? den : 1));
}

static session *new_session(const model *m, uint32_t n_ctx, uint32_t n_batch, int threads)
{
    session_params sp = {.n_ctx = n_ctx, .n_batch = n_batch, .n_threads = threads};
    char msg[256];
    session *s = session_new(m, &sp, msg, sizeof msg);
    if (!s)
        fail_msg("session_new: %s", msg);
    return s;
}

#define NT 24

static void test_chunks_and_reuse(void **state)
{
    (void)state;
    testmodel_params p = testmodel_default_params();
    p.n_embd = 64;
    p.n_ff = 128;
    p.n_head = 4;
    p.n_head_kv = 2;
    p.seed = 3;
    fixture *fx = open_model(&p, "sess.gguf");
    const uint32_t nv = fx->m->hp.n_vocab;
    assert_int_equal(nv, 300);
    int32_t ids[NT];
    for (int i = 0; i < NT; i++)
        ids[i] = (int32_t)((i * 53 + 1) % nv);
    float *all = malloc(sizeof(float) * nv * NT), *all2 = malloc(sizeof(float) * nv * NT);
    float *last = malloc(sizeof(float) * nv);

    /* one batch of 24 vs chunks of 5 (n_batch) */
    session *a = new_session(fx->m, 64, 64, 1);
    session *b = new_session(fx->m, 64, 5, 2);
    assert_int_equal(session_eval(a, ids, NT, 0, all, true), 0);
    assert_int_equal(session_eval(b, ids, NT, 0, all2, true), 0);
    assert_true(rel_diff(all2, all, (size_t)nv * NT) < 1e-5);
    assert_int_equal(session_used(a), NT);

    /* token by token gives the same rows, up to float order: like
     * llama.cpp, one-token products sum in ggml's mat-vec order and batches
     * in its batched order, and the F16 KV cache turns those last-bit
     * differences into ~1e-4 (a wrong position or cache row gives O(1)) */
    session_kv_truncate(b, 0);
    assert_int_equal(session_used(b), 0);
    session_reset_stats(b);
    for (int i = 0; i < NT; i++) {
        assert_int_equal(session_eval(b, &ids[i], 1, (uint32_t)i, last, false), 0);
        double d = rel_diff(last, all + (size_t)i * nv, nv);
        if (d > 1e-3)
            fail_msg("position %d: token-by-token logits differ from the batch (rel %g)", i, d);
    }
    session_stats st = session_get_stats(b);
    assert_int_equal(st.n_gen_tokens, NT);
    assert_int_equal(st.n_prompt_tokens, 0);

    /* prefix reuse: a second "turn" shares the first 16 positions; only the
     * 8 new tokens are evaluated, with the same result as a full evaluation */
    session_reset_stats(a);
    session_kv_truncate(a, 16);
    assert_int_equal(session_used(a), 16);
    assert_int_equal(session_eval(a, ids + 16, NT - 16, 16, last, false), 0);
    st = session_get_stats(a);
    assert_int_equal(st.n_prompt_tokens, NT - 16);
    assert_true(rel_diff(last, all + (size_t)(NT - 1) * nv, nv) < 1e-5);
    /* diverging continuation at position 10 overwrites the cache from there */
    int32_t alt = (ids[10] + 7) % (int32_t)nv;
    assert_int_equal(session_eval(a, &alt, 1, 10, last, false), 0);
    assert_int_equal(session_used(a), 11);

    /* argument checks */
    assert_int_equal(session_eval(a, ids, 1, 12, last, false), BACKEND_EARG); /* past used */
    int32_t bad = (int32_t)nv;
    assert_int_equal(session_eval(a, &bad, 1, 11, last, false), BACKEND_EARG);
    assert_int_equal(session_eval(a, ids, 60, 11, last, false), BACKEND_EARG); /* > n_ctx */
    assert_int_equal(session_used(a), 11);
    assert_true(strlen(session_error(a)) > 0);

    /* cancellation: flag set before the eval stops it at the first layer */
    session_cancel(a);
    assert_int_equal(session_eval(a, ids, 4, 11, last, false), BACKEND_ECANCELLED);
    assert_int_equal(session_used(a), 11);
    /* the flag is cleared: the next eval runs */
    assert_int_equal(session_eval(a, ids, 4, 11, last, false), 0);
    assert_int_equal(session_used(a), 15);
    assert_int_equal(session_n_ctx(a), 64);
    assert_true(session_kv_bytes(a) == 2ull * 2 * p.n_layer * 64 * 2 * 16);

    session_free(a);
    session_free(b);
    free(all);
    free(all2);
    free(last);
    close_model(fx);
}

static void expect_load_error(const testmodel_params *p, void (*patch)(char *path),
                              model_status want, const char *needle)
{
    char path[512];
    snprintf(path, sizeof path, "%s", tu_tmp_path("bad.gguf"));
    char msg[512];
    if (testmodel_write(p, path, msg, sizeof msg))
        fail_msg("testmodel_write: %s", msg);
    if (patch)
        patch(path);
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    assert_non_null(f);
    model_status st;
    model *m = model_load(f, &st, msg, sizeof msg);
    assert_null(m);
    assert_int_equal(st, want);
    if (!strstr(msg, needle))
        fail_msg("message '%s' lacks '%s'", msg, needle);
    gguf_close(f);
    remove(path);
}

/* Rename bytes in the file image (same length), e.g. a tensor or key name. */
static void replace_bytes(const char *path, const char *from, const char *to)
{
    size_t n;
    uint8_t *d = tu_read_file(path, &n);
    assert_non_null(d);
    size_t fl = strlen(from);
    bool done = false;
    for (size_t i = 0; i + fl <= n && !done; i++)
        if (!memcmp(d + i, from, fl)) {
            memcpy(d + i, to, fl);
            done = true;
        }
    assert_true(done);
    FILE *fp = fopen(path, "wb");
    fwrite(d, 1, n, fp);
    fclose(fp);
    free(d);
}

static void patch_arch(char *path) { replace_bytes(path, "llama", "gpt99"); }
static void patch_tensor(char *path) { replace_bytes(path, "blk.1.ffn_up.weight", "blk.1.ffn_xx.weight"); }

static void test_load_errors(void **state)
{
    (void)state;
    testmodel_params p = testmodel_default_params();
    p.n_embd = 32;
    p.n_ff = 64;
    p.n_head = 2;
    p.n_head_kv = 1;
    expect_load_error(&p, patch_arch, MODEL_EARCH, "gpt99");
    expect_load_error(&p, patch_tensor, MODEL_EMISSING, "blk.1.ffn_up.weight");

    /* hyper-parameters and the tied / bias flags of a good file */
    p.arch = "qwen2";
    p.tied = true;
    p.rope_freq_base = 5000.0f;
    char path[512], msg[256];
    snprintf(path, sizeof path, "%s", tu_tmp_path("q.gguf"));
    assert_int_equal(testmodel_write(&p, path, msg, sizeof msg), 0);
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    model *m = model_load(f, NULL, msg, sizeof msg);
    assert_non_null(m);
    assert_int_equal(m->hp.arch, MODEL_ARCH_QWEN2);
    assert_int_equal(m->hp.rope_mode, BACKEND_ROPE_NEOX);
    assert_true(m->hp.tied_embeddings);
    assert_true(m->hp.has_qkv_bias);
    assert_int_equal(m->hp.head_dim, 16);
    assert_int_equal(m->hp.n_rot, 16);
    assert_int_equal(m->hp.n_head_kv, 1);
    assert_float_equal(m->hp.rope_freq_base, 5000.0f, 0);
    assert_float_equal(m->hp.rms_eps, 1e-5f, 1e-12);
    assert_true(m->output.data == m->tok_embd.data);
    model_free(m);
    gguf_close(f);
    remove(path);
    model_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_and_reuse),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
