/* GGUF reader: the accessors of an open file (header, shards, metadata
 * values, arrays, tensors). Everything was validated at open time (gguf.c). */
#include "gguf.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_internal.h"

/* ------------------------------------------------------------------ header */

uint32_t gguf_version(const gguf_file *f) { return f->version; }
bool gguf_big_endian(const gguf_file *f) { return f->big_endian; }
uint32_t gguf_alignment(const gguf_file *f) { return f->alignment; }
uint64_t gguf_data_offset(const gguf_file *f) { return f->shards[0].data_offset; }
const char *gguf_path(const gguf_file *f) { return f->shards[0].path; }
uint32_t gguf_shard_count(const gguf_file *f) { return f->n_shards; }

uint64_t gguf_file_size(const gguf_file *f)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < f->n_shards; i++)
        s += f->shards[i].size;
    return s;
}

const uint8_t *gguf_shard_base(const gguf_file *f, uint32_t shard, uint64_t *size)
{
    if (shard >= f->n_shards)
        return NULL;
    if (size)
        *size = f->shards[shard].avail;   /* a remote shard: its header prefix */
    return f->shards[shard].base;
}

const char *gguf_shard_path(const gguf_file *f, uint32_t shard)
{
    return shard < f->n_shards ? f->shards[shard].path : NULL;
}

/* ------------------------------------------------------------------ metadata */

uint64_t gguf_kv_count(const gguf_file *f) { return f->n_kv; }

const gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i)
{
    return i < f->n_kv ? &f->kvs[i] : NULL;
}

static uint64_t rd(const gguf_value *v, const uint8_t *p, int n)
{
    return gguf__load_le(p, n, v->file && v->file->big_endian);
}

gguf_status gguf_value_i64(const gguf_value *v, int64_t *out)
{
    uint64_t u;
    switch (v->type) {
    case GGUF_VT_UINT8: *out = (uint8_t)rd(v, v->data, 1); return GGUF_OK;
    case GGUF_VT_INT8: *out = (int8_t)rd(v, v->data, 1); return GGUF_OK;
    case GGUF_VT_UINT16: *out = (uint16_t)rd(v, v->data, 2); return GGUF_OK;
    case GGUF_VT_INT16: *out = (int16_t)rd(v, v->data, 2); return GGUF_OK;
    case GGUF_VT_UINT32: *out = (uint32_t)rd(v, v->data, 4); return GGUF_OK;
    case GGUF_VT_INT32: *out = (int32_t)rd(v, v->data, 4); return GGUF_OK;
    case GGUF_VT_INT64: *out = (int64_t)rd(v, v->data, 8); return GGUF_OK;
    case GGUF_VT_UINT64:
        u = rd(v, v->data, 8);
        if (u > (uint64_t)INT64_MAX)
            return GGUF_ETYPE;
        *out = (int64_t)u;
        return GGUF_OK;
    default: return GGUF_ETYPE;
    }
}

gguf_status gguf_value_u64(const gguf_value *v, uint64_t *out)
{
    if (v->type == GGUF_VT_UINT64) {
        *out = rd(v, v->data, 8);
        return GGUF_OK;
    }
    int64_t i;
    gguf_status s = gguf_value_i64(v, &i);
    if (s != GGUF_OK)
        return s;
    if (i < 0)
        return GGUF_ETYPE;
    *out = (uint64_t)i;
    return GGUF_OK;
}

gguf_status gguf_value_f64(const gguf_value *v, double *out)
{
    if (v->type == GGUF_VT_FLOAT32) {
        uint32_t b = (uint32_t)rd(v, v->data, 4);
        float x;
        memcpy(&x, &b, 4);
        *out = x;
        return GGUF_OK;
    }
    if (v->type == GGUF_VT_FLOAT64) {
        uint64_t b = rd(v, v->data, 8);
        memcpy(out, &b, 8);
        return GGUF_OK;
    }
    if (v->type == GGUF_VT_BOOL) {
        *out = v->data[0];
        return GGUF_OK;
    }
    if (v->type == GGUF_VT_UINT64) {
        *out = (double)rd(v, v->data, 8);
        return GGUF_OK;
    }
    int64_t i;
    gguf_status s = gguf_value_i64(v, &i);
    if (s == GGUF_OK)
        *out = (double)i;
    return s;
}

