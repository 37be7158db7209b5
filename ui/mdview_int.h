/* mdview's internal header: what mdview.c (the layout) and mdview_stream.c
 * (the view, streaming) share (see mdview.h). Not for other modules. */
#ifndef GGSCOPE_MDVIEW_INT_H
#define GGSCOPE_MDVIEW_INT_H

#include "mdview.h"

typedef struct {
    uint32_t seg, nseg;
} mdline;

typedef struct {
    uint32_t off, len;   /* v->code */
    char lang[40];
} mdcode;

struct mdview {
    char *txt;
    size_t tlen, tcap;
    mdview_seg *segs;
    size_t nsegs, capsegs;
    mdline *lines;
    size_t nlines, caplines;
    char *code;          /* code blocks' raw text */
    size_t clen, ccap;
    mdcode *codes;
    size_t ncodes, capcodes;
    bool oom;
    uint64_t parsed;     /* bytes handed to the parser, ever */
    /* streaming: what is kept (the part of the text before done_src) */
    int width;
    size_t src_len;      /* the text's length at the last call */
    size_t done_src, done_txt, done_segs, done_lines, done_clen, done_codes;
    size_t scan;         /* the next line start to look at for a cut */
    bool in_fence;
    char fence_ch;
    size_t fence_n;
};

/* Lay out src[0..n) after the lines v holds (mdview.c). 0, or -1 when out
 * of memory. */
int mdview_parse(mdview *v, const char *src, size_t n, int width);

#endif
