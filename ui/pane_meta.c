/* Metadata tree: keys grouped by dotted prefix, typed values, arrays that
 * expand into one row per element without ever being materialised (a row
 * index maps to (key, element) by binary search over the few visible keys).
 * The token list (tokenizer.ggml.tokens) unfolds as a table of id, piece,
 * score and type; byte-level BPE pieces are shown decoded (`r`: raw). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "list.h"
#include "panes.h"
#include "screen.h"
#include "textesc.h"
#include "tokenizer.h"

typedef struct {
    char *label;       /* this node's own name ("attention", "context_length") */
    int parent;        /* -1 for the root */
    int first, last;   /* children */
    int next;          /* sibling */
    int64_t kv;        /* -1 for a group */
    bool expanded;
    uint32_t n_keys;   /* keys below a group */
} mnode;

typedef struct {
    int node;
    int depth;
    uint64_t row;      /* first row */
    uint64_t nrows;    /* 1, or 1 + elements for an expanded array */
} vis_t;

typedef struct {
    panel base;
    const gguf_file *f;
    mnode *nodes;
    int nnodes, cap;
    vis_t *vis;
    int nvis;
    list l;               /* the rows of the flattened tree (count), cursor, view */
    int key_w;
    int key_need;         /* columns the widest key row wants */
    const gguf_kv *tokens, *scores, *types;   /* the vocabulary's arrays (NULL: absent) */
    bool bpe;             /* tokens are byte-level BPE pieces: shown decoded */
    bool raw;             /* show them as stored instead */
    char match[128];      /* the search's text, lit ("" none) */
} meta_pane;

static const char *const tok_types[] = {"?", "normal", "unknown", "control", "user", "unused", "byte"};

static int node_add(meta_pane *m, int parent, const char *label, size_t len, int64_t kv)
{
    if (m->nnodes == m->cap) {
        int cap = m->cap ? m->cap * 2 : 64;
        mnode *n = realloc(m->nodes, (size_t)cap * sizeof *n);
        if (!n)
            return -1;
        m->nodes = n;
        m->cap = cap;
    }
    int id = m->nnodes++;
    mnode *n = &m->nodes[id];
    memset(n, 0, sizeof *n);
    /* a part of a key from the file: kept in its terminal form (escaped once
     * here, not at every frame) */
    textesc_buf b = {0};
    if (textesc_term_append(&b, label, len, 0) == 0 && !b.ptr)
        textesc_buf_put(&b, "", 0);
    n->label = b.ptr;
    n->parent = parent;
    n->first = n->last = n->next = -1;
    n->kv = kv;
    n->expanded = true;
    if (parent >= 0) {
        mnode *p = &m->nodes[parent];
        if (p->last >= 0)
            m->nodes[p->last].next = id;
        else
            p->first = id;
        p->last = id;
    }
    return id;
}

static int child_group(meta_pane *m, int parent, const char *name, size_t len)
{
    textesc_buf b = {0};   /* labels are escaped: compare escaped */
    if (textesc_term_append(&b, name, len, 0) != 0)
        return -1;
    const char *e = b.ptr ? b.ptr : "";
    for (int c = m->nodes[parent].first; c >= 0; c = m->nodes[c].next)
        if (m->nodes[c].kv < 0 && m->nodes[c].label && !strcmp(m->nodes[c].label, e)) {
            textesc_buf_free(&b);
            return c;
        }
    textesc_buf_free(&b);
    return node_add(m, parent, name, len, -1);
}

/* A group whose only child is a group is shown as one ("tokenizer.ggml"). */
static void merge_chains(meta_pane *m, int id)
{
    mnode *n = &m->nodes[id];
    while (id != 0 && n->kv < 0 && n->first >= 0 && n->first == n->last && m->nodes[n->first].kv < 0) {
        int c = n->first;
        mnode *ch = &m->nodes[c];
        size_t a = strlen(n->label), b = strlen(ch->label);
        char *l = malloc(a + b + 2);
        if (!l)
            break;
        memcpy(l, n->label, a);
        l[a] = '.';
        memcpy(l + a + 1, ch->label, b + 1);
        free(n->label);
        n->label = l;
        n->first = ch->first;
        n->last = ch->last;
        for (int g = n->first; g >= 0; g = m->nodes[g].next)
            m->nodes[g].parent = id;
        ch->first = ch->last = -1;
        n = &m->nodes[id];
    }
    for (int c = n->first; c >= 0; c = m->nodes[c].next)
        merge_chains(m, c);
}

