/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reconcile: make checkpoint, claim files and the API agree (start-up and periodically). See
 * docs/internals/plugin.md "Invariants, crash safety".
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "plugin/driver-internal.h"
#include "plugin/driver.h"
#include "base/fs.h"

static void count_cleaned(struct driver *d, int n)
{
    if (d->metrics && n > 0)
        atomic_fetch_add(&d->metrics->reconcile_cleaned, (unsigned long long)n);
}

/* gs_remove_temps, logged. */
static int remove_temps(const char *dir, const char *prefix)
{
    char q[PATH_MAX + 8];
    int n = gs_remove_temps(dir, prefix);
    if (n > 0)
        gs_info("reconcile: removed temporary files of interrupted writes", "dir=%s count=%d",
                gs_log_quote(q, sizeof(q), dir), n);
    return n > 0 ? n : 0;
}

int driver_reconcile_local(struct driver *d)
{
    int fixed = 0;
    struct gs_error err = {0};
    pthread_mutex_lock(&d->lock);
    /* 1. Entries of the checkpoint. */
    json_t *uids = json_array();
    const char *uid;
    json_t *e;
    json_object_foreach(d->ckpt.claims, uid, e) json_array_append_new(uids, json_string(uid));
    size_t i;
    json_t *u;
    bool changed = false;
    struct claim_plan *plan = malloc(sizeof(*plan));
    json_array_foreach(uids, i, u)
    {
        const char *id = json_string_value(u);
        enum ckpt_state st = plan ? ckpt_get(&d->ckpt, id, plan) : CKPT_NONE;
        if (st == CKPT_PREPARE_COMPLETED) {
            /* Claim files are written without fsync: after a power loss they may be missing or
             * stale, so every prepared claim's files are rewritten from the checkpoint. */
            bool present = driver_claim_files_present(d, plan);
            if (!present)
                gs_info("reconcile: re-creating files of a prepared claim", "uid=%s", id);
            if (driver_write_claim_files(d, plan, false, &err) < 0) {
                char q[sizeof(err.msg) + 8];
                gs_warn("reconcile: cannot re-create claim files", "uid=%s error=%s", id,
                        gs_log_quote(q, sizeof(q), err.msg));
            }
            if (!present)
                fixed++;
            continue;
        }
        gs_info("reconcile: rolling back an unfinished prepare", "uid=%s state=%s", id,
                ckpt_state_name(st));
        driver_remove_claim_files(d, id, false, &err);
        ckpt_remove(&d->ckpt, id);
        changed = true;
        fixed++;
    }
    free(plan);
    json_decref(uids);

    /* 2. CDI specs nobody accounts for. */
    DIR *dir = opendir(d->cfg.cdi.cdi_root);
    if (dir) {
        struct dirent *de;
        char id[CLAIM_UID_MAX];
        while ((de = readdir(dir))) {
            if (cdi_spec_uid_from_filename(&d->cfg.cdi, de->d_name, id, sizeof(id)) < 0 ||
                json_object_get(d->ckpt.claims, id))
                continue;
            gs_info("reconcile: removing orphan CDI spec", "uid=%s", id);
            cdi_spec_remove(&d->cfg.cdi, id, &err);
            fixed++;
        }
        closedir(dir);
    }
    /* 3. Claim directories nobody accounts for. */
    char claims[PATH_MAX];
    snprintf(claims, sizeof(claims), "%s/claims", d->cfg.cdi.host_dir);
    dir = opendir(claims);
    if (dir) {
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_name[0] == '.' || json_object_get(d->ckpt.claims, de->d_name))
                continue;
            char path[PATH_MAX];
            snprintf(path, sizeof(path), "%s/%s", claims, de->d_name);
            char q[PATH_MAX + 8];
            gs_info("reconcile: removing orphan claim directory", "path=%s",
                    gs_log_quote(q, sizeof(q), path));
            gs_rm_rf(path, &err);
            fixed++;
        }
        closedir(dir);
    }
    /* Temporaries of atomic writes (base/fs.h: ".<name>.tmp.XXXXXX") a crash left behind: CDI
     * specs of our driver, the checkpoint, and the limits files in the claims' directories. */
    char cdi_prefix[300];
    snprintf(cdi_prefix, sizeof(cdi_prefix), "k8s.%s-claim_", d->cfg.driver_name);
    fixed += remove_temps(d->cfg.cdi.cdi_root, cdi_prefix);
    fixed += remove_temps(d->cfg.state_dir, CKPT_FILE_NAME);
    fixed += remove_temps(d->cfg.cdi.host_dir, "");
    dir = opendir(claims);
    if (dir) {
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_name[0] == '.')
                continue;
            char path[PATH_MAX];
            snprintf(path, sizeof(path), "%s/%s", claims, de->d_name);
            fixed += remove_temps(path, "");
        }
        closedir(dir);
    }
    if (changed && ckpt_save(&d->ckpt, true, &err) < 0) {
        char q[sizeof(err.msg) + 8];
        gs_error_log("reconcile: cannot write the checkpoint", "error=%s",
                     gs_log_quote(q, sizeof(q), err.msg));
    }
    driver_count_claims(d);
    pthread_mutex_unlock(&d->lock);
    count_cleaned(d, fixed);
    return fixed;
}

