/* The Vulkan backend: context creation (device, queue, memory types,
 * layouts), buffers, weights, and the backend_ops table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggtype.h"
#include "vk_internal.h"

enum { ARENA_BYTES = 8u << 20, STAGING_BYTES = 32u << 20, INLINE_WRITE_MAX = 1u << 16 };

static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                               VkDebugUtilsMessageTypeFlagsEXT type,
                                               const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)type;
    vk_ctx *c = user;
    if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        c->validation_errors++;
        snprintf(c->last_msg, sizeof c->last_msg, "validation: %s", data && data->pMessage ? data->pMessage : "?");
    }
    return VK_FALSE;
}

static void ctx_destroy(vk_ctx *c)
{
    if (!c)
        return;
    if (c->dev) {
        vkDeviceWaitIdle(c->dev);
        vk_buffer_destroy(c, &c->arena);
        vk_buffer_destroy(c, &c->staging);
        vk_pipelines_destroy(c);
        vk_prof_destroy(c);
        for (int i = 0; i <= VK_MAX_BINDINGS; i++) {
            if (c->pl[i])
                vkDestroyPipelineLayout(c->dev, c->pl[i], NULL);
            if (c->dsl[i])
                vkDestroyDescriptorSetLayout(c->dev, c->dsl[i], NULL);
        }
        if (c->fence)
            vkDestroyFence(c->dev, c->fence, NULL);
        if (c->cpool)
            vkDestroyCommandPool(c->dev, c->cpool, NULL);
        vkDestroyDevice(c->dev, NULL);
    }
    if (c->dbg) {
        PFN_vkDestroyDebugUtilsMessengerEXT fn =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(c->inst, "vkDestroyDebugUtilsMessengerEXT");
        if (fn)
            fn(c->inst, c->dbg, NULL);
    }
    if (c->inst)
        vkDestroyInstance(c->inst, NULL);
    free(c);
}

static int pick_memory_types(vk_ctx *c)
{
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(c->phys, &mp);
    int dev = -1, host = -1, host_cached = -1;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
        if (dev < 0 && (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            dev = (int)i;
        bool hv = (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        if (hv && host < 0)
            host = (int)i;
        if (hv && host_cached < 0 && (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT))
            host_cached = (int)i;
    }
    if (host_cached >= 0)
        host = host_cached;
    if (dev < 0)
        dev = host;
    if (dev < 0 || host < 0)
        return -1;
    c->mem_device = (uint32_t)dev;
    c->mem_host = (uint32_t)host;
    return 0;
}

static vk_ctx *ctx_create(int device, char *err, size_t errlen)
{
    vk_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    bool dbg = false;
    VkResult r = vk_instance_create(&c->inst, &dbg);
    if (r != VK_SUCCESS) {
        snprintf(err, errlen, "no Vulkan driver (vkCreateInstance: %d)", (int)r);
        c->inst = VK_NULL_HANDLE;
        goto fail;
    }
    if (dbg) {
        PFN_vkCreateDebugUtilsMessengerEXT fn =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(c->inst, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT di = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            .pfnUserCallback = on_debug,
            .pUserData = c,
        };
        if (fn)
            fn(c->inst, &di, NULL, &c->dbg);
    }
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(c->inst, &n, NULL);
    if (n == 0) {
        snprintf(err, errlen, "no Vulkan device found");
        goto fail;
    }
    VkPhysicalDevice *pds = calloc(n, sizeof *pds);
    vk_device_info *infos = calloc(n, sizeof *infos);
    if (!pds || !infos) {
        free(pds);
        free(infos);
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    vkEnumeratePhysicalDevices(c->inst, &n, pds);
    for (uint32_t i = 0; i < n; i++)
        vk_device_describe(pds[i], (int)i, &infos[i]);
    if (device < 0)
        device = vk_env_device();
    if (device < 0)
        device = vk_pick_device(infos, (int)n);
    if (device < 0 || (uint32_t)device >= n || !infos[device].usable) {
        if (device >= 0 && (uint32_t)device >= n)
            snprintf(err, errlen, "no Vulkan device %d (there are %u)", device, n);
        else if (device >= 0)
            snprintf(err, errlen, "Vulkan device %d (%s) is not usable for compute", device, infos[device].name);
        else
            snprintf(err, errlen, "no usable Vulkan device");
        free(pds);
        free(infos);
        goto fail;
    }
    c->phys = pds[device];
    c->info = infos[device];
    free(pds);
    free(infos);
    c->max_range = c->info.caps.max_range;
    c->wmax_range = c->max_range;
    c->mv_rows = 8;
    const char *fa = getenv("GGSCOPE_VK_FAIL_AFTER");
    if (fa && atoi(fa) > 0)
        c->fail_after = (uint64_t)atoi(fa);
    const char *nr = getenv("GGSCOPE_VK_MV_ROWS");
    if (nr && atoi(nr) >= 1 && atoi(nr) <= 16)
        c->mv_rows = (uint32_t)atoi(nr);
    c->align = c->info.caps.min_align ? c->info.caps.min_align : 4;
    if (c->align < 4)
        c->align = 4;
    if (getenv("GGSCOPE_VK_NO_SUBGROUP"))
        c->info.caps.subgroup_arith = c->info.caps.subgroup_ballot = false;
    /* A row per invocation on CPU devices (llvmpipe: a subgroup is one SIMD
     * vector, see mul_mat_rows.comp); GGSCOPE_VK_ROWS=0/1 overrides. */
    const vk_caps *cp = &c->info.caps;
    const bool rows_ok = cp->subgroup_ballot && cp->int64 && cp->subgroup_size >= 8 && cp->subgroup_size <= 128 &&
                         cp->subgroup_size <= cp->max_wg_size;
    const char *rl = getenv("GGSCOPE_VK_ROWS");
    c->rows_layout = rows_ok && (rl ? atoi(rl) != 0 : c->info.software);

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    if (nq > 16)
        nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &nq, qf);
    int fam = -1;
    for (uint32_t i = 0; i < nq; i++)   /* a compute-only family first */
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
            fam = (int)i;
            break;
        }
    for (uint32_t i = 0; i < nq && fam < 0; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            fam = (int)i;
    if (fam < 0) {
        snprintf(err, errlen, "%s has no compute queue", c->info.name);
        goto fail;
    }
    c->qfam = (uint32_t)fam;
    vk_prof_init(c, &qf[fam]);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = c->qfam,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    VkPhysicalDeviceFeatures feat = {.shaderInt64 = c->info.caps.int64};
    VkDeviceCreateInfo di = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qi,
        .pEnabledFeatures = &feat,
    };
    r = vkCreateDevice(c->phys, &di, NULL, &c->dev);
    if (r != VK_SUCCESS) {
        c->dev = VK_NULL_HANDLE;
        snprintf(err, errlen, "vkCreateDevice failed on %s (%d)", c->info.name, (int)r);
        goto fail;
    }
    vkGetDeviceQueue(c->dev, c->qfam, 0, &c->queue);
    if (pick_memory_types(c) != 0) {
        snprintf(err, errlen, "%s has no usable memory types", c->info.name);
        goto fail;
    }
    VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = c->qfam,
    };
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (vkCreateCommandPool(c->dev, &pi, NULL, &c->cpool) != VK_SUCCESS ||
        vkCreateFence(c->dev, &fi, NULL, &c->fence) != VK_SUCCESS) {
        snprintf(err, errlen, "cannot create a command pool on %s", c->info.name);
        goto fail;
    }
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = c->cpool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if (vkAllocateCommandBuffers(c->dev, &ai, &c->cmd) != VK_SUCCESS) {
        snprintf(err, errlen, "cannot allocate a command buffer");
        goto fail;
    }
    for (int nb = 1; nb <= VK_MAX_BINDINGS; nb++) {
        VkDescriptorSetLayoutBinding lb[VK_MAX_BINDINGS];
        for (int i = 0; i < nb; i++)
            lb[i] = (VkDescriptorSetLayoutBinding){
                .binding = (uint32_t)i,
                .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                .descriptorCount = 1,
                .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
            };
        VkDescriptorSetLayoutCreateInfo li = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            .bindingCount = (uint32_t)nb,
            .pBindings = lb,
        };
        VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = VK_PUSH_MAX};
        if (vkCreateDescriptorSetLayout(c->dev, &li, NULL, &c->dsl[nb]) != VK_SUCCESS) {
            snprintf(err, errlen, "cannot create descriptor set layouts");
            goto fail;
        }
        VkPipelineLayoutCreateInfo pli = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
            .setLayoutCount = 1,
            .pSetLayouts = &c->dsl[nb],
            .pushConstantRangeCount = 1,
            .pPushConstantRanges = &pr,
        };
        if (vkCreatePipelineLayout(c->dev, &pli, NULL, &c->pl[nb]) != VK_SUCCESS) {
            snprintf(err, errlen, "cannot create pipeline layouts");
            goto fail;
        }
    }
    if (vk_buffer_create(c, ARENA_BYTES, true, &c->arena) != 0 ||
        vk_buffer_create(c, STAGING_BYTES, true, &c->staging) != 0) {
        snprintf(err, errlen, "cannot allocate host-visible buffers: %s", c->last_msg);
        goto fail;
    }
    return c;
