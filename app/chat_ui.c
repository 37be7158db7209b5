/* chat_ui: see chat_ui.h. */
#include "chat_ui.h"
#include "clock.h"
#include "textesc.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "app.h"

#define WAKE_INTERVAL_S 0.03   /* at most ~33 wake-ups of the loop per second */
#define INPUT_MAX_ROWS 6
#define INSPECTOR_ROWS 8

/* ---- the engine and conversation, shared with helper threads ----
 *
 * Rendering a template from the file and tokenizing a long conversation
 * cannot be interrupted half-way. They run on a helper thread of their own
 * (a `task`), which the job waits for while polling its cancel flag every
 * few ms: Esc or Ctrl+C ends the job at once and leaves the task to finish
 * alone. A task holds a reference on the `core` (engine + conversation: the
 * template and tokenizer it reads), so quitting frees the core only after
 * the last task has finished, or never when the process ends first. A task
 * works on copies (a chs_plan, a file's bytes): the loop thread may change
 * the conversation as soon as the job has ended. */
typedef struct {
    atomic_int refs;
    ecli_engine e;
    chs *c;
} chat_core;

static void core_release(chat_core *k)
{
    if (k && atomic_fetch_sub(&k->refs, 1) == 1) {
        chs_free(k->c);
        ecli_close(&k->e);
        free(k);
    }
}

enum { TASK_PLAN, TASK_LOAD };

typedef struct task {
    atomic_int refs;           /* the job and the thread */
    atomic_bool cancel;        /* polled by chs_plan_build between renders */
    chat_core *core;
    int kind;
    /* TASK_PLAN */
    chs_plan *plan;
    bool highlights;           /* also find the special tokens' byte ranges (/template) */
    uint32_t *hl;
    size_t nhl;
    /* TASK_LOAD */
    char *path;
    chs_settings base;
    chs_file file;
    char err[512];
    int rc;                    /* 0 done, 1 cancelled, -1 failed */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool finished;
} task;

static void task_release(task *t)
{
    if (t && atomic_fetch_sub(&t->refs, 1) == 1) {
        chs_plan_free(t->plan);
        free(t->hl);
        free(t->path);
        chs_file_free(&t->file);
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        core_release(t->core);
        free(t);
    }
}

/* Byte ranges of special tokens in the rendered prompt: with special tokens
 * parsed, every occurrence of a control token's text became that token, so
 * the k-th special token is the next occurrence of its text after the
 * previous one (a BOS added in front is not in the text: not found). */
static void find_highlights(task *t)
{
    size_t len, n;
    const char *text = chs_plan_text(t->plan, &len);
    const int32_t *ids = chs_plan_ids(t->plan, &n);
    const tok_vocab *v = chs_vocab(t->core->c);
    t->hl = calloc(2 * (n + 1), sizeof *t->hl);
    size_t off = 0;
    for (size_t i = 0; i < n && t->hl; i++) {
        if (atomic_load(&t->cancel))
            return;
        uint32_t at = tok_attr(v, ids[i]);
        size_t tl = 0;
        const char *tt = tok_text(v, ids[i], &tl);
        if (!(at & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN)) || !tt || !tl)
            continue;
        const char *hit = tl <= len - off ? memmem(text + off, len - off, tt, tl) : NULL;
        if (!hit)
            continue;
        size_t k = (size_t)(hit - text);
        t->hl[2 * t->nhl] = (uint32_t)k;
        t->hl[2 * t->nhl + 1] = (uint32_t)(k + tl);
        t->nhl++;
        off = k + tl;
    }
}

static void *task_main(void *arg)
{
    task *t = arg;
    int rc;
    if (t->kind == TASK_PLAN) {
        rc = chs_plan_build(t->plan, &t->cancel);
        if (rc < 0)
            snprintf(t->err, sizeof t->err, "%s", chs_plan_error(t->plan));
        else if (rc == 0 && t->highlights)
            find_highlights(t);
    } else {
        rc = chs_session_read(t->path, &t->base, &t->file, t->err, sizeof t->err);
    }
    pthread_mutex_lock(&t->mu);
    t->rc = rc;
    t->finished = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    task_release(t);
    return NULL;
}

static task *task_new(chat_core *k, int kind)
{
    task *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    atomic_init(&t->refs, 1);
    atomic_init(&t->cancel, false);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->kind = kind;
    atomic_fetch_add(&k->refs, 1);
    t->core = k;
    return t;
}

/* Worker: run t on a helper thread and wait for it, or for the job's cancel
 * flag (then the task is left to finish alone). 0 done, 1 cancelled, -1
 * failed (t->err). */
static int task_run(task *t, ui_job *j)
{
    pthread_attr_t at;
    pthread_t th;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    atomic_fetch_add(&t->refs, 1);
    if (pthread_create(&th, &at, task_main, t) != 0) {
        pthread_attr_destroy(&at);
        atomic_fetch_sub(&t->refs, 1);
        snprintf(t->err, sizeof t->err, "cannot start a thread");
        return -1;
    }
    pthread_attr_destroy(&at);
    pthread_mutex_lock(&t->mu);
    while (!t->finished && !atomic_load(&j->cancel)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 5 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
    bool fin = t->finished;
    pthread_mutex_unlock(&t->mu);
    if (!fin) {
        atomic_store(&t->cancel, true);
        return 1;
    }
    return t->rc;
}

/* ---- the jobs: a reply (prompt, then generation), /template, /load ---- */

enum { JOB_REPLY, JOB_TEMPLATE, JOB_LOAD };

typedef struct gen_job {
    ui_job job;
    struct chat_ui *u;
    int kind;
    chs *c;
    task *t;              /* the prompt or the file being read */
    chs_settings st;
    unsigned delay_ms;
    /* worker -> loop, under mu */
    pthread_mutex_t mu;
    int32_t *ids;         /* the prompt, once built */
    size_t n;
    char *text;
    size_t len, cap;
    chs_tokinfo *toks;
    size_t ntok, captok;
    size_t total;          /* bytes produced so far (worker side) */
    double last_wake;
    /* set by work, read in done */
    int prc;               /* the task: 0 done, 1 cancelled, -1 failed */
    chs_reply_stats rs;
    int rc;
    char err[512];
    char fallback[400];   /* the runner's notice: the device failed, the CPU took over */
} gen_job;
typedef struct {
    int kind;            /* L_* */
    int msg;             /* message index; -1 system; -2 the reply being generated */
    size_t off, len;     /* bytes of the message's text */
    char info[160];      /* text of headers / info lines */
    attr_t a;
} tline;

enum { L_HEAD, L_TEXT, L_INFO, L_BLANK };

struct chat_ui {
    chat_core *core;
    chs *c;               /* core->c */
    char path[1024];
    chat_ui_opts o;
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
    uint32_t ctx_used;
    /* input */
    char *buf;
    size_t len, cap, cur;
    bool pasting;
    char **hist;
    size_t nhist, hpos;
    char *hist_saved;
    int in_rows;
    /* transcript */
    tline *lines;
    size_t nlines, caplines;
    long top;
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
    char title[512];
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
    } *lay_msg;           /* per message */
    size_t lay_nmsg, lay_capmsg;
    /* GGSCOPE_CHAT_STALL_LOG: the longest time the chat held the loop thread */
    char *stall_path;
    double stall_max, stall_cpu;   /* seconds: wall clock, thread CPU time */
    char stall_what[32];
};

enum { LAY_NONE = 0, LAY_TRANSCRIPT };

/* The time the chat holds the loop thread, measured around each of its
 * entry points (keys, drawing, a job's end): the longest, in wall-clock time
 * and in the loop thread's CPU time (which a loaded machine does not
 * inflate), is written to $GGSCOPE_CHAT_STALL_LOG as
 * "max_stall_ms WALL cpu_ms CPU WHAT" (tests: the UI's responsiveness from
 * the inside). Removing the file starts a new measurement. */
typedef struct {
    double wall, cpu;
} stall_t;

static double cpu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static stall_t stall_begin(void)
{
    return (stall_t){clock_now_s(), cpu_now_s()};
}

