/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/dra-service.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "plugin/dra-health.h"
#include "dra_v1.pb-c.h"
#include "dra_v1beta1.pb-c.h"
#include "pluginregistration_v1.pb-c.h"

/* ---- registration ------------------------------------------------------------------------- */

static void pack_reply(struct rpc_reply *reply, const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    reply->data = malloc(len ? len : 1);
    if (!reply->data) {
        reply->status = RPC_RESOURCE_EXHAUSTED;
        snprintf(reply->details, sizeof(reply->details), "out of memory");
        return;
    }
    reply->len = protobuf_c_message_pack(msg, reply->data);
}

static void bad_request(struct rpc_reply *reply, const char *what)
{
    reply->status = RPC_INVALID_ARGUMENT;
    snprintf(reply->details, sizeof(reply->details), "cannot decode %s: malformed protobuf", what);
}

static void get_info(void *user, const struct rpc_call_ctx *ctx, const uint8_t *req, size_t len,
                     struct rpc_reply *reply)
{
    struct registration_info *ri = user;
    Pluginregistration__InfoRequest *in = pluginregistration__info_request__unpack(NULL, len, req);
    if (!in) {
        bad_request(reply, "InfoRequest");
        return;
    }
    pluginregistration__info_request__free_unpacked(in, NULL);
    static char *versions[] = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
    Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
    info.type = (char *)"DRAPlugin";
    info.name = (char *)ri->driver_name;
    info.endpoint = (char *)ri->endpoint;
    info.n_supported_versions = 2;
    info.supported_versions = versions;
    pack_reply(reply, &info.base);
}

static void notify_status(void *user, const struct rpc_call_ctx *ctx, const uint8_t *req,
                          size_t len, struct rpc_reply *reply)
{
    struct registration_info *ri = user;
    Pluginregistration__RegistrationStatus *in =
        pluginregistration__registration_status__unpack(NULL, len, req);
    if (!in) {
        bad_request(reply, "RegistrationStatus");
        return;
    }
    if (in->plugin_registered) {
        gs_info("registered with kubelet", "driver=%s", ri->driver_name);
    } else {
        char q[300];
        gs_error_log("kubelet refused the registration", "driver=%s error=%s", ri->driver_name,
                     gs_log_quote(q, sizeof(q), in->error ? in->error : ""));
    }
    if (ri->metrics)
        atomic_store(&ri->metrics->registered, in->plugin_registered ? 1 : 0);
    pluginregistration__registration_status__free_unpacked(in, NULL);
    Pluginregistration__RegistrationStatusResponse out =
        PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
    pack_reply(reply, &out.base);
}

const struct rpc_method registration_methods[] = {
    {"/pluginregistration.Registration/GetInfo", get_info},
    {"/pluginregistration.Registration/NotifyRegistrationStatus", notify_status},
};
const size_t registration_n_methods = GS_ARRAY_SIZE(registration_methods);

/* ---- DRA v1 / v1beta1 --------------------------------------------------------------------- */

/* ---- claim strings on the wire ----------------------------------------------------------- */

/* protobuf-c hands strings out NUL-terminated, so "uid\0../x" would silently become "uid": the
 * claim strings are checked in the encoded request first. Both API versions encode
 * Node{Prepare,Unprepare}ResourcesRequest as `repeated Claim claims = 1` and Claim as
 * {namespace = 1, uid = 2, name = 3}, all length-delimited. */

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* Skip one field's value of wire type wt; false when truncated or an unknown type. For wire type 2
 * val and vlen receive the payload. */
