/* ggscope dump FILE TENSOR --f32 | --raw | --requant TYPE --raw [--rows A:B] [-o OUT]
 *                         | --values | --hex | --stats | --hist [--bins N] [--json]:
 * a tensor's values for scripts and checks; the text views are what the
 * explorer's detail pane shows (app/dump_views.c).
 *
 * The option table and `dump_opts` are meant to grow (views such as --hex or
 * --stats): each output mode is one `dump_mode` and one writer function. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "cliopt.h"
#include "codec.h"
#include "dump_views.h"
#include "ggtype.h"
#include "gguf.h"
#include "textesc.h"
#include "tstats.h"

typedef enum {
    DUMP_NONE = 0,
    DUMP_F32,          /* --f32: raw little-endian float32 */
    DUMP_REQUANT_RAW,  /* --requant TYPE --raw: raw blocks of TYPE */
    DUMP_RAW,          /* --raw alone: the tensor's bytes as stored */
    DUMP_VIEW,         /* --values, --hex, --stats, --hist: text or --json */
} dump_mode;

typedef struct {
    const char *file, *tensor;
    dump_mode mode;
    const char *requant;      /* --requant TYPE */
    int requant_type;
    bool raw;                 /* --raw */
    bool has_rows;            /* --rows A:B given */
    uint64_t row_begin, row_end;  /* [begin, end); end UINT64_MAX = last row */
    const char *out_path;     /* -o; NULL = stdout */
    int view;                 /* DUMP_VIEW_* when mode == DUMP_VIEW */
    bool json;                /* --json */
    uint32_t bins;            /* --bins */
} dump_opts;

/* A tensor seen as rows of ne[0] elements (higher dimensions flattened). */
typedef struct {
    const gguf_tensor *t;
    uint64_t row_len, n_rows, row_bytes;
    uint32_t swap;            /* big-endian file: element size to byte-swap (0 = none) */
    uint8_t *swapped;         /* scratch for the swapped bytes of one chunk */
    const gguf_file *f;
    uint8_t *fetched;         /* a remote file: one chunk's bytes */
} dump_tensor;

enum { CHUNK_ELEMS = 1 << 20 };  /* values per dequantize/write step */

static void dump_usage(FILE *out)
{
    fprintf(out,
            "usage: ggscope dump FILE TENSOR --f32 [--rows A:B] [-o OUT]\n"
            "       ggscope dump FILE TENSOR --requant TYPE --raw [--rows A:B] [-o OUT]\n"
            "       ggscope dump FILE TENSOR --raw [--rows A:B] [-o OUT]\n"
            "       ggscope dump FILE TENSOR --values|--hex|--stats|--hist [--bins N]\n"
            "            [--json] [--rows A:B] [-o OUT]\n"
            "\n"
            "Write one tensor's values, for scripts and checks. A row is the elements of the\n"
            "first dimension (higher dimensions are flattened: row r of a [n0, n1, n2]\n"
            "tensor is at r*n0).\n"
             "FILE may be an http:// or https:// URL: only the rows asked for are fetched.\n"
            "\n"
            "  --f32           the tensor dequantized, as raw little-endian float32\n"
            "  --requant TYPE  the tensor's values quantized to TYPE with ggml's reference\n"
            "                  algorithm (q4_0, q8_0, q4_K, ...); with --raw: the raw blocks\n"
            "  --raw           raw binary output: with --requant the new blocks, alone the\n"
            "                  tensor's bytes as stored in the file\n"
            "  --rows A:B      rows A (inclusive) to B (exclusive); 'A:' to the end, ':B'\n"
            "                  from the start, 'A' the single row A\n"
            "  --values        the dequantized values as text, one line per row\n"
            "  --hex           the bytes block by block, each block's fields decoded\n"
            "  --stats         count, min, max, mean, std, absmax, zeros, NaN, Inf\n"
            "                  (the explorer's histogram view shows the same figures)\n"
            "  --hist          --stats and a histogram over [min, max]\n"
            "  --bins N        histogram bins, 1..4096 (default 32)\n"
            "  --json          --values/--hex/--stats/--hist as one JSON document\n"
            "                  (--values and --hex default to rows 0:8, --stats and\n"
            "                  --hist to all)\n"
            "  -o, --output F  write to file F instead of standard output\n"
            "  -h, --help      this help\n"
            "\n"
            "Binary output is never written to a terminal: redirect it or use -o.\n"
            "Big-endian files: plain types (f32, f16, i32, ...) are byte-swapped to\n"
            "little-endian; quantized tensors can only be dumped --raw.\n"
            "Dequantization uses the fastest SIMD path; GGSCOPE_SIMD=scalar|avx2|avx512\n"
            "forces one.\n");
}