fail:
    ctx_destroy(c);
    return NULL;
}

/* ---- buffers ---- */

static backend_buf *vb_new(void *ctx, backend_dtype dtype, size_t n)
{
    vk_ctx *c = ctx;
    backend_buf *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    size_t es = dtype == BACKEND_F16 ? 2 : 4;
    if (n > SIZE_MAX / es / 2 || vk_buffer_create(c, (VkDeviceSize)(n ? n : 1) * es, false, &b->b) != 0) {
        free(b);
        return NULL;
    }
    b->dtype = dtype;
    b->n = n;
    if (vk_begin(c) != 0) {
        vk_buffer_destroy(c, &b->b);
        free(b);
        return NULL;
    }
    vk_before_transfer(c, &b->b, 0, b->b.size, true);
    vkCmdFillBuffer(c->cmd, b->b.buf, 0, VK_WHOLE_SIZE, 0);
    return b;
}

static void vb_free(void *ctx, backend_buf *b)
{
    vk_ctx *c = ctx;
    if (!b)
        return;
    vk_flush(c);   /* pending commands may use it */
    vk_buffer_destroy(c, &b->b);
    free(b);
}

/* Elements [off, off + n) of b as bytes [lo, lo + len); false when out of
 * range. */
static bool byte_span(const backend_buf *b, size_t off, size_t n, VkDeviceSize *lo, VkDeviceSize *len)
{
    if (!b || off > b->n || n > b->n - off)
        return false;
    size_t es = b->dtype == BACKEND_F16 ? 2 : 4;
    *lo = (VkDeviceSize)off * es;
    *len = (VkDeviceSize)n * es;
    return true;
}

