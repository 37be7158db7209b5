/* qerr_page_heat: the heatmap (layer x role, fixed bands, whole labels) and
 * the histograms of the qerr page (see qerr_page.h). */
#include "qerr_page_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "textesc.h"

/* Level glyphs when monochrome: higher is worse; "no data" is another glyph. */
static const char *const MONO[5] = {"▁", "▂", "▄", "▆", "█"};
#define NO_DATA "·"

static const char *const BAND[QP_MET_COUNT][5] = {
    {"≤1%", "≤3.2%", "≤10%", "≤32%", ">32%"},
    {"≥40", "30–40", "20–30", "10–20", "<10"},
    {"≤3", "≤5", "≤7", "≤9", ">9"},
};

/* ---- role labels: whole names when they fit, else abbreviated words with a legend ---- */

static const struct {
    const char *word, *medium, *compact;
} WORDS[] = {
    {"attn", "a", "a"},     {"ffn", "f", "f"},      {"output", "out", "o"}, {"norm", "nrm", "n"},
    {"gate", "gate", "g"},  {"down", "down", "d"},  {"up", "up", "u"},      {"token", "tok", "t"},
    {"embd", "emb", "e"},   {"exps", "exp", "x"},   {"shexp", "shx", "s"},  {"inp", "inp", "i"},
    {"post", "post", "p"},  {"sinks", "snk", "sk"}, {"rope", "rope", "r"},  {"freqs", "frq", "fq"},
    {"bias", "bias", "b"},
};
#define N_WORDS (sizeof WORDS / sizeof WORDS[0])

enum { LBL_FULL, LBL_MEDIUM, LBL_COMPACT, LBL_LEVELS };

/* Label of `role` at `level`; marks in used[] the words abbreviated. */
static void role_label(const char *role, int level, char *out, size_t cap, bool *used)
{
    if (level == LBL_FULL) {
        snprintf(out, cap, "%s", role);
        return;
    }
    size_t n = 0;
    out[0] = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", role);
    for (char *save = NULL, *w = strtok_r(buf, "_.", &save); w; w = strtok_r(NULL, "_.", &save)) {
        const char *a = NULL;
        for (size_t k = 0; k < N_WORDS; k++)
            if (!strcmp(w, WORDS[k].word)) {
                a = level == LBL_MEDIUM ? WORDS[k].medium : WORDS[k].compact;
                if (used && strcmp(a, w))
                    used[k] = true;
            }
        char cut[8];
        if (!a) {   /* a word not in the table: its first letters */
            snprintf(cut, level == LBL_MEDIUM ? 5 : 4, "%s", w);
            a = cut;
        }
        int m = snprintf(out + n, cap - n, "%s%s", n && level == LBL_MEDIUM ? "_" : "", a);
        if (m < 0 || (size_t)m >= cap - n)
            break;
        n += (size_t)m;
    }
}

typedef struct {
    int level, cw;
    char lab[QP_MAX_ROLES][64];
    bool used[N_WORDS];
} labels;

/* The most readable level whose labels are distinct and fit `avail` columns;
 * when none fits, the shortest distinct one (the heatmap scrolls). Whole
 * names are always distinct. */
static void pick_labels(const qerr_page *q, int avail, labels *L)
{
    int best = -1, best_w = 0;
    for (int lv = 0; lv < LBL_LEVELS; lv++) {
        labels t;
        memset(&t, 0, sizeof t);
        t.level = lv;
        int mx = 3;
        for (int c = 0; c < q->n_roles; c++) {
            role_label(q->roles[c], lv, t.lab[c], sizeof t.lab[c], t.used);
            int wd = ui_width(t.lab[c], SIZE_MAX);
            mx = wd > mx ? wd : mx;
        }
        bool distinct = true;
        for (int a = 0; a < q->n_roles && distinct; a++)
            for (int b = a + 1; b < q->n_roles; b++)
                if (!strcmp(t.lab[a], t.lab[b]))
                    distinct = false;
        if (!distinct)
            continue;
        t.cw = mx + 1;
        if (t.cw * q->n_roles <= avail || best < 0 || t.cw < best_w) {
            *L = t;
            best = lv;
            best_w = t.cw;
            if (t.cw * q->n_roles <= avail)
                return;
        }
    }
}

