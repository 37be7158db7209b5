/* session: KV cache, scratch buffers and the forward pass of every
 * architecture of model_arch.c (one pass; the model's flags, scales and
 * per-layer fields say where a family differs). */
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session.h"
#include "clock.h"

#define LOGIT_ROWS 16   /* rows of the logits scratch (--all is computed in slices) */

struct session {
    const model *m;
    backend *be;
    bool own_be;
    uint32_t n_ctx, n_batch, used;
    uint32_t hi;          /* one past the highest position written since the cache was empty */
    atomic_bool cancel;
    /* KV cache: per layer n_ctx rows (or a ring of n_swa_cells rows for a
     * sliding layer) of n_head_kv * head_dim F16 */
    backend_buf *kc, *vc;
    size_t *kv_off;       /* per layer: its first element */
    uint32_t n_swa_cells; /* rows of a sliding layer's ring (0: sliding layers keep n_ctx rows) */
    const float *rope_factors;
    /* scratch (n_batch rows): x, xb [E]; q, att [QD]; k, v [KD]; g, u [F, or n_used x n_ff_exp];
     * logits [LOGIT_ROWS][V]; experts: router logits rl [n_expert], weights rw [n_used],
     * outputs ye [n_used][E] (NULL for a dense model) */
    backend_buf *x, *xb, *q, *att, *k, *v, *g, *u, *lg, *rl, *rw, *ye;
    int32_t *pos;
    int32_t *ids;         /* experts chosen: n_batch x n_used (host memory) */
    session_stats st;
    char err[256];
};

