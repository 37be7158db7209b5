/* libFuzzer target for split models: the input becomes 1 to 4 in-memory
 * files named like shards, and one of them is opened through
 * gguf_open_memfiles, the same split logic gguf_open uses for files on disk.
 *
 * Input layout:
 *   byte 0: bits 0-1: number of files N - 1 (1..4)
 *           bits 2-3: the count in the names, M - 1 ("f-0000K-of-0000M.gguf")
 *           bit 4:    the first file is named "f.gguf" instead
 *   byte 1: which file to open (mod N)
 *   then files 1..N-1 each as a 2-byte little-endian length and that many
 *   bytes (cut at the end of the input); the last file takes the rest.
 * Seeds (fuzz/seeds/split/): valid 1-, 2- and 3-shard sets, a shard that
 * names itself as a later one, and sets whose names and counts disagree. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

static volatile uint64_t sink;

/* Every tensor's data must lie inside its own shard. */
static void check_tensors(const gguf_file *f)
{
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        uint64_t size;
        const uint8_t *base = gguf_shard_base(f, t->shard, &size);
        if (!base)
            abort();
        if (t->data) {
            if (t->data < base || t->abs_offset > size || t->n_bytes > size - t->abs_offset)
                abort();
            if (t->n_bytes)
                sink += t->data[0] + t->data[t->n_bytes - 1];
        }
        char name[80];
        if (gguf_find_tensor(f, gguf_str_copy(t->name, name, sizeof name)) != t)
            abort(); /* names are unique across shards */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned n = (data[0] & 3u) + 1, m = ((data[0] >> 2) & 3u) + 1;
    bool plain = data[0] & 0x10;
    unsigned pick = data[1] % n;
    const uint8_t *p = data + 2;
    size_t left = size - 2;
    char names[4][32];
    gguf_memfile files[4];
    for (unsigned k = 0; k < n; k++) {
        size_t len = left;
        if (k + 1 < n) {
            len = left >= 2 ? (size_t)(p[0] | p[1] << 8) : 0;
            size_t hdr = left >= 2 ? 2 : left;
            p += hdr, left -= hdr;
            if (len > left)
                len = left;
        }
        if (plain && k == 0)
            snprintf(names[k], sizeof names[k], "f.gguf");
        else
            snprintf(names[k], sizeof names[k], "f-%05u-of-%05u.gguf", k + 1, m);
        /* an exact-size copy, so that ASan sees any read past a shard */
        uint8_t *copy = malloc(len ? len : 1);
        if (!copy)
            return 0;
        memcpy(copy, p, len);
        files[k] = (gguf_memfile){names[k], copy, len};
        p += len, left -= len;
    }
    gguf_error err;
    gguf_file *f = gguf_open_memfiles(files, n, names[pick], &err);
    if (f) {
        if (gguf_shard_count(f) < 1 || gguf_shard_count(f) > n)
            abort();
        for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
            const gguf_kv *kv = gguf_kv_at(f, i);
            char key[128];
            gguf_str_copy(kv->key, key, sizeof key);
            sink += gguf_find_kv(f, key) != NULL;
        }
        check_tensors(f);
        sink += gguf_file_size(f);
        gguf_close(f);
    } else {
        char line[1024];
        gguf_error_format(&err, line, sizeof line);
        if (err.code == GGUF_OK || strchr(line, '\n'))
            abort(); /* a failure always says why, on one line */
        sink += strlen(line);
    }
    for (unsigned k = 0; k < n; k++)
        free((void *)files[k].data);
    return 0;
}
