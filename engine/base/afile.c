/* afile: atomic file writes (see afile.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "afile.h"

static int fail(afile *a, afile_step step, int err)
{
    a->step = step;
    a->err = err;
    return -1;
}

const char *afile_dir(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, cap, ".");
    else if (slash == path)
        snprintf(buf, cap, "/");
    else
        snprintf(buf, cap, "%.*s", (int)(slash - path), path);
    return buf;
}

int afile_open(afile *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->fd = -1;
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t dl = (size_t)(name - path), nl = strlen(name);
    if (nl == 0)
        return fail(a, AFILE_CREATE, EISDIR);
    a->path = strdup(path);
    char *tmp = malloc(dl + nl + 16);
    if (!a->path || !tmp) {
        free(tmp);
        return fail(a, AFILE_CREATE, ENOMEM);
    }
    memcpy(tmp, path, dl);
    snprintf(tmp + dl, nl + 16, ".%s.XXXXXX", name);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return fail(a, AFILE_CREATE, e);
    }
    a->fd = fd;
    a->tmp = tmp;
    return 0;
}

int afile_write(afile *a, const void *p, uint64_t n)
{
    const uint8_t *c = p;
    while (n > 0) {
        ssize_t k = write(a->fd, c, n > (1u << 30) ? (1u << 30) : (size_t)n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return fail(a, AFILE_WRITE, errno);
        }
        if (k == 0)
            return fail(a, AFILE_WRITE, EIO);
        c += k;
        n -= (uint64_t)k;
    }
    return 0;
}

int afile_sync(afile *a)
{
    if (fsync(a->fd) != 0)
        return fail(a, AFILE_SYNC, errno);
    return 0;
}

int afile_commit(afile *a)
{
    mode_t mask = umask(0);
    umask(mask);
    int rc = 0;
    if (fchmod(a->fd, 0666 & ~mask) != 0 || fsync(a->fd) != 0)
        rc = fail(a, AFILE_SYNC, errno);
    if (close(a->fd) != 0 && rc == 0)
        rc = fail(a, AFILE_SYNC, errno);
    a->fd = -1;
    if (rc == 0 && rename(a->tmp, a->path) != 0)
        rc = fail(a, AFILE_RENAME, errno);
    if (rc != 0)
        return rc;   /* afile_close removes the temporary file */
    free(a->tmp);
    a->tmp = NULL;
    return 0;
}

void afile_close(afile *a)
{
    if (a->fd >= 0)
        close(a->fd);
    if (a->tmp)
        unlink(a->tmp);
    free(a->tmp);
    free(a->path);
    a->fd = -1;
    a->tmp = NULL;
    a->path = NULL;
}

static bool is_stale_name(const char *entry, const char *name, size_t nl)
{
    if (entry[0] != '.' || strncmp(entry + 1, name, nl) != 0 || entry[1 + nl] != '.')
        return false;
    const char *x = entry + 2 + nl;
    for (int i = 0; i < 6; i++)
        if (!((x[i] >= 'a' && x[i] <= 'z') || (x[i] >= 'A' && x[i] <= 'Z') || (x[i] >= '0' && x[i] <= '9')))
            return false;
    return x[6] == 0;
}

int afile_find_stale(const char *path, char *out, size_t cap)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t nl = strlen(name);
    if (cap)
        out[0] = 0;
    if (nl == 0)
        return 0;
    DIR *d = opendir(afile_dir(path, dir, sizeof dir));
    if (!d)
        return 0;
    char *abs = realpath(dir, NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_stale_name(e->d_name, name, nl))
            continue;
        if (n++ == 0 && cap)
            snprintf(out, cap, "%s/%s", abs ? abs : dir, e->d_name);
    }
    free(abs);
    closedir(d);
    return n;
}

bool afile_same(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
