/* GGUF reader: files read through a source (remote files). A shard's first
 * bytes are read into a prefix that grows until the parser (gguf.c) has the
 * whole header; tensor bytes are read on demand through a small block cache.
 * Opening: gguf_split.c (the same split logic as for files on disk). */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_internal.h"

#define SRC_BLOCK_DEFAULT ((uint64_t)1 << 20) /* cache block and first window */
#define SRC_SLOTS 64                          /* cached blocks */
#define SRC_RUN 16                            /* blocks read in one request at most */
#define SRC_MAX_PREFIX ((uint64_t)256 << 20)  /* the header must fit in this */

typedef struct {
    bool used;
    uint32_t shard;
    uint64_t blk;
    uint64_t stamp;      /* last use, for least-recently-used eviction */
    uint64_t len;        /* a block, or less for a file's last block */
    uint8_t *buf;
} src_slot;

struct gguf_src {
    gguf_source src;
    pthread_mutex_t lock;   /* the cache; held while a block is read */
    src_slot slots[SRC_SLOTS];
    uint64_t clock;
    uint64_t next_id;
    uint64_t block;         /* SRC_BLOCK_DEFAULT, or gguf_source.block */
    atomic_uint_least64_t bytes, requests;
};

struct gguf_src *gguf__source_new(const gguf_source *src)
{
    struct gguf_src *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->src = *src;
    s->block = src->block ? src->block : SRC_BLOCK_DEFAULT;
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->bytes, 0);
    atomic_init(&s->requests, 0);
    return s;
}

