/* qerr: the runs: re-quantization (qerr_requant) and comparison with a
 * parent file (qerr_compare), streamed over chunks on worker threads. */
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codec.h"
#include "cpufeat.h"
#include "ggtype.h"
#include "qerr_internal.h"

#define CHUNK_TARGET 65536u
#define RELEASE_GROUP 16u /* chunks whose pages are released together */

typedef struct {
    qerr_report *rep;
    qerr__item *items;
    size_t n_items;
    atomic_size_t cursor;
    pthread_mutex_t mu;
    const qerr_opts *o;
    atomic_uint_least64_t done_elems;
    uint64_t total_elems;
    atomic_bool failed;        /* out of memory or a codec error */
    atomic_bool stop;
    size_t max_chunk;
    size_t max_qbytes;
} run_ctx;

typedef struct {
    run_ctx *rc;
    int ith;
    float *a, *b;
    uint8_t *q;
    uint64_t *hist;
    size_t cur;                /* item of the partial, or SIZE_MAX */
    uint64_t chunks;
    qerr_acc acc;
} worker;

static uint64_t u64_gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void finalize_item(run_ctx *rc, qerr__item *it)
{
    qerr_report *rep = rc->rep;
    qerr_result *r = &rep->res[it->slot];
    r->acc = it->acc;
    qerr_metrics_of(&it->acc, it->hist, &r->m);
    memset(r->ehist, 0, sizeof r->ehist);
    if (it->hist && r->m.max_abs > 0) {
        for (uint32_t k = 0; k < QERR_HIST_BINS; k++) {
            if (!it->hist[k])
                continue;
            double v = qerr__bucket_mid(k);
            int bi = (int)(v / r->m.max_abs * QERR_EHIST_BINS);
            if (bi >= QERR_EHIST_BINS)
                bi = QERR_EHIST_BINS - 1;
            if (bi < 0)
                bi = 0;
            r->ehist[bi] += it->hist[k];
        }
    } else if (it->hist) {
        r->ehist[0] = it->acc.n;
    }
    uint64_t *th = rep->total_hist[it->total_slot];
    if (th && it->hist)
        for (uint32_t k = 0; k < QERR_HIST_BINS; k++)
            th[k] += it->hist[k];
    if (rep->ghist && it->hist) {
        size_t stride = rep->g_layers + rep->n_gnames, base = it->total_slot * stride;
        size_t idx[2] = {SIZE_MAX, SIZE_MAX};
        if (r->layer >= 0 && (size_t)r->layer < rep->g_layers)
            idx[0] = base + (size_t)r->layer;
        if (it->role_idx >= 0)
            idx[1] = base + rep->g_layers + (size_t)it->role_idx;
        for (int g = 0; g < 2; g++) {
            if (idx[g] == SIZE_MAX)
                continue;
            if (!rep->ghist[idx[g]])
                rep->ghist[idx[g]] = calloc(QERR_HIST_BINS, sizeof(uint64_t));
            uint64_t *gh = rep->ghist[idx[g]];
            if (gh)
                for (uint32_t k = 0; k < QERR_HIST_BINS; k++)
                    gh[k] += it->hist[k];
        }
    }
    free(it->hist);
    it->hist = NULL;
    rep->done[it->slot] = true;
    if (rc->o->on_result)
        rc->o->on_result(rc->o->user, r);
}

static void flush(worker *w)
{
    if (w->cur == SIZE_MAX)
        return;
    run_ctx *rc = w->rc;
    qerr__item *it = &rc->items[w->cur];
    pthread_mutex_lock(&rc->mu);
    if (!it->hist)
        it->hist = calloc(QERR_HIST_BINS, sizeof *it->hist);
    if (!it->hist)
        atomic_store(&rc->failed, true);
    else
        for (uint32_t k = 0; k < QERR_HIST_BINS; k++)
            it->hist[k] += w->hist[k];
    qerr_acc_merge(&it->acc, &w->acc);
    it->merged += w->chunks;
    if (it->merged == it->n_chunks && !atomic_load(&rc->failed))
        finalize_item(rc, it);
    pthread_mutex_unlock(&rc->mu);
    w->cur = SIZE_MAX;
    w->chunks = 0;
    memset(&w->acc, 0, sizeof w->acc);
    memset(w->hist, 0, QERR_HIST_BINS * sizeof *w->hist);
}

