/* sampler: penalties, truncation, temperature and seeded draws. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

typedef struct {
    int32_t id;
    float logit;
    float p;
} cand;

struct sampler {
    sampler_params p;
    uint32_t n_vocab;
    uint64_t rng[4];
    int32_t *hist;       /* ring of the last repeat_last_n tokens */
    uint32_t hist_n, hist_pos, hist_cap;
    cand *c;             /* n_vocab candidates */
    float *lg;           /* penalized logits */
};

sampler_params sampler_default_params(void)
{
    return (sampler_params){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                            .repeat_penalty = 1.1f, .repeat_last_n = 64, .seed = 42};
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void seed_rng(sampler *s)
{
    uint64_t x = s->p.seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sampler_rand_u64(sampler *s)
{
    uint64_t *r = s->rng;
    uint64_t out = rotl(r[1] * 5, 7) * 9, t = r[1] << 17;
    r[2] ^= r[0];
    r[3] ^= r[1];
    r[1] ^= r[2];
    r[0] ^= r[3];
    r[2] ^= t;
    r[3] = rotl(r[3], 45);
    return out;
}

double sampler_rand_unit(sampler *s)
{
    return (double)(sampler_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

sampler *sampler_new(const sampler_params *p, uint32_t n_vocab)
{
    sampler_params d = sampler_default_params();
    if (!p)
        p = &d;
    if (!n_vocab || isnan(p->temp) || isnan(p->top_p) || isnan(p->min_p) ||
        !(p->repeat_penalty > 0.0f) || p->repeat_last_n < 0)
        return NULL;
    sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = *p;
    s->n_vocab = n_vocab;
    s->hist_cap = (uint32_t)p->repeat_last_n;
    s->hist = malloc(sizeof(int32_t) * (s->hist_cap ? s->hist_cap : 1));
    s->c = malloc(sizeof(cand) * n_vocab);
    s->lg = malloc(sizeof(float) * n_vocab);
    if (!s->hist || !s->c || !s->lg) {
        sampler_free(s);
        return NULL;
    }
    seed_rng(s);
    return s;
}

void sampler_free(sampler *s)
{
    if (!s)
        return;
    free(s->hist);
    free(s->c);
    free(s->lg);
    free(s);
}

void sampler_accept(sampler *s, int32_t token)
{
    if (!s || !s->hist_cap)
        return;
    s->hist[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % s->hist_cap;
    if (s->hist_n < s->hist_cap)
        s->hist_n++;
}

void sampler_reset(sampler *s)
{
    if (!s)
        return;
    s->hist_n = s->hist_pos = 0;
    seed_rng(s);
}

/* Descending logit, ascending id on ties (a total order: deterministic). */
static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Move the k best of c[0..n) to the front, sorted. Small k: one pass with
 * insertion into a sorted prefix; large k: a full sort. */
static void partial_sort(cand *c, uint32_t n, uint32_t k)
{
    if (k > 256 || k >= n) {
        qsort(c, n, sizeof *c, cand_cmp);
        return;
    }
    qsort(c, k, sizeof *c, cand_cmp);
    for (uint32_t i = k; i < n; i++) {
        if (cand_cmp(&c[i], &c[k - 1]) >= 0)
            continue;
        cand x = c[i];
        c[i] = c[k - 1];
        uint32_t j = k - 1;
        while (j > 0 && cand_cmp(&x, &c[j - 1]) < 0) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = x;
    }
}

int32_t sampler_sample(sampler *s, const float *logits, sampler_result *out)
{
    if (!s || !logits)
        return -1;
    const uint32_t nv = s->n_vocab;
    float *lg = s->lg;
    memcpy(lg, logits, sizeof(float) * nv);
    for (uint32_t i = 0; i < nv; i++)
        if (isnan(lg[i]))
            lg[i] = -INFINITY;
    /* repetition penalty: each distinct token of the window once */
    if (s->p.repeat_penalty != 1.0f) {
        for (uint32_t i = 0; i < s->hist_n; i++) {
            int32_t t = s->hist[i];
            if (t < 0 || (uint32_t)t >= nv)
                continue;
            bool seen = false;
            for (uint32_t j = 0; j < i && !seen; j++)
                seen = s->hist[j] == t;
            if (seen)
                continue;
            lg[t] = lg[t] > 0 ? lg[t] / s->p.repeat_penalty : lg[t] * s->p.repeat_penalty;
        }
    }
    const bool greedy = !(s->p.temp > 0.0f);
    const float T = greedy ? 1.0f : s->p.temp;
    /* full distribution for the inspector, and the argmax */
    float mx = -INFINITY;
    int32_t best = -1;
    for (uint32_t i = 0; i < nv; i++)
        if (lg[i] > mx) {
            mx = lg[i];
            best = (int32_t)i;
        }
    if (best < 0)
        return -1;
    /* one exp per token: with e_i = exp(x_i), x_i = (l_i - max) / T and
     * z = sum e_i, the entropy -sum (e_i/z) log(e_i/z) = log z - sum e_i x_i / z */
    double z = 0.0, zx = 0.0;
    const float inv_t = 1.0f / T;
    for (uint32_t i = 0; i < nv; i++) {
        float x = (lg[i] - mx) * inv_t; /* <= 0 */
        if (!(x > -88.0f))                 /* expf underflows: no weight (and -inf) */
            continue;
        float e = expf(x); /* float exp, double sums: the inspector's 3 digits, 3x faster over 262k */
        z += e;
        zx += (double)e * x;
    }
    double ent = log(z) - zx / z;
    if (ent < 0) /* rounding, for a one-hot distribution */
        ent = 0;
    /* candidates, sorted as far as needed */
    cand *c = s->c;
    for (uint32_t i = 0; i < nv; i++)
        c[i] = (cand){(int32_t)i, lg[i], 0.0f};
    uint32_t n = nv;
    uint32_t need = SAMPLER_N_ALT;
    if (!greedy) {
        if (s->p.top_k > 0 && (uint32_t)s->p.top_k < n)
            n = (uint32_t)s->p.top_k;
        need = n;
    }
    if (need < SAMPLER_N_ALT)
        need = SAMPLER_N_ALT;
    partial_sort(c, nv, need < nv ? need : nv);
    int32_t chosen = best;
    if (!greedy) {
        /* top-p and min-p on the temperature-1 probabilities of the top-k set */
        double zk = 0.0;
        for (uint32_t i = 0; i < n; i++)
            zk += exp((double)(c[i].logit - c[0].logit));
        if (s->p.top_p < 1.0f) {
            double cum = 0.0;
            uint32_t keep = n;
            for (uint32_t i = 0; i < n; i++) {
                cum += exp((double)(c[i].logit - c[0].logit)) / zk;
                if (cum >= s->p.top_p) {
                    keep = i + 1;
                    break;
                }
            }
            n = keep;
        }
        if (s->p.min_p > 0.0f) {
            /* p_i / p_max = exp(l_i - l_max) */
            uint32_t keep = 1;
            while (keep < n && exp((double)(c[keep].logit - c[0].logit)) >= s->p.min_p)
                keep++;
            n = keep;
        }
        /* temperature, then the draw */
        double zt = 0.0;
        for (uint32_t i = 0; i < n; i++)
            zt += exp((double)(c[i].logit - c[0].logit) / T);
        double r = sampler_rand_unit(s) * zt, acc = 0.0;
        chosen = c[n - 1].id;
        for (uint32_t i = 0; i < n; i++) {
            acc += exp((double)(c[i].logit - c[0].logit) / T);
            if (r < acc) {
                chosen = c[i].id;
                break;
            }
        }
    } else {
        n = 1;
    }
    if (out) {
        memset(out, 0, sizeof *out);
        out->token = chosen;
        out->prob = (float)(exp((double)(lg[chosen] - mx) / T) / z);
        out->entropy = (float)ent;
        out->n_alt = nv < SAMPLER_N_ALT ? (int32_t)nv : SAMPLER_N_ALT;
        for (int32_t i = 0; i < out->n_alt; i++) {
            out->alt_id[i] = c[i].id;
            out->alt_prob[i] = (float)(exp((double)(c[i].logit - mx) / T) / z);
        }
        out->n_candidates = (int32_t)n;
    }
    return chosen;
}
