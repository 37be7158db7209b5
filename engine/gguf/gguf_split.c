/* GGUF reader: opening. Maps a file (or finds it in an in-memory table),
 * parses it (gguf.c) and, when its split.no / split.count say it is one shard
 * of a set, opens and checks every shard of the set. */
#include "gguf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_internal.h"

#define GGUF_MAX_SHARDS 9999

/* Where shards come from: files on disk, an in-memory table of named files
 * (gguf_open_memfiles) or a source (gguf_open_source: remote files). All go
 * through the same split logic. */
typedef struct {
    /* Fill sh (path, base, size, avail, mapped, id) for `path`. Returns false
     * with *err set (GGUF_ENOTFOUND when there is no such file). */
    bool (*map)(void *ctx, gguf_file *f, gguf_shard *sh, const char *path, gguf_error *err);
    void *ctx;
    const gguf_source *remote;   /* gguf_open_source: each handle gets its cache */
} shard_src;

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
           : S_ISBLK(m) ? "a block device" : "not a plain file";
}

static bool map_file(void *ctx, gguf_file *f, gguf_shard *sh, const char *path, gguf_error *err)
{
    (void)ctx, (void)f;
    sh->path = strdup(path);
    if (!sh->path) {
        gguf__set_err(err, GGUF_ENOMEM, path, 0, "out of memory");
        return false;
    }
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; we only fstat
     * and mmap, so the flag changes nothing for a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        gguf__set_err(err, errno == ENOENT ? GGUF_ENOTFOUND : GGUF_EIO, path, 0, "cannot open: %s", strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        gguf__set_err(err, GGUF_EIO, path, 0, "cannot stat: %s", strerror(errno));
        close(fd);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        gguf__set_err(err, GGUF_EIO, path, 0, "not a regular file: %s (expected a GGUF file)", file_kind(st.st_mode));
        close(fd);
        return false;
    }
    sh->id[0] = (uint64_t)st.st_dev;
    sh->id[1] = (uint64_t)st.st_ino;
    sh->size = sh->avail = (uint64_t)st.st_size;
    if (sh->size > 0) {
        void *p = mmap(NULL, (size_t)sh->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            gguf__set_err(err, GGUF_EIO, path, 0, "cannot map: %s", strerror(errno));
            close(fd);
            return false;
        }
        sh->base = p;
        sh->mapped = true;
    } else {
        static const uint8_t empty[1];
        sh->base = empty;
    }
    close(fd);
    return true;
}

typedef struct {
    const gguf_memfile *files;
    size_t n;
} memfile_table;

static bool map_memfile(void *ctx, gguf_file *f, gguf_shard *sh, const char *path, gguf_error *err)
{
    (void)f;
    static const uint8_t empty[1];
    const memfile_table *t = ctx;
    sh->path = strdup(path);
    if (!sh->path) {
        gguf__set_err(err, GGUF_ENOMEM, path, 0, "out of memory");
        return false;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (t->files[i].name && !strcmp(t->files[i].name, path)) {
            sh->base = t->files[i].data ? t->files[i].data : empty;
            sh->size = sh->avail = t->files[i].data ? t->files[i].size : 0;
            sh->id[0] = UINT64_MAX;
            sh->id[1] = i;
            return true;
        }
    }
    gguf__set_err(err, GGUF_ENOTFOUND, path, 0, "cannot open: No such file or directory");
    return false;
}

static bool map_source(void *ctx, gguf_file *f, gguf_shard *sh, const char *path, gguf_error *err)
{
    (void)ctx;
    return gguf__source_map(f->src, sh, path, err);
}

/* Parse shard i; a remote shard whose prefix is too short for its header
 * grows (gguf_source.c) and is parsed again. */