static void stall_end(chat_ui *u, stall_t t0, const char *what)
{
    if (!u->stall_path)
        return;
    double d = clock_now_s() - t0.wall, c = cpu_now_s() - t0.cpu;
    if ((u->stall_max > 0 || u->stall_cpu > 0) && access(u->stall_path, F_OK) != 0)
        u->stall_max = u->stall_cpu = 0;   /* the file was removed: a new measurement */
    if (d <= u->stall_max && c <= u->stall_cpu)
        return;
    if (d > u->stall_max) {
        u->stall_max = d;
        snprintf(u->stall_what, sizeof u->stall_what, "%s", what);
    }
    if (c > u->stall_cpu)
        u->stall_cpu = c;
    FILE *fp = fopen(u->stall_path, "w");
    if (fp) {
        fprintf(fp, "max_stall_ms %.3f cpu_ms %.3f %s\n", u->stall_max * 1e3, u->stall_cpu * 1e3, u->stall_what);
        fclose(fp);
    }
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np)
        return false;
    *p = np;
    *cap = nc;
    return true;
}

/* worker thread: one token */
static void gen_on_token(void *ctx, const char *text, size_t len, const chs_tokinfo *ti)
{
    gen_job *g = ctx;
    pthread_mutex_lock(&g->mu);
    if (grow((void **)&g->text, &g->cap, g->len + len + 1, 1)) {
        memcpy(g->text + g->len, text, len);
        g->len += len;
    }
    if (ti->id >= 0 && grow((void **)&g->toks, &g->captok, g->ntok + 1, sizeof *g->toks)) {
        g->toks[g->ntok++] = *ti;
    } else if (ti->id < 0 && g->ntok) {
        g->toks[g->ntok - 1].len += (uint32_t)len;   /* flushed bytes of a split character */
    }
    g->total += len;
    pthread_mutex_unlock(&g->mu);
    double t = clock_now_s();
    if (t - g->last_wake >= WAKE_INTERVAL_S && g->job.wake) {
        g->last_wake = t;
        g->job.wake(g->job.wake_ctx);
    }
}

static void gen_work(ui_job *j)
{
    gen_job *g = (gen_job *)j;
    g->prc = task_run(g->t, j);
    if (g->prc)
        return;
    if (g->kind != JOB_REPLY)
        return;
    size_t n;
    int32_t *ids = chs_plan_take_ids(g->t->plan, &n);
    pthread_mutex_lock(&g->mu);
    g->ids = ids;
    g->n = n;
    pthread_mutex_unlock(&g->mu);
    if (g->job.wake)
        g->job.wake(g->job.wake_ctx);   /* the gauge: the prompt's size */
    chs_sink sk = {gen_on_token, g, &j->cancel, g->delay_ms};
    g->rc = chs_generate(g->c, ids, n, &g->st, &sk, &g->rs, g->err, sizeof g->err);
    runner_take_notice(g->t->core->e.r, g->fallback, sizeof g->fallback);   /* a device error, survived */
}

/* loop thread: move what the worker produced into the UI's copy */
static void pull(chat_ui *u)
{
    gen_job *g = u->job;
    if (!g || g->kind != JOB_REPLY)
        return;
    pthread_mutex_lock(&g->mu);
    if (g->len && grow((void **)&u->reply, &u->rcap, u->rlen + g->len + 1, 1)) {
        memcpy(u->reply + u->rlen, g->text, g->len);
        u->rlen += g->len;
        u->reply[u->rlen] = 0;
        g->len = 0;
    }
    if (g->ntok && grow((void **)&u->rtok, &u->rcaptok, u->rntok + g->ntok, sizeof *u->rtok)) {
        /* a token whose flushed bytes came after it was pulled */
        memcpy(u->rtok + u->rntok, g->toks, g->ntok * sizeof *g->toks);
        u->rntok += g->ntok;
        g->ntok = 0;
    }
    if (u->rntok && g->total > 0) {
        chs_tokinfo *last = &u->rtok[u->rntok - 1];
        if (last->off + last->len < g->total)
            last->len = (uint32_t)(g->total - last->off);
    }
    size_t n = g->n;
    pthread_mutex_unlock(&g->mu);
    u->ctx_used = (uint32_t)(n + u->rntok);
}

static void update_title(chat_ui *u);

static const char *stop_name(chs_stop s)
{
    switch (s) {
    case CHS_STOP_EOG: return "end of turn";
    case CHS_STOP_LIMIT: return "n_predict reached";
    case CHS_STOP_CTX: return "context full";
    case CHS_STOP_CANCEL: return "stopped";
    default: return "error";
    }
}

static void reply_done(chat_ui *u, gen_job *g)
{
    if (g->prc == 1) {
        screen_message(u->s, "stopped while the prompt was being built (Esc)");
        return;
    }
    if (g->prc < 0) {
        screen_message(u->s, "%s", g->t->err);
        return;
    }
    unsigned dropped = 0;
    chs_plan_apply(u->c, g->t->plan, &dropped);   /* the transcript cannot change while a job runs */
    if (dropped)
        snprintf(u->notice, sizeof u->notice,
                 "context full: the %u oldest message%s (greyed) no longer reach%s the model; the system prompt is kept",
                 dropped, dropped == 1 ? "" : "s", dropped == 1 ? "es" : "");
    if (g->fallback[0])
        snprintf(u->notice, sizeof u->notice, "%.250s", g->fallback);
    if (g->rc)
        screen_message(u->s, "generation failed: %s", g->err);
    if (g->rc == 0 || u->rlen) {
        if (chs_add_reply(u->c, u->reply ? u->reply : "", u->rlen, u->rtok, u->rntok, &g->rs))
            screen_message(u->s, "out of memory");
        else if (g->rs.stop == CHS_STOP_CANCEL)
            screen_message(u->s, "reply stopped (Esc): %u tokens kept", g->rs.n_gen);
        else if (g->rs.stop == CHS_STOP_CTX)
            screen_message(u->s, "the context is full: the next message drops the oldest turns");
    }
}

static void template_done(chat_ui *u, gen_job *g)
{
    if (g->prc == 1) {
        screen_message(u->s, "/template: stopped (Esc)");
        return;
    }
    if (g->prc < 0) {
        screen_message(u->s, "/template: %s", g->t->err);
        return;
    }
    task *t = g->t;
    size_t len, n;
    const char *text = chs_plan_text(t->plan, &len);
    chs_plan_ids(t->plan, &n);
    char *copy = malloc(len + 1);
    if (!copy) {
        screen_message(u->s, "out of memory");
        return;
    }
    memcpy(copy, text, len + 1);
    free(u->tmpl_text);
    free(u->tmpl_hl);
    u->tmpl_text = copy;
    u->tmpl_len = len;
    u->tmpl_hl = t->hl;
    u->tmpl_nhl = t->hl ? t->nhl : 0;
    t->hl = NULL;
    u->tmpl_view = true;
    u->tmpl_w = -1;
    u->top = 0;
    screen_focus(u->s, u->tr);
    screen_message(u->s, "%zu tokens, %zu special; Esc returns", n, u->tmpl_nhl);
}

static void load_done(chat_ui *u, gen_job *g)
{
    if (g->prc == 1) {
        screen_message(u->s, "/load: stopped (Esc)");
        return;
    }
    if (g->prc < 0) {
        screen_message(u->s, "/load: %s", g->t->err);
        return;
    }
    chs_load_file(u->c, &g->t->file);
    u->notice[0] = 0;
    u->sel_msg = -1;
    u->follow = true;
    screen_message(u->s, "loaded %zu messages from %s", chs_count(u->c), g->t->path);
}

static void gen_done(ui_job *j)
{
    gen_job *g = (gen_job *)j;
    chat_ui *u = g->u;
    stall_t t0 = stall_begin();
    pull(u);
    u->job = NULL;
    u->streaming = false;
    if (g->kind == JOB_REPLY)
        reply_done(u, g);
    else if (g->kind == JOB_TEMPLATE)
        template_done(u, g);
    else
        load_done(u, g);
    u->rlen = 0;
    u->rntok = 0;
    u->ctx_used = (uint32_t)chs_held(u->c);
    update_title(u);
    screen_dirty(u->s);
    task_release(g->t);
    pthread_mutex_destroy(&g->mu);
    free(g->text);
    free(g->toks);
    free(g->ids);
    free(g);
    stall_end(u, t0, "job done");
}

