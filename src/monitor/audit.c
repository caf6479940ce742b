/* SPDX-License-Identifier: Apache-2.0 */
/* The auditor (see audit.h). */
#include "monitor/audit.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "config/json.h"
#include "kube/k8s.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/proc.h"
#include "gpu/nvml.h"
#include "monitor/catalog.h"
#include "monitor/ident.h"

#define MAX_PROCS_PER_GPU 1024
#define HOLDERS_MAX       (16u * 1024u) /* <slice dir>/holders.json, as src/cli/members.c */

static const struct gs_k8s_resource events = {"", "v1", "events", true};

static bool slot_is(const struct mon_region_proc *slot, const struct mon_proc_ident *id)
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

/* The Event goes to the pod that breached (its namespace, name and UID as the API server wrote
 * them), never to the claim a region names: a tenant writes its region, not another's pod. */
static void emit_event(struct mon_catalog *c, const struct mon_breach *b, const char *msg)
{
    if (!c->cfg.k8s || !b->pod_ns[0] || !b->pod_name[0])
        return;
    char name[300], now[64];
    gs_rfc3339_utc((int64_t)time(NULL), now, sizeof(now));
    /* <object>.<unix nanoseconds in hex>, as client-go's event recorder names Events
     * (tools/record/event.go, makeEvent): unique per report, also for two in one second. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(name, sizeof(name), "%.200s.%llx", b->pod_name,
             (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
    _cleanup_(gs_json_decrefp) json_t *ev = json_pack(
        "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:s,s:s,s:i,s:{s:s,s:s}}",
        "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", b->pod_ns,
        "involvedObject", "apiVersion", "v1", "kind", "Pod", "name", b->pod_name, "namespace",
        b->pod_ns, "uid", b->pod_uid, "type", "Warning", "reason",
        b->killed ? "GPUMemoryBreachKilled" : "GPUMemoryBreach", "message", msg, "firstTimestamp",
        now, "lastTimestamp", now, "count", 1, "source", "component", "gpuslice-monitor", "host",
        c->cfg.node ? c->cfg.node : "");
    struct gs_error err = {0};
    if (ev && gs_k8s_create(c->cfg.k8s, &events, b->pod_ns, ev, 0, NULL, &err) < 0) {
        char q[300];
        gs_warn("audit event not written", "pod=%s/%s error=%s", b->pod_ns, b->pod_name,
                gs_log_quote(q, sizeof(q), err.msg));
    }
}

static bool was_reported(const struct mon_audit *a, const struct mon_breach *b)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->b[i].pid == b->pid && a->b[i].start_time == b->start_time &&
            strcmp(a->b[i].uuid, b->uuid) == 0 && strcmp(a->b[i].claim_uid, b->claim_uid) == 0 &&
            a->b[i].proven == b->proven) /* a breach proven since (a later resolution) is new */
            return true;
    return false;
}

/* Standalone slices: the cgroup `gpuslice run` recorded in <slice dir>/holders.json (read once
 * per slice; the region is <slice dir>/region). Files are read outside the catalog lock. */
static void read_slice_cgroups(struct mon_catalog *c)
{
    struct pending {
        char uid[MON_UID_MAX];
        char path[PATH_MAX];
        char cgroup[MON_CGROUP_MAX];
    } *v = NULL;
    size_t n = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n_claims; i++) {
        const struct mon_claim *m = c->claims[i];
        if (m->source != MON_SOURCE_STANDALONE || m->cgroup_read)
            continue;
        struct pending *nv = realloc(v, (n + 1) * sizeof(*v));
        if (!nv)
            break;
        v = nv;
        snprintf(v[n].uid, sizeof(v[n].uid), "%s", m->uid);
        snprintf(v[n].path, sizeof(v[n].path), "%s", m->region.path);
        char *slash = strrchr(v[n].path, '/');
        size_t room = slash ? sizeof(v[n].path) - (size_t)(slash - v[n].path) : 0;
        if (room < sizeof("/holders.json"))
            continue;
        snprintf(slash, room, "/holders.json");
        v[n].cgroup[0] = '\0';
        n++;
    }
    pthread_mutex_unlock(&c->lock);
    bool *found = calloc(n ? n : 1, sizeof(*found));
    for (size_t i = 0; found && i < n; i++) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (gs_read_file(v[i].path, HOLDERS_MAX, &text, &len, NULL) < 0)
            continue; /* not written yet: read again at the next round */
        found[i] = true;
        _cleanup_(gs_json_decrefp) json_t *j = json_loadb(text, len, 0, NULL);
        const char *cg = json_string_value(json_object_get(j, "cgroup"));
        snprintf(v[i].cgroup, sizeof(v[i].cgroup), "%s", cg && cg[0] == '/' ? cg : "");
    }
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; found && i < n; i++) {
        if (!found[i])
            continue;
        for (size_t k = 0; k < c->n_claims; k++) {
            struct mon_claim *m = c->claims[k];
            if (m->source == MON_SOURCE_STANDALONE && strcmp(m->uid, v[i].uid) == 0) {
                m->cgroup_read = true;
                snprintf(m->cgroup, sizeof(m->cgroup), "%s", v[i].cgroup);
            }
        }
    }
    pthread_mutex_unlock(&c->lock);
    free(found);
    free(v);
}