void gguf__source_free(struct gguf_src *s)
{
    if (!s)
        return;
    for (int i = 0; i < SRC_SLOTS; i++)
        free(s->slots[i].buf);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Exactly len bytes at offset of `name` (the caller keeps them inside the
 * file); a short answer is an error. */
static bool src_read(struct gguf_src *s, const char *name, uint64_t offset, uint64_t len, void *dst, uint64_t *total,
                     const atomic_bool *cancel, gguf_error *err)
{
    gguf_error e = {0};
    int64_t n = s->src.read(s->src.ctx, name, offset, len, dst, total, cancel, &e);
    atomic_fetch_add(&s->requests, 1);
    if (n > 0)
        atomic_fetch_add(&s->bytes, (uint64_t)n);
    if (n < 0) {
        gguf__set_err(err, e.code != GGUF_OK ? e.code : GGUF_EIO, name, e.offset, "%s", e.msg[0] ? e.msg : "cannot read");
        return false;
    }
    if ((uint64_t)n < len && offset + (uint64_t)n < *total) {
        gguf__set_err(err, GGUF_EIO, name, 0, "the source sent %lld of the %llu bytes asked for at offset %llu",
                      (long long)n, (unsigned long long)len, (unsigned long long)offset);
        return false;
    }
    return true;
}

bool gguf__source_map(struct gguf_src *s, gguf_shard *sh, const char *name, gguf_error *err)
{
    sh->path = strdup(name);
    uint8_t *buf = malloc(s->block);
    if (!sh->path || !buf) {
        free(buf);
        gguf__set_err(err, GGUF_ENOMEM, name, 0, "out of memory");
        return false;
    }
    uint64_t total = 0;
    gguf_error e = {0};
    int64_t n = s->src.read(s->src.ctx, name, 0, s->block, buf, &total, NULL, &e);
    atomic_fetch_add(&s->requests, 1);
    if (n < 0) {
        free(buf);
        gguf__set_err(err, e.code != GGUF_OK ? e.code : GGUF_EIO, name, 0, "%s", e.msg[0] ? e.msg : "cannot read");
        return false;
    }
    atomic_fetch_add(&s->bytes, (uint64_t)n);
    uint64_t want = total < s->block ? total : s->block;
    if ((uint64_t)n < want) {
        free(buf);
        gguf__set_err(err, GGUF_EIO, name, 0, "the source sent %lld of the first %llu bytes", (long long)n,
                      (unsigned long long)want);
        return false;
    }
    sh->base = buf;
    sh->size = total;
    sh->avail = want;
    sh->remote = true;
    sh->id[0] = UINT64_MAX - 1;   /* distinct names are distinct files */
    sh->id[1] = s->next_id++;
    return true;
}

bool gguf__source_grow(struct gguf_src *s, gguf_shard *sh, uint64_t need, gguf_error *err)
{
    if (need > SRC_MAX_PREFIX) {
        gguf__set_err(err, GGUF_ENOMEM, sh->path, 0,
                      "the metadata and tensor table need more than %llu MiB (expected a header the reader can hold)",
                      (unsigned long long)(SRC_MAX_PREFIX >> 20));
        return false;
    }
    uint64_t len = sh->avail * 2;
    uint64_t up = (need + s->block - 1) / s->block * s->block;
    if (len < up)
        len = up;
    if (len > SRC_MAX_PREFIX)
        len = SRC_MAX_PREFIX;
    if (len > sh->size)
        len = sh->size;
    if (len <= sh->avail) {   /* cannot happen: the parser asks for bytes inside the file */
        gguf__set_err(err, GGUF_EIO, sh->path, sh->avail, "the parser asked for bytes past the end of the file");
        return false;
    }
    uint8_t *nb = realloc((void *)sh->base, (size_t)len);
    if (!nb) {
        gguf__set_err(err, GGUF_ENOMEM, sh->path, 0, "out of memory for a %llu-byte header", (unsigned long long)len);
        return false;
    }
    sh->base = nb;
    uint64_t total = sh->size;
    if (!src_read(s, sh->path, sh->avail, len - sh->avail, nb + sh->avail, &total, NULL, err))
        return false;
    if (total != sh->size) {
        gguf__set_err(err, GGUF_EIO, sh->path, 0, "the file changed size while it was read (%llu, then %llu bytes)",
                      (unsigned long long)sh->size, (unsigned long long)total);
        return false;
    }
    sh->avail = len;
    return true;
}

static src_slot *slot_find(struct gguf_src *s, uint32_t shard, uint64_t blk)
{
    for (int i = 0; i < SRC_SLOTS; i++)
        if (s->slots[i].used && s->slots[i].shard == shard && s->slots[i].blk == blk)
            return &s->slots[i];
    return NULL;
}

static src_slot *slot_victim(struct gguf_src *s)
{
    src_slot *v = &s->slots[0];
    for (int i = 0; i < SRC_SLOTS; i++) {
        if (!s->slots[i].used)
            return &s->slots[i];
        if (s->slots[i].stamp < v->stamp)
            v = &s->slots[i];
    }
    return v;
}

/* Read the run of missing blocks that starts at `blk` (up to `last` and
 * SRC_RUN blocks) in one request and put it in the cache. */
static bool cache_fill(struct gguf_src *s, const gguf_shard *sh, uint32_t shard, uint64_t blk, uint64_t last,
                       const atomic_bool *cancel, gguf_error *err)
{
    uint64_t e = blk + 1;
    while (e <= last && e - blk < SRC_RUN && !slot_find(s, shard, e))
        e++;
    uint64_t r0 = blk * s->block, r1 = e * s->block < sh->size ? e * s->block : sh->size;
    uint8_t *tmp = malloc((size_t)(r1 - r0));
    if (!tmp) {
        gguf__set_err(err, GGUF_ENOMEM, sh->path, 0, "out of memory");
        return false;
    }
    uint64_t total = sh->size;
    bool ok = src_read(s, sh->path, r0, r1 - r0, tmp, &total, cancel, err);
    for (uint64_t b = blk; ok && b < e; b++) {
        src_slot *sl = slot_victim(s);
        if (!sl->buf && !(sl->buf = malloc(s->block))) {
            gguf__set_err(err, GGUF_ENOMEM, sh->path, 0, "out of memory");
            ok = false;
            break;
        }
        uint64_t off = (b - blk) * s->block;
        sl->used = true;
        sl->shard = shard;
        sl->blk = b;
        sl->len = r1 - r0 - off < s->block ? r1 - r0 - off : s->block;
        sl->stamp = ++s->clock;
        memcpy(sl->buf, tmp + off, (size_t)sl->len);
    }
    free(tmp);
    return ok;
}

/* A mapped file's range read from the file itself, so that its pages do not
 * join the process's resident set as the mapping's would (gguf_read_file:
 * model_copy reads a whole model this way). False, with nothing promised
 * about dst, when the file cannot be read or is no longer the one mapped:
 * the caller copies from the mapping instead. */
static bool read_mapped_file(const gguf_shard *sh, uint64_t offset, uint64_t len, uint8_t *out)
{
    int fd = open(sh->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_dev == sh->id[0] &&
              (uint64_t)st.st_ino == sh->id[1] && (uint64_t)st.st_size == sh->size;
    while (ok && len) {
        size_t want = len > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)len;
        ssize_t k = pread(fd, out, want, (off_t)offset);
        if (k < 0 && errno == EINTR)
            continue;
        ok = k > 0;
        if (ok)
            out += k, offset += (uint64_t)k, len -= (uint64_t)k;
    }
    close(fd);
    return ok;
}

gguf_status gguf_read(const gguf_file *f, uint32_t shard, uint64_t offset, uint64_t len, void *dst,
                      const atomic_bool *cancel, gguf_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!f || shard >= f->n_shards) {
        gguf__set_err(err, GGUF_EARG, "", 0, "no such shard");
        return GGUF_EARG;
    }
    const gguf_shard *sh = &f->shards[shard];
    if (offset > sh->size || len > sh->size - offset) {
        gguf__set_err(err, GGUF_EARG, sh->path, offset, "%llu bytes at offset %llu run past the end of the file (%llu bytes)",
                      (unsigned long long)len, (unsigned long long)offset, (unsigned long long)sh->size);
        return GGUF_EARG;
    }
    uint8_t *out = dst;
    if (offset < sh->avail) {   /* the mapping, or a remote file's prefix */
        uint64_t n = sh->avail - offset < len ? sh->avail - offset : len;
        memcpy(out, sh->base + offset, (size_t)n);
        out += n, offset += n, len -= n;
    }
    if (!len)
        return GGUF_OK;
    struct gguf_src *s = f->src;
    pthread_mutex_lock(&s->lock);
    uint64_t end = offset + len, last = (end - 1) / s->block;
    while (offset < end) {
        uint64_t b = offset / s->block;
        src_slot *sl = slot_find(s, shard, b);
        if (!sl) {
            if (!cache_fill(s, sh, shard, b, last, cancel, err)) {
                pthread_mutex_unlock(&s->lock);
                return err ? err->code : GGUF_EIO;
            }
            continue;
        }
        uint64_t in = offset - b * s->block;
        uint64_t n = sl->len - in < end - offset ? sl->len - in : end - offset;
        memcpy(out, sl->buf + in, (size_t)n);
        sl->stamp = ++s->clock;
        out += n, offset += n;
    }
    pthread_mutex_unlock(&s->lock);
    return GGUF_OK;
}

