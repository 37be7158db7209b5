/* Block anatomy: fields stay inside their block, the count/cap contract, and
 * for the fully described types a decoder written here from the format
 * definitions, fed ONLY the listed fields, reproduces the dequantized values
 * bit for bit (ggml's fixtures from ../shared, and random blocks). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "codec.h"
#include "ggtype.h"
#include "gguf.h"
#include "quant_tables.h"

enum { MAXF = 1024 };

typedef struct {
    codec_field f[MAXF];
    int n;
} anat;

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int name_is(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    return !strncmp(name, prefix, n) && (name[n] == 0 || name[n] == '[');
}

static int covers(const codec_field *f, uint32_t e)
{
    if (e < f->elem_first || f->elem_stride == 0)
        return 0;
    uint32_t d = e - f->elem_first;
    return d % f->elem_stride == 0 && d / f->elem_stride < f->elem_count;
}

/* The one SCALE field named `prefix` that feeds element e. */
static double scale_of(const anat *a, const char *prefix, uint32_t e)
{
    const codec_field *hit = NULL;
    for (int i = 0; i < a->n; i++)
        if (a->f[i].kind == CODEC_FIELD_SCALE && name_is(a->f[i].name, prefix) && covers(&a->f[i], e)) {
            if (hit)
                fail_msg("element %u: two '%s' scale fields (%s, %s)", e, prefix, hit->name, a->f[i].name);
            hit = &a->f[i];
        }
    if (!hit)
        fail_msg("element %u: no '%s' scale field", e, prefix);
    return hit->value;
}

/* Element e's code in the one QUANTS field named `prefix` that feeds it. */
static uint32_t code_of(const anat *a, const char *prefix, uint32_t e)
{
    const codec_field *hit = NULL;
    for (int i = 0; i < a->n; i++)
        if (a->f[i].kind == CODEC_FIELD_QUANTS && name_is(a->f[i].name, prefix) && covers(&a->f[i], e)) {
            if (hit)
                fail_msg("element %u: two '%s' fields (%s, %s)", e, prefix, hit->name, a->f[i].name);
            hit = &a->f[i];
        }
    if (!hit)
        fail_msg("element %u: no '%s' quant field", e, prefix);
    const uint32_t bits = hit->bit_len ? hit->bit_len : 8 * hit->byte_len;
    const uint32_t w = bits / hit->elem_count, k = (e - hit->elem_first) / hit->elem_stride;
    return (uint32_t)((hit->raw >> (k * w)) & ((1ull << w) - 1));
}

/* The one field of `kind` named `prefix` that feeds element e. */
static const codec_field *field_of(const anat *a, codec_field_kind kind, const char *prefix, uint32_t e)
{
    const codec_field *hit = NULL;
    for (int i = 0; i < a->n; i++)
        if (a->f[i].kind == kind && name_is(a->f[i].name, prefix) && covers(&a->f[i], e)) {
            if (hit)
                fail_msg("element %u: two '%s' fields (%s, %s)", e, prefix, hit->name, a->f[i].name);
            hit = &a->f[i];
        }
    if (!hit)
        fail_msg("element %u: no '%s' field of kind %d", e, prefix, (int)kind);
    return hit;
}

/* Codebook entry of element e: byte (e - first) of the grid row its GRID field indexes. */
static int grid_entry(const anat *a, uint32_t e, const void *table, int row_bytes, int is_signed)
{
    const codec_field *g = field_of(a, CODEC_FIELD_GRID, "grid", e);
    const uint8_t *row = (const uint8_t *)table + (size_t)g->value * (size_t)row_bytes;
    const int k = (int)(e - g->elem_first);
    assert_in_range(k, 0, row_bytes - 1);
    return is_signed ? (int)(int8_t)row[k] : (int)row[k];
}

