/* bench_mkmodel: the one model writer of the benchmarks and of the peer
 * comparisons: a random-weight GGUF of one of testmodel's families, dense or
 * mixture-of-experts (tests/support/testmodel.h). `bench_mkmodel --help`
 * lists the options; --arch picks the family's defaults
 * (testmodel_arch_params) wherever it stands on the line, the other options
 * then change them.
 *
 * --tinyllama: 2048 embedding, 22 layers, 32 heads, 4 KV heads, 5632 FFN,
 * pooled rows (fast); give --vocab with a 32000-token vocabulary, or
 * --n-vocab 32000 for a synthetic one (the explorer, info and qerr benches:
 * --tinyllama --type f16 --embd-type f16 --n-vocab 32000, about 2.2 GB).
 *
 * --qwen3-30b-a3b and --gpt-oss-20b (they imply --arch qwen3moe / gpt-oss):
 * the published models' shapes with random blocks (--fast-random, never
 * automatic): Qwen3-30B-A3B as Q4_K_M (about 18 GB with the qwen2
 * vocabulary), gpt-oss-20b as llama-quantize's MXFP4_MOE (MXFP4 experts,
 * Q8_0 other matrices; about 12 GB with a 201k vocabulary, less with the
 * GPT-2-based stand-in). The file is written tensor by tensor (the largest
 * tensor in memory, never the file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ggtype.h"
#include "gguf.h"
#include "rfile.h"
#include "testmodel.h"

static const char USAGE[] =
    "usage: bench_mkmodel OUT.gguf [options]\n"
    "  --arch NAME         family (default llama; see below), with its defaults\n"
    "  --type T            matrix type: f32 f16 q8_0 q4_0 q4_K q6_K ... (default f32),\n"
    "                      or q4_K_M: llama-quantize's Q4_K_M mix (q4_K; q6_K where it gives it)\n"
    "  --embd-type T       token_embd type (default: --type)\n"
    "  --vocab FILE.gguf   copy tokenizer.* from FILE (else a synthetic SPM vocabulary)\n"
    "  --n-vocab N         synthetic vocabulary size (default 300)\n"
    "  --embd N  --layers N  --ff N  --heads N  --kv-heads N  --ctx N\n"
    "  --head-dim N        qwen3 gemma3 smollm3 mistral3: attention.key_length (0 = embd/heads)\n"
    "  --n-rot N           phi3: rotated dimensions below the head size\n"
    "  --tied | --untied   output.weight absent / present\n"
    "  --bias              Q/K/V biases (qwen2 always)\n"
    "  --out-bias | --no-out-bias   granite mistral3: attn_output and ffn biases\n"
    "  --rope-freqs        rope_freqs.weight (llama granite mistral3)\n"
    "  --rope-base F       rope.freq_base (default 10000)\n"
    "  --rope-linear F     rope scaling linear, factor F\n"
    "  --rope-yarn F       rope scaling yarn, factor F (0 = none)\n"
    "  --yarn-beta-fast F  --yarn-beta-slow F  --yarn-log-mul F   yarn keys (0 = absent)\n"
    "  --ctx-orig N        rope.scaling.original_context_length (0 = absent)\n"
    "  --attn-factor F     rope.scaling.attn_factor (phi3 with factors: 0 = converter's)\n"
    "  --rope-factors | --no-rope-factors   phi3: rope_factors_long / _short\n"
    "  --swa N             gemma3 olmo2 phi3: attention.sliding_window (0 = none)\n"
    "  --swa-pattern N     gemma3: pattern key (0 = absent, 6); olmo2: bool array period\n"
    "  --rope-base-swa F   gemma3 olmo2: rope.freq_base_swa (0 = absent)\n"
    "  --softcap F         gemma3: final_logit_softcapping (0 = absent)\n"
    "  --embd-scale F  --residual-scale F  --attn-scale F  --logit-scale F   granite\n"
    "  --attn-temp F       mistral3: attention.temperature_scale (0 = absent)\n"
    "  --rms-eps F         attention.layer_norm_rms_epsilon (default 1e-5)\n"
    "  --template FILE     tokenizer.chat_template from FILE (a Jinja chat template)\n"
    "  --experts N  --experts-used K   mixture of experts (llama: Mixtral style, experts --ff\n"
    "                      wide; qwen3moe default 8/2, gpt-oss 32/4)\n"
    "  --expert-ff N       qwen3moe gpt-oss: expert_feed_forward_length (default 256)\n"
    "  --expert-type T     the experts' type (default --type; gpt-oss: mxfp4 when quantized)\n"
    "  --fast-random       quantized matrices as random blocks with sane scales (q4_0 q5_0\n"
    "                      q8_0 q4_K q5_K q6_K mxfp4; no quantizer: for huge files)\n"
    "  --qwen3-30b-a3b     Qwen3-30B-A3B's shapes, q4_K_M, --fast-random (give --vocab qwen2)\n"
    "  --gpt-oss-20b       gpt-oss-20b's shapes, q8_0 + mxfp4 experts, --fast-random\n"
    "  --seed N  --pooled  --tinyllama  --help\n";

static void print_help(void)
{
    fputs(USAGE, stdout);
    printf("families (the vocabulary that suits each: ../shared/fixtures/vocab/...):\n");
    for (size_t i = 0; testmodel_arch_name(i); i++) {
        bool stand_in;
        const char *v = testmodel_arch_vocab(testmodel_arch_name(i), &stand_in);
        printf("  %-9s %s%s\n", testmodel_arch_name(i), v, stand_in ? " (stand-in)" : "");
    }
    printf("gpt-oss: a vocabulary without <|start|> becomes an o200k_harmony stand-in\n"
           "(pre-tokenizer gpt-4o, the Harmony special tokens appended as control tokens, eos\n"
           "<|return|>); the Harmony template: --template llama.cpp's\n"
           "models/templates/openai-gpt-oss-120b.jinja\n");
}

/* The shapes of the published models (the preset options). */
static void preset_qwen3_30b_a3b(testmodel_params *p)
{
    p->n_embd = 2048;
    p->n_layer = 48;
    p->n_head = 32;
    p->n_head_kv = 4;
    p->head_dim = 128;
    p->n_ff = 6144;
    p->n_ctx = 40960;
    p->n_expert = 128;
    p->n_expert_used = 8;
    p->expert_ff = 768;
    p->q4_K_M = true;
    p->fast_random = true;
}

