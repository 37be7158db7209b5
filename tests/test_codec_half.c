/* f16 / bf16 conversions against the hardware (F16C) and IEEE rules. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <cpuid.h>
#include <immintrin.h>

#include "testutil.h"
#include "codec.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}

__attribute__((target("f16c"))) static float hw_h2f(uint16_t h)
{
    return _cvtsh_ss(h);
}

__attribute__((target("f16c"))) static uint16_t hw_f2h(float f)
{
    return (uint16_t)_cvtss_sh(f, 0);
}

/* Every half converts to the float F16C gives (NaNs: the quieted payload). */
static void test_f16_to_f32_all(void **state)
{
    (void)state;
    if (!has_f16c())
        skip();
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t got = bits(codec_f16_to_f32((uint16_t)h)), want = bits(hw_h2f((uint16_t)h));
        if (got != want)
            fail_msg("h=0x%04x: got 0x%08x want 0x%08x", h, got, want);
    }
}

/* Round trip of every non-NaN half is exact. */
static void test_f16_roundtrip(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue;
        assert_int_equal(codec_f32_to_f16(codec_f16_to_f32((uint16_t)h)), h);
    }
}

/* float -> half matches F16C round-to-nearest-even on a sweep of floats
 * (every 2^13 step plus the halfway points around it), NaNs excepted. */
static void test_f32_to_f16_sweep(void **state)
{
    (void)state;
    if (!has_f16c())
        skip();
    for (uint64_t u = 0; u <= 0xffffffffu; u += 0x1000 - 1) {
        for (int d = -1; d <= 1; d++) {
            uint32_t v = (uint32_t)(u + (uint64_t)(int64_t)d);
            float f = from_bits(v);
            if (isnan(f))
                continue;
            uint16_t got = codec_f32_to_f16(f), want = hw_f2h(f);
            if (got != want)
                fail_msg("f=0x%08x: got 0x%04x want 0x%04x", v, got, want);
        }
    }
    assert_int_equal(codec_f32_to_f16(from_bits(0x7fc00000)), 0x7e00);
    assert_int_equal(codec_f32_to_f16(from_bits(0xffc00001)), 0xfe00);
    assert_int_equal(codec_f32_to_f16(65520.0f), 0x7c00);   /* rounds up to inf */
    assert_int_equal(codec_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(codec_f32_to_f16(from_bits(0x33000000)), 0x0000); /* 2^-25: tie to even 0 */
    assert_int_equal(codec_f32_to_f16(from_bits(0x33000001)), 0x0001);
}

static void test_bf16(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++)
        assert_int_equal(bits(codec_bf16_to_f32((uint16_t)h)), h << 16);
    assert_int_equal(codec_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(codec_f32_to_bf16(from_bits(0x3f808000)), 0x3f80); /* tie -> even */
    assert_int_equal(codec_f32_to_bf16(from_bits(0x3f818000)), 0x3f82); /* tie -> even (up) */
    assert_int_equal(codec_f32_to_bf16(from_bits(0x3f808001)), 0x3f81);
    assert_int_equal(codec_f32_to_bf16(from_bits(0x7f7fffff)), 0x7f80); /* overflow to inf */
    assert_int_equal(codec_f32_to_bf16(from_bits(0x00008000)), 0x0000); /* subnormal kept, rounded */
    assert_int_equal(codec_f32_to_bf16(from_bits(0x00018000)), 0x0002);
    assert_int_equal(codec_f32_to_bf16(from_bits(0x7f800001)), 0x7fc0); /* sNaN quieted */
    assert_int_equal(codec_f32_to_bf16(from_bits(0xff812345)), 0xffc1);
    assert_int_equal(codec_f32_to_bf16(from_bits(0x7f800000)), 0x7f80);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_to_f32_all),
        cmocka_unit_test(test_f16_roundtrip),
        cmocka_unit_test(test_f32_to_f16_sweep),
        cmocka_unit_test(test_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
