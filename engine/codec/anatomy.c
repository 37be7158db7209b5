/* codec: block anatomy, the fields of one block of every ggml type (for the
 * block-aware hex view). The layouts follow ggml-common.h; which elements a
 * field feeds follows the dequantizers in dequant.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "codec_internal.h"
#include "quant_blocks.h"
#include "quant_tables.h"

/* Field list under construction: fields past `cap` are counted, not written. */
typedef struct {
    codec_field *out;
    int cap, n;
    const uint8_t *b;
    codec_field scratch;
} flist;

static uint64_t le_bytes(const uint8_t *p, uint32_t len)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < len && i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* A field of `len` whole bytes at `off`, feeding first + k*stride, k < count. */
static codec_field *add(flist *l, codec_field_kind kind, uint32_t off, uint32_t len, uint32_t first,
                        uint32_t count, uint32_t stride, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

static codec_field *add(flist *l, codec_field_kind kind, uint32_t off, uint32_t len, uint32_t first,
                        uint32_t count, uint32_t stride, const char *fmt, ...)
{
    codec_field *f = l->n < l->cap ? &l->out[l->n] : &l->scratch;
    l->n++;
    memset(f, 0, sizeof *f);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->name, sizeof f->name, fmt, ap);
    va_end(ap);
    f->kind = kind;
    f->byte_offset = off;
    f->byte_len = len;
    f->raw = le_bytes(l->b + off, len);
    f->elem_first = first;
    f->elem_count = count;
    f->elem_stride = stride;
    return f;
}

static void set_num(codec_field *f, double v)
{
    f->value = v;
    snprintf(f->text, sizeof f->text, "%.6g", v);
}

/* An f16 scale at `off` shared by `count` consecutive elements from `first`. */
static void f_half(flist *l, const char *name, uint32_t off, uint32_t first, uint32_t count)
{
    codec_field *f = add(l, CODEC_FIELD_SCALE, off, 2, first, count, 1, "%s", name);
    set_num(f, cdc_f16_to_f32((uint16_t)f->raw));
}

/* Restrict a field to `bits` bits from `bit` of its bytes (raw shifted down). */
static void sub_bits(codec_field *f, uint32_t bit, uint32_t bits)
{
    f->bit_offset = bit;
    f->bit_len = bits;
    f->raw = (f->raw >> bit) & ((bits >= 64) ? ~0ull : ((1ull << bits) - 1));
}

/* A byte of packed unsigned codes: `count` codes of 8/count bits, element
 * k = first + k*stride. Text lists the codes in element order. */
static codec_field *f_codes(flist *l, uint32_t off, uint32_t len, uint32_t first, uint32_t count,
                            uint32_t stride, const char *name, int idx)
{
    codec_field *f = add(l, CODEC_FIELD_QUANTS, off, len, first, count, stride, "%s[%d]", name, idx);
    const uint32_t w = 8 * len / count;
    const uint64_t mask = w >= 64 ? ~0ull : (1ull << w) - 1;
    f->value = (double)(f->raw & mask);
    size_t pos = 0;
    for (uint32_t k = 0; k < count && pos + 4 < sizeof f->text; k++) {
        const uint64_t code = (f->raw >> (k * w)) & mask;
        if (w == 1)
            f->text[pos++] = code ? '1' : '0';
        else
            pos += (size_t)snprintf(f->text + pos, sizeof f->text - pos, k ? ", %llu" : "%llu",
                                    (unsigned long long)code);
    }
    if (w == 1)
        f->text[pos] = 0;
    return f;
}

/* ---- per type ---- */

static void an_q4_0(flist *l)
{
    f_half(l, "d", 0, 0, 32);
    for (int j = 0; j < 16; j++)
        f_codes(l, 2 + j, 1, j, 2, 16, "qs", j);
}

static void an_q4_1(flist *l)
{
    f_half(l, "d", 0, 0, 32);
    f_half(l, "m", 2, 0, 32);
    for (int j = 0; j < 16; j++)
        f_codes(l, 4 + j, 1, j, 2, 16, "qs", j);
}

