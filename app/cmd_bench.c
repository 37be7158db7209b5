/* ggscope bench FILE [-p 512] [-n 128] [--json]: prompt processing and
 * generation speed, measured as the peer oracle's `bench` does. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "clock.h"
#include "engine_cli.h"
#ifdef GGSCOPE_HAVE_VULKAN
#include "backend_vulkan.h"
#endif

static void help(FILE *out)
{
    fprintf(out,
            "usage: ggscope bench FILE [-p N] [-n N] [--json] [options]\n"
            "\n"
            "Evaluate a prompt of N tokens in one batch (prompt processing), then, after\n"
            "clearing the cache and evaluating 16 tokens, N tokens one at a time\n"
            "(generation, without sampling). Prints tokens/s of both.\n"
            "\n"
            "options:\n"
            "  -p N                  prompt tokens (default 512)\n"
            "  -n N                  generated tokens (default 128)\n"
            "  -r N                  repetitions; the best of each is reported (default 1)\n"
            "  --json                one JSON object: pp_tok_s, tg_tok_s, ...\n"
            "  --no-logits           compute no logits (no output head, and the last layer's\n"
            "                        feed-forward skipped, as llama.cpp does when no output\n"
            "                        is asked for), as llama.cpp's own benchmark measures\n"
            "  --profile             Vulkan: time every dispatch of the generation (timestamp\n"
            "                        queries) and print device time per shader and weight\n"
            "                        shape, dispatches, barriers and submissions per token\n"
            "                        (not with --json)\n"
            ECLI_COMMON_HELP
            "  -h, --help            this help\n");
}

/* --profile: start timing the Vulkan backend's dispatches (false: cannot). */
static bool profile_start(const backend *be)
{
#ifdef GGSCOPE_HAVE_VULKAN
    backend *b = (backend *)be;
    backend_vulkan_reset_stats(b);
    return backend_vulkan_set_profile(b, true);
#else
    (void)be;
    return false;
#endif
}

/* --profile: the table of the `ng` generated tokens. */
static void profile_print(const backend *be, long ng)
{
#ifdef GGSCOPE_HAVE_VULKAN
    backend_vulkan_prof_row rows[128];
    int n = backend_vulkan_profile(be, rows, 128);
    backend_vulkan_set_profile((backend *)be, false);
    if (n > 128)
        n = 128;
    double total = 0;
    for (int i = 0; i < n; i++)
        total += rows[i].ms;
    backend_vulkan_stats st = backend_vulkan_get_stats(be);
    printf("\nper generated token: %.1f dispatches, %.1f barriers, %.1f submissions, %.1f ms device time\n",
           (double)st.dispatches / ng, (double)st.barriers / ng, (double)st.submits / ng, total / ng);
    printf("%-28s %-12s %10s %12s %7s\n", "shader", "weight", "disp/token", "ms/token", "share");
    for (int i = 0; i < n; i++) {
        char shape[32] = "";
        if (rows[i].ne0)
            snprintf(shape, sizeof shape, "%ux%u", rows[i].ne1, rows[i].ne0);
        printf("%-28s %-12s %10.1f %12.2f %6.1f%%\n", rows[i].shader, shape, (double)rows[i].count / ng,
               rows[i].ms / ng, total > 0 ? 100.0 * rows[i].ms / total : 0.0);
    }
#else
    (void)be;
    (void)ng;
#endif
}

