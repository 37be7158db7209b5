#include "ggtype.h"

#include <strings.h>

#define QK_K 256

static const ggtype_traits TRAITS[GGTYPE_COUNT] = {
    [GGTYPE_F32]     = {"f32", 1, 4, false, true},
    [GGTYPE_F16]     = {"f16", 1, 2, false, true},
    [GGTYPE_Q4_0]    = {"q4_0", 32, 18, true, false},
    [GGTYPE_Q4_1]    = {"q4_1", 32, 20, true, false},
    [GGTYPE_Q5_0]    = {"q5_0", 32, 22, true, false},
    [GGTYPE_Q5_1]    = {"q5_1", 32, 24, true, false},
    [GGTYPE_Q8_0]    = {"q8_0", 32, 34, true, false},
    [GGTYPE_Q8_1]    = {"q8_1", 32, 36, true, false},
    [GGTYPE_Q2_K]    = {"q2_K", QK_K, 84, true, false},
    [GGTYPE_Q3_K]    = {"q3_K", QK_K, 110, true, false},
    [GGTYPE_Q4_K]    = {"q4_K", QK_K, 144, true, false},
    [GGTYPE_Q5_K]    = {"q5_K", QK_K, 176, true, false},
    [GGTYPE_Q6_K]    = {"q6_K", QK_K, 210, true, false},
    [GGTYPE_Q8_K]    = {"q8_K", QK_K, 292, true, false},
    [GGTYPE_IQ2_XXS] = {"iq2_xxs", QK_K, 66, true, false},
    [GGTYPE_IQ2_XS]  = {"iq2_xs", QK_K, 74, true, false},
    [GGTYPE_IQ3_XXS] = {"iq3_xxs", QK_K, 98, true, false},
    [GGTYPE_IQ1_S]   = {"iq1_s", QK_K, 50, true, false},
    [GGTYPE_IQ4_NL]  = {"iq4_nl", 32, 18, true, false},
    [GGTYPE_IQ3_S]   = {"iq3_s", QK_K, 110, true, false},
    [GGTYPE_IQ2_S]   = {"iq2_s", QK_K, 82, true, false},
    [GGTYPE_IQ4_XS]  = {"iq4_xs", QK_K, 136, true, false},
    [GGTYPE_I8]      = {"i8", 1, 1, false, false},
    [GGTYPE_I16]     = {"i16", 1, 2, false, false},
    [GGTYPE_I32]     = {"i32", 1, 4, false, false},
    [GGTYPE_I64]     = {"i64", 1, 8, false, false},
    [GGTYPE_F64]     = {"f64", 1, 8, false, true},
    [GGTYPE_IQ1_M]   = {"iq1_m", QK_K, 56, true, false},
    [GGTYPE_BF16]    = {"bf16", 1, 2, false, true},
    [GGTYPE_TQ1_0]   = {"tq1_0", QK_K, 54, true, false},
    [GGTYPE_TQ2_0]   = {"tq2_0", QK_K, 66, true, false},
    [GGTYPE_MXFP4]   = {"mxfp4", 32, 17, true, false},
    [GGTYPE_NVFP4]   = {"nvfp4", 64, 36, true, false},
    [GGTYPE_Q1_0]    = {"q1_0", 128, 18, true, false},
    [GGTYPE_Q2_0]    = {"q2_0", 64, 18, true, false},
};

const ggtype_traits *ggtype_get(uint32_t id)
{
    if (id >= GGTYPE_COUNT || TRAITS[id].name == NULL)
        return NULL;
    return &TRAITS[id];
}

const char *ggtype_name(uint32_t id)
{
    const ggtype_traits *t = ggtype_get(id);
    return t ? t->name : "unknown";
}

int ggtype_from_name(const char *name)
{
    for (int i = 0; i < GGTYPE_COUNT; i++)
        if (TRAITS[i].name && strcasecmp(TRAITS[i].name, name) == 0)
            return i;
    return -1;
}

uint64_t ggtype_row_size(uint32_t id, uint64_t n, bool *overflow)
{
    if (overflow)
        *overflow = false;
    const ggtype_traits *t = ggtype_get(id);
    if (!t || n % t->blck_size != 0)
        return 0;
    uint64_t blocks = n / t->blck_size, bytes;
    if (__builtin_mul_overflow(blocks, (uint64_t)t->type_size, &bytes)) {
        if (overflow)
            *overflow = true;
        return 0;
    }
    return bytes;
}

static const char *const FILE_TYPES[] = {
    "ALL_F32", "MOSTLY_F16", "MOSTLY_Q4_0", "MOSTLY_Q4_1", "MOSTLY_Q4_1_SOME_F16",
    "MOSTLY_Q4_2", "MOSTLY_Q4_3", "MOSTLY_Q8_0", "MOSTLY_Q5_0", "MOSTLY_Q5_1",
    "MOSTLY_Q2_K", "MOSTLY_Q3_K_S", "MOSTLY_Q3_K_M", "MOSTLY_Q3_K_L", "MOSTLY_Q4_K_S",
    "MOSTLY_Q4_K_M", "MOSTLY_Q5_K_S", "MOSTLY_Q5_K_M", "MOSTLY_Q6_K", "MOSTLY_IQ2_XXS",
    "MOSTLY_IQ2_XS", "MOSTLY_Q2_K_S", "MOSTLY_IQ3_XS", "MOSTLY_IQ3_XXS", "MOSTLY_IQ1_S",
    "MOSTLY_IQ4_NL", "MOSTLY_IQ3_S", "MOSTLY_IQ3_M", "MOSTLY_IQ2_S", "MOSTLY_IQ2_M",
    "MOSTLY_IQ4_XS", "MOSTLY_IQ1_M", "MOSTLY_BF16", "MOSTLY_Q4_0_4_4", "MOSTLY_Q4_0_4_8",
    "MOSTLY_Q4_0_8_8", "MOSTLY_TQ1_0", "MOSTLY_TQ2_0", "MOSTLY_MXFP4_MOE",
};

const char *ggtype_file_type_name(uint32_t ft)
{
    if (ft < sizeof FILE_TYPES / sizeof FILE_TYPES[0])
        return FILE_TYPES[ft];
    return NULL;
}
