/* A planted leak, for tests/e2e_lsan_planted.sh: proves that the sanitizer
 * build still reports leaks in ggscope's own code while the Vulkan driver's
 * leaks are suppressed (tests/lsan.supp). Loads the Vulkan driver first (when
 * the backend is built), then opens a GGUF file from memory and never closes
 * it: LeakSanitizer must name gguf_open_memory at exit. Built only with
 * GGSCOPE_SANITIZE. */
#include <stdint.h>
#include <stdio.h>

#include "gguf.h"
#ifdef GGSCOPE_HAVE_VULKAN
#include "backend_vulkan.h"
#endif

static gguf_file *volatile planted;

int main(void)
{
#ifdef GGSCOPE_HAVE_VULKAN
    vk_device_info devs[8];
    char err[256];
    int n = vk_list_devices(devs, 8, err, sizeof err);
    printf("vulkan devices: %d\n", n);
#endif
    /* "GGUF", version 3, no tensors, no keys */
    static const uint8_t file[24] = {'G', 'G', 'U', 'F', 3};
    gguf_error e;
    planted = gguf_open_memory(file, sizeof file, "planted.gguf", &e);
    printf("opened: %s\n", planted ? "yes" : "no");
    planted = NULL; /* the only pointer is gone: a leak */
    return 0;
}