static bool skip_value(const uint8_t **p, const uint8_t *end, unsigned wt, const uint8_t **val,
                       size_t *vlen)
{
    uint64_t v;
    switch (wt) {
    case 0:
        return read_varint(p, end, &v);
    case 1:
        if (end - *p < 8)
            return false;
        *p += 8;
        return true;
    case 5:
        if (end - *p < 4)
            return false;
        *p += 4;
        return true;
    case 2:
        if (!read_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return false;
        *val = *p;
        *vlen = (size_t)v;
        *p += v;
        return true;
    default:
        return false;
    }
}

/* Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
static bool utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i <= k)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

/* 0, or -EINVAL with `why` naming the claim (by position) and the field -- never the bytes. A
 * message that does not parse is left to the protobuf decoder. */
static int check_claim_strings(const uint8_t *req, size_t len, char *why, size_t wlen)
{
    static const char *const names[] = {"", "namespace", "uid", "name"};
    const uint8_t *p = req, *end = req + len;
    size_t index = 0;
    while (p < end) {
        uint64_t key;
        const uint8_t *claim = NULL;
        size_t clen = 0;
        if (!read_varint(&p, end, &key) || !skip_value(&p, end, (unsigned)(key & 7), &claim, &clen))
            return 0;
        if (key >> 3 != 1 || (key & 7) != 2)
            continue;
        const uint8_t *q = claim, *qend = claim + clen;
        while (q < qend) {
            uint64_t k2;
            const uint8_t *s = NULL;
            size_t slen = 0;
            if (!read_varint(&q, qend, &k2) || !skip_value(&q, qend, (unsigned)(k2 & 7), &s, &slen))
                return 0;
            uint64_t field = k2 >> 3;
            if ((k2 & 7) != 2 || field < 1 || field > 3)
                continue;
            if (memchr(s, '\0', slen))
                return snprintf(why, wlen, "claims[%zu].%s contains a NUL byte", index,
                                names[field]),
                       -EINVAL;
            if (!utf8_valid(s, slen))
                return snprintf(why, wlen, "claims[%zu].%s is not valid UTF-8", index,
                                names[field]),
                       -EINVAL;
        }
        index++;
    }
    return 0;
}

/* INVALID_ARGUMENT for a request whose claim strings are not clean; true when refused. */
static bool refuse_bad_strings(const uint8_t *req, size_t len, struct rpc_reply *reply)
{
    char why[128];
    if (check_claim_strings(req, len, why, sizeof(why)) == 0)
        return false;
    reply->status = RPC_INVALID_ARGUMENT;
    snprintf(reply->details, sizeof(reply->details), "%s", why);
    char q[sizeof(why) + 8];
    gs_warn("request refused", "reason=%s", gs_log_quote(q, sizeof(q), why));
    return true;
}

static void too_many(struct rpc_reply *reply, size_t n)
{
    reply->status = RPC_INVALID_ARGUMENT;
    snprintf(reply->details, sizeof(reply->details), "%zu claims in one request, at most %d", n,
             DRA_MAX_CLAIMS_PER_CALL);
}

#define SHARE_V1(dev, s)      ((dev)->share_id = (char *)(s))
#define SHARE_V1BETA1(dev, s) ((void)(dev), (void)(s))

/*
 * One implementation for both API versions: T is the protobuf-c type prefix, f the function
 * prefix, SHARE sets Device.share_id where the version has it.
 */
#define DRA_SERVICE(T, f, SHARE)                                                                   \
    static void f##prepare(void *user, const struct rpc_call_ctx *ctx, const uint8_t *req,         \
                           size_t len, struct rpc_reply *reply)                                    \
    {                                                                                              \
        struct driver *d = user;                                                                   \
        if (refuse_bad_strings(req, len, reply))                                                   \
            return;                                                                                \
        T##NodePrepareResourcesRequest *in =                                                       \
            f##node_prepare_resources_request__unpack(NULL, len, req);                             \
        if (!in) {                                                                                 \
            bad_request(reply, "NodePrepareResourcesRequest");                                     \
            return;                                                                                \
        }                                                                                          \
        size_t n = in->n_claims;                                                                   \
        if (n > DRA_MAX_CLAIMS_PER_CALL) {                                                         \
            too_many(reply, n);                                                                    \
            f##node_prepare_resources_request__free_unpacked(in, NULL);                            \
            return;                                                                                \
        }                                                                                          \
        struct claim_ref *refs = calloc(n ? n : 1, sizeof(*refs));                                 \
        struct prepare_result *res = calloc(n ? n : 1, sizeof(*res));                              \
        T##NodePrepareResourcesResponse__ClaimsEntry *entries =                                    \
            calloc(n ? n : 1, sizeof(*entries));                                                   \
        T##NodePrepareResourcesResponse__ClaimsEntry **entry_ptrs =                                \
            calloc(n ? n : 1, sizeof(void *));                                                     \
        T##NodePrepareResourceResponse *claim_resp = calloc(n ? n : 1, sizeof(*claim_resp));       \
        size_t total_results = 0;                                                                  \
        if (!refs || !res || !entries || !entry_ptrs || !claim_resp) {                             \
            reply->status = RPC_RESOURCE_EXHAUSTED;                                                \
            snprintf(reply->details, sizeof(reply->details), "out of memory");                     \
            goto out;                                                                              \
        }                                                                                          \
        for (size_t i = 0; i < n; i++) {                                                           \
            refs[i].ns = in->claims[i]->namespace_;                                                \
            refs[i].name = in->claims[i]->name;                                                    \
            refs[i].uid = in->claims[i]->uid;                                                      \
        }                                                                                          \
        driver_prepare(d, n, refs, ctx->deadline_ms, ctx->cancel, res);                            \
        for (size_t i = 0; i < n; i++)                                                             \
            if (res[i].plan)                                                                       \
                total_results += res[i].plan->n_results;                                           \
        T##Device *devs = calloc(total_results ? total_results : 1, sizeof(*devs));                \
        T##Device **dev_ptrs = calloc(total_results ? total_results : 1, sizeof(void *));          \
        char **cdi_ids = calloc(total_results ? total_results : 1, sizeof(char *));                \
        char **req_names = calloc(total_results ? total_results : 1, sizeof(char *));              \
        if (!devs || !dev_ptrs || !cdi_ids || !req_names) {                                        \
            reply->status = RPC_RESOURCE_EXHAUSTED;                                                \
            snprintf(reply->details, sizeof(reply->details), "out of memory");                     \
        } else {                                                                                   \
            size_t k = 0;                                                                          \
            for (size_t i = 0; i < n; i++) {                                                       \
                f##node_prepare_resource_response__init(&claim_resp[i]);                           \
                f##node_prepare_resources_response__claims_entry__init(&entries[i]);               \
                entries[i].key = (char *)refs[i].uid;                                              \
                entries[i].value = &claim_resp[i];                                                 \
                entry_ptrs[i] = &entries[i];                                                       \
                if (!res[i].plan) {                                                                \
                    claim_resp[i].error = res[i].error;                                            \
                    continue;                                                                      \
                }                                                                                  \
                claim_resp[i].devices = &dev_ptrs[k];                                              \
                for (size_t j = 0; j < res[i].plan->n_results; j++, k++) {                         \
                    struct claim_result *cr = &res[i].plan->results[j];                            \
                    char id[600];                                                                  \
                    f##device__init(&devs[k]);                                                     \
                    cdi_device_id(&d->cfg.cdi, res[i].plan->uid, cr->device, id, sizeof(id));      \
                    cdi_ids[k] = strdup(id);                                                       \
                    req_names[k] = cr->request;                                                    \
                    devs[k].n_request_names = 1;                                                   \
                    devs[k].request_names = &req_names[k];                                         \
                    devs[k].pool_name = cr->pool;                                                  \
                    devs[k].device_name = cr->device;                                              \
                    devs[k].n_cdi_device_ids = cdi_ids[k] ? 1 : 0;                                 \
                    devs[k].cdi_device_ids = &cdi_ids[k];                                          \
                    SHARE(&devs[k], cr->share_id);                                                 \
                    dev_ptrs[k] = &devs[k];                                                        \
                    claim_resp[i].n_devices++;                                                     \
                }                                                                                  \
            }                                                                                      \
            T##NodePrepareResourcesResponse resp;                                                  \
            f##node_prepare_resources_response__init(&resp);                                       \
            resp.n_claims = n;                                                                     \
            resp.claims = entry_ptrs;                                                              \
            pack_reply(reply, &resp.base);                                                         \
        }                                                                                          \
        for (size_t k = 0; cdi_ids && k < total_results; k++)                                      \
            free(cdi_ids[k]);                                                                      \
        free(devs);                                                                                \
        free(dev_ptrs);                                                                            \
        free(cdi_ids);                                                                             \
        free(req_names);                                                                           \
        for (size_t i = 0; i < n; i++)                                                             \
            prepare_result_fini(&res[i]);                                                          \
    out:                                                                                           \
        free(refs);                                                                                \
        free(res);                                                                                 \
        free(entries);                                                                             \
        free(entry_ptrs);                                                                          \
        free(claim_resp);                                                                          \
        f##node_prepare_resources_request__free_unpacked(in, NULL);                                \
    }                                                                                              \
                                                                                                   \
    static void f##unprepare(void *user, const struct rpc_call_ctx *ctx, const uint8_t *req,       \
                             size_t len, struct rpc_reply *reply)                                  \
    {                                                                                              \
        struct driver *d = user;                                                                   \
        if (refuse_bad_strings(req, len, reply))                                                   \
            return;                                                                                \
        T##NodeUnprepareResourcesRequest *in =                                                     \
            f##node_unprepare_resources_request__unpack(NULL, len, req);                           \
        if (!in) {                                                                                 \
            bad_request(reply, "NodeUnprepareResourcesRequest");                                   \
            return;                                                                                \
        }                                                                                          \
        size_t n = in->n_claims;                                                                   \
        if (n > DRA_MAX_CLAIMS_PER_CALL) {                                                         \
            too_many(reply, n);                                                                    \
            f##node_unprepare_resources_request__free_unpacked(in, NULL);                          \
            return;                                                                                \
        }                                                                                          \
        struct claim_ref *refs = calloc(n ? n : 1, sizeof(*refs));                                 \
        char(*errors)[CLAIM_ERROR_MAX] = calloc(n ? n : 1, CLAIM_ERROR_MAX);                       \
        T##NodeUnprepareResourcesResponse__ClaimsEntry *entries =                                  \
            calloc(n ? n : 1, sizeof(*entries));                                                   \
        T##NodeUnprepareResourcesResponse__ClaimsEntry **entry_ptrs =                              \
            calloc(n ? n : 1, sizeof(void *));                                                     \
        T##NodeUnprepareResourceResponse *claim_resp = calloc(n ? n : 1, sizeof(*claim_resp));     \
        if (!refs || !errors || !entries || !entry_ptrs || !claim_resp) {                          \
            reply->status = RPC_RESOURCE_EXHAUSTED;                                                \
            snprintf(reply->details, sizeof(reply->details), "out of memory");                     \
        } else {                                                                                   \
            for (size_t i = 0; i < n; i++) {                                                       \
                refs[i].ns = in->claims[i]->namespace_;                                            \
                refs[i].name = in->claims[i]->name;                                                \
                refs[i].uid = in->claims[i]->uid;                                                  \
            }                                                                                      \
            driver_unprepare(d, n, refs, errors);                                                  \
            for (size_t i = 0; i < n; i++) {                                                       \
                f##node_unprepare_resource_response__init(&claim_resp[i]);                         \
                if (errors[i][0])                                                                  \
                    claim_resp[i].error = errors[i];                                               \
                f##node_unprepare_resources_response__claims_entry__init(&entries[i]);             \
                entries[i].key = (char *)refs[i].uid;                                              \
                entries[i].value = &claim_resp[i];                                                 \
                entry_ptrs[i] = &entries[i];                                                       \
            }                                                                                      \
            T##NodeUnprepareResourcesResponse resp;                                                \
            f##node_unprepare_resources_response__init(&resp);                                     \
            resp.n_claims = n;                                                                     \
            resp.claims = entry_ptrs;                                                              \
            pack_reply(reply, &resp.base);                                                         \
        }                                                                                          \
        free(refs);                                                                                \
        free(errors);                                                                              \
        free(entries);                                                                             \
        free(entry_ptrs);                                                                          \
        free(claim_resp);                                                                          \
        f##node_unprepare_resources_request__free_unpacked(in, NULL);                              \
    }

DRA_SERVICE(K8s__Io__Kubelet__Pkg__Apis__Dra__V1__, k8s__io__kubelet__pkg__apis__dra__v1__,
            SHARE_V1)
DRA_SERVICE(K8s__Io__Kubelet__Pkg__Apis__Dra__V1beta1__,
            k8s__io__kubelet__pkg__apis__dra__v1beta1__, SHARE_V1BETA1)

const struct rpc_method dra_methods[] = {
    {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
     k8s__io__kubelet__pkg__apis__dra__v1__prepare},
    {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
     k8s__io__kubelet__pkg__apis__dra__v1__unprepare},
    {"/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources",
     k8s__io__kubelet__pkg__apis__dra__v1beta1__prepare},
    {"/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources",
     k8s__io__kubelet__pkg__apis__dra__v1beta1__unprepare},
    {DRA_HEALTH_METHOD, NULL, dra_health_watch},
};
const size_t dra_n_methods = GS_ARRAY_SIZE(dra_methods);
