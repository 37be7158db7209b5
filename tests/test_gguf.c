/* GGUF reader and writer: round trips, a corpus of corrupt files built in
 * memory, truncation at every byte, big-endian and v1 files, type traits and
 * the shared fixtures' manifest. Split models and naming: test_gguf_split.c. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggtype.h"
#include "gguf.h"
#include "testutil.h"

/* ---------------------------------------------------------------- a raw builder
 * Builds GGUF bytes field by field, in either byte order, so that tests can
 * write what no valid writer would. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool be;
    int lw; /* length width: 8, or 4 for v1 */
} raw;

static void raw_put(raw *r, const void *d, size_t n)
{
    if (r->n + n > r->cap) {
        r->cap = (r->n + n) * 2 + 64;
        r->p = realloc(r->p, r->cap);
        assert_non_null(r->p);
    }
    memcpy(r->p + r->n, d, n);
    r->n += n;
}

static void raw_uint(raw *r, uint64_t v, int n)
{
    uint8_t b[8];
    for (int i = 0; i < n; i++)
        b[r->be ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
    raw_put(r, b, (size_t)n);
}

static void raw_u32(raw *r, uint32_t v) { raw_uint(r, v, 4); }
static void raw_u64(raw *r, uint64_t v) { raw_uint(r, v, 8); }
static void raw_len(raw *r, uint64_t v) { raw_uint(r, v, r->lw); }
static void raw_str(raw *r, const char *s)
{
    raw_len(r, strlen(s));
    raw_put(r, s, strlen(s));
}

static void raw_header(raw *r, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    raw_put(r, "GGUF", 4);
    raw_u32(r, version);
    raw_len(r, n_tensors);
    raw_len(r, n_kv);
}

static void raw_kv_u32(raw *r, const char *key, uint32_t v)
{
    raw_str(r, key);
    raw_u32(r, GGUF_VT_UINT32);
    raw_u32(r, v);
}

static void raw_tensor(raw *r, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off)
{
    raw_str(r, name);
    raw_u32(r, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        raw_len(r, ne[d]);
    raw_u32(r, type);
    raw_u64(r, off);
}

static void raw_pad(raw *r, size_t align)
{
    static const uint8_t z[64];
    while (r->n % align)
        raw_put(r, z, 1);
}

static void raw_zeros(raw *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        raw_put(r, "", 1);
}

/* Open raw bytes; returns the error code and fills err. */
static gguf_status try_open(const raw *r, gguf_error *err)
{
    gguf_file *f = gguf_open_memory(r->p, r->n, "test.gguf", err);
    if (f) {
        gguf_close(f);
        return GGUF_OK;
    }
    return err->code;
}

/* Expect a format error whose message contains `needle`. */
static void expect_error(raw *r, const char *needle)
{
    gguf_error err;
    gguf_status s = try_open(r, &err);
    char line[1024];
    gguf_error_format(&err, line, sizeof line);
    print_message("  %-40s -> %s\n", needle, line);
    assert_int_not_equal(s, GGUF_OK);
    if (!strstr(err.msg, needle)) {
        print_message("expected '%s' in '%s'\n", needle, err.msg);
        fail();
    }
    /* every reader message says what was expected */
    if (!strstr(err.msg, "(expected")) {
        print_message("no '(expected' in '%s'\n", err.msg);
        fail();
    }
    /* the one-line form: "FILE: offset N: ..." */
    assert_non_null(strstr(line, "test.gguf: "));
    assert_null(strchr(line, '\n'));
    free(r->p);
    memset(r, 0, sizeof *r);
}

static raw new_raw(void)
{
    raw r = {0};
    r.lw = 8;
    return r;
}

/* ---------------------------------------------------------------- a valid file */

static uint8_t *make_valid(size_t *size, uint32_t alignment)
{
    gguf_writer *w = gguf_writer_new(alignment);
    assert_non_null(w);
    assert_int_equal(gguf_writer_set_str(w, "general.architecture", "llama"), GGUF_OK);
    assert_int_equal(gguf_writer_set_u8(w, "t.u8", 200), GGUF_OK);
    assert_int_equal(gguf_writer_set_i8(w, "t.i8", -100), GGUF_OK);
    assert_int_equal(gguf_writer_set_u16(w, "t.u16", 60000), GGUF_OK);
    assert_int_equal(gguf_writer_set_i16(w, "t.i16", -30000), GGUF_OK);
    assert_int_equal(gguf_writer_set_u32(w, "t.u32", 4000000000u), GGUF_OK);
    assert_int_equal(gguf_writer_set_i32(w, "t.i32", -2000000000), GGUF_OK);
    assert_int_equal(gguf_writer_set_f32(w, "t.f32", 1.5f), GGUF_OK);
    assert_int_equal(gguf_writer_set_bool(w, "t.bool", true), GGUF_OK);
    assert_int_equal(gguf_writer_set_u64(w, "t.u64", 18000000000000000000ull), GGUF_OK);
    assert_int_equal(gguf_writer_set_i64(w, "t.i64", -9000000000000000000ll), GGUF_OK);
    assert_int_equal(gguf_writer_set_f64(w, "t.f64", -2.25), GGUF_OK);
    const char *strs[] = {"alpha", "", "gamma \xe2\x96\x81 \xf0\x9f\x98\x80", "delta"};
    assert_int_equal(gguf_writer_set_arr_str(w, "t.strs", strs, 4), GGUF_OK);
    int32_t ints[5] = {1, -2, 3, -4, 5};
    assert_int_equal(gguf_writer_set_arr(w, "t.ints", GGUF_VT_INT32, ints, 5), GGUF_OK);
    assert_int_equal(gguf_writer_set_arr(w, "t.empty", GGUF_VT_FLOAT32, NULL, 0), GGUF_OK);
    /* duplicate keys are refused by the writer */
    assert_int_not_equal(gguf_writer_set_u32(w, "t.u32", 1), GGUF_OK);
    float a[64];
    for (int i = 0; i < 64; i++)
        a[i] = (float)i * 0.5f;
    uint64_t ne_a[2] = {16, 4}, ne_b[1] = {3};
    assert_int_equal(gguf_writer_add_tensor(w, "a.weight", GGTYPE_F32, 2, ne_a, a), GGUF_OK);
    assert_int_equal(gguf_writer_add_tensor(w, "b.bias", GGTYPE_F32, 1, ne_b, a), GGUF_OK);
    uint8_t q[18 * 2];
    for (int i = 0; i < 36; i++)
        q[i] = (uint8_t)(i * 7);
    uint64_t ne_q[1] = {64};
    assert_int_equal(gguf_writer_add_tensor(w, "c.q4", GGTYPE_Q4_0, 1, ne_q, q), GGUF_OK);
    assert_int_not_equal(gguf_writer_add_tensor(w, "c.q4", GGTYPE_F32, 1, ne_b, a), GGUF_OK);
    uint8_t *out;
    assert_int_equal(gguf_writer_to_memory(w, &out, size), GGUF_OK);
    gguf_writer_free(w);
    return out;
}

static void check_valid(const gguf_file *f)
{
    assert_int_equal(gguf_version(f), 3);
    assert_int_equal(gguf_kv_count(f), 15 + (gguf_alignment(f) != 32));
    assert_int_equal(gguf_tensor_count(f), 3);
    uint64_t u;
    int64_t i;
    double d;
    bool b;
    char s[64];
    assert_int_equal(gguf_get_cstr(f, "general.architecture", s, sizeof s), GGUF_OK);
    assert_string_equal(s, "llama");
    assert_int_equal(gguf_get_u64(f, "t.u8", &u), GGUF_OK);
    assert_int_equal(u, 200);
    assert_int_equal(gguf_get_i64(f, "t.i8", &i), GGUF_OK);
    assert_int_equal(i, -100);
    assert_int_equal(gguf_get_u64(f, "t.u16", &u), GGUF_OK);
    assert_int_equal(u, 60000);
    assert_int_equal(gguf_get_i64(f, "t.i16", &i), GGUF_OK);
    assert_int_equal(i, -30000);
    assert_int_equal(gguf_get_u64(f, "t.u32", &u), GGUF_OK);
    assert_int_equal(u, 4000000000u);
    assert_int_equal(gguf_get_i64(f, "t.i32", &i), GGUF_OK);
    assert_int_equal(i, -2000000000);
    assert_int_equal(gguf_get_f64(f, "t.f32", &d), GGUF_OK);
    assert_true(d == 1.5);
    assert_int_equal(gguf_get_bool(f, "t.bool", &b), GGUF_OK);
    assert_true(b);
    assert_int_equal(gguf_get_u64(f, "t.u64", &u), GGUF_OK);
    assert_true(u == 18000000000000000000ull);
    /* a uint64 above INT64_MAX is not an int64 */
    assert_int_equal(gguf_get_i64(f, "t.u64", &i), GGUF_ETYPE);
    assert_int_equal(gguf_get_i64(f, "t.i64", &i), GGUF_OK);
    assert_true(i == -9000000000000000000ll);
    assert_int_equal(gguf_get_f64(f, "t.f64", &d), GGUF_OK);
    assert_true(d == -2.25);
    /* typed getters say when the type differs, or the key is absent */
    assert_int_equal(gguf_get_u64(f, "general.architecture", &u), GGUF_ETYPE);
    assert_int_equal(gguf_get_bool(f, "t.u8", &b), GGUF_ETYPE);
    assert_int_equal(gguf_get_cstr(f, "t.u8", s, sizeof s), GGUF_ETYPE);
    assert_int_equal(gguf_get_i64(f, "t.i32.nope", &i), GGUF_ENOTFOUND);
    assert_int_equal(gguf_get_u64(f, "t.i8", &u), GGUF_ETYPE); /* negative */
    const gguf_value *arr;
    assert_int_equal(gguf_get_arr(f, "t.strs", &arr), GGUF_OK);
    assert_int_equal(arr->arr_type, GGUF_VT_STRING);
    assert_int_equal(arr->arr_len, 4);
    gguf_str gs;
    assert_int_equal(gguf_arr_str(arr, 2, &gs), GGUF_OK);
    assert_true(gguf_str_eq(gs, "gamma \xe2\x96\x81 \xf0\x9f\x98\x80"));
    assert_int_equal(gguf_arr_str(arr, 1, &gs), GGUF_OK);
    assert_int_equal(gs.len, 0);
    assert_int_equal(gguf_arr_str(arr, 4, &gs), GGUF_ENOTFOUND);
    assert_int_equal(gguf_get_arr(f, "t.ints", &arr), GGUF_OK);
    assert_int_equal(gguf_arr_i64(arr, 3, &i), GGUF_OK);
    assert_int_equal(i, -4);
    assert_int_equal(gguf_arr_str(arr, 0, &gs), GGUF_ETYPE);
    assert_int_equal(gguf_get_arr(f, "t.empty", &arr), GGUF_OK);
    assert_int_equal(arr->arr_len, 0);
    const gguf_tensor *t = gguf_find_tensor(f, "a.weight");
    assert_non_null(t);
    assert_int_equal(t->n_dims, 2);
    assert_int_equal(t->ne[0], 16);
    assert_int_equal(t->ne[1], 4);
    assert_int_equal(t->n_elements, 64);
    assert_int_equal(t->n_bytes, 256);
    assert_int_equal(t->abs_offset % gguf_alignment(f), 0);
    float v;
    memcpy(&v, t->data + 4 * 63, 4);
    assert_true(v == 31.5f);
    t = gguf_find_tensor(f, "c.q4");
    assert_non_null(t);
    assert_int_equal(t->n_bytes, 36);
    assert_int_equal(t->data[35], (uint8_t)(35 * 7));
    assert_null(gguf_find_tensor(f, "nope"));
}

static void test_roundtrip(void **state)
{
    (void)state;
    for (uint32_t align = 8; align <= 64; align *= 2) {
        size_t n;
        uint8_t *buf = make_valid(&n, align);
        gguf_error err;
        gguf_file *f = gguf_open_memory(buf, n, "valid.gguf", &err);
        if (!f) {
            char line[1024];
            print_message("%s\n", gguf_error_format(&err, line, sizeof line));
        }
        assert_non_null(f);
        assert_int_equal(gguf_alignment(f), align);
        check_valid(f);
        /* copy every key and tensor into a new writer: identical bytes */
        gguf_writer *w = gguf_writer_new(align);
        for (uint64_t i = 0; i < gguf_kv_count(f); i++)
            assert_int_equal(gguf_writer_copy_kv(w, gguf_kv_at(f, i)), GGUF_OK);
        for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            char name[80];
            assert_int_equal(gguf_writer_add_tensor(w, gguf_str_copy(t->name, name, sizeof name), t->type, t->n_dims, t->ne, t->data), GGUF_OK);
        }
        uint8_t *buf2;
        size_t n2;
        assert_int_equal(gguf_writer_to_memory(w, &buf2, &n2), GGUF_OK);
        assert_int_equal(n, n2);
        assert_memory_equal(buf, buf2, n);
        free(buf2);
        gguf_writer_free(w);
        gguf_close(f);
        free(buf);
    }
}

static void test_write_file_atomic(void **state)
{
    (void)state;
    size_t n;
    uint8_t *buf = make_valid(&n, 32);
    gguf_error err;
    gguf_file *src = gguf_open_memory(buf, n, "valid.gguf", &err);
    assert_non_null(src);
    gguf_writer *w = gguf_writer_new(32);
    for (uint64_t i = 0; i < gguf_kv_count(src); i++)
        gguf_writer_copy_kv(w, gguf_kv_at(src, i));
    for (uint64_t i = 0; i < gguf_tensor_count(src); i++) {
        const gguf_tensor *t = gguf_tensor_at(src, i);
        char name[80];
        gguf_writer_add_tensor(w, gguf_str_copy(t->name, name, sizeof name), t->type, t->n_dims, t->ne, t->data);
    }
    char path[512];
    snprintf(path, sizeof path, "%s", tu_tmp_path("atomic.gguf"));
    assert_int_equal(gguf_writer_write(w, path, NULL, NULL), GGUF_OK);
    gguf_writer_free(w);
    size_t n2;
    uint8_t *back = tu_read_file(path, &n2);
    assert_non_null(back);
    assert_int_equal(n2, n);
    assert_memory_equal(back, buf, n);
    gguf_file *f = gguf_open(path, &err);
    assert_non_null(f);
    check_valid(f);
    gguf_close(f);
    /* no temporary file left behind */
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    assert_int_not_equal(access(tmp, F_OK), 0);
    unlink(path);
    free(back);
    free(buf);
    gguf_close(src);
}

/* Two owners of one handle (the explorer and the chat): the mapping stays
 * valid until the last gguf_close; under ASan a use after the first close
 * or a double free would fail here. */
static void test_retain(void **state)
{
    (void)state;
    size_t n;
    uint8_t *buf = make_valid(&n, 32);
    char path[512];
    snprintf(path, sizeof path, "%s", tu_tmp_path("retain.gguf"));
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(buf, 1, n, fp), n);
    fclose(fp);
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    assert_non_null(f);
    assert_ptr_equal(gguf_retain(f), f);
    gguf_close(f);   /* the first owner leaves */
    check_valid(f);  /* the second still reads metadata and tensor data */
    gguf_close(f);
    assert_null(gguf_retain(NULL));
    unlink(path);
    free(buf);
}

