/* base/rfile: whole files read, NULs kept, limits, FIFOs refused without
 * blocking, errors with their cause. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rfile.h"
#include "testutil.h"

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_regular(void **state)
{
    (void)state;
    const char *p = tu_tmp_path("rfile-regular");
    static const char data[] = "ab\0cd";   /* a NUL inside is kept */
    write_bytes(p, data, 5);
    size_t n = 99;
    rfile_status st;
    char *b = rfile_read(p, 0, RFILE_REGULAR, &n, &st, NULL);
    assert_non_null(b);
    assert_int_equal(st, RFILE_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(b, data, 5);
    assert_int_equal(b[5], 0);
    free(b);
    /* empty file: an empty string */
    write_bytes(p, "", 0);
    b = rfile_read(p, 0, 0, &n, &st, NULL);
    assert_non_null(b);
    assert_int_equal(n, 0);
    assert_int_equal(b[0], 0);
    free(b);
    unlink(p);
}

static void test_limit(void **state)
{
    (void)state;
    const char *p = tu_tmp_path("rfile-limit");
    char big[10000];
    memset(big, 'x', sizeof big);
    write_bytes(p, big, sizeof big);
    size_t n;
    rfile_status st;
    assert_null(rfile_read(p, 9999, 0, &n, &st, NULL));
    assert_int_equal(st, RFILE_ETOOBIG);
    char *b = rfile_read(p, 10000, 0, &n, &st, NULL);   /* exactly the limit is fine */
    assert_non_null(b);
    assert_int_equal(n, 10000);
    free(b);
    unlink(p);
}

static void test_errors(void **state)
{
    (void)state;
    rfile_status st;
    int e = 0;
    assert_null(rfile_read("/nonexistent/rfile-test", 0, 0, NULL, &st, &e));
    assert_int_equal(st, RFILE_EOPEN);
    assert_int_equal(e, ENOENT);
    assert_string_equal(rfile_strerror(st, e), strerror(ENOENT));
    /* a folder and a FIFO are refused with RFILE_REGULAR, the FIFO without
     * waiting for a writer (the test would hang otherwise) */
    assert_null(rfile_read("/tmp", 0, RFILE_REGULAR, NULL, &st, &e));
    assert_int_equal(st, RFILE_ENOTREG);
    const char *fifo = tu_tmp_path("rfile-fifo");
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_null(rfile_read(fifo, 0, RFILE_REGULAR, NULL, &st, &e));
    assert_int_equal(st, RFILE_ENOTREG);
    assert_string_equal(rfile_strerror(st, e), "not a regular file");
    unlink(fifo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
