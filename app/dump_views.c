/* dump_views: hex (with block boundaries and anatomy), values, stats and
 * histogram of a tensor, as text or JSON. */
#include "dump_views.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "codec.h"
#include "ggtype.h"
#include "tstats.h"

static int print_json(cJSON *j, FILE *out)
{
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    if (!s) {
        app_error("out of memory");
        return APP_FAIL;
    }
    fprintf(out, "%s\n", s);
    free(s);
    return APP_OK;
}

static void add_tensor_info(cJSON *j, const gguf_tensor *t, const dump_view_opts *o)
{
    cJSON_AddItemToObject(j, "tensor", app_json_text(t->name.ptr, (size_t)t->name.len));
    cJSON_AddStringToObject(j, "type", ggtype_name(t->type));
    cJSON *sh = cJSON_AddArrayToObject(j, "shape");
    for (uint32_t d = 0; d < t->n_dims; d++)
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->ne[d]));
    cJSON_AddNumberToObject(j, "row_first", (double)o->row_first);
    cJSON_AddNumberToObject(j, "row_count", (double)o->row_count);
}

/* The bytes the views read: p holds the tensor's data from byte `off` on
 * (the mapping: all of it; a remote file: the rows fetched). */
typedef struct {
    const uint8_t *p;
    uint64_t off;
} view_bytes;

static int dump_hex(const gguf_tensor *t, const dump_view_opts *o, view_bytes at, FILE *out)
{
    const ggtype_traits *tr = ggtype_get(t->type);
    uint64_t row_bytes = ggtype_row_size(t->type, t->ne[0], NULL);
    uint64_t b0 = o->row_first * row_bytes, b1 = b0 + o->row_count * row_bytes;
    uint64_t bsz = tr->type_size;
    codec_field fields[512];
    cJSON *root = o->json ? cJSON_CreateObject() : NULL, *blocks = NULL;
    if (root) {
        add_tensor_info(root, t, o);
        cJSON_AddNumberToObject(root, "block_bytes", (double)bsz);
        cJSON_AddNumberToObject(root, "block_elements", tr->blck_size);
        blocks = cJSON_AddArrayToObject(root, "blocks");
    } else {
        char name[512];
        fprintf(out, "%s  %s  block %" PRIu64 " bytes / %u elements  bytes %" PRIu64 "..%" PRIu64
                     " (file offsets 0x%" PRIx64 "..0x%" PRIx64 ")\n",
                app_text(name, sizeof name, t->name.ptr, (size_t)t->name.len), ggtype_name(t->type), bsz, tr->blck_size, b0, b1,
                t->abs_offset + b0, t->abs_offset + b1);
    }
    if (!root && bsz < 16) {
        /* small blocks (plain element types): lines of 16 bytes, '|' between elements */
        for (uint64_t i = b0; i < b1; i += 16) {
            fprintf(out, "0x%08" PRIx64 " ", t->abs_offset + i);
            for (uint64_t k = i; k < i + 16 && k < b1; k++)
                fprintf(out, "%c%02x", k % bsz == 0 ? '|' : ' ', at.p[k - at.off]);
            fputc('\n', out);
        }
        return APP_OK;
    }
    for (uint64_t blk = b0 / bsz; blk * bsz < b1; blk++) {
        const uint8_t *p = at.p + (blk * bsz - at.off);
        int nf = codec_block_anatomy(t->type, p, fields, 512);
        if (nf > 512)
            nf = 512;
        if (root) {
            cJSON *b = cJSON_CreateObject();
            cJSON_AddNumberToObject(b, "block", (double)blk);
            cJSON_AddNumberToObject(b, "offset", (double)(t->abs_offset + blk * bsz));
            char *hex = malloc(2 * bsz + 1);
            for (uint64_t i = 0; hex && i < bsz; i++)
                snprintf(hex + 2 * i, 3, "%02x", p[i]);
            if (hex)
                cJSON_AddStringToObject(b, "hex", hex);
            free(hex);
            if (nf >= 0) {
                cJSON *fa = cJSON_AddArrayToObject(b, "fields");
                for (int i = 0; i < nf; i++) {
                    cJSON *f = cJSON_CreateObject();
                    cJSON_AddStringToObject(f, "name", fields[i].name);
                    cJSON_AddNumberToObject(f, "byte_offset", fields[i].byte_offset);
                    cJSON_AddNumberToObject(f, "byte_len", fields[i].byte_len);
                    cJSON_AddNumberToObject(f, "bit_offset", fields[i].bit_offset);
                    cJSON_AddNumberToObject(f, "bit_len", fields[i].bit_len);
                    cJSON_AddNumberToObject(f, "raw", (double)fields[i].raw);
                    cJSON_AddNumberToObject(f, "value", fields[i].value);
                    cJSON_AddStringToObject(f, "text", fields[i].text);
                    cJSON_AddItemToArray(fa, f);
                }
            }
            cJSON_AddItemToArray(blocks, b);
            continue;
        }
        fprintf(out, "block %" PRIu64 " (elements %" PRIu64 "..%" PRIu64 ")\n", blk, blk * tr->blck_size,
                (blk + 1) * tr->blck_size - 1);
        for (uint64_t i = 0; i < bsz; i += 16) {
            fprintf(out, "  0x%08" PRIx64 " ", t->abs_offset + blk * bsz + i);
            for (uint64_t k = i; k < i + 16 && k < bsz; k++)
                fprintf(out, " %02x", p[k]);
            fputc('\n', out);
        }
        for (int i = 0; i < nf; i++)
            fprintf(out, "    %-12s @%-3u %3u B%s  raw 0x%" PRIx64 "  %s\n", fields[i].name, fields[i].byte_offset,
                    fields[i].byte_len, fields[i].bit_len ? " (bits)" : "", fields[i].raw, fields[i].text);
    }
    return root ? print_json(root, out) : APP_OK;
}

