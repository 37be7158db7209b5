/* kernels: SIMD path selection, activation quantization, and the matmul
 * driver that splits the output into chunks (rows x tokens) handed out to the
 * pool's threads dynamically and walks each chunk in register tiles. */
#include "kernels.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "cpufeat.h"
#include "ggtype.h"
#include "kernels_internal.h"

/* ---- SIMD path selection ---- */

static kern_tile_fn g_tab[4][GGTYPE_COUNT];
static kern_gemm_fn g_gemm[4][GGTYPE_COUNT]; /* batched GEMM, where a path has one */
static kern_tile_fn g_vec[4][GGTYPE_COUNT];  /* single-token tiles in ggml's order */
static kern_tile_fn g_vec_plain[4][GGTYPE_COUNT]; /* the same for weights ggml does not repack */
static kern_tile_fn g_bat[4][GGTYPE_COUNT];  /* batch tiles in ggml's order (AVX2 paths) */
static kern_tile_fn g_vec8[4][GGTYPE_COUNT]; /* one token, 8 rows per tile (AVX2 paths) */
static bool g_no_gemm;                       /* GGSCOPE_NO_GEMM set */
static atomic_int g_lanes_off;               /* kern_one_token_lanes, GGSCOPE_NO_LANES */
static atomic_int g_ref_tiles;               /* kern_reference_tiles */
static kern_q8_fn g_q8[4];    /* activation quantizers per path (NULL: scalar) */
static kern_q8k_fn g_q8k[4];
static kern_f16_ops g_f16[4]; /* F16 row helpers per path (NULL members: scalar) */
static kern_simd g_simd = KERN_SIMD_SCALAR;
static bool g_avx2_vnni;
static bool g_haswell; /* AVX2 tables follow llama.cpp's haswell build */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static bool cpu_has(kern_simd s)
{
    const cpufeat *f = cpufeat_get();
    switch (s) {
    case KERN_SIMD_SCALAR:
        return true;
    case KERN_SIMD_AVX2:
    case KERN_SIMD_AVX2_PLAIN:
        return f->avx2;
    case KERN_SIMD_AVX512:
        return f->avx512 && f->avx512vnni;
    }
    return false;
}

static void simd_init(void)
{
    g_no_gemm = getenv("GGSCOPE_NO_GEMM") != NULL;
    if (getenv("GGSCOPE_NO_LANES"))
        atomic_store(&g_lanes_off, 1);
    kern_fill_scalar(g_tab[KERN_SIMD_SCALAR]);
    memcpy(g_tab[KERN_SIMD_AVX2], g_tab[KERN_SIMD_SCALAR], sizeof g_tab[0]);
    memcpy(g_tab[KERN_SIMD_AVX512], g_tab[KERN_SIMD_SCALAR], sizeof g_tab[0]);
    memcpy(g_tab[KERN_SIMD_AVX2_PLAIN], g_tab[KERN_SIMD_SCALAR], sizeof g_tab[0]);
    if (cpu_has(KERN_SIMD_AVX2)) {
        g_avx2_vnni = cpufeat_get()->avxvnni;
        kern_fill_avx2(g_tab[KERN_SIMD_AVX2], g_avx2_vnni);
        kern_fill_avx2(g_tab[KERN_SIMD_AVX2_PLAIN], 0);
        kern_quant_avx2(&g_q8[KERN_SIMD_AVX2], &g_q8k[KERN_SIMD_AVX2]);
        g_q8[KERN_SIMD_AVX2_PLAIN] = g_q8[KERN_SIMD_AVX512] = g_q8[KERN_SIMD_AVX2];
        g_q8k[KERN_SIMD_AVX2_PLAIN] = g_q8k[KERN_SIMD_AVX512] = g_q8k[KERN_SIMD_AVX2];
        kern_f16_avx2(&g_f16[KERN_SIMD_AVX2]);
        kern_fill_exact_avx2(g_vec[KERN_SIMD_AVX2], g_bat[KERN_SIMD_AVX2], g_vec_plain[KERN_SIMD_AVX2],
                             g_vec8[KERN_SIMD_AVX2]);
        kern_fill_exact_avx2(g_vec[KERN_SIMD_AVX2_PLAIN], g_bat[KERN_SIMD_AVX2_PLAIN],
                             g_vec_plain[KERN_SIMD_AVX2_PLAIN], g_vec8[KERN_SIMD_AVX2_PLAIN]);
        kern_fill_gemm_avx2(g_gemm[KERN_SIMD_AVX2]);
        kern_fill_gemm_avx2(g_gemm[KERN_SIMD_AVX2_PLAIN]);
        g_haswell = cpufeat_llama_variant() == CPUFEAT_LLAMA_HASWELL;
        if (g_haswell) {
            kern_fill_exact_haswell(g_vec[KERN_SIMD_AVX2], g_bat[KERN_SIMD_AVX2]);
            kern_fill_exact_haswell(g_vec[KERN_SIMD_AVX2_PLAIN], g_bat[KERN_SIMD_AVX2_PLAIN]);
        }
        g_f16[KERN_SIMD_AVX2_PLAIN] = g_f16[KERN_SIMD_AVX512] = g_f16[KERN_SIMD_AVX2];
        g_simd = KERN_SIMD_AVX2;
    }
    if (cpu_has(KERN_SIMD_AVX512)) {
        memcpy(g_tab[KERN_SIMD_AVX512], g_tab[KERN_SIMD_AVX2], sizeof g_tab[0]);
        kern_fill_avx512(g_tab[KERN_SIMD_AVX512]);
        kern_fill_gemm_avx512(g_gemm[KERN_SIMD_AVX512]);
        kern_fill_exact_avx512(g_vec[KERN_SIMD_AVX512], g_vec_plain[KERN_SIMD_AVX512], g_vec8[KERN_SIMD_AVX512]);
        g_simd = KERN_SIMD_AVX512;
    }
    const char *env = cpufeat_simd_request();
    if (env) {
        kern_simd want = g_simd;
        if (strcmp(env, "scalar") == 0)
            want = KERN_SIMD_SCALAR;
        else if (strcmp(env, "avx2") == 0)
            want = KERN_SIMD_AVX2;
        else if (strcmp(env, "avx512") == 0)
            want = KERN_SIMD_AVX512;
        else if (strcmp(env, "avx2-plain") == 0)
            want = KERN_SIMD_AVX2_PLAIN;
        if (cpu_has(want))
            g_simd = want;
    }
}

