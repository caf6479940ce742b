/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-smi-like table through NVML only (see smi.h). */
#include "gpu/smi.h"

#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/macros.h"
#include "gpu/nvml.h"

#define WIDTH     103 /* between the outer corners */
#define MAX_PROCS 256
#define DASHES    "------------------------------------------------------------------------"

/* One table row: `text` padded to the width between the borders. */
static void row(FILE *out, const char *text)
{
    fprintf(out, "| %-*.*s |\n", WIDTH - 2, WIDTH - 2, text);
}

static void rule(FILE *out, char c)
{
    char line[WIDTH + 1];
    memset(line, c, WIDTH);
    line[WIDTH] = '\0';
    fprintf(out, "%c%s%c\n", c == '=' ? '|' : '+', line, c == '=' ? '|' : '+');
}

static unsigned long long mib(unsigned long long b)
{
    return b / (1024ull * 1024ull);
}

int gpu_smi_print(FILE *out, unsigned nvml_flags, struct gs_error *err)
{
    struct gpu_nvml nv;
    int rc = gpu_nvml_open(&nv, GPU_NVML_USE_SMI, nvml_flags, err);
    if (rc < 0)
        return rc;
    nvmlReturn_t r;
    char drv[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A";
    int cuda = 0;
    unsigned int count = 0;
    char line[256];
    nv.nvmlSystemGetDriverVersion(drv, sizeof(drv));
    nv.nvmlSystemGetCudaDriverVersion_v2(&cuda);
    if ((r = nv.nvmlDeviceGetCount_v2(&count)) != NVML_SUCCESS) {
        rc = gpu_nvml_fail(&nv, err, "nvmlDeviceGetCount_v2", r);
        goto done;
    }

    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char stamp[64];
    strftime(stamp, sizeof(stamp), "%a %b %e %H:%M:%S %Y", &tm);
    fprintf(out, "%s\n", stamp);
    rule(out, '-');
    snprintf(line, sizeof(line),
             "GPUSIM-SMI                      Driver Version: %-16s CUDA Version: %d.%d", drv,
             cuda / 1000, (cuda % 1000) / 10);
    row(out, line);
    fprintf(out, "|%.47s+%.18s+%.25s+%.10s|\n", DASHES, DASHES, DASHES, DASHES);
    fprintf(out, "| %-45s | %-16s | %23s | %8s |\n", "GPU  Name", "Bus-Id", "Memory-Usage",
            "GPU-Util");
    fprintf(out, "| %-45s | %-16s | %23s | %8s |\n", "     UUID", "", "", "");
    rule(out, '=');

    struct {
        unsigned int gpu;
        nvmlProcessInfo_t info;
    } *procs = calloc(MAX_PROCS, sizeof(*procs));
    if (!procs) {
        rc = gs_error_set(err, -ENOMEM, "out of memory");
        goto done;
    }
    int nprocs = 0;
    for (unsigned int i = 0; i < count; i++) {
        nvmlDevice_t dev;
        if ((r = nv.nvmlDeviceGetHandleByIndex_v2(i, &dev)) != NVML_SUCCESS) {
            rc = gpu_nvml_fail(&nv, err, "nvmlDeviceGetHandleByIndex_v2", r);
            free(procs);
            goto done;
        }
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "N/A";
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "N/A";
        nvmlPciInfo_t pci;
        nvmlMemory_t mem;
        nvmlUtilization_t util = {0, 0};
        nv.nvmlDeviceGetName(dev, name, sizeof(name));
        nv.nvmlDeviceGetUUID(dev, uuid, sizeof(uuid));
        if (nv.nvmlDeviceGetPciInfo_v3(dev, &pci) != NVML_SUCCESS)
            snprintf(pci.busId, sizeof(pci.busId), "N/A");
        if ((r = nv.nvmlDeviceGetMemoryInfo(dev, &mem)) != NVML_SUCCESS) {
            rc = gpu_nvml_fail(&nv, err, "nvmlDeviceGetMemoryInfo", r);
            free(procs);
            goto done;
        }
        char utilbuf[32] = "N/A";
        if (nv.nvmlDeviceGetUtilizationRates(dev, &util) == NVML_SUCCESS)
            snprintf(utilbuf, sizeof(utilbuf), "%u%%", util.gpu);
        char membuf[64];
        snprintf(membuf, sizeof(membuf), "%lluMiB / %lluMiB", mib(mem.used), mib(mem.total));
        char gpuname[64];
        snprintf(gpuname, sizeof(gpuname), "%3u  %.40s", i, name);
        fprintf(out, "| %-45s | %-16.16s | %23s | %8s |\n", gpuname, pci.busId, membuf, utilbuf);
        char uuidcol[64];
        snprintf(uuidcol, sizeof(uuidcol), "     %.40s", uuid);
        fprintf(out, "| %-45s | %-16s | %23s | %8s |\n", uuidcol, "", "", "");
        rule(out, '-');

        unsigned int n = MAX_PROCS - (unsigned int)nprocs;
        nvmlProcessInfo_t infos[MAX_PROCS];
        r = nv.nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, infos);
        if (r == NVML_SUCCESS) {
            for (unsigned int k = 0; k < n && nprocs < MAX_PROCS; k++) {
                procs[nprocs].gpu = i;
                procs[nprocs].info = infos[k];
                nprocs++;
            }
        }
    }
    fprintf(out, "\n");
    rule(out, '-');
    row(out, "Processes:");
    snprintf(line, sizeof(line), " GPU        PID   %-60s %20s", "Process name",
             "GPU Memory Usage");
    row(out, line);
    rule(out, '=');
    if (nprocs == 0)
        row(out, " No running processes found");
    for (int k = 0; k < nprocs; k++) {
        char pname[256] = "N/A";
        if (nv.nvmlSystemGetProcessName)
            nv.nvmlSystemGetProcessName(procs[k].info.pid, pname, sizeof(pname));
        char usage[32];
        if (procs[k].info.usedGpuMemory == (unsigned long long)NVML_VALUE_NOT_AVAILABLE)
            snprintf(usage, sizeof(usage), "N/A");
        else
            snprintf(usage, sizeof(usage), "%lluMiB", mib(procs[k].info.usedGpuMemory));
        size_t plen = strlen(pname);
        const char *shown = plen > 60 ? pname + plen - 60 : pname;
        snprintf(line, sizeof(line), "%4u   %8u   %-60s %20s", procs[k].gpu, procs[k].info.pid,
                 shown, usage);
        row(out, line);
    }
    rule(out, '-');
    free(procs);
    rc = 0;
done:
    gpu_nvml_close(&nv);
    return rc;
}

