/* SPDX-License-Identifier: Apache-2.0 */
/* The auditor (see audit.h). */
#include "monitor/audit.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config/json.h"
#include "kube/k8s.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/proc.h"
#include "gpu/nvml.h"
#include "monitor/catalog.h"

#define MAX_PROCS_PER_GPU 1024

static const struct gs_k8s_resource events = {"", "v1", "events", true};

/* What identifies an NVML process across pid namespaces. */
struct proc_id {
    int32_t pid, inner; /* pid here; pid in its own (innermost) namespace */
    uint64_t pidns, start_time;
};

static void identify(int32_t pid, struct proc_id *id)
{
    *id = (struct proc_id){.pid = pid, .inner = pid};
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
    if (stat(path, &st) == 0)
        id->pidns = (uint64_t)st.st_ino;
    uint64_t start = 0;
    if (gs_proc_start_time(pid, &start) == 0)
        id->start_time = start;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "NSpid:", 6) == 0) {
            char *last = strrchr(line, '\t');
            if (!last)
                last = strrchr(line, ' ');
            if (last)
                id->inner = (int32_t)strtol(last + 1, NULL, 10);
            break;
        }
    fclose(f);
}

static bool slot_is(const struct mon_region_proc *slot, const struct proc_id *id)
{
    if (slot->start_time && id->start_time && slot->start_time != id->start_time)
        return false;
    if (slot->pidns && id->pidns)
        return slot->pidns == id->pidns && slot->pid == id->inner;
    return slot->pid == id->pid || slot->pid == id->inner;
}

/* SIGKILL `b->pid` if it is still the process that breached (same start time): a pidfd makes
 * the check and the signal refer to one process even if the pid is reused meanwhile. */
static int kill_breach(const struct mon_breach *b)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)b->pid, 0);
    if (fd < 0)
        return -errno;
    uint64_t start = 0;
    int r = 0;
    if (gs_proc_start_time(b->pid, &start) < 0 || (b->start_time && start != b->start_time))
        r = -ESRCH;
    else if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0)
        r = -errno;
    close(fd);
    return r;
#else
    return -ENOSYS;
#endif
}

static void emit_event(struct mon_catalog *c, const struct mon_breach *b, const char *msg)
{
    if (!c->cfg.k8s || !b->claim_ns[0])
        return;
    char name[300], now[64];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(name, sizeof(name), "%.200s.gpuslice-audit-%d-%lld", b->claim_name, (int)b->pid,
             (long long)t);
    _cleanup_(gs_json_decrefp) json_t *ev = json_pack(
        "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:s,s:s,s:i,s:{s:s,s:s}}",
        "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", b->claim_ns,
        "involvedObject", "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "name",
        b->claim_name, "namespace", b->claim_ns, "uid", b->claim_uid, "type", "Warning", "reason",
        b->killed ? "GPUMemoryBreachKilled" : "GPUMemoryBreach", "message", msg, "firstTimestamp",
        now, "lastTimestamp", now, "count", 1, "source", "component", "gpuslice-monitor", "host",
        c->cfg.node ? c->cfg.node : "");
    struct gs_error err = {0};
    if (ev && gs_k8s_create(c->cfg.k8s, &events, b->claim_ns, ev, 0, NULL, &err) < 0) {
        char q[300];
        gs_warn("audit event not written", "claim=%s/%s error=%s", b->claim_ns, b->claim_name,
                gs_log_quote(q, sizeof(q), err.msg));
    }
}

static bool was_reported(const struct mon_audit *a, const struct mon_breach *b)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->b[i].pid == b->pid && a->b[i].start_time == b->start_time &&
            strcmp(a->b[i].uuid, b->uuid) == 0 && strcmp(a->b[i].claim_uid, b->claim_uid) == 0)
            return true;
    return false;
}

