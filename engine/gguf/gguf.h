/* gguf: a reader that trusts nothing, and a writer, for GGUF v1, v2 and v3.
 *
 * The reader maps the file read-only and validates the whole structure at open
 * time (every count, length, dimension product and offset against overflow and
 * the file size). Strings, arrays and tensor data stay in the mapping: nothing
 * is copied, and large arrays are only indexed when asked for. A remote file
 * (gguf_open_source) goes through the same parser over its header's bytes;
 * its tensor data is read on demand (gguf_tensor_read). */
#ifndef GGSCOPE_GGUF_H
#define GGSCOPE_GGUF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    GGUF_VT_UINT8 = 0, GGUF_VT_INT8 = 1, GGUF_VT_UINT16 = 2, GGUF_VT_INT16 = 3,
    GGUF_VT_UINT32 = 4, GGUF_VT_INT32 = 5, GGUF_VT_FLOAT32 = 6, GGUF_VT_BOOL = 7,
    GGUF_VT_STRING = 8, GGUF_VT_ARRAY = 9, GGUF_VT_UINT64 = 10, GGUF_VT_INT64 = 11,
    GGUF_VT_FLOAT64 = 12,
    GGUF_VT_COUNT = 13
} gguf_vtype;

typedef enum {
    GGUF_OK = 0,
    GGUF_EIO,        /* cannot open, stat or map the file */
    GGUF_EFORMAT,    /* malformed file; offset says where */
    GGUF_ENOTFOUND,  /* no such key / tensor / element */
    GGUF_ETYPE,      /* the value has another type than asked for */
    GGUF_ENOMEM,
    GGUF_ESPLIT,     /* a shard is missing or does not match */
    GGUF_EARG,       /* bad argument from the caller */
} gguf_status;

/* Error of an open: code, byte offset in the file, one line of text. */
typedef struct {
    gguf_status code;
    uint64_t offset;     /* where the problem was found (EFORMAT) */
    char path[256];      /* the file concerned (a shard for split models) */
    char msg[512];       /* "what was wrong (what was expected)" */
} gguf_error;

/* A string in the mapping: NOT NUL-terminated. */
typedef struct {
    const char *ptr;
    uint64_t len;
} gguf_str;

typedef struct gguf_file gguf_file;

/* A metadata value. For arrays, `arr_type`/`arr_len` describe the elements;
 * `data` points at the first element in the mapping. */
typedef struct {
    gguf_vtype type;
    gguf_vtype arr_type;   /* valid when type == GGUF_VT_ARRAY */
    uint64_t arr_len;
    const uint8_t *data;   /* the value's bytes in the mapping (after the array header) */
    uint64_t size;         /* bytes of the value (whole payload for arrays) */
    uint64_t offset;       /* file offset of `data` */
    const gguf_file *file; /* owner (byte order, string length width) */
    void *index_;          /* private: lazily built element offsets */
} gguf_value;

typedef struct {
    gguf_str key;
    uint64_t key_offset;   /* file offset of the key's length field */
    gguf_value value;
} gguf_kv;

typedef struct {
    gguf_str name;
    uint32_t n_dims;
    uint64_t ne[4];        /* dimensions, ne[0] fastest; unused ones are 1 */
    uint32_t type;         /* ggml type id (may be unknown: see type_known) */
    bool type_known;
    bool rows_unaligned;   /* ne[0] is not a multiple of the block size: blocks
                            * run across rows (old converters; llama.cpp refuses) */
    uint64_t n_elements;
    uint64_t n_bytes;      /* 0 when the type is unknown */
    uint64_t offset;       /* relative to its shard's data section */
    uint64_t abs_offset;   /* absolute file offset in its shard */
    uint64_t info_offset;  /* file offset of the tensor info */
    uint32_t shard;        /* 0-based shard index */
    const uint8_t *data;   /* in the mapping; NULL when the type is unknown or
                            * the file is remote (then: gguf_tensor_read) */
} gguf_tensor;

