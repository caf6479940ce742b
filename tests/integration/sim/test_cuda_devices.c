/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim devices: attributes of the presets, CUDA_VISIBLE_DEVICES, a config file, context
 * overhead, cuGetProcAddress versions and error strings. Configurations that cuInit reads
 * once run in child processes (this program re-executed with a mode argument). */
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>

#include "simtest.h"
#include "tap.h"

static const char *self_exe;

/* Child modes print key=value lines on stdout. */
static int child_visible(void)
{
    int n = -1;
    CUresult r = p_cuInit(0);
    printf("init=%d\n", (int)r);
    if (r != CUDA_SUCCESS)
        return 0;
    p_cuDeviceGetCount(&n);
    printf("count=%d\n", n);
    for (int i = 0; i < n; i++) {
        char bus[32];
        p_cuDeviceGetPCIBusId(bus, sizeof(bus), i);
        printf("bus%d=%s\n", i, bus);
    }
    return 0;
}

static int child_overhead(void)
{
    CUcontext c;
    size_t fr, tot;
    p_cuInit(0);
    p_cuCtxCreate_v2(&c, 0, 0);
    p_cuMemGetInfo_v2(&fr, &tot);
    printf("used=%llu\n", (unsigned long long)(tot - fr));
    p_cuCtxDestroy_v2(c);
    CUcontext c2;
    p_cuCtxCreate_v2(&c2, 0, 0);
    p_cuMemGetInfo_v2(&fr, &tot);
    printf("used_again=%llu\n", (unsigned long long)(tot - fr));
    p_cuCtxDestroy_v2(c2);
    p_cuMemGetInfo_v2(&fr, &tot);
    return 0;
}

static int child_config(void)
{
    CUresult r = p_cuInit(0);
    printf("init=%d\n", (int)r);
    if (r != CUDA_SUCCESS)
        return 0;
    int n = 0;
    p_cuDeviceGetCount(&n);
    printf("count=%d\n", n);
    for (int i = 0; i < n; i++) {
        char name[128];
        size_t tot;
        int sm, ma, mi;
        p_cuDeviceGetName(name, sizeof(name), i);
        p_cuDeviceTotalMem_v2(&tot, i);
        p_cuDeviceGetAttribute(&sm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, i);
        p_cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, i);
        p_cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, i);
        printf("dev%d=%s|%llu|%d|%d.%d\n", i, name, (unsigned long long)tot, sm, ma, mi);
    }
    return 0;
}

/* Run this program in `mode` with extra environment; capture stdout. */
static void run_child(const char *mode, const char *const *env, char *out, size_t len)
{
    int pfd[2];
    if (pipe(pfd) < 0)
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; env[i]; i += 2) {
            if (env[i + 1])
                setenv(env[i], env[i + 1], 1);
            else
                unsetenv(env[i]);
        }
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execl(self_exe, self_exe, mode, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    size_t got = 0;
    ssize_t n;
    while (got + 1 < len && (n = read(pfd[0], out + got, len - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = '\0';
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
}

static void test_attributes(void)
{
    int n = 0, v = 0;
    is_int(p_cuDeviceGetCount(&n), CUDA_SUCCESS, "cuDeviceGetCount");
    is_int(n, 1, "t4 preset has one device");
    char name[64];
    p_cuDeviceGetName(name, sizeof(name), 0);
    is_str(name, "Tesla T4", "name");
    size_t tot;
    p_cuDeviceTotalMem_v2(&tot, 0);
    is_uint(tot, 16106127360ull, "cuDeviceTotalMem_v2 = 15Gi");
    p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
    is_int(v, 40, "40 SMs");
    p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0);
    is_int(v, 1024, "1024 threads per SM");
    p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0);
    is_int(v, 7, "CC major 7");
    p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0);
    is_int(v, 5, "CC minor 5");
    is_int(p_cuDeviceGetAttribute(&v, (CUdevice_attribute)9999, 0), CUDA_ERROR_INVALID_VALUE,
           "unknown attribute");
    is_int(p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1), CUDA_ERROR_INVALID_DEVICE,
           "device 1 does not exist");
    char bus[32];
    p_cuDeviceGetPCIBusId(bus, sizeof(bus), 0);
    is_str(bus, "0000:00:04.0", "PCI bus id");
    CUdevice d = -1;
    is_int(p_cuDeviceGetByPCIBusId(&d, "00000000:00:04.0"), CUDA_SUCCESS, "by PCI bus id");
    is_int(d, 0, "finds device 0");
    CUuuid u;
    p_cuDeviceGetUuid(&u, 0);
    char hex[40];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)u.bytes[i]);
    /* Same UUID through NVML. */
    simtest_load_nvml();
    p_nvmlInit_v2();
    nvmlDevice_t nd;
    p_nvmlDeviceGetHandleByIndex_v2(0, &nd);
    char nu[96], flat[40];
    p_nvmlDeviceGetUUID(nd, nu, sizeof(nu));
    int k = 0;
    for (const char *q = nu + 4; *q && k < 32; q++)
        if (*q != '-')
            flat[k++] = *q;
    flat[k] = '\0';
    is_str(hex, flat, "cuDeviceGetUuid bytes match NVML's UUID %s", nu);
    p_nvmlShutdown();
    int drv = 0;
    p_cuDriverGetVersion(&drv);
    is_int(drv, 12080, "driver API version 12.8");
}

