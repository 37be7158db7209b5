/* mdview: see mdview.h. md4c calls back for each block, span and piece of
 * text; the text of a leaf block (paragraph, heading, table cell) is
 * gathered as styled runs, then flowed into lines when the block ends,
 * behind the prefix of the containers it is in (quote bars, list markers). */
#include "mdview_int.h"

#include <md4c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "textesc.h"

#define MAX_DEPTH 16     /* containers drawn; deeper ones add nothing */
#define MAX_COLS 64      /* table columns kept; more are dropped */
#define TAB_COLS 4

/* ---- growable arrays ---- */

static bool grow(mdview *v, void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np) {
        v->oom = true;
        return false;
    }
    *p = np;
    *cap = nc;
    return true;
}

/* ---- widths ---- */

/* One character at s (n bytes left): its length and columns. */
static size_t char_at(const char *s, size_t n, int *cols)
{
    unsigned char c = (unsigned char)s[0];
    if (c < 0x80) {
        *cols = 1;
        return 1;
    }
    wchar_t wc;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t k = mbrtowc(&wc, s, n, &st);
    if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
        *cols = 1;
        return 1;
    }
    int w = wcwidth(wc);
    *cols = w < 0 ? 1 : w;
    return k;
}

int mdview_width(const char *s, size_t len)
{
    int w = 0;
    for (size_t i = 0; i < len;) {
        int c;
        i += char_at(s + i, len - i, &c);
        w += c;
    }
    return w;
}

/* Bytes of s[0..len) that fit in `cols` columns (whole characters). */
static size_t fit(const char *s, size_t len, int cols, int *used)
{
    size_t i = 0;
    int w = 0;
    while (i < len) {
        int c;
        size_t k = char_at(s + i, len - i, &c);
        if (w + c > cols)
            break;
        w += c;
        i += k;
    }
    if (used)
        *used = w;
    return i;
}

/* ---- lines and segments ---- */

static void line_new(mdview *v)
{
    if (!grow(v, (void **)&v->lines, &v->caplines, v->nlines + 1, sizeof *v->lines))
        return;
    v->lines[v->nlines++] = (mdline){(uint32_t)v->nsegs, 0};
}

/* Append text (already escaped) with `style` to the last line. */
static void put(mdview *v, const char *s, size_t n, uint16_t style)
{
    if (!n || !v->nlines || v->oom)
        return;
    mdline *l = &v->lines[v->nlines - 1];
    if (!grow(v, (void **)&v->txt, &v->tcap, v->tlen + n + 1, 1))
        return;
    memcpy(v->txt + v->tlen, s, n);
    v->txt[v->tlen + n] = 0;
    if (l->nseg && v->segs[v->nsegs - 1].style == style &&
        v->segs[v->nsegs - 1].off + v->segs[v->nsegs - 1].len == v->tlen) {
        v->segs[v->nsegs - 1].len += (uint32_t)n;
    } else {
        if (!grow(v, (void **)&v->segs, &v->capsegs, v->nsegs + 1, sizeof *v->segs))
            return;
        v->segs[v->nsegs++] = (mdview_seg){(uint32_t)v->tlen, (uint32_t)n, style};
        l->nseg++;
    }
    v->tlen += n;
}

static void put_str(mdview *v, const char *s, uint16_t style)
{
    put(v, s, strlen(s), style);
}

/* `n` copies of s. */
static void put_rep(mdview *v, const char *s, int n, uint16_t style)
{
    for (int i = 0; i < n; i++)
        put_str(v, s, style);
}

/* ---- the parse ---- */

enum { C_QUOTE, C_UL, C_OL, C_LI };

typedef struct {
    int type;
    bool tight;          /* lists */
    unsigned num;        /* C_OL: the next item's number */
    char mark[16];       /* C_LI: its marker */
    int mw;              /* C_LI: the marker's columns (the hanging indent) */
    bool marked;         /* C_LI: the marker was drawn */
    bool content;        /* C_LI: a block was drawn in it */
} container;

typedef struct {
    uint32_t off, len;   /* ctx->rb */
    uint16_t style;
    uint8_t brk;         /* a hard line break */
} run;

