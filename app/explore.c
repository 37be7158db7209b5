/* The interactive explorer: a libuv loop that owns the terminal.
 *
 * Threads. The loop thread (this file's callbacks) is the only thread that
 * calls ncurses, the screen or a pane. Jobs (histograms, searches) run in
 * libuv's thread pool via uv_queue_work: their `work` writes only into its
 * own job struct and progress atomics, and wakes the loop with
 * uv_async_send; their `done` is called from the after_work callback, on
 * the loop thread, where results move into the panes. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "app.h"
#include "remote.h"
#include "clock.h"
#include "chat_ui.h"
#include "cliopt.h"
#include "info_mem.h"
#include "explorer.h"
#include "ggtype.h"
#include "qerr_page.h"
#include "rchat.h"
#include "screen.h"

typedef struct {
    uv_loop_t loop;
    uv_poll_t input;
    uv_signal_t sig_winch, sig_int, sig_term, sig_hup;
    uv_timer_t tick;
    uv_async_t wake;
    screen *scr;
    explorer *ex;
    chat_ui *chat;          /* the chat page, once opened */
    rchat *rchat;           /* the remote chat (chat --remote), NULL: none */
    const char *path;
    gguf_file *f;           /* the file, shared with the chat */
    qerr_page *qp;
    char qerr_err[1024];    /* the --vs file could not be opened: why */
    bool mem_busy;          /* `M`: an estimate on its way */
    struct chat_job *chat_job; /* `c`: the chat's engine being opened, or NULL */
    int chat_pct;           /* its progress last shown */
    char fetch_line[160];   /* the remote read's progress line last shown */
    uint64_t program_rss;   /* resident bytes before the screen: the program, as `info` measures it */
    bool quitting;
    bool exit_after_first;
    double t0;
    double first_frame_ms;
} app_state;

typedef struct {
    uv_work_t req;
    ui_job *job;
    app_state *app;
} work_req;

static void begin_quit(app_state *a);
static void chat_loading_tick(app_state *a);

static void close_if_done(app_state *a)
{
    if (a->quitting && screen_jobs_running(a->scr) == 0 && !uv_is_closing((uv_handle_t *)&a->wake)) {
        uv_close((uv_handle_t *)&a->wake, NULL);
        rchat_close(a->rchat);
    }
}

/* Draw if something changed; one doupdate per frame. */
static void frame(app_state *a)
{
    if (a->quitting)
        return;
    if (screen_render(a->scr) && a->first_frame_ms == 0) {
        a->first_frame_ms = (clock_now_s() * 1e3) - a->t0;
        if (a->exit_after_first)
            begin_quit(a);
    }
}

/* ---- jobs on libuv's pool ---- */

static void work_cb(uv_work_t *req)
{
    work_req *w = req->data;
    w->job->work(w->job);   /* worker thread: never touches ncurses */
}

static void after_work_cb(uv_work_t *req, int status)
{
    (void)status;
    work_req *w = req->data;
    app_state *a = w->app;
    screen_job_finished(a->scr, w->job);   /* loop thread: job->done runs here */
    free(w);
    close_if_done(a);
    frame(a);
}

static int runner_submit(void *ctx, ui_job *job)
{
    app_state *a = ctx;
    work_req *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    w->req.data = w;
    w->job = job;
    w->app = a;
    if (uv_queue_work(&a->loop, &w->req, work_cb, after_work_cb) != 0) {
        free(w);
        return -1;
    }
    return 0;
}

static void runner_wake(void *ctx)
{
    app_state *a = ctx;
    uv_async_send(&a->wake);   /* thread-safe; coalesces */
}

static void wake_cb(uv_async_t *h)
{
    app_state *a = h->data;
    screen_dirty(a->scr);   /* a progress bar moved */
    frame(a);
}

/* ---- input, signals, timer ---- */

static void input_cb(uv_poll_t *h, int status, int events)
{
    app_state *a = h->data;
    (void)events;
    if (status < 0) {
        begin_quit(a);
        return;
    }
    int flags = screen_drain_input(a->scr);
    if (flags & PANEL_QUIT) {
        begin_quit(a);
        return;
    }
    frame(a);
}

