/* The GGUF naming convention:
 * <BaseName><SizeLabel><FineTune><Version><Encoding><Type><Shard>.gguf
 * parsed with the spec's own regular expression (translated to POSIX ERE;
 * the one look-ahead, "(?!LoRA|vocab)" before Encoding, is checked after). */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

/* Capture groups of NAME_RE that hold the parts (the others are inner groups). */
static const char NAME_RE[] =
    "^([A-Za-z0-9[:space:]]*(-([A-Za-z[:space:]][A-Za-z0-9[:space:]]*|[0-9[:space:]]*))*)"
    "-((([0-9]+x)?([0-9]+\\.)?[0-9]+[A-Za-z](-[A-Za-z]+([0-9]+\\.)?[0-9]+[A-Za-z]+)?)(-([A-Za-z0-9[:space:]-]+))?)?"
    "-(v[0-9]+(\\.[0-9]+)*)"
    "(-([A-Za-z0-9_]+))?"
    "(-(LoRA|vocab))?"
    "(-([0-9]{5}-of-[0-9]{5}))?"
    "\\.gguf$";

enum { G_BASE = 1, G_SIZE = 5, G_FINETUNE = 11, G_VERSION = 12, G_ENC = 15, G_TYPE = 17, G_SHARD = 19, G_N = 19 };

static void grab(const char *s, const regmatch_t *m, char *out, size_t cap)
{
    out[0] = 0;
    if (m->rm_so < 0)
        return;
    size_t n = (size_t)(m->rm_eo - m->rm_so);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s + m->rm_so, n);
    out[n] = 0;
}

bool gguf_parse_name(const char *filename, gguf_name_parts *out)
{
    memset(out, 0, sizeof *out);
    const char *base = strrchr(filename, '/');
    base = base ? base + 1 : filename;
    regex_t re;
    if (regcomp(&re, NAME_RE, REG_EXTENDED) != 0)
        return false;
    regmatch_t m[G_N + 1];
    int rc = regexec(&re, base, G_N + 1, m, 0);
    regfree(&re);
    if (rc != 0)
        return false;
    grab(base, &m[G_BASE], out->base_name, sizeof out->base_name);
    grab(base, &m[G_SIZE], out->size_label, sizeof out->size_label);
    grab(base, &m[G_FINETUNE], out->fine_tune, sizeof out->fine_tune);
    grab(base, &m[G_VERSION], out->version, sizeof out->version);
    grab(base, &m[G_ENC], out->encoding, sizeof out->encoding);
    grab(base, &m[G_TYPE], out->type, sizeof out->type);
    char shard[16];
    grab(base, &m[G_SHARD], shard, sizeof shard);
    /* The spec's look-ahead: an Encoding may not start with LoRA or vocab. */
    if (!strncmp(out->encoding, "LoRA", 4) || !strncmp(out->encoding, "vocab", 5)) {
        if (out->type[0] == 0 && (!strcmp(out->encoding, "LoRA") || !strcmp(out->encoding, "vocab"))) {
            memcpy(out->type, out->encoding, strlen(out->encoding) + 1); /* "LoRA" or "vocab" */
            out->encoding[0] = 0;
        } else {
            memset(out, 0, sizeof *out);
            return false;
        }
    }
    if (shard[0]) {
        out->shard_num = (uint32_t)atoi(shard);
        out->shard_total = (uint32_t)atoi(shard + 9);
    }
    out->valid = true;
    return true;
}
