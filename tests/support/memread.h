/* memread: a plain streaming read of memory by a pool's threads, each its
 * own contiguous part, with 32-byte vector adds where the CPU has AVX2 (on
 * a Zen 4 10-20% faster than 64-bit adds with software prefetch): what
 * memory gives at this moment, the bound benchmarks compare decoding with
 * (bench_matvec, bench_token --bw). */
#ifndef GGSCOPE_MEMREAD_H
#define GGSCOPE_MEMREAD_H

#include <stddef.h>
#include <stdint.h>

#include "tpool.h"

/* The sum of n 64-bit words from p, read once (the vector loop: n is taken
 * down to a multiple of 16). */
uint64_t memread_words(const uint64_t *p, size_t n);

/* A range of memory for memread_ranges (8-byte aligned). */
typedef struct {
    const void *p;
    size_t bytes;
} memread_range;

/* Reads the whole 64-bit words of the n ranges once, as one stream cut into
 * one contiguous part per pool thread (a part may span ranges); returns the
 * seconds it took, and the words' sum in *sum (when not NULL). What the same
 * bytes give when read plainly: the bound for a pass that reads exactly
 * those bytes (bench_token --bw reads a token's weights). */
double memread_ranges(tpool *pool, const memread_range *r, size_t n, uint64_t *sum);

#endif
