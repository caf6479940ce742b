/* SPDX-License-Identifier: Apache-2.0 */
#include "monitor/catalog.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/ledger-read.h"
#include "cli/ledger.h"
#include "base/clock.h"
#include "base/fs.h"
#include "config/limits.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/proc.h"
#include "monitor/resolve.h"

#define CHECKPOINT_FILE "checkpoint.json"
#define CHECKPOINT_MAX  (64u * 1024u * 1024u)
#define LEDGER_BUSY_MS  200
/* Claims listed at most (a 64 MiB checkpoint holds about 200,000); past it the rest are dropped,
 * logged once per refresh as an error. */
#define MAX_CLAIMS     65536
#define API_BACKOFF_NS (10ull * 1000000000ull) /* after an API failure, wait before retrying */

static const char *const cause_names[MON_CAUSE_N] = {
    [MON_CAUSE_REGION_MISSING] = "region_missing",
    [MON_CAUSE_REGION_UNREADABLE] = "region_unreadable",
    [MON_CAUSE_REGION_TRUNCATED] = "region_truncated",
    [MON_CAUSE_REGION_BAD_MAGIC] = "region_bad_magic",
    [MON_CAUSE_REGION_BAD_VERSION] = "region_bad_version",
    [MON_CAUSE_REGION_BAD_SIZE] = "region_bad_size",
    [MON_CAUSE_REGION_UNINITIALISED] = "region_uninitialised",
    [MON_CAUSE_CHECKPOINT_UNREADABLE] = "checkpoint_unreadable",
    [MON_CAUSE_LEDGER_UNREADABLE] = "ledger_unreadable",
    [MON_CAUSE_LIMITS_UNREADABLE] = "limits_unreadable",
    [MON_CAUSE_OWNER_GONE] = "owner_gone",
    [MON_CAUSE_CLAIM_GONE] = "claim_gone",
    [MON_CAUSE_POD_GONE] = "pod_gone",
    [MON_CAUSE_API_ERROR] = "api_error",
    [MON_CAUSE_NVML_ERROR] = "nvml_error",
    [MON_CAUSE_FORGED_SLOT] = "forged_slot",
};

const char *mon_cause_name(enum mon_cause c)
{
    return (unsigned)c < MON_CAUSE_N ? cause_names[c] : "unknown";
}

const char *mon_source_name(enum mon_source s)
{
    return s == MON_SOURCE_STANDALONE ? "standalone" : "plugin";
}

void mon_standalone_default_dir(char *buf, size_t len)
{
    const char *env = getenv("GPUSLICE_STATE_DIR");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return;
    }
    if (geteuid() == 0) {
        snprintf(buf, len, "/var/lib/gpuslice");
        return;
    }
    const char *xdg = getenv("XDG_STATE_HOME");
    if (xdg && *xdg) {
        snprintf(buf, len, "%s/gpuslice", xdg);
        return;
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(geteuid());
        home = pw && pw->pw_dir ? pw->pw_dir : "/";
    }
    snprintf(buf, len, "%s/.local/state/gpuslice", home);
}

/* ---- what the sources list (prepared outside the lock) ----------------------------------------
 */

struct listed {
    enum mon_source source;
    char uid[MON_UID_MAX];
    char ns[MON_NAME_MAX];
    char name[MON_NAME_MAX];
    char region[PATH_MAX];
    char limits[PATH_MAX]; /* standalone: read until it could be */
    size_t n_devices;
    struct mon_claim_device dev[CLAIM_MAX_DEVICES];
};

struct listing {
    struct listed *v;
    size_t n, cap;
};

static struct listed *listing_add(struct listing *l)
{
    if (l->n >= MAX_CLAIMS) {
        static _Atomic uint64_t logged;
        uint64_t now = gs_now_ns();
        if (now - atomic_load(&logged) > 60ull * 1000000000ull) {
            atomic_store(&logged, now);
            gs_error_log("too many claims", "listed=%zu max=%d detail=%s", l->n, MAX_CLAIMS,
                         "the rest are not reported");
        }
        return NULL;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct listed *nv = realloc(l->v, cap * sizeof(*nv));
        if (!nv)
            return NULL;
        l->v = nv;
        l->cap = cap;
    }
    struct listed *e = &l->v[l->n++];
    memset(e, 0, sizeof(*e));
    return e;
}

