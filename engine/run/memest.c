/* memest: memory estimates from the session's and the backends' sizing. */
#include <string.h>

#include "memest.h"
#include "emsg.h"
#include "session.h"
#include "tpool.h"
#ifdef GGSCOPE_HAVE_VULKAN
#include "backend_vulkan.h"
#endif

/* The process without the model: program_bytes (the binary's pages, its
 * libraries and the C heap as loaded), plus what a run touches beyond them
 * (the engine's code, the heap's growth), and each worker thread's stack and
 * heap arena. Measured with peak RSS (bench/mem_check.sh) on x86-64 Linux,
 * glibc. RUNTIME_BASE stands for the whole when program_bytes is unknown
 * (a build without libcurl: the libraries are about 7 MiB fewer). */
#define RUNTIME_BASE (19u << 18) /* 4.75 MiB */
#define RUNTIME_RUN (1u << 20)
#define RUNTIME_PER_THREAD (96u << 10)

/* backend_vulkan.c: its buffers of fixed size (device-local arena,
 * host-visible staging). */
#define VK_ARENA_BYTES (8u << 20)
#define VK_STAGING_BYTES (32u << 20)
#define VK_BUF_PAD 272 /* a device buffer's padding and rounding, at most */

#define PAGE_BYTES 4096

/* sampler.c: a candidate (id, logit, p) and a logit per token */
#define SAMPLER_BYTES_PER_TOKEN 16