/* Dequantize elements [e0, e0+n) of tensor t (flat sequence of blocks). */
static int deq_range(const gguf_tensor *t, uint64_t e0, uint64_t n, float *dst)
{
    const ggtype_traits *tr = ggtype_get(t->type);
    uint64_t off = e0 / tr->blck_size * tr->type_size;
    return codec_dequantize(t->type, t->data + off, dst, n);
}

/* Release the pages of elements [e0, e0+n) of t: from the page holding the
 * first byte to the one holding the last (excluded). Safe on a read-only file
 * mapping even when another thread reads them: they are read again. */
static void release(const gguf_tensor *t, uint64_t e0, uint64_t n)
{
    static _Atomic long pg = 0;
    if (!pg)
        pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0)
        return;
    const ggtype_traits *tr = ggtype_get(t->type);
    uintptr_t a = (uintptr_t)(t->data + e0 / tr->blck_size * tr->type_size);
    uintptr_t b = (uintptr_t)(t->data + (e0 + n) / tr->blck_size * tr->type_size);
    a &= ~(uintptr_t)(pg - 1);
    b &= ~(uintptr_t)(pg - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_DONTNEED);
}

static int do_chunk(worker *w, qerr__item *it, uint64_t c)
{
    uint64_t e0 = c * it->chunk;
    uint64_t n = it->src->n_elements - e0;
    if (n > it->chunk)
        n = it->chunk;
    if (it->ref) {
        if (deq_range(it->src, e0, n, w->b) != 0 || deq_range(it->ref, e0, n, w->a) != 0)
            return -1;
    } else {
        if (deq_range(it->src, e0, n, w->a) != 0)
            return -1;
        if (codec_quantize(it->qtype, w->a, w->q, 1, n, NULL) == 0)
            return -1;
        if (codec_dequantize(it->qtype, w->q, w->b, n) != 0)
            return -1;
    }
    qerr_acc_add(&w->acc, w->hist, w->a, w->b, (size_t)n);
    /* pages go back RELEASE_GROUP chunks at a time (each madvise costs a TLB
     * shootdown on every CPU): when chunk c ends a group or the tensor, from
     * the group's first element to c's last */
    if (w->rc->o->release_pages && ((c + 1) % RELEASE_GROUP == 0 || c + 1 == it->n_chunks)) {
        uint64_t g0 = c / RELEASE_GROUP * RELEASE_GROUP * it->chunk;
        release(it->src, g0, e0 + n - g0);
        if (it->ref)
            release(it->ref, g0, e0 + n - g0);
    }
    return 0;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    run_ctx *rc = w->rc;
    const qerr_opts *o = rc->o;
    size_t i = atomic_load(&rc->cursor);
    while (i < rc->n_items) {
        if ((o->cancel && atomic_load(o->cancel)) || atomic_load(&rc->failed) ||
            atomic_load(&rc->stop)) {
            atomic_store(&rc->stop, true);
            break;
        }
        qerr__item *it = &rc->items[i];
        uint64_t c = atomic_fetch_add(&it->next, 1);
        if (c >= it->n_chunks) {
            if (w->cur == i)
                flush(w);
            size_t exp = i;
            atomic_compare_exchange_strong(&rc->cursor, &exp, i + 1);
            i = atomic_load(&rc->cursor);
            continue;
        }
        if (w->cur != i) {
            flush(w);
            w->cur = i;
        }
        if (do_chunk(w, it, c) != 0) {
            atomic_store(&rc->failed, true);
            break;
        }
        w->chunks++;
        uint64_t n = it->src->n_elements - c * it->chunk;
        if (n > it->chunk)
            n = it->chunk;
        uint64_t d = atomic_fetch_add(&rc->done_elems, n) + n;
        if (w->ith == 0 && o->progress)
            o->progress(o->user, d, rc->total_elems);
    }
    if (!atomic_load(&rc->stop) && !atomic_load(&rc->failed))
        flush(w);
    return NULL;
}

/* Fill a result slot's identity. */
static void init_result(qerr_result *r, uint64_t ti, const gguf_tensor *t)
{
    memset(r, 0, sizeof *r);
    r->tensor = ti;
    gguf_str_copy(t->name, r->name, sizeof r->name);
    r->n_dims = t->n_dims;
    memcpy(r->ne, t->ne, sizeof r->ne);
    r->elements = t->n_elements;
    r->layer = qerr_name_role(r->name, r->role, sizeof r->role);
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n > 256 ? 256 : n) : 1;
}

