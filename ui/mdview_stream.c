/* mdview: the view and its streaming updates (see mdview.h); the layout is
 * mdview.c. */
#include "mdview_int.h"

#include <stdlib.h>
#include <string.h>

#define MIN_WIDTH 8

mdview *mdview_new(void)
{
    return calloc(1, sizeof(mdview));
}

void mdview_free(mdview *v)
{
    if (!v)
        return;
    free(v->txt);
    free(v->segs);
    free(v->lines);
    free(v->code);
    free(v->codes);
    free(v);
}

size_t mdview_lines(const mdview *v)
{
    return v->nlines;
}

const mdview_seg *mdview_line(const mdview *v, size_t i, size_t *n)
{
    *n = v->lines[i].nseg;
    return v->segs + v->lines[i].seg;
}

const char *mdview_text(const mdview *v)
{
    return v->txt ? v->txt : "";
}

size_t mdview_code_count(const mdview *v)
{
    return v->ncodes;
}

const char *mdview_code(const mdview *v, size_t i, size_t *len, const char **lang)
{
    if (i >= v->ncodes)
        return NULL;
    *len = v->codes[i].len;
    if (lang)
        *lang = v->codes[i].lang;
    return v->code + v->codes[i].off;
}

uint64_t mdview_parsed_bytes(const mdview *v)
{
    return v->parsed;
}

/* ---- streaming: where the finished part ends ---- */

/* Whether the line s[0..n) opens or closes a code fence (``` or ~~~ after
 * at most 3 spaces); its character and length. */
static bool fence(const char *s, size_t n, char *ch, size_t *len)
{
    size_t i = 0;
    while (i < n && i < 3 && s[i] == ' ')
        i++;
    if (i >= n || (s[i] != '`' && s[i] != '~'))
        return false;
    size_t k = i;
    while (k < n && s[k] == s[i])
        k++;
    if (k - i < 3)
        return false;
    *ch = s[i];
    *len = k - i;
    return true;
}

/* Look for cut points in the complete lines not yet looked at: the start
 * of a line that begins at column 0 with a character other than a space,
 * after a blank line, outside a code fence. Returns the last one (0: none). */
static size_t find_cut(mdview *v, const char *src, size_t n)
{
    size_t cut = 0;
    size_t p = v->scan;
    while (p < n) {
        const char *nl = memchr(src + p, '\n', n - p);
        if (!nl)
            break;
        size_t e = (size_t)(nl - src);
        char ch;
        size_t fl;
        bool blank_before = p >= 1 && (p == 1 || src[p - 2] == '\n') && src[p - 1] == '\n';
        if (!v->in_fence && blank_before && p > v->done_src && e > p && src[p] != ' ' && src[p] != '\t')
            cut = p;
        if (fence(src + p, e - p, &ch, &fl)) {
            if (!v->in_fence) {
                v->in_fence = true;
                v->fence_ch = ch;
                v->fence_n = fl;
            } else if (ch == v->fence_ch && fl >= v->fence_n) {
                v->in_fence = false;
            }
        }
        p = e + 1;
    }
    v->scan = p;
    return cut;
}

static void reset(mdview *v, int width)
{
    v->tlen = v->nsegs = v->nlines = v->clen = v->ncodes = 0;
    v->oom = false;
    v->width = width;
    v->src_len = 0;
    v->done_src = v->done_txt = v->done_segs = v->done_lines = v->done_clen = v->done_codes = 0;
    v->scan = 0;
    v->in_fence = false;
}

int mdview_render(mdview *v, const char *text, size_t len, int width)
{
    if (width < MIN_WIDTH)
        width = MIN_WIDTH;
    reset(v, width);
    int rc = mdview_parse(v, text, len, width);
    if (rc)
        reset(v, width);
    v->width = -1;   /* the next update starts again */
    return rc;
}

int mdview_update(mdview *v, const char *text, size_t len, int width)
{
    if (width < MIN_WIDTH)
        width = MIN_WIDTH;
    if (width != v->width || len < v->src_len)
        reset(v, width);
    v->src_len = len;
    size_t cut = find_cut(v, text, len);
    if (cut > v->done_src) {
        /* the blocks before the cut are finished: lay them out for good */
        v->tlen = v->done_txt, v->nsegs = v->done_segs, v->nlines = v->done_lines;
        v->clen = v->done_clen, v->ncodes = v->done_codes;
        if (mdview_parse(v, text + v->done_src, cut - v->done_src, width)) {
            reset(v, -1);
            return -1;
        }
        v->done_src = cut;
        v->done_txt = v->tlen, v->done_segs = v->nsegs, v->done_lines = v->nlines;
        v->done_clen = v->clen, v->done_codes = v->ncodes;
    }
    v->tlen = v->done_txt, v->nsegs = v->done_segs, v->nlines = v->done_lines;
    v->clen = v->done_clen, v->ncodes = v->done_codes;
    if (mdview_parse(v, text + v->done_src, len - v->done_src, width)) {
        reset(v, -1);
        return -1;
    }
    return 0;
}