/* How a process is tied to a claim, strongest first. */
enum tie {
    TIE_NONE,
    TIE_SLOT,      /* only the claim's region says so: no authority, reported, never killed */
    TIE_POD,       /* the process's cgroup names a pod the API server reserved the claim for,
                    * but not (yet) a container of it that uses the claim: reported, not killed */
    TIE_CONTAINER, /* its cgroup names a container of that pod that uses the claim */
    TIE_CGROUP,    /* standalone: it is in the cgroup `gpuslice run` made for the slice */
};

static const char *tie_name(enum tie t)
{
    static const char *const names[] = {"none", "slot", "pod", "container", "cgroup"};
    return names[t];
}

/* Can the claim's members be told from what the kernel and the API server wrote? Then the claim
 * is judged by that alone, and its region's slots are only checked for forgeries. */
static bool has_authority(const struct mon_claim *m)
{
    if (m->source == MON_SOURCE_STANDALONE)
        return m->cgroup_read && m->cgroup[0];
    return m->resolution == MON_RESOLVE_DONE;
}

/* The tie between a process and a claim with authority (TIE_NONE: not its member). */
static enum tie member_tie(const struct mon_catalog *c, const struct mon_claim *m,
                           const struct mon_proc_ident *id, const struct mon_consumer **who)
{
    *who = NULL;
    if (m->source == MON_SOURCE_STANDALONE) {
        static char mount[PATH_MAX]; /* the refresher thread's alone */
        const char *root = c->cfg.cgroup_root;
        if (!root || !root[0]) {
            if (!mount[0])
                mon_cgroup2_mount(mount, sizeof(mount));
            root = mount;
        }
        return id->has_cgroup && mon_cgroup_within(root, m->cgroup, id->cg.v2_path) ? TIE_CGROUP
                                                                                    : TIE_NONE;
    }
    if (!id->has_cgroup || !id->cg.pod_uid[0])
        return TIE_NONE;
    enum tie best = TIE_NONE;
    for (size_t i = 0; i < m->n_consumers; i++) {
        const struct mon_consumer *k = &m->consumers[i];
        if (!k->pod_uid[0] || strcasecmp(k->pod_uid, id->cg.pod_uid) != 0)
            continue;
        if (k->container_id[0] && id->cg.container_id[0] &&
            strcmp(k->container_id, id->cg.container_id) == 0) {
            *who = k;
            return TIE_CONTAINER;
        }
        if (best == TIE_NONE) {
            best = TIE_POD;
            *who = k;
        }
    }
    return best;
}

static bool in_slots(struct mon_claim *m, const struct mon_proc_ident *id,
                     struct mon_region_proc *slots)
{
    uint32_t ns = mon_region_procs(&m->region, slots, GS_REGION_MAX_PROCS);
    for (uint32_t q = 0; q < ns; q++)
        if (slot_is(&slots[q], id))
            return true;
    return false;
}

