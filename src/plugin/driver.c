/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prepare and unprepare (reconcile.c makes state agree at start-up). Order of a prepare batch
 * (crash-safe at every step):
 *   1. fetch each claim that is not already PrepareCompleted (no lock held), build its plan;
 *   2. lock; checkpoint PrepareStarted for every new plan (one atomic write);
 *   3. per claim: claim dir + region dir, limits file (0444), CDI spec (atomic);
 *   4. checkpoint PrepareCompleted (one atomic write); unlock.
 * A crash before 4 leaves PrepareStarted entries: a retry redoes them, start-up reconcile rolls
 * them back. Unprepare: remove CDI spec, claim dir, then the entry (one write for the batch).
 */
#include "plugin/driver.h"
#include "plugin/driver-internal.h"

#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/limits.h"
#include "gpuslice/shared_region.h"
#include "base/log.h"
#include "base/fs.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void driver_fault_point(const struct driver *d, const char *point)
{
    if (d->cfg.fault_point && *d->cfg.fault_point && strcmp(d->cfg.fault_point, point) == 0) {
        gs_warn("fault injection: killing myself", "point=%s", point);
        raise(SIGKILL);
    }
}

int driver_init(struct driver *d, const struct driver_config *cfg, struct gs_k8s_client *k8s,
                struct metrics *m, struct gs_error *err)
{
    memset(d, 0, sizeof(*d));
    d->cfg = *cfg;
    d->k8s = k8s;
    d->metrics = m;
    pthread_mutex_init(&d->lock, NULL);
    d->inv = calloc(1, sizeof(*d->inv));
    if (!d->inv)
        return gs_error_set(err, -ENOMEM, "out of memory");
    struct gs_error lerr = {0};
    int r = ckpt_load(&d->ckpt, cfg->state_dir, cfg->driver_name, &lerr);
    if (r == -EBADMSG) {
        char aside[PATH_MAX + 16];
        snprintf(aside, sizeof(aside), "%s.corrupt", d->ckpt.path);
        gs_error_log("checkpoint is corrupt, moved aside; starting empty", "error=%s moved_to=%s",
                     GS_LOGQ(lerr.msg), aside);
        if (rename(d->ckpt.path, aside) < 0)
            unlink(d->ckpt.path);
        ckpt_fini(&d->ckpt);
        r = ckpt_load(&d->ckpt, cfg->state_dir, cfg->driver_name, &lerr);
    }
    if (r < 0) {
        gs_error_set(err, r, "%s", lerr.msg);
        ckpt_fini(&d->ckpt);
        free(d->inv);
        d->inv = NULL;
        return r;
    }
    return 0;
}

void driver_fini(struct driver *d)
{
    ckpt_fini(&d->ckpt);
    free(d->inv);
    d->inv = NULL;
    pthread_mutex_destroy(&d->lock);
}

void driver_set_inventory(struct driver *d, const struct gpu_inventory *inv)
{
    pthread_mutex_lock(&d->lock);
    memcpy(d->inv, inv, sizeof(*inv));
    pthread_mutex_unlock(&d->lock);
}

void driver_count_claims(struct driver *d)
{
    if (d->metrics)
        atomic_store(&d->metrics->claims_prepared, (long long)ckpt_count(&d->ckpt));
}

void prepare_result_fini(struct prepare_result *r)
{
    free(r->plan);
    r->plan = NULL;
}

/* ---- files of one claim ----------------------------------------------------------------- */