/* ---- opening ---- */

/* Open and validate `path`. Split models (NAME-0000K-of-0000N.gguf with
 * split.count > 1) open every shard as one model, from any shard: the names,
 * split.no and split.count of every shard must agree (else GGUF_ESPLIT).
 * Returns NULL on error and fills *err (if not NULL). Close with gguf_close(). */
gguf_file *gguf_open(const char *path, gguf_error *err);

/* Validate a GGUF image in memory (not copied: must outlive the handle).
 * `name` is used in errors. Split models are not followed. */
gguf_file *gguf_open_memory(const void *data, size_t size, const char *name, gguf_error *err);

/* One named file of an in-memory file set (gguf_open_memfiles). */
typedef struct {
    const char *name;    /* the name a path would have, e.g. "m-00001-of-00002.gguf" */
    const void *data;    /* not copied: must outlive the handle */
    size_t size;
} gguf_memfile;

/* Open `path` exactly as gguf_open does, split sets included, but look it and
 * its shards up by name in `files` (n entries) instead of on disk; a name not
 * in the table is a missing file. For tests and the split fuzzer. */
gguf_file *gguf_open_memfiles(const gguf_memfile *files, size_t n, const char *path, gguf_error *err);

/* Where a remote file's bytes come from (the app implements it over HTTP).
 * The reader parses the same way as a mapped file: it reads a prefix (1 MiB,
 * doubled until the metadata and tensor table fit, at most 256 MiB), validates
 * it with the file's size, and fetches tensor bytes on demand through a block
 * cache (64 blocks of 1 MiB, least recently used first out). */
typedef struct {
    /* Read up to len bytes at `offset` of the file `name` into dst. Blocking
     * for its caller (the opener's thread, or whoever calls gguf_read). Sets
     * *total to the file's size. Returns the bytes read (fewer than len only
     * at the end of the file) or -1 with err set: GGUF_ENOTFOUND when there is
     * no such file, else GGUF_EIO; msg is one line. Called from one thread at
     * a time per file set. */
    int64_t (*read)(void *ctx, const char *name, uint64_t offset, uint64_t len, void *dst,
                    uint64_t *total, const atomic_bool *cancel, gguf_error *err);
    void *ctx;
    uint32_t block;   /* cache block and first read in bytes; 0: 1 MiB (tests use small ones) */
} gguf_source;

/* Open `name` (split sets too: every shard name is asked of the source) from
 * `src` (copied; ctx must outlive the handle). The same validation and errors
 * as gguf_open. Tensors have data == NULL: read them with gguf_tensor_read. */
gguf_file *gguf_open_source(const gguf_source *src, const char *name, gguf_error *err);

/* Whether the file's bytes come from a source (tensor data not in memory). */
bool gguf_is_remote(const gguf_file *f);

/* Read len bytes at `offset` of shard `shard` into dst: from the mapping, or
 * through the source and its block cache (block-aligned ranges; blocking, any
 * thread; `cancel` may be NULL). Returns GGUF_OK; GGUF_EARG for a range
 * outside the shard; else the source's error in *err. */
gguf_status gguf_read(const gguf_file *f, uint32_t shard, uint64_t offset, uint64_t len, void *dst,
                      const atomic_bool *cancel, gguf_error *err);

/* gguf_read, but a mapped file's bytes come from the file itself (pread)
 * while it is the file that was mapped (same device, inode and size), so
 * that the mapping's pages do not join the process's resident set
 * (model_copy); from the mapping when the file was replaced or cannot be
 * read. */
gguf_status gguf_read_file(const gguf_file *f, uint32_t shard, uint64_t offset, uint64_t len, void *dst,
                           const atomic_bool *cancel, gguf_error *err);

/* len bytes at `offset` of tensor t's data (gguf_read in its shard). */
gguf_status gguf_tensor_read(const gguf_file *f, const gguf_tensor *t, uint64_t offset, uint64_t len, void *dst,
                             const atomic_bool *cancel, gguf_error *err);

