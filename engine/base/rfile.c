#include "rfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *fail(rfile_status *st, int *err, rfile_status s, int e)
{
    if (st)
        *st = s;
    if (err)
        *err = e;
    return NULL;
}

char *rfile_read(const char *path, size_t limit, unsigned flags, size_t *len, rfile_status *st, int *err)
{
    if (len)
        *len = 0;
    int is_stdin = !strcmp(path, "-");
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return fail(st, err, RFILE_EOPEN, errno);
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        if (!is_stdin)
            close(fd);
        return fail(st, err, RFILE_EOPEN, e);
    }
    if ((flags & RFILE_REGULAR) && !S_ISREG(sb.st_mode)) {
        if (!is_stdin)
            close(fd);
        return fail(st, err, RFILE_ENOTREG, 0);
    }
    if (!is_stdin) {   /* reads block as usual from here on (a FIFO asked for) */
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
            (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    }
    if (limit && S_ISREG(sb.st_mode) && (unsigned long long)sb.st_size > limit) {
        if (!is_stdin)
            close(fd);
        return fail(st, err, RFILE_ETOOBIG, 0);
    }
    size_t cap = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (size_t)sb.st_size + 1 : 4096, n = 0;
    if (limit && cap > limit + 1)
        cap = limit + 1;
    char *buf = malloc(cap + 1);
    rfile_status bad = RFILE_OK;
    int e = 0;
    while (buf) {
        if (n == cap) {
            if (limit && n > limit) {
                bad = RFILE_ETOOBIG;
                break;
            }
            size_t nc = cap > ((size_t)-1) / 4 ? 0 : cap * 2;
            if (limit && nc > limit + 1)
                nc = limit + 1;
            char *nb = nc ? realloc(buf, nc + 1) : NULL;
            if (!nb) {
                bad = RFILE_ENOMEM;
                break;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            bad = RFILE_EREAD;
            e = errno;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (!is_stdin)
        close(fd);
    if (!buf)
        return fail(st, err, RFILE_ENOMEM, ENOMEM);
    if (bad == RFILE_OK && limit && n > limit)
        bad = RFILE_ETOOBIG;
    if (bad != RFILE_OK) {
        free(buf);
        return fail(st, err, bad, e);
    }
    buf[n] = 0;
    if (len)
        *len = n;
    if (st)
        *st = RFILE_OK;
    if (err)
        *err = 0;
    return buf;
}

const char *rfile_strerror(rfile_status st, int err)
{
    switch (st) {
    case RFILE_OK: return "ok";
    case RFILE_EOPEN: return err ? strerror(err) : "cannot open";
    case RFILE_ENOTREG: return "not a regular file";
    case RFILE_ETOOBIG: return "too large";
    case RFILE_EREAD: return err ? strerror(err) : "read error";
    case RFILE_ENOMEM: return "out of memory";
    }
    return "?";
}
