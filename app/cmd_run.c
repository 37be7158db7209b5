/* ggscope run FILE -p PROMPT [...]: generate a completion with the engine,
 * streamed to stdout; prompt and generation speed on stderr. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "chat_ui.h"
#include "clock.h"
#include "engine_cli.h"
#include "sampler.h"

typedef struct {
    ecli_text *tx;
    bool print_ids;
    long made;
} run_out;

/* runner_gen.on_token: stream the token to stdout */
static int put_token(void *ctx, int32_t tok, const sampler_result *sr)
{
    (void)sr;
    run_out *ro = ctx;
    if (ro->print_ids)
        printf("%s%d", ro->made ? "," : "", tok);
    else if (!ecli_is_eog(ro->tx, tok))
        ecli_print_piece(ro->tx, tok, stdout);
    fflush(stdout);
    ro->made++;
    return 0;
}

/* --template / --format: PROMPT as one user turn with a generation prompt,
 * tokenized as the chat tokenizes a rendered prompt. APP_OK or an APP_* code
 * with the error printed. */
static int render_prompt(const gguf_file *f, ecli_text *tx, const char *file, const char *format, const char *prompt,
                         int32_t **ids, uint32_t *n)
{
    chat_template *ct;
    char source[1200];
    int rc = chat_ui_template(f, file, format, &ct, source, sizeof source);
    if (rc)
        return rc;
    if (!ecli_vocab(tx)) {
        chat_template_free(ct);
        app_error("this model has no usable tokenizer: use --tokens IDS");
        return APP_BADINPUT;
    }
    chat_message m = {"user", prompt};
    chat_opts o = {.add_generation_prompt = true, .no_fallback = true};
    chat_result res;
    size_t len, cnt;
    char *text = chat_render(ct, &m, 1, &o, &len, &res);
    chat_template_free(ct);
    if (!text) {
        app_error("%s: %s", source, res.status);
        return APP_BADINPUT;
    }
    int32_t *t;
    rc = chs_tokenize_vocab(ecli_vocab(tx), text, len, &t, &cnt);
    free(text);
    if (rc || cnt > UINT32_MAX) {
        app_error("out of memory");
        return APP_FAIL;
    }
    *ids = t;
    *n = (uint32_t)cnt;
    return APP_OK;
}

static void help(FILE *out)
{
    fprintf(out,
            "usage: ggscope run FILE (-p PROMPT | --tokens IDS) [options]\n"
            "\n"
            "Generate a completion of PROMPT and stream it to stdout; prompt and\n"
            "generation speed go to stderr.\n"
            "\n"
            "options:\n"
            "  -p, --prompt TEXT     the prompt (the model's tokenizer; BOS added)\n"
            "  --tokens IDS          start from comma-separated token ids instead of text\n"
            "  -n N                  tokens to generate (default 128; fewer at the end of the\n"
            "                        text or when the context is full)\n"
            "  --ids                 print the token ids made (comma-separated), not text\n"
            "  --template FILE       render PROMPT as one user turn with the Jinja chat\n"
            "                        template in FILE and a generation prompt (special\n"
            "                        tokens parsed, BOS only when the model asks and the\n"
            "                        text lacks it); without --template or --format the\n"
            "                        prompt is used as it is\n"
            "  --format NAME         the same with a built-in chat format (chatml, llama3,\n"
            "                        ...; see ggscope chat --help)\n"
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
    const char *path = NULL, *prompt = NULL, *tokens_s = NULL, *tmpl_file = NULL, *format = NULL;
    long n_gen = 128;
    bool print_ids = false, ignore_eos = false;
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"prompt", required_argument, 0, 'p'},
        {"tokens", required_argument, 0, 'T'}, {"ids", no_argument, 0, 'I'},
        {"ignore-eos", no_argument, 0, 'E'}, {"template", required_argument, 0, 'J'},
        {"format", required_argument, 0, 'F'}, ECLI_COMMON_LONGOPTS, ECLI_SAMPLING_LONGOPTS,
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
        case 'J':
        case 'F':
            if (!p.arg) {
                app_error("%s needs a value", p.name);
                return APP_BADINPUT;
            }
            *(c == 'p' ? &prompt : c == 'T' ? &tokens_s : c == 'J' ? &tmpl_file : &format) = p.arg;
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
    if (tokens_s && (tmpl_file || format)) {
        app_error("run: --template and --format render -p; they do not apply to --tokens");
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
    if (!tx) {
        app_error("out of memory");
        rc = APP_FAIL;
        goto done;
    }
    if (prompt && (tmpl_file || format)) {
        rc = render_prompt(e.f, tx, tmpl_file, format, prompt, &ids, &n_prompt);
        if (rc)
            goto done;
    } else if (prompt) {
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
    if (runner_n_vocab(e.r) != nv || n_prompt >= runner_n_ctx(e.r)) {
        app_error("internal error: the session does not match the model");
        rc = APP_FAIL;
        goto done;
    }
    run_out ro = {.tx = tx, .print_ids = print_ids};
    runner_gen g = {
        .sp = sp,
        .n_predict = (int32_t)n_gen,
        .eog = ignore_eos ? NULL : ecli_vocab(tx),
        .on_token = put_token,
        .ctx = &ro,
    };
    runner_stats st;
    char msg[640];
    if (runner_generate(e.r, ids, n_prompt, &g, &st, msg, sizeof msg)) {
        app_error("%s", msg);
        rc = APP_FAIL;
        goto done;
    }
    double t_pp = st.t_prompt_s, t_tg = st.n_gen ? st.t_first_s - st.t_prompt_s + st.t_gen_s : 0;
    if (!print_ids)
        ecli_flush_text(tx, stdout);
    putchar('\n');
    fflush(stdout);
    if (st.stop == RUNNER_STOP_CTX && ro.made < n_gen)
        fprintf(stderr, "stopped after %ld of %ld tokens: the context is full (%u positions; -c, --ctx N for more)\n",
                ro.made, n_gen, runner_n_ctx(e.r));
    fprintf(stderr, "prompt: %u tokens in %.3f s (%.2f tok/s); generation: %ld tokens in %.3f s (%.2f tok/s)\n",
            n_prompt, t_pp, t_pp > 0 ? n_prompt / t_pp : 0.0, ro.made, t_tg,
            t_tg > 0 ? ro.made / t_tg : 0.0);
done:
    ecli_text_free(tx);
    free(ids);
    ecli_close(&e);
    return rc;
}