/* A remote file's traffic so far: bytes and requests read from the source. */
void gguf_source_stats(const gguf_file *f, uint64_t *bytes, uint64_t *requests);

/* Another owner of an open handle (the explorer and the chat share one
 * mapping): each owner calls gguf_close once; the last close frees it. The
 * handle is read-only after opening, so owners may read it from any thread.
 * Returns f. */
gguf_file *gguf_retain(gguf_file *f);

/* Close (drop one owner: see gguf_retain); accepts NULL. */
void gguf_close(gguf_file *f);

/* "FILE: offset N: what was wrong (what was expected)" into buf. Returns buf. */
const char *gguf_error_format(const gguf_error *err, char *buf, size_t cap);
const char *gguf_strerror(gguf_status code);

/* ---- header ---- */
uint32_t gguf_version(const gguf_file *f);
bool gguf_big_endian(const gguf_file *f);
uint32_t gguf_alignment(const gguf_file *f);
uint64_t gguf_data_offset(const gguf_file *f);   /* of shard 0 */
uint64_t gguf_file_size(const gguf_file *f);     /* all shards together */
const char *gguf_path(const gguf_file *f);
uint32_t gguf_shard_count(const gguf_file *f);
/* The shard's bytes in memory and their count: the whole file when mapped,
 * the header prefix of a remote one (gguf_is_remote). */
const uint8_t *gguf_shard_base(const gguf_file *f, uint32_t shard, uint64_t *size);
const char *gguf_shard_path(const gguf_file *f, uint32_t shard);

/* ---- metadata ---- */
uint64_t gguf_kv_count(const gguf_file *f);
const gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i);   /* NULL if out of range */
const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key);   /* NULL if absent */
const char *gguf_vtype_name(gguf_vtype t);   /* "uint32", "string", ... */

/* Typed access. Integers convert between widths when the value fits; the
 * float getter accepts float32/float64. Return GGUF_OK, GGUF_ENOTFOUND or GGUF_ETYPE. */
gguf_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out);
gguf_status gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
gguf_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
gguf_status gguf_get_f64(const gguf_file *f, const char *key, double *out);
gguf_status gguf_get_bool(const gguf_file *f, const char *key, bool *out);
gguf_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);
/* Copy a string value into buf as a NUL-terminated C string (truncated to cap-1). */
gguf_status gguf_get_cstr(const gguf_file *f, const char *key, char *buf, size_t cap);
/* An array value; *out receives the descriptor. */
gguf_status gguf_get_arr(const gguf_file *f, const char *key, const gguf_value **out);

/* Scalar value conversions (type must be a scalar of the right family). */
gguf_status gguf_value_i64(const gguf_value *v, int64_t *out);
gguf_status gguf_value_u64(const gguf_value *v, uint64_t *out);
gguf_status gguf_value_f64(const gguf_value *v, double *out);   /* any number or bool */
gguf_status gguf_value_str(const gguf_value *v, gguf_str *out);

/* Array element i as a value (scalars, strings, nested arrays). O(1) for
 * fixed-size elements; strings and nested arrays use an offset index built on
 * first use (cost: one pass and 8 bytes per element). */
gguf_status gguf_arr_at(const gguf_value *arr, uint64_t i, gguf_value *out);
gguf_status gguf_arr_str(const gguf_value *arr, uint64_t i, gguf_str *out);
gguf_status gguf_arr_f64(const gguf_value *arr, uint64_t i, double *out);
gguf_status gguf_arr_i64(const gguf_value *arr, uint64_t i, int64_t *out);
/* Direct pointer to a numeric array's elements (native byte order only), else NULL. */
const void *gguf_arr_data(const gguf_value *arr);

