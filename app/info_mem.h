/* The memory estimate of `ggscope info FILE --ctx N` (engine/run/memest):
 * options, the figures as text and as a JSON member. */
#ifndef GGSCOPE_INFO_MEM_H
#define GGSCOPE_INFO_MEM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gguf.h"
#include "memest.h"

typedef struct {
    bool on;               /* an estimate was asked for (--ctx, --backend, --kv-type, --used) */
    uint32_t n_ctx;        /* 0: the session's default */
    uint32_t n_used;       /* 0: the whole context */
    const char *backend;   /* "auto" (NULL), "cpu", "vulkan" */
    const char *kv_type;   /* NULL: f16 */
    int threads;           /* 0: one per core */
    uint64_t program_rss;  /* this process's resident bytes before it opened the file (info_mem_self_rss) */
} info_mem_opts;

typedef struct {
    memest m;
    char backend[16];      /* the backend estimated: "cpu" or "vulkan" */
    char why[512];         /* auto: why it chose the CPU */
    char kv_type[16];
} info_mem;

/* Parse one of the estimate's options (getopt's c: 'c' --ctx, 'B' --backend,
 * 'K' --kv-type, 'U' --used, 't' --threads) into o. Returns 1 when c is one
 * of them, 0 when not, -1 with the one-line message printed on a bad value. */
int info_mem_opt(int c, const char *val, info_mem_opts *o);

/* This process's resident bytes now (/proc/self/statm; 0 when unknown): taken
 * before the file is opened, it is the program a run loads too. */
uint64_t info_mem_self_rss(void);

/* The estimate for file f, local or remote (the model is bound for its
 * shapes only: model_load_shapes; a remote file's header is all it reads).
 * Returns 0, or the exit status (APP_BADINPUT) with a one-line message in
 * err (a model the engine cannot bind, a context past the limits). Never
 * prints: the explorer calls it from a worker. */
int info_mem_estimate(const gguf_file *f, const info_mem_opts *o, info_mem *out, char *err, size_t errn);

/* The estimate in one line for a status bar: "memory to run ... ". */
void info_mem_line(char *buf, size_t cap, const info_mem *e);

/* The estimate as a text section (after info's), and as the "memory"
 * member of info's JSON object (0, or -1 when out of memory). */
void info_mem_print(FILE *out, const info_mem *e);
int info_mem_json(struct cJSON *root, const info_mem *e);

#endif