/* "a attn · f ffn ..." for the abbreviated words; returns the lines used (at most max_lines). */
static int draw_word_legend(WINDOW *w, int y, int W, const labels *L, int max_lines, bool draw)
{
    if (L->level == LBL_FULL)
        return 0;
    int x = 0, line = 0;
    bool any = false;
    for (size_t k = 0; k < N_WORDS; k++) {
        if (!L->used[k])
            continue;
        any = true;
        const char *a = L->level == LBL_MEDIUM ? WORDS[k].medium : WORDS[k].compact;
        char item[40];
        snprintf(item, sizeof item, "%s%s=%s", x ? " " : "", a, WORDS[k].word);
        int iw = ui_width(item, SIZE_MAX);
        if (x + iw > W && x) {
            if (++line >= max_lines)
                return line;
            x = 0;
            snprintf(item, sizeof item, "%s=%s", a, WORDS[k].word);
            iw = ui_width(item, SIZE_MAX);
        }
        if (draw)
            ui_put(w, y + line, x, W - x, item, SIZE_MAX, ui_attr(UI_C_DIM), false);
        x += iw;
    }
    return any ? line + 1 : 0;
}

/* ---- heatmap pane ---- */

static void heat_title(panel *p, char *buf, size_t cap)
{
    qerr_page *q = p->self;
    snprintf(buf, cap, "%s · m cycles", QP_MET_NAME[q->metric]);
}

static int draw_scale(const qerr_page *q, WINDOW *w, int y, int W)
{
    bool bits = q->metric == QP_MET_BPW;
    int x = ui_put(w, y, 0, W, bits ? "few " : "good ", SIZE_MAX, ui_attr(UI_C_DIM), false);
    for (int l = 0; l < 5; l++) {
        x += ui_put(w, y, x, W - x, q->colour ? "█" : MONO[l], SIZE_MAX,
                    q->colour ? COLOR_PAIR(QP_HEAT_PAIR0 + l) : A_NORMAL, false);
        x += ui_putf(w, y, x, W - x, ui_attr(UI_C_DIM), "%s ", BAND[q->metric][l]);
    }
    static const char *const UNIT[QP_MET_COUNT] = {"", "dB ", "bpw "};
    return x + ui_putf(w, y, x, W - x, ui_attr(UI_C_DIM), "%s%s  " NO_DATA " no data", UNIT[q->metric],
                       bits ? "many" : "bad");
}

