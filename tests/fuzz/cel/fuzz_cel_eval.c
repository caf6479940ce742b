/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the CEL evaluator the way the allocator and the webhook run it: parse + check in the DRA
 * environment, then evaluate against one fixed device -- a Tesla T4 exactly as the kubelet plugin
 * publishes it (src/gpu/slice.c: every attribute type, the cores/memory capacities with their
 * request policies) -- under the cost limit. Checked programs must not fail at run time with
 * anything but a reported error: a result without a message is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cel/cel.h"
#include "gpu/slice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DRIVER "hami-core-gpu.project-hami.io"

static json_t *device;

static json_t *t4(void)
{
    struct gpu_device d;
    memset(&d, 0, sizeof(d));
    d.minor = 0;
    snprintf(d.name, sizeof(d.name), "hami-gpu-0");
    snprintf(d.uuid, sizeof(d.uuid), "GPU-4b6c1a52-8f3e-4d2a-9c1b-0e5f6a7b8c9d");
    snprintf(d.product, sizeof(d.product), "Tesla T4");
    snprintf(d.brand, sizeof(d.brand), "Tesla");
    snprintf(d.architecture, sizeof(d.architecture), "Turing");
    snprintf(d.compute_capability, sizeof(d.compute_capability), "7.5.0");
    snprintf(d.driver_version, sizeof(d.driver_version), "550.54.15");
    snprintf(d.cuda_driver_version, sizeof(d.cuda_driver_version), "12.4.0");
    snprintf(d.nvml_bus_id, sizeof(d.nvml_bus_id), "00000000:3B:00.0");
    snprintf(d.pci_bus_id, sizeof(d.pci_bus_id), "0000:3b:00.0");
    snprintf(d.pcie_root, sizeof(d.pcie_root), "pci0000:3a");
    d.numa_node = 0;
    d.memory_total = 15360ull * GPU_MIB;
    return gpu_slice_device(&d, DRIVER);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > CEL_MAX_EXPRESSION_LEN + 16)
        return 0;
    if (!device && !(device = t4()))
        abort();
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct gs_error err = {0};
    struct cel_program *p = cel_compile(s, &err);
    if (!p) {
        if (err.msg[0] == '\0')
            abort(); /* a refused expression says why */
    } else {
        struct cel_device dev = {.driver = DRIVER,
                                 .attributes = json_object_get(device, "attributes"),
                                 .capacity = json_object_get(device, "capacity"),
                                 .allow_multiple_allocations = true};
        bool match = false;
        memset(&err, 0, sizeof(err));
        if (cel_eval_device(p, &dev, &match, &err) < 0 && err.msg[0] == '\0')
            abort(); /* a runtime error says why */
        cel_program_free(p);
    }
    free(s);
    return 0;
}
