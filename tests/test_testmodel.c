/* testmodel (the random-weight model writer of the tests): each family's
 * defaults give a file with exactly the tensors llama.cpp's loader creates
 * for that arch (src/models/<arch>.cpp, load_arch_tensors: names and GGUF
 * shapes spelled out here by hand, not computed by the writer's rules) and
 * the keys its load_arch_hparams reads, with the right GGUF types; fields a
 * family does not take are refused. That llama.cpp runs these files is
 * checked by hand with the peer (../shared/peer/peer logits FILE 1,2,3,4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "ggtype.h"
#include "gguf.h"
#include "testmodel.h"

typedef struct {
    const char *name;     /* layer tensors as blk.0.* */
    uint64_t ne0, ne1;    /* ne1 = 1 for vectors */
} tdef;

typedef struct {
    const char *key;      /* without the "ARCH." prefix */
    char type;            /* 'u' uint32, 'f' float32, 's' string, 'b' bool array, '-' absent */
    double value;         /* u / f: the value; b: the array length */
    const char *str;      /* s: the value */
} kdef;

typedef struct {
    const char *arch;
    uint32_t n_layer;
    tdef t[24];           /* globals and layer 0, up to a NULL name */
    kdef k[16];           /* up to a NULL key */
} family_case;

#define V 300 /* the synthetic vocabulary of the defaults */

