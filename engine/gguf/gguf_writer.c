/* GGUF writer: v3, little-endian, spec-valid alignment and padding.
 * Metadata is serialized as it is set; tensor infos and data at write time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afile.h"
#include "ggtype.h"
#include "gguf.h"
#include "gguf_internal.h"

typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} buf;

typedef struct {
    char *name;
    uint32_t type, n_dims;
    uint64_t ne[4];
    uint64_t n_bytes;
    uint64_t offset;
    uint8_t *data; /* owned copy, or NULL (filled by callback) */
} wtensor;

struct gguf_writer {
    uint32_t alignment;
    buf kv;
    uint64_t n_kv;
    char **keys;
    uint64_t keys_cap;
    wtensor *tensors;
    uint64_t n_tensors, tensors_cap;
};

static void buf_put(buf *b, const void *data, size_t n)
{
    if (b->oom || n == 0)
        return;   /* n == 0: data may be NULL (a writer without metadata) */
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u32(buf *b, uint32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    buf_put(b, x, 4);
}

static void put_u64(buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    buf_put(b, x, 8);
}

static void put_str(buf *b, const char *s, uint64_t n)
{
    put_u64(b, n);
    buf_put(b, s, (size_t)n);
}

gguf_writer *gguf_writer_new(uint32_t alignment)
{
    gguf_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->alignment = alignment ? alignment : 32;
    if (w->alignment % 8 != 0) {
        free(w);
        return NULL;
    }
    if (w->alignment != 32 && gguf_writer_set_u32(w, "general.alignment", w->alignment) != GGUF_OK) {
        gguf_writer_free(w);
        return NULL;
    }
    return w;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w)
        return;
    for (uint64_t i = 0; i < w->n_kv; i++)
        free(w->keys[i]);
    free(w->keys);
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        free(w->tensors[i].name);
        free(w->tensors[i].data);
    }
    free(w->tensors);
    free(w->kv.p);
    free(w);
}

/* Start a key: check for duplicates, write key and type. */
static gguf_status begin_kv(gguf_writer *w, const char *key, gguf_vtype t)
{
    size_t n = strlen(key);
    if (n == 0 || n > 65535)
        return GGUF_EARG;
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->keys[i], key))
            return GGUF_EARG;
    if (w->n_kv == w->keys_cap) {
        uint64_t cap = w->keys_cap ? w->keys_cap * 2 : 32;
        char **k = realloc(w->keys, cap * sizeof *k);
        if (!k)
            return GGUF_ENOMEM;
        w->keys = k;
        w->keys_cap = cap;
    }
    if (!(w->keys[w->n_kv] = strdup(key)))
        return GGUF_ENOMEM;
    w->n_kv++;
    put_str(&w->kv, key, n);
    put_u32(&w->kv, (uint32_t)t);
    return GGUF_OK;
}

static gguf_status end_kv(gguf_writer *w)
{
    return w->kv.oom ? GGUF_ENOMEM : GGUF_OK;
}

static gguf_status set_scalar(gguf_writer *w, const char *key, gguf_vtype t, uint64_t bits, int size)
{
    gguf_status s = begin_kv(w, key, t);
    if (s != GGUF_OK)
        return s;
    uint8_t x[8];
    for (int i = 0; i < size; i++)
        x[i] = (uint8_t)(bits >> (8 * i));
    buf_put(&w->kv, x, (size_t)size);
    return end_kv(w);
}

gguf_status gguf_writer_set_u8(gguf_writer *w, const char *k, uint8_t v) { return set_scalar(w, k, GGUF_VT_UINT8, v, 1); }
gguf_status gguf_writer_set_i8(gguf_writer *w, const char *k, int8_t v) { return set_scalar(w, k, GGUF_VT_INT8, (uint8_t)v, 1); }
gguf_status gguf_writer_set_u16(gguf_writer *w, const char *k, uint16_t v) { return set_scalar(w, k, GGUF_VT_UINT16, v, 2); }
gguf_status gguf_writer_set_i16(gguf_writer *w, const char *k, int16_t v) { return set_scalar(w, k, GGUF_VT_INT16, (uint16_t)v, 2); }
gguf_status gguf_writer_set_u32(gguf_writer *w, const char *k, uint32_t v) { return set_scalar(w, k, GGUF_VT_UINT32, v, 4); }
gguf_status gguf_writer_set_i32(gguf_writer *w, const char *k, int32_t v) { return set_scalar(w, k, GGUF_VT_INT32, (uint32_t)v, 4); }
gguf_status gguf_writer_set_u64(gguf_writer *w, const char *k, uint64_t v) { return set_scalar(w, k, GGUF_VT_UINT64, v, 8); }
gguf_status gguf_writer_set_i64(gguf_writer *w, const char *k, int64_t v) { return set_scalar(w, k, GGUF_VT_INT64, (uint64_t)v, 8); }
gguf_status gguf_writer_set_bool(gguf_writer *w, const char *k, bool v) { return set_scalar(w, k, GGUF_VT_BOOL, v ? 1 : 0, 1); }