static void winch_cb(uv_signal_t *h, int sig)
{
    app_state *a = h->data;
    (void)sig;
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        screen_resize(a->scr, ws.ws_row, ws.ws_col);
    else
        screen_resize(a->scr, 0, 0);
    frame(a);
}

static void quit_cb(uv_signal_t *h, int sig)
{
    (void)sig;
    begin_quit(h->data);
}

static void tick_cb(uv_timer_t *h)
{
    app_state *a = h->data;
    char line[160];
    /* a remote read of over 0.5 s: its bytes so far on the status line */
    if (a->f && gguf_is_remote(a->f)) {
        if (!remote_progress(line, sizeof line))
            a->fetch_line[0] = 0;   /* the next read's line shows even if it reads the same */
        else if (strcmp(line, a->fetch_line)) {
            snprintf(a->fetch_line, sizeof a->fetch_line, "%s", line);
            screen_message(a->scr, "%s", line);
        }
    }
    chat_loading_tick(a);
    screen_tick(a->scr, 0);
    if (screen_jobs_running(a->scr))
        screen_dirty(a->scr);
    frame(a);
}

/* Bracketed paste on while a chat page exists (the chat keeps pasted new lines). */
static void bracketed_paste(bool on)
{
    const char *seq = on ? "\033[?2004h" : "\033[?2004l";
    ssize_t r = write(STDOUT_FILENO, seq, strlen(seq));
    (void)r;
}

/* `c` on the explorer: the chat page on the same file. The first `c` opens
 * the engine on a worker (binding, vocabulary, template, the weights' copy
 * into memory: nothing that reads the file runs on this thread); the page
 * appears when it is ready. */
typedef struct chat_job {
    ui_job job;   /* first: the job is the struct */
    chat_ui *chat;
    char err[512];
} chat_job_t;

static void chat_progress(void *ctx, uint64_t done, uint64_t total)
{
    ui_job_progress(ctx, done, total);
}

static void chat_work(ui_job *j)
{
    chat_job_t *c = (chat_job_t *)j;
    app_state *a = j->owner;
    chat_ui_opts co = {.eng = {.backend = "auto", .cancel = &j->cancel, .progress = chat_progress,
                               .progress_ctx = j}};
    c->chat = chat_ui_new(a->path, a->f, &co, true, c->err, sizeof c->err);
}

static void chat_done(ui_job *j)
{
    chat_job_t *c = (chat_job_t *)j;
    app_state *a = j->owner;
    a->chat_job = NULL;
    if (a->quitting || ui_job_cancelled(j)) {
        chat_ui_free(c->chat);
    } else if (!c->chat) {
        screen_message(a->scr, "chat: %s", c->err);
    } else if (chat_ui_attach(c->chat, a->scr, a->ex ? explorer_page(a->ex) : -1) < 0) {
        screen_message(a->scr, "chat: cannot add the page");
        chat_ui_free(c->chat);
    } else {
        a->chat = c->chat;
        bracketed_paste(true);
        chat_ui_show(a->chat);
        screen_message(a->scr, "chat: ready");
    }
    screen_dirty(a->scr);
    free(c);
}

/* While the chat's engine opens: its progress in the message line. */
static void chat_loading_message(app_state *a)
{
    double f = ui_job_fraction(&a->chat_job->job);
    a->chat_pct = (int)(f * 100);
    if (f > 0)
        screen_message(a->scr, "chat: loading the model… %d%%", (int)(f * 100));
    else
        screen_message(a->scr, "chat: loading the model…");
}

static void chat_loading_tick(app_state *a)
{
    if (a->chat_job && (int)(ui_job_fraction(&a->chat_job->job) * 100) != a->chat_pct)
        chat_loading_message(a);
}