static void an_q5(flist *l, bool has_m)
{
    uint32_t o = 2;
    f_half(l, "d", 0, 0, 32);
    if (has_m) {
        f_half(l, "m", 2, 0, 32);
        o = 4;
    }
    codec_field *f = add(l, CODEC_FIELD_QUANTS, o, 4, 0, 32, 1, "qh");
    f->value = (double)(f->raw & 1);
    for (int k = 0; k < 32; k++)
        f->text[k] = (f->raw >> k) & 1 ? '1' : '0';
    f->text[32] = 0;
    for (int j = 0; j < 16; j++)
        f_codes(l, o + 4 + j, 1, j, 2, 16, "qs", j);
}

static void an_q8(flist *l, int type)
{
    f_half(l, "d", 0, 0, 32);
    uint32_t o = 2;
    if (type == GGTYPE_Q8_1) {
        /* s = d * sum(qs): not needed to decode */
        codec_field *f = add(l, CODEC_FIELD_OTHER, 2, 2, 0, 32, 1, "s");
        set_num(f, cdc_f16_to_f32((uint16_t)f->raw));
        o = 4;
    }
    for (int j = 0; j < 32; j++) {
        codec_field *f = add(l, CODEC_FIELD_QUANTS, o + j, 1, j, 1, 1, "qs[%d]", j);
        set_num(f, (int8_t)f->raw);
    }
}

/* q2_K / q3_K share the layout of their 2-bit codes: qs[32n + l] feeds
 * elements 128n + l + 32j for shifts j = 0..3. */
static void k_qs2(flist *l, uint32_t off)
{
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 32; j++)
            f_codes(l, off + 32 * n + j, 1, 128 * n + j, 4, 32, "qs", 32 * n + j);
}

static void an_q2_K(flist *l)
{
    for (int is = 0; is < 16; is++) {
        codec_field *f = add(l, CODEC_FIELD_SCALE, is, 1, 16 * is, 16, 1, "scale[%d]", is);
        sub_bits(f, 0, 4);
        set_num(f, (double)f->raw);
        f = add(l, CODEC_FIELD_SCALE, is, 1, 16 * is, 16, 1, "min[%d]", is);
        sub_bits(f, 4, 4);
        set_num(f, (double)f->raw);
    }
    k_qs2(l, 16);
    f_half(l, "d", 80, 0, 256);
    f_half(l, "dmin", 82, 0, 256);
}

static void an_q3_K(flist *l)
{
    for (int j = 0; j < 32; j++)
        f_codes(l, j, 1, j, 8, 32, "hmask", j);
    k_qs2(l, 32);
    const uint8_t *s = l->b + 96;
    for (int j = 0; j < 16; j++) {
        /* low 4 bits: byte j (j < 8) or the high nibble of byte j-8; high 2
         * bits: byte 8 + j%4, bits 2*(j/4) */
        const int lo_byte = j < 8 ? j : j - 8, hi_byte = 8 + (j & 3);
        const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
        const int hi = (s[hi_byte] >> (2 * (j >> 2))) & 3;
        codec_field *f = add(l, CODEC_FIELD_SCALE, 96 + lo_byte, (uint32_t)(hi_byte - lo_byte + 1), 16 * j, 16, 1,
                             "scale[%d]", j);
        f->bit_len = 6;
        f->raw = (uint64_t)(lo | (hi << 4));
        f->value = (double)((int)f->raw - 32);
        snprintf(f->text, sizeof f->text, "%d (6-bit %d - 32)", (int)f->raw - 32, (int)f->raw);
    }
    f_half(l, "d", 108, 0, 256);
}