/* Start a job of `kind` on task t (taken). */
static bool start_job(chat_ui *u, int kind, task *t)
{
    gen_job *g = calloc(1, sizeof *g);
    if (!g) {
        task_release(t);
        screen_message(u->s, "out of memory");
        return false;
    }
    pthread_mutex_init(&g->mu, NULL);
    g->u = u;
    g->kind = kind;
    g->c = u->c;
    g->t = t;
    g->st = chs_get_settings(u->c);
    g->delay_ms = u->o.delay_ms;
    ui_job_init(&g->job, gen_work, gen_done, u);
    u->job = g;
    if (kind == JOB_REPLY) {
        u->streaming = true;
        u->rlen = 0;
        u->rntok = 0;
        u->follow = true;
    }
    if (screen_submit(u->s, &g->job) != 0) {
        u->job = NULL;
        u->streaming = false;
        task_release(t);
        pthread_mutex_destroy(&g->mu);
        free(g);
        screen_message(u->s, "cannot start the worker");
        return false;
    }
    update_title(u);
    return true;
}

/* A plan of the conversation as it is now, on a task. */
static task *plan_task(chat_ui *u, bool fit)
{
    char msg[512];
    chs_plan *p = chs_plan_new(u->c, fit, msg, sizeof msg);
    if (!p) {
        screen_message(u->s, "%s", msg);
        return NULL;
    }
    task *t = task_new(u->core, TASK_PLAN);
    if (!t) {
        chs_plan_free(p);
        screen_message(u->s, "out of memory");
        return NULL;
    }
    t->plan = p;
    return t;
}

static void start_reply(chat_ui *u)
{
    if (u->job)
        return;
    task *t = plan_task(u, true);
    if (t)
        start_job(u, JOB_REPLY, t);
}

static bool stop_reply(chat_ui *u)
{
    if (!u->job)
        return false;
    ui_job_cancel(&u->job->job);
    runner_cancel(u->core->e.r);   /* stops an evaluation between layers */
    return true;
}

/* ---- status line ---- */

static void update_title(chat_ui *u)
{
    uint32_t n_ctx = runner_n_ctx(u->core->e.r);
    uint32_t used = u->ctx_used;
    char gauge[64];
    int cells = 10, full = n_ctx ? (int)((uint64_t)used * cells / n_ctx) : 0;
    size_t k = 0;
    for (int i = 0; i < cells; i++) {
        const char *g = i < full ? "\xe2\x96\x88" : "\xe2\x96\x91";   /* █ ░ */
        memcpy(gauge + k, g, 3);
        k += 3;
    }
    gauge[k] = 0;
    const char *base = strrchr(u->path, '/');
    base = base ? base + 1 : u->path;
    char speed[128] = "";
    size_t n = chs_count(u->c);
    for (size_t i = n; i > 0; i--) {
        const chs_msg *m = chs_at(u->c, i - 1);
        if (m->has_stats) {
            snprintf(speed, sizeof speed, " · %.1f tok/s · first %.0f ms",
                     m->st.t_gen_s > 0 ? (m->st.n_gen > 1 ? (m->st.n_gen - 1) / m->st.t_gen_s : 0) : 0,
                     m->st.t_first_s * 1e3);
            break;
        }
    }
    const char *fmt = chs_format_status(u->c);
    if (!strncmp(fmt, "chat format: ", 13))
        fmt += 13;
    const char *state = "";
    if (u->job && u->job->kind == JOB_REPLY) {
        pthread_mutex_lock(&u->job->mu);
        state = u->job->ids ? " · generating… Esc stops" : " · building the prompt… Esc stops";
        pthread_mutex_unlock(&u->job->mu);
    } else if (u->job) {
        state = u->job->kind == JOB_LOAD ? " · loading… Esc stops" : " · rendering /template… Esc stops";
    }
    snprintf(u->title, sizeof u->title, " chat · %.60s · ctx %s %u/%u%s%s · %.200s", base, gauge, used, n_ctx, speed,
             state, fmt);
    screen_set_title(u->s, u->page, u->title);
}

/* ---- text layout ---- */

static size_t u8len(unsigned char c)
{
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

typedef void (*span_fn)(void *ctx, size_t off, size_t len);

/* Word-wrap text[0..len) to `width` columns: each line as (off, len). */
static void wrap(const char *text, size_t len, int width, span_fn fn, void *ctx)
{
    if (width < 1)
        width = 1;
    size_t i = 0;
    if (len == 0) {
        fn(ctx, 0, 0);
        return;
    }
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        if (e == i)
            fn(ctx, i, 0);
        size_t s = i;
        while (s < e) {
            int col = 0;
            size_t p = s, lastsp = 0;
            while (p < e) {
                unsigned char ch = (unsigned char)text[p];
                size_t cl = u8len(ch);
                if (p + cl > e)
                    cl = e - p;
                int w = ch >= 0x20 && ch < 0x7f ? 1 : ui_width(text + p, cl);   /* ASCII: one column */
                if (col + w > width)
                    break;
                col += w;
                p += cl;
                if (text[p - 1] == ' ')
                    lastsp = p;
            }
            if (p < e && lastsp > s)
                p = lastsp;
            if (p == s)
                p = s + u8len((unsigned char)text[s]) > e ? e : s + u8len((unsigned char)text[s]);
            fn(ctx, s, p - s);
            s = p;
        }
        i = e + 1;
    }
}

typedef struct {
    chat_ui *u;
    int msg;
    attr_t a;
    int indent;
} wrapctx;

static tline *add_line(chat_ui *u, int kind, int msg, attr_t a)
{
    if (!grow((void **)&u->lines, &u->caplines, u->nlines + 1, sizeof *u->lines))
        return NULL;
    tline *l = &u->lines[u->nlines++];
    l->kind = kind;
    l->msg = msg;
    l->off = l->len = 0;
    l->info[0] = 0;
    l->a = a;
    return l;
}

static void text_span(void *ctx, size_t off, size_t len)
{
    wrapctx *w = ctx;
    tline *l = add_line(w->u, L_TEXT, w->msg, w->a);
    if (l) {
        l->off = off;
        l->len = len;
    }
}

static const char *msg_text(chat_ui *u, int msg, size_t *len)
{
    if (msg == -1) {
        *len = strlen(chs_system(u->c));
        return chs_system(u->c);
    }
    if (msg == -2) {
        *len = u->rlen;
        return u->reply ? u->reply : "";
    }
    const chs_msg *m = chs_at(u->c, (size_t)msg);
    *len = m->len;
    return m->content;
}

/* The transcript's lines. A message's lines are laid out once per width:
 * when the transcript changes, the messages before the first one that
 * differs (by id and figures) keep theirs, so a reply added to a long
 * conversation costs its own lines only. Whether a message is dropped is
 * applied when drawing. The reply being streamed and the notice are added
 * each time. */
