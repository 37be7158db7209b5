/* Tensor detail: hex (bytes, block boundaries, block anatomy), values
 * (dequantized grid, only what the screen shows) and histogram (computed on
 * a worker with tstats, progress bar, Esc cancels). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"
#include "list.h"
#include "panes.h"
#include "screen.h"
#include "tbytes.h"
#include "textesc.h"
#include "tstats.h"

#define MAX_FIELDS 512
#define HIST_BINS 1024

typedef struct hist_job {
    ui_job job;
    struct detail_pane *owner;
    const gguf_tensor *t;
    int64_t ti;
    tstats_status st;
    tstats_result res;
    bool orphan;          /* the pane no longer wants it: free on done */
    const gguf_file *f;   /* a remote file: the tensor is read first */
    atomic_bool fetching;
    char err[600];        /* why the read failed */
} hist_job;

typedef struct detail_pane {
    panel base;
    const gguf_file *f;
    int64_t ti;
    int view;
    /* hex */
    uint64_t hex_cur;     /* byte offset of the cursor */
    uint64_t hex_top;     /* first line shown */
    int field;            /* selected field of the current block */
    codec_field fields[MAX_FIELDS];
    int nfields;
    /* values */
    uint64_t row, col;    /* cursor cell */
    uint64_t vtop, vleft; /* first row / column shown */
    float *vbuf;
    size_t vbuf_cap;
    tbytes *bytes;        /* the bytes shown (a remote file: read on a worker) */
    /* histogram */
    hist_job *job;        /* running, or NULL */
    tstats_result *res;   /* last result */
    int64_t res_ti;
    tstats_status last_st;
    int64_t last_st_ti;
    char last_err[600];
    bool log_scale;
} detail_pane;

static const gguf_tensor *cur_tensor(const detail_pane *d)
{
    return d->ti >= 0 ? gguf_tensor_at(d->f, (uint64_t)d->ti) : NULL;
}

static void detail_title(panel *p, char *buf, size_t cap)
{
    detail_pane *d = p->self;
    const gguf_tensor *t = cur_tensor(d);
    if (!t) {
        snprintf(buf, cap, "[x]hex [v]alues [g]histogram");
        return;
    }
    char name[300], shape[64], views[64];
    textesc_term(name, sizeof name, t->name.ptr, (size_t)t->name.len, 0);   /* from the file: escaped */
    ui_fmt_shape(t->ne, t->n_dims, shape, sizeof shape);
    snprintf(views, sizeof views, "%s%s%s", d->view == DETAIL_HEX ? "[X]HEX " : "[x]hex ",
             d->view == DETAIL_VALUES ? "[V]ALUES " : "[v]alues ", d->view == DETAIL_HIST ? "[G]HISTOGRAM" : "[g]histogram");
    /* drop the shape, then the type, when the frame is too narrow */
    int room = p->w - 14 - ui_width(views, SIZE_MAX) - ui_width(name, SIZE_MAX);
    int tw = (int)strlen(ggtype_name(t->type)) + 3, sw = ui_width(shape, SIZE_MAX) + 3;
    if (room >= tw + sw)
        snprintf(buf, cap, "%s · %s · %s · %s", name, ggtype_name(t->type), shape, views);
    else if (room >= tw)
        snprintf(buf, cap, "%s · %s · %s", name, ggtype_name(t->type), views);
    else
        snprintf(buf, cap, "%s · %s", name, views);
}

/* ---------------- hex ---------------- */

static int bytes_per_line(int width)
{
    return width >= 14 + 16 * 3 + 30 ? 16 : 8;
}

/* The bytes [off, off + len) of the current tensor, or NULL with *why (a
 * remote file's bytes still on their way). */
static const uint8_t *tensor_bytes(detail_pane *d, uint64_t off, uint64_t len, const char **why)
{
    if (!d->bytes)
        d->bytes = tbytes_new(d->base.scr, d->f);
    *why = "out of memory";
    return d->bytes ? tbytes_get(d->bytes, d->ti, off, len, why) : NULL;
}

