/* runner: see runner.h. */
#include "runner.h"
#include "clock.h"
#include "emsg.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GGSCOPE_HAVE_VULKAN
#include "backend_vulkan.h"
#endif

struct runner {
    model *m;
    backend *be;
    session *s;
    int threads;
    uint32_t n_ctx, n_vocab;
    uint64_t kv_bytes;
    int32_t *hist;        /* token at each position (n_ctx) */
    float *logits;        /* n_vocab, runner_generate's */
    pthread_mutex_t mu;   /* s against runner_cancel while it is swapped */
    void (*notice)(void *ctx, const char *text);
    void *ctx;
    bool notice_new;
    char notice_text[400];
    bool copied;          /* this runner made the model's copy of the weights (model_copy) */
    char info[320 + 512 + 160];  /* desc (auto: why), where the weights are */
};


void runner_describe_backend(const backend *b, char *buf, size_t cap)
{
#ifdef GGSCOPE_HAVE_VULKAN
    const vk_device_info *d = backend_vulkan_device(b);
    if (d) {
        snprintf(buf, cap, "vulkan on %s (%s, device %d)", d->name, vk_device_kind_name(d->kind), d->index);
        return;
    }
#endif
    snprintf(buf, cap, "%s, %d thread%s", b->ops->name, backend_cpu_threads(b),
             backend_cpu_threads(b) == 1 ? "" : "s");
}

#ifdef GGSCOPE_HAVE_VULKAN
/* The Vulkan backend with the model's weights uploaded (model_prepare), or NULL with why. */
static backend *open_vulkan(int device, model *m, const runner_params *p, char *why, size_t cap)
{
    if (!vk_model_supported(m, why, cap))
        return NULL;
    backend *b = backend_vulkan_new(device, why, cap);
    if (!b)
        return NULL;
    if (model_backend_check(m, b, why, cap)) {
        backend_free(b);
        return NULL;
    }
    if (p->progress)
        backend_vulkan_set_progress(b, p->progress, p->ctx, model_weight_bytes(m));
    int rc = model_prepare(m, b, why, cap);
    backend_vulkan_set_progress(b, NULL, NULL, 0);
    if (rc != 0) {
        const char *lm = backend_vulkan_last_message(b);
        size_t l = strlen(why);
        if (lm[0] && l < cap)
            snprintf(why + l, cap - l, ": %s", lm);
        backend_free(b);
        return NULL;
    }
    return b;
}

/* auto: the device to try, or -1 with why the CPU runs. */
static int auto_device(int device, char *why, size_t cap)
{
    vk_device_info devs[16];
    char err[256];
    int n = vk_list_devices(devs, 16, err, sizeof err);
    if (n > 16)
        n = 16;
    int want = device >= 0 ? device : vk_env_device();
    int pick = want >= 0 ? want : vk_pick_device(devs, n);
    if (n < 0)
        snprintf(why, cap, "%s", err);
    else if (n == 0)
        snprintf(why, cap, "no Vulkan device");
    else if (pick < 0)
        snprintf(why, cap, "no usable Vulkan device");
    else if (pick >= n)
        snprintf(why, cap, "no Vulkan device %d", pick);
    else if (devs[pick].software && want < 0)
        snprintf(why, cap,
                 "the only Vulkan device is a software one (%.200s), slower than the CPU backend; "
                 "--backend vulkan uses it", devs[pick].name);
    else
        return pick;
    return -1;
}
#endif

bool runner_auto_vulkan(int device, char *why, size_t cap)
{
#ifdef GGSCOPE_HAVE_VULKAN
    return auto_device(device, why, cap) >= 0;
#else
    (void)device;
    emsg_set(why, cap, "this build has no Vulkan backend");
    return false;
#endif
}