typedef struct {
    size_t first, n;     /* a cell's runs: runs[first .. first + n) */
} cell;

typedef struct {
    mdview *v;
    int width;
    container cs[MAX_DEPTH];
    int depth;           /* may exceed MAX_DEPTH */
    /* the leaf block's runs */
    run *runs;
    size_t nruns, capruns;
    textesc_buf rb;
    uint16_t style;      /* spans open */
    int in_leaf;         /* 0, or the block type gathering runs */
    unsigned hlevel;
    /* links: where their text started, their URL */
    struct {
        size_t run0;
        char *url;
    } links[8];
    int nlinks;
    /* code block */
    bool in_code;
    char lang[40];
    size_t code0;        /* its start in v->code */
    /* table */
    bool in_table, in_head;
    int ncols, col;
    uint8_t align[MAX_COLS];
    cell *cells;         /* row-major, ncols per row */
    size_t ncells, capcells;
    size_t nrows, head_rows;
    bool drew;           /* a block was drawn (a blank line goes before the next) */
    const char *src;     /* the text parsed */
    size_t src_len;
} ctx;

static bool run_add(ctx *c, const char *s, size_t n, uint16_t style, bool brk, bool escape)
{
    mdview *v = c->v;
    if (!grow(v, (void **)&c->runs, &c->capruns, c->nruns + 1, sizeof *c->runs))
        return false;
    size_t o = c->rb.len;
    int rc = escape ? textesc_term_append(&c->rb, s, n, TEXTESC_RAW_BACKSLASH) : textesc_buf_put(&c->rb, s, n);
    if (rc) {
        v->oom = true;
        return false;
    }
    c->runs[c->nruns++] = (run){(uint32_t)o, (uint32_t)(c->rb.len - o), style, brk};
    return true;
}

/* Columns of the prefix of a line inside the containers. */
static int prefix_cols(const ctx *c)
{
    int w = 0;
    for (int i = 0; i < c->depth && i < MAX_DEPTH; i++)
        w += c->cs[i].type == C_QUOTE ? 2 : c->cs[i].type == C_LI ? c->cs[i].mw : 0;
    return w;
}

static int avail(const ctx *c)
{
    int a = c->width - prefix_cols(c);
    return a < 4 ? 4 : a;
}

/* A new line with the containers' prefix: quote bars, the list marker on
 * an item's first line (`mark`), spaces after it. */
static void begin(ctx *c, bool mark)
{
    mdview *v = c->v;
    line_new(v);
    for (int i = 0; i < c->depth && i < MAX_DEPTH; i++) {
        container *k = &c->cs[i];
        if (k->type == C_QUOTE) {
            put_str(v, "\xe2\x94\x82 ", MDV_FRAME);   /* │ */
        } else if (k->type == C_LI) {
            if (mark && !k->marked) {
                put_str(v, k->mark, MDV_MARK);
                k->marked = true;
            } else {
                put_rep(v, " ", k->mw, 0);
            }
        }
    }
}

/* Before a block: a blank line when something was drawn, except at the
 * start of a list item and between the blocks of a tight list's items. */
static void block_gap(ctx *c)
{
    container *li = NULL;
    if (c->depth > 0 && c->depth <= MAX_DEPTH && c->cs[c->depth - 1].type == C_LI)
        li = &c->cs[c->depth - 1];
    bool tight = li && c->depth >= 2 && c->cs[c->depth - 2].tight;
    if (c->drew && !(li && (!li->content || tight)))
        begin(c, false);
    if (li)
        li->content = true;
    c->drew = true;
}

/* ---- flowing runs into lines ---- */

typedef struct {
    ctx *c;
    int col, width;
    bool started;
} flow;

static void flow_nl(flow *f)
{
    begin(f->c, true);
    f->col = 0;
    f->started = true;
}

/* Put the word made of runs[a..b) pieces (no spaces in them); pieces
 * [s0 of run a .. e1 of run b-1). */
