/* ggscope info FILE [--json] [--full] [--items N]: header, metadata, tensors, totals. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cliopt.h"
#include "info_mem.h"
#include "model.h"
#include "ggtype.h"
#include "gguf.h"
#include "textesc.h"

#define DEFAULT_ITEMS 8
#define KEY_MAX 256 /* bytes of a key shown */

static void info_usage(FILE *out)
{
    fprintf(out,
            "usage: ggscope info FILE [--json] [--full] [--items N]\n"
            "       [--ctx N [--backend B] [--kv-type T] [--used N] [--threads N]]\n"
            "\n"
            "Print a GGUF file's header (version, byte order, alignment, counts, data\n"
            "offset, size), its metadata (arrays as type, length and first items; control\n"
            "characters escaped), its tensors (name, type, shape, elements, bytes, offset),\n"
            "totals per type and the parts of its file name (GGUF naming convention).\n"
            "FILE may be an http:// or https:// URL (split shards too): only the header is\n"
            "read, with range requests, also for --ctx.\n"
            "\n"
            "  --json      one JSON document instead of text\n"
            "  --full      every array item (default: the first %d)\n"
            "  --items N   the first N array items\n"
            "  --ctx N     estimate the memory of running the model with N context positions:\n"
            "              weights, KV cache, compute buffers, tokenizer, program (and device\n"
            "              memory on Vulkan); with --json, the \"memory\" member\n"
            "  --backend B auto | cpu | vulkan, as for run (default auto)\n"
            "  --kv-type T the KV cache type (default f16; the engine supports: %s)\n"
            "  --used N    positions evaluated so far (default: the whole context)\n"
            "  --threads N CPU threads (default: one per core)\n"
            "  -h, --help  this help\n",
            DEFAULT_ITEMS, memest_kv_types());
}

/* Print s in the terminal form (app_put_text), at most max bytes of it (cut
 * at a character boundary), then the full length when it was cut. */
static void print_escaped(FILE *out, const char *s, uint64_t n, uint64_t max, unsigned flags)
{
    uint64_t lim = n < max ? n : max;
    for (int k = 0; k < 3 && lim < n && lim > 0 && ((unsigned char)s[lim] & 0xC0) == 0x80; k++)
        lim--;
    app_put_text(out, s, (size_t)lim, flags);
    if (n > lim)
        fprintf(out, "… (%" PRIu64 " bytes)", n);
}

static void print_scalar(FILE *out, const gguf_value *v)
{
    int64_t i;
    uint64_t u;
    double d;
    gguf_str s;
    switch (v->type) {
    case GGUF_VT_STRING:
        gguf_value_str(v, &s);
        fputc('"', out);
        print_escaped(out, s.ptr, s.len, 200, TEXTESC_DQUOTE);
        fputc('"', out);
        break;
    case GGUF_VT_BOOL: fputs(v->data[0] ? "true" : "false", out); break;
    case GGUF_VT_FLOAT32:
    case GGUF_VT_FLOAT64:
        gguf_value_f64(v, &d);
        fprintf(out, "%.9g", d);
        break;
    case GGUF_VT_UINT64:
        gguf_value_u64(v, &u);
        fprintf(out, "%" PRIu64, u);
        break;
    default:
        if (gguf_value_i64(v, &i) == GGUF_OK)
            fprintf(out, "%" PRId64, i);
    }
}

static void print_value(FILE *out, const gguf_value *v, uint64_t items)
{
    if (v->type != GGUF_VT_ARRAY) {
        print_scalar(out, v);
        return;
    }
    fprintf(out, "[%s × %" PRIu64 "]", gguf_vtype_name(v->arr_type), v->arr_len);
    uint64_t n = v->arr_len < items ? v->arr_len : items;
    if (n)
        fputs(" ", out);
    for (uint64_t k = 0; k < n; k++) {
        gguf_value e;
        if (gguf_arr_at(v, k, &e) != GGUF_OK)
            break;
        if (k)
            fputs(", ", out);
        print_value(out, &e, items);
    }
    if (n < v->arr_len)
        fputs(", …", out);
}

static void human_bytes(uint64_t b, char *buf, size_t cap)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)b;
    int k = 0;
    while (x >= 1024 && k < 4)
        x /= 1024, k++;
    if (k == 0)
        snprintf(buf, cap, "%" PRIu64 " B", b);
    else
        snprintf(buf, cap, "%.2f %s", x, u[k]);
}

static void shape_str(const gguf_tensor *t, char *buf, size_t cap)
{
    int k = 0;
    for (uint32_t d = 0; d < t->n_dims; d++)
        k += snprintf(buf + k, cap - (size_t)k, d ? "×%" PRIu64 : "%" PRIu64, t->ne[d]);
}

