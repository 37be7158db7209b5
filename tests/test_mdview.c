/* mdview: Markdown laid out for a terminal (ui/mdview.h): every element at
 * 80 and 120 columns, escaping, and streaming (incremental = from scratch,
 * and the finished part is not parsed again). */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mdview.h"
#include "testutil.h"

/* The lines as text, '\n' after each. Static buffer. */
static const char *dump(const mdview *v)
{
    static char out[65536];
    size_t k = 0;
    const char *t = mdview_text(v);
    for (size_t i = 0; i < mdview_lines(v); i++) {
        size_t n;
        const mdview_seg *s = mdview_line(v, i, &n);
        for (size_t j = 0; j < n && k + s[j].len + 2 < sizeof out; j++) {
            memcpy(out + k, t + s[j].off, s[j].len);
            k += s[j].len;
        }
        out[k++] = '\n';
    }
    out[k] = 0;
    return out;
}

/* Line i as text. Static buffer. */
static const char *line(const mdview *v, size_t i)
{
    static char out[4096];
    size_t n, k = 0;
    assert_true(i < mdview_lines(v));
    const mdview_seg *s = mdview_line(v, i, &n);
    for (size_t j = 0; j < n && k + s[j].len + 1 < sizeof out; j++) {
        memcpy(out + k, mdview_text(v) + s[j].off, s[j].len);
        k += s[j].len;
    }
    out[k] = 0;
    return out;
}

/* The style of the segment holding `what` on line i (-1: not found). */
static int style_of(const mdview *v, size_t i, const char *what)
{
    size_t n;
    const mdview_seg *s = mdview_line(v, i, &n);
    for (size_t j = 0; j < n; j++)
        if (memmem(mdview_text(v) + s[j].off, s[j].len, what, strlen(what)))
            return s[j].style;
    return -1;
}

static mdview *render(const char *md, int width)
{
    mdview *v = mdview_new();
    assert_non_null(v);
    assert_int_equal(mdview_render(v, md, strlen(md), width), 0);
    return v;
}

static const int WIDTHS[] = {80, 120};

static void test_heading(void **state)
{
    (void)state;
    for (int w = 0; w < 2; w++) {
        mdview *v = render("# Title one\n\nText.\n\n## Sub\n\n### Third\n", WIDTHS[w]);
        assert_string_equal(dump(v), "Title one\n═════════\n\nText.\n\nSub\n───\n\nThird\n");
        assert_true(style_of(v, 0, "Title") & MDV_HEADING);
        assert_true(style_of(v, 0, "Title") & MDV_BOLD);
        assert_false(style_of(v, 3, "Text") & MDV_HEADING);
        assert_true(style_of(v, 8, "Third") & MDV_HEADING);
        mdview_free(v);
    }
}

static void test_emphasis_and_inline_code(void **state)
{
    (void)state;
    for (int w = 0; w < 2; w++) {
        mdview *v = render("plain **bold** *italic* ~~gone~~ and `x = 1` here", WIDTHS[w]);
        assert_string_equal(dump(v), "plain bold italic gone and x = 1 here\n");
        assert_int_equal(style_of(v, 0, "bold"), MDV_BOLD);
        assert_int_equal(style_of(v, 0, "italic"), MDV_ITALIC);
        assert_int_equal(style_of(v, 0, "gone"), MDV_STRIKE);
        assert_int_equal(style_of(v, 0, "x = 1"), MDV_CODE);
        assert_int_equal(style_of(v, 0, "plain"), 0);
        mdview_free(v);
    }
}

static void test_paragraph_wraps(void **state)
{
    (void)state;
    char md[2048] = "";
    for (int i = 0; i < 40; i++)
        strcat(md, "word ");
    for (int w = 0; w < 2; w++) {
        mdview *v = render(md, WIDTHS[w]);
        size_t words_per_line = (size_t)(WIDTHS[w] + 1) / 5;   /* "word" + a space */
        assert_int_equal(mdview_lines(v), (40 + words_per_line - 1) / words_per_line);
        for (size_t i = 0; i < mdview_lines(v); i++)
            assert_true(mdview_width(line(v, i), strlen(line(v, i))) <= WIDTHS[w]);
        mdview_free(v);
    }
}