static bool parse_shard(gguf_file *f, uint32_t i, gguf_error *err, bool first)
{
    for (;;) {
        if (gguf__parse_shard(f, i, err, first))
            return true;
        gguf_shard *sh = &f->shards[i];
        if (!sh->need || (err && err->code != GGUF_OK) || !f->src)
            return false;
        gguf__unparse_shard(f, i, first);
        if (!gguf__source_grow(f->src, sh, sh->need, err))
            return false;
    }
}

/* "dir/NAME-00001-of-00003.gguf" -> prefix length up to "-00001", shard number and count from the name. */
static bool split_name(const char *path, size_t *prefix_len, uint32_t *no, uint32_t *count)
{
    size_t n = strlen(path);
    static const char tail[] = "-00000-of-00000.gguf";
    size_t tl = sizeof tail - 1;
    if (n < tl)
        return false;
    const char *s = path + n - tl;
    for (size_t i = 0; i < tl; i++) {
        char want = tail[i];
        if (want == '0' ? !isdigit((unsigned char)s[i]) : s[i] != want)
            return false;
    }
    *no = (uint32_t)atoi(s + 1);
    *count = (uint32_t)atoi(s + 10);
    *prefix_len = n - tl;
    return true;
}

/* Map and parse one file as shard 0 of a new handle; never follows splits. */
static gguf_file *open_single(const shard_src *src, const char *path, gguf_error *err)
{
    gguf_file *f = gguf__file_new();
    if (!f || !(f->shards = calloc(1, sizeof *f->shards))) {
        free(f);
        gguf__set_err(err, GGUF_ENOMEM, path, 0, "out of memory");
        return NULL;
    }
    f->n_shards = 1;
    if (src->remote && !(f->src = gguf__source_new(src->remote))) {
        gguf_close(f);
        gguf__set_err(err, GGUF_ENOMEM, path, 0, "out of memory");
        return NULL;
    }
    if (!src->map(src->ctx, f, &f->shards[0], path, err) || !parse_shard(f, 0, err, true) || !gguf__build_tensor_hash(f, err)) {
        gguf_close(f);
        return NULL;
    }
    return f;
}

/* Check that the opened file's name and split.no / split.count agree.
 * Returns 0: not split (or a one-shard set); 1: the first shard of a set of
 * *count; 2: a later shard (*prefix_len set: reopen from the first);
 * -1: error (err set). */
static int split_check_first(const gguf_shard *s0, size_t *prefix_len, uint32_t *count, gguf_error *err)
{
    const char *p = s0->path;
    if (!s0->has_split_count) {
        if (s0->has_split_no && s0->split_no != 0) {
            gguf__set_err(err, GGUF_ESPLIT, p, s0->split_no_off, "split.no is %llu but there is no split.count (expected both, or split.no 0)",
                    (unsigned long long)s0->split_no);
            return -1;
        }
        return 0;
    }
    uint64_t c = s0->split_count, no = s0->has_split_no ? s0->split_no : 0;
    if (c == 0 || c > GGUF_MAX_SHARDS) {
        gguf__set_err(err, GGUF_ESPLIT, p, s0->split_count_off, "split.count is %llu (expected 1 to %d)", (unsigned long long)c,
                GGUF_MAX_SHARDS);
        return -1;
    }
    if (no >= c) {
        gguf__set_err(err, GGUF_ESPLIT, p, s0->split_no_off, "split.no is %llu but split.count is %llu (expected split.no below split.count)",
                (unsigned long long)no, (unsigned long long)c);
        return -1;
    }
    uint32_t name_no, name_count;
    bool named = split_name(p, prefix_len, &name_no, &name_count);
    if (c == 1 && !named)
        return 0; /* a one-shard "set" under any name */
    if (c > 1 && !s0->has_split_no) {
        gguf__set_err(err, GGUF_ESPLIT, p, s0->split_count_off, "split.count is %llu but split.no is absent (expected both in every shard)",
                (unsigned long long)c);
        return -1;
    }
    if (!named) {
        gguf__set_err(err, GGUF_ESPLIT, p, s0->split_count_off,
                "split.count is %llu but the file name does not end in -NNNNN-of-NNNNN.gguf (expected -%05llu-of-%05llu.gguf, "
                "so that the other shards can be found)", (unsigned long long)c, (unsigned long long)no + 1, (unsigned long long)c);
        return -1;
    }
    if (name_count != c) {
        gguf__set_err(err, GGUF_ESPLIT, p, s0->split_count_off, "split.count is %llu but the file name says %u shards (expected the same count)",
                (unsigned long long)c, name_count);
        return -1;
    }
    if (name_no != no + 1) {
        gguf__set_err(err, GGUF_ESPLIT, p, s0->split_no_off, "split.no is %llu but the file name says shard %u (expected split.no %u)",
                (unsigned long long)no, name_no, name_no > 0 ? name_no - 1 : 0);
        return -1;
    }
    if (c == 1)
        return 0;
    *count = (uint32_t)c;
    return no == 0 ? 1 : 2;
}

