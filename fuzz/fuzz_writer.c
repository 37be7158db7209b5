/* libFuzzer target for the GGUF writer, as `ggscope quantize` drives it: open
 * any bytes with the reader; copy every key (v1 lengths and big-endian values
 * re-encoded), re-quantize each float or quantized tensor of a little-endian
 * file (dequantize, then Q8_0 when rows are whole blocks, else F32) and copy
 * the others' bytes; serialize; the result must open again with the same
 * keys, values, tensor names, shapes and types, and each tensor's bytes
 * those it was given. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"
#include "gguf.h"

static int same_value(const gguf_value *a, const gguf_value *b, int depth)
{
    if (a->type != b->type)
        return 0;
    if (a->type == GGUF_VT_STRING) {
        gguf_str x, y;
        return gguf_value_str(a, &x) == GGUF_OK && gguf_value_str(b, &y) == GGUF_OK && x.len == y.len &&
               !memcmp(x.ptr, y.ptr, x.len);
    }
    if (a->type == GGUF_VT_ARRAY) {
        if (a->arr_type != b->arr_type || a->arr_len != b->arr_len)
            return 0;
        uint64_t n = a->arr_len < 64 ? a->arr_len : 64;
        for (uint64_t i = 0; i < n && depth < 8; i++) {
            gguf_value x, y;
            if (gguf_arr_at(a, i, &x) != GGUF_OK || gguf_arr_at(b, i, &y) != GGUF_OK ||
                !same_value(&x, &y, depth + 1))
                return 0;
        }
        return 1;
    }
    double x, y;
    int64_t i, j;
    if (gguf_value_i64(a, &i) == GGUF_OK)
        return gguf_value_i64(b, &j) == GGUF_OK && i == j;
    if (gguf_value_f64(a, &x) == GGUF_OK)
        return gguf_value_f64(b, &y) == GGUF_OK && (x == y || (x != x && y != y));
    return 1;
}

/* The bytes `ggscope quantize` writes for tensor t, as this target does it:
 * a float or quantized tensor of a little-endian file re-quantized (to
 * Q8_0 when its rows are whole blocks, else F32, in *vals / *q), any other
 * copied. Sets *type and *bytes; returns -1 where the codec fails. */
static int derive(const gguf_file *f, const gguf_tensor *t, float **vals, uint8_t **q, uint32_t *type,
                  const void **bytes)
{
    const ggtype_traits *tr = ggtype_get(t->type);
    *type = t->type;
    *bytes = t->data;
    if (gguf_big_endian(f) || !(tr->is_float || tr->is_quantized) || t->ne[0] <= 0 || t->rows_unaligned ||
        t->n_elements > (1u << 20))
        return 0;
    free(*vals);
    free(*q);
    *vals = malloc((size_t)t->n_elements * sizeof **vals + 1);
    *q = malloc((size_t)t->n_elements * sizeof **vals + 1);
    if (!*vals || !*q || codec_dequantize(t->type, t->data, *vals, t->n_elements) != 0)
        return -1;
    uint64_t rows = t->n_elements / t->ne[0];
    if (t->ne[0] % 32 == 0) {
        *type = GGTYPE_Q8_0;
        if (codec_quantize(*type, *vals, *q, rows, t->ne[0], NULL) == 0)
            __builtin_trap();   /* a whole-block Q8_0 quantization cannot fail */
        *bytes = *q;
    } else {
        *type = GGTYPE_F32;
        *bytes = *vals;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *f = gguf_open_memory(data, size, "fuzz", NULL);
    if (!f)
        return 0;
    gguf_writer *w = gguf_writer_new(gguf_alignment(f));
    uint8_t *out = NULL;
    size_t out_size = 0;
    float *vals = NULL;
    uint8_t *q = NULL;
    uint32_t *types = NULL;
    uint64_t nt = gguf_tensor_count(f), nkv = gguf_kv_count(f), copied_kv = 0;
    if (!w)
        goto done;
    for (uint64_t i = 0; i < nkv; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (gguf_str_eq(kv->key, "general.alignment"))
            continue;
        if (gguf_writer_copy_kv(w, kv) != GGUF_OK)
            goto done;   /* e.g. a duplicate key after truncation to 64 KiB: refused, not written */
        copied_kv++;
    }
    types = calloc(nt ? (size_t)nt : 1, sizeof *types);
    if (!types)
        goto done;
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[80];
        if (t->name.len >= sizeof name || memchr(t->name.ptr, 0, (size_t)t->name.len) || !t->type_known ||
            !ggtype_get(t->type))
            goto done;   /* quantize refuses these (exit 2) */
        gguf_str_copy(t->name, name, sizeof name);
        uint32_t ty;
        const void *bytes;
        if (derive(f, t, &vals, &q, &ty, &bytes) != 0)
            goto done;
        types[i] = ty;
        if (gguf_writer_add_tensor(w, name, ty, t->n_dims, t->ne, bytes) != GGUF_OK)
            goto done;   /* a zero dimension: refused */
    }
    if (gguf_writer_to_memory(w, &out, &out_size) != GGUF_OK)
        goto done;
    gguf_error err;
    gguf_file *g = gguf_open_memory(out, out_size, "written", &err);
    if (!g) {
        char line[1024];
        fprintf(stderr, "the writer's output does not open: %s\n", gguf_error_format(&err, line, sizeof line));
        __builtin_trap();
    }
    if (gguf_kv_count(g) != copied_kv + (gguf_alignment(f) != 32) || gguf_tensor_count(g) != nt)
        __builtin_trap();
    for (uint64_t i = 0, k = 0; i < nkv; i++) {
        const gguf_kv *a = gguf_kv_at(f, i);
        if (gguf_str_eq(a->key, "general.alignment"))
            continue;
        const gguf_kv *b = gguf_kv_at(g, k++ + (gguf_alignment(f) != 32));
        if (a->key.len != b->key.len || memcmp(a->key.ptr, b->key.ptr, a->key.len) || !same_value(&a->value, &b->value, 0))
            __builtin_trap();
    }
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *a = gguf_tensor_at(f, i), *b = gguf_tensor_at(g, i);
        if (a->name.len != b->name.len || memcmp(a->name.ptr, b->name.ptr, a->name.len) || b->type != types[i] ||
            memcmp(a->ne, b->ne, sizeof a->ne) || a->n_dims != b->n_dims)
            __builtin_trap();
        /* the bytes given, whether copied or re-quantized (a Q8_0 block
         * re-quantized to Q8_0 need not keep its bytes) */
        uint32_t ty;
        const void *bytes;
        if (derive(f, a, &vals, &q, &ty, &bytes) != 0 || ty != b->type)
            __builtin_trap();
        if (b->n_bytes && memcmp(bytes, b->data, (size_t)b->n_bytes))
            __builtin_trap();
    }
    gguf_close(g);
done:
    free(out);
    free(vals);
    free(q);
    free(types);
    gguf_writer_free(w);
    gguf_close(f);
    return 0;
}
