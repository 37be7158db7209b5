/* ggscope: explore GGUF files, inspect quantization error, chat with a model. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cliopt.h"

static const app_command COMMANDS[] = {
    {"info", cmd_info, "print a GGUF file's header, metadata and tensors (--json)"},
    {"dump", cmd_dump, "a tensor's values: text views (--values --hex --stats --hist --json), float32 or requantized blocks"},
    {"explore", cmd_explore, "open the full-screen explorer on a file (what `ggscope FILE` does in a terminal)"},
    {"tokenize", cmd_tokenize, "tokenize text with a model's tokenizer (--ids, --pieces, --special)"},
    {"template", cmd_template, "render a conversation with a model's chat template"},
    {"run", cmd_run, "generate text from a prompt with the built-in engine"},
    {"bench", cmd_bench, "measure prompt and generation speed (tokens/s, --json)"},
    {"chat", cmd_chat, "chat with a model in the terminal (the built-in engine; no FILE: the demo model)"},
    {"logits", cmd_logits, "print the logits of token ids as JSON lines (as the peer does)"},
    {"devices", cmd_devices, "list the Vulkan devices and the one --backend auto takes"},
    {"qerr", cmd_qerr, "quantization error per tensor, layer, role and file (--vs PARENT or re-quantized --types)"},
    {"quantize", cmd_quantize, "write a quantized copy of a GGUF file (--type q4_K_m, --tensor-type REGEX=TYPE)"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *out)
{
    fprintf(out,
            "ggscope %s: explore GGUF model files, inspect quantization error, chat with a model\n"
            "\n"
            "usage: ggscope [FILE]            open FILE (no FILE: the built-in demo model)\n"
            "       ggscope FILE --vs PARENT  the same; `e` shows FILE's quantization error against PARENT\n"
            "       ggscope COMMAND [ARGS]    run a command; `ggscope COMMAND --help` for its options\n"
            "\ncommands:\n",
            GGSCOPE_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(out, "\noptions:\n  -h, --help     this help\n  -V, --version  print the version\n"
                 "  --no-tui       print `info` of FILE instead of opening the explorer\n"
                 "\n`ggscope [FILE]` opens the explorer when stdin and stdout are terminals, else it prints\n"
                 "`info`. Inside the explorer, ? lists every key.\n");
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'},
        {"no-tui", no_argument, 0, 'T'}, {0, 0, 0, 0}};
    bool no_tui = false;
    int first = argc; /* the first argument that is not an option: FILE or COMMAND */
    cliopt p;
    cliopt_init(&p, argc, argv, "hV", lo);
    for (int c; first == argc && (c = cliopt_next(&p)) != CLIOPT_END;) {
        switch (c) {
        case 'h': usage(stdout); return APP_OK;
        case 'V': printf("ggscope %s\n", GGSCOPE_VERSION); return APP_OK;
        case 'T': no_tui = true; break;
        case CLIOPT_ARG: first = optind - 1; break;
        default: app_error("unknown option '%s' (see ggscope --help)", p.name); return APP_BADINPUT;
        }
    }
    /* from here argv[1] is FILE or COMMAND */
    argv += first - 1;
    argc -= first - 1;
    if (argc >= 2 && !no_tui) {
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (!strcmp(argv[1], COMMANDS[i].name))
                return COMMANDS[i].run(argc - 1, argv + 1);
    }
    /* ggscope FILE --vs PARENT: the explorer, `e` measures FILE against PARENT */
    if (argc == 4 && !no_tui && !strcmp(argv[2], "--vs")) {
        char *args[] = {"explore", argv[1], "--vs", argv[3], NULL};
        return cmd_explore(4, args);
    }
    if (argc >= 2 && argv[1][0] == '-') {
        app_error("unknown option '%s' (see ggscope --help)", argv[1]);
        return APP_BADINPUT;
    }
    if (argc > 2) {
        app_error("unknown command '%s' (see ggscope --help)", argv[1]);
        return APP_BADINPUT;
    }
    /* ggscope [FILE]: the explorer in a terminal, else `info` of the file. */
    const char *path = argc >= 2 ? argv[1] : app_demo_path();
    if (!path)
        return APP_FAIL;
    if (!no_tui && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        return app_explore(path, NULL);
    char *args[] = {"info", (char *)path, NULL};
    return cmd_info(2, args);
}
