/* ggscope: explore GGUF files, inspect quantization error, chat with a model. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cliopt.h"

static const app_command COMMANDS[] = {
    {"info", cmd_info, "print a GGUF file's header, metadata and tensors (--json)"},
    {"dump", cmd_dump, "a tensor's values, bytes or statistics (--values, --hex, ...)"},
    {"explore", cmd_explore, "the full-screen explorer (what `ggscope FILE` does)"},
    {"tokenize", cmd_tokenize, "tokenize text with a model's tokenizer (--ids, --pieces)"},
    {"template", cmd_template, "render a conversation with a model's chat template"},
    {"run", cmd_run, "generate text from a prompt with the built-in engine"},
    {"bench", cmd_bench, "measure prompt and generation speed (tokens/s, --json)"},
    {"chat", cmd_chat, "chat with a model in the terminal (no FILE: the demo model)"},
    {"logits", cmd_logits, "print the logits of token ids as JSON lines"},
    {"devices", cmd_devices, "list the Vulkan devices and the one --backend auto takes"},
    {"qerr", cmd_qerr, "quantization error per tensor, layer and role (--vs, --types)"},
    {"quantize", cmd_quantize, "write a quantized copy of a GGUF file (--type q4_K_M, ...)"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void commands(FILE *out)
{
    fprintf(out, "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-16s%s\n", COMMANDS[i].name, COMMANDS[i].summary);
}

static void usage(FILE *out)
{
    fprintf(out,
            "ggscope %s: explore GGUF model files, inspect quantization error, chat\n"
            "\n"
            "usage: ggscope [FILE]            open FILE (no FILE: the built-in demo model)\n"
            "       ggscope FILE --vs PARENT  the same; `e` shows the error against PARENT\n"
            "       ggscope COMMAND [ARGS]    run a command (COMMAND --help: its options)\n"
            "       ggscope help [COMMAND]    this help, or COMMAND's\n"
            "FILE may be an http:// or https:// URL (info, dump, the explorer)\n"
            "\n",
            GGSCOPE_VERSION);
    commands(out);
    fprintf(out, "\noptions:\n  -h, --help      this help\n  -V, --version   print the version\n"
                 "  --no-tui        print `info` of FILE instead of opening the explorer\n"
                 "\n`ggscope [FILE]` opens the explorer when stdin and stdout are terminals,\n"
                 "else it prints `info`. Inside the explorer, ? lists every key.\n");
}

static const app_command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(name, COMMANDS[i].name))
            return &COMMANDS[i];
    return NULL;
}

/* A word that names no file and has no path's shape ("foo", not "m.gguf",
 * "dir/m"): taken as a mistyped command. */
static bool looks_like_path(const char *s)
{
    return access(s, F_OK) == 0 || strchr(s, '/') || strchr(s, '.');
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
        const app_command *cmd = find_command(argv[1]);
        if (cmd)
            return cmd->run(argc - 1, argv + 1);
        /* ggscope help [COMMAND] (unless a file is named so) */
        if (!strcmp(argv[1], "help") && access(argv[1], F_OK) != 0) {
            if (argc == 2) {
                usage(stdout);
                return APP_OK;
            }
            cmd = find_command(argv[2]);
            if (!cmd || argc > 3) {
                app_error("help: %s '%s'", cmd ? "unexpected argument" : "unknown command", argv[cmd ? 3 : 2]);
                commands(stderr);
                return APP_BADINPUT;
            }
            char *args[] = {argv[2], "--help", NULL};
            return cmd->run(2, args);
        }
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
    if (argc > 2 || (argc == 2 && !looks_like_path(argv[1]))) {
        app_error("unknown command '%s'%s (see ggscope --help)", argv[1], argc > 2 ? "" : ", and no file of that name");
        commands(stderr);
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