/* Add shards 1..count-1 to f (shard 0 is the first of the set). Each shard
 * is mapped and parsed on its own: opening one never opens a set. */
static bool open_shards(gguf_file *f, const shard_src *src, size_t plen, uint32_t count, gguf_error *err)
{
    gguf_shard *sh = realloc(f->shards, count * sizeof *sh);
    if (!sh) {
        gguf__set_err(err, GGUF_ENOMEM, f->shards[0].path, 0, "out of memory");
        return false;
    }
    f->shards = sh;
    memset(sh + 1, 0, (count - 1) * sizeof *sh);
    size_t cap = plen + 32;
    char *sp = malloc(cap);
    if (!sp) {
        gguf__set_err(err, GGUF_ENOMEM, f->shards[0].path, 0, "out of memory");
        return false;
    }
    bool ok = false;
    for (uint32_t i = 1; i < count; i++) {
        snprintf(sp, cap, "%.*s-%05u-of-%05u.gguf", (int)plen, f->shards[0].path, i + 1, count);
        f->n_shards = i + 1;
        gguf_shard *s = &f->shards[i];
        if (!src->map(src->ctx, f, s, sp, err)) {
            if (err && err->code == GGUF_ENOTFOUND) {
                err->code = GGUF_ESPLIT;
                snprintf(err->msg, sizeof err->msg, "shard %u of %u is missing (expected %s beside the first shard)", i + 1, count, sp);
            }
            goto out;
        }
        for (uint32_t k = 0; k < i; k++)
            if (f->shards[k].id[0] == s->id[0] && f->shards[k].id[1] == s->id[1]) {
                gguf__set_err(err, GGUF_ESPLIT, sp, 0, "shard %u is the same file as shard %u, %s (expected a distinct file)", i + 1, k + 1,
                        f->shards[k].path);
                goto out;
            }
        if (!parse_shard(f, i, err, false))
            goto out;
        if (!s->has_split_count || s->split_count != count) {
            if (s->has_split_count)
                gguf__set_err(err, GGUF_ESPLIT, sp, s->split_count_off, "split.count is %llu (expected %u, as the first shard and the file name)",
                        (unsigned long long)s->split_count, count);
            else
                gguf__set_err(err, GGUF_ESPLIT, sp, 0, "split.count is absent (expected %u, as the first shard)", count);
            goto out;
        }
        if (!s->has_split_no || s->split_no != i) {
            if (s->has_split_no)
                gguf__set_err(err, GGUF_ESPLIT, sp, s->split_no_off, "split.no is %llu (expected %u, from the file name)",
                        (unsigned long long)s->split_no, i);
            else
                gguf__set_err(err, GGUF_ESPLIT, sp, 0, "split.no is absent (expected %u, from the file name)", i);
            goto out;
        }
    }
    uint64_t total;
    const gguf_kv *tkv = gguf_find_kv(f, "split.tensors.count");
    if (tkv && gguf_value_u64(&tkv->value, &total) == GGUF_OK && total != f->n_tensors) {
        gguf__set_err(err, GGUF_ESPLIT, f->shards[0].path, tkv->value.offset,
                "split.tensors.count is %llu but the shards hold %llu tensors (expected the same)", (unsigned long long)total,
                (unsigned long long)f->n_tensors);
        goto out;
    }
    free(f->t_hash);
    f->t_hash = NULL;
    ok = gguf__build_tensor_hash(f, err);
out:
    free(sp);
    return ok;
}

