/* cliopt: the commands' option parsing, getopt_long in one place.
 *
 * Options and arguments come back in the order given (getopt's "-" mode:
 * positional arguments anywhere, whatever POSIXLY_CORRECT says); a value is
 * taken as `--opt V`, `--opt=V`, `-o V` or `-oV`; "--" ends the options.
 * Long options must be spelled out (no abbreviations). A missing value is
 * not an error here: the option comes back with arg NULL and the command
 * says what it needs (each has its own message). */
#ifndef GGSCOPE_CLIOPT_H
#define GGSCOPE_CLIOPT_H

#include <getopt.h>
#include <stdbool.h>

/* What cliopt_next returns besides an option's id (a short option's letter
 * or a long option's val; keep ids above 0x100 for long-only options). */
enum {
    CLIOPT_END = -1, /* no more arguments */
    CLIOPT_ARG = 1,  /* a positional argument, in arg */
    CLIOPT_BAD = '?' /* an unknown option (or a value given to a flag): name holds it as typed */
};

typedef struct {
    int argc;
    char **argv;                  /* argv[0] is the command name */
    const struct option *longopts;
    char shortopts[64];           /* "-:" and the caller's short options */
    const char *name;             /* the current option as typed ("-t", "--threads"; the whole token when unknown) */
    char *arg;                    /* its value (NULL: none or missing), or the positional argument */
    bool rest;                    /* after "--": only positional arguments */
    char nbuf[64];                /* the name of a known option */
} cliopt;

/* Start parsing argv[1..argc-1] (resets getopt's state). shortopts as for
 * getopt ("t:c:h"), at most 60 characters; longopts ends with a zero row. */
void cliopt_init(cliopt *p, int argc, char **argv, const char *shortopts, const struct option *longopts);

/* The next option's id, CLIOPT_ARG, CLIOPT_BAD or CLIOPT_END; sets p->name and p->arg. */
int cliopt_next(cliopt *p);

/* After the options: when argv[first..argc-1] holds more than `max`
 * positional arguments, print "CMD: unexpected argument 'X'" (X: the first
 * one too many; CMD is argv[0]) and return true. */
bool cliopt_extra(int argc, char **argv, int first, int max);

/* Print "CMD: unknown option 'NAME' (see ggscope CMD --help)"; CMD is argv[0]. */
void cliopt_unknown(const cliopt *p);

#endif
