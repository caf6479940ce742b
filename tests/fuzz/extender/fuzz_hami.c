/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the HAMi codec's decoders (src/hami) on untrusted text. The first byte picks
 * the decoder (& 3): 0 = node annotation (hami.io/node-nvidia-register, JSON or colon form),
 * 1 = pod annotation (hami.io/vgpu-devices-allocated), 2 = node lock (hami.io/mutex.lock) and a
 * Go duration, 3 = filter reasons (ParseReason). Invariants: never a crash or a sanitizer report;
 * a decoded value re-encodes and decodes to the same values (round trip).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hami/hami.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void lock(const char *s)
{
    struct hami_lock a, b;
    int64_t ns;
    (void)hami_go_duration_parse(s, &ns);
    if (hami_lock_parse(s, &a, NULL) < 0 || !a.ns[0] || strchr(a.ns, ',') || strchr(a.pod, ','))
        return;
    char v[600];
    hami_lock_value(v, sizeof(v), a.unix_s, a.ns, a.pod);
    if (hami_lock_parse(v, &b, NULL) < 0 || b.unix_s != a.unix_s || strcmp(a.ns, b.ns) ||
        strcmp(a.pod, b.pod))
        abort();
}

static void reasons(const char *s)
{
    struct hami_reasons a, b;
    hami_reasons_parse(s, &a);
    char buf[4096];
    hami_reasons_format(&a, 8, buf, sizeof(buf));
    if (strlen(buf) < sizeof(buf) - 1 && hami_reasons_parse(buf, &b) != (int)a.n)
        abort();
}

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
    switch (data[0] & 3) {
    case 0:
        node(s);
        break;
    case 1:
        pod(s);
        break;
    case 2:
        lock(s);
        break;
    default:
        reasons(s);
    }
    free(s);
    return 0;
}
