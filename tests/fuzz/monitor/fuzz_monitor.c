/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's untrusted inputs. First byte selects:
 *   'A'  the rest is a scraper's Accept header (mon_expo_negotiate)
 *   'P'  the rest is a Pod from the API server (mon_pod_consumers for claim "c")
 *   'R'  the rest is a shared-region file (mon_region_read): any size, any header
 *   'L'  the rest is a label value: rendered, it must stay one sample line
 *   'C'  the rest is a /proc/<pid>/cgroup file (mon_cgroup_parse: cgroup names below a
 *        delegated subtree are chosen by the tenant)
 * Anything else is ignored.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "monitor/expo.h"
#include "monitor/ident.h"
#include "monitor/region.h"
#include "monitor/resolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *cstr(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    switch (data[0]) {
    case 'A': {
        char *s = cstr(p, n);
        if (s) {
            enum mon_format f = mon_expo_negotiate(s);
            if (f != MON_FORMAT_TEXT && f != MON_FORMAT_OPENMETRICS)
                abort();
        }
        free(s);
        break;
    }
    case 'P': {
        json_t *pod = json_loadb((const char *)p, n, 0, NULL);
        struct mon_consumer *c = NULL;
        size_t k = 0;
        int r = mon_pod_consumers(pod, "c", &c, &k);
        if (r >= 0 && (size_t)r != k)
            abort();
        free(c);
        json_decref(pod);
        break;
    }
    case 'R': {
        int fd = memfd_create("region", 0);
        if (fd < 0)
            return 0;
        if (n && write(fd, p, n) != (ssize_t)n) {
            close(fd);
            return 0;
        }
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        struct mon_region r;
        mon_region_init(&r, path);
        struct mon_region_device devs[GS_REGION_MAX_DEVICES];
        uint32_t nd = 0;
        struct gs_error err = {0};
        enum mon_region_status s =
            mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &nd, true, &err);
        if (s == MON_REGION_OK) {
            for (uint32_t i = 0; i < nd; i++)
                if (strlen(devs[i].uuid) >= sizeof(devs[i].uuid))
                    abort();
        } else if (nd != 0) {
            abort();
        }
        mon_region_fini(&r);
        close(fd);
        break;
    }
    case 'L': {
        char *s = cstr(p, n);
        struct mon_expo *e = mon_expo_new(0);
        static const struct mon_family_def def = {"f", MON_GAUGE, MON_MERGE_SUM, "h"};
        int f = e ? mon_expo_family(e, &def) : -1;
        struct mon_labels l;
        mon_labels_init(&l);
        mon_labels_add(&l, "v", s ? s : "");
        if (f >= 0 && s && strlen(s) == n) {
            mon_expo_add(e, f, &l, 1);
            char *text = NULL;
            size_t len = 0;
            if (mon_expo_render(e, MON_FORMAT_TEXT, &text, &len) == 0) {
                size_t lines = 0;
                for (size_t i = 0; i < len; i++)
                    lines += text[i] == '\n';
                if (lines != 3) /* HELP, TYPE, one sample */
                    abort();
            }
            free(text);
        }
        mon_expo_free(e);
        free(s);
        break;
    }
    case 'C': {
        struct mon_cgroup_ident id;
        mon_cgroup_parse((const char *)p, n, &id);
        size_t u = strnlen(id.pod_uid, sizeof(id.pod_uid));
        if ((u != 0 && u != 36) ||
            strnlen(id.container_id, sizeof(id.container_id)) >= sizeof(id.container_id) ||
            strnlen(id.v2_path, sizeof(id.v2_path)) >= sizeof(id.v2_path) ||
            (!u && id.container_id[0]))
            abort();
        break;
    }
    default:
        break;
    }
    return 0;
}