static void layout_lines(chat_ui *u, int width)
{
    int tw = width - 2;
    wrapctx w = {u, 0, 0, 2};
    tline *l;
    size_t n = chs_count(u->c);
    size_t from = 0;   /* the first message laid out again */
    bool same_sys = u->lay_sys && !strcmp(u->lay_sys, chs_system(u->c));
    if (u->lay_kind == LAY_TRANSCRIPT && u->lay_w == width && same_sys) {
        while (from < n && from < u->lay_nmsg && u->lay_msg[from].id == chs_at(u->c, from)->id &&
               u->lay_msg[from].stats == chs_at(u->c, from)->has_stats)
            from++;
        if (from == n && from == u->lay_nmsg) {
            u->nlines = u->lay_n;
            goto tail;
        }
        u->nlines = from < u->lay_nmsg ? u->lay_msg[from].first : u->lay_n;
    } else {
        u->nlines = 0;
        free(u->lay_sys);
        u->lay_sys = strdup(chs_system(u->c));
        if (chs_system(u->c)[0]) {
            l = add_line(u, L_HEAD, -1, ui_attr(UI_C_GROUP) | A_BOLD);
            if (l)
                snprintf(l->info, sizeof l->info, "\xe2\x96\x8c system");
            w.msg = -1;
            w.a = ui_attr(UI_C_DIM);
            size_t len;
            const char *t = msg_text(u, -1, &len);
            wrap(t, len, tw, text_span, &w);
            add_line(u, L_BLANK, -1, 0);
        }
    }
    if (!grow((void **)&u->lay_msg, &u->lay_capmsg, n + 1, sizeof *u->lay_msg)) {
        u->lay_kind = LAY_NONE;
        return;
    }
    for (size_t i = from; i < n; i++) {
        const chs_msg *m = chs_at(u->c, i);
        bool user = !strcmp(m->role, "user");
        u->lay_msg[i].id = m->id;
        u->lay_msg[i].stats = m->has_stats;
        u->lay_msg[i].first = u->nlines;
        l = add_line(u, L_HEAD, (int)i, ui_attr(user ? UI_C_KEY : UI_C_NUMBER) | A_BOLD);
        if (l)
            snprintf(l->info, sizeof l->info, "\xe2\x96\x8c %s", user ? "you" : "assistant");
        w.msg = (int)i;
        w.a = ui_attr(UI_C_NORMAL);
        wrap(m->content, m->len, tw, text_span, &w);
        if (m->has_stats) {
            l = add_line(u, L_INFO, (int)i, ui_attr(UI_C_DIM));
            const chs_reply_stats *st = &m->st;
            double tps = st->n_gen > 1 && st->t_gen_s > 0 ? (st->n_gen - 1) / st->t_gen_s : 0;
            if (l)
                snprintf(l->info, sizeof l->info,
                         "%u tokens · %s · %.1f tok/s · first token %.0f ms · prompt %u tokens: %u reused, %u evaluated",
                         st->n_gen, stop_name(st->stop), tps, st->t_first_s * 1e3, st->n_prompt, st->n_reused,
                         st->n_eval);
        }
        add_line(u, L_BLANK, (int)i, 0);
    }
    u->lay_nmsg = n;
    u->lay_kind = LAY_TRANSCRIPT;
    u->lay_w = width;
    u->lay_n = u->nlines;
tail:
    if (u->streaming) {
        l = add_line(u, L_HEAD, -2, ui_attr(UI_C_NUMBER) | A_BOLD);
        if (l)
            snprintf(l->info, sizeof l->info, "\xe2\x96\x8c assistant  generating… (Esc stops)");
        w.msg = -2;
        w.a = ui_attr(UI_C_NORMAL);
        wrap(u->reply ? u->reply : "", u->rlen, tw, text_span, &w);
    }
    if (u->notice[0]) {
        l = add_line(u, L_INFO, -3, ui_attr(UI_C_ERROR));
        if (l)
            snprintf(l->info, sizeof l->info, "%.150s", u->notice);
    }
}

/* Draw text[a..b) at (y, x) with bytes inside [hs, he) in attribute ha. */
static int put_hl(WINDOW *w, int y, int x, int maxcols, const char *text, size_t a, size_t b, size_t hs,
                  size_t he, attr_t na, attr_t ha)
{
    int used = 0;
    size_t p = a;
    while (p < b && used < maxcols) {
        size_t q;
        attr_t at;
        if (p >= hs && p < he) {
            q = he < b ? he : b;
            at = ha;
        } else {
            q = p < hs && hs < b ? hs : b;
            at = na;
        }
        used += ui_put(w, y, x + used, maxcols - used, text + p, q - p, at, false);
        p = q;
    }
    return used;
}

/* ---- the selected token (inspector) ---- */

static const chs_msg *sel_reply(chat_ui *u)
{
    if (u->sel_msg < 0 || (size_t)u->sel_msg >= chs_count(u->c))
        return NULL;
    const chs_msg *m = chs_at(u->c, (size_t)u->sel_msg);
    return m->n_toks ? m : NULL;
}

static void select_last_reply(chat_ui *u)
{
    u->sel_msg = -1;
    for (size_t i = chs_count(u->c); i > 0; i--)
        if (chs_at(u->c, i - 1)->n_toks) {
            u->sel_msg = (long)i - 1;
            u->sel_tok = 0;
            break;
        }
}

static void piece(chat_ui *u, int32_t id, char *buf, size_t cap)
{
    char raw[64];
    size_t n = tok_piece(chs_vocab(u->c), id, raw, sizeof raw - 1, TOK_DETOK_SPECIAL);
    if (n > sizeof raw - 1)
        n = sizeof raw - 1;
    char esc[80];
    textesc_term(esc, sizeof esc, raw, n, TEXTESC_DQUOTE);   /* a token's bytes are file text */
    snprintf(buf, cap, "\"%s\"", esc);
}

static void draw_inspector(chat_ui *u, WINDOW *w, int y0, int cols)
{
    attr_t dim = ui_attr(UI_C_DIM);
    ui_fill(w, y0, 0, cols, ui_attr(UI_C_HEADER));
    const chs_msg *m = sel_reply(u);
    if (!m) {
        ui_put(w, y0, 0, cols, " token inspector: no reply with tokens yet (Tab: transcript, i: close)", SIZE_MAX,
               ui_attr(UI_C_HEADER), true);
        return;
    }
    if (u->sel_tok >= m->n_toks)
        u->sel_tok = m->n_toks - 1;
    const chs_tokinfo *t = &m->toks[u->sel_tok];
    char pc[96];
    piece(u, t->id, pc, sizeof pc);
    ui_putf(w, y0, 0, cols, ui_attr(UI_C_HEADER), " token %zu/%zu  %s  id %d  p = %.4f  entropy %.3f nats   ←/→ token  [/] reply",
            u->sel_tok + 1, m->n_toks, pc, t->id, t->prob, t->entropy);
    for (int k = 0; k < t->n_alt && k < SAMPLER_N_ALT; k++) {
        char ap[96];
        piece(u, t->alt_id[k], ap, sizeof ap);
        int bar = (int)lrintf(t->alt_prob[k] * 20);
        char bars[64];
        size_t bl = 0;
        for (int b = 0; b < bar && bl + 3 < sizeof bars; b++) {
            memcpy(bars + bl, "\xe2\x96\x88", 3);
            bl += 3;
        }
        bars[bl] = 0;
        attr_t a = t->alt_id[k] == t->id ? ui_attr(UI_C_MATCH) : ui_attr(UI_C_NORMAL);
        int x = ui_putf(w, y0 + 1 + k, 0, cols, a, " %d. %-20.20s %7d  %7.3f%% ", k + 1, ap, t->alt_id[k],
                        t->alt_prob[k] * 100.0);
        ui_put(w, y0 + 1 + k, x, cols - x, bars, bl, ui_attr(UI_C_BAR), false);
    }
    (void)dim;
}

/* ---- transcript pane ---- */

/* The template view's lines and the transcript's trade places. */
#define SWAP_LINES(u)                                                                                    \
    do {                                                                                                 \
        tline *l_ = (u)->lines;                                                                          \
        size_t n_ = (u)->nlines, c_ = (u)->caplines;                                                     \
        (u)->lines = (u)->tlines, (u)->nlines = (u)->ntlines, (u)->caplines = (u)->captlines;            \
        (u)->tlines = l_, (u)->ntlines = n_, (u)->captlines = c_;                                        \
    } while (0)