int driver_write_claim_files(struct driver *d, const struct claim_plan *p, bool fault_points,
                             struct gs_error *err)
{
    char dir[PATH_MAX], path[PATH_MAX], region[PATH_MAX];
    const struct cdi_config *c = &d->cfg.cdi;
    cdi_claim_dir(c, p->uid, dir, sizeof(dir));
    int r = gs_mkdir_p(dir, 0755, err);
    if (r < 0)
        return r;
    cdi_region_host_dir(c, p->uid, region, sizeof(region));
    if ((r = gs_mkdir_p(region, 0777, err)) < 0)
        return r;
    /* Containers may run as any user: the region directory must be writable by all of them. */
    chmod(region, 0777);
    /* The shared region itself, zero-filled and marked with magic, version and size (init_state
     * 0: the first libvgpu process initialises it; libvgpu never creates a claim's region). An
     * existing one is kept: it holds the live accounting of running containers. */
    snprintf(path, sizeof(path), "%s/region", region);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0) {
        int tr = ftruncate(fd, (off_t)sizeof(struct gs_region));
        if (tr == 0)
            tr = gs_region_prepare_fd(fd); /* marked: libvgpu refuses an unmarked one */
        fchmod(fd, 0666);
        close(fd);
        if (tr < 0)
            return gs_error_set(err, -errno, "cannot size the shared region %s: %s", path,
                                strerror(errno));
    } else if (errno != EEXIST) {
        return gs_error_set(err, -errno, "cannot create the shared region %s: %s", path,
                            strerror(errno));
    }
    if (fault_points)
        driver_fault_point(d, "prepare-after-claim-dir");

    struct gs_limits *lim = calloc(1, sizeof(*lim));
    if (!lim)
        return gs_error_set(err, -ENOMEM, "out of memory");
    gs_limits_init(lim);
    snprintf(lim->claim, sizeof(lim->claim), "%s", p->uid);
    snprintf(lim->region_path, sizeof(lim->region_path), "%s/%s/region", CDI_CONTAINER_REGION_DIR,
             p->uid);
    /* compute QoS (limits v2): the claim's opaque config, and the claims of the node read-only
     * so that libvgpu sees its co-tenants (docs/internals/vgpu.md, "Compute QoS") */
    lim->policy = p->qos.policy;
    lim->priority = p->qos.priority;
    lim->log_level = p->qos.log_level;
    snprintf(lim->peers_dir, sizeof(lim->peers_dir), "%s", CDI_CONTAINER_PEERS_DIR);
    for (size_t i = 0; i < p->n_devices && r == 0; i++)
        r = gs_limits_add_device(lim, p->devices[i].uuid, p->devices[i].memory_limit,
                                 p->devices[i].cores, err);
    char *text = NULL;
    if (r == 0 && !(text = malloc(GS_LIMITS_FILE_MAX)))
        r = gs_error_set(err, -ENOMEM, "out of memory");
    int len = r == 0 ? gs_limits_format(lim, text, GS_LIMITS_FILE_MAX, err) : r;
    if (len >= 0) {
        /* Not fsynced: after a power loss start-up reconcile rewrites every prepared claim's
         * files from the (durable) checkpoint. */
        cdi_limits_host_path(c, p->uid, path, sizeof(path));
        r = gs_write_file_atomic_ex(path, text, (size_t)len, 0444, 0, err);
    } else {
        r = len;
    }
    free(text);
    free(lim);
    if (r < 0)
        return r;
    if (fault_points)
        driver_fault_point(d, "prepare-after-limits");
    r = cdi_spec_write(c, p, err);
    if (r < 0)
        return r;
    if (fault_points)
        driver_fault_point(d, "prepare-after-cdi");
    return 0;
}

int driver_remove_claim_files(struct driver *d, const char *uid, bool fault_points,
                              struct gs_error *err)
{
    char dir[PATH_MAX];
    int r = cdi_spec_remove(&d->cfg.cdi, uid, err);
    if (r < 0)
        return r;
    if (fault_points)
        driver_fault_point(d, "unprepare-after-cdi");
    cdi_claim_dir(&d->cfg.cdi, uid, dir, sizeof(dir));
    r = gs_rm_rf(dir, err);
    if (r < 0)
        return r;
    if (fault_points)
        driver_fault_point(d, "unprepare-after-claim-dir");
    return 0;
}

bool driver_claim_files_present(struct driver *d, const struct claim_plan *p)
{
    char path[PATH_MAX];
    cdi_spec_path(&d->cfg.cdi, p->uid, path, sizeof(path));
    if (!(access(path, F_OK) == 0))
        return false;
    cdi_limits_host_path(&d->cfg.cdi, p->uid, path, sizeof(path));
    if (!(access(path, F_OK) == 0))
        return false;
    cdi_region_host_dir(&d->cfg.cdi, p->uid, path, sizeof(path));
    return (access(path, F_OK) == 0);
}

/* ---- prepare ------------------------------------------------------------------------------ */

static void set_error(struct prepare_result *r, const char *fmt, ...) GS_PRINTF(2, 3);
static void set_error(struct prepare_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
    if (!r->error[0])
        snprintf(r->error, sizeof(r->error), "unknown error");
    free(r->plan);
    r->plan = NULL;
}

/* Phase 1 for one claim: checkpoint lookup, else fetch from the API (bounded by `bounds`) and
 * build the plan. */
