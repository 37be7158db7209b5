/* qerr: metrics against a direct double-precision computation; a file
 * against itself (zero error, SQNR +inf, never NaN, in the API, the table and
 * the JSON); --vs between an F16 and a Q4_0 file written from the same F32
 * data against a direct dequantize-and-subtract; re-quantization against
 * llama.cpp's own Q8_0 file of stories260K; quantize -> qerr round trips. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "codec.h"
#include "ggtype.h"
#include "gguf.h"
#include "qerr.h"
#include "testutil.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static float nrand(void)
{
    double u = urand() + 1e-12, v = urand();
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

typedef struct {
    double rmse, rel, maxa, sqnr, cosine, p95, median;
} direct_m;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void direct(const float *ref, const float *meas, size_t n, direct_m *d)
{
    double se = 0, sr = 0, sm = 0, sd = 0, mx = 0;
    double *ab = malloc(n * sizeof *ab);
    for (size_t i = 0; i < n; i++) {
        double e = (double)meas[i] - (double)ref[i];
        se += e * e;
        sr += (double)ref[i] * ref[i];
        sm += (double)meas[i] * meas[i];
        sd += (double)ref[i] * meas[i];
        mx = fmax(mx, fabs(e));
        ab[i] = fabs(e);
    }
    qsort(ab, n, sizeof *ab, cmp_d);
    d->rmse = sqrt(se / (double)n);
    d->rel = sqrt(se / sr);
    d->maxa = mx;
    d->sqnr = 10 * log10(sr / se);
    d->cosine = sd / sqrt(sr * sm);
    d->p95 = ab[(size_t)ceil(0.95 * (double)n) - 1];
    d->median = ab[(size_t)ceil(0.5 * (double)n) - 1];
    free(ab);
}

static void near_rel(double got, double want, double tol)
{
    double scale = fabs(want) > 0 ? fabs(want) : 1;
    if (fabs(got - want) > tol * scale) {
        print_error("got %.17g want %.17g (rel %.3g)\n", got, want, fabs(got - want) / scale);
        fail();
    }
}

/* Metrics of qerr_acc_add / qerr_metrics_of vs the direct computation, on
 * sizes that exercise the vector body and the scalar tail. */
static void test_metrics_direct(void **state)
{
    (void)state;
    size_t sizes[] = {1, 7, 8, 9, 1000, 4099, 65536 + 3};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        for (size_t i = 0; i < n; i++) {
            a[i] = nrand() * 0.02f + 0.001f;
            b[i] = a[i] + nrand() * 0.001f * (i % 5 == 0 ? 4.0f : 1.0f);
        }
        qerr_acc acc = {0};
        uint64_t *h = calloc(QERR_HIST_BINS, sizeof *h);
        /* in two pieces, merged, as threads do */
        size_t h1 = n / 3;
        qerr_acc a2 = {0};
        qerr_acc_add(&acc, h, a, b, h1);
        qerr_acc_add(&a2, h, a + h1, b + h1, n - h1);
        qerr_acc_merge(&acc, &a2);
        qerr_metrics m;
        qerr_metrics_of(&acc, h, &m);
        direct_m d;
        direct(a, b, n, &d);
        assert_int_equal(acc.n, n);
        near_rel(m.rmse, d.rmse, 1e-6);
        near_rel(m.rel_rmse, d.rel, 1e-6);
        near_rel(m.max_abs, d.maxa, 1e-6);
        near_rel(m.sqnr_db, d.sqnr, 1e-6);
        near_rel(m.cosine, d.cosine, 1e-6);
        assert_false(m.sqnr_inf);
        assert_true(m.has_percentiles);
        /* percentiles: the documented bound, 2^-9 relative (+ float rounding of e) */
        near_rel(m.p95_abs, d.p95, 1.0 / 512 + 1e-6);
        near_rel(m.median_abs, d.median, 1.0 / 512 + 1e-6);
        free(h);
        free(a);
        free(b);
    }
}

