/* ggscope chat --remote URL [options]: the chat page against an
 * OpenAI-compatible server (app/rchat.h). See docs/chat.md, "Remote chat". */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "engine_cli.h"
#include "http.h"
#include "rchat.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: ggscope chat --remote URL [--model NAME] [--api-key-env VAR] [options]\n"
            "\n"
            "Chat with a model served by an OpenAI-compatible server (llama-server, vLLM,\n"
            "Ollama) at URL (http://HOST:PORT, with or without /v1): /v1/chat/completions,\n"
            "streamed; the server renders the prompt with its own template. The same page\n"
            "as `ggscope chat FILE`: Esc stops a reply (the request is closed); /regen\n"
            "/edit /save /load /set /show as there; /models lists the server's models\n"
            "and /models NAME switches to one of them;\n"
            "the token inspector (i) shows the probabilities the server returns.\n"
            "\n"
            "options:\n"
            "  --remote URL          the server\n"
            "  --model NAME          the model to ask for (default: the first of /v1/models)\n"
            "  --api-key-env VAR     send $VAR as the key (Authorization: Bearer), unshown\n"
            "  --timeout S           seconds without a byte from the server that end a reply\n"
            "                        (default 120)\n"
            "  --system TEXT         system prompt\n"
            "  --load SESSION        start with a session file saved by /save\n" ECLI_SAMPLING_HELP
            "  -n N                  max tokens per reply (default 512; 0: the server's)\n"
            "  --mono                no colours (also when NO_COLOR is set)\n"
            "  --no-mouse            do not capture the mouse\n"
            "  -h, --help            this help\n");
}

static bool need(const cliopt *p, const char *what)
{
    if (p->arg)
        return true;
    app_error("%s needs %s", p->name, what);
    return false;
}

int cmd_chat_remote(int argc, char **argv)
{
    rchat_opts ro = {.settings = chs_default_settings()};
    sampler_params *sp = &ro.settings.sp;
    app_explore_opts eo = {0};
    const char *load = NULL, *key_env = NULL;
    enum { O_REMOTE = 0x300, O_MODEL, O_KEYENV, O_TIMEOUT };
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"remote", required_argument, 0, O_REMOTE},
        {"model", required_argument, 0, O_MODEL}, {"api-key-env", required_argument, 0, O_KEYENV},
        {"timeout", required_argument, 0, O_TIMEOUT}, {"system", required_argument, 0, 'S'},
        {"load", required_argument, 0, 'L'}, {"n-predict", required_argument, 0, 'n'},
        {"mono", no_argument, 0, 'M'}, {"no-mouse", no_argument, 0, 'N'}, ECLI_SAMPLING_LONGOPTS, {0, 0, 0, 0}};
    cliopt p;
    cliopt_init(&p, argc, argv, "hn:", lo);
    int c;
    while ((c = cliopt_next(&p)) != CLIOPT_END) {
        int r = ecli_sampling_opt(c, p.name, p.arg, sp);
        if (r < 0)
            return APP_BADINPUT;
        if (r > 0)
            continue;
        switch (c) {
        case 'h': help(stdout); return APP_OK;
        case O_REMOTE:
            if (!need(&p, "a URL"))
                return APP_BADINPUT;
            ro.url = p.arg;
            break;
        case O_MODEL:
            if (!need(&p, "a model name"))
                return APP_BADINPUT;
            ro.model = p.arg;
            break;
        case O_KEYENV:
            if (!need(&p, "the name of an environment variable"))
                return APP_BADINPUT;
            key_env = p.arg;
            break;
        case O_TIMEOUT: {
            long lv;
            if (!ecli_parse_long(p.name, p.arg, 1, 86400, &lv))
                return APP_BADINPUT;
            ro.timeout_ms = lv * 1000;
            break;
        }
        case 'S':
            if (!need(&p, "a value"))
                return APP_BADINPUT;
            ro.system = p.arg;
            break;
        case 'L':
            if (!need(&p, "a session file"))
                return APP_BADINPUT;
            load = p.arg;
            break;
        case 'n': {
            long lv;
            if (!ecli_parse_long(p.name, p.arg, 0, 1 << 24, &lv))
                return APP_BADINPUT;
            ro.settings.n_predict = (int32_t)lv;
            break;
        }
        case 'M': eo.mono = true; break;
        case 'N': eo.no_mouse = true; break;
        case CLIOPT_ARG:
            app_error("chat --remote: unexpected argument '%s' (the model is on the server: --model NAME)", p.arg);
            return APP_BADINPUT;
        default: cliopt_unknown(&p); return APP_BADINPUT;
        }
    }
    if (!ro.url) {
        app_error("chat: --remote needs a URL");
        return APP_BADINPUT;
    }
    if (!http_is_url(ro.url)) {
        app_error("--remote: '%s' is not an http:// or https:// URL", ro.url);
        return APP_BADINPUT;
    }
    if (key_env) {
        ro.api_key = getenv(key_env);
        if (!ro.api_key || !*ro.api_key) {
            app_error("--api-key-env: $%s is not set", key_env);
            return APP_BADINPUT;
        }
    }
    chs_file session;
    if (load) {
        char msg[640];
        if (chs_session_read(load, &ro.settings, &session, msg, sizeof msg)) {
            app_error("%s", msg);
            return APP_BADINPUT;
        }
        ro.session = &session;
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        if (load)
            chs_file_free(&session);
        app_error("chat: stdin and stdout must be a terminal");
        return APP_BADINPUT;
    }
    char err[512];
    eo.rchat = rchat_new(&ro, err, sizeof err);
    if (load)
        chs_file_free(&session);
    if (!eo.rchat) {
        app_error("%s", err);
        return APP_BADINPUT;
    }
    return app_explore(NULL, &eo);
}