void kern_reference_tiles(int on)
{
    atomic_store(&g_ref_tiles, on != 0);
}

kern_simd kern_simd_get(void)
{
    pthread_once(&g_once, simd_init);
    return g_simd;
}

bool kern_simd_available(kern_simd s)
{
    return (unsigned)s <= KERN_SIMD_AVX2_PLAIN && cpu_has(s);
}

int kern_simd_set(kern_simd s)
{
    pthread_once(&g_once, simd_init);
    if (!kern_simd_available(s))
        return -1;
    g_simd = s;
    return 0;
}

const char *kern_simd_name(void)
{
    switch (kern_simd_get()) {
    case KERN_SIMD_AVX2:
        return g_avx2_vnni ? "avx2+vnni" : "avx2";
    case KERN_SIMD_AVX2_PLAIN:
        return "avx2";
    case KERN_SIMD_AVX512:
        return "avx512+vnni";
    default:
        return "scalar";
    }
}

/* ---- types ---- */

uint32_t kern_act_type(uint32_t wtype)
{
    switch (wtype) {
    case GGTYPE_Q4_0: case GGTYPE_Q5_0: case GGTYPE_Q8_0: case GGTYPE_IQ4_NL: case GGTYPE_MXFP4:
        return GGTYPE_Q8_0;
    case GGTYPE_Q4_1: case GGTYPE_Q5_1:
        return GGTYPE_Q8_1;
    case GGTYPE_Q2_K: case GGTYPE_Q3_K: case GGTYPE_Q4_K: case GGTYPE_Q5_K: case GGTYPE_Q6_K:
        return GGTYPE_Q8_K;
    default:
        return GGTYPE_F32;
    }
}

bool kern_type_fast(uint32_t wtype)
{
    return wtype == GGTYPE_F32 || wtype == GGTYPE_F16 || wtype == GGTYPE_BF16 ||
           kern_act_type(wtype) != GGTYPE_F32;
}

/* Bytes of one quantized activation row in the internal layout, or 0. */
static size_t act_row_bytes(uint32_t atype, int64_t n_cols)
{
    if (atype == GGTYPE_Q8_0 || atype == GGTYPE_Q8_1)
        return n_cols % 32 ? 0 : (size_t)(n_cols / 32) * sizeof(kq8);
    if (atype == GGTYPE_Q8_K)
        return n_cols % QK_K ? 0 : (size_t)(n_cols / QK_K) * sizeof(kq8k);
    return 0;
}