gguf_status gguf_writer_set_f32(gguf_writer *w, const char *k, float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    return set_scalar(w, k, GGUF_VT_FLOAT32, b, 4);
}

gguf_status gguf_writer_set_f64(gguf_writer *w, const char *k, double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return set_scalar(w, k, GGUF_VT_FLOAT64, b, 8);
}

gguf_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v)
{
    gguf_status s = begin_kv(w, key, GGUF_VT_STRING);
    if (s != GGUF_OK)
        return s;
    put_str(&w->kv, v, strlen(v));
    return end_kv(w);
}

gguf_status gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_vtype et, const void *data, uint64_t n)
{
    int es = gguf__vtype_size(et);
    if (!es)
        return GGUF_EARG;
    gguf_status s = begin_kv(w, key, GGUF_VT_ARRAY);
    if (s != GGUF_OK)
        return s;
    put_u32(&w->kv, (uint32_t)et);
    put_u64(&w->kv, n);
    const uint8_t *p = data;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = 0;
        memcpy(&v, p + i * (uint64_t)es, (size_t)es); /* native (little-endian) order */
        uint8_t x[8];
        for (int k = 0; k < es; k++)
            x[k] = (uint8_t)(v >> (8 * k));
        buf_put(&w->kv, x, (size_t)es);
    }
    return end_kv(w);
}

gguf_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n)
{
    gguf_status s = begin_kv(w, key, GGUF_VT_ARRAY);
    if (s != GGUF_OK)
        return s;
    put_u32(&w->kv, GGUF_VT_STRING);
    put_u64(&w->kv, n);
    for (uint64_t i = 0; i < n; i++)
        put_str(&w->kv, strs[i], strlen(strs[i]));
    return end_kv(w);
}

/* Re-encode a value from any file (v1 32-bit lengths, big-endian) as v3 LE. */
static void put_value(buf *b, const gguf_value *v)
{
    gguf_value e;
    gguf_str s;
    uint64_t u;
    switch (v->type) {
    case GGUF_VT_STRING:
        gguf_value_str(v, &s);
        put_str(b, s.ptr, s.len);
        break;
    case GGUF_VT_ARRAY:
        put_u32(b, (uint32_t)v->arr_type);
        put_u64(b, v->arr_len);
        for (uint64_t i = 0; i < v->arr_len; i++)
            if (gguf_arr_at(v, i, &e) == GGUF_OK)
                put_value(b, &e);
        break;
    default: {
        int es = gguf__vtype_size(v->type);
        bool be = gguf_big_endian(v->file);
        u = 0;
        for (int i = 0; i < es; i++)
            u |= (uint64_t)v->data[be ? es - 1 - i : i] << (8 * i);
        uint8_t x[8];
        for (int k = 0; k < es; k++)
            x[k] = (uint8_t)(u >> (8 * k));
        buf_put(b, x, (size_t)es);
    }
    }
}

gguf_status gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv)
{
    char key[65536];
    /* keys are C strings here: one with a NUL byte (or too long) would be
     * written cut short, under another name */
    if (kv->key.len >= sizeof key || memchr(kv->key.ptr, 0, (size_t)kv->key.len))
        return GGUF_EARG;
    gguf_str_copy(kv->key, key, sizeof key);
    if (!strcmp(key, "general.alignment"))
        return GGUF_OK; /* the writer's own alignment applies */
    gguf_status s = begin_kv(w, key, kv->value.type);
    if (s != GGUF_OK)
        return s;
    put_value(&w->kv, &kv->value);
    return end_kv(w);
}

gguf_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                   const uint64_t *ne, const void *data)
{
    size_t nl = strlen(name);
    if (nl == 0 || nl > 64 || n_dims == 0 || n_dims > 4 || !ggtype_get(type))
        return GGUF_EARG;
    for (uint64_t i = 0; i < w->n_tensors; i++)
        if (!strcmp(w->tensors[i].name, name))
            return GGUF_EARG;
    wtensor t = {.type = type, .n_dims = n_dims, .ne = {1, 1, 1, 1}};
    bool ovf = false;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0)
            return GGUF_EARG;
        t.ne[d] = ne[d];
    }
    uint64_t bytes = ggtype_row_size(type, t.ne[0], &ovf);
    if (bytes == 0 || ovf)
        return GGUF_EARG;
    for (int d = 1; d < 4; d++)
        if (__builtin_mul_overflow(bytes, t.ne[d], &bytes))
            return GGUF_EARG;
    t.n_bytes = bytes;
    if (w->n_tensors == w->tensors_cap) {
        uint64_t cap = w->tensors_cap ? w->tensors_cap * 2 : 16;
        wtensor *nt = realloc(w->tensors, cap * sizeof *nt);
        if (!nt)
            return GGUF_ENOMEM;
        w->tensors = nt;
        w->tensors_cap = cap;
    }
    if (!(t.name = strdup(name)))
        return GGUF_ENOMEM;
    if (data) {
        t.data = malloc(bytes ? (size_t)bytes : 1);
        if (!t.data) {
            free(t.name);
            return GGUF_ENOMEM;
        }
        memcpy(t.data, data, (size_t)bytes);
    }
    w->tensors[w->n_tensors++] = t;
    return GGUF_OK;
}