static void fetch_one(struct driver *d, const struct claim_ref *ref,
                      const struct gs_k8s_call_opts *bounds, struct prepare_result *out,
                      bool *cached)
{
    memset(out, 0, sizeof(*out));
    out->plan = calloc(1, sizeof(*out->plan));
    if (!out->plan) {
        set_error(out, "out of memory");
        return;
    }
    const char *ns = ref->ns ? ref->ns : "", *name = ref->name ? ref->name : "";
    if (!claim_uid_valid(ref->uid)) {
        set_error(out, "claim %s/%s: invalid UID \"%.80s\"", ns, name, ref->uid ? ref->uid : "");
        return;
    }
    if (!*ns || !*name) {
        set_error(out, "claim with UID %s: namespace and name are required", ref->uid);
        return;
    }
    /* Already prepared: answer from the checkpoint, without asking the API. */
    pthread_mutex_lock(&d->lock);
    enum ckpt_state st = ckpt_get(&d->ckpt, ref->uid, out->plan);
    pthread_mutex_unlock(&d->lock);
    if (st == CKPT_PREPARE_COMPLETED) {
        *cached = true;
        return;
    }
    json_t *obj = NULL;
    struct gs_error err = {0};
    int r = gs_k8s_get_with(d->k8s, &gs_k8s_resourceclaims, ns, name, bounds, &obj, &err);
    if (r == -ENOENT) {
        set_error(out, "claim %s/%s: not found in the API server", ns, name);
        return;
    }
    if (r < 0) {
        set_error(out, "claim %s/%s: cannot fetch it from the API server: %s", ns, name, err.msg);
        return;
    }
    pthread_mutex_lock(&d->lock);
    r = claim_plan_build(obj, ns, name, ref->uid, d->cfg.driver_name, d->cfg.node_name, d->inv,
                         out->plan, &err);
    pthread_mutex_unlock(&d->lock);
    json_decref(obj);
    if (r < 0)
        set_error(out, "%s", err.msg);
}

/* Claims of one call are fetched by up to FETCH_THREADS threads at once. */
#define FETCH_THREADS 8

struct fetch_job {
    struct driver *d;
    size_t n;
    const struct claim_ref *refs;
    struct prepare_result *out;
    bool *cached;
    struct gs_k8s_call_opts bounds;
    atomic_size_t next;
};

static void *fetch_worker(void *arg)
{
    struct fetch_job *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            break;
        fetch_one(j->d, &j->refs[i], &j->bounds, &j->out[i], &j->cached[i]);
    }
    return NULL;
}

struct files_job {
    struct driver *d;
    size_t n;
    const struct claim_ref *refs;
    struct prepare_result *out;
    const bool *cached;
    struct gs_error *err; /* per claim; code 0 = written (or nothing to do) */
    atomic_size_t next;
};

static void *files_worker(void *arg)
{
    struct files_job *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            break;
        const struct claim_plan *p = j->out[i].plan;
        if (!p || (j->cached[i] && driver_claim_files_present(j->d, p)))
            continue;
        if (j->cached[i])
            gs_info("re-creating missing files of a prepared claim", "claim=%s/%s uid=%s",
                    j->refs[i].ns, j->refs[i].name, j->refs[i].uid);
        if (driver_write_claim_files(j->d, p, true, &j->err[i]) < 0 && j->err[i].code == 0)
            j->err[i].code = -EIO;
    }
    return NULL;
}

/* The deadline for the API requests of a batch: the caller's minus the answer margin. */
static uint64_t api_deadline_ms(uint64_t caller_deadline_ms)
{
    uint64_t now = now_ns() / 1000000u;
    uint64_t dl = caller_deadline_ms ? caller_deadline_ms : now + DRIVER_DEFAULT_TIMEOUT_MS;
    if (dl <= now)
        return now ? now : 1;
    uint64_t margin = GS_MIN((dl - now) / 10u, (uint64_t)DRIVER_ANSWER_MARGIN_MS);
    return dl - margin;
}

void driver_prepare(struct driver *d, size_t n, const struct claim_ref *refs, uint64_t deadline_ms,
                    struct gs_http_cancel *cancel, struct prepare_result *out)
{
    uint64_t t0 = now_ns();
    bool *cached = calloc(n ? n : 1, sizeof(*cached));
    if (!cached) {
        for (size_t i = 0; i < n; i++) {
            memset(&out[i], 0, sizeof(out[i]));
            set_error(&out[i], "out of memory");
        }
        return;
    }
    struct fetch_job job = {
        .d = d,
        .n = n,
        .refs = refs,
        .out = out,
        .cached = cached,
        .bounds = {.deadline_ms = api_deadline_ms(deadline_ms), .cancel = cancel}};
    atomic_init(&job.next, 0);
    pthread_t threads[FETCH_THREADS];
    size_t started = 0;
    for (size_t k = 0; n > 1 && k < GS_MIN((size_t)FETCH_THREADS, n) - 1; k++) {
        if (pthread_create(&threads[started], NULL, fetch_worker, &job) == 0)
            started++;
    }
    fetch_worker(&job); /* this thread takes its share too (and all of it when n <= 1) */
    for (size_t k = 0; k < started; k++)
        pthread_join(threads[k], NULL);
    uint64_t t_fetched = now_ns();

