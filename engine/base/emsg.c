/* emsg: see emsg.h. */
#include "emsg.h"

#include <stdarg.h>
#include <stdio.h>

void emsg_set(char *msg, size_t cap, const char *fmt, ...)
{
    if (!msg || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
}
