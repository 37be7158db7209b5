/* chat_page: the parts that run without a terminal: the allowed ranges of
 * the sampling settings (/set; ui/chat_page.h). */
#include <math.h>
#include <string.h>

#include <stdio.h>

#include "chat_page.h"
#include "testmodel.h"
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

/* The token inspector's form of a token: '"' as \", a new line as ⏎
 * (the synthetic SentencePiece vocabulary: <0xNN> byte tokens from id 3). */
static void test_token_text(void **state)
{
    (void)state;
    const char *path = tu_tmp_path("chat_page_vocab");
    testmodel_params p = testmodel_default_params();
    p.n_layer = 1;
    p.n_embd = 64;
    p.n_ff = 64;
    char msg[512];
    if (testmodel_write(&p, path, msg, sizeof msg))
        fail_msg("testmodel_write: %s", msg);
    gguf_error err;
    gguf_file *f = gguf_open(path, &err);
    assert_non_null(f);
    tok_error te;
    tok_vocab *v = tok_open(f, &te);
    assert_non_null(v);
    char buf[64];
    chat_page_token_text(v, 3 + '\n', buf, sizeof buf);
    assert_string_equal(buf, "\"\xe2\x8f\x8e\"");
    chat_page_token_text(v, 3 + '"', buf, sizeof buf);
    assert_string_equal(buf, "\"\\\"\"");
    chat_page_token_text(v, 3 + 'a', buf, sizeof buf);
    assert_string_equal(buf, "\"a\"");
    chat_page_token_text(v, 3 + 0x1b, buf, sizeof buf);   /* an escape never reaches the terminal */
    assert_null(strchr(buf, 0x1b));
    tok_close(v);
    gguf_close(f);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setting_ranges),
        cmocka_unit_test(test_token_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
