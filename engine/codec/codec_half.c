/* codec: IEEE half and bfloat16 conversions, bit-exact with ggml. */
#include "codec.h"
#include "codec_internal.h"

float codec_f16_to_f32(uint16_t h)
{
    return cdc_f16_to_f32(h);
}

uint16_t codec_f32_to_f16(float f)
{
    return cdc_f32_to_f16(f);
}

float codec_bf16_to_f32(uint16_t h)
{
    return cdc_bf16_to_f32(h);
}

uint16_t codec_f32_to_bf16(float f)
{
    return cdc_f32_to_bf16(f);
}