static void flow_word(flow *f, const char *rb, const run *r, size_t n, const size_t *s, const size_t *e, bool space)
{
    int w = 0;
    for (size_t i = 0; i < n; i++)
        w += mdview_width(rb + r[i].off + s[i], e[i] - s[i]);
    if (!f->started)
        flow_nl(f);
    if (f->col > 0 && f->col + (space ? 1 : 0) + w > f->width)
        flow_nl(f);
    else if (f->col > 0 && space) {
        put_str(f->c->v, " ", r[0].style);
        f->col++;
    }
    for (size_t i = 0; i < n; i++) {
        const char *p = rb + r[i].off + s[i];
        size_t len = e[i] - s[i];
        while (len) {
            int used;
            size_t k = fit(p, len, f->width - f->col, &used);
            if (k == 0) {
                if (f->col == 0) {   /* one character wider than the line */
                    int cw;
                    k = char_at(p, len, &cw);
                    used = cw;
                } else {
                    flow_nl(f);
                    continue;
                }
            }
            put(f->c->v, p, k, r[i].style);
            f->col += used;
            p += k;
            len -= k;
            if (len)
                flow_nl(f);
        }
    }
}

/* Word-wrap runs[0..n) to `width` columns, each line begun with begin(). */
static void flow_runs(ctx *c, const run *runs, size_t n, int width)
{
    flow f = {c, 0, width, false};
    const char *rb = c->rb.ptr ? c->rb.ptr : "";
    /* a word may span runs: gather its pieces */
    enum { MAXP = 32 };
    run wr[MAXP];
    size_t ws[MAXP], we[MAXP], nw = 0;
    bool space = false;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || runs[i].brk) {
            if (nw)
                flow_word(&f, rb, wr, nw, ws, we, space);
            nw = 0;
            space = false;
            if (i < n)
                flow_nl(&f);
            continue;
        }
        const char *t = rb + runs[i].off;
        size_t p = 0, len = runs[i].len;
        while (p < len) {
            if (t[p] == ' ') {
                if (nw)
                    flow_word(&f, rb, wr, nw, ws, we, space);
                nw = 0;
                space = true;
                while (p < len && t[p] == ' ')
                    p++;
                continue;
            }
            size_t q = p;
            while (q < len && t[q] != ' ')
                q++;
            if (nw == MAXP) {
                flow_word(&f, rb, wr, nw, ws, we, space);
                nw = 0;
                space = false;
            }
            wr[nw] = runs[i];
            ws[nw] = p;
            we[nw] = q;
            nw++;
            p = q;
        }
    }
    if (!f.started)
        flow_nl(&f);
}

/* ---- leaf blocks ---- */

static void end_text_block(ctx *c, MD_BLOCKTYPE type)
{
    mdview *v = c->v;
    block_gap(c);
    int w = avail(c);
    size_t l0 = v->nlines;
    flow_runs(c, c->runs, c->nruns, w);
    if (type == MD_BLOCK_H && c->hlevel <= 2) {
        int tw = 0;
        for (size_t i = l0; i < v->nlines; i++) {
            int lw = 0;
            for (uint32_t k = 0; k < v->lines[i].nseg; k++) {
                const mdview_seg *s = &v->segs[v->lines[i].seg + k];
                if (s->style & MDV_HEADING)
                    lw += mdview_width(v->txt + s->off, s->len);
            }
            tw = lw > tw ? lw : tw;
        }
        begin(c, false);
        put_rep(v, c->hlevel == 1 ? "\xe2\x95\x90" : "\xe2\x94\x80", tw, MDV_FRAME | MDV_HEADING);   /* ═ ─ */
    }
}

