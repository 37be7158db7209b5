/* The panes' text with a search match lit (panes_put_match, panes.h). */
#include <ctype.h>
#include <string.h>

#include "panes.h"
#include "screen.h"

size_t panes_find(const char *s, size_t n, const char *q, size_t qn)
{
    if (!qn || qn > n)
        return SIZE_MAX;
    for (size_t i = 0; i + qn <= n; i++) {
        size_t k = 0;
        while (k < qn && tolower((unsigned char)s[i + k]) == tolower((unsigned char)q[k]))
            k++;
        if (k == qn)
            return i;
    }
    return SIZE_MAX;
}

/* s[0..n) from the file (escaped) or already in its terminal form */
static int put(WINDOW *w, int y, int x, int maxcols, const char *s, size_t n, attr_t a, bool ellipsis, bool esc)
{
    return esc ? screen_put_text(w, y, x, maxcols, s, n, a, ellipsis) : ui_put(w, y, x, maxcols, s, n, a, ellipsis);
}

int panes_put_match(WINDOW *w, int y, int x, int maxcols, const char *s, size_t n, attr_t a, const char *q,
                    unsigned flags)
{
    bool ell = flags & PANES_ELLIPSIS, esc = !(flags & PANES_ESCAPED);
    size_t at = q ? panes_find(s, n, q, strlen(q)) : SIZE_MAX;
    if (at == SIZE_MAX)
        return put(w, y, x, maxcols, s, n, a, ell, esc);
    size_t qn = strlen(q);
    int used = put(w, y, x, maxcols, s, at, a, false, esc);
    used += put(w, y, x + used, maxcols - used, s + at, qn, a | ui_attr(UI_C_MATCH), false, esc);
    used += put(w, y, x + used, maxcols - used, s + at + qn, n - at - qn, a, ell, esc);
    return used;
}
