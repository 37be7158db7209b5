/* afile: write a file atomically. The data goes to a temporary file created
 * with mkstemp (O_EXCL, unpredictable name) in the destination's folder,
 * named `.NAME.XXXXXX` for a destination NAME; afile_commit syncs it and
 * renames it into place, and any failure removes it. The previous file at the
 * destination stays untouched until the rename. No printing, no signals: a
 * caller that wants the temporary file removed on a signal reads `tmp`. */
#ifndef GGSCOPE_AFILE_H
#define GGSCOPE_AFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    AFILE_NONE = 0,  /* no failure */
    AFILE_CREATE,    /* creating the temporary file (err: errno of mkstemp) */
    AFILE_WRITE,     /* writing */
    AFILE_SYNC,      /* fsync or close */
    AFILE_RENAME,    /* renaming into place */
} afile_step;

typedef struct afile {
    int fd;          /* the temporary file, open for writing; -1 when closed */
    char *path;      /* the destination (a copy) */
    char *tmp;       /* the temporary file's path; NULL when none exists */
    afile_step step; /* the step that failed */
    int err;         /* its errno (ENOMEM when a copy could not be made) */
} afile;

/* Create the temporary file for `path`. Returns 0, or -1 with a->step and
 * a->err set (e.g. ENOENT: the folder does not exist). Either way, call
 * afile_close once done with `a`. */
int afile_open(afile *a, const char *path);

/* Write all n bytes (retrying short writes and EINTR). Returns 0, or -1 with
 * a->step = AFILE_WRITE and a->err set. */
int afile_write(afile *a, const void *p, uint64_t n);

/* fsync the temporary file (so that a later afile_commit has little left to
 * do). Returns 0, or -1 with a->step = AFILE_SYNC and a->err set. */
int afile_sync(afile *a);

/* Give the temporary file the usual permissions (0666 less the umask), sync,
 * close and rename it to the destination. Returns 0 (a->tmp becomes NULL), or
 * -1 with a->step and a->err set and the temporary file removed. */
int afile_commit(afile *a);

/* Close and remove the temporary file if it still exists; free the copies.
 * Accepts an afile that was never opened if it was zeroed, or one committed. */
void afile_close(afile *a);

/* The folder part of `path` ("." when it has none) into buf. Returns buf. */
const char *afile_dir(const char *path, char *buf, size_t cap);

/* Look for temporary files that an earlier, killed writer of `path` left:
 * entries `.NAME.XXXXXX` (six letters or digits) in its folder. Returns how
 * many there are and copies the first one's path (the folder made absolute,
 * then the name) into out. */
int afile_find_stale(const char *path, char *out, size_t cap);

/* Whether the paths a and b name the same existing file (same device and
 * inode: symlinks, hard links and `..` resolve). */
bool afile_same(const char *a, const char *b);

#endif
