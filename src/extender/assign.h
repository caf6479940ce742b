/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice's own record of a placement, kept on the Node (see docs/internals/legacy.md
 * "Who the device plugin trusts"). HAMi's protocol hands the device plugin the placement through
 * the pod's annotations, which the pod's owner can patch; the extender therefore also writes, on
 * the Node object (which tenants cannot write), one annotation per placed pod:
 *   gpuslice.io/assign-<pod uid>: {"pod":"<ns>/<name>","time":<unix s>,
 *                                  "devices":"<HAMi vgpu-devices encoding>","next":<container>}
 * The device plugin serves only pods that have a record, takes the devices from the record, and
 * advances "next" (or removes the record after the last container) as it serves them.
 */
#ifndef GS_EXTENDER_ASSIGN_H
#define GS_EXTENDER_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/error.h"

#define EXT_ASSIGN_PREFIX "gpuslice.io/assign-"
#define EXT_UID_LEN       36
/* Kubernetes caps the total size of an object's annotations (keys + values) at 256 KiB
 * (TotalAnnotationSizeLimitB, apimachinery/pkg/api/validation/objectmeta.go
 * ValidateAnnotationsSize); placement records may take at most a quarter of a Node's: the extender
 * refuses a bind whose record would take them past it (records live from bind to the pod's last
 * Allocate, and stale ones are collected, so a node needs a few KiB). */
#define EXT_NODE_ANNOTATIONS_MAX (256 * 1024)
#define EXT_ASSIGN_BUDGET        (64 * 1024)

struct ext_assignment {
    char uid[EXT_UID_LEN + 1];
    char ns[64];    /* DNS label */
    char name[254]; /* DNS subdomain */
    int64_t time;
    unsigned next; /* first container index not served yet */
    char *devices; /* malloc'd */
};

/* A Kubernetes UID in its canonical form (8-4-4-4-12 lowercase hex), as the API server mints. */
bool ext_uid_valid(const char *uid);
/* The annotation key of a pod's record into buf; -EINVAL when uid is not valid. */
int ext_assign_key(char *buf, size_t len, const char *uid, struct gs_error *err);
/* The record's value (new string), or NULL on ENOMEM. */
char *ext_assign_encode(const char *ns, const char *name, int64_t time, const char *devices,
                        unsigned next);
/* Decode key + value; -EINVAL naming the field when either is not a record. A key without the
 * prefix is -ENOENT (not a record: not an error). */
int ext_assign_decode(const char *key, const char *value, struct ext_assignment *out,
                      struct gs_error *err);
void ext_assignment_fini(struct ext_assignment *a);

/*
 * Garbage collection of records (extender at bind, device plugin every --gc-interval). Why the
 * record `key`/`value` on `node` is stale — its pod is gone (no pod of `pods` has the UID, or it
 * has another namespace/name), finished, bound to another node, or still unbound after the node
 * lock's expiry (a bind that never completed) — into why[], or false when it still stands.
 * `pods` are the API's pods listed after the Node was read (a record is written after its pod
 * exists, so the pod of a record seen is in a later list unless it is gone).
 */
bool ext_assign_stale(const char *key, const char *value, const json_t *pods, const char *node,
                      int64_t now, int64_t unbound_max_s, char *why, size_t why_len);
/* Bytes (keys + values) of the records in a Node object's annotations, and of all its
 * annotations; the record `skip` (may be NULL) is not counted in either. */
void ext_assign_sizes(const json_t *node_obj, const char *skip, size_t *records, size_t *all);

#endif /* GS_EXTENDER_ASSIGN_H */
