/* tstats: statistics and histograms against a direct double-precision
 * computation, on tensors written with the GGUF writer and on stories260K;
 * `ggscope dump --stats --json` must print the same figures. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "codec.h"
#include "ggtype.h"
#include "gguf.h"
#include "testutil.h"
#include "tstats.h"

typedef struct {
    uint64_t count, finite, zeros, nan, inf;
    double min, max, mean, std, absmax;
} direct_stats;

/* Two-pass reference in double precision. */
static void direct(const float *v, uint64_t n, direct_stats *d)
{
    memset(d, 0, sizeof *d);
    d->count = n;
    d->min = INFINITY;
    d->max = -INFINITY;
    double sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (isnan(v[i])) {
            d->nan++;
            continue;
        }
        if (isinf(v[i])) {
            d->inf++;
            continue;
        }
        d->finite++;
        d->zeros += v[i] == 0.0f;
        sum += v[i];
        if (v[i] < d->min)
            d->min = v[i];
        if (v[i] > d->max)
            d->max = v[i];
    }
    d->mean = d->finite ? sum / (double)d->finite : 0;
    double ss = 0;
    for (uint64_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            ss += ((double)v[i] - d->mean) * ((double)v[i] - d->mean);
    d->std = d->finite ? sqrt(ss / (double)d->finite) : 0;
    d->absmax = fmax(fabs(d->min), fabs(d->max));
}

static void assert_rel(double got, double want, double tol, const char *what)
{
    double err = fabs(got - want), scale = fmax(fabs(want), 1e-30);
    if (!(err <= tol * scale || err <= 1e-12)) {
        print_error("%s: got %.17g want %.17g (rel %.3g)\n", what, got, want, err / scale);
        fail();
    }
}

static void check_against(const tstats_result *r, const float *v, uint64_t n)
{
    direct_stats d;
    direct(v, n, &d);
    assert_int_equal(r->count, d.count);
    assert_int_equal(r->n_finite, d.finite);
    assert_int_equal(r->zeros, d.zeros);
    assert_int_equal(r->nan, d.nan);
    assert_int_equal(r->inf, d.inf);
    if (d.finite) {
        assert_true(r->min == d.min);
        assert_true(r->max == d.max);
        assert_rel(r->mean, d.mean, 1e-6, "mean");
        assert_rel(r->std, d.std, 1e-6, "std");
        assert_true(r->absmax == d.absmax);
    }
    /* histogram: every finite value in exactly one bin, the same bin a
     * direct computation picks */
    uint64_t *bins = calloc(r->n_bins, sizeof *bins);
    assert_non_null(bins);
    for (uint64_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue;
        double span = d.max - d.min;
        uint32_t b = span > 0 ? (uint32_t)((v[i] - d.min) / span * r->n_bins) : 0;
        if (b >= r->n_bins)
            b = r->n_bins - 1;
        bins[b]++;
    }
    uint64_t tot = 0;
    for (uint32_t b = 0; b < r->n_bins; b++) {
        assert_int_equal(r->bins[b], bins[b]);
        tot += r->bins[b];
    }
    assert_int_equal(tot, d.finite);
    free(bins);
}

/* Deterministic pseudo-random floats with a large offset (a naive
 * sum-of-squares variance loses every digit here). */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0);
}

static void test_f32_direct(void **state)
{
    (void)state;
    const uint64_t ne0 = 1000, rows = 301, n = ne0 * rows;   /* several chunks, a ragged last one */
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (uint64_t i = 0; i < n; i++)
        v[i] = 1000.0f + (frand() - 0.5f) * 0.01f;
    v[5] = 0.0f;
    v[77] = -0.0f;
    v[1234] = NAN;
    v[99999] = INFINITY;
    v[200000] = -INFINITY;
    tstats_result *r = malloc(sizeof *r);
    tstats_opts o = {.n_bins = 97};
    assert_int_equal(tstats_compute_raw(GGTYPE_F32, v, ne0, rows, &o, r), TSTATS_OK);
    check_against(r, v, n);
    assert_int_equal(r->zeros, 2);
    assert_int_equal(r->nan, 1);
    assert_int_equal(r->inf, 2);
    /* a row range */
    o.row_first = 17;
    o.row_count = 40;
    assert_int_equal(tstats_compute_raw(GGTYPE_F32, v, ne0, rows, &o, r), TSTATS_OK);
    check_against(r, v + 17 * ne0, 40 * ne0);
    o.row_first = 300;
    o.row_count = 2;
    assert_int_equal(tstats_compute_raw(GGTYPE_F32, v, ne0, rows, &o, r), TSTATS_EARG);
    free(r);
    free(v);
}

