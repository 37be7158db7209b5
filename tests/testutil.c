#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tu_shared(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("GGSCOPE_SHARED");
    if (!root)
        root = "../shared";
    /* ../shared is there when its index is: an empty folder (CI's run "as a
     * user's clone sees it") counts as absent */
    struct stat st;
    snprintf(buf, sizeof buf, "%s/README.md", root);
    if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode) || stat(buf, &st) != 0)
        return NULL;
    snprintf(buf, sizeof buf, "%s/%s", root, rel);
    return buf;
}

uint8_t *tu_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return NULL;
    }
    long n = ftell(f);
    rewind(f);
    uint8_t *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        if (size)
            *size = (size_t)n;
    }
    return buf;
}

const char *tu_tmp_path(const char *tag)
{
    static char buf[4096];
    const char *dir = getenv("TMPDIR");
    snprintf(buf, sizeof buf, "%s/ggscope-test-%ld-%s", dir ? dir : "/tmp", (long)getpid(), tag);
    return buf;
}

const char *tu_bin(void)
{
    return getenv("GGSCOPE_BIN");
}

tu_model *tu_model_open(const testmodel_params *p, const char *tag)
{
    tu_model *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    if (snprintf(fx->path, sizeof fx->path, "%s", tu_tmp_path(tag)) >= (int)sizeof fx->path)
        fail_msg("temporary path too long: %s", tu_tmp_path(tag));
    char msg[512];
    if (testmodel_write(p, fx->path, msg, sizeof msg))
        fail_msg("testmodel_write: %s", msg);
    gguf_error err;
    fx->f = gguf_open(fx->path, &err);
    assert_non_null(fx->f);
    model_status st;
    fx->m = model_load(fx->f, &st, msg, sizeof msg);
    if (!fx->m)
        fail_msg("model_load: %s", msg);
    return fx;
}

void tu_model_close(tu_model *fx)
{
    if (!fx)
        return;
    model_free(fx->m);
    gguf_close(fx->f);
    remove(fx->path);
    free(fx);
}