static int dump_values(const gguf_tensor *t, const dump_view_opts *o, view_bytes at, FILE *out)
{
    uint64_t ne0 = t->ne[0];
    uint64_t row_bytes = ggtype_row_size(t->type, ne0, NULL);
    float *buf = malloc((size_t)ne0 * sizeof *buf);
    if (!buf) {
        app_error("out of memory");
        return APP_FAIL;
    }
    cJSON *root = o->json ? cJSON_CreateObject() : NULL, *rows = NULL;
    if (root) {
        add_tensor_info(root, t, o);
        rows = cJSON_AddArrayToObject(root, "rows");
    }
    for (uint64_t r = o->row_first; r < o->row_first + o->row_count; r++) {
        if (codec_dequantize(t->type, at.p + (r * row_bytes - at.off), buf, ne0) != 0) {
            free(buf);
            cJSON_Delete(root);
            app_error("cannot dequantize type %s", ggtype_name(t->type));
            return APP_FAIL;
        }
        if (root) {
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "row", (double)r);
            cJSON *v = cJSON_AddArrayToObject(row, "values");
            for (uint64_t c = 0; c < ne0; c++)
                cJSON_AddItemToArray(v, isfinite(buf[c]) ? cJSON_CreateNumber(buf[c])
                                                         : cJSON_CreateString(isnan(buf[c]) ? "nan" : buf[c] > 0 ? "inf" : "-inf"));
            cJSON_AddItemToArray(rows, row);
        } else {
            fprintf(out, "row %" PRIu64 ":", r);
            for (uint64_t c = 0; c < ne0; c++)
                fprintf(out, " %.9g", (double)buf[c]);
            fputc('\n', out);
        }
    }
    free(buf);
    return root ? print_json(root, out) : APP_OK;
}

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    (void)user;
    app_progress("stats", (double)done, (double)total);
}