static void test_f16_direct(void **state)
{
    (void)state;
    const uint64_t ne0 = 256, rows = 300, n = ne0 * rows;
    uint16_t *h = malloc(n * sizeof *h);
    float *v = malloc(n * sizeof *v);
    for (uint64_t i = 0; i < n; i++) {
        h[i] = codec_f32_to_f16((frand() - 0.3f) * 4.0f);
        v[i] = codec_f16_to_f32(h[i]);
    }
    tstats_result *r = malloc(sizeof *r);
    tstats_opts o = {.n_bins = 64};
    assert_int_equal(tstats_compute_raw(GGTYPE_F16, h, ne0, rows, &o, r), TSTATS_OK);
    check_against(r, v, n);
    free(r);
    free(h);
    free(v);
}

static void test_constant_and_empty(void **state)
{
    (void)state;
    float v[64];
    for (int i = 0; i < 64; i++)
        v[i] = 3.5f;
    tstats_result *r = malloc(sizeof *r);
    assert_int_equal(tstats_compute_raw(GGTYPE_F32, v, 64, 1, NULL, r), TSTATS_OK);
    assert_true(r->min == 3.5 && r->max == 3.5 && r->std == 0 && r->mean == 3.5);
    assert_int_equal(r->bins[0], 64);
    for (int i = 0; i < 64; i++)
        v[i] = NAN;
    assert_int_equal(tstats_compute_raw(GGTYPE_F32, v, 64, 1, NULL, r), TSTATS_OK);
    assert_int_equal(r->nan, 64);
    assert_int_equal(r->n_finite, 0);
    assert_true(r->min == 0 && r->max == 0);
    assert_int_equal(tstats_compute_raw(9999, v, 64, 1, NULL, r), TSTATS_ETYPE);
    free(r);
}

typedef struct {
    uint64_t last, calls, total;
    atomic_bool *cancel;
    uint64_t cancel_after;
} prog;

static void on_prog(void *user, uint64_t done, uint64_t total)
{
    prog *p = user;
    assert_true(done >= p->last);
    assert_true(done <= total);
    p->last = done;
    p->total = total;
    p->calls++;
    if (p->cancel && p->calls == p->cancel_after)
        atomic_store(p->cancel, true);
}

static void test_progress_and_cancel(void **state)
{
    (void)state;
    const uint64_t n = 1 << 20;
    float *v = malloc(n * sizeof *v);
    for (uint64_t i = 0; i < n; i++)
        v[i] = frand();
    tstats_result *r = malloc(sizeof *r);
    prog p = {0};
    tstats_opts o = {.progress = on_prog, .user = &p};
    assert_int_equal(tstats_compute_raw(GGTYPE_F32, v, 1024, 1024, &o, r), TSTATS_OK);
    assert_true(p.calls >= 4);
    assert_int_equal(p.last, p.total);
    assert_int_equal(p.total, 2 * n);
    atomic_bool cancel;
    atomic_init(&cancel, false);
    prog q = {.cancel = &cancel, .cancel_after = 3};
    o.user = &q;
    o.cancel = &cancel;
    assert_int_equal(tstats_compute_raw(GGTYPE_F32, v, 1024, 1024, &o, r), TSTATS_ECANCELLED);
    assert_int_equal(q.calls, 3);   /* stopped within one chunk of the request */
    free(r);
    free(v);
}

/* Every F32 tensor of a real model against the direct computation. */
static void test_stories_f32(void **state)
{
    (void)state;
    const char *path = tu_shared("models/stories260K.gguf");
    if (!path)
        TU_SKIP_NO_SHARED();
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    assert_non_null(f);
    tstats_result *r = malloc(sizeof *r);
    int checked = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->type != GGTYPE_F32)
            continue;
        tstats_opts o = {.n_bins = 50};
        assert_int_equal(tstats_compute(t, &o, r), TSTATS_OK);
        float *v = malloc(t->n_elements * sizeof *v);
        memcpy(v, t->data, t->n_elements * sizeof *v);
        check_against(r, v, t->n_elements);
        free(v);
        checked++;
    }
    assert_true(checked >= 40);
    free(r);
    gguf_close(f);
}