struct refresher_state {
    /* checkpoint identity of the last parse, and what it listed */
    bool ckpt_known;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    struct listing plugin;
    uint32_t logged; /* global causes logged (bit per mon_cause) */
    uint64_t api_retry_after_ns;
    struct gpu_nvml nv;
    bool nv_open;
};

void mon_catalog_skip(struct mon_catalog *c, enum mon_cause cause, uint32_t *logged,
                      const char *what, const char *detail)
{
    atomic_fetch_add(&c->skipped[cause], 1);
    uint32_t bit = 1u << cause;
    if (logged && (*logged & bit))
        return;
    if (logged)
        *logged |= bit;
    char q1[300], q2[300];
    /* A claim whose workload has not started has no (initialised) region yet: routine. */
    enum gs_log_level level =
        cause == MON_CAUSE_REGION_MISSING || cause == MON_CAUSE_REGION_UNINITIALISED ? GS_LOG_DEBUG
                                                                                     : GS_LOG_WARN;
    gs_log(level, "skipped", "cause=%s object=%s detail=%s", mon_cause_name(cause),
           gs_log_quote(q1, sizeof(q1), what), gs_log_quote(q2, sizeof(q2), detail));
}

/* A cause cleared: log once that it recovered and allow a later failure to be logged again. */
static void cleared(uint32_t *logged, enum mon_cause cause, const char *what)
{
    uint32_t bit = 1u << cause;
    if (!(*logged & bit))
        return;
    *logged &= ~bit;
    char q[300];
    bool routine = cause == MON_CAUSE_REGION_MISSING || cause == MON_CAUSE_REGION_UNINITIALISED;
    gs_log(routine ? GS_LOG_DEBUG : GS_LOG_INFO, "recovered", "cause=%s object=%s",
           mon_cause_name(cause), gs_log_quote(q, sizeof(q), what));
}