int cmd_bench(int argc, char **argv)
{
    ecli_opts o = {.backend = "auto"};
    const char *path = NULL;
    long np = 512, ng = 128, reps = 1;
    bool json = false, no_logits = false, profile = false;
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"json", no_argument, 0, 'J'},
        {"no-logits", no_argument, 0, 'L'}, {"profile", no_argument, 0, 'P'}, ECLI_COMMON_LONGOPTS,
        {0, 0, 0, 0}};
    cliopt p;
    cliopt_init(&p, argc, argv, "hp:n:r:" ECLI_COMMON_SHORTOPTS, lo);
    int c;
    while ((c = ecli_next_opt(&p, &o, NULL)) != CLIOPT_END) {
        switch (c) {
        case ECLI_OPT_ERROR: return APP_BADINPUT;
        case 'h': help(stdout); return APP_OK;
        case 'p':
        case 'n':
        case 'r':
            if (!ecli_parse_long(p.name, p.arg, c == 'p' ? 17 : 1, c == 'r' ? 100 : 1 << 20,
                                 c == 'p' ? &np : c == 'n' ? &ng : &reps))
                return APP_BADINPUT;
            break;
        case 'J': json = true; break;
        case 'L': no_logits = true; break;
        case 'P': profile = true; break;
        case CLIOPT_ARG:
            if (path) {
                app_error("bench: unexpected argument '%s'", p.arg);
                return APP_BADINPUT;
            }
            path = p.arg;
            break;
        default: cliopt_unknown(&p); return APP_BADINPUT;
        }
    }
    if (!path) {
        help(stderr);
        return APP_BADINPUT;
    }
    ecli_engine e;
    uint32_t n_ctx = o.n_ctx ? o.n_ctx : (uint32_t)(np + ng + 16);
    int rc = ecli_open(path, &o, n_ctx, &e);
    if (rc)
        return rc;
    uint32_t nv = runner_n_vocab(e.r);
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)np);
    float *lg = malloc(sizeof(float) * nv);
    if (!prompt || !lg) {
        app_error("out of memory");
        rc = APP_FAIL;
        goto done;
    }
    /* any valid ids do: speed does not depend on which */
    for (long i = 0; i < np; i++)
        prompt[i] = (int32_t)((uint64_t)(i * 7919 + 13) % nv);
    double best_pp = 0, best_tg = 0;
    char msg[640];
    float *out = no_logits ? NULL : lg;
    for (long r = 0; r < reps; r++) {
        runner_truncate(e.r, 0);
        double t0 = clock_now_s();
        if (runner_eval(e.r, prompt, (uint32_t)np, 0, out, false, msg, sizeof msg))
            goto fail_eval;
        double pp = np / (clock_now_s() - t0);
        runner_truncate(e.r, 0);
        if (runner_eval(e.r, prompt, 16, 0, out, false, msg, sizeof msg))
            goto fail_eval;
        if (profile && !profile_start(runner_backend(e.r))) {
            app_error("bench: --profile needs the Vulkan backend on a device with timestamps");
            rc = APP_BADINPUT;
            goto done;
        }
        t0 = clock_now_s();
        for (long i = 0; i < ng; i++) {
            int32_t tok = prompt[16 + i % (np - 16)];
            if (runner_eval(e.r, &tok, 1, (uint32_t)(16 + i), out, false, msg, sizeof msg))
                goto fail_eval;
        }
        double tg = ng / (clock_now_s() - t0);
        if (pp > best_pp)
            best_pp = pp;
        if (tg > best_tg)
            best_tg = tg;
    }
    const backend *be = runner_backend(e.r);
    int threads = backend_cpu_threads(be);
    const double kv_mib = runner_kv_bytes(e.r) / 1048576.0;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "model", app_json_text(path, strlen(path)));
        cJSON_AddStringToObject(o, "backend", be->ops->name);
        cJSON_AddNumberToObject(o, "threads", threads);
        cJSON_AddNumberToObject(o, "pp_tokens", (double)np);
        cJSON_AddNumberToObject(o, "pp_tok_s", (double)(long)(best_pp * 100 + 0.5) / 100);
        cJSON_AddNumberToObject(o, "tg_tokens", (double)ng);
        cJSON_AddNumberToObject(o, "tg_tok_s", (double)(long)(best_tg * 100 + 0.5) / 100);
        cJSON_AddNumberToObject(o, "n_ctx", runner_n_ctx(e.r));
        cJSON_AddNumberToObject(o, "kv_mib", (double)(long)(kv_mib * 100 + 0.5) / 100);
        cJSON_AddBoolToObject(o, "logits", !no_logits);
        char *t = cJSON_PrintUnformatted(o);
        if (t)
            printf("%s\n", t);
        free(t);
        cJSON_Delete(o);
    } else {
        printf("backend %s, %d threads, context %u (KV cache %.1f MiB)\n", be->ops->name, threads,
               runner_n_ctx(e.r), kv_mib);
        printf("prompt processing (%ld tokens): %8.2f tok/s\n", np, best_pp);
        printf("generation        (%ld tokens): %8.2f tok/s\n", ng, best_tg);
    }
    if (profile && !json)
        profile_print(be, ng);
    goto done;
fail_eval:
    app_error("%s", msg);
    rc = APP_FAIL;
done:
    free(lg);
    free(prompt);
    ecli_close(&e);
    return rc;
}
