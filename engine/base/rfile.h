/* rfile: the one read-whole-file of the engine and the commands. Never
 * prints. */
#ifndef GGSCOPE_RFILE_H
#define GGSCOPE_RFILE_H

#include <stddef.h>

typedef enum {
    RFILE_OK = 0,
    RFILE_EOPEN,    /* cannot open (err: errno) */
    RFILE_ENOTREG,  /* not a regular file, and RFILE_REGULAR was asked */
    RFILE_ETOOBIG,  /* more than `limit` bytes */
    RFILE_EREAD,    /* a read failed (err: errno) */
    RFILE_ENOMEM,   /* out of memory */
} rfile_status;

enum { RFILE_REGULAR = 1 }; /* refuse anything but a regular file (FIFO, device, folder) */

/* Read all of `path` ("-": standard input) into a malloc'd buffer with a NUL
 * after the last byte; *len gets the byte count (the data may hold NULs).
 * The file is opened with O_NONBLOCK and checked with fstat before any read,
 * so RFILE_REGULAR refuses a FIFO without blocking on it. At most `limit`
 * bytes (0: no limit); a file that grows past it while read is refused too.
 * Returns NULL with *st (and *err, an errno where one applies) on failure;
 * st and err may be NULL. */
char *rfile_read(const char *path, size_t limit, unsigned flags, size_t *len, rfile_status *st, int *err);

/* A short text for a status ("not a regular file", "too large", ...). */
const char *rfile_strerror(rfile_status st, int err);

#endif
