/* SPDX-License-Identifier: Apache-2.0 */
/* The published device model: ResourceSlice content built from the inventory (see slice.h). */
#include "gpu/slice.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"
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

/* Device taints from the health table (KEP-5055, resource.k8s.io/v1 devices[].taints), after
 * NVIDIA's DRA driver (k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/device_health.go,
 * healthEventToTaint: one key per health dimension, gpu.nvidia.com/xid with the XID as value,
 * gpu.nvidia.com/gpu-lost, gpu.nvidia.com/unmonitored). Our keys are under the driver's name. */
static json_t *taint(const char *driver, const char *dim, const char *value, const char *effect,
                     int64_t since_s)
{
    char key[320], ts[32];
    snprintf(key, sizeof(key), "%s/%s", driver, dim);
    gs_rfc3339_utc(since_s, ts, sizeof(ts));
    json_t *t = json_pack("{s:s, s:s, s:s}", "key", key, "effect", effect, "timeAdded", ts);
    if (value && t)
        json_object_set_new(t, "value", json_string(value));
    return t;
}

json_t *gpu_slice_health_taints(const struct gpu_health_dev *h, const char *driver)
{
    json_t *taints = json_array();
    char xid[32];
    if (h->lost)
        json_array_append_new(taints, taint(driver, GPU_TAINT_GPU_LOST, NULL,
                                            GPU_TAINT_EFFECT_NO_SCHEDULE, h->since_s));
    if (h->fatal) {
        snprintf(xid, sizeof(xid), "%llu", (unsigned long long)h->fatal_xid);
        json_array_append_new(
            taints,
            h->fatal_xid
                ? taint(driver, GPU_TAINT_XID, xid, GPU_TAINT_EFFECT_NO_SCHEDULE, h->since_s)
                : taint(driver, GPU_TAINT_ECC_DBE, NULL, GPU_TAINT_EFFECT_NO_SCHEDULE, h->since_s));
    } else if (h->has_xid && !h->last_xid_fatal) {
        snprintf(xid, sizeof(xid), "%llu", (unsigned long long)h->last_xid);
        json_array_append_new(
            taints, taint(driver, GPU_TAINT_XID, xid, GPU_TAINT_EFFECT_NONE, h->xid_time_s));
    }
    if (h->unmonitored)
        json_array_append_new(
            taints, taint(driver, GPU_TAINT_UNMONITORED, NULL, GPU_TAINT_EFFECT_NONE, h->since_s));
    return taints;
}

void gpu_slice_apply_health(json_t *slice, const struct gpu_health_dev *h, size_t n,
                            const char *driver)
{
    json_t *devices = json_object_get(json_object_get(slice, "spec"), "devices");
    size_t i;
    json_t *dev;
    json_array_foreach(devices, i, dev)
    {
        const char *name = json_string_value(json_object_get(dev, "name"));
        for (size_t k = 0; name && k < n; k++) {
            if (strcmp(h[k].name, name) != 0)
                continue;
            json_t *taints = gpu_slice_health_taints(&h[k], driver);
            if (json_array_size(taints) && json_array_size(devices) <= GPU_SLICE_MAX_TAINTED)
                json_object_set_new(dev, "taints", taints);
            else
                json_decref(taints);
        }
    }
}