static const family_case CASES[] = {
    {"qwen3", 2,
     {{"token_embd.weight", 256, V}, {"output_norm.weight", 256, 1}, {"output.weight", 256, V},
      {"blk.0.attn_norm.weight", 256, 1}, {"blk.0.attn_q.weight", 256, 512},
      {"blk.0.attn_k.weight", 256, 256}, {"blk.0.attn_v.weight", 256, 256},
      {"blk.0.attn_output.weight", 512, 256}, {"blk.0.attn_q_norm.weight", 128, 1},
      {"blk.0.attn_k_norm.weight", 128, 1}, {"blk.0.ffn_norm.weight", 256, 1},
      {"blk.0.ffn_gate.weight", 256, 256}, {"blk.0.ffn_up.weight", 256, 256},
      {"blk.0.ffn_down.weight", 256, 256}},
     {{"attention.key_length", 'u', 128, NULL}, {"attention.value_length", 'u', 128, NULL},
      {"rope.dimension_count", 'u', 128, NULL}, {"rope.freq_base", 'f', 1e6, NULL},
      {"attention.layer_norm_rms_epsilon", 'f', 1e-6, NULL}, {"attention.head_count_kv", 'u', 2, NULL},
      {"attention.sliding_window", '-', 0, NULL}, {"rope.scaling.type", '-', 0, NULL}}},
    {"gemma3", 6,
     {{"token_embd.weight", 256, V}, {"output_norm.weight", 256, 1},
      {"blk.0.attn_norm.weight", 256, 1}, {"blk.0.attn_q.weight", 256, 512},
      {"blk.0.attn_k.weight", 256, 128}, {"blk.0.attn_v.weight", 256, 128},
      {"blk.0.attn_output.weight", 512, 256}, {"blk.0.post_attention_norm.weight", 256, 1},
      {"blk.0.attn_k_norm.weight", 128, 1}, {"blk.0.attn_q_norm.weight", 128, 1},
      {"blk.0.ffn_norm.weight", 256, 1}, {"blk.0.ffn_gate.weight", 256, 512},
      {"blk.0.ffn_up.weight", 256, 512}, {"blk.0.ffn_down.weight", 512, 256},
      {"blk.0.post_ffw_norm.weight", 256, 1}},
     {{"attention.key_length", 'u', 128, NULL}, {"attention.value_length", 'u', 128, NULL},
      {"attention.sliding_window", 'u', 16, NULL}, {"attention.sliding_window_pattern", '-', 0, NULL},
      {"rope.freq_base", 'f', 1e6, NULL}, {"rope.freq_base_swa", '-', 0, NULL},
      {"final_logit_softcapping", '-', 0, NULL}, {"attention.head_count_kv", 'u', 1, NULL},
      {"attention.layer_norm_rms_epsilon", 'f', 1e-6, NULL}}},
    {"phi3", 2,
     {{"token_embd.weight", 256, V}, {"output_norm.weight", 256, 1}, {"output.weight", 256, V},
      {"rope_factors_long.weight", 32, 1}, {"rope_factors_short.weight", 32, 1},
      {"blk.0.attn_norm.weight", 256, 1}, {"blk.0.attn_qkv.weight", 256, 512},
      {"blk.0.attn_output.weight", 256, 256}, {"blk.0.ffn_norm.weight", 256, 1},
      {"blk.0.ffn_up.weight", 256, 512}, {"blk.0.ffn_down.weight", 256, 256}},
     {{"context_length", 'u', 4096, NULL}, {"rope.scaling.original_context_length", 'u', 1024, NULL},
      /* sqrt(1 + ln(4) / ln(1024)) */
      {"rope.scaling.attn_factor", 'f', 1.0954451150103321, NULL},
      {"attention.sliding_window", 'u', 0, NULL}, {"rope.dimension_count", 'u', 64, NULL},
      {"attention.key_length", '-', 0, NULL}, {"rope.scaling.type", '-', 0, NULL}}},
    {"smollm3", 4,
     {{"token_embd.weight", 256, V}, {"output_norm.weight", 256, 1}, {"output.weight", 256, V},
      {"blk.0.attn_norm.weight", 256, 1}, {"blk.0.attn_q.weight", 256, 256},
      {"blk.0.attn_k.weight", 256, 128}, {"blk.0.attn_v.weight", 256, 128},
      {"blk.0.attn_output.weight", 256, 256}, {"blk.0.ffn_norm.weight", 256, 1},
      {"blk.0.ffn_gate.weight", 256, 256}, {"blk.0.ffn_up.weight", 256, 256},
      {"blk.0.ffn_down.weight", 256, 256}},
     {{"rope.freq_base", 'f', 5e6, NULL}, {"attention.layer_norm_rms_epsilon", 'f', 1e-6, NULL},
      {"attention.key_length", '-', 0, NULL}}},
    {"olmo2", 2,
     {{"token_embd.weight", 256, V}, {"output_norm.weight", 256, 1}, {"output.weight", 256, V},
      {"blk.0.attn_q.weight", 256, 256}, {"blk.0.attn_k.weight", 256, 128},
      {"blk.0.attn_v.weight", 256, 128}, {"blk.0.attn_output.weight", 256, 256},
      {"blk.0.attn_q_norm.weight", 256, 1}, {"blk.0.attn_k_norm.weight", 128, 1},
      {"blk.0.post_attention_norm.weight", 256, 1}, {"blk.0.ffn_gate.weight", 256, 256},
      {"blk.0.ffn_up.weight", 256, 256}, {"blk.0.ffn_down.weight", 256, 256},
      {"blk.0.post_ffw_norm.weight", 256, 1}},
     {{"rope.freq_base", 'f', 5e5, NULL}, {"attention.layer_norm_rms_epsilon", 'f', 1e-6, NULL},
      {"attention.sliding_window", '-', 0, NULL}, {"attention.sliding_window_pattern", '-', 0, NULL}}},
    {"granite", 2,
     {{"token_embd.weight", 256, V}, {"output_norm.weight", 256, 1}, {"output.weight", 256, V},
      {"blk.0.attn_norm.weight", 256, 1}, {"blk.0.attn_q.weight", 256, 256},
      {"blk.0.attn_k.weight", 256, 128}, {"blk.0.attn_v.weight", 256, 128},
      {"blk.0.attn_output.weight", 256, 256}, {"blk.0.ffn_norm.weight", 256, 1},
      {"blk.0.ffn_gate.weight", 256, 256}, {"blk.0.ffn_up.weight", 256, 256},
      {"blk.0.ffn_down.weight", 256, 256}},
     {{"embedding_scale", 'f', 12.0, NULL}, {"residual_scale", 'f', 0.22, NULL},
      {"attention.scale", 'f', 0.015625, NULL}, {"logit_scale", 'f', 8.0, NULL}}},
    {"mistral3", 2,
     {{"token_embd.weight", 256, V}, {"output_norm.weight", 256, 1}, {"output.weight", 256, V},
      {"blk.0.attn_norm.weight", 256, 1}, {"blk.0.attn_q.weight", 256, 256},
      {"blk.0.attn_k.weight", 256, 128}, {"blk.0.attn_v.weight", 256, 128},
      {"blk.0.attn_output.weight", 256, 256}, {"blk.0.ffn_norm.weight", 256, 1},
      {"blk.0.ffn_gate.weight", 256, 256}, {"blk.0.ffn_up.weight", 256, 256},
      {"blk.0.ffn_down.weight", 256, 256}},
     {{"rope.scaling.type", 's', 0, "yarn"}, {"rope.scaling.factor", 'f', 4.0, NULL},
      {"rope.scaling.original_context_length", 'u', 32, NULL},
      {"rope.scaling.yarn_beta_fast", 'f', 32.0, NULL}, {"rope.scaling.yarn_beta_slow", 'f', 1.0, NULL},
      {"rope.scaling.yarn_log_multiplier", 'f', 1.0, NULL},
      {"attention.temperature_scale", 'f', 0.1, NULL}, {"rope.freq_base", 'f', 1e6, NULL}}},
};
#define N_CASES (sizeof CASES / sizeof CASES[0])