size_t kern_matmul_scratch_size(uint32_t wtype, int64_t n_cols, int64_t n_tok)
{
    const ggtype_traits *tr = ggtype_get(wtype);
    if (!tr || n_cols <= 0 || n_tok <= 0 || n_cols % tr->blck_size)
        return (size_t)-1;
    uint32_t at = kern_act_type(wtype);
    if (at == GGTYPE_F32)
        return 0;
    size_t rb = act_row_bytes(at, n_cols), total;
    if (rb == 0 || __builtin_mul_overflow(rb, (size_t)n_tok, &total) || total > SIZE_MAX - 64)
        return (size_t)-1;
    return total + 64;
}

/* ---- activation quantization (ggml's x86 rounding) ---- */

static void quant_q8_32(const float *x, int8_t *qs, float *d_out, int32_t *s_out)
{
    float amax = 0;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    /* ggml's x86 quantize_row_q8_0: 127/amax (not 1/d), rounded half to even */
    float d = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t s = 0;
    for (int j = 0; j < 32; j++) {
        qs[j] = (int8_t)lrintf(x[j] * id);
        s += qs[j];
    }
    *d_out = d;
    *s_out = s;
}

static void quant_q8_K(const float *x, block_q8_K *y)
{
    float max = 0, amax = 0;
    for (int j = 0; j < QK_K; j++) {
        float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax == 0.0f) {
        memset(y, 0, sizeof *y);
        return;
    }
    float iscale = -127.0f / max;
    for (int j = 0; j < QK_K; j++) {
        int v = (int)lrintf(iscale * x[j]);
        y->qs[j] = (int8_t)(v > 127 ? 127 : v);
    }
    for (int g = 0; g < QK_K / 16; g++) {
        int s = 0;
        for (int l = 0; l < 16; l++)
            s += y->qs[g * 16 + l];
        y->bsums[g] = (int16_t)s;
    }
    y->d = 1.0f / iscale;
}

/* One activation row into the internal layout. */
static void quant_act_row(uint32_t atype, const float *x, uint8_t *dst, int64_t n)
{
    kern_simd simd = kern_simd_get();
    if (atype == GGTYPE_Q8_K && g_q8k[simd]) {
        g_q8k[simd](x, (kq8k *)dst, n / QK_K);
        return;
    }
    if (atype != GGTYPE_Q8_K && g_q8[simd]) {
        g_q8[simd](x, (kq8 *)dst, n / 32);
        return;
    }
    if (atype == GGTYPE_Q8_K) {
        kq8k *y = (kq8k *)dst;
        for (int64_t b = 0; b < n / QK_K; b++) {
            quant_q8_K(x + b * QK_K, &y[b].q);
            for (int g = 0; g < 16; g++)
                y[b].ds16[g] = y[b].q.d * (float)y[b].q.bsums[g];
            for (int j = 0; j < 8; j++)
                y[b].ds32[j] = y[b].q.d * (float)(y[b].q.bsums[2 * j] + y[b].q.bsums[2 * j + 1]);
        }
        return;
    }
    kq8 *y = (kq8 *)dst;
    for (int64_t b = 0; b < n / 32; b++) {
        float d;
        quant_q8_32(x + b * 32, y[b].qs, &d, &y[b].s);
        y[b].d = kern_h2f(kern_f2h(d)); /* ggml stores the scale as f16 */
        y[b].ds = y[b].d * (float)y[b].s;
    }
}

int kern_quantize_act(uint32_t act_type, const float *x, void *dst, int64_t n)
{
    if (!x || !dst || n <= 0)
        return -1;
    if (act_type == GGTYPE_Q8_K) {
        if (n % QK_K)
            return -1;
        for (int64_t b = 0; b < n / QK_K; b++)
            quant_q8_K(x + b * QK_K, (block_q8_K *)dst + b);
        return 0;
    }
    if ((act_type != GGTYPE_Q8_0 && act_type != GGTYPE_Q8_1) || n % 32)
        return -1;
    for (int64_t b = 0; b < n / 32; b++) {
        int8_t qs[32];
        float d;
        int32_t s;
        quant_q8_32(x + b * 32, qs, &d, &s);
        if (act_type == GGTYPE_Q8_0) {
            block_q8_0 *y = (block_q8_0 *)dst + b;
            y->d = kern_f2h(d);
            memcpy(y->qs, qs, 32);
        } else {
            block_q8_1 *y = (block_q8_1 *)dst + b;
            y->d = kern_f2h(d);
            y->s = kern_f2h(d * (float)s);
            memcpy(y->qs, qs, 32);
        }
    }
    return 0;
}

size_t kern_act_row_bytes(uint32_t act_type, int64_t n_cols)
{
    return act_row_bytes(act_type, n_cols);
}

void kern_act_row(uint32_t act_type, const float *x, uint8_t *dst, int64_t n)
{
    quant_act_row(act_type, x, dst, n);
}