    pthread_mutex_lock(&d->lock);
    uint64_t t_locked = now_ns();
    struct gs_error err = {0};
    size_t fresh = 0;
    /* Past the caller's deadline nobody waits for the answer: prepare nothing new (kubelet
     * retries). The API requests were cut earlier (job.bounds: the answer margin before it);
     * what was fetched by then is prepared while the caller still waits, so each retry finds
     * more claims prepared and converges. */
    uint64_t caller_ms = deadline_ms ? deadline_ms : job.bounds.deadline_ms;
    if (t_locked / 1000000u >= caller_ms) {
        for (size_t i = 0; i < n; i++)
            if (out[i].plan && !cached[i])
                set_error(&out[i],
                          "claim %s/%s: the caller's deadline passed before the claim "
                          "could be prepared",
                          refs[i].ns, refs[i].name);
    }
    for (size_t i = 0; i < n; i++) {
        if (out[i].plan && !cached[i]) {
            ckpt_set(&d->ckpt, out[i].plan, CKPT_PREPARE_STARTED);
            fresh++;
        }
    }
    if (fresh && ckpt_save(&d->ckpt, false, &err) < 0) {
        for (size_t i = 0; i < n; i++)
            if (out[i].plan && !cached[i]) {
                ckpt_remove(&d->ckpt, out[i].plan->uid);
                set_error(&out[i], "claim %s/%s: cannot write the checkpoint: %s", refs[i].ns,
                          refs[i].name, err.msg);
            }
        fresh = 0;
    }
    if (fresh)
        driver_fault_point(d, "prepare-after-started");
    uint64_t t_started = now_ns();
    /* Each claim's files are independent paths: written by up to FETCH_THREADS threads (the
     * driver lock stays held by this thread; nothing else touches claim files meanwhile). */
    struct gs_error *ferr = calloc(n ? n : 1, sizeof(*ferr));
    struct files_job fj = {.d = d, .n = n, .refs = refs, .out = out, .cached = cached, .err = ferr};
    atomic_init(&fj.next, 0);
    started = 0;
    for (size_t k = 0; ferr && n > 1 && k < GS_MIN((size_t)FETCH_THREADS, n) - 1; k++) {
        if (pthread_create(&threads[started], NULL, files_worker, &fj) == 0)
            started++;
    }
    if (ferr)
        files_worker(&fj);
    for (size_t k = 0; k < started; k++)
        pthread_join(threads[k], NULL);
    for (size_t i = 0; i < n; i++) {
        if (!out[i].plan || (ferr && ferr[i].code == 0))
            continue;
        struct gs_error rerr = {0};
        driver_remove_claim_files(d, out[i].plan->uid, false, &rerr);
        if (!cached[i])
            ckpt_remove(&d->ckpt, out[i].plan->uid);
        set_error(&out[i], "claim %s/%s: %s", refs[i].ns, refs[i].name,
                  ferr ? ferr[i].msg : "out of memory");
    }
    free(ferr);
    if (fresh) {
        for (size_t i = 0; i < n; i++)
            if (out[i].plan && !cached[i])
                ckpt_set(&d->ckpt, out[i].plan, CKPT_PREPARE_COMPLETED);
        if (ckpt_save(&d->ckpt, true, &err) < 0) {
            /* The files exist but the checkpoint cannot say so: undo, kubelet retries. */
            for (size_t i = 0; i < n; i++) {
                if (!out[i].plan || cached[i])
                    continue;
                struct gs_error rerr = {0};
                driver_remove_claim_files(d, out[i].plan->uid, false, &rerr);
                ckpt_remove(&d->ckpt, out[i].plan->uid);
                set_error(&out[i], "claim %s/%s: cannot write the checkpoint: %s", refs[i].ns,
                          refs[i].name, err.msg);
            }
        } else {
            driver_fault_point(d, "prepare-after-completed");
        }
    }
    driver_count_claims(d);
    pthread_mutex_unlock(&d->lock);

