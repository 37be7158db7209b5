/* ggscope qerr: quantization error per tensor, layer, role and file. */
#include <getopt.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "app.h"
#include "cliopt.h"
#include "codec.h"
#include "ggtype.h"
#include "qerr.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ggscope qerr FILE [--vs PARENT] [--types T1,T2,...] [--filter REGEX]\n"
            "                    [--json | --csv] [--threads N] [--top N] [--tui [--mono]]\n"
            "\n"
            "Quantization error per tensor, per layer (blk.N), per role (attn_q, ffn_down, ...)\n"
            "and for the whole file: RMSE, relative RMSE (RMSE / RMS of the reference), max,\n"
            "95th percentile and median of |error|, SQNR (dB), cosine similarity, bits per weight.\n"
            "\n"
            "  --vs PARENT      measure FILE against PARENT (tensors paired by name)\n"
            "  --types LIST     without --vs: re-quantize every 2-D tensor of FILE to these\n"
            "                   types and measure each against FILE's values (default q4_K);\n"
            "                   types: f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K\n"
            "                   q6_K iq4_nl iq4_xs tq1_0 tq2_0 mxfp4\n"
            "  --filter REGEX   only tensors whose name matches (POSIX extended regex)\n"
            "  --json           one object per tensor and type (SQNR +inf: \"sqnr_db\": null,\n"
            "                   \"sqnr_inf\": true); see docs/qerr.md\n"
            "  --csv            the same as comma-separated values (inf written as inf)\n"
            "  --threads N      threads (default: one per CPU)\n"
            "  --top N          print only the N worst tensors in the table (default all)\n"
            "  --tui            full screen: sortable table, layer x role heatmap, histograms\n"
            "                   (`t` switches between the --types); `e` goes to the explorer\n"
            "  --mono           with --tui: no colours (shade characters in the heatmap)\n"
            "\n"
            "The table is sorted worst first (relative RMSE). A progress bar goes to stderr when\n"
            "it is a terminal. Exit status: 0 ok, 1 failure, 2 bad input.\n");
}

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    (void)user;
    app_progress("qerr", (double)done, (double)total);
}

static int cmp_worst(const void *pa, const void *pb)
{
    const qerr_result *a = *(const qerr_result *const *)pa, *b = *(const qerr_result *const *)pb;
    double x = a->m.rel_rmse, y = b->m.rel_rmse;
    if (x != y)
        return x > y ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    return a->type < b->type ? -1 : a->type > b->type;
}

/* "inf", "-inf", "-" (NaN), or %.4g / %.6g. */
static const char *fnum(char *buf, size_t cap, double v, const char *fmt)
{
    if (isnan(v))
        snprintf(buf, cap, "-");
    else if (isinf(v))
        snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    else
        snprintf(buf, cap, fmt, v);
    return buf;
}

static const char *type_label(uint32_t t)
{
    return t == UINT32_MAX ? "-" : ggtype_name(t);
}

static void print_row_metrics(const qerr_metrics *m)
{
    char b[7][32];
    printf(" %10s %9s %10s %10s %10s %8s %9s\n", fnum(b[0], 32, m->rmse, "%.4g"),
           fnum(b[1], 32, m->rel_rmse, "%.4g"), fnum(b[2], 32, m->max_abs, "%.4g"),
           fnum(b[3], 32, m->p95_abs, "%.4g"), fnum(b[4], 32, m->median_abs, "%.4g"),
           fnum(b[5], 32, m->sqnr_db, "%.2f"), fnum(b[6], 32, m->cosine, "%.6f"));
}

/* A result's tensor name in the terminal form: the full name from the file
 * (r->name is cut at a NUL), else r->name. */
static char *result_name(const gguf_file *f, const qerr_result *r, char *buf, size_t cap)
{
    if (r->tensor < gguf_tensor_count(f)) {
        const gguf_tensor *t = gguf_tensor_at(f, r->tensor);
        return app_text(buf, cap, t->name.ptr, (size_t)t->name.len);
    }
    return app_text(buf, cap, r->name, strlen(r->name));
}

