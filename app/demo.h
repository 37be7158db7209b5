/* The embedded demo model (see demo.c). */
#ifndef GGSCOPE_DEMO_H
#define GGSCOPE_DEMO_H

/* Write the demo GGUF to `path` (atomically). Returns 0 or -1. */
int demo_write(const char *path);

/* The text that greedy decoding of the demo model recites. */
const char *demo_text(void);

#endif