static int vb_write(void *ctx, backend_buf *b, size_t off, const void *src, size_t n)
{
    vk_ctx *c = ctx;
    VkDeviceSize lo, len;
    if (!byte_span(b, off, n, &lo, &len))
        return BACKEND_EARG;
    if (len == 0)
        return 0;
    if (len <= INLINE_WRITE_MAX && lo % 4 == 0 && len % 4 == 0) {
        /* Small writes are recorded in order with the ops (no extra submit). */
        int64_t ao = vk_arena_alloc(c, len);
        int rc = ao < 0 ? BACKEND_EARG : vk_begin(c);
        if (rc != 0)
            return rc;
        memcpy((uint8_t *)c->arena.map + ao, src, len);
        vk_before_transfer(c, &b->b, lo, lo + len, true);
        VkBufferCopy cp = {.srcOffset = (VkDeviceSize)ao, .dstOffset = lo, .size = len};
        vkCmdCopyBuffer(c->cmd, c->arena.buf, b->b.buf, 1, &cp);
        c->stats.bytes_uploaded += len;
        return 0;
    }
    if (lo % 4 || len % 4) {   /* copies need 4-byte granularity: merge edge halves */
        VkDeviceSize a = lo & ~(VkDeviceSize)3, e = (lo + len + 3) & ~(VkDeviceSize)3;
        uint8_t *tmp = malloc(e - a);
        if (!tmp)
            return BACKEND_ENOMEM;
        int rc = vk_buffer_download(c, &b->b, a, tmp, e - a);
        if (rc == 0) {
            memcpy(tmp + (lo - a), src, len);
            rc = vk_buffer_upload(c, &b->b, a, tmp, e - a);
        }
        free(tmp);
        return rc;
    }
    return vk_buffer_upload(c, &b->b, lo, src, len);
}