typedef struct {
    uint64_t tensors, elements, bytes;
} type_total;

/* Whether the engine runs the file's architecture (run, chat, logits, bench). */
static bool engine_arch(const gguf_file *f, char *arch, size_t cap)
{
    if (gguf_get_cstr(f, "general.architecture", arch, cap) != GGUF_OK)
        arch[0] = 0;
    return arch[0] && model_arch_supported(arch);
}

static void print_text(const gguf_file *f, uint64_t items)
{
    FILE *o = stdout;
    char hb[32];
    human_bytes(gguf_file_size(f), hb, sizeof hb);
    printf("file:         ");
    app_put_text(o, gguf_path(f), strlen(gguf_path(f)), 0);
    putchar('\n');
    if (gguf_shard_count(f) > 1)
        printf("shards:       %u\n", gguf_shard_count(f));
    printf("size:         %" PRIu64 " bytes (%s)\n", gguf_file_size(f), hb);
    printf("version:      GGUF v%u\n", gguf_version(f));
    printf("byte order:   %s\n", gguf_big_endian(f) ? "big-endian" : "little-endian");
    printf("alignment:    %u\n", gguf_alignment(f));
    printf("tensors:      %" PRIu64 "\n", gguf_tensor_count(f));
    printf("metadata:     %" PRIu64 " keys\n", gguf_kv_count(f));
    printf("data offset:  %" PRIu64 " (0x%" PRIx64 ")\n", gguf_data_offset(f), gguf_data_offset(f));
    char arch[64];
    if (engine_arch(f, arch, sizeof arch)) {
        printf("engine:       supported\n");
    } else {
        printf("engine:       not supported (");
        if (arch[0])
            app_put_text(o, arch, strlen(arch), 0);
        else
            printf("no general.architecture");
        printf(")\n");
    }

    printf("\nmetadata:\n");
    size_t kw = 0;
    char esc[KEY_MAX * 6 + 64];
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        size_t l = kv->key.len <= 48 ? strlen(app_text(esc, sizeof esc, kv->key.ptr, (size_t)kv->key.len)) : 48;
        if (l > kw && l < 48)
            kw = l;
    }
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        fputs("  ", o);
        print_escaped(o, kv->key.ptr, kv->key.len, KEY_MAX, 0);
        size_t shown = kv->key.len <= KEY_MAX ? strlen(app_text(esc, sizeof esc, kv->key.ptr, (size_t)kv->key.len)) : kw + 2;
        for (size_t p = shown; p < kw + 2; p++)
            fputc(' ', o);
        if (kv->value.type != GGUF_VT_ARRAY)
            printf("%-8s ", gguf_vtype_name(kv->value.type));
        print_value(o, &kv->value, items);
        fputc('\n', o);
    }

    type_total tot[GGTYPE_COUNT + 1] = {{0}};
    uint64_t nw = 4;
    char name[400];
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        size_t l = strlen(app_text(name, sizeof name, t->name.ptr, (size_t)t->name.len));
        if (l > nw)
            nw = l;
    }
    printf("\ntensors:\n  %-*s %-8s %-22s %14s %14s %14s\n", (int)nw, "name", "type", "shape", "elements", "bytes", "offset");
    uint64_t all_el = 0, all_b = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char shape[96], ty[24];
        shape_str(t, shape, sizeof shape);
        if (t->type_known)
            snprintf(ty, sizeof ty, "%s", ggtype_name(t->type));
        else
            snprintf(ty, sizeof ty, "unknown(%u)", t->type);
        printf("  %-*s %-8s %-22s %14" PRIu64 " %14" PRIu64 " %#14" PRIx64 "\n", (int)nw, app_text(name, sizeof name, t->name.ptr, (size_t)t->name.len), ty,
               shape, t->n_elements, t->n_bytes, t->abs_offset);
        type_total *tt = &tot[t->type_known ? t->type : GGTYPE_COUNT];
        tt->tensors++;
        tt->elements += t->n_elements;
        tt->bytes += t->n_bytes;
        all_el += t->n_elements;
        all_b += t->n_bytes;
    }
    printf("\ntotals:\n");
    for (int k = 0; k <= GGTYPE_COUNT; k++) {
        if (!tot[k].tensors)
            continue;
        human_bytes(tot[k].bytes, hb, sizeof hb);
        printf("  %-8s %6" PRIu64 " tensors %16" PRIu64 " params %12s  %.2f bpw\n", k < GGTYPE_COUNT ? ggtype_name((uint32_t)k) : "unknown",
               tot[k].tensors, tot[k].elements, hb, tot[k].elements ? 8.0 * (double)tot[k].bytes / (double)tot[k].elements : 0.0);
    }
    human_bytes(all_b, hb, sizeof hb);
    printf("  %-8s %6" PRIu64 " tensors %16" PRIu64 " params %12s  %.2f bpw\n", "all", gguf_tensor_count(f), all_el, hb,
           all_el ? 8.0 * (double)all_b / (double)all_el : 0.0);

    gguf_name_parts np;
    printf("\nfile name:    ");
    if (gguf_parse_name(gguf_path(f), &np)) {
        printf("base=%s size=%s%s%s version=%s", np.base_name, np.size_label, np.fine_tune[0] ? " finetune=" : "", np.fine_tune, np.version);
        if (np.encoding[0])
            printf(" encoding=%s", np.encoding);
        if (np.type[0])
            printf(" type=%s", np.type);
        if (np.shard_total)
            printf(" shard=%u/%u", np.shard_num, np.shard_total);
        printf("\n");
    } else {
        printf("does not follow the GGUF naming convention\n");
    }
}

