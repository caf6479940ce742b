/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/checkpoint.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/fs.h"

#define CKPT_VERSION 1

const char *ckpt_state_name(enum ckpt_state s)
{
    switch (s) {
    case CKPT_PREPARE_STARTED:
        return "PrepareStarted";
    case CKPT_PREPARE_COMPLETED:
        return "PrepareCompleted";
    default:
        return "None";
    }
}

static enum ckpt_state state_from_name(const char *s)
{
    if (s && strcmp(s, "PrepareStarted") == 0)
        return CKPT_PREPARE_STARTED;
    if (s && strcmp(s, "PrepareCompleted") == 0)
        return CKPT_PREPARE_COMPLETED;
    return CKPT_NONE;
}

int ckpt_load(struct checkpoint *c, const char *state_dir, const char *driver, struct gs_error *err)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->path, sizeof(c->path), "%s/%s", state_dir, CKPT_FILE_NAME);
    snprintf(c->driver, sizeof(c->driver), "%s", driver);
    c->claims = json_object();
    if (!c->claims)
        return gs_error_set(err, -ENOMEM, "out of memory");
    int r = gs_mkdir_p(state_dir, 0700, err);
    if (r < 0)
        return r;
    char *text = NULL;
    size_t len = 0;
    struct gs_error rerr = {0};
    r = gs_read_file(c->path, CKPT_MAX_BYTES, &text, &len, &rerr);
    if (r == -ENOENT)
        return 0;
    if (r == -EFBIG) /* no checkpoint of ours is that large: corrupt, moved aside by the caller */
        return gs_error_set(err, -EBADMSG, "checkpoint %s", rerr.msg);
    if (r < 0)
        return gs_error_set(err, r, "checkpoint %s", rerr.msg);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!root)
        return gs_error_set(err, -EBADMSG, "checkpoint %s: not JSON (line %d: %s)", c->path,
                            jerr.line, jerr.text);
    json_t *ver = json_object_get(root, "version"), *claims = json_object_get(root, "claims");
    if (!json_is_integer(ver) || json_integer_value(ver) != CKPT_VERSION ||
        !json_is_object(claims)) {
        json_decref(root);
        return gs_error_set(err, -EBADMSG, "checkpoint %s: unsupported version or no claims",
                            c->path);
    }
    const char *uid;
    json_t *e;
    json_object_foreach(claims, uid, e)
    {
        struct claim_plan *plan = malloc(sizeof(*plan));
        struct gs_error perr = {0};
        enum ckpt_state st = state_from_name(json_string_value(json_object_get(e, "state")));
        if (!plan) {
            json_decref(root);
            return gs_error_set(err, -ENOMEM, "out of memory");
        }
        if (st == CKPT_NONE || claim_plan_from_json(json_object_get(e, "plan"), plan, &perr) < 0 ||
            strcmp(plan->uid, uid) != 0) {
            gs_warn("checkpoint entry ignored", "claim=%s reason=%s", uid,
                    GS_LOGQ(perr.msg[0] ? perr.msg : "bad state or uid"));
            free(plan);
            continue;
        }
        free(plan);
        json_object_set(c->claims, uid, e);
    }
    json_decref(root);
    return 0;
}

void ckpt_fini(struct checkpoint *c)
{
    json_decref(c->claims);
    c->claims = NULL;
}

int ckpt_save(struct checkpoint *c, bool durable, struct gs_error *err)
{
    json_t *root = json_pack("{s:i, s:s, s:O}", "version", CKPT_VERSION, "driver", c->driver,
                             "claims", c->claims);
    if (!root)
        return gs_error_set(err, -ENOMEM, "out of memory");
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    if (!text)
        return gs_error_set(err, -ENOMEM, "out of memory");
    int r = gs_write_file_atomic_ex(c->path, text, strlen(text), 0600, durable ? GS_FS_DURABLE : 0,
                                    err);
    free(text);
    return r;
}

enum ckpt_state ckpt_get(const struct checkpoint *c, const char *uid, struct claim_plan *plan)
{
    json_t *e = json_object_get(c->claims, uid);
    if (!e)
        return CKPT_NONE;
    enum ckpt_state st = state_from_name(json_string_value(json_object_get(e, "state")));
    if (plan && claim_plan_from_json(json_object_get(e, "plan"), plan, NULL) < 0)
        return CKPT_NONE;
    return st;
}

void ckpt_set(struct checkpoint *c, const struct claim_plan *plan, enum ckpt_state st)
{
    json_object_set_new(c->claims, plan->uid,
                        json_pack("{s:s, s:I, s:o}", "state", ckpt_state_name(st), "missingSince",
                                  (json_int_t)0, "plan", claim_plan_to_json(plan)));
}

void ckpt_remove(struct checkpoint *c, const char *uid)
{
    json_object_del(c->claims, uid);
}

int64_t ckpt_set_missing(struct checkpoint *c, const char *uid, int64_t now)
{
    json_t *e = json_object_get(c->claims, uid);
    if (!e)
        return 0;
    int64_t prev = json_integer_value(json_object_get(e, "missingSince"));
    json_object_set_new(e, "missingSince", json_integer(now));
    return prev;
}

size_t ckpt_count(const struct checkpoint *c)
{
    return json_object_size(c->claims);
}
