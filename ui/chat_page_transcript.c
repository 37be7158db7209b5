/* chat_page: the transcript pane (the conversation laid out and drawn, the
 * token inspector, the /template view) and its keys (see chat_page.h). */
#include "chat_page_int.h"
#include "textesc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *stop_name(chs_stop s)
{
    switch (s) {
    case CHS_STOP_EOG: return "end of turn";
    case CHS_STOP_LIMIT: return "n_predict reached";
    case CHS_STOP_CTX: return "context full";
    case CHS_STOP_CANCEL: return "stopped";
    default: return "error";
    }
}

/* ---- text layout ---- */

static size_t u8len(unsigned char c)
{
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

typedef void (*span_fn)(void *ctx, size_t off, size_t len);

/* Word-wrap text[0..len) to `width` columns: each line as (off, len). */
static void wrap(const char *text, size_t len, int width, span_fn fn, void *ctx)
{
    if (width < 1)
        width = 1;
    size_t i = 0;
    if (len == 0) {
        fn(ctx, 0, 0);
        return;
    }
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        if (e == i)
            fn(ctx, i, 0);
        size_t s = i;
        while (s < e) {
            int col = 0;
            size_t p = s, lastsp = 0;
            while (p < e) {
                unsigned char ch = (unsigned char)text[p];
                size_t cl = u8len(ch);
                if (p + cl > e)
                    cl = e - p;
                int w = ch >= 0x20 && ch < 0x7f ? 1 : ui_width(text + p, cl);   /* ASCII: one column */
                if (col + w > width)
                    break;
                col += w;
                p += cl;
                if (text[p - 1] == ' ')
                    lastsp = p;
            }
            if (p < e && lastsp > s)
                p = lastsp;
            if (p == s)
                p = s + u8len((unsigned char)text[s]) > e ? e : s + u8len((unsigned char)text[s]);
            fn(ctx, s, p - s);
            s = p;
        }
        i = e + 1;
    }
}

tline *chat_page_add_line(chat_page *u, int kind, int msg, attr_t a)
{
    if (!chat_page_grow((void **)&u->lines, &u->caplines, u->nlines + 1, sizeof *u->lines))
        return NULL;
    tline *l = &u->lines[u->nlines++];
    l->kind = kind;
    l->msg = msg;
    l->off = l->len = 0;
    l->info[0] = 0;
    l->a = a;
    return l;
}

static void text_span(void *ctx, size_t off, size_t len)
{
    wrapctx *w = ctx;
    tline *l = chat_page_add_line(w->u, L_TEXT, w->msg, w->a);
    if (l) {
        l->off = w->base + off;
        l->len = len;
    }
}

void chat_page_wrap(chat_page *u, const char *text, size_t len, int width, wrapctx *w)
{
    (void)u;
    wrap(text, len, width, text_span, w);
}

static const char *msg_text(chat_page *u, int msg, size_t *len)
{
    if (msg == -1) {
        *len = strlen(chs_system(u->c));
        return chs_system(u->c);
    }
    if (msg == -2) {
        *len = u->rlen;
        return u->reply ? u->reply : "";
    }
    const chs_msg *m = chs_at(u->c, (size_t)msg);
    *len = m->len;
    return m->content;
}

/* Whether reply i is shown as its raw text (r). */
static bool msg_toggled(chat_page *u, size_t i)
{
    const chs_msg *m = chs_at(u->c, i);
    for (size_t k = 0; k < u->nraw; k++)
        if (u->raw_ids[k] == m->id)
            return true;
    return false;
}

/* Whether message i is laid out as its text: what you and the system
 * wrote, a reply toggled raw (r), the inspector's reply (its token
 * highlight needs the text's bytes), a Harmony reply, raw mode. */
static bool msg_raw(chat_page *u, size_t i)
{
    const chs_msg *m = chs_at(u->c, i);
    if (strcmp(m->role, "assistant") || (u->inspector && (long)i == u->sel_msg) ||
        chat_template_is_harmony(chs_template(u->c)) || chs_raw(u->c))
        return true;
    return msg_toggled(u, i);
}

/* Whether reply i's thinking is laid out unfolded. */
static bool msg_think(chat_page *u, size_t i)
{
    return chat_page_think_shown(u, chs_at(u->c, i)->id) || (u->inspector && (long)i == u->sel_msg);
}