static uint32_t count_keys(meta_pane *m, int id)
{
    mnode *n = &m->nodes[id];
    if (n->kv >= 0)
        return 1;
    uint32_t k = 0;
    for (int c = n->first; c >= 0; c = m->nodes[c].next)
        k += count_keys(m, c);
    m->nodes[id].n_keys = k;
    return k;
}

static bool is_array(const meta_pane *m, const mnode *n)
{
    if (n->kv < 0)
        return false;
    const gguf_kv *kv = gguf_kv_at(m->f, (uint64_t)n->kv);
    return kv && kv->value.type == GGUF_VT_ARRAY;
}

static void vis_push(meta_pane *m, int node, int depth, int *cap)
{
    if (m->nvis == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        vis_t *v = realloc(m->vis, (size_t)*cap * sizeof *v);
        if (!v)
            return;
        m->vis = v;
    }
    uint64_t nrows = 1;
    mnode *n = &m->nodes[node];
    if (n->expanded && is_array(m, n))
        nrows += gguf_kv_at(m->f, (uint64_t)n->kv)->value.arr_len;
    m->vis[m->nvis++] = (vis_t){node, depth, m->l.count, nrows};
    m->l.count += nrows;
}

static void flatten_rec(meta_pane *m, int id, int depth, int *cap)
{
    for (int c = m->nodes[id].first; c >= 0; c = m->nodes[c].next) {
        vis_push(m, c, depth, cap);
        if (m->nodes[c].kv < 0 && m->nodes[c].expanded)
            flatten_rec(m, c, depth + 1, cap);
    }
}

static void flatten(meta_pane *m)
{
    int cap = 0;
    free(m->vis);
    m->vis = NULL;
    m->nvis = 0;
    m->l.count = 0;
    flatten_rec(m, 0, 0, &cap);
    list_fit(&m->l);
}

