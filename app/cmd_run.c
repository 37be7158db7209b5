/* ggscope run FILE -p PROMPT [...]: generate a completion with the engine,
 * streamed to stdout; prompt and generation speed on stderr. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "clock.h"
#include "backend_select.h"
#include "engine_cli.h"
#include "sampler.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: ggscope run FILE (-p PROMPT | --tokens IDS) [options]\n"
            "\n"
            "Generate a completion of PROMPT and stream it to stdout; prompt and\n"
            "generation speed go to stderr.\n"
            "\n"
            "options:\n"
            "  -p, --prompt TEXT     the prompt (tokenized with the model's tokenizer, BOS added)\n"
            "  --tokens IDS          start from comma-separated token ids instead of text\n"
            "  -n N                  tokens to generate (default 128; stops early at end of text)\n"
            "  --ids                 print the generated token ids (comma-separated) instead of text\n"
            ECLI_SAMPLING_HELP
            "  --ignore-eos          do not stop at end of text\n"
            "  -c, --ctx N           context positions (default min(model's, 4096))\n"
            ECLI_COMMON_HELP
            "  -h, --help            this help\n");
}

int cmd_run(int argc, char **argv)
{
    ecli_opts o = {.backend = "auto"};
    sampler_params sp = sampler_default_params();
    const char *path = NULL, *prompt = NULL, *tokens_s = NULL;
    long n_gen = 128;
    bool print_ids = false, ignore_eos = false;
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"prompt", required_argument, 0, 'p'},
        {"tokens", required_argument, 0, 'T'}, {"ids", no_argument, 0, 'I'},
        {"ignore-eos", no_argument, 0, 'E'}, ECLI_COMMON_LONGOPTS, ECLI_SAMPLING_LONGOPTS,
        {0, 0, 0, 0}};
    cliopt p;
    cliopt_init(&p, argc, argv, "hp:n:" ECLI_COMMON_SHORTOPTS, lo);
    int c;
    while ((c = ecli_next_opt(&p, &o, &sp)) != CLIOPT_END) {
        switch (c) {
        case ECLI_OPT_ERROR: return APP_BADINPUT;
        case 'h': help(stdout); return APP_OK;
        case 'p':
        case 'T':
            if (!p.arg) {
                app_error("%s needs a value", p.name);
                return APP_BADINPUT;
            }
            *(c == 'p' ? &prompt : &tokens_s) = p.arg;
            break;
        case 'n':
            if (!ecli_parse_long(p.name, p.arg, 0, 1 << 24, &n_gen))
                return APP_BADINPUT;
            break;
        case 'I': print_ids = true; break;
        case 'E': ignore_eos = true; break;
        case CLIOPT_ARG:
            if (path) {
                app_error("run: unexpected argument '%s'", p.arg);
                return APP_BADINPUT;
            }
            path = p.arg;
            break;
        default: cliopt_unknown(&p); return APP_BADINPUT;
        }
    }
    if (!path || (!prompt && !tokens_s) || (prompt && tokens_s)) {
        if (path && prompt && tokens_s)
            app_error("run: give either -p or --tokens, not both");
        help(stderr);
        return APP_BADINPUT;
    }
    int32_t *ids = NULL;
    uint32_t n_prompt = 0;
    if (tokens_s) {
        if (!ecli_parse_ids(tokens_s, &ids, &n_prompt))
            return APP_BADINPUT;
    }
    /* everything that can refuse the input (model, tokenizer, prompt) before
     * the backend is opened and announced: a refusal is one line */
    ecli_engine e;
    int rc = ecli_open_model(path, &e);
    if (rc) {
        free(ids);
        return rc;
    }
    ecli_text *tx = ecli_text_new(e.f);
    sampler *smp = NULL;
    float *lg = NULL;
    if (!tx) {
        app_error("out of memory");
        rc = APP_FAIL;
        goto done;
    }
    if (prompt) {
        if (!ecli_tokenize(tx, prompt, &ids, &n_prompt)) {
            rc = APP_BADINPUT;
            goto done;
        }
    }
    uint32_t nv = e.m->hp.n_vocab;
    for (uint32_t i = 0; i < n_prompt; i++)
        if ((uint32_t)ids[i] >= nv) {
            app_error("token id %d is out of range (vocabulary of %u)", ids[i], nv);
            rc = APP_BADINPUT;
            goto done;
        }
    if (n_prompt >= ecli_ctx_size(&e, o.n_ctx)) {
        app_error("the prompt (%u tokens) does not fit the context (%u)", n_prompt,
                  ecli_ctx_size(&e, o.n_ctx));
        rc = APP_BADINPUT;
        goto done;
    }
    rc = ecli_open_backend(path, &o, o.n_ctx, &e);
    if (rc)
        goto done;
    if (session_n_vocab(e.s) != nv || n_prompt >= session_n_ctx(e.s)) {
        app_error("internal error: the session does not match the model");
        rc = APP_FAIL;
        goto done;
    }
    smp = sampler_new(&sp, nv);
    lg = malloc(sizeof(float) * nv);
    if (!smp || !lg) {
        app_error("bad sampling parameters or out of memory");
        rc = APP_FAIL;
        goto done;
    }
    for (uint32_t i = 0; i < n_prompt; i++)
        sampler_accept(smp, ids[i]);
    double t0 = clock_now_s();
    if (app_eval(&e, ids, n_prompt, 0, lg, false)) {
        app_error("evaluation failed: %s", session_error(e.s));
        rc = APP_FAIL;
        goto done;
    }
    double t_pp = clock_now_s() - t0;
    t0 = clock_now_s();
    uint32_t pos = n_prompt;
    long made = 0;
    while (made < n_gen) {
        int32_t tok = sampler_sample(smp, lg, NULL);
        if (tok < 0) {
            app_error("sampling failed (logits are not finite)");
            rc = APP_FAIL;
            goto done;
        }
        sampler_accept(smp, tok);
        bool eog = ecli_is_eog(tx, tok);
        if (print_ids)
            printf("%s%d", made ? "," : "", tok);
        else if (!eog)
            ecli_print_piece(tx, tok, stdout);
        fflush(stdout);
        made++;
        if ((eog && !ignore_eos) || made == n_gen || pos >= session_n_ctx(e.s))
            break;
        if (app_eval(&e, &tok, 1, pos, lg, false)) {
            app_error("evaluation failed: %s", session_error(e.s));
            rc = APP_FAIL;
            goto done;
        }
        pos++;
    }
    double t_tg = clock_now_s() - t0;
    if (!print_ids)
        ecli_flush_text(tx, stdout);
    putchar('\n');
    fflush(stdout);
    fprintf(stderr, "prompt: %u tokens in %.3f s (%.2f tok/s); generation: %ld tokens in %.3f s (%.2f tok/s)\n",
            n_prompt, t_pp, t_pp > 0 ? n_prompt / t_pp : 0.0, made, t_tg,
            t_tg > 0 ? made / t_tg : 0.0);
done:
    free(lg);
    sampler_free(smp);
    ecli_text_free(tx);
    free(ids);
    ecli_close(&e);
    return rc;
}
