/* Shared helpers of the ggscope command line. */
#ifndef GGSCOPE_APP_H
#define GGSCOPE_APP_H

#include <stdbool.h>
#include <stdio.h>

#include "afile.h"
#include "gguf.h"

/* Exit statuses: 0 ok, 1 runtime failure, 2 bad input file or bad usage. */
enum { APP_OK = 0, APP_FAIL = 1, APP_BADINPUT = 2 };

/* One subcommand: `ggscope NAME ARGS...`; argv[0] is the command name. */
typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} app_command;

/* Print "ggscope: MESSAGE" to stderr. */
void app_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- text from a file (names, keys, strings): escaped on output, see
 * engine/base/textesc.h and docs/gguf.md "Text from a file" ---- */

/* Write len bytes of file text to `out` in the terminal form (textesc_term;
 * flags TEXTESC_DQUOTE / TEXTESC_SQUOTE when shown inside quotes). */
void app_put_text(FILE *out, const char *s, size_t len, unsigned flags);

/* The terminal form of len bytes of file text in buf (capacity cap >= 8),
 * NUL-terminated; when it does not fit it ends with "…". Returns buf. */
char *app_text(char *buf, size_t cap, const char *s, size_t len);

/* A cJSON string item holding len bytes of file text in the JSON form (a raw
 * item: NULs and invalid bytes survive cJSON); NULL when out of memory. */
struct cJSON *app_json_text(const char *s, size_t len);

/* Open a GGUF file; on failure print the one-line error
 * ("FILE: offset N: what (expected)") and return NULL: the caller exits 2.
 * A URL is refused (this command needs the tensor data in memory). */
gguf_file *app_open_gguf(const char *path);
/* The same, and an http:// or https:// URL opens a remote file (app/remote.h:
 * tensor data read with gguf_tensor_read). For info, dump and the explorer. */
gguf_file *app_open_any(const char *path);

/* Path of the embedded demo model, writing it into the cache directory on
 * first use. NULL (message printed) on failure. */
const char *app_demo_path(void);

/* Whether stderr is a terminal (progress bars go there only when it is). */
bool app_stderr_is_tty(void);

/* Draw a progress bar on stderr: "label [#####     ] 45%". done/total. */
void app_progress(const char *label, double done, double total);
void app_progress_end(void);

/* Output files (app/outfile.c): every command that writes a file uses these.
 * app_out_open warns (one line) about stale temporary files that a killed
 * earlier write of `path` left, creates the temporary file (engine/base/afile.h)
 * and arms SIGINT/SIGTERM/SIGHUP to remove it. `what` names the file in
 * messages ("the quantized model"; NULL: just the path). Returns APP_OK, or
 * the exit status with the one-line message printed (APP_BADINPUT when the
 * folder does not exist or `path` exists and is not a regular file). One
 * output at a time. */
int app_out_open(afile *a, const char *path, const char *what);
/* Sync and rename into place, then disarm. APP_OK, or APP_FAIL with the
 * message printed (naming the final path and the cause) and the temporary
 * file removed. */
int app_out_commit(afile *a);
/* Remove the temporary file unless committed, disarm; accepts an afile that
 * app_out_open failed on or that was committed. */
void app_out_close(afile *a);
/* Print why writing a->path failed (one line: the final path and the cause). */
void app_out_error(const afile *a);
/* Whether `out` names the same file as the input or any of its shards
 * (message printed: the caller exits 2). */
bool app_out_is_input(const char *out, const gguf_file *in);

/* Options of the interactive explorer. */
typedef struct {
    bool mono;            /* no colours */
    bool no_mouse;        /* do not capture the mouse */
    const char *search;   /* start with this search (NULL: none) */
    struct chat_ui *chat; /* start on this chat page (app/chat_ui.h; the explorer frees it); NULL: explorer */
    const char *qerr_vs;  /* quantization error page: parent file (NULL: re-quantize) */
    const uint32_t *qerr_types;   /* quantization error page: candidate types (none: q4_K) */
    size_t qerr_n_types;
    bool qerr_open;       /* start on the quantization error page */
    gguf_file *file;      /* path, already opened (the chat's), or NULL: app_explore opens it */
} app_explore_opts;

/* Run the full-screen explorer on `path` (stdin/stdout must be terminals).
 * Returns an exit status (2 when the file cannot be opened). */
int app_explore(const char *path, const app_explore_opts *opts);

/* Subcommands (one file each: app/cmd_NAME.c). */
int cmd_info(int argc, char **argv);
int cmd_explore(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_qerr(int argc, char **argv);
int cmd_quantize(int argc, char **argv);

#endif
