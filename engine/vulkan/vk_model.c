/* Model-level helper of the Vulkan backend: which models it can run (the
 * upload itself is model_prepare, through weight_prepare). */
#include <stdio.h>
#include <stdlib.h>

#include "ggtype.h"
#include "vk_internal.h"

bool vk_model_supported(const model *m, char *why, size_t cap)
{
    const backend_weight *ws[24];
    if (m->hp.head_dim > 256) {
        snprintf(why, cap, "head dimension %u > 256", m->hp.head_dim);
        return false;
    }
    if (m->hp.n_expert > VK_MOE_MAX_EXPERT || m->hp.n_expert_used > VK_MOE_MAX_USED) {
        snprintf(why, cap, "%u experts, %u per token: the Vulkan router takes at most %d, %d per token",
                 m->hp.n_expert, m->hp.n_expert_used, VK_MOE_MAX_EXPERT, VK_MOE_MAX_USED);
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
                                          &l->bv, &l->ffn_norm, &l->ffn_gate, &l->ffn_up, &l->ffn_down,
                                          &l->ffn_gate_inp, &l->ffn_gate_inp_b, &l->ffn_gate_exps,
                                          &l->ffn_up_exps, &l->ffn_down_exps, &l->ffn_gate_exps_b,
                                          &l->ffn_up_exps_b, &l->ffn_down_exps_b};
            for (size_t k = 0; k < sizeof lw / sizeof lw[0]; k++)
                ws[n++] = lw[k];
        }
        for (size_t k = 0; k < n; k++) {
            const backend_weight *w = ws[k];
            if (!model_weight_bound(w)) /* presence: a shape-only model has no data */
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
