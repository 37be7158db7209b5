/* model: the weights copied out of the file mapping into anonymous memory
 * with transparent huge pages (model_copy, see model.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emsg.h"
#include "model_internal.h"

#define COPY_PIECE ((uint64_t)16 << 20)   /* bytes a thread reads at a time */
#define COPY_THREADS 4
#define COPY_HUGE ((uintptr_t)2 << 20)    /* a transparent huge page */
#define COPY_LINE ((uintptr_t)64)

struct model_copy {
    void *map;            /* the anonymous mapping */
    size_t map_len;
    backend_weight **slot;/* the copied weights (n) */
    const void **orig;    /* their data in the file mapping */
    size_t n;
    uint64_t bytes;       /* weight bytes copied */
};

static uint64_t weight_bytes(const backend_weight *w)
{
    return w->ne1 * w->row_bytes * (w->ne2 > 1 ? w->ne2 : 1);
}

/* Whether slot i is copied: bound with data, and not an untied embedding. */
static backend_weight *copied_slot(model *m, size_t i)
{
    backend_weight *w = model_weight_slot(m, i);
    if (w && i == 0 && m->output.data != m->tok_embd.data)
        return NULL;
    return w;
}

/* The copy's offset for w after `at` bytes: the next cache line plus w's
 * own offset in its line, so that every row keeps its alignment. */
static uint64_t place(uint64_t at, const backend_weight *w)
{
    return ((at + COPY_LINE - 1) & ~(uint64_t)(COPY_LINE - 1)) + ((uintptr_t)w->data & (COPY_LINE - 1));
}

uint64_t model_copy_bytes(const model *m)
{
    if (!m || m->shapes_only)
        return 0;
    if (m->copy)
        return m->copy->bytes;
    uint64_t n = 0;
    for (size_t i = 0; i < MODEL_SLOTS(m); i++) {
        backend_weight *w = copied_slot((model *)m, i);
        if (w)
            n += weight_bytes(w);
    }
    return n;
}

/* The shard holding [p, p + len) and p's offset in it; false when the
 * range is not in one shard's bytes (then it is read from memory as is). */
static bool locate(const gguf_file *f, const void *p, uint64_t len, uint32_t *shard, uint64_t *off)
{
    for (uint32_t s = 0; s < gguf_shard_count(f); s++) {
        uint64_t size;
        const uint8_t *base = gguf_shard_base(f, s, &size);
        if (base && (const uint8_t *)p >= base && (uint64_t)((const uint8_t *)p - base) <= size &&
            len <= size - (uint64_t)((const uint8_t *)p - base)) {
            *shard = s;
            *off = (uint64_t)((const uint8_t *)p - base);
            return true;
        }
    }
    return false;
}

static void free_copy(struct model_copy *c)
{
    if (c->map)
        munmap(c->map, c->map_len);
    free(c->slot);
    free(c->orig);
    free(c);
}

/* The copy, in pieces that COPY_THREADS threads take in turn (reading a
 * file into fresh memory is bound by the page faults and, when the page
 * cache must give memory back first, by reclaim, which threads share). */
typedef struct {
    model *m;
    struct model_copy *c;
    uint8_t *base;
    const atomic_bool *cancel;
    char *msg;
    size_t cap;
    pthread_mutex_t mu;   /* the fields below */
    size_t slot;          /* the next piece: slot, its byte offset and its place in the copy */
    uint64_t k, at;
    uint64_t done;
    uint64_t reported;    /* the last done the reporting thread passed on */
    int rc;
} copy_job;

/* Take pieces until none is left, or a cancel or an error; the calling
 * thread reports progress when `progress` is set. */
static void copy_pieces(copy_job *J, void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx)
{
    for (;;) {
        pthread_mutex_lock(&J->mu);
        while (J->slot < J->c->n && J->k >= weight_bytes(J->c->slot[J->slot])) {
            J->at += weight_bytes(J->c->slot[J->slot]);
            J->k = 0;
            if (++J->slot < J->c->n)
                J->at = place(J->at, J->c->slot[J->slot]);
        }
        if (!J->rc && J->cancel && atomic_load(J->cancel)) {
            emsg_set(J->msg, J->cap, "cancelled");
            J->rc = BACKEND_ECANCELLED;
        }
        if (J->rc || J->slot >= J->c->n) {
            pthread_mutex_unlock(&J->mu);
            return;
        }
        const backend_weight *w = J->c->slot[J->slot];
        uint64_t len = weight_bytes(w), k = J->k, piece = len - k < COPY_PIECE ? len - k : COPY_PIECE;
        uint8_t *dst = J->base + J->at + k;
        J->k += piece;
        pthread_mutex_unlock(&J->mu);

        uint64_t shoff = 0;
        uint32_t shard = 0;
        char e[256] = "";
        if (locate(J->m->file, w->data, len, &shard, &shoff)) {
            gguf_error err;
            if (gguf_read_file(J->m->file, shard, shoff + k, piece, dst, J->cancel, &err) != GGUF_OK)
                gguf_error_format(&err, e, sizeof e);
        } else {
            memcpy(dst, (const uint8_t *)w->data + k, (size_t)piece);
        }
        pthread_mutex_lock(&J->mu);
        if (e[0] && !J->rc) {
            emsg_set(J->msg, J->cap, "copying %s: %s", w->name ? w->name : "a weight", e);
            J->rc = BACKEND_EARG;
        }
        J->done += piece;
        uint64_t done = J->done;
        bool ok = !J->rc;
        pthread_mutex_unlock(&J->mu);
        if (progress && ok) {
            progress(ctx, done, J->c->bytes);
            J->reported = done;
        }
    }
}

