/* bench_token: where one generated token's time goes on the CPU backend.
 *
 *   bench_token FILE [-t THREADS] [-n TOKENS] [-c CONTEXT] [-p PROMPT] [--bw] [--map]
 *
 * The weights are copied into memory first (model_copy, transparent huge
 * pages), as `ggscope run` and `ggscope bench` do for a dense model that
 * fits; --map reads them from the file's mapping instead.
 *
 * Fills the KV cache with CONTEXT positions (default 16) in one batch, then
 * evaluates TOKENS (default 64) tokens one at a time through a backend that
 * wraps the CPU backend and times every op (the CPU backend is synchronous,
 * so an op's wall time is its cost). Prints, per token: the time of each op
 * (matmuls by weight role), the thread-pool runs (matmuls and attention each
 * make one) with the measured cost of an empty run, what the session spends
 * outside the ops, and the time of sampling a token over the vocabulary with
 * the chat's default sampler. Best of three passes (the least total).
 * With -p PROMPT: the same breakdown for one batch of PROMPT tokens from an
 * empty cache, without logits (as `ggscope bench --no-logits`), matmuls by
 * role and shape with their GFLOP/s.
 * With --bw: each generated token is followed by a plain read of the same
 * weight bytes its matmuls read (the same memory, as one stream over as many
 * threads), and each token's weight bytes per second are compared with the
 * read's rate just after it: the decode's share of what that memory gives at
 * that moment, paired token by token, so that the machine's bandwidth moving
 * from second to second, and from one part of memory to another, cancels
 * out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "gguf.h"
#include "memread.h"
#include "model.h"
#include "sampler.h"
#include "session.h"
#include "tpool.h"

#define MAX_CAT 24

static const char *g_where = "weights copied into memory"; /* or read from the mapping (--map) */

typedef struct {
    char name[48];
    double s, flops, bytes; /* bytes: weights read (matmuls) */
    long calls;
    double ideal_s, bw_s; /* --bw: time at the paired read rate; time measured */
} cat;

static const backend_ops *g_inner;
static void *g_inner_ctx;
static cat g_cat[MAX_CAT];
static int g_ncat;
static int g_on;
static double g_wbytes; /* weight bytes of one-token matmuls, while g_on */
#define MAX_RANGES 4096
static memread_range g_rng[MAX_RANGES]; /* --bw: the weights a token's matmuls read */
static size_t g_nrng;
static int g_rec; /* record them (the first token) */

static void rec_weight(const backend_weight *w)
{
    if (g_rec && g_nrng < MAX_RANGES)
        g_rng[g_nrng++] = (memread_range){w->data, (size_t)(w->row_bytes * w->ne1)};
}

static void add_time_f(const char *name, double s, double flops)
{
    if (!g_on)
        return;
    for (int i = 0; i < g_ncat; i++)
        if (!strcmp(g_cat[i].name, name)) {
            g_cat[i].s += s;
            g_cat[i].flops += flops;
            g_cat[i].calls++;
            return;
        }
    if (g_ncat < MAX_CAT) {
        snprintf(g_cat[g_ncat].name, sizeof g_cat[0].name, "%s", name);
        g_cat[g_ncat].s = s;
        g_cat[g_ncat].flops = flops;
        g_cat[g_ncat].calls = 1;
        g_ncat++;
    }
}

static void add_time(const char *name, double s)
{
    add_time_f(name, s, 0);
}

/* "blk.3.ffn_gate.weight" -> "matmul ffn_gate 5632x2048" (rows x columns) */
static void weight_role(const backend_weight *w, char *out, size_t cap)
{
    const unsigned long long r = (unsigned long long)w->ne1, c = (unsigned long long)w->ne0;
    if (!w->name) {
        snprintf(out, cap, "matmul %llux%llu", r, c);
        return;
    }
    const char *n = w->name;
    if (!strncmp(n, "blk.", 4)) {
        const char *d = strchr(n + 4, '.');
        n = d ? d + 1 : n;
    }
    size_t len = strcspn(n, ".");
    snprintf(out, cap, "matmul %.*s %llux%llu", (int)(len < 20 ? len : 20), n, r, c);
}

