/* GGUF files read through a source (remote files): the same parser, the same
 * errors as a file in memory, whatever the first read's size; tensor bytes
 * through the block cache; split sets; the source's own errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "gguf.h"
#include "testutil.h"

/* A source over in-memory files, counting what it is asked for. */
typedef struct {
    const gguf_memfile *files;
    size_t n;
    uint64_t reads, bytes;
    uint64_t last_off, last_len;
    bool fail;              /* every read fails */
} memsrc;

static int64_t mem_read(void *ctx, const char *name, uint64_t off, uint64_t len, void *dst, uint64_t *total,
                        const atomic_bool *cancel, gguf_error *err)
{
    (void)cancel;
    memsrc *m = ctx;
    m->reads++;
    m->last_off = off, m->last_len = len;
    if (m->fail) {
        err->code = GGUF_EIO;
        snprintf(err->msg, sizeof err->msg, "timed out: no data from 127.0.0.1:1 for 1 s");
        return -1;
    }
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(m->files[i].name, name) != 0)
            continue;
        uint64_t size = m->files[i].size;
        *total = size;
        if (off >= size)
            return 0;
        uint64_t k = len < size - off ? len : size - off;
        memcpy(dst, (const uint8_t *)m->files[i].data + off, (size_t)k);
        m->bytes += k;
        return (int64_t)k;
    }
    err->code = GGUF_ENOTFOUND;
    snprintf(err->msg, sizeof err->msg, "HTTP 404 Not Found");
    return -1;
}

/* A file with a bit of everything: scalars, strings, string / bool / nested
 * arrays, a 3000-entry vocabulary (a header of several blocks) and tensors. */
static uint8_t *sample_file(size_t *size)
{
    gguf_writer *w = gguf_writer_new(32);
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_u32(w, "llama.block_count", 2);
    gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
    gguf_writer_set_bool(w, "general.flag", true);
    static char words[3000][16];
    const char *ptrs[3000];
    for (int i = 0; i < 3000; i++) {
        snprintf(words[i], sizeof words[i], "tok%d", i * 7);
        ptrs[i] = words[i];
    }
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", ptrs, 3000);
    uint8_t bools[100];
    for (int i = 0; i < 100; i++)
        bools[i] = (uint8_t)(i % 3 == 0);
    gguf_writer_set_arr(w, "x.bools", GGUF_VT_BOOL, bools, 100);
    float f[3000];
    for (int i = 0; i < 3000; i++)
        f[i] = (float)i * 0.5f;
    gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VT_FLOAT32, f, 3000);
    static float t0[64 * 40], t1[32 * 3];
    for (int i = 0; i < 64 * 40; i++)
        t0[i] = (float)(i % 97) - 48.0f;
    for (int i = 0; i < 96; i++)
        t1[i] = (float)i;
    uint64_t ne0[2] = {64, 40}, ne1[2] = {32, 3};
    assert_int_equal(gguf_writer_add_tensor(w, "token_embd.weight", GGTYPE_F32, 2, ne0, t0), GGUF_OK);
    assert_int_equal(gguf_writer_add_tensor(w, "output_norm.weight", GGTYPE_F32, 2, ne1, t1), GGUF_OK);
    uint8_t *out;
    assert_int_equal(gguf_writer_to_memory(w, &out, size), GGUF_OK);
    gguf_writer_free(w);
    return out;
}

/* Open `data` both ways (memory, and a source whose first read and blocks are
 * `block` bytes) and require the same outcome: the same error line, or the
 * same keys, tensors and tensor bytes. */