/* The lines of a rendered view, as L_MD lines of message msg. */
void chat_page_md_lines(chat_page *u, const mdview *md, int msg)
{
    for (size_t k = 0; k < mdview_lines(md); k++) {
        tline *l = chat_page_add_line(u, L_MD, msg, ui_attr(UI_C_NORMAL));
        if (l)
            l->off = k;
    }
}

/* The transcript's lines. A message's lines are laid out once per width:
 * when the transcript changes, the messages before the first one that
 * differs (by id and figures) keep theirs, so a reply added to a long
 * conversation costs its own lines only. Whether a message is dropped is
 * applied when drawing. The reply being streamed and the notice are added
 * each time. */
static void layout_lines(chat_page *u, int width)
{
    int tw = width - 2;
    wrapctx w = {u, 0, 0, 2, 0};
    tline *l;
    size_t n = chs_count(u->c);
    size_t from = 0;   /* the first message laid out again */
    bool same_sys = u->lay_sys && !strcmp(u->lay_sys, chs_system(u->c));
    if (u->lay_kind == LAY_TRANSCRIPT && u->lay_w == width && same_sys) {
        while (from < n && from < u->lay_nmsg && u->lay_msg[from].id == chs_at(u->c, from)->id &&
               u->lay_msg[from].stats == chs_at(u->c, from)->has_stats && u->lay_msg[from].raw == msg_raw(u, from) &&
               u->lay_msg[from].think == msg_think(u, from))
            from++;
        if (from == n && from == u->lay_nmsg) {
            u->nlines = u->lay_n;
            goto tail;
        }
        u->nlines = from < u->lay_nmsg ? u->lay_msg[from].first : u->lay_n;
    } else {
        u->nlines = 0;
        free(u->lay_sys);
        u->lay_sys = strdup(chs_system(u->c));
        if (chs_system(u->c)[0]) {
            l = chat_page_add_line(u, L_HEAD, -1, ui_attr(UI_C_GROUP) | A_BOLD);
            if (l)
                snprintf(l->info, sizeof l->info, "\xe2\x96\x8c system");
            w.msg = -1;
            w.a = ui_attr(UI_C_DIM);
            size_t len;
            const char *t = msg_text(u, -1, &len);
            wrap(t, len, tw, text_span, &w);
            chat_page_add_line(u, L_BLANK, -1, 0);
        }
    }
    for (size_t i = from; i < u->lay_nmsg; i++) {   /* the rendered views laid out again */
        mdview_free(u->lay_msg[i].md);
        u->lay_msg[i].md = NULL;
    }
    if (!chat_page_grow((void **)&u->lay_msg, &u->lay_capmsg, n + 1, sizeof *u->lay_msg)) {
        u->lay_kind = LAY_NONE;
        u->lay_nmsg = from;
        return;
    }
    for (size_t i = from; i < n; i++) {
        const chs_msg *m = chs_at(u->c, i);
        bool user = !strcmp(m->role, "user");
        u->lay_msg[i].id = m->id;
        u->lay_msg[i].stats = m->has_stats;
        u->lay_msg[i].first = u->nlines;
        u->lay_msg[i].raw = msg_raw(u, i);
        u->lay_msg[i].think = msg_think(u, i);
        u->lay_msg[i].md = NULL;
        l = chat_page_add_line(u, L_HEAD, (int)i, ui_attr(user ? UI_C_KEY : UI_C_NUMBER) | A_BOLD);
        if (l)
            snprintf(l->info, sizeof l->info, "\xe2\x96\x8c %s", user ? "you" : "assistant");
        w.msg = (int)i;
        w.a = ui_attr(UI_C_NORMAL);
        if (user || chs_raw(u->c) || msg_toggled(u, i)) {
            wrap(m->content, m->len, tw, text_span, &w);
        } else {
            size_t from = (size_t)-1;
            chat_reply_lay r = {(int)i, m->content, m->len, m->toks, m->n_toks, false, false, msg_think(u, i),
                                u->inspector && (long)i == u->sel_msg, &u->lay_msg[i].md, &from};
            chat_page_lay_reply(u, &r, tw, &w);
        }
        if (m->has_stats) {
            l = chat_page_add_line(u, L_INFO, (int)i, ui_attr(UI_C_DIM));
            const chs_reply_stats *st = &m->st;
            double tps = st->n_gen > 1 && st->t_gen_s > 0 ? (st->n_gen - 1) / st->t_gen_s : 0;
            if (l)
                snprintf(l->info, sizeof l->info,
                         "%u tokens · %s · %.1f tok/s · first token %.0f ms · prompt %u tokens: %u reused, %u evaluated",
                         st->n_gen, stop_name(st->stop), tps, st->t_first_s * 1e3, st->n_prompt, st->n_reused,
                         st->n_eval);
        }
        chat_page_add_line(u, L_BLANK, (int)i, 0);
    }
    u->lay_nmsg = n;
    u->lay_kind = LAY_TRANSCRIPT;
    u->lay_w = width;
    u->lay_n = u->nlines;
tail:
    u->cursor_line = -1;
    if (u->streaming) {
        l = chat_page_add_line(u, L_HEAD, -2, ui_attr(UI_C_NUMBER) | A_BOLD);
        if (l)
        {
            char pp[128];
            chat_page_progress(u, pp, sizeof pp);
            snprintf(l->info, sizeof l->info, "\xe2\x96\x8c assistant  %s (Esc stops)", pp[0] ? pp : "generating…");
        }
        w.msg = -2;
        w.a = ui_attr(UI_C_NORMAL);
        size_t first = u->nlines;
        if (chs_raw(u->c)) {
            wrap(u->reply ? u->reply : "", u->rlen, tw, text_span, &w);
        } else {
            /* only the last open block of the answer is parsed again (mdview_update) */
            chat_reply_lay r = {-2, u->reply ? u->reply : "", u->rlen, u->rtok, u->rntok, true, u->think_open,
                                false, false, &u->smd, &u->smd_from};
            chat_page_lay_reply(u, &r, tw, &w);
        }
        u->cursor_line = u->nlines > first ? (long)u->nlines - 1 : (long)first - 1;
    }
    if (u->notice[0]) {
        l = chat_page_add_line(u, L_INFO, -3, ui_attr(UI_C_ERROR));
        if (l)
            snprintf(l->info, sizeof l->info, "%.150s", u->notice);
    }
}

