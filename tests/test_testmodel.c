/* testmodel (the random-weight model writer of the tests): each family's
 * defaults give a file with exactly the tensors llama.cpp's loader creates
 * for that arch (src/models/<arch>.cpp, load_arch_tensors: names and GGUF
 * shapes spelled out here by hand, not computed by the writer's rules) and
 * the keys its load_arch_hparams reads, with the right GGUF types; fields a
 * family does not take are refused. That llama.cpp runs these files is
 * checked by hand with the peer (../shared/peer/peer logits FILE 1,2,3,4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "codec.h"
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

static void check_keys(const char *arch, uint32_t n_layer, const kdef *keys, const gguf_file *f)
{
    char key[128];
    uint32_t u;
    assert_int_equal(gguf_get_u32(f, (snprintf(key, sizeof key, "%s.block_count", arch), key), &u),
                     GGUF_OK);
    assert_int_equal(u, n_layer);
    for (const kdef *k = keys; k->key; k++) {
        snprintf(key, sizeof key, "%s.%s", arch, k->key);
        const gguf_kv *kv = gguf_find_kv(f, key);
        if (k->type == '-') {
            if (kv)
                fail_msg("%s: %s should be absent", arch, key);
            continue;
        }
        if (!kv)
            fail_msg("%s: %s is missing", arch, key);
        const gguf_vtype want = k->type == 'u' ? GGUF_VT_UINT32 : k->type == 'f' ? GGUF_VT_FLOAT32
                              : k->type == 's' ? GGUF_VT_STRING : GGUF_VT_ARRAY;
        if (kv->value.type != want)
            fail_msg("%s: %s is %s", arch, key, gguf_vtype_name(kv->value.type));
        if (k->type == 's') {
            gguf_str s;
            assert_int_equal(gguf_value_str(&kv->value, &s), GGUF_OK);
            if (!gguf_str_eq(s, k->str))
                fail_msg("%s: %s is not \"%s\"", arch, key, k->str);
        } else if (k->type == 'b') {
            assert_int_equal(kv->value.arr_type, GGUF_VT_BOOL);
            assert_int_equal(kv->value.arr_len, (uint64_t)k->value);
        } else {
            double v;
            assert_int_equal(gguf_value_f64(&kv->value, &v), GGUF_OK);
            if (v != (k->type == 'f' ? (double)(float)k->value : k->value))
                fail_msg("%s: %s = %.9g, expected %.9g", arch, key, v, k->value);
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
        check_keys(c->arch, c->n_layer, c->k, f);
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

/* ---- the mixture-of-experts families (moe.md section 1) ---- */

typedef struct {
    const char *name;     /* layer tensors as blk.0.* */
    uint64_t ne0, ne1;
    uint64_t ne2;         /* 0: 1-D or 2-D; else the experts of a 3-D tensor */
    char type;            /* 'f' F32, 'w' the case's wtype, 'x' its experts' type */
} mdef;

typedef struct {
    const char *arch;
    uint32_t n_expert, n_expert_used; /* 0, 0: the family's defaults */
    uint32_t wtype, xtype;
    mdef t[24];           /* globals and layer 0, up to a NULL name */
    kdef k[16];           /* up to a NULL key */
} moe_case;

