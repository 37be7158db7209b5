#include "cpufeat.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define CPUFEAT_X86 1
#endif

static cpufeat g_feat;
static const char *g_request;
static int g_variant = -1; /* GGSCOPE_LLAMA_VARIANT, -1: unset */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
    const char *env = getenv("GGSCOPE_SIMD");
    static const char *const known[] = {"scalar", "avx2", "avx2-plain", "avx512"};
    for (size_t i = 0; env && i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(env, known[i]))
            g_request = known[i];
    const char *var = getenv("GGSCOPE_LLAMA_VARIANT");
    if (var && !strcmp(var, "zen4"))
        g_variant = CPUFEAT_LLAMA_ZEN4;
    else if (var && !strcmp(var, "haswell"))
        g_variant = CPUFEAT_LLAMA_HASWELL;
#ifdef CPUFEAT_X86
    unsigned a, b, c, d;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d))
        return;
    bool fma = (c >> 12) & 1, f16c = (c >> 29) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx)
        return;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    bool ymm_os = (lo & 0x6) == 0x6, zmm_os = (lo & 0xe6) == 0xe6;
    if (!ymm_os || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return;
    g_feat.avx2 = ((b >> 5) & 1) && fma && f16c;
    bool f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    g_feat.avx512 = g_feat.avx2 && zmm_os && f && dq && bw && vl;
    g_feat.avx512vnni = g_feat.avx512 && ((c >> 11) & 1);
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
        g_feat.avxvnni = g_feat.avx2 && ((a >> 4) & 1);
#endif
}

const cpufeat *cpufeat_get(void)
{
    pthread_once(&g_once, detect);
    return &g_feat;
}

const char *cpufeat_simd_request(void)
{
    pthread_once(&g_once, detect);
    return g_request;
}

cpufeat_level cpufeat_level_allowed(void)
{
    const char *r = cpufeat_simd_request();
    if (!r || !strcmp(r, "avx512"))
        return CPUFEAT_AVX512;
    return strcmp(r, "scalar") ? CPUFEAT_AVX2 : CPUFEAT_SCALAR;
}

cpufeat_llama cpufeat_llama_variant(void)
{
    const cpufeat *f = cpufeat_get();
    if (g_variant >= 0)
        return (cpufeat_llama)g_variant;
    return f->avx512 ? CPUFEAT_LLAMA_ZEN4 : CPUFEAT_LLAMA_HASWELL;
}
