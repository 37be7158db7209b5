/* chat_page's internal header: what chat_page.c, chat_page_transcript.c
 * and chat_page_cmd.c share (see chat_page.h). Not for other modules. */
#ifndef GGSCOPE_CHAT_PAGE_INT_H
#define GGSCOPE_CHAT_PAGE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat_input.h"
#include "chat_page.h"
#include "list.h"
#include "mdview.h"
#include "panel.h"
#include "screen.h"

#define INPUT_MAX_ROWS 6
#define INSPECTOR_ROWS 8

/* The engine and conversation, shared with helper threads (chat_page.c):
 * freed (release) when the last reference goes. */
typedef struct {
    atomic_int refs;
    chs *c;
    runner *r;
    void (*release)(void *ctx);
    void *ctx;
} chat_core;

/* What a job does (chat_page.c). */
enum { JOB_REPLY, JOB_TEMPLATE, JOB_LOAD, JOB_MEASURE };
typedef struct gen_job gen_job;

typedef struct {
    int kind;            /* L_* */
    int msg;             /* message index; -1 system; -2 the reply being generated */
    size_t off, len;     /* bytes of the message's text; L_MD: off is the line of the message's mdview */
    char info[160];      /* text of headers / info lines */
    attr_t a;
} tline;

enum { L_HEAD, L_TEXT, L_INFO, L_BLANK, L_MD };

/* Lines of wrapped text (chat_page_wrap): of message msg, attribute a,
 * offsets plus base. */
typedef struct {
    struct chat_page *u;
    int msg;
    attr_t a;
    int indent;
    size_t base;
} wrapctx;

/* An assistant reply to lay out (chat_page_lay_reply). */
typedef struct {
    int msg;                 /* message index, -2: the reply being streamed */
    const char *text;
    size_t len;
    const chs_tokinfo *toks; /* its tokens (count and time of the thinking); may be NULL */
    size_t ntoks;
    bool streaming;
    bool think_open;         /* the prompt opened a <think> block: the reply starts inside it */
    bool shown;              /* the thinking unfolded (t) */
    bool inspect;            /* the token inspector's reply: thinking shown, the answer as text */
    mdview **md;             /* where the answer's rendered view goes */
    size_t *md_from;         /* ... and the offset it was laid out from ((size_t)-1: none) */
} chat_reply_lay;

struct chat_page {
    chat_core *core;
    chs *c;               /* core->c */
    char path[1024];
    unsigned delay_ms;
    screen *s;
    int page, back_page;
    panel *tr, *in;
    gen_job *job;
    /* the reply being streamed (loop thread copy) */
    char *reply;
    size_t rlen, rcap;
    chs_tokinfo *rtok;
    size_t rntok, rcaptok;
    bool streaming;
    bool think_open;      /* the streamed reply's prompt ended in <think> */
    size_t smd_from;      /* the offset of the streamed reply smd was laid out from */
    long cursor_line;     /* the streamed reply's last line (the streaming cursor), -1: none */
    gen_job *measure;     /* the gauge's job (chat_page_measure), NULL: none */
    bool measure_after;   /* measure when the job ends (a conversation loaded) */
    uint32_t ctx_used;
    /* input */
    chat_input ed;
    int in_rows;          /* rows of the input box's text */
    /* transcript */
    tline *lines;
    size_t nlines, caplines;
    long top;             /* the first line shown (a list without a cursor: list.h) */
    int view_rows;        /* the lines shown, as last drawn */
    bool follow;
    bool inspector;
    long sel_msg;
    size_t sel_tok;
    bool reveal;
    bool tmpl_view;
    char *tmpl_text;
    size_t tmpl_len;
    uint32_t *tmpl_hl;   /* pairs of byte offsets of special tokens */
    size_t tmpl_nhl;
    char notice[256];
    char title[1024];
    /* u->lines as last laid out: what (LAY_*), for which width; lay_n
     * lines before the streamed reply */
    tline *tlines;        /* the template view's */
    size_t ntlines, captlines;
    int tmpl_w;           /* width tlines were laid out for (-1: none) */
    int lay_kind;
    int lay_w;
    size_t lay_n;
    char *lay_sys;        /* the system prompt laid out */
    struct {
        uint64_t id;      /* chs_msg.id */
        bool stats;
        size_t first;     /* its first line */
        bool raw;         /* laid out as its text (else rendered: md) */
        bool think;       /* its thinking unfolded */
        mdview *md;       /* a rendered reply's lines (owned) */
    } *lay_msg;           /* per message */
    size_t lay_nmsg, lay_capmsg;
    mdview *smd;          /* the streamed reply, rendered as it grows */
    uint64_t *raw_ids;    /* replies shown as their raw text (r), by chs_msg.id */
    size_t nraw, capraw;
    uint64_t *think_ids;  /* replies whose thinking is unfolded (t), by chs_msg.id */
    size_t nthink, capthink;
    size_t code_pick;     /* the code block c copies next */
    long code_msg;        /* ... of this message */
    bool mouse_off;
    uint64_t saved_sig;   /* the conversation as last saved or loaded (conv_sig) */
    char hist_path[1024]; /* the input history file ("": none) */
    char *reply_script;   /* GGSCOPE_CHAT_REPLY_FILE: a scripted reply (tests) */
    /* GGSCOPE_CHAT_STALL_LOG: the longest time the chat held the loop thread */
    char *stall_path;
    double stall_max, stall_cpu;   /* seconds: wall clock, thread CPU time */
    char stall_what[32];
};

enum { LAY_NONE = 0, LAY_TRANSCRIPT };

