/* libFuzzer target for the GGUF reader: open any bytes, then walk everything
 * the API offers (keys, values, array elements, tensors and their data). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gguf.h"

static volatile uint64_t sink;

static void walk_value(const gguf_value *v, int depth)
{
    gguf_str s;
    double d;
    if (v->type == GGUF_VT_STRING && gguf_value_str(v, &s) == GGUF_OK) {
        for (uint64_t i = 0; i < s.len; i++)
            sink += (uint8_t)s.ptr[i];
    } else if (v->type == GGUF_VT_ARRAY && depth < 10) {
        uint64_t n = v->arr_len < 300 ? v->arr_len : 300;
        for (uint64_t i = 0; i < n; i++) {
            gguf_value e;
            if (gguf_arr_at(v, i, &e) == GGUF_OK)
                walk_value(&e, depth + 1);
        }
        if (v->arr_len > 0) {
            gguf_value e;
            if (gguf_arr_at(v, v->arr_len - 1, &e) == GGUF_OK)
                walk_value(&e, depth + 1);
        }
        if (gguf_arr_data(v) && v->arr_len > 0)
            sink += ((const uint8_t *)gguf_arr_data(v))[0];
    } else if (gguf_value_f64(v, &d) == GGUF_OK) {
        sink += (uint64_t)(d == d);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_error err;
    gguf_file *f = gguf_open_memory(data, size, "fuzz", &err);
    if (!f) {
        char line[1024];
        gguf_error_format(&err, line, sizeof line);
        sink += strlen(line);
        return 0;
    }
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        char key[128];
        gguf_str_copy(kv->key, key, sizeof key);
        sink += gguf_find_kv(f, key) != NULL;
        walk_value(&kv->value, 0);
    }
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->data && t->n_bytes)
            sink += t->data[0] + t->data[t->n_bytes - 1];
        char name[80];
        sink += gguf_find_tensor(f, gguf_str_copy(t->name, name, sizeof name)) == t;
    }
    gguf_close(f);
    return 0;
}