static cJSON *json_value(const gguf_value *v, uint64_t items)
{
    int64_t i;
    uint64_t u;
    double d;
    gguf_str s;
    switch (v->type) {
    case GGUF_VT_STRING: {
        gguf_value_str(v, &s);
        cJSON *r = app_json_text(s.ptr, (size_t)s.len);
        return r ? r : cJSON_CreateNull();
    }
    case GGUF_VT_BOOL: return cJSON_CreateBool(v->data[0] != 0);
    case GGUF_VT_FLOAT32:
    case GGUF_VT_FLOAT64: gguf_value_f64(v, &d); return cJSON_CreateNumber(d);
    case GGUF_VT_UINT64: gguf_value_u64(v, &u); return cJSON_CreateNumber((double)u);
    case GGUF_VT_ARRAY: {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", gguf_vtype_name(v->arr_type));
        cJSON_AddNumberToObject(o, "length", (double)v->arr_len);
        cJSON *a = cJSON_AddArrayToObject(o, "items");
        uint64_t n = v->arr_len < items ? v->arr_len : items;
        for (uint64_t k = 0; k < n; k++) {
            gguf_value e;
            if (gguf_arr_at(v, k, &e) != GGUF_OK)
                break;
            cJSON_AddItemToArray(a, json_value(&e, items));
        }
        return o;
    }
    default:
        gguf_value_i64(v, &i);
        return cJSON_CreateNumber((double)i);
    }
}