/* ---------------------------------------------------------------- corrupt corpus */

static void test_corrupt_corpus(void **state)
{
    (void)state;
    raw r;
    uint64_t ne2[2] = {32, 2}, ne1[1] = {32};

    r = new_raw(); raw_put(&r, "GGUG", 4); raw_u32(&r, 3); raw_u64(&r, 0); raw_u64(&r, 0);
    expect_error(&r, "bad magic");
    r = new_raw(); raw_header(&r, 7, 0, 0);
    expect_error(&r, "unsupported GGUF version 7");
    r = new_raw(); raw_header(&r, 0, 0, 0);
    expect_error(&r, "unsupported GGUF version 0");
    /* bad value type */
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "a.b"); raw_u32(&r, 13); raw_u32(&r, 0);
    expect_error(&r, "invalid value type 13");
    /* bool not 0/1, scalar and in an array */
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "a.b"); raw_u32(&r, GGUF_VT_BOOL); raw_put(&r, "\x02", 1);
    expect_error(&r, "bool value is 2");
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "a.b"); raw_u32(&r, GGUF_VT_ARRAY); raw_u32(&r, GGUF_VT_BOOL); raw_u64(&r, 3); raw_put(&r, "\x01\x00\x05", 3);
    expect_error(&r, "bool array element 2 is 5");
    /* key longer than 65535 */
    r = new_raw(); raw_header(&r, 3, 0, 1);
    { char *k = malloc(65537); memset(k, 'k', 65536); k[65536] = 0; raw_str(&r, k); free(k); }
    raw_u32(&r, GGUF_VT_UINT8); raw_put(&r, "\x01", 1);
    expect_error(&r, "at most 65535");
    /* empty key */
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, ""); raw_u32(&r, GGUF_VT_UINT8); raw_put(&r, "\x01", 1);
    expect_error(&r, "is empty");
    /* more than 4 dims */
    r = new_raw(); raw_header(&r, 3, 1, 0);
    { uint64_t ne5[5] = {32, 1, 1, 1, 1}; raw_tensor(&r, "t", 5, ne5, GGTYPE_F32, 0); }
    raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "5 dimensions");
    /* zero dims */
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "t", 0, ne1, GGTYPE_F32, 0); raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "0 dimensions");
    /* a zero dimension */
    r = new_raw(); raw_header(&r, 3, 1, 0);
    { uint64_t nez[2] = {32, 0}; raw_tensor(&r, "t", 2, nez, GGTYPE_F32, 0); }
    raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "dimension 1 is 0");
    /* element-count overflow */
    r = new_raw(); raw_header(&r, 3, 1, 0);
    { uint64_t neo[3] = {1ull << 32, 1ull << 31, 4}; raw_tensor(&r, "t", 3, neo, GGTYPE_F32, 0); }
    raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "overflows");
    /* byte-size overflow (element count fits, bytes do not) */
    r = new_raw(); raw_header(&r, 3, 1, 0);
    { uint64_t neo[2] = {1ull << 31, 1ull << 31}; raw_tensor(&r, "t", 2, neo, GGTYPE_F64, 0); }
    raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "overflows");
    /* misaligned offset */
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "t", 1, ne1, GGTYPE_F32, 4); raw_pad(&r, 32); raw_zeros(&r, 256);
    expect_error(&r, "not a multiple of the alignment");
    /* offset past the end */
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "t", 1, ne1, GGTYPE_F32, 1024); raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "past the end");
    /* data running past the end: says how many bytes are missing */
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "t", 2, ne2, GGTYPE_F32, 0); raw_pad(&r, 32); raw_zeros(&r, 200);
    expect_error(&r, "truncated by 56 bytes");
    /* overlapping tensors */
    r = new_raw(); raw_header(&r, 3, 2, 0); raw_tensor(&r, "a", 2, ne2, GGTYPE_F32, 0); raw_tensor(&r, "b", 1, ne1, GGTYPE_F32, 128);
    raw_pad(&r, 32); raw_zeros(&r, 512);
    expect_error(&r, "overlaps");
    /* bad alignment values and types */
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_kv_u32(&r, "general.alignment", 0);
    expect_error(&r, "non-zero multiple of 8");
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_kv_u32(&r, "general.alignment", 12);
    expect_error(&r, "non-zero multiple of 8");
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "general.alignment"); raw_u32(&r, GGUF_VT_UINT8); raw_put(&r, "\x20", 1);
    expect_error(&r, "expected uint32");
    /* duplicate key, duplicate tensor name */
    r = new_raw(); raw_header(&r, 3, 0, 2); raw_kv_u32(&r, "a.b", 1); raw_kv_u32(&r, "a.b", 2);
    expect_error(&r, "duplicate key 'a.b'");
    r = new_raw(); raw_header(&r, 3, 2, 0); raw_tensor(&r, "a", 1, ne1, GGTYPE_F32, 0); raw_tensor(&r, "a", 1, ne1, GGTYPE_F32, 128);
    raw_pad(&r, 32); raw_zeros(&r, 512);
    expect_error(&r, "duplicate tensor name 'a'");
    /* counts the file cannot hold: refused before any allocation */
    r = new_raw(); raw_header(&r, 3, 1ull << 60, 0);
    expect_error(&r, "tensor count");
    r = new_raw(); raw_header(&r, 3, 0, 1ull << 62);
    expect_error(&r, "metadata key count");
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "a.b"); raw_u32(&r, GGUF_VT_ARRAY); raw_u32(&r, GGUF_VT_UINT64); raw_u64(&r, 1ull << 61);
    expect_error(&r, "array of");
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "a.b"); raw_u32(&r, GGUF_VT_ARRAY); raw_u32(&r, GGUF_VT_STRING); raw_u64(&r, 1ull << 40);
    expect_error(&r, "cannot fit");
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "a.b"); raw_u32(&r, GGUF_VT_STRING); raw_u64(&r, ~0ull);
    expect_error(&r, "string length");
    /* arrays nested too deep */
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "a.b"); raw_u32(&r, GGUF_VT_ARRAY);
    for (int k = 0; k < 20; k++) { raw_u32(&r, GGUF_VT_ARRAY); raw_u64(&r, 1); }
    raw_u32(&r, GGUF_VT_UINT8); raw_u64(&r, 0);
    expect_error(&r, "nested deeper");
    /* ne[0] not a multiple of the block size */
    r = new_raw(); raw_header(&r, 3, 1, 0);
    { uint64_t neb[1] = {33}; raw_tensor(&r, "t", 1, neb, GGTYPE_Q4_0, 0); }
    raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "block size");
    /* tensor name longer than 64 bytes */
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "a123456789012345678901234567890123456789012345678901234567890123456789", 1, ne1, GGTYPE_F32, 0);
    raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "tensor name is");
    /* a tensor with an empty name */
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "", 1, ne1, GGTYPE_F32, 0); raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "empty name");
    /* a fixed-size field cut off, a string cut off */
    r = new_raw(); raw_put(&r, "GGUF", 4); raw_u32(&r, 3); raw_u32(&r, 0);
    expect_error(&r, "runs past the end");
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_u64(&r, 100); raw_put(&r, "abc", 3);
    expect_error(&r, "string length 100");
    /* an array of strings whose elements run past the end */
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_str(&r, "a.b"); raw_u32(&r, GGUF_VT_ARRAY); raw_u32(&r, GGUF_VT_STRING); raw_u64(&r, 2);
    raw_str(&r, "x"); raw_u64(&r, 1000);
    expect_error(&r, "string length 1000");
    /* a tensor info section ending after the end of the file's data section */
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "t", 1, ne1, GGTYPE_F32, 0);
    expect_error(&r, "data section would start");
    /* data offset + size overflowing */
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "t", 1, ne1, GGTYPE_F32, ~0ull - 31); raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "overflows 64 bits");
    /* a dimension of 2^63 or more */
    r = new_raw(); raw_header(&r, 3, 1, 0);
    { uint64_t neh[1] = {1ull << 63}; raw_tensor(&r, "t", 1, neh, GGTYPE_F32, 0); }
    raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "dimension 0 is");
    /* a v1 file whose 32-bit counts cannot fit */
    r = new_raw(); r.lw = 4; raw_header(&r, 1, 0xffffffffu, 0);
    expect_error(&r, "tensor count");
    /* names from the file are quoted in messages: a newline in one must not
     * split the one-line error */
    r = new_raw(); raw_header(&r, 3, 0, 2); raw_kv_u32(&r, "a\nb", 1); raw_kv_u32(&r, "a\nb", 2);
    expect_error(&r, "duplicate key 'a\\x0ab'");
    r = new_raw(); raw_header(&r, 3, 2, 0); raw_tensor(&r, "x\ry", 1, ne1, GGTYPE_F32, 0); raw_tensor(&r, "x\ry", 1, ne1, GGTYPE_F32, 128);
    raw_pad(&r, 32); raw_zeros(&r, 512);
    expect_error(&r, "duplicate tensor name 'x\\x0dy'");
    r = new_raw(); raw_header(&r, 3, 1, 0); raw_tensor(&r, "a\n", 1, ne1, GGTYPE_F32, 0); raw_pad(&r, 32); raw_zeros(&r, 100);
    expect_error(&r, "tensor 'a\\x0a' data ends");
    /* a NUL byte inside a tensor name or a key: such a name cannot be looked
     * up by its C string (found by fuzz_split) */
    r = new_raw(); raw_header(&r, 3, 1, 0);
    raw_len(&r, 3); raw_put(&r, "a\0b", 3); raw_u32(&r, 1); raw_len(&r, 32); raw_u32(&r, GGTYPE_F32); raw_u64(&r, 0);
    raw_pad(&r, 32); raw_zeros(&r, 128);
    expect_error(&r, "NUL byte");
    r = new_raw(); raw_header(&r, 3, 0, 1); raw_len(&r, 4); raw_put(&r, "a.b\0", 4); raw_u32(&r, GGUF_VT_UINT8); raw_put(&r, "\x01", 1);
    expect_error(&r, "NUL byte");
    /* empty file, short file */
    r = new_raw();
    expect_error(&r, "empty");
    r = new_raw(); raw_put(&r, "GG", 2);
    expect_error(&r, "shorter than a header");
}