/* A C string cut from a file name (role, aggregate key) in the terminal form. */
static char *cstr_text(const char *s, char *buf, size_t cap)
{
    return app_text(buf, cap, s, strlen(s));
}

static void print_table(const gguf_file *f, const qerr_report *rep, bool compare, long top)
{
    size_t n = qerr_report_count(rep);
    const qerr_result **v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = qerr_report_at(rep, i);
    qsort(v, n, sizeof *v, cmp_worst);
    size_t shown = top > 0 && (size_t)top < n ? (size_t)top : n;
    printf("%-32s %-7s %-7s %11s %6s %10s %9s %10s %10s %10s %8s %9s\n", "tensor",
           compare ? "type" : "cand", compare ? "parent" : "source", "elements", "bpw", "rmse",
           "rel_rmse", "max_abs", "p95_abs", "median", "sqnr_db", "cosine");
    for (size_t i = 0; i < shown; i++) {
        const qerr_result *r = v[i];
        char nm[1100], esc[1024];
        snprintf(nm, sizeof nm, "%s%s", result_name(f, r, esc, sizeof esc), r->requantized ? "*" : "");
        printf("%-32s %-7s %-7s %11llu %6.3f", nm, ggtype_name(r->type), ggtype_name(r->ref_type),
               (unsigned long long)r->elements, r->bpw);
        print_row_metrics(&r->m);
    }
    if (shown < n)
        printf("... %zu more (--top)\n", n - shown);
    bool any_req = false;
    for (size_t i = 0; i < n; i++)
        any_req |= v[i]->requantized;
    if (any_req)
        printf("* already quantized: measured by re-quantizing its dequantized values\n");
    free(v);
}

static void print_aggs(const char *title, const qerr_aggregate *a, size_t n)
{
    if (!n)
        return;
    printf("\n%-32s %-7s %7s %11s %6s %10s %9s %10s %10s %10s %8s %9s\n", title, "type", "tensors",
           "elements", "bpw", "rmse", "rel_rmse", "max_abs", "p95_abs", "median", "sqnr_db",
           "cosine");
    for (size_t i = 0; i < n; i++) {
        char key[512];
        cstr_text(a[i].key, key, sizeof key);
        if (!a[i].tensors) {
            printf("%-32s %-7s %7s   (nothing measured)\n", key, type_label(a[i].type), "0");
            continue;
        }
        double bpw = a[i].elements ? a[i].bits / (double)a[i].elements : 0;
        printf("%-32s %-7s %7llu %11llu %6.3f", key, type_label(a[i].type),
               (unsigned long long)a[i].tensors, (unsigned long long)a[i].elements, bpw);
        print_row_metrics(&a[i].m);
    }
}

static const char *issue_kind(qerr_issue_kind k)
{
    switch (k) {
    case QERR_ISSUE_ONLY_MEASURED: return "only in FILE";
    case QERR_ISSUE_ONLY_REF: return "only in PARENT";
    case QERR_ISSUE_SHAPE: return "shape mismatch";
    case QERR_ISSUE_SKIPPED: return "skipped";
    }
    return "?";
}

