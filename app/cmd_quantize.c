/* ggscope quantize: write a quantized copy of a GGUF file with the reference
 * quantizers, type per tensor chosen by the recipe (engine/analysis/qrecipe,
 * as llama.cpp's recipes do; see docs/qerr.md, "The quantize recipe"). */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cliopt.h"
#include "textesc.h"
#include "codec.h"
#include "ggtype.h"
#include "qrecipe.h"

typedef struct {
    const gguf_tensor *src;
    uint32_t type;
} plan_entry;

typedef struct {
    const gguf_file *f;
    plan_entry *plan;
    uint64_t n;
    int threads;
    uint64_t total_elems;
    atomic_uint_least64_t done_elems;
} job;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ggscope quantize IN OUT --type TYPE [--tensor-type REGEX=TYPE ...]\n"
            "                        [--threads N]\n"
            "\n"
            "Write OUT, a copy of IN with its weights quantized by the reference quantizers\n"
            "(written to a temporary file, then renamed). Metadata is kept; general.file_type\n"
            "and general.quantization_version (2) are set.\n"
            "\n"
            "  --type TYPE     f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q3_K_S q3_K_M\n"
            "                  q4_K q4_K_S q4_K_M q5_K q5_K_S q5_K_M q6_K iq4_nl iq4_xs tq1_0\n"
            "                  tq2_0 mxfp4 (case-insensitive)\n"
            "  --tensor-type REGEX=TYPE\n"
            "                  tensors whose name matches REGEX (POSIX extended) get\n"
            "                  TYPE (a ggml type); the first matching option wins\n"
            "  --threads N     threads (default: one per CPU)\n"
            "\n"
            "Recipe (as llama.cpp's): 1-D tensors, norms and non-.weight\n"
            "tensors stay F32; output.weight (token_embd.weight when there is no output)\n"
            "gets Q6_K (Q8_0 when its rows do not fit 256-blocks) unless the base type is\n"
            "q8_0 or a float; _M recipes give attn_v and ffn_down of some layers Q6_K\n"
            "(q4_K_M, q5_K_M), _S and q3_K_M as llama.cpp does. A type whose block does not\n"
            "divide a row falls back: q2_K q3_K iq4_xs tq* -> iq4_nl, q4_K -> q5_0,\n"
            "q5_K -> q5_1, q6_K -> q8_0, and f16 when that still does not fit.\n"
            "Then `ggscope qerr OUT --vs IN` shows what it cost.\n");
}

/* ---- filling one tensor, threads over row groups ---- */

typedef struct {
    job *j;
    const gguf_tensor *src;
    uint32_t type;
    uint8_t *dst;
    uint64_t group;     /* rows per unit: g * ne0 elements hold whole source blocks */
    uint64_t n_units;
    atomic_uint_least64_t next;
    atomic_int failed;
    int ith0_progress;
} fill_ctx;

