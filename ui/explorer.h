/* explorer: the page of ggscope's screen that explores one GGUF file
 * (metadata tree, tensor list, tensor detail, search). Loop thread only. */
#ifndef GGSCOPE_EXPLORER_H
#define GGSCOPE_EXPLORER_H

#include "gguf.h"
#include "screen.h"

typedef struct explorer explorer;

/* Add the explorer's page, panes and keys to `s` for file `f` (not owned:
 * it must outlive the screen). Returns NULL on allocation failure. */
explorer *explorer_new(screen *s, const gguf_file *f);

/* Free the explorer's own state (its panes belong to the screen). Call
 * after the screen's jobs have finished. Accepts NULL. */
void explorer_free(explorer *e);

/* The explorer's page id. */
int explorer_page(const explorer *e);

/* Show tensor `ti` in the explorer: its page, the tensor list on it, its detail. */
void explorer_reveal_tensor(explorer *e, uint64_t ti);

/* Start a search (as `/` does). */
void explorer_search(explorer *e, const char *query);

#endif
