/* chat_ui: see chat_ui.h. */
#include "chat_ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "chat_page.h"
#include "rfile.h"

/* The engine and conversation the chat page runs on; the page frees them
 * (core_release) once its helper threads are done with them. */
typedef struct {
    ecli_engine e;
    chs *c;
} chat_ui_core;

struct chat_ui {
    chat_ui_opts o;
    chat_ui_core *core;
    chs *c;               /* core->c */
    chat_page *pg;
};

int chat_ui_template(const gguf_file *f, const char *file, const char *format, chat_template **out, char *source,
                     size_t cap)
{
    *out = NULL;
    if (!file && !format)
        return APP_OK;
    if (file && format) {
        app_error("give either --template or --format, not both");
        return APP_BADINPUT;
    }
    chat_template *model = chat_template_from_gguf(f, NULL, NULL);
    if (!model) {
        app_error("out of memory");
        return APP_FAIL;
    }
    chat_template *ct = NULL;
    if (file) {
        size_t n;
        rfile_status st;
        int err = 0;
        char *text = rfile_read(file, 1u << 20, RFILE_REGULAR, &n, &st, &err);
        if (!text || memchr(text, 0, n)) {
            app_error("--template %s: %s", file, text ? "not a text file (holds a NUL byte)" : rfile_strerror(st, err));
            free(text);
            chat_template_free(model);
            return APP_BADINPUT;
        }
        ct = chat_template_new(text, chat_template_bos(model), chat_template_eos(model));
        free(text);
        snprintf(source, cap, "%s (--template)", file);
    } else {
        chat_format fm;
        if (!chat_format_from_name(format, &fm)) {
            char names[400];
            chat_format_names(names, sizeof names);
            app_error("--format %s: unknown format (one of: %s)", format, names);
            chat_template_free(model);
            return APP_BADINPUT;
        }
        ct = chat_template_new_builtin(fm, chat_template_bos(model), chat_template_eos(model));
        snprintf(source, cap, "built-in %s (--format %s)", chat_format_name(fm), format);
    }
    chat_template_free(model);
    if (!ct) {
        app_error("out of memory");
        return APP_FAIL;
    }
    /* a template that cannot render one user message is refused now */
    chat_message probe = {"user", "Hello"};
    chat_opts o = {.add_generation_prompt = true, .no_fallback = true};
    chat_result res;
    char *t = chat_render(ct, &probe, 1, &o, NULL, &res);
    if (!t) {
        app_error("--template %s: %s", file ? file : format, res.status);
        chat_template_free(ct);
        return APP_BADINPUT;
    }
    free(t);
    *out = ct;
    return APP_OK;
}

static void core_release(void *ctx)
{
    chat_ui_core *k = ctx;
    chs_free(k->c);
    ecli_close(&k->e);
    free(k);
}

chat_ui *chat_ui_new(const char *path, gguf_file *f, const chat_ui_opts *o, bool quiet, char *err, size_t cap)
{
    chat_ui *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, cap, "out of memory");
        chat_template_free(o->tmpl);
        return NULL;
    }
    u->o = *o;
    if (u->o.eng.threads == 0) {
        /* one core is left to the loop thread: the UI stays responsive while
         * the model computes (--threads overrides) */
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        u->o.eng.threads = nc > 1 ? (int)(nc - 1) : 1;
    }
    const char *dl = getenv("GGSCOPE_CHAT_DELAY_MS");
    if (!u->o.delay_ms && dl && *dl)
        u->o.delay_ms = (unsigned)strtoul(dl, NULL, 10);
    u->core = calloc(1, sizeof *u->core);
    if (!u->core) {
        snprintf(err, cap, "out of memory");
        free(u);
        chat_template_free(o->tmpl);
        return NULL;
    }
    int rc;
    if (quiet) {
        rc = ecli_open_file(f, path, &u->o.eng, u->o.eng.n_ctx, &u->core->e, err, cap);
    } else {
        rc = ecli_open_file(f, path, &u->o.eng, u->o.eng.n_ctx, &u->core->e, NULL, 0);
        if (rc)
            snprintf(err, cap, "cannot load the model");
    }
    if (rc) {
        free(u->core);
        free(u);
        chat_template_free(o->tmpl);
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
        free(u);
        chat_template_free(o->tmpl);
        return NULL;
    }
    u->o.tmpl = NULL;
    if (o->tmpl && chs_set_template(u->c, o->tmpl, true, o->tmpl_source)) {
        snprintf(err, cap, "out of memory");
        if (!quiet)
            app_error("%s", err);
        chs_free(u->c);
        ecli_close(&u->core->e);
        free(u->core);
        free(u);
        return NULL;
    }
    chs_set_raw(u->c, o->raw);
    if (o->have_settings)
        chs_set_settings(u->c, &o->settings);
    if (o->system)
        chs_set_system(u->c, o->system);
    if (o->session)
        chs_load_file(u->c, o->session);   /* its system prompt and settings win */
    u->o.session = NULL;
    chat_page_engine pe = {path, u->c, u->core->e.r, core_release, u->core, u->o.delay_ms};
    u->pg = chat_page_new(&pe);   /* takes the core, even when it fails */
    if (!u->pg) {
        snprintf(err, cap, "out of memory");
        free(u);
        return NULL;
    }
    return u;
}

int chat_ui_attach(chat_ui *u, screen *s, int back_page)
{
    return chat_page_attach(u->pg, s, back_page);
}

void chat_ui_show(chat_ui *u)
{
    if (u)
        chat_page_show(u->pg);
}

void chat_ui_cancel(chat_ui *u)
{
    if (u)
        chat_page_cancel(u->pg);
}

void chat_ui_autosave(chat_ui *u, char *note, size_t cap)
{
    note[0] = 0;
    if (u && chat_page_autosave(u->pg, note, cap) == 0)
        note[0] = 0;
}

void chat_ui_free(chat_ui *u)
{
    if (!u)
        return;
    chat_page_free(u->pg);
    free(u);
}