static void end_code(ctx *c)
{
    mdview *v = c->v;
    block_gap(c);
    const char *src = v->code + c->code0;
    size_t n = v->clen - c->code0;
    if (n && src[n - 1] == '\n')
        n--;
    if (grow(v, (void **)&v->codes, &v->capcodes, v->ncodes + 1, sizeof *v->codes)) {
        mdcode *k = &v->codes[v->ncodes++];
        k->off = (uint32_t)c->code0;
        k->len = (uint32_t)n;
        memcpy(k->lang, c->lang, sizeof k->lang);
    }
    /* the lines, tabs expanded and escaped */
    textesc_buf lb = {0};
    size_t *ls = NULL, nl = 0, cap = 0;
    int maxw = 0;
    for (size_t p = 0; p <= n && !v->oom;) {
        size_t e = p;
        while (e < n && src[e] != '\n')
            e++;
        if (!grow(v, (void **)&ls, &cap, nl + 2, sizeof *ls))
            break;
        ls[nl++] = lb.len;
        int col = 0;
        for (size_t i = p; i < e;) {
            if (src[i] == '\t') {
                int k = TAB_COLS - col % TAB_COLS;
                for (int j = 0; j < k; j++)
                    textesc_buf_put(&lb, " ", 1);
                col += k;
                i++;
                continue;
            }
            size_t j = i;
            while (j < e && src[j] != '\t')
                j++;
            size_t o = lb.len;
            textesc_term_append(&lb, src + i, j - i, TEXTESC_RAW_BACKSLASH);
            col += mdview_width(lb.ptr + o, lb.len - o);
            i = j;
        }
        maxw = col > maxw ? col : maxw;
        p = e + 1;
    }
    if (ls)
        ls[nl] = lb.len;
    int a = avail(c);
    int lw = c->lang[0] ? mdview_width(c->lang, strlen(c->lang)) + 2 : 0;
    int iw = maxw > lw ? maxw : lw;   /* inner width */
    if (iw < 1)
        iw = 1;
    if (iw > a - 4)
        iw = a - 4 > 1 ? a - 4 : 1;
    /* top edge: ┌─ lang ───┐ */
    begin(c, true);
    put_str(v, "\xe2\x94\x8c\xe2\x94\x80", MDV_FRAME);
    int used = 1;
    if (c->lang[0]) {
        int room = iw + 1 - 2;
        int lu;
        size_t k = fit(c->lang, strlen(c->lang), room > 0 ? room : 0, &lu);
        put_str(v, " ", MDV_FRAME);
        put(v, c->lang, k, MDV_LANG);
        put_str(v, " ", MDV_FRAME);
        used += lu + 2;
    }
    put_rep(v, "\xe2\x94\x80", iw + 2 - used, MDV_FRAME);
    put_str(v, "\xe2\x94\x90", MDV_FRAME);
    for (size_t i = 0; i < nl && lb.ptr; i++) {
        const char *t = lb.ptr + ls[i];
        size_t len = ls[i + 1] - ls[i];
        int w = mdview_width(t, len);
        begin(c, true);
        put_str(v, "\xe2\x94\x82 ", MDV_FRAME);
        if (w <= iw) {
            put(v, t, len, MDV_CODEBLOCK);
            put_rep(v, " ", iw - w, MDV_CODEBLOCK);
        } else {
            int u;
            size_t k = fit(t, len, iw - 1, &u);
            put(v, t, k, MDV_CODEBLOCK);
            put_rep(v, " ", iw - 1 - u, MDV_CODEBLOCK);
            put_str(v, "\xe2\x80\xa6", MDV_CUT);   /* … */
        }
        put_str(v, " \xe2\x94\x82", MDV_FRAME);
    }
    begin(c, true);
    put_str(v, "\xe2\x94\x94", MDV_FRAME);
    put_rep(v, "\xe2\x94\x80", iw + 2, MDV_FRAME);
    put_str(v, "\xe2\x94\x98", MDV_FRAME);
    free(ls);
    textesc_buf_free(&lb);
}

