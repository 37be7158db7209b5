/* model_copy: the weights copied out of the file mapping into memory give
 * bit-identical logits, keep every byte, leave an untied embedding in the
 * mapping, follow a tied output and the row views of fused tensors, stop on
 * cancel with the model untouched, and go back with model_uncopy. The
 * runner copies by policy and says so; gguf_read_file reads the file
 * itself, and the mapping once the file was replaced. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "ggtype.h"
#include "model.h"
#include "runner.h"
#include "session.h"
#include "testmodel.h"

#define N_CTX 16

static const int32_t IDS[6] = {1, 5, 9, 2, 7, 3};

/* Logits of every position of IDS (malloc'd). */
static float *logits_of(const model *m)
{
    session_params sp = {.n_ctx = N_CTX, .n_threads = 2};
    char msg[256];
    session *s = session_new(m, &sp, msg, sizeof msg);
    if (!s)
        fail_msg("session_new: %s", msg);
    float *lg = malloc(sizeof *lg * m->hp.n_vocab * 6);
    assert_non_null(lg);
    assert_int_equal(session_eval(s, IDS, 6, 0, lg, true), 0);
    session_free(s);
    return lg;
}

/* Whether p lies in one of the file's shard mappings. */
static bool in_file(const gguf_file *f, const void *p)
{
    for (uint32_t i = 0; i < gguf_shard_count(f); i++) {
        uint64_t size;
        const uint8_t *b = gguf_shard_base(f, i, &size);
        if ((const uint8_t *)p >= b && (const uint8_t *)p < b + size)
            return true;
    }
    return false;
}

static uint64_t bytes_of(const backend_weight *w)
{
    return w->ne1 * w->row_bytes * (w->ne2 > 1 ? w->ne2 : 1);
}

typedef struct {
    uint64_t calls, done, total;
} prog;

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    prog *p = ctx;
    assert_true(done > p->done);   /* it only grows */
    p->calls++;
    p->done = done;
    p->total = total;
}

/* Copy m, check every weight against the file and the logits against the
 * mapping's, then uncopy and check the pointers are back. */
static void copy_and_check(tu_model *fx)
{
    model *m = fx->m;
    float *ref = logits_of(m);
    const void *embd = m->tok_embd.data, *out = m->output.data;
    bool tied = embd == out;
    const void *wq0 = m->layers[0].wq.data, *wk0 = m->layers[0].wk.data, *down_last =
                                                                          m->layers[m->hp.n_layer - 1].ffn_down.data;
    prog p = {0};
    char msg[256];
    uint64_t want = model_copy_bytes(m);
    assert_int_equal(model_copy(m, NULL, on_progress, &p, msg, sizeof msg), 0);
    assert_non_null(m->copy);
    assert_int_equal(model_copy_bytes(m), want);
    assert_true(p.calls >= 1);
    assert_int_equal(p.done, want);
    assert_int_equal(p.total, want);
    /* an untied embedding stays in the mapping; a tied one moves with the output */
    if (tied) {
        assert_ptr_equal(m->output.data, m->tok_embd.data);
        assert_false(in_file(fx->f, m->tok_embd.data));
    } else {
        assert_ptr_equal(m->tok_embd.data, embd);
        assert_false(in_file(fx->f, m->output.data));
        assert_memory_equal(m->output.data, out, bytes_of(&m->output));
    }
    for (uint32_t il = 0; il < m->hp.n_layer; il++) {
        const model_layer *ly = &m->layers[il];
        assert_false(in_file(fx->f, ly->wq.data));
        assert_false(in_file(fx->f, ly->ffn_down.data));
        assert_false(in_file(fx->f, ly->attn_norm.data));
    }
    assert_memory_equal(m->layers[0].wq.data, wq0, bytes_of(&m->layers[0].wq));
    assert_memory_equal(m->layers[0].wk.data, wk0, bytes_of(&m->layers[0].wk));
    assert_memory_equal(m->layers[m->hp.n_layer - 1].ffn_down.data, down_last,
                        bytes_of(&m->layers[m->hp.n_layer - 1].ffn_down));
    /* a second copy is a no-op */
    const void *moved = m->layers[0].wq.data;
    assert_int_equal(model_copy(m, NULL, NULL, NULL, msg, sizeof msg), 0);
    assert_ptr_equal(m->layers[0].wq.data, moved);

    float *got = logits_of(m);
    assert_memory_equal(got, ref, sizeof *ref * m->hp.n_vocab * 6);   /* bit-identical */
    free(got);

    model_uncopy(m);
    assert_null(m->copy);
    assert_ptr_equal(m->tok_embd.data, embd);
    assert_ptr_equal(m->output.data, out);
    assert_ptr_equal(m->layers[0].wq.data, wq0);
    assert_ptr_equal(m->layers[0].wk.data, wk0);
    assert_ptr_equal(m->layers[m->hp.n_layer - 1].ffn_down.data, down_last);
    model_uncopy(m);   /* again: nothing to do */
    got = logits_of(m);
    assert_memory_equal(got, ref, sizeof *ref * m->hp.n_vocab * 6);
    free(got);
    free(ref);
}

