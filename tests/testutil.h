/* Helpers shared by the cmocka tests. */
#ifndef GGSCOPE_TESTUTIL_H
#define GGSCOPE_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "gguf.h"
#include "model.h"
#include "testmodel.h"

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

/* A model that testmodel wrote to a temporary file, opened and bound. */
typedef struct {
    char path[512];
    gguf_file *f;
    model *m;
} tu_model;

/* Writes `p` to tu_tmp_path(tag), opens and loads it; fails the test on any
 * error. The caller closes it with tu_model_close. */
tu_model *tu_model_open(const testmodel_params *p, const char *tag);

/* Frees the model, closes and removes the file, frees `fx` (NULL: nothing). */
void tu_model_close(tu_model *fx);

#endif