static void end_table(ctx *c)
{
    mdview *v = c->v;
    block_gap(c);
    int nc = c->ncols;
    if (nc <= 0 || !c->nrows)
        return;
    const char *rb = c->rb.ptr ? c->rb.ptr : "";
    int w[MAX_COLS];
    for (int k = 0; k < nc; k++)
        w[k] = 1;
    for (size_t i = 0; i < c->ncells; i++) {
        cell *ce = &c->cells[i];
        int cw = 0;
        for (size_t r = 0; r < ce->n; r++)
            cw += mdview_width(rb + c->runs[ce->first + r].off, c->runs[ce->first + r].len);
        int k = (int)(i % (size_t)nc);
        w[k] = cw > w[k] ? cw : w[k];
    }
    /* shrink the widest column until the table fits: cells are separated
     * by " │ " */
    int a = avail(c), total = 0;
    for (int k = 0; k < nc; k++)
        total += w[k];
    total += 3 * (nc - 1);
    while (total > a) {
        int wi = 0;
        for (int k = 1; k < nc; k++)
            wi = w[k] > w[wi] ? k : wi;
        if (w[wi] <= 1)
            break;
        w[wi]--;
        total--;
    }
    for (size_t row = 0; row < c->nrows; row++) {
        begin(c, true);
        for (int k = 0; k < nc; k++) {
            if (k)
                put_str(v, " \xe2\x94\x82 ", MDV_FRAME);
            cell *ce = &c->cells[row * (size_t)nc + (size_t)k];
            int cw = 0;
            for (size_t r = 0; r < ce->n; r++)
                cw += mdview_width(rb + c->runs[ce->first + r].off, c->runs[ce->first + r].len);
            bool cut = cw > w[k];
            int shown = cut ? w[k] - 1 : cw;
            int pad = w[k] - (cut ? w[k] : cw);
            int left = c->align[k] == MD_ALIGN_RIGHT ? pad : c->align[k] == MD_ALIGN_CENTER ? pad / 2 : 0;
            uint16_t hs = row < c->head_rows ? MDV_THEAD : 0;
            put_rep(v, " ", left, hs);
            int used = 0;
            for (size_t r = 0; r < ce->n && used < shown; r++) {
                const run *ru = &c->runs[ce->first + r];
                int u;
                size_t kk = fit(rb + ru->off, ru->len, shown - used, &u);
                put(v, rb + ru->off, kk, (uint16_t)(ru->style | hs));
                used += u;
                if (kk < ru->len)
                    break;
            }
            put_rep(v, " ", shown - used, hs);
            if (cut)
                put_str(v, "\xe2\x80\xa6", MDV_CUT);
            put_rep(v, " ", pad - left, hs);
        }
        if (row + 1 == c->head_rows) {
            begin(c, false);
            for (int k = 0; k < nc; k++) {
                if (k)
                    put_str(v, "\xe2\x94\x80\xe2\x94\xbc\xe2\x94\x80", MDV_FRAME);   /* ─┼─ */
                put_rep(v, "\xe2\x94\x80", w[k], MDV_FRAME);
            }
        }
    }
}

/* ---- md4c callbacks ---- */

/* The text of a tight list's item comes without a paragraph around it: it
 * is gathered as one, ended by the next block or the item's end. */
static void end_implicit(ctx *c)
{
    if (c->in_leaf != MD_BLOCK_LI)
        return;
    end_text_block(c, MD_BLOCK_P);
    c->in_leaf = 0;
    c->style = 0;
    c->nruns = 0;
    c->rb.len = 0;
}

