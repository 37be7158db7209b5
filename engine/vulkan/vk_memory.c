/* Device memory: buffers, staging uploads and downloads, the per-submission
 * arena of small host data (ids, positions, rope tables). */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

enum { VK_PAD = 16 };

int vk_buffer_create(vk_ctx *c, VkDeviceSize size, bool host, vk_buffer *out)
{
    memset(out, 0, sizeof *out);
    VkDeviceSize sz = (size + VK_PAD + 15) & ~(VkDeviceSize)15;
    if (c->info.caps.max_alloc && sz > c->info.caps.max_alloc) {
        snprintf(c->last_msg, sizeof c->last_msg, "buffer of %llu bytes exceeds the device's largest allocation",
                 (unsigned long long)sz);
        return BACKEND_ENOMEM;
    }
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = sz,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(c->dev, &bi, NULL, &out->buf);
    if (r != VK_SUCCESS)
        return vk_fail(c, r, "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(c->dev, out->buf, &req);
    uint32_t type = host ? c->mem_host : c->mem_device;
    if (!(req.memoryTypeBits & (1u << type))) {
        vkDestroyBuffer(c->dev, out->buf, NULL);
        out->buf = VK_NULL_HANDLE;
        snprintf(c->last_msg, sizeof c->last_msg, "no suitable memory type for a buffer");
        return BACKEND_EUNSUPPORTED;
    }
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    r = vkAllocateMemory(c->dev, &ai, NULL, &out->mem);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(c->dev, out->buf, NULL);
        out->buf = VK_NULL_HANDLE;
        return vk_fail(c, r, "vkAllocateMemory");
    }
    r = vkBindBufferMemory(c->dev, out->buf, out->mem, 0);
    if (r == VK_SUCCESS && host)
        r = vkMapMemory(c->dev, out->mem, 0, VK_WHOLE_SIZE, 0, &out->map);
    if (r != VK_SUCCESS) {
        vk_buffer_destroy(c, out);
        return vk_fail(c, r, "vkBindBufferMemory");
    }
    out->size = sz;
    out->id = ++c->next_buf_id;
    return BACKEND_OK;
}

void vk_buffer_destroy(vk_ctx *c, vk_buffer *b)
{
    if (!b)
        return;
    if (b->map)
        vkUnmapMemory(c->dev, b->mem);
    if (b->buf)
        vkDestroyBuffer(c->dev, b->buf, NULL);
    if (b->mem)
        vkFreeMemory(c->dev, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

int vk_buffer_upload(vk_ctx *c, vk_buffer *dst, VkDeviceSize off, const void *src, VkDeviceSize n)
{
    const uint8_t *s = src;
    VkDeviceSize chunk = c->staging.size - VK_PAD;
    int rc = vk_flush(c);
    for (VkDeviceSize done = 0; rc == 0 && done < n; done += chunk) {
        VkDeviceSize len = n - done < chunk ? n - done : chunk;
        memcpy(c->staging.map, s + done, len);
        if ((rc = vk_begin(c)) != 0)
            break;
        vk_before_transfer(c, dst, off + done, off + done + len, true);
        VkBufferCopy cp = {.srcOffset = 0, .dstOffset = off + done, .size = len};
        vkCmdCopyBuffer(c->cmd, c->staging.buf, dst->buf, 1, &cp);
        vk_note_transfer_write(c, dst, off + done, off + done + len);
        rc = vk_flush(c);
        c->stats.bytes_uploaded += len;
        if (c->progress) {
            c->progress_done += len;
            c->progress(c->progress_user, c->progress_done, c->progress_total);
        }
    }
    return rc;
}

int vk_buffer_download(vk_ctx *c, const vk_buffer *src, VkDeviceSize off, void *dst, VkDeviceSize n)
{
    uint8_t *d = dst;
    VkDeviceSize chunk = c->staging.size - VK_PAD;
    int rc = 0;
    for (VkDeviceSize done = 0; rc == 0 && done < n; done += chunk) {
        VkDeviceSize len = n - done < chunk ? n - done : chunk;
        if ((rc = vk_begin(c)) != 0)
            break;
        vk_before_transfer(c, src, off + done, off + done + len, false);
        VkBufferCopy cp = {.srcOffset = off + done, .dstOffset = 0, .size = len};
        vkCmdCopyBuffer(c->cmd, src->buf, c->staging.buf, 1, &cp);
        VkMemoryBarrier mb = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
        };
        vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                             0, NULL, 0, NULL);
        if ((rc = vk_flush(c)) != 0)
            break;
        memcpy(d + done, c->staging.map, len);
    }
    return rc;
}

int64_t vk_arena_alloc(vk_ctx *c, VkDeviceSize n)
{
    n = (n + 15) & ~(VkDeviceSize)15;
    if (n > c->arena.size - VK_PAD)
        return -1;
    if (c->arena_used + n > c->arena.size - VK_PAD) {
        if (vk_flush(c) != 0)
            return -1;
    }
    VkDeviceSize o = c->arena_used;
    c->arena_used += n;
    return (int64_t)o;
}
