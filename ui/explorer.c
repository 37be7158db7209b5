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
#include "tokenizer.h"

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
    const gguf_kv *bpe_tokens;   /* byte-level BPE pieces: searched decoded too */
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
    int split_x, split_y;   /* columns (rows when stacked) the split moved by < and > */
    int title_cols;      /* the width the title was made for */
};

static void make_title(explorer *e, int cols);

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The metadata on the left, the tensor list above the detail on the right:
 * the right column as wide as the list's columns (at least 40% of the
 * screen, at most 70%), the metadata the rest; `<` `>` move the split.
 * Narrow (< 100 columns): stacked, the metadata alone when focused. A file
 * without tensors (a vocabulary): the metadata alone, the whole screen. */
static void layout(screen *s, int page, int top, int left, int rows, int cols, bool zoom, void *ctx)
{
    (void)page;
    explorer *e = ctx;
    panel *f = screen_focused(s);
    if (cols != e->title_cols)
        make_title(e, cols);
    if (zoom || (gguf_tensor_count(e->f) == 0 && f != e->meta) ) {
        screen_place(s, f, top, left, rows, cols);
        return;
    }
    if (cols < 100 || gguf_tensor_count(e->f) == 0) {
        /* narrow: the metadata alone, or the list above the detail */
        if (f == e->meta) {
            screen_place(s, e->meta, top, left, rows, cols);
            return;
        }
        int th = rows * 45 / 100;
        if (th < 6)
            th = rows / 2;
        int base = th;
        th = clampi(th + e->split_y, 3, rows - 3);
        e->split_y = th - base;   /* what it could move, so the other key undoes it at once */
        screen_place(s, e->tensors, top, left, th, cols);
        screen_place(s, e->detail, top + th, left, rows - th, cols);
        return;
    }
    int rw = clampi(tensors_pane_width(e->tensors), cols * 40 / 100, cols * 70 / 100);
    int mw = clampi(cols - rw + e->split_x, 20, cols - 30);
    e->split_x = mw - (cols - rw);
    int th = rows * 45 / 100;
    screen_place(s, e->meta, top, left, rows, mw);
    screen_place(s, e->tensors, top, left + mw, th, cols - mw);
    screen_place(s, e->detail, top + th, left + mw, rows - th, cols - mw);
}

