/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu/discovery.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "gpu/nvml.h"

static void copy_str(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

int gpu_semver(const char *in, char *out, size_t len)
{
    unsigned long parts[3] = {0, 0, 0};
    int n = 0;
    const char *p = in;
    if (!in || !*in)
        return -EINVAL;
    while (*p && n < 3) {
        if (!isdigit((unsigned char)*p))
            return -EINVAL;
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (errno || v > 999999999UL)
            return -EINVAL;
        parts[n++] = v;
        p = end;
        if (*p == '.')
            p++;
        else if (*p)
            return -EINVAL;
    }
    if (*p)
        return -EINVAL;
    int w = snprintf(out, len, "%lu.%lu.%lu", parts[0], parts[1], parts[2]);
    return w < 0 || (size_t)w >= len ? -ENOSPC : 0;
}

static const char *arch_name(nvmlDeviceArchitecture_t a)
{
    switch (a) {
    case NVML_DEVICE_ARCH_KEPLER:
        return "Kepler";
    case NVML_DEVICE_ARCH_MAXWELL:
        return "Maxwell";
    case NVML_DEVICE_ARCH_PASCAL:
        return "Pascal";
    case NVML_DEVICE_ARCH_VOLTA:
        return "Volta";
    case NVML_DEVICE_ARCH_TURING:
        return "Turing";
    case NVML_DEVICE_ARCH_AMPERE:
        return "Ampere";
    case NVML_DEVICE_ARCH_ADA:
        return "Ada";
    case NVML_DEVICE_ARCH_HOPPER:
        return "Hopper";
    case NVML_DEVICE_ARCH_BLACKWELL:
        return "Blackwell";
    default:
        return "Unknown";
    }
}

static const char *brand_name(nvmlBrandType_t b)
{
    switch (b) {
    case NVML_BRAND_QUADRO:
        return "Quadro";
    case NVML_BRAND_TESLA:
        return "Tesla";
    case NVML_BRAND_NVS:
        return "NVS";
    case NVML_BRAND_GRID:
        return "GRID";
    case NVML_BRAND_GEFORCE:
        return "GeForce";
    case NVML_BRAND_TITAN:
        return "Titan";
    case NVML_BRAND_NVIDIA_VAPPS:
        return "NVIDIA Virtual Applications";
    case NVML_BRAND_NVIDIA_VPC:
        return "NVIDIA Virtual PC";
    case NVML_BRAND_NVIDIA_VCS:
        return "NVIDIA Virtual Compute Server";
    case NVML_BRAND_NVIDIA_VWS:
        return "NVIDIA RTX Virtual Workstation";
    case NVML_BRAND_NVIDIA_CLOUD_GAMING:
        return "NVIDIA Cloud Gaming";
    case NVML_BRAND_QUADRO_RTX:
        return "Quadro RTX";
    case NVML_BRAND_NVIDIA_RTX:
        return "NVIDIA RTX";
    case NVML_BRAND_NVIDIA:
        return "NVIDIA";
    case NVML_BRAND_GEFORCE_RTX:
        return "GeForce RTX";
    case NVML_BRAND_TITAN_RTX:
        return "Titan RTX";
    default:
        return "Unknown";
    }
}

/* Parse a hexadecimal field of at most `max` value ending at `stop`; advances *p past it. */
static int hex_field(const char **p, char stop, unsigned long max, unsigned long *out)
{
    char *end;
    if (!isxdigit((unsigned char)**p))
        return -EINVAL;
    errno = 0;
    unsigned long v = strtoul(*p, &end, 16);
    if (errno || v > max || *end != stop)
        return -EINVAL;
    *out = v;
    *p = stop ? end + 1 : end;
    return 0;
}

/* "00000000:3B:00.0" -> "0000:3b:00.0" (domain cut to 4 hex digits, lower case). */
static int bus_id_to_bdf(const char *nvml_id, char *out, size_t len)
{
    unsigned long dom, bus, devno, fn;
    const char *p = nvml_id;
    if (hex_field(&p, ':', 0xffffffffUL, &dom) < 0 || hex_field(&p, ':', 0xff, &bus) < 0 ||
        hex_field(&p, '.', 0x1f, &devno) < 0 || hex_field(&p, '\0', 7, &fn) < 0 || dom > 0xffff)
        return -EINVAL;
    snprintf(out, len, "%04lx:%02lx:%02lx.%lx", dom, bus, devno, fn);
    return 0;
}

void gpu_resolve_pci(const char *sysfs_root, struct gpu_device *d)
{
    char bdf[32], path[PATH_MAX], real[PATH_MAX];
    d->pci_bus_id[0] = '\0';
    d->pcie_root[0] = '\0';
    if (bus_id_to_bdf(d->nvml_bus_id, bdf, sizeof(bdf)) < 0)
        return;
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", sysfs_root, bdf);
    if (!realpath(path, real))
        return;
    copy_str(d->pci_bus_id, sizeof(d->pci_bus_id), bdf);
    /* The device's real path is <sysfs>/devices/pci<domain>:<bus>/.../<bdf>: the first component
     * after "devices/" names the PCIe root complex. */
    const char *p = strstr(real, "/devices/pci");
    if (p) {
        p += strlen("/devices/");
        size_t n = strcspn(p, "/");
        if (n < sizeof(d->pcie_root))
            snprintf(d->pcie_root, sizeof(d->pcie_root), "%.*s", (int)n, p);
    }
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/numa_node", sysfs_root, bdf);
    FILE *f = fopen(path, "re");
    if (f) {
        char buf[32];
        if (fgets(buf, sizeof(buf), f)) {
            char *end;
            errno = 0;
            long node = strtol(buf, &end, 10);
            if (!errno && end != buf && (*end == '\n' || *end == '\0') && node >= 0 && node < 4096)
                d->numa_node = (int)node;
        }
        fclose(f);
    }
}

static int cmp_minor(const void *a, const void *b)
{
    const struct gpu_device *x = a, *y = b;
    return x->minor < y->minor ? -1 : x->minor > y->minor;
}

static unsigned uf_find(unsigned *parent, unsigned i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* Group devices joined by active NVLinks; each group's domain is its smallest minor number. */
static void nvlink_domains(struct gpu_nvml *n, nvmlDevice_t *handles, struct gpu_inventory *inv)
{
    unsigned parent[GPU_MAX_DEVICES];
    for (size_t i = 0; i < inv->n; i++)
        parent[i] = (unsigned)i;
    for (size_t i = 0; i < inv->n; i++) {
        for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
            nvmlEnableState_t st = NVML_FEATURE_DISABLED;
            if (n->nvmlDeviceGetNvLinkState(handles[i], link, &st) != NVML_SUCCESS ||
                st != NVML_FEATURE_ENABLED)
                continue;
            nvmlPciInfo_t pci;
            memset(&pci, 0, sizeof(pci));
            if (n->nvmlDeviceGetNvLinkRemotePciInfo_v2(handles[i], link, &pci) != NVML_SUCCESS)
                continue;
            char remote[32], mine[32];
            if (bus_id_to_bdf(pci.busId, remote, sizeof(remote)) < 0)
                continue;
            for (size_t j = 0; j < inv->n; j++) {
                if (j == i || bus_id_to_bdf(inv->dev[j].nvml_bus_id, mine, sizeof(mine)) < 0 ||
                    strcmp(mine, remote) != 0)
                    continue;
                unsigned a = uf_find(parent, (unsigned)i), b = uf_find(parent, (unsigned)j);
                if (a != b)
                    parent[a] = b;
            }
        }
    }
    for (size_t i = 0; i < inv->n; i++) {
        unsigned root = uf_find(parent, (unsigned)i);
        unsigned dom = inv->dev[i].minor;
        for (size_t j = 0; j < inv->n; j++)
            if (uf_find(parent, (unsigned)j) == root && inv->dev[j].minor < dom)
                dom = inv->dev[j].minor;
        inv->dev[i].nvlink_domain = dom;
    }
}

int gpu_discover(const char *sysfs_root, struct gpu_inventory *out, struct gs_error *err)
{
    struct gpu_nvml n;
    nvmlDevice_t handles[GPU_MAX_DEVICES] = {0}; /* [0, out->n) are set by the loop below */
    memset(out, 0, sizeof(*out));
    int r = gpu_nvml_open(&n, GPU_NVML_USE_DISCOVERY, 0, err);
    if (r < 0)
        return r;

    char drv_raw[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
    char drv[64] = "", cuda[32] = "";
    int cuda_ver = 0;
    if (n.nvmlSystemGetDriverVersion(drv_raw, sizeof(drv_raw)) == NVML_SUCCESS &&
        gpu_semver(drv_raw, drv, sizeof(drv)) < 0)
        gs_warn("driver version is not numeric, attribute left out", "driverVersion=%s", drv_raw);
    if (n.nvmlSystemGetCudaDriverVersion_v2(&cuda_ver) == NVML_SUCCESS && cuda_ver > 0)
        snprintf(cuda, sizeof(cuda), "%d.%d.0", cuda_ver / 1000, (cuda_ver % 1000) / 10);

    unsigned count = 0;
    nvmlReturn_t nr = n.nvmlDeviceGetCount_v2(&count);
    if (nr != NVML_SUCCESS) {
        r = gpu_nvml_fail(&n, err, "nvmlDeviceGetCount_v2", nr);
        goto out;
    }
    if (count > GPU_MAX_DEVICES) {
        gs_warn("more GPUs than supported, extra ones ignored", "count=%u max=%u", count,
                GPU_MAX_DEVICES);
        count = GPU_MAX_DEVICES;
    }
    for (unsigned i = 0; i < count; i++) {
        struct gpu_device *d = &out->dev[out->n];
        nvmlDevice_t h;
        memset(d, 0, sizeof(*d));
        d->numa_node = -1;
        d->index = i;
        if ((nr = n.nvmlDeviceGetHandleByIndex_v2(i, &h)) != NVML_SUCCESS ||
            (nr = n.nvmlDeviceGetMinorNumber(h, &d->minor)) != NVML_SUCCESS ||
            (nr = n.nvmlDeviceGetUUID(h, d->uuid, sizeof(d->uuid))) != NVML_SUCCESS) {
            gs_warn("GPU skipped: NVML cannot identify it", "index=%u error=\"%s\"", i,
                    n.nvmlErrorString(nr));
            continue;
        }
        snprintf(d->name, sizeof(d->name), "hami-gpu-%u", d->minor);
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "";
        if (n.nvmlDeviceGetName(h, name, sizeof(name)) == NVML_SUCCESS)
            copy_str(d->product, sizeof(d->product), name);
        nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
        if (n.nvmlDeviceGetBrand(h, &brand) == NVML_SUCCESS)
            copy_str(d->brand, sizeof(d->brand), brand_name(brand));
        nvmlDeviceArchitecture_t arch = NVML_DEVICE_ARCH_UNKNOWN;
        if (n.nvmlDeviceGetArchitecture(h, &arch) == NVML_SUCCESS)
            copy_str(d->architecture, sizeof(d->architecture), arch_name(arch));
        int maj = 0, min = 0;
        if (n.nvmlDeviceGetCudaComputeCapability(h, &maj, &min) == NVML_SUCCESS && maj > 0)
            snprintf(d->compute_capability, sizeof(d->compute_capability), "%d.%d.0", maj, min);
        copy_str(d->driver_version, sizeof(d->driver_version), drv);
        copy_str(d->cuda_driver_version, sizeof(d->cuda_driver_version), cuda);
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof(pci));
        if (n.nvmlDeviceGetPciInfo_v3(h, &pci) == NVML_SUCCESS) {
            pci.busId[sizeof(pci.busId) - 1] = '\0';
            copy_str(d->nvml_bus_id, sizeof(d->nvml_bus_id), pci.busId);
            gpu_resolve_pci(sysfs_root, d);
        }
        nvmlMemory_t mem;
        if (n.nvmlDeviceGetMemoryInfo(h, &mem) == NVML_SUCCESS)
            d->memory_total = mem.total;
        handles[out->n] = h;
        out->n++;
    }
    nvlink_domains(&n, handles, out);
    /* Sort by minor after the NVLink pass (which indexes handles[] in discovery order). */
    qsort(out->dev, out->n, sizeof(out->dev[0]), cmp_minor);
    r = 0;
out:
    gpu_nvml_close(&n);
    return r;
}