static void test_accidents(void **state)
{
    (void)state;
    raw r;
    r = new_raw();
    { const char *s = "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n"; raw_put(&r, s, strlen(s)); }
    expect_error(&r, "Git LFS pointer");
    r = new_raw();
    { const char *s = "\n  <!DOCTYPE html><html><body>404</body></html>"; raw_put(&r, s, strlen(s)); }
    expect_error(&r, "HTML");
    r = new_raw(); raw_put(&r, "tjgg", 4); raw_u32(&r, 3); raw_zeros(&r, 64);
    expect_error(&r, "GGJT-era");
    r = new_raw(); raw_put(&r, "lmgg", 4); raw_zeros(&r, 64);
    expect_error(&r, "GGML (unversioned)-era");
    /* a truncated download says how many bytes are missing */
    size_t n;
    uint8_t *buf = make_valid(&n, 32);
    r = new_raw();
    raw_put(&r, buf, n - 100);
    expect_error(&r, "truncated by 100 bytes");
    free(buf);
}

/* Unknown tensor types do not stop the file from opening. */
static void test_unknown_type(void **state)
{
    (void)state;
    raw r = new_raw();
    uint64_t ne1[1] = {32};
    raw_header(&r, 3, 2, 0);
    raw_tensor(&r, "future", 1, ne1, 99, 0);
    raw_tensor(&r, "known", 1, ne1, GGTYPE_F32, 0);
    raw_pad(&r, 32);
    raw_zeros(&r, 128);
    gguf_error err;
    gguf_file *f = gguf_open_memory(r.p, r.n, "u.gguf", &err);
    assert_non_null(f);
    const gguf_tensor *t = gguf_find_tensor(f, "future");
    assert_non_null(t);
    assert_false(t->type_known);
    assert_null(t->data);
    assert_string_equal(ggtype_name(t->type), "unknown");
    assert_true(gguf_find_tensor(f, "known")->type_known);
    gguf_close(f);
    free(r.p);
}

