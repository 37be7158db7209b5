/* bench_vkmatvec: device time of one Vulkan matmul (timestamp queries).
 *
 *   bench_vkmatvec [TYPE [ROWS [COLS [TOKENS [REPS]]]]]   (default q4_0 5632 2048 1 5)
 *
 * Prints the mean device milliseconds per dispatch and the weight GB/s.
 * The layout follows the environment as the backend's does
 * (GGSCOPE_VK_ROWS, GGSCOPE_VK_ROWS_NR, GGSCOPE_VK_MV_ROWS, ...). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_vulkan.h"
#include "codec.h"
#include "ggtype.h"

int main(int argc, char **argv)
{
    const char *tname = argc > 1 ? argv[1] : "q4_0";
    uint32_t rows = argc > 2 ? (uint32_t)atoi(argv[2]) : 5632, cols = argc > 3 ? (uint32_t)atoi(argv[3]) : 2048;
    uint32_t ntok = argc > 4 ? (uint32_t)atoi(argv[4]) : 1, reps = argc > 5 ? (uint32_t)atoi(argv[5]) : 5;
    int type = -1;
    for (uint32_t t = 0; t < 64; t++)
        if (ggtype_get(t) && ggtype_name(t) && !strcmp(ggtype_name(t), tname))
            type = (int)t;
    if (type < 0 || !codec_can_quantize((uint32_t)type) || !rows || !cols || !ntok) {
        fprintf(stderr, "usage: bench_vkmatvec [TYPE [ROWS [COLS [TOKENS [REPS]]]]]\n");
        return 2;
    }
    char err[256];
    backend *b = backend_vulkan_new(-1, err, sizeof err);
    if (!b) {
        fprintf(stderr, "no Vulkan: %s\n", err);
        return 1;
    }
    size_t n = (size_t)rows * cols;
    float *src = malloc(n * sizeof *src);
    uint64_t rb = ggtype_row_size((uint32_t)type, cols, NULL);
    uint8_t *data = malloc(rb * rows);
    if (!src || !data)
        return 1;
    for (size_t i = 0; i < n; i++)
        src[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    if (codec_quantize((uint32_t)type, src, data, rows, cols, NULL) != rb * rows)
        return 1;
    backend_weight w = {.type = (uint32_t)type, .ne0 = cols, .ne1 = rows, .row_bytes = rb, .data = data, .name = "w"};
    if (b->ops->weight_prepare(b->ctx, &w))
        return 1;
    backend_buf *x = b->ops->buf_new(b->ctx, BACKEND_F32, (size_t)cols * ntok);
    backend_buf *y = b->ops->buf_new(b->ctx, BACKEND_F32, (size_t)rows * ntok);
    b->ops->buf_write(b->ctx, x, 0, src, (size_t)cols * ntok);
    float out[4];
    /* once for the pipeline, then timed */
    b->ops->matmul(b->ctx, &w, (backend_view){x, 0}, ntok, (backend_view){y, 0});
    b->ops->buf_read(b->ctx, y, 0, out, 1);
    backend_vulkan_set_profile(b, true);
    for (uint32_t r = 0; r < reps; r++)
        b->ops->matmul(b->ctx, &w, (backend_view){x, 0}, ntok, (backend_view){y, 0});
    b->ops->buf_read(b->ctx, y, 0, out, 1);
    backend_vulkan_prof_row pr[4];
    int np = backend_vulkan_profile(b, pr, 4);
    for (int i = 0; i < np && i < 4; i++)
        printf("%-24s %ux%u x %u tok: %8.3f ms/dispatch, %6.2f GB/s (%llu dispatches)\n", pr[i].shader, rows, cols,
               ntok, pr[i].ms / (double)pr[i].count, (double)rb * rows / (pr[i].ms / (double)pr[i].count) / 1e6,
               (unsigned long long)pr[i].count);
    b->ops->weight_release(b->ctx, &w);
    b->ops->buf_free(b->ctx, x);
    b->ops->buf_free(b->ctx, y);
    backend_free(b);
    free(src);
    free(data);
    return 0;
}