/* Run `ggscope dump FILE TENSOR --stats --json` and parse its output. */
static cJSON *run_dump(const char *bin, const char *file, const char *tensor, const char *rows)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' dump '%s' '%s' --stats --json %s%s", bin, file, tensor, rows ? "--rows " : "",
             rows ? rows : "");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *buf = malloc(1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, p);
    buf[n] = 0;
    int st = pclose(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    assert_non_null(j);
    return j;
}

static double jnum(const cJSON *j, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, k);
    assert_non_null(x);
    assert_true(cJSON_IsNumber(x));
    return x->valuedouble;
}

static void compare_dump(const char *bin, const char *file, const gguf_tensor *t, const char *rows,
                         uint64_t r0, uint64_t rn)
{
    char name[256];
    gguf_str_copy(t->name, name, sizeof name);
    cJSON *j = run_dump(bin, file, name, rows);
    tstats_result *r = malloc(sizeof *r);
    tstats_opts o = {.row_first = r0, .row_count = rn};
    assert_int_equal(tstats_compute(t, &o, r), TSTATS_OK);
    assert_true(jnum(j, "count") == (double)r->count);
    assert_true(jnum(j, "zeros") == (double)r->zeros);
    assert_true(jnum(j, "nan") == (double)r->nan);
    assert_true(jnum(j, "inf") == (double)r->inf);
    assert_rel(jnum(j, "min"), r->min, 1e-15, "dump min");
    assert_rel(jnum(j, "max"), r->max, 1e-15, "dump max");
    assert_rel(jnum(j, "mean"), r->mean, 1e-15, "dump mean");
    assert_rel(jnum(j, "std"), r->std, 1e-15, "dump std");
    assert_rel(jnum(j, "absmax"), r->absmax, 1e-15, "dump absmax");
    free(r);
    cJSON_Delete(j);
}

static int write_fixture(const char *path)
{
    gguf_writer *w = gguf_writer_new(0);
    if (!w)
        return -1;
    gguf_writer_set_str(w, "general.architecture", "test");
    uint64_t ne[2] = {128, 40};
    float *v = malloc(128 * 40 * sizeof *v);
    for (int i = 0; i < 128 * 40; i++)
        v[i] = (frand() - 0.5f) * 3.0f + (i % 7 == 0 ? 0.0f : 0.25f);
    v[10] = 0.0f;
    v[300] = NAN;
    gguf_writer_add_tensor(w, "t.f32", GGTYPE_F32, 2, ne, v);
    uint16_t *h = malloc(128 * 40 * sizeof *h);
    for (int i = 0; i < 128 * 40; i++)
        h[i] = codec_f32_to_f16(v[i] * 0.5f);
    gguf_writer_add_tensor(w, "t.f16", GGTYPE_F16, 2, ne, h);
    gguf_status st = gguf_writer_write(w, path, NULL, NULL);
    gguf_writer_free(w);
    free(v);
    free(h);
    return st == GGUF_OK ? 0 : -1;
}

static void test_dump_stats_equal(void **state)
{
    (void)state;
    const char *bin = tu_bin();
    if (!bin) {
        print_message("SKIP: GGSCOPE_BIN is not set\n");
        skip();
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", tu_tmp_path("tstats.gguf"));
    assert_int_equal(write_fixture(path), 0);
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    assert_non_null(f);
    compare_dump(bin, path, gguf_find_tensor(f, "t.f32"), NULL, 0, 0);
    compare_dump(bin, path, gguf_find_tensor(f, "t.f16"), NULL, 0, 0);
    compare_dump(bin, path, gguf_find_tensor(f, "t.f32"), "3:11", 3, 8);
    gguf_close(f);
    remove(path);
    const char *m = tu_shared("models/stories260K.gguf");
    if (m) {
        char mp[4096];
        snprintf(mp, sizeof mp, "%s", m);
        f = gguf_open(mp, &err);
        assert_non_null(f);
        compare_dump(bin, mp, gguf_find_tensor(f, "token_embd.weight"), NULL, 0, 0);
        compare_dump(bin, mp, gguf_find_tensor(f, "blk.3.ffn_down.weight"), NULL, 0, 0);
        gguf_close(f);
    } else {
        print_message("SKIP (part): ../shared is absent; stories260K not compared\n");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32_direct),
        cmocka_unit_test(test_f16_direct),
        cmocka_unit_test(test_constant_and_empty),
        cmocka_unit_test(test_progress_and_cancel),
        cmocka_unit_test(test_stories_f32),
        cmocka_unit_test(test_dump_stats_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
