/* Pipelines (one per shader variant and specialisation, found by index in
 * a table and created once on first use), the descriptor-set cache (sets
 * are allocated the first time a combination of buffers is bound and reused
 * afterwards: no per-token allocation), command buffer recording with
 * hazard-driven barriers, and submission. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

int vk_fail(vk_ctx *c, VkResult r, const char *what)
{
    snprintf(c->last_msg, sizeof c->last_msg, "%s failed (VkResult %d)", what, (int)r);
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY ||
        r == VK_ERROR_OUT_OF_POOL_MEMORY)
        return BACKEND_ENOMEM;
    if (r == VK_ERROR_DEVICE_LOST)
        c->lost = true;
    return BACKEND_EDEVICE;
}

uint32_t vk_wg_size(const vk_ctx *c)
{
    (void)c;
    return 64;
}

void vk_spec_values(const vk_ctx *c, vk_spec s, uint32_t out[2])
{
    out[0] = out[1] = 0;
    switch (s) {
    case VK_SPEC_MATVEC: out[0] = 1; out[1] = c->mv_rows; break;
    case VK_SPEC_MATMAT: out[0] = 8; out[1] = 2; break;
    case VK_SPEC_NEOX: out[0] = 1; break;
    case VK_SPEC_ROWS: out[0] = 1; out[1] = 1; break;   /* the shader's defines */
    default: break;
    }
}

uint32_t vk_spec_wg(const vk_ctx *c, vk_spec s)
{
    if (s == VK_SPEC_ROWS)
        return c->info.caps.subgroup_size;
    return vk_wg_size(c);
}

int vk_pipeline_get(vk_ctx *c, vk_shader_id v, vk_spec s)
{
    if ((unsigned)v >= VK_SH_COUNT || (unsigned)s >= VK_SPEC_COUNT)
        return -1;
    const int pi = (int)v * VK_SPEC_COUNT + (int)s;
    if (c->pipes[pi])
        return pi;
    const vk_shader_blob *blob = &vk_shader_table[v];
    uint32_t spec[3] = {vk_spec_wg(c, s), 0, 0};
    vk_spec_values(c, s, spec + 1);
    VkShaderModuleCreateInfo mi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = blob->size,
        .pCode = blob->code,
    };
    VkShaderModule mod;
    VkResult r = vkCreateShaderModule(c->dev, &mi, NULL, &mod);
    if (r != VK_SUCCESS) {
        vk_fail(c, r, "vkCreateShaderModule");
        return -1;
    }
    VkSpecializationMapEntry me[3] = {
        {.constantID = 0, .offset = 0, .size = 4},
        {.constantID = 1, .offset = 4, .size = 4},
        {.constantID = 2, .offset = 8, .size = 4},
    };
    VkSpecializationInfo si = {.mapEntryCount = 3, .pMapEntries = me, .dataSize = 12, .pData = spec};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = mod,
            .pName = "main",
            .pSpecializationInfo = &si,
        },
        .layout = c->pl[blob->n_bindings],
    };
    r = vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &ci, NULL, &c->pipes[pi]);
    vkDestroyShaderModule(c->dev, mod, NULL);
    if (r != VK_SUCCESS) {
        c->pipes[pi] = VK_NULL_HANDLE;
        vk_fail(c, r, "vkCreateComputePipelines");
        return -1;
    }
    c->stats.pipelines++;
    return pi;
}

void vk_pipelines_destroy(vk_ctx *c)
{
    for (size_t i = 0; i < sizeof c->pipes / sizeof c->pipes[0]; i++)
        if (c->pipes[i]) {
            vkDestroyPipeline(c->dev, c->pipes[i], NULL);
            c->pipes[i] = VK_NULL_HANDLE;
        }
    for (int i = 0; i < c->n_dpools; i++)
        vkDestroyDescriptorPool(c->dev, c->dpools[i], NULL);
    free(c->dpools);
    c->dpools = NULL;
    c->n_dpools = 0;
    free(c->dsets);
    c->dsets = NULL;
    c->dsets_cap = c->dsets_n = 0;
}