/* "blk.N.rest" -> "blk.0.rest" in buf; other names unchanged. */
static const char *layer0(const gguf_tensor *t, char *buf, size_t cap)
{
    char name[128];
    gguf_str_copy(t->name, name, sizeof name);
    unsigned il;
    int n = 0;
    if (sscanf(name, "blk.%u.%n", &il, &n) == 1 && n > 0)
        snprintf(buf, cap, "blk.0.%s", name + n);
    else
        snprintf(buf, cap, "%s", name);
    return buf;
}

static gguf_file *write_open(const testmodel_params *p, const char *tag)
{
    char msg[512];
    const char *path = tu_tmp_path(tag);
    if (testmodel_write(p, path, msg, sizeof msg))
        fail_msg("%s: testmodel_write: %s", tag, msg);
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    if (!f) {
        char b[1024];
        fail_msg("%s: %s", tag, gguf_error_format(&err, b, sizeof b));
    }
    remove(path); /* the mapping stays */
    return f;
}

static void check_tensors(const family_case *c, const gguf_file *f)
{
    size_t n_global = 0, n_layer = 0;
    for (const tdef *d = c->t; d->name; d++)
        if (strncmp(d->name, "blk.", 4))
            n_global++;
        else
            n_layer++;
    if (gguf_tensor_count(f) != n_global + n_layer * c->n_layer)
        fail_msg("%s: %llu tensors, expected %zu", c->arch,
                 (unsigned long long)gguf_tensor_count(f), n_global + n_layer * c->n_layer);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[160];
        layer0(t, name, sizeof name);
        const tdef *d = c->t;
        while (d->name && strcmp(d->name, name))
            d++;
        if (!d->name)
            fail_msg("%s: unexpected tensor %s", c->arch, name);
        if (t->ne[0] != d->ne0 || t->ne[1] != d->ne1 || t->n_dims != (d->ne1 > 1 ? 2u : 1u))
            fail_msg("%s: %s is [%llu, %llu], expected [%llu, %llu]", c->arch, name,
                     (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                     (unsigned long long)d->ne0, (unsigned long long)d->ne1);
        if (t->type != GGTYPE_F32)
            fail_msg("%s: %s is not F32", c->arch, name);
    }
}