/* Does the claim still have an allocation result of our driver in this node's pool? */
static bool allocated_here(const struct driver *d, const json_t *claim)
{
    const json_t *results = json_object_get(
        json_object_get(json_object_get(json_object_get(claim, "status"), "allocation"), "devices"),
        "results");
    size_t i;
    const json_t *r;
    json_array_foreach(results, i, r)
    {
        const char *drv = json_string_value(json_object_get(r, "driver"));
        const char *pool = json_string_value(json_object_get(r, "pool"));
        if (drv && pool && strcmp(drv, d->cfg.driver_name) == 0 &&
            strcmp(pool, d->cfg.node_name) == 0)
            return true;
    }
    return false;
}

int driver_reconcile_api(struct driver *d, int64_t now_s)
{
    int cleaned = 0;
    pthread_mutex_lock(&d->lock);
    json_t *snapshot = json_deep_copy(d->ckpt.claims);
    pthread_mutex_unlock(&d->lock);
    const char *uid;
    json_t *e;
    json_object_foreach(snapshot, uid, e)
    {
        json_t *plan = json_object_get(e, "plan");
        const char *ns = json_string_value(json_object_get(plan, "namespace"));
        const char *name = json_string_value(json_object_get(plan, "name"));
        if (!ns || !name)
            continue;
        json_t *obj = NULL;
        struct gs_error err = {0};
        int r = gs_k8s_get(d->k8s, &gs_k8s_resourceclaims, ns, name, &obj, &err);
        bool gone = r == -ENOENT;
        if (r == 0) {
            const char *api_uid =
                json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
            gone = !api_uid || strcmp(api_uid, uid) != 0 || !allocated_here(d, obj);
        }
        json_decref(obj);
        if (r < 0 && !gone)
            continue; /* API trouble: decide nothing */
        pthread_mutex_lock(&d->lock);
        if (ckpt_get(&d->ckpt, uid, NULL) == CKPT_PREPARE_COMPLETED) {
            if (!gone) {
                if (ckpt_set_missing(&d->ckpt, uid, 0) != 0)
                    ckpt_save(&d->ckpt, false, &err);
            } else {
                int64_t since = ckpt_set_missing(&d->ckpt, uid, now_s);
                if (since == 0)
                    since = now_s;
                else
                    ckpt_set_missing(&d->ckpt, uid, since);
                if (now_s - since >= d->cfg.reconcile_grace_s) {
                    gs_info("reconcile: claim gone from the API, cleaning up", "claim=%s/%s uid=%s",
                            ns, name, uid);
                    driver_remove_claim_files(d, uid, false, &err);
                    ckpt_remove(&d->ckpt, uid);
                    cleaned++;
                }
                ckpt_save(&d->ckpt, true, &err);
            }
        }
        driver_count_claims(d);
        pthread_mutex_unlock(&d->lock);
    }
    json_decref(snapshot);
    count_cleaned(d, cleaned);
    return cleaned;
}