const char *memest_kv_types(void)
{
    return "f16";
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* The backend's matmul scratch: the largest quantized activations and
 * rounded activations over the products of the forward pass, and the
 * largest per-thread buffer. */
typedef struct {
    uint64_t act, rounded, per_thread;
} mm_sizes;

static void mm_add(mm_sizes *s, const backend_weight *w, uint32_t n_tok)
{
    if (!model_weight_bound(w))
        return;
    uint64_t a, r, t;
    backend_cpu_matmul_sizes(w, n_tok, &a, &r, &t);
    if (a > s->act)
        s->act = a;
    if (r > s->rounded)
        s->rounded = r;
    if (t > s->per_thread)
        s->per_thread = t;
}

static void mm_scan(const model *m, uint32_t n_tok, uint32_t logit_rows, mm_sizes *s)
{
    for (uint32_t il = 0; il < m->hp.n_layer; il++) {
        const model_layer *ly = &m->layers[il];
        const backend_weight *ws[] = {&ly->wq, &ly->wk, &ly->wv, &ly->wo, &ly->ffn_gate, &ly->ffn_up,
                                      &ly->ffn_down, &ly->ffn_gate_inp};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            mm_add(s, ws[i], n_tok);
    }
    mm_add(s, &m->output, n_tok < logit_rows ? n_tok : logit_rows);
}

/* Device bytes of one uploaded weight (vk_buffer_create's padding). */
static uint64_t dev_weight(const backend_weight *w)
{
    if (!model_weight_bound(w))
        return 0;
    return w->ne1 * w->row_bytes * (w->ne2 > 1 ? w->ne2 : 1) + VK_BUF_PAD;
}

static uint64_t dev_weights(const model *m)
{
    uint64_t n = dev_weight(&m->tok_embd) + dev_weight(&m->output_norm);
    if (!m->hp.tied_embeddings)
        n += dev_weight(&m->output);
    for (uint32_t il = 0; il < m->hp.n_layer; il++) {
        const model_layer *ly = &m->layers[il];
        /* every weight of the block: model_prepare uploads each one */
        const backend_weight *ws[] = {
            &ly->attn_norm, &ly->wq, &ly->wk, &ly->wv, &ly->wo, &ly->bq, &ly->bk, &ly->bv, &ly->bo,
            &ly->q_norm, &ly->k_norm, &ly->post_attn_norm, &ly->ffn_norm, &ly->ffn_gate, &ly->ffn_up,
            &ly->ffn_down, &ly->ffn_gate_b, &ly->ffn_up_b, &ly->ffn_down_b, &ly->post_ffw_norm,
            &ly->ffn_gate_inp, &ly->ffn_gate_inp_b, &ly->ffn_gate_exps, &ly->ffn_up_exps,
            &ly->ffn_down_exps, &ly->ffn_gate_exps_b, &ly->ffn_up_exps_b, &ly->ffn_down_exps_b,
            &ly->attn_sinks};
        _Static_assert(sizeof ws / sizeof ws[0] == MODEL_LAYER_WEIGHTS, "every weight of model_layer");
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            n += dev_weight(ws[i]);
    }
    return n;
}

int memest_compute(const model *m, uint64_t file_bytes, uint64_t tok_bytes, const memest_params *p, memest *out,
                   char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (!m || !p) {
        emsg_set(msg, cap, "no model");
        return -1;
    }
    if (p->kv_type && strcmp(p->kv_type, "f16")) {
        emsg_set(msg, cap, "unknown KV cache type '%s' (the engine supports: %s)", p->kv_type, memest_kv_types());
        return -1;
    }
    session_params sp = {.n_ctx = p->n_ctx};
    session_plan pl;
    if (session_plan_make(m, &sp, &pl)) {
        emsg_set(msg, cap, "a KV cache of %u positions overflows", p->n_ctx);
        return -1;
    }
    if (pl.n_ctx == 0) {
        emsg_set(msg, cap, "a context of 0 positions");
        return -1;
    }
    if (p->n_used > pl.n_ctx) {
        emsg_set(msg, cap, "%u positions used is more than the context (%u)", p->n_used, pl.n_ctx);
        return -1;
    }
    if (p->backend == MEMEST_VULKAN) {
#ifdef GGSCOPE_HAVE_VULKAN
        char why[256];
        if (!vk_model_supported(m, why, sizeof why)) {
            emsg_set(msg, cap, "the Vulkan backend cannot run this model: %s", why);
            return -1;
        }
#else
        emsg_set(msg, cap, "this build of ggscope has no Vulkan backend");
        return -1;
#endif
    }
    const model_hparams *hp = &m->hp;
    const uint32_t used = p->n_used ? p->n_used : pl.n_ctx;
    const uint32_t rows = used < pl.n_batch ? used : pl.n_batch; /* the largest batch evaluated */
    const int threads = p->n_threads > 0 ? p->n_threads : tpool_cores();
    out->n_ctx = pl.n_ctx;
    out->n_batch = pl.n_batch;
    out->n_used = used;
    out->n_swa_cells = pl.n_swa_cells;
    out->n_threads = p->backend == MEMEST_CPU ? threads : 1;

    /* KV: K and V, F16; of each layer the rows written (a ring: at most its cells) */
    const uint64_t row_bytes = 2ull * 2ull * hp->n_head_kv * hp->head_dim;
    out->kv_full = 2ull * 2ull * pl.kv;
    for (uint32_t il = 0; il < hp->n_layer; il++)
        out->kv += row_bytes * min64(used, session_plan_layer_rows(m, &pl, il));

    /* the session's scratch: the rows of the largest batch (a buffer's rows
     * past it are never written); the runner's logits, token history and
     * the sampler's candidates */
    const uint64_t scratch = 4ull * pl.f32 / pl.n_batch * rows + pl.host_bytes;
    const uint64_t host_fixed = 4ull * hp->n_vocab + 4ull * pl.n_ctx + (uint64_t)SAMPLER_BYTES_PER_TOKEN * hp->n_vocab;
    /* every page of the file is read but the token embeddings' rows of
     * tokens never seen (get_rows), unless the output head reads them all;
     * a row read touches its pages: at most n_used distinct rows (the
     * Vulkan backend's upload reads them all) */
    out->weights = file_bytes;
    const backend_weight *te = &m->tok_embd;
    const uint64_t te_bytes = te->ne1 * te->row_bytes;
    if (p->backend == MEMEST_CPU && !hp->tied_embeddings && te_bytes <= file_bytes) {
        const uint64_t seen = min64(te_bytes, (uint64_t)used * (te->row_bytes + PAGE_BYTES));
        out->weights = file_bytes - te_bytes + seen;
    }
    out->tokenizer = tok_bytes;
    out->runtime = (p->program_bytes ? p->program_bytes + RUNTIME_RUN : RUNTIME_BASE) +
                   (uint64_t)RUNTIME_PER_THREAD * (uint64_t)(out->n_threads - 1);
    if (p->backend == MEMEST_CPU) {
        mm_sizes mm = {0};
        mm_scan(m, rows, pl.logit_rows, &mm);
        uint64_t per_thread = mm.per_thread + backend_cpu_attn_thread_bytes(hp->n_head, hp->n_head_kv, hp->head_dim);
        out->compute = scratch + host_fixed + mm.act + mm.rounded + per_thread * (uint64_t)threads;
    } else {
        out->dev_weights = dev_weights(m);
        out->dev_kv = out->kv_full + 2 * VK_BUF_PAD;
        out->dev_compute = 4ull * pl.f32 + 12 * VK_BUF_PAD + VK_ARENA_BYTES;
        out->dev_total = out->dev_weights + out->dev_kv + out->dev_compute;
        out->kv = 0; /* on the device */
        out->compute = pl.host_bytes + host_fixed + VK_STAGING_BYTES;
    }
    out->host_total = out->weights + out->repacked + out->kv + out->compute + out->tokenizer + out->runtime;
    return 0;
}
