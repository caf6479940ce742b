/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes API client on libcurl + jansson (see docs/internals/k8s-client.md).
 *
 *   struct gs_kube_config cfg = {0};
 *   if (gs_kube_config_load(opt_kubeconfig, &cfg, &err) < 0) ...
 *   struct gs_k8s_client *k = gs_k8s_client_new(&cfg, &err);
 *   json_t *claim = NULL;
 *   int r = gs_k8s_get(k, &gs_k8s_resourceclaims, "default", "gpu-claim", &claim, &err);
 *   // r == -ENOENT, err.msg == "resourceclaims.resource.k8s.io \"gpu-claim\" not found (404)"
 *
 * Return codes (negative errno, message in err):
 *   2xx -> 0; 400/422 -> -EINVAL; 401 -> -EACCES; 403 -> -EPERM; 404 -> -ENOENT;
 *   409 AlreadyExists -> -EEXIST; 409 Conflict (stale resourceVersion) -> -EBUSY; 410 -> -ESTALE;
 *   413 or response over the maximum -> -E2BIG; 429 after the last attempt -> -EAGAIN;
 *   5xx after the last attempt -> -EIO; timeouts -> -ETIMEDOUT; no connection -> -ECONNREFUSED;
 *   TLS -> -EPROTO; a response that is not the JSON expected -> -EBADMSG; stopped -> -ECANCELED.
 * The message is the API's Status message with the code: "<message> (<code>)", or
 * "<METHOD> <path>: HTTP <code>" when the body is not a Status.
 *
 * Retries: 5xx, 429 and transport timeouts/connection failures are retried up to max_attempts
 * with exponential backoff and full jitter (sleep = random in [0, min(max, base * 2^n)]); a
 * Retry-After header replaces the jittered sleep. Every request (retries included) first takes a
 * token from the client's QPS/burst bucket. Timeouts of POST are not retried (the create may have
 * happened).
 *
 * JSON: bodies passed in are borrowed (not stolen); objects handed out are new references.
 * Threads: a client may be shared by any number of threads.
 */
#ifndef GS_COMMON_K8S_H
#define GS_COMMON_K8S_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "kube/kubeconfig.h"

/* A kind of object, as its REST path names it. */
struct gs_k8s_resource {
    const char *group;   /* "" for the core group */
    const char *version; /* "v1" */
    const char *plural;  /* "resourceclaims" */
    bool namespaced;
};

extern const struct gs_k8s_resource gs_k8s_resourceslices;         /* resource.k8s.io/v1 */
extern const struct gs_k8s_resource gs_k8s_resourceclaims;         /* resource.k8s.io/v1, ns */
extern const struct gs_k8s_resource gs_k8s_resourceclaimtemplates; /* resource.k8s.io/v1, ns */
extern const struct gs_k8s_resource gs_k8s_deviceclasses;          /* resource.k8s.io/v1 */
extern const struct gs_k8s_resource gs_k8s_pods;                   /* v1, ns */
extern const struct gs_k8s_resource gs_k8s_nodes;                  /* v1 */

struct gs_k8s_options {
    double qps;                  /* steady request rate; 0 = default 50, <0 = unlimited */
    unsigned burst;              /* bucket size; 0 = default 100 */
    unsigned max_attempts;       /* tries per request incl. the first; 0 = default 5 */
    unsigned backoff_base_ms;    /* 0 = default 200 */
    unsigned backoff_max_ms;     /* cap of one backoff sleep; 0 = default 10000 */
    unsigned retry_after_max_ms; /* cap on an honoured Retry-After; 0 = default 60000 */
    long connect_timeout_ms;     /* 0 = default 5000 */
    long timeout_ms;             /* per attempt; 0 = default 30000 */
    size_t max_response_bytes;   /* 0 = default 16 MiB */
    size_t max_event_bytes;      /* one watch event; 0 = default 4 MiB */
    const char *user_agent;      /* NULL = "gpuslice/<version>" */
    /* Test hooks: a monotonic clock and a sleep. NULL = the real ones. The sleep is the only place
     * the client waits (rate limit, backoff); with hooks, tests see every wait exactly. */
    uint64_t (*now_ms)(void *user);
    void (*sleep_ms)(void *user, uint64_t ms);
    void *clock_user;
};