/* Draw text[a..b) at (y, x) with bytes inside [hs, he) in attribute ha. */
static int put_hl(WINDOW *w, int y, int x, int maxcols, const char *text, size_t a, size_t b, size_t hs,
                  size_t he, attr_t na, attr_t ha)
{
    int used = 0;
    size_t p = a;
    while (p < b && used < maxcols) {
        size_t q;
        attr_t at;
        if (p >= hs && p < he) {
            q = he < b ? he : b;
            at = ha;
        } else {
            q = p < hs && hs < b ? hs : b;
            at = na;
        }
        used += ui_put(w, y, x + used, maxcols - used, text + p, q - p, at, false);
        p = q;
    }
    return used;
}

/* The attribute of a rendered segment. */
static attr_t md_attr(uint16_t st)
{
    attr_t a = ui_attr(UI_C_NORMAL);
    if (st & (MDV_FRAME | MDV_URL))
        a = ui_attr(UI_C_DIM);
    if (st & (MDV_CODE | MDV_CODEBLOCK))
        a = ui_attr(UI_C_STRING);
    if (st & (MDV_HEADING | MDV_MARK))
        a = ui_attr(UI_C_NUMBER);
    if (st & MDV_LANG)
        a = ui_attr(UI_C_GROUP);
    if (st & MDV_CUT)
        a = ui_attr(UI_C_ERROR);
    if (st & MDV_LINK)
        a = ui_attr(UI_C_KEY) | A_UNDERLINE;
    if (st & (MDV_BOLD | MDV_THEAD | MDV_HEADING))
        a |= A_BOLD;
    if (st & MDV_ITALIC)
        a |= A_ITALIC;
    if (st & MDV_STRIKE)
        a |= A_DIM;
    return a;
}

static int draw_md(chat_page *u, WINDOW *w, int r, int cols, const tline *l, bool dropped)
{
    const mdview *md = l->msg == -2 ? u->smd : l->msg >= 0 && (size_t)l->msg < u->lay_nmsg ? u->lay_msg[l->msg].md : NULL;
    if (!md || l->off >= mdview_lines(md))
        return 2;
    size_t ns;
    const mdview_seg *sg = mdview_line(md, l->off, &ns);
    const char *t = mdview_text(md);
    int x = 2;
    for (size_t k = 0; k < ns && x < cols; k++)   /* the text was escaped by mdview */
        x += ui_put(w, r, x, cols - x, t + sg[k].off, sg[k].len, dropped ? ui_attr(UI_C_DIM) : md_attr(sg[k].style),
                    false);
    return x;
}

