/* The Vulkan backend's tests' fixture (vktest.h). */
#include "vktest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"

int vktest_setup(void **state, bool subgroups)
{
    char err[256];
    if (subgroups)
        unsetenv("GGSCOPE_VK_NO_SUBGROUP");
    else
        setenv("GGSCOPE_VK_NO_SUBGROUP", "1", 1);
    backend *vk = backend_vulkan_new(-1, err, sizeof err);
    unsetenv("GGSCOPE_VK_NO_SUBGROUP");
    vktest_fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->vk = vk;
    f->variant = subgroups ? "subgroup" : "shared-memory";
    f->all_types = subgroups;
    if (!vk) {
        print_message("SKIP: no Vulkan device: %s\n", err);
    } else {
        f->cpu = backend_cpu_new(2);
        if (!f->cpu)
            return -1;
        const vk_device_info *d = backend_vulkan_device(vk);
        print_message("device: %s (%s), reductions: %s%s\n", d->name, vk_device_kind_name(d->kind),
                      f->variant, subgroups && !d->caps.subgroup_arith ? " (unsupported: fallback)" : "");
    }
    *state = f;
    return 0;
}

int vktest_teardown(void **state)
{
    vktest_fixture *f = *state;
    if (f) {
        backend_free(f->vk);
        backend_free(f->cpu);
        free(f);
    }
    return 0;
}

uint32_t vktest_rnd_u32(uint64_t *rng)
{
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    return (uint32_t)(*rng >> 16);
}

float vktest_rnd_f(uint64_t *rng, float lo, float hi)
{
    return lo + (hi - lo) * (float)(vktest_rnd_u32(rng) & 0xFFFFFF) / 16777216.0f;
}

float *vktest_rnd_vec(uint64_t *rng, size_t n, float lo, float hi)
{
    float *v = malloc(n * sizeof *v + 1);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = vktest_rnd_f(rng, lo, hi);
    return v;
}

backend_weight vktest_make_weight(uint64_t *rng, uint32_t type, uint32_t cols, uint32_t rows, uint32_t n_exp,
                                  void **mem)
{
    const size_t n = (size_t)cols * rows * n_exp;
    float *src = vktest_rnd_vec(rng, n, -1.0f, 1.0f);
    uint64_t rb = ggtype_row_size(type, cols, NULL);
    assert_true(rb > 0);
    uint8_t *data = calloc((size_t)rows * n_exp, rb);
    assert_non_null(data);
    if (type == GGTYPE_F32) {
        memcpy(data, src, n * 4);
    } else if (type == GGTYPE_F16) {
        uint16_t *h = (uint16_t *)data;
        for (size_t i = 0; i < n; i++)
            h[i] = codec_f32_to_f16(src[i]);
    } else {
        assert_true(codec_can_quantize(type));
        assert_int_equal(codec_quantize(type, src, data, (uint64_t)rows * n_exp, cols, NULL), rb * rows * n_exp);
    }
    free(src);
    *mem = data;
    return (backend_weight){.type = type, .ne0 = cols, .ne1 = rows, .row_bytes = rb, .ne2 = n_exp == 1 ? 0 : n_exp,
                            .data = data, .name = ggtype_name(type)};
}

void vktest_prepare(const vktest_fixture *f, backend_weight *w)
{
    assert_int_equal(f->vk->ops->weight_prepare(f->vk->ctx, w), 0);
    assert_non_null(w->priv);
}

void vktest_release(const vktest_fixture *f, backend_weight *w)
{
    f->vk->ops->weight_release(f->vk->ctx, w);
    assert_null(w->priv);
}

backend_buf *vktest_upload(backend *b, const float *data, size_t n)
{
    backend_buf *buf = b->ops->buf_new(b->ctx, BACKEND_F32, n ? n : 1);
    assert_non_null(buf);
    if (data && n)
        assert_int_equal(b->ops->buf_write(b->ctx, buf, 0, data, n), 0);
    return buf;
}

float *vktest_download(backend *b, backend_buf *buf, size_t off, size_t n)
{
    float *v = malloc(n * sizeof *v + 1);
    assert_non_null(v);
    assert_int_equal(b->ops->buf_read(b->ctx, buf, off, v, n), 0);
    return v;
}

double vktest_nmse(const float *ref, const float *x, size_t n, double *maxd)
{
    double num = 0, den = 0, dmax = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)ref[i] - (double)x[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
        dmax = fmax(dmax, fabs(d));
    }
    if (maxd)
        *maxd = dmax;
    return den > 0 ? num / den : num;
}

void vktest_check(const char *what, const float *ref, const float *x, size_t n, double limit)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || !isfinite(ref[i])) {
            print_error("%s: element %zu is %f (reference %f)\n", what, i, (double)x[i], (double)ref[i]);
            fail();
        }
    double dmax;
    double e = vktest_nmse(ref, x, n, &dmax);
    if (getenv("GGSCOPE_VK_VERBOSE"))
        print_message("  %-46s nmse %.3e (limit %.0e), max |diff| %.3e\n", what, e, limit, dmax);
    if (!(e <= limit)) {
        print_error("%s: nmse %.3e > %.0e\n", what, e, limit);
        fail();
    }
}

void vktest_no_validation_errors(const vktest_fixture *f)
{
    int n = backend_vulkan_validation_errors(f->vk);
    if (n) {
        print_error("%d validation errors; last: %s\n", n, backend_vulkan_last_message(f->vk));
        fail();
    }
}

session *vktest_open_session(const model *m, backend *be, uint32_t n_ctx)
{
    char msg[256];
    session_params sp = {.n_ctx = n_ctx, .n_batch = 16, .be = be};
    session *s = session_new(m, &sp, msg, sizeof msg);
    if (!s)
        print_error("session_new: %s\n", msg);
    assert_non_null(s);
    return s;
}

double vktest_compare_logits(const vktest_fixture *f, model *m, const int32_t *ids, uint32_t n, uint32_t n_ctx)
{
    const uint32_t nv = m->hp.n_vocab;
    float *lg[2];
    backend *bs[2] = {f->cpu, f->vk};
    char err[256];
    assert_int_equal(model_prepare(m, f->vk, err, sizeof err), 0);
    for (int k = 0; k < 2; k++) {
        session *s = vktest_open_session(m, bs[k], n_ctx);
        lg[k] = malloc((size_t)n * nv * sizeof(float));
        assert_non_null(lg[k]);
        const uint32_t first = n - 4;
        assert_int_equal(session_eval(s, ids, first, 0, lg[k], true), 0);
        for (uint32_t i = first; i < n; i++)
            assert_int_equal(session_eval(s, ids + i, 1, i, lg[k] + (size_t)i * nv, false), 0);
        session_free(s);
    }
    model_release(m);
    double num = 0, den = 0;
    for (size_t i = 0; i < (size_t)n * nv; i++) {
        const double d = (double)lg[0][i] - lg[1][i];
        num += d * d;
        den += (double)lg[0][i] * lg[0][i];
        assert_true(isfinite(lg[1][i]));
    }
    free(lg[0]);
    free(lg[1]);
    return sqrt(num / den);
}
