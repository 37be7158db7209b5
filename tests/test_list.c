/* list: the shared cursor / scrolling behaviour of the panes (ui/list.h). */
#include <stdint.h>

#include "list.h"
#include "panel.h"
#include "testutil.h"

static list mk(uint64_t count, uint64_t page)
{
    list l = {0};
    list_set(&l, count, page);
    return l;
}

static void test_empty(void **state)
{
    (void)state;
    list l = mk(0, 10);
    int keys[] = {UIK_UP, UIK_DOWN, UIK_PGUP, UIK_PGDN, UIK_HOME, UIK_END, 'G', 'j', 'k'};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        assert_int_equal(list_key(&l, keys[i]), LIST_HANDLED);   /* a list key, nothing moves */
        assert_int_equal(l.cur, 0);
        assert_int_equal(l.top, 0);
    }
    assert_false(list_goto(&l, 5));
    assert_false(list_move(&l, -3));
    assert_false(list_scroll(&l, 4));
    assert_int_equal(list_max_top(&l), 0);
    assert_int_equal(list_key(&l, 'x'), LIST_IGNORED);
    l = mk(0, 0);
    assert_int_equal(l.page, 1);   /* a zero page counts as one row */
}

static void test_count_below_page(void **state)
{
    (void)state;
    list l = mk(3, 10);
    assert_int_equal(list_key(&l, UIK_PGDN), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.cur, 2);
    assert_int_equal(l.top, 0);   /* never scrolls: everything fits */
    assert_int_equal(list_key(&l, UIK_DOWN), LIST_HANDLED);   /* at the end: handled, not moved */
    assert_int_equal(l.cur, 2);
    assert_int_equal(list_key(&l, UIK_PGUP), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.cur, 0);
    assert_int_equal(list_key(&l, UIK_UP), LIST_HANDLED);
    assert_int_equal(list_key(&l, UIK_END), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.cur, 2);
    assert_int_equal(l.top, 0);
    assert_false(list_scroll(&l, 5));
}

static void test_up_down_keep_visible(void **state)
{
    (void)state;
    list l = mk(100, 10);
    for (int i = 0; i < 12; i++)
        assert_int_equal(list_key(&l, i % 2 ? 'j' : UIK_DOWN), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.cur, 12);
    assert_int_equal(l.top, 3);   /* the cursor on the last line shown */
    for (int i = 0; i < 10; i++)
        list_key(&l, 'k');
    assert_int_equal(l.cur, 2);
    assert_int_equal(l.top, 2);   /* ... and on the first */
}

static void test_pages(void **state)
{
    (void)state;
    list l = mk(100, 10);
    list_key(&l, UIK_PGDN);   /* a page is 9 rows: one row of the last page stays */
    assert_int_equal(l.cur, 9);
    assert_int_equal(l.top, 9);   /* the view scrolls along: the cursor keeps its line */
    list_key(&l, UIK_DOWN);
    list_key(&l, UIK_PGDN);
    assert_int_equal(l.cur, 19);
    assert_int_equal(l.top, 18);
    list_key(&l, UIK_PGUP);
    assert_int_equal(l.cur, 10);
    assert_int_equal(l.top, 9);
    for (int i = 0; i < 20; i++)
        list_key(&l, UIK_PGDN);
    assert_int_equal(l.cur, 99);
    assert_int_equal(l.top, 90);   /* never past the last page */
}

static void test_end_then_pgup(void **state)
{
    (void)state;
    list l = mk(100, 10);
    assert_int_equal(list_key(&l, 'G'), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.cur, 99);
    assert_int_equal(l.top, 90);
    assert_int_equal(list_key(&l, UIK_PGUP), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.cur, 90);
    assert_int_equal(l.top, 81);
    for (int i = 0; i < 20; i++)
        list_key(&l, UIK_PGUP);
    assert_int_equal(l.cur, 0);
    assert_int_equal(l.top, 0);
    assert_int_equal(list_key(&l, UIK_PGUP), LIST_HANDLED);
    assert_int_equal(list_key(&l, UIK_END), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(list_key(&l, UIK_HOME), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.cur, 0);
    assert_int_equal(l.top, 0);
}

static void test_goto(void **state)
{
    (void)state;
    list l = mk(50, 10);
    assert_true(list_goto(&l, 1000));   /* beyond the end: the last row */
    assert_int_equal(l.cur, 49);
    assert_int_equal(l.top, 40);
    assert_false(list_goto(&l, UINT64_MAX));
    assert_true(list_goto(&l, 20));
    assert_int_equal(l.top, 20);   /* moved the least: the row at the top */
    assert_true(list_move(&l, -1000));
    assert_int_equal(l.cur, 0);
    assert_true(list_move(&l, INT64_MAX));
    assert_int_equal(l.cur, 49);
    list_goto(&l, 25);
    list_center(&l);
    assert_int_equal(l.top, 20);
    list_goto(&l, 48);
    list_center(&l);
    assert_int_equal(l.top, 40);   /* centring stops at the last page */
}

static void test_shrink(void **state)
{
    (void)state;
    list l = mk(100, 10);
    list_key(&l, UIK_END);
    list_set(&l, 30, 10);   /* the rows went (a filter): the cursor stays on one */
    assert_int_equal(l.cur, 29);
    assert_int_equal(l.top, 20);
    list_set(&l, 30, 40);   /* the pane grew */
    assert_int_equal(l.top, 0);
}

static void test_scroll_only(void **state)
{
    (void)state;
    list l = mk(100, 10);
    assert_int_equal(list_scroll_key(&l, UIK_PGDN), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.top, 9);
    assert_int_equal(list_scroll_key(&l, UIK_END), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.top, 90);
    assert_int_equal(list_scroll_key(&l, 'j'), LIST_HANDLED);
    assert_int_equal(list_scroll_key(&l, UIK_PGUP), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.top, 81);
    assert_int_equal(list_scroll_key(&l, UIK_HOME), LIST_HANDLED | LIST_MOVED);
    assert_int_equal(l.top, 0);
    assert_int_equal(list_scroll_key(&l, 'k'), LIST_HANDLED);
    assert_int_equal(list_scroll_key(&l, 'q'), LIST_IGNORED);
    list s = mk(5, 10);
    assert_int_equal(list_scroll_key(&s, UIK_END), LIST_HANDLED);
    assert_int_equal(s.top, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),      cmocka_unit_test(test_count_below_page),
        cmocka_unit_test(test_up_down_keep_visible), cmocka_unit_test(test_pages),
        cmocka_unit_test(test_end_then_pgup), cmocka_unit_test(test_goto),
        cmocka_unit_test(test_shrink),     cmocka_unit_test(test_scroll_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