gguf_status gguf_read_file(const gguf_file *f, uint32_t shard, uint64_t offset, uint64_t len, void *dst,
                           const atomic_bool *cancel, gguf_error *err)
{
    if (f && shard < f->n_shards) {
        const gguf_shard *sh = &f->shards[shard];
        if (sh->mapped && offset <= sh->size && len <= sh->size - offset && read_mapped_file(sh, offset, len, dst)) {
            if (err)
                memset(err, 0, sizeof *err);
            return GGUF_OK;
        }
    }
    return gguf_read(f, shard, offset, len, dst, cancel, err);
}

gguf_status gguf_tensor_read(const gguf_file *f, const gguf_tensor *t, uint64_t offset, uint64_t len, void *dst,
                             const atomic_bool *cancel, gguf_error *err)
{
    if (!t || offset > t->n_bytes || len > t->n_bytes - offset) {
        if (err)
            memset(err, 0, sizeof *err);
        gguf__set_err(err, GGUF_EARG, "", 0, "a range outside the tensor's data");
        return GGUF_EARG;
    }
    return gguf_read(f, t->shard, t->abs_offset + offset, len, dst, cancel, err);
}

bool gguf_is_remote(const gguf_file *f)
{
    return f && f->src != NULL;
}

void gguf_source_stats(const gguf_file *f, uint64_t *bytes, uint64_t *requests)
{
    *bytes = f && f->src ? atomic_load(&f->src->bytes) : 0;
    *requests = f && f->src ? atomic_load(&f->src->requests) : 0;
}