static int key_chat(screen *s, int key, void *ctx)
{
    app_state *a = ctx;
    (void)key;
    if (a->chat) {
        chat_ui_show(a->chat);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    if (a->chat_job) {
        chat_loading_message(a);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    chat_job_t *c = calloc(1, sizeof *c);
    if (!c) {
        screen_message(s, "chat: out of memory");
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    ui_job_init(&c->job, chat_work, chat_done, a);
    a->chat_job = c;
    if (screen_submit(s, &c->job) != 0) {
        a->chat_job = NULL;
        free(c);
        screen_message(s, "chat: cannot start a worker");
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    if (a->chat_job)   /* without a runner the job ran already */
        chat_loading_message(a);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static void begin_quit(app_state *a)
{
    if (a->quitting)
        return;
    a->quitting = true;
    chat_ui_cancel(a->chat);
    rchat_cancel(a->rchat);
    screen_cancel_jobs(a->scr);
    uv_close((uv_handle_t *)&a->input, NULL);
    uv_close((uv_handle_t *)&a->sig_winch, NULL);
    uv_close((uv_handle_t *)&a->sig_int, NULL);
    uv_close((uv_handle_t *)&a->sig_term, NULL);
    uv_close((uv_handle_t *)&a->sig_hup, NULL);
    uv_close((uv_handle_t *)&a->tick, NULL);
    close_if_done(a);
}

/* ---- `M`: the memory estimate of running the model (on a worker: it binds
 * the model and reads the vocabulary) ---- */

typedef struct {
    ui_job job;   /* first: the job is the struct */
    info_mem mem;
    int rc;
    char err[1024];
} mem_job;

static void mem_work(ui_job *j)
{
    mem_job *m = (mem_job *)j;
    app_state *a = j->owner;
    info_mem_opts o = {.on = true, .program_rss = a->program_rss};
    m->rc = info_mem_estimate(a->f, &o, &m->mem, m->err, sizeof m->err);
}

static void mem_done(ui_job *j)
{
    mem_job *m = (mem_job *)j;
    app_state *a = j->owner;
    a->mem_busy = false;
    if (!a->quitting) {
        char line[512];
        if (m->rc == 0)
            info_mem_line(line, sizeof line, &m->mem);
        screen_message(a->scr, "%s", m->rc ? m->err : line);
    }
    free(m);
}

static int key_mem(screen *s, int key, void *ctx)
{
    (void)key;
    app_state *a = ctx;
    if (a->mem_busy)
        return PANEL_HANDLED;
    mem_job *m = calloc(1, sizeof *m);
    if (!m) {
        screen_message(s, "memory estimate: out of memory");
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    ui_job_init(&m->job, mem_work, mem_done, a);
    a->mem_busy = true;
    if (screen_submit(s, &m->job) != 0) {
        a->mem_busy = false;
        free(m);
        screen_message(s, "memory estimate: cannot start a worker");
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    if (a->mem_busy)   /* without a runner the job ran already */
        screen_message(s, "estimating the memory to run this model…");
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* ---- the quantization error page ---- */

static void qerr_jump(void *ctx, uint64_t ti)
{
    app_state *a = ctx;
    if (a->ex)
        explorer_reveal_tensor(a->ex, ti);
}

static int key_qerr(screen *s, int key, void *ctx)
{
    (void)key;
    app_state *a = ctx;
    if (a->qp)
        qerr_page_show(a->qp);
    else if (a->qerr_err[0])
        screen_message(s, "--vs: %s", a->qerr_err);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int key_explorer(screen *s, int key, void *ctx)
{
    (void)key;
    app_state *a = ctx;
    if (a->ex)
        screen_show_page(s, explorer_page(a->ex));
    return PANEL_HANDLED | PANEL_REDRAW;
}

int app_explore(const char *path, const app_explore_opts *opts)
{
    app_state a;
    memset(&a, 0, sizeof a);
    a.t0 = (clock_now_s() * 1e3);
    const char *env = getenv("GGSCOPE_EXIT_AFTER_FIRST_FRAME");
    a.exit_after_first = env && *env && strcmp(env, "0") != 0;
    a.rchat = opts ? opts->rchat : NULL;
    gguf_file *f = opts && opts->file ? gguf_retain(opts->file) : a.rchat ? NULL : app_open_any(path);
    if (!f && !a.rchat) {
        chat_ui_free(opts ? opts->chat : NULL);
        return APP_BADINPUT;
    }
    /* The parent of the qerr page, before any page: `qerr --tui` with a bad
     * one is bad input (one line, exit 2); in the explorer `e` says why. */
    gguf_file *parent = NULL;
    if (opts && opts->qerr_vs) {
        gguf_error pe;
        parent = gguf_open(opts->qerr_vs, &pe);
        if (!parent) {
            gguf_error_format(&pe, a.qerr_err, sizeof a.qerr_err);
            if (opts->qerr_open) {
                app_error("--vs: %s", a.qerr_err);
                chat_ui_free(opts->chat);
                gguf_close(f);
                return APP_BADINPUT;
            }
        }
    }
    if (uv_loop_init(&a.loop) != 0) {
        app_error("cannot start the event loop");
        chat_ui_free(opts ? opts->chat : NULL);
        rchat_free(a.rchat);
        gguf_close(f);
        return APP_FAIL;
    }
    screen_opts so = {.mono = opts && opts->mono, .mouse = !(opts && opts->no_mouse)};
    a.program_rss = info_mem_self_rss();
    bool remote = f && gguf_is_remote(f);   /* a URL: no chat or qerr page (they need the data in memory) */
    remote_set_quiet(true);            /* the screen is ncurses' */
    a.scr = screen_new(&so);
    if (!a.scr) {
        app_error("cannot initialise the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
        uv_loop_close(&a.loop);
        chat_ui_free(opts ? opts->chat : NULL);
        rchat_free(a.rchat);
        gguf_close(f);
        return APP_FAIL;
    }
    a.ex = f ? explorer_new(a.scr, f) : NULL;
    a.path = path;
    a.f = f;
    ui_runner r = {runner_submit, runner_wake, &a};
    screen_set_runner(a.scr, &r);
    if (a.ex && !remote)
        screen_bind(a.scr, &(screen_binding){'c', "c", "chat", "chat with the model of this file (F2 comes back)",
                                             explorer_page(a.ex), key_chat, &a});
    if (a.ex)   /* a remote file too: the estimate reads shapes only */
        screen_bind(a.scr, &(screen_binding){'M', "M", NULL, "the memory to run this model (its default context, "
                                             "the backend the chat would use; info --ctx for others)",
                                             explorer_page(a.ex), key_mem, &a});
    if (opts && opts->chat) {
        a.chat = opts->chat;
        if (chat_ui_attach(a.chat, a.scr, a.ex ? explorer_page(a.ex) : -1) >= 0) {
            bracketed_paste(true);
            chat_ui_show(a.chat);
        }
    }
    if (a.rchat && rchat_attach(a.rchat, &a.loop, a.scr) >= 0) {
        bracketed_paste(true);
        rchat_show(a.rchat);
    }
    if (a.qerr_err[0]) {   /* no silent fallback to re-quantization: `e` says why */
        screen_message(a.scr, "--vs: %s", a.qerr_err);
        const screen_binding eb = {'e', "e", "qerr", "quantization error (the --vs file cannot be opened)",
                                   a.ex ? explorer_page(a.ex) : -1, key_qerr, &a};
        if (a.ex)
            screen_bind(a.scr, &eb);
    }
    a.qp = a.ex && !a.qerr_err[0] && !remote ? qerr_page_new(a.scr, f, parent, opts ? opts->qerr_types : NULL,
                                                  opts ? opts->qerr_n_types : 0, qerr_jump, &a)
                                  : NULL;
    if (a.qp) {
        const screen_binding qb[] = {
            {'e', "e", "qerr", parent ? "quantization error against the parent (--vs)"
                                      : "quantization error: re-quantize to q4_K (or qerr --tui --types)",
             explorer_page(a.ex), key_qerr, &a},
            {'e', "e", "explorer", "back to the explorer", qerr_page_id(a.qp), key_explorer, &a},
        };
        for (size_t i = 0; i < sizeof qb / sizeof qb[0]; i++)
            screen_bind(a.scr, &qb[i]);
    }

    uv_poll_init(&a.loop, &a.input, STDIN_FILENO);
    uv_signal_init(&a.loop, &a.sig_winch);
    uv_signal_init(&a.loop, &a.sig_int);
    uv_signal_init(&a.loop, &a.sig_term);
    uv_signal_init(&a.loop, &a.sig_hup);
    uv_timer_init(&a.loop, &a.tick);
    uv_async_init(&a.loop, &a.wake, wake_cb);
    a.input.data = a.sig_winch.data = a.sig_int.data = a.sig_term.data = a.sig_hup.data = &a;
    a.tick.data = a.wake.data = &a;
    uv_poll_start(&a.input, UV_READABLE, input_cb);
    uv_signal_start(&a.sig_winch, winch_cb, SIGWINCH);
    uv_signal_start(&a.sig_int, quit_cb, SIGINT);
    uv_signal_start(&a.sig_term, quit_cb, SIGTERM);
    uv_signal_start(&a.sig_hup, quit_cb, SIGHUP);
    uv_timer_start(&a.tick, tick_cb, 100, 100);

    if (opts && opts->search && *opts->search && a.ex)
        explorer_search(a.ex, opts->search);
    if (opts && opts->qerr_open && a.qp)
        qerr_page_show(a.qp);   /* after uv_async_init: the job wakes the loop */
    frame(&a);
    /* the terminal may have changed size between exec and initscr */
    uv_run(&a.loop, UV_RUN_DEFAULT);

    explorer_free(a.ex);
    screen_free(a.scr);   /* endwin: the terminal is restored */
    remote_set_quiet(false);
    if (a.chat || a.rchat)
        bracketed_paste(false);
    char note[1400];
    chat_ui_autosave(a.chat, note, sizeof note);   /* an unsaved conversation is kept */
    if (a.rchat)
        rchat_autosave(a.rchat, note, sizeof note);
    if (note[0])
        fprintf(stderr, "ggscope: %s\n", note);
    chat_ui_free(a.chat);   /* after the screen: its panes are gone */
    rchat_free(a.rchat);
    qerr_page_free(a.qp);
    gguf_close(parent);
    int rc = uv_loop_close(&a.loop);
    (void)rc;
    gguf_close(f);
    if (a.exit_after_first)
        fprintf(stderr, "ggscope: first frame after %.2f ms\n", a.first_frame_ms);
    return APP_OK;
}

int cmd_explore(int argc, char **argv)
{
    app_explore_opts o = {0};
    const char *path = NULL;
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"mono", no_argument, 0, 'M'},
        {"no-mouse", no_argument, 0, 'N'}, {"search", required_argument, 0, 'S'},
        {"vs", required_argument, 0, 'V'}, {0, 0, 0, 0}};
    cliopt p;
    cliopt_init(&p, argc, argv, "h", lo);
    int c;
    while ((c = cliopt_next(&p)) != CLIOPT_END) {
        if ((c == 'S' || c == 'V') && !p.arg)
            c = CLIOPT_BAD; /* a value is missing */
        else if (c == CLIOPT_ARG && p.arg[0] == '-')
            c = CLIOPT_BAD, p.name = p.arg;
        switch (c) {
        case 'h':
            printf("usage: ggscope explore [FILE] [--mono] [--no-mouse] [--search TEXT]\n"
                   "                       [--vs PARENT]\n"
                   "\n"
                   "Open the full-screen explorer (metadata tree, tensor list, tensor detail with\n"
                   "hex, values and histogram views) on FILE, or on the built-in demo model.\n"
                   "`ggscope FILE` does the same when stdin and stdout are terminals.\n"
                   "\n"
                   "  --mono         no colours (also when NO_COLOR is set)\n"
                   "  --no-mouse     do not capture the mouse\n"
                   "  --search TEXT  start with a search for TEXT\n"
                   "  --vs PARENT    `e` shows the quantization error of FILE against PARENT\n"
                   "                 (without it, `e` re-quantizes FILE to q4_K)\n"
                   "\n"
                   "Press ? inside for every key.\n");
            return APP_OK;
        case 'M': o.mono = true; break;
        case 'N': o.no_mouse = true; break;
        case 'S': o.search = p.arg; break;
        case 'V': o.qerr_vs = p.arg; break;
        case CLIOPT_ARG:
            if (path) {
                app_error("explore: unexpected argument '%s' (one FILE only)", p.arg);
                return APP_BADINPUT;
            }
            path = p.arg;
            break;
        default: app_error("explore: unknown option '%s'", p.name); return APP_BADINPUT;
        }
    }
    if (!path)
        path = app_demo_path();
    if (!path)
        return APP_FAIL;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        app_error("explore: stdin and stdout must be a terminal (use `ggscope info` or `ggscope dump` in scripts)");
        return APP_BADINPUT;
    }
    return app_explore(path, &o);
}