/* ---- the selected token (inspector) ---- */

static const chs_msg *sel_reply(chat_page *u)
{
    if (u->sel_msg < 0 || (size_t)u->sel_msg >= chs_count(u->c))
        return NULL;
    const chs_msg *m = chs_at(u->c, (size_t)u->sel_msg);
    return m->n_toks ? m : NULL;
}

static void select_last_reply(chat_page *u)
{
    u->sel_msg = -1;
    for (size_t i = chs_count(u->c); i > 0; i--)
        if (chs_at(u->c, i - 1)->n_toks) {
            u->sel_msg = (long)i - 1;
            u->sel_tok = 0;
            break;
        }
}

static void piece(chat_page *u, int32_t id, char *buf, size_t cap)
{
    chat_page_token_text(chs_vocab(u->c), id, buf, cap);
}

void chat_page_token_text(const tok_vocab *v, int32_t id, char *buf, size_t cap)
{
    char raw[64];
    size_t n = tok_piece(v, id, raw, sizeof raw - 1, TOK_DETOK_SPECIAL);
    if (n > sizeof raw - 1)
        n = sizeof raw - 1;
    /* a token's bytes are file text: escaped, '"' as \", a new line as ⏎ */
    char esc[200];
    size_t k = 0;
    for (size_t a = 0; a <= n && k + 1 < sizeof esc;) {
        size_t e = a;
        while (e < n && raw[e] != '\n')
            e++;
        if (e > a) {
            char part[160];
            textesc_term(part, sizeof part, raw + a, e - a, TEXTESC_DQUOTE);
            k += (size_t)snprintf(esc + k, sizeof esc - k, "%s", part);
        }
        if (e < n && k + 4 < sizeof esc)
            k += (size_t)snprintf(esc + k, sizeof esc - k, "\xe2\x8f\x8e");   /* ⏎ */
        a = e + 1;
    }
    esc[k < sizeof esc ? k : sizeof esc - 1] = 0;
    snprintf(buf, cap, "\"%s\"", esc);
}

static void draw_inspector(chat_page *u, WINDOW *w, int y0, int cols)
{
    attr_t dim = ui_attr(UI_C_DIM);
    ui_fill(w, y0, 0, cols, ui_attr(UI_C_HEADER));
    const chs_msg *m = sel_reply(u);
    if (!m) {
        ui_put(w, y0, 0, cols, " token inspector: no reply with tokens yet (Tab: transcript, i: close)", SIZE_MAX,
               ui_attr(UI_C_HEADER), true);
        return;
    }
    if (u->sel_tok >= m->n_toks)
        u->sel_tok = m->n_toks - 1;
    const chs_tokinfo *t = &m->toks[u->sel_tok];
    char pc[220];
    piece(u, t->id, pc, sizeof pc);
    ui_putf(w, y0, 0, cols, ui_attr(UI_C_HEADER), " token %zu/%zu  %s  id %d  p = %.4f  entropy %.3f nats   ←/→ token  [/] reply",
            u->sel_tok + 1, m->n_toks, pc, t->id, t->prob, t->entropy);
    for (int k = 0; k < t->n_alt && k < SAMPLER_N_ALT; k++) {
        char ap[220];
        piece(u, t->alt_id[k], ap, sizeof ap);
        int bar = (int)lrintf(t->alt_prob[k] * 20);
        char bars[64];
        size_t bl = 0;
        for (int b = 0; b < bar && bl + 3 < sizeof bars; b++) {
            memcpy(bars + bl, "\xe2\x96\x88", 3);
            bl += 3;
        }
        bars[bl] = 0;
        attr_t a = t->alt_id[k] == t->id ? ui_attr(UI_C_MATCH) : ui_attr(UI_C_NORMAL);
        int x = ui_putf(w, y0 + 1 + k, 0, cols, a, " %d. %-20.20s %7d  %7.3f%% ", k + 1, ap, t->alt_id[k],
                        t->alt_prob[k] * 100.0);
        ui_put(w, y0 + 1 + k, x, cols - x, bars, bl, ui_attr(UI_C_BAR), false);
    }
    (void)dim;
}

/* ---- transcript pane ---- */