#define TIMED(label, call)                          \
    do {                                            \
        double t0_ = clock_now_s();                 \
        int rc_ = (call);                           \
        add_time(label, clock_now_s() - t0_);       \
        return rc_;                                 \
    } while (0)

static void w_free(void *ctx) { (void)ctx; }
static backend_buf *w_buf_new(void *ctx, backend_dtype d, size_t n)
{
    (void)ctx;
    return g_inner->buf_new(g_inner_ctx, d, n);
}
static void w_buf_free(void *ctx, backend_buf *b)
{
    (void)ctx;
    g_inner->buf_free(g_inner_ctx, b);
}
static int w_buf_write(void *ctx, backend_buf *b, size_t off, const void *src, size_t n)
{
    (void)ctx;
    TIMED("buf_write", g_inner->buf_write(g_inner_ctx, b, off, src, n));
}
static int w_buf_read(void *ctx, backend_buf *b, size_t off, void *dst, size_t n)
{
    (void)ctx;
    TIMED("buf_read (logits)", g_inner->buf_read(g_inner_ctx, b, off, dst, n));
}
static int w_get_rows(void *ctx, const backend_weight *w, const int32_t *ids, uint32_t n, backend_view dst)
{
    (void)ctx;
    TIMED("get_rows", g_inner->get_rows(g_inner_ctx, w, ids, n, dst));
}
static int w_rms_norm_mul(void *ctx, backend_view src, const backend_weight *w, backend_view dst,
                          uint32_t n_rows, uint32_t n_cols, float eps)
{
    (void)ctx;
    TIMED("rms_norm_mul", g_inner->rms_norm_mul(g_inner_ctx, src, w, dst, n_rows, n_cols, eps));
}
static int w_add_w(void *ctx, backend_view src, const backend_weight *w, backend_view dst, uint32_t n_rows,
                   uint32_t n_cols)
{
    (void)ctx;
    TIMED("add_w", g_inner->add_w(g_inner_ctx, src, w, dst, n_rows, n_cols));
}
static int w_add(void *ctx, backend_view a, backend_view b, backend_view dst, size_t n)
{
    (void)ctx;
    TIMED("add", g_inner->add(g_inner_ctx, a, b, dst, n));
}
static int w_matmul(void *ctx, const backend_weight *w, backend_view x, uint32_t n_tok, backend_view y)
{
    (void)ctx;
    char role[48];
    weight_role(w, role, sizeof role);
    double t0 = clock_now_s();
    int rc = g_inner->matmul(g_inner_ctx, w, x, n_tok, y);
    rec_weight(w);
    add_time_f(role, clock_now_s() - t0, 2.0 * (double)w->ne0 * (double)w->ne1 * n_tok);
    if (g_on) {
        g_wbytes += (double)w->row_bytes * (double)w->ne1;
        for (int i = 0; i < g_ncat; i++)
            if (!strcmp(g_cat[i].name, role))
                g_cat[i].bytes += (double)w->row_bytes * (double)w->ne1;
    }
    return rc;
}
static int w_matmul_n(void *ctx, const backend_weight *const *w, int n, backend_view x, uint32_t n_tok,
                      const backend_view *y)
{
    (void)ctx;
    char role[48] = "matmul", one[48];
    double flops = 0, bytes = 0;
    for (int i = 0; i < n; i++) { /* "matmul attn_q+attn_k+attn_v 2048x2048+256x2048+..." short: roles only */
        weight_role(w[i], one, sizeof one);
        const char *r = one + 7, *sp = strchr(r, ' ');
        size_t len = sp ? (size_t)(sp - r) : strlen(r), at = strlen(role);
        snprintf(role + at, sizeof role - at, "%s%.*s", i ? "+" : " ", (int)len, r);
        flops += 2.0 * (double)w[i]->ne0 * (double)w[i]->ne1 * n_tok;
        bytes += (double)w[i]->row_bytes * (double)w[i]->ne1;
    }
    double t0 = clock_now_s();
    int rc = g_inner->matmul_n(g_inner_ctx, w, n, x, n_tok, y);
    for (int i = 0; i < n; i++)
        rec_weight(w[i]);
    add_time_f(role, clock_now_s() - t0, flops);
    if (g_on) {
        g_wbytes += bytes;
        for (int i = 0; i < g_ncat; i++)
            if (!strcmp(g_cat[i].name, role))
                g_cat[i].bytes += bytes;
    }
    return rc;
}
static int w_rope(void *ctx, backend_view x, uint32_t n_tok, uint32_t n_head, uint32_t head_dim,
                  const int32_t *pos, const backend_rope_params *p)
{
    (void)ctx;
    TIMED("rope", g_inner->rope(g_inner_ctx, x, n_tok, n_head, head_dim, pos, p));
}
static int w_store_f16(void *ctx, backend_view src, uint32_t n_rows, uint32_t n_cols, backend_view dst,
                       uint32_t dst_row)
{
    (void)ctx;
    TIMED("store_f16 (KV)", g_inner->store_f16(g_inner_ctx, src, n_rows, n_cols, dst, dst_row));
}
static int w_attention(void *ctx, backend_view q, backend_view k, backend_view v, backend_view out,
                       uint32_t n_tok, uint32_t pos0, uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim,
                       const backend_attn_params *ap)
{
    (void)ctx;
    TIMED("attention", g_inner->attention(g_inner_ctx, q, k, v, out, n_tok, pos0, n_head, n_head_kv, head_dim,
                                          ap));
}
static int w_silu_mul(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                      uint32_t n_cols)
{
    (void)ctx;
    TIMED("silu_mul", g_inner->silu_mul(g_inner_ctx, gate, up, dst, n_rows, n_cols));
}
static int w_gelu_mul(void *ctx, backend_view gate, backend_view up, backend_view dst, uint32_t n_rows,
                      uint32_t n_cols)
{
    (void)ctx;
    TIMED("gelu_mul", g_inner->gelu_mul(g_inner_ctx, gate, up, dst, n_rows, n_cols));
}
static int w_scale(void *ctx, backend_view src, backend_view dst, size_t n, float sc)
{
    (void)ctx;
    TIMED("scale", g_inner->scale(g_inner_ctx, src, dst, n, sc));
}
static int w_sync(void *ctx)
{
    (void)ctx;
    return g_inner->sync ? g_inner->sync(g_inner_ctx) : 0;
}

