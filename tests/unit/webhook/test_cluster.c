/* SPDX-License-Identifier: Apache-2.0 */
/* What the cluster layer reads out of API objects: slices' memory sizes, a claim's classes. */
#include <string.h>

#include "tap.h"
#include "webhook/cluster.h"

#define D "hami-core-gpu.project-hami.io"

int main(void)
{
    tap_plan_auto();
    json_t *list = json_loads("{\"items\":["
                              "{\"spec\":{\"driver\":\"" D "\",\"devices\":["
                              "{\"capacity\":{\"memory\":{\"value\":\"15Gi\"}}},"
                              "{\"capacity\":{\"memory\":{\"value\":\"16106127360\"}}},"
                              "{\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}},"
                              "{\"capacity\":{\"memory\":{\"value\":\"15Qi\"}}},"
                              "{\"capacity\":{\"memory\":{\"value\":\"0.5\"}}},"
                              "{\"capacity\":{\"cores\":{\"value\":\"100\"}}},"
                              "{\"capacity\":{\"memory\":{\"value\":\"-1Gi\"}}}]}},"
                              "{\"spec\":{\"driver\":\"gpu.example.com\",\"devices\":["
                              "{\"capacity\":{\"memory\":{\"value\":\"24Gi\"}}}]}},"
                              "{\"spec\":{\"driver\":\"" D "\",\"devices\":["
                              "{\"capacity\":{\"memory\":{\"value\":\"40Gi\"}}}]}},"
                              "{\"spec\":null}, 7]}",
                              0, NULL);
    ok(list != NULL, "slice list parses");
    int64_t sizes[8];
    size_t n = 99;
    wh_slice_memory_sizes(list, D, sizes, 8, &n);
    is_uint(n, 3, "three distinct sizes of our driver (15Gi written twice, bad values skipped)");
    ok(n == 3 && sizes[0] == 15LL << 30 && sizes[1] == 80LL << 30 && sizes[2] == 40LL << 30,
       "sizes in bytes, first-seen order");
    wh_slice_memory_sizes(list, D, sizes, 2, &n);
    is_uint(n, 3, "more sizes than room: the count is still the true one");
    wh_slice_memory_sizes(list, "none.example.com", sizes, 8, &n);
    is_uint(n, 0, "another driver: nothing");
    wh_slice_memory_sizes(NULL, D, sizes, 8, &n);
    is_uint(n, 0, "no list: nothing");
    json_decref(list);

    json_t *spec = json_loads("{\"devices\":{\"requests\":[{\"name\":\"a\",\"exactly\":{"
                              "\"deviceClassName\":\"other\"}},{\"name\":\"b\",\"firstAvailable\":["
                              "{\"name\":\"x\",\"deviceClassName\":\"" D "\"}]}]}}",
                              0, NULL);
    ok(wh_claim_spec_uses_class(spec, D), "a firstAvailable subrequest of our class counts");
    ok(!wh_claim_spec_uses_class(spec, "third"), "a class no request uses");
    ok(wh_claim_spec_uses_class(spec, "other"), "an exactly request's class");
    ok(!wh_claim_spec_uses_class(NULL, D), "no spec: no");
    json_decref(spec);
    return tap_done();
}
