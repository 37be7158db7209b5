/* Vulkan instance, device listing, capability detection and the automatic
 * device choice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#ifdef GGSCOPE_SANITIZE
#include <dlfcn.h>
#include <link.h>

/* Sanitizer builds only: keep every loaded Vulkan driver (libvulkan_*.so, the
 * ICDs the loader opened) mapped until exit. The loader unloads the driver at
 * vkDestroyInstance; LeakSanitizer reports at exit, after that, so a leak
 * inside the driver shows as "<unknown module>" and no suppression by module
 * name can match it. Pinned, the frames keep their module name and
 * tests/lsan.supp's "leak:libvulkan_" silences the driver's leaks alone
 * (docs/vulkan.md). RTLD_NOLOAD: only libraries already loaded are touched. */
static int pin_driver(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && strncmp(base, "libvulkan_", 10) == 0)
        (void)dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    return 0;
}
#endif

const char *vk_device_kind_name(vk_device_kind k)
{
    switch (k) {
    case VK_DEV_DISCRETE: return "discrete";
    case VK_DEV_INTEGRATED: return "integrated";
    case VK_DEV_VIRTUAL: return "virtual";
    case VK_DEV_CPU: return "cpu";
    default: return "other";
    }
}

static bool env_has(const char *var, const char *needle)
{
    const char *v = getenv(var);
    return v && strstr(v, needle);
}

static bool validation_wanted(void)
{
    const char *v = getenv("GGSCOPE_VK_VALIDATE");
    return (v && v[0] == '1') || env_has("VK_INSTANCE_LAYERS", "VK_LAYER_KHRONOS_validation");
}

static bool layer_available(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkLayerProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(p[i].layerName, name);
    free(p);
    return found;
}