/* ------------------------------------------------------------------ --query-gpu */
enum qfield {
    Q_INDEX,
    Q_NAME,
    Q_UUID,
    Q_BUS,
    Q_DRIVER,
    Q_CC,
    Q_MEM_TOTAL,
    Q_MEM_USED,
    Q_MEM_FREE,
    Q_UTIL,
};

static const struct {
    const char *name;
    enum qfield f;
    const char *unit; /* shown in the header and after values unless nounits */
} qfields[] = {
    {"index", Q_INDEX, NULL},
    {"name", Q_NAME, NULL},
    {"uuid", Q_UUID, NULL},
    {"gpu_uuid", Q_UUID, NULL},
    {"pci.bus_id", Q_BUS, NULL},
    {"driver_version", Q_DRIVER, NULL},
    {"compute_cap", Q_CC, NULL},
    {"memory.total", Q_MEM_TOTAL, "MiB"},
    {"memory.used", Q_MEM_USED, "MiB"},
    {"memory.free", Q_MEM_FREE, "MiB"},
    {"utilization.gpu", Q_UTIL, "%"},
};

#define QMAX 16

int gpu_smi_query(FILE *out, const char *fields, const char *format, unsigned nvml_flags,
                  struct gs_error *err)
{
    int sel[QMAX], nsel = 0;
    bool header = true, units = true;
    char buf[512];
    if (!fields || !*fields)
        return gs_error_set(err, -EINVAL, "--query-gpu: no field given");
    if (strlen(fields) >= sizeof(buf))
        return gs_error_set(err, -EINVAL, "--query-gpu: longer than %zu characters",
                            sizeof(buf) - 1);
    snprintf(buf, sizeof(buf), "%s", fields);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        size_t k;
        for (k = 0; k < GS_ARRAY_SIZE(qfields); k++)
            if (strcmp(t, qfields[k].name) == 0)
                break;
        if (k == GS_ARRAY_SIZE(qfields))
            return gs_error_set(err, -EINVAL,
                                "--query-gpu: unknown field \"%.64s\" (known: index, name, uuid, "
                                "pci.bus_id, driver_version, compute_cap, memory.total, "
                                "memory.used, memory.free, utilization.gpu)",
                                t);
        if (nsel == QMAX)
            return gs_error_set(err, -EINVAL, "--query-gpu: more than %d fields", QMAX);
        sel[nsel++] = (int)k;
    }
    snprintf(buf, sizeof(buf), "%s", format ? format : "csv");
    save = NULL;
    bool csv = false;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (strcmp(t, "csv") == 0)
            csv = true;
        else if (strcmp(t, "noheader") == 0)
            header = false;
        else if (strcmp(t, "nounits") == 0)
            units = false;
        else
            return gs_error_set(err, -EINVAL,
                                "--format: unknown option \"%.64s\" (csv, noheader, nounits)", t);
    }
    if (!csv)
        return gs_error_set(err, -EINVAL, "--format: must include csv");

    struct gpu_nvml nv;
    int rc = gpu_nvml_open(&nv, GPU_NVML_USE_SMI, nvml_flags, err);
    if (rc < 0)
        return rc;
    nvmlReturn_t r;
    unsigned int count = 0;
    char drv[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A";
    nv.nvmlSystemGetDriverVersion(drv, sizeof(drv));
    if ((r = nv.nvmlDeviceGetCount_v2(&count)) != NVML_SUCCESS) {
        rc = gpu_nvml_fail(&nv, err, "nvmlDeviceGetCount_v2", r);
        goto done;
    }
    if (header) {
        for (int i = 0; i < nsel; i++) {
            const char *u = units ? qfields[sel[i]].unit : NULL;
            fprintf(out, "%s%s%s%s%s", i ? ", " : "", qfields[sel[i]].name, u ? " [" : "",
                    u ? u : "", u ? "]" : "");
        }
        fprintf(out, "\n");
    }
    for (unsigned int g = 0; g < count; g++) {
        nvmlDevice_t dev;
        if ((r = nv.nvmlDeviceGetHandleByIndex_v2(g, &dev)) != NVML_SUCCESS) {
            rc = gpu_nvml_fail(&nv, err, "nvmlDeviceGetHandleByIndex_v2", r);
            goto done;
        }
        nvmlMemory_t mem;
        bool have_mem = nv.nvmlDeviceGetMemoryInfo(dev, &mem) == NVML_SUCCESS;
        for (int i = 0; i < nsel; i++) {
            char v[128] = "[N/A]";
            nvmlPciInfo_t pci;
            nvmlUtilization_t util;
            int ma, mi;
            switch (qfields[sel[i]].f) {
            case Q_INDEX:
                snprintf(v, sizeof(v), "%u", g);
                break;
            case Q_NAME:
                nv.nvmlDeviceGetName(dev, v, sizeof(v));
                break;
            case Q_UUID:
                nv.nvmlDeviceGetUUID(dev, v, sizeof(v));
                break;
            case Q_BUS:
                if (nv.nvmlDeviceGetPciInfo_v3(dev, &pci) == NVML_SUCCESS)
                    snprintf(v, sizeof(v), "%s", pci.busId);
                break;
            case Q_DRIVER:
                snprintf(v, sizeof(v), "%s", drv);
                break;
            case Q_CC:
                if (nv.nvmlDeviceGetCudaComputeCapability &&
                    nv.nvmlDeviceGetCudaComputeCapability(dev, &ma, &mi) == NVML_SUCCESS)
                    snprintf(v, sizeof(v), "%d.%d", ma, mi);
                break;
            case Q_MEM_TOTAL:
            case Q_MEM_USED:
            case Q_MEM_FREE:
                if (have_mem) {
                    unsigned long long b = qfields[sel[i]].f == Q_MEM_TOTAL  ? mem.total
                                           : qfields[sel[i]].f == Q_MEM_USED ? mem.used
                                                                             : mem.free;
                    snprintf(v, sizeof(v), "%llu%s", mib(b), units ? " MiB" : "");
                }
                break;
            case Q_UTIL:
                if (nv.nvmlDeviceGetUtilizationRates(dev, &util) == NVML_SUCCESS)
                    snprintf(v, sizeof(v), "%u%s", util.gpu, units ? " %" : "");
                break;
            }
            fprintf(out, "%s%s", i ? ", " : "", v);
        }
        fprintf(out, "\n");
    }
    rc = 0;
done:
    gpu_nvml_close(&nv);
    return rc;
}