kern_tile_fn kern_vec_tile(uint32_t wtype, int plain, int *tile_r)
{
    const kern_simd simd = kern_simd_get();
    const bool ref = atomic_load_explicit(&g_ref_tiles, memory_order_relaxed) != 0;
    kern_tile_fn vp = plain ? g_vec_plain[simd][wtype] : NULL, vec = vp ? vp : g_vec[simd][wtype];
    *tile_r = KERN_TILE_R;
    if (vec && g_vec8[simd][wtype] && !ref && !vp) { /* as kern_matmul picks for one token */
        *tile_r = KERN_TILE_R8;
        return g_vec8[simd][wtype];
    }
    return vec ? vec : g_tab[simd][wtype];
}

kern_gemm_fn kern_vec_gemm(uint32_t wtype, int plain)
{
    const kern_simd simd = kern_simd_get();
    if ((simd != KERN_SIMD_AVX2 && simd != KERN_SIMD_AVX2_PLAIN) || g_no_gemm ||
        atomic_load_explicit(&g_ref_tiles, memory_order_relaxed))
        return NULL;
    if (wtype != GGTYPE_Q4_0 && wtype != GGTYPE_Q8_0 && wtype != GGTYPE_Q4_K && wtype != GGTYPE_Q6_K &&
        wtype != GGTYPE_MXFP4)
        return NULL;
    return plain && (wtype == GGTYPE_Q4_K || wtype == GGTYPE_MXFP4) ? NULL : g_gemm[simd][wtype];
}

kern_tile_fn kern_f32_tile(void)
{
    return g_tab[kern_simd_get()][GGTYPE_F32];
}

_Thread_local int kern_pf_tiles = 1;

/* ---- the driver ---- */

/* One token: lanes for up to this many threads (more: the shared counter) */
#define KERN_LANES 16

/* One weight matrix of a run: its chunks are ids base .. base + n_chunks - 1
 * of the run's shared counter. */
typedef struct {
    const uint8_t *W;
    size_t row_bytes;
    int64_t n_rows;
    float *y;
    int64_t rc;                  /* chunk: rc rows x the run's tc tokens */
    int64_t n_rchunks, base;
} mm_mat;

/* The rows of row chunk i of m (the last one may be short). */
static inline int64_t rchunk_rows(const mm_mat *m, int64_t i)
{
    const int64_t r0 = i * m->rc;
    return r0 + m->rc < m->n_rows ? m->rc : m->n_rows - r0;
}

typedef struct {
    kern_tile_fn tile;
    uint32_t wtype, atype;
    mm_mat m[KERN_MATMUL_MAX];
    int n_mat;
    int64_t n_cols, nb;
    const float *x;
    const uint8_t *act; /* quantized activations, or the floats */
    size_t act_stride;
    int64_t n_tok;
    int64_t tc;                  /* tokens per chunk */
    int tile_r;                  /* rows per tile call */
    int64_t n_chunks;            /* of all the matrices */
    atomic_llong next;
    atomic_int err;
    kern_tile_fn f32_tile;       /* generic path: dot of a dequantized row */
    kern_tile_fn tile_tail;      /* tokens from t_tail on (Q4_K: ggml's mat-vec order) */
    int64_t t_tail;
    kern_gemm_fn gemm;           /* batched path: chunks of KERN_GEMM_ROWS rows */
    bool plain;                  /* n_rows % 8 != 0 (see kern_gemm_fn) */
    int pf_tiles;                /* kern_pf_tiles for the run's workers */
    tpool *pool;             /* for its per-thread work buffers */
    /* One token: lanes (n_lanes > 0) instead of the counter, see lane_claim */
    int n_lanes;
    _Atomic uint64_t lane[KERN_LANES]; /* next chunk | end << 32 */
    uint32_t lane_lo[KERN_LANES];      /* each lane's first chunk */
} mm_ctx;

/* One token reads each weight once, as streams that the hardware prefetcher
 * follows: each thread takes the chunks of its own lane (a run of
 * contiguous chunks, an equal share of the bytes) front to back, so that
 * its stream goes on across chunk boundaries (a chunk from the shared
 * counter starts a new stream). A thread whose lane is empty takes over a
 * lane nobody has started (a worker that joined late, or not at all,
 * tpool_run_dynamic) from its front, or else takes chunks from the back of
 * another. Every chunk once; -1 when none is left. *cur: the caller's lane. */
