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
    tu_model *fx = tu_model_open(&p, "sess.gguf");
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
    tu_model_close(fx);
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

/* Write the model at path again with key `key` (if not NULL) set to the
 * u32 v, and tensor `tname` (if not NULL) cut to its first ne2 experts. */
static void rewrite_arr(const char *path, const char *key, const uint32_t *arr, uint32_t n, const char *tname,
                        uint64_t ne2);
static void rewrite(const char *path, const char *key, uint32_t v, const char *tname, uint64_t ne2)
{
    rewrite_arr(path, key, &v, 0, tname, ne2);
}

/* rewrite, the key an array of n u32 (n > 0) or the u32 arr[0] (n == 0). */
static void rewrite_arr(const char *path, const char *key, const uint32_t *arr, uint32_t n, const char *tname,
                        uint64_t ne2)
{
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    assert_non_null(f);
    gguf_writer *w = gguf_writer_new(gguf_alignment(f));
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (key && gguf_str_eq(kv->key, key) && n)
            assert_int_equal(gguf_writer_set_arr(w, key, GGUF_VT_UINT32, arr, n), GGUF_OK);
        else if (key && gguf_str_eq(kv->key, key))
            assert_int_equal(gguf_writer_set_u32(w, key, arr[0]), GGUF_OK);
        else
            assert_int_equal(gguf_writer_copy_kv(w, kv), GGUF_OK);
    }
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[128];
        gguf_str_copy(t->name, name, sizeof name);
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        if (tname && !strcmp(name, tname))
            ne[2] = ne2;
        assert_int_equal(gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne, t->data), GGUF_OK);
    }
    assert_int_equal(gguf_writer_write(w, path, NULL, NULL), GGUF_OK);
    gguf_writer_free(w);
    gguf_close(f);
}

static void patch_legacy(char *path) { replace_bytes(path, "blk.1.ffn_norm.weight", "blk.1.ffn_up.0.weight"); }
static void patch_scale(char *path)
{
    replace_bytes(path, "blk.0.ffn_gate_inp.weight", "blk.0.ffn_gate_exps.scale");
}
static void patch_experts(char *path) { rewrite(path, NULL, 0, "blk.1.ffn_down_exps.weight", 4); }
static void patch_used(char *path) { rewrite(path, "qwen3moe.expert_used_count", 9, NULL, 0); }
static void patch_count(char *path) { rewrite(path, "qwen3moe.expert_count", 2000, NULL, 0); }
static void patch_used_rising(char *path)
{
    const uint32_t used[2] = {1, 2};
    rewrite_arr(path, "qwen3moe.expert_used_count", used, 2, NULL, 0);
}
static void patch_no_exps(char *path)
{
    replace_bytes(path, "blk.0.ffn_up_exps.weight", "blk.0.ffn_up_expx.weight");
}

/* Mixture-of-experts files: what a good qwen3moe / gpt-oss file binds,
 * every byte of the 3-D experts counted; a backend without the MoE ops or
 * sinks refused by name; hostile files refused in one line. */
