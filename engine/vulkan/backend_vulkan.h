/* backend_vulkan: the Vulkan compute backend (library ggvulkan, built only
 * when Vulkan and glslc are found; GGSCOPE_HAVE_VULKAN is then defined for
 * everything that links it).
 *
 * Device choice: discrete GPUs first, then integrated, then virtual, then
 * software rasterisers (lavapipe / llvmpipe), which are taken only when asked
 * for by index or when nothing else exists. An explicit index comes from the
 * caller (`--device N`) or the environment variable GGSCOPE_VK_DEVICE.
 *
 * The backend implements every op of backend.h. Ops are recorded into one
 * command buffer, submitted when results are read (buf_read) or on sync:
 * one submission per token or prompt batch. Weights are uploaded once to
 * device-local memory through a staging buffer by weight_prepare (for a
 * whole model: model_prepare, model.h); ops use the prepared copy
 * (backend_weight.priv) and refuse an unprepared weight with BACKEND_EARG
 * (message in backend_vulkan_last_message). */
#ifndef GGSCOPE_BACKEND_VULKAN_H
#define GGSCOPE_BACKEND_VULKAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "model.h"

/* What a device can do: every feature has a fallback when missing. */
typedef struct {
    uint32_t api_version;
    bool storage16;          /* 16-bit storage buffer access */
    bool storage8;           /* 8-bit storage buffer access */
    bool fp16_arith;         /* shaderFloat16 */
    bool int8_arith;         /* shaderInt8 */
    bool int64;              /* shaderInt64 (enabled when present: mul_mat_rows needs it) */
    bool subgroup_arith;     /* subgroup add/max in compute shaders (else shared memory) */
    bool subgroup_ballot;    /* subgroupBroadcast (the CPU devices' row-per-invocation mat-vec) */
    uint32_t subgroup_size;
    uint32_t max_wg_size;    /* maxComputeWorkGroupSize[0] */
    uint32_t max_wg_invocations;
    uint32_t max_shared;     /* bytes of shared memory per workgroup */
    uint64_t max_range;      /* maxStorageBufferRange */
    uint64_t min_align;      /* minStorageBufferOffsetAlignment */
    uint32_t max_push;       /* maxPushConstantsSize */
    uint64_t max_alloc;      /* maxMemoryAllocationSize (0 = unknown) */
    float timestamp_period;  /* nanoseconds per timestamp tick (limits.timestampPeriod) */
} vk_caps;

typedef enum {
    VK_DEV_OTHER = 0, VK_DEV_INTEGRATED, VK_DEV_DISCRETE, VK_DEV_VIRTUAL, VK_DEV_CPU
} vk_device_kind;

typedef struct {
    int index;               /* position in the driver's enumeration */
    char name[256];
    vk_device_kind kind;
    uint32_t vendor_id, device_id, driver_version;
    char driver[64];         /* driver name ("llvmpipe", "radv"), may be empty */
    uint64_t device_local_bytes;
    bool software;           /* a CPU implementation (lavapipe) */
    bool usable;             /* has a compute queue and Vulkan >= 1.1 */
    vk_caps caps;
} vk_device_info;

/* Name of a device kind ("discrete", "integrated", "virtual", "cpu", "other"). */
const char *vk_device_kind_name(vk_device_kind k);

/* List the Vulkan devices into `out` (at most `cap`). Returns the number of
 * devices (may exceed cap), or -1 when there is no Vulkan loader / driver
 * (message in err). */
int vk_list_devices(vk_device_info *out, int cap, char *err, size_t errlen);

/* Index of the device the automatic choice takes among `n` listed devices:
 * the first usable discrete, then integrated, then virtual/other, then
 * software. -1 when none is usable. */
int vk_pick_device(const vk_device_info *devs, int n);

/* The device index asked for by GGSCOPE_VK_DEVICE, or -1 when unset or not a
 * number. */
int vk_env_device(void);

/* Whether the Vulkan backend has kernels for weights of ggml type `type`
 * (mat-vec, mat-mat, get_rows and the expert products). */
bool vk_type_supported(uint32_t type);

/* Whether the Vulkan backend can run model `m` (every weight type has
 * kernels, the experts' included; head dimension <= 256; at most 1024
 * experts, 64 per token); when not, says why in `why`. */
bool vk_model_supported(const model *m, char *why, size_t cap);

/* Create the Vulkan backend on device `device` (-1: GGSCOPE_VK_DEVICE, else
 * the automatic choice). NULL on failure with a message in err. Free with
 * backend_free. */
backend *backend_vulkan_new(int device, char *err, size_t errlen);

/* Whether `b` is a Vulkan backend. */
bool backend_is_vulkan(const backend *b);

/* The device a Vulkan backend runs on (NULL for other backends). */
const vk_device_info *backend_vulkan_device(const backend *b);

/* Counters since creation (or the last reset). */
typedef struct {
    uint64_t dispatches;
    uint64_t barriers;
    uint64_t submits;
    uint64_t bytes_uploaded;      /* weights and buffer writes */
    uint64_t weight_bytes_read;   /* weight bytes bound by matmul/get_rows dispatches */
    uint64_t descriptor_sets;     /* descriptor sets allocated (all at first use) */
    uint64_t pipelines;           /* pipelines created */
} backend_vulkan_stats;

/* Counters of a Vulkan backend; zeroes for other backends. */
backend_vulkan_stats backend_vulkan_get_stats(const backend *b);
void backend_vulkan_reset_stats(backend *b);

/* Device time per dispatch, from timestamp queries written after every
 * dispatch while profiling is on, summed by shader variant and weight shape
 * (the time of a dispatch includes the barrier recorded before it). */
typedef struct {
    char shader[40];     /* the variant: "mul_mat_rows_q4_0" */
    uint32_t ne0, ne1;   /* weight columns x rows of matmul / get_rows, else 0 */
    uint64_t count;      /* dispatches timed */
    double ms;           /* their device time, milliseconds */
} backend_vulkan_prof_row;

/* Start (clearing the table) or stop timing dispatches. False when `b` is
 * not a Vulkan backend or its queue has no timestamps (nothing changes). */
bool backend_vulkan_set_profile(backend *b, bool on);
/* The table so far: up to `cap` rows into `out`, in order of first use;
 * returns the number of rows. Dispatches past 4095 in one submission are
 * not timed. */
int backend_vulkan_profile(const backend *b, backend_vulkan_prof_row *out, int cap);

/* Errors reported by the validation layer so far (0 when it is not enabled).
 * The layer is enabled by VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation or
 * GGSCOPE_VK_VALIDATE=1; the last message is in backend_vulkan_last_message. */
int backend_vulkan_validation_errors(const backend *b);
const char *backend_vulkan_last_message(const backend *b);

/* Progress of weight uploads: called after each uploaded piece with the
 * bytes uploaded so far (counted from this call) out of `total` (what the
 * caller announced, e.g. model_weight_bytes before model_prepare). */
typedef void (*backend_vulkan_progress_fn)(void *user, uint64_t done, uint64_t total);
void backend_vulkan_set_progress(backend *b, backend_vulkan_progress_fn fn, void *user,
                                 uint64_t total);

/* Lower the largest window a weight is bound in (maxStorageBufferRange by
 * default), to test the code that splits big tensors on a small device.
 * 0 restores the device's limit. */
void backend_vulkan_set_max_range(backend *b, uint64_t bytes);

#endif