static void check_keys(const family_case *c, const gguf_file *f)
{
    char key[128];
    uint32_t u;
    assert_int_equal(gguf_get_u32(f, (snprintf(key, sizeof key, "%s.block_count", c->arch), key), &u),
                     GGUF_OK);
    assert_int_equal(u, c->n_layer);
    for (const kdef *k = c->k; k->key; k++) {
        snprintf(key, sizeof key, "%s.%s", c->arch, k->key);
        const gguf_kv *kv = gguf_find_kv(f, key);
        if (k->type == '-') {
            if (kv)
                fail_msg("%s: %s should be absent", c->arch, key);
            continue;
        }
        if (!kv)
            fail_msg("%s: %s is missing", c->arch, key);
        const gguf_vtype want = k->type == 'u' ? GGUF_VT_UINT32 : k->type == 'f' ? GGUF_VT_FLOAT32
                              : k->type == 's' ? GGUF_VT_STRING : GGUF_VT_ARRAY;
        if (kv->value.type != want)
            fail_msg("%s: %s is %s", c->arch, key, gguf_vtype_name(kv->value.type));
        if (k->type == 's') {
            gguf_str s;
            assert_int_equal(gguf_value_str(&kv->value, &s), GGUF_OK);
            if (!gguf_str_eq(s, k->str))
                fail_msg("%s: %s is not \"%s\"", c->arch, key, k->str);
        } else if (k->type == 'b') {
            assert_int_equal(kv->value.arr_type, GGUF_VT_BOOL);
            assert_int_equal(kv->value.arr_len, (uint64_t)k->value);
        } else {
            double v;
            assert_int_equal(gguf_value_f64(&kv->value, &v), GGUF_OK);
            if (v != (k->type == 'f' ? (double)(float)k->value : k->value))
                fail_msg("%s: %s = %.9g, expected %.9g", c->arch, key, v, k->value);
        }
    }
}

static void test_family_defaults(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_CASES; i++) {
        const family_case *c = &CASES[i];
        testmodel_params p = testmodel_arch_params(c->arch);
        assert_non_null(p.arch);
        assert_string_equal(p.arch, c->arch);
        gguf_file *f = write_open(&p, c->arch);
        char arch[32];
        assert_int_equal(gguf_get_cstr(f, "general.architecture", arch, sizeof arch), GGUF_OK);
        assert_string_equal(arch, c->arch);
        check_tensors(c, f);
        check_keys(c, f);
        gguf_close(f);
    }
}

/* The options beyond the defaults: each adds exactly its tensors / keys. */
static void test_family_options(void **state)
{
    (void)state;
    testmodel_params p = testmodel_arch_params("olmo2");
    p.n_layer = 8;
    p.sliding_window = 16; /* OLMo-3: bool pattern, every 4th layer full */
    gguf_file *f = write_open(&p, "olmo3");
    const gguf_value *arr;
    assert_int_equal(gguf_get_arr(f, "olmo2.attention.sliding_window_pattern", &arr), GGUF_OK);
    assert_int_equal(arr->arr_type, GGUF_VT_BOOL);
    assert_int_equal(arr->arr_len, 8);
    for (uint64_t il = 0; il < 8; il++) {
        double v;
        assert_int_equal(gguf_arr_f64(arr, il, &v), GGUF_OK);
        assert_true(v == (il % 4 < 3 ? 1.0 : 0.0));
    }
    gguf_close(f);

    p = testmodel_arch_params("phi3");
    p.n_rot = 32;
    p.qkv_bias = true;
    f = write_open(&p, "phi3opt");
    assert_int_equal(gguf_find_tensor(f, "rope_factors_long.weight")->ne[0], 16);
    assert_int_equal(gguf_find_tensor(f, "blk.1.attn_qkv.bias")->ne[0], 512);
    uint32_t u;
    assert_int_equal(gguf_get_u32(f, "phi3.rope.dimension_count", &u), GGUF_OK);
    assert_int_equal(u, 32);
    gguf_close(f);
    p.rope_factors = false;
    p.qkv_bias = false;
    f = write_open(&p, "phi3plain");
    assert_null(gguf_find_tensor(f, "rope_factors_long.weight"));
    assert_null(gguf_find_kv(f, "phi3.rope.scaling.attn_factor"));
    gguf_close(f);

    p = testmodel_arch_params("granite");
    p.out_bias = true;
    p.rope_freqs = true;
    p.tied = true;
    f = write_open(&p, "granite");
    assert_null(gguf_find_tensor(f, "output.weight"));
    assert_int_equal(gguf_find_tensor(f, "rope_freqs.weight")->ne[0], 32);
    assert_int_equal(gguf_find_tensor(f, "blk.0.attn_output.bias")->ne[0], 256);
    assert_int_equal(gguf_find_tensor(f, "blk.1.ffn_gate.bias")->ne[0], 256);
    assert_int_equal(gguf_find_tensor(f, "blk.1.ffn_up.bias")->ne[0], 256);
    assert_int_equal(gguf_find_tensor(f, "blk.1.ffn_down.bias")->ne[0], 256);
    gguf_close(f);

    p = testmodel_arch_params("gemma3");
    p.swa_pattern = 2;
    p.logit_softcap = 30.0f;
    p.rope_freq_base_swa = 10000.0f;
    f = write_open(&p, "gemma3opt");
    assert_int_equal(gguf_get_u32(f, "gemma3.attention.sliding_window_pattern", &u), GGUF_OK);
    assert_int_equal(u, 2);
    double d;
    assert_int_equal(gguf_get_f64(f, "gemma3.final_logit_softcapping", &d), GGUF_OK);
    assert_true(d == 30.0);
    assert_int_equal(gguf_get_f64(f, "gemma3.rope.freq_base_swa", &d), GGUF_OK);
    assert_true(d == 10000.0);
    gguf_close(f);
}

