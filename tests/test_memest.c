/* memest: the KV cache of the estimate is the exact formula (2 tensors x
 * 2 bytes x KV heads x head_dim x rows, sliding layers by their ring) and
 * the session's own size; the parts add up; bad parameters; a shape-only
 * model (model_load_shapes) gives the full load's estimate and cannot be
 * evaluated. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "memest.h"
#include "model.h"
#include "runner.h"
#include "session.h"
#include "testmodel.h"

static memest estimate(const tu_model *fx, uint32_t n_ctx, uint32_t n_used, memest_backend be)
{
    memest_params p = {.n_ctx = n_ctx, .n_used = n_used, .backend = be, .n_threads = 2};
    memest e;
    char msg[256];
    if (memest_compute(fx->m, gguf_file_size(fx->f), 1000, &p, &e, msg, sizeof msg))
        fail_msg("memest_compute: %s", msg);
    return e;
}

static uint64_t session_kv(const tu_model *fx, uint32_t n_ctx)
{
    session_params sp = {.n_ctx = n_ctx, .n_threads = 1};
    char msg[256];
    session *s = session_new(fx->m, &sp, msg, sizeof msg);
    if (!s)
        fail_msg("session_new: %s", msg);
    uint64_t b = session_kv_bytes(s);
    session_free(s);
    return b;
}

static void check_sum(const memest *e)
{
    assert_int_equal(e->host_total, e->weights + e->repacked + e->kv + e->compute + e->tokenizer + e->runtime);
    assert_int_equal(e->dev_total, e->dev_weights + e->dev_kv + e->dev_compute);
}

static void test_llama_kv(void **state)
{
    (void)state;
    testmodel_params p = testmodel_default_params();
    p.n_embd = 64;
    p.n_ff = 128;
    p.n_head = 4;
    p.n_head_kv = 2;
    p.n_layer = 3;
    tu_model *fx = tu_model_open(&p, "memest.gguf");
    const uint64_t kd = 2 * 16; /* n_head_kv x head_dim (64 / 4) */
    for (uint32_t ctx = 256; ctx <= 8192; ctx *= 32) {
        memest e = estimate(fx, ctx, 0, MEMEST_CPU);
        assert_int_equal(e.n_ctx, ctx);
        assert_int_equal(e.n_batch, ctx < 512 ? ctx : 512);
        assert_int_equal(e.kv_full, 2ull * 2ull * kd * 3 * ctx);
        assert_int_equal(e.kv, e.kv_full);
        assert_int_equal(e.kv_full, session_kv(fx, ctx));
        assert_int_equal(e.repacked, 0);
        assert_int_equal(e.tokenizer, 1000);
        assert_true(e.weights <= gguf_file_size(fx->f));
        assert_true(e.compute > 0 && e.runtime > 0);
        assert_int_equal(e.dev_total, 0);
        check_sum(&e);
        /* 100 positions written: 100 rows of each layer are resident */
        memest u = estimate(fx, ctx, 100, MEMEST_CPU);
        assert_int_equal(u.kv, 2ull * 2ull * kd * 3 * 100);
        assert_int_equal(u.kv_full, e.kv_full);
        assert_true(u.compute <= e.compute);
        check_sum(&u);
    }
    /* the session's default context: min(context_length, 4096) */
    memest d = estimate(fx, 0, 0, MEMEST_CPU);
    assert_int_equal(d.n_ctx, 2048);
#ifdef GGSCOPE_HAVE_VULKAN
    /* Vulkan: the KV cache, the weights and the buffers are on the device */
    memest v = estimate(fx, 512, 0, MEMEST_VULKAN);
    assert_true(v.dev_kv >= 2ull * 2ull * kd * 3 * 512 && v.dev_kv < 2ull * 2ull * kd * 3 * 512 + 4096);
    assert_true(v.dev_weights >= model_weight_bytes(fx->m));
    assert_int_equal(v.kv, 0);
    check_sum(&v);
#else
    /* a build without the Vulkan backend says so instead of estimating */
    memest_params vp = {.n_ctx = 512, .backend = MEMEST_VULKAN, .n_threads = 2};
    memest v;
    char msg[256];
    assert_int_not_equal(memest_compute(fx->m, gguf_file_size(fx->f), 1000, &vp, &v, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "no Vulkan backend"));
#endif
    tu_model_close(fx);
}

static void test_sliding_kv(void **state)
{
    (void)state;
    testmodel_params p = testmodel_arch_params("gemma3"); /* 6 layers: 0..4 sliding (window 16), 5 full */
    p.n_embd = 64;
    p.n_ff = 128;
    p.head_dim = 32;
    tu_model *fx = tu_model_open(&p, "memest-swa.gguf");
    const uint64_t kd = 1 * 32;
    memest e = estimate(fx, 8192, 0, MEMEST_CPU);
    /* llama.cpp's ring: GGML_PAD(16 + 512, 256) = 768 cells */
    assert_int_equal(e.n_swa_cells, 768);
    assert_int_equal(e.kv_full, 2ull * 2ull * kd * (5 * 768 + 1 * 8192));
    assert_int_equal(e.kv_full, session_kv(fx, 8192));
    /* 1000 positions: the sliding layers hold their ring, the full one 1000 rows */
    memest u = estimate(fx, 8192, 1000, MEMEST_CPU);
    assert_int_equal(u.kv, 2ull * 2ull * kd * (5 * 768 + 1000));
    /* a context smaller than the ring: every layer keeps n_ctx rows */
    memest s = estimate(fx, 512, 0, MEMEST_CPU);
    assert_int_equal(s.n_swa_cells, 0);
    assert_int_equal(s.kv_full, 2ull * 2ull * kd * 6 * 512);
    assert_int_equal(s.kv_full, session_kv(fx, 512));
    /* tied embeddings: the output head reads the whole table, so the whole file counts */
    assert_int_equal(e.weights, gguf_file_size(fx->f));
    tu_model_close(fx);
}

