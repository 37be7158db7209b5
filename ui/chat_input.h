/* chat_input: the chat's line editor: a UTF-8 text with a cursor, the
 * history of sent messages, bracketed paste, and its drawing (hard-wrapped
 * rows with "› " in front). It knows nothing of the chat or the screen: the
 * chat page (chat_page.h) hands it the keys it does not use itself and reads
 * the text back; tests drive it directly.
 *
 * Threads: the loop thread only (like every pane). */
#ifndef GGSCOPE_CHAT_INPUT_H
#define GGSCOPE_CHAT_INPUT_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct chat_input {
    char *buf;            /* the text, NUL-terminated (after chat_input_init) */
    size_t len, cap;
    size_t cur;           /* the cursor: a byte offset at a character's start */
    bool pasting;         /* between UIK_PASTE_BEGIN and UIK_PASTE_END */
    char **hist;          /* sent messages, oldest first */
    size_t nhist;
    size_t hpos;          /* the history entry shown; nhist: the text being typed */
    char *hist_saved;     /* the text being typed while the history is browsed */
} chat_input;

/* Start empty. Returns 0, or -1 when out of memory (then chat_input_free). */
int chat_input_init(chat_input *in);

/* Free the text and the history; the struct can be initialised again. */
void chat_input_free(chat_input *in);

/* Replace the text with `t` (cursor at its end). */
void chat_input_set(chat_input *in, const char *t);

/* Insert n bytes at the cursor (cursor after them). */
void chat_input_insert(chat_input *in, const char *s, size_t n);

/* Append t to the history (unless it repeats the last entry) and stop
 * browsing it (the next ↑ shows t). */
void chat_input_history_add(chat_input *in, const char *t);

/* The history kept across runs: `path` holds one entry a line (a new line
 * in an entry is written \n, a backslash \\). _load adds its last
 * CHAT_INPUT_HIST_KEEP entries (a missing file: none; a file grown past
 * twice that is rewritten with them, atomically); _save appends t.
 * Return 0, or -1 (the file could not be read or written: the history
 * stays as it was). */
#define CHAT_INPUT_HIST_KEEP 1000
int chat_input_history_load(chat_input *in, const char *path);
int chat_input_history_save(chat_input *in, const char *path, const char *t);

/* An editing key: characters, Alt+Enter (a new line), Backspace, Delete,
 * ← → Home End Ctrl+A Ctrl+E, Ctrl+U (clear), Ctrl+W (delete a word),
 * Ctrl+K (delete to the end of the line), Alt+B Alt+F (a word back /
 * forward), ↑ ↓
 * (between lines of the text, else the history), the paste brackets; while
 * pasting every key (new lines and tabs are kept). Returns true when the
 * key was one of them (the text or the cursor may have changed). */
bool chat_input_key(chat_input *in, int key);

/* Lines of the text, at most `max`: the rows the input box wants. */
int chat_input_rows(const chat_input *in, int max);

/* Draw the text into w (rows x cols), the rows around the cursor; the
 * cursor in reverse video when focused; `placeholder` in dim when empty. */
void chat_input_draw(const chat_input *in, WINDOW *w, int rows, int cols, bool focused, const char *placeholder);

#endif