/* Truncating a valid file at every byte offset gives an error every time. */
static void truncate_everywhere(const uint8_t *buf, size_t n, size_t step_after, const char *what)
{
    size_t fails = 0, tries = 0;
    for (size_t cut = 0; cut < n; cut += (cut < step_after ? 1 : 997)) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exact-size copy: ASan sees any over-read */
        memcpy(copy, buf, cut);
        gguf_error err;
        gguf_file *f = gguf_open_memory(copy, cut, "cut.gguf", &err);
        tries++;
        if (f) {
            print_message("%s: cut at %zu of %zu opened without error\n", what, cut, n);
            gguf_close(f);
            fails++;
        } else {
            assert_int_not_equal(err.code, GGUF_OK);
            if (!strstr(err.msg, "(expected")) {
                print_message("%s: cut at %zu: no '(expected' in '%s'\n", what, cut, err.msg);
                fails++;
            }
        }
        free(copy);
    }
    print_message("  %s: %zu truncations, all refused, each saying what was expected\n", what, tries);
    assert_int_equal(fails, 0);
}

static void test_truncation(void **state)
{
    (void)state;
    size_t n;
    uint8_t *buf = make_valid(&n, 32);
    truncate_everywhere(buf, n, n, "writer-made file");
    free(buf);
    const char *p = tu_shared("models/stories260K.gguf");
    if (!p)
        TU_SKIP_NO_SHARED();
    size_t m;
    uint8_t *s = tu_read_file(p, &m);
    assert_non_null(s);
    gguf_error err;
    gguf_file *f = gguf_open_memory(s, m, "stories", &err);
    assert_non_null(f);
    size_t head = (size_t)gguf_data_offset(f);
    gguf_close(f);
    /* every byte of the header, then every 997th byte of the data */
    truncate_everywhere(s, m, head + 64, "stories260K.gguf");
    free(s);
}