static void same_both_ways(const uint8_t *data, size_t size, uint32_t block)
{
    gguf_memfile one = {"http://h/m.gguf", data, size};
    gguf_error e1, e2;
    gguf_file *a = gguf_open_memfiles(&one, 1, one.name, &e1);
    memsrc m = {&one, 1, 0, 0, 0, 0, false};
    gguf_source src = {mem_read, &m, block};
    gguf_file *b = gguf_open_source(&src, one.name, &e2);
    char l1[1400], l2[1400];
    gguf_error_format(&e1, l1, sizeof l1);
    gguf_error_format(&e2, l2, sizeof l2);
    if (!a != !b || strcmp(l1, l2) != 0 || e1.code != e2.code)
        fail_msg("size %zu block %u: memory '%s' but source '%s'", size, block, a ? "opened" : l1, b ? "opened" : l2);
    if (a) {
        assert_true(gguf_is_remote(b));
        assert_false(gguf_is_remote(a));
        assert_int_equal(gguf_kv_count(a), gguf_kv_count(b));
        assert_int_equal(gguf_tensor_count(a), gguf_tensor_count(b));
        for (uint64_t i = 0; i < gguf_tensor_count(a); i++) {
            const gguf_tensor *ta = gguf_tensor_at(a, i), *tb = gguf_tensor_at(b, i);
            assert_int_equal(ta->abs_offset, tb->abs_offset);
            assert_null(tb->data);
            if (!ta->data)
                continue;
            uint8_t *buf = malloc(ta->n_bytes + 1);
            assert_int_equal(gguf_tensor_read(b, tb, 0, tb->n_bytes, buf, NULL, &e2), GGUF_OK);
            assert_memory_equal(buf, ta->data, ta->n_bytes);
            free(buf);
        }
        uint64_t bytes, reqs;
        gguf_source_stats(b, &bytes, &reqs);
        assert_int_equal(bytes, m.bytes);
        assert_int_equal(reqs, m.reads);
    }
    gguf_close(a);
    gguf_close(b);
}

static void test_source_same_as_memory(void **state)
{
    (void)state;
    size_t size;
    uint8_t *data = sample_file(&size);
    assert_true(size > 4 * 4096);
    uint32_t blocks[] = {64, 1000, 4096, 0};
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++)
        same_both_ways(data, size, blocks[k]);
    /* cut short anywhere (every byte of the start, then in steps) */
    for (size_t cut = 0; cut < size; cut += cut < 300 ? 1 : 97)
        for (size_t k = 0; k < 2; k++)
            same_both_ways(data, cut, blocks[k]);
    /* damaged bytes in the header */
    uint8_t *bad = malloc(size);
    unsigned seed = 12345;
    for (int it = 0; it < 600; it++) {
        memcpy(bad, data, size);
        for (int j = 0; j < 3; j++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % (it % 2 ? 400 : size);
            seed = seed * 1103515245u + 12345u;
            bad[at] ^= (uint8_t)(1u << ((seed >> 16) % 8));
        }
        same_both_ways(bad, size, it % 3 == 0 ? 64 : 4096);
    }
    free(bad);
    free(data);
}

/* The header takes a few reads that grow; tensor bytes come in whole blocks,
 * once, and are then served from the cache. */
static void test_source_cache(void **state)
{
    (void)state;
    size_t size;
    uint8_t *data = sample_file(&size);
    gguf_memfile one = {"http://h/m.gguf", data, size};
    memsrc m = {&one, 1, 0, 0, 0, 0, false};
    gguf_source src = {mem_read, &m, 1024};
    gguf_error err;
    gguf_file *f = gguf_open_source(&src, one.name, &err);
    assert_non_null(f);
    uint64_t header = gguf_data_offset(f);
    print_message("  header %llu bytes: %llu reads, %llu bytes\n", (unsigned long long)header, (unsigned long long)m.reads,
                  (unsigned long long)m.bytes);
    assert_true(m.bytes < 2 * header + 2048);
    assert_true(m.reads <= 8);
    const gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
    assert_non_null(t);
    uint64_t r0 = m.reads, b0 = m.bytes;
    float row[64];
    uint64_t at = 30 * 256;   /* row 30: past the prefix, inside the data */
    assert_true(t->abs_offset + at > header);
    assert_int_equal(gguf_tensor_read(f, t, at, 256, row, NULL, &err), GGUF_OK);
    assert_true(row[0] == (float)((30 * 64) % 97) - 48.0f);
    assert_int_equal(m.reads, r0 + 1);
    assert_int_equal(m.last_off % 1024, 0);   /* block-aligned */
    assert_true(m.bytes - b0 <= 2048);
    assert_int_equal(gguf_tensor_read(f, t, at + 4, 200, row, NULL, &err), GGUF_OK);
    assert_int_equal(m.reads, r0 + 1);   /* cached */
    assert_int_equal(gguf_tensor_read(f, t, 0, t->n_bytes + 1, row, NULL, &err), GGUF_EARG);
    gguf_close(f);
    free(data);
}