/* The backend p asks for, with r->info saying which; NULL with a message. */
static backend *open_backend(runner *r, const runner_params *p, char *msg, size_t cap)
{
    const char *name = p->backend ? p->backend : "auto";
    char why[512] = "";
    backend *b = NULL;
    bool cpu_auto = false;
    if (!strcmp(name, "vulkan")) {
#ifdef GGSCOPE_HAVE_VULKAN
        b = open_vulkan(p->device, r->m, p, why, sizeof why);
        if (!b) {
            emsg_set(msg, cap, "--backend vulkan: %s", why);
            return NULL;
        }
#else
        emsg_set(msg, cap, "--backend vulkan: this build of ggscope has no Vulkan backend (Vulkan or glslc was not found)");
        return NULL;
#endif
    } else if (!strcmp(name, "auto")) {
#ifdef GGSCOPE_HAVE_VULKAN
        int pick = auto_device(p->device, why, sizeof why);
        if (pick >= 0)
            b = open_vulkan(pick, r->m, p, why, sizeof why);
#else
        snprintf(why, sizeof why, "this build has no Vulkan backend");
#endif
        if (!b) {
            b = backend_cpu_new(p->threads);
            cpu_auto = true;
        }
    } else if (!strcmp(name, "cpu")) {
        b = backend_cpu_new(p->threads);
    } else {
        emsg_set(msg, cap, "--backend: unknown backend '%s' (auto, vulkan, cpu)", name);
        return NULL;
    }
    if (!b) {
        emsg_set(msg, cap, "cannot create the CPU backend");
        return NULL;
    }
    char desc[320];
    runner_describe_backend(b, desc, sizeof desc);
    if (cpu_auto)
        snprintf(r->info, sizeof r->info, "%s (auto: %s)", desc, why);
    else
        snprintf(r->info, sizeof r->info, "%s", desc);
    return b;
}

/* Available memory in bytes (MemAvailable; 0 when unknown). */
static uint64_t mem_available(void)
{
    FILE *fp = fopen("/proc/meminfo", "r");
    if (!fp)
        return 0;
    char line[128];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(fp);
    return (uint64_t)kb << 10;
}

/* On the CPU: copy the weights into memory, or keep the mapping, as
 * p->weights says; r->info gains which (and why, in auto). Returns
 * RUNNER_OK, or RUNNER_ECANCELLED. */
static int place_weights(runner *r, const runner_params *p, char *msg, size_t cap)
{
    if (strcmp(r->be->ops->name, "cpu"))
        return RUNNER_OK;   /* a device holds its own copy */
    model *m = r->m;
    uint64_t bytes = model_copy_bytes(m), avail = mem_available();
    char why[200] = "";
    if (p->weights == RUNNER_WEIGHTS_MAP) {
        snprintf(why, sizeof why, "as asked");
    } else if (p->weights == RUNNER_WEIGHTS_AUTO) {
        if (m->hp.n_expert > 0)
            snprintf(why, sizeof why, "experts are read as chosen");
        else if (!avail)
            snprintf(why, sizeof why, "the available memory is unknown");
        else if (bytes > avail / 2)
            snprintf(why, sizeof why, "%.1f GB of weights, %.1f GB of memory available", bytes / 1e9, avail / 1e9);
    }
    if (!why[0] && !m->copy) {
        int rc = model_copy(m, p->cancel, p->progress, p->ctx, why, sizeof why);
        if (rc == BACKEND_ECANCELLED) {
            emsg_set(msg, cap, "cancelled while copying the weights into memory");
            return RUNNER_ECANCELLED;
        }
        r->copied = rc == 0;
    }
    size_t l = strlen(r->info);
    if (m->copy)
        snprintf(r->info + l, sizeof r->info - l, ", weights in memory (%.1f MB)", bytes / 1e6);
    else
        snprintf(r->info + l, sizeof r->info - l, ", weights mapped from the file (%s)", why);
    return RUNNER_OK;
}

