/* chat_page: the chat page of ggscope's screen (transcript, input box, token
 * inspector, slash commands), on the conversation logic of
 * engine/run/chatsession.h. The caller opens the model and the conversation and
 * hands them over (chat_page_engine); the page never opens a file of its own
 * but /save and /load.
 *
 * Threads: every function here runs on the loop thread. A reply is a ui_job
 * (screen_submit): its `work` runs chs_generate on a libuv pool thread, which
 * owns the engine session while it runs (the loop thread touches neither the
 * session nor the tokens it holds until the job's `done`). Tokens go from
 * the worker to the loop thread through a mutex-protected buffer in the job;
 * the worker wakes the loop (uv_async_send through the job's wake) at most
 * every 30 ms, so a fast model does not flood the UI. Esc sets the job's
 * cancel flag (and runner_cancel): generation stops before the next token.
 *
 * The page is one module over several files: chat_page.c (the engine's
 * helper threads, the jobs, the page), chat_page_transcript.c (layout,
 * drawing and keys of the transcript and the token inspector),
 * chat_page_cmd.c (the input pane and the slash commands),
 * chat_page_state.c (files under $XDG_STATE_HOME: the input history, the
 * copy fallback, the conversation saved on quitting; OSC 52); they share
 * chat_page_int.h. The line editor is chat_input.h. */
#ifndef GGSCOPE_CHAT_PAGE_H
#define GGSCOPE_CHAT_PAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "chatsession.h"
#include "screen.h"
#include "runner.h"

/* What the page chats with. `release(ctx)` frees the conversation, the
 * session and whatever holds them; the page calls it once, after
 * chat_page_free and after the last helper thread reading the template or
 * the tokenizer has ended (never, when the process ends first). */
typedef struct {
    const char *path;            /* the model file (title, /show); copied */
    chs *c;                      /* the conversation */
    runner *r;                   /* c's runner: context size, KV cache, cancel, fallback notice */
    void (*release)(void *ctx);
    void *ctx;
    unsigned delay_ms;           /* sleep after each token (tests) */
} chat_page_engine;

typedef struct chat_page chat_page;

/* A chat page on e (taken: on failure, e->release has been called). Reads
 * $GGSCOPE_CHAT_STALL_LOG. NULL when out of memory. */
chat_page *chat_page_new(const chat_page_engine *e);

/* Add the page to `s`; `back_page` is the page F2 returns to (-1: none).
 * Returns the page id or -1. */
int chat_page_attach(chat_page *u, screen *s, int back_page);

/* Show the page with the input box focused. */
void chat_page_show(chat_page *u);

/* Stop the reply being generated, if any (quitting): the job's cancel flag
 * and runner_cancel, so an evaluation stops between layers. */
void chat_page_cancel(chat_page *u);

/* Quitting: when the conversation changed since it was last saved or
 * loaded, write it to $XDG_STATE_HOME/ggscope/sessions/chat-DATE-TIME-PID.json
 * (else ~/.local/state/...). Returns 1 (saved; msg says where), 0 (nothing
 * to save) or -1 (msg says why not). Call it after the jobs have ended. */
int chat_page_autosave(chat_page *u, char *msg, size_t cap);

/* The allowed range of a sampling setting (/set names: temp, top_k, top_p,
 * min_p, repeat_penalty): 0 when v is in it, else -1 with "NAME must be
 * RANGE (got V)" in msg. Other names: 0. */
int chat_page_check_setting(const char *name, double v, char *msg, size_t cap);

/* Token `id` as the token inspector shows it, in double quotes: escaped for
 * the terminal, '"' as \", a new line as ⏎ ("\"Hello\"", "\"⏎\""). */
void chat_page_token_text(const tok_vocab *v, int32_t id, char *buf, size_t cap);

/* Free (after the screen's jobs have finished); accepts NULL. The panes
 * belong to the screen and must not be drawn after this. */
void chat_page_free(chat_page *u);

#endif
