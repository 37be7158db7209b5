/* Model-level helpers of the Vulkan backend: which models it can run, and
 * uploading all of a model's weights once, with progress. */
#include <stdio.h>
#include <stdlib.h>

#include "ggtype.h"
#include "vk_internal.h"

/* Every weight of the model, in upload order; returns the count written. */
static size_t model_weights(const model *m, const backend_weight **out, size_t cap)
{
    size_t n = 0;
#define ADD(w)                                     \
    do {                                           \
        if ((w).data && n < cap)                   \
            out[n++] = &(w);                       \
    } while (0)
    ADD(m->tok_embd);
    for (uint32_t i = 0; i < m->hp.n_layer; i++) {
        const model_layer *l = &m->layers[i];
        ADD(l->attn_norm);
        ADD(l->wq);
        ADD(l->wk);
        ADD(l->wv);
        ADD(l->wo);
        ADD(l->bq);
        ADD(l->bk);
        ADD(l->bv);
        ADD(l->ffn_norm);
        ADD(l->ffn_gate);
        ADD(l->ffn_up);
        ADD(l->ffn_down);
    }
    ADD(m->output_norm);
    if (m->output.data != m->tok_embd.data)
        ADD(m->output);
#undef ADD
    return n;
}

bool vk_model_supported(const model *m, char *why, size_t cap)
{
    const backend_weight *ws[16];
    if (m->hp.head_dim > 256) {
        snprintf(why, cap, "head dimension %u > 256", m->hp.head_dim);
        return false;
    }
    /* check the first layer and the tensors outside layers; layers share types
     * in practice, but check all of them. */
    for (uint32_t i = 0; i <= m->hp.n_layer; i++) {
        size_t n = 0;
        if (i == m->hp.n_layer) {
            ws[n++] = &m->tok_embd;
            ws[n++] = &m->output;
            ws[n++] = &m->output_norm;
        } else {
            const model_layer *l = &m->layers[i];
            const backend_weight *lw[] = {&l->attn_norm, &l->wq, &l->wk, &l->wv, &l->wo, &l->bq, &l->bk,
                                          &l->bv, &l->ffn_norm, &l->ffn_gate, &l->ffn_up, &l->ffn_down};
            for (size_t k = 0; k < sizeof lw / sizeof lw[0]; k++)
                ws[n++] = lw[k];
        }
        for (size_t k = 0; k < n; k++) {
            const backend_weight *w = ws[k];
            if (!w->data)
                continue;
            bool vec = w->ne1 == 1 && w != &m->tok_embd && w != &m->output;
            if (vec ? w->type != GGTYPE_F32 : !vk_type_supported(w->type)) {
                snprintf(why, cap, "tensor %s has type %s, which the Vulkan backend does not run",
                         w->name ? w->name : "?", ggtype_name(w->type));
                return false;
            }
        }
    }
    return true;
}

int backend_vulkan_load_model(backend *b, const model *m, char *err, size_t errlen)
{
    if (!backend_is_vulkan(b)) {
        snprintf(err, errlen, "not a Vulkan backend");
        return BACKEND_EARG;
    }
    vk_ctx *c = b->ctx;
    if (!vk_model_supported(m, err, errlen))
        return BACKEND_EUNSUPPORTED;
    size_t cap = 4 + (size_t)m->hp.n_layer * 12;
    const backend_weight **ws = calloc(cap, sizeof *ws);
    if (!ws) {
        snprintf(err, errlen, "out of memory");
        return BACKEND_ENOMEM;
    }
    size_t n = model_weights(m, ws, cap);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ws[i]->row_bytes * ws[i]->ne1;
    if (c->progress) {
        c->progress_total = total;
        c->progress_done = 0;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        vk_weight *vw;
        rc = vk_weight_get(c, ws[i], &vw);
        if (rc != 0)
            snprintf(err, errlen, "uploading %s: %s%s%s", ws[i]->name ? ws[i]->name : "a weight",
                     backend_strerror(rc), c->last_msg[0] ? ": " : "", c->last_msg);
    }
    free(ws);
    return rc;
}
