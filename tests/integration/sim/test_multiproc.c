/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim across processes: two processes see each other's memory through NVML and
 * cuMemGetInfo; a SIGKILLed process is reclaimed; processes killed while using the shared lock
 * never wedge the others. Also NVML's identity and topology calls. */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "simtest.h"
#include "tap.h"

static const char *self_exe;

struct child {
    pid_t pid;
    int in, out; /* write to its stdin, read its stdout */
};

static struct child spawn(const char *mode, const char *arg)
{
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0)
        exit(2);
    struct child c = {0};
    c.pid = fork();
    if (c.pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        execl(self_exe, self_exe, mode, arg, (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    c.in = to[1];
    c.out = from[0];
    return c;
}

static void read_line(struct child *c, char *buf, size_t len)
{
    size_t n = 0;
    char ch;
    while (n + 1 < len && read(c->out, &ch, 1) == 1 && ch != '\n')
        buf[n++] = ch;
    buf[n] = '\0';
}

static void finish(struct child *c)
{
    close(c->in);
    close(c->out);
    int st;
    waitpid(c->pid, &st, 0);
}

/* ---------------------------------------------------------------- child modes */
static int child_hold(const char *arg)
{
    unsigned long long mib = strtoull(arg, NULL, 10);
    CUcontext ctx;
    CUdeviceptr p;
    if (p_cuInit(0) || p_cuDevicePrimaryCtxRetain(&ctx, 0) || p_cuCtxSetCurrent(ctx) ||
        p_cuMemAlloc_v2(&p, mib * MiB)) {
        printf("error\n");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    char ch;
    while (read(0, &ch, 1) > 0) /* hold the memory until told (or killed) */
        ;
    p_cuMemFree_v2(p);
    p_cuDevicePrimaryCtxRelease_v2(0);
    return 0;
}

static int child_info(void)
{
    CUcontext ctx;
    size_t fr, tot;
    p_cuInit(0);
    p_cuCtxCreate_v2(&ctx, 0, 0);
    p_cuMemGetInfo_v2(&fr, &tot);
    printf("used=%llu\n", (unsigned long long)(tot - fr));
    p_cuCtxDestroy_v2(ctx);
    return 0;
}

static int child_spin(void)
{
    CUcontext ctx;
    CUmodule m;
    CUfunction f;
    CUdeviceptr p;
    p_cuInit(0);
    p_cuCtxCreate_v2(&ctx, 0, 0);
    p_cuModuleLoadData(&m, "gpusim");
    p_cuModuleGetFunction(&f, m, "sim_busy_0");
    printf("ready\n");
    fflush(stdout);
    for (;;) { /* the shared lock is taken and released continuously until SIGKILL */
        p_cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        if (p_cuMemAlloc_v2(&p, MiB) == CUDA_SUCCESS)
            p_cuMemFree_v2(p);
    }
    return 0;
}

/* ---------------------------------------------------------------- parent */
static unsigned long long nvml_used(nvmlDevice_t d)
{
    nvmlMemory_t m = {0};
    p_nvmlDeviceGetMemoryInfo(d, &m);
    return m.used;
}

static unsigned long long proc_mem(nvmlDevice_t d, pid_t pid, unsigned int *count)
{
    nvmlProcessInfo_t infos[16];
    unsigned int n = 16;
    *count = 0;
    if (p_nvmlDeviceGetComputeRunningProcesses_v3(d, &n, infos) != NVML_SUCCESS)
        return 0;
    *count = n;
    for (unsigned int i = 0; i < n; i++)
        if (infos[i].pid == (unsigned int)pid)
            return infos[i].usedGpuMemory;
    return 0;
}

static void test_identity(nvmlDevice_t d)
{
    char s[128];
    p_nvmlDeviceGetName(d, s, sizeof(s));
    is_str(s, "Tesla T4", "nvmlDeviceGetName");
    nvmlMemory_t m;
    p_nvmlDeviceGetMemoryInfo(d, &m);
    is_uint(m.total, 16106127360ull, "nvmlDeviceGetMemoryInfo total = 15360 MiB");
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    is_int(p_nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_SUCCESS, "nvmlDeviceGetMemoryInfo_v2");
    ok(m2.total == m.total && m2.used + m2.free == m2.total, "v2 total/used/free consistent");
    m2.version = 1;
    is_int(p_nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
           "wrong struct version refused");
    int ma = 0, mi = 0;
    p_nvmlDeviceGetCudaComputeCapability(d, &ma, &mi);
    ok(ma == 7 && mi == 5, "compute capability 7.5");
    nvmlDeviceArchitecture_t arch = 0;
    p_nvmlDeviceGetArchitecture(d, &arch);
    is_uint(arch, NVML_DEVICE_ARCH_TURING, "Turing");
    nvmlBrandType_t brand = 0;
    p_nvmlDeviceGetBrand(d, &brand);
    is_int(brand, NVML_BRAND_TESLA, "brand Tesla");
    p_nvmlSystemGetDriverVersion(s, sizeof(s));
    is_str(s, "570.124.06", "driver version");
    int cv = 0;
    p_nvmlSystemGetCudaDriverVersion_v2(&cv);
    is_int(cv, 12080, "CUDA driver version");
    nvmlPciInfo_t pci;
    p_nvmlDeviceGetPciInfo_v3(d, &pci);
    is_str(pci.busId, "00000000:00:04.0", "PCI busId");
    is_uint(pci.pciDeviceId, 0x1EB810DEu, "PCI device id of a T4");
    unsigned int u = 99;
    p_nvmlDeviceGetMinorNumber(d, &u);
    is_uint(u, 0, "minor 0");
    p_nvmlDeviceGetIndex(d, &u);
    is_uint(u, 0, "index 0");
    nvmlDevice_t byuuid, bypci;
    p_nvmlDeviceGetUUID(d, s, sizeof(s));
    ok(strncmp(s, "GPU-", 4) == 0 && strlen(s) == 40, "UUID GPU-8-4-4-4-12 (%s)", s);
    is_int(p_nvmlDeviceGetHandleByUUID(s, &byuuid), NVML_SUCCESS, "handle by UUID");
    is_int(p_nvmlDeviceGetHandleByPciBusId_v2("00000000:00:04.0", &bypci), NVML_SUCCESS,
           "handle by PCI bus id");
    ok(byuuid == d && bypci == d, "same handle");
    is_int(p_nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &byuuid),
           NVML_ERROR_NOT_FOUND, "unknown UUID");
    char small[4];
    is_int(p_nvmlDeviceGetName(d, small, sizeof(small)), NVML_ERROR_INSUFFICIENT_SIZE,
           "name buffer too small");
    nvmlEnableState_t en;
    is_int(p_nvmlDeviceGetNvLinkState(d, 0, &en), NVML_ERROR_NOT_SUPPORTED, "a T4 has no NVLink");
    nvmlGpuTopologyLevel_t lvl;
    p_nvmlDeviceGetTopologyCommonAncestor(d, d, &lvl);
    is_int(lvl, NVML_TOPOLOGY_INTERNAL, "same device: INTERNAL");
    is_str(p_nvmlErrorString(NVML_ERROR_NOT_FOUND), "Not Found", "nvmlErrorString");
}

static void test_topology(const char *state)
{
    setenv("GPUSIM_STATE", state, 1);
    setenv("GPUSIM_PRESET", "h200x2", 1);
    is_int(p_nvmlInit_v2(), NVML_SUCCESS, "nvmlInit_v2 on h200x2");
    nvmlDevice_t a, b;
    p_nvmlDeviceGetHandleByIndex_v2(0, &a);
    p_nvmlDeviceGetHandleByIndex_v2(1, &b);
    nvmlEnableState_t en = NVML_FEATURE_DISABLED;
    p_nvmlDeviceGetNvLinkState(a, 17, &en);
    is_int(en, NVML_FEATURE_ENABLED, "H200 link 17 active");
    nvmlPciInfo_t pci;
    p_nvmlDeviceGetNvLinkRemotePciInfo_v2(a, 0, &pci);
    is_str(pci.busId, "00000000:2A:00.0", "link 0 of GPU 0 reaches GPU 1");
    nvmlGpuTopologyLevel_t lvl;
    p_nvmlDeviceGetTopologyCommonAncestor(a, b, &lvl);
    is_int(lvl, NVML_TOPOLOGY_NODE, "two H200 on one NUMA node: NODE");
    p_nvmlShutdown();

    setenv("GPUSIM_PRESET", "a100x8", 1);
    char st2[400];
    snprintf(st2, sizeof(st2), "%s.a100", state);
    setenv("GPUSIM_STATE", st2, 1);
    p_nvmlInit_v2();
    unsigned int n = 0;
    p_nvmlDeviceGetCount_v2(&n);
    is_uint(n, 8, "a100x8 has 8 GPUs");
    nvmlDevice_t d0, d1, d4;
    p_nvmlDeviceGetHandleByIndex_v2(0, &d0);
    p_nvmlDeviceGetHandleByIndex_v2(1, &d1);
    p_nvmlDeviceGetHandleByIndex_v2(4, &d4);
    p_nvmlDeviceGetTopologyCommonAncestor(d0, d1, &lvl);
    is_int(lvl, NVML_TOPOLOGY_SINGLE, "GPU 0 and 1 share a PCIe switch");
    p_nvmlDeviceGetTopologyCommonAncestor(d0, d4, &lvl);
    is_int(lvl, NVML_TOPOLOGY_SYSTEM, "GPU 0 and 4 are on different NUMA nodes");
    p_nvmlDeviceGetNvLinkState(d0, 11, &en);
    is_int(en, NVML_FEATURE_ENABLED, "A100 link 11 active");
    is_int(p_nvmlDeviceGetNvLinkState(d0, 12, &en), NVML_SUCCESS, "link 12 exists");
    is_int(en, NVML_FEATURE_DISABLED, "A100 has 12 active links");
    p_nvmlShutdown();
    unlink(st2);
}

int main(int argc, char **argv)
{
    self_exe = argv[0];
    simtest_load_cuda();
    if (argc > 1) {
        if (strcmp(argv[1], "hold") == 0)
            return child_hold(argc > 2 ? argv[2] : "1");
        if (strcmp(argv[1], "info") == 0)
            return child_info();
        if (strcmp(argv[1], "spin") == 0)
            return child_spin();
        return 2;
    }
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("GPUSIM_CONTEXT_OVERHEAD");
    simtest_load_nvml();
    is_int(p_nvmlDeviceGetCount_v2(&(unsigned int){0}), NVML_ERROR_UNINITIALIZED,
           "NVML before init");
    is_int(p_nvmlInit_v2(), NVML_SUCCESS, "nvmlInit_v2");
    nvmlDevice_t d;
    is_int(p_nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS, "handle 0");
    test_identity(d);

    char line[128];
    struct child a = spawn("hold", "1536");
    read_line(&a, line, sizeof(line));
    is_str(line, "ready", "process A holds 1536 MiB");
    is_uint(nvml_used(d), 1536 * MiB, "NVML sees A's memory");
    unsigned int count;
    is_uint(proc_mem(d, a.pid, &count), 1536 * MiB, "A listed with 1536 MiB");
    is_uint(count, 1, "one process");
    char pname[512] = "";
    p_nvmlSystemGetProcessName((unsigned int)a.pid, pname, sizeof(pname));
    like_str(pname, "test_multiproc", "process name is A's executable");

    is_int(p_cuInit(0), CUDA_SUCCESS, "cuInit here");
    CUcontext ctx;
    p_cuCtxCreate_v2(&ctx, 0, 0);
    size_t fr, tot;
    p_cuMemGetInfo_v2(&fr, &tot);
    is_uint(tot - fr, 1536 * MiB, "cuMemGetInfo sees A's memory");
    CUdeviceptr mine;
    p_cuMemAlloc_v2(&mine, 2 * GiB);
    struct child b = spawn("info", "");
    read_line(&b, line, sizeof(line));
    is_str(line, "used=3758096384", "process B's cuMemGetInfo sees A (1.5 GiB) and us (2 GiB)");
    finish(&b);
    is_uint(proc_mem(d, getpid(), &count), 2 * GiB, "we are listed with 2 GiB");
    is_uint(count, 2, "two processes (B has exited)");
    nvmlProcessInfo_t one[1];
    unsigned int n1 = 1;
    is_int(p_nvmlDeviceGetComputeRunningProcesses_v3(d, &n1, one), NVML_ERROR_INSUFFICIENT_SIZE,
           "room for one of two: INSUFFICIENT_SIZE");
    is_uint(n1, 2, "and the count needed");
    nvmlProcessInfo_v1_t v1[4];
    unsigned int n4 = 4;
    is_int(p_nvmlDeviceGetComputeRunningProcesses(d, &n4, v1), NVML_SUCCESS, "v1 struct");
    ok(n4 == 2 && (v1[0].pid == (unsigned int)a.pid || v1[1].pid == (unsigned int)a.pid),
       "v1 list has A");

    /* SIGKILL A: its memory and slot come back. */
    kill(a.pid, SIGKILL);
    finish(&a);
    is_uint(nvml_used(d), 2 * GiB, "after SIGKILL only our 2 GiB remain (NVML)");
    p_cuMemGetInfo_v2(&fr, &tot);
    is_uint(tot - fr, 2 * GiB, "and cuMemGetInfo");
    proc_mem(d, a.pid, &count);
    is_uint(count, 1, "A is gone from the process list");

    /* Kill processes hammering the shared lock: nobody wedges. */
    for (int i = 0; i < 12; i++) {
        struct child s = spawn("spin", "");
        read_line(&s, line, sizeof(line));
        usleep(20000);
        kill(s.pid, SIGKILL);
        finish(&s);
    }
    CUdeviceptr q;
    is_int(p_cuMemAlloc_v2(&q, MiB), CUDA_SUCCESS, "allocating after 12 killed lock users");
    p_cuMemFree_v2(q);
    is_uint(nvml_used(d), 2 * GiB, "their memory was reclaimed");
    proc_mem(d, getpid(), &count);
    is_uint(count, 1, "only we remain");

    /* fork() without exec: CUDA state does not carry over; the child starts over with its own
     * slot and its exit gives back only its own memory. */
    fflush(stdout);
    pid_t fk = fork();
    if (fk == 0) {
        CUdeviceptr x;
        size_t f2, t2;
        CUcontext cc;
        if (p_cuMemAlloc_v2(&x, MiB) != CUDA_ERROR_NOT_INITIALIZED)
            _exit(10);
        if (p_cuInit(0) || p_cuCtxCreate_v2(&cc, 0, 0) || p_cuMemAlloc_v2(&x, 512 * MiB))
            _exit(11);
        p_cuMemGetInfo_v2(&f2, &t2);
        _exit(t2 - f2 == 2 * GiB + 512 * MiB ? 0 : 12);
    }
    int fst = -1;
    waitpid(fk, &fst, 0);
    is_int(WIFEXITED(fst) ? WEXITSTATUS(fst) : -1, 0,
           "forked child: re-init needed, then sees our 2 GiB plus its 512 MiB");
    is_uint(nvml_used(d), 2 * GiB, "the child's exit gave back its memory only");
    is_int(p_cuMemAlloc_v2(&q, MiB), CUDA_SUCCESS, "we still allocate after the fork");
    p_cuMemFree_v2(q);

    p_cuMemFree_v2(mine);
    p_cuCtxDestroy_v2(ctx);
    is_uint(nvml_used(d), 0, "all free");
    proc_mem(d, getpid(), &count);
    is_uint(count, 0, "no context, no memory: not listed");
    p_nvmlShutdown();

    char st[400];
    snprintf(st, sizeof(st), "%s/topo.state", simtest_dir);
    test_topology(st);
    unlink(st);
    simtest_cleanup();
    return tap_done();
}