static int enter_block(MD_BLOCKTYPE t, void *detail, void *ud)
{
    ctx *c = ud;
    mdview *v = c->v;
    end_implicit(c);
    switch (t) {
    case MD_BLOCK_QUOTE: case MD_BLOCK_UL: case MD_BLOCK_OL: case MD_BLOCK_LI:
        if (t != MD_BLOCK_LI) {
            /* a list or quote after something drawn: a blank line (not at the
             * start of an item, nor inside a tight list's item) */
            container *li = c->depth > 0 && c->depth <= MAX_DEPTH && c->cs[c->depth - 1].type == C_LI
                                ? &c->cs[c->depth - 1] : NULL;
            bool tight = li && c->depth >= 2 && c->cs[c->depth - 2].tight;
            if (c->drew && !(li && (!li->content || tight)))
                begin(c, false);
            c->drew = false;   /* its first block follows the gap */
        }
        if (c->depth < MAX_DEPTH) {
            container *k = &c->cs[c->depth];
            memset(k, 0, sizeof *k);
            k->type = t == MD_BLOCK_QUOTE ? C_QUOTE : t == MD_BLOCK_UL ? C_UL : t == MD_BLOCK_OL ? C_OL : C_LI;
            if (t == MD_BLOCK_UL)
                k->tight = ((MD_BLOCK_UL_DETAIL *)detail)->is_tight;
            if (t == MD_BLOCK_OL) {
                k->tight = ((MD_BLOCK_OL_DETAIL *)detail)->is_tight;
                k->num = ((MD_BLOCK_OL_DETAIL *)detail)->start;
            }
            if (t == MD_BLOCK_LI && c->depth > 0) {
                container *list = &c->cs[c->depth - 1];
                if (list->type == C_OL) {
                    snprintf(k->mark, sizeof k->mark, "%u. ", list->num++);
                } else {
                    int nest = 0;
                    for (int i = 0; i < c->depth; i++)
                        nest += c->cs[i].type == C_UL;
                    snprintf(k->mark, sizeof k->mark, "%s ", nest % 2 ? "\xe2\x80\xa2" : "\xe2\x97\xa6");   /* • ◦ */
                }
                MD_BLOCK_LI_DETAIL *ld = detail;
                if (ld && ld->is_task) {
                    size_t ml = strlen(k->mark);
                    snprintf(k->mark + ml, sizeof k->mark - ml, "[%c] ", ld->task_mark == ' ' ? ' ' : 'x');
                }
                k->mw = mdview_width(k->mark, strlen(k->mark));
            }
        }
        c->depth++;
        break;
    case MD_BLOCK_HR:
        block_gap(c);
        begin(c, true);
        put_rep(v, "\xe2\x94\x80", avail(c), MDV_FRAME);
        break;
    case MD_BLOCK_H:
        c->hlevel = ((MD_BLOCK_H_DETAIL *)detail)->level;
        c->style = MDV_HEADING | MDV_BOLD;
        c->in_leaf = t;
        c->nruns = 0;
        break;
    case MD_BLOCK_P: case MD_BLOCK_HTML:
        c->in_leaf = t;
        c->style = 0;
        c->nruns = 0;
        break;
    case MD_BLOCK_CODE: {
        MD_BLOCK_CODE_DETAIL *d = detail;
        c->in_code = true;
        c->code0 = v->clen;
        char tmp[40];
        size_t n = d->lang.size < sizeof tmp - 1 ? d->lang.size : sizeof tmp - 1;
        memcpy(tmp, d->lang.text ? d->lang.text : "", n);
        textesc_term(c->lang, sizeof c->lang - 8, tmp, n, TEXTESC_RAW_BACKSLASH);
        break;
    }
    case MD_BLOCK_TABLE:
        c->in_table = true;
        c->ncols = (int)((MD_BLOCK_TABLE_DETAIL *)detail)->col_count;
        if (c->ncols > MAX_COLS)
            c->ncols = MAX_COLS;
        c->ncells = c->nrows = c->head_rows = 0;
        c->nruns = 0;
        break;
    case MD_BLOCK_THEAD: c->in_head = true; break;
    case MD_BLOCK_TR:
        c->col = 0;
        c->nrows++;
        if (c->in_head)
            c->head_rows++;
        /* every row has ncols cells, even when the source has fewer */
        if (grow(v, (void **)&c->cells, &c->capcells, c->nrows * (size_t)c->ncols, sizeof *c->cells)) {
            for (size_t i = c->ncells; i < c->nrows * (size_t)c->ncols; i++)
                c->cells[i] = (cell){c->nruns, 0};
            c->ncells = c->nrows * (size_t)c->ncols;
        }
        break;
    case MD_BLOCK_TH: case MD_BLOCK_TD:
        if (c->col < MAX_COLS && c->nrows == 1)
            c->align[c->col] = (uint8_t)((MD_BLOCK_TD_DETAIL *)detail)->align;
        c->in_leaf = t;
        c->style = 0;
        if (c->col < c->ncols && c->ncells)
            c->cells[(c->nrows - 1) * (size_t)c->ncols + (size_t)c->col].first = c->nruns;
        break;
    default: break;
    }
    return v->oom ? 1 : 0;
}