/* Open `path` from src and, when it is one shard of a split set, the whole
 * set. A later shard reopens the set from its first shard, once: the first
 * shard's own name and metadata must then say it is the first. */
static gguf_file *open_set(const shard_src *src, const char *path, gguf_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!path) {
        gguf__set_err(err, GGUF_EARG, "", 0, "no path");
        return NULL;
    }
    char *first = NULL;
    gguf_file *f = NULL;
    uint32_t want_count = 0;
    for (int pass = 0; pass < 2; pass++) {
        f = open_single(src, pass ? first : path, err);
        if (!f) {
            if (pass && err && err->code == GGUF_ENOTFOUND) {
                err->code = GGUF_ESPLIT;
                snprintf(err->msg, sizeof err->msg, "shard 1 of %u is missing (expected it beside %s)", want_count, path);
            }
            break;
        }
        size_t plen = 0;
        uint32_t count = 0;
        int r = split_check_first(&f->shards[0], &plen, &count, err);
        if (r == 0 && pass) {
            gguf__set_err(err, GGUF_ESPLIT, f->shards[0].path, 0, "the first shard has no split set (expected split.count %u, as %s says)",
                    want_count, path);
            gguf_close(f);
            f = NULL;
            break;
        }
        if (r == 0)
            break;
        if (r == 1) {
            if (!open_shards(f, src, plen, count, err)) {
                gguf_close(f);
                f = NULL;
            }
            break;
        }
        if (r == 2 && pass == 0) {
            /* a later shard: the set is opened from its first shard */
            first = malloc(plen + 32);
            if (!first) {
                gguf__set_err(err, GGUF_ENOMEM, path, 0, "out of memory");
                gguf_close(f);
                f = NULL;
                break;
            }
            snprintf(first, plen + 32, "%.*s-%05u-of-%05u.gguf", (int)plen, f->shards[0].path, 1u, count);
            want_count = count;
            gguf_close(f);
            f = NULL;
            continue;
        }
        /* an error, or (cannot happen: the name says shard 1) a first shard claiming to be a later one */
        if (r == 2)
            gguf__set_err(err, GGUF_ESPLIT, f->shards[0].path, f->shards[0].split_no_off, "the first shard says split.no is %llu (expected 0)",
                    (unsigned long long)f->shards[0].split_no);
        gguf_close(f);
        f = NULL;
        break;
    }
    free(first);
    return f;
}

gguf_file *gguf_open(const char *path, gguf_error *err)
{
    shard_src src = {map_file, NULL, NULL};
    return open_set(&src, path, err);
}

gguf_file *gguf_open_source(const gguf_source *source, const char *name, gguf_error *err)
{
    if (!source || !source->read) {
        if (err)
            memset(err, 0, sizeof *err);
        gguf__set_err(err, GGUF_EARG, name ? name : "", 0, "no source");
        return NULL;
    }
    shard_src src = {map_source, NULL, source};
    return open_set(&src, name, err);
}

gguf_file *gguf_open_memfiles(const gguf_memfile *files, size_t n, const char *path, gguf_error *err)
{
    memfile_table t = {files, files ? n : 0};
    shard_src src = {map_memfile, &t, NULL};
    return open_set(&src, path, err);
}

gguf_file *gguf_open_memory(const void *data, size_t size, const char *name, gguf_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    gguf_memfile one = {name ? name : "<memory>", data, size};
    memfile_table t = {&one, 1};
    shard_src src = {map_memfile, &t, NULL};
    return open_single(&src, one.name, err);
}