static const moe_case MOE_CASES[] = {
    {"qwen3moe", 0, 0, GGTYPE_Q4_K, GGTYPE_Q4_K,
     {{"token_embd.weight", 256, V, 0, 'w'}, {"output_norm.weight", 256, 1, 0, 'f'},
      {"output.weight", 256, V, 0, 'w'}, {"blk.0.attn_norm.weight", 256, 1, 0, 'f'},
      {"blk.0.attn_q.weight", 256, 512, 0, 'w'}, {"blk.0.attn_k.weight", 256, 256, 0, 'w'},
      {"blk.0.attn_v.weight", 256, 256, 0, 'w'}, {"blk.0.attn_output.weight", 512, 256, 0, 'w'},
      {"blk.0.attn_q_norm.weight", 128, 1, 0, 'f'}, {"blk.0.attn_k_norm.weight", 128, 1, 0, 'f'},
      {"blk.0.ffn_norm.weight", 256, 1, 0, 'f'}, {"blk.0.ffn_gate_inp.weight", 256, 8, 0, 'f'},
      {"blk.0.ffn_gate_exps.weight", 256, 256, 8, 'x'},
      {"blk.0.ffn_up_exps.weight", 256, 256, 8, 'x'},
      {"blk.0.ffn_down_exps.weight", 256, 256, 8, 'x'}},
     {{"expert_count", 'u', 8, NULL}, {"expert_used_count", 'u', 2, NULL},
      {"expert_feed_forward_length", 'u', 256, NULL}, {"attention.key_length", 'u', 128, NULL},
      {"rope.freq_base", 'f', 1e6, NULL}, {"attention.layer_norm_rms_epsilon", 'f', 1e-6, NULL},
      {"attention.sliding_window", '-', 0, NULL}}},
    /* MXFP4 experts by default when the matrices are quantized */
    {"gpt-oss", 0, 0, GGTYPE_Q8_0, GGTYPE_MXFP4,
     {{"token_embd.weight", 256, V, 0, 'w'}, {"output_norm.weight", 256, 1, 0, 'f'},
      {"output.weight", 256, V, 0, 'w'}, {"blk.0.attn_norm.weight", 256, 1, 0, 'f'},
      {"blk.0.attn_q.weight", 256, 512, 0, 'w'}, {"blk.0.attn_k.weight", 256, 128, 0, 'w'},
      {"blk.0.attn_v.weight", 256, 128, 0, 'w'}, {"blk.0.attn_q.bias", 512, 1, 0, 'f'},
      {"blk.0.attn_k.bias", 128, 1, 0, 'f'}, {"blk.0.attn_v.bias", 128, 1, 0, 'f'},
      {"blk.0.attn_output.weight", 512, 256, 0, 'w'}, {"blk.0.attn_output.bias", 256, 1, 0, 'f'},
      {"blk.0.attn_sinks.weight", 8, 1, 0, 'f'},
      {"blk.0.post_attention_norm.weight", 256, 1, 0, 'f'},
      {"blk.0.ffn_gate_inp.weight", 256, 32, 0, 'f'}, {"blk.0.ffn_gate_inp.bias", 32, 1, 0, 'f'},
      {"blk.0.ffn_gate_exps.weight", 256, 256, 32, 'x'},
      {"blk.0.ffn_up_exps.weight", 256, 256, 32, 'x'},
      {"blk.0.ffn_down_exps.weight", 256, 256, 32, 'x'},
      {"blk.0.ffn_gate_exps.bias", 256, 32, 0, 'f'}, {"blk.0.ffn_up_exps.bias", 256, 32, 0, 'f'},
      {"blk.0.ffn_down_exps.bias", 256, 32, 0, 'f'}},
     {{"expert_count", 'u', 32, NULL}, {"expert_used_count", 'u', 4, NULL},
      {"expert_feed_forward_length", 'u', 256, NULL}, {"attention.sliding_window", 'u', 128, NULL},
      {"attention.key_length", 'u', 64, NULL}, {"attention.value_length", 'u', 64, NULL},
      {"attention.head_count", 'u', 8, NULL}, {"attention.head_count_kv", 'u', 2, NULL},
      {"rope.freq_base", 'f', 150000, NULL}, {"rope.scaling.type", 's', 0, "yarn"},
      {"rope.scaling.factor", 'f', 32, NULL},
      {"rope.scaling.original_context_length", 'u', 4096, NULL},
      {"attention.layer_norm_rms_epsilon", 'f', 1e-5, NULL},
      {"attention.sliding_window_pattern", '-', 0, NULL},
      {"rope.scaling.yarn_beta_fast", '-', 0, NULL}}},
    /* llama with experts (Mixtral): n_ff wide, no expert_feed_forward_length */
    {"llama", 8, 2, GGTYPE_Q8_0, GGTYPE_Q8_0,
     {{"token_embd.weight", 256, V, 0, 'w'}, {"output_norm.weight", 256, 1, 0, 'f'},
      {"output.weight", 256, V, 0, 'w'}, {"blk.0.attn_norm.weight", 256, 1, 0, 'f'},
      {"blk.0.attn_q.weight", 256, 256, 0, 'w'}, {"blk.0.attn_k.weight", 256, 128, 0, 'w'},
      {"blk.0.attn_v.weight", 256, 128, 0, 'w'}, {"blk.0.attn_output.weight", 256, 256, 0, 'w'},
      {"blk.0.ffn_norm.weight", 256, 1, 0, 'f'}, {"blk.0.ffn_gate_inp.weight", 256, 8, 0, 'f'},
      {"blk.0.ffn_gate_exps.weight", 256, 256, 8, 'x'},
      {"blk.0.ffn_up_exps.weight", 256, 256, 8, 'x'},
      {"blk.0.ffn_down_exps.weight", 256, 256, 8, 'x'}},
     {{"expert_count", 'u', 8, NULL}, {"expert_used_count", 'u', 2, NULL},
      {"expert_feed_forward_length", '-', 0, NULL}}},
};
#define N_MOE_CASES (sizeof MOE_CASES / sizeof MOE_CASES[0])