static void draw_template(chat_ui *u, WINDOW *w, int rows, int cols)
{
    /* lines of the rendered prompt (laid out once per width, in lines of
     * their own: the transcript's stay); special tokens highlighted */
    SWAP_LINES(u);
    if (u->tmpl_w != cols) {
        u->nlines = 0;
        wrapctx wc = {u, -4, ui_attr(UI_C_NORMAL), 0};
        wrap(u->tmpl_text, u->tmpl_len, cols - 1, text_span, &wc);
        u->tmpl_w = cols;
    }
    if (u->top > (long)u->nlines - rows)
        u->top = (long)u->nlines - rows;
    if (u->top < 0)
        u->top = 0;
    for (int r = 0; r < rows && (size_t)(u->top + r) < u->nlines; r++) {
        tline *l = &u->lines[u->top + r];
        size_t a = l->off, b = l->off + l->len;
        int x = 0;
        size_t p = a;
        size_t h0 = 0, h1 = u->tmpl_nhl;   /* the first highlight ending after p */
        while (h0 < h1) {
            size_t mid = h0 + (h1 - h0) / 2;
            if (u->tmpl_hl[2 * mid + 1] <= p)
                h0 = mid + 1;
            else
                h1 = mid;
        }
        for (size_t h = h0; h < u->tmpl_nhl && p < b; h++) {
            size_t hs = u->tmpl_hl[2 * h], he = u->tmpl_hl[2 * h + 1];
            if (he <= p)
                continue;
            if (hs >= b)
                break;
            x += put_hl(w, r, x, cols - x, u->tmpl_text, p, he < b ? he : b, hs, he, ui_attr(UI_C_NORMAL),
                        ui_attr(UI_C_MATCH) | A_BOLD);
            p = he < b ? he : b;
        }
        if (p < b)
            x += ui_put(w, r, x, cols - x, u->tmpl_text + p, b - p, ui_attr(UI_C_NORMAL), false);
        if (b < u->tmpl_len && u->tmpl_text[b] == '\n' && x < cols)
            ui_put(w, r, x, 1, "\xe2\x86\xb5", 3, ui_attr(UI_C_DIM), false);   /* ↵ */
    }
    SWAP_LINES(u);
}

static void tr_draw(panel *p, WINDOW *w, bool focused)
{
    chat_ui *u = p->self;
    (void)focused;
    pull(u);
    if (u->job)
        update_title(u);
    int rows = p->ih, cols = p->iw;
    if (u->tmpl_view) {
        draw_template(u, w, rows, cols);
        return;
    }
    int insp_rows = u->inspector ? INSPECTOR_ROWS : 0;
    if (insp_rows > rows - 3)
        insp_rows = rows > 3 ? rows - 3 : 0;
    int trows = rows - insp_rows;
    layout_lines(u, cols);
    long maxtop = (long)u->nlines - trows;
    if (maxtop < 0)
        maxtop = 0;
    if (u->inspector && !sel_reply(u)) {
        select_last_reply(u);   /* the reply that was streaming when the inspector opened, ... */
        u->reveal = true;
    }
    const chs_msg *sm = u->inspector ? sel_reply(u) : NULL;
    size_t hs = 0, he = 0;
    if (sm) {
        if (u->sel_tok >= sm->n_toks)
            u->sel_tok = sm->n_toks - 1;
        hs = sm->toks[u->sel_tok].off;
        he = hs + sm->toks[u->sel_tok].len;
        if (he == hs)
            he = hs + 1;
        if (u->reveal) {
            for (size_t i = 0; i < u->nlines; i++) {
                tline *l = &u->lines[i];
                if (l->kind == L_TEXT && l->msg == u->sel_msg && hs >= l->off && hs <= l->off + l->len) {
                    if ((long)i < u->top || (long)i >= u->top + trows) {
                        u->top = (long)i - trows / 2;
                        u->follow = false;
                    }
                    break;
                }
            }
            u->reveal = false;
        }
    }
    if (u->follow || u->top > maxtop)
        u->top = maxtop;
    if (u->top < 0)
        u->top = 0;
    if (u->top >= maxtop)
        u->follow = true;
    for (int r = 0; r < trows && (size_t)(u->top + r) < u->nlines; r++) {
        tline *l = &u->lines[u->top + r];
        bool dropped = l->msg >= 0 && chs_at(u->c, (size_t)l->msg)->dropped;
        attr_t la = dropped && l->kind != L_INFO ? ui_attr(UI_C_DIM) : l->a;
        if (l->kind == L_HEAD && dropped) {
            char head[200];
            snprintf(head, sizeof head, "%s  (dropped: out of the context)", l->info);
            ui_put(w, r, 0, cols, head, SIZE_MAX, la, true);
        } else if (l->kind == L_HEAD || l->kind == L_INFO) {
            ui_put(w, r, l->kind == L_INFO ? 2 : 0, cols - (l->kind == L_INFO ? 2 : 0), l->info, SIZE_MAX, l->a,
                   true);
        } else if (l->kind == L_TEXT) {
            size_t tl;
            const char *t = msg_text(u, l->msg, &tl);
            if (sm && l->msg == u->sel_msg)
                put_hl(w, r, 2, cols - 2, t, l->off, l->off + l->len, hs, he, la, ui_attr(UI_C_SELECT));
            else
                ui_put(w, r, 2, cols - 2, t + l->off, l->len, la, false);
        }
    }
    if (u->nlines > (size_t)trows && trows > 0) {
        char pos[32];
        snprintf(pos, sizeof pos, "%ld%%", maxtop ? u->top * 100 / maxtop : 100);
        ui_put(w, trows - 1, cols - (int)strlen(pos), (int)strlen(pos), pos, SIZE_MAX, ui_attr(UI_C_DIM), false);
    }
    if (insp_rows)
        draw_inspector(u, w, trows, cols);
}

static void tr_title(panel *p, char *buf, size_t cap)
{
    chat_ui *u = p->self;
    if (u->tmpl_view)
        snprintf(buf, cap, "/template: the exact prompt, special tokens highlighted · Esc back");
    else
        snprintf(buf, cap, "%zu messages%s", chs_count(u->c), u->inspector ? " · inspector" : "");
}

static void tr_scroll(chat_ui *u, long d)
{
    u->top += d;
    if (u->top < 0)
        u->top = 0;
    u->follow = false;
}