static int64_t lane_claim(mm_ctx *c, int *cur)
{
    const int n = c->n_lanes;
    for (int k = 0; k < n; k++) {
        const int l = (*cur + k) % n;
        uint64_t v = atomic_load_explicit(&c->lane[l], memory_order_relaxed);
        for (;;) {
            const uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
            if (lo >= hi)
                break;
            const bool front = k == 0 || lo == c->lane_lo[l];
            const uint64_t nv = front ? v + 1 : v - ((uint64_t)1 << 32);
            if (atomic_compare_exchange_weak_explicit(&c->lane[l], &v, nv, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                if (front)
                    *cur = l;
                return front ? (int64_t)lo : (int64_t)hi - 1;
            }
        }
    }
    return -1;
}

/* The next chunk for a thread: from the lanes, or else from the shared
 * counter (a thread that joins late, or not at all, tpool_run_dynamic,
 * leaves its share to the others); -1 when none is left. */
static int64_t next_chunk(mm_ctx *c, int *cur)
{
    if (c->n_lanes)
        return lane_claim(c, cur);
    const int64_t k = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
    return k < c->n_chunks ? k : -1;
}

static void quant_worker(void *p, int ith, int nth)
{
    mm_ctx *c = p;
    for (int64_t t = ith; t < c->n_tok; t += nth)
        quant_act_row(c->atype, c->x + t * c->n_cols, (uint8_t *)c->act + (size_t)t * c->act_stride,
                      c->n_cols);
}

static void run_chunk(mm_ctx *c, int64_t chunk, float *rowbuf)
{
    const mm_mat *m = &c->m[0];
    while (m + 1 < c->m + c->n_mat && chunk >= m[1].base)
        m++;
    chunk -= m->base;
    int64_t r0 = (chunk % m->n_rchunks) * m->rc, t0 = (chunk / m->n_rchunks) * c->tc;
    int64_t r1 = r0 + rchunk_rows(m, chunk % m->n_rchunks);
    int64_t t1 = t0 + c->tc < c->n_tok ? t0 + c->tc : c->n_tok;
    const uint8_t *W = m->W;
    const size_t row_bytes = m->row_bytes;
    const int64_t n_rows = m->n_rows;
    float *y = m->y;
    if (c->gemm) {
        int64_t tg = c->n_tok - c->n_tok % 4 - t0;
        c->gemm(W + (size_t)r0 * row_bytes, row_bytes, (int)(r1 - r0),
                c->act + (size_t)t0 * c->act_stride, c->act_stride, t1 - t0, c->n_cols,
                y + t0 * n_rows + r0, n_rows, rowbuf, tg < 0 ? 0 : tg, c->plain);
        return;
    }
    if (rowbuf) {
        /* Generic path: dequantize each row once, dot it with every token. */
        for (int64_t r = r0; r < r1; r++) {
            if (codec_dequantize(c->wtype, W + (size_t)r * row_bytes, rowbuf,
                                 (uint64_t)c->n_cols) != 0) {
                atomic_store(&c->err, 1);
                return;
            }
            for (int64_t t = t0; t < t1; t += KERN_TILE_T) {
                int nt = (int)(t1 - t < KERN_TILE_T ? t1 - t : KERN_TILE_T);
                c->f32_tile((const uint8_t *)rowbuf, 0, 1, c->act + (size_t)t * c->act_stride,
                            c->act_stride, nt, c->n_cols, y + t * n_rows + r, n_rows);
            }
        }
        return;
    }
    for (int64_t t = t0, nt; t < t1; t += nt) {
        kern_tile_fn tile = c->tile;
        int64_t lim = t1;
        if (c->tile_tail) {
            if (t < c->t_tail)
                lim = t1 < c->t_tail ? t1 : c->t_tail;
            else
                tile = c->tile_tail;
        }
        nt = lim - t < KERN_TILE_T ? lim - t : KERN_TILE_T;
        if (c->tile_r == KERN_TILE_R8) {
            /* the chunk's first tile, all at once (the tiles prefetch the
             * next one as they go) */
            const char *p0 = (const char *)(W + (size_t)r0 * row_bytes);
            for (size_t o = 0; o < (size_t)KERN_TILE_R8 * row_bytes; o += 64)
                __builtin_prefetch(p0 + o);
        }
        for (int64_t r = r0; r < r1; r += c->tile_r) {
            int nr = (int)(r1 - r < c->tile_r ? r1 - r : c->tile_r);
            tile(W + (size_t)r * row_bytes, row_bytes, nr,
                 c->act + (size_t)t * c->act_stride, c->act_stride, (int)nt, c->nb,
                    y + t * n_rows + r, n_rows);
        }
    }
}

static void mm_worker(void *p, int ith, int nth)
{
    mm_ctx *c = p;
    (void)nth;
    float *rowbuf = NULL, *owned = NULL;
    if (c->gemm || !c->tile) {
        size_t need = c->gemm ? kern_gemm_tmp_size(c->n_cols) : (size_t)c->n_cols * sizeof(float);
        rowbuf = tpool_thread_buf(c->pool, ith, need);
        if (!rowbuf)
            rowbuf = owned = malloc(need);
        if (!rowbuf) {
            atomic_store(&c->err, 1);
            return;
        }
    }
    kern_pf_tiles = c->pf_tiles;
    int cur = c->n_lanes ? ith % c->n_lanes : 0;
    for (int64_t chunk = next_chunk(c, &cur); chunk >= 0; chunk = next_chunk(c, &cur)) {
        run_chunk(c, chunk, rowbuf);
        if (atomic_load_explicit(&c->err, memory_order_relaxed))
            break;
    }
    kern_pf_tiles = 1;
    free(owned);
}

/* nth lanes of contiguous chunks: lane l starts at the first chunk whose
 * middle lies past l/nth of the run's bytes (one token: a chunk's bytes are
 * its rows'); a lane may be empty. */
static void set_lanes(mm_ctx *c, int nth)
{
    double total = 0, done = 0;
    for (int k = 0; k < c->n_mat; k++)
        total += (double)c->m[k].n_rows * (double)c->m[k].row_bytes;
    int l = 1;
    c->lane_lo[0] = 0;
    for (int k = 0; k < c->n_mat; k++) {
        const mm_mat *m = &c->m[k];
        for (int64_t i = 0; i < m->n_rchunks; i++) {
            const double b = (double)rchunk_rows(m, i) * (double)m->row_bytes;
            while (l < nth && done + b / 2 > total * l / nth)
                c->lane_lo[l++] = (uint32_t)(m->base + i);
            done += b;
        }
    }
    while (l < nth)
        c->lane_lo[l++] = (uint32_t)c->n_chunks;
    c->n_lanes = nth;
    for (int i = 0; i < nth; i++) {
        const uint64_t hi = i + 1 < nth ? c->lane_lo[i + 1] : (uint64_t)c->n_chunks;
        atomic_init(&c->lane[i], c->lane_lo[i] | hi << 32);
    }
}

void kern_one_token_lanes(int on)
{
    atomic_store(&g_lanes_off, !on);
}

int kern_matmul(tpool *pool, uint32_t wtype, const void *W, size_t row_bytes,
                int64_t n_rows, int64_t n_cols, const float *x, int64_t n_tok, float *y,
                void *scratch, size_t scratch_size)
{
    const kern_mat m = {W, row_bytes, n_rows, y};
    return kern_matmul_n(pool, wtype, &m, 1, n_cols, x, n_tok, scratch, scratch_size);
}

int kern_matmul_n(tpool *pool, uint32_t wtype, const kern_mat *mats, int n_mat, int64_t n_cols,
                  const float *x, int64_t n_tok, void *scratch, size_t scratch_size)
{
    const ggtype_traits *tr = ggtype_get(wtype);
    if (!tr || !mats || n_mat < 1 || n_mat > KERN_MATMUL_MAX || !x || n_cols <= 0 || n_tok <= 0 ||
        n_cols % tr->blck_size != 0)
        return -1;
    bool ovf;
    uint64_t need = ggtype_row_size(wtype, (uint64_t)n_cols, &ovf);
    if (need == 0 || ovf)
        return -1;
    for (int k = 0; k < n_mat; k++)
        if (!mats[k].W || !mats[k].y || mats[k].n_rows <= 0 || mats[k].row_bytes < need)
            return -1;
    const int64_t n_rows = mats[0].n_rows;
    for (int k = 1; k < n_mat; k++)
        if ((mats[k].n_rows % 8 != 0) != (n_rows % 8 != 0) || (mats[k].n_rows % 4 != 0) != (n_rows % 4 != 0)) {
            /* the tiles differ (see plain and use_vec below): one run each */
            for (int j = 0; j < n_mat; j++)
                if (kern_matmul_n(pool, wtype, &mats[j], 1, n_cols, x, n_tok, scratch, scratch_size))
                    return -1;
            return 0;
        }
    kern_simd simd = kern_simd_get();

    mm_ctx c;
    memset(&c, 0, sizeof c);
    c.wtype = wtype;
    c.atype = kern_act_type(wtype);
    for (int k = 0; k < n_mat; k++) {
        c.m[k].W = mats[k].W;
        c.m[k].row_bytes = mats[k].row_bytes;
        c.m[k].n_rows = mats[k].n_rows;
        c.m[k].y = mats[k].y;
    }
    c.n_mat = n_mat;
    c.n_cols = n_cols;
    c.x = x;
    c.n_tok = n_tok;
    const bool plain = n_rows % 8 != 0;
    kern_tile_fn vec = plain && g_vec_plain[simd][wtype] ? g_vec_plain[simd][wtype] : g_vec[simd][wtype];
    /* ggml's batched F32/F16 kernel (tinyBLAS) needs 16 | K (8 | K in the
     * haswell build) and 4 | rows; without it, and for one token, it sums in
     * its mat-vec order */
    const bool fl = wtype == GGTYPE_F32 || wtype == GGTYPE_F16;
    const int64_t kn = g_haswell && (simd == KERN_SIMD_AVX2 || simd == KERN_SIMD_AVX2_PLAIN) ? 8 : 16;
    const bool use_vec = n_tok == 1 || (fl && (n_cols % kn != 0 || n_rows % 4 != 0));
    kern_tile_fn bat = plain && g_vec_plain[simd][wtype] ? g_vec_plain[simd][wtype] : g_bat[simd][wtype];
    c.tile_r = KERN_TILE_R;
    const bool ref = atomic_load_explicit(&g_ref_tiles, memory_order_relaxed) != 0;
    if (use_vec && vec && g_vec8[simd][wtype] && !ref && (!plain || !g_vec_plain[simd][wtype])) {
        c.tile = g_vec8[simd][wtype];
        c.tile_r = KERN_TILE_R8;
    } else if (use_vec && vec) {
        c.tile = vec;
    } else if (bat) {
        c.tile = bat;
        if (wtype == GGTYPE_Q4_K && !plain && vec) { /* ggml's last n % 4 rows: mat-vec order */
            c.tile_tail = vec;
            c.t_tail = n_tok - n_tok % 4;
        }
    } else {
        c.tile = g_tab[simd][wtype];
    }
    c.plain = plain;
    c.f32_tile = g_tab[simd][GGTYPE_F32];
    c.pool = pool;
    atomic_init(&c.err, 0);

    void *owned = NULL;
    if (c.atype != GGTYPE_F32) {
        size_t ss = kern_matmul_scratch_size(wtype, n_cols, n_tok);
        if (ss == (size_t)-1)
            return -1;
        if (!scratch) {
            scratch = owned = malloc(ss);
            if (!owned)
                return -1;
        } else if (scratch_size < ss) {
            return -1;
        }
        c.act_stride = act_row_bytes(c.atype, n_cols);
        c.act = (const uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
        c.nb = n_cols / (c.atype == GGTYPE_Q8_K ? QK_K : 32);
        if (n_tok * n_cols <= 65536 || tpool_threads(pool) == 1)
            quant_worker(&c, 0, 1);
        else
            tpool_run(pool, quant_worker, &c);
    } else {
        c.act = (const uint8_t *)x;
        c.act_stride = (size_t)n_cols * sizeof(float);
        c.nb = n_cols;
    }

    /* One token on long F16 rows (AVX-512, zen4 order): the activations as
     * F16 when they are F16 values (ggml's F16 products round them), so
     * that a row's activations stay in L1 beside the weights' stream
     * (2048 x 5632, calls alternated: 9-13% faster than four rows at once;
     * no faster for 2048-element rows) */
    if (wtype == GGTYPE_F16 && n_tok == 1 && simd == KERN_SIMD_AVX512 && !g_haswell && !ref &&
        c.tile == g_vec[simd][GGTYPE_F16] && n_cols > 4096 && n_cols % 64 == 0 && kern_exact_f16_hx()) {
        /* the F16 form and its way back, compared with x bit for bit
         * (vector conversions: a scalar loop here took 17 us of a 0.5 ms
         * down projection; a NaN leaves x to the F32 path) */
        uint16_t *xh = malloc((size_t)n_cols * (sizeof(uint16_t) + sizeof(float)));
        if (xh) {
            float *back = (float *)(void *)(xh + n_cols);
            kern_f32_to_f16(x, xh, n_cols);
            kern_f16_to_f32(xh, back, n_cols);
            if (!memcmp(back, x, (size_t)n_cols * sizeof(float))) {
                c.act = (const uint8_t *)xh;
                c.act_stride = (size_t)n_cols * sizeof(uint16_t);
                c.tile = kern_exact_f16_hx();
                free(owned);
                owned = xh;
            } else {
                free(xh);
            }
        }
    }

    /* Chunks: few rows for mat-vec (balance), row x token blocks that stay
     * in L2 for prompt batches. */
    int nth = tpool_threads(pool);
    /* The GEMM follows ggml's float order for Q4_0, Q8_0, Q4_K and Q6_K, so
     * it takes every batch of those (ggml's batched kernels start at 2). */
    const bool exact = wtype == GGTYPE_Q4_0 || wtype == GGTYPE_Q8_0 || wtype == GGTYPE_Q4_K ||
                       wtype == GGTYPE_Q6_K || wtype == GGTYPE_MXFP4 || fl;
    /* the AVX2 GEMM: not for the reference tiles, Q4_K not repacked (the
     * tiles) and F32/F16 outside tinyBLAS's haswell order */
    const bool avx2 = simd == KERN_SIMD_AVX2 || simd == KERN_SIMD_AVX2_PLAIN;
    const bool avx2_skip = ref || (plain && (wtype == GGTYPE_Q4_K || wtype == GGTYPE_MXFP4)) ||
                           (fl && (use_vec || !g_haswell));
    if (n_tok >= (exact ? 2 : KERN_GEMM_MIN_TOK) && g_gemm[simd][wtype] && !g_no_gemm && !(avx2 && avx2_skip))
        c.gemm = g_gemm[simd][wtype];
    c.tc = n_tok <= 64 ? n_tok : 64;
    if (c.gemm) /* the repacked rows are reused by every token of the chunk */
        c.tc = n_tok <= 512 ? n_tok : 512;
    for (int k = 0; k < n_mat; k++) {
        const int64_t nr = c.m[k].n_rows;
        int64_t want = (nr + (int64_t)nth * 8 - 1) / ((int64_t)nth * 8);
        /* one token: long runs of contiguous rows keep the prefetch of the
         * next rows useful (64-row chunks cost ~15% of decode here) */
        const int64_t cap = n_tok == 1 ? 256 : 64;
        int64_t rc = want < cap ? want : cap;
        if (n_tok == 1 && rc < 64) /* small matrices: fewer cold chunk starts */
            rc = 64;
        rc = (rc + c.tile_r - 1) / c.tile_r * c.tile_r;
        if (n_tok > 4 && rc < 16)
            rc = 16;
        if (c.gemm)
            rc = avx2 && fl ? KERN_GEMM_ROWS_F : KERN_GEMM_ROWS;
        c.m[k].rc = rc;
        c.m[k].n_rchunks = (nr + rc - 1) / rc;
        c.m[k].base = c.n_chunks;
        c.n_chunks += c.m[k].n_rchunks * ((n_tok + c.tc - 1) / c.tc);
    }
    atomic_init(&c.next, 0);
    if (n_tok == 1 && !c.gemm && nth >= 2 && nth <= KERN_LANES && c.n_chunks >= 2 * nth &&
        c.n_chunks <= UINT32_MAX && !atomic_load(&g_lanes_off))
        set_lanes(&c, nth);
    /* one token on one thread (or a pool narrowed to one by other
     * processes' load): prefetch two tiles on (KSFX_PREFETCH_NEXT) */
    c.pf_tiles = n_tok == 1 && (nth == 1 || c.n_chunks == 1 || tpool_width(pool) == 1) ? 2 : 1;
    if (nth == 1 || c.n_chunks == 1)
        mm_worker(&c, 0, 1);
    else
        tpool_run_dynamic(pool, mm_worker, &c);
    free(owned);
    return atomic_load(&c.err) ? -1 : 0;
}

/* ---- row helpers ---- */

void kern_f32_to_f16(const float *src, uint16_t *dst, int64_t n)
{
    kern_simd simd = kern_simd_get();
    if (g_f16[simd].f2h) {
        g_f16[simd].f2h(src, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        dst[i] = kern_f2h(src[i]);
}

void kern_f16_to_f32(const uint16_t *src, float *dst, int64_t n)
{
    kern_simd simd = kern_simd_get();
    if (g_f16[simd].h2f) {
        g_f16[simd].h2f(src, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        dst[i] = kern_h2f(src[i]);
}

float kern_dot_f16_f32(const uint16_t *a, const float *b, int64_t n)
{
    float y;
    g_tab[kern_simd_get()][GGTYPE_F16]((const uint8_t *)a, 0, 1, (const uint8_t *)b, 0, 1, n, &y, 1);
    return y;
}

void kern_axpy_f16(float alpha, const uint16_t *x, float *y, int64_t n)
{
    kern_simd simd = kern_simd_get();
    if (g_f16[simd].axpy) {
        g_f16[simd].axpy(alpha, x, y, n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        y[i] += alpha * kern_h2f(x[i]);
}
