/* ggscope dump FILE TENSOR [--rows A:B] [--hex|--values|--stats|--hist] [--bins N] [--json]:
 * what the explorer's detail views show, for scripts and tests. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "dump_views.h"

static void dump_usage(FILE *out)
{
    fprintf(out,
            "usage: ggscope dump FILE TENSOR [--rows A:B] [--hex|--values|--stats|--hist] [--bins N] [--json]\n"
            "\n"
            "Print one tensor the way the explorer's detail views show it.\n"
            "\n"
            "  --values    dequantized values, one line per row (default view)\n"
            "  --hex       raw bytes block by block, with each block's fields decoded\n"
            "  --stats     count, min, max, mean, std, absmax, zeros, NaN, Inf of the dequantized values\n"
            "  --hist      --stats plus a histogram over [min, max]\n"
            "  --bins N    histogram bins (1..4096, default 32)\n"
            "  --rows A:B  rows A (included) to B (excluded), rows being ne[0] elements; also A:, :B, A\n"
            "              (default: 0:8 for --hex and --values, every row for --stats and --hist)\n"
            "  --json      one JSON document\n"
            "  -h, --help  this help\n");
}

int cmd_dump(int argc, char **argv)
{
    const char *path = NULL, *name = NULL, *rows = NULL;
    dump_view_opts o = {.view = DUMP_VALUES, .bins = 32};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            dump_usage(stdout);
            return APP_OK;
        } else if (!strcmp(a, "--hex"))
            o.view = DUMP_HEX;
        else if (!strcmp(a, "--values"))
            o.view = DUMP_VALUES;
        else if (!strcmp(a, "--stats"))
            o.view = DUMP_STATS;
        else if (!strcmp(a, "--hist"))
            o.view = DUMP_HIST;
        else if (!strcmp(a, "--json"))
            o.json = true;
        else if (!strcmp(a, "--rows") && i + 1 < argc)
            rows = argv[++i];
        else if (!strcmp(a, "--bins") && i + 1 < argc) {
            char *end;
            unsigned long b = strtoul(argv[++i], &end, 10);
            if (*end || b < 1 || b > 4096) {
                app_error("dump: --bins takes 1..4096");
                return APP_BADINPUT;
            }
            o.bins = (uint32_t)b;
        } else if (a[0] == '-' && a[1]) {
            app_error("dump: unknown option '%s' (see ggscope dump --help)", a);
            return APP_BADINPUT;
        } else if (!path)
            path = a;
        else if (!name)
            name = a;
        else {
            app_error("dump: unexpected argument '%s'", a);
            return APP_BADINPUT;
        }
    }
    if (!path || !name) {
        dump_usage(stderr);
        return APP_BADINPUT;
    }
    gguf_file *f = app_open_gguf(path);
    if (!f)
        return APP_BADINPUT;
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        app_error("%s: no tensor named '%s'", path, name);
        gguf_close(f);
        return APP_BADINPUT;
    }
    uint64_t n_rows = t->ne[0] ? t->n_elements / t->ne[0] : 0;
    int rc = APP_OK;
    if (rows) {
        if (dump_parse_rows(rows, n_rows, &o.row_first, &o.row_count) != 0)
            rc = APP_BADINPUT;
    } else {
        o.row_first = 0;
        o.row_count = (o.view == DUMP_HEX || o.view == DUMP_VALUES) && n_rows > 8 ? 8 : n_rows;
    }
    if (rc == APP_OK && n_rows == 0) {
        app_error("%s: tensor '%s' is empty", path, name);
        rc = APP_BADINPUT;
    }
    if (rc == APP_OK)
        rc = dump_view(t, &o, stdout);
    gguf_close(f);
    return rc;
}
