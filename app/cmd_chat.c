/* ggscope chat [FILE] [options]: the chat page of the explorer, opened
 * first, on FILE or the demo model. See docs/chat.md. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "chat_ui.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: ggscope chat [FILE] [options]\n"
            "       ggscope chat --remote URL [options]   (see chat --remote URL --help)\n"
            "\n"
            "Chat with the model in FILE (no FILE: the built-in demo model) on ggscope's own\n"
            "engine, in the terminal. Esc stops a reply being written.\n"
            "Type /help inside for the commands (/system /clear /regen /edit /set /show /save\n"
            "/load /template /mode /quit); F2 shows the file in the explorer.\n"
            "\n"
            "options:\n"
            "  --system TEXT         system prompt\n"
            "  --load SESSION        start with a session file saved by /save (checked before\n"
            "                        anything else; its system prompt and settings apply)\n"
            "  --raw                 no chat template: the conversation is one text the model\n"
            "                        continues, as `ggscope run -p` (/mode chat|raw switches)\n"
            "  --template FILE       use the Jinja chat template in FILE, not the model's\n"
            "  --format NAME         use a built-in chat format: chatml, llama2, llama3,\n"
            "                        phi3, mistral, gemma, zephyr, phi4, granite, mistral-v7,\n"
            "                        mistral-v7-tekken, olmo2, harmony\n"
            ECLI_SAMPLING_HELP
            "  -n N                  max tokens per reply (default 512; 0 = until the context\n"
            "                        is full)\n"
            "  -c, --ctx N           context positions (default min(model's, 4096))\n"
            ECLI_COMMON_HELP
            "                        in the chat: one per core but one, left to the UI\n"
            "  --mono                no colours (also when NO_COLOR is set)\n"
            "  --no-mouse            do not capture the mouse\n"
            "  -h, --help            this help\n"
            "\n"
            "GGSCOPE_CHAT_DELAY_MS=N waits N ms after each token (to watch a reply slowly).\n");
}

int cmd_chat(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)   /* chat --remote URL: app/cmd_chat_remote.c */
        if (!strcmp(argv[i], "--remote") || !strncmp(argv[i], "--remote=", 9))
            return cmd_chat_remote(argc, argv);
    chat_ui_opts co = {.eng = {.backend = "auto"}, .have_settings = true};
    co.settings = chs_default_settings();
    sampler_params *sp = &co.settings.sp;
    app_explore_opts eo = {0};
    const char *path = NULL, *load = NULL, *tmpl_file = NULL, *format = NULL;
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"system", required_argument, 0, 'S'},
        {"load", required_argument, 0, 'L'}, {"n-predict", required_argument, 0, 'n'},
        {"mono", no_argument, 0, 'M'}, {"no-mouse", no_argument, 0, 'N'}, {"raw", no_argument, 0, 'R'},
        {"template", required_argument, 0, 'J'}, {"format", required_argument, 0, 'F'}, ECLI_COMMON_LONGOPTS,
        ECLI_SAMPLING_LONGOPTS, {0, 0, 0, 0}};
    cliopt p;
    cliopt_init(&p, argc, argv, "hn:" ECLI_COMMON_SHORTOPTS, lo);
    int c;
    while ((c = ecli_next_opt(&p, &co.eng, sp)) != CLIOPT_END) {
        switch (c) {
        case ECLI_OPT_ERROR: return APP_BADINPUT;
        case 'h': help(stdout); return APP_OK;
        case 'S':
            if (!p.arg) {
                app_error("--system needs a value");
                return APP_BADINPUT;
            }
            co.system = p.arg;
            break;
        case 'L':
            if (!p.arg) {
                app_error("--load needs a session file");
                return APP_BADINPUT;
            }
            load = p.arg;
            break;
        case 'n': {
            long lv;
            if (!ecli_parse_long(p.name, p.arg, 0, 1 << 24, &lv))
                return APP_BADINPUT;
            co.settings.n_predict = (int32_t)lv;
            break;
        }
        case 'M': eo.mono = true; break;
        case 'R': co.raw = true; break;
        case 'J':
        case 'F':
            if (!p.arg) {
                app_error("%s needs a value", p.name);
                return APP_BADINPUT;
            }
            *(c == 'J' ? &tmpl_file : &format) = p.arg;
            break;
        case 'N': eo.no_mouse = true; break;
        case CLIOPT_ARG:
            if (path) {
                app_error("chat: unexpected argument '%s'", p.arg);
                return APP_BADINPUT;
            }
            path = p.arg;
            break;
        default: cliopt_unknown(&p); return APP_BADINPUT;
        }
    }
    chs_file session;
    if (load) {
        /* untrusted: read and checked (size, JSON, types, UTF-8) before the terminal is ours */
        char msg[640];
        if (chs_session_read(load, &co.settings, &session, msg, sizeof msg)) {
            app_error("%s", msg);
            return APP_BADINPUT;
        }
        co.session = &session;
    }
    if (!path)
        path = app_demo_path();
    char err[512], source[1200];
    /* one mapping for the chat and the explorer behind it (F2) */
    gguf_file *f = path ? app_open_gguf(path) : NULL;
    int trc = f ? chat_ui_template(f, tmpl_file, format, &co.tmpl, source, sizeof source) : APP_OK;
    co.tmpl_source = source;
    if (trc == APP_OK && f && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
        app_error("chat: stdin and stdout must be a terminal (use `ggscope run` in scripts)");
        trc = APP_BADINPUT;
    }
    if (trc != APP_OK) {
        chat_template_free(co.tmpl);
        if (load)
            chs_file_free(&session);
        gguf_close(f);
        return trc;
    }
    eo.chat = f ? chat_ui_new(path, f, &co, false, err, sizeof err) : NULL;
    if (load)
        chs_file_free(&session);   /* taken by chat_ui_new, or not needed */
    if (!path)
        return APP_FAIL;
    if (!eo.chat) {
        gguf_close(f);
        return APP_BADINPUT;
    }
    eo.file = f;
    int rc = app_explore(path, &eo);
    gguf_close(f);
    return rc;
}
