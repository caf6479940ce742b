/* SPDX-License-Identifier: Apache-2.0 */
/* The published device model: ResourceSlice content built from the inventory (see slice.h). */
#include "gpu/slice.h"

#include <stdio.h>
#include <string.h>

#include "base/macros.h"
#include "config/quantity.h"

#define MANAGED_BY_LABEL "app.kubernetes.io/managed-by"
#define MANAGED_BY_VALUE "gpuslice-kubelet-plugin"

size_t gpu_slice_count(size_t n)
{
    return n == 0 ? 1 : (n + GPU_SLICE_MAX_DEVICES - 1) / GPU_SLICE_MAX_DEVICES;
}

static json_t *qty(uint64_t v, enum gs_quantity_format fmt)
{
    struct gs_quantity q;
    char buf[GS_QUANTITY_STR_MAX];
    gs_quantity_from_int64((int64_t)GS_MIN(v, (uint64_t)INT64_MAX), fmt, &q);
    if (gs_quantity_format(&q, buf, sizeof(buf)) < 0)
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    return json_string(buf);
}

static void attr_str(json_t *attrs, const char *name, const char *v)
{
    if (v && *v)
        json_object_set_new(attrs, name, json_pack("{s:s}", "string", v));
}

static void attr_version(json_t *attrs, const char *name, const char *v)
{
    if (v && *v)
        json_object_set_new(attrs, name, json_pack("{s:s}", "version", v));
}

static void attr_int(json_t *attrs, const char *name, int64_t v)
{
    json_object_set_new(attrs, name, json_pack("{s:I}", "int", (json_int_t)v));
}

json_t *gpu_slice_device(const struct gpu_device *d, const char *driver)
{
    (void)driver;
    json_t *attrs = json_object();
    attr_str(attrs, "type", "hami-gpu");
    attr_str(attrs, "uuid", d->uuid);
    attr_int(attrs, "minor", d->minor);
    attr_str(attrs, "productName", d->product);
    attr_str(attrs, "brand", d->brand);
    attr_str(attrs, "architecture", d->architecture);
    attr_version(attrs, "cudaComputeCapability", d->compute_capability);
    attr_version(attrs, "driverVersion", d->driver_version);
    attr_version(attrs, "cudaDriverVersion", d->cuda_driver_version);
    attr_str(attrs, "pcieBusID", d->nvml_bus_id);
    if (d->numa_node >= 0)
        attr_int(attrs, "numaNode", d->numa_node);
    attr_int(attrs, "nvlinkDomain", d->nvlink_domain);
    attr_str(attrs, "resource.kubernetes.io/pcieRoot", d->pcie_root);
    attr_str(attrs, "resource.kubernetes.io/pciBusID", d->pci_bus_id);

    uint64_t mem = d->memory_total / GPU_MIB * GPU_MIB;
    json_t *cores =
        json_pack("{s:o, s:{s:o, s:{s:o, s:o, s:o}}}", "value", qty(100, GS_QUANTITY_DECIMAL_SI),
                  "requestPolicy", "default", qty(100, GS_QUANTITY_DECIMAL_SI), "validRange", "min",
                  qty(0, GS_QUANTITY_DECIMAL_SI), "max", qty(100, GS_QUANTITY_DECIMAL_SI), "step",
                  qty(1, GS_QUANTITY_DECIMAL_SI));
    json_t *memory =
        json_pack("{s:o, s:{s:o, s:{s:o, s:o, s:o}}}", "value", qty(mem, GS_QUANTITY_BINARY_SI),
                  "requestPolicy", "default", qty(mem, GS_QUANTITY_BINARY_SI), "validRange", "min",
                  qty(GPU_MIB, GS_QUANTITY_BINARY_SI), "max", qty(mem, GS_QUANTITY_BINARY_SI),
                  "step", qty(GPU_MIB, GS_QUANTITY_BINARY_SI));
    return json_pack("{s:s, s:o, s:{s:o, s:o}, s:b}", "name", d->name, "attributes", attrs,
                     "capacity", "cores", cores, "memory", memory, "allowMultipleAllocations", 1);
}

json_t *gpu_slice_build(const struct gpu_inventory *inv, const char *driver, const char *node,
                        int64_t generation, size_t index)
{
    size_t count = gpu_slice_count(inv->n);
    char name[512];
    snprintf(name, sizeof(name), "%s-%s-%zu", node, driver, index);
    json_t *devices = json_array();
    for (size_t i = index * GPU_SLICE_MAX_DEVICES;
         i < inv->n && i < (index + 1) * GPU_SLICE_MAX_DEVICES; i++)
        json_array_append_new(devices, gpu_slice_device(&inv->dev[i], driver));
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:s, s:{s:s, s:I, s:I}, s:o}}",
                     "apiVersion", "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata",
                     "name", name, "labels", MANAGED_BY_LABEL, MANAGED_BY_VALUE, "spec", "driver",
                     driver, "nodeName", node, "pool", "name", node, "generation",
                     (json_int_t)generation, "resourceSliceCount", (json_int_t)count, "devices",
                     devices);
}

bool gpu_slice_gate_dropped(const json_t *sent, const json_t *returned)
{
    const json_t *sd = json_object_get(json_object_get(sent, "spec"), "devices");
    const json_t *rd = json_object_get(json_object_get(returned, "spec"), "devices");
    size_t i;
    const json_t *dev;
    json_array_foreach(sd, i, dev)
    {
        const json_t *r = json_array_get(rd, i);
        if (!r)
            return false;
        if (json_object_get(dev, "allowMultipleAllocations") &&
            !json_object_get(r, "allowMultipleAllocations"))
            return true;
        const char *k;
        const json_t *cap;
        json_object_foreach((json_t *)json_object_get(dev, "capacity"), k, cap)
        {
            if (json_object_get(cap, "requestPolicy") &&
                !json_object_get(json_object_get(json_object_get(r, "capacity"), k),
                                 "requestPolicy"))
                return true;
        }
    }
    return false;
}