static int vb_read(void *ctx, backend_buf *b, size_t off, void *dst, size_t n)
{
    vk_ctx *c = ctx;
    VkDeviceSize lo, len;
    if (!byte_span(b, off, n, &lo, &len))
        return BACKEND_EARG;
    if (len == 0)
        return vk_flush(c);
    if (lo % 4 || len % 4) {
        VkDeviceSize a = lo & ~(VkDeviceSize)3, e = (lo + len + 3) & ~(VkDeviceSize)3;
        uint8_t *tmp = malloc(e - a);
        if (!tmp)
            return BACKEND_ENOMEM;
        int rc = vk_buffer_download(c, &b->b, a, tmp, e - a);
        if (rc == 0)
            memcpy(dst, tmp + (lo - a), len);
        free(tmp);
        return rc;
    }
    return vk_buffer_download(c, &b->b, lo, dst, len);
}

/* ---- weights ---- */

static int weight_upload(vk_ctx *c, const backend_weight *w, vk_weight **out)
{
    bool ovf = false;
    const ggtype_traits *tr = ggtype_get(w->type);
    if (!tr || (!vk_type_supported(w->type)))
        return BACKEND_EUNSUPPORTED;
    uint64_t rb = ggtype_row_size(w->type, w->ne0, &ovf);
    const uint64_t n_exp = w->ne2 > 1 ? w->ne2 : 1;   /* a 3-D weight: its experts one after another */
    if (ovf || rb == 0 || rb != w->row_bytes || w->ne1 == 0 || w->ne1 > UINT32_MAX / 2 ||
        w->ne0 > UINT32_MAX / 2 || rb > UINT32_MAX / 4 || w->ne1 > UINT64_MAX / rb || !w->data ||
        n_exp > UINT32_MAX / 2 || rb * w->ne1 > UINT64_MAX / 2 / n_exp)
        return BACKEND_EARG;
    vk_weight *vw = calloc(1, sizeof *vw);
    if (!vw)
        return BACKEND_ENOMEM;
    uint64_t bytes = rb * w->ne1 * n_exp;
    int rc = vk_buffer_create(c, bytes, false, &vw->b);
    if (rc == 0)
        rc = vk_buffer_upload(c, &vw->b, 0, w->data, bytes);
    if (rc != 0) {
        vk_buffer_destroy(c, &vw->b);
        free(vw);
        return rc;
    }
    vw->owner = c;
    vw->type = w->type;
    vw->ne0 = w->ne0;
    vw->ne1 = w->ne1;
    vw->row_bytes = rb;
    vw->ne2 = w->ne2;
    *out = vw;
    return 0;
}

int vk_weight_get(vk_ctx *c, const backend_weight *w, const vk_weight **out)
{
    if (c->lost)
        return BACKEND_EDEVICE;
    const vk_weight *vw = w->priv;
    if (!vw || vw->owner != c || vw->type != w->type || vw->ne0 != w->ne0 || vw->ne1 != w->ne1 ||
        vw->ne2 != w->ne2) {
        snprintf(c->last_msg, sizeof c->last_msg,
                 "weight %s is not prepared for this Vulkan backend (weight_prepare / model_prepare)",
                 w->name ? w->name : "(unnamed)");
        return BACKEND_EARG;
    }
    *out = vw;
    return 0;
}