/* A llama with F16 matrices of 1 MiB (the feed-forward), untied. */
static tu_model *open_f16(const char *tag)
{
    testmodel_params p = testmodel_default_params();
    p.n_embd = 256;
    p.n_ff = 2048;
    p.n_layer = 3;
    p.wtype = GGTYPE_F16;
    return tu_model_open(&p, tag);
}

static void test_copy_llama(void **state)
{
    (void)state;
    tu_model *fx = open_f16("copy-llama.gguf");
    assert_false(fx->m->hp.tied_embeddings);
    copy_and_check(fx);
    tu_model_close(fx);
}

/* Pages of [p, p + len) that this process has mapped in (/proc/self/pagemap),
 * or -1 when pagemap cannot be read. */
static long mapped_pages(const void *p, size_t len)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0)
        return -1;
    long n = 0;
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
    for (; a < (uintptr_t)p + len; a += 4096) {
        uint64_t e;
        if (pread(fd, &e, sizeof e, (off_t)(a / 4096 * 8)) != (ssize_t)sizeof e) {
            n = -1;
            break;
        }
        n += (long)(e >> 63);
    }
    close(fd);
    return n;
}

static void test_copy_leaves_mapping(void **state)
{
    (void)state;
    /* the copy reads the file, not the mapping: the layers' pages never
     * become part of this process (the last layer, far from the header) */
    tu_model *fx = open_f16("copy-pages.gguf");
    const gguf_tensor *t = gguf_find_tensor(fx->f, "blk.2.ffn_down.weight");
    assert_non_null(t);
    long before = mapped_pages(t->data, t->n_bytes);
    if (before < 0) {
        print_message("SKIP: /proc/self/pagemap cannot be read\n");
        tu_model_close(fx);
        skip();
    }
    assert_int_equal(before, 0);
    char msg[256];
    assert_int_equal(model_copy(fx->m, NULL, NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(mapped_pages(t->data, t->n_bytes), 0);
    assert_memory_equal(fx->m->layers[2].ffn_down.data, t->data, t->n_bytes);   /* (now it is mapped) */
    assert_true(mapped_pages(t->data, t->n_bytes) > 0);                          /* the check can fail */
    tu_model_close(fx);
}

static void test_copy_tied_q8(void **state)
{
    (void)state;
    testmodel_params p = testmodel_default_params();
    p.n_layer = 2;
    p.wtype = GGTYPE_Q8_0;
    p.tied = true;
    tu_model *fx = tu_model_open(&p, "copy-tied.gguf");
    assert_true(fx->m->hp.tied_embeddings);
    copy_and_check(fx);
    tu_model_close(fx);
}

static void test_copy_fused(void **state)
{
    (void)state;
    /* phi3: Q, K, V are row views of attn_qkv, gate and up of ffn_up */
    testmodel_params p = testmodel_arch_params("phi3");
    p.n_layer = 2;
    p.wtype = GGTYPE_Q4_0;
    tu_model *fx = tu_model_open(&p, "copy-phi3.gguf");
    assert_true(fx->m->hp.fused_qkv);
    copy_and_check(fx);
    tu_model_close(fx);
}

static void test_copy_cancel_and_refusals(void **state)
{
    (void)state;
    testmodel_params p = testmodel_default_params();
    p.n_layer = 2;
    tu_model *fx = tu_model_open(&p, "copy-cancel.gguf");
    model *m = fx->m;
    const void *wq = m->layers[0].wq.data, *out = m->output.data;
    atomic_bool cancel = true;
    char msg[256];
    assert_int_equal(model_copy(m, &cancel, NULL, NULL, msg, sizeof msg), BACKEND_ECANCELLED);
    assert_string_equal(msg, "cancelled");
    assert_null(m->copy);
    assert_ptr_equal(m->layers[0].wq.data, wq);
    assert_ptr_equal(m->output.data, out);

    model *shapes = model_load_shapes(fx->f, NULL, msg, sizeof msg);
    assert_non_null(shapes);
    assert_int_equal(model_copy(shapes, NULL, NULL, NULL, msg, sizeof msg), BACKEND_EARG);
    assert_string_equal(msg, "the model was loaded for its shapes only");
    assert_int_equal(model_copy_bytes(shapes), 0);
    model_free(shapes);
    assert_int_equal(model_copy(NULL, NULL, NULL, NULL, msg, sizeof msg), BACKEND_EARG);

    /* model_free frees a copy */
    assert_int_equal(model_copy(m, NULL, NULL, NULL, msg, sizeof msg), 0);
    tu_model_close(fx);
}

static void test_runner_policy(void **state)
{
    (void)state;
    testmodel_params p = testmodel_default_params();
    p.n_layer = 1;
    tu_model *fx = tu_model_open(&p, "copy-runner.gguf");
    model *m = fx->m;
    char msg[512], want[200];
    runner *r = NULL;
    runner_params rp = {.backend = "cpu", .threads = 1, .n_ctx = N_CTX};
    assert_int_equal(runner_open(m, &rp, &r, msg, sizeof msg), RUNNER_OK);
    snprintf(want, sizeof want, "cpu, 1 thread, weights in memory (%.1f MB)", model_copy_bytes(m) / 1e6);
    assert_string_equal(runner_backend_info(r), want);
    assert_non_null(m->copy);
    runner_close(r);
    assert_null(m->copy);   /* the runner that made it frees it */

    rp.weights = RUNNER_WEIGHTS_MAP;
    assert_int_equal(runner_open(m, &rp, &r, msg, sizeof msg), RUNNER_OK);
    assert_string_equal(runner_backend_info(r), "cpu, 1 thread, weights mapped from the file (as asked)");
    assert_null(m->copy);
    runner_close(r);

    /* a copy someone else made is used and left to them */
    assert_int_equal(model_copy(m, NULL, NULL, NULL, msg, sizeof msg), 0);
    rp.weights = RUNNER_WEIGHTS_COPY;
    assert_int_equal(runner_open(m, &rp, &r, msg, sizeof msg), RUNNER_OK);
    assert_non_null(strstr(runner_backend_info(r), "weights in memory"));
    runner_close(r);
    assert_non_null(m->copy);
    model_uncopy(m);

    /* cancelled while copying */
    atomic_bool cancel = true;
    rp.cancel = &cancel;
    assert_int_equal(runner_open(m, &rp, &r, msg, sizeof msg), RUNNER_ECANCELLED);
    assert_null(r);
    assert_string_equal(msg, "cancelled while copying the weights into memory");
    assert_null(m->copy);
    tu_model_close(fx);
}

static void test_gguf_read_file(void **state)
{
    (void)state;
    /* a 3 MiB file whose tensor holds a counter */
    char path[512], other[512];   /* tu_tmp_path's buffer is static */
    snprintf(path, sizeof path, "%s", tu_tmp_path("read-file.gguf"));
    snprintf(other, sizeof other, "%s", tu_tmp_path("read-file-2.gguf"));
    gguf_writer *w = gguf_writer_new(32);
    assert_non_null(w);
    uint32_t n = 3u << 18;   /* 3 MiB of F32 */
    float *v = malloc(sizeof *v * n);
    assert_non_null(v);
    for (uint32_t i = 0; i < n; i++)
        v[i] = (float)i;
    uint64_t ne[1] = {n};
    assert_int_equal(gguf_writer_add_tensor(w, "t", GGTYPE_F32, 1, ne, v), GGUF_OK);
    assert_int_equal(gguf_writer_write(w, path, NULL, NULL), GGUF_OK);
    gguf_writer_free(w);
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    assert_non_null(f);
    const gguf_tensor *t = gguf_find_tensor(f, "t");
    assert_non_null(t);
    float *got = malloc(sizeof *got * n);
    assert_non_null(got);
    /* from the file (2 MiB from an odd offset, and 64 bytes) */
    uint64_t base = t->abs_offset;
    assert_int_equal(gguf_read_file(f, t->shard, base + 4 * 1001, 2u << 20, got, NULL, &err), GGUF_OK);
    assert_memory_equal(got, v + 1001, 2u << 20);
    assert_int_equal(gguf_read_file(f, t->shard, base + 4 * 7, 64, got, NULL, &err), GGUF_OK);
    assert_memory_equal(got, v + 7, 64);
    /* past the end: refused as gguf_read refuses it */
    assert_int_equal(gguf_read_file(f, t->shard, gguf_file_size(f) - 8, 64, got, NULL, &err), GGUF_EARG);
    /* the file replaced by another (a new inode): the mapping's bytes still */
    FILE *fp = fopen(other, "wb");
    assert_non_null(fp);
    size_t total = (size_t)gguf_file_size(f);
    for (size_t i = 0; i < total; i++)
        fputc(0x5a, fp);
    fclose(fp);
    assert_int_equal(rename(other, path), 0);
    memset(got, 0, sizeof *got * n);
    assert_int_equal(gguf_read_file(f, t->shard, base, sizeof *got * n, got, NULL, &err), GGUF_OK);
    assert_memory_equal(got, v, sizeof *got * n);
    gguf_close(f);
    remove(path);
    free(got);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_llama),
        cmocka_unit_test(test_copy_leaves_mapping),
        cmocka_unit_test(test_copy_tied_q8),
        cmocka_unit_test(test_copy_fused),
        cmocka_unit_test(test_copy_cancel_and_refusals),
        cmocka_unit_test(test_runner_policy),
        cmocka_unit_test(test_gguf_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