/* Parse "A:B", "A:", ":B" or "A". Returns false on a malformed range. */
static bool parse_rows(const char *s, uint64_t *begin, uint64_t *end)
{
    const char *colon = strchr(s, ':');
    char *e;
    *begin = 0;
    *end = UINT64_MAX;
    if (colon != s) {
        if (*s < '0' || *s > '9')
            return false;
        errno = 0;
        *begin = strtoull(s, &e, 10);
        if (errno || e != (colon ? colon : s + strlen(s)))
            return false;
    }
    if (!colon) {
        if (*begin == UINT64_MAX)
            return false;
        *end = *begin + 1;
        return true;
    }
    if (colon[1]) {
        if (colon[1] < '0' || colon[1] > '9')
            return false;
        errno = 0;
        *end = strtoull(colon + 1, &e, 10);
        if (errno || *e)
            return false;
    }
    return true;
}

/* Returns APP_OK, or the exit status after printing the error. */
static int parse_args(int argc, char **argv, dump_opts *o)
{
    static const struct option opts[] = {
        {"f32", no_argument, 0, 'F'},          {"requant", required_argument, 0, 'Q'},
        {"raw", no_argument, 0, 'R'},          {"rows", required_argument, 0, 'r'},
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
        {"values", no_argument, 0, 'V'},       {"hex", no_argument, 0, 'X'},
        {"stats", no_argument, 0, 'S'},        {"hist", no_argument, 0, 'H'},
        {"json", no_argument, 0, 'J'},         {"bins", required_argument, 0, 'B'},
        {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->bins = 32;
    int views = 0;
    int c;
    optind = 0; /* glibc: a full reset (main parsed its own options) */
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'F': o->mode = DUMP_F32; break;
        case 'Q': o->requant = optarg; break;
        case 'R': o->raw = true; break;
        case 'r':
            if (!parse_rows(optarg, &o->row_begin, &o->row_end)) {
                app_error("bad --rows '%s' (expected A:B, A:, :B or A)", optarg);
                return APP_BADINPUT;
            }
            o->has_rows = true;
            break;
        case 'o': o->out_path = optarg; break;
        case 'V': o->view = DUMP_VIEW_VALUES, views++; break;
        case 'X': o->view = DUMP_VIEW_HEX, views++; break;
        case 'S': o->view = DUMP_VIEW_STATS, views++; break;
        case 'H': o->view = DUMP_VIEW_HIST, views++; break;
        case 'J': o->json = true; break;
        case 'B': {
            char *e;
            unsigned long b = strtoul(optarg, &e, 10);
            if (*e || b < 1 || b > TSTATS_MAX_BINS) {
                app_error("--bins takes 1..%d", TSTATS_MAX_BINS);
                return APP_BADINPUT;
            }
            o->bins = (uint32_t)b;
            break;
        }
        case 'h': dump_usage(stdout); return -1;
        default: dump_usage(stderr); return APP_BADINPUT;
        }
    }
    if (cliopt_extra(argc, argv, optind, 2))
        return APP_BADINPUT;
    if (argc - optind != 2) {
        app_error("dump needs FILE and TENSOR (see ggscope dump --help)");
        return APP_BADINPUT;
    }
    o->file = argv[optind];
    o->tensor = argv[optind + 1];
    if (views) {
        if (views > 1 || o->mode != DUMP_NONE || o->requant || o->raw) {
            app_error("give one of --values, --hex, --stats, --hist (they exclude --f32, --raw, --requant)");
            return APP_BADINPUT;
        }
        o->mode = DUMP_VIEW;
        return APP_OK;
    }
    if (o->json) {
        app_error("--json goes with --values, --hex, --stats or --hist");
        return APP_BADINPUT;
    }
    if (o->requant) {
        if (o->mode == DUMP_F32) {
            app_error("--f32 and --requant exclude each other");
            return APP_BADINPUT;
        }
        o->requant_type = ggtype_from_name(o->requant);
        if (o->requant_type < 0 || !codec_can_quantize((uint32_t)o->requant_type)) {
            app_error("%s type '%s'; types with a quantizer:", o->requant_type < 0 ? "unknown" : "no quantizer for",
                      o->requant);
            fputs("  ", stderr);
            for (uint32_t t = 0; t < GGTYPE_COUNT; t++)
                if (ggtype_get(t) && codec_can_quantize(t))
                    fprintf(stderr, " %s", ggtype_name(t));
            fputc('\n', stderr);
            return APP_BADINPUT;
        }
        if (!o->raw) {
            app_error("--requant needs an output format: --raw");
            return APP_BADINPUT;
        }
        o->mode = DUMP_REQUANT_RAW;
    } else if (o->raw) {
        if (o->mode == DUMP_F32) {
            app_error("--f32 and --raw exclude each other (--raw alone: the stored bytes)");
            return APP_BADINPUT;
        }
        o->mode = DUMP_RAW;
    }
    if (o->mode == DUMP_NONE) {
        app_error("nothing to dump: give --values, --hex, --stats, --hist, --f32 or --requant TYPE --raw "
                  "(see ggscope dump --help)");
        return APP_BADINPUT;
    }
    return APP_OK;
}

