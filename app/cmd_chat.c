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
            "\n"
            "Chat with the model in FILE (no FILE: the built-in demo model) on ggscope's own\n"
            "engine, in the terminal. The reply is generated on a worker thread; Esc stops it.\n"
            "Type /help inside for the commands (/system /clear /regen /edit /set /show /save\n"
            "/load /template /quit); F2 shows the file in the explorer.\n"
            "\n"
            "options:\n"
            "  --system TEXT         system prompt\n"
            "  --load SESSION        start with a session file saved by /save (checked before\n"
            "                        anything else; its system prompt and settings apply)\n"
            ECLI_SAMPLING_HELP
            "  -n N                  max tokens per reply (default 512; 0 = until the context is full)\n"
            "  -c, --ctx N           context positions (default min(model's, 4096))\n"
            ECLI_COMMON_HELP
            "                        in the chat: one per core but one, left to the UI\n"
            "  --mono                no colours (also when NO_COLOR is set)\n"
            "  --no-mouse            do not capture the mouse\n"
            "  -h, --help            this help\n"
            "\n"
            "GGSCOPE_CHAT_DELAY_MS=N sleeps N ms after each token (tests, demonstrations).\n");
}

int cmd_chat(int argc, char **argv)
{
    chat_ui_opts co = {.eng = {.backend = "auto"}, .have_settings = true};
    co.settings = chs_default_settings();
    sampler_params *sp = &co.settings.sp;
    app_explore_opts eo = {0};
    const char *path = NULL, *load = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = ecli_common_opt(argc, argv, &i, &co.eng);
        if (r < 0)
            return APP_BADINPUT;
        if (r)
            continue;
        if ((r = ecli_sampling_opt(argc, argv, &i, sp)) < 0)
            return APP_BADINPUT;
        if (r)
            continue;
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long lv;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            return APP_OK;
        } else if (!strcmp(a, "--system")) {
            if (!val) {
                app_error("--system needs a value");
                return APP_BADINPUT;
            }
            co.system = argv[++i];
        } else if (!strcmp(a, "--load")) {
            if (!val) {
                app_error("--load needs a session file");
                return APP_BADINPUT;
            }
            load = argv[++i];
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            if (!ecli_parse_long(a, val, 0, 1 << 24, &lv))
                return APP_BADINPUT;
            co.settings.n_predict = (int32_t)lv;
            i++;
        } else if (!strcmp(a, "--mono")) {
            eo.mono = true;
        } else if (!strcmp(a, "--no-mouse")) {
            eo.no_mouse = true;
        } else if (a[0] == '-' && a[1]) {
            app_error("chat: unknown option '%s' (see ggscope chat --help)", a);
            return APP_BADINPUT;
        } else if (!path) {
            path = a;
        } else {
            app_error("chat: unexpected argument '%s'", a);
            return APP_BADINPUT;
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
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        if (load)
            chs_file_free(&session);
        app_error("chat: stdin and stdout must be a terminal (use `ggscope run` in scripts)");
        return APP_BADINPUT;
    }
    if (!path)
        path = app_demo_path();
    char err[512];
    eo.chat = path ? chat_ui_new(path, &co, false, err, sizeof err) : NULL;
    if (load)
        chs_file_free(&session);   /* taken by chat_ui_new, or not needed */
    if (!path)
        return APP_FAIL;
    if (!eo.chat)
        return APP_BADINPUT;
    return app_explore(path, &eo);
}