static testmodel_params moe_params(const moe_case *c)
{
    testmodel_params p = testmodel_arch_params(c->arch);
    p.wtype = c->wtype;
    if (c->n_expert) {
        p.n_expert = c->n_expert;
        p.n_expert_used = c->n_expert_used;
    }
    return p;
}

static void check_moe_tensors(const moe_case *c, const gguf_file *f)
{
    size_t n_global = 0, n_layer = 0;
    for (const mdef *d = c->t; d->name; d++)
        if (strncmp(d->name, "blk.", 4))
            n_global++;
        else
            n_layer++;
    if (gguf_tensor_count(f) != n_global + 2 * n_layer)
        fail_msg("%s: %llu tensors, expected %zu", c->arch,
                 (unsigned long long)gguf_tensor_count(f), n_global + 2 * n_layer);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[160];
        layer0(t, name, sizeof name);
        const mdef *d = c->t;
        while (d->name && strcmp(d->name, name))
            d++;
        if (!d->name)
            fail_msg("%s: unexpected tensor %s", c->arch, name);
        const uint64_t ne2 = d->ne2 ? d->ne2 : 1;
        const uint32_t dims = d->ne2 ? 3 : d->ne1 > 1 ? 2 : 1;
        if (t->ne[0] != d->ne0 || t->ne[1] != d->ne1 || t->ne[2] != ne2 || t->n_dims != dims)
            fail_msg("%s: %s is [%llu, %llu, %llu] (%u-D), expected [%llu, %llu, %llu] (%u-D)",
                     c->arch, name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                     (unsigned long long)t->ne[2], t->n_dims, (unsigned long long)d->ne0,
                     (unsigned long long)d->ne1, (unsigned long long)ne2, dims);
        const uint32_t want = d->type == 'w' ? c->wtype : d->type == 'x' ? c->xtype : GGTYPE_F32;
        if (t->type != want)
            fail_msg("%s: %s is %s, expected %s", c->arch, name, ggtype_name(t->type),
                     ggtype_name(want));
    }
}

static void test_moe_defaults(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_MOE_CASES; i++) {
        const moe_case *c = &MOE_CASES[i];
        testmodel_params p = moe_params(c);
        assert_non_null(p.arch);
        gguf_file *f = write_open(&p, c->arch);
        char arch[32];
        assert_int_equal(gguf_get_cstr(f, "general.architecture", arch, sizeof arch), GGUF_OK);
        assert_string_equal(arch, c->arch);
        check_moe_tensors(c, f);
        check_keys(c->arch, 2, c->k, f);
        gguf_close(f);
    }
    /* --expert-type; qwen3moe without expert_ff: n_ff / n_expert_used wide, no key */
    testmodel_params p = testmodel_arch_params("gpt-oss");
    p.wtype = GGTYPE_Q8_0;
    p.expert_type = GGTYPE_Q4_0;
    gguf_file *f = write_open(&p, "gptoss-q40");
    assert_int_equal(gguf_find_tensor(f, "blk.1.ffn_up_exps.weight")->type, GGTYPE_Q4_0);
    assert_int_equal(gguf_find_tensor(f, "blk.1.attn_q.weight")->type, GGTYPE_Q8_0);
    gguf_close(f);
    p = testmodel_arch_params("qwen3moe");
    p.expert_ff = 0;
    p.n_ff = 512;
    f = write_open(&p, "qwen3moe-noff");
    assert_null(gguf_find_kv(f, "qwen3moe.expert_feed_forward_length"));
    assert_int_equal(gguf_find_tensor(f, "blk.0.ffn_down_exps.weight")->ne[0], 256);
    gguf_close(f);
}