/* ---------------------------------------------------------------- big-endian */

static uint8_t *build_endian(bool be, size_t *n)
{
    raw r = new_raw();
    r.be = be;
    uint64_t ne[2] = {4, 2};
    raw_header(&r, 3, 1, 3);
    raw_kv_u32(&r, "x.u32", 0x01020304);
    raw_str(&r, "x.arr");
    raw_u32(&r, GGUF_VT_ARRAY);
    raw_u32(&r, GGUF_VT_INT16);
    raw_u64(&r, 3);
    raw_uint(&r, (uint16_t)-5, 2);
    raw_uint(&r, 7, 2);
    raw_uint(&r, 300, 2);
    raw_str(&r, "x.s");
    raw_u32(&r, GGUF_VT_STRING);
    raw_str(&r, "hello");
    raw_tensor(&r, "t", 2, ne, GGTYPE_F32, 0);
    raw_pad(&r, 32);
    for (int i = 0; i < 8; i++) {
        float v = (float)i;
        uint32_t b;
        memcpy(&b, &v, 4);
        raw_u32(&r, b);
    }
    *n = r.n;
    return r.p;
}

static void test_big_endian(void **state)
{
    (void)state;
    for (int be = 0; be <= 1; be++) {
        size_t n;
        uint8_t *buf = build_endian(be, &n);
        gguf_error err;
        gguf_file *f = gguf_open_memory(buf, n, "e.gguf", &err);
        assert_non_null(f);
        assert_int_equal(gguf_big_endian(f), be);
        uint64_t u;
        assert_int_equal(gguf_get_u64(f, "x.u32", &u), GGUF_OK);
        assert_int_equal(u, 0x01020304);
        const gguf_value *a;
        assert_int_equal(gguf_get_arr(f, "x.arr", &a), GGUF_OK);
        int64_t i;
        assert_int_equal(gguf_arr_i64(a, 0, &i), GGUF_OK);
        assert_int_equal(i, -5);
        assert_int_equal(gguf_arr_i64(a, 2, &i), GGUF_OK);
        assert_int_equal(i, 300);
        /* no direct pointer to multi-byte elements in foreign byte order */
        if (be)
            assert_null(gguf_arr_data(a));
        else
            assert_non_null(gguf_arr_data(a));
        char s[16];
        assert_int_equal(gguf_get_cstr(f, "x.s", s, sizeof s), GGUF_OK);
        assert_string_equal(s, "hello");
        const gguf_tensor *t = gguf_find_tensor(f, "t");
        assert_non_null(t);
        assert_int_equal(t->ne[0], 4);
        assert_int_equal(t->ne[1], 2);
        gguf_close(f);
        free(buf);
    }
}

