/* codec: dequantization entry points and the choice of SIMD path. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "cpufeat.h"
#include "codec_internal.h"

enum { PATH_SCALAR, PATH_AVX2, PATH_AVX512, PATH_COUNT };
static const char *const PATH_NAMES[PATH_COUNT] = {"scalar", "avx2", "avx512"};

/* One complete table per path (entries the path lacks fall back to the next
 * slower path), and the index of the one in use. */
static cdc_dequant_fn g_tables[PATH_COUNT][GGTYPE_COUNT];
static const char *g_names[PATH_COUNT][GGTYPE_COUNT];
static bool g_supported[PATH_COUNT];
static int g_path = PATH_SCALAR;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int path_index(const char *name)
{
    for (int p = 0; p < PATH_COUNT; p++)
        if (!strcmp(name, PATH_NAMES[p]))
            return p;
    return -1;
}

static void init_tables(void)
{
    for (int t = 0; t < GGTYPE_COUNT; t++) {
        g_tables[PATH_SCALAR][t] = cdc_dequant_scalar[t];
        g_names[PATH_SCALAR][t] = "scalar";
    }
    g_supported[PATH_SCALAR] = true;
    g_supported[PATH_AVX2] = cpufeat_get()->avx2;
    g_supported[PATH_AVX512] = cpufeat_get()->avx512;
    for (int p = PATH_AVX2; p < PATH_COUNT; p++) {
        memcpy(g_tables[p], g_tables[p - 1], sizeof g_tables[p]);
        memcpy(g_names[p], g_names[p - 1], sizeof g_names[p]);
        if (!g_supported[p])
            continue;
        cdc_dequant_fn own[GGTYPE_COUNT] = {0};
#if defined(__x86_64__) || defined(__i386__)
        if (p == PATH_AVX2)
            cdc_dequant_avx2_table(own);
        else
            cdc_dequant_avx512_table(own);
#endif
        for (int t = 0; t < GGTYPE_COUNT; t++)
            if (own[t]) {
                g_tables[p][t] = own[t];
                g_names[p][t] = PATH_NAMES[p];
            }
    }
    g_path = g_supported[PATH_AVX512] ? PATH_AVX512 : g_supported[PATH_AVX2] ? PATH_AVX2 : PATH_SCALAR;
    const char *env = cpufeat_simd_request();
    int forced = env ? path_index(env) : -1;
    if (forced >= 0 && g_supported[forced])
        g_path = forced;
}

static void ensure_init(void)
{
    pthread_once(&g_once, init_tables);
}

bool codec_simd_supported(const char *path)
{
    ensure_init();
    int p = path ? path_index(path) : -1;
    return p >= 0 && g_supported[p];
}

int codec_set_simd(const char *path)
{
    ensure_init();
    int p;
    if (!path || !strcmp(path, "auto"))
        p = g_supported[PATH_AVX512] ? PATH_AVX512 : g_supported[PATH_AVX2] ? PATH_AVX2 : PATH_SCALAR;
    else
        p = path_index(path);
    if (p < 0 || !g_supported[p])
        return -1;
    __atomic_store_n(&g_path, p, __ATOMIC_RELEASE);
    return 0;
}

static int run(int path, uint32_t type, const void *src, float *dst, uint64_t n)
{
    const ggtype_traits *tr = ggtype_get(type);
    if (!tr || n % tr->blck_size != 0 || !g_tables[path][type])
        return -1;
    if (n == 0)
        return 0;
    if (!src || !dst)
        return -1;
    g_tables[path][type](src, dst, n / tr->blck_size);
    return 0;
}

int codec_dequantize(uint32_t type, const void *src, float *dst, uint64_t n)
{
    ensure_init();
    return run(__atomic_load_n(&g_path, __ATOMIC_ACQUIRE), type, src, dst, n);
}

int codec_dequantize_scalar(uint32_t type, const void *src, float *dst, uint64_t n)
{
    ensure_init();
    return run(PATH_SCALAR, type, src, dst, n);
}

const char *codec_dequantize_path(uint32_t type)
{
    ensure_init();
    if (type >= GGTYPE_COUNT || !ggtype_get(type))
        return "scalar";
    return g_names[__atomic_load_n(&g_path, __ATOMIC_ACQUIRE)][type];
}
