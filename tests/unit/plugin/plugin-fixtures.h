/* SPDX-License-Identifier: Apache-2.0 */
/* Shared fixtures of the plugin unit tests: a T4-like inventory and claim JSON builders. */
#ifndef GS_TESTS_PLUGIN_FIXTURES_H
#define GS_TESTS_PLUGIN_FIXTURES_H

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "gpu/discovery.h"

static inline void fixture_gpu(struct gpu_device *d, unsigned minor, const char *uuid,
                               unsigned long long mem)
{
    memset(d, 0, sizeof(*d));
    d->minor = minor;
    d->index = minor;
    d->numa_node = -1;
    d->nvlink_domain = minor;
    snprintf(d->name, sizeof(d->name), "hami-gpu-%u", minor);
    snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
    snprintf(d->product, sizeof(d->product), "Tesla T4");
    snprintf(d->brand, sizeof(d->brand), "Tesla");
    snprintf(d->architecture, sizeof(d->architecture), "Turing");
    snprintf(d->compute_capability, sizeof(d->compute_capability), "7.5.0");
    snprintf(d->driver_version, sizeof(d->driver_version), "550.54.15");
    snprintf(d->cuda_driver_version, sizeof(d->cuda_driver_version), "12.4.0");
    snprintf(d->nvml_bus_id, sizeof(d->nvml_bus_id), "00000000:%02X:00.0", 0x3b + minor);
    d->memory_total = mem;
}

static inline void fixture_t4(struct gpu_inventory *inv)
{
    memset(inv, 0, sizeof(*inv));
    fixture_gpu(&inv->dev[0], 0, "GPU-11111111-2222-3333-4444-555555555555",
                15360ull * 1024 * 1024 + 12345);
    inv->n = 1;
}

/* A ResourceClaim with one result per (request, device, cores, memory) tuple of `results`
 * (JSON array text). */
static inline json_t *fixture_claim(const char *uid, const char *results_json)
{
    char buf[8192];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
             "\"metadata\":{\"name\":\"single-gpu-0\",\"namespace\":\"test-dra\",\"uid\":\"%s\"},"
             "\"spec\":{},\"status\":{\"allocation\":{\"devices\":{\"results\":%s}}}}",
             uid, results_json);
    json_error_t e;
    return json_loads(buf, 0, &e);
}

#endif
