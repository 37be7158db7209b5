/* afile: atomic writes (temporary file in the destination's folder, renamed
 * into place; removed on every failure), stale-file detection, same-file
 * detection; and gguf_writer_write's errno on a failed write. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "afile.h"
#include "gguf.h"
#include "testutil.h"

static char dir[512];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", tu_tmp_path("afile"));
    return mkdir(dir, 0755);
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    while (d && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    return rmdir(dir);
}

/* Entries of the test folder (not . and ..). */
static int n_entries(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void test_commit_replaces(void **state)
{
    (void)state;
    char path[1024], stale[1024];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    FILE *f = fopen(path, "wb");
    fputs("old", f);
    fclose(f);
    afile a;
    assert_int_equal(afile_open(&a, path), 0);
    /* the temporary file: .out.bin.XXXXXX beside the destination, seen as stale */
    assert_int_equal(strncmp(a.tmp, path, strlen(dir) + 1), 0);
    assert_int_equal(strncmp(a.tmp + strlen(dir) + 1, ".out.bin.", 9), 0);
    assert_int_equal(strlen(a.tmp + strlen(dir) + 1), strlen(".out.bin.XXXXXX"));
    assert_int_equal(afile_find_stale(path, stale, sizeof stale), 1);
    assert_string_equal(strrchr(stale, '/'), strrchr(a.tmp, '/'));
    assert_int_equal(afile_write(&a, "new!", 4), 0);
    size_t n;
    uint8_t *old = tu_read_file(path, &n);   /* untouched until the commit */
    assert_int_equal(n, 3);
    free(old);
    assert_int_equal(afile_commit(&a), 0);
    assert_null(a.tmp);
    afile_close(&a);
    uint8_t *b = tu_read_file(path, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(b, "new!", 4);
    free(b);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
    assert_int_equal(afile_find_stale(path, stale, sizeof stale), 0);
    assert_int_equal(n_entries(), 1);
}

static void test_close_removes(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/gone.bin", dir);
    afile a;
    assert_int_equal(afile_open(&a, path), 0);
    assert_int_equal(afile_write(&a, "abc", 3), 0);
    assert_int_equal(n_entries(), 1);
    afile_close(&a);
    assert_int_equal(n_entries(), 0);
    assert_int_equal(access(path, F_OK), -1);
}

static void test_missing_folder(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/no/such/out.bin", dir);
    afile a;
    assert_int_equal(afile_open(&a, path), -1);
    assert_int_equal(a.step, AFILE_CREATE);
    assert_int_equal(a.err, ENOENT);
    afile_close(&a);
    char d[1024];
    snprintf(path, sizeof path, "%s/no/such/out.bin", dir);
    char want[1024];
    snprintf(want, sizeof want, "%s/no/such", dir);
    assert_string_equal(afile_dir(path, d, sizeof d), want);
    assert_string_equal(afile_dir("x.gguf", d, sizeof d), ".");
    assert_string_equal(afile_dir("/x.gguf", d, sizeof d), "/");
}

/* A file-size limit makes write() fail with EFBIG, as a full disk fails with
 * ENOSPC: the failure is reported with its errno and nothing is left. */
static void test_write_error(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/big.bin", dir);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = 4096;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    static uint8_t block[65536];
    afile a;
    assert_int_equal(afile_open(&a, path), 0);
    int rc = afile_write(&a, block, sizeof block);
    afile_step step = a.step;
    int err = a.err;
    afile_close(&a);
    /* the writer: GGUF_EIO with errno set, no file left */
    gguf_writer *w = gguf_writer_new(32);
    uint64_t ne[1] = {16384};
    static float vals[16384];
    assert_int_equal(gguf_writer_add_tensor(w, "t", 0, 1, ne, vals), GGUF_OK);
    errno = 0;
    gguf_status gs = gguf_writer_write(w, path, NULL, NULL);
    int werr = errno;
    gguf_writer_free(w);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, oldsig);
    assert_int_equal(rc, -1);
    assert_int_equal(step, AFILE_WRITE);
    assert_int_equal(err, EFBIG);
    assert_int_equal(gs, GGUF_EIO);
    assert_int_equal(werr, EFBIG);
    assert_int_equal(n_entries(), 0);
}

static void test_same_and_stale(void **state)
{
    (void)state;
    char a[1024], b[1024], c[1024], dots[1024], other[1024], s[1024];
    snprintf(a, sizeof a, "%s/m.gguf", dir);
    snprintf(b, sizeof b, "%s/link.gguf", dir);
    snprintf(c, sizeof c, "%s/hard.gguf", dir);
    snprintf(other, sizeof other, "%s/other.gguf", dir);
    snprintf(dots, sizeof dots, "%s/../%s/m.gguf", dir, strrchr(dir, '/') + 1);
    fclose(fopen(a, "wb"));
    fclose(fopen(other, "wb"));
    assert_int_equal(symlink("m.gguf", b), 0);
    assert_int_equal(link(a, c), 0);
    assert_true(afile_same(a, a));
    assert_true(afile_same(a, b));
    assert_true(afile_same(c, a));
    assert_true(afile_same(dots, a));
    assert_false(afile_same(a, other));
    snprintf(s, sizeof s, "%s/missing.gguf", dir);
    assert_false(afile_same(a, s));
    /* stale names: .NAME. + six letters or digits, nothing else */
    const char *names[] = {".m.gguf.Ab3dE9", ".m.gguf.short", ".m.gguf.Ab3dE9x", "m.gguf.Ab3dE9", ".m.gguf.Ab-dE9",
                           ".xm.gguf.Ab3dE9"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(s, sizeof s, "%s/%s", dir, names[i]);
        fclose(fopen(s, "wb"));
    }
    char found[1024];
    assert_int_equal(afile_find_stale(a, found, sizeof found), 1);
    assert_string_equal(strrchr(found, '/'), "/.m.gguf.Ab3dE9");
    assert_true(found[0] == '/');   /* absolute */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_removes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_folder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_and_stale, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
