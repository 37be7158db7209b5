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