static int dump_stats_hist(const gguf_tensor *t, const dump_view_opts *o, view_bytes at, FILE *out)
{
    tstats_result *r = malloc(sizeof *r);
    if (!r) {
        app_error("out of memory");
        return APP_FAIL;
    }
    tstats_opts so = {.n_bins = o->view == DUMP_VIEW_HIST ? o->bins : 64, .row_first = o->row_first,
                      .row_count = o->row_count, .progress = on_progress};
    tstats_status st;
    if (at.p == t->data) {
        st = tstats_compute(t, &so, r);
    } else {   /* rows fetched from a remote file, from row base */
        uint64_t ne0 = t->ne[0], base = at.off / ggtype_row_size(t->type, ne0, NULL);
        so.row_first -= base;
        st = tstats_compute_raw(t->type, at.p, ne0, o->row_first + o->row_count - base, &so, r);
    }
    app_progress_end();
    if (st != TSTATS_OK) {
        free(r);
        app_error("stats: %s", tstats_strerror(st));
        return APP_FAIL;
    }
    if (o->json) {
        cJSON *root = cJSON_CreateObject();
        add_tensor_info(root, t, o);
        cJSON_AddNumberToObject(root, "count", (double)r->count);
        cJSON_AddNumberToObject(root, "finite", (double)r->n_finite);
        cJSON_AddNumberToObject(root, "min", r->min);
        cJSON_AddNumberToObject(root, "max", r->max);
        cJSON_AddNumberToObject(root, "mean", r->mean);
        cJSON_AddNumberToObject(root, "std", r->std);
        cJSON_AddNumberToObject(root, "absmax", r->absmax);
        cJSON_AddNumberToObject(root, "zeros", (double)r->zeros);
        cJSON_AddNumberToObject(root, "nan", (double)r->nan);
        cJSON_AddNumberToObject(root, "inf", (double)r->inf);
        if (o->view == DUMP_VIEW_HIST) {
            cJSON *bins = cJSON_AddArrayToObject(root, "bins");
            for (uint32_t i = 0; i < r->n_bins; i++) {
                cJSON *b = cJSON_CreateObject();
                cJSON_AddNumberToObject(b, "lo", tstats_bin_edge(r, i));
                cJSON_AddNumberToObject(b, "hi", tstats_bin_edge(r, i + 1));
                cJSON_AddNumberToObject(b, "count", (double)r->bins[i]);
                cJSON_AddItemToArray(bins, b);
            }
        }
        free(r);
        return print_json(root, out);
    }
    char name[512];
    fprintf(out, "%s  %s  rows %" PRIu64 ":%" PRIu64 "\n", app_text(name, sizeof name, t->name.ptr, (size_t)t->name.len),
            ggtype_name(t->type), o->row_first, o->row_first + o->row_count);
    fprintf(out, "count   %" PRIu64 "\nmin     %.9g\nmax     %.9g\nmean    %.9g\nstd     %.9g\nabsmax  %.9g\n"
                 "zeros   %" PRIu64 "\nnan     %" PRIu64 "\ninf     %" PRIu64 "\n",
            r->count, r->min, r->max, r->mean, r->std, r->absmax, r->zeros, r->nan, r->inf);
    if (o->view == DUMP_VIEW_HIST) {
        uint64_t mx = 0;
        for (uint32_t i = 0; i < r->n_bins; i++)
            if (r->bins[i] > mx)
                mx = r->bins[i];
        for (uint32_t i = 0; i < r->n_bins; i++) {
            int w = mx ? (int)((double)r->bins[i] / (double)mx * 40 + 0.5) : 0;
            fprintf(out, "[%12.6g, %12.6g%c %10" PRIu64 " ", tstats_bin_edge(r, i), tstats_bin_edge(r, i + 1),
                    i + 1 == r->n_bins ? ']' : ')', r->bins[i]);
            for (int k = 0; k < w; k++)
                fputs("█", out);
            fputc('\n', out);
        }
    }
    free(r);
    return APP_OK;
}

static int show(const gguf_tensor *t, const dump_view_opts *o, view_bytes at, FILE *out)
{
    switch (o->view) {
    case DUMP_VIEW_HEX: return dump_hex(t, o, at, out);
    case DUMP_VIEW_VALUES: return dump_values(t, o, at, out);
    default: return dump_stats_hist(t, o, at, out);
    }
}

int dump_view(const gguf_file *f, const gguf_tensor *t, const dump_view_opts *o, FILE *out)
{
    const ggtype_traits *tr = ggtype_get(t->type);
    if (!t->type_known || !tr || (!t->data && !gguf_is_remote(f))) {
        app_error("tensor type %u is unknown: nothing to show", t->type);
        return APP_BADINPUT;
    }
    if (t->data)
        return show(t, o, (view_bytes){t->data, 0}, out);
    /* remote: the blocks of the rows shown (all of a tensor whose rows do not
     * end on block boundaries) */
    uint64_t bsz = tr->type_size, row_bytes = ggtype_row_size(t->type, t->ne[0], NULL);
    uint64_t a0 = o->row_first * row_bytes / bsz * bsz;
    uint64_t a1 = (o->row_first + o->row_count) * row_bytes;
    a1 = (a1 + bsz - 1) / bsz * bsz;
    if (a1 > t->n_bytes)
        a1 = t->n_bytes;
    if (t->rows_unaligned)
        a0 = 0, a1 = t->n_bytes;
    uint64_t bytes = a1 - a0;
    uint8_t *buf = malloc(bytes + 1);
    if (!buf) {
        app_error("out of memory");
        return APP_FAIL;
    }
    gguf_error err;
    if (gguf_tensor_read(f, t, a0, bytes, buf, NULL, &err) != GGUF_OK) {
        char line[1024];
        app_error("%s", gguf_error_format(&err, line, sizeof line));
        free(buf);
        return APP_BADINPUT;
    }
    int rc = show(t, o, (view_bytes){buf, a0}, out);
    free(buf);
    return rc;
}