/* The 6-bit scales and mins of q4_K/q5_K (12 bytes at `off`), sub-block j = 32 elements. */
static void k_scales_k4(flist *l, uint32_t off)
{
    const uint8_t *q = l->b + off;
    for (int which = 0; which < 2; which++) {
        for (int j = 0; j < 8; j++) {
            int v, b0, b1;
            if (j < 4) {
                v = q[j + 4 * which] & 63;
                b0 = b1 = j + 4 * which;
            } else {
                v = which == 0 ? ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4))
                               : ((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
                b0 = which == 0 ? j - 4 : j;
                b1 = j + 4;
            }
            codec_field *f = add(l, CODEC_FIELD_SCALE, off + (uint32_t)b0, (uint32_t)(b1 - b0 + 1), 32 * j, 32, 1,
                                 which ? "min[%d]" : "scale[%d]", j);
            f->bit_len = 6;
            if (j < 4)
                f->bit_offset = 0;
            f->raw = (uint64_t)v;
            set_num(f, v);
        }
    }
}

static void an_q4_K(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    f_half(l, "dmin", 2, 0, 256);
    k_scales_k4(l, 4);
    for (int c = 0; c < 4; c++)
        for (int j = 0; j < 32; j++)
            f_codes(l, 16 + 32 * c + j, 1, 64 * c + j, 2, 32, "qs", 32 * c + j);
}

static void an_q5_K(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    f_half(l, "dmin", 2, 0, 256);
    k_scales_k4(l, 4);
    for (int j = 0; j < 32; j++)
        f_codes(l, 16 + j, 1, j, 8, 32, "qh", j);
    for (int c = 0; c < 4; c++)
        for (int j = 0; j < 32; j++)
            f_codes(l, 48 + 32 * c + j, 1, 64 * c + j, 2, 32, "qs", 32 * c + j);
}

static void an_q6_K(flist *l)
{
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 64; j++)
            f_codes(l, 64 * n + j, 1, 128 * n + j, 2, 64, "ql", 64 * n + j);
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 32; j++)
            f_codes(l, 128 + 32 * n + j, 1, 128 * n + j, 4, 32, "qh", 32 * n + j);
    for (int i = 0; i < 16; i++) {
        codec_field *f = add(l, CODEC_FIELD_SCALE, 192 + i, 1, 16 * i, 16, 1, "scales[%d]", i);
        set_num(f, (int8_t)f->raw);
    }
    f_half(l, "d", 208, 0, 256);
}

static void an_q8_K(flist *l)
{
    codec_field *f = add(l, CODEC_FIELD_SCALE, 0, 4, 0, 256, 1, "d");
    set_num(f, cdc_f32_from_bits((uint32_t)f->raw));
    for (int j = 0; j < 256; j++) {
        f = add(l, CODEC_FIELD_QUANTS, 4 + j, 1, j, 1, 1, "qs[%d]", j);
        set_num(f, (int8_t)f->raw);
    }
    for (int j = 0; j < 16; j++) {
        f = add(l, CODEC_FIELD_OTHER, 260 + 2 * j, 2, 16 * j, 16, 1, "bsums[%d]", j);
        set_num(f, (int16_t)f->raw);
    }
}

static void an_iq4_nl(flist *l)
{
    f_half(l, "d", 0, 0, 32);
    for (int j = 0; j < 16; j++) {
        codec_field *f = f_codes(l, 2 + j, 1, j, 2, 16, "qs", j);
        snprintf(f->text, sizeof f->text, "%d, %d -> %d, %d", (int)(f->raw & 15), (int)(f->raw >> 4),
                 qt_kvalues_iq4nl[f->raw & 15], qt_kvalues_iq4nl[f->raw >> 4]);
    }
}