static void test_errors(void **state)
{
    (void)state;
    testmodel_params p = testmodel_default_params();
    p.n_embd = 64;
    p.n_ff = 128;
    tu_model *fx = tu_model_open(&p, "memest-err.gguf");
    memest e;
    char msg[256];
    memest_params bad = {.n_ctx = 512, .kv_type = "q4_0"};
    assert_int_equal(memest_compute(fx->m, 1, 0, &bad, &e, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "q4_0"));
    assert_non_null(strstr(msg, memest_kv_types()));
    memest_params f16 = {.n_ctx = 512, .kv_type = "f16"};
    assert_int_equal(memest_compute(fx->m, 1, 0, &f16, &e, msg, sizeof msg), 0);
    memest_params past = {.n_ctx = 512, .n_used = 513};
    assert_int_equal(memest_compute(fx->m, 1, 0, &past, &e, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "512"));
    assert_int_equal(memest_compute(NULL, 1, 0, &past, &e, msg, sizeof msg), -1);
    tu_model_close(fx);
}

/* Every weight of a shape-only model: bound where the full load binds it,
 * the same type and sizes, no data. */
static void check_shapes(const backend_weight *full, const backend_weight *sh)
{
    assert_int_equal(model_weight_bound(full), model_weight_bound(sh));
    assert_null(sh->data);
    assert_int_equal(full->type, sh->type);
    assert_int_equal(full->ne0, sh->ne0);
    assert_int_equal(full->ne1, sh->ne1);
    assert_int_equal(full->ne2, sh->ne2);
    assert_int_equal(full->row_bytes, sh->row_bytes);
}

static void shapes_equal(const char *arch, const char *tag)
{
    testmodel_params p = arch ? testmodel_arch_params(arch) : testmodel_default_params();
    p.n_embd = 64;
    p.n_ff = 128;
    tu_model *fx = tu_model_open(&p, tag);
    char msg[256];
    model_status st;
    model *sh = model_load_shapes(fx->f, &st, msg, sizeof msg);
    if (!sh)
        fail_msg("model_load_shapes (%s): %s", arch ? arch : "llama", msg);
    assert_true(sh->shapes_only);
    assert_false(fx->m->shapes_only);
    assert_memory_equal(&sh->hp, &fx->m->hp, sizeof sh->hp);
    assert_null(sh->rope_freqs);
    assert_null(sh->rope_factors_long);
    check_shapes(&fx->m->tok_embd, &sh->tok_embd);
    check_shapes(&fx->m->output_norm, &sh->output_norm);
    check_shapes(&fx->m->output, &sh->output);
    for (uint32_t il = 0; il < sh->hp.n_layer; il++) {
        /* model_layer's weights come first, one after another */
        _Static_assert(offsetof(model_layer, attn_sinks) == (MODEL_LAYER_WEIGHTS - 1) * sizeof(backend_weight),
                       "the weights of model_layer in a row");
        const char *a = (const char *)&fx->m->layers[il], *b = (const char *)&sh->layers[il];
        for (size_t i = 0; i < MODEL_LAYER_WEIGHTS; i++)
            check_shapes((const backend_weight *)(a + i * sizeof(backend_weight)),
                         (const backend_weight *)(b + i * sizeof(backend_weight)));
        assert_int_equal(fx->m->layers[il].swa, sh->layers[il].swa);
    }
    assert_int_equal(model_weight_bytes(sh), model_weight_bytes(fx->m));
    for (int be = 0; be < 2; be++) {
        memest_params mp = {.n_ctx = 512, .n_used = 100, .backend = be ? MEMEST_VULKAN : MEMEST_CPU, .n_threads = 2};
        memest a, b;
        char ma[256] = "", mb[256] = "";
        int ra = memest_compute(fx->m, gguf_file_size(fx->f), 1000, &mp, &a, ma, sizeof ma);
        int rb = memest_compute(sh, gguf_file_size(fx->f), 1000, &mp, &b, mb, sizeof mb);
        assert_int_equal(ra, rb);
        assert_string_equal(ma, mb);
        assert_memory_equal(&a, &b, sizeof a);
    }
    /* nothing evaluates it: the session, the runner and model_prepare refuse */
    session_params sp = {.n_ctx = 64, .n_threads = 1};
    assert_null(session_new(sh, &sp, msg, sizeof msg));
    assert_non_null(strstr(msg, "shapes only"));
    runner *r = NULL;
    runner_params rp = {.backend = "cpu", .threads = 1, .n_ctx = 64};
    assert_int_equal(runner_open(sh, &rp, &r, msg, sizeof msg), RUNNER_ESESSION);
    assert_null(r);
    assert_non_null(strstr(msg, "shapes only"));
    backend *cpu = backend_cpu_new(1);
    assert_non_null(cpu);
    assert_int_equal(model_prepare(sh, cpu, msg, sizeof msg), BACKEND_EARG);
    assert_non_null(strstr(msg, "shapes only"));
    backend_free(cpu);
    model_free(sh);
    tu_model_close(fx);
}

static void test_shapes_only(void **state)
{
    (void)state;
    shapes_equal(NULL, "memest-sh-llama.gguf");
    shapes_equal("gemma3", "memest-sh-gemma3.gguf");   /* tied, sliding layers */
    shapes_equal("phi3", "memest-sh-phi3.gguf");       /* fused attn_qkv and ffn_up, LongRoPE factors */
    shapes_equal("qwen3moe", "memest-sh-moe.gguf");    /* experts */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_kv),
        cmocka_unit_test(test_sliding_kv),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_shapes_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
