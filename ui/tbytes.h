/* tbytes: a tensor's bytes for the explorer's views. A mapped file hands out
 * pointers into the mapping; a remote file's bytes are read on a worker
 * (gguf_tensor_read: HTTP range requests through the reader's block cache)
 * into a window of whole 1 MiB blocks around what the view asked for, and
 * the view draws "fetching…" until they arrive (the screen redraws then).
 * Loop thread only. */
#ifndef GGSCOPE_TBYTES_H
#define GGSCOPE_TBYTES_H

#include <stdint.h>

#include "gguf.h"

typedef struct tbytes tbytes;
struct screen;

/* Bytes of the tensors of `f` (not owned) for a pane of `scr`. NULL when out
 * of memory. */
tbytes *tbytes_new(struct screen *scr, const gguf_file *f);

/* A read still running is cancelled and frees itself. NULL ok. */
void tbytes_free(tbytes *b);

/* Bytes [off, off + len) of tensor `ti`'s data (inside it): a pointer valid
 * until the next call, or NULL while they are read or after a failed read;
 * then *msg is the line to show ("fetching 1.0 MiB…" or the error). */
const uint8_t *tbytes_get(tbytes *b, int64_t ti, uint64_t off, uint64_t len, const char **msg);

#endif