static int set_err(session *s, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int set_err(session *s, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return rc;
}

static backend_view V(backend_buf *b, size_t off)
{
    return (backend_view){b, off};
}

/* Elements of each scratch buffer of a session of n_batch rows (n_batch x
 * E for x, ...); rl, rw, ye and ids are 0 for a dense model. */
typedef struct {
    size_t x, xb, q, att, k, v, g, u, lg, rl, rw, ye; /* F32 */
    size_t pos, ids;                                  /* int32_t, host */
} buf_sizes;

static buf_sizes sizes_of(const model_hparams *hp, uint32_t n_batch)
{
    const size_t E = hp->n_embd, QD = (size_t)hp->n_head * hp->head_dim;
    const size_t KD = (size_t)hp->n_head_kv * hp->head_dim, NB = n_batch;
    const size_t K = hp->n_expert_used, FF = (size_t)K * hp->n_ff_exp;
    const size_t F = hp->n_expert && FF > hp->n_ff ? FF : hp->n_ff;
    buf_sizes b = {
        .x = NB * E, .xb = NB * (E > QD ? E : QD), .q = NB * QD, .att = NB * QD, .k = NB * KD, .v = NB * KD,
        .g = NB * F, .u = NB * F, .lg = (size_t)LOGIT_ROWS * hp->n_vocab, .pos = NB,
    };
    if (hp->n_expert) {
        b.rl = NB * hp->n_expert;
        b.rw = NB * K;
        b.ye = NB * K * E;
        b.ids = NB * K;
    }
    return b;
}

uint32_t session_plan_layer_rows(const model *m, const session_plan *pl, uint32_t il)
{
    return m->layers[il].swa && pl->n_swa_cells ? pl->n_swa_cells : pl->n_ctx;
}

int session_plan_make(const model *m, const session_params *p, session_plan *out)
{
    session_params dp = {0};
    if (!p)
        p = &dp;
    const model_hparams *hp = &m->hp;
    memset(out, 0, sizeof *out);
    out->n_ctx = p->n_ctx ? p->n_ctx : (hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    out->n_batch = p->n_batch ? p->n_batch : 512; /* llama.cpp's ubatch: the same kernel choices */
    if (out->n_batch > out->n_ctx)
        out->n_batch = out->n_ctx;
    /* llama.cpp's sliding-window cache: GGML_PAD(min(n_ctx, n_swa + n_ubatch), 256) cells */
    if (hp->n_swa) {
        uint64_t c = (uint64_t)hp->n_swa + out->n_batch;
        c = (c + 255) / 256 * 256;
        if (c < out->n_ctx)
            out->n_swa_cells = (uint32_t)c;
    }
    const uint64_t KD = (uint64_t)hp->n_head_kv * hp->head_dim;
    uint64_t kvn = 0;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        uint64_t rows = session_plan_layer_rows(m, out, il);
        if (KD && rows > (SIZE_MAX - kvn) / KD)
            return -1;
        kvn += rows * KD;
    }
    out->kv = kvn;
    out->logit_rows = LOGIT_ROWS;
    buf_sizes b = sizes_of(hp, out->n_batch);
    out->f32 = (uint64_t)b.x + b.xb + b.q + b.att + b.k + b.v + b.g + b.u + b.lg + b.rl + b.rw + b.ye;
    out->host_bytes = sizeof(int32_t) * ((uint64_t)b.pos + b.ids);
    return 0;
}

session *session_new(const model *m, const session_params *p, char *msg, size_t cap)
{
    session_params dp = {0};
    if (!p)
        p = &dp;
    if (msg && cap)
        msg[0] = 0;
    if (!m) {
        if (msg)
            snprintf(msg, cap, "no model");
        return NULL;
    }
    if (m->shapes_only) {
        if (msg)
            snprintf(msg, cap, "the model was loaded for its shapes only (no weights): it cannot be evaluated");
        return NULL;
    }
    session_plan pl;
    if (session_plan_make(m, p, &pl)) {
        if (msg)
            snprintf(msg, cap, "KV cache size overflows");
        return NULL;
    }
    session *s = calloc(1, sizeof *s);
    if (!s) {
        if (msg)
            snprintf(msg, cap, "out of memory");
        return NULL;
    }
    const model_hparams *hp = &m->hp;
    s->m = m;
    s->n_ctx = pl.n_ctx;
    s->n_batch = pl.n_batch;
    s->n_swa_cells = pl.n_swa_cells;
    atomic_init(&s->cancel, false);
    if (p->be) {
        s->be = p->be;
    } else {
        s->be = backend_cpu_new(p->n_threads);
        s->own_be = true;
        if (!s->be) {
            if (msg)
                snprintf(msg, cap, "cannot create the CPU backend");
            free(s);
            return NULL;
        }
    }
    const backend_ops *o = s->be->ops;
    void *c = s->be->ctx;
    if (o->weight_prepare && m->prepared != s->be) {
        if (msg)
            snprintf(msg, cap, "the model's weights are not prepared for the %s backend (model_prepare)",
                     o->name);
        session_free(s);
        return NULL;
    }
    if (model_backend_check(m, s->be, msg, cap)) {
        session_free(s);
        return NULL;
    }
    s->rope_factors = model_rope_factors(m, s->n_ctx);
    s->kv_off = malloc(sizeof(size_t) * ((size_t)hp->n_layer + 1));
    if (!s->kv_off) {
        if (msg)
            snprintf(msg, cap, "out of memory");
        session_free(s);
        return NULL;
    }
    const size_t KD = (size_t)hp->n_head_kv * hp->head_dim;
    size_t kvn = 0;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        s->kv_off[il] = kvn;
        kvn += (size_t)session_plan_layer_rows(m, &pl, il) * KD; /* no overflow: session_plan_make checked */
    }
    s->kv_off[hp->n_layer] = kvn;
    const buf_sizes b = sizes_of(hp, s->n_batch);
    s->kc = o->buf_new(c, BACKEND_F16, kvn);
    s->vc = o->buf_new(c, BACKEND_F16, kvn);
    s->x = o->buf_new(c, BACKEND_F32, b.x);
    s->xb = o->buf_new(c, BACKEND_F32, b.xb);
    s->q = o->buf_new(c, BACKEND_F32, b.q);
    s->att = o->buf_new(c, BACKEND_F32, b.att);
    s->k = o->buf_new(c, BACKEND_F32, b.k);
    s->v = o->buf_new(c, BACKEND_F32, b.v);
    s->g = o->buf_new(c, BACKEND_F32, b.g);
    s->u = o->buf_new(c, BACKEND_F32, b.u);
    s->lg = o->buf_new(c, BACKEND_F32, b.lg);
    s->pos = malloc(sizeof(int32_t) * b.pos);
    bool moe_ok = true;
    if (hp->n_expert) {
        s->rl = o->buf_new(c, BACKEND_F32, b.rl);
        s->rw = o->buf_new(c, BACKEND_F32, b.rw);
        s->ye = o->buf_new(c, BACKEND_F32, b.ye);
        s->ids = malloc(sizeof(int32_t) * b.ids);
        moe_ok = s->rl && s->rw && s->ye && s->ids;
    }
    if (!s->kc || !s->vc || !s->x || !s->xb || !s->q || !s->att || !s->k || !s->v || !s->g ||
        !s->u || !s->lg || !s->pos || !moe_ok) {
        if (msg)
            snprintf(msg, cap, "out of memory for a %u-position KV cache (%.1f MiB)", s->n_ctx,
                     kvn * 4.0 / 1048576.0);
        session_free(s);
        return NULL;
    }
    return s;
}

