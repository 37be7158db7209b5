/* Backend choice, weight upload and device-error fallback for the engine
 * commands (see backend_select.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "backend_select.h"
#include "session.h"

#ifdef GGSCOPE_HAVE_VULKAN
#include "backend_vulkan.h"

static void on_upload(void *user, uint64_t done, uint64_t total)
{
    (void)user;
    app_progress("uploading weights", (double)done, (double)total);
}

/* The Vulkan backend with the model's weights uploaded (model_prepare), or NULL with why. */
static backend *open_vulkan(int device, model *m, char *why, size_t cap)
{
    if (!vk_model_supported(m, why, cap))
        return NULL;
    backend *b = backend_vulkan_new(device, why, cap);
    if (!b)
        return NULL;
    backend_vulkan_set_progress(b, on_upload, NULL, model_weight_bytes(m));
    int rc = model_prepare(m, b, why, cap);
    app_progress_end();
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
#endif

void app_backend_describe(const backend *b, char *buf, size_t cap)
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

backend *app_backend_open(const char *name, int device, int threads, model *m, bool quiet)
{
    if (!name)
        name = "auto";
#ifndef GGSCOPE_HAVE_VULKAN
    (void)device;
    (void)m;
#else
    char why[512] = "";
#endif
    char desc[320];
    backend *b = NULL;
    if (!strcmp(name, "vulkan")) {
#ifdef GGSCOPE_HAVE_VULKAN
        b = open_vulkan(device, m, why, sizeof why);
        if (!b) {
            app_error("--backend vulkan: %s", why);
            return NULL;
        }
#else
        app_error("--backend vulkan: this build of ggscope has no Vulkan backend (Vulkan or glslc was not found)");
        return NULL;
#endif
    } else if (!strcmp(name, "auto")) {
#ifdef GGSCOPE_HAVE_VULKAN
        vk_device_info devs[16];
        char err[256];
        int n = vk_list_devices(devs, 16, err, sizeof err);
        if (n > 16)
            n = 16;
        int want = device >= 0 ? device : vk_env_device();
        int pick = want >= 0 ? want : vk_pick_device(devs, n);
        if (n < 0)
            snprintf(why, sizeof why, "%s", err);
        else if (n == 0)
            snprintf(why, sizeof why, "no Vulkan device");
        else if (pick < 0)
            snprintf(why, sizeof why, "no usable Vulkan device");
        else if (pick >= n)
            snprintf(why, sizeof why, "no Vulkan device %d", pick);
        else if (devs[pick].software && want < 0)
            snprintf(why, sizeof why,
                     "the only Vulkan device is a software one (%.200s), slower than the CPU backend; "
                     "--backend vulkan uses it", devs[pick].name);
        else
            b = open_vulkan(pick, m, why, sizeof why);
        if (!b) {
            b = backend_cpu_new(threads);
            if (b && !quiet) {
                app_backend_describe(b, desc, sizeof desc);
                fprintf(stderr, "backend: %s (auto: %s)\n", desc, why);
            }
            quiet = true;
        }
#else
        b = backend_cpu_new(threads);
        if (b && !quiet) {
            app_backend_describe(b, desc, sizeof desc);
            fprintf(stderr, "backend: %s (auto: this build has no Vulkan backend)\n", desc);
        }
        quiet = true;
#endif
    } else if (!strcmp(name, "cpu")) {
        b = backend_cpu_new(threads);
    } else {
        app_error("--backend: unknown backend '%s' (auto, vulkan, cpu)", name);
        return NULL;
    }
    if (!b) {
        app_error("cannot create the CPU backend");
        return NULL;
    }
    if (!quiet) {
        app_backend_describe(b, desc, sizeof desc);
        fprintf(stderr, "backend: %s\n", desc);
    }
    return b;
}

/* Remember tokens[0..n) at positions pos.. (grows the history as needed). */
static bool remember(ecli_engine *e, const int32_t *tokens, uint32_t n, uint32_t pos)
{
    uint64_t need = (uint64_t)pos + n;
    if (need > e->hist_cap) {
        uint64_t cap = e->hist_cap ? e->hist_cap : 256;
        while (cap < need)
            cap *= 2;
        int32_t *h = realloc(e->hist, cap * sizeof *h);
        if (!h)
            return false;
        e->hist = h;
        e->hist_cap = (uint32_t)cap;
    }
    memcpy(e->hist + pos, tokens, (size_t)n * sizeof *tokens);
    return true;
}

int app_eval(ecli_engine *e, const int32_t *tokens, uint32_t n, uint32_t pos, float *logits, bool all)
{
    /* the history is kept first: the retry replays it, including these tokens */
    bool have_hist = remember(e, tokens, n, pos);
    int rc = session_eval(e->s, tokens, n, pos, logits, all);
    if ((rc != BACKEND_EDEVICE && rc != BACKEND_ENOMEM) || !strcmp(e->be->ops->name, "cpu") || !have_hist)
        return rc;

    fprintf(stderr, "\nggscope: the %s backend failed (%s); continuing on the CPU\n", e->be->ops->name,
            session_error(e->s));
    uint32_t n_ctx = session_n_ctx(e->s);
    backend *cpu = backend_cpu_new(e->threads);
    if (!cpu)
        return rc;
    session_params sp = {.n_ctx = n_ctx, .n_threads = e->threads, .be = cpu};
    char msg[256];
    session *s = session_new(e->m, &sp, msg, sizeof msg);
    if (!s) {
        app_error("cannot create a CPU session: %s", msg);
        backend_free(cpu);
        return rc;
    }
    session_free(e->s);
    model_release(e->m);   /* the device copies, before their backend goes */
    backend_free(e->be);
    e->s = s;
    e->be = cpu;
    if (pos > 0 && (rc = session_eval(s, e->hist, pos, 0, NULL, false)) != 0)
        return rc;
    return session_eval(s, tokens, n, pos, logits, all);
}