static void preset_gpt_oss_20b(testmodel_params *p)
{
    p->n_embd = 2880;
    p->n_layer = 24;
    p->n_head = 64;
    p->n_head_kv = 8;
    p->head_dim = 64;
    p->n_ff = 2880;
    p->n_ctx = 131072;
    p->n_expert = 32;
    p->n_expert_used = 4;
    p->expert_ff = 2880;
    p->wtype = GGTYPE_Q8_0;
    p->expert_type = GGTYPE_MXFP4;
    p->fast_random = true;
}

int main(int argc, char **argv)
{
    const char *arch = NULL, *preset_arch = NULL;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--arch") && i + 1 < argc)
            arch = argv[++i];
        else if (!strcmp(argv[i], "--qwen3-30b-a3b"))
            preset_arch = "qwen3moe";
        else if (!strcmp(argv[i], "--gpt-oss-20b"))
            preset_arch = "gpt-oss";
    if (arch && preset_arch && strcmp(arch, preset_arch)) {
        fprintf(stderr, "bench_mkmodel: the preset is a %s model, not %s\n", preset_arch, arch);
        return 2;
    }
    arch = arch ? arch : preset_arch ? preset_arch : "llama";
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            print_help();
            return 0;
        }
    testmodel_params p = testmodel_arch_params(arch);
    if (!p.arch) {
        fprintf(stderr, "bench_mkmodel: unknown architecture '%s' (--help lists them)\n", arch);
        return 2;
    }
    const char *out = NULL, *vocab = NULL, *template_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NUM(opt, field)                                   \
    if (!strcmp(a, opt) && v) {                           \
        p.field = (uint32_t)strtoul(v, NULL, 10);         \
        i++;                                              \
        continue;                                         \
    }
#define FLT(opt, field)                                   \
    if (!strcmp(a, opt) && v) {                           \
        p.field = strtof(v, NULL);                        \
        i++;                                              \
        continue;                                         \
    }