static void test_moe_refusals(void **state)
{
    (void)state;
    testmodel_params p = testmodel_arch_params("qwen3");
    p.n_expert = 8;
    p.n_expert_used = 2;
    expect_refused(p, "qwen3exp", "n_expert");
    p = testmodel_default_params();
    p.n_expert = 8;
    p.n_expert_used = 2;
    p.expert_ff = 256;
    expect_refused(p, "llamaxff", "expert_ff");
    p = testmodel_default_params();
    p.n_expert_used = 2;
    expect_refused(p, "llamaxt", "without experts");
    p = testmodel_arch_params("qwen3moe");
    p.n_expert_used = 9;
    expect_refused(p, "qwen3moe9", "expert counts");
    p = testmodel_arch_params("gpt-oss");
    p.sliding_window = 0;
    expect_refused(p, "gptossswa", "sliding_window");
    p = testmodel_arch_params("gpt-oss");
    p.expert_ff = 0;
    expect_refused(p, "gptossff", "FFN width");
    p = testmodel_arch_params("gpt-oss");
    p.tied = true;
    expect_refused(p, "gptosstied", "tied");
    p = testmodel_arch_params("gpt-oss");
    p.expert_type = GGTYPE_Q4_K; /* 256-element blocks in 96-wide rows */
    p.expert_ff = 96;
    expect_refused(p, "gptossq4k", "cannot hold rows of 96");
}

/* The o200k_harmony stand-in of gpt-oss: GPT-2's vocabulary, pre-tokenizer
 * gpt-4o, the Harmony tokens as control tokens (GPT-2's own <|endoftext|>
 * reused), eos <|return|>; a vocabulary that has them is copied as it is. */