/* Sign of element e from a 7-bit ksigns index field (IQ2_XXS/XS, IQ3_XXS). */
static int ksign_of(const anat *a, uint32_t e)
{
    const codec_field *f = field_of(a, CODEC_FIELD_OTHER, "signs", e);
    return (qt_ksigns_iq2xs[f->raw] >> (e - f->elem_first)) & 1;
}

/* Decode element e of a block of `type` from its fields alone. */
static float decode(uint32_t type, const anat *a, uint32_t e)
{
    switch (type) {
    case GGTYPE_Q4_0:
        return (float)((int)code_of(a, "qs", e) - 8) * (float)scale_of(a, "d", e);
    case GGTYPE_Q4_1:
        return (float)code_of(a, "qs", e) * (float)scale_of(a, "d", e) + (float)scale_of(a, "m", e);
    case GGTYPE_Q5_0: {
        int q = (int)(code_of(a, "qs", e) | (code_of(a, "qh", e) << 4)) - 16;
        return (float)q * (float)scale_of(a, "d", e);
    }
    case GGTYPE_Q5_1: {
        int q = (int)(code_of(a, "qs", e) | (code_of(a, "qh", e) << 4));
        return (float)q * (float)scale_of(a, "d", e) + (float)scale_of(a, "m", e);
    }
    case GGTYPE_Q8_0:
    case GGTYPE_Q8_1:
        return (float)(int8_t)code_of(a, "qs", e) * (float)scale_of(a, "d", e);
    case GGTYPE_Q8_K:
        return (float)scale_of(a, "d", e) * (float)(int8_t)code_of(a, "qs", e);
    case GGTYPE_TQ1_0: {
        /* base-3 digit k of a byte (most significant first): ((uint8)(b * 3^k) * 3) >> 8 */
        const codec_field *f = NULL;
        for (int i = 0; i < a->n; i++)
            if (a->f[i].kind == CODEC_FIELD_OTHER && covers(&a->f[i], e))
                f = &a->f[i];
        if (!f)
            fail_msg("tq1_0 element %u: no field", e);
        static const int pow3[5] = {1, 3, 9, 27, 81};
        const uint8_t q = (uint8_t)(f->raw * (uint64_t)pow3[(e - f->elem_first) / f->elem_stride]);
        return (float)((((int)q * 3) >> 8) - 1) * (float)scale_of(a, "d", e);
    }
    case GGTYPE_Q2_K: {
        const float dl = (float)scale_of(a, "d", e) * (float)scale_of(a, "scale", e);
        const float ml = (float)scale_of(a, "dmin", e) * (float)scale_of(a, "min", e);
        return dl * (float)code_of(a, "qs", e) - ml;
    }
    case GGTYPE_Q3_K: {
        const float dl = (float)scale_of(a, "d", e) * (float)scale_of(a, "scale", e);
        const int q = (int)code_of(a, "qs", e) - (code_of(a, "hmask", e) ? 0 : 4);
        return dl * (float)q;
    }
    case GGTYPE_Q4_K: {
        const float d1 = (float)scale_of(a, "d", e) * (float)scale_of(a, "scale", e);
        const float m1 = (float)scale_of(a, "dmin", e) * (float)scale_of(a, "min", e);
        return d1 * (float)code_of(a, "qs", e) - m1;
    }
    case GGTYPE_Q5_K: {
        const float d1 = (float)scale_of(a, "d", e) * (float)scale_of(a, "scale", e);
        const float m1 = (float)scale_of(a, "dmin", e) * (float)scale_of(a, "min", e);
        return d1 * (float)(code_of(a, "qs", e) + 16 * code_of(a, "qh", e)) - m1;
    }
    case GGTYPE_Q6_K: {
        const int q = (int)(code_of(a, "ql", e) | (code_of(a, "qh", e) << 4)) - 32;
        return (float)scale_of(a, "d", e) * (float)scale_of(a, "scales", e) * (float)q;
    }
    case GGTYPE_IQ4_NL:
        return (float)scale_of(a, "d", e) * (float)qt_kvalues_iq4nl[code_of(a, "qs", e)];
    case GGTYPE_IQ4_XS: {
        const float dl = (float)scale_of(a, "d", e) * (float)scale_of(a, "scale", e);
        return dl * (float)qt_kvalues_iq4nl[code_of(a, "qs", e)];
    }
    case GGTYPE_MXFP4: /* the E2M1 table is doubled: halve the scale */
        return (float)qt_kvalues_fp4[code_of(a, "qs", e)] * (float)(scale_of(a, "e", e) * 0.5);
    case GGTYPE_NVFP4:
        return (float)qt_kvalues_fp4[code_of(a, "qs", e)] * (float)(scale_of(a, "d", e) * 0.5);
    case GGTYPE_Q1_0:
        return code_of(a, "qs", e) ? (float)scale_of(a, "d", e) : -(float)scale_of(a, "d", e);
    case GGTYPE_Q2_0:
        return (float)((int)code_of(a, "qs", e) - 1) * (float)scale_of(a, "d", e);
    case GGTYPE_TQ2_0:
        return (float)((int)code_of(a, "qs", e) - 1) * (float)scale_of(a, "d", e);
    /* IQ: sign flips are negations (see docs/codec-dequant.md) */
    case GGTYPE_IQ2_XXS:
    case GGTYPE_IQ2_XS: {
        const float db = (float)scale_of(a, "d", e) * (0.5f + (float)scale_of(a, "scale", e)) * 0.25f;
        const float v = db * (float)grid_entry(a, e, type == GGTYPE_IQ2_XXS ? (const void *)qt_iq2xxs_grid
                                                                             : (const void *)qt_iq2xs_grid, 8, 0);
        return ksign_of(a, e) ? -v : v;
    }
    case GGTYPE_IQ2_S: {
        const float db = (float)scale_of(a, "d", e) * (0.5f + (float)scale_of(a, "scale", e)) * 0.25f;
        const float v = db * (float)grid_entry(a, e, qt_iq2s_grid, 8, 0);
        return code_of(a, "signs", e) ? -v : v;
    }
    case GGTYPE_IQ3_XXS: {
        const float db = (float)scale_of(a, "d", e) * (0.5f + (float)scale_of(a, "scale", e)) * 0.5f;
        const float v = db * (float)grid_entry(a, e, qt_iq3xxs_grid, 4, 0);
        return ksign_of(a, e) ? -v : v;
    }
    case GGTYPE_IQ3_S: {
        const float db = (float)scale_of(a, "d", e) * (float)(1 + 2 * (int)scale_of(a, "scale", e));
        const float v = db * (float)grid_entry(a, e, qt_iq3s_grid, 4, 0);
        return code_of(a, "signs", e) ? -v : v;
    }
    case GGTYPE_IQ1_S:
    case GGTYPE_IQ1_M: {
        const float dl = (float)scale_of(a, "d", e) * (float)(2 * (int)scale_of(a, "scale", e) + 1);
        const float delta = scale_of(a, "delta", e) != 0 ? -0.125f : 0.125f;
        return dl * ((float)grid_entry(a, e, qt_iq1s_grid, 8, 1) + delta);
    }
    }
    fail_msg("no test decoder for type %u", type);
    return 0;
}