static uint8_t *mem_shard(int no, int count, const char *tname, size_t *size)
{
    gguf_writer *w = gguf_writer_new(32);
    gguf_writer_set_u16(w, "split.no", (uint16_t)no);
    gguf_writer_set_u16(w, "split.count", (uint16_t)count);
    float d[32] = {0};
    d[0] = (float)no + 1;
    uint64_t ne[1] = {32};
    assert_int_equal(gguf_writer_add_tensor(w, tname, GGTYPE_F32, 1, ne, d), GGUF_OK);
    uint8_t *out;
    assert_int_equal(gguf_writer_to_memory(w, &out, size), GGUF_OK);
    gguf_writer_free(w);
    return out;
}

/* A split set: opened from any shard's URL, every shard asked of the source;
 * a missing shard is the usual split error. */
static void test_source_split(void **state)
{
    (void)state;
    size_t s[3];
    uint8_t *d[3] = {mem_shard(0, 3, "a", &s[0]), mem_shard(1, 3, "b", &s[1]), mem_shard(2, 3, "c", &s[2])};
    gguf_memfile files[3] = {
        {"http://h/x/M-00001-of-00003.gguf", d[0], s[0]},
        {"http://h/x/M-00002-of-00003.gguf", d[1], s[1]},
        {"http://h/x/M-00003-of-00003.gguf", d[2], s[2]},
    };
    memsrc m = {files, 3, 0, 0, 0, 0, false};
    gguf_source src = {mem_read, &m, 64};
    gguf_error err;
    gguf_file *f = gguf_open_source(&src, files[1].name, &err);
    assert_non_null(f);
    assert_int_equal(gguf_shard_count(f), 3);
    const gguf_tensor *t = gguf_find_tensor(f, "c");
    assert_non_null(t);
    assert_int_equal(t->shard, 2);
    float v;
    assert_int_equal(gguf_tensor_read(f, t, 0, 4, &v, NULL, &err), GGUF_OK);
    assert_true(v == 3.0f);
    gguf_close(f);
    m.n = 2;   /* shard 3 is gone */
    f = gguf_open_source(&src, files[0].name, &err);
    assert_null(f);
    assert_int_equal(err.code, GGUF_ESPLIT);
    char line[1400];
    print_message("  %s\n", gguf_error_format(&err, line, sizeof line));
    assert_non_null(strstr(err.msg, "shard 3 of 3 is missing"));
    for (int i = 0; i < 3; i++)
        free(d[i]);
}

/* The source's own errors come back as they are, with the name. */
static void test_source_errors(void **state)
{
    (void)state;
    size_t size;
    uint8_t *data = sample_file(&size);
    gguf_memfile one = {"http://h/m.gguf", data, size};
    memsrc m = {&one, 1, 0, 0, 0, 0, false};
    gguf_source src = {mem_read, &m, 1024};
    gguf_error err;
    char line[1400];
    assert_null(gguf_open_source(&src, "http://h/nope.gguf", &err));
    assert_int_equal(err.code, GGUF_ENOTFOUND);
    assert_string_equal(gguf_error_format(&err, line, sizeof line), "http://h/nope.gguf: HTTP 404 Not Found");
    gguf_file *f = gguf_open_source(&src, one.name, &err);
    assert_non_null(f);
    m.fail = true;
    const gguf_tensor *t = gguf_find_tensor(f, "output_norm.weight");
    float v[4];
    assert_int_equal(gguf_tensor_read(f, t, 0, sizeof v, v, NULL, &err), GGUF_EIO);
    assert_string_equal(gguf_error_format(&err, line, sizeof line), "http://h/m.gguf: timed out: no data from 127.0.0.1:1 for 1 s");
    gguf_close(f);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_same_as_memory),
        cmocka_unit_test(test_source_cache),
        cmocka_unit_test(test_source_split),
        cmocka_unit_test(test_source_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