static int back_to_explorer(chat_ui *u)
{
    if (u->back_page >= 0)
        screen_show_page(u->s, u->back_page);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int tr_key(panel *p, int key)
{
    chat_ui *u = p->self;
    int page = p->ih > 4 ? p->ih - 2 : 1;
    if (u->tmpl_view) {
        switch (key) {
        case UIK_ESC: case 'q': case '\n':
            u->tmpl_view = false;
            screen_focus(u->s, u->in);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
    }
    switch (key) {
    case UIK_UP: case 'k': tr_scroll(u, -1); break;
    case UIK_DOWN: case 'j': tr_scroll(u, 1); break;
    case UIK_PGUP: tr_scroll(u, -page); break;
    case UIK_PGDN: case ' ': tr_scroll(u, page); break;
    case UIK_HOME: case 'g': u->top = 0; u->follow = false; break;
    case UIK_END: case 'G': u->follow = true; break;
    case 'i':
        u->inspector = !u->inspector;
        if (u->inspector && !sel_reply(u)) {
            select_last_reply(u);
        }
        u->reveal = true;
        break;
    case UIK_LEFT: case 'h':
        if (!u->inspector)
            return PANEL_HANDLED;
        if (u->sel_tok > 0)
            u->sel_tok--;
        u->reveal = true;
        break;
    case UIK_RIGHT: case 'l':
        if (!u->inspector)
            return PANEL_HANDLED;
        if (sel_reply(u) && u->sel_tok + 1 < sel_reply(u)->n_toks)
            u->sel_tok++;
        u->reveal = true;
        break;
    case '[': case ']': {
        long n = (long)chs_count(u->c), i = u->sel_msg;
        for (;;) {
            i += key == '[' ? -1 : 1;
            if (i < 0 || i >= n)
                break;
            if (chs_at(u->c, (size_t)i)->n_toks) {
                u->sel_msg = i;
                u->sel_tok = 0;
                u->reveal = true;
                break;
            }
        }
        break;
    }
    case UIK_ESC:
        if (!stop_reply(u)) {
            screen_focus(u->s, u->in);
        }
        break;
    case '\n':
        screen_focus(u->s, u->in);
        break;
    case UIK_FN(KEY_F(2)):
        return back_to_explorer(u);
    default:
        return PANEL_IGNORED;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int tr_mouse(panel *p, int y, int x, int ev)
{
    chat_ui *u = p->self;
    (void)y, (void)x;
    if (ev == UI_MOUSE_WHEEL_UP)
        tr_scroll(u, -3);
    else if (ev == UI_MOUSE_WHEEL_DOWN)
        tr_scroll(u, 3);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static const char *tr_hints(panel *p)
{
    chat_ui *u = p->self;
    if (u->tmpl_view)
        return "↑↓ PgUp PgDn scroll  Esc back";
    return u->inspector ? "←→ token  [ ] reply  i close  ↑↓ scroll  Esc stop/back"
                        : "i inspector  ↑↓ PgUp PgDn scroll  Enter input  Esc stop  F2 explorer";
}

static const panel_keyhelp tr_keys[] = {
    {"i", "token inspector: probability, entropy and top-5 of the selected reply token"},
    {"← →  h l", "previous / next token of the reply (inspector)"},
    {"[ ]", "previous / next reply (inspector)"},
    {"↑↓ j k PgUp PgDn g G", "scroll the transcript (G: follow the end)"},
    {"Esc", "stop the reply being generated; else back to the input box"},
    {"Enter", "back to the input box"},
    {"F2", "back to the explorer (when the chat was opened from it)"},
    {NULL, NULL},
};

static void noop_destroy(panel *p)
{
    free(p);
}

/* The panes' entry points, timed (GGSCOPE_CHAT_STALL_LOG). */
static void tr_draw_timed(panel *p, WINDOW *w, bool focused)
{
    stall_t t0 = stall_begin();
    tr_draw(p, w, focused);
    stall_end(p->self, t0, "draw transcript");
}

static int tr_key_timed(panel *p, int key)
{
    stall_t t0 = stall_begin();
    int r = tr_key(p, key);
    stall_end(p->self, t0, "key (transcript)");
    return r;
}

static const panel_ops tr_ops = {
    .name = "Chat",
    .title = tr_title,
    .draw = tr_draw_timed,
    .on_key = tr_key_timed,
    .on_mouse = tr_mouse,
    .hints = tr_hints,
    .destroy = noop_destroy,
    .keys = tr_keys,
};

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
    {"/save", "FILE", "save the conversation and settings (JSON)"},
    {"/load", "FILE", "load a conversation saved with /save"},
    {"/template", "", "the exact rendered prompt, special tokens highlighted"},
    {"/help", "", "keys and commands"},
    {"/quit", "", "leave ggscope"},
};
#define N_CMDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void show_pager(chat_ui *u, const char *title, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void show_pager(chat_ui *u, const char *title, const char *fmt, ...)
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

static void chatcmd_show(chat_ui *u)
{
    chs_settings st = chs_get_settings(u->c);
    uint32_t n_ctx = runner_n_ctx(u->core->e.r);
    show_pager(u, "Chat settings",
               "model        %s\n"
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
               u->path, chat_template_describe(chs_template(u->c)), chs_format_status(u->c), u->ctx_used, n_ctx,
               n_ctx ? 100.0 * u->ctx_used / n_ctx : 0.0, runner_kv_bytes(u->core->e.r) / 1048576.0, chs_count(u->c),
               chs_system(u->c)[0] ? chs_system(u->c) : "(none)", st.sp.temp, st.sp.top_k, st.sp.top_p, st.sp.min_p,
               st.sp.repeat_penalty, st.sp.repeat_last_n, (unsigned long long)st.sp.seed, st.n_predict);
}

static void chatcmd_help(chat_ui *u)
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
               "  ← → Home End       move; Ctrl+A / Ctrl+E line start / end; Ctrl+U clear; Ctrl+W delete a word\n"
               "  PgUp PgDn          scroll the transcript\n"
               "  Esc                stop the reply being generated\n"
               "  Tab                complete a /command; else focus the transcript\n"
               "  Ctrl+D             (empty box) quit;  Ctrl+C quits at any time\n"
               "  F2                 back to the explorer\n"
               "\nTranscript (Tab):\n");
    for (const panel_keyhelp *k = tr_keys; k->key; k++)
        fprintf(m, "  %-20s %s\n", k->key, k->help);
    fprintf(m, "\nPasting (bracketed paste) keeps new lines in the message.\n");
    fclose(m);
    screen_pager(u->s, "Chat help", t, len);
    free(t);
}

/* /template: the prompt rendered and tokenized on a worker (the template
 * comes from the file), shown when done. */
static void chatcmd_template(chat_ui *u)
{
    task *t = plan_task(u, false);
    if (!t)
        return;
    t->highlights = true;
    if (start_job(u, JOB_TEMPLATE, t))
        screen_message(u->s, "/template: rendering… Esc stops");
}

/* /load: the file read and checked on a worker, the conversation replaced when done. */
static void chatcmd_load(chat_ui *u, const char *path)
{
    task *t = task_new(u->core, TASK_LOAD);
    if (!t || !(t->path = strdup(path))) {
        task_release(t);
        screen_message(u->s, "out of memory");
        return;
    }
    t->base = chs_get_settings(u->c);
    if (start_job(u, JOB_LOAD, t))
        screen_message(u->s, "/load: reading %s… Esc stops", path);
}

static void set_input(chat_ui *u, const char *t);

static int run_command(chat_ui *u, const char *line)
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
    } else if (!strcmp(cmd, "/show")) {
        chatcmd_show(u);
    } else if (u->job && strcmp(cmd, "/set")) {
        screen_message(u->s, "%s: wait for the %s to finish (Esc stops it)", cmd,
                       u->job->kind == JOB_REPLY ? "reply" : u->job->kind == JOB_LOAD ? "/load" : "/template");
    } else if (!strcmp(cmd, "/template")) {
        chatcmd_template(u);
    } else if (!strcmp(cmd, "/system")) {
        chs_set_system(u->c, arg);
        screen_message(u->s, *arg ? "system prompt set" : "system prompt removed");
    } else if (!strcmp(cmd, "/clear")) {
        chs_clear(u->c);
        u->notice[0] = 0;
        u->sel_msg = -1;
        screen_message(u->s, "conversation cleared");
    } else if (!strcmp(cmd, "/regen")) {
        if (chs_pop_reply(u->c))
            start_reply(u);
        else
            screen_message(u->s, "/regen: no message to answer");
    } else if (!strcmp(cmd, "/edit")) {
        char *t = chs_pop_user(u->c);
        if (!t) {
            screen_message(u->s, "/edit: no message of yours yet");
        } else {
            set_input(u, t);
            free(t);
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
        if (!name[0]) {
            chatcmd_show(u);
        } else if (chs_set(u->c, name, arg, msg, sizeof msg)) {
            screen_message(u->s, "/set: %s", msg);
        } else {
            screen_message(u->s, "%s = %s%s", name, arg, u->job ? " (from the next reply)" : "");
        }
    } else if (!strcmp(cmd, "/save") || !strcmp(cmd, "/load")) {
        if (!*arg) {
            screen_message(u->s, "%s FILE", cmd);
        } else if (cmd[1] == 's') {
            if (chs_save(u->c, arg, msg, sizeof msg))
                screen_message(u->s, "/save: %s", msg);
            else
                screen_message(u->s, "saved %zu messages to %s", chs_count(u->c), arg);
        } else {
            chatcmd_load(u, arg);
        }
    } else {
        screen_message(u->s, "unknown command %s (/help lists them)", cmd);
    }
    update_title(u);
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* ---- input pane ---- */

static void relayout_input(chat_ui *u)
{
    int lines = 1;
    for (size_t i = 0; i < u->len; i++)
        lines += u->buf[i] == '\n';
    int rows = lines < INPUT_MAX_ROWS ? lines : INPUT_MAX_ROWS;
    if (rows != u->in_rows) {
        u->in_rows = rows;
        if (!u->s)
            return;
        panel *f = screen_focused(u->s);
        if (f && f->page == u->page)
            screen_focus(u->s, f);   /* lays the page out again */
    }
}

static void set_input(chat_ui *u, const char *t)
{
    size_t n = strlen(t);
    if (!grow((void **)&u->buf, &u->cap, n + 1, 1))
        return;
    memcpy(u->buf, t, n + 1);
    u->len = u->cur = n;
    relayout_input(u);
}

static void insert(chat_ui *u, const char *s, size_t n)
{
    if (!grow((void **)&u->buf, &u->cap, u->len + n + 1, 1))
        return;
    memmove(u->buf + u->cur + n, u->buf + u->cur, u->len - u->cur + 1);
    memcpy(u->buf + u->cur, s, n);
    u->len += n;
    u->cur += n;
    if (memchr(s, '\n', n))
        relayout_input(u);
}

static size_t prev_char(const chat_ui *u, size_t i)
{
    while (i > 0 && ((unsigned char)u->buf[--i] & 0xC0) == 0x80) {
    }
    return i;
}

static size_t next_char(const chat_ui *u, size_t i)
{
    if (i >= u->len)
        return u->len;
    i++;
    while (i < u->len && ((unsigned char)u->buf[i] & 0xC0) == 0x80)
        i++;
    return i;
}

static void delete_range(chat_ui *u, size_t a, size_t b)
{
    bool nl = memchr(u->buf + a, '\n', b - a) != NULL;
    memmove(u->buf + a, u->buf + b, u->len - b + 1);
    u->len -= b - a;
    u->cur = a;
    if (nl)
        relayout_input(u);
}

static size_t line_start(const chat_ui *u, size_t i)
{
    while (i > 0 && u->buf[i - 1] != '\n')
        i--;
    return i;
}

static size_t line_end(const chat_ui *u, size_t i)
{
    while (i < u->len && u->buf[i] != '\n')
        i++;
    return i;
}

static void history_add(chat_ui *u, const char *t)
{
    if (u->nhist && !strcmp(u->hist[u->nhist - 1], t))
        return;
    char **h = realloc(u->hist, (u->nhist + 1) * sizeof *h);
    if (!h)
        return;
    u->hist = h;
    u->hist[u->nhist] = strdup(t);
    if (u->hist[u->nhist])
        u->nhist++;
}

static void history_move(chat_ui *u, int d)
{
    if (!u->nhist)
        return;
    if (u->hpos == u->nhist && d < 0) {
        free(u->hist_saved);
        u->hist_saved = strdup(u->buf ? u->buf : "");
    }
    if (d < 0 && u->hpos > 0)
        u->hpos--;
    else if (d > 0 && u->hpos < u->nhist)
        u->hpos++;
    else
        return;
    set_input(u, u->hpos < u->nhist ? u->hist[u->hpos] : (u->hist_saved ? u->hist_saved : ""));
}

/* Commands matching the input's first word (only while it is a /word). */
static size_t completions(const chat_ui *u, size_t *idx, size_t cap)
{
    if (!u->len || u->buf[0] != '/' || memchr(u->buf, ' ', u->len) || memchr(u->buf, '\n', u->len))
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < N_CMDS; i++)
        if (!strncmp(COMMANDS[i].name, u->buf, u->len) && n < cap)
            idx[n++] = i;
    return n;
}

static void complete(chat_ui *u)
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
    set_input(u, t);
}

