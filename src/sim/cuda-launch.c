/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: modules, functions, kernel launches and graphs. A launch costs the function's
 * device time on its device's shared timeline (FIFO across every process, like a GPU without
 * MPS time-slicing contexts); the launch itself returns at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cuda-internal.h"

#define BUSY_PREFIX "sim_busy_"

static uint64_t default_cost_ns(void)
{
    static uint64_t cached;
    uint64_t c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (c)
        return c - 1;
    const char *env = getenv("GPUSIM_DEFAULT_KERNEL_US");
    unsigned long long us = GPUSIM_DEFAULT_KERNEL_US;
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0' && v <= 3600ull * 1000000ull)
            us = v;
    }
    c = us * 1000ull;
    __atomic_store_n(&cached, c + 1, __ATOMIC_RELAXED);
    return c;
}

/* Cost from the name: sim_busy_<microseconds>, else the default. */
static uint64_t cost_of_name(const char *name)
{
    size_t n = strlen(BUSY_PREFIX);
    if (strncmp(name, BUSY_PREFIX, n) == 0 && name[n]) {
        const char *p = name + n;
        if (strspn(p, "0123456789") == strlen(p) && strlen(p) <= 10)
            return strtoull(p, NULL, 10) * 1000ull;
    }
    return default_cost_ns();
}

/* ------------------------------------------------------------------ modules */
static CUresult module_new(CUmodule *module)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    struct sim_module *m = cu_obj_new(CU_OBJ_MODULE, sizeof(*m));
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->ctx = c;
    *module = (CUmodule)m;
    return CUDA_SUCCESS;
}

CU_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    CU_CHECK_INIT();
    if (!module || !fname)
        return CUDA_ERROR_INVALID_VALUE;
    if (access(fname, R_OK) != 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    return module_new(module);
}

CU_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    CU_CHECK_INIT();
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_new(module);
}

/* The options are ignored (no JIT); the prototype is the driver's. */
CU_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                   /* NOLINTNEXTLINE(readability-non-const-parameter): API's type */
                                   CUjit_option *options, void **optionValues)
{
    if (numOptions && (!options || !optionValues))
        return CUDA_ERROR_INVALID_VALUE;
    return cuModuleLoadData(module, image);
}

CU_API CUresult cuModuleUnload(CUmodule hmod)
{
    CU_CHECK_INIT();
    struct sim_module *m = (struct sim_module *)hmod;
    if (!cu_valid(m, CU_OBJ_MODULE))
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&cu_g.lock);
    struct sim_func *f = m->funcs;
    m->funcs = NULL;
    pthread_mutex_unlock(&cu_g.lock);
    for (; f; f = f->next)
        cu_obj_del(f);
    cu_obj_del(m);
    return CUDA_SUCCESS;
}

CU_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CU_CHECK_INIT();
    struct sim_module *m = (struct sim_module *)hmod;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(m, CU_OBJ_MODULE))
        return CUDA_ERROR_INVALID_HANDLE;
    if (name[0] == '\0' || strlen(name) >= sizeof(((struct sim_func *)0)->name))
        return CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&cu_g.lock);
    for (struct sim_func *f = m->funcs; f; f = f->next) {
        if (strcmp(f->name, name) == 0) {
            pthread_mutex_unlock(&cu_g.lock);
            *hfunc = (CUfunction)f;
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&cu_g.lock);
    struct sim_func *f = cu_obj_new(CU_OBJ_FUNC, sizeof(*f));
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->cost_ns = cost_of_name(name);
    f->mod = m;
    pthread_mutex_lock(&cu_g.lock);
    f->next = m->funcs;
    m->funcs = f;
    pthread_mutex_unlock(&cu_g.lock);
    *hfunc = (CUfunction)f;
    return CUDA_SUCCESS;
}

CU_API CUresult gpusimSetKernelCost(CUfunction f, unsigned long long usec)
{
    struct sim_func *fn = (struct sim_func *)f;
    if (!cu_valid(fn, CU_OBJ_FUNC) || usec > 3600ull * 1000000ull)
        return CUDA_ERROR_INVALID_VALUE;
    __atomic_store_n(&fn->cost_ns, (uint64_t)usec * 1000ull, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

CU_API CUresult gpusimGetKernelCost(CUfunction f, unsigned long long *usec)
{
    struct sim_func *fn = (struct sim_func *)f;
    if (!cu_valid(fn, CU_OBJ_FUNC) || !usec)
        return CUDA_ERROR_INVALID_VALUE;
    *usec = __atomic_load_n(&fn->cost_ns, __ATOMIC_RELAXED) / 1000ull;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ launches */
static CUresult launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz, CUstream hStream)
{
    struct sim_func *fn = (struct sim_func *)f;
    if (GS_UNLIKELY(!cu_valid(fn, CU_OBJ_FUNC)))
        return CUDA_ERROR_INVALID_HANDLE;
    if (GS_UNLIKELY(gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gy > 65535 ||
                    gz > 65535))
        return CUDA_ERROR_INVALID_VALUE;
    if (GS_UNLIKELY((uint64_t)bx * by * bz > 1024 || bz > 64))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (GS_UNLIKELY(!s))
        return r;
    cu_enqueue(s, __atomic_load_n(&fn->cost_ns, __ATOMIC_RELAXED));
    return CUDA_SUCCESS;
}

CU_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                               unsigned int gridDimZ, unsigned int blockDimX,
                               unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                               void **extra)
{
    CU_CHECK_INIT();
    if (GS_UNLIKELY(kernelParams && extra))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

CU_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra)
{
    return cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                          sharedMemBytes, hStream, kernelParams, extra);
}

