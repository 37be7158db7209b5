/* rchat: the chat page against a remote OpenAI-compatible server
 * (`ggscope chat --remote URL`): llama-server, vLLM, Ollama.
 *
 * The conversation is a detached chs (engine/run/chatsession.h: the same
 * transcript, settings, /save and /load files as the local chat) and the
 * page is ui/chat_page's; replies come through the page's chat_source
 * (ui/chat_source.h): POST URL/v1/chat/completions with "stream": true,
 * read as server-sent events (oai.h) by app/http.h on the loop thread.
 *
 * Threads. The page runs a reply as its usual job: the job's worker hands the
 * request to the loop (uv_async_t) and waits on a condition variable, polling
 * the job's cancel flag every 10 ms; the loop thread runs the HTTP request,
 * parses the stream and feeds the page's sink (which takes its own lock and
 * wakes the loop at most every 30 ms). Esc: the worker sees the flag and asks
 * the loop to http_cancel the request (the connection is closed at once).
 * No thread blocks on the network. Token texts of the inspector (ids from the
 * server, or made up from the text when the server gives none) live here, on
 * the loop thread. */
#ifndef GGSCOPE_RCHAT_H
#define GGSCOPE_RCHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "chatsession.h"
#include "screen.h"

typedef struct {
    const char *url;           /* the server: http(s)://HOST:PORT[/v1] */
    const char *model;         /* NULL: the first of /v1/models */
    const char *api_key;       /* sent as "Authorization: Bearer KEY", never shown; NULL: none */
    const char *system;        /* system prompt, NULL: none */
    chs_settings settings;
    chs_file *session;         /* --load: taken (emptied), NULL: none */
    long timeout_ms;           /* no byte for this long ends a reply (0: 120 s) */
} rchat_opts;

typedef struct rchat rchat;

/* The conversation, and the server asked (on a loop of its own, before the
 * terminal is taken) for its models (--model defaults to the first) and, from
 * llama-server, its context size. A server that does not answer is not an
 * error here: the chat opens and each reply says why it failed. NULL with a
 * line in err when out of memory or the URL is not http(s). */
rchat *rchat_new(const rchat_opts *o, char *err, size_t cap);

/* On the app's loop and screen (loop thread): the HTTP client, the wake-up
 * handle and the chat page. Returns the page id or -1. */
int rchat_attach(rchat *r, uv_loop_t *loop, screen *s);

/* Show the page with the input box focused. NULL ok. */
void rchat_show(rchat *r);

/* Quitting: stop the reply (the job's cancel flag). NULL ok. */
void rchat_cancel(rchat *r);

/* Quitting, once the screen's jobs have ended: the HTTP client and the
 * wake-up handle are closed (the loop then runs out). Idempotent; NULL ok. */
void rchat_close(rchat *r);

/* After the loop: the conversation saved when it changed (chat_page_autosave);
 * note gets the line to print ("" when nothing was saved). */
void rchat_autosave(rchat *r, char *note, size_t cap);

/* Free (after rchat_close and the loop's end); NULL ok. */
void rchat_free(rchat *r);

#endif