/* Counters since the client was created (all monotonic). */
struct gs_k8s_stats {
    uint64_t requests;  /* HTTP requests sent, retries included */
    uint64_t retries;   /* requests that were a retry */
    uint64_t throttled; /* requests that had to wait for the rate limiter */
    uint64_t throttle_wait_ms;
    uint64_t backoff_wait_ms; /* sum of backoff / Retry-After sleeps */
    uint64_t last_backoff_ms;
    uint64_t token_reloads; /* times the token file was (re-)read */
};

struct gs_k8s_client;

/* Defaults for every option. */
struct gs_k8s_client *gs_k8s_client_new(const struct gs_kube_config *cfg, struct gs_error *err);
struct gs_k8s_client *gs_k8s_client_new_with(const struct gs_kube_config *cfg,
                                             const struct gs_k8s_options *opts,
                                             struct gs_error *err);
void gs_k8s_client_free(struct gs_k8s_client *c);
/* The configured namespace ("default" if none). */
const char *gs_k8s_client_namespace(const struct gs_k8s_client *c);
const char *gs_k8s_client_server(const struct gs_k8s_client *c);
void gs_k8s_client_stats(struct gs_k8s_client *c, struct gs_k8s_stats *out);

/* Flags for writes. */
#define GS_K8S_DRY_RUN 0x1u /* ?dryRun=All */

/*
 * Raw request. `path` starts with "/" and may carry a query. `body` may be NULL; `content_type`
 * NULL = "application/json". On 2xx returns 0 and *out (if non-NULL) = the parsed body (NULL for
 * an empty body). `http_status` (may be NULL) receives the final status (0 if none arrived).
 */
int gs_k8s_request(struct gs_k8s_client *c, const char *method, const char *path,
                   const json_t *body, const char *content_type, json_t **out, long *http_status,
                   struct gs_error *err);

/* "/apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims[/<name>[/<sub>]]" into buf.
 * ns is ignored for cluster-scoped resources; NULL ns for a namespaced one = all namespaces.
 * Names are checked (DNS subdomain characters only). -EINVAL / -ENAMETOOLONG. */
int gs_k8s_path(char *buf, size_t len, const struct gs_k8s_resource *res, const char *ns,
                const char *name, const char *subresource, struct gs_error *err);

int gs_k8s_get(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
               const char *name, json_t **out, struct gs_error *err);

/*
 * Bounds of one call (retries, backoff and rate-limit waits included). deadline_ms is on the
 * client's monotonic clock (gs_k8s_now_ms; 0 = none): every attempt's timeout is cut to what is
 * left, a backoff that would end past it is not slept, and once it has passed the call returns
 * -ETIMEDOUT "<METHOD> <path>: deadline exceeded (...)". `cancel` (may be NULL) makes the call
 * return -ECANCELED promptly when triggered. A caller serving a client with a deadline (a gRPC
 * call) passes that deadline so no API request outlives the caller.
 */
struct gs_k8s_call_opts {
    uint64_t deadline_ms;
    struct gs_http_cancel *cancel;
};
int gs_k8s_get_with(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                    const char *name, const struct gs_k8s_call_opts *opts, json_t **out,
                    struct gs_error *err);
/* The client's monotonic clock in milliseconds (the test hook's when one is set). */
uint64_t gs_k8s_now_ms(const struct gs_k8s_client *c);

struct gs_k8s_list_options {
    const char *label_selector; /* NULL = none */
    const char *field_selector; /* e.g. "spec.nodeName=node-1"; NULL = none */
    unsigned page_size;         /* 0 = no limit; pages are fetched and joined */
};
/* The List object with all items (pages joined). `resource_version` (may be NULL) receives a
 * new string: the list's metadata.resourceVersion, to start a watch from. */
int gs_k8s_list(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                const struct gs_k8s_list_options *opts, json_t **out, char **resource_version,
                struct gs_error *err);

/* ns NULL = the object's metadata.namespace, else the client's namespace. */
int gs_k8s_create(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                  const json_t *obj, unsigned flags, json_t **out, struct gs_error *err);
/* PUT; `name` NULL = obj's metadata.name. subresource NULL or "status". -EBUSY on conflict. */
int gs_k8s_update(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                  const char *name, const char *subresource, const json_t *obj, unsigned flags,
                  json_t **out, struct gs_error *err);