static void test_harmony_vocab(void **state)
{
    (void)state;
    const char *vp = tu_shared("fixtures/vocab/ggml-vocab-gpt-2.gguf");
    if (!vp)
        TU_SKIP_NO_SHARED();
    gguf_error err;
    gguf_file *gpt2 = gguf_open(vp, &err);
    assert_non_null(gpt2);
    testmodel_params p = testmodel_arch_params("gpt-oss");
    p.n_layer = 1;
    p.n_expert = 4;
    p.n_expert_used = 2;
    p.vocab = gpt2;
    gguf_file *f = write_open(&p, "harmony");
    char pre[32];
    assert_int_equal(gguf_get_cstr(f, "tokenizer.ggml.pre", pre, sizeof pre), GGUF_OK);
    assert_string_equal(pre, "gpt-4o");
    const gguf_value *toks, *types;
    assert_int_equal(gguf_get_arr(f, "tokenizer.ggml.tokens", &toks), GGUF_OK);
    assert_int_equal(gguf_get_arr(f, "tokenizer.ggml.token_type", &types), GGUF_OK);
    assert_int_equal(toks->arr_len, 50257 + 8);
    assert_int_equal(types->arr_len, toks->arr_len);
    assert_int_equal(gguf_find_tensor(f, "token_embd.weight")->ne[1], toks->arr_len);
    assert_int_equal(gguf_find_tensor(f, "output.weight")->ne[1], toks->arr_len);
    static const char *const specials[] = {"<|startoftext|>", "<|endoftext|>", "<|return|>",
                                           "<|constrain|>", "<|channel|>", "<|start|>",
                                           "<|end|>", "<|message|>", "<|call|>"};
    int64_t ids[9];
    for (int i = 0; i < 9; i++) {
        ids[i] = -1;
        for (uint64_t k = 0; k < toks->arr_len && ids[i] < 0; k++) {
            gguf_str s;
            assert_int_equal(gguf_arr_str(toks, k, &s), GGUF_OK);
            if (gguf_str_eq(s, specials[i]))
                ids[i] = (int64_t)k;
        }
        if (ids[i] < 0)
            fail_msg("%s is missing", specials[i]);
        int64_t ty;
        assert_int_equal(gguf_arr_i64(types, (uint64_t)ids[i], &ty), GGUF_OK);
        assert_int_equal(ty, 3); /* control */
    }
    assert_int_equal(ids[1], 50256); /* GPT-2's own */
    uint32_t u;
    assert_int_equal(gguf_get_u32(f, "tokenizer.ggml.eos_token_id", &u), GGUF_OK);
    assert_int_equal(u, ids[2]);
    assert_int_equal(gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &u), GGUF_OK);
    assert_int_equal(u, ids[0]);
    assert_int_equal(gguf_get_u32(f, "tokenizer.ggml.padding_token_id", &u), GGUF_OK);
    assert_int_equal(u, ids[1]);
    /* the stand-in as the vocabulary of another file: copied, nothing appended */
    p.vocab = f;
    gguf_file *g = write_open(&p, "harmony2");
    assert_int_equal(gguf_get_arr(g, "tokenizer.ggml.tokens", &toks), GGUF_OK);
    assert_int_equal(toks->arr_len, 50257 + 8);
    gguf_close(g);
    /* the other families copy GPT-2's as it is */
    p = testmodel_arch_params("olmo2");
    p.vocab = gpt2;
    g = write_open(&p, "olmo2gpt2");
    assert_int_equal(gguf_get_arr(g, "tokenizer.ggml.tokens", &toks), GGUF_OK);
    assert_int_equal(toks->arr_len, 50257);
    assert_int_equal(gguf_get_cstr(g, "tokenizer.ggml.pre", pre, sizeof pre), GGUF_OK);
    assert_string_equal(pre, "gpt-2");
    gguf_close(g);
    gguf_close(f);
    gguf_close(gpt2);
}

/* gpt-oss with the Harmony template, read from llama.cpp's tree at run time
 * ($GGSCOPE_LLAMA_SRC, default /tmp/llama-src; never copied here): stored as
 * tokenizer.chat_template in place of the vocabulary's. */
static void test_harmony_template(void **state)
{
    (void)state;
    const char *src = getenv("GGSCOPE_LLAMA_SRC") ? getenv("GGSCOPE_LLAMA_SRC") : "/tmp/llama-src";
    char path[512];
    snprintf(path, sizeof path, "%s/models/templates/openai-gpt-oss-120b.jinja", src);
    size_t n;
    char *tpl = (char *)tu_read_file(path, &n);
    if (!tpl) {
        print_message("SKIP: no %s (llama.cpp's tree; GGSCOPE_LLAMA_SRC)\n", path);
        skip();
    }
    testmodel_params p = testmodel_arch_params("gpt-oss");
    p.n_layer = 1;
    p.chat_template = tpl;
    gguf_file *f = write_open(&p, "harmonytpl");
    gguf_str s;
    assert_int_equal(gguf_get_str(f, "tokenizer.chat_template", &s), GGUF_OK);
    assert_int_equal(s.len, n);
    assert_memory_equal(s.ptr, tpl, n);
    assert_non_null(strstr(tpl, "<|channel|>"));
    gguf_close(f);
    free(tpl);
}

/* llama-quantize's Q4_K_M (llama-quant.cpp) on a qwen3moe of 8 layers, whose
 * use_more_bits layers are 0, 3, 6, 7: with 8 experts attn_k / attn_v Q8_0 and
 * attn_output Q5_K; with 16 attn_v Q6_K there and Q4_K elsewhere. */