/* The visible entry holding `row` (binary search). */
static int vis_find(const meta_pane *m, uint64_t row)
{
    int lo = 0, hi = m->nvis - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (m->vis[mid].row <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Human form of a scalar value into buf; returns the attribute role. */
static ui_color format_scalar(const gguf_value *v, char *buf, size_t cap)
{
    int64_t i;
    uint64_t u;
    double d;
    gguf_str s;
    switch (v->type) {
    case GGUF_VT_STRING:
        if (gguf_value_str(v, &s) == GGUF_OK)
            textesc_term(buf, cap, s.ptr, (size_t)s.len, 0);   /* text from the file */
        else
            snprintf(buf, cap, "?");
        return UI_C_STRING;
    case GGUF_VT_BOOL:
        snprintf(buf, cap, "%s", v->data && v->data[0] ? "true" : "false");
        return UI_C_NUMBER;
    case GGUF_VT_FLOAT32:
    case GGUF_VT_FLOAT64:
        if (gguf_value_f64(v, &d) == GGUF_OK)
            snprintf(buf, cap, "%.7g", d);
        return UI_C_NUMBER;
    case GGUF_VT_UINT64:
        if (gguf_value_u64(v, &u) == GGUF_OK)
            snprintf(buf, cap, "%" PRIu64, u);
        return UI_C_NUMBER;
    case GGUF_VT_ARRAY:
        snprintf(buf, cap, "%s × %" PRIu64, gguf_vtype_name(v->arr_type), v->arr_len);
        return UI_C_DIM;
    default:
        if (gguf_value_i64(v, &i) == GGUF_OK)
            snprintf(buf, cap, "%" PRId64, i);
        else
            snprintf(buf, cap, "?");
        return UI_C_NUMBER;
    }
}

static void meta_title(panel *p, char *buf, size_t cap)
{
    meta_pane *m = p->self;
    snprintf(buf, cap, "%" PRIu64 " keys", gguf_kv_count(m->f));
}

/* Element i of the number array kv (NULL: absent) as a double. */
static bool arr_num(const gguf_kv *kv, uint64_t i, double *d)
{
    gguf_value ev;
    return kv && i < kv->value.arr_len && gguf_arr_at(&kv->value, i, &ev) == GGUF_OK && gguf_value_f64(&ev, d) == GGUF_OK;
}

static int digits(uint64_t n)
{
    int d = 1;
    while (n >= 10)
        n /= 10, d++;
    return d;
}

static void draw_elem(meta_pane *m, WINDOW *w, int y, int x, int width, const gguf_kv *kv, uint64_t i, attr_t sel)
{
    const gguf_value *arr = &kv->value;
    bool table = kv == m->tokens;
    char idx[32];
    /* the token table: ids right-aligned in one column */
    if (table) {
        int pad = digits(arr->arr_len ? arr->arr_len - 1 : 0) - digits(i);
        memset(idx, ' ', (size_t)pad);
        snprintf(idx + pad, sizeof idx - (size_t)pad, "%" PRIu64 "  ", i);
    } else
        snprintf(idx, sizeof idx, "[%" PRIu64 "] ", i);
    x += ui_put(w, y, x, width, idx, SIZE_MAX, sel ? sel : ui_attr(UI_C_DIM), false);
    width -= ui_width(idx, SIZE_MAX);
    gguf_value ev;
    if (gguf_arr_at(arr, i, &ev) != GGUF_OK) {
        ui_put(w, y, x, width, "?", 1, sel | ui_attr(UI_C_ERROR), false);
        return;
    }
    char buf[512];
    if (ev.type == GGUF_VT_STRING) {
        gguf_str s;
        if (gguf_value_str(&ev, &s) != GGUF_OK)
            return;
        const char *txt = s.ptr;
        size_t n = (size_t)s.len;
        if (table && m->bpe && !m->raw) {
            size_t k = tok_bpe_piece_bytes(s.ptr, n, buf, sizeof buf);
            if (k <= sizeof buf)
                txt = buf, n = k;
        }
        /* the table's piece column: as wide as the pane allows, up to 32 and its quotes */
        int extra = table ? (m->scores ? 12 : 0) + (m->types ? 9 : 0) : 0;
        int pw = width - extra;
        if (table && pw > 34)
            pw = 34;
        x += ui_put(w, y, x, pw, "'", 1, sel, false);
        int used = panes_put_match(w, y, x, pw - 2, txt, n, sel ? sel : ui_attr(UI_C_STRING), m->match, PANES_ELLIPSIS);
        ui_put(w, y, x + used, pw - 1 - used, "'", 1, sel, false);
        if (!table)
            return;
        x += pw - 1;
        double d;
        if (m->scores && arr_num(m->scores, i, &d))
            ui_putf(w, y, x, width - pw, sel ? sel : ui_attr(UI_C_NUMBER), "%11.6g", d);
        x += m->scores ? 12 : 0;
        if (m->types && arr_num(m->types, i, &d))
            ui_putf(w, y, x, width - pw - 12, sel ? sel : ui_attr(UI_C_DIM), " %s",
                    d >= 1 && d <= 6 ? tok_types[(int)d] : "?");
        return;
    }
    ui_color c = format_scalar(&ev, buf, sizeof buf);
    ui_put(w, y, x, width, buf, SIZE_MAX, sel ? sel : ui_attr(c), true);
}

static void meta_draw(panel *p, WINDOW *w, bool focused)
{
    meta_pane *m = p->self;
    int h = p->ih, width = p->iw;
    list_set(&m->l, m->l.count, (uint64_t)(h > 0 ? h : 1));
    /* the key column as wide as the widest key, at most 55% of the pane */
    m->key_w = m->key_need < width * 55 / 100 ? m->key_need : width * 55 / 100;
    attr_t selattr = ui_attr(focused ? UI_C_SELECT : UI_C_SELECT_DIM);
    for (int y = 0; y < h; y++) {
        uint64_t row = m->l.top + (uint64_t)y;
        if (row >= m->l.count)
            break;
        int vi = vis_find(m, row);
        vis_t *v = &m->vis[vi];
        mnode *n = &m->nodes[v->node];
        bool sel = row == m->l.cur;
        attr_t sa = sel ? selattr : 0;
        if (sel) {
            ui_fill(w, y, 0, width, selattr);
            ui_put(w, y, 0, 1, "›", SIZE_MAX, selattr, false);   /* visible without colours too */
        }
        int x = 1 + 2 * v->depth;
        if (n->kv < 0) {
            x += ui_put(w, y, x, width - x, n->expanded ? "▾ " : "▸ ", SIZE_MAX, sa, false);
            x += panes_put_match(w, y, x, width - x, n->label, strlen(n->label), sa ? sa : ui_attr(UI_C_GROUP), m->match,
                                 PANES_ELLIPSIS | PANES_ESCAPED);
            if (!n->expanded) {
                char k[32];
                snprintf(k, sizeof k, "  %u keys", n->n_keys);
                ui_put(w, y, x, width - x, k, SIZE_MAX, sa ? sa : ui_attr(UI_C_DIM), false);
            }
            continue;
        }
        const gguf_kv *kv = gguf_kv_at(m->f, (uint64_t)n->kv);
        if (!kv)
            continue;
        bool arr = kv->value.type == GGUF_VT_ARRAY;
        if (row > v->row) {   /* an array element */
            draw_elem(m, w, y, x + 4, width - x - 4, kv, row - v->row - 1, sa);
            continue;
        }
        x += ui_put(w, y, x, width - x, arr ? (n->expanded ? "▾ " : "▸ ") : "  ", SIZE_MAX, sa, false);
        int kw = m->key_w - x;
        if (kw < 6)
            kw = 6;
        panes_put_match(w, y, x, kw - 1, n->label, strlen(n->label), sa, m->match, PANES_ELLIPSIS | PANES_ESCAPED);
        x += kw;
        if (x >= width)
            continue;
        char buf[256];
        ui_color c = format_scalar(&kv->value, buf, sizeof buf);
        int avail = width - x;
        if (kv->value.type == GGUF_VT_STRING) {
            gguf_str sv;
            if (gguf_value_str(&kv->value, &sv) == GGUF_OK &&
                (memchr(sv.ptr, '\n', (size_t)sv.len) || ui_width(sv.ptr, (size_t)sv.len) > avail)) {
                /* a long or multi-line string: its start, then how to read it all */
                char hint[48];
                snprintf(hint, sizeof hint, " ⏎ %" PRIu64 " B", sv.len);
                int hw = ui_width(hint, SIZE_MAX);
                if (avail > hw + 8) {
                    int u = panes_put_match(w, y, x, avail - hw, sv.ptr, (size_t)sv.len, sa ? sa : ui_attr(c), m->match,
                                            PANES_ELLIPSIS);
                    ui_put(w, y, x + u, hw, hint, SIZE_MAX, sa ? sa : ui_attr(UI_C_DIM), false);
                    continue;
                }
            }
        }
        int used = kv->value.type == GGUF_VT_STRING
                       ? panes_put_match(w, y, x, avail, buf, strlen(buf), sa ? sa : ui_attr(c), m->match,
                                         PANES_ELLIPSIS | PANES_ESCAPED)
                       : ui_put(w, y, x, avail, buf, SIZE_MAX, sa ? sa : ui_attr(c), true);
        if (kv == m->tokens && n->expanded && used + 30 < avail)
            ui_put(w, y, x + used, avail - used, m->scores || m->types ? "   id · piece · score · type" : "   id · piece",
                   SIZE_MAX, sa ? sa : ui_attr(UI_C_DIM), false);
        if (gguf_str_eq(kv->key, "general.file_type")) {
            int64_t ft;
            if (gguf_value_i64(&kv->value, &ft) == GGUF_OK && ft >= 0) {
                const char *nm = ggtype_file_type_name((uint32_t)ft);
                if (nm)
                    ui_putf(w, y, x + used, width - x - used, sa ? sa : ui_attr(UI_C_DIM), " %s", nm);
            }
        }
    }
    if (m->l.count > (uint64_t)h && h > 2) {
        /* a scroll position marker on the right edge */
        int pos = (int)((double)m->l.cur / (double)(m->l.count - 1) * (h - 1));
        ui_put(w, pos, width - 1, 1, "▐", SIZE_MAX, ui_attr(UI_C_DIM), false);
    }
}

static void open_viewer(meta_pane *m, const gguf_kv *kv, int64_t elem)
{
    char title[160], key[128];
    textesc_term(key, sizeof key, kv->key.ptr, (size_t)kv->key.len, 0);
    gguf_str s;
    if (elem >= 0) {
        if (gguf_arr_str(&kv->value, (uint64_t)elem, &s) != GGUF_OK)
            return;
        snprintf(title, sizeof title, "%s[%" PRId64 "]", key, elem);
    } else {
        if (gguf_value_str(&kv->value, &s) != GGUF_OK)
            return;
        snprintf(title, sizeof title, "%s", key);
    }
    screen_pager(m->base.scr, title, s.ptr, (size_t)s.len);
}

static int meta_activate(meta_pane *m, int dir /* 1 expand, -1 collapse, 0 toggle */)
{
    if (!m->l.count)
        return PANEL_HANDLED;
    int vi = vis_find(m, m->l.cur);
    vis_t *v = &m->vis[vi];
    mnode *n = &m->nodes[v->node];
    if (m->l.cur > v->row) {   /* element row */
        if (dir < 0) {
            m->l.cur = v->row;
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        const gguf_kv *kv = gguf_kv_at(m->f, (uint64_t)n->kv);
        if (dir == 0 && kv && kv->value.arr_type == GGUF_VT_STRING)
            open_viewer(m, kv, (int64_t)(m->l.cur - v->row - 1));
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    bool expandable = n->kv < 0 || is_array(m, n);
    if (expandable) {
        bool want = dir > 0 ? true : dir < 0 ? false : !n->expanded;
        if (want == n->expanded && dir < 0 && n->parent > 0) {
            /* already collapsed: go to the parent */
            for (int i = vi - 1; i >= 0; i--)
                if (m->vis[i].node == n->parent) {
                    m->l.cur = m->vis[i].row;
                    break;
                }
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        n->expanded = want;
        flatten(m);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    const gguf_kv *kv = gguf_kv_at(m->f, (uint64_t)n->kv);
    if (dir < 0 && n->parent > 0) {
        for (int i = vi - 1; i >= 0; i--)
            if (m->vis[i].node == n->parent) {
                m->l.cur = m->vis[i].row;
                break;
            }
    } else if (dir >= 0 && kv && kv->value.type == GGUF_VT_STRING) {
        open_viewer(m, kv, -1);
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static void set_all(meta_pane *m, bool expanded)
{
    for (int i = 1; i < m->nnodes; i++)
        if (m->nodes[i].kv < 0)
            m->nodes[i].expanded = expanded;
    flatten(m);
}

static int meta_key(panel *p, int key)
{
    meta_pane *m = p->self;
    list_set(&m->l, m->l.count, (uint64_t)(p->ih > 0 ? p->ih : 1));
    if (list_key(&m->l, key))
        return PANEL_HANDLED | PANEL_REDRAW;
    switch (key) {
    case UIK_ENTER: case ' ': return meta_activate(m, 0);
    case UIK_RIGHT: case 'l': return meta_activate(m, 1);
    case UIK_LEFT: case 'h': return meta_activate(m, -1);
    case 'r':   /* byte-level BPE pieces: decoded / as stored */
        if (!m->bpe)
            return PANEL_IGNORED;
        m->raw = !m->raw;
        break;
    case '*': set_all(m, true); break;
    case '-': set_all(m, false); break;
    default: return PANEL_IGNORED;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int meta_mouse(panel *p, int y, int x, int event)
{
    meta_pane *m = p->self;
    (void)x;
    if (event == UI_MOUSE_WHEEL_UP || event == UI_MOUSE_WHEEL_DOWN) {
        list_set(&m->l, m->l.count, (uint64_t)(p->ih > 0 ? p->ih : 1));
        list_wheel(&m->l, event == UI_MOUSE_WHEEL_UP ? -3 : 3);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    uint64_t row = m->l.top + (uint64_t)y;
    if (row < m->l.count) {
        m->l.cur = row;
        if (event == UI_MOUSE_DOUBLE)
            return meta_activate(m, 0);
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static const char *meta_hints(panel *p)
{
    meta_pane *m = p->self;
    if (m->bpe)
        return m->raw ? "←→ fold  r decoded pieces" : "←→ fold  r raw pieces";
    return "←→ fold";
}

static void meta_destroy(panel *p)
{
    meta_pane *m = p->self;
    for (int i = 0; i < m->nnodes; i++)
        free(m->nodes[i].label);
    free(m->nodes);
    free(m->vis);
    free(m);
}

static const panel_keyhelp meta_keys[] = {
    {"↑↓ j k", "move"},
    {"PgUp PgDn", "page"},
    {"Home End G", "first / last row"},
    {"⏎ Space", "fold/unfold a group or array; open a string in the viewer"},
    {"→ l / ← h", "unfold / fold (← on a child goes to its parent)"},
    {"* / -", "unfold / fold every group"},
    {"r", "byte-level BPE tokens: raw pieces (Ġ for a space) / decoded (the default)"},
    {NULL, NULL},
};

static const panel_ops meta_ops = {
    .name = "Metadata",
    .title = meta_title,
    .draw = meta_draw,
    .on_key = meta_key,
    .on_mouse = meta_mouse,
    .hints = meta_hints,
    .destroy = meta_destroy,
    .keys = meta_keys,
};

panel *meta_pane_new(const gguf_file *f)
{
    meta_pane *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->f = f;
    m->base.ops = &meta_ops;
    m->base.self = m;
    node_add(m, -1, "", 0, -1);
    uint64_t n = gguf_kv_count(f);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!kv)
            continue;
        const char *k = kv->key.ptr;
        size_t len = (size_t)kv->key.len, a = 0;
        int parent = 0;
        for (size_t j = 0; j < len; j++) {
            if (k[j] == '.') {
                int g = child_group(m, parent, k + a, j - a);
                if (g < 0)
                    break;
                parent = g;
                a = j + 1;
            }
        }
        node_add(m, parent, k + a, len - a, (int64_t)i);
    }
    merge_chains(m, 0);
    count_keys(m, 0);
    for (int i = 1; i < m->nnodes; i++) {
        int depth = 0;
        for (int a = m->nodes[i].parent; a > 0; a = m->nodes[a].parent)
            depth++;
        int need = 1 + 2 * depth + 2 + ui_width(m->nodes[i].label, SIZE_MAX) + 1;
        if (m->nodes[i].kv >= 0 && need > m->key_need)
            m->key_need = need;
    }
    /* the vocabulary's arrays: the token table */
    const gguf_kv *tk = gguf_find_kv(f, "tokenizer.ggml.tokens");
    if (tk && tk->value.type == GGUF_VT_ARRAY && tk->value.arr_type == GGUF_VT_STRING) {
        m->tokens = tk;
        const gguf_kv *sc = gguf_find_kv(f, "tokenizer.ggml.scores");
        const gguf_kv *ty = gguf_find_kv(f, "tokenizer.ggml.token_type");
        m->scores = sc && sc->value.type == GGUF_VT_ARRAY && sc->value.arr_type != GGUF_VT_STRING &&
                    sc->value.arr_type != GGUF_VT_ARRAY ? sc : NULL;
        m->types = ty && ty->value.type == GGUF_VT_ARRAY && ty->value.arr_type != GGUF_VT_STRING &&
                   ty->value.arr_type != GGUF_VT_ARRAY ? ty : NULL;
        char model[16] = "";
        gguf_get_cstr(f, "tokenizer.ggml.model", model, sizeof model);
        m->bpe = !strcmp(model, "gpt2");
    }
    /* Arrays start folded; groups unfolded. */
    for (int i = 0; i < m->nnodes; i++)
        if (m->nodes[i].kv >= 0)
            m->nodes[i].expanded = false;
    flatten(m);
    return &m->base;
}

void meta_pane_set_match(panel *p, const char *q)
{
    meta_pane *m = p->self;
    snprintf(m->match, sizeof m->match, "%s", q ? q : "");
}

void meta_pane_reveal(panel *p, uint64_t kvi, int64_t elem)
{
    meta_pane *m = p->self;
    int id = -1;
    for (int i = 0; i < m->nnodes; i++)
        if (m->nodes[i].kv == (int64_t)kvi)
            id = i;
    if (id < 0)
        return;
    for (int a = m->nodes[id].parent; a > 0; a = m->nodes[a].parent)
        m->nodes[a].expanded = true;
    if (elem >= 0)
        m->nodes[id].expanded = true;
    flatten(m);
    for (int i = 0; i < m->nvis; i++)
        if (m->vis[i].node == id) {
            m->l.cur = m->vis[i].row + (elem >= 0 ? (uint64_t)elem + 1 : 0);
            break;
        }
    if (p->ih > 2) {
        list_set(&m->l, m->l.count, (uint64_t)p->ih);
        list_center(&m->l);
    }
}