/* Run the items on the threads; then build the report's outputs. */
static qerr_status run_items(run_ctx *rc, bool compare)
{
    qerr_report *rep = rc->rep;
    const qerr_opts *o = rc->o;
    int nt = o->n_threads > 0 ? o->n_threads : online_cpus();
    if (nt > 256)
        nt = 256;
    qerr_status st = QERR_OK;
    worker *ws = calloc((size_t)nt, sizeof *ws);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    if (!ws || !th) {
        free(ws);
        free(th);
        return QERR_ENOMEM;
    }
    int started = 0;
    bool oom = false;
    for (int t = 0; t < nt; t++) {
        worker *w = &ws[t];
        w->rc = rc;
        w->ith = t;
        w->cur = SIZE_MAX;
        w->a = malloc((rc->max_chunk + 1) * sizeof(float));
        w->b = malloc((rc->max_chunk + 1) * sizeof(float));
        w->q = malloc(rc->max_qbytes ? rc->max_qbytes : 1);
        w->hist = calloc(QERR_HIST_BINS, sizeof *w->hist);
        if (!w->a || !w->b || !w->q || !w->hist)
            oom = true;
    }
    if (!oom && rc->n_items) {
        for (int t = 1; t < nt; t++) {
            if (pthread_create(&th[t], NULL, worker_main, &ws[t]) != 0)
                break;
            started++;
        }
        worker_main(&ws[0]);
        for (int t = 1; t <= started; t++)
            pthread_join(th[t], NULL);
    }
    for (int t = 0; t < nt; t++) {
        free(ws[t].a);
        free(ws[t].b);
        free(ws[t].q);
        free(ws[t].hist);
    }
    free(ws);
    free(th);
    for (size_t i = 0; i < rc->n_items; i++)
        free(rc->items[i].hist);
    if (oom || atomic_load(&rc->failed))
        return QERR_ENOMEM;
    if (o->cancel && atomic_load(o->cancel))
        st = QERR_ECANCELLED;
    rep->out = malloc((rep->n_items ? rep->n_items : 1) * sizeof *rep->out);
    if (!rep->out)
        return QERR_ENOMEM;
    for (size_t i = 0; i < rep->n_items; i++)
        if (rep->done[i])
            rep->out[rep->n_out++] = rep->res[i];
    if (qerr__build_aggregates(rep, compare, o) != 0)
        return QERR_ENOMEM;
    return st;
}

static uint64_t chunk_for(uint64_t n, uint64_t l)
{
    uint64_t c = CHUNK_TARGET / l * l;
    if (c == 0)
        c = l;
    return c > n ? n : c;
}

static qerr_report *finish(qerr_report *rep, qerr__item *items, qerr_status s, qerr_status *st,
                           char *err, size_t cap)
{
    free(items);
    if (st)
        *st = s;
    if (s != QERR_OK && s != QERR_ECANCELLED) {
        qerr__set_err(err, cap, "%s", qerr_strerror(s));
        qerr_report_free(rep);
        return NULL;
    }
    return rep;
}

static bool name_selected(const regex_t *re, const char *name)
{
    return !re || regexec(re, name, 0, NULL, 0) == 0;
}

/* Compile the options' --filter regex, if any. Returns false (error set) on a bad one. */
static bool compile_filter(const qerr_opts *o, regex_t *re, bool *have_re, qerr_status *st, char *err, size_t cap)
{
    *have_re = false;
    if (!o->filter || !*o->filter)
        return true;
    if (regcomp(re, o->filter, REG_EXTENDED | REG_NOSUB) != 0) {
        qerr__set_err(err, cap, "bad regular expression '%s'", o->filter);
        if (st)
            *st = QERR_EARG;
        return false;
    }
    *have_re = true;
    return true;
}

/* What qerr_requant and qerr_compare share: the name filter, the report, the
 * items and the run. */
typedef struct {
    run_ctx rc;
    regex_t re;
    bool have_re;
    size_t n;                  /* items added */
} job;

/* Compile the filter, allocate a report of max_items results and n_totals
 * totals and the items. false on failure, with what to return in *fail. */
static bool job_begin(job *j, const qerr_opts *o, size_t max_items, size_t n_totals,
                      qerr_status *st, char *err, size_t cap, qerr_report **fail)
{
    memset(j, 0, sizeof *j);
    *fail = NULL;
    if (!compile_filter(o, &j->re, &j->have_re, st, err, cap))
        return false;
    j->rc.o = o;
    j->rc.rep = qerr__report_new(max_items, n_totals);
    j->rc.items = calloc(max_items ? max_items : 1, sizeof *j->rc.items);
    if (!j->rc.rep || !j->rc.items) {
        if (j->have_re)
            regfree(&j->re);
        *fail = finish(j->rc.rep, j->rc.items, QERR_ENOMEM, st, err, cap);
        return false;
    }
    return true;
}