static void test_metrics_special(void **state)
{
    (void)state;
    float a[5] = {1, -2, 3, 0, 0.5f}, z[5] = {0};
    qerr_acc acc = {0};
    uint64_t *h = calloc(QERR_HIST_BINS, sizeof *h);
    qerr_acc_add(&acc, h, a, a, 5);
    qerr_metrics m;
    qerr_metrics_of(&acc, h, &m);
    assert_true(m.sqnr_inf);
    assert_true(isinf(m.sqnr_db) && m.sqnr_db > 0);
    assert_true(m.rmse == 0 && m.rel_rmse == 0 && m.max_abs == 0);
    assert_true(m.p95_abs == 0 && m.median_abs == 0);
    assert_true(m.cosine == 1.0);
    /* all-zero reference, non-zero error: -inf, rel +inf, never NaN */
    qerr_acc b = {0};
    qerr_acc_add(&b, NULL, z, a, 5);
    qerr_metrics_of(&b, NULL, &m);
    assert_false(m.sqnr_inf);
    assert_true(isinf(m.sqnr_db) && m.sqnr_db < 0);
    assert_true(isinf(m.rel_rmse));
    assert_true(m.cosine == 0.0);
    assert_true(isnan(m.p95_abs) && !m.has_percentiles);
    /* NaN / Inf elements are skipped and counted */
    float c[4] = {1, NAN, 2, INFINITY}, d[4] = {1.5f, 1, 2, 2};
    qerr_acc e = {0};
    qerr_acc_add(&e, h, c, d, 4);
    assert_int_equal(e.n, 2);
    assert_int_equal(e.n_nonfinite, 2);
    near_rel(e.sum_err2, 0.25, 1e-15);
    free(h);
    char role[64];
    assert_int_equal(qerr_name_role("blk.12.attn_q.weight", role, sizeof role), 12);
    assert_string_equal(role, "attn_q");
    assert_int_equal(qerr_name_role("output.weight", role, sizeof role), -1);
    assert_string_equal(role, "output");
}

/* ---- files made with the writer ---- */

#define NT 5
static const char *NAMES[NT] = {"token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_down.weight",
                                "blk.1.attn_q.weight", "output.weight"};
static const uint64_t SHAPES[NT][2] = {{256, 40}, {256, 256}, {512, 64}, {256, 256}, {256, 40}};

static float *make_data(int t)
{
    uint64_t n = SHAPES[t][0] * SHAPES[t][1];
    float *v = malloc(n * sizeof *v);
    for (uint64_t i = 0; i < n; i++)
        v[i] = nrand() * 0.05f * (float)(t + 1) + (i % 97 == 0 ? 0.4f : 0.0f);
    return v;
}

/* Write the NT tensors at `type` (from the same F32 data, seeded) to `path`,
 * plus a norm vector; `extra` adds one tensor only this file has. */
static void write_model(const char *path, uint32_t type, bool extra, bool other_shape)
{
    rng = 0x1234567ULL;
    gguf_writer *w = gguf_writer_new(32);
    assert_non_null(w);
    assert_int_equal(gguf_writer_set_str(w, "general.architecture", "llama"), GGUF_OK);
    assert_int_equal(gguf_writer_set_u32(w, "llama.block_count", 2), GGUF_OK);
    for (int t = 0; t < NT; t++) {
        float *v = make_data(t);
        uint64_t ne[2] = {SHAPES[t][0], SHAPES[t][1]};
        if (other_shape && t == 3)
            ne[1] = 128;
        uint64_t n = ne[0] * ne[1];
        size_t bytes = (size_t)ggtype_row_size(type, ne[0], NULL) * ne[1];
        void *q = malloc(bytes);
        if (type == GGTYPE_F32)
            memcpy(q, v, bytes);
        else
            assert_int_equal(codec_quantize(type, v, q, ne[1], ne[0], NULL), bytes);
        (void)n;
        assert_int_equal(gguf_writer_add_tensor(w, NAMES[t], type, 2, ne, q), GGUF_OK);
        free(q);
        free(v);
    }
    float norm[256];
    for (int i = 0; i < 256; i++)
        norm[i] = 1.0f + 0.01f * (float)i;
    uint64_t ne1 = 256;
    assert_int_equal(gguf_writer_add_tensor(w, "blk.0.attn_norm.weight", GGTYPE_F32, 1, &ne1, norm),
                     GGUF_OK);
    if (extra)
        assert_int_equal(gguf_writer_add_tensor(w, "extra.weight", GGTYPE_F32, 1, &ne1, norm), GGUF_OK);
    assert_int_equal(gguf_writer_write(w, path, NULL, NULL), GGUF_OK);
    gguf_writer_free(w);
}

