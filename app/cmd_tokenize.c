/* ggscope tokenize FILE TEXT [--special] [--no-bos] [--ids|--pieces]
 *          ggscope tokenize FILE --many TEXTS.json [--special]
 * Tokenize text with a model's own tokenizer. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cliopt.h"
#include "rfile.h"
#include "textesc.h"
#include "tokenizer.h"

static void tokenize_usage(FILE *out)
{
    fprintf(out,
            "usage: ggscope tokenize FILE TEXT [--special] [--no-bos] [--ids|--pieces]\n"
            "       ggscope tokenize FILE --many TEXTS.json [--special]\n"
            "\n"
            "Tokenize TEXT with the tokenizer stored in the GGUF FILE (tokenizer.ggml.*),\n"
            "exactly as the model's reference tokenizer (llama.cpp) does. TEXT '-' reads\n"
            "standard input. The BOS token is added when the model's metadata says so.\n"
            "\n"
            "  --special     recognise control tokens written in TEXT (<|im_start|>, <s>,\n"
            "                ...); without it they are tokenized as plain text\n"
            "  --no-bos      do not add BOS (nor EOS) even if the metadata asks for it\n"
            "  --ids         print only the ids, on one line, separated by spaces\n"
            "  --pieces      print one token per line: id and its text, escaped (default)\n"
            "  --many JSON   tokenize every string of a JSON array (no BOS) and print a JSON\n"
            "                array of id arrays\n"
            "  -h, --help    this help\n");
}

/* Print a token's bytes quoted, in the terminal form (app_put_text): valid
 * UTF-8 as is, control characters, bidi controls and stray bytes escaped. */
static void print_piece(FILE *out, const char *s, size_t n)
{
    fputc('\'', out);
    app_put_text(out, s, n, TEXTESC_SQUOTE);
    fputc('\'', out);
}

static int run_many(const tok_vocab *v, const char *path, unsigned flags)
{
    size_t n;
    rfile_status rs;
    int e;
    char *text = rfile_read(path, 0, 0, &n, &rs, &e);
    if (!text) {
        app_error("cannot read %s: %s", path, rfile_strerror(rs, e));
        return rs == RFILE_EOPEN ? APP_BADINPUT : APP_FAIL;
    }
    cJSON *arr = cJSON_ParseWithLength(text, n);
    free(text);
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        app_error("%s: not a JSON array of strings", path);
        return APP_BADINPUT;
    }
    fputc('[', stdout);
    int i = 0;
    for (cJSON *it = arr->child; it; it = it->next, i++) {
        if (!cJSON_IsString(it)) {
            cJSON_Delete(arr);
            app_error("%s: item %d is not a string", path, i);
            return APP_BADINPUT;
        }
        tok_id *ids;
        size_t k;
        if (tok_tokenize(v, it->valuestring, strlen(it->valuestring), flags, &ids, &k) != TOK_OK) {
            cJSON_Delete(arr);
            app_error("out of memory");
            return APP_FAIL;
        }
        fputs(i ? ",[" : "[", stdout);
        for (size_t j = 0; j < k; j++)
            printf(j ? ",%d" : "%d", ids[j]);
        fputc(']', stdout);
        free(ids);
    }
    fputs("]\n", stdout);
    cJSON_Delete(arr);
    return APP_OK;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *file = NULL, *text = NULL, *many = NULL;
    bool special = false, no_bos = false, ids_only = false;
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"special", no_argument, 0, 'S'},
        {"no-bos", no_argument, 0, 'B'}, {"ids", no_argument, 0, 'I'},
        {"pieces", no_argument, 0, 'P'}, {"many", required_argument, 0, 'M'}, {0, 0, 0, 0}};
    cliopt p;
    cliopt_init(&p, argc, argv, "h", lo);
    int c;
    while ((c = cliopt_next(&p)) != CLIOPT_END) {
        switch (c) {
        case 'h': tokenize_usage(stdout); return APP_OK;
        case 'S': special = true; break;
        case 'B': no_bos = true; break;
        case 'I': ids_only = true; break;
        case 'P': ids_only = false; break;
        case 'M':
            if (!p.arg) {
                app_error("--many needs a JSON file");
                return APP_BADINPUT;
            }
            many = p.arg;
            break;
        case CLIOPT_ARG:
            if (file && text) {
                app_error("tokenize: unexpected argument '%s'", p.arg);
                return APP_BADINPUT;
            }
            *(file ? &text : &file) = p.arg;
            break;
        default: cliopt_unknown(&p); return APP_BADINPUT;
        }
    }
    if (!file || (!text && !many) || (text && many)) {
        tokenize_usage(stderr);
        return APP_BADINPUT;
    }
    gguf_file *f = app_open_gguf(file);
    if (!f)
        return APP_BADINPUT;
    tok_error te;
    tok_vocab *v = tok_open(f, &te);
    if (!v) {
        char msg[1024];
        app_error("%s: %s", file, app_text(msg, sizeof msg, te.msg, strlen(te.msg))); /* may quote the file */
        gguf_close(f);
        return APP_BADINPUT;
    }
    if (tok_warning(v)) {
        char msg[1024];
        app_error("warning: %s", app_text(msg, sizeof msg, tok_warning(v), strlen(tok_warning(v))));
    }
    unsigned flags = special ? TOK_PARSE_SPECIAL : 0;
    int rc = APP_OK;
    if (many) {
        rc = run_many(v, many, flags);
        goto done;
    }
    char *owned = NULL;
    size_t len;
    if (!strcmp(text, "-")) {
        owned = rfile_read("-", 0, 0, &len, NULL, NULL);
        if (!owned) {
            app_error("cannot read standard input");
            rc = APP_FAIL;
            goto done;
        }
        text = owned;
    } else {
        len = strlen(text);
    }
    if (!no_bos)
        flags |= TOK_ADD_SPECIAL;
    tok_id *ids;
    size_t n;
    if (tok_tokenize(v, text, len, flags, &ids, &n) != TOK_OK) {
        free(owned);
        app_error("out of memory");
        rc = APP_FAIL;
        goto done;
    }
    if (ids_only) {
        for (size_t i = 0; i < n; i++)
            printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    } else {
        for (size_t i = 0; i < n; i++) {
            char buf[512];
            size_t pl = tok_piece(v, ids[i], buf, sizeof buf, TOK_DETOK_SPECIAL);
            printf("%7d ", ids[i]);
            print_piece(stdout, buf, pl < sizeof buf ? pl : sizeof buf);
            putchar('\n');
        }
    }
    free(ids);
    free(owned);
done:
    tok_close(v);
    gguf_close(f);
    return rc;
}