static void json_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static int print_json(const gguf_file *f, const qerr_report *rep)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return -1;
    for (size_t i = 0; i < qerr_report_count(rep); i++) {
        const qerr_result *r = qerr_report_at(rep, i);
        cJSON *o = cJSON_CreateObject();
        if (r->tensor < gguf_tensor_count(f))
            cJSON_AddItemToObject(o, "name", app_json_text(gguf_tensor_at(f, r->tensor)->name.ptr,
                                                           (size_t)gguf_tensor_at(f, r->tensor)->name.len));
        else
            cJSON_AddItemToObject(o, "name", app_json_text(r->name, strlen(r->name)));
        cJSON_AddStringToObject(o, "type", ggtype_name(r->type));
        cJSON_AddStringToObject(o, "ref_type", ggtype_name(r->ref_type));
        cJSON_AddBoolToObject(o, "requantized", r->requantized);
        cJSON_AddNumberToObject(o, "elements", (double)r->elements);
        if (r->layer >= 0)
            cJSON_AddNumberToObject(o, "layer", r->layer);
        else
            cJSON_AddNullToObject(o, "layer");
        cJSON_AddItemToObject(o, "role", app_json_text(r->role, strlen(r->role)));
        json_num(o, "rmse", r->m.rmse);
        json_num(o, "rel_rmse", r->m.rel_rmse);
        json_num(o, "max_abs", r->m.max_abs);
        json_num(o, "p95_abs", r->m.p95_abs);
        json_num(o, "median_abs", r->m.median_abs);
        json_num(o, "sqnr_db", r->m.sqnr_db);
        cJSON_AddBoolToObject(o, "sqnr_inf", r->m.sqnr_inf);
        json_num(o, "cosine", r->m.cosine);
        json_num(o, "bpw", r->bpw);
        json_num(o, "ref_bpw", r->ref_bpw);
        cJSON_AddNumberToObject(o, "nonfinite", (double)r->acc.n_nonfinite);
        cJSON_AddItemToArray(arr, o);
    }
    char *s = cJSON_Print(arr);
    cJSON_Delete(arr);
    if (!s)
        return -1;
    puts(s);
    free(s);
    return 0;
}

static void csv_num(double v)
{
    if (isnan(v))
        printf(",");
    else if (isinf(v))
        printf(",%s", v > 0 ? "inf" : "-inf");
    else
        printf(",%.9g", v);
}

/* A CSV field: the terminal form, in double quotes (doubled inside) when it
 * holds a comma or a quote (RFC 4180). */
static void csv_text(const char *s)
{
    if (!strpbrk(s, ",\"")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void print_csv(const gguf_file *f, const qerr_report *rep)
{
    printf("name,type,ref_type,requantized,elements,rmse,rel_rmse,max_abs,p95_abs,median_abs,"
           "sqnr_db,cosine,bpw,ref_bpw\n");
    for (size_t i = 0; i < qerr_report_count(rep); i++) {
        const qerr_result *r = qerr_report_at(rep, i);
        char nm[1024];
        csv_text(result_name(f, r, nm, sizeof nm));
        printf(",%s,%s,%s,%llu", ggtype_name(r->type), ggtype_name(r->ref_type),
               r->requantized ? "true" : "false", (unsigned long long)r->elements);
        csv_num(r->m.rmse);
        csv_num(r->m.rel_rmse);
        csv_num(r->m.max_abs);
        csv_num(r->m.p95_abs);
        csv_num(r->m.median_abs);
        csv_num(r->m.sqnr_db);
        csv_num(r->m.cosine);
        csv_num(r->bpw);
        csv_num(r->ref_bpw);
        printf("\n");
    }
}

/* Parse "q4_0,q4_K" into types; returns the count or -1 (message printed). */
static int parse_types(const char *list, uint32_t *types, int cap)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int t = ggtype_from_name(tok);
        if (t < 0 || !codec_can_quantize((uint32_t)t)) {
            app_error("unknown type or type without a quantizer: '%s'", tok);
            return -1;
        }
        if (n == cap) {
            app_error("too many types");
            return -1;
        }
        types[n++] = (uint32_t)t;
    }
    if (n == 0)
        app_error("--types: empty list");
    return n ? n : -1;
}

