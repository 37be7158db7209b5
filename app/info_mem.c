/* info_mem: the memory estimate section of `ggscope info`. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "info_mem.h"
#include "panel.h"   /* ui_fmt_bytes: the one byte formatter of the screens */
#include "app.h"
#include "engine_cli.h"
#include "model.h"
#include "runner.h"
#include "tokenizer.h"

int info_mem_opt(int c, const char *val, info_mem_opts *o)
{
    long v;
    switch (c) {
    case 'c':
        if (!ecli_parse_long("--ctx", val, 1, 1L << 24, &v))
            return -1;
        o->n_ctx = (uint32_t)v;
        break;
    case 'U':
        if (!ecli_parse_long("--used", val, 1, 1L << 24, &v))
            return -1;
        o->n_used = (uint32_t)v;
        break;
    case 't':
        if (!ecli_parse_long("--threads", val, 1, 512, &v))
            return -1;
        o->threads = (int)v;
        break;
    case 'B':
        if (strcmp(val, "auto") && strcmp(val, "cpu") && strcmp(val, "vulkan")) {
            app_error("--backend: unknown backend '%s' (auto, vulkan, cpu)", val);
            return -1;
        }
        o->backend = val;
        break;
    case 'K': {
        char l[128], *sv;
        snprintf(l, sizeof l, "%s", memest_kv_types()); /* comma separated */
        bool ok = false;
        for (char *t = strtok_r(l, ", ", &sv); t && !ok; t = strtok_r(NULL, ", ", &sv))
            ok = !strcmp(t, val);
        if (!ok) {
            app_error("--kv-type: unknown KV cache type '%s' (the engine supports: %s)", val, memest_kv_types());
            return -1;
        }
        o->kv_type = val;
        break;
    }
    default:
        return 0;
    }
    o->on = true;
    return 1;
}

uint64_t info_mem_self_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size, res;
    int n = f ? fscanf(f, "%llu %llu", &size, &res) : 0;
    if (f)
        fclose(f);
    long pg = sysconf(_SC_PAGESIZE);
    return n == 2 && pg > 0 ? (uint64_t)res * (uint64_t)pg : 0;
}

int info_mem_estimate(const gguf_file *f, const info_mem_opts *o, info_mem *out, char *err, size_t errn)
{
    memset(out, 0, sizeof *out);
    const char *be = o->backend ? o->backend : "auto";
    bool vk = !strcmp(be, "vulkan");
    if (!strcmp(be, "auto")) {
        vk = runner_auto_vulkan(-1, out->why, sizeof out->why);
        if (vk)
            out->why[0] = 0;
    }
    snprintf(out->backend, sizeof out->backend, "%s", vk ? "vulkan" : "cpu");
    snprintf(out->kv_type, sizeof out->kv_type, "%s", o->kv_type ? o->kv_type : "f16");
    char msg[512];
    model_status st;
    model *m = model_load_shapes(f, &st, msg, sizeof msg);   /* shapes: a remote file maps no data */
    if (!m) {
        snprintf(err, errn, "%s: memory estimate: the engine cannot run this model: %s", gguf_path(f), msg);
        return APP_BADINPUT;
    }
    tok_vocab *tv = tok_open(f, NULL);
    uint64_t tb = tok_mem_bytes(tv);
    tok_close(tv);
    memest_params p = {.n_ctx = o->n_ctx, .n_used = o->n_used, .backend = vk ? MEMEST_VULKAN : MEMEST_CPU,
                       .n_threads = o->threads, .kv_type = o->kv_type, .program_bytes = o->program_rss};
    int rc = memest_compute(m, gguf_file_size(f), tb, &p, &out->m, msg, sizeof msg);
    if (rc && vk && !strcmp(be, "auto")) { /* auto: a model the device cannot run goes to the CPU, as runner_open does */
        snprintf(out->why, sizeof out->why, "%s", msg);
        snprintf(out->backend, sizeof out->backend, "cpu");
        p.backend = MEMEST_CPU;
        rc = memest_compute(m, gguf_file_size(f), tb, &p, &out->m, msg, sizeof msg);
    }
    model_free(m);
    if (rc) {
        snprintf(err, errn, "memory estimate: %s", msg);
        return APP_BADINPUT;
    }
    return 0;
}

static const char *mib(uint64_t b, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.2f MiB", (double)b / 1048576.0);
    return buf;
}