static int print_json(const gguf_file *f, uint64_t items, const info_mem *mem)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "file", app_json_text(gguf_path(f), strlen(gguf_path(f))));
    cJSON_AddNumberToObject(root, "file_size", (double)gguf_file_size(f));
    cJSON_AddNumberToObject(root, "shards", gguf_shard_count(f));
    cJSON_AddNumberToObject(root, "version", gguf_version(f));
    cJSON_AddStringToObject(root, "byte_order", gguf_big_endian(f) ? "big-endian" : "little-endian");
    cJSON_AddNumberToObject(root, "alignment", gguf_alignment(f));
    cJSON_AddNumberToObject(root, "tensor_count", (double)gguf_tensor_count(f));
    cJSON_AddNumberToObject(root, "kv_count", (double)gguf_kv_count(f));
    cJSON_AddNumberToObject(root, "data_offset", (double)gguf_data_offset(f));
    char arch[64];
    cJSON_AddBoolToObject(root, "engine_supported", engine_arch(f, arch, sizeof arch));
    /* The metadata object is written here, not by cJSON: its member names
     * are keys from the file, which cJSON would cut at a NUL and pass raw. */
    textesc_buf md = {0};
    int bad = textesc_buf_put(&md, "{", 1);
    for (uint64_t i = 0; i < gguf_kv_count(f) && !bad; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        cJSON *val = json_value(&kv->value, items);
        char *vt = val ? cJSON_PrintUnformatted(val) : NULL;
        cJSON_Delete(val);
        bad = !vt || textesc_buf_put(&md, i ? ",\"" : "\"", i ? 2 : 1) || textesc_json_append(&md, kv->key.ptr, (size_t)kv->key.len) ||
              textesc_buf_put(&md, "\":", 2) || textesc_buf_put(&md, vt, strlen(vt));
        free(vt);
    }
    bad = bad || textesc_buf_put(&md, "}", 1);
    if (bad || !cJSON_AddRawToObject(root, "metadata", md.ptr)) {
        textesc_buf_free(&md);
        cJSON_Delete(root);
        app_error("out of memory");
        return APP_FAIL;
    }
    textesc_buf_free(&md);
    cJSON *ts = cJSON_AddArrayToObject(root, "tensors");
    uint64_t params = 0, bytes = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "name", app_json_text(t->name.ptr, (size_t)t->name.len));
        cJSON_AddStringToObject(o, "type", t->type_known ? ggtype_name(t->type) : "unknown");
        cJSON_AddNumberToObject(o, "type_id", t->type);
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (uint32_t d = 0; d < t->n_dims; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->ne[d]));
        cJSON_AddNumberToObject(o, "elements", (double)t->n_elements);
        cJSON_AddNumberToObject(o, "offset", (double)t->abs_offset);
        cJSON_AddNumberToObject(o, "bytes", (double)t->n_bytes);
        if (gguf_shard_count(f) > 1)
            cJSON_AddNumberToObject(o, "shard", t->shard);
        cJSON_AddItemToArray(ts, o);
        params += t->n_elements;
        bytes += t->n_bytes;
    }
    cJSON *tot = cJSON_AddObjectToObject(root, "totals");
    cJSON_AddNumberToObject(tot, "parameters", (double)params);
    cJSON_AddNumberToObject(tot, "bytes", (double)bytes);
    cJSON_AddNumberToObject(tot, "bits_per_weight", params ? 8.0 * (double)bytes / (double)params : 0.0);
    gguf_name_parts np;
    if (gguf_parse_name(gguf_path(f), &np)) {
        cJSON *n = cJSON_AddObjectToObject(root, "name_parts");
        cJSON_AddStringToObject(n, "base_name", np.base_name);
        cJSON_AddStringToObject(n, "size_label", np.size_label);
        cJSON_AddStringToObject(n, "fine_tune", np.fine_tune);
        cJSON_AddStringToObject(n, "version", np.version);
        cJSON_AddStringToObject(n, "encoding", np.encoding);
        cJSON_AddStringToObject(n, "type", np.type);
        if (np.shard_total) {
            cJSON_AddNumberToObject(n, "shard", np.shard_num);
            cJSON_AddNumberToObject(n, "shard_total", np.shard_total);
        }
    } else {
        cJSON_AddNullToObject(root, "name_parts");
    }
    if (mem && info_mem_json(root, mem)) {
        cJSON_Delete(root);
        app_error("out of memory");
        return APP_FAIL;
    }
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!txt) {
        app_error("out of memory");
        return APP_FAIL;
    }
    puts(txt);
    free(txt);
    return APP_OK;
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'}, {"full", no_argument, 0, 'f'},
        {"items", required_argument, 0, 'n'}, {"help", no_argument, 0, 'h'},
        {"ctx", required_argument, 0, 'c'}, {"backend", required_argument, 0, 'B'},
        {"kv-type", required_argument, 0, 'K'}, {"used", required_argument, 0, 'U'},
        {"threads", required_argument, 0, 't'}, {0, 0, 0, 0}};
    info_mem_opts mo = {0};
    bool json = false;
    uint64_t items = DEFAULT_ITEMS;
    int c;
    optind = 0; /* glibc: a full reset (main parsed its own options) */
    while ((c = getopt_long(argc, argv, "jfn:hc:t:", opts, NULL)) != -1) {
        int mr = info_mem_opt(c, optarg, &mo);
        if (mr < 0)
            return APP_BADINPUT;
        if (mr > 0)
            continue;
        switch (c) {
        case 'j': json = true; break;
        case 'f': items = UINT64_MAX; break;
        case 'n': items = strtoull(optarg, NULL, 10); break;
        case 'h': info_usage(stdout); return APP_OK;
        default: info_usage(stderr); return APP_BADINPUT;
        }
    }
    if (cliopt_extra(argc, argv, optind, 1))
        return APP_BADINPUT;
    if (optind != argc - 1) {
        info_usage(stderr);
        return APP_BADINPUT;
    }
    if (mo.on)
        mo.program_rss = info_mem_self_rss(); /* before the file: the program alone */
    gguf_file *f = app_open_any(argv[optind]);
    if (!f)
        return APP_BADINPUT;
    info_mem mem;
    if (mo.on) {
        char err[1024];
        int mr = info_mem_estimate(f, &mo, &mem, err, sizeof err);
        if (mr) {
            app_error("%s", err);
            gguf_close(f);
            return mr;
        }
    }
    int rc = json ? print_json(f, items, mo.on ? &mem : NULL) : (print_text(f, items), APP_OK);
    if (!json && mo.on)
        info_mem_print(stdout, &mem);
    gguf_close(f);
    if (fflush(stdout) != 0)
        rc = APP_FAIL;
    return rc;
}
