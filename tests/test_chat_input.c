/* chat_input: the chat's line editor (ui/chat_input.h), driven by keys. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_input.h"
#include "panel.h"
#include "testutil.h"

static void type(chat_input *in, const char *s)
{
    for (; *s; s++)
        assert_true(chat_input_key(in, (unsigned char)*s));
}

static void test_edit(void **state)
{
    (void)state;
    chat_input in;
    assert_int_equal(chat_input_init(&in), 0);
    assert_string_equal(in.buf, "");
    type(&in, "hello world");
    assert_true(chat_input_key(&in, UIK_CTRL('w')));
    assert_string_equal(in.buf, "hello ");
    assert_true(chat_input_key(&in, UIK_HOME));
    assert_int_equal(in.cur, 0);
    assert_true(chat_input_key(&in, UIK_DC));
    assert_string_equal(in.buf, "ello ");
    assert_true(chat_input_key(&in, UIK_END));
    assert_true(chat_input_key(&in, UIK_BACKSPACE));
    assert_string_equal(in.buf, "ello");
    assert_true(chat_input_key(&in, 0xe9));   /* é: two bytes, one Backspace */
    assert_string_equal(in.buf, "ello\xc3\xa9");
    assert_true(chat_input_key(&in, UIK_LEFT));
    assert_int_equal(in.cur, 4);
    assert_true(chat_input_key(&in, UIK_RIGHT));
    assert_true(chat_input_key(&in, UIK_BACKSPACE));
    assert_string_equal(in.buf, "ello");
    assert_false(chat_input_key(&in, UIK_CTRL('x')));   /* not an editing key */
    assert_false(chat_input_key(&in, UIK_PGUP));
    assert_true(chat_input_key(&in, UIK_CTRL('u')));
    assert_int_equal(in.len, 0);
    chat_input_free(&in);
}

static void test_lines_and_history(void **state)
{
    (void)state;
    chat_input in;
    assert_int_equal(chat_input_init(&in), 0);
    chat_input_history_add(&in, "first");
    chat_input_history_add(&in, "second");
    chat_input_history_add(&in, "second");   /* a repeat is kept once */
    assert_int_equal(in.nhist, 2);
    type(&in, "ab");
    assert_true(chat_input_key(&in, UIK_ALT('\n')));
    type(&in, "cdef");
    assert_int_equal(chat_input_rows(&in, 6), 2);
    assert_int_equal(chat_input_rows(&in, 1), 1);
    assert_true(chat_input_key(&in, UIK_UP));   /* the line above, same column (clamped) */
    assert_int_equal(in.cur, 2);
    assert_true(chat_input_key(&in, UIK_UP));   /* from the first line: the history */
    assert_string_equal(in.buf, "second");
    assert_true(chat_input_key(&in, UIK_UP));
    assert_string_equal(in.buf, "first");
    assert_true(chat_input_key(&in, UIK_UP));   /* the oldest stays */
    assert_string_equal(in.buf, "first");
    assert_true(chat_input_key(&in, UIK_DOWN));
    assert_true(chat_input_key(&in, UIK_DOWN));
    assert_string_equal(in.buf, "ab\ncdef");   /* back to the text being typed */
    chat_input_free(&in);
}

static void test_paste(void **state)
{
    (void)state;
    chat_input in;
    assert_int_equal(chat_input_init(&in), 0);
    assert_true(chat_input_key(&in, UIK_PASTE_BEGIN));
    assert_true(chat_input_key(&in, 'a'));
    assert_true(chat_input_key(&in, '\n'));   /* kept while pasting */
    assert_true(chat_input_key(&in, '\t'));
    assert_true(chat_input_key(&in, UIK_UP));  /* swallowed */
    assert_true(chat_input_key(&in, UIK_PASTE_END));
    assert_false(in.pasting);
    assert_string_equal(in.buf, "a\n\t");
    chat_input_set(&in, "x");
    assert_int_equal(in.cur, 1);
    chat_input_insert(&in, "yz", 2);
    assert_string_equal(in.buf, "xyz");
    chat_input_free(&in);
}

static void test_emacs_keys(void **state)
{
    (void)state;
    chat_input in;
    assert_int_equal(chat_input_init(&in), 0);
    type(&in, "hello brave new world");
    assert_true(chat_input_key(&in, UIK_ALT('b')));   /* to "world" */
    assert_int_equal(in.cur, 16);
    assert_true(chat_input_key(&in, UIK_ALT('b')));   /* to "new" */
    assert_int_equal(in.cur, 12);
    assert_true(chat_input_key(&in, UIK_CTRL('k')));  /* to the end of the line */
    assert_string_equal(in.buf, "hello brave ");
    assert_true(chat_input_key(&in, UIK_CTRL('a')));
    assert_true(chat_input_key(&in, UIK_ALT('f')));   /* after "hello" */
    assert_int_equal(in.cur, 5);
    assert_true(chat_input_key(&in, UIK_ALT('f')));   /* after "brave" */
    assert_int_equal(in.cur, 11);
    assert_true(chat_input_key(&in, UIK_ALT('f')));   /* the end */
    assert_int_equal(in.cur, 12);
    /* Ctrl+K stops at the end of the line of a multi-line text */
    chat_input_set(&in, "one\ntwo");
    assert_true(chat_input_key(&in, UIK_UP));
    assert_true(chat_input_key(&in, UIK_CTRL('a')));
    assert_true(chat_input_key(&in, UIK_CTRL('k')));
    assert_string_equal(in.buf, "\ntwo");
    chat_input_free(&in);
}

static void test_history_file(void **state)
{
    (void)state;
    const char *path = tu_tmp_path("chat_history");
    unlink(path);
    chat_input in;
    assert_int_equal(chat_input_init(&in), 0);
    assert_int_equal(chat_input_history_load(&in, path), 0);   /* no file yet: empty */
    assert_int_equal(in.nhist, 0);
    const char *e[] = {"first", "two\nlines", "back\\slash \\n literal", "last"};
    for (int i = 0; i < 4; i++) {
        chat_input_history_add(&in, e[i]);
        assert_int_equal(chat_input_history_save(&in, path, e[i]), 0);
    }
    chat_input_free(&in);
    assert_int_equal(chat_input_init(&in), 0);
    assert_int_equal(chat_input_history_load(&in, path), 0);
    assert_int_equal(in.nhist, 4);
    for (int i = 0; i < 4; i++)
        assert_string_equal(in.hist[i], e[i]);
    assert_true(chat_input_key(&in, UIK_UP));   /* the last entry of the last run */
    assert_string_equal(in.buf, "last");
    chat_input_free(&in);
    /* only the last CHAT_INPUT_HIST_KEEP entries are kept; a file past twice that is rewritten */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 2 * CHAT_INPUT_HIST_KEEP + 10; i++)
        fprintf(f, "entry %d\n", i);
    fclose(f);
    assert_int_equal(chat_input_init(&in), 0);
    assert_int_equal(chat_input_history_load(&in, path), 0);
    assert_int_equal(in.nhist, CHAT_INPUT_HIST_KEEP);
    assert_string_equal(in.hist[in.nhist - 1], "entry 2009");
    chat_input_free(&in);
    size_t n;
    char *t = (char *)tu_read_file(path, &n);
    assert_non_null(t);
    assert_true(!strncmp(t, "entry 1010\n", 11));
    free(t);
    unlink(path);
}

int main(void)
{
    setlocale(LC_ALL, "C.UTF-8");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit),
        cmocka_unit_test(test_lines_and_history),
        cmocka_unit_test(test_paste),
        cmocka_unit_test(test_emacs_keys),
        cmocka_unit_test(test_history_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
