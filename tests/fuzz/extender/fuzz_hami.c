/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: HAMi's annotation decoders (src/extender/hami.c) on untrusted text. The first
 * byte picks the decoder: even = node annotation (hami.io/node-nvidia-register, JSON or colon
 * form), odd = pod annotation (hami.io/vgpu-devices-allocated). Invariants: never a crash or a
 * sanitizer report; a decoded value re-encodes and decodes to the same devices (round trip).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hami/hami.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void node(const char *s)
{
    static struct hami_node_device a[HAMI_MAX_NODE_DEVICES], b[HAMI_MAX_NODE_DEVICES];
    int n = hami_node_devices_decode(s, a, HAMI_MAX_NODE_DEVICES, NULL);
    if (n <= 0)
        return;
    char *enc = hami_node_devices_encode(a, (size_t)n);
    if (!enc)
        return;
    int m = hami_node_devices_decode(enc, b, HAMI_MAX_NODE_DEVICES, NULL);
    if (m != n)
        abort();
    for (int i = 0; i < n; i++)
        if (strcmp(a[i].id, b[i].id) || strcmp(a[i].type, b[i].type) ||
            a[i].devmem != b[i].devmem || a[i].devcore != b[i].devcore ||
            a[i].count != b[i].count || a[i].health != b[i].health || a[i].index != b[i].index ||
            a[i].numa != b[i].numa)
            abort();
    free(enc);
}

static void pod(const char *s)
{
    static struct hami_ctr_devices a[16], b[16];
    int n = hami_pod_devices_decode(s, a, 16, NULL);
    if (n <= 0)
        return;
    /* Fields holding a separator cannot round-trip (HAMi's format has no escaping): skip. */
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < a[i].n; k++)
            if (strpbrk(a[i].dev[k].uuid, ",:;") || strpbrk(a[i].dev[k].type, ",:;"))
                return;
    char *enc = hami_pod_devices_encode(a, (size_t)n);
    if (!enc)
        return;
    int m = hami_pod_devices_decode(enc, b, 16, NULL);
    if (m != n)
        abort();
    for (int i = 0; i < n; i++) {
        if (a[i].n != b[i].n)
            abort();
        for (size_t k = 0; k < a[i].n; k++)
            if (strcmp(a[i].dev[k].uuid, b[i].dev[k].uuid) ||
                a[i].dev[k].usedmem != b[i].dev[k].usedmem ||
                a[i].dev[k].usedcores != b[i].dev[k].usedcores)
                abort();
    }
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    if (data[0] & 1)
        pod(s);
    else
        node(s);
    free(s);
    return 0;
}