/* ---------------------------------------------------------------- v1, v2 files */

static void test_versions(void **state)
{
    (void)state;
    /* a v1 file built here: 32-bit counts and lengths */
    raw r = new_raw();
    r.lw = 4;
    uint64_t ne[1] = {8};
    raw_header(&r, 1, 1, 2);
    raw_kv_u32(&r, "a.b", 42);
    raw_str(&r, "a.s");
    raw_u32(&r, GGUF_VT_ARRAY);
    raw_u32(&r, GGUF_VT_STRING);
    raw_len(&r, 2);
    raw_str(&r, "one");
    raw_str(&r, "two");
    raw_str(&r, "t");
    raw_u32(&r, 1);
    raw_len(&r, ne[0]);
    raw_u32(&r, GGTYPE_F32);
    raw_u64(&r, 0);
    raw_pad(&r, 32);
    raw_zeros(&r, 32);
    gguf_error err;
    gguf_file *f = gguf_open_memory(r.p, r.n, "v1.gguf", &err);
    assert_non_null(f);
    assert_int_equal(gguf_version(f), 1);
    const gguf_value *a;
    gguf_str s;
    assert_int_equal(gguf_get_arr(f, "a.s", &a), GGUF_OK);
    assert_int_equal(gguf_arr_str(a, 1, &s), GGUF_OK);
    assert_true(gguf_str_eq(s, "two"));
    assert_int_equal(gguf_find_tensor(f, "t")->ne[0], 8);
    gguf_close(f);
    free(r.p);

    const char *p1 = tu_shared("models/tinyllamas-stories-260k-f32.gguf");
    if (!p1)
        TU_SKIP_NO_SHARED();
    static const char *const files[] = {"models/tinyllamas-stories-260k-f32.gguf", "models/tinyllamas-stories-260k-q8_0.gguf",
                                        "models/stories260K.gguf"};
    static const uint32_t versions[] = {1, 2, 3};
    for (int k = 0; k < 3; k++) {
        f = gguf_open(tu_shared(files[k]), &err);
        assert_non_null(f);
        assert_int_equal(gguf_version(f), versions[k]);
        const gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
        assert_non_null(t);
        assert_int_equal(t->ne[0], 64);
        assert_int_equal(t->ne[1], 512);
        assert_int_equal(gguf_get_arr(f, "tokenizer.ggml.tokens", &a), GGUF_OK);
        assert_int_equal(a->arr_len, 512);
        assert_int_equal(gguf_arr_str(a, 511, &s), GGUF_OK);
        assert_true(s.len > 0);
        gguf_close(f);
    }
}