static void *fill_worker(void *arg)
{
    void **a = arg;
    fill_ctx *c = a[0];
    bool first = a[1] != NULL;
    const gguf_tensor *t = c->src;
    const ggtype_traits *st = ggtype_get(t->type), *dt = ggtype_get(c->type);
    uint64_t ne0 = t->ne[0];
    uint64_t unit_elems = c->group * ne0;
    uint64_t per = unit_elems >= 65536 ? 1 : 65536 / unit_elems;
    float *buf = malloc((size_t)(per * unit_elems) * sizeof(float));
    if (!buf) {
        atomic_store(&c->failed, 1);
        return NULL;
    }
    uint64_t n_rows = t->n_elements / ne0;
    for (;;) {
        uint64_t u = atomic_fetch_add(&c->next, per);
        if (u >= c->n_units || atomic_load(&c->failed))
            break;
        uint64_t r0 = u * c->group, r1 = (u + per) * c->group;
        if (r1 > n_rows)
            r1 = n_rows;
        uint64_t e0 = r0 * ne0, n = (r1 - r0) * ne0;
        const uint8_t *sp = t->data + e0 / st->blck_size * st->type_size;
        if (codec_dequantize(t->type, sp, buf, n) != 0) {
            atomic_store(&c->failed, 1);
            break;
        }
        uint8_t *dp = c->dst + r0 * (ne0 / dt->blck_size * dt->type_size);
        if (c->type == GGTYPE_F32)
            memcpy(dp, buf, (size_t)n * sizeof(float));
        else if (codec_quantize(c->type, buf, dp, r1 - r0, ne0, NULL) == 0) {
            atomic_store(&c->failed, 1);
            break;
        }
        uint64_t d = atomic_fetch_add(&c->j->done_elems, n) + n;
        if (first)
            app_progress("quantize", (double)d, (double)c->j->total_elems);
    }
    free(buf);
    return NULL;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int fill(void *user, uint64_t i, void *dst, uint64_t size)
{
    job *j = user;
    const plan_entry *pe = &j->plan[i];
    const gguf_tensor *t = pe->src;
    if (pe->type == t->type) {   /* unchanged: copy the bytes */
        if (size != t->n_bytes)
            return -1;
        memcpy(dst, t->data, (size_t)size);
        atomic_fetch_add(&j->done_elems, t->n_elements);
        return 0;
    }
    const ggtype_traits *st = ggtype_get(t->type);
    fill_ctx c;
    memset(&c, 0, sizeof c);
    c.j = j;
    c.src = t;
    c.type = pe->type;
    c.dst = dst;
    c.group = st->blck_size / gcd64(st->blck_size, t->ne[0]);
    uint64_t n_rows = t->n_elements / t->ne[0];
    c.n_units = (n_rows + c.group - 1) / c.group;
    int nt = j->threads;
    pthread_t th[64];
    void *args[64][2];
    int started = 0;
    for (int k = 1; k < nt && k < 64; k++) {
        args[k][0] = &c;
        args[k][1] = NULL;
        if (pthread_create(&th[k], NULL, fill_worker, args[k]) != 0)
            break;
        started++;
    }
    args[0][0] = &c;
    args[0][1] = &c;
    fill_worker(args[0]);
    for (int k = 1; k <= started; k++)
        pthread_join(th[k], NULL);
    return atomic_load(&c.failed) ? -1 : 0;
}

/* A name from the file (len bytes), for a message: the terminal form of
 * base/textesc.h (backslashes left alone, as app_error does). */
static const char *shown(const char *s, uint64_t len, char *buf, size_t cap)
{
    textesc_term(buf, cap, s, (size_t)len, TEXTESC_RAW_BACKSLASH);
    return buf;
}

int cmd_quantize(int argc, char **argv)
{
    static const struct option lo[] = {
        {"type", required_argument, 0, 't'},    {"tensor-type", required_argument, 0, 'o'},
        {"threads", required_argument, 0, 'n'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    qrecipe *rc = qrecipe_new();
    int threads = 0, status = APP_OK;
    if (!rc) {
        app_error("out of memory");
        return APP_FAIL;
    }
    optind = 0; /* glibc: a full reset (main parsed its own options) */
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 't':
            if (qrecipe_set_mix(rc, optarg, NULL, 0) != QRECIPE_OK) {
                app_error("unknown --type '%s' (see ggscope quantize --help)", optarg);
                status = APP_BADINPUT;
                goto out;
            }
            break;
        case 'o': {
            qrecipe_status qs = qrecipe_add_override(rc, optarg, NULL, 0);
            if (qs == QRECIPE_ESPEC) {
                app_error("bad --tensor-type '%s' (REGEX=TYPE, TYPE with a quantizer)", optarg);
                status = APP_BADINPUT;
                goto out;
            } else if (qs == QRECIPE_EREGEX) {
                app_error("bad regular expression in --tensor-type '%s'", optarg);
                status = APP_BADINPUT;
                goto out;
            } else if (qs != QRECIPE_OK) {
                app_error("out of memory");
                status = APP_FAIL;
                goto out;
            }
            break;
        }
        case 'n': threads = atoi(optarg); break;
        case 'h': usage(stdout); goto out;
        default: usage(stderr); status = APP_BADINPUT; goto out;
        }
    }
    if (cliopt_extra(argc, argv, optind, 2)) {
        status = APP_BADINPUT;
        goto out;
    }
    if (optind != argc - 2 || !qrecipe_has_mix(rc)) {
        if (!qrecipe_has_mix(rc) && optind == argc - 2)
            app_error("--type is required");
        usage(stderr);
        status = APP_BADINPUT;
        goto out;
    }
    const char *in = argv[optind], *outp = argv[optind + 1];
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)(n > 64 ? 64 : n) : 1;
    }
    if (threads > 64)
        threads = 64;
    gguf_file *f = app_open_gguf(in);
    if (!f) {
        status = APP_BADINPUT;
        goto out;
    }
    uint64_t nt = gguf_tensor_count(f);
    afile a = {.fd = -1};
    job j;
    memset(&j, 0, sizeof j);
    j.f = f;
    j.n = nt;
    j.threads = threads;
    j.plan = calloc(nt ? (size_t)nt : 1, sizeof *j.plan);
    gguf_writer *w = gguf_writer_new(gguf_alignment(f));
    if (!j.plan || !w) {
        app_error("out of memory");
        status = APP_FAIL;
        goto done;
    }
    if (app_out_is_input(outp, f)) {
        status = APP_BADINPUT;
        goto done;
    }
    if (gguf_big_endian(f)) {
        /* its tensor bytes would be copied or decoded as little-endian */
        app_error("%s: a big-endian GGUF file: quantize reads little-endian files only", in);
        status = APP_BADINPUT;
        goto done;
    }
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (gguf_str_eq(kv->key, "general.file_type") ||
            gguf_str_eq(kv->key, "general.quantization_version"))
            continue;
        gguf_status ks = gguf_writer_copy_kv(w, kv);
        if (ks != GGUF_OK) {
            char esc[1100];
            app_error("%s: metadata key '%s' cannot be written: %s", in,
                      shown(kv->key.ptr, kv->key.len, esc, sizeof esc),
                      ks == GGUF_EARG ? "it holds a NUL byte, is empty or too long, or repeats another key"
                                      : gguf_strerror(ks));
            status = ks == GGUF_EARG ? APP_BADINPUT : APP_FAIL;
            goto done;
        }
    }
    gguf_writer_set_u32(w, "general.quantization_version", 2);
    gguf_writer_set_u32(w, "general.file_type", qrecipe_file_type(rc));
    qrecipe_fit(rc, f);
    uint64_t in_bytes = 0, out_bytes = 0;
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char nm[256], esc[1100];
        gguf_str_copy(t->name, nm, sizeof nm);
        if (t->name.len >= sizeof nm || memchr(t->name.ptr, 0, (size_t)t->name.len)) {
            app_error("%s: tensor '%s' cannot be written: its name holds a NUL byte or is too long", in,
                      shown(t->name.ptr, t->name.len, esc, sizeof esc));
            status = APP_BADINPUT;
            goto done;
        }
        if (!t->type_known || !ggtype_get(t->type)) {
            app_error("%s: tensor '%s' has type id %" PRIu32 ", which ggscope does not know: it can be "
                      "neither quantized nor copied", in, shown(nm, strlen(nm), esc, sizeof esc), t->type);
            status = APP_BADINPUT;
            goto done;
        }
        uint32_t ty = qrecipe_type(rc, t, nm);
        const ggtype_traits *st = ggtype_get(t->type);
        if (ty != t->type && (!st || !(st->is_float || st->is_quantized) || t->ne[0] == 0 ||
                              (st->blck_size > 1 && t->rows_unaligned && t->ne[0] % ggtype_get(ty)->blck_size))) {
            app_error("%s: cannot convert %s to %s", shown(nm, strlen(nm), esc, sizeof esc), ggtype_name(t->type), ggtype_name(ty));
            status = APP_BADINPUT;
            goto done;
        }
        j.plan[i].src = t;
        j.plan[i].type = ty;
        j.total_elems += t->n_elements;
        in_bytes += t->n_bytes;
        uint64_t nb = ggtype_row_size(ty, t->ne[0], NULL) * (t->n_elements / (t->ne[0] ? t->ne[0] : 1));
        if (ty == t->type)
            nb = t->n_bytes;
        out_bytes += nb;
        gguf_status as = gguf_writer_add_tensor(w, nm, ty, t->n_dims, t->ne, NULL);
        if (as != GGUF_OK) {
            app_error("%s: tensor '%s' (%s) cannot be written: %s", in, shown(nm, strlen(nm), esc, sizeof esc), ggtype_name(ty),
                      as == GGUF_EARG ? "its name or shape does not fit a GGUF file" : gguf_strerror(as));
            status = as == GGUF_EARG ? APP_BADINPUT : APP_FAIL;
            goto done;
        }
    }
    status = app_out_open(&a, outp, "the quantized model");
    if (status != APP_OK)
        goto done;
    gguf_status gs = gguf_writer_write_to(w, &a, fill, &j);
    app_progress_end();
    if (gs == GGUF_EIO) {
        app_out_error(&a);
        status = APP_FAIL;
        goto done;
    } else if (gs != GGUF_OK) {
        app_error("%s: quantizing failed (%s)", outp,
                  gs == GGUF_EARG ? "a tensor's values could not be converted" : gguf_strerror(gs));
        status = APP_FAIL;
        goto done;
    }
    status = app_out_commit(&a);
    if (status != APP_OK)
        goto done;
    /* a summary of the types chosen */
    uint64_t count[GGTYPE_COUNT] = {0};
    for (uint64_t i = 0; i < nt; i++)
        if (j.plan[i].type < GGTYPE_COUNT)
            count[j.plan[i].type]++;
    fprintf(stderr, "%s: %s -> %s, %.1f MiB -> %.1f MiB;", outp, in, qrecipe_mix_name(rc),
            (double)in_bytes / 1048576.0, (double)out_bytes / 1048576.0);
    for (uint32_t t = 0; t < GGTYPE_COUNT; t++)
        if (count[t])
            fprintf(stderr, " %s:%llu", ggtype_name(t), (unsigned long long)count[t]);
    fprintf(stderr, "\n");
done:
    app_out_close(&a);
    gguf_writer_free(w);
    free(j.plan);
    gguf_close(f);
out:
    qrecipe_free(rc);
    return status;
}
