/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: graphs. Kernel nodes run back to back on the device timeline at launch;
 * memory nodes (cuGraphAddMemAllocNode / cuGraphAddMemFreeNode) get their address when the node
 * is created and their physical memory when the graph is launched, from the device's graph
 * memory, which keeps it after the allocation is freed until cuDeviceGraphMemTrim (as the
 * driver does). Dependencies only order nodes: gpusim runs them in the order they were added.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/cuda-internal.h"

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

/* Append a node (a copy of *tmpl) to g; *out = the node handle. */
static CUresult add_node(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *dependencies,
                         size_t numDependencies, const struct sim_graph_node *tmpl)
{
    struct sim_graph *g = (struct sim_graph *)hGraph;
    if (!out || !cu_valid(g, CU_OBJ_GRAPH) || (numDependencies && !dependencies))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_graph_node *n = calloc(1, sizeof(*n));
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *n = *tmpl;
    n->next = NULL;
    if (g->last)
        g->last->next = n;
    else
        g->nodes = n;
    g->last = n;
    g->n++;
    *out = (CUgraphNode)n;
    return CUDA_SUCCESS;
}

static CUresult add_kernel_node(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUfunction func)
{
    CU_CHECK_INIT();
    struct sim_func *fn = cu_func_resolve(func);
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_graph_node t = {.kind = SIM_NODE_KERNEL, .fn = fn};
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &t);
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
    CUfunction f = nodeParams->func ? nodeParams->func : (CUfunction)nodeParams->kern;
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, f);
}

CU_API CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies, size_t numDependencies,
                                       CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    CU_CHECK_INIT();
    if (!nodeParams || nodeParams->bytesize == 0 ||
        nodeParams->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        (nodeParams->accessDescCount && !nodeParams->accessDescs))
        return CUDA_ERROR_INVALID_VALUE;
    int dev = cu_dev_of(nodeParams->poolProps.location.id);
    if (dev < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    for (size_t i = 0; i < nodeParams->accessDescCount; i++)
        if (nodeParams->accessDescs[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            cu_dev_of(nodeParams->accessDescs[i].location.id) < 0)
            return CUDA_ERROR_INVALID_VALUE;
    /* The address is fixed now, for every instantiation and launch. */
    pthread_mutex_lock(&cu_g.mem_lock);
    uint64_t dptr = cu_va_alloc_locked(dev, nodeParams->bytesize, CU_ADDR_ALIGN);
    pthread_mutex_unlock(&cu_g.mem_lock);
    struct sim_graph_node t = {
        .kind = SIM_NODE_MEM_ALLOC, .dptr = dptr, .size = nodeParams->bytesize, .dev = dev};
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &t);
    if (r == CUDA_SUCCESS)
        nodeParams->dptr = dptr;
    return r;
}

CU_API CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      CUdeviceptr dptr)
{
    CU_CHECK_INIT();
    struct sim_graph *g = (struct sim_graph *)hGraph;
    if (!cu_valid(g, CU_OBJ_GRAPH) || dptr == 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* Like the driver: an address no allocation node returned, or one freed twice in the same
     * graph, is refused. (Freeing a graph allocation made by another graph is allowed.) */
    bool known = false;
    for (struct sim_graph_node *n = g->nodes; n; n = n->next) {
        if (n->kind == SIM_NODE_MEM_FREE && n->dptr == dptr)
            return CUDA_ERROR_INVALID_VALUE;
        known |= n->kind == SIM_NODE_MEM_ALLOC && n->dptr == dptr;
    }
    if (!known) {
        pthread_mutex_lock(&cu_g.mem_lock);
        const struct sim_map_entry *e = sim_map_get(&cu_g.allocs, dptr);
        known = e && e->kind == CU_ALLOC_GRAPH;
        pthread_mutex_unlock(&cu_g.mem_lock);
    }
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_graph_node t = {.kind = SIM_NODE_MEM_FREE, .dptr = dptr};
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &t);
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
    x->nodes = count ? calloc(count, sizeof(*x->nodes)) : NULL;
    if (count && !x->nodes) {
        cu_obj_del(x);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t i = 0;
    for (struct sim_graph_node *n = g->nodes; n && i < count; n = n->next) {
        x->nodes[i] = *n;
        x->nodes[i++].next = NULL;
    }
    x->n = i;
    x->flags = flags;
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
    free(x->nodes);
    x->nodes = NULL;
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
    /* Memory nodes first, all or nothing: an allocation still live from an earlier launch is
     * an error (freed first with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH); memory the
     * device cannot provide is CUDA_ERROR_OUT_OF_MEMORY with nothing allocated. */
    if (x->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        for (size_t i = 0; i < x->n; i++)
            if (x->nodes[i].kind == SIM_NODE_MEM_ALLOC)
                cu_graph_mem_free(x->nodes[i].dptr);
    for (size_t i = 0; i < x->n; i++) {
        if (x->nodes[i].kind != SIM_NODE_MEM_ALLOC)
            continue;
        r = cu_graph_mem_alloc(&x->nodes[i]);
        if (r != CUDA_SUCCESS) {
            for (size_t k = 0; k < i; k++)
                if (x->nodes[k].kind == SIM_NODE_MEM_ALLOC)
                    cu_graph_mem_free(x->nodes[k].dptr);
            return r;
        }
    }
    uint64_t cost = 0;
    for (size_t i = 0; i < x->n; i++) {
        const struct sim_graph_node *n = &x->nodes[i];
        if (n->kind == SIM_NODE_KERNEL && cu_valid(n->fn, CU_OBJ_FUNC))
            cost = gs_sat_add_u64(cost, __atomic_load_n(&n->fn->cost_ns, __ATOMIC_RELAXED));
        else if (n->kind == SIM_NODE_MEM_FREE)
            cu_graph_mem_free(n->dptr);
    }
    /* The N kernels run back to back: one interval on the timeline. */
    cu_enqueue(s, cost);
    return CUDA_SUCCESS;
}

CU_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return cuGraphLaunch(hGraphExec, hStream);
}
