/* backend_select: which backend an engine command runs on (--backend
 * auto|vulkan|cpu, --device N), the weight upload with a progress bar, and
 * the fall back to the CPU when the device fails mid-generation. */
#ifndef GGSCOPE_BACKEND_SELECT_H
#define GGSCOPE_BACKEND_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "engine_cli.h"
#include "model.h"

/* Create the backend `name` asks for ("auto", "vulkan" or "cpu"; NULL =
 * "auto") for model `m`, on Vulkan device `device` (-1: GGSCOPE_VK_DEVICE or
 * the automatic choice), with `threads` CPU threads (0 = one per core).
 *  - cpu: the CPU backend.
 *  - vulkan: the Vulkan backend, or NULL with a clear message when there is
 *    no driver, no usable device, or the model has a type it cannot run.
 *  - auto: Vulkan when a hardware device exists (or a software one was asked
 *    for by index) and the model's types are supported, else the CPU.
 * Prints one line on stderr saying which backend runs and why ("backend:
 * ..."), unless `quiet`. Uploads the weights to the device with a progress
 * bar (model_prepare: the caller calls model_release before backend_free).
 * Returns NULL (message printed) on failure. */
backend *app_backend_open(const char *name, int device, int threads, model *m, bool quiet);

/* One line describing backend `b` ("vulkan: NAME (discrete)", "cpu, 2
 * threads") into buf, for status lines. */
void app_backend_describe(const backend *b, char *buf, size_t cap);

/* Evaluate like session_eval, keeping the tokens of every cached position;
 * when a non-CPU backend fails with a device error (lost device, out of
 * device memory: BACKEND_EDEVICE, BACKEND_ENOMEM), switch `e` to a new CPU backend and session (notice on
 * stderr), re-evaluate the cached tokens there and retry, so that the
 * conversation survives. Returns session_eval's code. */
int app_eval(ecli_engine *e, const int32_t *tokens, uint32_t n, uint32_t pos, float *logits, bool all);

#endif
