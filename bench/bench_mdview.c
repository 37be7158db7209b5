/* bench_mdview: what rendering a streaming reply costs the chat (ui/mdview.h).
 *
 * A 4,000-token Markdown reply (~16 KB: headings, paragraphs with emphasis
 * and links, lists, a table, code blocks) is streamed one token (4 bytes) at
 * a time, mdview_update after each, as the chat does at up to ~33 redraws a
 * second: at 30 tokens/s that is one update per token. Reported: this
 * thread's CPU time in all, per update (mean, max), and the share of one
 * core it takes at 30 tokens/s (CPU time / the 133 s the reply streams).
 * A second case is one 4,000-token code block, the worst case (the open
 * block is parsed again on each update).
 *
 * usage: bench_mdview [--width N] [--tokens N] */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mdview.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Append Markdown until the text has `bytes` bytes. */
static char *mixed(size_t bytes)
{
    char *t = malloc(bytes + 4096);
    size_t n = 0;
    for (int s = 0; n < bytes; s++) {
        n += (size_t)sprintf(t + n, "## Section %d\n\nThe model explains **step %d** with *care*, quoting `x[%d]` and "
                             "[a link](https://example.org/%d) in a paragraph long enough to wrap twice on a "
                             "terminal of a hundred columns or so.\n\n- first point\n- second point, longer, with "
                             "`code`\n  - nested\n\n1. one\n2. two\n\n| name | value |\n|---|--:|\n| a | %d |\n| bb | "
                             "%d |\n\n```c\nint f(int x)\n{\n    return x * %d;\n}\n```\n\n> a quote\n\n",
                             s, s, s, s, s, s * 7, s);
    }
    t[bytes] = 0;
    return t;
}

static char *code(size_t bytes)
{
    char *t = malloc(bytes + 256);
    size_t n = (size_t)sprintf(t, "```python\n");
    for (int i = 0; n < bytes; i++)
        n += (size_t)sprintf(t + n, "    value_%d = compute(value_%d, %d)  # step\n", i, i - 1, i);
    t[bytes] = 0;
    return t;
}

static void run(const char *name, const char *text, size_t tokens, int width)
{
    size_t len = strlen(text), step = (len + tokens - 1) / tokens;
    mdview *v = mdview_new();
    double t0 = cpu_s(), worst = 0;
    size_t updates = 0;
    for (size_t k = step; ; k += step) {
        if (k > len)
            k = len;
        double a = cpu_s();
        if (mdview_update(v, text, k, width)) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        double d = cpu_s() - a;
        worst = d > worst ? d : worst;
        updates++;
        if (k == len)
            break;
    }
    double total = cpu_s() - t0, stream_s = (double)tokens / 30.0;
    printf("%-12s %6zu bytes %5zu updates: CPU %.3f s in all, %.1f us/update (max %.2f ms), %zu lines, "
           "%.2f%% of a core at 30 tokens/s, %.1f MB parsed\n",
           name, len, updates, total, total / (double)updates * 1e6, worst * 1e3, mdview_lines(v),
           100.0 * total / stream_s, (double)mdview_parsed_bytes(v) / 1e6);
    mdview_free(v);
}

int main(int argc, char **argv)
{
    int width = 100;
    size_t tokens = 4000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--width"))
            width = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tokens"))
            tokens = (size_t)atol(argv[i + 1]);
    }
    setlocale(LC_ALL, "C.UTF-8");
    char *a = mixed(tokens * 4), *b = code(tokens * 4);
    run("mixed", a, tokens, width);
    run("one code block", b, tokens, width);
    free(a);
    free(b);
    return 0;
}
