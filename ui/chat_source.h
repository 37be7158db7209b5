/* chat_source: where the chat page's replies come from when not from the
 * engine: a remote server (app/rchat.c) behind function pointers, so that
 * ui/ knows nothing of HTTP or libuv (like job.h's ui_runner).
 *
 * A reply runs as the page's usual job: `begin` snapshots the conversation on
 * the loop thread, `generate` streams the reply on the job's worker into the
 * same sink chs_generate uses (the page's stats, Esc, /regen, /save... are
 * unchanged), `end` frees the snapshot. The conversation (the chs) has no
 * model: chs_new_detached. */
#ifndef GGSCOPE_CHAT_SOURCE_H
#define GGSCOPE_CHAT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chatsession.h"

typedef struct chat_source {
    /* Loop thread: a request for the next reply to c's messages (those not
     * dropped, the system prompt first) with c's settings. NULL with one
     * line in msg. */
    void *(*begin)(void *ctx, const chs *c, char *msg, size_t cap);
    /* The job's worker: stream the reply into sink (its cancel flag stops
     * it within ~20 ms) and fill *out. Returns 0 (also when cancelled), or
     * -1 with one line in msg (what was streamed before stays). */
    int (*generate)(void *ctx, void *req, const chs_sink *sink, chs_reply_stats *out, char *msg, size_t cap);
    /* Loop thread: free a request (after generate has returned). */
    void (*end)(void *ctx, void *req);
    /* Loop thread: the text of token id as the server sent it, in buf
     * (capacity cap, NUL-terminated); false when unknown. */
    bool (*piece)(void *ctx, int32_t id, char *buf, size_t cap);
    /* Loop thread: a slash command of the source's own ("/models"): true
     * when it took it (it shows its own messages). Optional. */
    bool (*command)(void *ctx, const char *name, const char *arg);
    /* The server's context size, 0 when unknown. Optional. */
    uint32_t (*n_ctx)(void *ctx);
    /* The line the inspector shows when a reply has no token
     * probabilities ("the server returned no token probabilities"). */
    const char *no_probs;
} chat_source;

#endif
