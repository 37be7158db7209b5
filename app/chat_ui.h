/* chat_ui: the chat page opened on a model file: the engine, tokenizer and
 * template opened (engine_cli.h), the conversation set up from the command
 * line, then handed to the page (ui/chat_page.h, where the threads are
 * described). Every function here runs on the loop thread. */
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
    bool raw;                 /* --raw: no template, the model continues the text */
    chat_template *tmpl;      /* --template / --format (chat_ui_template): taken by chat_ui_new; NULL: the model's */
    const char *tmpl_source;  /* ... and where it comes from */
} chat_ui_opts;

/* The chat template --template FILE (a Jinja file) or --format NAME (a
 * built-in format, chat_format_from_name) ask for, with the BOS / EOS texts
 * of model f; neither given: *out NULL and APP_OK. The template must render
 * a user message with a generation prompt without falling back. APP_OK with
 * *out and source ("FILE", "built-in Llama 3 (--format llama3)"), or
 * APP_BADINPUT with one line printed (the file missing or unreadable, an
 * unknown name with the known ones, a template that does not parse or
 * render). For `chat` and `run`. */
int chat_ui_template(const gguf_file *f, const char *file, const char *format, chat_template **out, char *source,
                     size_t cap);

typedef struct chat_ui chat_ui;

/* Load the model at `path` for chatting (engine, tokenizer, template), on
 * the already opened file f when not NULL (the explorer's: the chat becomes
 * one more owner, see gguf_retain). Errors are printed (ecli_open) when
 * `quiet` is false; otherwise the first line goes to err. NULL on failure. */
chat_ui *chat_ui_new(const char *path, gguf_file *f, const chat_ui_opts *o, bool quiet, char *err, size_t cap);

/* Add the chat page to `s`; `back_page` is the page F2 returns to (-1:
 * none). Returns the page id or -1. */
int chat_ui_attach(chat_ui *u, screen *s, int back_page);

/* Show the chat page with the input box focused. */
void chat_ui_show(chat_ui *u);

/* Stop the reply being generated, if any (quitting): the job's cancel flag
 * and session_cancel, so an evaluation stops between layers. */
void chat_ui_cancel(chat_ui *u);

/* Quitting, after the jobs have ended: the conversation, when it changed
 * since it was last saved or loaded, is saved under $XDG_STATE_HOME
 * (chat_page_autosave); `note` gets the line to print once the terminal is
 * restored ("" when nothing was saved). */
void chat_ui_autosave(chat_ui *u, char *note, size_t cap);

/* Free (after the screen's jobs have finished); accepts NULL. The panes
 * belong to the screen and must not be drawn after this. */
void chat_ui_free(chat_ui *u);

#endif
