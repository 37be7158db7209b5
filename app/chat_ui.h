/* chat_ui: the chat page of ggscope's screen (transcript, input box, token
 * inspector, commands), on the conversation logic of engine/chatsession.h.
 *
 * Threads: every function here runs on the loop thread. A reply is a ui_job
 * (screen_submit): its `work` runs chs_generate on a libuv pool thread, which
 * owns the engine session while it runs (the loop thread touches neither the
 * session nor the tokens it holds until the job's `done`). Tokens go from
 * the worker to the loop thread through a mutex-protected buffer in the job;
 * the worker wakes the loop (uv_async_send through the job's wake) at most
 * every 30 ms, so a fast model does not flood the UI. Esc sets the job's
 * cancel flag (and session_cancel): generation stops before the next token. */
#ifndef GGSCOPE_CHAT_UI_H
#define GGSCOPE_CHAT_UI_H

#include <stdbool.h>
#include <stddef.h>

#include "chatsession.h"
#include "engine_cli.h"
#include "screen.h"

typedef struct chat_ui_opts {
    ecli_opts eng;            /* backend, threads, n_ctx */
    const char *system;       /* system prompt (NULL: none) */
    bool have_settings;
    chs_settings settings;    /* when have_settings */
    unsigned delay_ms;        /* sleep after each token (tests; GGSCOPE_CHAT_DELAY_MS) */
    chs_file *session;        /* a session file read (--load): taken by chat_ui_new, NULL: none */
} chat_ui_opts;

typedef struct chat_ui chat_ui;

/* Load the model at `path` for chatting (engine, tokenizer, template).
 * Errors are printed (ecli_open) when `quiet` is false; otherwise the first
 * line goes to err. NULL on failure. */
chat_ui *chat_ui_new(const char *path, const chat_ui_opts *o, bool quiet, char *err, size_t cap);

/* Add the chat page to `s`; `back_page` is the page F2 returns to (-1:
 * none). Returns the page id or -1. */
int chat_ui_attach(chat_ui *u, screen *s, int back_page);

/* Show the chat page with the input box focused. */
void chat_ui_show(chat_ui *u);

/* Stop the reply being generated, if any (quitting): the job's cancel flag
 * and session_cancel, so an evaluation stops between layers. */
void chat_ui_cancel(chat_ui *u);

/* Free (after the screen's jobs have finished); accepts NULL. The panes
 * belong to the screen and must not be drawn after this. */
void chat_ui_free(chat_ui *u);

#endif