static bool instance_ext_available(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vkEnumerateInstanceExtensionProperties(NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(p[i].extensionName, name);
    free(p);
    return found;
}

VkResult vk_instance_create(VkInstance *inst, bool *has_debug_utils)
{
    const char *layers[1];
    uint32_t n_layers = 0;
    const char *exts[1];
    uint32_t n_exts = 0;
    *has_debug_utils = false;
    if (validation_wanted()) {
        /* VK_INSTANCE_LAYERS already enables the layer; GGSCOPE_VK_VALIDATE asks us to. */
        if (!env_has("VK_INSTANCE_LAYERS", "VK_LAYER_KHRONOS_validation") &&
            layer_available("VK_LAYER_KHRONOS_validation"))
            layers[n_layers++] = "VK_LAYER_KHRONOS_validation";
        if (instance_ext_available(VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
            exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
            *has_debug_utils = true;
        }
    }
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "ggscope",
        .pEngineName = "ggscope",
        .apiVersion = VK_API_VERSION_1_2,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledLayerCount = n_layers,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    VkResult r = vkCreateInstance(&ci, NULL, inst);
#ifdef GGSCOPE_SANITIZE
    if (r == VK_SUCCESS)
        dl_iterate_phdr(pin_driver, NULL);
#endif
    return r;
}

void vk_device_describe(VkPhysicalDevice pd, int index, vk_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->index = index;

    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    VkPhysicalDeviceProperties base;
    vkGetPhysicalDeviceProperties(pd, &base);
    bool v12 = base.apiVersion >= VK_API_VERSION_1_2;
    if (v12)
        sg.pNext = &drv;
    if (base.apiVersion >= VK_API_VERSION_1_1)
        vkGetPhysicalDeviceProperties2(pd, &p2);
    else
        p2.properties = base;
    const VkPhysicalDeviceProperties *p = &p2.properties;

    snprintf(info->name, sizeof info->name, "%s", p->deviceName);
    info->vendor_id = p->vendorID;
    info->device_id = p->deviceID;
    info->driver_version = p->driverVersion;
    if (v12)
        snprintf(info->driver, sizeof info->driver, "%.63s", drv.driverName);
    switch (p->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info->kind = VK_DEV_DISCRETE; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info->kind = VK_DEV_INTEGRATED; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info->kind = VK_DEV_VIRTUAL; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info->kind = VK_DEV_CPU; break;
    default: info->kind = VK_DEV_OTHER; break;
    }
    info->software = info->kind == VK_DEV_CPU || strstr(p->deviceName, "llvmpipe") != NULL;

    vk_caps *c = &info->caps;
    c->api_version = p->apiVersion;
    c->max_wg_size = p->limits.maxComputeWorkGroupSize[0];
    c->max_wg_invocations = p->limits.maxComputeWorkGroupInvocations;
    c->max_shared = p->limits.maxComputeSharedMemorySize;
    c->max_range = p->limits.maxStorageBufferRange;
    c->min_align = p->limits.minStorageBufferOffsetAlignment;
    c->max_push = p->limits.maxPushConstantsSize;
    c->timestamp_period = p->limits.timestampPeriod;
    if (base.apiVersion >= VK_API_VERSION_1_1) {
        c->subgroup_size = sg.subgroupSize;
        c->subgroup_arith = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                            (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
        c->subgroup_ballot = c->subgroup_arith && (sg.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);

        VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
        VkPhysicalDeviceProperties2 pm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
        vkGetPhysicalDeviceProperties2(pd, &pm);
        c->max_alloc = m3.maxMemoryAllocationSize;

        VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
        VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
        VkPhysicalDevice8BitStorageFeatures s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
        VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
        if (v12) {
            s16.pNext = &s8;
            s8.pNext = &f16;
        }
        vkGetPhysicalDeviceFeatures2(pd, &f2);
        c->storage16 = s16.storageBuffer16BitAccess;
        c->storage8 = s8.storageBuffer8BitAccess;
        c->fp16_arith = f16.shaderFloat16;
        c->int8_arith = f16.shaderInt8;
        c->int64 = f2.features.shaderInt64;
    }

    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            info->device_local_bytes += mp.memoryHeaps[i].size;

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties *qf = calloc(nq ? nq : 1, sizeof *qf);
    bool compute = false;
    if (qf) {
        vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
        for (uint32_t i = 0; i < nq; i++)
            compute |= (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
        free(qf);
    }
    info->usable = compute && p->apiVersion >= VK_API_VERSION_1_1 && c->max_wg_invocations >= 64 &&
                   c->max_wg_size >= 64 && c->max_push >= VK_PUSH_MAX && c->max_shared >= 4096;
}

int vk_list_devices(vk_device_info *out, int cap, char *err, size_t errlen)
{
    VkInstance inst;
    bool dbg;
    VkResult r = vk_instance_create(&inst, &dbg);
    if (r != VK_SUCCESS) {
        snprintf(err, errlen, "no Vulkan driver (vkCreateInstance: %d)", (int)r);
        return -1;
    }
    uint32_t n = 0;
    r = vkEnumeratePhysicalDevices(inst, &n, NULL);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        snprintf(err, errlen, "cannot list Vulkan devices (%d)", (int)r);
        vkDestroyInstance(inst, NULL);
        return -1;
    }
    if (n > 0) {
        VkPhysicalDevice *pd = calloc(n, sizeof *pd);
        if (!pd) {
            snprintf(err, errlen, "out of memory");
            vkDestroyInstance(inst, NULL);
            return -1;
        }
        vkEnumeratePhysicalDevices(inst, &n, pd);
        for (uint32_t i = 0; i < n && (int)i < cap; i++)
            vk_device_describe(pd[i], (int)i, &out[i]);
        free(pd);
    }
    vkDestroyInstance(inst, NULL);
    return (int)n;
}

int vk_pick_device(const vk_device_info *devs, int n)
{
    static const vk_device_kind order[] = {VK_DEV_DISCRETE, VK_DEV_INTEGRATED, VK_DEV_VIRTUAL,
                                           VK_DEV_OTHER};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (int i = 0; i < n; i++)
            if (devs[i].usable && !devs[i].software && devs[i].kind == order[k])
                return i;
    for (int i = 0; i < n; i++)
        if (devs[i].usable)
            return i;
    return -1;
}

int vk_env_device(void)
{
    const char *v = getenv("GGSCOPE_VK_DEVICE");
    if (!v || !*v)
        return -1;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1000)
        return -1;
    return (int)x;
}
