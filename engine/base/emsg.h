/* emsg: the engine's error style: a call that can fail returns a status and
 * writes one line into a message buffer its caller owns (msg, cap); the
 * engine never prints. */
#ifndef GGSCOPE_EMSG_H
#define GGSCOPE_EMSG_H

#include <stddef.h>

/* printf into msg (cap bytes, cut to fit); does nothing when msg is NULL or
 * cap is 0. */
void emsg_set(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
