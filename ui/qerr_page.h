/* qerr_page: the quantization error page of the screen — a sortable table of
 * tensors (or of the per-layer, per-role, whole-file aggregates, or of the
 * reasons tensors were skipped: `v` cycles), a layer x role heatmap on fixed
 * bands (SQNR in dB, the same bands as relative RMSE, or bits per weight: `m`
 * cycles), and the selected tensor's |error| histogram next to its value
 * histogram; `t` switches between the candidate types. The measurement runs
 * on a worker (engine/analysis/qerr.h) with progress and cancel; results
 * appear as they come. Loop thread only.
 *
 * How results cross threads: the page allocates the result array before the
 * job starts; the worker (qerr's on_result, serialized) writes slot n and then
 * publishes n+1 with a release store; the loop thread reads the count with an
 * acquire load and only reads slots below it. Slots are never written again. */
#ifndef GGSCOPE_QERR_PAGE_H
#define GGSCOPE_QERR_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "screen.h"

typedef struct qerr_page qerr_page;

/* Add the page (not shown yet) for `f`, measured against `parent` when not
 * NULL, else re-quantized to each of `types` (n_types of them, at most 32;
 * none: q4_K). Both files must outlive the page.
 * `jump(ctx, ti)` is called to show tensor ti in the explorer (Enter on a
 * row or a heatmap cell). NULL on allocation failure. */
qerr_page *qerr_page_new(screen *s, const gguf_file *f, const gguf_file *parent, const uint32_t *types,
                         size_t n_types, void (*jump)(void *ctx, uint64_t ti), void *ctx);

/* Show the page and start the measurement if it has not run yet. */
void qerr_page_show(qerr_page *q);

int qerr_page_id(const qerr_page *q);

/* Free the page's own state; after the screen's jobs have finished and the
 * screen is freed. Accepts NULL. */
void qerr_page_free(qerr_page *q);

#endif
