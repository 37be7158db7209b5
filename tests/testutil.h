/* Helpers shared by the cmocka tests. */
#ifndef GGSCOPE_TESTUTIL_H
#define GGSCOPE_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

/* Path of `rel` inside ../shared ($GGSCOPE_SHARED), or NULL when ../shared is
 * absent (no such folder, or one without its README.md index, e.g. empty)
 * (the caller then skips visibly with TU_SKIP_NO_SHARED). Static buffer. */
const char *tu_shared(const char *rel);

/* Skip the current test, saying why on stdout. */
#define TU_SKIP_NO_SHARED()                                                        \
    do {                                                                           \
        print_message("SKIP: ../shared is absent; this test needs it\n");          \
        skip();                                                                    \
    } while (0)

/* Read a whole file into a malloc'd buffer (NUL-terminated); NULL on error. */
uint8_t *tu_read_file(const char *path, size_t *size);

/* A temporary path under $TMPDIR (or /tmp) unique to this process + tag. Static buffer. */
const char *tu_tmp_path(const char *tag);

/* Path of the ggscope binary under test ($GGSCOPE_BIN), or NULL. */
const char *tu_bin(void);

#endif