static void expect_refused(testmodel_params p, const char *tag, const char *needle)
{
    char msg[512] = "";
    if (testmodel_write(&p, tu_tmp_path(tag), msg, sizeof msg) == 0)
        fail_msg("%s: written, expected a refusal", tag);
    if (!strstr(msg, needle))
        fail_msg("%s: message \"%s\" lacks \"%s\"", tag, msg, needle);
}

static void test_refusals(void **state)
{
    (void)state;
    testmodel_params p = testmodel_arch_params("olmo2");
    p.tied = true;
    expect_refused(p, "olmo2tied", "tied");
    p = testmodel_arch_params("qwen3");
    p.rope_factors = true;
    expect_refused(p, "qwen3fac", "rope_factors");
    p = testmodel_arch_params("granite");
    p.logit_scale = 0;
    expect_refused(p, "granitels", "logit_scale");
    p = testmodel_default_params();
    p.head_dim = 128;
    expect_refused(p, "llamahd", "head_dim");
    p = testmodel_arch_params("mistral3");
    p.rope_scale_linear = 2.0f;
    expect_refused(p, "mistral3lin", "linear or yarn");
    p = testmodel_arch_params("phi3");
    p.head_dim = 128;
    expect_refused(p, "phi3hd", "head_dim");
    p = testmodel_arch_params("phi3");
    p.n_rot = 96;
    expect_refused(p, "phi3rot", "dimensions");
    p.arch = "gemma2";
    expect_refused(p, "gemma2", "unknown architecture");
    assert_null(testmodel_arch_params("gemma2").arch);
}

/* llama and qwen2 keep their defaults: testmodel_arch_params gives the very
 * bytes testmodel_default_params does (the stored logits of
 * tests/data/model_logits depend on them). */
static void test_llama_qwen2_unchanged(void **state)
{
    (void)state;
    const char *archs[] = {"llama", "qwen2"};
    for (int i = 0; i < 2; i++) {
        testmodel_params a = testmodel_default_params(), b = testmodel_arch_params(archs[i]);
        a.arch = archs[i];
        char pa[512], pb[512], msg[512];
        snprintf(pa, sizeof pa, "%s", tu_tmp_path("defa"));
        snprintf(pb, sizeof pb, "%s", tu_tmp_path("defb"));
        assert_int_equal(testmodel_write(&a, pa, msg, sizeof msg), 0);
        assert_int_equal(testmodel_write(&b, pb, msg, sizeof msg), 0);
        size_t na, nb;
        uint8_t *da = tu_read_file(pa, &na), *db = tu_read_file(pb, &nb);
        assert_non_null(da);
        assert_non_null(db);
        assert_int_equal(na, nb);
        assert_memory_equal(da, db, na);
        free(da);
        free(db);
        remove(pa);
        remove(pb);
    }
    for (size_t i = 0; testmodel_arch_name(i); i++)
        assert_non_null(testmodel_arch_vocab(testmodel_arch_name(i), NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_defaults),
        cmocka_unit_test(test_family_options),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_llama_qwen2_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
