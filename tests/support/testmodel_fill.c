/* testmodel's tensor data: random rows, deterministic per (seed, tensor,
 * row), quantized by the codec's reference quantizers; with fast_random,
 * quantized matrices are written as random blocks directly (no floats, no
 * quantizer: the multi-gigabyte benchmark files). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ggtype.h"
#include "testmodel_impl.h"

#define POOL_ROWS 64
#define CHUNK_ROWS 64

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Uniform in [-1, 1) from a counter-based generator: deterministic per (seed, i). */
static inline float urand(uint64_t *st)
{
    *st = mix(*st);
    return (float)((double)(*st >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* Random values of one row (sqrt(3) turns uniform [-1,1) into std 1). */
static void fill_row(const testmodel__tensor *t, uint64_t seed, uint64_t row, float *dst)
{
    uint64_t st = mix(seed ^ mix(row + 0x1234));
    for (uint64_t c = 0; c < t->ne0; c++) {
        float u = urand(&st);
        switch (t->kind) {
        case TESTMODEL__NORM: dst[c] = 1.0f + 0.25f * u; break;
        case TESTMODEL__ROPE_FREQS: dst[c] = 1.0f + (float)(c % 8) * 0.5f; break; /* 1..4.5 */
        case TESTMODEL__ROPE_LONG: dst[c] = 1.0f + (float)c * 0.5f; break; /* rising, as Phi-3's */
        case TESTMODEL__ROPE_SHORT: dst[c] = 1.0f + (float)(c % 4) * 0.02f; break; /* near 1 */
        default: dst[c] = t->scale * 1.7320508f * u; break;
        }
    }
}

/* Quantize `nr` rows of floats to t->type into dst. */
static int to_type(const testmodel__tensor *t, const float *src, void *dst, uint64_t nr)
{
    if (t->type == GGTYPE_F32) {
        memcpy(dst, src, sizeof(float) * nr * t->ne0);
        return 0;
    }
    if (t->type == GGTYPE_F16) {
        for (uint64_t i = 0; i < nr * t->ne0; i++)
            ((uint16_t *)dst)[i] = codec_f32_to_f16(src[i]);
        return 0;
    }
    return codec_quantize(t->type, src, dst, nr, t->ne0, NULL) ? 0 : -1;
}

/* ---- random blocks ---- */

/* Random bits: a counter through the mixer. */
typedef struct {
    uint64_t ctr;
} rbits;

static uint64_t rb_u64(rbits *r)
{
    return mix(r->ctr++);
}

static void rb_bytes(rbits *r, uint8_t *b, size_t n)
{
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t v = rb_u64(r);
        memcpy(b, &v, 8);
    }
    if (n) {
        uint64_t v = rb_u64(r);
        memcpy(b, &v, n);
    }
}

/* Uniform in [0, 1). */
static float rb_unit(rbits *r)
{
    return (float)(rb_u64(r) >> 40) * (1.0f / 16777216.0f);
}

static void put_f16(uint8_t *b, float v)
{
    uint16_t h = codec_f32_to_f16(v);
    memcpy(b, &h, 2);
}

/* The f16 super-block scale d and the typical sub-block scale *mid with
 * d * mid = prod: d at least 2^-12 (a normal f16 with room below), *mid
 * lowered to keep the product when d had to be raised. */
static float pick_d(float prod, float *mid)
{
    float d = prod / *mid;
    if (d < 1.0f / 4096) {
        d = 1.0f / 4096;
        *mid = prod / d;
    }
    return d;
}

/* A sub-block scale near mid (0.6x .. 1.4x), in [1, max]. */
static int sub_scale(rbits *r, float mid, int max)
{
    int s = (int)lrintf(mid * (0.6f + 0.8f * rb_unit(r)));
    return s < 1 ? 1 : s > max ? max : s;
}

/* Q4_K / Q5_K's 12 bytes of 6-bit scales and mins (ggml's packing). */
static void pack_k_scales(uint8_t *q, const uint8_t sc[8], const uint8_t m[8])
{
    for (int j = 0; j < 4; j++) {
        q[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        q[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
        q[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
}

/* Q4_K (levels 16) and Q5_K (levels 32): d, dmin, scales[12], [qh[32],]
 * qs[128]. dmin = levels/2 * d and m = sc * (levels - 1) / levels, so each
 * sub-block is centred: d * sc * (q - (levels - 1) / 2). */
static void block_k(rbits *r, uint8_t *b, float scale, int levels)
{
    const float std_q = levels == 16 ? 4.61f : 9.23f; /* std of q over the levels */
    float mid = 40.0f * (0.75f + 0.5f * rb_unit(r));
    float d = pick_d(scale / std_q, &mid);
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = (uint8_t)sub_scale(r, mid, 63);
        m[j] = (uint8_t)lrintf((float)sc[j] * (float)(levels - 1) / (float)levels);
    }
    put_f16(b, d);
    put_f16(b + 2, d * (float)(levels / 2));
    pack_k_scales(b + 4, sc, m);
    rb_bytes(r, b + 16, levels == 16 ? 128 : 160);
}

/* Q6_K: ql[128], qh[64], int8 scales[16], d; values d * sc * (q - 32). */
static void block_q6_K(rbits *r, uint8_t *b, float scale)
{
    float mid = 64.0f * (0.75f + 0.5f * rb_unit(r));
    float d = pick_d(scale / 18.47f, &mid);
    rb_bytes(r, b, 192);
    for (int j = 0; j < 16; j++) {
        int8_t s = (int8_t)sub_scale(r, mid, 127);
        memcpy(b + 192 + j, &s, 1);
    }
    put_f16(b + 208, d);
}

/* One block of `type` with values of std about `scale`. */
static void random_block(uint32_t type, rbits *r, uint8_t *b, float scale)
{
    const float jitter = 0.75f + 0.5f * rb_unit(r);
    switch (type) {
    case GGTYPE_Q4_0: /* d, qs[16]: d * (q - 8) */
        put_f16(b, scale * jitter / 4.61f);
        rb_bytes(r, b + 2, 16);
        break;
    case GGTYPE_Q5_0: /* d, qh[4], qs[16]: d * (q - 16) */
        put_f16(b, scale * jitter / 9.23f);
        rb_bytes(r, b + 2, 20);
        break;
    case GGTYPE_Q8_0: /* d, int8 qs[32] in -127..127 (as ggml's quantizer gives) */
        put_f16(b, scale * jitter / 73.6f);
        rb_bytes(r, b + 2, 32);
        for (int j = 2; j < 34; j++)
            if (b[j] == 0x80)
                b[j] = 0x81;
        break;
    case GGTYPE_Q4_K: block_k(r, b, scale, 16); break;
    case GGTYPE_Q5_K: block_k(r, b, scale, 32); break;
    case GGTYPE_Q6_K: block_q6_K(r, b, scale); break;
    case GGTYPE_MXFP4: { /* E8M0 e, qs[16]: kvalues (rms 5.85) * 2^(e - 128) */
        int e = 128 + (int)lrintf(log2f(scale / 5.85f)) + (int)(rb_u64(r) % 3) - 1;
        b[0] = (uint8_t)(e < 2 ? 2 : e > 254 ? 254 : e);
        rb_bytes(r, b + 1, 16);
        break;
    }
    default: break;
    }
}

bool testmodel__fast_type(uint32_t type)
{
    switch (type) {
    case GGTYPE_Q4_0: case GGTYPE_Q5_0: case GGTYPE_Q8_0: case GGTYPE_Q4_K: case GGTYPE_Q5_K:
    case GGTYPE_Q6_K: case GGTYPE_MXFP4:
        return true;
    default:
        return false;
    }
}

/* ---- tensors ---- */

int testmodel__fill(void *user, uint64_t i, void *dst, uint64_t size)
{
    testmodel__maker *mk = user;
    if (i >= mk->n)
        return -1;
    const testmodel__tensor *t = &mk->t[i];
    const uint64_t rows = t->ne1 * t->ne2;
    uint64_t rb = ggtype_row_size(t->type, t->ne0, NULL);
    if (rb * rows != size)
        return -1;
    uint64_t seed = mix(mk->p->seed * 1000003ull + i);
    if (mk->p->fast_random && t->kind == TESTMODEL__MATRIX && testmodel__fast_type(t->type)) {
        const ggtype_traits *tr = ggtype_get(t->type);
        const uint64_t nb = t->ne0 / tr->blck_size;
        for (uint64_t r = 0; r < rows; r++) {
            rbits bits = {mix(seed ^ mix(r + 0x5678))};
            uint8_t *row = (uint8_t *)dst + r * rb;
            for (uint64_t k = 0; k < nb; k++)
                random_block(t->type, &bits, row + k * tr->type_size, t->scale);
        }
        return 0;
    }
    uint64_t chunk = rows < CHUNK_ROWS ? rows : CHUNK_ROWS;
    float *f = malloc(sizeof(float) * t->ne0 * chunk);
    if (!f)
        return -1;
    int rc = 0;
    if (mk->p->pooled_rows && rows > POOL_ROWS) {
        /* 64 real rows, then each row a copy of a randomly chosen one */
        uint8_t *pool = malloc(rb * POOL_ROWS);
        if (!pool) {
            free(f);
            return -1;
        }
        for (uint64_t r = 0; r < POOL_ROWS && !rc; r += chunk) {
            for (uint64_t k = 0; k < chunk; k++)
                fill_row(t, seed, r + k, f + k * t->ne0);
            rc = to_type(t, f, pool + r * rb, chunk);
        }
        uint64_t st = seed;
        for (uint64_t r = 0; r < rows && !rc; r++) {
            st = mix(st);
            memcpy((uint8_t *)dst + r * rb, pool + (st % POOL_ROWS) * rb, rb);
        }
        free(pool);
    } else {
        for (uint64_t r = 0; r < rows && !rc; r += chunk) {
            uint64_t nr = rows - r < chunk ? rows - r : chunk;
            for (uint64_t k = 0; k < nr; k++)
                fill_row(t, seed, r + k, f + k * t->ne0);
            rc = to_type(t, f, (uint8_t *)dst + r * rb, nr);
        }
    }
    free(f);
    return rc;
}
