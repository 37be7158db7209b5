/* engine_cli: shared plumbing of the engine commands. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "engine_cli.h"
#include "tokenizer.h"

bool ecli_parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        app_error("%s: expected a whole number in %ld..%ld, got '%s'", opt, lo, hi, s ? s : "");
        return false;
    }
    *out = v;
    return true;
}

bool ecli_parse_float(const char *opt, const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno || !isfinite(v)) {
        app_error("%s: expected a number, got '%s'", opt, s ? s : "");
        return false;
    }
    *out = (float)v;
    return true;
}

int ecli_common_opt(int id, const char *name, const char *val, ecli_opts *o)
{
    long v;
    switch (id) {
    case ECLI_OPT_BACKEND:
        if (!val) {
            app_error("--backend needs a value (auto, vulkan, cpu)");
            return -1;
        }
        if (strcmp(val, "cpu") && strcmp(val, "auto") && strcmp(val, "vulkan")) {
            app_error("--backend: unknown backend '%s' (auto, vulkan, cpu)", val);
            return -1;
        }
        o->backend = val;
        return 1;
    case ECLI_OPT_WEIGHTS:
        if (!val || (strcmp(val, "auto") && strcmp(val, "copy") && strcmp(val, "map"))) {
            app_error("--weights: expected auto, copy or map, got '%s'", val ? val : "");
            return -1;
        }
        o->weights = !strcmp(val, "copy") ? RUNNER_WEIGHTS_COPY : !strcmp(val, "map") ? RUNNER_WEIGHTS_MAP
                                                                                   : RUNNER_WEIGHTS_AUTO;
        return 1;
    case ECLI_OPT_DEVICE:
        if (!ecli_parse_long(name, val, 0, 1000, &v))
            return -1;
        o->has_device = true;
        o->device = (int)v;
        return 1;
    case 't':
        if (!ecli_parse_long(name, val, 1, 1024, &v))
            return -1;
        o->threads = (int)v;
        return 1;
    case 'c':
        if (!ecli_parse_long(name, val, 1, 1 << 20, &v))
            return -1;
        o->n_ctx = (uint32_t)v;
        return 1;
    default:
        return 0;
    }
}

int ecli_sampling_opt(int id, const char *name, const char *val, sampler_params *sp)
{
    long lv;
    float fv;
    switch (id) {
    case ECLI_OPT_TEMP:
    case ECLI_OPT_TOP_P:
    case ECLI_OPT_MIN_P:
    case ECLI_OPT_REPEAT_PENALTY:
        if (!ecli_parse_float(name, val, &fv))
            return -1;
        if (id == ECLI_OPT_TEMP) {
            if (!(fv >= 0)) {
                app_error("--temp: expected a number >= 0, got '%s'", val);
                return -1;
            }
            sp->temp = fv;
        } else if (id == ECLI_OPT_REPEAT_PENALTY) {
            if (!(fv > 0)) {
                app_error("--repeat-penalty: expected a number > 0, got '%s'", val);
                return -1;
            }
            sp->repeat_penalty = fv;
        } else {
            if (!(fv >= 0 && fv <= 1)) {
                app_error("%s: expected a number in 0..1, got '%s'", name, val);
                return -1;
            }
            *(id == ECLI_OPT_TOP_P ? &sp->top_p : &sp->min_p) = fv;
        }
        return 1;
    case ECLI_OPT_TOP_K:
        if (!ecli_parse_long(name, val, 0, 1 << 24, &lv))
            return -1;
        sp->top_k = (int32_t)lv;
        return 1;
    case ECLI_OPT_REPEAT_LAST_N:
        if (!ecli_parse_long(name, val, 0, 1 << 20, &lv))
            return -1;
        sp->repeat_last_n = (int32_t)lv;
        return 1;
    case ECLI_OPT_SEED: {
        char *end;
        errno = 0;
        unsigned long long v = val && *val && val[0] != '-' ? strtoull(val, &end, 10) : 0;
        if (!val || !*val || val[0] == '-' || *end || errno) {
            app_error("--seed: expected a whole number >= 0, got '%s'", val ? val : "");
            return -1;
        }
        sp->seed = v;
        return 1;
    }
    default:
        return 0;
    }
}

int ecli_next_opt(cliopt *p, ecli_opts *o, sampler_params *sp)
{
    for (;;) {
        int c = cliopt_next(p);
        int r = ecli_common_opt(c, p->name, p->arg, o);
        if (!r && sp)
            r = ecli_sampling_opt(c, p->name, p->arg, sp);
        if (r < 0)
            return ECLI_OPT_ERROR;
        if (!r)
            return c;
    }
}

/* Open FILE and bind the model: APP_OK, or the exit status with the
 * message in msg (msg NULL: printed) and e closed. */