/* Direct RMSE of two tensors: dequantize both whole, subtract, in double. */
static double direct_rmse(const gguf_tensor *a, const gguf_tensor *b)
{
    uint64_t n = a->n_elements;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    assert_int_equal(codec_dequantize_scalar(a->type, a->data, x, n), 0);
    assert_int_equal(codec_dequantize_scalar(b->type, b->data, y, n), 0);
    double se = 0;
    for (uint64_t i = 0; i < n; i++) {
        double e = (double)x[i] - (double)y[i];
        se += e * e;
    }
    free(x);
    free(y);
    return sqrt(se / (double)n);
}

static char *run_out(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - 1 - n, p)) > 0) {
        n += k;
        if (n + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[n] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

static const cJSON *find_row(const cJSON *arr, const char *name, const char *type)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name) &&
            (!type || (cJSON_IsString(t) && !strcmp(t->valuestring, type))))
            return o;
    }
    return NULL;
}

static void test_self_compare(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s", tu_tmp_path("self.gguf"));
    write_model(path, GGTYPE_Q4_0, false, false);
    gguf_file *f = gguf_open(path, NULL);
    assert_non_null(f);
    qerr_opts o = {0};
    o.n_threads = 2;
    qerr_status st;
    char err[256];
    qerr_report *r = qerr_compare(f, f, &o, &st, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(st, QERR_OK);
    assert_int_equal(qerr_report_count(r), NT + 1);
    assert_int_equal(qerr_report_issue_count(r), 0);
    for (size_t i = 0; i < qerr_report_count(r); i++) {
        const qerr_result *x = qerr_report_at(r, i);
        assert_true(x->m.rmse == 0 && x->m.max_abs == 0 && x->m.rel_rmse == 0);
        assert_true(x->m.sqnr_inf && isinf(x->m.sqnr_db) && x->m.sqnr_db > 0);
        assert_false(isnan(x->m.cosine));
        assert_true(x->m.cosine == 1.0);
    }
    const qerr_aggregate *a;
    assert_int_equal(qerr_report_totals(r, &a), 1);
    assert_true(a[0].m.sqnr_inf);
    assert_int_equal(a[0].elements, 256 * 40 * 2 + 256 * 256 * 2 + 512 * 64 + 256);
    qerr_report_free(r);
    gguf_close(f);

    const char *bin = tu_bin();
    if (!bin) {
        print_message("SKIP (CLI part): GGSCOPE_BIN is not set\n");
        return;
    }
    char cmd[2048];
    int rc;
    snprintf(cmd, sizeof cmd, "'%s' qerr '%s' --vs '%s' --json", bin, path, path);
    char *out = run_out(cmd, &rc);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "nan"));
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(j), NT + 1);
    const cJSON *o2;
    cJSON_ArrayForEach(o2, j)
    {
        assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o2, "sqnr_db")));
        assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o2, "sqnr_inf")));
        assert_true(cJSON_GetObjectItemCaseSensitive(o2, "rmse")->valuedouble == 0);
        assert_true(cJSON_GetObjectItemCaseSensitive(o2, "cosine")->valuedouble == 1);
        const char *keys[] = {"name", "type", "ref_type", "elements", "rmse", "rel_rmse", "max_abs",
                              "p95_abs", "median_abs", "sqnr_db", "cosine", "bpw", "requantized"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            assert_non_null(cJSON_GetObjectItemCaseSensitive(o2, keys[k]));
    }
    cJSON_Delete(j);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' qerr '%s' --vs '%s'", bin, path, path);
    out = run_out(cmd, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, " inf "));
    assert_null(strstr(out, "nan"));
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' qerr '%s' --vs '%s' --csv", bin, path, path);
    out = run_out(cmd, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, ",inf,"));
    free(out);
    remove(path);
}