/* A gguf_str may be {NULL, 0} (an absent value): copying and comparing it is
 * valid (memcpy / memcmp from NULL are undefined even for 0 bytes). */
static void test_str_null(void **state)
{
    (void)state;
    gguf_str none = {NULL, 0};
    char buf[8] = "xxxxxxx";
    assert_ptr_equal(gguf_str_copy(none, buf, sizeof buf), buf);
    assert_string_equal(buf, "");
    assert_true(gguf_str_eq(none, ""));
    assert_false(gguf_str_eq(none, "a"));
}

/* ---------------------------------------------------------------- traits */

static void test_traits(void **state)
{
    (void)state;
    static const uint32_t retired[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, 1000};
    for (size_t i = 0; i < sizeof retired / sizeof retired[0]; i++)
        assert_null(ggtype_get(retired[i]));
    assert_int_equal(ggtype_get(GGTYPE_Q4_K)->type_size, 144);
    assert_int_equal(ggtype_get(GGTYPE_BF16)->type_size, 2);
    assert_int_equal(ggtype_from_name("Q6_K"), GGTYPE_Q6_K);
    assert_int_equal(ggtype_from_name("bogus"), -1);
    bool ovf;
    assert_int_equal(ggtype_row_size(GGTYPE_Q4_0, 64, &ovf), 36);
    assert_int_equal(ggtype_row_size(GGTYPE_Q4_0, 65, &ovf), 0);
    assert_int_equal(ggtype_row_size(GGTYPE_F64, UINT64_MAX / 4, &ovf), 0);
    assert_true(ovf);
    assert_string_equal(ggtype_file_type_name(15), "MOSTLY_Q4_K_M");
    int n = 0;
    for (uint32_t i = 0; i < GGTYPE_COUNT; i++)
        n += ggtype_get(i) != NULL;
    assert_int_equal(n, 30 + 1 + 6 - 2); /* 0-29 less 4 and 5, BF16, TQ1/2, MXFP4, NVFP4, Q1_0, Q2_0 */
}

