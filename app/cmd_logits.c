/* ggscope logits FILE IDS [--top K] [--all]: evaluate token ids, print logits
 * as one JSON line per position, in the form of the peer oracle's `logits`. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "engine_cli.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: ggscope logits FILE IDS [--top K] [--all] [options]\n"
            "\n"
            "Evaluate the comma-separated token ids IDS and print, for every position i,\n"
            "one JSON line {\"pos\": i, \"top\": [[id, logit], ...]} with the K largest\n"
            "logits (best first), and with --all also \"logits\": [...] for the whole\n"
            "vocabulary.\n"
            "\n"
            "options:\n"
            "  --top K               logits listed per position (default 10)\n"
            "  --all                 also print every logit\n"
            "  --batch N             evaluate N tokens per pass (default: all at once)\n"
            ECLI_COMMON_HELP
            "  -h, --help            this help\n");
}

typedef struct {
    int32_t id;
    float v;
} idv;

static int idv_cmp(const void *a, const void *b)
{
    const idv *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int cmd_logits(int argc, char **argv)
{
    ecli_opts o = {.backend = "auto"};
    const char *path = NULL, *ids_s = NULL;
    long top = 10;
    bool all = false;
    long batch = 0;
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"top", required_argument, 0, 'K'},
        {"batch", required_argument, 0, 'B'}, {"all", no_argument, 0, 'A'}, ECLI_COMMON_LONGOPTS,
        {0, 0, 0, 0}};
    cliopt p;
    cliopt_init(&p, argc, argv, "h" ECLI_COMMON_SHORTOPTS, lo);
    int c;
    while ((c = ecli_next_opt(&p, &o, NULL)) != CLIOPT_END) {
        switch (c) {
        case ECLI_OPT_ERROR: return APP_BADINPUT;
        case 'h': help(stdout); return APP_OK;
        case 'K':
            if (!ecli_parse_long(p.name, p.arg, 0, 1 << 24, &top))
                return APP_BADINPUT;
            break;
        case 'B':
            if (!ecli_parse_long(p.name, p.arg, 1, 1 << 20, &batch))
                return APP_BADINPUT;
            break;
        case 'A': all = true; break;
        case CLIOPT_ARG:
            if (path && ids_s) {
                app_error("logits: unexpected argument '%s'", p.arg);
                return APP_BADINPUT;
            }
            *(path ? &ids_s : &path) = p.arg;
            break;
        default: cliopt_unknown(&p); return APP_BADINPUT;
        }
    }
    if (!path || !ids_s) {
        help(stderr);
        return APP_BADINPUT;
    }
    int32_t *ids;
    uint32_t n;
    if (!ecli_parse_ids(ids_s, &ids, &n))
        return APP_BADINPUT;
    ecli_engine e;
    uint32_t n_ctx = o.n_ctx ? o.n_ctx : (n + 8 > 256 ? n + 8 : 256);
    int rc = ecli_open(path, &o, n_ctx, &e);
    if (rc) {
        free(ids);
        return rc;
    }
    uint32_t nv = runner_n_vocab(e.r);
    for (uint32_t i = 0; i < n; i++)
        if ((uint32_t)ids[i] >= nv) {
            app_error("token id %d is out of range (vocabulary of %u)", ids[i], nv);
            free(ids);
            ecli_close(&e);
            return APP_BADINPUT;
        }
    float *lg = malloc(sizeof(float) * nv * (size_t)n);
    idv *srt = malloc(sizeof(idv) * nv);
    if (!lg || !srt) {
        app_error("out of memory");
        rc = APP_FAIL;
        goto done;
    }
    for (uint32_t p = 0; p < n;) {
        uint32_t nb = batch && (uint32_t)batch < n - p ? (uint32_t)batch : n - p;
        char msg[640];
        if (runner_eval(e.r, ids + p, nb, p, lg + (size_t)p * nv, true, msg, sizeof msg)) {
            app_error("%s", msg);
            rc = APP_FAIL;
            goto done;
        }
        p += nb;
    }
    if ((uint64_t)top > nv)
        top = nv;
    for (uint32_t p = 0; p < n; p++) {
        const float *row = lg + (size_t)p * nv;
        for (uint32_t t = 0; t < nv; t++)
            srt[t] = (idv){(int32_t)t, row[t]};
        qsort(srt, nv, sizeof *srt, idv_cmp);
        printf("{\"pos\":%u,\"top\":[", p);
        for (long k = 0; k < top; k++) {
            printf("%s[%d,", k ? "," : "", srt[k].id);
            ecli_print_js_number(stdout, srt[k].v);
            putchar(']');
        }
        putchar(']');
        if (all) {
            fputs(",\"logits\":[", stdout);
            for (uint32_t t = 0; t < nv; t++) {
                if (t)
                    putchar(',');
                ecli_print_js_number(stdout, row[t]);
            }
            putchar(']');
        }
        puts("}");
    }
done:
    free(srt);
    free(lg);
    free(ids);
    ecli_close(&e);
    return rc;
}
