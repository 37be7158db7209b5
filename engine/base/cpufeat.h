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

#endif