static void list_plugin(struct mon_catalog *c, struct refresher_state *rs)
{
    if (!c->cfg.plugin_state_dir)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/" CHECKPOINT_FILE, c->cfg.plugin_state_dir);
    struct stat st;
    if (stat(path, &st) != 0) {
        /* No checkpoint: the plugin has prepared nothing (or does not run here). */
        rs->plugin.n = 0;
        rs->ckpt_known = false;
        return;
    }
    if (rs->ckpt_known && st.st_dev == rs->dev && st.st_ino == rs->ino && st.st_size == rs->size &&
        st.st_mtim.tv_sec == rs->mtime.tv_sec && st.st_mtim.tv_nsec == rs->mtime.tv_nsec)
        return;
    rs->plugin.n = 0;
    rs->ckpt_known = false;
    char *text = NULL;
    size_t len = 0;
    struct gs_error err = {0};
    if (gs_read_file(path, CHECKPOINT_MAX, &text, &len, &err) < 0) {
        mon_catalog_skip(c, MON_CAUSE_CHECKPOINT_UNREADABLE, &rs->logged, path, err.msg);
        return;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    json_t *claims = json_object_get(root, "claims");
    if (!root || !json_is_object(claims) ||
        json_integer_value(json_object_get(root, "version")) != 1) {
        char d[300];
        snprintf(d, sizeof(d), "%s", root ? "unsupported version or no claims" : jerr.text);
        mon_catalog_skip(c, MON_CAUSE_CHECKPOINT_UNREADABLE, &rs->logged, path, d);
        json_decref(root);
        return;
    }
    cleared(&rs->logged, MON_CAUSE_CHECKPOINT_UNREADABLE, path);
    struct claim_plan *plan = malloc(sizeof(*plan));
    if (!plan) {
        json_decref(root);
        return;
    }
    const char *uid;
    json_t *e;
    json_object_foreach(claims, uid, e)
    {
        if (!json_is_string(json_object_get(e, "state")) ||
            strcmp(json_string_value(json_object_get(e, "state")), "PrepareCompleted") != 0)
            continue;
        struct gs_error perr = {0};
        if (claim_plan_from_json(json_object_get(e, "plan"), plan, &perr) < 0 ||
            strcmp(plan->uid, uid) != 0 || !claim_uid_valid(uid)) {
            atomic_fetch_add(&c->skipped[MON_CAUSE_CHECKPOINT_UNREADABLE], 1);
            char q[300];
            gs_warn("checkpoint entry skipped", "claim=%s detail=%s", uid,
                    gs_log_quote(q, sizeof(q), perr.msg[0] ? perr.msg : "UID mismatch"));
            continue;
        }
        struct listed *l = listing_add(&rs->plugin);
        if (!l)
            break;
        l->source = MON_SOURCE_PLUGIN;
        snprintf(l->uid, sizeof(l->uid), "%s", plan->uid);
        snprintf(l->ns, sizeof(l->ns), "%s", plan->ns);
        snprintf(l->name, sizeof(l->name), "%s", plan->name);
        snprintf(l->region, sizeof(l->region), "%s/claims/%s/region/region", c->cfg.host_dir,
                 plan->uid);
        for (size_t i = 0; i < plan->n_devices && i < CLAIM_MAX_DEVICES; i++) {
            struct mon_claim_device *d = &l->dev[l->n_devices++];
            snprintf(d->uuid, sizeof(d->uuid), "%s", plan->devices[i].uuid);
            d->memory_limit = plan->devices[i].memory_limit;
            d->cores = plan->devices[i].cores;
        }
    }
    free(plan);
    json_decref(root);
    rs->ckpt_known = true;
    rs->dev = st.st_dev;
    rs->ino = st.st_ino;
    rs->size = st.st_size;
    rs->mtime = st.st_mtim;
}

static bool owner_alive(pid_t pid, uint64_t start, const char *boot)
{
    uint64_t now_start = 0;
    char now_boot[64];
    if (pid <= 0 || gs_proc_start_time(pid, &now_start) < 0)
        return false;
    gs_boot_id(now_boot, sizeof(now_boot));
    return now_start == start && strcmp(now_boot, boot) == 0;
}

struct standalone_walk {
    struct mon_catalog *c;
    struct listing *out;
};

static int standalone_row(void *ud, const struct ledger_row *row)
{
    struct standalone_walk *w = ud;
    if (!owner_alive(row->owner_pid, row->owner_start, row->boot_id)) {
        /* The runner died without releasing; the next `gpuslice` reclaims the row. */
        atomic_fetch_add(&w->c->skipped[MON_CAUSE_OWNER_GONE], 1);
        return 0;
    }
    const char *uid =
        json_string_value(json_object_get(json_object_get(row->claim, "metadata"), "uid"));
    struct listed *l = uid && claim_uid_valid(uid) ? listing_add(w->out) : NULL;
    if (l) {
        l->source = MON_SOURCE_STANDALONE;
        snprintf(l->uid, sizeof(l->uid), "%s", uid);
        snprintf(l->name, sizeof(l->name), "%s", row->name);
        snprintf(l->region, sizeof(l->region), "%s/region", row->slice_dir);
        snprintf(l->limits, sizeof(l->limits), "%s/limits/%s" GS_LIMITS_SUFFIX, row->slice_dir,
                 uid);
    }
    return 0;
}

/* `gpuslice run`'s slices, through the CLI's read-only ledger reader (cli/ledger-read.h). */
static void list_standalone(struct mon_catalog *c, struct refresher_state *rs, struct listing *out)
{
    if (!c->cfg.standalone_state_dir)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/" LEDGER_FILE, c->cfg.standalone_state_dir);
    struct standalone_walk w = {.c = c, .out = out};
    struct gs_error e = {0};
    int r = ledger_read(c->cfg.standalone_state_dir, LEDGER_BUSY_MS, standalone_row, &w, &e);
    if (r == -ENOENT)
        return; /* `gpuslice run` never ran here */
    if (r < 0)
        mon_catalog_skip(c, MON_CAUSE_LEDGER_UNREADABLE, &rs->logged, path, e.msg);
    else
        cleared(&rs->logged, MON_CAUSE_LEDGER_UNREADABLE, path);
}

/* Devices of a standalone slice, from its limits file. `gpuslice run` inserts the ledger row
 * first and writes the file just after: a file that does not exist yet is tried again at the next
 * refresh, silently; one that cannot be parsed is counted and logged (once). */
static void read_limits(struct mon_catalog *c, struct mon_claim *m, const char *path)
{
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return;
    struct gs_limits *lim = malloc(sizeof(*lim));
    if (!lim)
        return;
    struct gs_error err = {0};
    if (gs_limits_read(path, lim, &err) < 0) {
        mon_catalog_skip(c, MON_CAUSE_LIMITS_UNREADABLE, &m->logged, path, err.msg);
    } else {
        m->n_devices = 0;
        for (size_t i = 0; i < lim->n_devices && m->n_devices < CLAIM_MAX_DEVICES; i++) {
            struct mon_claim_device *d = &m->dev[m->n_devices++];
            memset(d, 0, sizeof(*d));
            snprintf(d->uuid, sizeof(d->uuid), "%s", lim->devices[i].uuid);
            d->memory_limit = lim->devices[i].memory_limit;
            d->cores = lim->devices[i].cores >= 100 ? 0 : lim->devices[i].cores;
        }
        m->devices_known = true;
        cleared(&m->logged, MON_CAUSE_LIMITS_UNREADABLE, path);
    }
    free(lim);
}

static void claim_free(struct mon_claim *m)
{
    if (!m)
        return;
    mon_region_fini(&m->region);
    free(m->consumers);
    free(m);
}

/* Under the lock: make the catalog hold exactly what was listed. */
static void reconcile(struct mon_catalog *c, const struct listing *lists[], size_t n_lists)
{
    for (size_t i = 0; i < c->n_claims; i++)
        c->claims[i]->seen = false;
    for (size_t li = 0; li < n_lists; li++) {
        for (size_t k = 0; k < lists[li]->n; k++) {
            const struct listed *l = &lists[li]->v[k];
            struct mon_claim *m = NULL;
            for (size_t i = 0; i < c->n_claims && !m; i++)
                if (c->claims[i]->source == l->source && strcmp(c->claims[i]->uid, l->uid) == 0)
                    m = c->claims[i];
            if (m) {
                m->seen = true;
                if (!m->devices_known && l->source == MON_SOURCE_STANDALONE)
                    read_limits(c, m, l->limits);
                continue;
            }
            if (c->n_claims == c->cap_claims) {
                size_t cap = c->cap_claims ? c->cap_claims * 2 : 32;
                struct mon_claim **nc = realloc(c->claims, cap * sizeof(struct mon_claim *));
                if (!nc)
                    return;
                c->claims = nc;
                c->cap_claims = cap;
            }
            m = calloc(1, sizeof(*m));
            if (!m)
                return;
            m->source = l->source;
            snprintf(m->uid, sizeof(m->uid), "%s", l->uid);
            snprintf(m->ns, sizeof(m->ns), "%s", l->ns);
            snprintf(m->name, sizeof(m->name), "%s", l->name);
            mon_region_init(&m->region, l->region);
            m->region_status = MON_REGION_MISSING;
            m->n_devices = l->n_devices;
            memcpy(m->dev, l->dev, sizeof(m->dev));
            m->devices_known = l->source == MON_SOURCE_PLUGIN;
            if (l->source == MON_SOURCE_STANDALONE)
                read_limits(c, m, l->limits);
            if (l->source == MON_SOURCE_PLUGIN && c->cfg.k8s) {
                m->resolution = MON_RESOLVE_PENDING;
            } else {
                m->resolution = MON_RESOLVE_LOCAL;
                m->consumers = calloc(1, sizeof(*m->consumers));
                m->n_consumers = m->consumers ? 1 : 0;
            }
            m->seen = true;
            c->claims[c->n_claims++] = m;
        }
    }
    size_t w = 0;
    for (size_t i = 0; i < c->n_claims; i++) {
        if (c->claims[i]->seen)
            c->claims[w++] = c->claims[i];
        else
            claim_free(c->claims[i]);
    }
    c->n_claims = w;
}

static enum mon_cause region_cause(enum mon_region_status s)
{
    switch (s) {
    case MON_REGION_MISSING:
        return MON_CAUSE_REGION_MISSING;
    case MON_REGION_TRUNCATED:
        return MON_CAUSE_REGION_TRUNCATED;
    case MON_REGION_BAD_MAGIC:
        return MON_CAUSE_REGION_BAD_MAGIC;
    case MON_REGION_BAD_VERSION:
        return MON_CAUSE_REGION_BAD_VERSION;
    case MON_REGION_BAD_SIZE:
        return MON_CAUSE_REGION_BAD_SIZE;
    case MON_REGION_UNINIT:
        return MON_CAUSE_REGION_UNINITIALISED;
    default:
        return MON_CAUSE_REGION_UNREADABLE;
    }
}

/* Under the lock: read every region, close the utilisation windows, count what is bad. */
static void sample_regions(struct mon_catalog *c)
{
    struct mon_region_device devs[GS_REGION_MAX_DEVICES];
    for (size_t i = 0; i < c->n_claims; i++) {
        struct mon_claim *m = c->claims[i];
        uint32_t n = 0;
        struct gs_error err = {0};
        enum mon_region_status s =
            mon_region_read(&m->region, devs, GS_REGION_MAX_DEVICES, &n, true, &err);
        uint64_t now = gs_now_ns();
        if (s != MON_REGION_OK) {
            mon_catalog_skip(c, region_cause(s), &m->logged, m->region.path, err.msg);
        } else if (m->region_status != MON_REGION_OK) {
            cleared(&m->logged, region_cause(m->region_status), m->region.path);
        }
        m->region_status = s;
        for (size_t k = 0; k < m->n_devices; k++) {
            struct mon_claim_device *d = &m->dev[k];
            const struct mon_region_device *rd =
                s == MON_REGION_OK ? mon_region_find(devs, n, d->uuid) : NULL;
            if (!rd || !rd->has_v2) {
                d->has_util = d->prev_valid = false;
                continue;
            }
            if (d->prev_valid && rd->gpu_busy_ns >= d->prev_busy_ns && now > d->prev_mono_ns) {
                double u =
                    (double)(rd->gpu_busy_ns - d->prev_busy_ns) / (double)(now - d->prev_mono_ns);
                d->util = u < 0 ? 0 : u > 1 ? 1 : u;
                d->has_util = true;
            } else {
                d->has_util = false;
            }
            d->prev_valid = true;
            d->prev_busy_ns = rd->gpu_busy_ns;
            d->prev_mono_ns = now;
        }
    }
}

struct to_resolve {
    char uid[MON_UID_MAX], ns[MON_NAME_MAX], name[MON_NAME_MAX];
    int rc;
    struct mon_resolve_result res;
    struct gs_error err;
};

static void resolve_pods(struct mon_catalog *c, struct refresher_state *rs)
{
    if (!c->cfg.k8s)
        return;
    uint64_t now = gs_now_ns();
    if (now < rs->api_retry_after_ns)
        return;
    pthread_mutex_lock(&c->lock);
    size_t n = 0;
    struct to_resolve *v = calloc(c->n_claims ? c->n_claims : 1, sizeof(*v));
    for (size_t i = 0; v && i < c->n_claims; i++) {
        struct mon_claim *m = c->claims[i];
        if (m->source != MON_SOURCE_PLUGIN)
            continue;
        if (m->resolution == MON_RESOLVE_DONE && now - m->resolved_mono_ns < c->cfg.resync_ns)
            continue;
        snprintf(v[n].uid, sizeof(v[n].uid), "%s", m->uid);
        snprintf(v[n].ns, sizeof(v[n].ns), "%s", m->ns);
        snprintf(v[n].name, sizeof(v[n].name), "%s", m->name);
        n++;
    }
    pthread_mutex_unlock(&c->lock);
    if (!v)
        return;
    bool api_failed = false;
    for (size_t i = 0; i < n; i++) {
        v[i].rc = mon_resolve_claim(c->cfg.k8s, v[i].ns, v[i].name, v[i].uid, &v[i].res, &v[i].err);
        if (v[i].rc < 0 && v[i].rc != -ENOENT) {
            /* The API failed: stop here (the next claims would fail too), keep what resolved
             * before, and retry after a back-off. */
            char what[600];
            snprintf(what, sizeof(what), "resourceclaim %s/%s", v[i].ns, v[i].name);
            mon_catalog_skip(c, MON_CAUSE_API_ERROR, &rs->logged, what, v[i].err.msg);
            rs->api_retry_after_ns = gs_now_ns() + GS_MIN(API_BACKOFF_NS, c->cfg.resync_ns);
            v[i].rc = 1; /* not applied */
            n = i + 1;
            api_failed = true;
            break;
        }
    }
    if (!api_failed && n)
        cleared(&rs->logged, MON_CAUSE_API_ERROR, "api server");
    pthread_mutex_lock(&c->lock);
    uint64_t done = gs_now_ns();
    for (size_t i = 0; i < n; i++) {
        struct mon_claim *m = NULL;
        for (size_t k = 0; k < c->n_claims && !m; k++)
            if (c->claims[k]->source == MON_SOURCE_PLUGIN &&
                strcmp(c->claims[k]->uid, v[i].uid) == 0)
                m = c->claims[k];
        if (!m || v[i].rc > 0) {
            /* Gone meanwhile, or the API failed: keep what the claim had (a claim's pods do not
             * change while it is prepared; usage values are always read live). */
            continue;
        }
        char what[600];
        snprintf(what, sizeof(what), "claim %s/%s", v[i].ns, v[i].name);
        if (v[i].rc == -ENOENT) {
            /* Prepared on the node but no longer in the API: its consumers are unknown. */
            mon_catalog_skip(c, MON_CAUSE_CLAIM_GONE, &m->logged, what, v[i].err.msg);
            free(m->consumers);
            m->consumers = NULL;
            m->n_consumers = 0;
            m->resolution = MON_RESOLVE_DONE;
            m->resolved_mono_ns = done;
            continue;
        }
        if (v[i].res.pods_gone) {
            for (unsigned g = 0; g < v[i].res.pods_gone; g++)
                mon_catalog_skip(c, MON_CAUSE_POD_GONE, &m->logged, what,
                                 "a pod in status.reservedFor no longer exists");
        } else {
            cleared(&m->logged, MON_CAUSE_POD_GONE, what);
        }
        cleared(&m->logged, MON_CAUSE_CLAIM_GONE, what);
        free(m->consumers);
        m->consumers = TAKE_PTR(v[i].res.consumers);
        m->n_consumers = v[i].res.n_consumers;
        m->resolution = MON_RESOLVE_DONE;
        m->resolved_mono_ns = done;
    }
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < n; i++)
        mon_resolve_result_fini(&v[i].res);
    free(v);
}