gguf_status gguf_value_str(const gguf_value *v, gguf_str *out)
{
    if (v->type != GGUF_VT_STRING)
        return GGUF_ETYPE;
    int lw = v->file && v->file->version == 1 ? 4 : 8;
    out->len = rd(v, v->data, lw);
    out->ptr = (const char *)v->data + lw;
    return GGUF_OK;
}

static const gguf_value *find_val(const gguf_file *f, const char *key)
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    return kv ? &kv->value : NULL;
}

gguf_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out)
{
    const gguf_value *v = find_val(f, key);
    return v ? gguf_value_u64(v, out) : GGUF_ENOTFOUND;
}

gguf_status gguf_get_i64(const gguf_file *f, const char *key, int64_t *out)
{
    const gguf_value *v = find_val(f, key);
    return v ? gguf_value_i64(v, out) : GGUF_ENOTFOUND;
}

gguf_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out)
{
    uint64_t u;
    gguf_status s = gguf_get_u64(f, key, &u);
    if (s != GGUF_OK)
        return s;
    if (u > UINT32_MAX)
        return GGUF_ETYPE;
    *out = (uint32_t)u;
    return GGUF_OK;
}

gguf_status gguf_get_f64(const gguf_file *f, const char *key, double *out)
{
    const gguf_value *v = find_val(f, key);
    if (!v)
        return GGUF_ENOTFOUND;
    if (v->type == GGUF_VT_STRING || v->type == GGUF_VT_ARRAY || v->type == GGUF_VT_BOOL)
        return GGUF_ETYPE;
    return gguf_value_f64(v, out);
}

gguf_status gguf_get_bool(const gguf_file *f, const char *key, bool *out)
{
    const gguf_value *v = find_val(f, key);
    if (!v)
        return GGUF_ENOTFOUND;
    if (v->type != GGUF_VT_BOOL)
        return GGUF_ETYPE;
    *out = v->data[0] != 0;
    return GGUF_OK;
}

gguf_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out)
{
    const gguf_value *v = find_val(f, key);
    return v ? gguf_value_str(v, out) : GGUF_ENOTFOUND;
}

gguf_status gguf_get_cstr(const gguf_file *f, const char *key, char *buf, size_t cap)
{
    gguf_str s;
    gguf_status st = gguf_get_str(f, key, &s);
    if (st == GGUF_OK)
        gguf_str_copy(s, buf, cap);
    return st;
}

gguf_status gguf_get_arr(const gguf_file *f, const char *key, const gguf_value **out)
{
    const gguf_value *v = find_val(f, key);
    if (!v)
        return GGUF_ENOTFOUND;
    if (v->type != GGUF_VT_ARRAY)
        return GGUF_ETYPE;
    *out = v;
    return GGUF_OK;
}

/* Size in bytes of the (already validated) value of type t at p. */
static uint64_t value_size_at(const gguf_file *f, gguf_vtype t, const uint8_t *p)
{
    int es = gguf__vtype_size(t);
    if (es)
        return (uint64_t)es;
    int lw = f->version == 1 ? 4 : 8;
    if (t == GGUF_VT_STRING)
        return (uint64_t)lw + gguf__load_le(p, lw, f->big_endian);
    /* nested array: type + count + elements */
    gguf_vtype et = (gguf_vtype)gguf__load_le(p, 4, f->big_endian);
    uint64_t n = gguf__load_le(p + 4, lw, f->big_endian), s = 4 + (uint64_t)lw;
    int ees = gguf__vtype_size(et);
    if (ees)
        return s + n * (uint64_t)ees;
    for (uint64_t i = 0; i < n; i++)
        s += value_size_at(f, et, p + s);
    return s;
}

static bool is_top_level(const gguf_file *f, const gguf_value *v)
{
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (&f->kvs[i].value == v)
            return true;
    return false;
}

