/* Internals shared by the gguf*.c files (not part of the public API): the
 * open file, its shards, and the parser's entry points. gguf.c parses one
 * shard; gguf_split.c maps files and follows split sets; gguf_access.c reads
 * values and tensors of an open file; gguf_writer.c uses gguf__vtype_size. */
#ifndef GGSCOPE_GGUF_INTERNAL_H
#define GGSCOPE_GGUF_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gguf.h"

typedef struct {
    char *path;              /* a file name, or a URL (whatever the source takes) */
    const uint8_t *base;     /* the mapping; for a remote shard, its first avail bytes */
    uint64_t size;           /* of the file */
    uint64_t avail;          /* bytes at base: size, or a prefix of a remote file */
    uint64_t need;           /* set by a parse that stopped at avail (see parse_shard) */
    bool mapped;
    bool remote;             /* read through the file's source (base is malloc'd) */
    uint64_t data_offset;
    uint64_t id[2];          /* identity of the file (device, inode; or table entry) */
    /* split.no / split.count as the shard's own metadata says (parse_shard) */
    bool has_split_no, has_split_count;
    uint64_t split_no, split_count;
    uint64_t split_no_off, split_count_off;   /* file offsets of the values */
} gguf_shard;

/* Lazily built offsets of a top-level array's elements (strings, nested arrays). */
typedef struct {
    uint64_t *offs;   /* byte offset of element i relative to value.data */
} arr_index;

struct gguf_file {
    uint32_t version;
    bool big_endian;
    uint32_t alignment;
    uint32_t n_shards;
    gguf_shard *shards;
    uint64_t n_kv;
    gguf_kv *kvs;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t *kv_hash;      /* open addressing: index + 1, 0 = empty */
    uint64_t kv_hash_cap;
    uint64_t *t_hash;
    uint64_t t_hash_cap;
    pthread_mutex_t index_lock;
    struct gguf_src *src;   /* remote shards' source and block cache, or NULL */
    atomic_int refs;        /* owners (gguf_retain); freed by the last gguf_close */
};

/* Set *err (when err is not NULL and holds no error yet: the first error
 * wins): code, file, byte offset and a printf-formatted message. */
void gguf__set_err(gguf_error *err, gguf_status code, const char *path, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The n-byte unsigned integer at p, little-endian (big-endian when be). */
uint64_t gguf__load_le(const uint8_t *p, int n, bool be);

/* Bytes of one value of a fixed-size type; 0 for strings and arrays. */
int gguf__vtype_size(gguf_vtype t);

/* A new, empty handle (its index lock initialised), or NULL. */
gguf_file *gguf__file_new(void);

/* Parse the header, metadata and tensor infos of shard `shard_idx` (already
 * mapped) into f, appending its tensors; the first shard sets the version,
 * byte order, metadata and alignment, a later one must agree. Returns false
 * with *err set. */
bool gguf__parse_shard(gguf_file *f, uint32_t shard_idx, gguf_error *err, bool first);

/* A remote shard's parse may stop because the prefix read so far is too
 * short: then it returns false with no error set and sh->need holds the
 * prefix length that lets it go further (the opener reads more, calls
 * gguf__unparse_shard and parses again). */
void gguf__unparse_shard(gguf_file *f, uint32_t shard_idx, bool first);

/* The source state of remote files (gguf_source.c): open, grow a shard's
 * prefix, free. */
struct gguf_src *gguf__source_new(const gguf_source *src);
bool gguf__source_map(struct gguf_src *s, gguf_shard *sh, const char *name, gguf_error *err);
bool gguf__source_grow(struct gguf_src *s, gguf_shard *sh, uint64_t need, gguf_error *err);
void gguf__source_free(struct gguf_src *s);

/* (Re)build the tensor-name index over all shards' tensors; a duplicate name
 * is an error. Returns false with *err set. */
bool gguf__build_tensor_hash(gguf_file *f, gguf_error *err);

#endif