static void test_proc_address(void)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = 99;
    is_int(p_cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &st), CUDA_SUCCESS, "cuMemAlloc");
    ok(fn == dlsym(simtest_cuda_handle, "cuMemAlloc_v2") && st == CU_GET_PROC_ADDRESS_SUCCESS,
       "cuMemAlloc at 12.0 is cuMemAlloc_v2");
    is_int(p_cuGetProcAddress_v2("cuMemAlloc", &fn, 3000, 0, &st), CUDA_SUCCESS,
           "cuMemAlloc at 3.0");
    ok(fn == dlsym(simtest_cuda_handle, "cuMemAlloc"), "is the v1 entry point (32-bit ABI)");
    is_int(p_cuGetProcAddress_v2("cuLibraryLoadData", &fn, 11080, 0, &st), CUDA_ERROR_NOT_FOUND,
           "cuLibraryLoadData at 11.8 (new in 12.0)");
    is_int(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "status VERSION_NOT_SUFFICIENT");
    ok(fn == NULL, "pfn cleared");
    is_int(p_cuGetProcAddress_v2("cuNoSuchThing", &fn, 12000, 0, &st), CUDA_ERROR_NOT_FOUND,
           "unknown symbol");
    is_int(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "status SYMBOL_NOT_FOUND");
    static const struct {
        const char *base;
        int ver;
        unsigned long long flags;
        const char *want;
    } table[] = {
        {"cuCtxCreate", 11000, 0, "cuCtxCreate_v2"},
        {"cuCtxCreate", 12000, 0, "cuCtxCreate_v3"},
        {"cuCtxCreate", 12080, 0, "cuCtxCreate_v4"},
        {"cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2"},
        {"cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags"},
        {"cuGraphAddKernelNode", 12000, 0, "cuGraphAddKernelNode_v2"},
        {"cuGraphAddKernelNode", 11080, 0, "cuGraphAddKernelNode"},
        {"cuLaunchKernel", 12000, 0, "cuLaunchKernel"},
        {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
         "cuLaunchKernel_ptsz"},
        {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuLaunchKernel"},
        {"cuMemFreeAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
         "cuMemFreeAsync_ptsz"},
        {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
        {"cuGetProcAddress", 11080, 0, "cuGetProcAddress"},
        {"cuDevicePrimaryCtxRelease", 12000, 0, "cuDevicePrimaryCtxRelease_v2"},
        {"cuDevicePrimaryCtxRelease", 10020, 0, "cuDevicePrimaryCtxRelease"},
        {"cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2"},
        {"cuMemGetInfo", 3010, 0, "cuMemGetInfo"},
        {"cuMemAllocPitch", 2000, 0, "cuMemAllocPitch"},
        {"cuMemFree", 2000, 0, "cuMemFree"},
        {"cuMemAllocHost", 12000, 0, "cuMemAllocHost_v2"},
        {"cuMemHostRegister", 12000, 0, "cuMemHostRegister_v2"},
        {"cuMemcpy", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpy_ptds"},
        {"cuMemcpyAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
         "cuMemcpyAsync_ptsz"},
        {"cuGraphAddMemAllocNode", 12000, 0, "cuGraphAddMemAllocNode"},
        {"cuDeviceGraphMemTrim", 12000, 0, "cuDeviceGraphMemTrim"},
        {"cuLibraryLoadData", 12000, 0, "cuLibraryLoadData"},
        {"cuKernelGetFunction", 12080, 0, "cuKernelGetFunction"},
        {"cuOccupancyMaxActiveClusters", 12000, 0, "cuOccupancyMaxActiveClusters"},
        {"cuCtxGetLimit", 12000, 0, "cuCtxGetLimit"},
        {"cuGetExportTable", 12000, 0, "cuGetExportTable"},
        {"cuMemGetInfo", 13000, 0, "cuMemGetInfo_v2"},
        {"cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2"},
        {"cuEventElapsedTime", 12040, 0, "cuEventElapsedTime"},
        {"cuMemAlloc_v2", 12000, 0, "cuMemAlloc_v2"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        fn = NULL;
        CUresult r = p_cuGetProcAddress(table[i].base, &fn, table[i].ver, table[i].flags);
        ok(r == CUDA_SUCCESS && fn == dlsym(simtest_cuda_handle, table[i].want),
           "%s at %d flags %llu -> %s", table[i].base, table[i].ver, table[i].flags, table[i].want);
    }
    /* Every entry point the tests use resolves by its base name at 13.0. */
    static const char *const names[] = {
#define NAME(n) #n,
        CU_FUNCS(NAME)
#undef NAME
    };
    int resolved = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char base[64];
        snprintf(base, sizeof(base), "%s", names[i]);
        size_t l = strlen(base);
        if (l > 3 && base[l - 3] == '_' && base[l - 2] == 'v')
            base[l - 3] = '\0';
        fn = NULL;
        resolved += p_cuGetProcAddress(base, &fn, 13000, 0) == CUDA_SUCCESS && fn;
    }
    is_int(resolved, (int)(sizeof(names) / sizeof(names[0])), "all %zu entry points resolve",
           sizeof(names) / sizeof(names[0]));
}

static void test_errors(void)
{
    const char *s = NULL;
    is_int(p_cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS, "cuGetErrorName");
    is_str(s, "CUDA_ERROR_OUT_OF_MEMORY", "name of 2");
    p_cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s);
    is_str(s, "out of memory", "string of 2");
    p_cuGetErrorName(CUDA_ERROR_NOT_FOUND, &s);
    is_str(s, "CUDA_ERROR_NOT_FOUND", "name of 500");
    is_int(p_cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE, "unknown code");
}

int main(int argc, char **argv)
{
    self_exe = argv[0];
    simtest_load_cuda();
    if (argc > 1) {
        if (strcmp(argv[1], "visible") == 0)
            return child_visible();
        if (strcmp(argv[1], "overhead") == 0)
            return child_overhead();
        if (strcmp(argv[1], "config") == 0)
            return child_config();
        return 2;
    }
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("GPUSIM_CONTEXT_OVERHEAD");
    int n;
    is_int(p_cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGetCount before cuInit");
    is_int(p_cuInit(1), CUDA_ERROR_INVALID_VALUE, "cuInit flags must be 0");
    is_int(p_cuInit(0), CUDA_SUCCESS, "cuInit");
    test_attributes();
    test_proc_address();
    test_errors();

    char out[4096], state[400];
    /* a100x8 in its own state file; CUDA_VISIBLE_DEVICES re-orders and filters. */
    snprintf(state, sizeof(state), "%s/a100.state", simtest_dir);
    const char *e1[] = {"GPUSIM_PRESET", "a100x8", "GPUSIM_STATE", state, "CUDA_VISIBLE_DEVICES",
                        "3,1",           NULL};
    run_child("visible", e1, out, sizeof(out));
    is_str(out, "init=0\ncount=2\nbus0=0000:4E:00.0\nbus1=0000:0F:00.0\n",
           "CUDA_VISIBLE_DEVICES=3,1 reorders");
    const char *e2[] = {"GPUSIM_PRESET", "a100x8", "GPUSIM_STATE", state, "CUDA_VISIBLE_DEVICES",
                        "0,9,1",         NULL};
    run_child("visible", e2, out, sizeof(out));
    is_str(out, "init=0\ncount=1\nbus0=0000:07:00.0\n", "the list ends at an invalid entry");
    const char *e3[] = {
        "GPUSIM_PRESET", "a100x8", "GPUSIM_STATE", state, "CUDA_VISIBLE_DEVICES", "", NULL};
    run_child("visible", e3, out, sizeof(out));
    is_str(out, "init=100\n", "empty CUDA_VISIBLE_DEVICES: CUDA_ERROR_NO_DEVICE");

    /* UUID prefix: take device 5's UUID from NVML on the same model. */
    setenv("GPUSIM_PRESET", "a100x8", 1);
    char nvstate[400];
    snprintf(nvstate, sizeof(nvstate), "GPUSIM_STATE=%s", state);
    setenv("GPUSIM_STATE", state, 1);
    p_nvmlInit_v2();
    nvmlDevice_t d5;
    char uuid[96] = "";
    p_nvmlDeviceGetHandleByIndex_v2(5, &d5);
    p_nvmlDeviceGetUUID(d5, uuid, sizeof(uuid));
    p_nvmlShutdown();
    uuid[16] = '\0'; /* a prefix: "GPU-xxxxxxxx-xxx" */
    char vis[64];
    snprintf(vis, sizeof(vis), "%s,0", uuid);
    const char *e4[] = {"GPUSIM_STATE", state, "CUDA_VISIBLE_DEVICES", vis, NULL};
    run_child("visible", e4, out, sizeof(out));
    is_str(out, "init=0\ncount=2\nbus0=0000:90:00.0\nbus1=0000:07:00.0\n",
           "CUDA_VISIBLE_DEVICES by UUID prefix");
    setenv("GPUSIM_PRESET", "t4", 1);

    snprintf(state, sizeof(state), "%s/overhead.state", simtest_dir);
    const char *e5[] = {"GPUSIM_STATE", state, "GPUSIM_CONTEXT_OVERHEAD", "300Mi", NULL};
    run_child("overhead", e5, out, sizeof(out));
    is_str(out, "used=314572800\nused_again=314572800\n",
           "GPUSIM_CONTEXT_OVERHEAD=300Mi is charged per context and given back");

    char cfgpath[400];
    snprintf(cfgpath, sizeof(cfgpath), "%s/gpus.yaml", simtest_dir);
    FILE *f = fopen(cfgpath, "w");
    fprintf(f, "# two GPUs\ndriver_version: \"550.54.15\"\ndevices:\n"
               "  - name: NVIDIA L4\n    memory: 23034Mi\n    compute_capability: \"8.9\"\n"
               "    sm_count: 58\n"
               "  - name: Tesla V100-SXM2-16GB\n    memory: 16Gi\n    architecture: volta\n"
               "    compute_capability: 7.0\n");
    fclose(f);
    snprintf(state, sizeof(state), "%s/config.state", simtest_dir);
    const char *e6[] = {"GPUSIM_STATE", state, "GPUSIM_CONFIG", cfgpath, NULL};
    run_child("config", e6, out, sizeof(out));
    is_str(out,
           "init=0\ncount=2\ndev0=NVIDIA L4|24152899584|58|8.9\n"
           "dev1=Tesla V100-SXM2-16GB|17179869184|80|7.0\n",
           "GPUSIM_CONFIG (YAML) defines the devices");
    f = fopen(cfgpath, "w");
    fprintf(f, "devices:\n  - name: X\n    memory: 15Q\n");
    fclose(f);
    const char *e7[] = {"GPUSIM_STATE", state, "GPUSIM_CONFIG", cfgpath, NULL};
    run_child("config", e7, out, sizeof(out));
    is_str(out, "init=802\n", "a broken config makes cuInit fail (CUDA_ERROR_SYSTEM_NOT_READY)");

    const char *e8[] = {"GPUSIM_STATE", "/nonexistent-gpusim-dir/state", NULL};
    run_child("visible", e8, out, sizeof(out));
    is_str(out, "init=304\n", "an unusable GPUSIM_STATE: CUDA_ERROR_OPERATING_SYSTEM");

    char p1[400], p2[400], p3[400];
    snprintf(p1, sizeof(p1), "%s/a100.state", simtest_dir);
    snprintf(p2, sizeof(p2), "%s/overhead.state", simtest_dir);
    snprintf(p3, sizeof(p3), "%s/config.state", simtest_dir);
    unlink(p1);
    unlink(p2);
    unlink(p3);
    unlink(cfgpath);
    (void)nvstate;
    simtest_cleanup();
    return tap_done();
}