/* Edit distance of a and b (both cut to 127 bytes). */
static unsigned edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    unsigned row[128];
    la = la > 127 ? 127 : la;
    lb = lb > 127 ? 127 : lb;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* "no tensor NAME" and the closest names (substring matches first). */
static void report_unknown_tensor(const gguf_file *f, const char *name)
{
    enum { SHOW = 6 };
    uint64_t best[SHOW];
    unsigned score[SHOW];
    int n = 0;
    const uint64_t count = gguf_tensor_count(f);
    const size_t lname = strlen(name);
    for (uint64_t i = 0; i < count; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char buf[256];
        gguf_str_copy(t->name, buf, sizeof buf);
        unsigned s = edit_distance(name, lname, buf, strlen(buf));
        if (lname && strstr(buf, name))
            s = s / 4; /* a substring hit ranks near the top */
        int pos = n < SHOW ? n++ : SHOW;
        if (pos == SHOW && s >= score[SHOW - 1])
            continue;
        if (pos == SHOW)
            pos = SHOW - 1;
        while (pos > 0 && score[pos - 1] > s) {
            best[pos] = best[pos - 1];
            score[pos] = score[pos - 1];
            pos--;
        }
        best[pos] = i;
        score[pos] = s;
    }
    /* one line; names from the file (and the one asked for) escaped */
    char qn[1024];
    fprintf(stderr, "ggscope: no tensor '%s' in ", app_text(qn, sizeof qn, name, lname));
    app_put_text(stderr, gguf_path(f), strlen(gguf_path(f)), 0);
    fprintf(stderr, " (%" PRIu64 " tensors)%s", count, n ? "; nearest names:" : "");
    for (int i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, best[i]);
        fputs(i ? ", '" : " '", stderr);
        app_put_text(stderr, t->name.ptr, (size_t)t->name.len, TEXTESC_SQUOTE);
        fputc('\'', stderr);
    }
    fputc('\n', stderr);
}

static const char *out_name = "standard output";   /* for write errors */

static int write_all(FILE *out, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, out) != n) {
        app_error("cannot write %s: %s", out_name, strerror(errno));
        return APP_FAIL;
    }
    return APP_OK;
}

/* The bytes of rows [r, r + nr): in the mapping, or read from a remote file
 * into dt->fetched (message printed on failure: NULL). */
static const uint8_t *rows_at(dump_tensor *dt, uint64_t r, uint64_t nr)
{
    if (dt->t->data)
        return dt->t->data + r * dt->row_bytes;
    gguf_error err;
    if (gguf_tensor_read(dt->f, dt->t, r * dt->row_bytes, nr * dt->row_bytes, dt->fetched, NULL, &err) != GGUF_OK) {
        char line[1024];
        app_error("%s", gguf_error_format(&err, line, sizeof line));
        return NULL;
    }
    return dt->fetched;
}

/* Dequantize rows [r0, r1) in chunks of whole rows and hand each chunk to
 * `sink` (values, rows, row count). */
typedef int (*dump_sink)(const dump_opts *o, const dump_tensor *dt, const float *vals, uint64_t nrows,
                         FILE *out, void *scratch);

