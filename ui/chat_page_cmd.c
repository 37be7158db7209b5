/* chat_page: the input pane (the line editor of chat_input.h, Enter sends)
 * and the slash commands (see chat_page.h). */
#include "chat_page_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- commands ---- */

static const struct {
    const char *name, *args, *help;
} COMMANDS[] = {
    {"/system", "TEXT", "set the system prompt (empty: none)"},
    {"/clear", "", "forget the conversation (the system prompt stays)"},
    {"/regen", "", "generate the last reply again"},
    {"/edit", "", "edit the last message you sent, then Enter regenerates"},
    {"/set", "NAME VALUE", "temp, top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed, n_predict"},
    {"/show", "", "settings, template, context use"},
    {"/save", "FILE", "save the conversation and settings (JSON; ~/ is your home)"},
    {"/copy", "[N]", "copy the last reply, or message N (OSC 52 and a file)"},
    {"/mouse", "on|off", "off: the terminal's own selection works (m in the transcript too)"},
    {"/load", "FILE", "load a conversation saved with /save"},
    {"/template", "", "the template in use and the exact rendered prompt, special tokens highlighted"},
    {"/mode", "raw|chat", "raw: no template, the model continues the text (a base model); chat: the template"},
    {"/help", "", "keys and commands"},
    {"/quit", "", "leave ggscope"},
};
#define N_CMDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void show_pager(chat_page *u, const char *title, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void show_pager(chat_page *u, const char *title, const char *fmt, ...)
{
    char *t = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&t, fmt, ap);
    va_end(ap);
    if (n >= 0) {
        screen_pager(u->s, title, t, (size_t)n);
        free(t);
    }
}

static void chatcmd_show(chat_page *u)
{
    chs_settings st = chs_get_settings(u->c);
    uint32_t n_ctx = runner_n_ctx(u->core->r);
    show_pager(u, "Chat settings",
               "model        %s\n"
               "backend      %s\n"
               "mode         %s\n"
               "template     %s\n"
               "format       %s\n"
               "context      %u of %u positions used (%.0f%%); KV cache %.1f MiB\n"
               "messages     %zu\n"
               "system       %s\n"
               "\n"
               "temp            %g\n"
               "top_k           %d\n"
               "top_p           %g\n"
               "min_p           %g\n"
               "repeat_penalty  %g\n"
               "repeat_last_n   %d\n"
               "seed            %llu\n"
               "n_predict       %d\n"
               "\n/set NAME VALUE changes one.",
               u->path, chat_page_backend(u), chs_raw(u->c) ? "raw (no template: the model continues the text)" : "chat",
               chat_page_template_source(u), chs_format_status(u->c), u->ctx_used, n_ctx,
               n_ctx ? 100.0 * u->ctx_used / n_ctx : 0.0, runner_kv_bytes(u->core->r) / 1048576.0, chs_count(u->c),
               chs_system(u->c)[0] ? chs_system(u->c) : "(none)", st.sp.temp, st.sp.top_k, st.sp.top_p, st.sp.min_p,
               st.sp.repeat_penalty, st.sp.repeat_last_n, (unsigned long long)st.sp.seed, st.n_predict);
}

const char *chat_page_template_source(const chat_page *u)
{
    return chs_raw(u->c) ? "raw (no template)" : chs_template_source(u->c);
}

static void chatcmd_help(chat_page *u)
{
    char *t = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&t, &len);
    if (!m)
        return;
    fprintf(m, "Type a message and press Enter. Commands start with / (Tab completes):\n\n");
    for (size_t i = 0; i < N_CMDS; i++)
        fprintf(m, "  %-9s %-11s %s\n", COMMANDS[i].name, COMMANDS[i].args, COMMANDS[i].help);
    fprintf(m, "\nInput box:\n"
               "  Enter              send\n"
               "  Alt+Enter          new line (also Shift+Enter where the terminal sends it apart)\n"
               "  ↑ ↓                history (or move between lines of a multi-line message)\n"
               "  ← → Home End       move; Ctrl+A / Ctrl+E line start / end; Alt+B / Alt+F a word back / forward\n"
               "  Ctrl+U Ctrl+W Ctrl+K  clear; delete a word; delete to the end of the line\n"
               "  PgUp PgDn          scroll the transcript\n"
               "  Esc                stop the reply being generated\n"
               "  Tab                complete a /command; else focus the transcript\n"
               "  Ctrl+D             (empty box) quit;  Ctrl+C quits at any time\n"
               "  F2                 back to the explorer\n"
               "\nTranscript (Tab):\n");
    for (const panel_keyhelp *k = chat_page_tr_keys; k->key; k++)
        fprintf(m, "  %-20s %s\n", k->key, k->help);
    fprintf(m, "\nPasting (bracketed paste) keeps new lines in the message.\n");
    fclose(m);
    screen_pager(u->s, "Chat help", t, len);
    free(t);
}