static void test_code_block(void **state)
{
    (void)state;
    mdview *v = render("```python\nprint(1)\n\tx\n```\n", 80);
    assert_string_equal(dump(v), "┌─ python ─┐\n"
                                 "│ print(1) │\n"
                                 "│     x    │\n"
                                 "└──────────┘\n");
    assert_int_equal(style_of(v, 0, "python"), MDV_LANG);
    assert_int_equal(style_of(v, 1, "print"), MDV_CODEBLOCK);
    assert_int_equal(mdview_code_count(v), 1);
    size_t n;
    const char *lang;
    const char *code = mdview_code(v, 0, &n, &lang);
    assert_int_equal(n, 14);   /* md4c gives a leading tab as its columns */
    assert_memory_equal(code, "print(1)\n    x", 14);
    assert_string_equal(lang, "python");
    assert_null(mdview_code(v, 1, &n, &lang));
    mdview_free(v);
    /* a long line is cut with a marker, never wrapped: the box keeps its edge */
    char md[512] = "```\n";
    for (int i = 0; i < 100; i++)
        strcat(md, "a");
    strcat(md, "\nshort\n```\n");
    for (int w = 0; w < 2; w++) {
        v = render(md, WIDTHS[w]);
        assert_int_equal(mdview_lines(v), 4);
        for (size_t i = 0; i < 4; i++)
            assert_int_equal(mdview_width(line(v, i), strlen(line(v, i))), WIDTHS[w] == 80 ? 80 : 104);
        if (WIDTHS[w] == 80) {
            assert_non_null(strstr(line(v, 1), "a…"));
            assert_int_equal(style_of(v, 1, "…"), MDV_CUT);
        } else {
            assert_null(strstr(dump(v), "…"));
        }
        code = mdview_code(v, 0, &n, NULL);
        assert_int_equal(n, 106);   /* the copy gets the whole line */
        mdview_free(v);
    }
}

static void test_lists(void **state)
{
    (void)state;
    const char *md = "- one\n- two is a longer item that wraps past the edge of the line because it goes on and on "
                     "and on, well past a hundred and twenty columns of text\n  - nested\n\n1. first\n2. second\n";
    for (int w = 0; w < 2; w++) {
        mdview *v = render(md, WIDTHS[w]);
        assert_string_equal(line(v, 0), "• one");
        assert_int_equal(style_of(v, 0, "•"), MDV_MARK);
        assert_true(!strncmp(line(v, 1), "• two is", 10));
        assert_true(!strncmp(line(v, 2), "  ", 2) && line(v, 2)[2] != ' ');   /* the hanging indent */
        assert_string_equal(line(v, 3), "  ◦ nested");
        assert_string_equal(line(v, 4), "");
        assert_string_equal(line(v, 5), "1. first");
        assert_string_equal(line(v, 6), "2. second");
        for (size_t i = 0; i < mdview_lines(v); i++)
            assert_true(mdview_width(line(v, i), strlen(line(v, i))) <= WIDTHS[w]);
        mdview_free(v);
    }
    mdview *v = render("7. seven\n8. eight that wraps wraps wraps wraps wraps wraps wraps wraps wraps wraps wraps wraps wraps "
                       "wraps wraps\n",
                       80);
    assert_string_equal(line(v, 0), "7. seven");
    assert_true(!strncmp(line(v, 2), "   wraps", 8));
    mdview_free(v);
}

static void test_quote(void **state)
{
    (void)state;
    for (int w = 0; w < 2; w++) {
        mdview *v = render("> quoted **text**\n>\n> second\n\nafter", WIDTHS[w]);
        assert_string_equal(dump(v), "│ quoted text\n│ \n│ second\n\nafter\n");
        assert_int_equal(style_of(v, 0, "│"), MDV_FRAME);
        mdview_free(v);
    }
}

static void test_table(void **state)
{
    (void)state;
    const char *md = "| name | n |\n|:---|---:|\n| x | 10 |\n| yy | 2 |\n";
    for (int w = 0; w < 2; w++) {
        mdview *v = render(md, WIDTHS[w]);
        assert_string_equal(dump(v), "name │  n\n"
                                     "─────┼───\n"
                                     "x    │ 10\n"
                                     "yy   │  2\n");
        assert_true(style_of(v, 0, "name") & MDV_THEAD);
        mdview_free(v);
    }
    /* too wide: the widest column shrinks, its cells cut with a marker */
    char wide[1024] = "| a | long |\n|---|---|\n| 1 | ";
    for (int i = 0; i < 150; i++)
        strcat(wide, "z");
    strcat(wide, " |\n");
    for (int w = 0; w < 2; w++) {
        mdview *v = render(wide, WIDTHS[w]);
        for (size_t i = 0; i < mdview_lines(v); i++)
            assert_int_equal(mdview_width(line(v, i), strlen(line(v, i))), WIDTHS[w]);
        assert_non_null(strstr(line(v, 2), "z…"));
        mdview_free(v);
    }
}

static void test_rule_and_links(void **state)
{
    (void)state;
    for (int w = 0; w < 2; w++) {
        mdview *v = render("above\n\n---\n\nsee [the docs](https://example.org/d) or https://example.org/x", WIDTHS[w]);
        assert_string_equal(line(v, 0), "above");
        assert_int_equal(mdview_width(line(v, 2), strlen(line(v, 2))), WIDTHS[w]);
        assert_int_equal(style_of(v, 2, "─"), MDV_FRAME);
        assert_string_equal(line(v, 4), "see the docs <https://example.org/d> or https://example.org/x");
        assert_int_equal(style_of(v, 4, "the docs"), MDV_LINK);
        assert_int_equal(style_of(v, 4, "<https://example.org/d>"), MDV_URL);
        mdview_free(v);
    }
}