/* The template view's lines and the transcript's trade places. */
#define SWAP_LINES(u)                                                                                    \
    do {                                                                                                 \
        tline *l_ = (u)->lines;                                                                          \
        size_t n_ = (u)->nlines, c_ = (u)->caplines;                                                     \
        (u)->lines = (u)->tlines, (u)->nlines = (u)->ntlines, (u)->caplines = (u)->captlines;            \
        (u)->tlines = l_, (u)->ntlines = n_, (u)->captlines = c_;                                        \
    } while (0)

static void draw_template(chat_page *u, WINDOW *w, int rows, int cols)
{
    /* lines of the rendered prompt (laid out once per width, in lines of
     * their own: the transcript's stay); special tokens highlighted */
    SWAP_LINES(u);
    if (u->tmpl_w != cols) {
        u->nlines = 0;
        wrapctx wc = {u, -4, ui_attr(UI_C_NORMAL), 0, 0};
        wrap(u->tmpl_text, u->tmpl_len, cols - 1, text_span, &wc);
        u->tmpl_w = cols;
    }
    u->view_rows = rows;
    if (u->top > (long)u->nlines - rows)
        u->top = (long)u->nlines - rows;
    if (u->top < 0)
        u->top = 0;
    for (int r = 0; r < rows && (size_t)(u->top + r) < u->nlines; r++) {
        tline *l = &u->lines[u->top + r];
        size_t a = l->off, b = l->off + l->len;
        int x = 0;
        size_t p = a;
        size_t h0 = 0, h1 = u->tmpl_nhl;   /* the first highlight ending after p */
        while (h0 < h1) {
            size_t mid = h0 + (h1 - h0) / 2;
            if (u->tmpl_hl[2 * mid + 1] <= p)
                h0 = mid + 1;
            else
                h1 = mid;
        }
        for (size_t h = h0; h < u->tmpl_nhl && p < b; h++) {
            size_t hs = u->tmpl_hl[2 * h], he = u->tmpl_hl[2 * h + 1];
            if (he <= p)
                continue;
            if (hs >= b)
                break;
            x += put_hl(w, r, x, cols - x, u->tmpl_text, p, he < b ? he : b, hs, he, ui_attr(UI_C_NORMAL),
                        ui_attr(UI_C_MATCH) | A_BOLD);
            p = he < b ? he : b;
        }
        if (p < b)
            x += ui_put(w, r, x, cols - x, u->tmpl_text + p, b - p, ui_attr(UI_C_NORMAL), false);
        if (b < u->tmpl_len && u->tmpl_text[b] == '\n' && x < cols)
            ui_put(w, r, x, 1, "\xe2\x86\xb5", 3, ui_attr(UI_C_DIM), false);   /* ↵ */
    }
    SWAP_LINES(u);
}