/* --vs between an F16 and a Q4_0 file made from the same F32 data: every
 * tensor's RMSE as a direct dequantize-and-subtract computes it. */
static void test_vs_f16_q4_0(void **state)
{
    (void)state;
    char p16[512], p4[512];
    snprintf(p16, sizeof p16, "%s", tu_tmp_path("f16.gguf"));
    snprintf(p4, sizeof p4, "%s", tu_tmp_path("q4_0.gguf"));
    write_model(p16, GGTYPE_F16, false, false);
    write_model(p4, GGTYPE_Q4_0, true, true);
    gguf_file *a = gguf_open(p4, NULL), *b = gguf_open(p16, NULL);
    assert_non_null(a);
    assert_non_null(b);
    for (int threads = 1; threads <= 3; threads += 2) {
        qerr_opts o = {0};
        o.n_threads = threads;
        qerr_status st;
        char err[256];
        qerr_report *r = qerr_compare(a, b, &o, &st, err, sizeof err);
        assert_non_null(r);
        /* blk.1.attn_q has another shape; extra.weight only in the Q4_0 file */
        assert_int_equal(qerr_report_count(r), NT - 1 + 1);
        int shape = 0, only = 0;
        for (size_t i = 0; i < qerr_report_issue_count(r); i++) {
            const qerr_issue *is = qerr_report_issue_at(r, i);
            shape += is->kind == QERR_ISSUE_SHAPE && !strcmp(is->name, "blk.1.attn_q.weight");
            only += is->kind == QERR_ISSUE_ONLY_MEASURED && !strcmp(is->name, "extra.weight");
        }
        assert_int_equal(shape, 1);
        assert_int_equal(only, 1);
        int checked = 0;
        for (size_t i = 0; i < qerr_report_count(r); i++) {
            const qerr_result *x = qerr_report_at(r, i);
            const gguf_tensor *ta = gguf_find_tensor(a, x->name), *tb = gguf_find_tensor(b, x->name);
            double d = direct_rmse(ta, tb);
            near_rel(x->m.rmse, d, 1e-6);
            if (ta->type == GGTYPE_Q4_0) {
                assert_int_equal(x->type, GGTYPE_Q4_0);
                assert_int_equal(x->ref_type, GGTYPE_F16);
                near_rel(x->bpw, 4.5, 1e-12);
                near_rel(x->ref_bpw, 16, 1e-12);
                assert_true(d > 0);
                checked++;
            }
        }
        assert_int_equal(checked, NT - 1);
        qerr_report_free(r);
    }
    /* the same through the CLI's JSON */
    const char *bin = tu_bin();
    if (bin) {
        char cmd[2048];
        int rc;
        snprintf(cmd, sizeof cmd, "'%s' qerr '%s' --vs '%s' --json --threads 2", bin, p4, p16);
        char *out = run_out(cmd, &rc);
        assert_int_equal(rc, 0);
        cJSON *j = cJSON_Parse(out);
        assert_non_null(j);
        for (int t = 0; t < NT; t++) {
            if (t == 3)
                continue;
            const cJSON *row = find_row(j, NAMES[t], "q4_0");
            assert_non_null(row);
            double d = direct_rmse(gguf_find_tensor(a, NAMES[t]), gguf_find_tensor(b, NAMES[t]));
            near_rel(cJSON_GetObjectItemCaseSensitive(row, "rmse")->valuedouble, d, 1e-6);
            assert_string_equal(cJSON_GetObjectItemCaseSensitive(row, "ref_type")->valuestring, "f16");
        }
        cJSON_Delete(j);
        free(out);
    }
    gguf_close(a);
    gguf_close(b);
    remove(p16);
    remove(p4);
}

/* Re-quantization: each tensor measured against a direct quantize,
 * dequantize and subtract; multi-type; filter; cancel. */
