/* The CPU's SIMD features, detected once (cpuid + xgetbv: the OS must have
 * enabled the YMM / ZMM state), and the one reading of GGSCOPE_SIMD. Every
 * module that picks a SIMD path (codec, kernels, CPU backend, qerr, the batch
 * quantizers) asks here, so they agree. Never prints. */
#ifndef GGSCOPE_CPUFEAT_H
#define GGSCOPE_CPUFEAT_H

#include <stdbool.h>

typedef struct {
    bool avx2;       /* AVX2 + FMA + F16C, YMM state enabled */
    bool avx512;     /* AVX-512 F + DQ + BW + VL (with avx2), ZMM state enabled */
    bool avx512vnni; /* AVX-512 VNNI (vpdpbusd on zmm) */
    bool avxvnni;    /* AVX-VNNI (vpdpbusd on ymm) */
} cpufeat;

/* What this CPU has (all false off x86-64). Thread-safe; never NULL. */
const cpufeat *cpufeat_get(void);

/* GGSCOPE_SIMD as read once at first use: "scalar", "avx2", "avx2-plain" or
 * "avx512"; NULL when unset or not one of these (then: the best path). */
const char *cpufeat_simd_request(void);

typedef enum { CPUFEAT_SCALAR = 0, CPUFEAT_AVX2 = 1, CPUFEAT_AVX512 = 2 } cpufeat_level;

/* The highest instruction-set level GGSCOPE_SIMD allows ("avx2-plain" counts
 * as AVX2; unset: AVX-512). A module uses min(this, what it needs and the
 * CPU has). */
cpufeat_level cpufeat_level_allowed(void);

/* Which of llama.cpp's x86-64 CPU builds the exact kernels follow, float
 * operation for float operation: its AVX-512 "zen4" build, or its AVX2
 * "haswell" build (8-lane F32/F16 dot products, tinyBLAS with 8 | K, 8-lane
 * softmax sums, SwiGLU vectorised over n & ~7). Default: the one llama.cpp
 * loads on this CPU (zen4 with AVX-512, else haswell); GGSCOPE_LLAMA_VARIANT
 * = zen4 | haswell forces one (read once). The haswell order only changes
 * the AVX2 paths: on an AVX-512 machine it needs GGSCOPE_SIMD=avx2 too. */
typedef enum { CPUFEAT_LLAMA_ZEN4 = 0, CPUFEAT_LLAMA_HASWELL = 1 } cpufeat_llama;
cpufeat_llama cpufeat_llama_variant(void);

/* Whether a function may be built as several clones picked at load time
 * (`__attribute__((target_clones(...)))`): GCC or clang on x86-64, and not
 * in the ASan build, which keeps one plain version. 1 or 0. Used by the
 * batch quantizers (QZ_CLONES) and the CPU backend's rope. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define CPUFEAT_CLONES 1
#else
#define CPUFEAT_CLONES 0
#endif

#endif
