/* bench_mkmodel: the one model writer of the benchmarks: a random-weight
 * llama / qwen2 GGUF (tests/support/testmodel.h) for comparisons with the
 * peer oracle and for every bench script.
 *
 *   bench_mkmodel OUT.gguf [--arch llama|qwen2] [--type f32|f16|q8_0|q4_0|q4_K|q6_K|...]
 *       [--embd-type T] [--vocab VOCAB.gguf | --n-vocab N] [--embd N] [--layers N]
 *       [--ff N] [--heads N] [--kv-heads N] [--tied] [--rope-freqs] [--rope-base F]
 *       [--rope-linear F] [--seed N] [--pooled] [--tinyllama]
 *
 * --tinyllama: 2048 embedding, 22 layers, 32 heads, 4 KV heads, 5632 FFN,
 * pooled rows (fast); give --vocab with a 32000-token vocabulary, or
 * --n-vocab 32000 for a synthetic one (the explorer, info and qerr benches:
 * --tinyllama --type f16 --embd-type f16 --n-vocab 32000, about 2.2 GB). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "gguf.h"
#include "testmodel.h"

int main(int argc, char **argv)
{
    testmodel_params p = testmodel_default_params();
    const char *out = NULL, *vocab = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NUM(opt, field)                                   \
    if (!strcmp(a, opt) && v) {                           \
        p.field = (uint32_t)strtoul(v, NULL, 10);         \
        i++;                                              \
        continue;                                         \
    }
        NUM("--embd", n_embd)
        NUM("--layers", n_layer)
        NUM("--ff", n_ff)
        NUM("--heads", n_head)
        NUM("--kv-heads", n_head_kv)
        NUM("--n-vocab", n_vocab)
        if (!strcmp(a, "--arch") && v) {
            p.arch = argv[++i];
        } else if ((!strcmp(a, "--type") || !strcmp(a, "--embd-type")) && v) {
            int t = ggtype_from_name(v);
            if (t < 0) {
                fprintf(stderr, "unknown type %s\n", v);
                return 2;
            }
            if (!strcmp(a, "--type"))
                p.wtype = (uint32_t)t;
            else
                p.embd_type = t;
            i++;
        } else if (!strcmp(a, "--vocab") && v) {
            vocab = argv[++i];
        } else if (!strcmp(a, "--seed") && v) {
            p.seed = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--rope-base") && v) {
            p.rope_freq_base = strtof(argv[++i], NULL);
        } else if (!strcmp(a, "--rope-linear") && v) {
            p.rope_scale_linear = strtof(argv[++i], NULL);
        } else if (!strcmp(a, "--tied")) {
            p.tied = true;
        } else if (!strcmp(a, "--rope-freqs")) {
            p.rope_freqs = true;
        } else if (!strcmp(a, "--bias")) {
            p.qkv_bias = true;
        } else if (!strcmp(a, "--pooled")) {
            p.pooled_rows = true;
        } else if (!strcmp(a, "--tinyllama")) {
            p.n_embd = 2048;
            p.n_layer = 22;
            p.n_head = 32;
            p.n_head_kv = 4;
            p.n_ff = 5632;
            p.pooled_rows = true;
        } else if (a[0] != '-' && !out) {
            out = a;
        } else {
            fprintf(stderr, "bench_mkmodel: bad argument '%s'\n", a);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "usage: bench_mkmodel OUT.gguf [options] (see the source's header)\n");
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
    char msg[512];
    int rc = testmodel_write(&p, out, msg, sizeof msg);
    gguf_close(vf);
    if (rc) {
        fprintf(stderr, "bench_mkmodel: %s\n", msg);
        return 1;
    }
    return 0;
}