static const struct {
    const char *name;
    double lo, hi;
    bool lo_open;        /* lo itself is out */
    const char *range;
} RANGES[] = {
    {"temp", 0, 1e30, false, ">= 0"},
    {"top_k", 0, 1 << 24, false, ">= 0 (0: all tokens)"},
    {"top_p", 0, 1, false, "in [0, 1]"},
    {"min_p", 0, 1, false, "in [0, 1]"},
    {"repeat_penalty", 0, 1e30, true, "> 0 (1: none)"},
};

int chat_page_check_setting(const char *name, double v, char *msg, size_t cap)
{
    for (size_t i = 0; i < sizeof RANGES / sizeof RANGES[0]; i++) {
        if (strcmp(name, RANGES[i].name))
            continue;
        if (!(v >= RANGES[i].lo) || (RANGES[i].lo_open && v == RANGES[i].lo) || v > RANGES[i].hi) {
            snprintf(msg, cap, "%s must be %s (got %g)", name, RANGES[i].range, v);
            return -1;
        }
    }
    return 0;
}

/* /copy [N]: the last reply, or message N (1 = the first). */
static void chatcmd_copy(chat_page *u, const char *arg)
{
    size_t n = chs_count(u->c);
    long i = -1;
    if (*arg) {
        char *end;
        long k = strtol(arg, &end, 10);
        if (*end || k < 1 || (size_t)k > n) {
            screen_message(u->s, "/copy N: N is a message number, 1 to %zu", n);
            return;
        }
        i = k - 1;
    } else {
        for (size_t k = n; k > 0 && i < 0; k--)
            if (!strcmp(chs_at(u->c, k - 1)->role, "assistant"))
                i = (long)k - 1;
        if (i < 0) {
            screen_message(u->s, "/copy: no reply yet");
            return;
        }
    }
    const chs_msg *m = chs_at(u->c, (size_t)i);
    char what[64];
    snprintf(what, sizeof what, "message %ld (%s)", i + 1, strcmp(m->role, "assistant") ? "yours" : "a reply");
    chat_page_copy(u, m->content, m->len, what);
}