    uint64_t t_end = now_ns();
    gs_debug("prepare call timings",
             "claims=%zu fetch_us=%llu lock_wait_us=%llu started_us=%llu "
             "files_and_commit_us=%llu",
             n, (unsigned long long)(t_fetched - t0) / 1000,
             (unsigned long long)(t_locked - t_fetched) / 1000,
             (unsigned long long)(t_started - t_locked) / 1000,
             (unsigned long long)(t_end - t_started) / 1000);
    uint64_t per_claim = n ? (t_end - t0) / n : 0;
    for (size_t i = 0; i < n; i++) {
        if (out[i].plan) {
            if (d->metrics) {
                atomic_fetch_add(&d->metrics->prepare_total, 1);
                metrics_observe_prepare_ns(d->metrics, per_claim);
            }
            gs_info("claim prepared", "claim=%s/%s uid=%s devices=%zu cached=%d", refs[i].ns,
                    refs[i].name, refs[i].uid, out[i].plan->n_devices, cached[i]);
        } else {
            if (d->metrics)
                atomic_fetch_add(&d->metrics->prepare_errors, 1);
            char q[CLAIM_ERROR_MAX + 8];
            gs_warn("claim not prepared", "uid=%s error=%s",
                    GS_LOGQ(refs[i].uid ? refs[i].uid : ""),
                    gs_log_quote(q, sizeof(q), out[i].error));
            gs_k8s_record(d->cfg.events,
                          &(struct gs_k8s_object_ref){"resource.k8s.io/v1", "ResourceClaim",
                                                      refs[i].ns, refs[i].name, refs[i].uid},
                          true, "PrepareFailed", "node %s: %s", d->cfg.node_name, out[i].error);
        }
    }
    free(cached);
}

/* ---- unprepare ---------------------------------------------------------------------------- */

void driver_unprepare(struct driver *d, size_t n, const struct claim_ref *refs,
                      char (*errors)[CLAIM_ERROR_MAX])
{
    pthread_mutex_lock(&d->lock);
    bool changed = false;
    for (size_t i = 0; i < n; i++) {
        errors[i][0] = '\0';
        if (!claim_uid_valid(refs[i].uid)) {
            snprintf(errors[i], CLAIM_ERROR_MAX, "claim %s/%s: invalid UID \"%.80s\"",
                     refs[i].ns ? refs[i].ns : "", refs[i].name ? refs[i].name : "",
                     refs[i].uid ? refs[i].uid : "");
            continue;
        }
        struct gs_error err = {0};
        if (driver_remove_claim_files(d, refs[i].uid, true, &err) < 0) {
            snprintf(errors[i], CLAIM_ERROR_MAX, "claim %s/%s: %s", refs[i].ns, refs[i].name,
                     err.msg);
            continue;
        }
        if (ckpt_get(&d->ckpt, refs[i].uid, NULL) != CKPT_NONE ||
            json_object_get(d->ckpt.claims, refs[i].uid)) {
            ckpt_remove(&d->ckpt, refs[i].uid);
            changed = true;
        }
    }
    struct gs_error err = {0};
    if (changed && ckpt_save(&d->ckpt, true, &err) < 0) {
        for (size_t i = 0; i < n; i++)
            if (!errors[i][0])
                snprintf(errors[i], CLAIM_ERROR_MAX, "claim %s/%s: cannot write the checkpoint: %s",
                         refs[i].ns, refs[i].name, err.msg);
    }
    driver_count_claims(d);
    pthread_mutex_unlock(&d->lock);
    for (size_t i = 0; i < n; i++) {
        if (d->metrics)
            atomic_fetch_add(
                errors[i][0] ? &d->metrics->unprepare_errors : &d->metrics->unprepare_total, 1);
        if (errors[i][0]) {
            char q[CLAIM_ERROR_MAX + 8];
            gs_warn("claim not unprepared", "uid=%s error=%s",
                    GS_LOGQ(refs[i].uid ? refs[i].uid : ""), gs_log_quote(q, sizeof(q), errors[i]));
        } else {
            /* The UID was checked; namespace and name come from kubelet unchecked. */
            char claim[2 * CLAIM_NAME_MAX + 2];
            snprintf(claim, sizeof(claim), "%s/%s", refs[i].ns ? refs[i].ns : "",
                     refs[i].name ? refs[i].name : "");
            gs_info("claim unprepared", "claim=%s uid=%s", GS_LOGQ(claim), refs[i].uid);
        }
    }
}