/* ---- chat_page.c ---- */

/* Make *p hold `need` elements of `elem` bytes (doubling). */
bool chat_page_grow(void **p, size_t *cap, size_t need, size_t elem);
/* Move what the reply's worker produced into the page's copy. */
void chat_page_pull(chat_page *u);
/* The page's title: model, context gauge, speed, what runs. */
void chat_page_update_title(chat_page *u);
/* Start a reply to the conversation as it is (unless a job runs). */
void chat_page_start_reply(chat_page *u);
/* Stop the job that runs; false when none does. */
bool chat_page_stop_reply(chat_page *u);
/* The job that runs ("reply", "/load", "/template"), NULL: none. */
const char *chat_page_busy(const chat_page *u);
/* /template: the prompt rendered and tokenized on a worker, shown when done. */
void chat_page_start_template(chat_page *u);
/* /load: the file read and checked on a worker, the conversation replaced when done. */
void chat_page_start_load(chat_page *u, const char *path);
/* F2: back to the page the chat was opened from. Returns PANEL_* flags. */
int chat_page_back(chat_page *u);
/* While the reply's prompt is evaluated: "prompt 96/512 tokens · 850
 * tok/s · 0.5 s left" into buf; else "". */
void chat_page_progress(chat_page *u, char *buf, size_t cap);
/* The context gauge after the conversation changed (/clear, /load, /edit,
 * /system, /mode): the tokens of its prompt as it now is, rendered and
 * tokenized on a worker (0 at once for an empty conversation). */
void chat_page_measure(chat_page *u);
/* What runs the model: the runner's backend line ("cpu, 3 threads"). */
const char *chat_page_backend(const chat_page *u);

/* ---- chat_page_transcript.c: the transcript pane ---- */

void chat_page_tr_draw(panel *p, WINDOW *w, bool focused);
int chat_page_tr_key(panel *p, int key);
void chat_page_tr_title(panel *p, char *buf, size_t cap);
int chat_page_tr_mouse(panel *p, int y, int x, int ev);
const char *chat_page_tr_hints(panel *p);
extern const panel_keyhelp chat_page_tr_keys[];
/* Scroll the transcript (or the /template view) by d lines, no longer
 * following the end. */
void chat_page_scroll(chat_page *u, int64_t d);
/* A scrolling key of list.h for the transcript (End / G: follow the end
 * again). Returns LIST_* flags. */
int chat_page_scroll_key(chat_page *u, int key);

/* The selected message for r / y / c: sel_msg, else the last reply; -1: none. */
long chat_page_selected(chat_page *u);
/* Layout helpers shared with chat_page_reason.c: word-wrapped text lines,
 * one line, a rendered view's lines. */
void chat_page_wrap(chat_page *u, const char *text, size_t len, int width, wrapctx *w);
tline *chat_page_add_line(chat_page *u, int kind, int msg, attr_t a);
void chat_page_md_lines(chat_page *u, const mdview *md, int msg);

/* ---- chat_page_reason.c: a reply with its reasoning folded ---- */

/* Lay out reply r for text width tw: the thinking (Harmony analysis
 * channel, or a <think> block) folded behind one line with its token count
 * and time unless r->shown or r->inspect; the answer rendered (r->md) or as
 * text; the stray leading space of the first piece not shown. */
void chat_page_lay_reply(chat_page *u, const chat_reply_lay *r, int tw, wrapctx *w);
/* Whether a reply's text holds thinking. */
bool chat_page_has_think(const chat_page *u, const char *text, size_t len);
/* Whether reply `id` has its thinking unfolded; t toggles message i's. */
bool chat_page_think_shown(const chat_page *u, uint64_t id);
void chat_page_toggle_think(chat_page *u, size_t i);

/* ---- chat_page_cmd.c: the input pane and the slash commands ---- */

void chat_page_in_draw(panel *p, WINDOW *w, bool focused);
int chat_page_in_key(panel *p, int key);
void chat_page_in_title(panel *p, char *buf, size_t cap);
const char *chat_page_in_hints(panel *p);
bool chat_page_in_typing(panel *p);
extern const panel_keyhelp chat_page_in_keys[];
/* Which template is in use: the model's own, a --template FILE, a
 * built-in format, or raw (no template). */
const char *chat_page_template_source(const chat_page *u);
/* Replace the input box's text (the box grows or shrinks with it). */
void chat_page_set_input(chat_page *u, const char *t);

/* ---- chat_page_state.c: files under $XDG_STATE_HOME, copying, the mouse ---- */

/* $XDG_STATE_HOME/ggscope[/sub] (else ~/.local/state/ggscope[/sub]),
 * created. 0, or -1 (buf then names the folder that failed). */
int chat_page_state_dir(char *buf, size_t cap, const char *sub);
/* `path` with a leading "~/" (or "~" alone) replaced by $HOME. */
void chat_page_expand(char *buf, size_t cap, const char *path);
/* Copy text: OSC 52 to the terminal (also wrapped for tmux's passthrough
 * when $TMUX is set) and the file fallback, named in the message. `what`:
 * "reply 3", "code block 1 of 2". */
void chat_page_copy(chat_page *u, const char *text, size_t len, const char *what);
/* Mouse reporting on or off (the terminal's own selection works when off). */
void chat_page_set_mouse(chat_page *u, bool on);
/* A fingerprint of the conversation (messages, system prompt). */
uint64_t chat_page_sig(const chat_page *u);
/* The input history file: loaded into u->ed; chat_page_history_add appends. */
void chat_page_history_load(chat_page *u);
void chat_page_history_add(chat_page *u, const char *t);

#endif
