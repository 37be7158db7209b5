/* mdview: Markdown (CommonMark + GitHub tables and strikethrough, parsed by
 * md4c) laid out for a terminal of a given width: text in, styled lines out.
 * Pure: no ncurses, no I/O; the caller maps styles to attributes and draws
 * the segments as they are (the text from the model is already escaped with
 * engine/base/textesc.h: no control character reaches the terminal).
 *
 * Layout: headings (H1 and H2 underlined), paragraphs word-wrapped, bullet
 * and numbered lists with hanging indents, block quotes behind a bar,
 * fenced and indented code in a box with the language in its top edge (long
 * lines cut with a marker, never wrapped), tables with aligned columns
 * shrunk to the width (cut cells end in a marker), horizontal rules, links
 * as their text followed by the URL, images as their alt text and URL.
 *
 * Streaming: mdview_update takes the whole text again, of which a prefix was
 * already given (a reply that grows). The text before the last cut point (a
 * blank line outside a code fence followed by a line that starts at column
 * 0) is laid out once and kept; only the part after it is parsed again.
 * mdview_render lays out everything from scratch.
 *
 * One module over two files: mdview.c (the layout) and mdview_stream.c (the
 * view and its updates), sharing mdview_int.h.
 *
 * Threads: none of its own; one mdview is used by one thread at a time. */
#ifndef GGSCOPE_MDVIEW_H
#define GGSCOPE_MDVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Styles of a segment (bits). */
enum {
    MDV_BOLD = 1 << 0,
    MDV_ITALIC = 1 << 1,
    MDV_CODE = 1 << 2,       /* inline code */
    MDV_STRIKE = 1 << 3,
    MDV_HEADING = 1 << 4,
    MDV_LINK = 1 << 5,       /* a link's text */
    MDV_URL = 1 << 6,        /* a link's URL, shown after its text */
    MDV_FRAME = 1 << 7,      /* box edges, quote bars, rules, table lines */
    MDV_CODEBLOCK = 1 << 8,  /* text of a code block */
    MDV_THEAD = 1 << 9,      /* a table's header cells */
    MDV_MARK = 1 << 10,      /* list markers */
    MDV_CUT = 1 << 11,       /* the marker of a cut line or cell */
    MDV_LANG = 1 << 12,      /* a code block's language label */
};

typedef struct {
    uint32_t off, len;       /* bytes of mdview_text() */
    uint16_t style;          /* MDV_* */
} mdview_seg;

typedef struct mdview mdview;

/* An empty view; NULL when out of memory. */
mdview *mdview_new(void);
/* Free; accepts NULL. */
void mdview_free(mdview *v);

/* Lay out text[0..len) for `width` columns (at least 8 are used), from
 * scratch. Returns 0, or -1 when out of memory (the view is then empty). */
int mdview_render(mdview *v, const char *text, size_t len, int width);

/* The same for a text that starts with the one given last (a streaming
 * reply): the finished blocks keep their lines. A different width, or a
 * text shorter than the last one, lays out everything again. */
int mdview_update(mdview *v, const char *text, size_t len, int width);

/* Lines laid out. */
size_t mdview_lines(const mdview *v);
/* The segments of line i (< mdview_lines): *n of them. */
const mdview_seg *mdview_line(const mdview *v, size_t i, size_t *n);
/* The text the segments point into. */
const char *mdview_text(const mdview *v);

/* Code blocks laid out, in order. */
size_t mdview_code_count(const mdview *v);
/* The raw text of code block i (not escaped: what a copy should get), its
 * length and its language ("" when none; escaped). NULL when i is out of range. */
const char *mdview_code(const mdview *v, size_t i, size_t *len, const char **lang);

/* Bytes handed to the Markdown parser since mdview_new (tests and the
 * benchmark: what streaming costs). */
uint64_t mdview_parsed_bytes(const mdview *v);

/* The columns a UTF-8 string takes (wcwidth in the current locale; a byte
 * that is not a character counts one). */
int mdview_width(const char *s, size_t len);

#endif
