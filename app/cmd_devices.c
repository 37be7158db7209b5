/* ggscope devices: the Vulkan devices, their properties, and which one the
 * automatic choice takes. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "cliopt.h"

#ifdef GGSCOPE_HAVE_VULKAN
#include "backend_vulkan.h"
#endif

static void help(FILE *out)
{
    fprintf(out,
            "usage: ggscope devices [--json]\n"
            "\n"
            "List the Vulkan devices with their properties and say which one the\n"
            "engine's automatic choice (--backend auto) takes. Choose another with\n"
            "--device N or the environment variable GGSCOPE_VK_DEVICE=N.\n"
            "\n"
            "options:\n"
            "  --json      one JSON object instead of text\n"
            "  -h, --help  this help\n");
}

#ifdef GGSCOPE_HAVE_VULKAN
/* Parts of a Vulkan version number (as VK_API_VERSION_* take them apart). */
#define VER_MAJOR(v) (((v) >> 22) & 0x7Fu)
#define VER_MINOR(v) (((v) >> 12) & 0x3FFu)
#define VER_PATCH(v) ((v) & 0xFFFu)

static const char *yn(bool b)
{
    return b ? "yes" : "no";
}

static void print_mib(uint64_t b)
{
    if (b >= (1ull << 30))
        printf("%.1f GiB", b / 1073741824.0);
    else
        printf("%.0f MiB", b / 1048576.0);
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}
#endif

int cmd_devices(int argc, char **argv)
{
    bool json = false;
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'}, {"json", no_argument, 0, 'J'}, {0, 0, 0, 0}};
    cliopt p;
    cliopt_init(&p, argc, argv, "h", lo);
    int c;
    while ((c = cliopt_next(&p)) != CLIOPT_END) {
        if (c == 'h') {
            help(stdout);
            return APP_OK;
        } else if (c == 'J') {
            json = true;
        } else {
            if (c == CLIOPT_ARG)
                app_error("devices: unexpected argument '%s' (see ggscope devices --help)", p.arg);
            else
                cliopt_unknown(&p);
            return APP_BADINPUT;
        }
    }
#ifndef GGSCOPE_HAVE_VULKAN
    (void)json;
    app_error("this build of ggscope has no Vulkan backend (Vulkan or glslc was not found at build time)");
    return APP_FAIL;
#else
    vk_device_info devs[16];
    char err[256];
    int n = vk_list_devices(devs, 16, err, sizeof err);
    if (n < 0) {
        if (json)
            printf("{\"devices\":[],\"error\":\"no Vulkan driver\"}\n");
        app_error("%s; --backend auto runs on the CPU", err);
        return APP_FAIL;
    }
    if (n > 16)
        n = 16;
    int pick = vk_pick_device(devs, n);
    int env = vk_env_device();
    bool auto_vulkan = pick >= 0 && (!devs[pick].software || env >= 0);
    if (env >= 0)
        pick = env < n ? env : -1;
    if (json) {
        printf("{\"devices\":[");
        for (int i = 0; i < n; i++) {
            const vk_device_info *d = &devs[i];
            const vk_caps *c = &d->caps;
            printf("%s{\"index\":%d,\"name\":", i ? "," : "", d->index);
            json_str(d->name);
            printf(",\"kind\":\"%s\",\"driver\":", vk_device_kind_name(d->kind));
            json_str(d->driver);
            printf(",\"vendor_id\":%u,\"device_id\":%u,\"api_version\":\"%u.%u.%u\",\"software\":%s,"
                   "\"usable\":%s,\"device_local_bytes\":%llu,\"subgroup_size\":%u,\"subgroup_arith\":%s,"
                   "\"fp16\":%s,\"int8\":%s,\"storage16\":%s,\"storage8\":%s,\"max_storage_range\":%llu,"
                   "\"max_shared\":%u,\"max_workgroup\":%u}",
                   d->vendor_id, d->device_id, VER_MAJOR(c->api_version),
                   VER_MINOR(c->api_version), VER_PATCH(c->api_version),
                   d->software ? "true" : "false", d->usable ? "true" : "false",
                   (unsigned long long)d->device_local_bytes, c->subgroup_size, c->subgroup_arith ? "true" : "false",
                   c->fp16_arith ? "true" : "false", c->int8_arith ? "true" : "false",
                   c->storage16 ? "true" : "false", c->storage8 ? "true" : "false",
                   (unsigned long long)c->max_range, c->max_shared, c->max_wg_invocations);
        }
        printf("],\"vulkan_pick\":%d,\"auto_backend\":\"%s\"}\n", pick, auto_vulkan ? "vulkan" : "cpu");
        return APP_OK;
    }
    if (n == 0) {
        printf("no Vulkan devices; --backend auto runs on the CPU\n");
        return APP_OK;
    }
    for (int i = 0; i < n; i++) {
        const vk_device_info *d = &devs[i];
        const vk_caps *c = &d->caps;
        printf("%c %d  %s\n", i == pick ? '*' : ' ', d->index, d->name);
        printf("     kind %s%s, driver %s, Vulkan %u.%u.%u, vendor 0x%04x device 0x%04x%s\n",
               vk_device_kind_name(d->kind), d->software ? " (software)" : "", d->driver[0] ? d->driver : "?",
               VER_MAJOR(c->api_version), VER_MINOR(c->api_version),
               VER_PATCH(c->api_version), d->vendor_id, d->device_id,
               d->usable ? "" : ", NOT usable for compute");
        printf("     memory ");
        print_mib(d->device_local_bytes);
        printf(" device-local; largest binding ");
        print_mib(c->max_range);
        printf("; shared memory %u KiB; workgroup up to %u\n", c->max_shared / 1024, c->max_wg_invocations);
        printf("     subgroups %u (arithmetic %s), fp16 %s, int8 %s, 16-bit storage %s, 8-bit storage %s\n",
               c->subgroup_size, yn(c->subgroup_arith), yn(c->fp16_arith), yn(c->int8_arith), yn(c->storage16),
               yn(c->storage8));
    }
    if (pick < 0)
        printf("\nno usable device%s: --backend auto runs on the CPU\n", env >= 0 ? " at GGSCOPE_VK_DEVICE" : "");
    else if (auto_vulkan)
        printf("\n* --backend auto runs on device %d%s\n", pick, env >= 0 ? " (GGSCOPE_VK_DEVICE)" : "");
    else
        printf("\n* --backend vulkan runs on device %d; --backend auto runs on the CPU (a software Vulkan "
               "device is slower than the CPU backend)\n", pick);
    return APP_OK;
#endif
}