static bool job_selected(const job *j, const char *name)
{
    return name_selected(j->have_re ? &j->re : NULL, name);
}

/* Tensor ti of f with its name in name, or NULL when the filter leaves it out. */
static const gguf_tensor *job_tensor(const job *j, const gguf_file *f, uint64_t ti, char *name,
                                     size_t cap)
{
    const gguf_tensor *t = gguf_tensor_at(f, ti);
    gguf_str_copy(t->name, name, cap);
    return job_selected(j, name) ? t : NULL;
}

/* The next item: tensor ti (t) in chunks of a multiple of l elements, counted
 * in total slot total_slot; its result slot is filled with t's identity. */
static qerr__item *job_add(job *j, uint64_t ti, const gguf_tensor *t, uint64_t l,
                           uint32_t total_slot)
{
    qerr__item *it = &j->rc.items[j->n];
    it->src = t;
    it->chunk = chunk_for(t->n_elements, l);
    it->n_chunks = (t->n_elements + it->chunk - 1) / it->chunk;
    it->slot = j->n;
    it->total_slot = total_slot;
    if (it->chunk > j->rc.max_chunk)
        j->rc.max_chunk = it->chunk;
    init_result(&j->rc.rep->res[j->n], ti, t);
    j->rc.total_elems += t->n_elements;
    j->n++;
    return it;
}

/* Run the items added and return the report (finish). */
static qerr_report *job_run(job *j, bool compare, qerr_status *st, char *err, size_t cap)
{
    if (j->have_re)
        regfree(&j->re);
    qerr_report *rep = j->rc.rep;
    rep->n_items = j->n;
    j->rc.n_items = j->n;
    if (qerr__groups_init(rep, j->rc.items, j->n) != 0)
        return finish(rep, j->rc.items, QERR_ENOMEM, st, err, cap);
    pthread_mutex_init(&j->rc.mu, NULL);
    qerr_status s = run_items(&j->rc, compare);
    pthread_mutex_destroy(&j->rc.mu);
    return finish(rep, j->rc.items, s, st, err, cap);
}

qerr_report *qerr_requant(const gguf_file *f, const qerr_opts *o, qerr_status *st, char *err,
                          size_t cap)
{
    if (!f || !o || !o->types || o->n_types == 0) {
        qerr__set_err(err, cap, "%s", "no candidate type");
        if (st)
            *st = QERR_EARG;
        return NULL;
    }
    for (size_t k = 0; k < o->n_types; k++)
        if (!codec_can_quantize(o->types[k]) || !ggtype_get(o->types[k])) {
            qerr__set_err(err, cap, "type %s has no reference quantizer", ggtype_name(o->types[k]));
            if (st)
                *st = QERR_EARG;
            return NULL;
        }
    uint64_t nt = gguf_tensor_count(f);
    job j;
    qerr_report *fail;
    if (!job_begin(&j, o, (size_t)nt * o->n_types, o->n_types, st, err, cap, &fail))
        return fail;
    qerr_report *rep = j.rc.rep;
    for (size_t k = 0; k < o->n_types; k++)
        rep->totals[k].type = o->types[k];
    char name[256];
    for (uint64_t ti = 0; ti < nt; ti++) {
        const gguf_tensor *t = job_tensor(&j, f, ti, name, sizeof name);
        if (!t)
            continue;
        if (!t->type_known || !qerr__type_dequantizable(t->type) || !t->data) {
            qerr__add_issue(rep, QERR_ISSUE_SKIPPED, name, t->type, "type %s cannot be dequantized",
                            ggtype_name(t->type));
            continue;
        }
        if (t->n_dims < 2 || t->n_elements == t->ne[0]) {
            qerr__add_issue(rep, QERR_ISSUE_SKIPPED, name, t->type, "1-D tensor (kept in float by quantizers)");
            continue;
        }
        const ggtype_traits *st_tr = ggtype_get(t->type);
        for (size_t k = 0; k < o->n_types; k++) {
            const ggtype_traits *qt = ggtype_get(o->types[k]);
            if (t->ne[0] % qt->blck_size != 0) {
                qerr__add_issue(rep, QERR_ISSUE_SKIPPED, name, o->types[k],
                                "ne[0]=%llu is not a multiple of %s's block of %u",
                                (unsigned long long)t->ne[0], qt->name, qt->blck_size);
                continue;
            }
            uint64_t l = st_tr->blck_size / u64_gcd(st_tr->blck_size, qt->blck_size) * qt->blck_size;
            if (t->n_elements % l != 0) {
                qerr__add_issue(rep, QERR_ISSUE_SKIPPED, name, o->types[k],
                                "element count not a multiple of %llu", (unsigned long long)l);
                continue;
            }
            qerr_result *r = &rep->res[j.n];
            qerr__item *it = job_add(&j, ti, t, l, (uint32_t)k);
            it->qtype = o->types[k];
            size_t qb = (size_t)(it->chunk / qt->blck_size * qt->type_size);
            if (qb > j.rc.max_qbytes)
                j.rc.max_qbytes = qb;
            r->type = o->types[k];
            r->ref_type = t->type;
            r->requantized = st_tr->is_quantized;
            r->bpw = qerr__bpw_of(o->types[k]);
            r->ref_bpw = qerr__tensor_bpw(t);
        }
    }
    return job_run(&j, false, st, err, cap);
}