static int vw_prepare(void *ctx, backend_weight *w)
{
    vk_ctx *c = ctx;
    if (w->priv)
        return ((const vk_weight *)w->priv)->owner == c ? 0 : BACKEND_EARG;
    if (c->lost)
        return BACKEND_EDEVICE;
    vk_weight *vw;
    int rc = weight_upload(c, w, &vw);
    if (rc == 0)
        w->priv = vw;
    return rc;
}

static void vw_release(void *ctx, backend_weight *w)
{
    vk_ctx *c = ctx;
    if (!w->priv)
        return;
    vk_flush(c);   /* pending commands may read it */
    vk_weight *vw = w->priv;
    vk_buffer_destroy(c, &vw->b);
    free(vw);
    w->priv = NULL;
}

static int v_sync(void *ctx)
{
    return vk_flush(ctx);
}

static void v_free(void *ctx)
{
    ctx_destroy(ctx);
}

static const backend_ops VK_OPS = {
    .name = "vulkan",
    .caps = BACKEND_CAP_ROPE_EXT | BACKEND_CAP_ATTN_SWA | BACKEND_CAP_ATTN_SINKS | BACKEND_CAP_MOE,
    .free = v_free,
    .buf_new = vb_new,
    .buf_free = vb_free,
    .buf_write = vb_write,
    .buf_read = vb_read,
    .weight_prepare = vw_prepare,
    .weight_release = vw_release,
    .get_rows = vk_op_get_rows,
    .rms_norm_mul = vk_op_rms_norm_mul,
    .add_w = vk_op_add_w,
    .add = vk_op_add,
    .matmul = vk_op_matmul,
    .rope = vk_op_rope,
    .store_f16 = vk_op_store_f16,
    .attention = vk_op_attention,
    .silu_mul = vk_op_silu_mul,
    .gelu_mul = vk_op_gelu_mul,
    .scale = vk_op_scale,
    .moe_route = vk_op_moe_route,
    .matmul_id = vk_op_matmul_id,
    .add_id = vk_op_add_id,
    .swiglu_oai = vk_op_swiglu_oai,
    .moe_combine = vk_op_moe_combine,
    .sync = v_sync,
};

backend *backend_vulkan_new(int device, char *err, size_t errlen)
{
    vk_ctx *c = ctx_create(device, err, errlen);
    if (!c)
        return NULL;
    backend *b = calloc(1, sizeof *b);
    if (!b) {
        ctx_destroy(c);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b->ops = &VK_OPS;
    b->ctx = c;
    return b;
}

bool backend_is_vulkan(const backend *b)
{
    return b && b->ops == &VK_OPS;
}

const vk_device_info *backend_vulkan_device(const backend *b)
{
    return backend_is_vulkan(b) ? &((vk_ctx *)b->ctx)->info : NULL;
}

backend_vulkan_stats backend_vulkan_get_stats(const backend *b)
{
    backend_vulkan_stats z = {0};
    return backend_is_vulkan(b) ? ((vk_ctx *)b->ctx)->stats : z;
}

void backend_vulkan_reset_stats(backend *b)
{
    if (backend_is_vulkan(b))
        memset(&((vk_ctx *)b->ctx)->stats, 0, sizeof(backend_vulkan_stats));
}

int backend_vulkan_validation_errors(const backend *b)
{
    return backend_is_vulkan(b) ? ((vk_ctx *)b->ctx)->validation_errors : 0;
}

const char *backend_vulkan_last_message(const backend *b)
{
    return backend_is_vulkan(b) ? ((vk_ctx *)b->ctx)->last_msg : "";
}

void backend_vulkan_set_progress(backend *b, backend_vulkan_progress_fn fn, void *user, uint64_t total)
{
    if (!backend_is_vulkan(b))
        return;
    vk_ctx *c = b->ctx;
    c->progress = fn;
    c->progress_user = user;
    c->progress_total = total;
    c->progress_done = 0;
}

void backend_vulkan_set_max_range(backend *b, uint64_t bytes)
{
    if (!backend_is_vulkan(b))
        return;
    vk_ctx *c = b->ctx;
    c->wmax_range = bytes && bytes < c->info.caps.max_range ? bytes : c->info.caps.max_range;
}