void info_mem_print(FILE *out, const info_mem *e)
{
    const memest *m = &e->m;
    char a[32], b[32], c[32], d[32];
    fprintf(out, "\nmemory estimate (context %u, batch %u, %u positions used, %s", m->n_ctx, m->n_batch,
            m->n_used, e->backend);
    if (!strcmp(e->backend, "cpu"))
        fprintf(out, ", %d thread%s", m->n_threads, m->n_threads == 1 ? "" : "s");
    fprintf(out, ", KV %s):\n", e->kv_type);
    if (e->why[0])
        fprintf(out, "  backend:     cpu (auto: %s)\n", e->why);
    fprintf(out, "  weights:     %12s  what a run reads of the file (copied into memory or mapped)%s\n",
            mib(m->weights, a, sizeof a),
            m->repacked ? "" : " (no repacked copies)");
    if (m->repacked)
        fprintf(out, "  repacked:    %12s\n", mib(m->repacked, a, sizeof a));
    if (!strcmp(e->backend, "cpu")) {
        fprintf(out, "  KV cache:    %12s", mib(m->kv, a, sizeof a));
        if (m->kv != m->kv_full)
            fprintf(out, "  of %s for the whole context", mib(m->kv_full, b, sizeof b));
        if (m->n_swa_cells)
            fprintf(out, "  (sliding layers: %u cells)", m->n_swa_cells);
        fputc('\n', out);
    }
    fprintf(out, "  compute:     %12s  buffers and scratch%s\n", mib(m->compute, a, sizeof a),
            strcmp(e->backend, "cpu") ? " on the host (staging included)" : "");
    fprintf(out, "  tokenizer:   %12s\n", mib(m->tokenizer, a, sizeof a));
    fprintf(out, "  program:     %12s  binary, libraries, threads\n", mib(m->runtime, a, sizeof a));
    fprintf(out, "  total:       %12s  resident (host)\n", mib(m->host_total, a, sizeof a));
    if (m->dev_total)
        fprintf(out, "  device:      %12s  = weights %s + KV %s + buffers %s (the driver's own memory not counted)\n",
                mib(m->dev_total, a, sizeof a), mib(m->dev_weights, b, sizeof b), mib(m->dev_kv, c, sizeof c),
                mib(m->dev_compute, d, sizeof d));
}

int info_mem_json(cJSON *root, const info_mem *e)
{
    const memest *m = &e->m;
    cJSON *o = cJSON_AddObjectToObject(root, "memory");
    if (!o)
        return -1;
    cJSON_AddNumberToObject(o, "n_ctx", m->n_ctx);
    cJSON_AddNumberToObject(o, "n_batch", m->n_batch);
    cJSON_AddNumberToObject(o, "n_used", m->n_used);
    cJSON_AddStringToObject(o, "backend", e->backend);
    cJSON_AddNumberToObject(o, "threads", m->n_threads);
    cJSON_AddStringToObject(o, "kv_type", e->kv_type);
    cJSON_AddNumberToObject(o, "swa_cells", m->n_swa_cells);
    cJSON_AddNumberToObject(o, "weights", (double)m->weights);
    cJSON_AddNumberToObject(o, "repacked", (double)m->repacked);
    cJSON_AddNumberToObject(o, "kv_cache", (double)m->kv);
    cJSON_AddNumberToObject(o, "kv_cache_full", (double)m->kv_full);
    cJSON_AddNumberToObject(o, "compute", (double)m->compute);
    cJSON_AddNumberToObject(o, "tokenizer", (double)m->tokenizer);
    cJSON_AddNumberToObject(o, "runtime", (double)m->runtime);
    cJSON_AddNumberToObject(o, "total", (double)m->host_total);
    if (m->dev_total) {
        cJSON *d = cJSON_AddObjectToObject(o, "device");
        cJSON_AddNumberToObject(d, "weights", (double)m->dev_weights);
        cJSON_AddNumberToObject(d, "kv_cache", (double)m->dev_kv);
        cJSON_AddNumberToObject(d, "compute", (double)m->dev_compute);
        cJSON_AddNumberToObject(d, "total", (double)m->dev_total);
    } else {
        cJSON_AddNullToObject(o, "device");
    }
    return cJSON_GetObjectItem(o, "device") ? 0 : -1;
}

void info_mem_line(char *buf, size_t cap, const info_mem *e)
{
    const memest *m = &e->m;
    char t[32], w[32], k[32], c[32], o[32], d[32], th[24] = "";
    if (!strcmp(e->backend, "cpu"))
        snprintf(th, sizeof th, ", %d thread%s", m->n_threads, m->n_threads == 1 ? "" : "s");
    uint64_t other = m->tokenizer + m->runtime + m->repacked;
    int n = snprintf(buf, cap, "memory to run at context %u (%s%s): %s resident = weights %s + KV %s + compute %s + "
                     "program %s", m->n_ctx, e->backend, th, ui_fmt_bytes(m->host_total, t, sizeof t),
                     ui_fmt_bytes(m->weights, w, sizeof w), ui_fmt_bytes(m->kv, k, sizeof k), ui_fmt_bytes(m->compute, c, sizeof c),
                     ui_fmt_bytes(other, o, sizeof o));
    if (m->dev_total && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "; device %s", ui_fmt_bytes(m->dev_total, d, sizeof d));
}