static void test_requant(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s", tu_tmp_path("rq.gguf"));
    write_model(p, GGTYPE_F16, false, false);
    gguf_file *f = gguf_open(p, NULL);
    assert_non_null(f);
    uint32_t types[2] = {GGTYPE_Q4_K, GGTYPE_Q8_0};
    qerr_opts o = {0};
    o.types = types;
    o.n_types = 2;
    o.n_threads = 2;
    o.filter = "^blk\\.";
    qerr_status st;
    char err[256];
    qerr_report *r = qerr_requant(f, &o, &st, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(st, QERR_OK);
    assert_int_equal(qerr_report_count(r), 3 * 2);   /* 3 blk.* matrices x 2 types */
    assert_int_equal(qerr_report_issue_count(r), 1); /* the 1-D norm */
    for (size_t i = 0; i < qerr_report_count(r); i++) {
        const qerr_result *x = qerr_report_at(r, i);
        const gguf_tensor *t = gguf_find_tensor(f, x->name);
        uint64_t n = t->n_elements;
        float *v = malloc(n * 4), *w = malloc(n * 4);
        void *q = malloc(n * 4);
        codec_dequantize(t->type, t->data, v, n);
        codec_quantize(x->type, v, q, n / t->ne[0], t->ne[0], NULL);
        codec_dequantize(x->type, q, w, n);
        direct_m d;
        direct(v, w, n, &d);
        near_rel(x->m.rmse, d.rmse, 1e-6);
        near_rel(x->m.rel_rmse, d.rel, 1e-6);
        near_rel(x->m.sqnr_db, d.sqnr, 1e-6);
        near_rel(x->m.cosine, d.cosine, 1e-6);
        near_rel(x->m.max_abs, d.maxa, 1e-6);
        near_rel(x->m.p95_abs, d.p95, 1.0 / 512 + 1e-6);
        assert_false(x->requantized);
        assert_int_equal(x->ref_type, GGTYPE_F16);
        free(v);
        free(w);
        free(q);
    }
    const qerr_aggregate *a;
    size_t nl = qerr_report_layers(r, &a);
    assert_int_equal(nl, 4);   /* blk.0, blk.1 x 2 types */
    assert_string_equal(a[0].key, "blk.0");
    assert_int_equal(a[0].tensors, 2);
    assert_int_equal(a[0].elements, 256 * 256 + 512 * 64);
    {
        /* blk.0 at its type: every error of its two tensors together */
        uint64_t n0 = a[0].elements, off = 0;
        float *ra = malloc(n0 * 4), *ma = malloc(n0 * 4);
        const char *nm[2] = {"blk.0.attn_q.weight", "blk.0.ffn_down.weight"};
        for (int k = 0; k < 2; k++) {
            const gguf_tensor *t = gguf_find_tensor(f, nm[k]);
            void *qb = malloc(t->n_elements * 4);
            codec_dequantize(t->type, t->data, ra + off, t->n_elements);
            codec_quantize(a[0].type, ra + off, qb, t->n_elements / t->ne[0], t->ne[0], NULL);
            codec_dequantize(a[0].type, qb, ma + off, t->n_elements);
            off += t->n_elements;
            free(qb);
        }
        direct_m d;
        direct(ra, ma, n0, &d);
        assert_true(a[0].m.has_percentiles);
        near_rel(a[0].m.rmse, d.rmse, 1e-6);
        near_rel(a[0].m.sqnr_db, d.sqnr, 1e-6);
        near_rel(a[0].m.p95_abs, d.p95, 1.0 / 512 + 1e-6);
        near_rel(a[0].m.median_abs, d.median, 1.0 / 512 + 1e-6);
        free(ra);
        free(ma);
    }
    size_t ntot = qerr_report_totals(r, &a);
    assert_int_equal(ntot, 2);
    assert_true(a[0].m.rel_rmse > a[1].m.rel_rmse);   /* q4_K worse than q8_0 */
    qerr_report_free(r);

    atomic_bool cancel = true;
    o.cancel = &cancel;
    o.filter = NULL;
    r = qerr_requant(f, &o, &st, err, sizeof err);
    assert_int_equal(st, QERR_ECANCELLED);
    assert_non_null(r);
    assert_int_equal(qerr_report_count(r), 0);
    qerr_report_free(r);
    o.cancel = NULL;

    /* an already-quantized file is re-quantized and marked as such */
    gguf_close(f);
    write_model(p, GGTYPE_Q4_0, false, false);
    f = gguf_open(p, NULL);
    o.n_types = 1;
    r = qerr_requant(f, &o, &st, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(qerr_report_count(r), NT);
    for (size_t i = 0; i < qerr_report_count(r); i++)
        assert_true(qerr_report_at(r, i)->requantized);
    qerr_report_free(r);
    gguf_close(f);
    remove(p);
}

/* llama.cpp's own Q8_0 stories260K against its F32 file gives, tensor by
 * tensor, what re-quantizing the F32 file to q8_0 gives. */
static void test_vs_llamacpp_q8_0(void **state)
{
    (void)state;
    const char *pf = tu_shared("models/tinyllamas-stories-260k-f32.gguf");
    if (!pf)
        TU_SKIP_NO_SHARED();
    char f32p[512];
    snprintf(f32p, sizeof f32p, "%s", pf);
    const char *pq = tu_shared("models/tinyllamas-stories-260k-q8_0.gguf");
    gguf_file *f = gguf_open(f32p, NULL), *q = gguf_open(pq, NULL);
    assert_non_null(f);
    assert_non_null(q);
    uint32_t ty = GGTYPE_Q8_0;
    qerr_opts o = {0};
    o.types = &ty;
    o.n_types = 1;
    qerr_status st;
    char err[256];
    qerr_report *rq = qerr_requant(f, &o, &st, err, sizeof err);
    qerr_report *vs = qerr_compare(q, f, &o, &st, err, sizeof err);
    assert_non_null(rq);
    assert_non_null(vs);
    int matched = 0;
    for (size_t i = 0; i < qerr_report_count(rq); i++) {
        const qerr_result *x = qerr_report_at(rq, i);
        for (size_t k = 0; k < qerr_report_count(vs); k++) {
            const qerr_result *y = qerr_report_at(vs, k);
            if (strcmp(x->name, y->name) || y->type != GGTYPE_Q8_0)
                continue;
            near_rel(x->m.rmse, y->m.rmse, 1e-12);
            near_rel(x->m.max_abs, y->m.max_abs, 1e-12);
            matched++;
        }
    }
    assert_true(matched >= 30);
    /* every paired tensor (ffn_down: 172-wide rows in 32-blocks, rows_unaligned,
     * processed as whole blocks) against a direct dequantize-and-subtract */
    int unaligned = 0;
    for (size_t k = 0; k < qerr_report_count(vs); k++) {
        const qerr_result *y = qerr_report_at(vs, k);
        const gguf_tensor *ta = gguf_find_tensor(q, y->name), *tb = gguf_find_tensor(f, y->name);
        near_rel(y->m.rmse, direct_rmse(ta, tb), 1e-6);
        unaligned += ta->rows_unaligned;
    }
    assert_int_equal(qerr_report_count(vs), 48);
    assert_true(unaligned >= 5);
    qerr_report_free(rq);
    qerr_report_free(vs);
    gguf_close(f);
    gguf_close(q);
}

/* quantize -> qerr round trip on the synthetic model (and stories260K). */
static void quantize_roundtrip(const char *bin, const char *in, const char *type, int expect_rows)
{
    char out[512], cmd[4096];
    snprintf(out, sizeof out, "%s", tu_tmp_path("quant-out.gguf"));
    int rc;
    snprintf(cmd, sizeof cmd, "'%s' quantize '%s' '%s' --type %s --threads 2 2>/dev/null", bin, in, out, type);
    free(run_out(cmd, &rc));
    assert_int_equal(rc, 0);
    gguf_file *a = gguf_open(out, NULL), *b = gguf_open(in, NULL);
    assert_non_null(a);
    assert_non_null(b);
    uint32_t ft = 0, qv = 0;
    assert_int_equal(gguf_get_u32(a, "general.quantization_version", &qv), GGUF_OK);
    assert_int_equal(qv, 2);
    assert_int_equal(gguf_get_u32(a, "general.file_type", &ft), GGUF_OK);
    assert_int_equal(gguf_kv_count(a), gguf_kv_count(b) + (gguf_find_kv(b, "general.file_type") ? 0 : 1) +
                                           (gguf_find_kv(b, "general.quantization_version") ? 0 : 1));
    for (uint64_t i = 0; i < gguf_tensor_count(a); i++) {
        const gguf_tensor *t = gguf_tensor_at(a, i);
        if (t->n_dims == 1)
            assert_int_equal(t->type, GGTYPE_F32);
    }
    snprintf(cmd, sizeof cmd, "'%s' qerr '%s' --vs '%s' --json", bin, out, in);
    char *js = run_out(cmd, &rc);
    assert_int_equal(rc, 0);
    cJSON *j = cJSON_Parse(js);
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(j), expect_rows);
    const cJSON *o;
    cJSON_ArrayForEach(o, j)
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(o, "name")->valuestring;
        double d = direct_rmse(gguf_find_tensor(a, name), gguf_find_tensor(b, name));
        const cJSON *rm = cJSON_GetObjectItemCaseSensitive(o, "rmse");
        near_rel(rm->valuedouble, d, 1e-6);
    }
    cJSON_Delete(j);
    free(js);
    gguf_close(a);
    gguf_close(b);
    remove(out);
}