static int for_each_chunk(const dump_opts *o, dump_tensor *dt, uint64_t r0, uint64_t r1, dump_sink sink,
                          FILE *out, void *scratch, float *vals, uint64_t rows_per_chunk)
{
    for (uint64_t r = r0; r < r1; r += rows_per_chunk) {
        const uint64_t nr = r1 - r < rows_per_chunk ? r1 - r : rows_per_chunk;
        const uint8_t *src = rows_at(dt, r, nr);
        if (!src)
            return APP_BADINPUT;
        if (dt->swap) {
            const uint64_t nbytes = nr * dt->row_bytes;
            for (uint64_t i = 0; i < nbytes; i += dt->swap)
                for (uint32_t k = 0; k < dt->swap; k++)
                    dt->swapped[i + k] = src[i + dt->swap - 1 - k];
            src = dt->swapped;
        }
        if (codec_dequantize(dt->t->type, src, vals, nr * dt->row_len) != 0) {
            app_error("cannot dequantize tensor type %s", ggtype_name(dt->t->type));
            return APP_BADINPUT;
        }
        int rc = sink(o, dt, vals, nr, out, scratch);
        if (rc != APP_OK)
            return rc;
    }
    return APP_OK;
}

static int sink_f32(const dump_opts *o, const dump_tensor *dt, const float *vals, uint64_t nrows, FILE *out,
                    void *scratch)
{
    (void)o;
    (void)scratch;
    return write_all(out, vals, nrows * dt->row_len * sizeof(float));
}

static int sink_requant(const dump_opts *o, const dump_tensor *dt, const float *vals, uint64_t nrows, FILE *out,
                        void *scratch)
{
    size_t n = codec_quantize((uint32_t)o->requant_type, vals, scratch, nrows, dt->row_len, NULL);
    if (n == 0) {
        app_error("quantizing to %s failed", ggtype_name((uint32_t)o->requant_type));
        return APP_FAIL;
    }
    return write_all(out, scratch, n);
}