static bool same_shape(const gguf_tensor *a, const gguf_tensor *b)
{
    for (int d = 0; d < 4; d++)
        if (a->ne[d] != b->ne[d])
            return false;
    return true;
}

qerr_report *qerr_compare(const gguf_file *f, const gguf_file *parent, const qerr_opts *o,
                          qerr_status *st, char *err, size_t cap)
{
    if (!f || !parent || !o) {
        qerr__set_err(err, cap, "%s", "missing file");
        if (st)
            *st = QERR_EARG;
        return NULL;
    }
    uint64_t nt = gguf_tensor_count(f);
    job j;
    qerr_report *fail;
    if (!job_begin(&j, o, (size_t)nt, 1, st, err, cap, &fail))
        return fail;
    qerr_report *rep = j.rc.rep;
    rep->totals[0].type = UINT32_MAX;
    char name[256];
    for (uint64_t ti = 0; ti < nt; ti++) {
        const gguf_tensor *t = job_tensor(&j, f, ti, name, sizeof name);
        if (!t)
            continue;
        const gguf_tensor *p = gguf_find_tensor(parent, name);
        if (!p) {
            qerr__add_issue(rep, QERR_ISSUE_ONLY_MEASURED, name, t->type, "not in the parent");
            continue;
        }
        if (!same_shape(t, p)) {
            char a[96], b[96];
            snprintf(a, sizeof a, "%llux%llux%llux%llu", (unsigned long long)t->ne[0],
                     (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                     (unsigned long long)t->ne[3]);
            snprintf(b, sizeof b, "%llux%llux%llux%llu", (unsigned long long)p->ne[0],
                     (unsigned long long)p->ne[1], (unsigned long long)p->ne[2],
                     (unsigned long long)p->ne[3]);
            qerr__add_issue(rep, QERR_ISSUE_SHAPE, name, t->type, "shape %s vs %s in the parent", a, b);
            continue;
        }
        if (!t->type_known || !p->type_known || !qerr__type_dequantizable(t->type) ||
            !qerr__type_dequantizable(p->type) || !t->data || !p->data) {
            qerr__add_issue(rep, QERR_ISSUE_SKIPPED, name, t->type, "type %s or %s cannot be dequantized",
                            ggtype_name(t->type), ggtype_name(p->type));
            continue;
        }
        if (t->n_elements == 0)
            continue;
        const ggtype_traits *a = ggtype_get(t->type), *b = ggtype_get(p->type);
        uint64_t l = a->blck_size / u64_gcd(a->blck_size, b->blck_size) * b->blck_size;
        if (t->n_elements % l != 0) {
            qerr__add_issue(rep, QERR_ISSUE_SKIPPED, name, t->type, "element count not a multiple of %llu",
                            (unsigned long long)l);
            continue;
        }
        qerr_result *r = &rep->res[j.n];
        job_add(&j, ti, t, l, 0)->ref = p;
        r->type = t->type;
        r->ref_type = p->type;
        r->bpw = qerr__tensor_bpw(t);
        r->ref_bpw = qerr__tensor_bpw(p);
    }
    uint64_t np = gguf_tensor_count(parent);
    for (uint64_t i = 0; i < np; i++) {
        const gguf_tensor *p = gguf_tensor_at(parent, i);
        gguf_str_copy(p->name, name, sizeof name);
        if (!job_selected(&j, name))
            continue;
        if (!gguf_find_tensor(f, name))
            qerr__add_issue(rep, QERR_ISSUE_ONLY_REF, name, p->type, "only in the parent");
    }
    return job_run(&j, true, st, err, cap);
}
