/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extender filter for one pod over 1,000 nodes x 8 GPUs with the inventory already decoded
 * (HAMi node annotations parsed, placed pods counted: ext_inventory_build once), as issue 15
 * asks: p50/p99 of one filter (ext_pod_request_init + ext_filter_nodes: HAMi's card rules on
 * every node, then the allocator on the best node that passes), against the allocator alone in
 * the same run (the same claim, decoded once, alloc_claims_allocate + release
 * on every node). Also the cost of building the inventory from the annotations. CPU-bound and
 * single-threaded; the ratio is the figure to compare across machines.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extender/inventory.h"
#include "extender/schedule.h"
#include "tap.h"

#define NODES  1000
#define GPUS   8
#define ROUNDS 200

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of this thread: what the filter costs, without the time other processes of a loaded
 * machine take the core away (the wall-clock figures above include it). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof(*v), cmp_d);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

/* Nodes with 8 x 24 GiB GPUs in HAMi's JSON encoding; half the GPUs hold an 8000 MiB pod. */
static void build(json_t *nodes, json_t *pods)
{
    for (int n = 0; n < NODES; n++) {
        char name[32], ann[4096] = "[";
        snprintf(name, sizeof(name), "node-%04d", n);
        for (int g = 0; g < GPUS; g++) {
            char d[256];
            snprintf(d, sizeof(d),
                     "%s{\"id\":\"GPU-%04d%04d-0000-4000-8000-000000000000\",\"index\":%d,"
                     "\"count\":10,\"devmem\":24576,\"devcore\":100,\"type\":\"NVIDIA-L4\","
                     "\"numa\":0,\"mode\":\"hami-core\",\"health\":true}",
                     g ? "," : "", n, g, g);
            strcat(ann, d);
        }
        strcat(ann, "]");
        json_array_append_new(nodes, json_pack("{s:{s:s,s:{s:s}}}", "metadata", "name", name,
                                               "annotations", "hami.io/node-nvidia-register", ann));
        for (int g = 0; g < GPUS; g += 2) {
            char pn[64], dev[160];
            snprintf(pn, sizeof(pn), "placed-%d-%d", n, g);
            snprintf(dev, sizeof(dev), "GPU-%04d%04d-0000-4000-8000-000000000000,NVIDIA,8000,10:;",
                     n, g);
            /* bound to the node and asking a GPU: what books a card (legacy.md) */
            json_array_append_new(
                pods,
                json_pack("{s:{s:s,s:s,s:{s:s,s:s,s:s}},s:{s:s,s:[{s:s,s:{s:{s:s}}}]}}", "metadata",
                          "name", pn, "namespace", "default", "annotations", "hami.io/vgpu-node",
                          name, "hami.io/vgpu-devices-allocated", dev, "hami.io/bind-phase",
                          "success", "spec", "nodeName", name, "containers", "name", "c0",
                          "resources", "limits", "nvidia.com/gpu", "1"));
        }
    }
}