static const uint32_t DECODABLE[] = {
    GGTYPE_Q4_0, GGTYPE_Q4_1, GGTYPE_Q5_0, GGTYPE_Q5_1, GGTYPE_Q8_0, GGTYPE_Q2_K,
    GGTYPE_Q3_K, GGTYPE_Q4_K, GGTYPE_Q5_K, GGTYPE_Q6_K, GGTYPE_IQ4_NL, GGTYPE_IQ4_XS,
    GGTYPE_MXFP4, GGTYPE_NVFP4, GGTYPE_Q1_0, GGTYPE_Q2_0, GGTYPE_TQ2_0, GGTYPE_IQ2_XXS,
    GGTYPE_IQ2_XS, GGTYPE_IQ2_S, GGTYPE_IQ3_XXS, GGTYPE_IQ3_S, GGTYPE_IQ1_S, GGTYPE_IQ1_M,
    GGTYPE_Q8_1, GGTYPE_Q8_K, GGTYPE_TQ1_0,
};
#define N_DECODABLE (sizeof DECODABLE / sizeof DECODABLE[0])

static int decodable(uint32_t t)
{
    for (size_t i = 0; i < N_DECODABLE; i++)
        if (DECODABLE[i] == t)
            return 1;
    return 0;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Decode `nblocks` blocks from their anatomy and compare with the dequantizer. */
static void check_blocks(uint32_t type, const uint8_t *data, uint64_t nblocks, const char *what)
{
    const ggtype_traits *tr = ggtype_get(type);
    static anat a;
    float want[256];
    for (uint64_t bi = 0; bi < nblocks; bi++) {
        const uint8_t *blk = data + bi * tr->type_size;
        a.n = codec_block_anatomy(type, blk, a.f, MAXF);
        assert_in_range(a.n, 1, MAXF);
        assert_int_equal(codec_dequantize_scalar(type, blk, want, tr->blck_size), 0);
        for (uint32_t e = 0; e < tr->blck_size; e++) {
            const float got = decode(type, &a, e);
            if (fbits(got) != fbits(want[e]))
                fail_msg("%s %s block %llu element %u: from fields 0x%08x (%g), dequantized 0x%08x (%g)", what,
                         tr->name, (unsigned long long)bi, e, fbits(got), (double)got, fbits(want[e]),
                         (double)want[e]);
        }
    }
}

/* Random blocks with finite scales: for all decodable types. */
static void test_decode_random_blocks(void **state)
{
    (void)state;
    uint8_t blk[300 * 8];
    for (size_t t = 0; t < N_DECODABLE; t++) {
        const ggtype_traits *tr = ggtype_get(DECODABLE[t]);
        for (int rep = 0; rep < 12; rep++) {
            for (size_t i = 0; i < sizeof blk; i++)
                blk[i] = (uint8_t)rng();
            /* keep f16 scales finite: no 0x7c00 exponent (halves are at even offsets;
             * clearing bit 14 of each little-endian 16-bit word does it); iq1_m
             * spreads its d over the top nibbles of its four scale words */
            for (size_t i = 1; i < sizeof blk; i += 2)
                if (DECODABLE[t] != GGTYPE_MXFP4 && DECODABLE[t] != GGTYPE_NVFP4 && (blk[i] & 0x7c) == 0x7c)
                    blk[i] &= 0xbf;
            if (DECODABLE[t] == GGTYPE_Q8_K)
                blk[3] &= 0xbf; /* f32 d: no inf/NaN exponent */
            if (DECODABLE[t] == GGTYPE_IQ1_M)
                blk[48 + 7] &= 0xbf; /* bit 14 of d = bit 14 of scale word 3 */
            (void)tr;
            check_blocks(DECODABLE[t], blk, 1, "random");
        }
    }
}

/* Structural checks for every type with anatomy, on random blocks. */
static void test_fields_well_formed(void **state)
{
    (void)state;
    static anat a, b;
    uint8_t blk[300];
    for (uint32_t t = 0; t < GGTYPE_COUNT; t++) {
        const ggtype_traits *tr = ggtype_get(t);
        if (!tr)
            continue;
        for (size_t i = 0; i < sizeof blk; i++)
            blk[i] = (uint8_t)rng();
        const int n = codec_block_anatomy(t, blk, NULL, 0);
        assert_in_range(n, 1, MAXF);
        a.n = codec_block_anatomy(t, blk, a.f, MAXF);
        assert_int_equal(a.n, n);
        /* a short cap writes a prefix, returns the full count */
        b.n = codec_block_anatomy(t, blk, b.f, n / 2);
        assert_int_equal(b.n, n);
        assert_memory_equal(a.f, b.f, (size_t)(n / 2) * sizeof(codec_field));
        uint8_t covered[300] = {0};
        for (int i = 0; i < n; i++) {
            const codec_field *f = &a.f[i];
            if (!f->name[0] || f->byte_len == 0 || f->byte_offset + f->byte_len > tr->type_size)
                fail_msg("%s field %d '%s': bytes %u+%u outside the %u-byte block", tr->name, i, f->name,
                         f->byte_offset, f->byte_len, tr->type_size);
            if (f->elem_count == 0 || f->elem_stride == 0 ||
                f->elem_first + (uint64_t)(f->elem_count - 1) * f->elem_stride >= tr->blck_size)
                fail_msg("%s field '%s': elements outside the block", tr->name, f->name);
            assert_true(memchr(f->name, 0, sizeof f->name) != NULL);
            assert_true(memchr(f->text, 0, sizeof f->text) != NULL);
            for (uint32_t k = 0; k < f->byte_len; k++)
                covered[f->byte_offset + k] = 1;
        }
        /* every byte of the block belongs to some field */
        for (uint32_t k = 0; k < tr->type_size; k++)
            if (!covered[k])
                fail_msg("%s: byte %u is in no field", tr->name, k);
    }
    assert_int_equal(codec_block_anatomy(1000, blk, a.f, MAXF), -1);
    assert_int_equal(codec_block_anatomy(GGTYPE_Q4_0, NULL, a.f, MAXF), -1);
    /* the example from the issue: a Q4_0 block's d and a nibble pair */
    memset(blk, 0, sizeof blk);
    blk[0] = 0x00;
    blk[1] = 0x3c; /* d = 1.0 */
    blk[2 + 5] = 0xC3;
    a.n = codec_block_anatomy(GGTYPE_Q4_0, blk, a.f, MAXF);
    assert_string_equal(a.f[0].name, "d");
    assert_string_equal(a.f[0].text, "1");
    assert_string_equal(a.f[6].name, "qs[5]");
    assert_string_equal(a.f[6].text, "3, 12");
    assert_int_equal(a.f[6].elem_first, 5);
    assert_int_equal(a.f[6].elem_stride, 16);
}

/* ggml's fixtures: every block of tensor `q`, for every decodable type that
 * has a fixture file (Q4_0, Q8_0, Q4_K, Q6_K and IQ4_XS must be among them). */
static void test_decode_fixture_blocks(void **state)
{
    (void)state;
    const char *root = tu_shared("fixtures/quant");
    if (!root)
        TU_SKIP_NO_SHARED();
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", root);
    int seen[GGTYPE_COUNT] = {0};
    DIR *dir = opendir(dirbuf);
    assert_non_null(dir);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 5, ".gguf") != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dirbuf, de->d_name);
        gguf_error err;
        gguf_file *f = gguf_open(path, &err);
        if (!f)
            fail_msg("%s: %s", path, err.msg);
        const gguf_tensor *q = gguf_find_tensor(f, "q");
        assert_non_null(q);
        if (decodable(q->type)) {
            const ggtype_traits *tr = ggtype_get(q->type);
            check_blocks(q->type, q->data, q->n_elements / tr->blck_size, de->d_name);
            seen[q->type] = 1;
        }
        gguf_close(f);
    }
    closedir(dir);
    assert_true(seen[GGTYPE_Q4_0] && seen[GGTYPE_Q8_0] && seen[GGTYPE_Q4_K] && seen[GGTYPE_Q6_K] &&
                seen[GGTYPE_IQ4_XS]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_well_formed),
        cmocka_unit_test(test_decode_random_blocks),
        cmocka_unit_test(test_decode_fixture_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