int runner_open(model *m, const runner_params *p, runner **out, char *msg, size_t cap)
{
    *out = NULL;
    if (m && m->shapes_only) { /* before any backend: Vulkan would upload the (absent) weights */
        emsg_set(msg, cap, "the model was loaded for its shapes only (no weights): it cannot be evaluated");
        return RUNNER_ESESSION;
    }
    runner *r = calloc(1, sizeof *r);
    if (!r) {
        emsg_set(msg, cap, "out of memory");
        return RUNNER_ENOMEM;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->m = m;
    r->threads = p->threads;
    r->notice = p->notice;
    r->ctx = p->ctx;
    r->be = open_backend(r, p, msg, cap);
    if (!r->be) {
        runner_close(r);
        return RUNNER_EBACKEND;
    }
    int rc = place_weights(r, p, msg, cap);
    if (rc != RUNNER_OK) {
        runner_close(r);
        return rc;
    }
    session_params sp = {.n_ctx = p->n_ctx, .n_threads = p->threads, .be = r->be};
    r->s = session_new(m, &sp, msg, cap);
    if (!r->s) {
        runner_close(r);
        return RUNNER_ESESSION;
    }
    r->n_ctx = session_n_ctx(r->s);
    r->n_vocab = session_n_vocab(r->s);
    r->kv_bytes = session_kv_bytes(r->s);
    r->hist = malloc(sizeof *r->hist * r->n_ctx);
    r->logits = malloc(sizeof *r->logits * r->n_vocab);
    if (!r->hist || !r->logits) {
        emsg_set(msg, cap, "out of memory");
        runner_close(r);
        return RUNNER_ENOMEM;
    }
    *out = r;
    return RUNNER_OK;
}

void runner_close(runner *r)
{
    if (!r)
        return;
    session_free(r->s);
    model_release(r->m);   /* the device copies, before their backend goes */
    if (r->copied)
        model_uncopy(r->m);
    backend_free(r->be);
    free(r->hist);
    free(r->logits);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

const char *runner_backend_info(const runner *r) { return r ? r->info : "no local backend"; }
backend *runner_backend(const runner *r) { return r->be; }
session *runner_session(const runner *r) { return r->s; }
uint32_t runner_n_ctx(const runner *r) { return r ? r->n_ctx : 0; }
uint64_t runner_kv_bytes(const runner *r) { return r ? r->kv_bytes : 0; }
uint32_t runner_n_vocab(const runner *r) { return r->n_vocab; }

const int32_t *runner_cached(const runner *r, uint32_t *n)
{
    *n = session_used(r->s);
    return r->hist;
}

void runner_truncate(runner *r, uint32_t n_keep)
{
    session_kv_truncate(r->s, n_keep);
}

void runner_cancel(runner *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    session_cancel(r->s);
    pthread_mutex_unlock(&r->mu);
}

void runner_set_notice(runner *r, void (*fn)(void *ctx, const char *text), void *ctx)
{
    r->notice = fn;
    r->ctx = ctx;
}

bool runner_take_notice(runner *r, char *buf, size_t cap)
{
    if (!r || !r->notice_new)
        return false;
    r->notice_new = false;
    emsg_set(buf, cap, "%s", r->notice_text);
    return true;
}

/* After device error rc at (tokens, n, pos): move to a new CPU backend and
 * session, replay the cached positions < pos and retry. */
static int fall_back(runner *r, int rc, const int32_t *tokens, uint32_t n, uint32_t pos, float *logits,
                     bool all)
{
    snprintf(r->notice_text, sizeof r->notice_text, "the %s backend failed (%.200s); continuing on the CPU",
             r->be->ops->name, session_error(r->s));
    backend *cpu = backend_cpu_new(r->threads);
    if (!cpu)
        return rc;   /* the device's error stands */
    session_params sp = {.n_ctx = r->n_ctx, .n_threads = r->threads, .be = cpu};
    session *s = session_new(r->m, &sp, NULL, 0);
    if (!s) {
        backend_free(cpu);
        return rc;
    }
    r->notice_new = true;
    if (r->notice)
        r->notice(r->ctx, r->notice_text);
    pthread_mutex_lock(&r->mu);
    session *old = r->s;
    r->s = s;
    pthread_mutex_unlock(&r->mu);
    session_free(old);
    model_release(r->m);   /* the device copies, before their backend goes */
    backend_free(r->be);
    r->be = cpu;
    if (pos > 0 && (rc = session_eval(s, r->hist, pos, 0, NULL, false)) != 0)
        return rc;
    return session_eval(s, tokens, n, pos, logits, all);
}

int runner_eval(runner *r, const int32_t *tokens, uint32_t n, uint32_t pos, float *logits, bool all,
                char *msg, size_t cap)
{
    /* the history first: a retry replays it, these tokens included */
    bool have_hist = (uint64_t)pos + n <= r->n_ctx;
    if (have_hist)
        memcpy(r->hist + pos, tokens, (size_t)n * sizeof *tokens);
    int rc = session_eval(r->s, tokens, n, pos, logits, all);
    if ((rc == BACKEND_EDEVICE || rc == BACKEND_ENOMEM) && have_hist && strcmp(r->be->ops->name, "cpu"))
        rc = fall_back(r, rc, tokens, n, pos, logits, all);
    if (rc)
        emsg_set(msg, cap, "evaluation failed: %s", session_error(r->s));
    return rc;
}

/* ---- generation ---- */

static bool cancelled(const runner_gen *g)
{
    return g->cancel && atomic_load(g->cancel);
}

/* runner_eval, retried once when a cancel request meant for an earlier
 * generation was still pending in the session (our own flag is not set). */
static int eval(runner *r, const int32_t *t, uint32_t n, uint32_t pos, float *lg, const runner_gen *g,
                char *msg, size_t cap)
{
    int rc = runner_eval(r, t, n, pos, lg, false, msg, cap);
    if (rc == BACKEND_ECANCELLED && !cancelled(g))
        rc = runner_eval(r, t, n, pos, lg, false, msg, cap);
    return rc;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

int runner_generate(runner *r, const int32_t *ids, uint32_t n, const runner_gen *g, runner_stats *st,
                    char *msg, size_t cap)
{
    runner_stats rs = {.n_prompt = n, .stop = RUNNER_STOP_ERROR};
    int ret = RUNNER_EARG;
    sampler *smp = NULL;
    uint32_t n_ctx = r->n_ctx;
    double t0 = clock_now_s();
    if (!n || n >= n_ctx) {
        emsg_set(msg, cap, "the prompt (%u tokens) does not fit the context (%u)", n, n_ctx);
        goto done;
    }
    uint32_t held = session_used(r->s), common = 0;
    while (common < held && common < n && r->hist[common] == ids[common])
        common++;
    if (common >= n)
        common = n - 1;   /* the last prompt token is evaluated again for its logits */
    session_kv_truncate(r->s, common);
    if (session_used(r->s) < common)
        common = session_used(r->s); /* a sliding-window cache cannot keep it all */
    rs.n_reused = common;
    smp = sampler_new(&g->sp, r->n_vocab);
    if (!smp) {
        emsg_set(msg, cap, "bad sampling settings or out of memory");
        ret = RUNNER_ESAMPLE;
        goto done;
    }
    for (uint32_t i = 0; i < n; i++)
        sampler_accept(smp, ids[i]);
    ret = RUNNER_EEVAL;
    if (g->on_prompt)
        g->on_prompt(g->ctx, 0, n - common);
    for (uint32_t p = common; p < n;) {
        if (cancelled(g)) {
            rs.stop = RUNNER_STOP_CANCEL;
            rs.t_prompt_s = clock_now_s() - t0;
            ret = RUNNER_OK;
            goto done;
        }
        uint32_t k = g->prompt_chunk && n - p > g->prompt_chunk ? g->prompt_chunk : n - p;
        int rc = eval(r, ids + p, k, p, p + k == n ? r->logits : NULL, g, msg, cap);
        if (rc == BACKEND_ECANCELLED) {
            rs.stop = RUNNER_STOP_CANCEL;
            rs.t_prompt_s = clock_now_s() - t0;
            ret = RUNNER_OK;
            goto done;
        }
        if (rc)
            goto done;
        rs.n_eval += k;
        p += k;
        if (g->on_prompt)
            g->on_prompt(g->ctx, rs.n_eval, n - common);
    }
    rs.t_prompt_s = clock_now_s() - t0;
    double t1 = clock_now_s();
    uint32_t pos = n;
    rs.stop = RUNNER_STOP_LIMIT;
    for (int64_t left = g->n_predict; left != 0; left--) {
        if (cancelled(g)) {
            rs.stop = RUNNER_STOP_CANCEL;
            break;
        }
        sampler_result sr;
        int32_t tok = sampler_sample(smp, r->logits, g->want_info ? &sr : NULL);
        if (tok < 0) {
            emsg_set(msg, cap, "sampling failed (logits are not finite)");
            ret = RUNNER_ESAMPLE;
            goto done;
        }
        if (!rs.n_gen) {
            t1 = clock_now_s();
            rs.t_first_s = t1 - t0;
        }
        sampler_accept(smp, tok);
        rs.n_gen++;
        if (g->on_token && g->on_token(g->ctx, tok, g->want_info ? &sr : NULL)) {
            ret = RUNNER_ECALLBACK;
            goto done;
        }
        if (g->eog && tok_is_eog(g->eog, tok)) {
            rs.stop = RUNNER_STOP_EOG;
            break;
        }
        if (left == 1) {
            rs.stop = RUNNER_STOP_LIMIT;
            break;
        }
        if (pos + g->ctx_reserve >= n_ctx) {
            rs.stop = RUNNER_STOP_CTX;
            break;
        }
        if (g->delay_ms)
            sleep_ms(g->delay_ms);
        if (cancelled(g)) {
            rs.stop = RUNNER_STOP_CANCEL;
            break;
        }
        int rc = eval(r, &tok, 1, pos, r->logits, g, msg, cap);
        if (rc == BACKEND_ECANCELLED) {
            rs.stop = RUNNER_STOP_CANCEL;
            break;
        }
        if (rc)
            goto done;
        pos++;
    }
    rs.t_gen_s = rs.n_gen ? clock_now_s() - t1 : 0;
    ret = RUNNER_OK;
done:
    if (ret)
        rs.stop = RUNNER_STOP_ERROR;
    sampler_free(smp);
    if (st)
        *st = rs;
    return ret;
}
