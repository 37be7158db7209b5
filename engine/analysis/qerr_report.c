/* qerr: the report: issues, layer / role / file aggregates and their
 * histograms, the accessors (see qerr.h). */
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

/* ---- report building ---- */

int qerr__add_issue(qerr_report *r, qerr_issue_kind kind, const char *name, uint32_t type,
                    const char *fmt, ...)
{
    if (r->n_issues == r->cap_issues) {
        size_t nc = r->cap_issues ? r->cap_issues * 2 : 16;
        qerr_issue *ni = realloc(r->issues, nc * sizeof *ni);
        if (!ni)
            return -1;
        r->issues = ni;
        r->cap_issues = nc;
    }
    qerr_issue *is = &r->issues[r->n_issues++];
    memset(is, 0, sizeof *is);
    is->kind = kind;
    is->type = type;
    snprintf(is->name, sizeof is->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(is->msg, sizeof is->msg, fmt, ap);
    va_end(ap);
    return 0;
}

void qerr__set_err(char *err, size_t cap, const char *fmt, const char *arg)
{
    if (err && cap)
        snprintf(err, cap, fmt, arg ? arg : "");
}

bool qerr__type_dequantizable(uint32_t type)
{
    const ggtype_traits *t = ggtype_get(type);
    return t && (t->is_float || t->is_quantized);
}

double qerr__bpw_of(uint32_t type)
{
    const ggtype_traits *t = ggtype_get(type);
    return t ? 8.0 * t->type_size / t->blck_size : 0.0;
}

double qerr__tensor_bpw(const gguf_tensor *t)
{
    return t->n_elements ? 8.0 * (double)t->n_bytes / (double)t->n_elements : 0.0;
}

static size_t agg_find(qerr_aggregate **arr, size_t *n, size_t *cap, const char *key, int layer,
                       uint32_t type)
{
    for (size_t i = 0; i < *n; i++)
        if ((*arr)[i].type == type && !strcmp((*arr)[i].key, key))
            return i;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        qerr_aggregate *na = realloc(*arr, nc * sizeof *na);
        if (!na)
            return SIZE_MAX;
        *arr = na;
        *cap = nc;
    }
    qerr_aggregate *a = &(*arr)[*n];
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, "%s", key);
    a->layer = layer;
    a->type = type;
    return (*n)++;
}

static int cmp_layer(const void *pa, const void *pb)
{
    const qerr_aggregate *a = pa, *b = pb;
    if (a->layer != b->layer)
        return a->layer < b->layer ? -1 : 1;
    return a->type < b->type ? -1 : a->type > b->type;
}

static int cmp_role(const void *pa, const void *pb)
{
    const qerr_aggregate *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    if (c)
        return c;
    return a->type < b->type ? -1 : a->type > b->type;
}

static int gname_index(const qerr_report *rep, const char *role)
{
    for (size_t i = 0; i < rep->n_gnames; i++)
        if (!strcmp(rep->gnames[i], role))
            return (int)i;
    return -1;
}

/* The histogram of a layer (layer >= 0) or role aggregate of type ty, or NULL. */
static const uint64_t *group_hist(const qerr_report *rep, uint32_t ty, int layer, const char *role)
{
    if (!rep->ghist)
        return NULL;
    size_t slot = SIZE_MAX;
    for (size_t t = 0; t < rep->n_totals; t++)
        if (rep->totals[t].type == ty)
            slot = t;
    if (slot == SIZE_MAX)
        return NULL;
    size_t stride = rep->g_layers + rep->n_gnames;
    if (layer >= 0)
        return (size_t)layer < rep->g_layers ? rep->ghist[slot * stride + (size_t)layer] : NULL;
    int ri = gname_index(rep, role);
    return ri >= 0 ? rep->ghist[slot * stride + rep->g_layers + (size_t)ri] : NULL;
}

/* Give every item its role index and allocate the group histogram table
 * (NULL entries: filled when first used). Returns -1 on no memory. */
int qerr__groups_init(qerr_report *rep, qerr__item *items, size_t n)
{
    int maxl = -1;
    rep->gnames = calloc(MAX_HIST_ROLES, sizeof *rep->gnames);
    if (!rep->gnames)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const qerr_result *r = &rep->res[items[i].slot];
        if (r->layer > maxl)
            maxl = r->layer;
        int ri = gname_index(rep, r->role);
        if (ri < 0 && rep->n_gnames < MAX_HIST_ROLES) {
            snprintf(rep->gnames[rep->n_gnames], 64, "%s", r->role);
            ri = (int)rep->n_gnames++;
        }
        items[i].role_idx = ri;
    }
    rep->g_layers = maxl + 1 > MAX_HIST_LAYERS ? MAX_HIST_LAYERS : (size_t)(maxl + 1);
    size_t cells = rep->n_totals * (rep->g_layers + rep->n_gnames);
    rep->ghist = calloc(cells ? cells : 1, sizeof *rep->ghist);
    return rep->ghist ? 0 : -1;
}

