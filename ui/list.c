/* list: see list.h. */
#include "list.h"

#include "panel.h"

uint64_t list_max_top(const list *l)
{
    uint64_t page = l->page ? l->page : 1;
    return l->count > page ? l->count - page : 0;
}

void list_fit(list *l)
{
    if (!l->page)
        l->page = 1;
    if (!l->count) {
        l->cur = l->top = 0;
        return;
    }
    if (l->cur >= l->count)
        l->cur = l->count - 1;
    if (l->cur < l->top)
        l->top = l->cur;
    if (l->cur >= l->top + l->page)
        l->top = l->cur - l->page + 1;
    if (l->top > list_max_top(l))
        l->top = list_max_top(l);
}

void list_set(list *l, uint64_t count, uint64_t page)
{
    l->count = count;
    l->page = page ? page : 1;
    list_fit(l);
}

bool list_goto(list *l, uint64_t row)
{
    uint64_t old = l->cur;
    l->cur = !l->count ? 0 : row < l->count ? row : l->count - 1;
    list_fit(l);
    return l->cur != old;
}

/* a + d, saturated to [0, UINT64_MAX] */
static uint64_t add(uint64_t a, int64_t d)
{
    if (d < 0)
        return (uint64_t)-(d + 1) >= a ? 0 : a - (uint64_t)-(d + 1) - 1;
    return UINT64_MAX - a < (uint64_t)d ? UINT64_MAX : a + (uint64_t)d;
}

bool list_move(list *l, int64_t d)
{
    return list_goto(l, add(l->cur, d));
}

void list_center(list *l)
{
    if (!l->page)
        l->page = 1;
    l->top = l->cur > l->page / 2 ? l->cur - l->page / 2 : 0;
    list_fit(l);
}

static int64_t step(const list *l)
{
    return l->page > 1 ? (int64_t)(l->page - 1) : 1;
}

int list_key(list *l, int key)
{
    uint64_t cur = l->cur, top = l->top;
    switch (key) {
    case UIK_UP: case 'k': l->cur = add(l->cur, -1); break;
    case UIK_DOWN: case 'j': l->cur = add(l->cur, 1); break;
    case UIK_PGUP: l->cur = add(l->cur, -step(l)); l->top = add(l->top, -step(l)); break;
    case UIK_PGDN:
        l->cur = add(l->cur, step(l));
        if (l->count && l->cur >= l->count)
            l->cur = l->count - 1;
        l->top = add(l->top, step(l));
        break;
    case UIK_HOME: l->cur = 0; break;
    case UIK_END: case 'G': l->cur = l->count ? l->count - 1 : 0; break;
    default: return LIST_IGNORED;
    }
    list_fit(l);
    return LIST_HANDLED | (l->cur != cur || l->top != top ? LIST_MOVED : 0);
}

bool list_scroll(list *l, int64_t d)
{
    uint64_t top = l->top;
    l->top = add(l->top, d);
    if (l->top > list_max_top(l))
        l->top = list_max_top(l);
    return l->top != top;
}

bool list_wheel(list *l, int64_t d)
{
    bool moved = list_scroll(l, d);
    if (l->cur < l->top)
        l->cur = l->top;
    if (l->cur >= l->top + l->page)
        l->cur = l->top + l->page - 1;
    list_fit(l);
    return moved;
}

int list_scroll_key(list *l, int key)
{
    bool moved;
    switch (key) {
    case UIK_UP: case 'k': moved = list_scroll(l, -1); break;
    case UIK_DOWN: case 'j': moved = list_scroll(l, 1); break;
    case UIK_PGUP: moved = list_scroll(l, -step(l)); break;
    case UIK_PGDN: moved = list_scroll(l, step(l)); break;
    case UIK_HOME: moved = list_scroll(l, INT64_MIN); break;
    case UIK_END: case 'G': moved = list_scroll(l, INT64_MAX); break;
    default: return LIST_IGNORED;
    }
    return LIST_HANDLED | (moved ? LIST_MOVED : 0);
}