/* ---- descriptor sets ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xFF51AFD7ED558CCDull;
}

static int dset_grow(vk_ctx *c)
{
    size_t cap = c->dsets_cap ? c->dsets_cap * 2 : 1024;
    vk_dset_entry *n = calloc(cap, sizeof *n);
    if (!n)
        return BACKEND_ENOMEM;
    for (size_t i = 0; i < c->dsets_cap; i++) {
        if (!c->dsets[i].used)
            continue;
        size_t j = c->dsets[i].hash & (cap - 1);
        while (n[j].used)
            j = (j + 1) & (cap - 1);
        n[j] = c->dsets[i];
    }
    free(c->dsets);
    c->dsets = n;
    c->dsets_cap = cap;
    return 0;
}

static int dset_get(vk_ctx *c, const vk_binding *b, int nb, VkDescriptorSet *out)
{
    uint64_t h = mix(0, (uint64_t)nb);
    for (int i = 0; i < nb; i++) {
        h = mix(h, b[i].b->id);
        h = mix(h, b[i].offset);
        h = mix(h, b[i].range);
    }
    if (c->dsets_n * 2 >= c->dsets_cap && dset_grow(c) != 0)
        return BACKEND_ENOMEM;
    size_t j = h & (c->dsets_cap - 1);
    for (; c->dsets[j].used; j = (j + 1) & (c->dsets_cap - 1)) {
        vk_dset_entry *e = &c->dsets[j];
        if (e->hash != h || e->n != nb)
            continue;
        bool same = true;
        for (int i = 0; i < nb && same; i++)
            same = e->bufs[i] == b[i].b->buf && e->ids[i] == b[i].b->id && e->offs[i] == b[i].offset && e->ranges[i] == b[i].range;
        if (same) {
            *out = e->set;
            return 0;
        }
    }
    if (c->dpool_left == 0) {
        VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 256 * VK_MAX_BINDINGS};
        VkDescriptorPoolCreateInfo pi = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
            .maxSets = 256,
            .poolSizeCount = 1,
            .pPoolSizes = &ps,
        };
        VkDescriptorPool *np = realloc(c->dpools, (size_t)(c->n_dpools + 1) * sizeof *np);
        if (!np)
            return BACKEND_ENOMEM;
        c->dpools = np;
        VkResult r = vkCreateDescriptorPool(c->dev, &pi, NULL, &c->dpools[c->n_dpools]);
        if (r != VK_SUCCESS)
            return vk_fail(c, r, "vkCreateDescriptorPool");
        c->n_dpools++;
        c->dpool_left = 256;
    }
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = c->dpools[c->n_dpools - 1],
        .descriptorSetCount = 1,
        .pSetLayouts = &c->dsl[nb],
    };
    VkDescriptorSet set;
    VkResult r = vkAllocateDescriptorSets(c->dev, &ai, &set);
    if (r != VK_SUCCESS)
        return vk_fail(c, r, "vkAllocateDescriptorSets");
    c->dpool_left--;
    c->stats.descriptor_sets++;
    VkDescriptorBufferInfo bi[VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[VK_MAX_BINDINGS];
    vk_dset_entry *e = &c->dsets[j];
    memset(e, 0, sizeof *e);
    for (int i = 0; i < nb; i++) {
        bi[i] = (VkDescriptorBufferInfo){.buffer = b[i].b->buf, .offset = b[i].offset, .range = b[i].range};
        w[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = (uint32_t)i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &bi[i],
        };
        e->bufs[i] = b[i].b->buf;
        e->ids[i] = b[i].b->id;
        e->offs[i] = b[i].offset;
        e->ranges[i] = b[i].range;
    }
    vkUpdateDescriptorSets(c->dev, (uint32_t)nb, w, 0, NULL);
    e->hash = h;
    e->n = nb;
    e->set = set;
    e->used = true;
    c->dsets_n++;
    *out = set;
    return 0;
}

/* ---- recording ---- */

int vk_begin(vk_ctx *c)
{
    if (c->lost)
        return BACKEND_EDEVICE;
    if (c->recording)
        return 0;
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VkResult r = vkResetCommandBuffer(c->cmd, 0);
    if (r == VK_SUCCESS)
        r = vkBeginCommandBuffer(c->cmd, &bi);
    if (r != VK_SUCCESS)
        return vk_fail(c, r, "vkBeginCommandBuffer");
    c->recording = true;
    c->n_acc = 0;
    vk_prof_begin(c);
    return 0;
}

int vk_flush(vk_ctx *c)
{
    if (c->lost)
        return BACKEND_EDEVICE;
    if (!c->recording)
        return 0;
    c->recording = false;
    /* Everything written is made available to later submissions. */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    if (c->n_acc > 0)
        vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                             &mb, 0, NULL, 0, NULL);
    c->n_acc = 0;
    VkResult r = vkEndCommandBuffer(c->cmd);
    if (r != VK_SUCCESS)
        return vk_fail(c, r, "vkEndCommandBuffer");
    if (c->has_dispatch && c->fail_after && c->compute_submits >= c->fail_after)
        return vk_fail(c, VK_ERROR_DEVICE_LOST, "vkQueueSubmit (simulated by GGSCOPE_VK_FAIL_AFTER)");
    c->compute_submits += c->has_dispatch;
    c->has_dispatch = false;
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &c->cmd,
    };
    r = vkResetFences(c->dev, 1, &c->fence);
    if (r == VK_SUCCESS)
        r = vkQueueSubmit(c->queue, 1, &si, c->fence);
    if (r != VK_SUCCESS)
        return vk_fail(c, r, "vkQueueSubmit");
    r = vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS)
        return vk_fail(c, r, "vkWaitForFences");
    c->stats.submits++;
    vk_prof_collect(c);
    c->arena_used = 0;
    c->rope_valid = false;
    return 0;
}

