/* explorer: layout of the three panes, the explorer's keys, and the search
 * over keys, metadata values (array elements included) and tensor names,
 * which runs on a worker. */
#include "explorer.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "panes.h"
#include "textesc.h"

enum { M_KEY, M_VALUE, M_ELEM, M_TENSOR };

typedef struct {
    uint8_t kind;
    bool exact;   /* the whole string equals the query (case-insensitively) */
    uint64_t a;   /* kv index or tensor index */
    int64_t b;    /* array element, or -1 */
} match;

#define MAX_MATCHES 100000

typedef struct search_job {
    ui_job job;
    struct explorer *ex;
    const gguf_file *f;
    char q[256];
    match *m;
    size_t n, cap;
    bool truncated;
} search_job;

struct explorer {
    screen *s;
    const gguf_file *f;
    int page;
    panel *meta, *tensors, *detail;
    search_job *job;     /* running */
    char query[256];
    match *m;            /* results of the last search */
    size_t n, pos;
};

static void layout(screen *s, int page, int top, int left, int rows, int cols, bool zoom, void *ctx)
{
    (void)page;
    explorer *e = ctx;
    panel *f = screen_focused(s);
    if (zoom) {
        screen_place(s, f, top, left, rows, cols);
        return;
    }
    if (cols < 100) {
        /* narrow: the metadata alone, or the list above the detail */
        if (f == e->meta) {
            screen_place(s, e->meta, top, left, rows, cols);
            return;
        }
        int th = rows * 45 / 100;
        if (th < 6)
            th = rows / 2;
        screen_place(s, e->tensors, top, left, th, cols);
        screen_place(s, e->detail, top + th, left, rows - th, cols);
        return;
    }
    /* a file without tensors (a vocabulary) gives the metadata more room */
    bool none = gguf_tensor_count(e->f) == 0;
    int mw = cols * (none ? 60 : 36) / 100;
    if (mw < 30)
        mw = 30;
    if (mw > (none ? 90 : 60))
        mw = none ? 90 : 60;
    int th = rows * 45 / 100;
    screen_place(s, e->meta, top, left, rows, mw);
    screen_place(s, e->tensors, top, left + mw, th, cols - mw);
    screen_place(s, e->detail, top + th, left + mw, rows - th, cols - mw);
}

static void on_select(void *ctx, int64_t ti)
{
    explorer *e = ctx;
    if (e->detail)
        detail_pane_set_tensor(e->detail, ti);
}

