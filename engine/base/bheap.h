/* bheap: the one binary heap of the engine (the SPM and BPE merge queues), as
 * a header that stamps out type-specific functions, so comparisons inline:
 *
 *     #define BHEAP_T      bigram                      element type
 *     #define BHEAP_BEFORE(a, b) ((a)->rank < (b)->rank)  a pops before b
 *     #define BHEAP_NAME   merges                      function prefix
 *     #include "bheap.h"
 *
 * gives `static void merges_push(BHEAP_T *h, size_t *n, BHEAP_T g)` (the
 * caller guarantees room for *n + 1 elements) and `static BHEAP_T
 * merges_pop(BHEAP_T *h, size_t *n)` (*n > 0). The macros are undefined at
 * the end, so the header can be included again for another type. */
#if !defined(BHEAP_T) || !defined(BHEAP_BEFORE) || !defined(BHEAP_NAME)
#error "define BHEAP_T, BHEAP_BEFORE and BHEAP_NAME before including bheap.h"
#endif

#include <stddef.h>

#define BHEAP_CAT_(a, b) a##_##b
#define BHEAP_CAT(a, b) BHEAP_CAT_(a, b)

static void BHEAP_CAT(BHEAP_NAME, push)(BHEAP_T *h, size_t *n, BHEAP_T g)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!(BHEAP_BEFORE(&g, &h[p])))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = g;
}

static BHEAP_T BHEAP_CAT(BHEAP_NAME, pop)(BHEAP_T *h, size_t *n)
{
    BHEAP_T top = h[0], last = h[--(*n)];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && BHEAP_BEFORE(&h[c + 1], &h[c]))
            c++;
        if (!(BHEAP_BEFORE(&h[c], &last)))
            break;
        h[i] = h[c];
        i = c;
    }
    if (m)
        h[i] = last;
    return top;
}

#undef BHEAP_CAT
#undef BHEAP_CAT_
#undef BHEAP_T
#undef BHEAP_BEFORE
#undef BHEAP_NAME
