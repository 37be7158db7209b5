/* chat_page: the parts that run without a terminal: the allowed ranges of
 * the sampling settings (/set; ui/chat_page.h). */
#include <math.h>
#include <string.h>

#include "chat_page.h"
#include "testutil.h"

static void test_setting_ranges(void **state)
{
    (void)state;
    char msg[128];
    static const struct {
        const char *name;
        double v;
        int rc;
        const char *msg;
    } cases[] = {
        {"temp", 0, 0, NULL},
        {"temp", 2.5, 0, NULL},
        {"temp", -0.01, -1, "temp must be >= 0 (got -0.01)"},
        {"top_k", 0, 0, NULL},
        {"top_k", -1, -1, "top_k must be >= 0 (0: all tokens) (got -1)"},
        {"top_p", 1, 0, NULL},
        {"top_p", 0, 0, NULL},
        {"top_p", 1.5, -1, "top_p must be in [0, 1] (got 1.5)"},
        {"min_p", -0.5, -1, "min_p must be in [0, 1] (got -0.5)"},
        {"min_p", 0.05, 0, NULL},
        {"repeat_penalty", 0, -1, "repeat_penalty must be > 0 (1: none) (got 0)"},
        {"repeat_penalty", 1.1, 0, NULL},
        {"seed", -5, 0, NULL},   /* not a ranged setting: chs_set checks it */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        msg[0] = 0;
        assert_int_equal(chat_page_check_setting(cases[i].name, cases[i].v, msg, sizeof msg), cases[i].rc);
        if (cases[i].msg)
            assert_string_equal(msg, cases[i].msg);
    }
    assert_int_equal(chat_page_check_setting("temp", NAN, msg, sizeof msg), -1);
    assert_int_equal(chat_page_check_setting("top_p", INFINITY, msg, sizeof msg), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setting_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