/* The anatomy of the current block, whose bytes are at `blk_bytes`. */
static void hex_load_fields(detail_pane *d, const gguf_tensor *t, const uint8_t *blk_bytes)
{
    d->nfields = 0;
    /* plain floats: each line's values decoded beside the bytes instead */
    if (t->type == GGTYPE_F32 || t->type == GGTYPE_F16 || t->type == GGTYPE_BF16)
        return;
    int n = codec_block_anatomy(t->type, blk_bytes, d->fields, MAX_FIELDS);
    d->nfields = n < 0 ? 0 : n > MAX_FIELDS ? MAX_FIELDS : n;
    if (d->field >= d->nfields)
        d->field = d->nfields ? d->nfields - 1 : 0;
}

/* The field index covering byte `b` of the block, or -1. */
static int field_of_byte(const detail_pane *d, uint32_t b)
{
    int best = -1;
    for (int i = 0; i < d->nfields; i++)
        if (b >= d->fields[i].byte_offset && b < d->fields[i].byte_offset + d->fields[i].byte_len) {
            if (i == d->field)
                return i;
            if (best < 0)
                best = i;
        }
    return best;
}

static void draw_hex(detail_pane *d, WINDOW *w, int h, int width, const gguf_tensor *t)
{
    const ggtype_traits *tr = ggtype_get(t->type);
    if (!tr || t->n_bytes == 0) {
        ui_put(w, 0, 1, width - 1, "no data (unknown type)", SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    uint64_t nb = t->n_bytes, bsz = tr->type_size;
    if (d->hex_cur >= nb)
        d->hex_cur = nb - 1;
    uint64_t blk = d->hex_cur / bsz, nblk = nb / bsz;
    char hdr[200];
    snprintf(hdr, sizeof hdr, "block %" PRIu64 " of %" PRIu64 " · %s · %" PRIu64 " bytes · elements %" PRIu64 "–%" PRIu64
             " · [ ] block%s",
             blk, nblk, ggtype_name(t->type), bsz, blk * tr->blck_size, (blk + 1) * tr->blck_size - 1,
             t->type == GGTYPE_F32 || t->type == GGTYPE_F16 || t->type == GGTYPE_BF16 ? "" : "  ←→ field");
    ui_put(w, 0, 1, width - 1, hdr, SIZE_MAX, ui_attr(UI_C_HEADER), true);
    int bpl = bytes_per_line(width);
    int rows = h - 1;
    if (rows < 1)
        return;
    uint64_t nlines = (nb + (uint64_t)bpl - 1) / (uint64_t)bpl;
    list hl = {nlines, d->hex_cur / (uint64_t)bpl, d->hex_top, (uint64_t)rows};
    list_fit(&hl);
    d->hex_top = hl.top;
    uint64_t cur_line = hl.cur;
    uint64_t bstart = blk * bsz, bend = bstart + bsz;
    /* the bytes shown: the visible lines and the current block */
    uint64_t lo = d->hex_top * (uint64_t)bpl, hi = (d->hex_top + (uint64_t)rows) * (uint64_t)bpl;
    lo = lo < bstart ? lo : bstart;
    hi = hi < nb ? hi : nb;
    hi = hi > bend ? hi : bend;
    const char *why;
    const uint8_t *bytes = tensor_bytes(d, lo, hi - lo, &why);
    if (!bytes) {
        d->nfields = 0;
        ui_put(w, 1, 1, width - 1, why, SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    hex_load_fields(d, t, bytes + (bstart - lo));
    int hexw = 15 + bpl * 3;
    for (int y = 0; y < rows && d->hex_top + (uint64_t)y < nlines; y++) {
        uint64_t line = d->hex_top + (uint64_t)y;
        uint64_t off = line * (uint64_t)bpl;
        uint64_t abs = t->abs_offset + off;
        char o[32];
        snprintf(o, sizeof o, "0x%04" PRIx64 "_%04" PRIx64, (abs >> 16) & 0xffffffffu, abs & 0xffff);
        ui_put(w, y + 1, 0, width, o, SIZE_MAX, line == cur_line ? ui_attr(UI_C_HEADER) : ui_attr(UI_C_DIM), false);
        for (int i = 0; i < bpl && off + (uint64_t)i < nb; i++) {
            uint64_t b = off + (uint64_t)i;
            int x = 14 + i * 3;
            if (b % bsz == 0 && x < width)
                ui_put(w, y + 1, x - 1, 1, "│", SIZE_MAX, ui_attr(UI_C_FRAME_FOCUS), false);
            attr_t a = A_NORMAL;
            if (b >= bstart && b < bend) {
                int fi = field_of_byte(d, (uint32_t)(b - bstart));
                a = fi < 0 ? A_BOLD : fi == d->field ? ui_attr(UI_C_FIELD_CUR) : (fi % 2 ? ui_attr(UI_C_FIELD) : A_BOLD);
            } else {
                a = ui_attr(UI_C_DIM);
            }
            if (b == d->hex_cur)
                a |= A_UNDERLINE;
            ui_putf(w, y + 1, x, width - x, a, "%02x", bytes[b - lo]);
        }
    }
    /* the anatomy, right of the bytes (or nothing when too narrow) */
    int ax = hexw + 1, aw = width - ax;
    if (aw < 24)
        return;
    if (!d->nfields) {
        /* float types: the line's values decoded beside the bytes */
        uint32_t es = t->type == GGTYPE_F32 ? 4 : (t->type == GGTYPE_F16 || t->type == GGTYPE_BF16) ? 2 : 0;
        if (!es) {
            ui_put(w, 1, ax, aw, "no block anatomy for this type",
                   SIZE_MAX, ui_attr(UI_C_DIM), true);
            return;
        }
        for (int y = 0; y < rows && d->hex_top + (uint64_t)y < nlines; y++) {
            uint64_t off = (d->hex_top + (uint64_t)y) * (uint64_t)bpl;
            int x = ax;
            for (uint64_t b = off; b + es <= off + (uint64_t)bpl && b + es <= nb && x < width; b += es) {
                float v;
                const uint8_t *q = bytes + (b - lo);
                if (es == 4) {
                    uint32_t u = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
                    memcpy(&v, &u, 4);
                } else {
                    uint16_t u = (uint16_t)(q[0] | q[1] << 8);
                    v = t->type == GGTYPE_F16 ? codec_f16_to_f32(u) : codec_bf16_to_f32(u);
                }
                char c[24];
                snprintf(c, sizeof c, "%.4g", (double)v);
                x += ui_putf(w, y + 1, x, width - x, b / bsz == blk ? A_BOLD : ui_attr(UI_C_DIM), "%-10s", c);
            }
        }
        return;
    }
    int first = d->field - (rows - 1) / 2;
    if (first > d->nfields - rows)
        first = d->nfields - rows;
    if (first < 0)
        first = 0;
    for (int y = 0; y < rows && first + y < d->nfields; y++) {
        const codec_field *fd = &d->fields[first + y];
        bool sel = first + y == d->field;
        char size[24];
        if (fd->bit_len)
            snprintf(size, sizeof size, "%ub@%u", fd->bit_len, fd->bit_offset);
        else
            snprintf(size, sizeof size, "%u B", fd->byte_len);
        char line[160];
        if (aw >= 46)
            snprintf(line, sizeof line, "%s%-10s %-6s 0x%-6" PRIx64 " → %s", sel ? "▸" : " ", fd->name, size, fd->raw,
                     fd->text);
        else   /* narrow: no raw bits */
            snprintf(line, sizeof line, "%s%-10s %-5s → %s", sel ? "▸" : " ", fd->name, size, fd->text);
        ui_put(w, y + 1, ax, aw, line, SIZE_MAX, sel ? ui_attr(UI_C_FIELD_CUR) : ((first + y) % 2 ? ui_attr(UI_C_FIELD) : A_NORMAL), true);
    }
}

static int hex_key(detail_pane *d, int key, int h, int width)
{
    const gguf_tensor *t = cur_tensor(d);
    const ggtype_traits *tr = t ? ggtype_get(t->type) : NULL;
    if (!tr || !t->n_bytes)
        return PANEL_IGNORED;
    uint64_t bpl = (uint64_t)bytes_per_line(width), nb = t->n_bytes, bsz = tr->type_size;
    uint64_t page = h > 2 ? (uint64_t)(h - 2) * bpl : bpl;   /* a page: the lines shown but one */
    switch (key) {
    case UIK_UP: case 'k': d->hex_cur = d->hex_cur >= bpl ? d->hex_cur - bpl : 0; break;
    case UIK_DOWN: case 'j': d->hex_cur = d->hex_cur + bpl < nb ? d->hex_cur + bpl : nb - 1; break;
    case UIK_PGUP: d->hex_cur = d->hex_cur >= page ? d->hex_cur - page : 0; break;
    case UIK_PGDN: d->hex_cur = d->hex_cur + page < nb ? d->hex_cur + page : nb - 1; break;
    case UIK_HOME: d->hex_cur = 0; break;
    case UIK_END: case 'G': d->hex_cur = nb - 1; break;
    case '[': d->hex_cur = d->hex_cur / bsz ? (d->hex_cur / bsz - 1) * bsz : 0; d->field = 0; break;
    case ']': if ((d->hex_cur / bsz + 1) * bsz < nb) d->hex_cur = (d->hex_cur / bsz + 1) * bsz; d->field = 0; break;
    case UIK_LEFT: case 'h':
        if (d->field > 0)
            d->field--;
        break;
    case UIK_RIGHT: case 'l':
        if (d->field + 1 < d->nfields)
            d->field++;
        break;
    default: return PANEL_IGNORED;
    }
    if (key == '[' || key == ']')
        d->hex_top = d->hex_cur / bpl;   /* the block's first line at the top */
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* ---------------- values ---------------- */

#define CELL_W 11
#define LABEL_W 9

static uint64_t tensor_rows(const gguf_tensor *t)
{
    return t->ne[0] ? t->n_elements / t->ne[0] : 0;
}

static void draw_values(detail_pane *d, WINDOW *w, int h, int width, const gguf_tensor *t)
{
    const ggtype_traits *tr = ggtype_get(t->type);
    uint64_t nrows = tensor_rows(t), ncols = t->ne[0];
    if (!tr || !nrows || !ncols) {
        ui_put(w, 0, 1, width - 1, "no values (unknown type or empty)", SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    int vis_rows = h - 2, vis_cols = (width - LABEL_W) / CELL_W;
    if (vis_rows < 1 || vis_cols < 1)
        return;
    if (d->col >= ncols)
        d->col = ncols - 1;
    list rl = {nrows, d->row, d->vtop, (uint64_t)vis_rows};
    list_fit(&rl);
    d->row = rl.cur;
    d->vtop = rl.top;
    if (d->col < d->vleft)
        d->vleft = d->col;
    if (d->col >= d->vleft + (uint64_t)vis_cols)
        d->vleft = d->col - (uint64_t)vis_cols + 1;
    uint64_t c0 = d->vleft, c1 = c0 + (uint64_t)vis_cols;
    if (c1 > ncols)
        c1 = ncols;
    /* dequantize only the blocks that cover the visible columns */
    uint64_t bs = tr->blck_size, b0 = c0 / bs, b1 = (c1 + bs - 1) / bs;
    size_t need = (size_t)((b1 - b0) * bs);
    if (need > d->vbuf_cap) {
        float *nbuf = realloc(d->vbuf, need * sizeof(float));
        if (!nbuf)
            return;
        d->vbuf = nbuf;
        d->vbuf_cap = need;
    }
    uint64_t row_bytes = ggtype_row_size(t->type, ncols, NULL);
    /* the visible rows' bytes (a remote file: only their blocks are read) */
    uint64_t r_end = d->vtop + (uint64_t)vis_rows < nrows ? d->vtop + (uint64_t)vis_rows : nrows;
    const char *why;
    const uint8_t *bytes = tensor_bytes(d, d->vtop * row_bytes, (r_end - d->vtop) * row_bytes, &why);
    if (!bytes) {
        ui_put(w, 1, 1, width - 1, why, SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    float cur_val = NAN;
    for (int c = 0; c < (int)(c1 - c0); c++) {
        char hd[24];
        snprintf(hd, sizeof hd, "%" PRIu64, c0 + (uint64_t)c);
        int x = LABEL_W + c * CELL_W;
        ui_put(w, 1, x + CELL_W - 1 - ui_width(hd, SIZE_MAX), CELL_W, hd, SIZE_MAX,
               c0 + (uint64_t)c == d->col ? ui_attr(UI_C_HEADER) | A_REVERSE : ui_attr(UI_C_HEADER), false);
    }
    for (int y = 0; y < vis_rows && d->vtop + (uint64_t)y < nrows; y++) {
        uint64_t r = d->vtop + (uint64_t)y;
        char lab[24];
        snprintf(lab, sizeof lab, "%" PRIu64, r);
        ui_put(w, y + 2, LABEL_W - 1 - ui_width(lab, SIZE_MAX), LABEL_W, lab, SIZE_MAX,
               r == d->row ? ui_attr(UI_C_HEADER) | A_REVERSE : ui_attr(UI_C_HEADER), false);
        const uint8_t *src = bytes + (r - d->vtop) * row_bytes + b0 * tr->type_size;
        if (codec_dequantize(t->type, src, d->vbuf, need) != 0) {
            ui_put(w, y + 2, LABEL_W, width - LABEL_W, "cannot dequantize this type", SIZE_MAX, ui_attr(UI_C_ERROR), false);
            continue;
        }
        for (uint64_t c = c0; c < c1; c++) {
            float v = d->vbuf[c - b0 * bs];
            bool sel = r == d->row && c == d->col;
            if (sel)
                cur_val = v;
            char cell[32];
            snprintf(cell, sizeof cell, "%*.4g", CELL_W - 1, (double)v);
            ui_put(w, y + 2, LABEL_W + (int)(c - c0) * CELL_W, CELL_W, cell, SIZE_MAX,
                   sel ? ui_attr(UI_C_SELECT) : v == 0 ? ui_attr(UI_C_DIM) : A_NORMAL, false);
        }
    }
    char info[200];
    snprintf(info, sizeof info, "row %" PRIu64 "/%" PRIu64 "  col %" PRIu64 "/%" PRIu64 "  = %.9g   (: go to row)", d->row,
             nrows, d->col, ncols, (double)cur_val);
    ui_put(w, 0, 1, width - 1, info, SIZE_MAX, ui_attr(UI_C_HEADER), true);
}

static int values_key(detail_pane *d, int key, int h, int width)
{
    const gguf_tensor *t = cur_tensor(d);
    if (!t || !t->ne[0])
        return PANEL_IGNORED;
    uint64_t nrows = tensor_rows(t), ncols = t->ne[0];
    uint64_t cpage = width > LABEL_W + CELL_W ? (uint64_t)((width - LABEL_W) / CELL_W) : 1;
    list rl = {nrows, d->row, d->vtop, h > 2 ? (uint64_t)(h - 2) : 1};
    if (list_key(&rl, key)) {
        d->row = rl.cur;
        d->vtop = rl.top;
        if (key == UIK_HOME)
            d->col = 0;
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    switch (key) {
    case UIK_LEFT: case 'h': if (d->col) d->col--; break;
    case UIK_RIGHT: case 'l': if (d->col + 1 < ncols) d->col++; break;
    case 'H': d->col = d->col > cpage ? d->col - cpage : 0; break;
    case 'L': d->col = d->col + cpage < ncols ? d->col + cpage : ncols - 1; break;
    case '^': d->col = 0; break;
    case '$': d->col = ncols - 1; break;
    default: return PANEL_IGNORED;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* ---------------- histogram ---------------- */

static void hist_progress(void *user, uint64_t done, uint64_t total)
{
    ui_job_progress(user, done, total);
}

/* A remote file's tensor, read whole (progress, Esc) before the statistics. */
static uint8_t *hist_fetch(hist_job *h)
{
    const gguf_tensor *t = h->t;
    uint8_t *buf = malloc((size_t)t->n_bytes + 1);
    h->st = TSTATS_ENOMEM;
    if (!buf)
        return NULL;
    atomic_store(&h->fetching, true);
    gguf_error err;
    for (uint64_t off = 0, step = (uint64_t)4 << 20; off < t->n_bytes; off += step) {
        uint64_t n = t->n_bytes - off < step ? t->n_bytes - off : step;
        if (gguf_tensor_read(h->f, t, off, n, buf + off, &h->job.cancel, &err) != GGUF_OK) {
            h->st = ui_job_cancelled(&h->job) ? TSTATS_ECANCELLED : TSTATS_EARG;
            if (h->st != TSTATS_ECANCELLED)
                gguf_error_format(&err, h->err, sizeof h->err);
            free(buf);
            return NULL;
        }
        ui_job_progress(&h->job, off + n, t->n_bytes);
    }
    atomic_store(&h->fetching, false);
    return buf;
}

static void hist_work(ui_job *j)
{
    hist_job *h = (hist_job *)j;
    tstats_opts o = {.n_bins = HIST_BINS, .progress = hist_progress, .user = j, .cancel = &j->cancel};
    if (h->t->data || !gguf_is_remote(h->f)) {
        h->st = tstats_compute(h->t, &o, &h->res);
        return;
    }
    uint8_t *buf = hist_fetch(h);
    if (!buf)
        return;
    gguf_tensor tc = *h->t;
    tc.data = buf;
    h->st = tstats_compute(&tc, &o, &h->res);
    free(buf);
}

static void hist_done(ui_job *j)
{
    hist_job *h = (hist_job *)j;
    detail_pane *d = h->owner;
    if (!h->orphan && d && d->job == h) {
        d->job = NULL;
        d->last_st = h->st;
        d->last_st_ti = h->ti;
        snprintf(d->last_err, sizeof d->last_err, "%s", h->err);
        if (h->st == TSTATS_OK) {
            if (!d->res)
                d->res = malloc(sizeof *d->res);
            if (d->res) {
                *d->res = h->res;
                d->res_ti = h->ti;
            }
        }
    }
    free(h);
}

static void hist_start(detail_pane *d)
{
    const gguf_tensor *t = cur_tensor(d);
    if (!t || d->job || (d->res && d->res_ti == d->ti))
        return;
    hist_job *h = calloc(1, sizeof *h);
    if (!h)
        return;
    ui_job_init(&h->job, hist_work, hist_done, d);
    h->owner = d;
    h->t = t;
    h->f = d->f;
    h->ti = d->ti;
    d->job = h;
    d->last_st = TSTATS_OK;
    d->last_st_ti = -1;
    if (screen_submit(d->base.scr, &h->job) != 0) {
        d->job = NULL;
        free(h);
    }
}

bool detail_pane_cancel(panel *p)
{
    detail_pane *d = p->self;
    if (!d->job)
        return false;
    ui_job_cancel(&d->job->job);
    return true;
}

static void fmt_stat(char *buf, size_t cap, double v)
{
    snprintf(buf, cap, "%.6g", v);
}

static void draw_hist(detail_pane *d, WINDOW *w, int h, int width, const gguf_tensor *t)
{
    if (d->job && d->job->ti != d->ti) {
        /* the selection moved: drop the old job */
        d->job->orphan = true;
        ui_job_cancel(&d->job->job);
        d->job = NULL;
    }
    bool have = d->res && d->res_ti == d->ti;
    if (!have && !d->job && !(d->last_st == TSTATS_ECANCELLED && d->last_st_ti == d->ti) &&
        !(d->last_st != TSTATS_OK && d->last_st_ti == d->ti))
        hist_start(d);
    if (d->job) {
        double fr = ui_job_fraction(&d->job->job);
        int bw = width - 30;
        if (bw < 10)
            bw = 10;
        int fill = (int)(fr * bw);
        char line[64];
        snprintf(line, sizeof line, "%s… %3d%%", atomic_load(&d->job->fetching) ? "fetching the tensor" : "computing histogram",
                 (int)(fr * 100));
        ui_put(w, h / 2 - 1, 2, width - 2, line, SIZE_MAX, A_BOLD, false);
        for (int i = 0; i < bw && 2 + i < width; i++)
            ui_put(w, h / 2, 2 + i, 1, i < fill ? "█" : "░", SIZE_MAX, ui_attr(UI_C_BAR), false);
        char b[32];
        ui_putf(w, h / 2 + 1, 2, width - 2, ui_attr(UI_C_DIM), "%s elements, two passes · Esc cancels",
                ui_fmt_count(t->n_elements, b, sizeof b));
        return;
    }
    if (!have) {
        if (d->last_st_ti == d->ti && d->last_st == TSTATS_ECANCELLED)
            ui_put(w, h / 2, 2, width - 2, "histogram cancelled · press g (or ⏎) to compute it again", SIZE_MAX,
                   ui_attr(UI_C_ERROR), false);
        else if (d->last_st_ti == d->ti && d->last_st != TSTATS_OK)
            ui_putf(w, h / 2, 2, width - 2, ui_attr(UI_C_ERROR), "no histogram: %s",
                    d->last_err[0] ? d->last_err : tstats_strerror(d->last_st));
        return;
    }
    const tstats_result *r = d->res;
    /* stats column */
    int sw = width >= 60 ? 22 : 0;
    if (sw) {
        int sx = width - sw;
        char v[32];
        struct { const char *k; double x; bool i; } rows[] = {
            {"count", (double)r->count, true}, {"min", r->min, false}, {"max", r->max, false},
            {"mean", r->mean, false}, {"std", r->std, false}, {"absmax", r->absmax, false},
            {"zeros", (double)r->zeros, true}, {"NaN", (double)r->nan, true}, {"Inf", (double)r->inf, true},
        };
        for (int i = 0; i < (int)(sizeof rows / sizeof rows[0]) && i < h; i++) {
            if (rows[i].i)
                snprintf(v, sizeof v, "%.0f", rows[i].x);
            else
                fmt_stat(v, sizeof v, rows[i].x);
            ui_putf(w, i, sx, sw, A_NORMAL, "%-7s", rows[i].k);
            ui_put(w, i, sx + 7, sw - 7, v, SIZE_MAX, ui_attr(UI_C_NUMBER), false);
        }
        if (h > 10)
            ui_putf(w, 10, sx, sw, ui_attr(UI_C_DIM), "scale %s (s)", d->log_scale ? "log" : "linear");
    }
    int pw = width - sw - 3, ph = h - 2;
    if (pw < 8 || ph < 2)
        return;
    /* re-bin HIST_BINS bins into pw columns */
    double colv[512];
    if (pw > 512)
        pw = 512;
    double vmax = 0;
    for (int c = 0; c < pw; c++) {
        uint32_t a = (uint32_t)((uint64_t)c * r->n_bins / (uint64_t)pw);
        uint32_t b = (uint32_t)((uint64_t)(c + 1) * r->n_bins / (uint64_t)pw);
        if (b <= a)
            b = a + 1;
        uint64_t s = 0;
        for (uint32_t k = a; k < b && k < r->n_bins; k++)
            s += r->bins[k];
        colv[c] = d->log_scale ? log1p((double)s) : (double)s;
        if (colv[c] > vmax)
            vmax = colv[c];
    }
    static const char *const eighths[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    for (int c = 0; c < pw; c++) {
        int units = vmax > 0 ? (int)lround(colv[c] / vmax * ph * 8) : 0;
        if (colv[c] > 0 && units == 0)
            units = 1;
        for (int y = 0; y < ph; y++) {
            int level = units - (ph - 1 - y) * 8;
            if (level <= 0)
                continue;
            ui_put(w, y, 1 + c, 1, eighths[level > 8 ? 8 : level], SIZE_MAX, ui_attr(UI_C_BAR), false);
        }
    }
    /* axis: min … 0 … max */
    for (int c = 0; c < pw; c++)
        ui_put(w, ph, 1 + c, 1, "─", SIZE_MAX, ui_attr(UI_C_DIM), false);
    char lo[24], hi[24];
    snprintf(lo, sizeof lo, "%.4g", r->min);
    snprintf(hi, sizeof hi, "%.4g", r->max);
    ui_put(w, ph + 1, 1, pw, lo, SIZE_MAX, A_NORMAL, false);
    ui_put(w, ph + 1, 1 + pw - ui_width(hi, SIZE_MAX), pw, hi, SIZE_MAX, A_NORMAL, false);
    if (r->min < 0 && r->max > 0) {
        int zc = (int)(-r->min / (r->max - r->min) * pw);
        if (zc > (int)strlen(lo) + 1 && zc < pw - (int)strlen(hi) - 1) {
            ui_put(w, ph, 1 + zc, 1, "┴", SIZE_MAX, A_NORMAL, false);
            ui_put(w, ph + 1, 1 + zc, 1, "0", 1, A_NORMAL, false);
        }
    }
}

/* ---------------- pane ---------------- */

static void detail_draw(panel *p, WINDOW *w, bool focused)
{
    (void)focused;
    detail_pane *d = p->self;
    const gguf_tensor *t = cur_tensor(d);
    if (!t) {
        ui_put(w, 0, 1, p->iw - 1, "select a tensor in the list", SIZE_MAX, ui_attr(UI_C_DIM), false);
        return;
    }
    switch (d->view) {
    case DETAIL_HEX: draw_hex(d, w, p->ih, p->iw, t); break;
    case DETAIL_VALUES: draw_values(d, w, p->ih, p->iw, t); break;
    default: draw_hist(d, w, p->ih, p->iw, t); break;
    }
}

static int detail_key(panel *p, int key)
{
    detail_pane *d = p->self;
    if (key == UIK_ESC && d->job) {
        detail_pane_cancel(p);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    if (d->view == DETAIL_HIST) {
        if (key == 's' || key == 'o') {
            d->log_scale = !d->log_scale;
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        if (key == UIK_ENTER || key == 'g') {
            d->last_st_ti = -1;
            hist_start(d);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        return PANEL_IGNORED;
    }
    if (d->view == DETAIL_HEX)
        return hex_key(d, key, p->ih, p->iw);
    return values_key(d, key, p->ih, p->iw);
}

static int detail_mouse(panel *p, int y, int x, int event)
{
    detail_pane *d = p->self;
    (void)x, (void)y;
    if (event == UI_MOUSE_WHEEL_UP || event == UI_MOUSE_WHEEL_DOWN) {
        int k = event == UI_MOUSE_WHEEL_UP ? UIK_UP : UIK_DOWN;
        for (int i = 0; i < 3; i++)
            detail_key(p, k);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    (void)d;
    return PANEL_HANDLED | PANEL_REDRAW;
}

static const char *detail_hints(panel *p)
{
    detail_pane *d = p->self;
    return d->view == DETAIL_HEX ? "[ ] block  ←→ field" : d->view == DETAIL_VALUES ? "←→↑↓ move  : row" : "s log/lin  Esc cancel";
}

static void detail_destroy(panel *p)
{
    detail_pane *d = p->self;
    if (d->job) {   /* still running: the job frees itself in done */
        d->job->orphan = true;
        d->job->owner = NULL;
        ui_job_cancel(&d->job->job);
    }
    tbytes_free(d->bytes);
    free(d->vbuf);
    free(d->res);
    free(d);
}

static const panel_keyhelp detail_keys[] = {
    {"x v g", "hex / values / histogram view (from any pane)"},
    {"hex: ↑↓ PgUp PgDn", "move the cursor by lines"},
    {"hex: [ ]", "previous / next block"},
    {"hex: ← →", "previous / next field of the block's anatomy"},
    {"values: arrows", "move the cursor cell (H/L a page of columns, ^ $ first/last column)"},
    {"values: :", "go to a row"},
    {"hist: s", "log / linear scale"},
    {"hist: ⏎ g", "compute again (after a cancel)"},
    {"Esc", "cancel the histogram being computed"},
    {NULL, NULL},
};

static const panel_ops detail_ops = {
    .name = "Detail",
    .title = detail_title,
    .draw = detail_draw,
    .on_key = detail_key,
    .on_mouse = detail_mouse,
    .hints = detail_hints,
    .destroy = detail_destroy,
    .keys = detail_keys,
};

panel *detail_pane_new(const gguf_file *f)
{
    detail_pane *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->base.ops = &detail_ops;
    d->base.self = d;
    d->f = f;
    d->ti = -1;
    d->res_ti = -1;
    d->last_st_ti = -1;
    d->view = DETAIL_HEX;
    return &d->base;
}

void detail_pane_set_tensor(panel *p, int64_t ti)
{
    detail_pane *d = p->self;
    if (ti == d->ti)
        return;
    d->ti = ti;
    d->hex_cur = d->hex_top = 0;
    d->field = 0;
    d->row = d->col = d->vtop = d->vleft = 0;
}

void detail_pane_set_view(panel *p, int view)
{
    detail_pane *d = p->self;
    d->view = view;
    if (view == DETAIL_HIST && d->last_st == TSTATS_ECANCELLED && d->last_st_ti == d->ti)
        d->last_st_ti = -1;   /* asking again restarts it */
}

void detail_pane_goto_row(panel *p, uint64_t row)
{
    detail_pane *d = p->self;
    const gguf_tensor *t = cur_tensor(d);
    if (!t)
        return;
    uint64_t n = tensor_rows(t);
    /* the row at the top (the last page does not scroll past the end) */
    list rl = {n, row, row, 1};
    list_goto(&rl, row);
    d->row = rl.cur;
    d->vtop = rl.top;
}
