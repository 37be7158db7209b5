/* The Vulkan backend's tests' fixture (test_vulkan_*): the CPU / Vulkan
 * backend pair as a cmocka group's state, buffers written and read back,
 * random inputs and weights, the NMSE check of a result against the CPU's,
 * and whole-model logits on both backends. Built only with the Vulkan backend
 * (GGSCOPE_HAVE_VULKAN). Every failure is a cmocka assertion: call these from
 * a test. */
#ifndef GGSCOPE_VKTEST_H
#define GGSCOPE_VKTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend.h"
#include "backend_vulkan.h"
#include "model.h"
#include "session.h"

/* A group's state: both backends (vk NULL without a Vulkan device; then cpu
 * may be NULL too: VKTEST_NEED_DEVICE skips). */
typedef struct {
    backend *cpu;
    backend *vk;
    const char *variant;   /* the reductions: "subgroup" or "shared-memory" */
    bool all_types;        /* every weight type (the subgroup variant; the other
                              runs a few: the reduction code is shared) */
} vktest_fixture;

/* cmocka group setup: the Vulkan backend of the automatic device choice with
 * subgroup reductions or, when !subgroups, the shared-memory fallback
 * (GGSCOPE_VK_NO_SUBGROUP, unset again after), and a 2-thread CPU backend;
 * prints the device. No device: says SKIP, vk NULL, still returns 0. */
int vktest_setup(void **state, bool subgroups);

/* cmocka group teardown: frees both backends and the fixture (NULL: nothing). */
int vktest_teardown(void **state);

/* Skip the current test, saying so, when the fixture has no Vulkan device. */
#define VKTEST_NEED_DEVICE(f)                                             \
    do {                                                                  \
        if (!(f)->vk) {                                                   \
            print_message("SKIP: no Vulkan device\n");                    \
            skip();                                                       \
        }                                                                 \
    } while (0)

/* xorshift64 on the caller's state (each test file keeps its own seed). */
uint32_t vktest_rnd_u32(uint64_t *rng);
float vktest_rnd_f(uint64_t *rng, float lo, float hi);
/* n values uniform in [lo, hi) (malloc'd; the caller frees). */
float *vktest_rnd_vec(uint64_t *rng, size_t n, float lo, float hi);

/* n_exp stacked matrices of rows x cols random values in [-1, 1) stored as
 * `type` (F32, F16 or a quantized type; ne2 = n_exp, 0 when n_exp is 1); the
 * data is malloc'd in *mem, which the caller frees. */
backend_weight vktest_make_weight(uint64_t *rng, uint32_t type, uint32_t cols, uint32_t rows, uint32_t n_exp,
                                  void **mem);

/* weight_prepare on the fixture's Vulkan backend (must succeed), and its
 * weight_release. The CPU backend, given the same weight, ignores priv. */
void vktest_prepare(const vktest_fixture *f, backend_weight *w);
void vktest_release(const vktest_fixture *f, backend_weight *w);

/* An F32 buffer of n floats (at least 1) on `b` holding `data` (NULL: not written). */
backend_buf *vktest_upload(backend *b, const float *data, size_t n);
/* n floats of `buf` from float `off` (malloc'd; the caller frees). */
float *vktest_download(backend *b, backend_buf *buf, size_t off, size_t n);

/* Normalised mean squared error sum((ref-x)^2)/sum(ref^2) (the sum itself
 * when ref is all zeros); the largest |ref-x| in *maxd when maxd is not NULL. */
double vktest_nmse(const float *ref, const float *x, size_t n, double *maxd);
/* Fails the test when an element of either is not finite or the NMSE of x
 * against ref is above `limit`; GGSCOPE_VK_VERBOSE set: prints the NMSE. */
void vktest_check(const char *what, const float *ref, const float *x, size_t n, double limit);
/* Fails the test when the Vulkan backend counted validation errors. */
void vktest_no_validation_errors(const vktest_fixture *f);

/* A session of n_ctx positions (batches of 16) on `be` (for the Vulkan
 * backend the model must be prepared for it); fails the test if refused. */
session *vktest_open_session(const model *m, backend *be, uint32_t n_ctx);

/* The logits of every position of `ids` on both backends (the model is
 * prepared for the Vulkan one, then released), the prompt evaluated in two
 * calls (a batch, then its last 4 tokens one by one: mat-mat and mat-vec) in
 * n_ctx-position sessions: the relative RMS error sqrt(sum((a-b)^2)/sum(a^2)). */
double vktest_compare_logits(const vktest_fixture *f, model *m, const int32_t *ids, uint32_t n, uint32_t n_ctx);

#endif