static void barrier(vk_ctx *c)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb,
                         0, NULL, 0, NULL);
    c->stats.barriers++;
    c->n_acc = 0;
}

/* Whether accessing [lo,hi) of buffer id (writing when `write`) conflicts
 * with an access recorded since the last barrier (RAW, WAW or WAR). */
static bool hazard(const vk_ctx *c, uint32_t id, VkDeviceSize lo, VkDeviceSize hi, bool write)
{
    for (int i = 0; i < c->n_acc; i++) {
        const vk_access *a = &c->acc[i];
        if (a->id != id || a->hi <= lo || hi <= a->lo)
            continue;
        if (a->write || write)
            return true;
    }
    return false;
}

static void note(vk_ctx *c, uint32_t id, VkDeviceSize lo, VkDeviceSize hi, bool write)
{
    if (c->n_acc == VK_MAX_ACCESS)
        barrier(c);
    c->acc[c->n_acc++] = (vk_access){.id = id, .lo = lo, .hi = hi, .write = write};
}

void vk_before_transfer(vk_ctx *c, const vk_buffer *b, VkDeviceSize lo, VkDeviceSize hi, bool write)
{
    if (hazard(c, b->id, lo, hi, write))
        barrier(c);
    note(c, b->id, lo, hi, write);
}

void vk_note_transfer_write(vk_ctx *c, const vk_buffer *b, VkDeviceSize lo, VkDeviceSize hi)
{
    (void)b;
    (void)lo;
    (void)hi;
    /* vk_before_transfer noted the write already; nothing more to track. */
    (void)c;
}

int vk_bind_range(vk_ctx *c, const vk_buffer *b, VkDeviceSize lo, VkDeviceSize hi, bool write,
                  vk_binding *out, VkDeviceSize *adj)
{
    return vk_bind_window(c, b, lo, hi, write, c->max_range, out, adj);
}

int vk_bind_window(vk_ctx *c, const vk_buffer *b, VkDeviceSize lo, VkDeviceSize hi, bool write,
                   VkDeviceSize limit, vk_binding *out, VkDeviceSize *adj)
{
    if (hi > b->size || lo > hi)
        return BACKEND_EARG;
    VkDeviceSize start = 0, range = b->size & ~(VkDeviceSize)3;
    if (range > limit) {
        start = lo - lo % c->align;
        range = b->size - start;
        if (range > limit)
            range = limit;
        range &= ~(VkDeviceSize)3;
        if (hi > start + range) {
            snprintf(c->last_msg, sizeof c->last_msg,
                     "an operand of %llu bytes does not fit one storage-buffer binding",
                     (unsigned long long)(hi - lo));
            return BACKEND_EUNSUPPORTED;
        }
    }
    *out = (vk_binding){.b = b, .offset = start, .range = range, .write = write, .acc_lo = lo, .acc_hi = hi};
    *adj = lo - start;
    return 0;
}

int vk_dispatch(vk_ctx *c, int pi, const vk_binding *b, int nb, const void *push, size_t push_size,
                uint64_t groups, uint32_t groups_z)
{
    if (pi < 0)
        return BACKEND_EUNSUPPORTED;
    if (groups == 0 || groups_z == 0)
        return 0;
    if (nb != vk_shader_table[pi / VK_SPEC_COUNT].n_bindings)
        return BACKEND_EARG;
    int rc = vk_begin(c);
    if (rc != 0)
        return rc;
    VkDescriptorSet set;
    if ((rc = dset_get(c, b, nb, &set)) != 0)
        return rc;
    bool need = false;
    for (int i = 0; i < nb && !need; i++)
        need = hazard(c, b[i].b->id, b[i].acc_lo, b[i].acc_hi, b[i].write);
    if (need)
        barrier(c);
    for (int i = 0; i < nb; i++)
        note(c, b[i].b->id, b[i].acc_lo, b[i].acc_hi, b[i].write);
    const uint64_t maxx = 65535;
    uint32_t gx = groups > maxx ? (uint32_t)maxx : (uint32_t)groups;
    uint64_t gy = (groups + gx - 1) / gx;
    if (gy > maxx)
        return BACKEND_EARG;
    vkCmdBindPipeline(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c->pipes[pi]);
    vkCmdBindDescriptorSets(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c->pl[nb], 0, 1, &set, 0, NULL);
    vkCmdPushConstants(c->cmd, c->pl[nb], VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)push_size, push);
    vkCmdDispatch(c->cmd, gx, (uint32_t)gy, groups_z);
    vk_prof_dispatch(c, pi);
    c->stats.dispatches++;
    c->has_dispatch = true;
    return 0;
}