static int open_model(const char *path, gguf_file *shared, ecli_engine *e, char *msg, size_t cap)
{
    memset(e, 0, sizeof *e);
    if (shared) {
        e->f = gguf_retain(shared);
    } else if (!msg) {
        e->f = app_open_gguf(path);
    } else {
        gguf_error err;
        e->f = gguf_open(path, &err);
        if (!e->f) {
            char buf[1024];
            gguf_error_format(&err, buf, sizeof buf);
            const char *t = strncmp(buf, "ggscope: ", 9) ? buf : buf + 9;
            app_text(msg, cap, t, strlen(t));
        }
    }
    if (!e->f)
        return APP_BADINPUT;
    char why[512];
    model_status st;
    e->m = model_load(e->f, &st, why, sizeof why);
    if (!e->m) {
        if (msg)
            snprintf(msg, cap, "%s: %s", path, why);
        else
            app_error("%s: %s", path, why);
        ecli_close(e);
        return st == MODEL_ENOMEM ? APP_FAIL : APP_BADINPUT;
    }
    return APP_OK;
}

int ecli_open_model(const char *path, ecli_engine *e)
{
    return open_model(path, NULL, e, NULL, 0);
}

uint32_t ecli_ctx_size(const ecli_engine *e, uint32_t n_ctx)
{
    /* session_new's rule (engine/session.c) */
    uint32_t train = e->m->hp.n_ctx_train;
    return n_ctx ? n_ctx : train < 4096 ? train : 4096;
}

static void on_upload(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    app_progress("loading weights", (double)done, (double)total);
}

static void on_notice(void *ctx, const char *text)
{
    (void)ctx;
    fprintf(stderr, "\nggscope: %s\n", text);
}

/* The runner of e->m: APP_OK, or APP_FAIL with the message in msg (msg
 * NULL: printed, with the upload's progress bar, the backend line and the
 * fallback notice on stderr). */
static int open_runner(const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e, char *msg,
                       size_t cap)
{
    runner_params rp = {
        .backend = o->backend,
        .device = o->has_device ? o->device : -1,
        .threads = o->threads,
        .n_ctx = n_ctx,
        .weights = o->weights,
        .progress = msg ? o->progress : on_upload,
        .cancel = o->cancel,
        .notice = msg ? NULL : on_notice,
        .ctx = msg ? o->progress_ctx : NULL,
    };
    char why[640];
    int rc = runner_open(e->m, &rp, &e->r, why, sizeof why);
    if (!msg)
        app_progress_end();
    if (rc == RUNNER_OK) {
        if (!msg)
            fprintf(stderr, "backend: %s\n", runner_backend_info(e->r));
        return APP_OK;
    }
    if (rc == RUNNER_ESESSION) {
        if (msg)
            snprintf(msg, cap, "%s: %s", path, why);
        else
            app_error("%s: %s", path, why);
    } else if (msg) {
        snprintf(msg, cap, "%s", why);
    } else {
        app_error("%s", why);
    }
    return APP_FAIL;
}

int ecli_open_backend(const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e)
{
    return open_runner(path, o, n_ctx, e, NULL, 0);
}

int ecli_open(const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e)
{
    int rc = ecli_open_model(path, e);
    if (rc == APP_OK && (rc = ecli_open_backend(path, o, n_ctx, e)) != APP_OK)
        ecli_close(e);
    return rc;
}

int ecli_open_msg(const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e, char *msg, size_t cap)
{
    return ecli_open_file(NULL, path, o, n_ctx, e, msg, cap);
}

int ecli_open_file(gguf_file *f, const char *path, const ecli_opts *o, uint32_t n_ctx, ecli_engine *e, char *msg,
                   size_t cap)
{
    int rc = open_model(path, f, e, msg, cap);
    if (rc == APP_OK && (rc = open_runner(path, o, n_ctx, e, msg, cap)) != APP_OK)
        ecli_close(e);
    return rc;
}

void ecli_close(ecli_engine *e)
{
    runner_close(e->r);   /* session, device copies of the weights, backend */
    model_free(e->m);
    gguf_close(e->f);
    memset(e, 0, sizeof *e);
}