int main(void)
{
    tap_plan_auto();
    json_t *nodes = json_array(), *pods = json_array();
    build(nodes, pods);
    struct gs_error err = {0};
    struct ext_inventory *inv = NULL;
    double t0 = now_s();
    int r =
        ext_inventory_build(nodes, pods, "hami-core-gpu.project-hami.io", NULL, NULL, &inv, &err);
    double build_s = now_s() - t0;
    ok(r == 0, "inventory of %d nodes x %d GPUs built (%s)", NODES, GPUS, err.msg);
    if (r < 0)
        return tap_done();
    printf("# inventory build (decode annotations, slices, %zu placed pods): %.1f ms\n",
           inv->n_placed, build_s * 1e3);

    json_t *pod =
        json_pack("{s:{s:s,s:s},s:{s:[{s:s,s:{s:{s:s,s:s,s:s}}}]}}", "metadata", "name", "bench",
                  "namespace", "default", "spec", "containers", "name", "c0", "resources", "limits",
                  "nvidia.com/gpu", "1", "nvidia.com/gpumem", "20000", "nvidia.com/gpucores", "10");
    static double filt[ROUNDS], base[ROUNDS], filt_cpu[ROUNDS], base_cpu[ROUNDS];
    size_t fits = 0, chosen = 0;
    const char **names = calloc(inv->n_nodes, sizeof(*names));
    struct ext_fit *fitv = calloc(inv->n_nodes, sizeof(*fitv));
    for (size_t n = 0; names && n < inv->n_nodes; n++)
        names[n] = inv->nodes[n].name;
    for (int k = 0; k < ROUNDS; k++) {
        /* The extender's filter: decode the pod, try every node (explanations on failure). */
        double a = now_s(), ac = cpu_s();
        struct ext_pod_request req;
        r = ext_pod_request_init(&req, pod, inv, ALLOC_POLICY_SPREAD, EXT_NODE_BINPACK, &err);
        long best = -1;
        if (r == 0 && ext_filter_nodes(inv, &req, names, inv->n_nodes, fitv, &best, &err) == 0) {
            fits = 0;
            for (size_t n = 0; n < inv->n_nodes; n++) {
                /* every node passes HAMi's rules (no failure text) and one is chosen */
                fits += !fitv[n].message[0];
                ext_fit_fini(&fitv[n]);
            }
            chosen += best >= 0;
        }
        filt[k] = now_s() - a;
        filt_cpu[k] = cpu_s() - ac;
        /* The allocator alone: the same decoded claim on every node, allocate + release. */
        a = now_s(), ac = cpu_s();
        for (size_t n = 0; r == 0 && n < inv->n_nodes; n++) {
            struct alloc_options opt = {.node = inv->nodes[n].name, .policy = ALLOC_POLICY_SPREAD};
            if (alloc_claims_allocate(inv->st, (const struct alloc_claim_spec *const *)req.spec,
                                      req.n_claims, &opt, NULL, NULL, &err) == 0)
                alloc_state_release_claim(inv->st, "default", "bench-0");
        }
        base[k] = now_s() - a;
        base_cpu[k] = cpu_s() - ac;
        ext_pod_request_fini(&req);
    }
    ok(fits == NODES,
       "a 20000 MiB pod passes HAMi's rules on every node (%zu): 4 GPUs per node "
       "still free",
       fits);
    ok(chosen == ROUNDS, "every filter chose a node (%zu of %d)", chosen, ROUNDS);
    free(names);
    free(fitv);
    double f50 = pct(filt, ROUNDS, 0.5), f99 = pct(filt, ROUNDS, 0.99);
    double b50 = pct(base, ROUNDS, 0.5), b99 = pct(base, ROUNDS, 0.99);
    printf("# filter, one pod over %d nodes x %d GPUs: p50 %.2f ms  p99 %.2f ms\n", NODES, GPUS,
           f50 * 1e3, f99 * 1e3);
    printf("# allocator alone (same claim, same nodes): p50 %.2f ms  p99 %.2f ms\n", b50 * 1e3,
           b99 * 1e3);
    printf("# ratio filter / allocator alone: p50 %.2fx  p99 %.2fx (target: p99 <= 5 ms)\n",
           f50 / b50, f99 / b99);
    double fc50 = pct(filt_cpu, ROUNDS, 0.5), fc99 = pct(filt_cpu, ROUNDS, 0.99);
    double bc50 = pct(base_cpu, ROUNDS, 0.5), bc99 = pct(base_cpu, ROUNDS, 0.99);
    printf("# filter CPU time (thread): p50 %.2f ms  p99 %.2f ms; allocator alone: p50 %.2f ms  "
           "p99 %.2f ms; ratio p99 %.2fx\n",
           fc50 * 1e3, fc99 * 1e3, bc50 * 1e3, bc99 * 1e3, fc99 / bc99);
    ok(f99 > 0 && b99 > 0, "measured");
    ext_inventory_free(inv);
    json_decref(pod);
    json_decref(nodes);
    json_decref(pods);
    return tap_done();
}