static void nop(void *arg, int ith, int nth)
{
    (void)arg, (void)ith, (void)nth;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* -p: one batch of n tokens from an empty cache, no logits; best of 3. */
static int prompt_pass(session *s, const int32_t *ids, uint32_t n, int threads, const char *path)
{
    cat best[MAX_CAT];
    int best_n = 0;
    double best_wall = 1e30;
    for (int pass = 0; pass < 4; pass++) {
        session_kv_truncate(s, 0);
        g_ncat = 0;
        g_on = pass > 0; /* the first pass warms the page cache and the pool */
        double t0 = clock_now_s();
        if (session_eval(s, ids, n, 0, NULL, false)) {
            fprintf(stderr, "eval: %s\n", session_error(s));
            return 1;
        }
        double wall = clock_now_s() - t0;
        g_on = 0;
        if (pass > 0 && wall < best_wall) {
            best_wall = wall;
            memcpy(best, g_cat, sizeof best);
            best_n = g_ncat;
        }
    }
    double ops_total = 0, mm_s = 0, mm_f = 0;
    for (int i = 0; i < best_n; i++) {
        ops_total += best[i].s;
        if (best[i].flops > 0)
            mm_s += best[i].s, mm_f += best[i].flops;
    }
    tpool *pool = tpool_new(threads);
    int nth = tpool_threads(pool);
    tpool_free(pool);
    printf("%s: %d threads, one batch of %u tokens from an empty cache, no logits, best of 3 passes, %s\n", path,
           nth, n, g_where);
    printf("wall per batch %.1f ms (%.2f tok/s); matmuls %.1f ms at %.1f GFLOP/s\n\n", best_wall * 1e3,
           n / best_wall, mm_s * 1e3, mm_f / mm_s * 1e-9);
    printf("| part | ms per batch | share | calls | GFLOP/s |\n|---|---|---|---|---|\n");
    for (int i = 0; i < best_n; i++) {
        printf("| %s | %.2f | %.1f%% | %ld |", best[i].name, best[i].s * 1e3, 100.0 * best[i].s / best_wall,
               best[i].calls);
        if (best[i].flops > 0)
            printf(" %.1f |\n", best[i].flops / best[i].s * 1e-9);
        else
            printf(" |\n");
    }
    double outside = best_wall - ops_total;
    printf("| session, outside the ops | %.2f | %.1f%% | | |\n", outside * 1e3, 100.0 * outside / best_wall);
    return 0;
}

/* Tokens one at a time, each followed by a plain read of the weights the
 * first one's matmuls read: prints the paired shares. */
static int bw_pass(session *s, const int32_t *ids, long n_fill, long n_gen, float *lg, int threads,
                   const char *path)
{
    double *share = malloc(sizeof(double) * (size_t)n_gen), *tokr = malloc(sizeof(double) * (size_t)n_gen);
    double *rdr = malloc(sizeof(double) * (size_t)n_gen);
    tpool *pool = tpool_new(threads);
    if (!share || !tokr || !rdr || !pool)
        return 1;
    session_kv_truncate(s, 0);
    g_on = 0;
    if (session_eval(s, ids, (uint32_t)n_fill, 0, lg, false)) {
        fprintf(stderr, "eval: %s\n", session_error(s));
        return 1;
    }
    double bytes = 0, tok_s = 0, rd_s = 0;
    size_t rd_bytes = 0;
    g_ncat = 0;
    for (long i = 0; i < n_gen; i++) {
        cat before[MAX_CAT];
        memcpy(before, g_cat, sizeof before);
        g_wbytes = 0;
        g_on = 1;
        g_rec = i == 0;
        double t0 = clock_now_s();
        if (session_eval(s, &ids[n_fill + i], 1, (uint32_t)(n_fill + i), lg, false)) {
            fprintf(stderr, "eval: %s\n", session_error(s));
            return 1;
        }
        double t1 = clock_now_s();
        g_on = g_rec = 0;
        const double rs = memread_ranges(pool, g_rng, g_nrng, NULL);
        if (i == 0)
            for (size_t k = 0; k < g_nrng; k++)
                rd_bytes += g_rng[k].bytes;
        bytes = g_wbytes;
        tokr[i] = g_wbytes / (t1 - t0) / 1e9;
        rdr[i] = (double)rd_bytes / rs / 1e9;
        share[i] = tokr[i] / rdr[i];
        for (int c = 0; c < g_ncat; c++) {
            double db = g_cat[c].bytes - before[c].bytes, ds = g_cat[c].s - before[c].s;
            g_cat[c].ideal_s += db / (rdr[i] * 1e9);
            g_cat[c].bw_s += ds;
        }
        tok_s += t1 - t0;
        rd_s += rs;
    }
    printf("%s: %d threads, %ld tokens after %ld in the cache, each followed by a plain read of %zu MB, %s\n",
           path, tpool_threads(pool), n_gen, n_fill, rd_bytes >> 20, g_where);
    printf("weights read per token: %.1f MB (the matmuls' weights)\n", bytes / 1e6);
    printf("decode: %.2f tok/s, %.1f GB/s of weights (whole token); plain read: %.1f GB/s (mean)\n",
           (double)n_gen / tok_s, bytes * (double)n_gen / tok_s / 1e9, (double)rd_bytes * (double)n_gen / rd_s / 1e9);
    qsort(share, (size_t)n_gen, sizeof share[0], cmp_d);
    qsort(tokr, (size_t)n_gen, sizeof tokr[0], cmp_d);
    qsort(rdr, (size_t)n_gen, sizeof rdr[0], cmp_d);
    printf("per token, decode's weight rate / the read's rate just after it: median %.3f, "
           "p10 %.3f, p90 %.3f\n",
           share[n_gen / 2], share[n_gen / 10], share[n_gen * 9 / 10]);
    printf("per token GB/s: decode median %.1f (max %.1f), read median %.1f (max %.1f)\n", tokr[n_gen / 2],
           tokr[n_gen - 1], rdr[n_gen / 2], rdr[n_gen - 1]);
    /* one line for scripts (bench/vs_llama.sh) */
    printf("paired share: whole %.3f median %.3f\n", bytes * (double)n_gen / tok_s / ((double)rd_bytes * (double)n_gen / rd_s),
           share[n_gen / 2]);
    printf("\n| part | ms per token | at the paired read rate | share |\n|---|---|---|---|\n");
    for (int c = 0; c < g_ncat; c++)
        printf("| %s | %.3f | %.3f | %.3f |\n", g_cat[c].name, g_cat[c].bw_s * 1e3 / (double)n_gen,
               g_cat[c].ideal_s * 1e3 / (double)n_gen, g_cat[c].bw_s > 0 ? g_cat[c].ideal_s / g_cat[c].bw_s : 0);
    tpool_free(pool);
    free(share);
    free(tokr);
    free(rdr);
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int threads = 0;
    long n_gen = 64, n_ctx_fill = 16, n_prompt = 0;
    int bw = 0, map = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n_gen = atol(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            n_ctx_fill = atol(argv[++i]);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc)
            n_prompt = atol(argv[++i]);
        else if (!strcmp(argv[i], "--bw"))
            bw = 1;
        else if (!strcmp(argv[i], "--map"))
            map = 1;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr, "usage: %s FILE [-t THREADS] [-n TOKENS] [-c CONTEXT] [-p PROMPT] [--bw] [--map]\n", argv[0]);
            return 2;
        }
    }
    if (!path || n_gen < 1 || n_ctx_fill < 1 || n_ctx_fill > 65536 || n_prompt < 0 || n_prompt > 65536) {
        fprintf(stderr, "usage: %s FILE [-t THREADS] [-n TOKENS] [-c CONTEXT] [-p PROMPT] [--bw] [--map]\n", argv[0]);
        return 2;
    }
    gguf_error ge;
    gguf_file *f = gguf_open(path, &ge);
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 2;
    }
    char msg[512];
    model_status st;
    model *m = model_load(f, &st, msg, sizeof msg);
    if (!m) {
        fprintf(stderr, "%s: %s\n", path, msg);
        return 2;
    }
    if (map) {
        g_where = "weights read from the file's mapping";
    } else if (model_copy(m, NULL, NULL, NULL, msg, sizeof msg)) {
        fprintf(stderr, "%s: weights not copied (%s); use --map\n", path, msg);
        return 1;
    }
    backend *cpu = backend_cpu_new(threads);
    if (!cpu)
        return 1;
    g_inner = cpu->ops;
    g_inner_ctx = cpu->ctx;
    backend_ops ops = *cpu->ops;
    ops.free = w_free;
    ops.buf_new = w_buf_new;
    ops.buf_free = w_buf_free;
    ops.buf_write = w_buf_write;
    ops.buf_read = w_buf_read;
    ops.get_rows = w_get_rows;
    ops.rms_norm_mul = w_rms_norm_mul;
    ops.add_w = w_add_w;
    ops.add = w_add;
    ops.matmul = w_matmul;
    ops.matmul_n = g_inner->matmul_n ? w_matmul_n : NULL;
    ops.rope = w_rope;
    ops.store_f16 = w_store_f16;
    ops.attention = w_attention;
    ops.silu_mul = w_silu_mul;
    ops.gelu_mul = g_inner->gelu_mul ? w_gelu_mul : NULL;
    ops.scale = g_inner->scale ? w_scale : NULL;
    ops.sync = w_sync;
    backend timed = {&ops, NULL};
    if (n_prompt > 0) { /* one prompt batch: n_ctx_fill holds the tokens, no generation */
        n_ctx_fill = n_prompt;
        n_gen = 0;
    }
    session_params sp = {.n_ctx = (uint32_t)(n_ctx_fill + n_gen + 1), .be = &timed};
    session *s = session_new(m, &sp, msg, sizeof msg);
    if (!s) {
        fprintf(stderr, "session: %s\n", msg);
        return 1;
    }
    uint32_t nv = session_n_vocab(s);
    float *lg = malloc(sizeof(float) * nv);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n_ctx_fill + n_gen));
    if (!lg || !ids)
        return 1;
    for (long i = 0; i < n_ctx_fill + n_gen; i++)
        ids[i] = (int32_t)((uint64_t)(i * 7919 + 13) % nv);

    cat best[MAX_CAT];
    int best_n = 0;
    double best_wall = 1e30;
    int rc = 0;
    if (n_prompt > 0) {
        rc = prompt_pass(s, ids, (uint32_t)n_prompt, threads, path);
        goto done;
    }
    if (bw) {
        rc = bw_pass(s, ids, n_ctx_fill, n_gen, lg, threads, path);
        goto done;
    }
    for (int pass = 0; pass < 3; pass++) {
        session_kv_truncate(s, 0);
        g_on = 0;
        if (session_eval(s, ids, (uint32_t)n_ctx_fill, 0, lg, false)) {
            fprintf(stderr, "eval: %s\n", session_error(s));
            return 1;
        }
        g_ncat = 0;
        g_on = 1;
        double t0 = clock_now_s();
        for (long i = 0; i < n_gen; i++)
            if (session_eval(s, &ids[n_ctx_fill + i], 1, (uint32_t)(n_ctx_fill + i), lg, false)) {
                fprintf(stderr, "eval: %s\n", session_error(s));
                return 1;
            }
        double wall = (clock_now_s() - t0) / (double)n_gen;
        g_on = 0;
        if (wall < best_wall) {
            best_wall = wall;
            memcpy(best, g_cat, sizeof best);
            best_n = g_ncat;
        }
    }

    /* an empty pool run, as each matmul and attention pays it */
    tpool *pool = tpool_new(threads);
    double runs[20000];
    for (int i = 0; i < 20000; i++) {
        double t0 = clock_now_s();
        tpool_run(pool, nop, NULL);
        runs[i] = clock_now_s() - t0;
    }
    qsort(runs, 20000, sizeof runs[0], cmp_d);
    int nth = tpool_threads(pool);
    tpool_free(pool);

    /* sampling with the chat's defaults over random logits */
    sampler_params spp = sampler_default_params();
    sampler *smp = sampler_new(&spp, nv);
    double samp[200];
    uint64_t r = 12345;
    for (int k = 0; k < 200; k++) {
        for (uint32_t i = 0; i < nv; i++) {
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            lg[i] = (float)((double)(r >> 40) / 16777216.0 * 20.0 - 10.0);
        }
        sampler_result res;
        double t0 = clock_now_s();
        int32_t tok = sampler_sample(smp, lg, &res);
        samp[k] = clock_now_s() - t0;
        sampler_accept(smp, tok);
    }
    qsort(samp, 200, sizeof samp[0], cmp_d);
    sampler_free(smp);

    double ops_total = 0;
    long pool_runs = 0;
    for (int i = 0; i < best_n; i++) {
        ops_total += best[i].s;
        if (!strncmp(best[i].name, "matmul", 6) || !strcmp(best[i].name, "attention"))
            pool_runs += best[i].calls;
    }
    printf("%s: %d threads, %ld tokens after %ld in the cache, best of 3 passes, %s\n", path, nth, n_gen,
           n_ctx_fill, g_where);
    printf("wall per token %.3f ms (%.2f tok/s)\n\n", best_wall * 1e3, 1.0 / best_wall);
    printf("| part | ms per token | share | calls per token |\n|---|---|---|---|\n");
    for (int i = 0; i < best_n; i++)
        printf("| %s | %.3f | %.1f%% | %.0f |\n", best[i].name, best[i].s * 1e3 / (double)n_gen,
               100.0 * best[i].s / (double)n_gen / best_wall, (double)best[i].calls / (double)n_gen);
    double outside = best_wall - ops_total / (double)n_gen;
    printf("| session, outside the ops | %.3f | %.1f%% | |\n", outside * 1e3, 100.0 * outside / best_wall);
    printf("\npool runs per token: %.0f (matmuls + attention); an empty run: median %.2f us, p90 %.2f us, "
           "p99 %.2f us -> about %.3f ms per token of wake-ups and barriers (inside the ops above)\n",
           (double)pool_runs / (double)n_gen, runs[10000] * 1e6, runs[18000] * 1e6, runs[19800] * 1e6,
           (double)pool_runs / (double)n_gen * runs[10000] * 1e3);
    printf("sampling one token (temp %.2g, top-k %d, top-p %.2g, min-p %.2g, repeat penalty %.2g) over %u "
           "logits: median %.3f ms, p90 %.3f ms\n",
           spp.temp, spp.top_k, spp.top_p, spp.min_p, spp.repeat_penalty, nv, samp[100] * 1e3,
           samp[180] * 1e3);
done:
    free(lg);
    free(ids);
    session_free(s);
    backend_free(cpu);
    model_free(m);
    gguf_close(f);
    return rc;
}