static void heat_draw(panel *p, WINDOW *w, bool focused)
{
    qerr_page *q = p->self;
    qp_fold(q);
    int W = p->iw, H = p->ih;
    if (!q->n_order) {
        const char *msg = q->job ? "waiting for results…" : "no data: nothing was measured (the table says why)";
        ui_put(w, 1, 1, W - 1, msg, SIZE_MAX, ui_attr(q->job ? UI_C_DIM : UI_C_ERROR), false);
        if (!q->job && H > 3)
            draw_scale(q, w, H - 1, W);
        return;
    }
    char lab[32];
    snprintf(lab, sizeof lab, "blk.%d", q->n_layers > 0 ? q->n_layers - 1 : 0);
    int lw = (int)strlen(lab) > 5 ? (int)strlen(lab) + 2 : 7;   /* label, row marker, space */
    labels *L = malloc(sizeof *L);
    if (!L)
        return;
    pick_labels(q, W - lw - 1, L);
    int cw = L->cw;
    int legend = draw_word_legend(w, 0, W, L, 2, false);
    int foot = 2 + legend;   /* scale, word legend, the cursor's figures */
    if (H - 1 - foot < 1)
        foot = H - 2 > 0 ? H - 2 : 0;
    int vis_cols = (W - lw - 1) / cw;
    if (vis_cols < 1)
        vis_cols = 1;
    int c0 = q->hx >= vis_cols ? q->hx - vis_cols + 1 : 0;
    ui_put(w, 0, 0, lw, "layer", SIZE_MAX, ui_attr(UI_C_HEADER), false);
    if (c0 > 0)
        ui_put(w, 0, lw - 1, 1, "‹", SIZE_MAX, A_BOLD, false);
    int c;
    for (c = c0; c < q->n_roles && c - c0 < vis_cols; c++)
        ui_put(w, 0, lw + (c - c0) * cw, cw - 1, L->lab[c], SIZE_MAX, ui_attr(UI_C_HEADER), false);
    if (c < q->n_roles)
        ui_put(w, 0, lw + (c - c0) * cw, 1, "›", SIZE_MAX, A_BOLD, false);
    int rows = q->n_layers + 1, vis_rows = H - 1 - foot;
    if (vis_rows < 1)
        vis_rows = 1;
    int r0 = q->hy >= vis_rows ? q->hy - vis_rows + 1 : 0;
    for (int y = r0; y < rows && y - r0 < vis_rows; y++) {
        int sy = 1 + y - r0;
        if (y < q->n_layers)
            snprintf(lab, sizeof lab, "blk.%d", y);
        else
            snprintf(lab, sizeof lab, "other");
        ui_put(w, sy, 0, lw - 2, lab, SIZE_MAX, ui_attr(UI_C_DIM), false);
        if (y == r0 && r0 > 0)
            ui_put(w, sy, lw - 1, 1, "↑", SIZE_MAX, A_BOLD, false);
        else if (y - r0 == vis_rows - 1 && y + 1 < rows)
            ui_put(w, sy, lw - 1, 1, "↓", SIZE_MAX, A_BOLD, false);
        for (int k = c0; k < q->n_roles && k - c0 < vis_cols; k++) {
            int x = lw + (k - c0) * cw;
            int32_t ri = q->grid[y * QP_MAX_ROLES + k];
            bool cur = y == q->hy && k == q->hx;
            int lv = ri >= 0 ? qp_level(q->metric, &q->res[ri]) : -1;
            if (cur) {
                ui_put(w, sy, x, 1, "[", SIZE_MAX, focused ? A_BOLD : A_NORMAL, false);
                ui_put(w, sy, x + cw - 2, 1, "]", SIZE_MAX, focused ? A_BOLD : A_NORMAL, false);
            }
            for (int i = 1; i < cw - 2; i++) {
                if (lv < 0)
                    ui_put(w, sy, x + i, 1, NO_DATA, SIZE_MAX, ui_attr(UI_C_DIM), false);
                else
                    ui_put(w, sy, x + i, 1, q->colour ? "█" : MONO[lv], SIZE_MAX,
                           q->colour ? COLOR_PAIR(QP_HEAT_PAIR0 + lv) : A_NORMAL, false);
            }
        }
    }
    /* the scale, the words of the labels, the cursor's figures */
    int ly = H - foot;
    if (ly > 1 && foot >= 2)
        draw_scale(q, w, ly, W);
    if (foot > 2)
        draw_word_legend(w, ly + 1, W, L, foot - 2, true);
    free(L);
    int32_t ri = q->hy <= q->n_layers && q->hx < q->n_roles ? q->grid[q->hy * QP_MAX_ROLES + q->hx] : -1;
    if (ri >= 0 && H - 1 > 1) {
        const qerr_result *r = &q->res[ri];
        char b[3][32];
        qp_fmtv(b[0], 32, r->m.rel_rmse, "%.4g");
        qp_fmtv(b[1], 32, r->m.sqnr_db, "%.2f");
        qp_fmtv(b[2], 32, r->bpw, "%.2f");
        int x = qp_put_name(q, w, H - 1, 0, W / 2, r, A_BOLD);
        ui_putf(w, H - 1, x, W - x, A_BOLD, "  %s  rel %s  sqnr %s dB  %s bpw", ggtype_name(r->type), b[0], b[1], b[2]);
    }
}