static int run_command(chat_page *u, const char *line)
{
    char cmd[32];
    size_t k = 0;
    const char *p = line;
    while (*p && *p != ' ' && k + 1 < sizeof cmd)
        cmd[k++] = *p++;
    cmd[k] = 0;
    while (*p == ' ')
        p++;
    const char *arg = p;
    char msg[512];
    if (!strcmp(cmd, "/quit") || !strcmp(cmd, "/exit"))
        return PANEL_QUIT;
    if (!strcmp(cmd, "/help")) {
        chatcmd_help(u);
    } else if (!strcmp(cmd, "/copy")) {
        chatcmd_copy(u, arg);
    } else if (!strcmp(cmd, "/mouse")) {
        if (!strcmp(arg, "on") || !strcmp(arg, "off"))
            chat_page_set_mouse(u, !strcmp(arg, "on"));
        else
            screen_message(u->s, "/mouse on|off (now %s)", u->mouse_off ? "off" : "on");
    } else if (!strcmp(cmd, "/show")) {
        chatcmd_show(u);
    } else if (u->src && u->src->command && u->src->command(u->src_ctx, cmd, arg)) {
        chat_page_update_title(u);   /* remote chat: the source's own commands (/models NAME renames) */
    } else if (chat_page_busy(u) && strcmp(cmd, "/set")) {
        screen_message(u->s, "%s: wait for the %s to finish (Esc stops it)", cmd, chat_page_busy(u));
    } else if (!strcmp(cmd, "/template")) {
        chat_page_start_template(u);
    } else if (!strcmp(cmd, "/system")) {
        chs_set_system(u->c, arg);
        chat_page_measure(u);
        screen_message(u->s, *arg ? "system prompt set" : "system prompt removed");
    } else if (!strcmp(cmd, "/mode")) {
        if (!strcmp(arg, "raw") || !strcmp(arg, "chat")) {
            chs_set_raw(u->c, arg[0] == 'r');
            chat_page_measure(u);
            screen_message(u->s, "%s", arg[0] == 'r' ? "raw mode: no template; the model continues the text"
                                                      : "chat mode: the chat template");
        } else {
            screen_message(u->s, "/mode raw|chat (now %s)", chs_raw(u->c) ? "raw" : "chat");
        }
    } else if (!strcmp(cmd, "/clear")) {
        chs_clear(u->c);
        u->notice[0] = 0;
        u->sel_msg = -1;
        chat_page_measure(u);
        screen_message(u->s, "conversation cleared");
    } else if (!strcmp(cmd, "/regen")) {
        if (chs_pop_reply(u->c))
            chat_page_start_reply(u);
        else
            screen_message(u->s, "/regen: no message to answer");
    } else if (!strcmp(cmd, "/edit")) {
        char *t = chs_pop_user(u->c);
        if (!t) {
            screen_message(u->s, "/edit: no message of yours yet");
        } else {
            chat_page_set_input(u, t);
            free(t);
            chat_page_measure(u);
            screen_message(u->s, "edit the message; Enter sends it again");
        }
    } else if (!strcmp(cmd, "/set")) {
        char name[32];
        size_t n = 0;
        while (*arg && *arg != ' ' && n + 1 < sizeof name)
            name[n++] = *arg++;
        name[n] = 0;
        while (*arg == ' ')
            arg++;
        char *end;
        double v = strtod(arg, &end);
        if (!name[0]) {
            chatcmd_show(u);
        } else if (*arg && !*end && chat_page_check_setting(name, v, msg, sizeof msg)) {
            screen_message(u->s, "/set: %s", msg);
        } else if (chs_set(u->c, name, arg, msg, sizeof msg)) {
            screen_message(u->s, "/set: %s", msg);
        } else {
            screen_message(u->s, "%s = %s%s", name, arg, chat_page_busy(u) ? " (from the next reply)" : "");
        }
    } else if (!strcmp(cmd, "/save") || !strcmp(cmd, "/load")) {
        char path[1024];
        chat_page_expand(path, sizeof path, arg);   /* ~/x.json */
        if (!*arg) {
            screen_message(u->s, "%s FILE", cmd);
        } else if (cmd[1] == 's') {
            if (chs_save(u->c, path, msg, sizeof msg)) {   /* errors name FILE, not the temporary file */
                screen_message(u->s, "/save: %s", msg);
            } else {
                u->saved_sig = chat_page_sig(u);
                screen_message(u->s, "saved %zu messages to %s", chs_count(u->c), path);
            }
        } else {
            chat_page_start_load(u, path);
        }
    } else {
        screen_message(u->s, "unknown command %s (/help lists them)", cmd);
    }
    chat_page_update_title(u);
    return PANEL_HANDLED | PANEL_REDRAW;
}


/* the remote chat's source: its replies and its commands (/models) */
void chat_page_set_source(chat_page *u, const chat_source *src, void *ctx)
{
    u->src = src;
    u->src_ctx = ctx;
}

/* ---- input pane ---- */

/* The input box has as many rows as its text has lines (at most
 * INPUT_MAX_ROWS): a change lays the page out again. */
static void relayout_input(chat_page *u)
{
    int rows = chat_input_rows(&u->ed, INPUT_MAX_ROWS);
    if (rows != u->in_rows) {
        u->in_rows = rows;
        if (!u->s)
            return;
        panel *f = screen_focused(u->s);
        if (f && f->page == u->page)
            screen_focus(u->s, f);   /* lays the page out again */
    }
}

void chat_page_set_input(chat_page *u, const char *t)
{
    chat_input_set(&u->ed, t);
    relayout_input(u);
}

/* Commands matching the input's first word (only while it is a /word). */
static size_t completions(const chat_page *u, size_t *idx, size_t cap)
{
    if (!u->ed.len || u->ed.buf[0] != '/' || memchr(u->ed.buf, ' ', u->ed.len) || memchr(u->ed.buf, '\n', u->ed.len))
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < N_CMDS; i++)
        if (!strncmp(COMMANDS[i].name, u->ed.buf, u->ed.len) && n < cap)
            idx[n++] = i;
    return n;
}

static void complete(chat_page *u)
{
    size_t idx[N_CMDS];
    size_t n = completions(u, idx, N_CMDS);
    if (!n)
        return;
    /* the longest common prefix; a single match gets a space */
    const char *first = COMMANDS[idx[0]].name;
    size_t l = strlen(first);
    for (size_t i = 1; i < n; i++) {
        size_t k = 0;
        while (k < l && COMMANDS[idx[i]].name[k] == first[k])
            k++;
        l = k;
    }
    char t[40];
    snprintf(t, sizeof t, "%.*s%s", (int)l, first, n == 1 && COMMANDS[idx[0]].args[0] ? " " : "");
    chat_page_set_input(u, t);
}