bool ecli_parse_ids(const char *s, int32_t **ids, uint32_t *n)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 16, cnt = 0;
    int32_t *v = malloc(sizeof *v * cap);
    if (!v)
        return false;
    const char *p = s;
    while (*p) {
        if (*p == ',') {
            p++;
            continue;
        }
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > INT32_MAX || (*end && *end != ',')) {
            app_error("bad token id list '%s' (expected comma-separated ids like 1,2,3)", s);
            free(v);
            return false;
        }
        if (cnt == cap) {
            int32_t *nv = realloc(v, sizeof *v * cap * 2);
            if (!nv) {
                free(v);
                return false;
            }
            v = nv;
            cap *= 2;
        }
        v[cnt++] = (int32_t)x;
        p = end;
    }
    if (!cnt) {
        app_error("empty token id list");
        free(v);
        return false;
    }
    *ids = v;
    *n = (uint32_t)cnt;
    return true;
}

void ecli_print_js_number(FILE *out, double v)
{
    if (isnan(v) || isinf(v)) {
        fputs("null", out); /* JSON.stringify of NaN / Infinity */
        return;
    }
    if (v == 0) {
        fputs("0", out);
        return;
    }
    char buf[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* buf = [-]d.ddde[+-]XX: split into digits and exponent */
    bool neg = buf[0] == '-';
    const char *q = buf + neg;
    char digits[32];
    int nd = 0;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9')
            digits[nd++] = *q;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    int e10 = atoi(q + 1);
    int np = e10 + 1; /* position of the decimal point */
    if (neg)
        fputc('-', out);
    if (nd <= np && np <= 21) {
        fputs(digits, out);
        for (int i = nd; i < np; i++)
            fputc('0', out);
    } else if (0 < np && np <= 21) {
        fprintf(out, "%.*s.%s", np, digits, digits + np);
    } else if (-6 < np && np <= 0) {
        fputs("0.", out);
        for (int i = 0; i < -np; i++)
            fputc('0', out);
        fputs(digits, out);
    } else {
        fputc(digits[0], out);
        if (nd > 1)
            fprintf(out, ".%s", digits + 1);
        fprintf(out, "e%c%d", np - 1 < 0 ? '-' : '+', abs(np - 1));
    }
}

/* ---- text: the model's tokenizer (tokenizer.h) ---- */

struct ecli_text {
    tok_vocab *v;
    tok_stream *st;
    char err[300];
};

ecli_text *ecli_text_new(const gguf_file *f)
{
    ecli_text *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    tok_error err;
    t->v = tok_open(f, &err);
    if (!t->v)
        snprintf(t->err, sizeof t->err, "%s", err.msg);
    else
        t->st = tok_stream_new(t->v, 0);
    return t;
}

void ecli_text_free(ecli_text *t)
{
    if (!t)
        return;
    tok_stream_free(t->st);
    tok_close(t->v);
    free(t);
}

bool ecli_tokenize(ecli_text *t, const char *text, int32_t **ids, uint32_t *n)
{
    *ids = NULL;
    *n = 0;
    if (!t || !t->v) {
        app_error("this model has no usable tokenizer (%s): use --tokens IDS", t ? t->err : "");
        return false;
    }
    tok_id *out = NULL;
    size_t cnt = 0;
    if (tok_tokenize(t->v, text, strlen(text), TOK_ADD_SPECIAL, &out, &cnt) != TOK_OK) {
        app_error("tokenizing the prompt failed (out of memory)");
        return false;
    }
    if (!cnt || cnt > UINT32_MAX) {
        free(out);
        app_error("the prompt is empty");
        return false;
    }
    *ids = out;
    *n = (uint32_t)cnt;
    return true;
}

void ecli_print_piece(ecli_text *t, int32_t id, FILE *out)
{
    if (!t || !t->st) {
        fprintf(out, "[%d]", id);
        return;
    }
    size_t len;
    const char *s = tok_stream_push(t->st, id, &len);
    if (s && len)
        fwrite(s, 1, len, out);
}

void ecli_flush_text(ecli_text *t, FILE *out)
{
    if (!t || !t->st)
        return;
    size_t len;
    const char *s = tok_stream_flush(t->st, &len);
    if (s && len)
        fwrite(s, 1, len, out);
}

bool ecli_is_eog(ecli_text *t, int32_t id)
{
    return t && t->v && tok_is_eog(t->v, id);
}

const tok_vocab *ecli_vocab(const ecli_text *t)
{
    return t ? t->v : NULL;
}
