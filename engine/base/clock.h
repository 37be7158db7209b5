/* clock: the one monotonic clock (CLOCK_MONOTONIC) of the engine, the UI and
 * the commands. */
#ifndef GGSCOPE_CLOCK_H
#define GGSCOPE_CLOCK_H

/* Seconds since an arbitrary fixed point; never goes back. */
double clock_now_s(void);

#endif
