/* dump_views: the explorer's detail views as text or JSON for scripts
 * (`ggscope dump FILE TENSOR --hex|--values|--stats|--hist`). */
#ifndef GGSCOPE_DUMP_VIEWS_H
#define GGSCOPE_DUMP_VIEWS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gguf.h"

enum { DUMP_VIEW_HEX, DUMP_VIEW_VALUES, DUMP_VIEW_STATS, DUMP_VIEW_HIST };

typedef struct {
    int view;            /* DUMP_VIEW_* */
    uint64_t row_first;  /* rows of ne[0] elements: [row_first, row_first + row_count) */
    uint64_t row_count;
    bool json;
    uint32_t bins;       /* --hist: number of bins */
} dump_view_opts;

/* Print view `o->view` of tensor `t` of `f` to `out` (a remote file: the
 * rows up to the last one shown are read first). Returns an exit status. */
int dump_view(const gguf_file *f, const gguf_tensor *t, const dump_view_opts *o, FILE *out);

#endif