void chat_page_tr_draw(panel *p, WINDOW *w, bool focused)
{
    chat_page *u = p->self;
    chat_page_pull(u);
    if (u->job)
        chat_page_update_title(u);
    int rows = p->ih, cols = p->iw;
    if (u->tmpl_view) {
        draw_template(u, w, rows, cols);
        return;
    }
    int insp_rows = u->inspector ? INSPECTOR_ROWS : 0;
    if (insp_rows > rows - 3)
        insp_rows = rows > 3 ? rows - 3 : 0;
    int trows = rows - insp_rows;
    u->view_rows = trows;
    layout_lines(u, cols);
    long maxtop = (long)u->nlines - trows;
    if (maxtop < 0)
        maxtop = 0;
    if (u->inspector && !sel_reply(u)) {
        select_last_reply(u);   /* the reply that was streaming when the inspector opened, ... */
        u->reveal = true;
    }
    const chs_msg *sm = u->inspector ? sel_reply(u) : NULL;
    size_t hs = 0, he = 0;
    if (sm) {
        if (u->sel_tok >= sm->n_toks)
            u->sel_tok = sm->n_toks - 1;
        hs = sm->toks[u->sel_tok].off;
        he = hs + sm->toks[u->sel_tok].len;
        if (he == hs)
            he = hs + 1;
        if (u->reveal) {
            for (size_t i = 0; i < u->nlines; i++) {
                tline *l = &u->lines[i];
                if (l->kind == L_TEXT && l->msg == u->sel_msg && hs >= l->off && hs <= l->off + l->len) {
                    if ((long)i < u->top || (long)i >= u->top + trows) {
                        u->top = (long)i - trows / 2;
                        u->follow = false;
                    }
                    break;
                }
            }
            u->reveal = false;
        }
    }
    if (u->follow || u->top > maxtop)
        u->top = maxtop;
    if (u->top < 0)
        u->top = 0;
    if (u->top >= maxtop)
        u->follow = true;
    for (int r = 0; r < trows && (size_t)(u->top + r) < u->nlines; r++) {
        tline *l = &u->lines[u->top + r];
        bool dropped = l->msg >= 0 && chs_at(u->c, (size_t)l->msg)->dropped;
        int x = 0;   /* where the line's text ends (the streaming cursor) */
        attr_t la = dropped && l->kind != L_INFO ? ui_attr(UI_C_DIM) : l->a;
        if (l->kind == L_HEAD && dropped) {
            char head[200];
            snprintf(head, sizeof head, "%s  (dropped: out of the context)", l->info);
            ui_put(w, r, 0, cols, head, SIZE_MAX, la, true);
        } else if (l->kind == L_HEAD && focused && !u->inspector && l->msg >= 0 && l->msg == chat_page_selected(u)) {
            x = ui_put(w, r, 0, cols, l->info, SIZE_MAX, l->a, true);
            const chs_msg *hm = chs_at(u->c, (size_t)l->msg);
            bool code = (size_t)l->msg < u->lay_nmsg && u->lay_msg[l->msg].md && mdview_code_count(u->lay_msg[l->msg].md);
            ui_putf(w, r, x, cols - x, ui_attr(UI_C_DIM), "  \xe2\x97\x82 selected: r %s  y copy%s%s",
                    msg_toggled(u, (size_t)l->msg) ? "rendered" : "raw", code ? "  c copy code" : "",
                    chat_page_has_think(u, hm->content, hm->len) ? "  t thinking" : "");
        } else if (l->kind == L_HEAD || l->kind == L_INFO) {
            x = l->kind == L_INFO ? 2 : 0;
            x += ui_put(w, r, x, cols - x, l->info, SIZE_MAX, l->a, true);
        } else if (l->kind == L_MD) {
            x = draw_md(u, w, r, cols, l, dropped);
        } else if (l->kind == L_TEXT) {
            size_t tl;
            const char *t = msg_text(u, l->msg, &tl);
            if (sm && l->msg == u->sel_msg)
                x = 2 + put_hl(w, r, 2, cols - 2, t, l->off, l->off + l->len, hs, he, la, ui_attr(UI_C_SELECT));
            else
                x = 2 + ui_put(w, r, 2, cols - 2, t + l->off, l->len, la, false);
        }
        if (u->top + r == u->cursor_line && l->kind != L_HEAD && x < cols)   /* the streaming cursor */
            ui_put(w, r, x, 1, "\xe2\x96\x8d", 3, ui_attr(UI_C_NUMBER), false);   /* ▍ */
        else if (u->top + r == u->cursor_line && x + 2 < cols)
            ui_put(w, r, x + 1, 1, "\xe2\x96\x8d", 3, ui_attr(UI_C_NUMBER), false);
    }
    if (u->nlines > (size_t)trows && trows > 0) {
        char pos[32];
        snprintf(pos, sizeof pos, "%ld%%", maxtop ? u->top * 100 / maxtop : 100);
        ui_put(w, trows - 1, cols - (int)strlen(pos), (int)strlen(pos), pos, SIZE_MAX, ui_attr(UI_C_DIM), false);
    }
    if (insp_rows)
        draw_inspector(u, w, trows, cols);
}

void chat_page_tr_title(panel *p, char *buf, size_t cap)
{
    chat_page *u = p->self;
    if (u->tmpl_view)
        snprintf(buf, cap, "/template: %.200s · the exact prompt, special tokens highlighted · Esc back",
                 chat_page_template_source(u));
    else
        snprintf(buf, cap, "%zu messages%s", chs_count(u->c), u->inspector ? " · inspector" : "");
}

/* The transcript (or the /template view) as a list without a cursor: its
 * lines as last laid out, the rows last drawn. */
static list view(const chat_page *u)
{
    list l = {u->tmpl_view ? u->ntlines : u->nlines, 0, u->top > 0 ? (uint64_t)u->top : 0,
              u->view_rows > 0 ? (uint64_t)u->view_rows : 1};
    return l;
}

void chat_page_scroll(chat_page *u, int64_t d)
{
    list l = view(u);
    list_scroll(&l, d);
    u->top = (long)l.top;
    u->follow = false;
}

