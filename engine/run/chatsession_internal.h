/* chatsession: what its .c files share (not for other modules). */
#ifndef GGSCOPE_CHATSESSION_INTERNAL_H
#define GGSCOPE_CHATSESSION_INTERNAL_H

#include <stddef.h>

#include "chatsession.h"
#include "emsg.h"

/* vsnprintf into msg when msg and cap are set. */
/* s[0..n) as a NUL-terminated malloc'd copy; NULL when out of memory. */
char *chs__dupn(const char *s, size_t n);
/* Free a message's strings and tokens and zero it. */
void chs__msg_free(chs_msg *m);

#endif