static void test_escaped(void **state)
{
    (void)state;
    mdview *v = render("red \x1b[31mtext\x1b[0m\x07 and \xc2\x9b C1\n\n```\n\x1b]52;c;AAAA\x07\n```\n", 80);
    const char *d = dump(v);
    for (const char *p = d; *p; p++)
        assert_true(*p == '\n' || (unsigned char)*p >= 0x20);
    assert_non_null(strstr(d, "\\x1b[31mtext"));
    assert_non_null(strstr(d, "\\u009b"));
    assert_non_null(strstr(d, "\\x1b]52"));
    mdview_free(v);
}

static const char *STREAM_DOC =
    "# Streaming\n\nA paragraph with **bold** and `code`.\n\n```c\nint main(void)\n{\n\n    return 0;\n}\n```\n\n"
    "- item one\n- item two\n\n> a quote\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n---\n\nThe [end](https://e.org).\n";

static void test_streaming_equals_render(void **state)
{
    (void)state;
    size_t n = strlen(STREAM_DOC);
    for (int w = 0; w < 2; w++) {
        mdview *inc = mdview_new(), *full = mdview_new();
        for (size_t k = 0; k <= n; k++) {
            assert_int_equal(mdview_update(inc, STREAM_DOC, k, WIDTHS[w]), 0);
            assert_int_equal(mdview_render(full, STREAM_DOC, k, WIDTHS[w]), 0);
            char a[65536];
            snprintf(a, sizeof a, "%s", dump(inc));
            if (strcmp(a, dump(full)))
                fail_msg("prefix %zu: incremental\n%s\nfrom scratch\n%s", k, a, dump(full));
        }
        assert_int_equal(mdview_code_count(inc), 1);
        mdview_free(inc);
        mdview_free(full);
    }
}

static void test_streaming_cost(void **state)
{
    (void)state;
    /* 400 paragraphs streamed 4 bytes at a time: the finished ones are
     * parsed once, so the bytes parsed stay linear in the text */
    size_t cap = 64 * 1024, n = 0;
    char *doc = malloc(cap);
    for (int i = 0; i < 400; i++)
        n += (size_t)snprintf(doc + n, cap - n, "Paragraph %d has *some* words in it.\n\n", i);
    mdview *v = mdview_new();
    size_t updates = 0;
    for (size_t k = 4; k < n; k += 4, updates++)
        assert_int_equal(mdview_update(v, doc, k, 80), 0);
    assert_int_equal(mdview_update(v, doc, n, 80), 0);
    uint64_t parsed = mdview_parsed_bytes(v);
    print_message("streamed %zu bytes in %zu updates: %llu bytes parsed\n", n, updates, (unsigned long long)parsed);
    assert_true(parsed < 2 * n + updates * 200);   /* re-parsing all would be ~n*updates/2 */
    mdview *full = mdview_new();
    assert_int_equal(mdview_render(full, doc, n, 80), 0);
    char a[65536];
    snprintf(a, sizeof a, "%s", dump(v));
    assert_string_equal(a, dump(full));
    mdview_free(full);
    mdview_free(v);
    free(doc);
}

static void test_width_change_and_shrink(void **state)
{
    (void)state;
    mdview *v = mdview_new();
    const char *md = "text that is long enough to wrap at forty columns but not at eighty";
    assert_int_equal(mdview_update(v, md, strlen(md), 80), 0);
    assert_int_equal(mdview_lines(v), 1);
    assert_int_equal(mdview_update(v, md, strlen(md), 40), 0);
    assert_int_equal(mdview_lines(v), 2);
    assert_int_equal(mdview_update(v, "x", 1, 40), 0);   /* shorter: from scratch */
    assert_string_equal(dump(v), "x\n");
    assert_int_equal(mdview_render(v, "", 0, 80), 0);
    assert_int_equal(mdview_lines(v), 0);
    mdview_free(v);
    mdview_free(NULL);
}

int main(void)
{
    setlocale(LC_ALL, "C.UTF-8");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heading),
        cmocka_unit_test(test_emphasis_and_inline_code),
        cmocka_unit_test(test_paragraph_wraps),
        cmocka_unit_test(test_code_block),
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_rule_and_links),
        cmocka_unit_test(test_escaped),
        cmocka_unit_test(test_streaming_equals_render),
        cmocka_unit_test(test_streaming_cost),
        cmocka_unit_test(test_width_change_and_shrink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