int qerr__build_aggregates(qerr_report *rep, bool compare, const qerr_opts *o)
{
    size_t cl = 0, cr = 0;
    for (size_t i = 0; i < rep->n_items; i++) {
        if (!rep->done[i])
            continue;
        const qerr_result *r = &rep->res[i];
        uint32_t ty = compare ? UINT32_MAX : r->type;
        qerr_aggregate *targets[3] = {NULL, NULL, NULL};
        if (r->layer >= 0) {
            char key[32];
            snprintf(key, sizeof key, "blk.%d", r->layer);
            size_t k = agg_find(&rep->layers, &rep->n_layers, &cl, key, r->layer, ty);
            if (k == SIZE_MAX)
                return -1;
            targets[0] = &rep->layers[k];
        }
        size_t k = agg_find(&rep->roles, &rep->n_roles, &cr, r->role, -1, ty);
        if (k == SIZE_MAX)
            return -1;
        targets[1] = &rep->roles[k];
        for (size_t t = 0; t < rep->n_totals; t++)
            if (rep->totals[t].type == ty)
                targets[2] = &rep->totals[t];
        for (int t = 0; t < 3; t++) {
            qerr_aggregate *a = targets[t];
            if (!a)
                continue;
            a->tensors++;
            a->elements += r->elements;
            a->bits += r->bpw * (double)r->elements;
            a->ref_bits += r->ref_bpw * (double)r->elements;
            qerr_acc_merge(&a->acc, &r->acc);
        }
    }
    (void)o;
    for (size_t i = 0; i < rep->n_layers; i++) {
        const uint64_t *h = group_hist(rep, rep->layers[i].type, rep->layers[i].layer, NULL);
        qerr_metrics_of(&rep->layers[i].acc, h, &rep->layers[i].m);
        /* a group whose histogram could not be kept has no percentiles */
        if (!h)
            rep->layers[i].m.has_percentiles = false;
    }
    for (size_t i = 0; i < rep->n_roles; i++) {
        const uint64_t *h = group_hist(rep, rep->roles[i].type, -1, rep->roles[i].key);
        qerr_metrics_of(&rep->roles[i].acc, h, &rep->roles[i].m);
    }
    for (size_t i = 0; i < rep->n_totals; i++)
        qerr_metrics_of(&rep->totals[i].acc, rep->total_hist[i], &rep->totals[i].m);
    if (rep->n_layers)
        qsort(rep->layers, rep->n_layers, sizeof *rep->layers, cmp_layer);
    if (rep->n_roles)
        qsort(rep->roles, rep->n_roles, sizeof *rep->roles, cmp_role);
    return 0;
}

void qerr_report_free(qerr_report *r)
{
    if (!r)
        return;
    free(r->res);
    free(r->done);
    free(r->out);
    free(r->issues);
    free(r->layers);
    free(r->roles);
    free(r->totals);
    if (r->total_hist)
        for (size_t i = 0; i < r->n_totals; i++)
            free(r->total_hist[i]);
    free(r->total_hist);
    if (r->ghist)
        for (size_t i = 0; i < r->n_totals * (r->g_layers + r->n_gnames); i++)
            free(r->ghist[i]);
    free(r->ghist);
    free(r->gnames);
    free(r);
}

size_t qerr_report_count(const qerr_report *r) { return r ? r->n_out : 0; }
const qerr_result *qerr_report_at(const qerr_report *r, size_t i)
{
    return r && i < r->n_out ? &r->out[i] : NULL;
}
size_t qerr_report_issue_count(const qerr_report *r) { return r ? r->n_issues : 0; }
const qerr_issue *qerr_report_issue_at(const qerr_report *r, size_t i)
{
    return r && i < r->n_issues ? &r->issues[i] : NULL;
}
size_t qerr_report_layers(const qerr_report *r, const qerr_aggregate **out)
{
    *out = r ? r->layers : NULL;
    return r ? r->n_layers : 0;
}
size_t qerr_report_roles(const qerr_report *r, const qerr_aggregate **out)
{
    *out = r ? r->roles : NULL;
    return r ? r->n_roles : 0;
}
size_t qerr_report_totals(const qerr_report *r, const qerr_aggregate **out)
{
    *out = r ? r->totals : NULL;
    return r ? r->n_totals : 0;
}

qerr_report *qerr__report_new(size_t n_items, size_t n_totals)
{
    qerr_report *rep = calloc(1, sizeof *rep);
    if (!rep)
        return NULL;
    rep->res = calloc(n_items ? n_items : 1, sizeof *rep->res);
    rep->done = calloc(n_items ? n_items : 1, sizeof *rep->done);
    rep->totals = calloc(n_totals, sizeof *rep->totals);
    rep->total_hist = calloc(n_totals, sizeof *rep->total_hist);
    rep->n_totals = n_totals;
    if (!rep->res || !rep->done || !rep->totals || !rep->total_hist) {
        qerr_report_free(rep);
        return NULL;
    }
    for (size_t i = 0; i < n_totals; i++) {
        rep->total_hist[i] = calloc(QERR_HIST_BINS, sizeof(uint64_t));
        if (!rep->total_hist[i]) {
            qerr_report_free(rep);
            return NULL;
        }
        snprintf(rep->totals[i].key, sizeof rep->totals[i].key, "file");
        rep->totals[i].layer = -1;
    }
    return rep;
}