static void sample_gpus(struct mon_catalog *c, struct refresher_state *rs)
{
    if (!c->cfg.sample_gpus)
        return;
    struct gs_error err = {0};
    struct mon_gpus *g = malloc(sizeof(*g));
    if (!g)
        return;
    pthread_mutex_lock(&c->lock);
    *g = c->gpus;
    pthread_mutex_unlock(&c->lock);
    bool ok = true;
    if (!g->discovered && mon_gpus_discover(g, &err) < 0) {
        mon_catalog_skip(c, MON_CAUSE_NVML_ERROR, &rs->logged, "gpu discovery", err.msg);
        ok = false;
    }
    if (ok && !rs->nv_open) {
        if (gpu_nvml_open(&rs->nv, GPU_NVML_USE_USAGE, 0, &err) < 0) {
            mon_catalog_skip(c, MON_CAUSE_NVML_ERROR, &rs->logged, "nvml", err.msg);
            ok = false;
        } else {
            rs->nv_open = true;
        }
    }
    if (ok) {
        unsigned failed = mon_gpus_sample(g, &rs->nv);
        if (failed) {
            char d[64];
            snprintf(d, sizeof(d), "%u device values could not be read", failed);
            mon_catalog_skip(c, MON_CAUSE_NVML_ERROR, &rs->logged, "nvml sample", d);
        } else {
            cleared(&rs->logged, MON_CAUSE_NVML_ERROR, "nvml");
        }
    } else {
        for (size_t i = 0; i < g->n; i++)
            g->gpu[i].has_memory_used = g->gpu[i].has_utilization = g->gpu[i].has_mem_utilization =
                false;
    }
    pthread_mutex_lock(&c->lock);
    c->gpus = *g;
    c->nvml_ok = ok;
    pthread_mutex_unlock(&c->lock);
    free(g);
}