int cmd_dump(int argc, char **argv)
{
    dump_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != APP_OK)
        return rc < 0 ? APP_OK : rc;

    gguf_file *f = app_open_any(o.file);
    if (!f)
        return APP_BADINPUT;
    FILE *out = NULL;
    afile af = {.fd = -1};
    float *vals = NULL;
    void *scratch = NULL;
    dump_tensor dt = {0};
    char tname[1024]; /* the name asked for, escaped for messages */
    app_text(tname, sizeof tname, o.tensor, strlen(o.tensor));
    dt.t = gguf_find_tensor(f, o.tensor);
    if (!dt.t) {
        report_unknown_tensor(f, o.tensor);
        rc = APP_BADINPUT;
        goto done;
    }
    if (!dt.t->type_known || !ggtype_get(dt.t->type)) {
        app_error("tensor '%s' has type id %" PRIu32 ", which ggscope does not know", tname, dt.t->type);
        rc = APP_BADINPUT;
        goto done;
    }
    if (gguf_big_endian(f) && o.mode != DUMP_RAW) {
        const ggtype_traits *tr = ggtype_get(dt.t->type);
        if (tr->is_quantized) {
            app_error("tensor '%s' is %s in a big-endian file: only plain types (f32, f16, i32, ...) can be "
                      "decoded from big-endian files (--raw gives the stored bytes)",
                      tname, tr->name);
            rc = APP_BADINPUT;
            goto done;
        }
        dt.swap = tr->type_size > 1 ? tr->type_size : 0;
    }
    dt.row_len = dt.t->ne[0];
    dt.n_rows = dt.row_len ? dt.t->n_elements / dt.row_len : 0;
    dt.row_bytes = ggtype_row_size(dt.t->type, dt.row_len, NULL);
    uint64_t r0 = 0, r1 = dt.n_rows;
    if (o.has_rows) {
        r0 = o.row_begin;
        r1 = o.row_end == UINT64_MAX ? dt.n_rows : o.row_end;
        if (r0 > r1) {
            app_error("--rows %" PRIu64 ":%" PRIu64 " is reversed (A:B reads rows A up to B, A <= B)", r0, r1);
            rc = APP_BADINPUT;
            goto done;
        }
        if (r1 > dt.n_rows) {
            app_error("--rows %" PRIu64 ":%" PRIu64 " is outside tensor '%s' (rows 0:%" PRIu64 ")", r0, r1, tname,
                      dt.n_rows);
            rc = APP_BADINPUT;
            goto done;
        }
    }
    if (o.mode == DUMP_REQUANT_RAW) {
        const ggtype_traits *to = ggtype_get((uint32_t)o.requant_type);
        if (dt.row_len % to->blck_size != 0) {
            app_error("tensor '%s' has rows of %" PRIu64 " values, not a multiple of %s's block of %" PRIu32, tname,
                      dt.row_len, to->name, to->blck_size);
            rc = APP_BADINPUT;
            goto done;
        }
    }

    if (o.mode == DUMP_VIEW && r0 == r1) {
        app_error("tensor '%s' has no rows", tname);
        rc = APP_BADINPUT;
        goto done;
    }
    if (o.mode == DUMP_VIEW && !o.has_rows && (o.view == DUMP_VIEW_HEX || o.view == DUMP_VIEW_VALUES) && r1 > 8)
        r1 = 8;
    if (o.out_path) {
        if (app_out_is_input(o.out_path, f)) {
            rc = APP_BADINPUT;
            goto done;
        }
        out_name = o.out_path;
        struct stat st;
        bool special = stat(o.out_path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
        if (!special && (rc = app_out_open(&af, o.out_path, NULL)) != APP_OK)
            goto done;
        int fd = special ? open(o.out_path, O_WRONLY | O_CLOEXEC) : dup(af.fd);   /* a device or pipe: as is */
        out = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (!out) {
            app_error("cannot write %s: %s", o.out_path, strerror(errno));
            if (fd >= 0)
                close(fd);
            rc = APP_FAIL;
            goto done;
        }
    } else {
        if (o.mode != DUMP_VIEW && isatty(STDOUT_FILENO)) {
            app_error("refusing to write binary data to a terminal: redirect it or use -o FILE");
            rc = APP_BADINPUT;
            goto done;
        }
        out = stdout;
    }

    if (o.mode == DUMP_VIEW) {
        dump_view_opts vo = {.view = o.view, .row_first = r0, .row_count = r1 - r0, .json = o.json, .bins = o.bins};
        rc = dump_view(f, dt.t, &vo, out);
        goto flush;
    }
    /* whole rows per chunk, at least one row */
    uint64_t rows_per_chunk = dt.row_len ? CHUNK_ELEMS / dt.row_len : 1;
    if (rows_per_chunk == 0)
        rows_per_chunk = 1;
    if (r1 - r0 < rows_per_chunk)
        rows_per_chunk = r1 - r0 ? r1 - r0 : 1;
    if (o.mode != DUMP_RAW)
        vals = malloc(rows_per_chunk * dt.row_len * sizeof(float) + 1);
    if (o.mode == DUMP_REQUANT_RAW)
        scratch = malloc(rows_per_chunk * ggtype_row_size((uint32_t)o.requant_type, dt.row_len, NULL) + 1);
    if (dt.swap)
        dt.swapped = malloc(rows_per_chunk * dt.row_bytes + 1);
    dt.f = f;
    if (!dt.t->data)
        dt.fetched = malloc(rows_per_chunk * dt.row_bytes + 1);
    if ((o.mode != DUMP_RAW && !vals) || (dt.swap && !dt.swapped) || (o.mode == DUMP_REQUANT_RAW && !scratch) ||
        (!dt.t->data && !dt.fetched)) {
        app_error("out of memory (rows of %" PRIu64 " values)", dt.row_len);
        rc = APP_FAIL;
        goto done;
    }
    if (o.mode == DUMP_RAW) {
        if (dt.t->data) {
            rc = write_all(out, dt.t->data + r0 * dt.row_bytes, (r1 - r0) * dt.row_bytes);
            goto flush;
        }
        for (uint64_t r = r0; r < r1 && rc == APP_OK; r += rows_per_chunk) {   /* remote: chunk by chunk */
            uint64_t nr = r1 - r < rows_per_chunk ? r1 - r : rows_per_chunk;
            const uint8_t *src = rows_at(&dt, r, nr);
            rc = src ? write_all(out, src, nr * dt.row_bytes) : APP_BADINPUT;
        }
        goto flush;
    }
    rc = for_each_chunk(&o, &dt, r0, r1, o.mode == DUMP_F32 ? sink_f32 : sink_requant, out, scratch, vals,
                        rows_per_chunk);
flush:
    if (fflush(out) != 0 && rc == APP_OK) {
        app_error("cannot write %s: %s", out_name, strerror(errno));
        rc = APP_FAIL;
    }

done:
    if (out && out != stdout && fclose(out) != 0 && rc == APP_OK) {
        app_error("cannot write %s: %s", out_name, strerror(errno));
        rc = APP_FAIL;
    }
    if (rc == APP_OK && af.tmp)
        rc = app_out_commit(&af);
    app_out_close(&af);
    free(vals);
    free(scratch);
    free(dt.swapped);
    free(dt.fetched);
    gguf_close(f);
    return rc;
}