static int submit(chat_ui *u)
{
    if (!u->len)
        return PANEL_HANDLED;
    char *t = strdup(u->buf);
    if (!t)
        return PANEL_HANDLED;
    history_add(u, t);
    u->hpos = u->nhist;
    int r = PANEL_HANDLED | PANEL_REDRAW;
    if (t[0] == '/' && t[1] != '/') {
        set_input(u, "");
        r |= run_command(u, t);
    } else if (u->job) {
        screen_message(u->s, "a reply is being generated: Esc stops it");
    } else {
        const char *msg = t[0] == '/' ? t + 1 : t;   /* "//x" sends "/x" */
        set_input(u, "");
        u->notice[0] = 0;
        chs_add(u->c, "user", msg, strlen(msg));
        start_reply(u);
    }
    free(t);
    return r;
}

static int in_key(panel *p, int key)
{
    chat_ui *u = p->self;
    if (u->pasting && key != UIK_PASTE_END) {
        if (key == '\n' || key == '\t' || (key >= 0x20 && key < 0x110000 && key != 0x7f)) {
            char mb[8];
            mbstate_t st;
            memset(&st, 0, sizeof st);
            size_t n = wcrtomb(mb, (wchar_t)key, &st);
            if (n != (size_t)-1)
                insert(u, mb, n);
        }
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    switch (key) {
    case UIK_PASTE_BEGIN: u->pasting = true; break;
    case UIK_PASTE_END: u->pasting = false; break;
    case '\n': return submit(u);
    case UIK_ALT('\n'): insert(u, "\n", 1); break;
    case UIK_ESC:
        if (!stop_reply(u) && u->len == 0)
            screen_message(u->s, "Esc stops a reply; Ctrl+C or /quit leaves");
        break;
    case '\t': {
        size_t idx[N_CMDS];
        if (completions(u, idx, N_CMDS))
            complete(u);
        else
            screen_focus(u->s, u->tr);
        break;
    }
    case UIK_BTAB: screen_focus(u->s, u->tr); break;
    case UIK_BACKSPACE:
        if (u->cur)
            delete_range(u, prev_char(u, u->cur), u->cur);
        break;
    case UIK_DC:
        if (u->cur < u->len)
            delete_range(u, u->cur, next_char(u, u->cur));
        break;
    case UIK_LEFT: u->cur = prev_char(u, u->cur); break;
    case UIK_RIGHT: u->cur = next_char(u, u->cur); break;
    case UIK_HOME: case UIK_CTRL('a'): u->cur = line_start(u, u->cur); break;
    case UIK_END: case UIK_CTRL('e'): u->cur = line_end(u, u->cur); break;
    case UIK_CTRL('u'): set_input(u, ""); break;
    case UIK_CTRL('w'): {
        size_t a = u->cur;
        while (a > 0 && u->buf[a - 1] == ' ')
            a--;
        while (a > 0 && u->buf[a - 1] != ' ' && u->buf[a - 1] != '\n')
            a--;
        delete_range(u, a, u->cur);
        break;
    }
    case UIK_CTRL('d'):
        if (!u->len)
            return PANEL_HANDLED | PANEL_QUIT;
        break;
    case UIK_UP: case UIK_DOWN: {
        size_t ls = line_start(u, u->cur);
        bool first = ls == 0, last = line_end(u, u->cur) == u->len;
        if ((key == UIK_UP && first) || (key == UIK_DOWN && last)) {
            history_move(u, key == UIK_UP ? -1 : 1);
            break;
        }
        size_t col = u->cur - ls;
        size_t ns = key == UIK_UP ? line_start(u, ls - 1) : line_end(u, u->cur) + 1;
        size_t ne = line_end(u, ns);
        u->cur = ns + col < ne ? ns + col : ne;
        while (u->cur > ns && ((unsigned char)u->buf[u->cur] & 0xC0) == 0x80)
            u->cur--;
        break;
    }
    case UIK_PGUP: tr_scroll(u, -(u->tr->ih > 4 ? u->tr->ih - 2 : 1)); break;
    case UIK_PGDN: tr_scroll(u, u->tr->ih > 4 ? u->tr->ih - 2 : 1); break;
    case UIK_FN(KEY_F(2)): return back_to_explorer(u);
    default:
        if (key >= 0x20 && key < 0x110000 && key != 0x7f) {
            char mb[8];
            mbstate_t st;
            memset(&st, 0, sizeof st);
            size_t n = wcrtomb(mb, (wchar_t)key, &st);
            if (n != (size_t)-1)
                insert(u, mb, n);
        } else {
            return PANEL_HANDLED;   /* swallowed: typing */
        }
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static void in_draw(panel *p, WINDOW *w, bool focused)
{
    chat_ui *u = p->self;
    int rows = p->ih, cols = p->iw;
    /* hard-wrapped rows of the input, with "› " in front */
    int tw = cols - 2 > 1 ? cols - 2 : 1;
    size_t starts[512];
    int nrows = 0, cur_row = 0, cur_col = 0;
    size_t i = 0;
    starts[nrows++] = 0;
    int col = 0;
    for (;;) {
        if (i == u->cur) {
            cur_row = nrows - 1;
            cur_col = col;
        }
        if (i >= u->len)
            break;
        if (u->buf[i] == '\n') {
            i++;
            if (nrows < 512)
                starts[nrows++] = i;
            col = 0;
            continue;
        }
        size_t cl = u8len((unsigned char)u->buf[i]);
        if (i + cl > u->len)
            cl = u->len - i;
        int cw = ui_width(u->buf + i, cl);
        if (col + cw > tw - 1) {
            if (nrows < 512)
                starts[nrows++] = i;
            col = 0;
        }
        col += cw;
        i += cl;
    }
    int first = cur_row - rows + 1 > 0 ? cur_row - rows + 1 : 0;
    for (int r = 0; r < rows && first + r < nrows; r++) {
        int ri = first + r;
        size_t a = starts[ri];
        size_t b = ri + 1 < nrows ? starts[ri + 1] : u->len;
        if (b > a && u->buf[b - 1] == '\n')
            b--;
        ui_put(w, r, 0, 2, ri == 0 ? "\xe2\x80\xba " : "  ", SIZE_MAX, ui_attr(UI_C_KEY) | A_BOLD, false);
        ui_put(w, r, 2, cols - 2, u->buf + a, b - a, ui_attr(UI_C_NORMAL), false);
    }
    if (!u->len) {
        ui_put(w, 0, 4, cols - 4,
               u->streaming ? "generating… Esc stops it" : "type a message · / for commands · Alt+Enter new line",
               SIZE_MAX, ui_attr(UI_C_DIM), true);
    }
    if (focused && cur_row >= first && cur_row - first < rows) {
        size_t e = next_char(u, u->cur);
        const char *ch = u->cur < u->len && u->buf[u->cur] != '\n' ? u->buf + u->cur : " ";
        size_t cl = u->cur < u->len && u->buf[u->cur] != '\n' ? e - u->cur : 1;
        ui_put(w, cur_row - first, 2 + cur_col, cols - 2 - cur_col, ch, cl, A_REVERSE, false);
    }
}

static void in_title(panel *p, char *buf, size_t cap)
{
    chat_ui *u = p->self;
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
    } else if (u->pasting) {
        snprintf(buf, cap, "pasting…");
    } else {
        buf[0] = 0;
    }
}

static bool in_typing(panel *p)
{
    (void)p;
    return true;
}

static const char *in_hints(panel *p)
{
    chat_ui *u = p->self;
    return u->streaming ? "Esc stop  PgUp/PgDn scroll  Tab transcript" : "Enter send  Alt+Enter newline  / commands  ↑↓ history  Tab transcript  ^C quit";
}

static const panel_keyhelp in_keys[] = {
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

static void in_draw_timed(panel *p, WINDOW *w, bool focused)
{
    stall_t t0 = stall_begin();
    in_draw(p, w, focused);
    stall_end(p->self, t0, "draw input");
}

static int in_key_timed(panel *p, int key)
{
    stall_t t0 = stall_begin();
    int r = in_key(p, key);
    stall_end(p->self, t0, "key (input)");
    return r;
}

static const panel_ops in_ops = {
    .name = "Message",
    .title = in_title,
    .draw = in_draw_timed,
    .on_key = in_key_timed,
    .hints = in_hints,
    .typing = in_typing,
    .destroy = noop_destroy,
    .keys = in_keys,
};

/* ---- page ---- */

static void layout(screen *s, int page, int top, int left, int rows, int cols, bool zoom, void *ctx)
{
    (void)page;
    chat_ui *u = ctx;
    int ih = (u->in_rows ? u->in_rows : 1) + 2;
    if (zoom && screen_focused(s) == u->tr) {
        screen_place(s, u->tr, top, left, rows, cols);
        return;
    }
    if (ih > rows - 3)
        ih = rows - 3 > 3 ? rows - 3 : 3;
    screen_place(s, u->tr, top, left, rows - ih, cols);
    screen_place(s, u->in, top + rows - ih, left, ih, cols);
}

static panel *new_panel(const panel_ops *ops, chat_ui *u)
{
    panel *p = calloc(1, sizeof *p);
    if (p) {
        p->ops = ops;
        p->self = u;
    }
    return p;
}

chat_ui *chat_ui_new(const char *path, const chat_ui_opts *o, bool quiet, char *err, size_t cap)
{
    chat_ui *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    u->o = *o;
    if (u->o.eng.threads == 0) {
        /* one core is left to the loop thread: the UI stays responsive while
         * the model computes (--threads overrides) */
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        u->o.eng.threads = nc > 1 ? (int)(nc - 1) : 1;
    }
    u->sel_msg = -1;
    u->tmpl_w = -1;
    u->follow = true;
    u->in_rows = 1;
    u->back_page = -1;
    snprintf(u->path, sizeof u->path, "%s", path);
    const char *dl = getenv("GGSCOPE_CHAT_DELAY_MS");
    if (!u->o.delay_ms && dl && *dl)
        u->o.delay_ms = (unsigned)strtoul(dl, NULL, 10);
    const char *sl = getenv("GGSCOPE_CHAT_STALL_LOG");
    if (sl && *sl)
        u->stall_path = strdup(sl);
    set_input(u, "");
    u->core = calloc(1, sizeof *u->core);
    if (!u->buf || !u->core) {
        snprintf(err, cap, "out of memory");
        free(u->buf);
        free(u->core);
        free(u->stall_path);
        free(u);
        return NULL;
    }
    atomic_init(&u->core->refs, 1);
    int rc;
    if (quiet) {
        rc = ecli_open_msg(path, &u->o.eng, u->o.eng.n_ctx, &u->core->e, err, cap);
    } else {
        rc = ecli_open(path, &u->o.eng, u->o.eng.n_ctx, &u->core->e);
        if (rc)
            snprintf(err, cap, "cannot load the model");
    }
    if (rc) {
        free(u->buf);
        free(u->core);
        free(u->stall_path);
        free(u);
        return NULL;
    }
    runner_set_notice(u->core->e.r, NULL, NULL);   /* the screen is ours: the reply shows the notice */
    char msg[512];
    u->c = u->core->c = chs_new(u->core->e.f, u->core->e.r, msg, sizeof msg);
    if (!u->c) {
        snprintf(err, cap, "%s: %s", path, msg);
        if (!quiet)
            app_error("%s", err);
        ecli_close(&u->core->e);
        free(u->core);
        free(u->buf);
        free(u->stall_path);
        free(u);
        return NULL;
    }
    if (o->have_settings)
        chs_set_settings(u->c, &o->settings);
    if (o->system)
        chs_set_system(u->c, o->system);
    if (o->session)
        chs_load_file(u->c, o->session);   /* its system prompt and settings win */
    u->o.session = NULL;
    return u;
}

int chat_ui_attach(chat_ui *u, screen *s, int back_page)
{
    u->s = s;
    u->back_page = back_page;
    u->page = screen_add_page(s, "chat", layout, u);
    if (u->page < 0)
        return -1;
    u->tr = new_panel(&tr_ops, u);
    u->in = new_panel(&in_ops, u);
    if (!u->tr || !u->in || screen_add_panel(s, u->page, u->tr) || screen_add_panel(s, u->page, u->in)) {
        free(u->tr);
        free(u->in);
        u->tr = u->in = NULL;
        return -1;
    }
    update_title(u);
    return u->page;
}

void chat_ui_show(chat_ui *u)
{
    if (u && u->in)
        screen_focus(u->s, u->in);
}

void chat_ui_cancel(chat_ui *u)
{
    if (u)
        stop_reply(u);
}

void chat_ui_free(chat_ui *u)
{
    if (!u)
        return;
    if (u->tr)
        u->tr->self = NULL;
    if (u->in)
        u->in->self = NULL;
    core_release(u->core);   /* a task still rendering keeps it until it ends */
    free(u->stall_path);
    for (size_t i = 0; i < u->nhist; i++)
        free(u->hist[i]);
    free(u->hist);
    free(u->hist_saved);
    free(u->buf);
    free(u->reply);
    free(u->rtok);
    free(u->lines);
    free(u->tlines);
    free(u->lay_msg);
    free(u->lay_sys);
    free(u->tmpl_text);
    free(u->tmpl_hl);
    free(u);
}