/* < > : move the split between the panes (4 columns; a row when stacked). */
static int key_split(screen *s, int key, void *ctx)
{
    explorer *e = ctx;
    int d = key == '>' ? 1 : -1;
    if (COLS < 100 || gguf_tensor_count(e->f) == 0)
        e->split_y = clampi(e->split_y + d, -LINES, LINES);
    else
        e->split_x = clampi(e->split_x + 4 * d, -COLS, COLS);
    screen_focus(s, screen_focused(s));   /* lays the page out again */
    return PANEL_HANDLED | PANEL_REDRAW;
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
            char dec[512];
            for (uint64_t k = 0; k < v->arr_len; k++) {
                if ((k & 0xfff) == 0 && ui_job_cancelled(job))
                    break;
                if (gguf_arr_str(v, k, &s) != GGUF_OK)
                    continue;
                size_t dn = kv == j->bpe_tokens ? tok_bpe_piece_bytes(s.ptr, (size_t)s.len, dec, sizeof dec) : SIZE_MAX;
                if (dn <= sizeof dec && ci_find(dec, dn, j->q, qn))
                    add_match(j, M_ELEM, i, (int64_t)k, dn == qn);
                else if (ci_find(s.ptr, (size_t)s.len, j->q, qn))
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
            meta_pane_set_match(e->meta, e->query);
            tensors_pane_set_match(e->tensors, e->query);
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
    char model[16] = "";
    if (gguf_get_cstr(e->f, "tokenizer.ggml.model", model, sizeof model) == GGUF_OK && !strcmp(model, "gpt2"))
        j->bpe_tokens = gguf_find_kv(e->f, "tokenizer.ggml.tokens");
    e->job = j;
    screen_message(e->s, "searching '%s'…", q);
    if (screen_submit(e->s, &j->job) != 0) {
        e->job = NULL;
        free(j);
    }
}

/* ⏎: the search typed so far is already running or shown */
static void search_submit(screen *s, const char *text, void *ctx)
{
    explorer *e = ctx;
    (void)s;
    if (e->job && !strcmp(e->job->q, text))
        return;   /* its first match shows when it is done */
    if (!e->job && e->n && !strcmp(e->query, text))
        show_match(e);   /* says again where it is (the prompt hid the message) */
    else
        explorer_search(e, text);
}

/* Search as you type: every change starts the search anew (the previous
 * one cancelled) and shows its first match. */
static void search_change(screen *s, const char *text, void *ctx)
{
    explorer *e = ctx;
    (void)s;
    if (text[0]) {
        explorer_search(e, text);
        return;
    }
    if (e->job) {
        e->job->ex = NULL;
        ui_job_cancel(&e->job->job);
        e->job = NULL;
    }
    meta_pane_set_match(e->meta, NULL);
    tensors_pane_set_match(e->tensors, NULL);
}

static int key_search(screen *s, int key, void *ctx)
{
    (void)key;
    screen_prompt(s, "search:", search_submit, search_change, ctx);
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

/* name[0..len) in at most `cols` columns: its start, "…" and its last
 * columns (where quantized files differ: "-q4_K_M.gguf"). */
static void fit_middle(char *out, size_t cap, const char *name, int cols)
{
    size_t len = strlen(name);
    if (ui_width(name, len) <= cols || cols < 3) {
        snprintf(out, cap, "%s", name);
        return;
    }
    int tail_cols = (cols - 1) / 2 < 14 ? (cols - 1) / 2 : 14;
    size_t t = len;   /* the tail: whole characters, at most tail_cols */
    while (t > 0) {
        size_t p = t - 1;
        while (p > 0 && ((unsigned char)name[p] & 0xC0) == 0x80)
            p--;
        if (ui_width(name + p, len - p) > tail_cols)
            break;
        t = p;
    }
    size_t h = ui_fit(name, len, cols - 1 - ui_width(name + t, len - t));
    snprintf(out, cap, "%.*s…%s", (int)h, name, name + t);
}

/* The title line for a screen `cols` wide: every figure kept, the file name
 * shortened in its middle (to 16 columns at least) first, then "ggscope"
 * and the byte order dropped, then (narrower than ~100 columns) the key and
 * parameter counts. */
static void make_title(explorer *e, int cols)
{
    char buf[768], size[32], params[32], raw[64] = "?", arch[128], name[256], tail[400], shown[256];
    e->title_cols = cols;
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
    int room = cols - 13;   /* the focused pane's name on the right: " [Metadata] " */
    int name_min = ui_width(name, SIZE_MAX) < 16 ? ui_width(name, SIZE_MAX) : 16;
    for (int v = 0; v < 4; v++) {
        char figs[160], keys[32] = "", par[48] = "";
        if (v < 2)
            snprintf(keys, sizeof keys, " · %" PRIu64 " keys", gguf_kv_count(e->f));
        if (v < 3)
            snprintf(par, sizeof par, " · %s params", ui_fmt_count(np, params, sizeof params));
        if (gguf_tensor_count(e->f))
            snprintf(figs, sizeof figs, "%s · %" PRIu64 " tensors%s · %.2f bpw", par, gguf_tensor_count(e->f), keys,
                     bpw);
        else
            snprintf(figs, sizeof figs, " · no tensors · %" PRIu64 " keys", gguf_kv_count(e->f));
        snprintf(tail, sizeof tail, "  %s · %sv%u%s · %s%s", ui_fmt_bytes(gguf_file_size(e->f), size, sizeof size),
                 v ? "" : "GGUF ", gguf_version(e->f), v ? (gguf_big_endian(e->f) ? " BE" : "") :
                 gguf_big_endian(e->f) ? " BE" : " LE", arch, figs);
        const char *head = v ? " " : " ggscope  ";
        int avail = room - ui_width(head, SIZE_MAX) - ui_width(tail, SIZE_MAX);
        if (v < 3 && avail < name_min)
            continue;   /* too narrow: a shorter form */
        fit_middle(shown, sizeof shown, name, avail < 8 ? 8 : avail);
        snprintf(buf, sizeof buf, "%s%s%s", head, shown, tail);
        break;
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
    make_title(e, COLS);
    const screen_binding binds[] = {
        {'/', "/", "search", "search as you type: keys, metadata values (token lists too), tensor names", e->page,
         key_search, e},
        {'n', "n", NULL, "next match", e->page, key_next, e},
        {'N', "N", NULL, "previous match", e->page, key_next, e},
        {UIK_ENTER, "⏎", NULL, "expand / open (on a tensor: focus its detail)", e->page, key_enter, e},
        {'x', "x", NULL, NULL, e->page, set_view, e},
        {'v', "v", NULL, NULL, e->page, set_view, e},
        {'g', "x/v/g", "view", "detail view: x hex, v values, g histogram", e->page, set_view, e},
        {':', ":", NULL, "values: go to a row of the selected tensor", e->page, key_goto, e},
        {'<', "< >", "split", "move the split between the panes left / right (up / down when stacked)", e->page,
         key_split, e},
        {'>', ">", NULL, NULL, e->page, key_split, e},
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