static void test_load_moe(void **state)
{
    (void)state;
    char path[512], msg[512];
    snprintf(path, sizeof path, "%s", tu_tmp_path("moe.gguf"));
    backend *cpu = backend_cpu_new(1);
    assert_non_null(cpu);
    for (int a = 0; a < 2; a++) {
        testmodel_params p = testmodel_arch_params(a ? "gpt-oss" : "qwen3moe");
        assert_int_equal(testmodel_write(&p, path, msg, sizeof msg), 0);
        gguf_error err;
        gguf_file *f = gguf_open(path, &err);
        model *m = model_load(f, NULL, msg, sizeof msg);
        if (!m)
            fail_msg("model_load: %s", msg);
        const model_hparams *hp = &m->hp;
        assert_int_equal(hp->n_expert, a ? 32 : 8);
        assert_int_equal(hp->n_expert_used, a ? 4 : 2);
        assert_int_equal(hp->n_ff_exp, 256);
        assert_int_equal(hp->moe_gating, a ? BACKEND_MOE_TOPK_SOFTMAX : BACKEND_MOE_SOFTMAX);
        assert_int_equal(hp->moe_norm_w, !a);
        const model_layer *l0 = &m->layers[0], *l1 = &m->layers[1];
        assert_int_equal(l0->ffn_up_exps.ne2, hp->n_expert);
        assert_int_equal(l0->ffn_down_exps.ne0, 256);
        assert_int_equal(l0->n_expert_used, hp->n_expert_used);
        assert_null(l0->ffn_up.data);
        assert_true(l0->ffn_norm.data != NULL);
        /* every tensor byte but the tokenizer's is a weight */
        uint64_t all = 0;
        for (uint64_t i = 0; i < gguf_tensor_count(f); i++)
            all += gguf_tensor_at(f, i)->n_bytes;
        assert_int_equal(model_weight_bytes(m), all);
        if (a) { /* gpt-oss: sinks, biases, even layers sliding, post_attention_norm as FFN norm */
            assert_true(l0->attn_sinks.data && l0->bo.data && l0->ffn_gate_inp_b.data && l0->ffn_down_exps_b.data);
            assert_true(l0->swa && !l1->swa);
            assert_int_equal(hp->n_swa, 128);
            assert_true(hp->flags & MODEL_F_SWIGLU_OAI);
            assert_true(hp->rope_ext_factor == 1.0f);
            assert_ptr_equal(l0->ffn_norm.data, gguf_find_tensor(f, "blk.0.post_attention_norm.weight")->data);
        } else {
            assert_null(l0->attn_sinks.data);
            assert_null(l0->ffn_gate_inp_b.data);
        }
        assert_int_equal(model_backend_check(m, cpu, msg, sizeof msg), 0);
        backend_ops o = *cpu->ops;
        backend fake = {&o, cpu->ctx};
        o.caps &= ~(unsigned)BACKEND_CAP_MOE;
        assert_int_equal(model_backend_check(m, &fake, msg, sizeof msg), BACKEND_EUNSUPPORTED);
        assert_non_null(strstr(msg, "matmul_id"));
        o.caps = cpu->ops->caps & ~(unsigned)BACKEND_CAP_ATTN_SINKS;
        assert_int_equal(model_backend_check(m, &fake, msg, sizeof msg), a ? BACKEND_EUNSUPPORTED : 0);
        if (a)
            assert_non_null(strstr(msg, "sinks"));
        model_free(m);
        gguf_close(f);
    }
    backend_free(cpu);
    remove(path);
    testmodel_params q = testmodel_arch_params("qwen3moe");
    expect_load_error(&q, patch_legacy, MODEL_ETYPE, "blk.1.ffn_up.0.weight: one tensor per expert");
    expect_load_error(&q, patch_scale, MODEL_ETYPE, "expert scales");
    expect_load_error(&q, patch_experts, MODEL_ESHAPE, "blk.1.ffn_down_exps.weight has shape [256, 256, 4, 1]");
    expect_load_error(&q, patch_used, MODEL_EPARAM, "expert_used_count = 9 is more than expert_count 8");
    expect_load_error(&q, patch_count, MODEL_EPARAM, "expert_count = 2000");
    expect_load_error(&q, patch_no_exps, MODEL_EMISSING, "blk.0.ffn_up_exps.weight is missing");
    expect_load_error(&q, patch_used_rising, MODEL_EPARAM, "expert_used_count[1] = 2 is more than layer 0's 1");

    /* expert_used_count per layer: layer 0's routes (2), layer 1 sums its first slot only */
    assert_int_equal(testmodel_write(&q, path, msg, sizeof msg), 0);
    const uint32_t used[2] = {2, 1};
    rewrite_arr(path, "qwen3moe.expert_used_count", used, 2, NULL, 0);
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    model *m = model_load(f, NULL, msg, sizeof msg);
    if (!m)
        fail_msg("model_load: %s", msg);
    assert_int_equal(m->hp.n_expert_used, 2);
    assert_int_equal(m->layers[1].n_expert_used, 1);
    session *s = new_session(m, 32, 8, 1);
    const int32_t ids[5] = {1, 7, 42, 99, 250};
    float *lg = malloc(sizeof(float) * 5 * m->hp.n_vocab);
    assert_non_null(lg);
    assert_int_equal(session_eval(s, ids, 5, 0, lg, true), 0);
    for (size_t i = 0; i < 5 * (size_t)m->hp.n_vocab; i++)
        assert_true(isfinite(lg[i]));
    free(lg);
    session_free(s);
    model_free(m);
    gguf_close(f);
    remove(path);
}

/* model_arch_list names exactly the architectures model_arch_supported accepts:
 * it is written from the table, so a new row shows in the error message. */
static void test_arch_list(void **state)
{
    (void)state;
    const char *list = model_arch_list();
    const char *known[] = {"llama", "qwen2", "qwen3", "gemma3", "phi3", "smollm3", "olmo2",
                           "granite", "mistral3", "qwen3moe", "gpt-oss"};
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save), n++)
        assert_true(model_arch_supported(t));
    assert_int_equal(n, sizeof known / sizeof known[0]);
    for (size_t i = 0; i < n; i++)
        assert_non_null(strstr(list, known[i]));
    assert_false(model_arch_supported("gpt2"));
    assert_ptr_equal(model_arch_list(), list); /* written once */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arch_list),
        cmocka_unit_test(test_chunks_and_reuse),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_load_moe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