CU_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                 void **extra)
{
    CU_CHECK_INIT();
    if (!config || (kernelParams && extra) || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                  config->blockDimY, config->blockDimZ, config->hStream);
}

CU_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    return cuLaunchKernelEx(config, f, kernelParams, extra);
}

CU_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream hStream, void **kernelParams)
{
    CU_CHECK_INIT();
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

CU_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream hStream, void **kernelParams)
{
    return cuLaunchCooperativeKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                     blockDimZ, sharedMemBytes, hStream, kernelParams);
}

/* ------------------------------------------------------------------ graphs */
CU_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    CU_CHECK_INIT();
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_graph *g = cu_obj_new(CU_OBJ_GRAPH, sizeof(*g));
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = (CUgraph)g;
    return CUDA_SUCCESS;
}

static void graph_nodes_free(struct sim_graph *g)
{
    for (struct sim_graph_node *n = g->nodes, *next; n; n = next) {
        next = n->next;
        free(n);
    }
    g->nodes = g->last = NULL;
    g->n = 0;
}

CU_API CUresult cuGraphDestroy(CUgraph hGraph)
{
    CU_CHECK_INIT();
    struct sim_graph *g = (struct sim_graph *)hGraph;
    if (!cu_valid(g, CU_OBJ_GRAPH))
        return CUDA_ERROR_INVALID_VALUE;
    graph_nodes_free(g);
    cu_obj_del(g);
    return CUDA_SUCCESS;
}

static CUresult add_kernel_node(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUfunction func)
{
    CU_CHECK_INIT();
    struct sim_graph *g = (struct sim_graph *)hGraph;
    if (!phGraphNode || !cu_valid(g, CU_OBJ_GRAPH) || (numDependencies && !dependencies))
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(func, CU_OBJ_FUNC))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_graph_node *n = calloc(1, sizeof(*n));
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    n->fn = (struct sim_func *)func;
    /* Dependencies only order nodes; the device runs them one after another anyway. */
    if (g->last)
        g->last->next = n;
    else
        g->nodes = n;
    g->last = n;
    g->n++;
    *phGraphNode = (CUgraphNode)n;
    return CUDA_SUCCESS;
}

CU_API CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                     const CUgraphNode *dependencies, size_t numDependencies,
                                     const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams->func);
}

CU_API CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams->func);
}

CU_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                            unsigned long long flags)
{
    CU_CHECK_INIT();
    struct sim_graph *g = (struct sim_graph *)hGraph;
    if (!phGraphExec || !cu_valid(g, CU_OBJ_GRAPH))
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~0xfull)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_graph_exec *x = cu_obj_new(CU_OBJ_GRAPH_EXEC, sizeof(*x));
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t count = g->n; /* the length of g->nodes */
    x->fns = count ? calloc(count, sizeof(struct sim_func *)) : NULL;
    if (count && !x->fns) {
        cu_obj_del(x);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t i = 0;
    for (struct sim_graph_node *n = g->nodes; n && i < count; n = n->next)
        x->fns[i++] = n->fn;
    x->n = i;
    *phGraphExec = (CUgraphExec)x;
    return CUDA_SUCCESS;
}

CU_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                   CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    if (phErrorNode)
        *phErrorNode = NULL;
    return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}

CU_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CU_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    CU_CHECK_INIT();
    struct sim_graph_exec *x = (struct sim_graph_exec *)hGraphExec;
    if (!cu_valid(x, CU_OBJ_GRAPH_EXEC))
        return CUDA_ERROR_INVALID_VALUE;
    free(x->fns);
    x->fns = NULL;
    x->n = 0;
    cu_obj_del(x);
    return CUDA_SUCCESS;
}

CU_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    CU_CHECK_INIT();
    struct sim_graph_exec *x = (struct sim_graph_exec *)hGraphExec;
    if (!cu_valid(x, CU_OBJ_GRAPH_EXEC))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    uint64_t cost = 0;
    for (size_t i = 0; i < x->n; i++)
        if (cu_valid(x->fns[i], CU_OBJ_FUNC))
            cost = gs_sat_add_u64(cost, __atomic_load_n(&x->fns[i]->cost_ns, __ATOMIC_RELAXED));
    /* The N kernels run back to back: one interval on the timeline. */
    cu_enqueue(s, cost);
    return CUDA_SUCCESS;
}

CU_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return cuGraphLaunch(hGraphExec, hStream);
}
