/* chat_page: an assistant reply laid out with its reasoning folded (see
 * chat_page.h). One mechanism for both kinds of reasoning: the analysis
 * channel of a Harmony reply (gpt-oss) and the `<think>…</think>` block of
 * Qwen3 / DeepSeek-R1 style replies. The thinking is a dimmed block behind
 * one line with its token count and time, folded unless `t` unfolded it
 * (or the token inspector shows that reply); while it streams it is one
 * line, "thinking… N tokens, T s". The answer after a `<think>` block is
 * rendered as Markdown like any reply; a Harmony reply's channels are laid
 * out as text (their offsets stay those of the reply, for the inspector). */
#include "chat_page_int.h"
#include "harmony.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool starts_think(const char *text, size_t len)
{
    size_t n = len < 7 ? len : 7;
    return !memcmp(text, "<think>", n);   /* "<thi" while it streams too */
}

/* The fold line of thinking that spans reply bytes [from, to). */
static void fold_line(chat_page *u, const chat_reply_lay *r, size_t from, size_t to, bool open, bool shown)
{
    tline *l = chat_page_add_line(u, L_INFO, r->msg, ui_attr(UI_C_DIM));
    if (!l)
        return;
    size_t n = 0;
    float t0 = 0, t1 = 0;
    for (size_t k = 0; k < r->ntoks; k++) {
        const chs_tokinfo *t = &r->toks[k];
        if (t->off < from || t->off >= to)
            continue;
        if (!n++)
            t0 = t->t_s;
        t1 = t->t_s;
    }
    const char *mark = shown ? "\xe2\x96\xbe" : "\xe2\x96\xb8";   /* ▾ ▸ */
    if (open)
        snprintf(l->info, sizeof l->info, "%s thinking… %zu tokens, %.1f s", mark, n, (double)(t1 - t0));
    else if (r->toks)
        snprintf(l->info, sizeof l->info, "%s thinking · %zu tokens · %.1f s · t %s", mark, n, (double)(t1 - t0),
                 shown ? "hides" : "shows");
    else
        snprintf(l->info, sizeof l->info, "%s thinking · %zu bytes · t %s", mark, to - from, shown ? "hides" : "shows");
}

static void wrap_at(chat_page *u, const char *text, size_t from, size_t to, int tw, wrapctx *w, attr_t a)
{
    attr_t keep = w->a;
    w->a = a;
    w->base = from;
    chat_page_wrap(u, text + from, to - from, tw, w);
    w->a = keep;
    w->base = 0;
}

/* Harmony: message bodies only, each run of analysis bodies folded. */
static void lay_harmony(chat_page *u, const chat_reply_lay *r, int tw, wrapctx *w)
{
    size_t n = harmony_spans(r->text, r->len, NULL, 0);
    harmony_span *sp = n ? malloc(n * sizeof *sp) : NULL;
    if (!sp) {
        if (r->len < 2 || memcmp(r->text, "<|", 2))   /* a header still coming shows nothing yet */
            wrap_at(u, r->text, 0, r->len, tw, w, w->a);
        return;
    }
    harmony_spans(r->text, r->len, sp, n);
    for (size_t i = 0; i < n; i++) {
        if (!sp[i].analysis) {
            if (i > 0 && sp[i - 1].analysis)
                chat_page_add_line(u, L_BLANK, r->msg, 0);   /* the answer apart from the thinking */
            wrap_at(u, r->text, sp[i].off, sp[i].off + sp[i].len, tw, w, w->a);
            continue;
        }
        if (i > 0 && sp[i - 1].analysis)
            continue;
        size_t j = i;
        while (j + 1 < n && sp[j + 1].analysis)
            j++;
        bool open = r->streaming && j + 1 == n;
        size_t end = open ? r->len : sp[j].off + sp[j].len;
        fold_line(u, r, sp[i].off, end, open, r->shown && !open);
        if (r->shown && !open)
            for (size_t k = i; k <= j; k++)
                wrap_at(u, r->text, sp[k].off, sp[k].off + sp[k].len, tw, w, ui_attr(UI_C_DIM));
    }
    free(sp);
}