void mon_catalog_refresh(struct mon_catalog *c)
{
    struct refresher_state *rs = c->rs;
    struct listing standalone = {0};
    list_plugin(c, rs);
    list_standalone(c, rs, &standalone);
    const struct listing *lists[] = {&rs->plugin, &standalone};
    pthread_mutex_lock(&c->lock);
    reconcile(c, lists, GS_ARRAY_SIZE(lists));
    sample_regions(c);
    pthread_mutex_unlock(&c->lock);
    free(standalone.v);
    sample_gpus(c, rs);
    if (c->cfg.sample_gpus)
        mon_audit_run(c, rs->nv_open ? &rs->nv : NULL);
    resolve_pods(c, rs);
    atomic_store(&c->ready, true);
}

int mon_catalog_init(struct mon_catalog *c, const struct mon_catalog_config *cfg,
                     struct gs_error *err)
{
    memset(c, 0, sizeof(*c));
    c->cfg = *cfg;
    mon_region_guard();
    c->rs = calloc(1, sizeof(*c->rs));
    if (!c->rs)
        return gs_error_set(err, -ENOMEM, "out of memory");
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->stop_lock, NULL);
    gs_cond_init_monotonic(&c->stop_cond);
    return 0;
}

void mon_catalog_fini(struct mon_catalog *c)
{
    mon_catalog_stop(c);
    for (size_t i = 0; i < c->n_claims; i++)
        claim_free(c->claims[i]);
    free(c->claims);
    if (c->rs) {
        free(c->rs->plugin.v);
        if (c->rs->nv_open)
            gpu_nvml_close(&c->rs->nv);
        free(c->rs);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->stop_lock);
    pthread_cond_destroy(&c->stop_cond);
    memset(c, 0, sizeof(*c));
}

static void *run(void *arg)
{
    struct mon_catalog *c = arg;
    for (;;) {
        mon_catalog_refresh(c);
        struct timespec until = gs_timespec_in_ns(c->cfg.refresh_ns);
        pthread_mutex_lock(&c->stop_lock);
        while (!c->stop && pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &until) == 0)
            ;
        bool stop = c->stop;
        pthread_mutex_unlock(&c->stop_lock);
        if (stop)
            return NULL;
    }
}

int mon_catalog_start(struct mon_catalog *c, struct gs_error *err)
{
    int r = pthread_create(&c->thread, NULL, run, c);
    if (r != 0)
        return gs_error_set(err, -r, "cannot start the refresher thread: %s", strerror(r));
    c->thread_started = true;
    return 0;
}

void mon_catalog_stop(struct mon_catalog *c)
{
    if (!c->thread_started)
        return;
    pthread_mutex_lock(&c->stop_lock);
    c->stop = true;
    pthread_cond_broadcast(&c->stop_cond);
    pthread_mutex_unlock(&c->stop_lock);
    pthread_join(c->thread, NULL);
    c->thread_started = false;
}