void session_free(session *s)
{
    if (!s)
        return;
    if (s->be) {
        const backend_ops *o = s->be->ops;
        backend_buf *bufs[] = {s->kc, s->vc, s->x, s->xb, s->q, s->att, s->k, s->v, s->g, s->u, s->lg,
                               s->rl, s->rw, s->ye};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            o->buf_free(s->be->ctx, bufs[i]);
        if (s->own_be)
            backend_free(s->be);
    }
    free(s->pos);
    free(s->ids);
    free(s->kv_off);
    free(s);
}

#define TRY(call)                                                                        \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_)                                                                         \
            return set_err(s, rc_, "%s failed in layer %d: %s", #call, il,              \
                           backend_strerror(rc_));                                       \
    } while (0)

/* The products of one input with n weights (q, k, v; gate, up): one
 * matmul_n call where the backend has it and the weights share type and
 * input size (the same floats, one pass over the weights), else one matmul
 * each. */
static int matmul_group(session *s, const backend_weight *const *w, int n, backend_view x, uint32_t nt,
                        const backend_view *y)
{
    const backend_ops *o = s->be->ops;
    bool one = o->matmul_n != NULL;
    for (int i = 1; i < n && one; i++)
        one = w[i]->type == w[0]->type && w[i]->ne0 == w[0]->ne0;
    if (one)
        return o->matmul_n(s->be->ctx, w, n, x, nt, y);
    for (int i = 0; i < n; i++) {
        int rc = o->matmul(s->be->ctx, w[i], x, nt, y[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* Store n rows of K or V (positions pos..pos+n-1) into a layer's cache:
 * row = position, or position % cells in a ring (in two pieces when the
 * batch wraps; the ring is larger than a batch, so no row is written twice). */
static int store_rows(session *s, backend_view src, uint32_t n, uint32_t kd, backend_view dst, uint32_t pos,
                      uint32_t cells)
{
    const backend_ops *o = s->be->ops;
    if (!cells)
        return o->store_f16(s->be->ctx, src, n, kd, dst, pos);
    uint32_t r0 = pos % cells, n1 = cells - r0 < n ? cells - r0 : n;
    int rc = o->store_f16(s->be->ctx, src, n1, kd, dst, r0);
    if (!rc && n1 < n)
        rc = o->store_f16(s->be->ctx, (backend_view){src.buf, src.off + (size_t)n1 * kd}, n - n1, kd, dst, 0);
    return rc;
}

/* The mixture-of-experts feed-forward (llama.cpp's build_moe_ffn) of layer
 * il on n rows of fin (the normed residual), into xb: the router's logits
 * (+ bias), the experts and weights it chooses, each chosen expert's
 * gate / up (+ biases) for its token, the activation over n x n_used rows,
 * down (+ bias), and the weighted sum of the layer's first n_expert_used
 * slots in slot order. */
static int ffn_moe(session *s, const model_layer *ly, int il, backend_view fin, uint32_t n)
{
    const model_hparams *hp = &s->m->hp;
    const backend_ops *o = s->be->ops;
    void *c = s->be->ctx;
    const uint32_t E = hp->n_embd, NE = hp->n_expert, K = hp->n_expert_used, FX = hp->n_ff_exp, nk = n * K;
    TRY(o->matmul(c, &ly->ffn_gate_inp, fin, n, V(s->rl, 0)));
    if (ly->ffn_gate_inp_b.data)
        TRY(o->add_w(c, V(s->rl, 0), &ly->ffn_gate_inp_b, V(s->rl, 0), n, NE));
    TRY(o->moe_route(c, V(s->rl, 0), n, NE, K, hp->moe_gating, hp->moe_norm_w, s->ids, V(s->rw, 0)));
    for (uint32_t i = 0; i < nk; i++)
        if (s->ids[i] < 0 || (uint32_t)s->ids[i] >= NE)
            return set_err(s, BACKEND_EARG, "the router chose expert %d of %u in layer %d", s->ids[i], NE, il);
    TRY(o->matmul_id(c, &ly->ffn_up_exps, fin, 1, s->ids, n, K, V(s->u, 0)));
    if (ly->ffn_up_exps_b.data)
        TRY(o->add_id(c, V(s->u, 0), &ly->ffn_up_exps_b, s->ids, V(s->u, 0), nk, FX));
    TRY(o->matmul_id(c, &ly->ffn_gate_exps, fin, 1, s->ids, n, K, V(s->g, 0)));
    if (ly->ffn_gate_exps_b.data)
        TRY(o->add_id(c, V(s->g, 0), &ly->ffn_gate_exps_b, s->ids, V(s->g, 0), nk, FX));
    if (hp->flags & MODEL_F_SWIGLU_OAI) /* llama.cpp's constants, not the file's */
        TRY(o->swiglu_oai(c, V(s->g, 0), V(s->u, 0), V(s->g, 0), nk, FX, 1.702f, 7.0f));
    else
        TRY(o->silu_mul(c, V(s->g, 0), V(s->u, 0), V(s->g, 0), nk, FX));
    TRY(o->matmul_id(c, &ly->ffn_down_exps, V(s->g, 0), K, s->ids, n, K, V(s->ye, 0)));
    if (ly->ffn_down_exps_b.data)
        TRY(o->add_id(c, V(s->ye, 0), &ly->ffn_down_exps_b, s->ids, V(s->ye, 0), nk, E));
    if (ly->n_expert_used == K) {
        TRY(o->moe_combine(c, V(s->ye, 0), V(s->rw, 0), n, K, E, V(s->xb, 0)));
    } else { /* a layer that sums fewer slots than were routed: token by token */
        for (uint32_t t = 0; t < n; t++)
            TRY(o->moe_combine(c, V(s->ye, (size_t)t * K * E), V(s->rw, (size_t)t * K), 1, ly->n_expert_used, E,
                               V(s->xb, (size_t)t * E)));
    }
    return 0;
}

/* One chunk of n tokens at positions pos..pos+n-1 (pos + n <= n_ctx, n <= n_batch). */
static int forward_chunk(session *s, const int32_t *tokens, uint32_t n, uint32_t pos, float *logits,
                         bool all, bool last_chunk)
{
    const model *m = s->m;
    const model_hparams *hp = &m->hp;
    const backend_ops *o = s->be->ops;
    void *c = s->be->ctx;
    const uint32_t E = hp->n_embd, HD = hp->head_dim;
    const uint32_t QD = hp->n_head * HD, KD = hp->n_head_kv * HD, F = hp->n_ff;
    const bool head_norm = hp->flags & MODEL_F_QK_NORM_HEAD, full_norm = hp->flags & MODEL_F_QK_NORM_FULL;
    int il = -1;

    for (uint32_t i = 0; i < n; i++)
        s->pos[i] = (int32_t)(pos + i);
    TRY(o->get_rows(c, &m->tok_embd, tokens, n, V(s->x, 0)));
    if (hp->embd_scale != 0.0f)
        TRY(o->scale(c, V(s->x, 0), V(s->x, 0), (size_t)n * E, hp->embd_scale));
    for (il = 0; il < (int)hp->n_layer; il++) {
        const model_layer *ly = &m->layers[il];
        const size_t kv_off = s->kv_off[il];
        const uint32_t cells = ly->swa ? s->n_swa_cells : 0;
        /* attention; the input is the normed residual, or the residual itself (olmo2) */
        backend_buf *in = s->x;
        if (ly->attn_norm.data) {
            TRY(o->rms_norm_mul(c, V(s->x, 0), &ly->attn_norm, V(s->xb, 0), n, E, hp->rms_eps));
            in = s->xb;
        }
        {
            const backend_weight *qkv[3] = {&ly->wq, &ly->wk, &ly->wv};
            const backend_view qkv_y[3] = {V(s->q, 0), V(s->k, 0), V(s->v, 0)};
            TRY(matmul_group(s, qkv, 3, V(in, 0), n, qkv_y));
        }
        if (ly->bq.data)
            TRY(o->add_w(c, V(s->q, 0), &ly->bq, V(s->q, 0), n, QD));
        if (ly->bk.data)
            TRY(o->add_w(c, V(s->k, 0), &ly->bk, V(s->k, 0), n, KD));
        if (ly->bv.data)
            TRY(o->add_w(c, V(s->v, 0), &ly->bv, V(s->v, 0), n, KD));
        if (head_norm) { /* per head: rows of head_dim */
            TRY(o->rms_norm_mul(c, V(s->q, 0), &ly->q_norm, V(s->q, 0), n * hp->n_head, HD, hp->rms_eps));
            TRY(o->rms_norm_mul(c, V(s->k, 0), &ly->k_norm, V(s->k, 0), n * hp->n_head_kv, HD, hp->rms_eps));
        } else if (full_norm) { /* over the whole projection */
            TRY(o->rms_norm_mul(c, V(s->q, 0), &ly->q_norm, V(s->q, 0), n, QD, hp->rms_eps));
            TRY(o->rms_norm_mul(c, V(s->k, 0), &ly->k_norm, V(s->k, 0), n, KD, hp->rms_eps));
        }
        if (ly->rope) {
            const backend_rope_params rp = {
                .mode = hp->rope_mode, .n_rot = hp->n_rot, .freq_base = ly->rope_base,
                .freq_scale = ly->rope_scale, .freq_factors = s->rope_factors,
                .ext_factor = ly->rope_ext, .attn_factor = ly->rope_attn,
                .beta_fast = hp->yarn_beta_fast, .beta_slow = hp->yarn_beta_slow, .n_ctx_orig = hp->n_ctx_orig,
            };
            TRY(o->rope(c, V(s->q, 0), n, hp->n_head, HD, s->pos, &rp));
            TRY(o->rope(c, V(s->k, 0), n, hp->n_head_kv, HD, s->pos, &rp));
        }
        if (hp->attn_temp_scale != 0.0f) { /* mistral3: Q of position p times s(p), 1 below n_ctx_orig */
            for (uint32_t t = 0; t < n; t++) {
                float f = floorf(((float)s->pos[t] + 0.0f) / (float)hp->n_ctx_orig);
                float sc = (float)(log((double)f + 1.0) * (double)hp->attn_temp_scale + 1.0);
                if (sc != 1.0f)
                    TRY(o->scale(c, V(s->q, (size_t)t * QD), V(s->q, (size_t)t * QD), QD, sc));
            }
        }
        if (hp->flags & MODEL_F_Q_PRESCALE)
            TRY(o->scale(c, V(s->q, 0), V(s->q, 0), (size_t)n * QD, hp->q_scale));
        TRY(store_rows(s, V(s->k, 0), n, KD, V(s->kc, kv_off), pos, cells));
        TRY(store_rows(s, V(s->v, 0), n, KD, V(s->vc, kv_off), pos, cells));
        const backend_attn_params ap = {
            .scale = hp->kq_scale, .n_swa = ly->swa ? hp->n_swa : 0, .n_cells = cells,
            .sinks = ly->attn_sinks.data,
        };
        TRY(o->attention(c, V(s->q, 0), V(s->kc, kv_off), V(s->vc, kv_off), V(s->att, 0), n, pos,
                         hp->n_head, hp->n_head_kv, HD, &ap));
        TRY(o->matmul(c, &ly->wo, V(s->att, 0), n, V(s->xb, 0)));
        if (ly->bo.data)
            TRY(o->add_w(c, V(s->xb, 0), &ly->bo, V(s->xb, 0), n, E));
        if (ly->post_attn_norm.data)
            TRY(o->rms_norm_mul(c, V(s->xb, 0), &ly->post_attn_norm, V(s->xb, 0), n, E, hp->rms_eps));
        if (hp->residual_scale != 0.0f)
            TRY(o->scale(c, V(s->xb, 0), V(s->xb, 0), (size_t)n * E, hp->residual_scale));
        TRY(o->add(c, V(s->x, 0), V(s->xb, 0), V(s->x, 0), (size_t)n * E));
        /* feed-forward; in the last layer only on the rows that give logits
         * (as llama.cpp does: it changes which kernels, hence which float
         * order, compute them) */
        uint32_t f0 = 0;
        if (il == (int)hp->n_layer - 1 && !all && !(hp->flags & MODEL_F_LAST_ALL_ROWS))
            f0 = logits && last_chunk ? n - 1 : n;
        const uint32_t nf = n - f0;
        if (nf) {
            const size_t xo = (size_t)f0 * E;
            backend_view fin = V(s->x, xo);
            if (ly->ffn_norm.data) {
                TRY(o->rms_norm_mul(c, V(s->x, xo), &ly->ffn_norm, V(s->xb, 0), nf, E, hp->rms_eps));
                fin = V(s->xb, 0);
            }
            if (hp->n_expert) { /* the experts: no biases, post-norm or scale of their own */
                int rc = ffn_moe(s, ly, il, fin, nf);
                if (rc)
                    return rc;
            } else {
                const backend_weight *gu[2] = {&ly->ffn_gate, &ly->ffn_up};
                const backend_view gu_y[2] = {V(s->g, 0), V(s->u, 0)};
                TRY(matmul_group(s, gu, 2, fin, nf, gu_y));
                if (ly->ffn_gate_b.data)
                    TRY(o->add_w(c, V(s->g, 0), &ly->ffn_gate_b, V(s->g, 0), nf, F));
                if (ly->ffn_up_b.data)
                    TRY(o->add_w(c, V(s->u, 0), &ly->ffn_up_b, V(s->u, 0), nf, F));
                if (hp->flags & MODEL_F_GELU)
                    TRY(o->gelu_mul(c, V(s->g, 0), V(s->u, 0), V(s->g, 0), nf, F));
                else
                    TRY(o->silu_mul(c, V(s->g, 0), V(s->u, 0), V(s->g, 0), nf, F));
                TRY(o->matmul(c, &ly->ffn_down, V(s->g, 0), nf, V(s->xb, 0)));
                if (ly->ffn_down_b.data)
                    TRY(o->add_w(c, V(s->xb, 0), &ly->ffn_down_b, V(s->xb, 0), nf, E));
                if (ly->post_ffw_norm.data)
                    TRY(o->rms_norm_mul(c, V(s->xb, 0), &ly->post_ffw_norm, V(s->xb, 0), nf, E, hp->rms_eps));
                if (hp->residual_scale != 0.0f)
                    TRY(o->scale(c, V(s->xb, 0), V(s->xb, 0), (size_t)nf * E, hp->residual_scale));
            }
            TRY(o->add(c, V(s->x, xo), V(s->xb, 0), V(s->x, xo), (size_t)nf * E));
        }
        if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
            return set_err(s, BACKEND_ECANCELLED, "cancelled");
    }
    if (!logits || (!all && !last_chunk))
        return 0;
    /* output head on the rows asked for, LOGIT_ROWS at a time */
    const uint32_t nv = hp->n_vocab;
    uint32_t r0 = all ? 0 : n - 1;
    for (uint32_t r = r0, nr; r < n; r += nr) {
        /* slices of 16 rows; never a last slice of one row when more were
         * asked for (a one-row product takes ggml's mat-vec order, the
         * others its batched order), and every slice but the last a
         * multiple of 4 (ggml's repacked kernels treat the last n % 4 rows
         * of a product apart) */
        nr = n - r < LOGIT_ROWS ? n - r : LOGIT_ROWS;
        if (n - r - nr == 1)
            nr -= 4;
        TRY(o->rms_norm_mul(c, V(s->x, (size_t)r * E), &m->output_norm, V(s->xb, 0), nr, E,
                            hp->rms_eps));
        TRY(o->matmul(c, &m->output, V(s->xb, 0), nr, V(s->lg, 0)));
        if (hp->logit_scale != 0.0f)
            TRY(o->scale(c, V(s->lg, 0), V(s->lg, 0), (size_t)nr * nv, hp->logit_scale));
        float *dst = all ? logits + (size_t)r * nv : logits;
        TRY(o->buf_read(c, s->lg, 0, dst, (size_t)nr * nv));
    }
    return 0;
}

int session_eval(session *s, const int32_t *tokens, uint32_t n, uint32_t pos, float *logits,
                 bool all)
{
    if (!s)
        return BACKEND_EARG;
    s->err[0] = 0;
    if (!n || !tokens)
        return set_err(s, BACKEND_EARG, "no tokens");
    if (pos < s->used)
        session_kv_truncate(s, pos); /* may drop everything: a sliding layer's ring lost the window */
    if (pos > s->used)
        return set_err(s, BACKEND_EARG, "position %u is past the %u cached positions", pos, s->used);
    if (n > s->n_ctx || pos > s->n_ctx - n)
        return set_err(s, BACKEND_EARG, "context full: %u + %u tokens > n_ctx %u", pos, n, s->n_ctx);
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= s->m->hp.n_vocab)
            return set_err(s, BACKEND_EARG, "token id %d out of range (vocabulary %u)", tokens[i],
                           s->m->hp.n_vocab);
    double t0 = clock_now_s();
    s->used = pos;
    int rc = 0;
    for (uint32_t done = 0; done < n && !rc;) {
        uint32_t nc = n - done < s->n_batch ? n - done : s->n_batch;
        bool last = done + nc == n;
        float *lg = logits && all ? logits + (size_t)done * s->m->hp.n_vocab : logits;
        if (pos + done + nc > s->hi)
            s->hi = pos + done + nc; /* rows written even if the chunk fails */
        rc = forward_chunk(s, tokens + done, nc, pos + done, lg, all, last);
        if (!rc) {
            done += nc;
            s->used = pos + done;
        }
    }
    if (rc) {
        s->used = pos; /* a partial batch is not kept */
        atomic_store(&s->cancel, false);
        return rc;
    }
    if (s->be->ops->sync)
        s->be->ops->sync(s->be->ctx);
    atomic_store(&s->cancel, false); /* a cancel that came after the last check is void */
    double dt = clock_now_s() - t0;
    if (n > 1) {
        s->st.n_prompt_tokens += n;
        s->st.t_prompt_s += dt;
    } else {
        s->st.n_gen_tokens += n;
        s->st.t_gen_s += dt;
    }
    s->st.n_evals++;
    return 0;
}

void session_kv_truncate(session *s, uint32_t n_keep)
{
    if (!s || n_keep >= s->used)
        return;
    s->used = n_keep;
    /* a sliding layer's ring must still hold the window before n_keep;
     * else everything is evaluated again (as llama.cpp's server does) */
    const uint32_t w = s->m->hp.n_swa;
    const uint64_t p_min = n_keep >= w - 1 ? n_keep - (w - 1) : 0; /* the oldest position n_keep sees */
    if (s->n_swa_cells && n_keep && s->hi > p_min + s->n_swa_cells)
        s->used = 0;
    if (!s->used)
        s->hi = 0;
}

void session_cancel(session *s)
{
    if (s)
        atomic_store(&s->cancel, true);
}

uint32_t session_n_ctx(const session *s) { return s ? s->n_ctx : 0; }
uint32_t session_used(const session *s) { return s ? s->used : 0; }
uint32_t session_n_vocab(const session *s) { return s ? s->m->hp.n_vocab : 0; }
session_stats session_get_stats(const session *s)
{
    session_stats z = {0};
    return s ? s->st : z;
}

void session_reset_stats(session *s)
{
    if (s)
        memset(&s->st, 0, sizeof s->st);
}

uint64_t session_kv_bytes(const session *s)
{
    if (!s)
        return 0;
    return 2ull * 2ull * s->kv_off[s->m->hp.n_layer];
}

const char *session_error(const session *s)
{
    return s ? s->err : "";
}
