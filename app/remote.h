/* remote: GGUF files over HTTP(S), for `info`, `dump` and the explorer.
 *
 * The reader (engine/gguf) opens a URL through a gguf_source whose reads are
 * HTTP range requests (app/http.c). The requests run on a network thread of
 * this module that drives its own libuv loop (curl's multi-socket interface);
 * readers (a command's main thread, the explorer's workers) wait for them in
 * http_fetch, never on that thread, so the explorer's loop keeps answering.
 *
 * Progress: a read goes out in requests of at most 4 MiB; one that takes
 * over 0.5 s shows "fetching NAME: x of y MiB" on stderr when it is a
 * terminal (not while the explorer owns the screen: remote_progress), updated
 * between the requests and within one as its body arrives (http's
 * on_progress, every 100 ms at most). At
 * exit, "ggscope: read 1.0 MiB of 2.1 GiB in 3 requests" goes to stderr when
 * it is a terminal or GGSCOPE_VERBOSE is set. GGSCOPE_NET_TIMEOUT (seconds,
 * default 30) ends a request that receives nothing for that long. */
#ifndef GGSCOPE_REMOTE_H
#define GGSCOPE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "gguf.h"

/* Open `url` (a split set's shard URLs too). Starts the network thread on
 * first use (stopped at exit). Returns NULL with *err set: the source's one
 * line (e.g. "the server ignores range requests ...") or the reader's error. */
gguf_file *remote_open(const char *url, gguf_error *err);

/* No progress lines on stderr while true (the explorer's screen is up). */
void remote_set_quiet(bool quiet);

/* The latest read's progress line ("fetching NAME: 1.2 MiB of 3.0 MiB"),
 * true while a read that has taken over 0.5 s runs (any thread: the
 * explorer polls it for its status line). */
bool remote_progress(char *buf, size_t cap);

#endif
