/* memest: how much memory running a model takes, without running it: the
 * resident set of the process on the CPU backend (the weights, the
 * KV cache, the compute buffers, the tokenizer's tables, the program) and,
 * on Vulkan, the device memory as well. Sizes come from the session's own
 * sizing (session_plan_make) and the CPU backend's (backend_cpu_*_sizes),
 * so that the estimate follows what is allocated. Never prints. */
#ifndef GGSCOPE_MEMEST_H
#define GGSCOPE_MEMEST_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef enum { MEMEST_CPU = 0, MEMEST_VULKAN = 1 } memest_backend;

typedef struct {
    uint32_t n_ctx;          /* context positions (0: the session's default) */
    uint32_t n_used;         /* positions evaluated so far (0: the whole context) */
    memest_backend backend;
    int n_threads;           /* CPU threads (0: one per core, as the CPU backend) */
    const char *kv_type;     /* KV cache type (NULL: "f16"); memest_kv_types lists them */
    uint64_t program_bytes;  /* the process's resident bytes before it opens a model (the binary
                              * and the libraries it links, as loaded); 0: a figure measured on a
                              * build without libcurl */
} memest_params;

/* Bytes; "resident" parts are what the process keeps in RAM once n_used
 * positions were evaluated (calloc'd pages never written are not resident). */
typedef struct {
    uint32_t n_ctx, n_batch, n_used, n_swa_cells;
    int n_threads;
    uint64_t weights;     /* the file: a run reads every page of it but the token embeddings
                           * of tokens not seen (n_used rows at most), from the mapping or from
                           * the same bytes copied into memory (model_copy) */
    uint64_t repacked;    /* weight copies the backend makes when loading (the CPU backend reads
                           * weights in place and repacks per product into thread buffers: 0) */
    uint64_t kv;          /* resident KV cache (n_used positions) */
    uint64_t kv_full;     /* the whole KV cache, K and V */
    uint64_t compute;     /* resident scratch: the session's buffers, the backend's
                           * activation and per-thread buffers, logits, sampler */
    uint64_t tokenizer;   /* the tokenizer's tables (the caller's figure) */
    uint64_t runtime;     /* the program, its libraries, its threads' stacks */
    uint64_t host_total;  /* the sum of the above but kv_full */
    /* Vulkan only (else 0): device memory */
    uint64_t dev_weights, dev_kv, dev_compute, dev_total;
} memest;

/* The KV cache types the engine supports, comma separated ("f16"). */
const char *memest_kv_types(void);

/* Estimate the memory of running `m` (bound to a file of file_bytes bytes,
 * all shards; a shape-only model, model_load_shapes, gives the same figures) with a tokenizer of tok_bytes (tok_mem_bytes) under p.
 * Returns 0, or -1 with a one-line message in msg: an unknown KV type
 * (naming the supported ones), a context of 0 positions or n_used past it,
 * sizes that overflow. */
int memest_compute(const model *m, uint64_t file_bytes, uint64_t tok_bytes, const memest_params *p, memest *out,
                   char *msg, size_t cap);

#endif
