/* Profiling: while on, a timestamp query is written after every dispatch
 * (and one when the command buffer starts); after the submission the
 * differences are summed per (shader variant, weight shape). lavapipe runs
 * one dispatch at a time, so a difference is the dispatch's own time plus
 * the barrier before it. */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

void vk_prof_init(vk_ctx *c, const VkQueueFamilyProperties *qf)
{
    uint32_t bits = qf->timestampValidBits;
    c->prof.has_ts = bits > 0 && c->info.caps.timestamp_period > 0.0f;
    c->prof.ts_mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

void vk_prof_destroy(vk_ctx *c)
{
    if (c->prof.pool)
        vkDestroyQueryPool(c->dev, c->prof.pool, NULL);
    c->prof.pool = VK_NULL_HANDLE;
}

void vk_prof_begin(vk_ctx *c)
{
    c->prof.n = 0;
    if (!c->prof.on)
        return;
    if (!c->prof.pool) {
        VkQueryPoolCreateInfo qi = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = VK_PROF_QUERIES,
        };
        if (vkCreateQueryPool(c->dev, &qi, NULL, &c->prof.pool) != VK_SUCCESS) {
            c->prof.pool = VK_NULL_HANDLE;
            c->prof.on = false;
            return;
        }
    }
    vkCmdResetQueryPool(c->cmd, c->prof.pool, 0, VK_PROF_QUERIES);
    vkCmdWriteTimestamp(c->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, c->prof.pool, 0);
    c->prof.n = 1;
}

/* The row of (shader, shape), added on first use; -1 when the table is full. */
static int prof_row(vk_ctx *c, vk_shader_id sh)
{
    vk_prof *p = &c->prof;
    const char *name = vk_shader_table[sh].name;
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].ne0 == p->shape[0] && p->rows[i].ne1 == p->shape[1] && !strcmp(p->rows[i].shader, name))
            return i;
    if (p->n_rows == VK_PROF_ROWS)
        return -1;
    backend_vulkan_prof_row *r = &p->rows[p->n_rows];
    memset(r, 0, sizeof *r);
    snprintf(r->shader, sizeof r->shader, "%s", name);
    r->ne0 = p->shape[0];
    r->ne1 = p->shape[1];
    return p->n_rows++;
}

void vk_prof_dispatch(vk_ctx *c, int pi)
{
    vk_prof *p = &c->prof;
    if (!p->on || p->n == 0 || p->n >= VK_PROF_QUERIES)
        return;
    int row = prof_row(c, (vk_shader_id)(pi / VK_SPEC_COUNT));
    if (row < 0)
        return;
    vkCmdWriteTimestamp(c->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->pool, p->n);
    p->key[p->n++] = (uint16_t)row;
}

void vk_prof_collect(vk_ctx *c)
{
    vk_prof *p = &c->prof;
    uint32_t n = p->n;
    p->n = 0;
    if (n < 2 || !p->pool)
        return;
    uint64_t t[VK_PROF_QUERIES];
    if (vkGetQueryPoolResults(c->dev, p->pool, 0, n, sizeof t, t, sizeof t[0],
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS)
        return;
    const double ns = c->info.caps.timestamp_period;
    for (uint32_t i = 1; i < n; i++) {
        backend_vulkan_prof_row *r = &p->rows[p->key[i]];
        r->count++;
        r->ms += (double)((t[i] - t[i - 1]) & p->ts_mask) * ns * 1e-6;
    }
}

bool backend_vulkan_set_profile(backend *b, bool on)
{
    if (!backend_is_vulkan(b))
        return false;
    vk_ctx *c = b->ctx;
    if (on && !c->prof.has_ts)
        return false;
    if (on && !c->prof.on)
        c->prof.n_rows = 0;
    c->prof.on = on;
    return true;
}

int backend_vulkan_profile(const backend *b, backend_vulkan_prof_row *out, int cap)
{
    if (!backend_is_vulkan(b))
        return 0;
    const vk_ctx *c = b->ctx;
    for (int i = 0; i < c->prof.n_rows && i < cap; i++)
        out[i] = c->prof.rows[i];
    return c->prof.n_rows;
}