static void test_q4_K_M(void **state)
{
    (void)state;
    for (int ne = 8; ne <= 16; ne += 8) {
        testmodel_params p = testmodel_arch_params("qwen3moe");
        p.n_layer = 8;
        p.n_expert = (uint32_t)ne;
        p.q4_K_M = true;
        p.wtype = GGTYPE_Q8_0; /* ignored */
        p.fast_random = ne == 16;
        gguf_file *f = write_open(&p, "q4km");
        assert_int_equal(gguf_find_tensor(f, "token_embd.weight")->type, GGTYPE_Q4_K);
        assert_int_equal(gguf_find_tensor(f, "output.weight")->type, GGTYPE_Q6_K);
        for (int il = 0; il < 8; il++) {
            const bool more = il == 0 || il == 3 || il == 6 || il == 7;
            char n[64];
#define TYPE_OF(what) (snprintf(n, sizeof n, "blk.%d.%s", il, what), gguf_find_tensor(f, n)->type)
            assert_int_equal(TYPE_OF("attn_q.weight"), GGTYPE_Q4_K);
            assert_int_equal(TYPE_OF("attn_k.weight"), ne == 8 ? GGTYPE_Q8_0 : GGTYPE_Q4_K);
            assert_int_equal(TYPE_OF("attn_v.weight"),
                             ne == 8 ? GGTYPE_Q8_0 : more ? GGTYPE_Q6_K : GGTYPE_Q4_K);
            assert_int_equal(TYPE_OF("attn_output.weight"), ne == 8 ? GGTYPE_Q5_K : GGTYPE_Q4_K);
            assert_int_equal(TYPE_OF("ffn_gate_inp.weight"), GGTYPE_F32);
            assert_int_equal(TYPE_OF("ffn_gate_exps.weight"), GGTYPE_Q4_K);
            assert_int_equal(TYPE_OF("ffn_up_exps.weight"), GGTYPE_Q4_K);
            assert_int_equal(TYPE_OF("ffn_down_exps.weight"), more ? GGTYPE_Q6_K : GGTYPE_Q4_K);
            assert_int_equal(TYPE_OF("attn_q_norm.weight"), GGTYPE_F32);
#undef TYPE_OF
        }
        gguf_close(f);
    }
}

/* Dequantize every tensor of f: all values finite; each matrix's RMS within
 * a factor 2.5 of what the writer aims at (1/sqrt(row), token_embd 1,
 * output 3/sqrt(n_embd), the router 2/sqrt(n_embd)). Returns the tensors seen. */
static int check_finite(const gguf_file *f, const char *tag)
{
    int n = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[160];
        gguf_str_copy(t->name, name, sizeof name);
        float *v = malloc(sizeof(float) * t->n_elements);
        assert_non_null(v);
        if (codec_dequantize(t->type, t->data, v, t->n_elements))
            fail_msg("%s: %s: cannot dequantize %s", tag, name, ggtype_name(t->type));
        double ss = 0;
        for (uint64_t k = 0; k < t->n_elements; k++) {
            if (!isfinite(v[k]))
                fail_msg("%s: %s[%llu] = %g", tag, name, (unsigned long long)k, v[k]);
            ss += (double)v[k] * v[k];
        }
        free(v);
        n++;
        if (t->n_dims < 2 || strstr(name, ".bias"))
            continue;
        double rms = sqrt(ss / (double)t->n_elements);
        double want = 1.0 / sqrt((double)t->ne[0]);
        if (!strcmp(name, "token_embd.weight"))
            want = 1.0;
        else if (!strcmp(name, "output.weight"))
            want *= 3.0;
        else if (strstr(name, "ffn_gate_inp"))
            want *= 2.0;
        if (rms < want / 2.5 || rms > want * 2.5)
            fail_msg("%s: %s (%s): RMS %g, expected about %g", tag, name, ggtype_name(t->type), rms,
                     want);
    }
    return n;
}

/* fast_random: every type it writes as random blocks gives finite values of
 * the intended spread; the other types are written as without it. */
