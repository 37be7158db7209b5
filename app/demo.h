/* The embedded demo model (see demo.c). */
#ifndef GGSCOPE_DEMO_H
#define GGSCOPE_DEMO_H

/* Write the demo GGUF to `path` (atomically: app_out_open). Returns 0, or -1
 * with the one-line message printed. */
int demo_write(const char *path);

/* The text that greedy decoding of the demo model recites. */
const char *demo_text(void);

#endif