static void *copy_worker(void *arg)
{
    copy_pieces(arg, NULL, NULL);
    return NULL;
}

int model_copy(model *m, const atomic_bool *cancel, void (*progress)(void *ctx, uint64_t done, uint64_t total),
               void *ctx, char *msg, size_t cap)
{
    if (msg && cap)
        msg[0] = 0;
    if (!m || m->shapes_only || m->prepared) {
        emsg_set(msg, cap, "%s", !m ? "no model" : m->shapes_only ? "the model was loaded for its shapes only"
                                                                  : "the model is prepared for a device");
        return BACKEND_EARG;
    }
    if (m->copy)
        return 0;
    const size_t n = MODEL_SLOTS(m);
    struct model_copy *c = calloc(1, sizeof *c);
    if (!c || !(c->slot = calloc(n, sizeof *c->slot)) || !(c->orig = calloc(n, sizeof *c->orig))) {
        if (c)
            free_copy(c);
        emsg_set(msg, cap, "out of memory");
        return BACKEND_ENOMEM;
    }
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) {   /* which, before any pointer moves (a tied output follows) */
        backend_weight *w = copied_slot(m, i);
        if (w) {
            c->slot[c->n] = w;
            c->orig[c->n++] = w->data;
            end = place(end, w) + weight_bytes(w);
            c->bytes += weight_bytes(w);
        }
    }
    if (end > SIZE_MAX - COPY_HUGE) {
        free_copy(c);
        emsg_set(msg, cap, "out of memory");
        return BACKEND_ENOMEM;
    }
    c->map_len = (size_t)end + COPY_HUGE;   /* room to start on a huge page */
    c->map = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->map == MAP_FAILED) {
        c->map = NULL;
        free_copy(c);
        emsg_set(msg, cap, "cannot reserve %llu MB for the weights' copy", (unsigned long long)(end >> 20));
        return BACKEND_ENOMEM;
    }
    uint8_t *base = (uint8_t *)(((uintptr_t)c->map + COPY_HUGE - 1) & ~(COPY_HUGE - 1));
#ifdef MADV_HUGEPAGE
    /* a hint (without it, ordinary pages), for whole huge pages only: the
     * tail stays in small pages, so that no huge page is resident past the
     * weights (a small model takes none) */
    if (end >= COPY_HUGE)
        madvise(base, (size_t)end & ~(COPY_HUGE - 1), MADV_HUGEPAGE);
#endif
    copy_job J = {.m = m, .c = c, .base = base, .cancel = cancel, .msg = msg, .cap = cap,
                  .at = c->n ? place(0, c->slot[0]) : 0};
    pthread_mutex_init(&J.mu, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > COPY_THREADS ? COPY_THREADS : (int)ncpu, started = 0;
    pthread_t th[COPY_THREADS];
    for (int i = 1; i < nt; i++)
        started += pthread_create(&th[started], NULL, copy_worker, &J) == 0;
    copy_pieces(&J, progress, ctx);   /* this thread takes pieces too, and reports */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&J.mu);
    int rc = J.rc;
    if (!rc && progress && J.reported < c->bytes)   /* the last pieces were another thread's */
        progress(ctx, c->bytes, c->bytes);
    if (rc) {
        free_copy(c);
        return rc;
    }
    mprotect(base, (size_t)end, PROT_READ);   /* the weights are read-only, as in the mapping */
    bool tied = m->output.data == m->tok_embd.data;
    uint64_t at = 0;
    for (size_t i = 0; i < c->n; i++) {
        backend_weight *w = c->slot[i];
        at = place(at, w);
        w->data = base + at;
        at += weight_bytes(w);
    }
    if (tied)
        m->output.data = m->tok_embd.data;
    m->copy = c;
    return 0;
}

void model_uncopy(model *m)
{
    if (!m || !m->copy)
        return;
    struct model_copy *c = m->copy;
    bool tied = m->output.data == m->tok_embd.data;
    for (size_t i = 0; i < c->n; i++)
        c->slot[i]->data = c->orig[i];
    if (tied)
        m->output.data = m->tok_embd.data;
    m->copy = NULL;
    free_copy(c);
}