int chat_page_scroll_key(chat_page *u, int key)
{
    list l = view(u);
    if (key == UIK_END || key == 'G') {
        u->top = (long)list_max_top(&l);
        u->follow = true;
        return LIST_HANDLED | LIST_MOVED;
    }
    int r = list_scroll_key(&l, key);
    if (r) {
        u->top = (long)l.top;
        u->follow = false;
    }
    return r;
}

long chat_page_selected(chat_page *u)
{
    size_t n = chs_count(u->c);
    if (u->sel_msg >= 0 && (size_t)u->sel_msg < n && !strcmp(chs_at(u->c, (size_t)u->sel_msg)->role, "assistant"))
        return u->sel_msg;
    for (size_t i = n; i > 0; i--)
        if (!strcmp(chs_at(u->c, i - 1)->role, "assistant"))
            return (long)i - 1;
    return -1;
}

/* [ ] without the inspector: the previous / next reply, scrolled into view. */
static int select_step(chat_page *u, long i, int d)
{
    long n = (long)chs_count(u->c);
    for (long k = i + d; k >= 0 && k < n; k += d) {
        if (strcmp(chs_at(u->c, (size_t)k)->role, "assistant"))
            continue;
        u->sel_msg = k;
        u->code_msg = -1;
        if ((size_t)k < u->lay_nmsg) {
            long first = (long)u->lay_msg[k].first;
            if (first < u->top || first >= u->top + u->view_rows - 2) {
                u->top = first > 0 ? first - 1 : 0;
                u->follow = false;
            }
        }
        break;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static void toggle_raw(chat_page *u, size_t i)
{
    uint64_t id = chs_at(u->c, i)->id;
    for (size_t k = 0; k < u->nraw; k++)
        if (u->raw_ids[k] == id) {
            u->raw_ids[k] = u->raw_ids[--u->nraw];
            screen_message(u->s, "reply %zu rendered", i + 1);
            return;
        }
    if (chat_page_grow((void **)&u->raw_ids, &u->capraw, u->nraw + 1, sizeof *u->raw_ids)) {
        u->raw_ids[u->nraw++] = id;
        screen_message(u->s, "reply %zu as its raw text (r: rendered again)", i + 1);
    }
}

static void copy_msg(chat_page *u, size_t i)
{
    const chs_msg *m = chs_at(u->c, i);
    char what[64];
    snprintf(what, sizeof what, "message %zu", i + 1);
    chat_page_copy(u, m->content, m->len, what);
}

/* c: the selected reply's code blocks, one after the other. */
static void copy_code(chat_page *u, size_t i)
{
    const chs_msg *m = chs_at(u->c, i);
    mdview *md = mdview_new();
    if (!md || mdview_render(md, m->content, m->len, 80)) {
        mdview_free(md);
        screen_message(u->s, "out of memory");
        return;
    }
    size_t n = mdview_code_count(md);
    if (!n) {
        screen_message(u->s, "reply %zu has no code block (y copies the reply)", i + 1);
    } else {
        if (u->code_msg != (long)i)
            u->code_pick = 0;
        size_t k = u->code_pick++ % n, len;
        const char *lang;
        const char *code = mdview_code(md, k, &len, &lang);
        char what[160];
        snprintf(what, sizeof what, "code block %zu of %zu%s%.40s%s", k + 1, n, lang[0] ? " (" : "", lang,
                 lang[0] ? ")" : "");
        chat_page_copy(u, code, len, what);
        u->code_msg = (long)i;
    }
    mdview_free(md);
}

int chat_page_tr_key(panel *p, int key)
{
    chat_page *u = p->self;
    if (u->tmpl_view) {
        switch (key) {
        case UIK_ESC: case 'q': case '\n':
            u->tmpl_view = false;
            screen_focus(u->s, u->in);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
    }
    switch (key) {
    case UIK_UP: case 'k': case UIK_DOWN: case 'j': case UIK_PGUP: case UIK_PGDN: case UIK_HOME: case UIK_END:
    case 'G':
        chat_page_scroll_key(u, key);
        break;
    case ' ': chat_page_scroll_key(u, UIK_PGDN); break;
    case 'g': chat_page_scroll_key(u, UIK_HOME); break;
    case 'i':
        u->inspector = !u->inspector;
        if (u->inspector && !sel_reply(u)) {
            select_last_reply(u);
        }
        u->reveal = true;
        break;
    case UIK_LEFT: case 'h':
        if (!u->inspector)
            return PANEL_HANDLED;
        if (u->sel_tok > 0)
            u->sel_tok--;
        u->reveal = true;
        break;
    case UIK_RIGHT: case 'l':
        if (!u->inspector)
            return PANEL_HANDLED;
        if (sel_reply(u) && u->sel_tok + 1 < sel_reply(u)->n_toks)
            u->sel_tok++;
        u->reveal = true;
        break;
    case '[': case ']': {
        long n = (long)chs_count(u->c), i = u->inspector ? u->sel_msg : chat_page_selected(u);
        if (!u->inspector)
            return select_step(u, i, key == '[' ? -1 : 1);
        for (;;) {
            i += key == '[' ? -1 : 1;
            if (i < 0 || i >= n)
                break;
            if (chs_at(u->c, (size_t)i)->n_toks) {
                u->sel_msg = i;
                u->sel_tok = 0;
                u->reveal = true;
                break;
            }
        }
        break;
    }
    case 'r': case 'y': case 'c': case 't': {
        long i = chat_page_selected(u);
        if (i < 0) {
            screen_message(u->s, "no reply to %s yet", key == 'r' ? "show raw" : key == 't' ? "unfold" : "copy");
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        u->sel_msg = i;
        if (key == 'r')
            toggle_raw(u, (size_t)i);
        else if (key == 't')
            chat_page_toggle_think(u, (size_t)i);
        else if (key == 'y')
            copy_msg(u, (size_t)i);
        else
            copy_code(u, (size_t)i);
        break;
    }
    case 'm':
        chat_page_set_mouse(u, u->mouse_off);
        break;
    case UIK_ESC:
        if (!chat_page_stop_reply(u)) {
            screen_focus(u->s, u->in);
        }
        break;
    case '\n':
        screen_focus(u->s, u->in);
        break;
    case UIK_FN(KEY_F(2)):
        return chat_page_back(u);
    default:
        return PANEL_IGNORED;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

int chat_page_tr_mouse(panel *p, int y, int x, int ev)
{
    chat_page *u = p->self;
    (void)y, (void)x;
    if (ev == UI_MOUSE_WHEEL_UP)
        chat_page_scroll(u, -3);
    else if (ev == UI_MOUSE_WHEEL_DOWN)
        chat_page_scroll(u, 3);
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* Only the keys that do something now. */
const char *chat_page_tr_hints(panel *p)
{
    chat_page *u = p->self;
    static char h[256];
    if (u->tmpl_view)
        return "↑↓ PgUp PgDn scroll  Esc back";
    bool busy = u->job != NULL, back = u->back_page >= 0;
    if (u->inspector) {
        snprintf(h, sizeof h, "←→ token  [ ] reply  i close  ↑↓ scroll  %s", busy ? "Esc stop" : "Esc input");
        return h;
    }
    long sel = chat_page_selected(u);
    bool code = sel >= 0 && (size_t)sel < u->lay_nmsg && u->lay_msg[sel].md && mdview_code_count(u->lay_msg[sel].md);
    const chs_msg *sm = sel >= 0 ? chs_at(u->c, (size_t)sel) : NULL;
    bool think = sm && chat_page_has_think(u, sm->content, sm->len);
    snprintf(h, sizeof h, "%s%s%s↑↓ PgUp PgDn scroll  m mouse %s  Enter input  %s%s",
             sel >= 0 ? "[ ] select  r raw  y copy  " : "", code ? "c code  " : "", think ? "t thinking  " : "",
             u->mouse_off ? "on" : "off",
             busy ? "Esc stop  " : "", back ? "F2 explorer" : "");
    return h;
}

const panel_keyhelp chat_page_tr_keys[] = {
    {"i", "token inspector: probability, entropy and top-5 of the selected reply token"},
    {"← →  h l", "previous / next token of the reply (inspector)"},
    {"[ ]", "previous / next reply (the inspector: its tokens; else the reply r, y and c act on)"},
    {"r", "the selected reply as its raw text / rendered again"},
    {"y", "copy the selected reply (OSC 52 and a file)"},
    {"c", "copy the selected reply's next code block"},
    {"t", "unfold / fold the selected reply's thinking (<think> or Harmony analysis)"},
    {"m", "mouse off (the terminal's own selection works) / on"},
    {"↑↓ j k PgUp PgDn g G", "scroll the transcript (G: follow the end)"},
    {"Esc", "stop the reply being generated; else back to the input box"},
    {"Enter", "back to the input box"},
    {"F2", "back to the explorer (when the chat was opened from it)"},
    {NULL, NULL},
};
