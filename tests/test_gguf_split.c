/* GGUF split models (shard sets on disk and in memory, hostile sets) and
 * the naming convention. The reader and writer: test_gguf.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggtype.h"
#include "gguf.h"
#include "testutil.h"

/* ---------------------------------------------------------------- split models */

static void write_shard(const char *dir, int no, int count, int n_total, const char *tname, uint32_t claim_no)
{
    gguf_writer *w = gguf_writer_new(32);
    if (no == 0)
        gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_u16(w, "split.no", (uint16_t)claim_no);
    gguf_writer_set_u16(w, "split.count", (uint16_t)count);
    gguf_writer_set_i32(w, "split.tensors.count", n_total);
    float d[32] = {0};
    d[0] = (float)no;
    uint64_t ne[1] = {32};
    gguf_writer_add_tensor(w, tname, GGTYPE_F32, 1, ne, d);
    char path[700];
    snprintf(path, sizeof path, "%s/Model-7B-v1.0-F32-%05d-of-%05d.gguf", dir, no + 1, count);
    assert_int_equal(gguf_writer_write(w, path, NULL, NULL), GGUF_OK);
    gguf_writer_free(w);
}

/* A shard file named BASE-NNNNN-of-MMMMM.gguf that claims split.no / split.count. */
static void write_split(const char *dir, const char *base, int name_no, int name_count, int claim_no, int claim_count,
                        const char *tname)
{
    gguf_writer *w = gguf_writer_new(32);
    assert_int_equal(gguf_writer_set_u16(w, "split.no", (uint16_t)claim_no), GGUF_OK);
    assert_int_equal(gguf_writer_set_u16(w, "split.count", (uint16_t)claim_count), GGUF_OK);
    float d[32] = {0};
    uint64_t ne[1] = {32};
    assert_int_equal(gguf_writer_add_tensor(w, tname, GGTYPE_F32, 1, ne, d), GGUF_OK);
    char path[700];
    snprintf(path, sizeof path, "%s/%s-%05d-of-%05d.gguf", dir, base, name_no, name_count);
    assert_int_equal(gguf_writer_write(w, path, NULL, NULL), GGUF_OK);
    gguf_writer_free(w);
}