static int set_view(screen *s, int key, void *ctx)
{
    explorer *e = ctx;
    int v = key == 'x' ? DETAIL_HEX : key == 'v' ? DETAIL_VALUES : DETAIL_HIST;
    detail_pane_set_view(e->detail, v);
    (void)s;
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_enter(screen *s, int key, void *ctx)
{
    explorer *e = ctx;
    (void)key;
    if (screen_focused(s) == e->tensors && tensors_pane_selected(e->tensors) >= 0)
        screen_focus(s, e->detail);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_esc(screen *s, int key, void *ctx)
{
    explorer *e = ctx;
    (void)key;
    int n = 0;
    if (detail_pane_cancel(e->detail))
        n++;
    if (e->job) {
        ui_job_cancel(&e->job->job);
        n++;
    }
    if (n)
        screen_message(s, "cancelled");
    return PANEL_HANDLED | PANEL_REDRAW;
}

static void goto_row_submit(screen *s, const char *text, void *ctx)
{
    explorer *e = ctx;
    char *end;
    unsigned long long r = strtoull(text, &end, 10);
    if (end == text) {
        screen_message(s, "not a row number: %s", text);
        return;
    }
    detail_pane_set_view(e->detail, DETAIL_VALUES);
    detail_pane_goto_row(e->detail, r);
    screen_focus(s, e->detail);
}

static int key_goto(screen *s, int key, void *ctx)
{
    (void)key;
    screen_prompt(s, "row:", goto_row_submit, NULL, ctx);
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* ---- search ---- */

static bool ci_find(const char *h, size_t hn, const char *q, size_t qn)
{
    if (qn == 0 || qn > hn)
        return qn == 0;
    unsigned char first = (unsigned char)tolower((unsigned char)q[0]);
    for (size_t i = 0; i + qn <= hn; i++) {
        if ((unsigned char)tolower((unsigned char)h[i]) != first)
            continue;
        size_t k = 1;
        while (k < qn && tolower((unsigned char)h[i + k]) == tolower((unsigned char)q[k]))
            k++;
        if (k == qn)
            return true;
    }
    return false;
}

static void add_match(search_job *j, uint8_t kind, uint64_t a, int64_t b, bool exact)
{
    if (j->n >= MAX_MATCHES) {
        j->truncated = true;
        return;
    }
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 64;
        match *m = realloc(j->m, cap * sizeof *m);
        if (!m) {
            j->truncated = true;
            return;
        }
        j->m = m;
        j->cap = cap;
    }
    j->m[j->n++] = (match){kind, exact, a, b};
}

/* Worker thread: reads the mapping and the reader's immutable structures
 * (string-array indexes were built on the loop thread before submission). */
static void search_work(ui_job *job)
{
    search_job *j = (search_job *)job;
    size_t qn = strlen(j->q);
    uint64_t nkv = gguf_kv_count(j->f), nt = gguf_tensor_count(j->f);
    uint64_t total = nkv + nt, done = 0;
    for (uint64_t i = 0; i < nkv && !ui_job_cancelled(job); i++, done++) {
        const gguf_kv *kv = gguf_kv_at(j->f, i);
        if (!kv)
            continue;
        if (ci_find(kv->key.ptr, (size_t)kv->key.len, j->q, qn))
            add_match(j, M_KEY, i, -1, kv->key.len == qn);
        const gguf_value *v = &kv->value;
        gguf_str s;
        char num[64];
        if (v->type == GGUF_VT_STRING) {
            if (gguf_value_str(v, &s) == GGUF_OK && ci_find(s.ptr, (size_t)s.len, j->q, qn))
                add_match(j, M_VALUE, i, -1, s.len == qn);
        } else if (v->type == GGUF_VT_ARRAY && v->arr_type == GGUF_VT_STRING) {
            for (uint64_t k = 0; k < v->arr_len; k++) {
                if ((k & 0xfff) == 0 && ui_job_cancelled(job))
                    break;
                if (gguf_arr_str(v, k, &s) == GGUF_OK && ci_find(s.ptr, (size_t)s.len, j->q, qn))
                    add_match(j, M_ELEM, i, (int64_t)k, s.len == qn);
            }
        } else if (v->type != GGUF_VT_ARRAY) {
            double d;
            int64_t iv;
            if (v->type == GGUF_VT_FLOAT32 || v->type == GGUF_VT_FLOAT64) {
                if (gguf_value_f64(v, &d) == GGUF_OK)
                    snprintf(num, sizeof num, "%.7g", d);
            } else if (gguf_value_i64(v, &iv) == GGUF_OK) {
                snprintf(num, sizeof num, "%" PRId64, iv);
            } else {
                num[0] = 0;
            }
            if (ci_find(num, strlen(num), j->q, qn))
                add_match(j, M_VALUE, i, -1, strlen(num) == qn);
        }
        ui_job_progress(job, done, total);
    }
    for (uint64_t i = 0; i < nt && !ui_job_cancelled(job); i++, done++) {
        const gguf_tensor *t = gguf_tensor_at(j->f, i);
        if (t && ci_find(t->name.ptr, (size_t)t->name.len, j->q, qn))
            add_match(j, M_TENSOR, i, -1, t->name.len == qn);
    }
    /* exact matches first, each group in file order (a stable partition) */
    size_t ne = 0;
    for (size_t k = 0; k < j->n; k++)
        ne += j->m[k].exact;
    if (ne && ne < j->n) {
        match *sorted = malloc(j->n * sizeof *sorted);
        if (sorted) {
            size_t a = 0, b = ne;
            for (size_t k = 0; k < j->n; k++)
                sorted[j->m[k].exact ? a++ : b++] = j->m[k];
            free(j->m);
            j->m = sorted;
            j->cap = j->n;
        }
    }
    ui_job_progress(job, total, total);
}

static void show_match(explorer *e)
{
    if (!e->n)
        return;
    match *m = &e->m[e->pos];
    if (m->kind == M_TENSOR) {
        tensors_pane_reveal(e->tensors, m->a);
        screen_focus(e->s, e->tensors);
    } else {
        meta_pane_reveal(e->meta, m->a, m->kind == M_ELEM ? m->b : -1);
        screen_focus(e->s, e->meta);
    }
    static const char *const kinds[] = {"key", "value", "array element", "tensor"};
    screen_message(e->s, "match %zu of %zu for '%s' (%s) · n next · N previous", e->pos + 1, e->n, e->query,
                   kinds[m->kind]);
}

static void search_done(ui_job *job)
{
    search_job *j = (search_job *)job;
    explorer *e = j->ex;
    if (e && e->job == j) {
        e->job = NULL;
        if (ui_job_cancelled(job)) {
            screen_message(e->s, "search cancelled");
        } else {
            free(e->m);
            e->m = j->m;
            e->n = j->n;
            e->pos = 0;
            j->m = NULL;
            snprintf(e->query, sizeof e->query, "%s", j->q);
            if (!e->n)
                screen_message(e->s, "no match for '%s'", e->query);
            else
                show_match(e);
            if (j->truncated)
                screen_message(e->s, "more than %d matches for '%s': showing the first ones", MAX_MATCHES, e->query);
        }
    }
    free(j->m);
    free(j);
}

void explorer_search(explorer *e, const char *q)
{
    if (!q[0])
        return;
    if (e->job) {
        e->job->ex = NULL;   /* its results are no longer wanted */
        ui_job_cancel(&e->job->job);
        e->job = NULL;
    }
    /* Build the string arrays' offset indexes here, on the loop thread, so
     * the worker only reads them. */
    for (uint64_t i = 0; i < gguf_kv_count(e->f); i++) {
        const gguf_kv *kv = gguf_kv_at(e->f, i);
        gguf_str s;
        if (kv && kv->value.type == GGUF_VT_ARRAY && kv->value.arr_type == GGUF_VT_STRING && kv->value.arr_len)
            gguf_arr_str(&kv->value, kv->value.arr_len - 1, &s);
    }
    search_job *j = calloc(1, sizeof *j);
    if (!j)
        return;
    ui_job_init(&j->job, search_work, search_done, e);
    j->ex = e;
    j->f = e->f;
    snprintf(j->q, sizeof j->q, "%s", q);
    e->job = j;
    screen_message(e->s, "searching '%s'…", q);
    if (screen_submit(e->s, &j->job) != 0) {
        e->job = NULL;
        free(j);
    }
}

static void search_submit(screen *s, const char *text, void *ctx)
{
    (void)s;
    explorer_search(ctx, text);
}

static int key_search(screen *s, int key, void *ctx)
{
    (void)key;
    screen_prompt(s, "search:", search_submit, NULL, ctx);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_next(screen *s, int key, void *ctx)
{
    explorer *e = ctx;
    if (!e->n) {
        screen_message(s, "no search yet: press / to search");
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    if (key == 'n')
        e->pos = (e->pos + 1) % e->n;
    else
        e->pos = (e->pos + e->n - 1) % e->n;
    show_match(e);
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* ---- title ---- */

static void make_title(explorer *e)
{
    char buf[512], size[32], params[32], raw[64] = "?", arch[128], name[256];
    const char *path = gguf_path(e->f);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    textesc_term(name, sizeof name, base, strlen(base), 0);
    gguf_get_cstr(e->f, "general.architecture", raw, sizeof raw);
    textesc_term(arch, sizeof arch, raw, strlen(raw), 0);   /* from the file */
    uint64_t np = 0, nbytes = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(e->f); i++) {
        const gguf_tensor *t = gguf_tensor_at(e->f, i);
        np += t->n_elements;
        nbytes += t->n_bytes;
    }
    double bpw = np ? 8.0 * (double)nbytes / (double)np : 0;
    int k = snprintf(buf, sizeof buf, " ggscope  %s  %s · GGUF v%u %s · %s", name,
                     ui_fmt_bytes(gguf_file_size(e->f), size, sizeof size), gguf_version(e->f),
                     gguf_big_endian(e->f) ? "BE" : "LE", arch);
    if (k > 0 && (size_t)k < sizeof buf) {
        if (gguf_tensor_count(e->f))
            snprintf(buf + k, sizeof buf - (size_t)k, " · %s params · %" PRIu64 " tensors · %" PRIu64 " keys · %.2f bpw",
                     ui_fmt_count(np, params, sizeof params), gguf_tensor_count(e->f), gguf_kv_count(e->f), bpw);
        else
            snprintf(buf + k, sizeof buf - (size_t)k, " · no tensors · %" PRIu64 " keys", gguf_kv_count(e->f));
    }
    screen_set_title(e->s, e->page, buf);
}

explorer *explorer_new(screen *s, const gguf_file *f)
{
    explorer *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->s = s;
    e->f = f;
    e->page = screen_add_page(s, "explorer", layout, e);
    e->meta = meta_pane_new(f);
    e->tensors = tensors_pane_new(f, on_select, e);
    e->detail = detail_pane_new(f);
    if (e->page < 0 || !e->meta || !e->tensors || !e->detail) {
        free(e);
        return NULL;
    }
    screen_add_panel(s, e->page, e->meta);
    screen_add_panel(s, e->page, e->tensors);
    screen_add_panel(s, e->page, e->detail);
    detail_pane_set_tensor(e->detail, tensors_pane_selected(e->tensors));
    screen_focus(s, gguf_tensor_count(f) ? e->tensors : e->meta);
    make_title(e);
    const screen_binding binds[] = {
        {'/', "/", "search", "search keys, metadata values (token lists too) and tensor names", e->page, key_search, e},
        {'n', "n", NULL, "next match", e->page, key_next, e},
        {'N', "N", NULL, "previous match", e->page, key_next, e},
        {UIK_ENTER, "⏎", NULL, "expand / open (on a tensor: focus its detail)", e->page, key_enter, e},
        {'x', "x", NULL, NULL, e->page, set_view, e},
        {'v', "v", NULL, NULL, e->page, set_view, e},
        {'g', "x/v/g", "view", "detail view: x hex, v values, g histogram", e->page, set_view, e},
        {':', ":", NULL, "values: go to a row of the selected tensor", e->page, key_goto, e},
        {UIK_ESC, "Esc", NULL, "cancel a running histogram or search", e->page, key_esc, e},
    };
    for (size_t i = 0; i < sizeof binds / sizeof binds[0]; i++)
        screen_bind(s, &binds[i]);
    return e;
}

void explorer_free(explorer *e)
{
    if (!e)
        return;
    if (e->job)
        e->job->ex = NULL;
    free(e->m);
    free(e);
}

void explorer_reveal_tensor(explorer *e, uint64_t ti)
{
    if (ti >= gguf_tensor_count(e->f))
        return;
    tensors_pane_reveal(e->tensors, ti);
    detail_pane_set_tensor(e->detail, (int64_t)ti);
    screen_focus(e->s, e->tensors);
}

int explorer_page(const explorer *e)
{
    return e->page;
}
