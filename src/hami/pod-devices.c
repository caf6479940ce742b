/* SPDX-License-Identifier: Apache-2.0 */
/* "hami.io/vgpu-devices-allocated" / "-to-allocate": a pod's devices per container (hami.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"
#include "hami/hami-internal.h"
#include "hami/hami.h"

static int copy_field(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

/* DecodeContainerDevices (v2.10.0 pkg/device/devices.go): split on ':'; segments without ','
 * are skipped; a segment needs at least 4 fields (uuid, type, usedmem, usedcores — more are
 * ignored, as HAMi ignores them); numbers by strconv.ParseInt(…, 10, 32). */
static int decode_ctr(const char *s, size_t len, size_t ci, struct hami_ctr_devices *out,
                      struct gs_error *err)
{
    out->n = 0;
    for (const char *e = s; e < s + len;) {
        const char *end = memchr(e, ':', (size_t)(s + len - e));
        size_t l = end ? (size_t)(end - e) : (size_t)(s + len - e);
        if (l && memchr(e, ',', l)) {
            if (out->n == HAMI_MAX_CTR_DEVICES)
                return gs_error_set(err, -EINVAL, "container %zu: more than %d devices", ci,
                                    HAMI_MAX_CTR_DEVICES);
            const char *f[4];
            size_t fl[4], nf = 0;
            for (const char *p = e; nf < 4;) {
                const char *c = memchr(p, ',', (size_t)(e + l - p));
                f[nf] = p, fl[nf] = c ? (size_t)(c - p) : (size_t)(e + l - p), nf++;
                if (!c)
                    break;
                p = c + 1;
            }
            struct hami_ctr_device *d = &out->dev[out->n];
            int64_t mem = 0, cores = 0;
            if (nf < 4)
                return gs_error_set(err, -EINVAL,
                                    "container %zu device %zu: %zu fields, expected "
                                    "\"<uuid>,<type>,<MiB>,<cores>\" in \"%.*s\"",
                                    ci, out->n, nf, (int)GS_MIN(l, (size_t)96), e);
            if (copy_field(d->uuid, sizeof(d->uuid), f[0], fl[0]) < 0 ||
                copy_field(d->type, sizeof(d->type), f[1], fl[1]) < 0)
                return gs_error_set(err, -EINVAL, "container %zu device %zu: uuid or type too long",
                                    ci, out->n);
            if (hami_parse_int(f[2], fl[2], INT32_MIN, INT32_MAX, &mem) < 0)
                return gs_error_set(err, -EINVAL,
                                    "container %zu device %zu (%s): usedmem \"%.*s\" is not an "
                                    "int32",
                                    ci, out->n, d->uuid, (int)GS_MIN(fl[2], (size_t)32), f[2]);
            if (hami_parse_int(f[3], fl[3], INT32_MIN, INT32_MAX, &cores) < 0)
                return gs_error_set(err, -EINVAL,
                                    "container %zu device %zu (%s): usedcores \"%.*s\" is not an "
                                    "int32",
                                    ci, out->n, d->uuid, (int)GS_MIN(fl[3], (size_t)32), f[3]);
            d->usedmem = (int32_t)mem, d->usedcores = (int32_t)cores;
            out->n++;
        }
        e += l + (end ? 1 : 0);
    }
    return 0;
}

/* DecodePodDevices (v2.10.0 pkg/device/devices.go): strings.Split on ';' — every piece is a
 * container entry, empty ones included (so entry i is container i: init containers, then
 * spec.containers). The trailing piece after the last ';' is empty and HAMi keeps it too; it
 * names no container, so it is dropped here. */
int hami_pod_devices_decode(const char *s, struct hami_ctr_devices *out, size_t max_ctrs,
                            struct gs_error *err)
{
    size_t n = 0, len = strlen(s);
    if (len > HAMI_ANN_MAX)
        return gs_error_set(err, -EINVAL, "annotation longer than %d bytes", HAMI_ANN_MAX);
    for (const char *e = s; *e;) {
        const char *end = strchr(e, ';');
        size_t l = end ? (size_t)(end - e) : strlen(e);
        if (n == max_ctrs)
            return gs_error_set(err, -EINVAL, "more than %zu container entries", max_ctrs);
        int r = decode_ctr(e, l, n, &out[n], err);
        if (r < 0)
            return r;
        n++;
        e += l + (end ? 1 : 0);
    }
    return (int)n;
}

/* EncodePodSingleDevice / EncodeContainerDevices (v2.10.0 pkg/device/devices.go). */
char *hami_pod_devices_encode(const struct hami_ctr_devices *ctrs, size_t n)
{
    size_t cap = 1, len = 0;
    for (size_t i = 0; i < n; i++)
        cap += 1 + ctrs[i].n * (HAMI_ID_MAX + 32 + 2 * 12 + 4);
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < ctrs[i].n; k++) {
            const struct hami_ctr_device *d = &ctrs[i].dev[k];
            len += (size_t)snprintf(buf + len, cap - len, "%s,%s,%" PRId32 ",%" PRId32 ":", d->uuid,
                                    d->type, d->usedmem, d->usedcores);
        }
        len += (size_t)snprintf(buf + len, cap - len, ";");
    }
    return buf;
}
