/* bench_tokenize: load time and tokenization speed of 1 MB of mixed English,
 * source code and CJK text (generated deterministically) for the llama-bpe,
 * qwen2 and llama-spm vocabularies (target: < 0.5 s per MB).
 *
 *   bench_tokenize [VOCAB_DIR]   (default ../shared/fixtures/vocab)
 *
 * Times are CPU time of the calling thread (best of 3); wall time is shown too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf.h"
#include "tokenizer.h"

/* CPU time of this thread: the machine is shared, so wall time overstates. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint32_t rng_state = 12345;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (rng_state >> 8) % n;
}

static const char *const EN[] = {
    "The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "a", "little",
    "girl", "named", "Lily", "plays", "outside", "in", "sun", "tokenizer", "models", "don't",
    "we're", "it's", "performance", "measured", "carefully", "and", "of", "to", "with", "for"};
static const char *const CODE[] = {
    "int main(void) {\n", "    for (int i = 0; i < n; i++) {\n", "        sum += a[i] * b[i];\n",
    "    }\n", "    return sum;\n}\n", "def forward(self, x):\n", "        return self.proj(x) + x\n",
    "#include <stdio.h>\n", "const y = await fetch(`/api/${id}`);\n", "    if (x != NULL && x->n > 0)\n"};
static const char *const CJK[] = {
    "我想在苹果公司工作", "今天天气很好，", "我们一起去公园散步。", "机器学习模型", "分词器的速度",
    "こんにちは世界、", "日本語のテキスト。", "안녕하세요 여러분", "中文测试：", "「引号」与标点"};

static char *make_text(size_t target, size_t *len)
{
    char *buf = malloc(target + 256);
    size_t n = 0;
    while (n < target) {
        uint32_t kind = rnd(10);
        const char *s;
        if (kind < 5) {
            for (int w = 0; w < 12 && n < target; w++) {
                s = EN[rnd(sizeof EN / sizeof EN[0])];
                n += (size_t)snprintf(buf + n, 64, "%s%s", w ? " " : "", s);
            }
            n += (size_t)snprintf(buf + n, 64, rnd(3) ? ". " : ", %u items.\n", rnd(100000));
        } else if (kind < 8) {
            s = CODE[rnd(sizeof CODE / sizeof CODE[0])];
            n += (size_t)snprintf(buf + n, 128, "%s", s);
        } else {
            for (int w = 0; w < 4; w++) {
                s = CJK[rnd(sizeof CJK / sizeof CJK[0])];
                n += (size_t)snprintf(buf + n, 128, "%s", s);
            }
            buf[n++] = '\n';
        }
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "../shared/fixtures/vocab";
    size_t len;
    char *text = make_text(1 << 20, &len);
    printf("text: %zu bytes (English, code, CJK)\n", len);
    static const char *const names[] = {"llama-bpe", "qwen2", "llama-spm"};
    int rc = 0;
    for (int k = 0; k < 3; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, names[k]);
        gguf_error ge;
        gguf_file *f = gguf_open(path, &ge);
        if (!f) {
            char msg[1024];
            fprintf(stderr, "%s\n", gguf_error_format(&ge, msg, sizeof msg));
            rc = 1;
            continue;
        }
        tok_error te;
        double t0 = now();
        tok_vocab *v = tok_open(f, &te);
        double t_load = now() - t0;
        if (!v) {
            fprintf(stderr, "%s: %s\n", path, te.msg);
            gguf_close(f);
            rc = 1;
            continue;
        }
        double best = 1e9, best_wall = 1e9;
        size_t n = 0;
        for (int rep = 0; rep < 3; rep++) {
            tok_id *ids;
            t0 = now();
            double w0 = wall();
            if (tok_tokenize(v, text, len, 0, &ids, &n) != TOK_OK)
                return 1;
            double t = now() - t0, tw = wall() - w0;
            if (t < best)
                best = t;
            if (tw < best_wall)
                best_wall = tw;
            free(ids);
        }
        printf("%-10s vocab %6u  load %6.1f ms  tokenize %6.1f ms CPU (%6.1f ms wall, %5.2f MB/s)  "
               "%zu tokens  %s\n",
               names[k], tok_n_vocab(v), t_load * 1e3, best * 1e3, best_wall * 1e3, len / best / 1e6,
               n, best < 0.5 ? "ok (< 0.5 s)" : "SLOW (>= 0.5 s)");
        tok_close(v);
        gguf_close(f);
    }
    free(text);
    return rc;
}
