/* qrecipe: the type the quantize recipe gives each tensor, as the rules of
 * docs/qerr.md ("`ggscope quantize`: the recipe", after llama.cpp's
 * llama_tensor_get_type) state them; tensors built in memory. */
#include <stdio.h>
#include <string.h>

#include "ggtype.h"
#include "qrecipe.h"
#include "testutil.h"

/* A tensor of ne0 x ne1 (n_dims 2; ne1 0: a 1-D tensor of ne0) of type ty. */
static gguf_tensor tensor(uint32_t ty, uint64_t ne0, uint64_t ne1)
{
    gguf_tensor t;
    memset(&t, 0, sizeof t);
    t.type = ty;
    t.type_known = true;
    t.n_dims = ne1 ? 2 : 1;
    t.ne[0] = ne0;
    t.ne[1] = ne1 ? ne1 : 1;
    t.ne[2] = t.ne[3] = 1;
    t.n_elements = ne0 * t.ne[1];
    return t;
}

/* A recipe for mix, n_layer layers, with or without output.weight. */
static qrecipe *recipe(const char *mix, int n_layer, bool has_output)
{
    qrecipe *r = qrecipe_new();
    assert_non_null(r);
    assert_int_equal(qrecipe_set_mix(r, mix, NULL, 0), QRECIPE_OK);
    qrecipe_set_model(r, n_layer, has_output);
    return r;
}

/* The type of a 4096 x 4096 F16 matrix named name. */
static uint32_t type_of(const qrecipe *r, const char *name)
{
    gguf_tensor t = tensor(GGTYPE_F16, 4096, 4096);
    return qrecipe_type(r, &t, name);
}

static void test_mix_names(void **state)
{
    (void)state;
    qrecipe *r = qrecipe_new();
    char msg[128] = "";
    assert_false(qrecipe_has_mix(r));
    assert_int_equal(qrecipe_set_mix(r, "q4_k_x", msg, sizeof msg), QRECIPE_EMIX);
    assert_true(strstr(msg, "q4_k_x") != NULL);
    assert_false(qrecipe_has_mix(r));
    assert_int_equal(qrecipe_set_mix(r, "Q4_K_M", NULL, 0), QRECIPE_OK); /* case-insensitive */
    assert_true(qrecipe_has_mix(r));
    assert_string_equal(qrecipe_mix_name(r), "q4_K_M");
    assert_int_equal(qrecipe_file_type(r), 15);
    static const struct {
        const char *name;
        uint32_t ftype;
    } ft[] = {{"f32", 0}, {"f16", 1}, {"bf16", 32}, {"q4_0", 2}, {"q8_0", 7}, {"q3_K_S", 11},
              {"q3_K_M", 12}, {"q4_K", 14}, {"q4_K_S", 14}, {"q5_K", 16}, {"q5_K_M", 17},
              {"q6_K", 18}, {"iq4_xs", 30}, {"mxfp4", 38}};
    for (size_t i = 0; i < sizeof ft / sizeof ft[0]; i++) {
        assert_int_equal(qrecipe_set_mix(r, ft[i].name, NULL, 0), QRECIPE_OK);
        assert_int_equal(qrecipe_file_type(r), ft[i].ftype);
    }
    qrecipe_free(r);
    qrecipe_free(NULL);
}

static void test_kept_f32_and_copied(void **state)
{
    (void)state;
    qrecipe *r = recipe("q4_K_M", 32, true);
    gguf_tensor v = tensor(GGTYPE_F16, 4096, 0), row = tensor(GGTYPE_F16, 4096, 1);
    assert_int_equal(qrecipe_type(r, &v, "blk.0.attn_q.weight"), GGTYPE_F32);   /* 1-D */
    assert_int_equal(qrecipe_type(r, &row, "blk.0.attn_q.weight"), GGTYPE_F32); /* one row */
    assert_int_equal(type_of(r, "blk.0.attn_norm.weight"), GGTYPE_F32);
    assert_int_equal(type_of(r, "blk.0.attn_q.bias"), GGTYPE_F32);
    gguf_tensor ints = tensor(GGTYPE_I32, 4096, 4096);
    assert_int_equal(qrecipe_type(r, &ints, "blk.0.attn_q.weight"), GGTYPE_I32);
    gguf_tensor unknown = tensor(200, 4096, 4096);
    unknown.type_known = false;
    assert_int_equal(qrecipe_type(r, &unknown, "blk.0.attn_q.weight"), 200);
    qrecipe_free(r);
}

static void test_output_and_embeddings(void **state)
{
    (void)state;
    qrecipe *r = recipe("q4_K_M", 32, true);
    assert_int_equal(type_of(r, "output.weight"), GGTYPE_Q6_K);
    assert_int_equal(type_of(r, "token_embd.weight"), GGTYPE_Q4_K);
    gguf_tensor odd = tensor(GGTYPE_F16, 4000, 32); /* rows not a multiple of 256 */
    assert_int_equal(qrecipe_type(r, &odd, "output.weight"), GGTYPE_Q8_0);
    qrecipe_set_model(r, 32, false); /* tied embeddings: token_embd is the output */
    assert_int_equal(type_of(r, "token_embd.weight"), GGTYPE_Q6_K);
    qrecipe_free(r);
    r = recipe("q8_0", 32, true);
    assert_int_equal(type_of(r, "output.weight"), GGTYPE_Q8_0);
    qrecipe_free(r);
    r = recipe("f16", 32, true); /* a float base type: everything at it */
    assert_int_equal(type_of(r, "output.weight"), GGTYPE_F16);
    assert_int_equal(type_of(r, "blk.0.attn_v.weight"), GGTYPE_F16);
    qrecipe_free(r);
}