/* Header + metadata + tensor infos + padding, into b; returns the data section size. */
static uint64_t build_head(gguf_writer *w, buf *b)
{
    buf_put(b, "GGUF", 4);
    put_u32(b, 3);
    put_u64(b, w->n_tensors);
    put_u64(b, w->n_kv);
    buf_put(b, w->kv.p, w->kv.n);
    uint64_t off = 0;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        wtensor *t = &w->tensors[i];
        put_str(b, t->name, strlen(t->name));
        put_u32(b, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            put_u64(b, t->ne[d]);
        put_u32(b, t->type);
        t->offset = off;
        put_u64(b, off);
        off += t->n_bytes;
        off += (w->alignment - off % w->alignment) % w->alignment;
    }
    static const uint8_t zeros[256];
    size_t pad = (w->alignment - b->n % w->alignment) % w->alignment;
    while (pad > 0) {
        size_t k = pad < sizeof zeros ? pad : sizeof zeros;
        buf_put(b, zeros, k);
        pad -= k;
    }
    return off;
}

gguf_status gguf_writer_to_memory(gguf_writer *w, uint8_t **out, size_t *size)
{
    buf b = {0};
    uint64_t data_size = build_head(w, &b);
    size_t head = b.n;
    for (uint64_t i = 0; i < w->n_tensors; i++)
        if (!w->tensors[i].data) {
            free(b.p);
            return GGUF_EARG;
        }
    uint8_t *p = b.oom ? NULL : realloc(b.p, head + (size_t)data_size + 1);
    if (!p) {
        free(b.p);
        return GGUF_ENOMEM;
    }
    memset(p + head, 0, (size_t)data_size);
    for (uint64_t i = 0; i < w->n_tensors; i++)
        memcpy(p + head + w->tensors[i].offset, w->tensors[i].data, (size_t)w->tensors[i].n_bytes);
    *out = p;
    *size = head + (size_t)data_size;
    return GGUF_OK;
}

gguf_status gguf_writer_write_to(gguf_writer *w, afile *a, gguf_tensor_fill_fn fill, void *user)
{
    buf b = {0};
    build_head(w, &b);
    if (b.oom) {
        free(b.p);
        return GGUF_ENOMEM;
    }
    gguf_status st = GGUF_OK;
    uint8_t *scratch = NULL;
    size_t scratch_cap = 0;
    if (afile_write(a, b.p, b.n) != 0) {
        st = GGUF_EIO;
        goto done;
    }
    uint64_t pos = 0;
    static const uint8_t zeros[256];
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        wtensor *t = &w->tensors[i];
        while (pos < t->offset) {
            uint64_t k = t->offset - pos < sizeof zeros ? t->offset - pos : sizeof zeros;
            if (afile_write(a, zeros, k) != 0) {
                st = GGUF_EIO;
                goto done;
            }
            pos += k;
        }
        const void *src = t->data;
        if (!src) {
            if (!fill) {
                st = GGUF_EARG;
                goto done;
            }
            if (t->n_bytes > scratch_cap) {
                free(scratch);
                scratch_cap = (size_t)t->n_bytes;
                scratch = malloc(scratch_cap ? scratch_cap : 1);
                if (!scratch) {
                    st = GGUF_ENOMEM;
                    goto done;
                }
            }
            if (fill(user, i, scratch, t->n_bytes) != 0) {
                st = GGUF_EARG;
                goto done;
            }
            src = scratch;
        }
        if (afile_write(a, src, t->n_bytes) != 0) {
            st = GGUF_EIO;
            goto done;
        }
        pos += t->n_bytes;
    }
    /* pad the last tensor's data to the alignment, as ggml does */
    if (pos % w->alignment && afile_write(a, zeros, w->alignment - pos % w->alignment) != 0)
        st = GGUF_EIO;
done:
    free(scratch);
    free(b.p);
    return st;
}

gguf_status gguf_writer_write(gguf_writer *w, const char *path, gguf_tensor_fill_fn fill, void *user)
{
    afile a;
    gguf_status st = GGUF_EIO;
    if (afile_open(&a, path) == 0) {
        st = gguf_writer_write_to(w, &a, fill, user);
        if (st == GGUF_OK && afile_commit(&a) != 0)
            st = GGUF_EIO;
    }
    int e = a.err;
    afile_close(&a);
    if (st == GGUF_EIO)
        errno = e;
    return st;
}