static void test_quantize_roundtrip(void **state)
{
    (void)state;
    const char *bin = tu_bin();
    if (!bin) {
        print_message("SKIP: GGSCOPE_BIN is not set\n");
        skip();
    }
    char in[512];
    snprintf(in, sizeof in, "%s", tu_tmp_path("qin.gguf"));
    write_model(in, GGTYPE_F32, false, false);
    quantize_roundtrip(bin, in, "q4_K_M", NT + 1);
    /* the recipe: output Q6_K, norm F32, token_embd at the base type (there is an
     * output), ffn_down of layer 0 of 2 at the base type (llama.cpp's
     * use_more_bits(0, 2) is false), the override wins */
    char out[512], cmd[4096];
    snprintf(out, sizeof out, "%s", tu_tmp_path("qout2.gguf"));
    int rc;
    snprintf(cmd, sizeof cmd,
             "'%s' quantize '%s' '%s' --type q4_K_M --tensor-type 'attn_q=q8_0' 2>/dev/null", bin, in, out);
    free(run_out(cmd, &rc));
    assert_int_equal(rc, 0);
    gguf_file *f = gguf_open(out, NULL);
    assert_non_null(f);
    assert_int_equal(gguf_find_tensor(f, "output.weight")->type, GGTYPE_Q6_K);
    assert_int_equal(gguf_find_tensor(f, "token_embd.weight")->type, GGTYPE_Q4_K);
    assert_int_equal(gguf_find_tensor(f, "blk.0.attn_norm.weight")->type, GGTYPE_F32);
    assert_int_equal(gguf_find_tensor(f, "blk.0.ffn_down.weight")->type, GGTYPE_Q4_K);
    assert_int_equal(gguf_find_tensor(f, "blk.0.attn_q.weight")->type, GGTYPE_Q8_0);
    uint32_t ft = 0;
    gguf_get_u32(f, "general.file_type", &ft);
    assert_int_equal(ft, 15);
    gguf_close(f);
    remove(out);
    remove(in);
    const char *s = tu_shared("models/tinyllamas-stories-260k-f32.gguf");
    if (!s) {
        print_message("SKIP (stories260K part): ../shared is absent\n");
        return;
    }
    char sp[512];
    snprintf(sp, sizeof sp, "%s", s);
    quantize_roundtrip(bin, sp, "q4_K_M", 48);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_direct),   cmocka_unit_test(test_metrics_special),
        cmocka_unit_test(test_self_compare),     cmocka_unit_test(test_vs_f16_q4_0),
        cmocka_unit_test(test_requant),          cmocka_unit_test(test_vs_llamacpp_q8_0),
        cmocka_unit_test(test_quantize_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