#define FLAG(opt, field, value)                           \
    if (!strcmp(a, opt)) {                                \
        p.field = value;                                  \
        continue;                                         \
    }
        NUM("--embd", n_embd)
        NUM("--layers", n_layer)
        NUM("--ff", n_ff)
        NUM("--heads", n_head)
        NUM("--kv-heads", n_head_kv)
        NUM("--n-vocab", n_vocab)
        NUM("--ctx", n_ctx)
        NUM("--head-dim", head_dim)
        NUM("--n-rot", n_rot)
        NUM("--ctx-orig", n_ctx_orig)
        NUM("--swa", sliding_window)
        NUM("--swa-pattern", swa_pattern)
        NUM("--experts", n_expert)
        NUM("--experts-used", n_expert_used)
        NUM("--expert-ff", expert_ff)
        FLT("--rope-base", rope_freq_base)
        FLT("--rope-linear", rope_scale_linear)
        FLT("--rope-yarn", rope_scale_yarn)
        FLT("--yarn-beta-fast", yarn_beta_fast)
        FLT("--yarn-beta-slow", yarn_beta_slow)
        FLT("--yarn-log-mul", yarn_log_mul)
        FLT("--attn-factor", rope_attn_factor)
        FLT("--rope-base-swa", rope_freq_base_swa)
        FLT("--softcap", logit_softcap)
        FLT("--embd-scale", embedding_scale)
        FLT("--residual-scale", residual_scale)
        FLT("--attn-scale", attention_scale)
        FLT("--logit-scale", logit_scale)
        FLT("--attn-temp", attn_temp_scale)
        FLT("--rms-eps", rms_eps)
        FLAG("--tied", tied, true)
        FLAG("--untied", tied, false)
        FLAG("--rope-freqs", rope_freqs, true)
        FLAG("--rope-factors", rope_factors, true)
        FLAG("--no-rope-factors", rope_factors, false)
        FLAG("--bias", qkv_bias, true)
        FLAG("--out-bias", out_bias, true)
        FLAG("--no-out-bias", out_bias, false)
        FLAG("--pooled", pooled_rows, true)
        FLAG("--fast-random", fast_random, true)
#undef NUM
#undef FLT
#undef FLAG
        if (!strcmp(a, "--arch") && v) {
            i++; /* read above */
        } else if (!strcmp(a, "--type") && v && !strcasecmp(v, "q4_K_M")) {
            p.q4_K_M = true;
            i++;
        } else if ((!strcmp(a, "--type") || !strcmp(a, "--embd-type") ||
                    !strcmp(a, "--expert-type")) && v) {
            int t = ggtype_from_name(v);
            if (t < 0) {
                fprintf(stderr, "unknown type %s\n", v);
                return 2;
            }
            if (!strcmp(a, "--type"))
                p.wtype = (uint32_t)t, p.q4_K_M = false;
            else if (!strcmp(a, "--embd-type"))
                p.embd_type = t;
            else
                p.expert_type = t;
            i++;
        } else if (!strcmp(a, "--vocab") && v) {
            vocab = argv[++i];
        } else if (!strcmp(a, "--template") && v) {
            template_path = argv[++i];
        } else if (!strcmp(a, "--seed") && v) {
            p.seed = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--tinyllama")) {
            p.n_embd = 2048;
            p.n_layer = 22;
            p.n_head = 32;
            p.n_head_kv = 4;
            p.n_ff = 5632;
            p.pooled_rows = true;
        } else if (!strcmp(a, "--qwen3-30b-a3b")) {
            preset_qwen3_30b_a3b(&p);
        } else if (!strcmp(a, "--gpt-oss-20b")) {
            preset_gpt_oss_20b(&p);
        } else if (a[0] != '-' && !out) {
            out = a;
        } else {
            fprintf(stderr, "bench_mkmodel: bad argument '%s' (--help lists the options)\n", a);
            return 2;
        }
    }
    if (!out) {
        fputs(USAGE, stderr);
        return 2;
    }
    gguf_file *vf = NULL;
    if (vocab) {
        gguf_error err;
        vf = gguf_open(vocab, &err);
        if (!vf) {
            char b[1024];
            fprintf(stderr, "%s\n", gguf_error_format(&err, b, sizeof b));
            return 2;
        }
        p.vocab = vf;
    }
    char *tpl = NULL;
    if (template_path) {
        rfile_status rs;
        int e;
        tpl = rfile_read(template_path, 1 << 20, 0, NULL, &rs, &e);
        if (!tpl) {
            fprintf(stderr, "bench_mkmodel: %s: %s\n", template_path, rfile_strerror(rs, e));
            gguf_close(vf);
            return 2;
        }
        p.chat_template = tpl;
    }
    char msg[512];
    int rc = testmodel_write(&p, out, msg, sizeof msg);
    gguf_close(vf);
    free(tpl);
    if (rc) {
        fprintf(stderr, "bench_mkmodel: %s\n", msg);
        return 1;
    }
    return 0;
}