static void test_m_mixes_use_more_bits(void **state)
{
    (void)state;
    /* use_more_bits(i, 32): i < 4 || i >= 28 || (i - 4) % 3 == 2 */
    static const struct {
        int layer;
        bool more;
    } L[] = {{0, true}, {3, true}, {4, false}, {5, false}, {6, true}, {9, true},
             {10, false}, {26, false}, {27, true}, {28, true}, {31, true}};
    const char *mixes[] = {"q4_K_M", "q5_K_M"};
    const uint32_t base[] = {GGTYPE_Q4_K, GGTYPE_Q5_K};
    for (int m = 0; m < 2; m++) {
        qrecipe *r = recipe(mixes[m], 32, true);
        for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
            char v[64], d[64];
            snprintf(v, sizeof v, "blk.%d.attn_v.weight", L[i].layer);
            snprintf(d, sizeof d, "blk.%d.ffn_down.weight", L[i].layer);
            uint32_t want = L[i].more ? GGTYPE_Q6_K : base[m];
            assert_int_equal(type_of(r, v), want);
            assert_int_equal(type_of(r, d), want);
        }
        assert_int_equal(type_of(r, "blk.0.attn_q.weight"), base[m]);
        assert_int_equal(type_of(r, "blk.0.ffn_up.weight"), base[m]);
        assert_int_equal(type_of(r, "blk.0.attn_output.weight"), base[m]);
        qrecipe_free(r);
    }
    qrecipe *r = recipe("q4_K_M", 32, true);
    assert_int_equal(type_of(r, "blk.0.attn_qkv.weight"), GGTYPE_Q5_K);
    qrecipe_free(r);
    r = recipe("q5_K_M", 32, true);
    assert_int_equal(type_of(r, "blk.0.attn_qkv.weight"), GGTYPE_Q6_K);
    qrecipe_free(r);
}

static void test_s_and_q3_k_m(void **state)
{
    (void)state;
    qrecipe *r = recipe("q4_K_S", 32, true); /* q4_K is the same recipe */
    assert_int_equal(type_of(r, "blk.3.attn_v.weight"), GGTYPE_Q5_K);
    assert_int_equal(type_of(r, "blk.4.attn_v.weight"), GGTYPE_Q4_K);
    assert_int_equal(type_of(r, "blk.3.ffn_down.weight"), GGTYPE_Q5_K); /* < 32/8 */
    assert_int_equal(type_of(r, "blk.4.ffn_down.weight"), GGTYPE_Q4_K);
    assert_int_equal(type_of(r, "blk.0.attn_qkv.weight"), GGTYPE_Q4_K);
    qrecipe_free(r);
    r = recipe("q5_K_S", 32, true);
    assert_int_equal(type_of(r, "blk.0.attn_v.weight"), GGTYPE_Q5_K); /* only q4_K_S raises */
    qrecipe_free(r);
    r = recipe("q3_K_M", 32, true);
    assert_int_equal(type_of(r, "blk.1.attn_v.weight"), GGTYPE_Q5_K);
    assert_int_equal(type_of(r, "blk.2.attn_v.weight"), GGTYPE_Q4_K);
    assert_int_equal(type_of(r, "blk.1.ffn_down.weight"), GGTYPE_Q5_K); /* < 32/16 */
    assert_int_equal(type_of(r, "blk.2.ffn_down.weight"), GGTYPE_Q4_K);
    assert_int_equal(type_of(r, "blk.7.attn_output.weight"), GGTYPE_Q4_K);
    assert_int_equal(type_of(r, "blk.7.attn_qkv.weight"), GGTYPE_Q5_K);
    assert_int_equal(type_of(r, "blk.7.attn_q.weight"), GGTYPE_Q3_K);
    qrecipe_free(r);
    r = recipe("q3_K_S", 32, true); /* a plain recipe */
    assert_int_equal(type_of(r, "blk.1.attn_v.weight"), GGTYPE_Q3_K);
    assert_int_equal(type_of(r, "output.weight"), GGTYPE_Q6_K);
    qrecipe_free(r);
}