static void an_iq4_xs(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    const uint16_t sh = cdc_le16(l->b + 2);
    for (int ib = 0; ib < 8; ib++) {
        const int ls = ((l->b[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | (((sh >> 2 * ib) & 3) << 4);
        codec_field *f = add(l, CODEC_FIELD_SCALE, 2, (uint32_t)(3 + ib / 2), 32 * ib, 32, 1, "scale[%d]", ib);
        f->bit_len = 6;
        f->raw = (uint64_t)ls;
        f->value = ls - 32;
        snprintf(f->text, sizeof f->text, "%d (6-bit %d - 32)", ls - 32, ls);
    }
    for (int ib = 0; ib < 8; ib++)
        for (int j = 0; j < 16; j++) {
            codec_field *f = f_codes(l, 8 + 16 * ib + j, 1, 32 * ib + j, 2, 16, "qs", 16 * ib + j);
            snprintf(f->text, sizeof f->text, "%d, %d -> %d, %d", (int)(f->raw & 15), (int)(f->raw >> 4),
                     qt_kvalues_iq4nl[f->raw & 15], qt_kvalues_iq4nl[f->raw >> 4]);
        }
}

/* E2M1 codes as their real values (the table is doubled). */
static void fp4_text(codec_field *f)
{
    snprintf(f->text, sizeof f->text, "%d, %d -> %g, %g", (int)(f->raw & 15), (int)(f->raw >> 4),
             qt_kvalues_fp4[f->raw & 15] * 0.5, qt_kvalues_fp4[f->raw >> 4] * 0.5);
}

static void an_mxfp4(flist *l)
{
    codec_field *f = add(l, CODEC_FIELD_SCALE, 0, 1, 0, 32, 1, "e");
    /* E8M0: 2^(e-127) (e = 255, NaN in the OCP spec, is 2^128 for ggml) */
    f->value = __builtin_ldexp(1.0, (int)f->raw - 127);
    snprintf(f->text, sizeof f->text, "2^%d", (int)f->raw - 127);
    for (int j = 0; j < 16; j++)
        fp4_text(f_codes(l, 1 + j, 1, j, 2, 16, "qs", j));
}

static void an_nvfp4(flist *l)
{
    for (int s = 0; s < 4; s++) {
        codec_field *f = add(l, CODEC_FIELD_SCALE, s, 1, 16 * s, 16, 1, "d[%d]", s);
        const uint32_t x = (uint32_t)f->raw, e = (x >> 3) & 0xF, m = x & 7;
        double v = 0;
        if (x != 0 && x != 0x7F)
            v = e == 0 ? m * 0x1p-9 : (1.0 + m / 8.0) * __builtin_ldexp(1.0, (int)e - 7);
        set_num(f, v);
    }
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < 8; j++)
            fp4_text(f_codes(l, 4 + 8 * s + j, 1, 16 * s + j, 2, 8, "qs", 8 * s + j));
}

static void an_q1_0(flist *l)
{
    f_half(l, "d", 0, 0, 128);
    for (int j = 0; j < 16; j++)
        f_codes(l, 2 + j, 1, 8 * j, 8, 1, "qs", j);
}

static void an_q2_0(flist *l)
{
    f_half(l, "d", 0, 0, 64);
    for (int j = 0; j < 16; j++)
        f_codes(l, 2 + j, 1, 4 * j, 4, 1, "qs", j);
}

static void an_tq2_0(flist *l)
{
    for (int c = 0; c < 2; c++)
        for (int m = 0; m < 32; m++)
            f_codes(l, 32 * c + m, 1, 128 * c + m, 4, 32, "qs", 32 * c + m);
    f_half(l, "d", 64, 0, 256);
}

/* tq1_0: 5 (qh: 4) base-3 digits per byte, most significant first. */
static void trits_text(codec_field *f, int ndig)
{
    size_t pos = 0;
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    for (int n = 0; n < ndig; n++) {
        const uint8_t q = (uint8_t)(f->raw * pow3[n]);
        const int xi = ((uint16_t)q * 3) >> 8;
        pos += (size_t)snprintf(f->text + pos, sizeof f->text - pos, n ? ", %d" : "%d", xi - 1);
    }
}

static void an_tq1_0(flist *l)
{
    for (int m = 0; m < 32; m++)
        trits_text(add(l, CODEC_FIELD_OTHER, m, 1, m, 5, 32, "qs[%d]", m), 5);
    for (int m = 0; m < 16; m++)
        trits_text(add(l, CODEC_FIELD_OTHER, 32 + m, 1, 160 + m, 5, 16, "qs[%d]", 32 + m), 5);
    for (int k = 0; k < 4; k++)
        trits_text(add(l, CODEC_FIELD_OTHER, 48 + k, 1, 240 + k, 4, 4, "qh[%d]", k), 4);
    f_half(l, "d", 52, 0, 256);
}

/* ---- IQ1/2/3: grid indices, signs and scales, bit-exact ranges ---- */

/* A bit field of `bits` bits at bit `bit` of the `len` bytes at `off`. */
static codec_field *bitfield(flist *l, codec_field_kind kind, uint32_t off, uint32_t len, uint32_t bit,
                             uint32_t bits, uint32_t first, uint32_t count, const char *fmt, int idx)
{
    codec_field *f = add(l, kind, off, len, first, count, 1, fmt, idx);
    sub_bits(f, bit, bits);
    f->value = (double)f->raw;
    return f;
}

/* The 8 signs of a ksigns_iq2xs entry (7 stored bits + parity) as "+-+..." */
static void signs_text(codec_field *f, uint8_t signs, int n)
{
    for (int j = 0; j < n; j++)
        f->text[j] = (signs >> j) & 1 ? '-' : '+';
    f->text[n] = 0;
}

/* "#idx: a,b,c,..." for a grid row of `n` unsigned (or signed) bytes */
static void grid_text(codec_field *f, uint64_t row, int n, bool is_signed)
{
    size_t pos = (size_t)snprintf(f->text, sizeof f->text, "#%llu:", (unsigned long long)f->value);
    for (int j = 0; j < n && pos + 5 < sizeof f->text; j++) {
        int v = (int)((row >> (8 * j)) & 0xff);
        if (is_signed)
            v = (int)(int8_t)v;
        pos += (size_t)snprintf(f->text + pos, sizeof f->text - pos, j ? ",%d" : " %d", v);
    }
}

static codec_field *grid_field(flist *l, uint32_t off, uint32_t len, uint32_t index, uint32_t first,
                               uint32_t count, int idx)
{
    codec_field *f = add(l, CODEC_FIELD_GRID, off, len, first, count, 1, "grid[%d]", idx);
    f->raw = index;
    f->value = index;
    return f;
}

static void an_iq2_xxs(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    for (int ib = 0; ib < 8; ib++) {
        const uint32_t o = 2 + 8 * ib;
        for (int k = 0; k < 4; k++)
            grid_text(grid_field(l, o + k, 1, l->b[o + k], 32 * ib + 8 * k, 8, 4 * ib + k),
                      qt_iq2xxs_grid[l->b[o + k]], 8, false);
        for (int k = 0; k < 4; k++) {
            codec_field *f = bitfield(l, CODEC_FIELD_OTHER, o + 4, 4, 7 * k, 7, 32 * ib + 8 * k, 8, "signs[%d]",
                                      4 * ib + k);
            signs_text(f, qt_ksigns_iq2xs[f->raw], 8);
        }
        codec_field *f = bitfield(l, CODEC_FIELD_SCALE, o + 4, 4, 28, 4, 32 * ib, 32, "scale[%d]", ib);
        snprintf(f->text, sizeof f->text, "%d (x%g)", (int)f->raw, (0.5 + (double)f->raw) * 0.25);
    }
}

/* The 16 4-bit scales (x (0.5 + s) / 4) of IQ2_XS / IQ2_S at byte off. */
static void iq2_scales(flist *l, uint32_t off)
{
    for (int ib = 0; ib < 8; ib++)
        for (int h = 0; h < 2; h++) {
            codec_field *f = bitfield(l, CODEC_FIELD_SCALE, off + ib, 1, 4 * h, 4, 32 * ib + 16 * h, 16, "scale[%d]",
                                      2 * ib + h);
            snprintf(f->text, sizeof f->text, "%d (x%g)", (int)f->raw, (0.5 + (double)f->raw) * 0.25);
        }
}

static void an_iq2_xs(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    for (int ib = 0; ib < 8; ib++)
        for (int k = 0; k < 4; k++) {
            const uint32_t o = 2 + 2 * (4 * ib + k), e = 32 * ib + 8 * k;
            const uint16_t q = cdc_le16(l->b + o);
            codec_field *g = grid_field(l, o, 2, q & 511, e, 8, 4 * ib + k);
            g->bit_len = 9;
            grid_text(g, qt_iq2xs_grid[q & 511], 8, false);
            codec_field *f = bitfield(l, CODEC_FIELD_OTHER, o, 2, 9, 7, e, 8, "signs[%d]", 4 * ib + k);
            signs_text(f, qt_ksigns_iq2xs[f->raw], 8);
        }
    iq2_scales(l, 66);
}

static void an_iq2_s(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    for (int ib = 0; ib < 8; ib++)
        for (int k = 0; k < 4; k++) {
            /* index: qs byte (low 8 bits) + 2 bits of qh[ib] */
            const uint32_t qo = 2 + 4 * ib + k, ho = 66 + ib;
            const uint32_t idx = l->b[qo] | ((l->b[ho] << (8 - 2 * k)) & 0x300);
            codec_field *g = grid_field(l, qo, ho - qo + 1, idx, 32 * ib + 8 * k, 8, 4 * ib + k);
            g->bit_len = 10;
            grid_text(g, qt_iq2s_grid[idx], 8, false);
        }
    for (int ib = 0; ib < 8; ib++)
        for (int k = 0; k < 4; k++) {
            codec_field *f = add(l, CODEC_FIELD_QUANTS, 34 + 4 * ib + k, 1, 32 * ib + 8 * k, 8, 1, "signs[%d]",
                                 4 * ib + k);
            f->value = (double)(f->raw & 1);
            signs_text(f, (uint8_t)f->raw, 8);
        }
    for (int ib = 0; ib < 8; ib++) {
        codec_field *f = add(l, CODEC_FIELD_OTHER, 66 + ib, 1, 32 * ib, 32, 1, "qh[%d]", ib);
        snprintf(f->text, sizeof f->text, "index bits 8-9: %d,%d,%d,%d", (int)(f->raw & 3), (int)(f->raw >> 2 & 3),
                 (int)(f->raw >> 4 & 3), (int)(f->raw >> 6));
    }
    iq2_scales(l, 74);
}

static void an_iq3_xxs(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    for (int k = 0; k < 64; k++)
        grid_text(grid_field(l, 2 + k, 1, l->b[2 + k], 4 * k, 4, k), qt_iq3xxs_grid[l->b[2 + k]], 4, false);
    for (int ib = 0; ib < 8; ib++) {
        const uint32_t o = 66 + 4 * ib;
        for (int k = 0; k < 4; k++) {
            codec_field *f = bitfield(l, CODEC_FIELD_OTHER, o, 4, 7 * k, 7, 32 * ib + 8 * k, 8, "signs[%d]",
                                      4 * ib + k);
            signs_text(f, qt_ksigns_iq2xs[f->raw], 8);
        }
        codec_field *f = bitfield(l, CODEC_FIELD_SCALE, o, 4, 28, 4, 32 * ib, 32, "scale[%d]", ib);
        snprintf(f->text, sizeof f->text, "%d (x%g)", (int)f->raw, (0.5 + (double)f->raw) * 0.5);
    }
}

static void an_iq3_s(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    for (int k = 0; k < 64; k++) {
        /* index: qs byte + bit (k % 8) of qh[k / 8] */
        const uint32_t qo = 2 + k, ho = 66 + k / 8;
        const uint32_t idx = l->b[qo] | (((l->b[ho] >> (k % 8)) & 1) << 8);
        codec_field *g = grid_field(l, qo, ho - qo + 1, idx, 4 * k, 4, k);
        g->bit_len = 9;
        grid_text(g, qt_iq3s_grid[idx], 4, false);
    }
    for (int ib = 0; ib < 8; ib++) {
        codec_field *f = add(l, CODEC_FIELD_OTHER, 66 + ib, 1, 32 * ib, 32, 1, "qh[%d]", ib);
        snprintf(f->text, sizeof f->text, "index bit 8 of grid[%d..%d]", 8 * ib, 8 * ib + 7);
    }
    for (int k = 0; k < 32; k++) {
        codec_field *f = add(l, CODEC_FIELD_QUANTS, 74 + k, 1, 8 * k, 8, 1, "signs[%d]", k);
        f->value = (double)(f->raw & 1);
        signs_text(f, (uint8_t)f->raw, 8);
    }
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) {
            codec_field *f = bitfield(l, CODEC_FIELD_SCALE, 106 + j, 1, 4 * h, 4, 64 * j + 32 * h, 32, "scale[%d]",
                                      2 * j + h);
            snprintf(f->text, sizeof f->text, "%d (x%d)", (int)f->raw, 1 + 2 * (int)f->raw);
        }
}

static void an_iq1_s(flist *l)
{
    f_half(l, "d", 0, 0, 256);
    for (int ib = 0; ib < 8; ib++) {
        const uint16_t qh = cdc_le16(l->b + 34 + 2 * ib);
        for (int k = 0; k < 4; k++) {
            const uint32_t qo = 2 + 4 * ib + k;
            const uint32_t idx = l->b[qo] | (((qh >> 3 * k) & 7) << 8);
            codec_field *g = grid_field(l, qo, 34 + 2 * ib + 2 - qo, idx, 32 * ib + 8 * k, 8, 4 * ib + k);
            g->bit_len = 11;
            grid_text(g, qt_iq1s_grid[idx], 8, true);
        }
    }
    for (int ib = 0; ib < 8; ib++) {
        const uint32_t o = 34 + 2 * ib;
        codec_field *f = bitfield(l, CODEC_FIELD_OTHER, o, 2, 0, 12, 32 * ib, 32, "qh[%d]", ib);
        snprintf(f->text, sizeof f->text, "index bits 8-10: %d,%d,%d,%d", (int)(f->raw & 7), (int)(f->raw >> 3 & 7),
                 (int)(f->raw >> 6 & 7), (int)(f->raw >> 9 & 7));
        f = bitfield(l, CODEC_FIELD_SCALE, o, 2, 12, 3, 32 * ib, 32, "scale[%d]", ib);
        snprintf(f->text, sizeof f->text, "%d (x%d)", (int)f->raw, 2 * (int)f->raw + 1);
        f = bitfield(l, CODEC_FIELD_SCALE, o, 2, 15, 1, 32 * ib, 32, "delta[%d]", ib);
        snprintf(f->text, sizeof f->text, "%s0.125", f->raw ? "-" : "+");
    }
}

static void an_iq1_m(flist *l)
{
    const uint8_t *qh = l->b + 32;
    for (int k = 0; k < 32; k++) {
        /* index: qs byte + 3 bits of the qh nibble of this grid row */
        const int nib = (qh[k / 2] >> (4 * (k % 2))) & 0xF;
        const uint32_t idx = l->b[k] | ((uint32_t)(nib & 7) << 8);
        codec_field *g = grid_field(l, (uint32_t)k, (uint32_t)(32 + k / 2 - k + 1), idx, 8 * (uint32_t)k, 8, k);
        g->bit_len = 11;
        grid_text(g, qt_iq1s_grid[idx], 8, true);
    }
    for (int k = 0; k < 32; k++) {
        codec_field *f = bitfield(l, CODEC_FIELD_SCALE, 32 + k / 2, 1, 4 * (k % 2) + 3, 1, 8 * k, 8, "delta[%d]", k);
        snprintf(f->text, sizeof f->text, "%s0.125", f->raw ? "-" : "+");
    }
    for (int j = 0; j < 4; j++) {
        /* scale word j: 3-bit scales for sub-blocks 2j (bits 0-5) and 2j+1 (bits 6-11), bits 12-15 = part of d */
        for (int k = 0; k < 4; k++) {
            codec_field *f = bitfield(l, CODEC_FIELD_SCALE, 48 + 2 * j, 2, 3 * k, 3, 64 * j + 16 * k, 16, "scale[%d]",
                                      4 * j + k);
            snprintf(f->text, sizeof f->text, "%d (x%d)", (int)f->raw, 2 * (int)f->raw + 1);
        }
    }
    const uint8_t *sc = l->b + 48;
    const uint16_t s0 = cdc_le16(sc), s1 = cdc_le16(sc + 2), s2 = cdc_le16(sc + 4), s3 = cdc_le16(sc + 6);
    const uint16_t bits = (uint16_t)((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000));
    codec_field *f = add(l, CODEC_FIELD_SCALE, 48, 8, 0, 256, 1, "d");
    f->raw = bits;
    set_num(f, cdc_f16_to_f32(bits));
    snprintf(f->text + strlen(f->text), sizeof f->text - strlen(f->text), " (bits 12-15 of each scale word)");
}

static void an_plain(flist *l, uint32_t type, uint32_t size)
{
    codec_field *f = add(l, CODEC_FIELD_OTHER, 0, size, 0, 1, 1, "x");
    float v;
    codec_dequantize_scalar(type, l->b, &v, 1);
    set_num(f, v);
}

int codec_block_anatomy(uint32_t type, const void *block, codec_field *fields, int cap)
{
    const ggtype_traits *tr = ggtype_get(type);
    if (!tr || !block || cap < 0 || (cap > 0 && !fields))
        return -1;
    flist l = {.out = fields, .cap = cap, .n = 0, .b = block};
    switch (type) {
    case GGTYPE_Q4_0: an_q4_0(&l); break;
    case GGTYPE_Q4_1: an_q4_1(&l); break;
    case GGTYPE_Q5_0: an_q5(&l, false); break;
    case GGTYPE_Q5_1: an_q5(&l, true); break;
    case GGTYPE_Q8_0:
    case GGTYPE_Q8_1: an_q8(&l, (int)type); break;
    case GGTYPE_Q2_K: an_q2_K(&l); break;
    case GGTYPE_Q3_K: an_q3_K(&l); break;
    case GGTYPE_Q4_K: an_q4_K(&l); break;
    case GGTYPE_Q5_K: an_q5_K(&l); break;
    case GGTYPE_Q6_K: an_q6_K(&l); break;
    case GGTYPE_Q8_K: an_q8_K(&l); break;
    case GGTYPE_IQ4_NL: an_iq4_nl(&l); break;
    case GGTYPE_IQ4_XS: an_iq4_xs(&l); break;
    case GGTYPE_MXFP4: an_mxfp4(&l); break;
    case GGTYPE_NVFP4: an_nvfp4(&l); break;
    case GGTYPE_Q1_0: an_q1_0(&l); break;
    case GGTYPE_Q2_0: an_q2_0(&l); break;
    case GGTYPE_TQ1_0: an_tq1_0(&l); break;
    case GGTYPE_TQ2_0: an_tq2_0(&l); break;
    case GGTYPE_IQ2_XXS: an_iq2_xxs(&l); break;
    case GGTYPE_IQ2_XS: an_iq2_xs(&l); break;
    case GGTYPE_IQ2_S: an_iq2_s(&l); break;
    case GGTYPE_IQ3_XXS: an_iq3_xxs(&l); break;
    case GGTYPE_IQ3_S: an_iq3_s(&l); break;
    case GGTYPE_IQ1_S: an_iq1_s(&l); break;
    case GGTYPE_IQ1_M: an_iq1_m(&l); break;
    default: an_plain(&l, type, tr->type_size); break;
    }
    return l.n;
}