static int heat_key(panel *p, int key)
{
    qerr_page *q = p->self;
    qp_fold(q);
    int rows = q->n_layers + 1;
    switch (key) {
    case UIK_UP: case 'k': if (q->hy > 0) q->hy--; break;
    case UIK_DOWN: case 'j': if (q->hy + 1 < rows) q->hy++; break;
    case UIK_LEFT: case 'h': if (q->hx > 0) q->hx--; break;
    case UIK_RIGHT: case 'l': if (q->hx + 1 < q->n_roles) q->hx++; break;
    case UIK_HOME: q->hx = q->hy = 0; break;
    case UIK_END: q->hy = rows - 1; q->hx = q->n_roles ? q->n_roles - 1 : 0; break;
    case UIK_ENTER: {
        int32_t ri = q->n_roles ? q->grid[q->hy * QP_MAX_ROLES + q->hx] : -1;
        if (ri >= 0 && q->jump)
            q->jump(q->ctx, q->res[ri].tensor);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    default: return PANEL_IGNORED;
    }
    int32_t ri = q->n_roles ? q->grid[q->hy * QP_MAX_ROLES + q->hx] : -1;
    if (ri >= 0)
        qp_select(q, ri);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static const panel_keyhelp heat_keys[] = {
    {"←↑↓→ h j k l", "move between cells (layer × role); ‹ › ↑ ↓: more cells that way"},
    {"Home / End", "first cell (blk.0, first role) / last cell"},
    {"m", "metric: relative RMSE, SQNR (fixed bands: ≥40 30 20 10 dB), bits per weight"},
    {"⏎", "show the cell's tensor in the explorer"},
    {NULL, NULL},
};

static const char *heat_hints(panel *p)
{
    (void)p;
    return "arrows cell  ⏎ explorer";
}

const panel_ops qp_heat_ops = {
    .name = "Heatmap",
    .title = heat_title,
    .draw = heat_draw,
    .on_key = heat_key,
    .hints = heat_hints,
    .keys = heat_keys,
    .destroy = qp_pane_destroy,
};

/* ---- histogram pane ---- */

static void bars(WINDOW *w, int y0, int x0, int h, int width, const uint64_t *bins, int nb)
{
    static const char *const B[9] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    if (width < 1 || h < 1)
        return;
    double mx = 0;
    double *col = calloc((size_t)width, sizeof *col);
    if (!col)
        return;
    for (int i = 0; i < nb; i++)
        col[(int64_t)i * width / nb] += (double)bins[i];
    for (int c = 0; c < width; c++)
        mx = fmax(mx, col[c]);
    for (int c = 0; c < width && mx > 0; c++) {
        double v = log1p(col[c]) / log1p(mx) * h * 8;
        for (int r = 0; r < h; r++) {
            int k = (int)v - r * 8;
            k = k < 0 ? 0 : k > 8 ? 8 : k;
            ui_put(w, y0 + h - 1 - r, x0 + c, 1, B[k], SIZE_MAX, ui_attr(UI_C_BAR), false);
        }
    }
    free(col);
}

static void hist_title(panel *p, char *buf, size_t cap)
{
    qerr_page *q = p->self;
    buf[0] = 0;
    if (q->sel < 0)
        return;
    const qerr_result *r = &q->res[q->sel];   /* the full name, escaped */
    if (r->tensor < gguf_tensor_count(q->f)) {
        const gguf_tensor *t = gguf_tensor_at(q->f, r->tensor);
        textesc_term(buf, cap, t->name.ptr, (size_t)t->name.len, 0);
    } else {
        textesc_term(buf, cap, r->name, strlen(r->name), 0);
    }
}

static void hist_draw(panel *p, WINDOW *w, bool focused)
{
    (void)focused;
    qerr_page *q = p->self;
    qp_fold(q);
    int W = p->iw, H = p->ih;
    if (q->sel < 0 && q->n_order)
        qp_select(q, (int64_t)q->order[q->cur]);
    if (q->sel < 0) {
        ui_put(w, 1, 1, W - 1, q->n_order || q->job ? "select a tensor" : "no tensor measured", SIZE_MAX,
               ui_attr(UI_C_DIM), false);
        return;
    }
    const qerr_result *r = &q->res[q->sel];
    int half = W / 2;
    char b[2][32];
    qp_fmtv(b[0], 32, r->m.max_abs, "%.4g");
    ui_putf(w, 0, 0, half - 1, ui_attr(UI_C_HEADER), "|error| 0 … %s", b[0]);
    bars(w, 1, 0, H - 3, half - 2, r->ehist, QERR_EHIST_BINS);
    qp_fmtv(b[0], 32, r->m.median_abs, "%.3g");
    qp_fmtv(b[1], 32, r->m.p95_abs, "%.3g");
    ui_putf(w, H - 1, 0, half - 1, ui_attr(UI_C_DIM), "median %s  p95 %s", b[0], b[1]);
    qp_vhist_want(q, r->tensor);
    if (q->vres && q->vres_ti == (int64_t)r->tensor) {
        const tstats_result *v = q->vres;
        ui_putf(w, 0, half, W - half, ui_attr(UI_C_HEADER), "values %.4g … %.4g", v->min, v->max);
        bars(w, 1, half, H - 3, W - half - 1, v->bins, (int)v->n_bins);
        ui_putf(w, H - 1, half, W - half, ui_attr(UI_C_DIM), "mean %.3g  std %.3g", v->mean, v->std);
    } else if (q->vj) {
        ui_putf(w, 1, half, W - half, ui_attr(UI_C_DIM), "values: computing… %3d%%",
                (int)(ui_job_fraction(&q->vj->job) * 100));
    }
}

const panel_ops qp_hist_ops = {
    .name = "Histograms",
    .title = hist_title,
    .draw = hist_draw,
    .destroy = qp_pane_destroy,
};