/* ---- tensors ---- */
uint64_t gguf_tensor_count(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* ---- helpers ---- */
/* Compare a gguf_str with a C string. {NULL, 0} is the empty string. */
bool gguf_str_eq(gguf_str s, const char *c);
/* Copy into buf as a C string, truncated; returns buf. {NULL, 0} copies as "". */
char *gguf_str_copy(gguf_str s, char *buf, size_t cap);

/* ---- writer (v3, little-endian) ---- */
typedef struct gguf_writer gguf_writer;

/* Start a writer with the given alignment (0 = 32). Free with gguf_writer_free. */
gguf_writer *gguf_writer_new(uint32_t alignment);
void gguf_writer_free(gguf_writer *w);
/* Metadata, in insertion order. Each copies its inputs. Return GGUF_OK or an error. */
gguf_status gguf_writer_set_u8(gguf_writer *w, const char *key, uint8_t v);
gguf_status gguf_writer_set_i8(gguf_writer *w, const char *key, int8_t v);
gguf_status gguf_writer_set_u16(gguf_writer *w, const char *key, uint16_t v);
gguf_status gguf_writer_set_i16(gguf_writer *w, const char *key, int16_t v);
gguf_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
gguf_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
gguf_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
gguf_status gguf_writer_set_i64(gguf_writer *w, const char *key, int64_t v);
gguf_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
gguf_status gguf_writer_set_f64(gguf_writer *w, const char *key, double v);
gguf_status gguf_writer_set_bool(gguf_writer *w, const char *key, bool v);
gguf_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
/* Array of fixed-size elements (elem_type not STRING/ARRAY), `n` elements in native order. */
gguf_status gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_vtype elem_type, const void *data, uint64_t n);
gguf_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Copy a key/value (any type, nested arrays too) from an open file. */
/* GGUF_EARG for a key with a NUL byte, an empty key or one over 65535 bytes,
 * and a key already set. */
gguf_status gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv);
/* A tensor: data is copied when `data` is not NULL, else provided later by
 * gguf_writer_write's callback. ne has n_dims entries. */
gguf_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type,
                                   uint32_t n_dims, const uint64_t *ne, const void *data);
/* Callback that produces tensor `i`'s bytes when add_tensor got data == NULL:
 * write exactly `size` bytes to `dst`. Returns 0 on success. */
typedef int (*gguf_tensor_fill_fn)(void *user, uint64_t i, void *dst, uint64_t size);
/* Write the file to `path` atomically (engine/base/afile.h: a temporary file in
 * its folder, then rename). Returns GGUF_OK; GGUF_EIO with errno set when the
 * file cannot be created, written or renamed (nothing is left behind);
 * GGUF_EARG when `fill` fails; GGUF_ENOMEM. */
gguf_status gguf_writer_write(gguf_writer *w, const char *path, gguf_tensor_fill_fn fill, void *user);
/* Write the file's bytes into `a`, an afile that the caller opened and will
 * commit or close (afile.h). Returns as gguf_writer_write; on GGUF_EIO,
 * a->step and a->err say what failed. */
struct afile;
gguf_status gguf_writer_write_to(gguf_writer *w, struct afile *a, gguf_tensor_fill_fn fill, void *user);
/* Serialize into a malloc'd buffer (*out, *size). Tensor data must have been given. */
gguf_status gguf_writer_to_memory(gguf_writer *w, uint8_t **out, size_t *size);

/* ---- naming convention ---- */
typedef struct {
    char base_name[128];
    char size_label[64];
    char fine_tune[64];
    char version[32];
    char encoding[64];
    char type[16];        /* "LoRA", "vocab" or "" */
    uint32_t shard_num;   /* 0 when absent */
    uint32_t shard_total;
    bool valid;           /* has at least BaseName, SizeLabel and Version */
} gguf_name_parts;

/* Parse a file name (a path is allowed; the directory is ignored). Returns
 * true when the name follows the convention (BaseName, SizeLabel, Version present). */
bool gguf_parse_name(const char *filename, gguf_name_parts *out);

#endif