void mon_audit_run(struct mon_catalog *c, struct gpu_nvml *nv)
{
    struct mon_audit *next = calloc(1, sizeof(*next));
    nvmlProcessInfo_t *procs = calloc(MAX_PROCS_PER_GPU, sizeof(*procs));
    struct mon_region_proc *slots = calloc(GS_REGION_MAX_PROCS, sizeof(*slots));
    if (!next || !procs || !slots)
        goto out;
    next->available = nv && nv->lib && nv->nvmlDeviceGetComputeRunningProcesses_v3 &&
                      c->gpus.discovered && c->gpus.n > 0;
    for (size_t g = 0; next->available && g < c->gpus.n; g++) {
        const struct mon_gpu *gpu = &c->gpus.gpu[g];
        nvmlDevice_t h;
        unsigned count = MAX_PROCS_PER_GPU;
        if (nv->nvmlDeviceGetHandleByIndex_v2(gpu->index, &h) != NVML_SUCCESS ||
            nv->nvmlDeviceGetComputeRunningProcesses_v3(h, &count, procs) != NVML_SUCCESS) {
            next->available = false; /* no per-process accounting here: nothing to judge */
            break;
        }
        for (unsigned k = 0; k < count && next->n < MON_AUDIT_MAX; k++) {
            unsigned long long used = procs[k].usedGpuMemory;
            if (used == 0 || used == ~0ULL) /* NVML_VALUE_NOT_AVAILABLE */
                continue;
            struct proc_id id;
            identify((int32_t)procs[k].pid, &id);
            pthread_mutex_lock(&c->lock);
            for (size_t i = 0; i < c->n_claims; i++) {
                struct mon_claim *m = c->claims[i];
                const struct mon_claim_device *dev = NULL;
                for (size_t d = 0; d < m->n_devices && !dev; d++)
                    if (strcmp(m->dev[d].uuid, gpu->uuid) == 0)
                        dev = &m->dev[d];
                if (!dev || !dev->memory_limit || used <= dev->memory_limit)
                    continue;
                uint32_t ns = mon_region_procs(&m->region, slots, GS_REGION_MAX_PROCS);
                bool mine = false;
                for (uint32_t q = 0; q < ns && !mine; q++)
                    mine = slot_is(&slots[q], &id);
                if (!mine)
                    continue;
                struct mon_breach *b = &next->b[next->n++];
                b->pid = id.pid, b->start_time = id.start_time;
                snprintf(b->claim_ns, sizeof(b->claim_ns), "%s", m->ns);
                snprintf(b->claim_name, sizeof(b->claim_name), "%s", m->name);
                snprintf(b->claim_uid, sizeof(b->claim_uid), "%s", m->uid);
                snprintf(b->uuid, sizeof(b->uuid), "%s", gpu->uuid);
                b->used = used, b->limit = dev->memory_limit;
                break;
            }
            pthread_mutex_unlock(&c->lock);
        }
    }
    /* New breaches: log, kill (policy), Event — outside the catalog lock. */
    for (size_t i = 0; i < next->n; i++) {
        struct mon_breach *b = &next->b[i];
        pthread_mutex_lock(&c->lock);
        bool old = was_reported(&c->audit, b);
        pthread_mutex_unlock(&c->lock);
        if (old)
            continue;
        next->breaches_total++;
        int kr = 0;
        if (c->cfg.audit_kill) {
            kr = kill_breach(b);
            b->killed = kr == 0;
            next->kills_total += b->killed;
        }
        char msg[512];
        snprintf(msg, sizeof(msg),
                 "process %d holds %" PRIu64 " MiB on %s, over the claim's limit of %" PRIu64
                 " MiB%s",
                 (int)b->pid, b->used >> 20, b->uuid, b->limit >> 20,
                 b->killed ? "; killed (--audit-kill)" : "");
        gs_error_log("memory breach",
                     "claim=%s/%s claim_uid=%s pid=%d device=%s used=%" PRIu64 " limit=%" PRIu64
                     " action=%s%s%s",
                     b->claim_ns, b->claim_name, b->claim_uid, (int)b->pid, b->uuid, b->used,
                     b->limit,
                     c->cfg.audit_kill ? (b->killed ? "killed" : "kill-failed") : "reported",
                     kr < 0 ? " error=" : "", kr < 0 ? gs_strerror(kr) : "");
        emit_event(c, b, msg);
    }
    pthread_mutex_lock(&c->lock);
    next->breaches_total += c->audit.breaches_total;
    next->kills_total += c->audit.kills_total;
    c->audit = *next;
    pthread_mutex_unlock(&c->lock);
out:
    free(next);
    free(procs);
    free(slots);
}