enum gs_k8s_patch_type {
    GS_K8S_PATCH_MERGE = 0, /* application/merge-patch+json */
    GS_K8S_PATCH_JSON = 1,  /* application/json-patch+json (an array of operations) */
};
int gs_k8s_patch(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                 const char *name, const char *subresource, enum gs_k8s_patch_type type,
                 const json_t *patch, unsigned flags, json_t **out, struct gs_error *err);
/* `uid` non-NULL adds a UID precondition. -ENOENT if absent. */
int gs_k8s_delete(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                  const char *name, const char *uid, unsigned flags, struct gs_error *err);

/* ---- watch ---------------------------------------------------------------------------------- */

enum gs_k8s_event_type {
    GS_K8S_EVENT_ADDED = 0,
    GS_K8S_EVENT_MODIFIED = 1,
    GS_K8S_EVENT_DELETED = 2,
    GS_K8S_EVENT_BOOKMARK = 3,
    GS_K8S_EVENT_ERROR = 4, /* delivered only for non-410 errors; 410 ends the watch (-ESTALE) */
};
const char *gs_k8s_event_type_name(enum gs_k8s_event_type t);

/* Called for every event. `object` is borrowed (json_incref to keep it). Return 0 to go on, a
 * negative code to end the watch with that code. */
typedef int (*gs_k8s_watch_fn)(void *user, enum gs_k8s_event_type type, json_t *object);

struct gs_k8s_watch_options {
    const char *label_selector;
    const char *field_selector;
    unsigned timeout_s; /* server-side timeoutSeconds per stream; 0 = 300 */
    bool no_bookmarks;  /* default: allowWatchBookmarks=true */
};

struct gs_k8s_watch;

struct gs_k8s_watch *gs_k8s_watch_new(struct gs_k8s_client *c, const struct gs_k8s_resource *res,
                                      const char *ns, const struct gs_k8s_watch_options *opts,
                                      struct gs_error *err);
void gs_k8s_watch_free(struct gs_k8s_watch *w);

/*
 * Watch from `resource_version` (from gs_k8s_list). Streams are re-opened from the last seen
 * resourceVersion (events and bookmarks advance it) when the server ends them, and after
 * transient failures (with backoff, bounded by max_attempts consecutive failures). Returns only:
 *   -ESTALE     410 Gone (HTTP or an ERROR event): relist, then watch again from the new version;
 *   -ECANCELED  gs_k8s_watch_stop() was called;
 *   -E2BIG      one event larger than max_event_bytes;
 *   the callback's negative code, or the last transport/HTTP error.
 */
int gs_k8s_watch_run(struct gs_k8s_watch *w, const char *resource_version, gs_k8s_watch_fn fn,
                     void *user, struct gs_error *err);
/* Called with the List object (items = the whole current state) after every (re)list. Return 0
 * to go on, a negative code to stop. */
typedef int (*gs_k8s_list_fn)(void *user, json_t *list);

/*
 * The informer loop: list (with the watch's namespace and selectors), hand the list to on_list,
 * watch from its resourceVersion; on 410 list again (on_list sees the fresh state, so it must
 * reconcile rather than append). Returns what gs_k8s_watch_run returns other than -ESTALE, or a
 * list error (after the client's retries).
 */
int gs_k8s_list_watch(struct gs_k8s_watch *w, gs_k8s_list_fn on_list, gs_k8s_watch_fn on_event,
                      void *user, struct gs_error *err);

/* From any thread: makes a running (or the next) gs_k8s_watch_run return -ECANCELED promptly. */
void gs_k8s_watch_stop(struct gs_k8s_watch *w);

/*
 * The watch-stream parser gs_k8s_watch_run uses, on bytes already at hand: `data` (a 200 response
 * body, newline-delimited JSON events) is handed over in pieces of `chunk` bytes (0 = at once),
 * as the network may split it; every complete event goes to fn. An event over `max_event` bytes
 * is -E2BIG, a line that is not an event -EBADMSG, an ERROR event with code 410 -ESTALE; fn's
 * negative return stops the parse. A trailing line without '\n' is not an event (the stream was
 * cut). Exposed for the fuzz target and tests.
 */
int gs_k8s_watch_parse(const char *data, size_t len, size_t chunk, size_t max_event,
                       gs_k8s_watch_fn fn, void *user, struct gs_error *err);
/* The last resourceVersion seen (copied into buf; "" if none). */
void gs_k8s_watch_resource_version(struct gs_k8s_watch *w, char *buf, size_t len);

#endif /* GS_COMMON_K8S_H */
