/* bench_jinja: how fast chat templates render, and a driver for the
 * differential test against @huggingface/jinja (bench/jinja_diff.sh).
 *
 *   bench_jinja [DIR] [-n MESSAGES] [-r REPEATS]
 *       render every DIR/NAME.jinja (default ../shared/fixtures/templates,
 *       else tests/data/templates) over a conversation of MESSAGES turns
 *       (default 200), REPEATS times (default 20); print parse and render
 *       times, renders/s and output MB/s per template.
 *   bench_jinja --cases IN.json OUT.json
 *       IN.json: [{"template": T, "vars": {...}}, ...]; OUT.json gets, per
 *       case, {"out": TEXT} or {"err": MESSAGE, "code": N}. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "jinja.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return NULL;
    }
    long len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[len] = 0;
        if (n)
            *n = (size_t)len;
    }
    return buf;
}

static int run_cases(const char *in, const char *outp)
{
    char *txt = read_file(in, NULL);
    cJSON *cases = txt ? cJSON_Parse(txt) : NULL;
    free(txt);
    if (!cJSON_IsArray(cases)) {
        fprintf(stderr, "bench_jinja: %s: not a JSON list of cases\n", in);
        cJSON_Delete(cases);
        return 2;
    }
    cJSON *res = cJSON_CreateArray();
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *t = cJSON_GetObjectItem(c, "template");
        cJSON *o = cJSON_CreateObject();
        jinja_error e;
        const char *src = cJSON_IsString(t) ? t->valuestring : "";
        jinja_template *tp = jinja_parse(src, strlen(src), &e);
        char *out = NULL;
        jinja_limits lim = {0};
        lim.max_steps = 1000000;
        if (tp)
            out = jinja_render(tp, cJSON_GetObjectItem(c, "vars"), &lim, NULL, &e);
        if (out) {
            cJSON_AddStringToObject(o, "out", out);
        } else {
            cJSON_AddStringToObject(o, "err", e.msg);
            cJSON_AddNumberToObject(o, "code", e.code);
        }
        free(out);
        jinja_free(tp);
        cJSON_AddItemToArray(res, o);
    }
    char *s = cJSON_PrintUnformatted(res);
    FILE *f = fopen(outp, "wb");
    int rc = f && s && fputs(s, f) >= 0 ? 0 : 1;
    if (f)
        fclose(f);
    free(s);
    cJSON_Delete(res);
    cJSON_Delete(cases);
    return rc;
}

/* n alternating user/assistant turns (no system turn: Gemma refuses one). */
static cJSON *conversation(int n)
{
    cJSON *vars = cJSON_CreateObject();
    cJSON *msgs = cJSON_AddArrayToObject(vars, "messages");
    cJSON *m;
    char buf[512];
    for (int i = 0; i < n; i++) {
        m = cJSON_CreateObject();
        bool user = i % 2 == 0;
        cJSON_AddStringToObject(m, "role", user ? "user" : "assistant");
        snprintf(buf, sizeof buf,
                 "%s %d: the quick brown fox jumps over the lazy dog; "
                 "ünïcödé 中文 text, some code `for (int i = 0; i < n; i++)` and more words to make it longer.",
                 user ? "Question" : "Answer", i);
        cJSON_AddStringToObject(m, "content", buf);
        cJSON_AddItemToArray(msgs, m);
    }
    cJSON_AddBoolToObject(vars, "add_generation_prompt", true);
    cJSON_AddStringToObject(vars, "bos_token", "<s>");
    cJSON_AddStringToObject(vars, "eos_token", "</s>");
    return vars;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--cases"))
        return run_cases(argv[2], argv[3]);
    const char *dir = NULL;
    int n = 200, reps = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            dir = argv[i];
    }
    if (!dir) {
        DIR *d = opendir("../shared/fixtures/templates");
        dir = d ? "../shared/fixtures/templates" : "tests/data/templates";
        if (d)
            closedir(d);
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "bench_jinja: cannot open %s\n", dir);
        return 2;
    }
    cJSON *vars = conversation(n);
    printf("%-45s %9s %11s %10s %9s\n", "template", "parse ms", "render ms", "renders/s", "MB/s");
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 7 || strcmp(de->d_name + l - 6, ".jinja"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len;
        char *src = read_file(path, &len);
        if (!src)
            continue;
        jinja_error e;
        double t0 = now_s();
        jinja_template *t = jinja_parse(src, len, &e);
        double tp = now_s() - t0;
        if (!t) {
            printf("%-45s parse error: %s\n", de->d_name, e.msg);
            free(src);
            continue;
        }
        size_t bytes = 0;
        bool ok = true;
        t0 = now_s();
        for (int r = 0; r < reps && ok; r++) {
            size_t ol = 0;
            char *out = jinja_render(t, vars, NULL, &ol, &e);
            ok = out != NULL;
            bytes += ol;
            free(out);
        }
        double tr = now_s() - t0;
        if (ok)
            printf("%-45s %9.3f %11.3f %10.1f %9.1f\n", de->d_name, tp * 1e3, tr * 1e3 / reps, reps / tr,
                   bytes / tr / 1e6);
        else
            printf("%-45s render error: %s\n", de->d_name, e.msg);
        jinja_free(t);
        free(src);
    }
    closedir(d);
    cJSON_Delete(vars);
    return 0;
}
