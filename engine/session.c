/* session: KV cache, scratch buffers and the forward pass of llama / qwen2. */
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
    atomic_bool cancel;
    /* KV cache: [n_layer][n_ctx][n_head_kv * head_dim] F16 */
    backend_buf *kc, *vc;
    /* scratch (n_batch rows): x, xb [E]; q, att [QD]; k, v [KD]; g, u [F]; logits [LOGIT_ROWS][V] */
    backend_buf *x, *xb, *q, *att, *k, *v, *g, *u, *lg;
    int32_t *pos;
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
    session *s = calloc(1, sizeof *s);
    if (!s) {
        if (msg)
            snprintf(msg, cap, "out of memory");
        return NULL;
    }
    const model_hparams *hp = &m->hp;
    s->m = m;
    s->n_ctx = p->n_ctx ? p->n_ctx : (hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    s->n_batch = p->n_batch ? p->n_batch : 512; /* llama.cpp's ubatch: the same kernel choices */
    if (s->n_batch > s->n_ctx)
        s->n_batch = s->n_ctx;
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
    const size_t E = hp->n_embd, QD = (size_t)hp->n_head * hp->head_dim;
    const size_t KD = (size_t)hp->n_head_kv * hp->head_dim, F = hp->n_ff, NB = s->n_batch;
    const size_t kvn = (size_t)hp->n_layer * s->n_ctx * KD;
    if (kvn / hp->n_layer / s->n_ctx != KD) {
        if (msg)
            snprintf(msg, cap, "KV cache size overflows");
        session_free(s);
        return NULL;
    }
    s->kc = o->buf_new(c, BACKEND_F16, kvn);
    s->vc = o->buf_new(c, BACKEND_F16, kvn);
    s->x = o->buf_new(c, BACKEND_F32, NB * E);
    s->xb = o->buf_new(c, BACKEND_F32, NB * (E > QD ? E : QD));
    s->q = o->buf_new(c, BACKEND_F32, NB * QD);
    s->att = o->buf_new(c, BACKEND_F32, NB * QD);
    s->k = o->buf_new(c, BACKEND_F32, NB * KD);
    s->v = o->buf_new(c, BACKEND_F32, NB * KD);
    s->g = o->buf_new(c, BACKEND_F32, NB * F);
    s->u = o->buf_new(c, BACKEND_F32, NB * F);
    s->lg = o->buf_new(c, BACKEND_F32, (size_t)LOGIT_ROWS * hp->n_vocab);
    s->pos = malloc(sizeof(int32_t) * NB);
    if (!s->kc || !s->vc || !s->x || !s->xb || !s->q || !s->att || !s->k || !s->v || !s->g ||
        !s->u || !s->lg || !s->pos) {
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
        backend_buf *bufs[] = {s->kc, s->vc, s->x, s->xb, s->q, s->att, s->k, s->v, s->g, s->u, s->lg};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            o->buf_free(s->be->ctx, bufs[i]);
        if (s->own_be)
            backend_free(s->be);
    }
    free(s->pos);
    free(s);
}

#define TRY(call)                                                                        \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_)                                                                         \
            return set_err(s, rc_, "%s failed in layer %d: %s", #call, il,              \
                           backend_strerror(rc_));                                       \
    } while (0)

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
    const backend_rope_params rp = {
        .mode = hp->rope_mode, .n_rot = hp->n_rot, .freq_base = hp->rope_freq_base,
        .freq_scale = hp->rope_freq_scale, .freq_factors = m->rope_freqs,
    };
    const backend_attn_params ap = {.scale = 1.0f / sqrtf((float)HD)};
    int il = -1;

    for (uint32_t i = 0; i < n; i++)
        s->pos[i] = (int32_t)(pos + i);
    TRY(o->get_rows(c, &m->tok_embd, tokens, n, V(s->x, 0)));
    for (il = 0; il < (int)hp->n_layer; il++) {
        const model_layer *ly = &m->layers[il];
        const size_t kv_off = (size_t)il * s->n_ctx * KD;
        /* attention */
        TRY(o->rms_norm_mul(c, V(s->x, 0), &ly->attn_norm, V(s->xb, 0), n, E, hp->rms_eps));
        TRY(o->matmul(c, &ly->wq, V(s->xb, 0), n, V(s->q, 0)));
        TRY(o->matmul(c, &ly->wk, V(s->xb, 0), n, V(s->k, 0)));
        TRY(o->matmul(c, &ly->wv, V(s->xb, 0), n, V(s->v, 0)));
        if (ly->bq.data)
            TRY(o->add_w(c, V(s->q, 0), &ly->bq, V(s->q, 0), n, QD));
        if (ly->bk.data)
            TRY(o->add_w(c, V(s->k, 0), &ly->bk, V(s->k, 0), n, KD));
        if (ly->bv.data)
            TRY(o->add_w(c, V(s->v, 0), &ly->bv, V(s->v, 0), n, KD));
        TRY(o->rope(c, V(s->q, 0), n, hp->n_head, HD, s->pos, &rp));
        TRY(o->rope(c, V(s->k, 0), n, hp->n_head_kv, HD, s->pos, &rp));
        TRY(o->store_f16(c, V(s->k, 0), n, KD, V(s->kc, kv_off), pos));
        TRY(o->store_f16(c, V(s->v, 0), n, KD, V(s->vc, kv_off), pos));
        TRY(o->attention(c, V(s->q, 0), V(s->kc, kv_off), V(s->vc, kv_off), V(s->att, 0), n, pos,
                         hp->n_head, hp->n_head_kv, HD, &ap));
        TRY(o->matmul(c, &ly->wo, V(s->att, 0), n, V(s->xb, 0)));
        TRY(o->add(c, V(s->x, 0), V(s->xb, 0), V(s->x, 0), (size_t)n * E));
        /* feed-forward; in the last layer only on the rows that give logits
         * (as llama.cpp does: it changes which kernels, hence which float
         * order, compute them) */
        uint32_t f0 = 0;
        if (il == (int)hp->n_layer - 1 && !all)
            f0 = logits && last_chunk ? n - 1 : n;
        const uint32_t nf = n - f0;
        if (nf) {
            const size_t xo = (size_t)f0 * E;
            TRY(o->rms_norm_mul(c, V(s->x, xo), &ly->ffn_norm, V(s->xb, 0), nf, E, hp->rms_eps));
            TRY(o->matmul(c, &ly->ffn_gate, V(s->xb, 0), nf, V(s->g, 0)));
            TRY(o->matmul(c, &ly->ffn_up, V(s->xb, 0), nf, V(s->u, 0)));
            TRY(o->silu_mul(c, V(s->g, 0), V(s->u, 0), V(s->g, 0), nf, F));
            TRY(o->matmul(c, &ly->ffn_down, V(s->g, 0), nf, V(s->xb, 0)));
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
    if (s && n_keep < s->used)
        s->used = n_keep;
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
    const model_hparams *hp = &s->m->hp;
    return 2ull * 2ull * hp->n_layer * s->n_ctx * hp->n_head_kv * hp->head_dim;
}

const char *session_error(const session *s)
{
    return s ? s->err : "";
}
