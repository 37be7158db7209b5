/* chat_page: the engine's helper threads, the jobs (a reply, /template,
 * /load), the title and the page (see chat_page.h). */
#include "chat_page_int.h"
#include "clock.h"
#include "rfile.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAKE_INTERVAL_S 0.03   /* at most ~33 wake-ups of the loop per second */

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

static void core_release(chat_core *k)
{
    if (k && atomic_fetch_sub(&k->refs, 1) == 1) {
        k->release(k->ctx);
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

struct gen_job {
    ui_job job;
    chat_page *u;
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
    bool think_open;       /* the prompt ends inside a <think> block */
    uint32_t pp_done, pp_total;   /* prompt evaluation: tokens evaluated of those to evaluate */
    double pp_t0;          /* its start */
    uint64_t sig;          /* JOB_MEASURE: the conversation it measures (chat_page_sig) */
    /* set by work, read in done */
    int prc;               /* the task: 0 done, 1 cancelled, -1 failed */
    chs_reply_stats rs;
    int rc;
    char err[512];
    char fallback[400];   /* the runner's notice: the device failed, the CPU took over */
    void *sreq;           /* remote chat: the source's request (no task) */
};

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

static void stall_end(chat_page *u, stall_t t0, const char *what)
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

bool chat_page_grow(void **p, size_t *cap, size_t need, size_t elem)
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
    if (chat_page_grow((void **)&g->text, &g->cap, g->len + len + 1, 1)) {
        memcpy(g->text + g->len, text, len);
        g->len += len;
    }
    if (ti->id >= 0 && chat_page_grow((void **)&g->toks, &g->captok, g->ntok + 1, sizeof *g->toks)) {
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

/* worker thread: prompt evaluation progress */
static void gen_on_prompt(void *ctx, uint32_t done, uint32_t total)
{
    gen_job *g = ctx;
    double t = clock_now_s();
    pthread_mutex_lock(&g->mu);
    if (!done)
        g->pp_t0 = t;
    g->pp_done = done;
    g->pp_total = total;
    pthread_mutex_unlock(&g->mu);
    if ((!done || t - g->last_wake >= WAKE_INTERVAL_S) && g->job.wake) {
        g->last_wake = t;
        g->job.wake(g->job.wake_ctx);
    }
}

/* Whether a rendered prompt ends inside a <think> block (a template that
 * opens it in the generation prompt: the reply starts with the thinking). */
static bool ends_in_think(const char *t, size_t len)
{
    while (len && (t[len - 1] == '\n' || t[len - 1] == ' '))
        len--;
    return len >= 7 && !memcmp(t + len - 7, "<think>", 7);
}

/* GGSCOPE_CHAT_REPLY_FILE (tests): the reply is that file's text, streamed
 * a few bytes a "token" (whole characters) with the chat's delay after
 * each, instead of the model's; the prompt is built as for a reply. */
static void script_reply(gen_job *g, const char *text, size_t n_prompt)
{
    size_t len = strlen(text), off = 0;
    double t0 = clock_now_s();
    g->rs = (chs_reply_stats){.n_prompt = (uint32_t)n_prompt, .n_eval = (uint32_t)n_prompt, .stop = CHS_STOP_EOG};
    while (off < len) {
        if (atomic_load(&g->job.cancel)) {
            g->rs.stop = CHS_STOP_CANCEL;
            break;
        }
        size_t k = off + 4 < len ? off + 4 : len;
        while (k < len && ((unsigned char)text[k] & 0xC0) == 0x80)
            k++;
        chs_tokinfo ti = {.id = 0, .off = (uint32_t)off, .len = (uint32_t)(k - off), .prob = 1,
                          .t_s = (float)(clock_now_s() - t0)};
        gen_on_token(g, text + off, k - off, &ti);
        g->rs.n_gen++;
        if (!g->rs.t_first_s)
            g->rs.t_first_s = clock_now_s() - t0;
        off = k;
        if (g->delay_ms)
            usleep(g->delay_ms * 1000u);
    }
    g->rs.t_gen_s = clock_now_s() - t0;
    g->rc = 0;
}

static void gen_work(ui_job *j)
{
    gen_job *g = (gen_job *)j;
    if (g->sreq) {   /* remote chat: the source streams the reply */
        chs_sink sk = {gen_on_token, g, &j->cancel, 0, NULL};
        g->rc = g->u->src->generate(g->u->src_ctx, g->sreq, &sk, &g->rs, g->err, sizeof g->err);
        return;
    }
    g->prc = task_run(g->t, j);
    if (g->prc)
        return;
    if (g->kind != JOB_REPLY)
        return;
    size_t n, tlen;
    const char *text = chs_plan_text(g->t->plan, &tlen);
    bool think = text && !chs_raw(g->c) && ends_in_think(text, tlen);
    int32_t *ids = chs_plan_take_ids(g->t->plan, &n);
    pthread_mutex_lock(&g->mu);
    g->ids = ids;
    g->n = n;
    g->think_open = think;
    pthread_mutex_unlock(&g->mu);
    if (g->job.wake)
        g->job.wake(g->job.wake_ctx);   /* the gauge: the prompt's size */
    chs_sink sk = {gen_on_token, g, &j->cancel, g->delay_ms, gen_on_prompt};
    if (g->u->reply_script) {
        script_reply(g, g->u->reply_script, n);
        return;
    }
    g->rc = chs_generate(g->c, ids, n, &g->st, &sk, &g->rs, g->err, sizeof g->err);
    runner_take_notice(g->u->core->r, g->fallback, sizeof g->fallback);   /* a device error, survived */
}

/* loop thread: move what the worker produced into the UI's copy */
void chat_page_pull(chat_page *u)
{
    gen_job *g = u->job;
    if (!g || g->kind != JOB_REPLY)
        return;
    pthread_mutex_lock(&g->mu);
    if (g->len && chat_page_grow((void **)&u->reply, &u->rcap, u->rlen + g->len + 1, 1)) {
        memcpy(u->reply + u->rlen, g->text, g->len);
        u->rlen += g->len;
        u->reply[u->rlen] = 0;
        g->len = 0;
    }
    if (g->ntok && chat_page_grow((void **)&u->rtok, &u->rcaptok, u->rntok + g->ntok, sizeof *u->rtok)) {
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
    u->think_open = g->think_open;
    pthread_mutex_unlock(&g->mu);
    u->ctx_used = (uint32_t)(n + u->rntok);
}

void chat_page_progress(chat_page *u, char *buf, size_t cap)
{
    buf[0] = 0;
    gen_job *g = u->job;
    if (!g || g->kind != JOB_REPLY)
        return;
    pthread_mutex_lock(&g->mu);
    uint32_t done = g->pp_done, total = g->pp_total;
    double t0 = g->pp_t0;
    bool tokens = g->total > 0 || g->ntok > 0 || u->rntok > 0;
    pthread_mutex_unlock(&g->mu);
    if (!total || done >= total || tokens)
        return;
    double el = clock_now_s() - t0, rate = el > 0 && done ? done / el : 0;
    if (rate > 0)
        snprintf(buf, cap, "prompt %u/%u tokens · %.0f tok/s · %.1f s left", done, total, rate, (total - done) / rate);
    else
        snprintf(buf, cap, "prompt %u/%u tokens…", done, total);
}

/* Stopped before the reply's first token: no assistant turn is added, and
 * your message goes back into the input box (when it is empty) so that
 * the conversation does not end with a message nobody answered. */
static void unsent(chat_page *u, const char *what)
{
    char *t = u->ed.len ? NULL : chs_pop_user(u->c);
    if (t) {
        chat_page_set_input(u, t);
        free(t);
        screen_message(u->s, "%s (Esc): no reply; your message is back in the input box", what);
    } else {
        screen_message(u->s, "%s (Esc): no reply (/regen answers your message)", what);
    }
}

static void reply_done(chat_page *u, gen_job *g)
{
    if (g->prc == 1) {
        unsent(u, "stopped while the prompt was being built");
        return;
    }
    if (g->prc < 0) {
        screen_message(u->s, "%s", g->t->err);
        return;
    }
    unsigned dropped = 0;
    if (g->t)
        chs_plan_apply(u->c, g->t->plan, &dropped);   /* the transcript cannot change while a job runs */
    if (g->sreq && g->rc)
        snprintf(u->notice, sizeof u->notice, "%.250s", g->err);   /* remote: the error stays in the transcript */
    if (dropped)
        snprintf(u->notice, sizeof u->notice,
                 "context full: the %u oldest message%s (greyed) no longer reach%s the model; the system prompt is kept",
                 dropped, dropped == 1 ? "" : "s", dropped == 1 ? "es" : "");
    if (g->fallback[0])
        snprintf(u->notice, sizeof u->notice, "%.250s", g->fallback);
    if (g->rc)
        screen_message(u->s, "generation failed: %s", g->err);
    if (g->rc == 0 && !u->rlen && g->rs.stop == CHS_STOP_CANCEL) {
        unsent(u, "stopped while the prompt was evaluated");
        return;
    }
    if (g->rc == 0 || u->rlen) {
        if (chs_add_reply(u->c, u->reply ? u->reply : "", u->rlen, u->rtok, u->rntok, &g->rs))
            screen_message(u->s, "out of memory");
        else if (g->rs.stop == CHS_STOP_CANCEL)
            screen_message(u->s, "reply stopped (Esc): %u tokens kept", g->rs.n_gen);
        else if (g->rs.stop == CHS_STOP_CTX)
            screen_message(u->s, "the context is full: the next message drops the oldest turns");
    }
}

static void template_done(chat_page *u, gen_job *g)
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
    screen_message(u->s, "template: %s · %zu tokens, %zu special; Esc returns", chat_page_template_source(u), n,
                   u->tmpl_nhl);
}

static void load_done(chat_page *u, gen_job *g)
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
    u->saved_sig = chat_page_sig(u);
    u->measure_after = true;
    u->notice[0] = 0;
    u->sel_msg = -1;
    u->follow = true;
    screen_message(u->s, "loaded %zu messages from %s", chs_count(u->c), g->t->path);
}

static void job_free(gen_job *g)
{
    task_release(g->t);
    pthread_mutex_destroy(&g->mu);
    free(g->text);
    free(g->toks);
    free(g->ids);
    free(g);
}

/* The gauge's job: the tokens of the conversation as it is, unless it
 * changed meanwhile or a reply started (the reply's figures then win). */
static void measure_done(chat_page *u, gen_job *g)
{
    bool latest = u->measure == g;   /* a later measurement replaced a cancelled one */
    if (latest)
        u->measure = NULL;
    if (latest && g->prc == 0 && !u->job && g->sig == chat_page_sig(u)) {
        size_t n;
        chs_plan_ids(g->t->plan, &n);
        u->ctx_used = (uint32_t)n;
        chat_page_update_title(u);
        screen_dirty(u->s);
    }
    job_free(g);
}

static void gen_done(ui_job *j)
{
    gen_job *g = (gen_job *)j;
    chat_page *u = g->u;
    stall_t t0 = stall_begin();
    if (g->kind == JOB_MEASURE) {
        measure_done(u, g);
        stall_end(u, t0, "job done");
        return;
    }
    chat_page_pull(u);
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
    u->think_open = false;
    if (g->kind == JOB_REPLY)
        u->ctx_used = (uint32_t)chs_held(u->c);   /* the prompt as cut to fit, and the reply */
    if (g->sreq) {   /* remote chat: the server's figures */
        u->ctx_used = g->rs.n_prompt + g->rs.n_gen;
        u->src->end(u->src_ctx, g->sreq);
    }
    chat_page_update_title(u);
    screen_dirty(u->s);
    job_free(g);
    if (u->measure_after) {   /* a conversation loaded */
        u->measure_after = false;
        chat_page_measure(u);
    }
    stall_end(u, t0, "job done");
}

/* Start a job of `kind` on task t (taken). */
static bool start_job(chat_page *u, int kind, task *t, void *sreq)
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
    g->sreq = sreq;
    g->st = chs_get_settings(u->c);
    g->delay_ms = u->delay_ms;
    g->sig = chat_page_sig(u);
    ui_job_init(&g->job, gen_work, gen_done, u);
    if (kind == JOB_MEASURE) {
        u->measure = g;
        if (screen_submit(u->s, &g->job) != 0) {
            u->measure = NULL;
            job_free(g);
        }
        return u->measure != NULL;
    }
    u->job = g;
    if (kind == JOB_REPLY) {
        if (u->measure)   /* the reply's figures make the gauge now */
            ui_job_cancel(&u->measure->job);
        if (u->smd)
            mdview_render(u->smd, "", 0, 80);   /* a new reply: nothing of the last one is kept */
        u->smd_from = (size_t)-1;
        u->think_open = false;
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
    chat_page_update_title(u);
    return true;
}

/* A plan of the conversation as it is now, on a task. */
static task *plan_task(chat_page *u, bool fit)
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

void chat_page_start_reply(chat_page *u)
{
    if (u->job)
        return;
    if (u->src) {   /* remote chat: the source's request instead of a prompt plan */
        char msg[512];
        void *rq = u->src->begin(u->src_ctx, u->c, msg, sizeof msg);
        u->notice[0] = 0;
        if (!rq)
            screen_message(u->s, "%s", msg);
        else if (!start_job(u, JOB_REPLY, NULL, rq))
            u->src->end(u->src_ctx, rq);
        return;
    }
    task *t = plan_task(u, true);
    if (t)
        start_job(u, JOB_REPLY, t, NULL);
}

void chat_page_measure(chat_page *u)
{
    if (u->src)
        return;   /* remote chat: the server counts (usage), after each reply */
    if (u->measure)
        ui_job_cancel(&u->measure->job);
    if (!chs_count(u->c) && !chs_system(u->c)[0]) {
        u->ctx_used = 0;   /* nothing to render */
        chat_page_update_title(u);
        return;
    }
    task *t = plan_task(u, false);
    if (t)
        start_job(u, JOB_MEASURE, t, NULL);
}

const char *chat_page_backend(const chat_page *u)
{
    return runner_backend_info(u->core->r);
}

bool chat_page_stop_reply(chat_page *u)
{
    if (!u->job)
        return false;
    ui_job_cancel(&u->job->job);
    runner_cancel(u->core->r);   /* stops an evaluation between layers */
    return true;
}

/* the template comes from the file: rendering it cannot be interrupted */
void chat_page_start_template(chat_page *u)
{
    task *t = plan_task(u, false);
    if (!t)
        return;
    t->highlights = true;
    if (start_job(u, JOB_TEMPLATE, t, NULL))
        screen_message(u->s, "/template: rendering… Esc stops");
}

void chat_page_start_load(chat_page *u, const char *path)
{
    task *t = task_new(u->core, TASK_LOAD);
    if (!t || !(t->path = strdup(path))) {
        task_release(t);
        screen_message(u->s, "out of memory");
        return;
    }
    t->base = chs_get_settings(u->c);
    if (start_job(u, JOB_LOAD, t, NULL))
        screen_message(u->s, "/load: reading %s… Esc stops", path);
}

const char *chat_page_busy(const chat_page *u)
{
    if (!u->job)
        return NULL;
    return u->job->kind == JOB_REPLY ? "reply" : u->job->kind == JOB_LOAD ? "/load" : "/template";
}

int chat_page_back(chat_page *u)
{
    if (u->back_page >= 0)
        screen_show_page(u->s, u->back_page);
    return PANEL_HANDLED | PANEL_REDRAW;
}

/* ---- status line ---- */

void chat_page_update_title(chat_page *u)
{
    uint32_t n_ctx = runner_n_ctx(u->core->r);
    if (u->src && u->src->n_ctx)
        n_ctx = u->src->n_ctx(u->src_ctx);
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
    char state[200] = "";
    if (u->job && u->job->kind == JOB_REPLY) {
        char pp[128];
        chat_page_progress(u, pp, sizeof pp);
        pthread_mutex_lock(&u->job->mu);
        bool ids = u->job->ids != NULL;
        pthread_mutex_unlock(&u->job->mu);
        snprintf(state, sizeof state, " · %s%sEsc stops", pp[0] ? pp : ids ? "generating…" : "building the prompt…",
                 pp[0] ? " · " : " ");
        if (u->job->sreq)   /* remote chat */
            snprintf(state, sizeof state, " · %s Esc stops", u->rlen ? "streaming…" : "waiting for the server…");
    } else if (u->job) {
        snprintf(state, sizeof state, "%s", u->job->kind == JOB_LOAD ? " · loading… Esc stops" : " · rendering /template… Esc stops");
    }
    const char *be = runner_backend_info(u->core->r), *why = strstr(be, " (");   /* the reason: in /show */
    char ctx[96];   /* no context size (a remote server that gives none): the count alone ("%.0u" of 0: "") */
    snprintf(ctx, sizeof ctx, n_ctx ? "%s %u/%u" : "%.0s%u tokens%.0u", gauge, used, n_ctx);
    snprintf(u->title, sizeof u->title, " chat · %.60s · ctx %s%s%s · %.*s · %.200s", base, ctx, speed, state,
             why ? (int)(why - be) : 80, be, fmt);
    screen_set_title(u->s, u->page, u->title);
}

/* ---- page ---- */

static void layout(screen *s, int page, int top, int left, int rows, int cols, bool zoom, void *ctx)
{
    (void)page;
    chat_page *u = ctx;
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

static panel *new_panel(const panel_ops *ops, chat_page *u)
{
    panel *p = calloc(1, sizeof *p);
    if (p) {
        p->ops = ops;
        p->self = u;
    }
    return p;
}

/* The panes' entry points, timed (GGSCOPE_CHAT_STALL_LOG). */
static void draw_timed(panel *p, WINDOW *w, bool focused)
{
    chat_page *u = p->self;
    bool tr = p == u->tr;
    stall_t t0 = stall_begin();
    (tr ? chat_page_tr_draw : chat_page_in_draw)(p, w, focused);
    stall_end(u, t0, tr ? "draw transcript" : "draw input");
}

static int key_timed(panel *p, int key)
{
    chat_page *u = p->self;
    bool tr = p == u->tr;
    stall_t t0 = stall_begin();
    int r = (tr ? chat_page_tr_key : chat_page_in_key)(p, key);
    stall_end(u, t0, tr ? "key (transcript)" : "key (input)");
    return r;
}

static void noop_destroy(panel *p)
{
    chat_page *u = p->self;
    if (u && u->tr == p)   /* the screen freed first: the page lets go */
        u->tr = NULL;
    if (u && u->in == p)
        u->in = NULL;
    free(p);
}

static const panel_ops tr_ops = {
    .name = "Chat",
    .title = chat_page_tr_title,
    .draw = draw_timed,
    .on_key = key_timed,
    .on_mouse = chat_page_tr_mouse,
    .hints = chat_page_tr_hints,
    .destroy = noop_destroy,
    .keys = chat_page_tr_keys,
};

static const panel_ops in_ops = {
    .name = "Message",
    .title = chat_page_in_title,
    .draw = draw_timed,
    .on_key = key_timed,
    .hints = chat_page_in_hints,
    .typing = chat_page_in_typing,
    .destroy = noop_destroy,
    .keys = chat_page_in_keys,
};

chat_page *chat_page_new(const chat_page_engine *e)
{
    chat_page *u = calloc(1, sizeof *u);
    chat_core *k = calloc(1, sizeof *k);
    if (!u || !k || chat_input_init(&u->ed)) {
        e->release(e->ctx);
        if (u)
            chat_input_free(&u->ed);
        free(k);
        free(u);
        return NULL;
    }
    atomic_init(&k->refs, 1);
    k->c = e->c;
    k->r = e->r;
    k->release = e->release;
    k->ctx = e->ctx;
    u->core = k;
    u->c = e->c;
    u->delay_ms = e->delay_ms;
    u->sel_msg = -1;
    u->tmpl_w = -1;
    u->follow = true;
    u->in_rows = 1;
    u->back_page = -1;
    u->code_msg = -1;
    u->cursor_line = -1;
    u->smd_from = (size_t)-1;
    u->saved_sig = chat_page_sig(u);   /* a session given with --load is saved already */
    chat_page_history_load(u);
    snprintf(u->path, sizeof u->path, "%s", e->path);
    const char *rf = getenv("GGSCOPE_CHAT_REPLY_FILE");
    if (rf && *rf) {
        size_t n;
        u->reply_script = rfile_read(rf, 1u << 24, RFILE_REGULAR, &n, NULL, NULL);
    }
    const char *sl = getenv("GGSCOPE_CHAT_STALL_LOG");
    if (sl && *sl)
        u->stall_path = strdup(sl);
    return u;
}

int chat_page_attach(chat_page *u, screen *s, int back_page)
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
    chat_page_measure(u);   /* a conversation given with --load, a system prompt */
    chat_page_update_title(u);
    return u->page;
}

void chat_page_show(chat_page *u)
{
    if (u && u->in)
        screen_focus(u->s, u->in);
}

void chat_page_cancel(chat_page *u)
{
    if (!u)
        return;
    chat_page_stop_reply(u);
    if (u->measure)
        ui_job_cancel(&u->measure->job);
}

void chat_page_free(chat_page *u)
{
    if (!u)
        return;
    if (u->tr)
        u->tr->self = NULL;
    if (u->in)
        u->in->self = NULL;
    core_release(u->core);   /* a task still rendering keeps it until it ends */
    free(u->stall_path);
    chat_input_free(&u->ed);
    free(u->reply);
    free(u->rtok);
    free(u->lines);
    free(u->tlines);
    for (size_t i = 0; i < u->lay_nmsg; i++)
        mdview_free(u->lay_msg[i].md);
    free(u->lay_msg);
    mdview_free(u->smd);
    free(u->raw_ids);
    free(u->think_ids);
    free(u->reply_script);
    free(u->lay_sys);
    free(u->tmpl_text);
    free(u->tmpl_hl);
    free(u);
}