int cmd_qerr(int argc, char **argv)
{
    static const struct option lo[] = {
        {"vs", required_argument, 0, 'v'},     {"types", required_argument, 0, 't'},
        {"filter", required_argument, 0, 'f'}, {"json", no_argument, 0, 'j'},
        {"csv", no_argument, 0, 'c'},          {"threads", required_argument, 0, 'n'},
        {"top", required_argument, 0, 'k'},    {"tui", no_argument, 0, 'u'},
        {"mono", no_argument, 0, 'm'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
    };
    const char *vs = NULL, *types_s = "q4_K", *filter = NULL;
    bool json = false, csv = false, tui = false, mono = false;
    int threads = 0;
    long top = 0;
    optind = 0; /* glibc: a full reset (main parsed its own options) */
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'v': vs = optarg; break;
        case 't': types_s = optarg; break;
        case 'f': filter = optarg; break;
        case 'j': json = true; break;
        case 'c': csv = true; break;
        case 'u': tui = true; break;
        case 'm': mono = true; break;
        case 'n': threads = atoi(optarg); break;
        case 'k': top = atol(optarg); break;
        case 'h': usage(stdout); return APP_OK;
        default: usage(stderr); return APP_BADINPUT;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return APP_BADINPUT;
    }
    if (cliopt_extra(argc, argv, optind, 1))
        return APP_BADINPUT;
    if (json && csv) {
        app_error("--json and --csv exclude each other");
        return APP_BADINPUT;
    }
    const char *path = argv[optind];
    uint32_t types[32];
    int n_types = parse_types(types_s, types, 32);
    if (n_types < 0)
        return APP_BADINPUT;
    if (tui) {
        app_explore_opts eo = {0};
        eo.qerr_vs = vs;
        eo.qerr_types = types;
        eo.qerr_n_types = (size_t)n_types;
        eo.qerr_open = true;
        eo.mono = mono;
        return app_explore(path, &eo);
    }
    gguf_file *f = app_open_gguf(path);
    if (!f)
        return APP_BADINPUT;
    gguf_file *p = NULL;
    if (vs && !(p = app_open_gguf(vs))) {
        gguf_close(f);
        return APP_BADINPUT;
    }
    qerr_opts o = {0};
    o.types = types;
    o.n_types = (size_t)n_types;
    o.filter = filter;
    o.n_threads = threads;
    o.progress = on_progress;
    o.release_pages = true;   /* files opened with gguf_open are mappings */
    qerr_status st;
    char err[256];
    qerr_report *rep = p ? qerr_compare(f, p, &o, &st, err, sizeof err)
                         : qerr_requant(f, &o, &st, err, sizeof err);
    app_progress_end();
    int rc = APP_OK;
    if (!rep) {
        app_error("%s", err);
        rc = st == QERR_EARG ? APP_BADINPUT : APP_FAIL;
    } else if (json) {
        if (print_json(f, rep) != 0)
            rc = APP_FAIL;
    } else if (csv) {
        print_csv(f, rep);
    } else {
        if (p)
            printf("%s vs %s\n\n", path, vs);
        else
            printf("%s re-quantized to %s\n\n", path, types_s);
        print_table(f, rep, p != NULL, top);
        size_t ni = qerr_report_issue_count(rep);
        if (ni) {
            printf("\n%zu tensor(s) not measured:\n", ni);
            for (size_t i = 0; i < ni; i++) {
                const qerr_issue *is = qerr_report_issue_at(rep, i);
                bool cand = is->kind == QERR_ISSUE_SKIPPED && !p && !strncmp(is->msg, "ne[0]", 5);
                char nm[1024];
                printf("  %-32s %-15s %s%s%s\n", cstr_text(is->name, nm, sizeof nm), issue_kind(is->kind), cand ? ggtype_name(is->type) : "",
                       cand ? ": " : "", is->msg);
            }
        }
        const qerr_aggregate *a;
        size_t n = qerr_report_layers(rep, &a);
        print_aggs("layer", a, n);
        n = qerr_report_roles(rep, &a);
        print_aggs("role", a, n);
        n = qerr_report_totals(rep, &a);
        print_aggs("whole file", a, n);
    }
    qerr_report_free(rep);
    gguf_close(p);
    gguf_close(f);
    return rc;
}