/* Open dir/name; expect a split error in `in` (a file name part) whose message has `needle`. */
static void expect_split_error(const char *dir, const char *name, const char *in, const char *needle)
{
    char p[1100], line[1400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    gguf_error err;
    gguf_file *f = gguf_open(p, &err);
    gguf_error_format(&err, line, sizeof line);
    print_message("  %-28s -> %s\n", name, line);
    if (f) {
        gguf_close(f);
        fail_msg("%s opened", name);
    }
    assert_int_equal(err.code, GGUF_ESPLIT);
    assert_non_null(strstr(err.path, in));
    if (!strstr(err.msg, needle) || !strstr(err.msg, "(expected"))
        fail_msg("expected '%s' and '(expected' in '%s'", needle, err.msg);
    assert_null(strchr(line, '\n'));
}

/* Shard sets that do not add up are refused without recursion: a file that
 * names itself as a later shard, mixed sets, disagreeing names and counts. */
static void test_split_hostile(void **state)
{
    (void)state;
    char dir[512], cmd[1200];
    snprintf(dir, sizeof dir, "%s", tu_tmp_path("splith"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    assert_int_equal(system(cmd), 0);
    /* shard 1 of 2 by name says split.no = 1: it used to reopen itself forever */
    write_split(dir, "self", 1, 2, 1, 2, "a");
    expect_split_error(dir, "self-00001-of-00002.gguf", "self-00001-of-00002", "split.no");
    write_split(dir, "self9", 1, 2, 9, 2, "a");
    expect_split_error(dir, "self9-00001-of-00002.gguf", "self9-00001-of-00002", "split.no");
    /* opened from shard 2, whose shard 1 also claims to be shard 2 */
    write_split(dir, "both", 1, 2, 1, 2, "a");
    write_split(dir, "both", 2, 2, 1, 2, "b");
    expect_split_error(dir, "both-00002-of-00002.gguf", "both-00001-of-00002", "split.no");
    /* sets do not mix: "of 3" by name, split.count = 2, and another set's shard 2 of 2 */
    write_split(dir, "mm", 1, 3, 0, 2, "a");
    write_split(dir, "mm", 2, 2, 1, 2, "b");
    expect_split_error(dir, "mm-00001-of-00003.gguf", "mm-00001-of-00003", "split.count");
    expect_split_error(dir, "mm-00002-of-00002.gguf", "mm-00001-of-00002", "missing");
    /* a later shard with another count, another index */
    write_split(dir, "bc", 1, 2, 0, 2, "a");
    write_split(dir, "bc", 2, 2, 1, 3, "b");
    expect_split_error(dir, "bc-00001-of-00002.gguf", "bc-00002-of-00002", "split.count");
    write_split(dir, "bn", 1, 2, 0, 2, "a");
    write_split(dir, "bn", 2, 2, 0, 2, "b");
    expect_split_error(dir, "bn-00001-of-00002.gguf", "bn-00002-of-00002", "split.no");
    /* shard 2 is the same file as shard 1 (a symbolic link) */
    write_split(dir, "ln", 1, 2, 0, 2, "a");
    snprintf(cmd, sizeof cmd, "ln -s ln-00001-of-00002.gguf '%s/ln-00002-of-00002.gguf'", dir);
    assert_int_equal(system(cmd), 0);
    expect_split_error(dir, "ln-00001-of-00002.gguf", "ln-00002-of-00002", "same file");
    /* split.count = 0; split.no past split.count */
    write_split(dir, "z", 1, 1, 0, 0, "a");
    expect_split_error(dir, "z-00001-of-00001.gguf", "z-00001-of-00001", "split.count");
    write_split(dir, "o", 1, 1, 1, 1, "a");
    expect_split_error(dir, "o-00001-of-00001.gguf", "o-00001-of-00001", "split.no");
    /* a one-shard set named as shard 1 of 2 */
    write_split(dir, "one", 1, 2, 0, 1, "a");
    expect_split_error(dir, "one-00001-of-00002.gguf", "one-00001-of-00002", "split.count");
    /* a consistent two-shard set still opens, from either end */
    write_split(dir, "ok", 1, 2, 0, 2, "a");
    write_split(dir, "ok", 2, 2, 1, 2, "b");
    for (int k = 1; k <= 2; k++) {
        char p[1100];
        snprintf(p, sizeof p, "%s/ok-%05d-of-00002.gguf", dir, k);
        gguf_error err;
        gguf_file *f = gguf_open(p, &err);
        assert_non_null(f);
        assert_int_equal(gguf_shard_count(f), 2);
        assert_non_null(gguf_find_tensor(f, "b"));
        gguf_close(f);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A split set held in memory: gguf_open_memfiles follows it exactly as
 * gguf_open follows files (the seam the split fuzzer drives). */
static uint8_t *mem_shard(int claim_no, int claim_count, const char *tname, size_t *size)
{
    gguf_writer *w = gguf_writer_new(32);
    assert_int_equal(gguf_writer_set_u16(w, "split.no", (uint16_t)claim_no), GGUF_OK);
    assert_int_equal(gguf_writer_set_u16(w, "split.count", (uint16_t)claim_count), GGUF_OK);
    float d[32] = {0};
    d[0] = (float)claim_no;
    uint64_t ne[1] = {32};
    assert_int_equal(gguf_writer_add_tensor(w, tname, GGTYPE_F32, 1, ne, d), GGUF_OK);
    uint8_t *out;
    assert_int_equal(gguf_writer_to_memory(w, &out, size), GGUF_OK);
    gguf_writer_free(w);
    return out;
}

static void test_memfiles(void **state)
{
    (void)state;
    size_t n0, n1, n2;
    uint8_t *s0 = mem_shard(0, 2, "a", &n0), *s1 = mem_shard(1, 2, "b", &n1), *self = mem_shard(1, 2, "c", &n2);
    gguf_memfile set[2] = {{"m-00001-of-00002.gguf", s0, n0}, {"m-00002-of-00002.gguf", s1, n1}};
    gguf_error err;
    for (int k = 0; k < 2; k++) {
        gguf_file *f = gguf_open_memfiles(set, 2, set[k].name, &err);
        assert_non_null(f);
        assert_int_equal(gguf_shard_count(f), 2);
        const gguf_tensor *t = gguf_find_tensor(f, "b");
        assert_non_null(t);
        assert_int_equal(t->shard, 1);
        float v;
        memcpy(&v, t->data, 4);
        assert_true(v == 1.0f);
        assert_string_equal(gguf_shard_path(f, 1), "m-00002-of-00002.gguf");
        gguf_close(f);
    }
    /* the second shard missing from the table */
    assert_null(gguf_open_memfiles(set, 1, set[0].name, &err));
    assert_int_equal(err.code, GGUF_ESPLIT);
    assert_non_null(strstr(err.msg, "missing"));
    /* the 71-byte-file attack, in memory: no recursion, one error */
    gguf_memfile bad[1] = {{"s-00001-of-00002.gguf", self, n2}};
    assert_null(gguf_open_memfiles(bad, 1, bad[0].name, &err));
    assert_int_equal(err.code, GGUF_ESPLIT);
    assert_non_null(strstr(err.msg, "(expected split.no 0)"));
    /* a name not in the table */
    assert_null(gguf_open_memfiles(set, 2, "nope.gguf", &err));
    assert_int_equal(err.code, GGUF_ENOTFOUND);
    free(s0);
    free(s1);
    free(self);
}

static void test_split(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_tmp_path("split"));
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    write_shard(dir, 0, 3, 3, "t0", 0);
    write_shard(dir, 1, 3, 3, "t1", 1);
    write_shard(dir, 2, 3, 3, "t2", 2);
    char p1[700], p2[700];
    snprintf(p1, sizeof p1, "%s/Model-7B-v1.0-F32-00001-of-00003.gguf", dir);
    snprintf(p2, sizeof p2, "%s/Model-7B-v1.0-F32-00002-of-00003.gguf", dir);
    gguf_error err;
    for (int k = 0; k < 2; k++) {
        gguf_file *f = gguf_open(k ? p2 : p1, &err); /* a later shard opens the whole set too */
        assert_non_null(f);
        assert_int_equal(gguf_shard_count(f), 3);
        assert_int_equal(gguf_tensor_count(f), 3);
        const gguf_tensor *t = gguf_find_tensor(f, "t2");
        assert_non_null(t);
        assert_int_equal(t->shard, 2);
        float v;
        memcpy(&v, t->data, 4);
        assert_true(v == 2.0f);
        gguf_close(f);
    }
    /* a mismatched shard */
    write_shard(dir, 1, 3, 3, "t1", 2);
    assert_null(gguf_open(p1, &err));
    assert_int_equal(err.code, GGUF_ESPLIT);
    assert_non_null(strstr(err.path, "00002-of-00003"));
    print_message("  mismatch: %s: %s\n", err.path, err.msg);
    /* a missing shard is named */
    unlink(p2);
    assert_null(gguf_open(p1, &err));
    assert_int_equal(err.code, GGUF_ESPLIT);
    assert_non_null(strstr(err.msg, "00002-of-00003.gguf"));
    print_message("  missing: %s\n", err.msg);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---------------------------------------------------------------- naming */

static void test_naming(void **state)
{
    (void)state;
    gguf_name_parts p;
    assert_true(gguf_parse_name("Mixtral-8x7B-v0.1-KQ2.gguf", &p));
    assert_string_equal(p.base_name, "Mixtral");
    assert_string_equal(p.size_label, "8x7B");
    assert_string_equal(p.fine_tune, "");
    assert_string_equal(p.version, "v0.1");
    assert_string_equal(p.encoding, "KQ2");
    assert_string_equal(p.type, "");
    assert_int_equal(p.shard_total, 0);

    assert_true(gguf_parse_name("/some/dir/Grok-100B-v1.0-Q4_0-00003-of-00009.gguf", &p));
    assert_string_equal(p.base_name, "Grok");
    assert_string_equal(p.size_label, "100B");
    assert_string_equal(p.version, "v1.0");
    assert_string_equal(p.encoding, "Q4_0");
    assert_int_equal(p.shard_num, 3);
    assert_int_equal(p.shard_total, 9);

    assert_true(gguf_parse_name("Hermes-2-Pro-Llama-3-8B-v1.0-F16.gguf", &p));
    assert_string_equal(p.base_name, "Hermes-2-Pro-Llama-3");
    assert_string_equal(p.size_label, "8B");
    assert_string_equal(p.fine_tune, "");
    assert_string_equal(p.version, "v1.0");
    assert_string_equal(p.encoding, "F16");

    assert_true(gguf_parse_name("Phi-3-mini-3.8B-ContextLength4k-instruct-v1.0.gguf", &p));
    assert_string_equal(p.base_name, "Phi-3-mini");
    assert_string_equal(p.size_label, "3.8B-ContextLength4k");
    assert_string_equal(p.fine_tune, "instruct");
    assert_string_equal(p.version, "v1.0");
    assert_string_equal(p.encoding, "");

    assert_false(gguf_parse_name("not-a-known-arrangement.gguf", &p));
    assert_false(p.valid);

    assert_true(gguf_parse_name("Llama-3-8B-v1.0-LoRA.gguf", &p));
    assert_string_equal(p.type, "LoRA");
    assert_string_equal(p.encoding, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_hostile),
        cmocka_unit_test(test_memfiles),
        cmocka_unit_test(test_naming),
    };
    return cmocka_run_group_tests_name("gguf_split", tests, NULL, NULL);
}
