/* GGUF reader: parses one mapped shard, validating everything up front.
 *
 * Every read goes through a cursor that checks the remaining bytes first, so
 * a count or length can never send us past the mapping; every count is
 * checked against the bytes left before anything is allocated for it.
 * Opening files and split sets: gguf_split.c; reading values: gguf_access.c. */
#include "gguf.h"

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ggtype.h"
#include "gguf_internal.h"
#include "textesc.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_KEY_LEN 65535
#define GGUF_MAX_NAME_LEN 64
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_DEPTH 8       /* nesting of arrays */

/* ------------------------------------------------------------------ errors */

const char *gguf_strerror(gguf_status code)
{
    switch (code) {
    case GGUF_OK: return "ok";
    case GGUF_EIO: return "cannot read file";
    case GGUF_EFORMAT: return "malformed GGUF file";
    case GGUF_ENOTFOUND: return "not found";
    case GGUF_ETYPE: return "value has another type";
    case GGUF_ENOMEM: return "out of memory";
    case GGUF_ESPLIT: return "split model shard missing or mismatched";
    case GGUF_EARG: return "bad argument";
    }
    return "unknown error";
}

void gguf__set_err(gguf_error *err, gguf_status code, const char *path, uint64_t off, const char *fmt, ...)
{
    if (!err || err->code != GGUF_OK)
        return; /* keep the first error */
    err->code = code;
    err->offset = off;
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

const char *gguf_error_format(const gguf_error *err, char *buf, size_t cap)
{
    if (!err || err->code == GGUF_OK)
        snprintf(buf, cap, "no error");
    else if (err->code == GGUF_EFORMAT || (err->code == GGUF_ESPLIT && err->offset))
        snprintf(buf, cap, "%s: offset %llu: %s", err->path, (unsigned long long)err->offset, err->msg);
    else
        snprintf(buf, cap, "%s: %s", err->path, err->msg);
    return buf;
}

/* ------------------------------------------------------------------ cursor */

typedef struct {
    const uint8_t *base;
    uint64_t size;       /* of the file: what the checks compare with */
    uint64_t avail;      /* bytes at base (a prefix of a remote file) */
    uint64_t *need;      /* set when a field lies past avail: read more */
    uint64_t pos;
    bool be;
    uint32_t version;
    const char *path;
    gguf_error *err;
} cursor;

static bool cur_fail(cursor *c, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool cur_fail(cursor *c, uint64_t off, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gguf__set_err(c->err, GGUF_EFORMAT, c->path, off, "%s", msg);
    return false;
}

/* n bytes at the cursor are in the file, but maybe not yet in the prefix
 * read so far: then *need says how much the prefix must hold, and the parse
 * stops without an error (the opener reads more and parses again). */
static bool cur_have(cursor *c, uint64_t n)
{
    if (c->pos <= c->avail && n <= c->avail - c->pos)
        return true;
    *c->need = c->pos + n;
    return false;
}

/* Need n more bytes at the cursor; `what` names the field for the error. */
static bool cur_need(cursor *c, uint64_t n, const char *what)
{
    if (n <= c->size - c->pos)
        return cur_have(c, n);
    uint64_t missing = n - (c->size - c->pos);
    return cur_fail(c, c->pos, "%s runs past the end of the file (expected %llu more bytes, %llu left: "
                               "the file is truncated by at least %llu bytes)",
                    what, (unsigned long long)n, (unsigned long long)(c->size - c->pos),
                    (unsigned long long)missing);
}

uint64_t gguf__load_le(const uint8_t *p, int n, bool be)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[be ? n - 1 - i : i] << (8 * i);
    return v;
}

static bool cur_u(cursor *c, int n, uint64_t *out, const char *what)
{
    if (!cur_need(c, (uint64_t)n, what))
        return false;
    *out = gguf__load_le(c->base + c->pos, n, c->be);
    c->pos += (uint64_t)n;
    return true;
}

static bool cur_u32(cursor *c, uint32_t *out, const char *what)
{
    uint64_t v;
    if (!cur_u(c, 4, &v, what))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Counts and lengths are 32-bit in v1, 64-bit from v2 on. */
static bool cur_count(cursor *c, uint64_t *out, const char *what)
{
    return cur_u(c, c->version == 1 ? 4 : 8, out, what);
}

static bool cur_str(cursor *c, gguf_str *out, const char *what)
{
    uint64_t len, at = c->pos;
    if (!cur_count(c, &len, what))
        return false;
    if (len > c->size - c->pos) {
        c->pos = at;
        return cur_fail(c, at, "%s: string length %llu runs past the end of the file (expected at most the %llu bytes left)",
                        what, (unsigned long long)len, (unsigned long long)(c->size - at));
    }
    if (!cur_have(c, len))
        return false;
    out->ptr = (const char *)c->base + c->pos;
    out->len = len;
    c->pos += len;
    return true;
}

/* ------------------------------------------------------------------ values */

int gguf__vtype_size(gguf_vtype t)
{
    switch (t) {
    case GGUF_VT_UINT8: case GGUF_VT_INT8: case GGUF_VT_BOOL: return 1;
    case GGUF_VT_UINT16: case GGUF_VT_INT16: return 2;
    case GGUF_VT_UINT32: case GGUF_VT_INT32: case GGUF_VT_FLOAT32: return 4;
    case GGUF_VT_UINT64: case GGUF_VT_INT64: case GGUF_VT_FLOAT64: return 8;
    default: return 0;
    }
}

const char *gguf_vtype_name(gguf_vtype t)
{
    static const char *const names[GGUF_VT_COUNT] = {
        "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
        "bool", "string", "array", "uint64", "int64", "float64"};
    return (unsigned)t < GGUF_VT_COUNT ? names[t] : "invalid";
}

/* Skip over (and validate) one value of type t at the cursor. */
static bool skip_value(cursor *c, gguf_vtype t, int depth, gguf_value *out);

static bool read_type(cursor *c, gguf_vtype *t, const char *what)
{
    uint64_t at = c->pos;
    uint32_t v;
    if (!cur_u32(c, &v, what))
        return false;
    if (v >= GGUF_VT_COUNT)
        return cur_fail(c, at, "%s: invalid value type %u (expected 0..12)", what, v);
    *t = (gguf_vtype)v;
    return true;
}

static bool skip_array(cursor *c, int depth, gguf_value *out)
{
    uint64_t at = c->pos;
    gguf_vtype et = GGUF_VT_UINT8;
    uint64_t n;
    if (depth >= GGUF_MAX_DEPTH)
        return cur_fail(c, at, "arrays nested deeper than %d levels (expected at most %d)", GGUF_MAX_DEPTH, GGUF_MAX_DEPTH);
    if (!read_type(c, &et, "array element type") || !cur_count(c, &n, "array length"))
        return false;
    uint64_t start = c->pos;
    int es = gguf__vtype_size(et);
    if (es > 0) {
        if (n > (c->size - c->pos) / (uint64_t)es)
            return cur_fail(c, at, "array of %llu %s runs past the end of the file (expected at most the %llu bytes left)",
                            (unsigned long long)n, gguf_vtype_name(et), (unsigned long long)(c->size - c->pos));
        if (!cur_have(c, n * (uint64_t)es))
            return false;
        if (et == GGUF_VT_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (c->base[c->pos + i] > 1)
                    return cur_fail(c, c->pos + i, "bool array element %llu is %u (expected 0 or 1)",
                                    (unsigned long long)i, c->base[c->pos + i]);
        c->pos += n * (uint64_t)es;
    } else {
        /* strings or arrays: each element takes at least 4 bytes (a length). */
        uint64_t min = et == GGUF_VT_STRING ? (c->version == 1 ? 4 : 8) : (c->version == 1 ? 8 : 12);
        if (n > (c->size - c->pos) / min)
            return cur_fail(c, at, "array of %llu %s cannot fit in the %llu bytes left (expected a length the file can hold)",
                            (unsigned long long)n, gguf_vtype_name(et), (unsigned long long)(c->size - c->pos));
        for (uint64_t i = 0; i < n; i++)
            if (!skip_value(c, et, depth + 1, NULL))
                return false;
    }
    if (out) {
        out->type = GGUF_VT_ARRAY;
        out->arr_type = et;
        out->arr_len = n;
        out->data = c->base + start;
        out->offset = start;
        out->size = c->pos - start;
    }
    return true;
}

static bool skip_value(cursor *c, gguf_vtype t, int depth, gguf_value *out)
{
    uint64_t start = c->pos;
    if (t == GGUF_VT_ARRAY)
        return skip_array(c, depth, out);
    if (t == GGUF_VT_STRING) {
        gguf_str s;
        if (!cur_str(c, &s, "string value"))
            return false;
    } else {
        int n = gguf__vtype_size(t);
        if (!cur_need(c, (uint64_t)n, "value"))
            return false;
        if (t == GGUF_VT_BOOL && c->base[c->pos] > 1)
            return cur_fail(c, c->pos, "bool value is %u (expected 0 or 1)", c->base[c->pos]);
        c->pos += (uint64_t)n;
    }
    if (out) {
        out->type = t;
        out->arr_type = GGUF_VT_COUNT;
        out->arr_len = 0;
        out->data = c->base + start;
        out->offset = start;
        out->size = c->pos - start;
    }
    return true;
}

/* ------------------------------------------------------------------ hashing */

static uint64_t hash_bytes(const char *p, uint64_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ULL;
    return h;
}

static uint64_t *hash_new(uint64_t n, uint64_t *cap)
{
    uint64_t c = 16;
    while (c < n * 2)
        c *= 2;
    *cap = c;
    return calloc(c, sizeof(uint64_t));
}

static bool str_eq(gguf_str a, gguf_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* Insert entry `idx` with name `s`; returns the index of an existing entry with the same name, or -1. */
static int64_t hash_insert(uint64_t *tab, uint64_t cap, gguf_str s, uint64_t idx, const gguf_str *(*name_of)(const gguf_file *, uint64_t), const gguf_file *f)
{
    uint64_t h = hash_bytes(s.ptr, s.len) & (cap - 1);
    while (tab[h]) {
        if (str_eq(*name_of(f, tab[h] - 1), s))
            return (int64_t)(tab[h] - 1);
        h = (h + 1) & (cap - 1);
    }
    tab[h] = idx + 1;
    return -1;
}

static const gguf_str *kv_name(const gguf_file *f, uint64_t i) { return &f->kvs[i].key; }
static const gguf_str *t_name(const gguf_file *f, uint64_t i) { return &f->tensors[i].name; }

static int64_t hash_find(const uint64_t *tab, uint64_t cap, const char *s, const gguf_str *(*name_of)(const gguf_file *, uint64_t), const gguf_file *f)
{
    if (!tab)
        return -1;
    uint64_t n = strlen(s);
    uint64_t h = hash_bytes(s, n) & (cap - 1);
    while (tab[h]) {
        const gguf_str *k = name_of(f, tab[h] - 1);
        if (k->len == n && (n == 0 || memcmp(k->ptr, s, n) == 0))
            return (int64_t)(tab[h] - 1);
        h = (h + 1) & (cap - 1);
    }
    return -1;
}

/* ------------------------------------------------------------------ parsing */

#define QUOTE_CAP 200 /* a name quoted in a message (textesc_bytes) */

/* Recognise common accidents before the magic check, for a helpful message. */
static bool diagnose_not_gguf(const uint8_t *p, uint64_t size, const char *path, gguf_error *err)
{
    static const char lfs[] = "version https://git-lfs";
    if (size >= sizeof lfs - 1 && memcmp(p, lfs, sizeof lfs - 1) == 0) {
        gguf__set_err(err, GGUF_EFORMAT, path, 0, "this is a Git LFS pointer file, not the model (expected GGUF magic; run `git lfs pull` to fetch the real file)");
        return true;
    }
    uint64_t i = 0;
    while (i < size && i < 64 && isspace(p[i]))
        i++;
    if (i < size && p[i] == '<') {
        char head[16] = {0};
        for (uint64_t k = 0; k < 15 && i + k < size; k++)
            head[k] = (char)tolower(p[i + k]);
        if (!strncmp(head, "<!doctype", 9) || !strncmp(head, "<html", 5) || !strncmp(head, "<?xml", 5) || !strncmp(head, "<head", 5)) {
            gguf__set_err(err, GGUF_EFORMAT, path, 0, "this is an HTML/XML page (an error page saved instead of the model?), not a GGUF file (expected magic \"GGUF\")");
            return true;
        }
    }
    if (size >= 4) {
        static const struct { const char *bytes; const char *name; } old[] = {
            {"lmgg", "GGML (unversioned)"}, {"fmgg", "GGMF"}, {"tjgg", "GGJT"},
            {"algg", "GGLA (LoRA)"}, {"nsgg", "GGSN"},
            {"ggml", "GGML (unversioned)"}, {"ggmf", "GGMF"}, {"ggjt", "GGJT"},
        };
        for (size_t k = 0; k < sizeof old / sizeof old[0]; k++)
            if (memcmp(p, old[k].bytes, 4) == 0) {
                gguf__set_err(err, GGUF_EFORMAT, path, 0, "this is a %s-era ggml file, not GGUF (expected magic \"GGUF\"; convert it with llama.cpp's convert_llama_ggml_to_gguf.py)", old[k].name);
                return true;
            }
    }
    return false;
}

/* A tensor's data offset and index, for the overlap check. */
typedef struct {
    uint64_t offset, idx;
} span;

static int span_cmp(const void *x, const void *y)
{
    const span *a = x, *b = y;
    return a->offset < b->offset ? -1 : a->offset > b->offset ? 1 : (a->idx > b->idx) - (a->idx < b->idx);
}

/* Parse the header, metadata and tensor infos of one shard into f (appending tensors). */
bool gguf__parse_shard(gguf_file *f, uint32_t shard_idx, gguf_error *err, bool first)
{
    gguf_shard *sh = &f->shards[shard_idx];
    cursor c = {.base = sh->base, .size = sh->size, .avail = sh->avail, .need = &sh->need, .path = sh->path, .err = err};
    sh->need = 0;
    if (sh->avail < sh->size && sh->avail < 128) {   /* the magic and its diagnosis */
        sh->need = sh->size < 128 ? sh->size : 128;
        return false;
    }

    if (sh->size == 0) {
        gguf__set_err(err, GGUF_EFORMAT, sh->path, 0, "the file is empty (expected a GGUF header)");
        return false;
    }
    if (sh->size < 4 || memcmp(sh->base, "GGUF", 4) != 0) {
        if (!diagnose_not_gguf(sh->base, sh->size, sh->path, err)) {
            char got[24];
            int n = sh->size < 4 ? (int)sh->size : 4, k = 0;
            for (int i = 0; i < n; i++)
                k += snprintf(got + k, sizeof got - (size_t)k, "%02x", sh->base[i]);
            gguf__set_err(err, GGUF_EFORMAT, sh->path, 0, "bad magic 0x%s (expected \"GGUF\" = 0x47475546)%s", got,
                    sh->size < 4 ? ": the file is shorter than a header" : "");
        }
        return false;
    }
    c.pos = 4;
    if (!cur_need(&c, 4, "version"))
        return false;
    uint32_t v_le = (uint32_t)gguf__load_le(sh->base + 4, 4, false);
    uint32_t v_be = (uint32_t)gguf__load_le(sh->base + 4, 4, true);
    bool be;
    uint32_t version;
    if (v_le >= 1 && v_le <= 3) {
        be = false, version = v_le;
    } else if (v_be >= 1 && v_be <= 3) {
        be = true, version = v_be;
    } else {
        return cur_fail(&c, 4, "unsupported GGUF version %u (expected 1, 2 or 3)", v_le);
    }
    c.pos = 8;
    c.be = be;
    c.version = version;
    if (first) {
        f->version = version;
        f->big_endian = be;
    } else if (version != f->version || be != f->big_endian) {
        gguf__set_err(err, GGUF_ESPLIT, sh->path, 4, "shard has GGUF version %u%s (expected %u%s, as the first shard)", version,
                be ? " big-endian" : "", f->version, f->big_endian ? " big-endian" : "");
        return false;
    }

    uint64_t n_tensors, n_kv, at = c.pos;
    if (!cur_count(&c, &n_tensors, "tensor count"))
        return false;
    uint64_t kv_at = c.pos;
    if (!cur_count(&c, &n_kv, "metadata key count"))
        return false;
    /* A tensor info takes at least 24 bytes, a key/value at least 9: reject
     * counts the file cannot hold before allocating anything for them. */
    uint64_t left = sh->size - c.pos;
    if (n_tensors > left / 24)
        return cur_fail(&c, at, "tensor count %llu cannot fit in the %llu bytes left (expected at most one tensor per 24 bytes)",
                        (unsigned long long)n_tensors, (unsigned long long)left);
    if (n_kv > left / 9)
        return cur_fail(&c, kv_at, "metadata key count %llu cannot fit in the %llu bytes left (expected at most one key per 9 bytes)",
                        (unsigned long long)n_kv, (unsigned long long)left);

    /* ---- metadata ---- */
    gguf_kv *kvs = NULL;
    uint64_t kv_hash_cap = 0, *kv_hash = NULL;
    gguf_file tmp = {0};
    if (first) {
        kvs = calloc(n_kv ? n_kv : 1, sizeof *kvs);
        kv_hash = hash_new(n_kv, &kv_hash_cap);
        if (!kvs || !kv_hash) {
            free(kvs);
            free(kv_hash);
            gguf__set_err(err, GGUF_ENOMEM, sh->path, 0, "out of memory for %llu keys", (unsigned long long)n_kv);
            return false;
        }
        tmp.kvs = kvs;
    }
    uint32_t alignment = GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv kv = {0};
        kv.key_offset = c.pos;
        if (!cur_str(&c, &kv.key, "key"))
            goto fail_kv;
        if (kv.key.len == 0) {
            cur_fail(&c, kv.key_offset, "key %llu is empty (expected a dotted name)", (unsigned long long)i);
            goto fail_kv;
        }
        if (memchr(kv.key.ptr, 0, (size_t)kv.key.len)) {
            cur_fail(&c, kv.key_offset, "key %llu holds a NUL byte (expected text, so that it can be looked up)", (unsigned long long)i);
            goto fail_kv;
        }
        if (kv.key.len > GGUF_MAX_KEY_LEN) {
            cur_fail(&c, kv.key_offset, "key %llu is %llu bytes long (expected at most 65535)", (unsigned long long)i,
                     (unsigned long long)kv.key.len);
            goto fail_kv;
        }
        gguf_vtype t = GGUF_VT_UINT8;
        uint64_t type_at = c.pos;
        if (!read_type(&c, &t, "value type"))
            goto fail_kv;
        if (!skip_value(&c, t, 0, &kv.value))
            goto fail_kv;
        kv.value.file = f;
        if (gguf_str_eq(kv.key, "general.alignment")) {
            if (t != GGUF_VT_UINT32) {
                cur_fail(&c, type_at, "general.alignment has type %s (expected uint32)", gguf_vtype_name(t));
                goto fail_kv;
            }
            uint32_t a = (uint32_t)gguf__load_le(kv.value.data, 4, be);
            if (a == 0 || a % 8 != 0) {
                cur_fail(&c, kv.value.offset, "general.alignment is %u (expected a non-zero multiple of 8)", a);
                goto fail_kv;
            }
            alignment = a;
        }
        if (gguf_str_eq(kv.key, "split.no") || gguf_str_eq(kv.key, "split.count")) {
            bool is_no = kv.key.len == 8;
            uint64_t u;
            if (gguf_value_u64(&kv.value, &u) != GGUF_OK) {
                cur_fail(&c, type_at, "%s is not a non-negative integer (type %s; expected an unsigned integer)",
                         is_no ? "split.no" : "split.count", gguf_vtype_name(t));
                goto fail_kv;
            }
            if (is_no)
                sh->has_split_no = true, sh->split_no = u, sh->split_no_off = kv.value.offset;
            else
                sh->has_split_count = true, sh->split_count = u, sh->split_count_off = kv.value.offset;
        }
        if (first) {
            kvs[i] = kv;
            int64_t dup = hash_insert(kv_hash, kv_hash_cap, kv.key, i, kv_name, &tmp);
            if (dup >= 0) {
                char name[QUOTE_CAP];
                cur_fail(&c, kv.key_offset, "duplicate key '%s' (expected unique keys; first at offset %llu)", textesc_bytes(name, sizeof name, kv.key.ptr, (size_t)kv.key.len),
                         (unsigned long long)kvs[dup].key_offset);
                goto fail_kv;
            }
        }
    }
    if (first) {
        f->kvs = kvs;
        f->n_kv = n_kv;
        f->kv_hash = kv_hash;
        f->kv_hash_cap = kv_hash_cap;
        f->alignment = alignment;
    } else if (alignment != f->alignment) {
        gguf__set_err(err, GGUF_ESPLIT, sh->path, 0, "shard alignment is %u (expected %u, as the first shard)", alignment, f->alignment);
        return false;
    }

    /* ---- tensor infos ---- */
    uint64_t base_idx = f->n_tensors;
    if (n_tensors > 0) {
        gguf_tensor *nt = realloc(f->tensors, (base_idx + n_tensors) * sizeof *nt);
        if (!nt) {
            gguf__set_err(err, GGUF_ENOMEM, sh->path, 0, "out of memory for %llu tensors", (unsigned long long)n_tensors);
            return false;
        }
        f->tensors = nt;
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        gguf_tensor *t = &f->tensors[base_idx + i];
        memset(t, 0, sizeof *t);
        t->info_offset = c.pos;
        t->shard = shard_idx;
        if (!cur_str(&c, &t->name, "tensor name"))
            return false;
        if (t->name.len == 0)
            return cur_fail(&c, t->info_offset, "tensor %llu has an empty name (expected a name)", (unsigned long long)i);
        if (t->name.len > GGUF_MAX_NAME_LEN)
            return cur_fail(&c, t->info_offset, "tensor name is %llu bytes long (expected at most %d)",
                            (unsigned long long)t->name.len, GGUF_MAX_NAME_LEN);
        if (memchr(t->name.ptr, 0, (size_t)t->name.len))
            return cur_fail(&c, t->info_offset, "tensor %llu's name holds a NUL byte (expected text, so that it can be looked up)",
                            (unsigned long long)i);
        uint64_t dims_at = c.pos;
        if (!cur_u32(&c, &t->n_dims, "tensor dimension count"))
            return false;
        if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
            return cur_fail(&c, dims_at, "tensor has %u dimensions (expected 1 to %d)", t->n_dims, GGUF_MAX_DIMS);
        uint64_t ne = 1;
        for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
            t->ne[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            uint64_t dim_at = c.pos;
            if (!cur_count(&c, &t->ne[d], "tensor dimension"))
                return false;
            if (t->ne[d] == 0)
                return cur_fail(&c, dim_at, "tensor dimension %u is 0 (expected at least 1)", d);
            if (t->ne[d] > (uint64_t)INT64_MAX)
                return cur_fail(&c, dim_at, "tensor dimension %u is %llu (expected at most 2^63-1)", d, (unsigned long long)t->ne[d]);
            if (__builtin_mul_overflow(ne, t->ne[d], &ne) || ne > (uint64_t)INT64_MAX)
                return cur_fail(&c, dim_at, "tensor element count overflows 64 bits at dimension %u = %llu (expected a product below 2^63)", d,
                                (unsigned long long)t->ne[d]);
        }
        t->n_elements = ne;
        uint64_t type_at = c.pos;
        if (!cur_u32(&c, &t->type, "tensor type"))
            return false;
        uint64_t off_at = c.pos;
        if (!cur_u(&c, 8, &t->offset, "tensor data offset"))
            return false;
        const ggtype_traits *tr = ggtype_get(t->type);
        t->type_known = tr != NULL;
        if (tr) {
            /* llama.cpp refuses a row length that is not a multiple of the
             * block size; some old converters wrote such tensors with blocks
             * running across rows. Open them, flagged, when the element
             * count is a whole number of blocks. */
            if (t->n_elements % tr->blck_size != 0)
                return cur_fail(&c, type_at, "tensor has %llu elements (expected a multiple of the %s block size %u)",
                                (unsigned long long)t->n_elements, tr->name, tr->blck_size);
            t->rows_unaligned = t->ne[0] % tr->blck_size != 0;
            uint64_t bytes;
            if (__builtin_mul_overflow(t->n_elements / tr->blck_size, (uint64_t)tr->type_size, &bytes))
                return cur_fail(&c, type_at, "tensor byte size overflows 64 bits (expected fewer elements)");
            t->n_bytes = bytes;
        }
        if (t->offset % alignment != 0)
            return cur_fail(&c, off_at, "tensor data offset %llu is not a multiple of the alignment %u (expected an aligned offset)",
                            (unsigned long long)t->offset, alignment);
    }

    /* ---- data section ---- */
    uint64_t data_off = c.pos;
    if (data_off % alignment) {
        uint64_t pad = alignment - data_off % alignment;
        data_off = data_off + pad;
    }
    sh->data_offset = data_off;
    if (n_tensors > 0 && data_off > sh->size)
        return cur_fail(&c, c.pos, "the data section would start at %llu, past the end of the file (expected the whole header; the file has %llu bytes: truncated by at least %llu bytes)",
                        (unsigned long long)data_off, (unsigned long long)sh->size, (unsigned long long)(data_off - sh->size));
    uint64_t data_size = data_off <= sh->size ? sh->size - data_off : 0;
    /* The data must reach the aligned end of the last tensor: ggml and
     * gguf-py pad the last tensor's data too, so a shorter file was cut. */
    uint64_t data_end = 0, last = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        gguf_tensor *t = &f->tensors[base_idx + i];
        if (!t->type_known)
            continue;
        uint64_t end;
        if (__builtin_add_overflow(t->offset, t->n_bytes, &end) || __builtin_add_overflow(end, (uint64_t)alignment, &end) ||
            __builtin_add_overflow(end, data_off, &end)) {
            char name[QUOTE_CAP];
            return cur_fail(&c, t->info_offset, "tensor '%s' data offset %llu plus size %llu overflows 64 bits (expected an offset inside the file)",
                            textesc_bytes(name, sizeof name, t->name.ptr, (size_t)t->name.len), (unsigned long long)t->offset, (unsigned long long)t->n_bytes);
        }
        end = t->offset + t->n_bytes;
        end += (alignment - end % alignment) % alignment;
        if (end > data_end)
            data_end = end, last = base_idx + i;
    }
    if (data_end > data_size) {
        const gguf_tensor *t = &f->tensors[last];
        char name[QUOTE_CAP];
        return cur_fail(&c, t->info_offset, "tensor '%s' data ends at byte %llu, past the end of the file (expected the whole data; the file has %llu bytes: truncated by %llu bytes)",
                        textesc_bytes(name, sizeof name, t->name.ptr, (size_t)t->name.len), (unsigned long long)(data_off + data_end),
                        (unsigned long long)sh->size, (unsigned long long)(data_off + data_end - sh->size));
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        gguf_tensor *t = &f->tensors[base_idx + i];
        t->abs_offset = data_off + t->offset;
        if (t->type_known && sh->avail == sh->size && !sh->remote)
            t->data = sh->base + t->abs_offset;   /* else read with gguf_read */
    }
    /* Overlap: sort this shard's known tensors by offset and compare neighbours. */
    if (n_tensors > 1) {
        span *ord = malloc(n_tensors * sizeof *ord);
        uint64_t m = 0;
        if (!ord) {
            gguf__set_err(err, GGUF_ENOMEM, sh->path, 0, "out of memory");
            return false;
        }
        for (uint64_t i = 0; i < n_tensors; i++)
            if (f->tensors[base_idx + i].type_known)
                ord[m++] = (span){f->tensors[base_idx + i].offset, base_idx + i};
        qsort(ord, (size_t)m, sizeof *ord, span_cmp);
        for (uint64_t k = 1; k < m; k++) {
            const gguf_tensor *a = &f->tensors[ord[k - 1].idx], *b = &f->tensors[ord[k].idx];
            if (a->offset + a->n_bytes > b->offset) {
                char na[QUOTE_CAP], nb[QUOTE_CAP];
                cur_fail(&c, b->info_offset, "tensor '%s' (data %llu..%llu) overlaps tensor '%s' from %llu (expected disjoint data)",
                         textesc_bytes(na, sizeof na, a->name.ptr, (size_t)a->name.len), (unsigned long long)a->offset,
                         (unsigned long long)(a->offset + a->n_bytes), textesc_bytes(nb, sizeof nb, b->name.ptr, (size_t)b->name.len),
                         (unsigned long long)b->offset);
                free(ord);
                return false;
            }
        }
        free(ord);
    }
    f->n_tensors = base_idx + n_tensors;
    return true;

fail_kv:
    if (first) {
        free(kvs);
        free(kv_hash);
    }
    return false;
}

void gguf__unparse_shard(gguf_file *f, uint32_t shard_idx, bool first)
{
    gguf_shard *sh = &f->shards[shard_idx];
    if (first) {
        free(f->kvs);
        free(f->kv_hash);
        f->kvs = NULL;
        f->kv_hash = NULL;
        f->n_kv = f->kv_hash_cap = 0;
    }
    sh->has_split_no = sh->has_split_count = false;
    sh->split_no = sh->split_count = sh->split_no_off = sh->split_count_off = 0;
    sh->data_offset = 0;
}

bool gguf__build_tensor_hash(gguf_file *f, gguf_error *err)
{
    f->t_hash = hash_new(f->n_tensors, &f->t_hash_cap);
    if (!f->t_hash) {
        gguf__set_err(err, GGUF_ENOMEM, f->shards[0].path, 0, "out of memory");
        return false;
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        int64_t dup = hash_insert(f->t_hash, f->t_hash_cap, f->tensors[i].name, i, t_name, f);
        if (dup >= 0) {
            char name[QUOTE_CAP];
            const gguf_tensor *t = &f->tensors[i];
            gguf__set_err(err, GGUF_EFORMAT, f->shards[t->shard].path, t->info_offset,
                    "duplicate tensor name '%s' (expected unique names; first at offset %llu)", textesc_bytes(name, sizeof name, t->name.ptr, (size_t)t->name.len),
                    (unsigned long long)f->tensors[dup].info_offset);
            return false;
        }
    }
    return true;
}

gguf_file *gguf__file_new(void)
{
    gguf_file *f = calloc(1, sizeof *f);
    if (f) {
        pthread_mutex_init(&f->index_lock, NULL);
        atomic_init(&f->refs, 1);
    }
    return f;
}

gguf_file *gguf_retain(gguf_file *f)
{
    if (f)
        atomic_fetch_add(&f->refs, 1);
    return f;
}

/* ------------------------------------------------------------------ lookup */

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key)
{
    int64_t i = hash_find(f->kv_hash, f->kv_hash_cap, key, kv_name, f);
    return i >= 0 ? &f->kvs[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name)
{
    int64_t i = hash_find(f->t_hash, f->t_hash_cap, name, t_name, f);
    return i >= 0 ? &f->tensors[i] : NULL;
}

void gguf_close(gguf_file *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    for (uint32_t i = 0; i < f->n_shards; i++) {
        if (f->shards[i].mapped)
            munmap((void *)f->shards[i].base, (size_t)f->shards[i].size);
        else if (f->shards[i].remote)
            free((void *)f->shards[i].base);
        free(f->shards[i].path);
    }
    for (uint64_t i = 0; i < f->n_kv; i++) {
        arr_index *ix = f->kvs[i].value.index_;
        if (ix) {
            free(ix->offs);
            free(ix);
        }
    }
    gguf__source_free(f->src);
    free(f->shards);
    free(f->kvs);
    free(f->tensors);
    free(f->kv_hash);
    free(f->t_hash);
    pthread_mutex_destroy(&f->index_lock);
    free(f);
}