static void test_fallbacks(void **state)
{
    (void)state;
    static const struct {
        const char *mix;
        uint64_t ne0;
        uint32_t want;
    } F[] = {{"q2_K", 64, GGTYPE_IQ4_NL}, {"q3_K", 64, GGTYPE_IQ4_NL}, {"iq4_xs", 64, GGTYPE_IQ4_NL},
             {"tq1_0", 64, GGTYPE_IQ4_NL}, {"tq2_0", 64, GGTYPE_IQ4_NL}, {"q4_K", 64, GGTYPE_Q5_0},
             {"q5_K", 64, GGTYPE_Q5_1},     {"q6_K", 64, GGTYPE_Q8_0},     {"q4_K", 172, GGTYPE_F16},
             {"q2_K", 20, GGTYPE_F16},      {"q4_0", 48, GGTYPE_F16},      {"q4_0", 64, GGTYPE_Q4_0}};
    for (size_t i = 0; i < sizeof F / sizeof F[0]; i++) {
        qrecipe *r = recipe(F[i].mix, 8, true);
        gguf_tensor t = tensor(GGTYPE_F32, F[i].ne0, 8);
        assert_int_equal(qrecipe_type(r, &t, "blk.0.attn_q.weight"), F[i].want);
        qrecipe_free(r);
    }
}

static void test_overrides(void **state)
{
    (void)state;
    qrecipe *r = recipe("q4_K_M", 32, true);
    char msg[256];
    assert_int_equal(qrecipe_add_override(r, "attn_q=q8_0", msg, sizeof msg), QRECIPE_OK);
    assert_int_equal(qrecipe_add_override(r, "attn=q5_0", msg, sizeof msg), QRECIPE_OK);
    assert_int_equal(qrecipe_add_override(r, "output=f32", msg, sizeof msg), QRECIPE_OK);
    /* split at the last '=': the regex "a=b" matches no name here */
    assert_int_equal(qrecipe_add_override(r, "a=b=q5_1", msg, sizeof msg), QRECIPE_OK);
    assert_int_equal(qrecipe_add_override(r, "ffn_up", msg, sizeof msg), QRECIPE_ESPEC);
    assert_int_equal(qrecipe_add_override(r, "ffn_up=i32", msg, sizeof msg), QRECIPE_ESPEC);
    assert_int_equal(qrecipe_add_override(r, "(=q8_0", msg, sizeof msg), QRECIPE_EREGEX);
    assert_true(strstr(msg, "(=q8_0") != NULL);
    assert_int_equal(type_of(r, "blk.0.attn_q.weight"), GGTYPE_Q8_0);  /* the first match wins */
    assert_int_equal(type_of(r, "blk.0.attn_k.weight"), GGTYPE_Q5_0);
    assert_int_equal(type_of(r, "blk.0.attn_v.weight"), GGTYPE_Q5_0);  /* over the mix's rule */
    assert_int_equal(type_of(r, "output.weight"), GGTYPE_F32);
    assert_int_equal(type_of(r, "blk.0.attn_norm.weight"), GGTYPE_F32);
    assert_int_equal(type_of(r, "blk.0.ffn_up.weight"), GGTYPE_Q4_K);
    gguf_tensor narrow = tensor(GGTYPE_F32, 48, 8); /* an override falls back too */
    assert_int_equal(qrecipe_type(r, &narrow, "blk.0.attn_q.weight"), GGTYPE_F16);
    qrecipe_free(r);
    r = recipe("q4_0", 1, true);
    for (int i = 0; i < QRECIPE_MAX_OVERRIDES; i++)
        assert_int_equal(qrecipe_add_override(r, "x=q8_0", NULL, 0), QRECIPE_OK);
    assert_int_equal(qrecipe_add_override(r, "x=q8_0", NULL, 0), QRECIPE_ESPEC); /* full */
    qrecipe_free(r);
}

/* The stories260K example of docs/qerr.md: 5 layers, 64-wide rows, ffn rows of 172. */
static void test_stories260k_q4_k_m(void **state)
{
    (void)state;
    qrecipe *r = recipe("q4_K_M", 5, true);
    gguf_tensor m = tensor(GGTYPE_F32, 64, 64), out = tensor(GGTYPE_F32, 64, 512);
    gguf_tensor down = tensor(GGTYPE_F32, 172, 64), up = tensor(GGTYPE_F32, 64, 172);
    assert_int_equal(qrecipe_type(r, &m, "blk.0.attn_q.weight"), GGTYPE_Q5_0);
    assert_int_equal(qrecipe_type(r, &up, "blk.0.ffn_up.weight"), GGTYPE_Q5_0);
    assert_int_equal(qrecipe_type(r, &out, "output.weight"), GGTYPE_Q8_0);
    assert_int_equal(qrecipe_type(r, &m, "blk.1.attn_v.weight"), GGTYPE_Q5_0);
    assert_int_equal(qrecipe_type(r, &m, "blk.2.attn_v.weight"), GGTYPE_Q8_0);
    assert_int_equal(qrecipe_type(r, &m, "blk.4.attn_v.weight"), GGTYPE_Q8_0);
    assert_int_equal(qrecipe_type(r, &down, "blk.0.ffn_down.weight"), GGTYPE_F16);
    qrecipe_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mix_names),
        cmocka_unit_test(test_kept_f32_and_copied),
        cmocka_unit_test(test_output_and_embeddings),
        cmocka_unit_test(test_m_mixes_use_more_bits),
        cmocka_unit_test(test_s_and_q3_k_m),
        cmocka_unit_test(test_fallbacks),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_stories260k_q4_k_m),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