static void test_fast_random(void **state)
{
    (void)state;
    static const uint32_t types[] = {GGTYPE_Q4_0, GGTYPE_Q5_0, GGTYPE_Q8_0, GGTYPE_Q4_K,
                                     GGTYPE_Q5_K, GGTYPE_Q6_K, GGTYPE_MXFP4};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        testmodel_params p = testmodel_arch_params("qwen3moe");
        p.wtype = types[i];
        p.fast_random = true;
        p.n_vocab = 1000;
        gguf_file *f = write_open(&p, ggtype_name(types[i]));
        assert_int_equal(gguf_find_tensor(f, "blk.1.ffn_down_exps.weight")->type, types[i]);
        assert_int_equal(check_finite(f, ggtype_name(types[i])), (int)gguf_tensor_count(f));
        gguf_close(f);
    }
    /* gpt-oss-20b's mix on a small shape: MXFP4 experts, Q8_0 matrices */
    testmodel_params p = testmodel_arch_params("gpt-oss");
    p.wtype = GGTYPE_Q8_0;
    p.fast_random = true;
    gguf_file *f = write_open(&p, "gptoss-fast");
    assert_int_equal(gguf_find_tensor(f, "blk.0.ffn_gate_exps.weight")->type, GGTYPE_MXFP4);
    check_finite(f, "gpt-oss fast");
    gguf_close(f);
    /* F16 has no random blocks: the same bytes as without fast_random */
    p = testmodel_arch_params("qwen3moe");
    p.wtype = GGTYPE_F16;
    char pa[512], pb[512], msg[512];
    snprintf(pa, sizeof pa, "%s", tu_tmp_path("fra"));
    snprintf(pb, sizeof pb, "%s", tu_tmp_path("frb"));
    assert_int_equal(testmodel_write(&p, pa, msg, sizeof msg), 0);
    p.fast_random = true;
    assert_int_equal(testmodel_write(&p, pb, msg, sizeof msg), 0);
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

/* The routers spread tokens over the experts: at layer 0 (the input is the
 * token's embedding, RMS-normed), 64 tokens pick at least half of the
 * experts as their first choice and no expert takes more than half of them. */
static void test_router_varies(void **state)
{
    (void)state;
    const char *archs[] = {"qwen3moe", "gpt-oss", "llama"};
    for (int a = 0; a < 3; a++) {
        testmodel_params p = testmodel_arch_params(archs[a]);
        if (a == 2) {
            p.n_expert = 8;
            p.n_expert_used = 2;
        }
        p.wtype = GGTYPE_Q8_0;
        gguf_file *f = write_open(&p, archs[a]);
        const gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
        const gguf_tensor *r = gguf_find_tensor(f, "blk.0.ffn_gate_inp.weight");
        assert_non_null(r);
        const uint32_t E = p.n_embd, NE = p.n_expert;
        float *x = malloc(sizeof(float) * E * 64);
        assert_non_null(x);
        assert_int_equal(codec_dequantize(emb->type, emb->data, x, (uint64_t)E * 64), 0);
        const float *w = (const float *)r->data;
        int count[64] = {0}, used = 0, most = 0;
        for (int t = 0; t < 64; t++) {
            double ss = 0;
            for (uint32_t k = 0; k < E; k++)
                ss += (double)x[t * E + k] * x[t * E + k];
            int best = 0;
            double bl = -1e30;
            for (uint32_t e = 0; e < NE; e++) {
                double l = 0;
                for (uint32_t k = 0; k < E; k++)
                    l += (double)w[e * E + k] * x[t * E + k];
                l /= sqrt(ss / E);
                if (l > bl)
                    bl = l, best = (int)e;
            }
            count[best]++;
        }
        for (uint32_t e = 0; e < NE; e++) {
            used += count[e] > 0;
            most = count[e] > most ? count[e] : most;
        }
        if (used < (int)NE / 2 || most > 32)
            fail_msg("%s: 64 tokens chose %d of %u experts first (at most %d times one)", archs[a],
                     used, NE, most);
        free(x);
        gguf_close(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_defaults),
        cmocka_unit_test(test_family_options),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_llama_qwen2_unchanged),
        cmocka_unit_test(test_moe_defaults),
        cmocka_unit_test(test_moe_refusals),
        cmocka_unit_test(test_harmony_vocab),
        cmocka_unit_test(test_harmony_template),
        cmocka_unit_test(test_q4_K_M),
        cmocka_unit_test(test_fast_random),
        cmocka_unit_test(test_router_varies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