static int leave_block(MD_BLOCKTYPE t, void *detail, void *ud)
{
    ctx *c = ud;
    (void)detail;
    end_implicit(c);
    switch (t) {
    case MD_BLOCK_QUOTE: case MD_BLOCK_UL: case MD_BLOCK_OL: case MD_BLOCK_LI:
        c->depth--;
        if (t == MD_BLOCK_LI && c->depth < MAX_DEPTH && !c->cs[c->depth].content) {
            begin(c, true);   /* an empty item: its marker alone */
            c->drew = true;
        }
        break;
    case MD_BLOCK_H: case MD_BLOCK_P: case MD_BLOCK_HTML:
        end_text_block(c, t);
        c->in_leaf = 0;
        c->style = 0;
        c->nruns = 0;
        c->rb.len = 0;
        break;
    case MD_BLOCK_CODE:
        end_code(c);
        c->in_code = false;
        break;
    case MD_BLOCK_TH: case MD_BLOCK_TD:
        if (c->col < c->ncols && c->ncells) {
            cell *ce = &c->cells[(c->nrows - 1) * (size_t)c->ncols + (size_t)c->col];
            ce->n = c->nruns - ce->first;
        }
        c->col++;
        c->in_leaf = 0;
        break;
    case MD_BLOCK_THEAD: c->in_head = false; break;
    case MD_BLOCK_TABLE:
        end_table(c);
        c->in_table = false;
        c->nruns = 0;
        c->rb.len = 0;
        break;
    default: break;
    }
    return c->v->oom ? 1 : 0;
}

static uint16_t span_style(MD_SPANTYPE t)
{
    switch (t) {
    case MD_SPAN_EM: return MDV_ITALIC;
    case MD_SPAN_STRONG: return MDV_BOLD;
    case MD_SPAN_CODE: return MDV_CODE;
    case MD_SPAN_DEL: return MDV_STRIKE;
    case MD_SPAN_A: case MD_SPAN_IMG: return MDV_LINK;
    default: return 0;
    }
}

static int enter_span(MD_SPANTYPE t, void *detail, void *ud)
{
    ctx *c = ud;
    if ((t == MD_SPAN_A || t == MD_SPAN_IMG) && c->nlinks < 8) {
        const MD_ATTRIBUTE *h = t == MD_SPAN_A ? &((MD_SPAN_A_DETAIL *)detail)->href
                                               : &((MD_SPAN_IMG_DETAIL *)detail)->src;
        c->links[c->nlinks].run0 = c->nruns;
        c->links[c->nlinks].url = h->text ? strndup(h->text, h->size) : NULL;
        c->nlinks++;
    } else if (t == MD_SPAN_A || t == MD_SPAN_IMG) {
        c->nlinks++;
    }
    c->style |= span_style(t);
    return 0;
}

static int leave_span(MD_SPANTYPE t, void *detail, void *ud)
{
    ctx *c = ud;
    (void)detail;
    if (t == MD_SPAN_A || t == MD_SPAN_IMG) {
        c->nlinks--;
        if (c->nlinks < 8) {
            char *url = c->links[c->nlinks].url;
            /* the URL after the text, unless the text is the URL */
            size_t r0 = c->links[c->nlinks].run0, tl = 0;
            for (size_t i = r0; i < c->nruns; i++)
                tl += c->runs[i].len;
            bool same = false;
            if (url && r0 < c->nruns && tl == strlen(url)) {
                size_t o = 0;
                same = true;
                for (size_t i = r0; i < c->nruns && same; i++) {
                    same = !memcmp(c->rb.ptr + c->runs[i].off, url + o, c->runs[i].len);
                    o += c->runs[i].len;
                }
            }
            if (url && *url && !same) {
                uint16_t s = (uint16_t)(c->style & ~(MDV_LINK | MDV_BOLD | MDV_ITALIC));
                run_add(c, " <", 2, (uint16_t)(s | MDV_URL), false, false);
                run_add(c, url, strlen(url), (uint16_t)(s | MDV_URL), false, true);
                run_add(c, ">", 1, (uint16_t)(s | MDV_URL), false, false);
            }
            free(url);
        }
        /* a link inside a link keeps the outer one's style */
        if (c->nlinks == 0)
            c->style &= (uint16_t)~MDV_LINK;
        return 0;
    }
    c->style &= (uint16_t)~span_style(t);
    if (c->in_leaf == MD_BLOCK_H)
        c->style |= MDV_HEADING | MDV_BOLD;
    return 0;
}