gguf_status gguf_arr_at(const gguf_value *arr, uint64_t i, gguf_value *out)
{
    if (arr->type != GGUF_VT_ARRAY || !arr->file)
        return GGUF_ETYPE;
    if (i >= arr->arr_len)
        return GGUF_ENOTFOUND;
    const gguf_file *f = arr->file;
    int es = gguf__vtype_size(arr->arr_type);
    uint64_t off;
    if (es) {
        off = i * (uint64_t)es;
    } else {
        arr_index *ix = arr->index_;
        /* the first few elements are cheaper to walk to than to index */
        if (!ix && i >= 64 && is_top_level(f, arr)) {
            gguf_file *mf = (gguf_file *)f;
            pthread_mutex_lock(&mf->index_lock);
            ix = ((gguf_value *)arr)->index_;
            if (!ix) {
                ix = calloc(1, sizeof *ix);
                if (ix)
                    ix->offs = malloc(arr->arr_len * sizeof *ix->offs);
                if (!ix || !ix->offs) {
                    free(ix);
                    pthread_mutex_unlock(&mf->index_lock);
                    return GGUF_ENOMEM;
                }
                uint64_t o = 0;
                for (uint64_t k = 0; k < arr->arr_len; k++) {
                    ix->offs[k] = o;
                    o += value_size_at(f, arr->arr_type, arr->data + o);
                }
                ((gguf_value *)arr)->index_ = ix;
            }
            pthread_mutex_unlock(&mf->index_lock);
        }
        if (ix) {
            off = ix->offs[i];
        } else {
            off = 0;
            for (uint64_t k = 0; k < i; k++)
                off += value_size_at(f, arr->arr_type, arr->data + off);
        }
    }
    memset(out, 0, sizeof *out);
    out->file = f;
    out->type = arr->arr_type;
    out->arr_type = GGUF_VT_COUNT;
    out->data = arr->data + off;
    out->offset = arr->offset + off;
    out->size = value_size_at(f, arr->arr_type, out->data);
    if (out->type == GGUF_VT_ARRAY) {
        int lw = f->version == 1 ? 4 : 8;
        out->arr_type = (gguf_vtype)gguf__load_le(out->data, 4, f->big_endian);
        out->arr_len = gguf__load_le(out->data + 4, lw, f->big_endian);
        out->data += 4 + lw;
        out->offset += 4 + (uint64_t)lw;
        out->size -= 4 + (uint64_t)lw;
    }
    return GGUF_OK;
}

gguf_status gguf_arr_str(const gguf_value *arr, uint64_t i, gguf_str *out)
{
    if (arr->type != GGUF_VT_ARRAY || arr->arr_type != GGUF_VT_STRING)
        return GGUF_ETYPE;
    gguf_value v;
    gguf_status s = gguf_arr_at(arr, i, &v);
    return s == GGUF_OK ? gguf_value_str(&v, out) : s;
}

gguf_status gguf_arr_f64(const gguf_value *arr, uint64_t i, double *out)
{
    gguf_value v;
    gguf_status s = gguf_arr_at(arr, i, &v);
    if (s != GGUF_OK)
        return s;
    if (v.type == GGUF_VT_STRING || v.type == GGUF_VT_ARRAY)
        return GGUF_ETYPE;
    return gguf_value_f64(&v, out);
}

gguf_status gguf_arr_i64(const gguf_value *arr, uint64_t i, int64_t *out)
{
    gguf_value v;
    gguf_status s = gguf_arr_at(arr, i, &v);
    return s == GGUF_OK ? gguf_value_i64(&v, out) : s;
}

const void *gguf_arr_data(const gguf_value *arr)
{
    if (arr->type != GGUF_VT_ARRAY || !gguf__vtype_size(arr->arr_type))
        return NULL;
    if (arr->file && arr->file->big_endian && gguf__vtype_size(arr->arr_type) > 1)
        return NULL;
    return arr->data;
}

/* ------------------------------------------------------------------ tensors */

uint64_t gguf_tensor_count(const gguf_file *f) { return f->n_tensors; }

const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i)
{
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

/* ------------------------------------------------------------------ helpers */

bool gguf_str_eq(gguf_str s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0); /* s.ptr may be NULL when empty */
}

char *gguf_str_copy(gguf_str s, char *buf, size_t cap)
{
    if (cap == 0)
        return buf;
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    if (n) /* s.ptr may be NULL when empty (an absent value) */
        memcpy(buf, s.ptr, n);
    buf[n] = 0;
    return buf;
}