/* ---------------------------------------------------------------- the manifest */

static cJSON *run_info_json(const char *path)
{
    const char *bin = tu_bin();
    if (!bin)
        return NULL;
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "'%s' info --json '%s'", bin, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    int rc = pclose(p);
    cJSON *j = rc == 0 ? cJSON_Parse(buf) : NULL;
    free(buf);
    return j;
}

static void test_manifest(void **state)
{
    (void)state;
    const char *mp = tu_shared("fixtures/MANIFEST.tsv");
    if (!mp)
        TU_SKIP_NO_SHARED();
    char manifest[4096];
    snprintf(manifest, sizeof manifest, "%s", mp);
    char *text = (char *)tu_read_file(manifest, NULL);
    assert_non_null(text);
    int files = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "path\t", 5))
            continue;
        char *col[12] = {0};
        int nc = 0;
        for (char *c = line; nc < 12; nc++) {
            col[nc] = c;
            char *tab = strchr(c, '\t');
            if (!tab) {
                nc++;
                break;
            }
            *tab = 0;
            c = tab + 1;
        }
        assert_true(nc >= 11);
        char path[4096];
        snprintf(path, sizeof path, "%s", tu_shared(col[0]));
        cJSON *j = run_info_json(path);
        if (!j) {
            print_message("ggscope info --json failed on %s\n", path);
            fail();
        }
        assert_int_equal(cJSON_GetObjectItem(j, "version")->valuedouble, atoi(col[3]));
        assert_int_equal(cJSON_GetObjectItem(j, "tensor_count")->valuedouble, atoi(col[4]));
        assert_int_equal(cJSON_GetObjectItem(j, "kv_count")->valuedouble, atoi(col[5]));
        cJSON *md = cJSON_GetObjectItem(j, "metadata");
        cJSON *arch = cJSON_GetObjectItem(md, "general.architecture");
        if (arch)
            assert_string_equal(arch->valuestring, col[6]);
        else
            assert_string_equal(col[6], "fixture");
        cJSON *tm = cJSON_GetObjectItem(md, "tokenizer.ggml.model");
        assert_string_equal(tm ? tm->valuestring : "", col[7]);
        cJSON *pre = cJSON_GetObjectItem(md, "tokenizer.ggml.pre");
        assert_string_equal(pre ? pre->valuestring : "", col[8]);
        cJSON *toks = cJSON_GetObjectItem(md, "tokenizer.ggml.tokens");
        if (col[9][0])
            assert_int_equal(cJSON_GetObjectItem(toks, "length")->valuedouble, atoi(col[9]));
        else
            assert_null(toks);
        bool has_tmpl = cJSON_GetObjectItem(md, "tokenizer.chat_template") != NULL;
        assert_int_equal(has_tmpl, !strcmp(col[10], "yes"));
        /* tensors listed with name, type, shape, offset, bytes */
        cJSON *ts = cJSON_GetObjectItem(j, "tensors");
        assert_int_equal(cJSON_GetArraySize(ts), atoi(col[4]));
        cJSON *t0 = cJSON_GetArrayItem(ts, 0);
        if (t0) {
            assert_non_null(cJSON_GetObjectItem(t0, "name"));
            assert_non_null(cJSON_GetObjectItem(t0, "type"));
            assert_non_null(cJSON_GetObjectItem(t0, "shape"));
            assert_non_null(cJSON_GetObjectItem(t0, "offset"));
            assert_non_null(cJSON_GetObjectItem(t0, "bytes"));
        }
        cJSON_Delete(j);
        files++;
    }
    print_message("  %d manifest files agree with ggscope info --json\n", files);
    assert_true(files >= 30);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_write_file_atomic),
        cmocka_unit_test(test_retain),
        cmocka_unit_test(test_corrupt_corpus),
        cmocka_unit_test(test_accidents),
        cmocka_unit_test(test_unknown_type),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_big_endian),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_str_null),
        cmocka_unit_test(test_traits),
        cmocka_unit_test(test_manifest),
    };
    return cmocka_run_group_tests_name("gguf", tests, NULL, NULL);
}
