/* Model logits against llama.cpp's AVX2 build ("haswell", the CPU library
 * llama.cpp loads on AVX2 machines without AVX-512): small random-weight
 * models made by testmodel_write (the shapes of test_model_logits) are
 * (llama and qwen2; the shapes of testmodel_arch_params for the other
 * families) evaluated with GGSCOPE_LLAMA_VARIANT=haswell on the AVX2 path and must give
 * exactly the logits the peer computed on an AVX2-only machine
 * (tests/data/model_logits_haswell/NAME.txt), bit for bit. Skipped, visibly,
 * on a CPU without AVX2 + FMA + F16C.
 *
 * Refresh on an AVX2-only machine (the peer then runs its haswell build):
 *   GGSCOPE_DUMP_MODELS=DIR build/test_model_logits_haswell prints
 *   "PATH ids A,B,.. keep K" per model; `peer logits PATH IDS --all --top 1`
 *   gives the logits (one JSON line per position), of which the last K are
 *   stored as in bench/make_test_logits.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "cpufeat.h"
#include "ggtype.h"
#include "kernels.h"
#include "model.h"
#include "session.h"
#include "testmodel.h"

typedef struct {
    const char *name;
    const char *arch;
    uint32_t wtype;
    uint64_t seed;
    int n_tok;  /* prompt tokens, evaluated in one batch */
    int n_kept; /* positions stored (the last ones) */
} hw_case;

/* The long cases take the batched paths of 64+ tokens (ggml's tiled flash
 * attention, the GEMMs, Q4_K's last n % 4 tokens in the mat-vec order);
 * only their last positions are stored. */
static const hw_case CASES[] = {
    {"llama_f32", "llama", GGTYPE_F32, 11, 12, 12},
    {"llama_q8_0", "llama", GGTYPE_Q8_0, 13, 12, 12},
    {"qwen2_q4_K", "qwen2", GGTYPE_Q4_K, 23, 12, 12},
    {"llama_q4_0_long", "llama", GGTYPE_Q4_0, 29, 70, 6},
    {"qwen2_q4_K_long", "qwen2", GGTYPE_Q4_K, 31, 69, 5},
    {"llama_f16_long", "llama", GGTYPE_F16, 37, 66, 4},
    /* the dense families (testmodel_arch_params' shapes), 64-token prompts */
#define FAMILY(a, s)                                                                      \
    {a "_f32", a, GGTYPE_F32, s, 64, 8}, {a "_f16", a, GGTYPE_F16, s + 1, 64, 8},         \
        {a "_q8_0", a, GGTYPE_Q8_0, s + 2, 64, 8}, {a "_q4_K", a, GGTYPE_Q4_K, s + 3, 64, 8}
    FAMILY("qwen3", 41), FAMILY("gemma3", 45), FAMILY("phi3", 49), FAMILY("smollm3", 53),
    FAMILY("olmo2", 57), FAMILY("granite", 61), FAMILY("mistral3", 65),
#undef FAMILY
    /* mixture of experts, as MOE=1 bench/make_test_logits.sh writes them: llama with
     * 8 experts (2 used), qwen3moe (8, 2), gpt-oss (32 experts, 4 used: the unstable
     * sort; MXFP4 experts when quantized; a 16-token window that the prompt crosses;
     * sinks in the tiled form with 64 tokens, the one-chunk form with 12) */
#define MOE(a, n, s) {a "_f32", n, GGTYPE_F32, s, 64, 8}, {a "_f16", n, GGTYPE_F16, s + 1, 64, 8}, \
        {a "_q8_0", n, GGTYPE_Q8_0, s + 2, 64, 8}
    MOE("qwen3moe", "qwen3moe", 69), {"qwen3moe_q4_K", "qwen3moe", GGTYPE_Q4_K, 72, 64, 8},
    MOE("gpt-oss", "gpt-oss", 73), {"gpt-oss_q8_0_short", "gpt-oss", GGTYPE_Q8_0, 76, 12, 12},
    MOE("llama_moe", "llama-moe", 77), {"llama_moe_q4_K", "llama-moe", GGTYPE_Q4_K, 80, 64, 8},
#undef MOE
};
#define N_CASES (sizeof CASES / sizeof CASES[0])
#define MAX_TOK 72
#define N_VOCAB 300

static testmodel_params params_of(const hw_case *c)
{
    testmodel_params p = testmodel_default_params();
    const bool llama_moe = !strcmp(c->arch, "llama-moe");
    if ((strcmp(c->arch, "llama") && strcmp(c->arch, "qwen2")) || llama_moe) {
        /* a family's own small shapes */
        p = testmodel_arch_params(llama_moe ? "llama" : c->arch);
        p.n_vocab = N_VOCAB;
        p.wtype = c->wtype;
        p.seed = c->seed;
        if (llama_moe) { /* Mixtral style: 8 experts, 2 used */
            p.n_expert = 8;
            p.n_expert_used = 2;
        }
        if (!strcmp(c->arch, "gpt-oss"))
            p.sliding_window = 16;
        return p;
    }
    p.arch = c->arch;
    p.n_embd = 256;
    p.n_layer = 2;
    p.n_ff = 256;
    p.n_head = 4;
    p.n_head_kv = strcmp(c->arch, "qwen2") ? 2 : 1;
    p.n_vocab = N_VOCAB;
    p.wtype = c->wtype;
    p.seed = c->seed;
    return p;
}

