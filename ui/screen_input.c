/* screen: the keys and mouse events read from the terminal (escape
 * sequences decoded), dispatched to the overlays, the focused pane or the
 * key table; the terminal's size (see screen.h). */
#include "screen_int.h"

#include <string.h>
#include <wchar.h>

int screen_key(screen *s, int key)
{
    int r;
    if (s->prompt_open)
        r = screen_prompt_key(s, key);
    else if (s->pager_open)
        r = screen_pager_key(s, key);
    else {
        r = PANEL_IGNORED;
        panel *f = screen_focused(s);
        if (f && f->ops->on_key)
            r = f->ops->on_key(f, key);
        if (!(r & PANEL_HANDLED) && !(f && f->ops->typing && f->ops->typing(f))) {
            for (int i = s->nbinds - 1; i >= 0; i--) {
                screen_binding *b = &s->binds[i];
                if (b->key == key && (b->page == -1 || b->page == s->cur)) {
                    r = b->fn(s, key, b->ctx);
                    break;
                }
            }
        }
    }
    if (r & (PANEL_REDRAW | PANEL_HANDLED))
        s->dirty = true;
    return r;
}

static int screen_mouse(screen *s)
{
    MEVENT ev;
    if (getmouse(&ev) != OK)
        return 0;
    int event = 0;
    if (ev.bstate & BUTTON4_PRESSED)
        event = UI_MOUSE_WHEEL_UP;
    else if (ev.bstate & BUTTON5_PRESSED)
        event = UI_MOUSE_WHEEL_DOWN;
    else if (ev.bstate & BUTTON1_DOUBLE_CLICKED)
        event = UI_MOUSE_DOUBLE;
    else if (ev.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED))
        event = UI_MOUSE_CLICK;
    if (!event)
        return 0;
    if (s->pager_open) {
        if (event == UI_MOUSE_WHEEL_UP)
            return screen_pager_key(s, UIK_UP) | screen_pager_key(s, UIK_UP) | screen_pager_key(s, UIK_UP);
        if (event == UI_MOUSE_WHEEL_DOWN)
            return screen_pager_key(s, UIK_DOWN) | screen_pager_key(s, UIK_DOWN) | screen_pager_key(s, UIK_DOWN);
        return 0;
    }
    if (s->npages == 0)
        return 0;
    page_t *pg = &s->pages[s->cur];
    for (int k = 0; k < pg->n; k++) {
        panel *p = pg->panels[k];
        if (!p->frame || ev.y < p->y || ev.y >= p->y + p->h || ev.x < p->x || ev.x >= p->x + p->w)
            continue;
        int r = PANEL_REDRAW;
        if (event == UI_MOUSE_CLICK || event == UI_MOUSE_DOUBLE) {
            if (pg->focus != k) {
                pg->focus = k;
                screen_relayout(s);
            }
        }
        int iy = ev.y - p->y - 1, ix = ev.x - p->x - 1;
        if (p->ops->on_mouse && iy >= 0 && ix >= 0 && iy < p->ih && ix < p->iw)
            r |= p->ops->on_mouse(p, iy, ix, event);
        s->dirty = true;
        return r;
    }
    return 0;
}

/* After an Esc: ncurses has already waited ESCDELAY for the rest of a
 * sequence it does not know. Nothing more: Esc. CSI 200~ / 201~: bracketed
 * paste; CSI 27;2;13~ or 13;2u: Shift+Enter; another CSI: ignored (0).
 * Another key: Alt+key. */
static int read_escape(void)
{
    wint_t c;
    int rc = get_wch(&c);
    if (rc == ERR)
        return UIK_ESC;
    if (rc == KEY_CODE_YES)
        return c == KEY_ENTER ? UIK_ALT('\n') : UIK_FN((int)c);   /* Esc then a function key */
    if (c == '\r' || c == '\n')
        return UIK_ALT('\n');
    if (c == 27)
        return UIK_ESC;
    if (c != '[')
        return UIK_ALT((int)c);
    char par[24];
    size_t n = 0;
    for (;;) {
        rc = get_wch(&c);
        if (rc == ERR || rc == KEY_CODE_YES)
            return 0;
        if (c >= 0x40 && c <= 0x7e)
            break;
        if (n + 1 < sizeof par)
            par[n++] = (char)c;
    }
    par[n] = 0;
    if (c == '~' && !strcmp(par, "200"))
        return UIK_PASTE_BEGIN;
    if (c == '~' && !strcmp(par, "201"))
        return UIK_PASTE_END;
    if ((c == '~' && !strcmp(par, "27;2;13")) || (c == 'u' && !strcmp(par, "13;2")))
        return UIK_ALT('\n');
    return 0;
}

int screen_drain_input(screen *s)
{
    int flags = 0;
    for (;;) {
        wint_t ch;
        int rc = get_wch(&ch);
        if (rc == ERR)
            break;
        int key;
        if (rc == KEY_CODE_YES) {
            if (ch == KEY_MOUSE) {
                flags |= screen_mouse(s);
                continue;
            }
            if (ch == KEY_RESIZE)
                continue;   /* SIGWINCH is handled by the loop */
            key = ch == KEY_ENTER ? UIK_ENTER : UIK_FN((int)ch);
        } else if (ch == 27) {
            key = read_escape();
            if (!key)
                continue;
        } else {
            key = (int)ch;
            if (key == '\r')
                key = UIK_ENTER;
            else if (key == 127 || key == 8)
                key = UIK_BACKSPACE;
        }
        flags |= screen_key(s, key);
        if (flags & PANEL_QUIT)
            break;
    }
    return flags;
}

void screen_resize(screen *s, int rows, int cols)
{
    if (rows > 0 && cols > 0)
        resizeterm(rows, cols);
    getmaxyx(stdscr, s->rows, s->cols);
    s->full_repaint = true;
    screen_relayout(s);
}

