/* SPDX-License-Identifier: Apache-2.0 */
/* Which containers of a pod use a claim (pure JSON; the API path is tested in integration). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/resolve.h"
#include "tap.h"

static const char pod_text[] =
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"trainer\",\"uid\":\"u1\"},"
    " \"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"t\"},"
    "                               {\"name\":\"direct\",\"resourceClaimName\":\"shared-claim\"}],"
    "  \"initContainers\":[{\"name\":\"warmup\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}],"
    "  \"containers\":[{\"name\":\"main\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}},"
    "                  {\"name\":\"sidecar\"},"
    "                  {\"name\":\"reader\",\"resources\":{\"claims\":[{\"name\":\"direct\"}]}}]},"
    " \"status\":{\"resourceClaimStatuses\":[{\"name\":\"gpu\","
    "            \"resourceClaimName\":\"trainer-gpu-x7k2\"}],"
    "  \"initContainerStatuses\":[{\"name\":\"warmup\",\"containerID\":\"containerd://"
    "aaaaaaaaaaaaaaaa\"}],"
    "  \"containerStatuses\":[{\"name\":\"sidecar\",\"containerID\":\"containerd://"
    "bbbbbbbbbbbbbbbb\"},{\"name\":\"main\",\"containerID\":\"containerd://"
    "cccccccccccccccc\"}]}}";

int main(void)
{
    tap_plan_auto();
    json_t *pod = json_loads(pod_text, 0, NULL);
    ok(pod != NULL, "fixture parses");
    struct mon_consumer *c = NULL;
    size_t n = 0;
    int r = mon_pod_consumers(pod, "trainer-gpu-x7k2", &c, &n);
    is_int(r, 2, "template claim: the init container and the container that name its entry");
    ok(n == 2 && strcmp(c[0].container, "warmup") == 0 && strcmp(c[1].container, "main") == 0 &&
           strcmp(c[1].ns, "ml") == 0 && strcmp(c[1].pod, "trainer") == 0,
       "namespace, pod and container names");
    ok(n == 2 && strcmp(c[0].pod_uid, "u1") == 0 && strcmp(c[1].pod_uid, "u1") == 0,
       "the pod's UID (metadata.uid) on every consumer");
    ok(n == 2 && strcmp(c[0].container_id, "aaaaaaaaaaaaaaaa") == 0 &&
           strcmp(c[1].container_id, "cccccccccccccccc") == 0,
       "each container's runtime ID from initContainerStatuses / containerStatuses, by name");
    free(c);
    c = NULL;
    n = 0;
    r = mon_pod_consumers(pod, "shared-claim", &c, &n);
    ok(r == 1 && strcmp(c[0].container, "reader") == 0,
       "claim named directly (resourceClaimName): its container");
    ok(r == 1 && c[0].container_id[0] == '\0' && strcmp(c[0].pod_uid, "u1") == 0,
       "a container the kubelet has not reported yet: no container ID");
    free(c);
    c = NULL;
    n = 0;
    r = mon_pod_consumers(pod, "other", &c, &n);
    ok(r == 1 && n == 1 && c[0].container[0] == '\0' && strcmp(c[0].pod, "trainer") == 0,
       "reserved for the pod but no container names it: pod with an empty container");
    free(c);
    json_decref(pod);
    return tap_done();
}
