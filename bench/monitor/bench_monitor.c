/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scrape cost of gpuslice-monitor: 200 claims on 8 GPUs (each claim one device, one pod with one
 * container; regions on tmpfs; checkpoint written with the plugin's serializer), whole scrapes
 * (mon_collect: region reads + samples + merge + text rendering) timed one by one; p50/p99/max.
 * Baseline measured in the same run: rendering an exposition with the same number of samples from
 * a fixed list (no catalog, no region reads), i.e. the floor of any exporter writing that text.
 * Prints the figures and the ratio; never a timed assertion.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "fixtures.h"
#include "gpu/claim.h"
#include "monitor/catalog.h"
#include "monitor/collect.h"
#include "tap.h"

#define N_CLAIMS  200
#define N_GPUS    8
#define N_SCRAPES 2000
#define WARMUP    100

static uint64_t clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct stats {
    double p50, p99, max;
};

static struct stats summarize(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    return (struct stats){v[n / 2] / 1e6, v[(n * 99) / 100] / 1e6, v[n - 1] / 1e6};
}

int main(void)
{
    tap_plan_auto();
    mon_tune_malloc(); /* as gpuslice-monitor's main does */
    char root[256];
    snprintf(root, sizeof(root), "%s/gs-bench-monitor-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(root))
        return 1;
    char host[300], state[300];
    snprintf(host, sizeof(host), "%s/host", root);
    snprintf(state, sizeof(state), "%s/state", root);
    gs_mkdir_p(state, 0755, NULL);

    json_t *claims = json_object();
    struct claim_plan *p = calloc(1, sizeof(*p));
    for (int i = 0; i < N_CLAIMS; i++) {
        memset(p, 0, sizeof(*p));
        snprintf(p->ns, sizeof(p->ns), "bench");
        snprintf(p->name, sizeof(p->name), "claim-%03d", i);
        snprintf(p->uid, sizeof(p->uid), "00000000-0000-4000-8000-%012d", i);
        struct claim_device *d = &p->devices[p->n_devices++];
        snprintf(d->device, sizeof(d->device), "hami-gpu-%d", i % N_GPUS);
        snprintf(d->uuid, sizeof(d->uuid), "GPU-bench-%d", i % N_GPUS);
        d->minor = (unsigned)(i % N_GPUS);
        d->memory_limit = 1ull << 30;
        d->cores = 10;
        json_object_set_new(claims, p->uid,
                            json_pack("{s:s, s:I, s:o}", "state", "PrepareCompleted",
                                      "missingSince", (json_int_t)0, "plan",
                                      claim_plan_to_json(p)));
        char dir[700], path[800];
        snprintf(dir, sizeof(dir), "%s/claims/%s/region", host, p->uid);
        gs_mkdir_p(dir, 0755, NULL);
        snprintf(path, sizeof(path), "%s/region", dir);
        const struct fx_device fd[] = {{.uuid = d->uuid,
                                        .used = (uint64_t)i << 20,
                                        .cores = 10,
                                        .gpu_busy_ns = 1000,
                                        .last_kernel_ns = 1,
                                        .launches = 5}};
        fx_write_region(path, GS_REGION_VERSION, 0, 0, GS_REGION_READY, fd, 1);
    }
    free(p);
    json_t *doc = json_pack("{s:i, s:s, s:o}", "version", 1, "driver", "d", "claims", claims);
    char *text = json_dumps(doc, JSON_COMPACT), ckpt[400];
    snprintf(ckpt, sizeof(ckpt), "%s/checkpoint.json", state);
    gs_write_file_atomic(ckpt, text, strlen(text), 0600, NULL);
    free(text);
    json_decref(doc);

    struct mon_catalog cat;
    struct mon_catalog_config cfg = {.node = "bench-node",
                                     .host_dir = host,
                                     .plugin_state_dir = state,
                                     .refresh_ns = 1000000000ull,
                                     .resync_ns = 1000000000ull};
    if (mon_catalog_init(&cat, &cfg, NULL) < 0)
        return 1;
    mon_catalog_refresh(&cat);
    mon_catalog_refresh(&cat); /* utilisation windows closed */
    /* What the API would have resolved: one pod with one container per claim; 8 NVML GPUs. */
    pthread_mutex_lock(&cat.lock);
    for (size_t i = 0; i < cat.n_claims; i++) {
        struct mon_claim *m = cat.claims[i];
        free(m->consumers);
        m->consumers = calloc(1, sizeof(*m->consumers));
        m->n_consumers = 1;
        snprintf(m->consumers[0].ns, sizeof(m->consumers[0].ns), "bench");
        snprintf(m->consumers[0].pod, sizeof(m->consumers[0].pod), "pod-%s", m->name);
        snprintf(m->consumers[0].container, sizeof(m->consumers[0].container), "main");
        m->resolution = MON_RESOLVE_DONE;
    }
    cat.gpus.discovered = true;
    cat.gpus.n = N_GPUS;
    for (int g = 0; g < N_GPUS; g++) {
        struct mon_gpu *x = &cat.gpus.gpu[g];
        memset(x, 0, sizeof(*x));
        x->index = x->minor = (unsigned)g;
        snprintf(x->name, sizeof(x->name), "hami-gpu-%d", g);
        snprintf(x->uuid, sizeof(x->uuid), "GPU-bench-%d", g);
        snprintf(x->type, sizeof(x->type), "NVIDIA-H100");
        x->memory_total = x->memory_published = 80ull << 30;
        x->has_memory_used = x->has_utilization = true;
    }
    pthread_mutex_unlock(&cat.lock);
    is_int(cat.n_claims, N_CLAIMS, "%d claims in the catalog", N_CLAIMS);

    struct mon_collect_opts o = {.node = "bench-node", .version = "bench", .legacy = false};
    struct mon_scrape_stats st = {0};
    uint64_t *t = calloc(N_SCRAPES, sizeof(*t)), *tc = calloc(N_SCRAPES, sizeof(*tc));
    size_t bytes = 0;
    int failed = 0;
    for (int i = 0; i < WARMUP + N_SCRAPES; i++) {
        char *out = NULL;
        size_t len = 0;
        uint64_t a = now_ns(), ca = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        int r = mon_collect(&cat, &o, &st, MON_FORMAT_TEXT, &out, &len);
        uint64_t b = now_ns(), cb = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        failed |= r < 0;
        if (i >= WARMUP) {
            t[i - WARMUP] = b - a;
            tc[i - WARMUP] = cb - ca;
        }
        bytes = len;
        free(out);
    }
    ok(!failed, "every scrape succeeded");
    struct stats s = summarize(t, N_SCRAPES), sc = summarize(tc, N_SCRAPES);

    /* Baseline: the same number of samples (counted from one exposition), fixed label sets. */
    char *one = NULL;
    size_t one_len = 0;
    mon_collect(&cat, &o, NULL, MON_FORMAT_TEXT, &one, &one_len);
    size_t n_samples = 0;
    for (char *q = one; q && *q; q = strchr(q, '\n') ? strchr(q, '\n') + 1 : q + strlen(q))
        n_samples += *q != '#';
    free(one);
    static const struct mon_family_def fam = {"baseline_bytes", MON_GAUGE, MON_MERGE_NONE, "B"};
    struct mon_labels *labels = calloc(n_samples, sizeof(*labels));
    for (size_t i = 0; i < n_samples; i++) {
        char pod[64];
        snprintf(pod, sizeof(pod), "pod-claim-%03zu", i % N_CLAIMS);
        mon_labels_init(&labels[i]);
        mon_labels_add(&labels[i], "namespace", "bench");
        mon_labels_add(&labels[i], "pod", pod);
        mon_labels_add(&labels[i], "container", "main");
        mon_labels_add_u(&labels[i], "vdevice_index", i / N_CLAIMS);
        mon_labels_add(&labels[i], "device_uuid", "GPU-bench-0");
    }
    uint64_t *tb = calloc(N_SCRAPES, sizeof(*tb)), *tbc = calloc(N_SCRAPES, sizeof(*tbc));
    for (int i = 0; i < WARMUP + N_SCRAPES; i++) {
        uint64_t a = now_ns(), ca = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        struct mon_expo *e = mon_expo_new(0);
        int f = mon_expo_family(e, &fam);
        for (size_t k = 0; k < n_samples; k++)
            mon_expo_add(e, f, &labels[k], (double)k);
        char *out = NULL;
        size_t len;
        mon_expo_render(e, MON_FORMAT_TEXT, &out, &len);
        mon_expo_free(e);
        free(out);
        uint64_t b = now_ns(), cb = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        if (i >= WARMUP) {
            tb[i - WARMUP] = b - a;
            tbc[i - WARMUP] = cb - ca;
        }
    }
    struct stats base = summarize(tb, N_SCRAPES), basec = summarize(tbc, N_SCRAPES);

    diag("scrape, %d claims on %d GPUs, %zu samples, %zu bytes, %d scrapes:", N_CLAIMS, N_GPUS,
         n_samples, bytes, N_SCRAPES);
    diag("  wall time:   p50 %.3f ms  p99 %.3f ms  max %.3f ms", s.p50, s.p99, s.max);
    diag("  thread CPU:  p50 %.3f ms  p99 %.3f ms  max %.3f ms (excludes preemption)", sc.p50,
         sc.p99, sc.max);
    diag("baseline, render %zu fixed samples: wall p50 %.3f ms p99 %.3f ms; CPU p50 %.3f ms "
         "p99 %.3f ms",
         n_samples, base.p50, base.p99, basec.p50, basec.p99);
    diag("ratio scrape/baseline: wall p50 %.2fx p99 %.2fx; CPU p50 %.2fx p99 %.2fx   "
         "(target: scrape p99 < 5 ms)",
         s.p50 / base.p50, s.p99 / base.p99, sc.p50 / basec.p50, sc.p99 / basec.p99);
    /* The figure and its target are a report, not a result: ok() only that it was measured. */
    diag("scrape p99 %.3f ms wall, %.3f ms CPU (target < 5 ms); baseline p99 %.3f ms wall", s.p99,
         sc.p99, base.p99);
    ok(s.p99 > 0 && base.p99 > 0, "scrape and baseline measured");
    free(t);
    free(tc);
    free(tb);
    free(tbc);
    free(labels);
    mon_catalog_fini(&cat);
    gs_rm_rf(root, NULL);
    return tap_done();
}
