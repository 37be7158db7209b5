/* cliopt: getopt_long for the commands, see cliopt.h. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "cliopt.h"

void cliopt_init(cliopt *p, int argc, char **argv, const char *shortopts, const struct option *longopts)
{
    memset(p, 0, sizeof *p);
    p->argc = argc;
    p->argv = argv;
    p->longopts = longopts;
    /* "-": arguments in order, as positional 1; ":": a missing value returns ':' */
    strcpy(p->shortopts, "-:");
    strncat(p->shortopts, shortopts, sizeof p->shortopts - 3);
    optind = 0; /* glibc: a full reset (main and each command parse their own argv) */
}

/* The entry of the long option in tok ("--name" or "--name=V") when spelled
 * out in full, else NULL. */
static const struct option *long_entry(const char *tok, const struct option *lo)
{
    for (; lo->name; lo++) {
        size_t n = strlen(lo->name);
        if (!strncmp(tok + 2, lo->name, n) && (tok[2 + n] == '\0' || tok[2 + n] == '='))
            return lo;
    }
    return NULL;
}

int cliopt_next(cliopt *p)
{
    p->name = NULL;
    p->arg = NULL;
    if (p->rest) {
        if (optind >= p->argc)
            return CLIOPT_END;
        p->arg = p->argv[optind++];
        return CLIOPT_ARG;
    }
    /* the element getopt works on: "-" mode does not permute */
    int at = optind ? optind : 1;
    const char *tok = at < p->argc ? p->argv[at] : "";
    int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
    if (c == -1) {
        p->rest = true;
        return cliopt_next(p);
    }
    if (c == 1) {
        p->arg = optarg;
        return CLIOPT_ARG;
    }
    const struct option *lo = NULL;
    bool is_long = tok[0] == '-' && tok[1] == '-';
    if (is_long)
        lo = long_entry(tok, p->longopts);
    if (c == '?' || (is_long && !lo)) {
        p->name = tok;
        return CLIOPT_BAD;
    }
    if (c == ':')
        c = optopt; /* the value is missing: arg stays NULL */
    else
        p->arg = optarg;
    if (lo)
        snprintf(p->nbuf, sizeof p->nbuf, "--%s", lo->name);
    else
        snprintf(p->nbuf, sizeof p->nbuf, "-%c", c);
    p->name = p->nbuf;
    return c;
}

bool cliopt_extra(int argc, char **argv, int first, int max)
{
    if (argc - first <= max)
        return false;
    app_error("%s: unexpected argument '%s' (see ggscope %s --help)", argv[0], argv[first + max], argv[0]);
    return true;
}

void cliopt_unknown(const cliopt *p)
{
    app_error("%s: unknown option '%s' (see ggscope %s --help)", p->argv[0], p->name, p->argv[0]);
}