/* Under the lock: judge one NVML process on one GPU; fills *b and returns true on a breach. */
static bool judge(struct mon_catalog *c, const struct mon_gpu *gpu, const struct mon_proc_ident *id,
                  uint64_t used, struct mon_region_proc *slots, struct mon_breach *b)
{
    enum tie tie = TIE_NONE; /* the weakest tie among the claims it is a member of */
    bool member = false, whole = false, slot_only = false, slot_whole = false;
    uint64_t limit = 0, slot_limit = 0;
    const struct mon_claim *first = NULL, *first_slot = NULL;
    const struct mon_consumer *first_who = NULL;
    for (size_t i = 0; i < c->n_claims; i++) {
        struct mon_claim *m = c->claims[i];
        const struct mon_claim_device *dev = NULL;
        for (size_t d = 0; d < m->n_devices && !dev; d++)
            if (strcmp(m->dev[d].uuid, gpu->uuid) == 0)
                dev = &m->dev[d];
        if (!dev)
            continue;
        if (m->source == MON_SOURCE_PLUGIN && m->resolution == MON_RESOLVE_PENDING)
            continue; /* the API has not answered yet: judged once it has, never by its slots */
        if (has_authority(m)) {
            const struct mon_consumer *who = NULL;
            enum tie t = member_tie(c, m, id, &who);
            if (t != TIE_NONE) {
                tie = member ? GS_MIN(tie, t) : t;
                member = true;
                whole |= dev->memory_limit == 0;
                limit = gs_sat_add_u64(limit, dev->memory_limit);
                if (!first)
                    first = m, first_who = who;
            } else if (in_slots(m, id, slots)) {
                /* A slot names a process that is not the claim's: someone wrote it there. */
                char what[600], detail[300];
                if (m->source == MON_SOURCE_STANDALONE)
                    snprintf(what, sizeof(what), "slice %s", m->name);
                else
                    snprintf(what, sizeof(what), "claim %s/%s", m->ns, m->name);
                if (id->cg.pod_uid[0])
                    snprintf(detail, sizeof(detail),
                             "a process slot names pid %d, which runs in pod %s: ignored",
                             (int)id->pid, id->cg.pod_uid);
                else
                    snprintf(detail, sizeof(detail),
                             "a process slot names pid %d, which runs in cgroup %.200s: ignored",
                             (int)id->pid, id->has_cgroup ? id->cg.v2_path : "(unknown)");
                mon_catalog_skip(c, MON_CAUSE_FORGED_SLOT, &m->logged, what, detail);
            }
        } else if (in_slots(m, id, slots)) {
            slot_only = true;
            slot_whole |= dev->memory_limit == 0;
            slot_limit = gs_sat_add_u64(slot_limit, dev->memory_limit);
            if (!first_slot)
                first_slot = m;
        }
    }
    if (!member) {
        /* Only a claim without authority (no API answer yet, no Kubernetes, a slice without a
         * cgroup) names it, through its own region: reported against that claim, never killed. */
        if (!slot_only)
            return false;
        tie = TIE_SLOT, whole = slot_whole, limit = slot_limit, first = first_slot;
    }
    if (whole || used <= limit)
        return false;
    memset(b, 0, sizeof(*b));
    b->pid = id->pid, b->start_time = id->start_time;
    snprintf(b->claim_ns, sizeof(b->claim_ns), "%s", first->ns);
    snprintf(b->claim_name, sizeof(b->claim_name), "%s", first->name);
    snprintf(b->claim_uid, sizeof(b->claim_uid), "%s", first->uid);
    if (first_who && member) {
        snprintf(b->pod_ns, sizeof(b->pod_ns), "%s", first_who->ns);
        snprintf(b->pod_name, sizeof(b->pod_name), "%s", first_who->pod);
        snprintf(b->pod_uid, sizeof(b->pod_uid), "%s", first_who->pod_uid);
        if (tie == TIE_CONTAINER)
            snprintf(b->container, sizeof(b->container), "%s", first_who->container);
    }
    snprintf(b->uuid, sizeof(b->uuid), "%s", gpu->uuid);
    b->used = used, b->limit = limit;
    b->identity = tie_name(tie);
    b->proven = tie == TIE_CONTAINER || tie == TIE_CGROUP;
    return true;
}

void mon_audit_run(struct mon_catalog *c, struct gpu_nvml *nv)
{
    struct mon_audit *next = calloc(1, sizeof(*next));
    nvmlProcessInfo_t *procs = calloc(MAX_PROCS_PER_GPU, sizeof(*procs));
    struct mon_region_proc *slots = calloc(GS_REGION_MAX_PROCS, sizeof(*slots));
    const char *proc_root = c->cfg.proc_root ? c->cfg.proc_root : "/proc";
    if (!next || !procs || !slots)
        goto out;
    next->available = nv && nv->lib && nv->nvmlDeviceGetComputeRunningProcesses_v3 &&
                      c->gpus.discovered && c->gpus.n > 0;
    if (next->available)
        read_slice_cgroups(c);
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
            struct mon_proc_ident id;
            mon_proc_identify(proc_root, (int32_t)procs[k].pid, &id);
            pthread_mutex_lock(&c->lock);
            if (judge(c, gpu, &id, used, slots, &next->b[next->n]))
                next->n++;
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
        const char *action = "reported";
        if (c->cfg.audit_kill && b->proven) {
            kr = kill_breach(b);
            b->killed = kr == 0;
            next->kills_total += b->killed;
            action = b->killed ? "killed" : "kill-failed";
        } else if (c->cfg.audit_kill) {
            action = "reported-unproven"; /* not proven to be in the claim's container */
        }
        char msg[768];
        snprintf(msg, sizeof(msg),
                 "process %d holds %" PRIu64 " MiB on %s, over the limit of %" PRIu64
                 " MiB of claim %s/%s%s",
                 (int)b->pid, b->used >> 20, b->uuid, b->limit >> 20, b->claim_ns, b->claim_name,
                 b->killed ? "; killed (--audit-kill)" : "");
        gs_error_log("memory breach",
                     "claim=%s/%s claim_uid=%s pod=%s/%s container=%s identity=%s pid=%d "
                     "device=%s used=%" PRIu64 " limit=%" PRIu64 " action=%s%s%s",
                     b->claim_ns, b->claim_name, b->claim_uid, b->pod_ns, b->pod_name, b->container,
                     b->identity, (int)b->pid, b->uuid, b->used, b->limit, action,
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