/* "ids A,B,..." then n_kept lines of N_VOCAB numbers ('#' lines: comments). */
static float *read_ref(const char *name, int n_tok, int n_kept, int32_t *ids)
{
    char path[512];
    snprintf(path, sizeof path, "tests/data/model_logits_haswell/%s.txt", name);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s (run from the source root)", path);
    float *ref = malloc(sizeof(float) * (size_t)n_kept * N_VOCAB);
    assert_non_null(ref);
    char word[64];
    int k = 0;
    while (fscanf(f, "%63s", word) == 1) {
        if (word[0] == '#') {
            int ch;
            while ((ch = fgetc(f)) != '\n' && ch != EOF) {
            }
        } else if (!strcmp(word, "ids")) {
            char list[1024];
            if (fscanf(f, "%1023s", list) != 1)
                fail_msg("%s: bad ids line", path);
            char *p = list;
            for (int i = 0; i < n_tok; i++) {
                ids[i] = (int32_t)strtol(p, &p, 10);
                if (*p == ',')
                    p++;
            }
        } else if (k < n_kept * N_VOCAB) {
            ref[k++] = strtof(word, NULL);
        } else {
            fail_msg("%s: too many numbers", path);
        }
    }
    fclose(f);
    if (k != n_kept * N_VOCAB)
        fail_msg("%s: %d numbers, expected %d", path, k, n_kept * N_VOCAB);
    return ref;
}

static void run_case(const hw_case *c, int *failures)
{
    testmodel_params p = params_of(c);
    const char *dump = getenv("GGSCOPE_DUMP_MODELS");
    char path[512], msg[512];
    snprintf(path, sizeof path, "%s", dump ? dump : tu_tmp_path(c->name));
    if (dump)
        snprintf(path, sizeof path, "%s/%s.gguf", dump, c->name);
    if (testmodel_write(&p, path, msg, sizeof msg))
        fail_msg("%s: testmodel_write: %s", c->name, msg);
    const int n_tok = c->n_tok, n_kept = c->n_kept;
    int32_t ids[MAX_TOK];
    ids[0] = 1;
    for (int i = 1; i < n_tok; i++)
        ids[i] = (int32_t)((i * 97 + c->seed * 31) % N_VOCAB);
    if (dump) {
        printf("%s ids ", path);
        for (int i = 0; i < n_tok; i++)
            printf("%s%d", i ? "," : "", ids[i]);
        printf(" keep %d\n", n_kept);
        return;
    }
    int32_t ref_ids[MAX_TOK];
    float *ref = read_ref(c->name, n_tok, n_kept, ref_ids);
    assert_memory_equal(ids, ref_ids, sizeof(int32_t) * (size_t)n_tok);
    gguf_error err;
    gguf_file *gf = gguf_open(path, &err);
    assert_non_null(gf);
    model *m = model_load(gf, NULL, msg, sizeof msg);
    if (!m)
        fail_msg("%s: %s", c->name, msg);
    session_params sp = {.n_ctx = MAX_TOK, .n_threads = 2};
    session *s = session_new(m, &sp, msg, sizeof msg);
    assert_non_null(s);
    float *lg = malloc(sizeof(float) * (size_t)n_tok * N_VOCAB);
    assert_non_null(lg);
    /* one batch, as the peer evaluated it (tinyBLAS / GEMM orders) */
    assert_int_equal(session_eval(s, ids, (uint32_t)n_tok, 0, lg, true), 0);
    const float *got = lg + (size_t)(n_tok - n_kept) * N_VOCAB;
    double worst = 0;
    int differ = 0;
    for (int i = 0; i < n_kept * N_VOCAB; i++) {
        double d = fabs((double)got[i] - ref[i]);
        differ += got[i] != ref[i];
        worst = d > worst ? d : worst;
    }
    print_message("%-16s %d of %d logits differ from llama.cpp's haswell build, max |diff| %.3g\n", c->name,
                  differ, n_kept * N_VOCAB, worst);
    if (differ)
        ++*failures;
    free(ref);
    free(lg);
    session_free(s);
    model_free(m);
    gguf_close(gf);
    remove(path);
}

static void test_haswell_logits(void **state)
{
    (void)state;
    if (!cpufeat_get()->avx2) {
        print_message("SKIP: this CPU lacks AVX2 + FMA + F16C (llama.cpp's haswell build needs them)\n");
        skip();
    }
    assert_int_equal(cpufeat_llama_variant(), CPUFEAT_LLAMA_HASWELL);
    assert_int_not_equal(kern_simd_get(), KERN_SIMD_AVX512);
    int failures = 0;
    for (size_t i = 0; i < N_CASES; i++)
        run_case(&CASES[i], &failures);
    assert_int_equal(failures, 0);
}

int main(void)
{
    /* before anything reads them (cpufeat reads the environment once) */
    setenv("GGSCOPE_LLAMA_VARIANT", "haswell", 1);
    setenv("GGSCOPE_SIMD", "avx2", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_haswell_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
