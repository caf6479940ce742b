/* SPDX-License-Identifier: Apache-2.0 */
/* gs_k8s_path: the REST paths of the real API, names checked; client construction errors. */
#include <stdlib.h>
#include <string.h>

#include "kube/k8s.h"
#include "tap.h"

int main(void)
{
    char p[256];
    struct gs_error err = {0};

    tap_plan_auto();
    is_int(gs_k8s_path(p, sizeof(p), &gs_k8s_resourceslices, "ignored", NULL, NULL, &err), 0,
           "slices collection");
    is_str(p, "/apis/resource.k8s.io/v1/resourceslices", "cluster-scoped: namespace ignored");
    gs_k8s_path(p, sizeof(p), &gs_k8s_resourceslices, NULL, "node-1-gpu", NULL, &err);
    is_str(p, "/apis/resource.k8s.io/v1/resourceslices/node-1-gpu", "slice item");
    gs_k8s_path(p, sizeof(p), &gs_k8s_resourceclaims, "default", "claim-a", "status", &err);
    is_str(p, "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/claim-a/status",
           "claim status subresource");
    gs_k8s_path(p, sizeof(p), &gs_k8s_resourceclaims, NULL, NULL, NULL, &err);
    is_str(p, "/apis/resource.k8s.io/v1/resourceclaims", "claims in all namespaces");
    gs_k8s_path(p, sizeof(p), &gs_k8s_resourceclaimtemplates, "ns1", "t", NULL, &err);
    is_str(p, "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaimtemplates/t", "template");
    gs_k8s_path(p, sizeof(p), &gs_k8s_deviceclasses, NULL, "hami-core-gpu.project-hami.io", NULL,
                &err);
    is_str(p, "/apis/resource.k8s.io/v1/deviceclasses/hami-core-gpu.project-hami.io",
           "device class with dots");
    gs_k8s_path(p, sizeof(p), &gs_k8s_pods, "default", "web-0", NULL, &err);
    is_str(p, "/api/v1/namespaces/default/pods/web-0", "core group under /api");
    gs_k8s_path(p, sizeof(p), &gs_k8s_nodes, NULL, "node-1", NULL, &err);
    is_str(p, "/api/v1/nodes/node-1", "node");

    is_int(gs_k8s_path(p, sizeof(p), &gs_k8s_pods, "default", "../secrets", NULL, &err), -EINVAL,
           "path traversal in a name refused");
    like_str(err.msg, "pods name \"../secrets\" is not a valid name", "message names the value");
    is_int(gs_k8s_path(p, sizeof(p), &gs_k8s_pods, "a/b", "x", NULL, &err), -EINVAL,
           "slash in a namespace refused");
    is_int(gs_k8s_path(p, sizeof(p), &gs_k8s_pods, "default", "x?watch=1", NULL, &err), -EINVAL,
           "query in a name refused");
    is_int(gs_k8s_path(p, sizeof(p), &gs_k8s_pods, "default", "", NULL, &err), -EINVAL,
           "empty name refused");
    is_int(gs_k8s_path(p, sizeof(p), &gs_k8s_pods, "default", NULL, "status", &err), -EINVAL,
           "subresource without a name refused");
    is_int(gs_k8s_path(p, 20, &gs_k8s_pods, "default", "web-0", NULL, &err), -ENAMETOOLONG,
           "small buffer -> -ENAMETOOLONG");
    {
        char longname[300];
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        is_int(gs_k8s_path(p, sizeof(p), &gs_k8s_pods, "default", longname, NULL, &err), -EINVAL,
               "name over 253 characters refused");
    }

    is_str(gs_k8s_event_type_name(GS_K8S_EVENT_ADDED), "ADDED", "ADDED");
    is_str(gs_k8s_event_type_name(GS_K8S_EVENT_BOOKMARK), "BOOKMARK", "BOOKMARK");
    is_str(gs_k8s_event_type_name(GS_K8S_EVENT_ERROR), "ERROR", "ERROR");

    struct gs_kube_config empty = {0};
    ok(gs_k8s_client_new(&empty, &err) == NULL && err.code == -EINVAL,
       "client without a server refused");
    like_str(err.msg, "no API server configured", "message");
    struct gs_kube_config missing_token = {.server = (char *)"http://127.0.0.1:1",
                                           .token_file = (char *)"/nonexistent/token"};
    ok(gs_k8s_client_new(&missing_token, &err) == NULL && err.code == -ENOENT,
       "unreadable token file refused at start");
    like_str(err.msg, "/nonexistent/token", "message names the token file");

    struct gs_kube_config ok_cfg = {.server = (char *)"http://127.0.0.1:1/", .token = (char *)"t"};
    struct gs_k8s_client *c = gs_k8s_client_new(&ok_cfg, &err);
    ok(c != NULL, "client created");
    is_str(gs_k8s_client_server(c), "http://127.0.0.1:1", "server trailing slash dropped");
    is_str(gs_k8s_client_namespace(c), "default", "namespace defaults to default");
    struct gs_k8s_stats st;
    gs_k8s_client_stats(c, &st);
    is_uint(st.requests, 0, "no requests yet");
    is_int(gs_k8s_request(c, "GET", "relative", NULL, NULL, NULL, NULL, &err), -EINVAL,
           "path must start with /");
    json_t *arr = json_array();
    is_int(
        gs_k8s_patch(c, &gs_k8s_pods, "default", "x", NULL, GS_K8S_PATCH_MERGE, arr, 0, NULL, &err),
        -EINVAL, "merge patch must be an object");
    json_t *obj = json_object();
    is_int(
        gs_k8s_patch(c, &gs_k8s_pods, "default", "x", NULL, GS_K8S_PATCH_JSON, obj, 0, NULL, &err),
        -EINVAL, "JSON patch must be an array");
    is_int(gs_k8s_update(c, &gs_k8s_pods, "default", NULL, NULL, obj, 0, NULL, &err), -EINVAL,
           "update without a name");
    like_str(err.msg, "object has no metadata.name", "update message");
    json_decref(arr);
    json_decref(obj);
    gs_k8s_client_free(c);
    gs_k8s_client_free(NULL);
    return tap_done();
}