static int submit(chat_page *u)
{
    if (!u->ed.len)
        return PANEL_HANDLED;
    char *t = strdup(u->ed.buf);
    if (!t)
        return PANEL_HANDLED;
    chat_page_history_add(u, t);   /* kept across runs */
    int r = PANEL_HANDLED | PANEL_REDRAW;
    if (t[0] == '/' && t[1] != '/') {
        chat_page_set_input(u, "");
        r |= run_command(u, t);
    } else if (chat_page_busy(u)) {
        screen_message(u->s, "a reply is being generated: Esc stops it");
    } else {
        const char *msg = t[0] == '/' ? t + 1 : t;   /* "//x" sends "/x" */
        chat_page_set_input(u, "");
        u->notice[0] = 0;
        chs_add(u->c, "user", msg, strlen(msg));
        chat_page_start_reply(u);
    }
    free(t);
    return r;
}

int chat_page_in_key(panel *p, int key)
{
    chat_page *u = p->self;
    if (!u->ed.pasting) {
        switch (key) {
        case '\n': return submit(u);
        case UIK_ESC:
            if (!chat_page_stop_reply(u) && u->ed.len == 0)
                screen_message(u->s, "Esc stops a reply; Ctrl+C or /quit leaves");
            return PANEL_HANDLED | PANEL_REDRAW;
        case '\t': {
            size_t idx[N_CMDS];
            if (completions(u, idx, N_CMDS))
                complete(u);
            else
                screen_focus(u->s, u->tr);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        case UIK_BTAB: screen_focus(u->s, u->tr); return PANEL_HANDLED | PANEL_REDRAW;
        case UIK_CTRL('d'):
            if (!u->ed.len)
                return PANEL_HANDLED | PANEL_QUIT;
            return PANEL_HANDLED | PANEL_REDRAW;
        case UIK_PGUP: case UIK_PGDN: chat_page_scroll_key(u, key); return PANEL_HANDLED | PANEL_REDRAW;
        case UIK_FN(KEY_F(2)): return chat_page_back(u);
        }
    }
    if (!chat_input_key(&u->ed, key))
        return PANEL_HANDLED;   /* swallowed: typing */
    relayout_input(u);
    return PANEL_HANDLED | PANEL_REDRAW;
}

void chat_page_in_draw(panel *p, WINDOW *w, bool focused)
{
    chat_page *u = p->self;
    char pp[160];
    chat_page_progress(u, pp, sizeof pp);
    if (pp[0])
        snprintf(pp + strlen(pp), sizeof pp - strlen(pp), " · Esc stops it");
    chat_input_draw(&u->ed, w, p->ih, p->iw, focused,
                    pp[0] ? pp : u->streaming ? "generating… Esc stops it" : "type a message · / for commands · Alt+Enter new line");
}

void chat_page_in_title(panel *p, char *buf, size_t cap)
{
    chat_page *u = p->self;
    size_t idx[N_CMDS];
    size_t n = completions(u, idx, N_CMDS);
    if (n) {
        size_t k = (size_t)snprintf(buf, cap, "Tab:");
        for (size_t i = 0; i < n && k < cap; i++)
            k += (size_t)snprintf(buf + k, cap - k, " %s%s%s", COMMANDS[idx[i]].name,
                                  n == 1 && COMMANDS[idx[i]].args[0] ? " " : "",
                                  n == 1 ? COMMANDS[idx[i]].args : "");
        if (n == 1 && k < cap)
            snprintf(buf + k, cap - k, " — %s", COMMANDS[idx[0]].help);
    } else if (u->ed.pasting) {
        snprintf(buf, cap, "pasting…");
    } else {
        buf[0] = 0;
    }
}

bool chat_page_in_typing(panel *p)
{
    (void)p;
    return true;
}

const char *chat_page_in_hints(panel *p)
{
    chat_page *u = p->self;
    return u->streaming ? "Esc stop  PgUp/PgDn scroll  Tab transcript" : "Enter send  Alt+Enter newline  / commands  ↑↓ history  Tab transcript  ^C quit";
}

const panel_keyhelp chat_page_in_keys[] = {
    {"Enter", "send the message (or run the /command)"},
    {"Alt+Enter", "new line (Shift+Enter too on terminals that send it apart)"},
    {"↑ ↓", "history of sent messages (between lines of a multi-line message: move)"},
    {"Tab", "complete a /command; else focus the transcript"},
    {"Esc", "stop the reply being generated"},
    {"PgUp PgDn", "scroll the transcript"},
    {"Ctrl+D", "quit (empty input)"},
    {"/help", "every command"},
    {NULL, NULL},
};