static int text(MD_TEXTTYPE t, const MD_CHAR *s, MD_SIZE n, void *ud)
{
    ctx *c = ud;
    mdview *v = c->v;
    bool inside = s >= c->src && n <= c->src_len && (size_t)(s - c->src) <= c->src_len - n;
    if (!inside && t == MD_TEXT_CODE && n <= 16) {   /* md4c's own new lines and indentation */
        for (MD_SIZE i = 0; i < n && inside == false; i++)
            if (s[i] != ' ' && s[i] != '\n')
                return 0;
        inside = true;
    }
    if (!inside && t != MD_TEXT_SOFTBR && t != MD_TEXT_BR && t != MD_TEXT_NULLCHAR)
        return 0;   /* not from the text (see parse) */
    if (c->in_code) {
        if (grow(v, (void **)&v->code, &v->ccap, v->clen + n + 1, 1)) {
            memcpy(v->code + v->clen, s, n);
            v->clen += n;
            v->code[v->clen] = 0;
        }
        return v->oom ? 1 : 0;
    }
    switch (t) {
    case MD_TEXT_BR: run_add(c, "", 0, c->style, true, false); break;
    case MD_TEXT_SOFTBR: run_add(c, " ", 1, c->style, false, false); break;
    case MD_TEXT_NULLCHAR: run_add(c, "\xef\xbf\xbd", 3, c->style, false, false); break;
    case MD_TEXT_ENTITY: {
        static const struct {
            const char *e, *u;
        } ents[] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&nbsp;", " "}, {"&apos;", "'"}};
        for (size_t i = 0; i < sizeof ents / sizeof ents[0]; i++)
            if (strlen(ents[i].e) == n && !memcmp(ents[i].e, s, n)) {
                run_add(c, ents[i].u, strlen(ents[i].u), c->style, false, false);
                return 0;
            }
        run_add(c, s, n, c->style, false, true);
        break;
    }
    case MD_TEXT_HTML:
        if (c->in_leaf == MD_BLOCK_HTML) {   /* a raw HTML block: its lines as they are */
            for (MD_SIZE p = 0; p < n;) {
                MD_SIZE e = p;
                while (e < n && s[e] != '\n')
                    e++;
                run_add(c, s + p, e - p, c->style, false, true);
                if (e < n && e + 1 < n)
                    run_add(c, "", 0, c->style, true, false);
                p = e + 1;
            }
            break;
        }
        /* fall through */
    default:
        if (!c->in_leaf && !c->in_table && c->depth > 0) {
            c->in_leaf = MD_BLOCK_LI;   /* a tight item's text */
            c->nruns = 0;
            c->rb.len = 0;
        }
        if (c->in_leaf || c->in_table)
            run_add(c, s, n, c->style, false, true);
    }
    return v->oom ? 1 : 0;
}

/* Lay out src[0..n) after what v holds. md4c 0.4.8 reads the byte after
 * the end of its input (a link destination left open at the end, e.g.
 * "[a](http://x" followed by ")" in memory, gives a text of garbage
 * length): it parses a NUL-terminated copy, and text outside the copy is
 * dropped (text()). */
int mdview_parse(mdview *v, const char *src, size_t n, int width)
{
    ctx c;
    memset(&c, 0, sizeof c);
    char *copy = malloc(n + 1);
    if (!copy) {
        v->oom = true;
        return -1;
    }
    memcpy(copy, src, n);
    copy[n] = 0;
    c.v = v;
    c.width = width;
    c.src = copy;
    c.src_len = n;
    c.drew = v->nlines > 0;
    MD_PARSER p = {0, MD_FLAG_TABLES | MD_FLAG_STRIKETHROUGH | MD_FLAG_TASKLISTS | MD_FLAG_NOHTMLBLOCKS,
                   enter_block, leave_block, enter_span, leave_span, text, NULL, NULL};
    v->parsed += n;
    int rc = md_parse(copy, (MD_SIZE)n, &p, &c);
    for (int i = 0; i < c.nlinks && i < 8; i++)
        free(c.links[i].url);
    free(c.runs);
    free(c.cells);
    free(copy);
    textesc_buf_free(&c.rb);
    return rc || v->oom ? -1 : 0;
}