/* The answer text[from..len) as Markdown (into *r->md: updated while it
 * streams), or as text for the inspector or when out of memory. */
static void lay_answer(chat_page *u, const chat_reply_lay *r, size_t from, int tw, wrapctx *w)
{
    const char *t = r->text;
    if (!r->inspect && r->md) {
        if (!*r->md)
            *r->md = mdview_new();
        int rc = -1;
        if (*r->md)
            rc = r->streaming && *r->md_from == from ? mdview_update(*r->md, t + from, r->len - from, tw)
                                                     : mdview_render(*r->md, t + from, r->len - from, tw);
        *r->md_from = rc == 0 ? from : (size_t)-1;
        if (rc == 0) {
            chat_page_md_lines(u, *r->md, r->msg);
            return;
        }
    }
    /* the first line without the stray space of an SPM model's first piece
     * ("▁Hello" -> " Hello"), new lines after `</think>` skipped */
    while (from < r->len && (t[from] == '\n' || t[from] == '\r') && from > 0)
        from++;
    if (from < r->len && t[from] == ' ')
        from++;
    wrap_at(u, t, from, r->len, tw, w, w->a);
}

void chat_page_lay_reply(chat_page *u, const chat_reply_lay *r, int tw, wrapctx *w)
{
    if (chat_template_is_harmony(chs_template(u->c))) {
        lay_harmony(u, r, tw, w);
        return;
    }
    size_t to, tl, ao;
    if (chat_think_split(r->text, r->len, &to, &tl, &ao)) {
        const char *end = memmem(r->text, r->len, "</think>", 8);
        size_t after = (size_t)(end - r->text) + 8;
        fold_line(u, r, 0, after, false, r->shown);
        if (r->shown)
            wrap_at(u, r->text, to, to + tl, tw, w, ui_attr(UI_C_DIM));
        chat_page_add_line(u, L_BLANK, r->msg, 0);
        lay_answer(u, r, after, tw, w);
        return;
    }
    if (r->streaming && (r->think_open || (r->len && starts_think(r->text, r->len)))) {
        fold_line(u, r, 0, r->len, true, false);
        return;
    }
    lay_answer(u, r, 0, tw, w);
}

bool chat_page_has_think(const chat_page *u, const char *text, size_t len)
{
    size_t to, tl, ao;
    if (chat_template_is_harmony(chs_template(u->c))) {
        size_t n = harmony_spans(text, len, NULL, 0);
        harmony_span *sp = n ? malloc(n * sizeof *sp) : NULL;
        bool any = false;
        if (sp) {
            harmony_spans(text, len, sp, n);
            for (size_t i = 0; i < n && !any; i++)
                any = sp[i].analysis;
        }
        free(sp);
        return any;
    }
    return chat_think_split(text, len, &to, &tl, &ao);
}

bool chat_page_think_shown(const chat_page *u, uint64_t id)
{
    for (size_t k = 0; k < u->nthink; k++)
        if (u->think_ids[k] == id)
            return true;
    return false;
}

void chat_page_toggle_think(chat_page *u, size_t i)
{
    const chs_msg *m = chs_at(u->c, i);
    if (!chat_page_has_think(u, m->content, m->len)) {
        screen_message(u->s, "reply %zu has no thinking", i + 1);
        return;
    }
    for (size_t k = 0; k < u->nthink; k++)
        if (u->think_ids[k] == m->id) {
            u->think_ids[k] = u->think_ids[--u->nthink];
            screen_message(u->s, "reply %zu: thinking folded", i + 1);
            return;
        }
    if (chat_page_grow((void **)&u->think_ids, &u->capthink, u->nthink + 1, sizeof *u->think_ids)) {
        u->think_ids[u->nthink++] = m->id;
        screen_message(u->s, "reply %zu: thinking shown (t folds it)", i + 1);
    }
}
