/* ggscope template FILE MESSAGES.json [--no-gen] [--bos S] [--eos S] ...:
 * render a conversation through a model's chat template. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cliopt.h"
#include "rfile.h"
#include "chat.h"
#include "gguf.h"
#include "textesc.h"

static void template_usage(FILE *out)
{
    fprintf(out,
            "usage: ggscope template FILE MESSAGES.json [--no-gen] [--bos S] [--eos S]\n"
            "                        [--system S] [--format NAME] [--strict] [--date D]\n"
            "\n"
            "Render a conversation with a chat template and print the prompt (no newline\n"
            "added).\n"
            "FILE is a GGUF model (template from tokenizer.chat_template, BOS/EOS from its\n"
            "vocabulary) or a Jinja template file. MESSAGES.json is a JSON list of\n"
            "{\"role\": ..., \"content\": ...} objects (\"-\" reads standard input).\n"
            "When the template is missing or fails, a built-in format detected from the\n"
            "template's text is used and stderr says so.\n"
            "\n"
            "  --no-gen         no generation prompt at the end (default: add it)\n"
            "  --bos S          the BOS token text (default: the model's, or empty)\n"
            "  --eos S          the EOS token text (default: the model's, or empty)\n"
            "  --system S       a system prompt, prepended unless the first turn is one\n"
            "  --format NAME    use a built-in format instead of the template: chatml,\n"
            "                   llama2, llama3, phi3, mistral, gemma, zephyr, phi4, granite,\n"
            "                   mistral-v7, mistral-v7-tekken, olmo2, harmony\n"
            "  --strict         fail (exit 1) instead of falling back to a built-in format\n"
            "  --date D         the date strftime_now() sees (YYYY-MM-DD; default: today)\n"
            "  -h, --help       this help\n");
}

static bool is_gguf(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char m[4] = {0};
    size_t r = fread(m, 1, 4, f);
    fclose(f);
    return r == 4 && !memcmp(m, "GGUF", 4);
}

static const struct {
    const char *name;
    chat_format f;
} FORMATS[] = {
    {"chatml", CHAT_FORMAT_CHATML}, {"llama2", CHAT_FORMAT_LLAMA2}, {"llama3", CHAT_FORMAT_LLAMA3},
    {"phi3", CHAT_FORMAT_PHI3},     {"mistral", CHAT_FORMAT_MISTRAL}, {"gemma", CHAT_FORMAT_GEMMA},
    {"zephyr", CHAT_FORMAT_ZEPHYR}, {"phi4", CHAT_FORMAT_PHI4}, {"granite", CHAT_FORMAT_GRANITE},
    {"mistral-v7", CHAT_FORMAT_MISTRAL_V7}, {"mistral-v7-tekken", CHAT_FORMAT_MISTRAL_V7_TEKKEN},
    {"olmo2", CHAT_FORMAT_OLMO2}, {"harmony", CHAT_FORMAT_HARMONY},
};

int cmd_template(int argc, char **argv)
{
    static const struct option opts[] = {
        {"no-gen", no_argument, NULL, 'n'}, {"bos", required_argument, NULL, 'b'},
        {"eos", required_argument, NULL, 'e'}, {"system", required_argument, NULL, 's'},
        {"format", required_argument, NULL, 'f'}, {"strict", no_argument, NULL, 'S'},
        {"date", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool gen = true, strict = false;
    const char *bos_arg = NULL, *eos_arg = NULL, *system = NULL, *format = NULL, *date = NULL;
    optind = 0; /* glibc: a full reset (main parsed its own options) */
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'n': gen = false; break;
        case 'b': bos_arg = optarg; break;
        case 'e': eos_arg = optarg; break;
        case 's': system = optarg; break;
        case 'f': format = optarg; break;
        case 'S': strict = true; break;
        case 'd': date = optarg; break;
        case 'h': template_usage(stdout); return APP_OK;
        default: template_usage(stderr); return APP_BADINPUT;
        }
    }
    if (cliopt_extra(argc, argv, optind, 2))
        return APP_BADINPUT;
    if (argc - optind != 2) {
        template_usage(stderr);
        return APP_BADINPUT;
    }
    const char *path = argv[optind], *msgs_path = argv[optind + 1];

    chat_format builtin = CHAT_FORMAT_TEMPLATE;
    if (format) {
        for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++)
            if (!strcmp(format, FORMATS[i].name))
                builtin = FORMATS[i].f;
        if (builtin == CHAT_FORMAT_TEMPLATE) {
            app_error("unknown format '%s' (chatml, llama2, llama3, phi3, mistral, gemma, zephyr, phi4, granite, "
                      "mistral-v7, mistral-v7-tekken, olmo2, harmony)", format);
            return APP_BADINPUT;
        }
    }
    time_t now = 0;
    if (date) {
        struct tm tm = {0};
        if (sscanf(date, "%d-%d-%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3 || tm.tm_mon < 1 ||
            tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31) {
            app_error("--date wants YYYY-MM-DD, got '%s'", date);
            return APP_BADINPUT;
        }
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        tm.tm_hour = 12;
        tm.tm_isdst = -1;
        now = mktime(&tm);
    }

    int rc = APP_FAIL;
    char *text = NULL, *msgs_text = NULL, *out = NULL;
    cJSON *msgs = NULL;
    chat_template *ct = NULL;
    gguf_file *g = NULL;

    if (is_gguf(path)) {
        g = app_open_gguf(path);
        if (!g) {
            rc = APP_BADINPUT;
            goto done;
        }
    } else {
        size_t n;
        rfile_status rs;
        int e;
        text = rfile_read(path, (size_t)1 << 30, 0, &n, &rs, &e);
        if (!text) {
            app_error("%s: cannot read the template (%s)", path, rfile_strerror(rs, e));
            rc = APP_BADINPUT;
            goto done;
        }
        if (strlen(text) != n) {
            app_error("%s: the template contains a NUL byte", path);
            rc = APP_BADINPUT;
            goto done;
        }
    }

    rfile_status mrs;
    int me;
    msgs_text = rfile_read(msgs_path, (size_t)1 << 30, 0, NULL, &mrs, &me);
    if (!msgs_text) {
        app_error("%s: cannot read the messages (%s)", msgs_path, rfile_strerror(mrs, me));
        rc = APP_BADINPUT;
        goto done;
    }
    msgs = cJSON_Parse(msgs_text);
    if (!cJSON_IsArray(msgs)) {
        app_error("%s: not a JSON list of {\"role\", \"content\"} objects", msgs_path);
        rc = APP_BADINPUT;
        goto done;
    }
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        if (!cJSON_IsObject(m) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "role"))) {
            app_error("%s: every message must be an object with a string \"role\"", msgs_path);
            rc = APP_BADINPUT;
            goto done;
        }
    }

    if (g) {
        ct = chat_template_from_gguf(g, bos_arg, eos_arg);
        if (ct && builtin != CHAT_FORMAT_TEMPLATE) {
            /* the model's BOS/EOS with a built-in format */
            chat_template *bt = chat_template_new_builtin(builtin, chat_template_bos(ct), chat_template_eos(ct));
            chat_template_free(ct);
            ct = bt;
        }
    } else {
        const char *b = bos_arg ? bos_arg : "", *e = eos_arg ? eos_arg : "";
        ct = builtin != CHAT_FORMAT_TEMPLATE ? chat_template_new_builtin(builtin, b, e) : chat_template_new(text, b, e);
    }
    if (!ct) {
        app_error("out of memory");
        goto done;
    }
    chat_opts o = {.add_generation_prompt = gen, .system_prompt = system, .no_fallback = strict, .now = now};
    chat_result res;
    size_t len = 0;
    out = chat_render_json(ct, msgs, &o, &len, &res);
    if (!out) {
        /* the message may quote the template: jinja writes its control
         * characters as escapes, app_error escapes what else is not inert */
        char eb[700];
        const char *m = res.error.code ? jinja_error_format(&res.error, eb, sizeof eb) : res.status;
        app_error("%s: %s", path, m);
        goto done;
    }
    if (res.fallback) {
        fputs("ggscope: ", stderr);
        app_put_text(stderr, res.status, strlen(res.status), TEXTESC_RAW_BACKSLASH);
        fputc('\n', stderr);
    }
    if (fwrite(out, 1, len, stdout) != len || fflush(stdout) != 0) {
        app_error("cannot write the prompt");
        goto done;
    }
    rc = APP_OK;
done:
    free(out);
    chat_template_free(ct);
    cJSON_Delete(msgs);
    free(msgs_text);
    free(text);
    gguf_close(g);
    return rc;
}
