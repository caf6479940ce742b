/* SPDX-License-Identifier: Apache-2.0 */
/* Filter failure reasons in HAMi's text (pkg/device/common/common.go, v2.10.0). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hami/hami-internal.h"
#include "hami/hami.h"

static int find(const struct hami_reasons *rs, const char *name)
{
    for (size_t i = 0; i < rs->n; i++)
        if (strcmp(rs->r[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int slot(struct hami_reasons *rs, const char *name)
{
    int i = find(rs, name);
    if (i >= 0)
        return i;
    if (rs->n == HAMI_REASONS_MAX)
        return -1;
    snprintf(rs->r[rs->n].name, sizeof(rs->r[rs->n].name), "%s", name);
    rs->r[rs->n].count = 0;
    return (int)rs->n++;
}

void hami_reasons_add(struct hami_reasons *rs, const char *name, int count)
{
    int i = slot(rs, name);
    if (i >= 0)
        rs->r[i].count += count;
}

void hami_reasons_set(struct hami_reasons *rs, const char *name, int count)
{
    int i = slot(rs, name);
    if (i >= 0)
        rs->r[i].count = count;
}

static int strp_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* GenReason: fmt.Sprintf("%d/%d %s", cnt, cards, r) per reason, sort.Strings, ", ". */
size_t hami_reasons_format(const struct hami_reasons *rs, int cards, char *buf, size_t len)
{
    char item[HAMI_REASONS_MAX][80];
    const char *p[HAMI_REASONS_MAX];
    for (size_t i = 0; i < rs->n; i++) {
        snprintf(item[i], sizeof(item[i]), "%d/%d %s", rs->r[i].count, cards, rs->r[i].name);
        p[i] = item[i];
    }
    qsort(p, rs->n, sizeof(p[0]), strp_cmp);
    size_t w = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < rs->n && w + 1 < len; i++) {
        int k = snprintf(buf + w, len - w, "%s%s", i ? ", " : "", p[i]);
        if (k < 0)
            break;
        w += (size_t)k < len - w ? (size_t)k : len - w - 1;
    }
    return w;
}

/* ParseReason: split on ", ", each fmt.Sscanf("%d/%d %s"); entries that fail are skipped. */
int hami_reasons_parse(const char *s, struct hami_reasons *out)
{
    *out = (struct hami_reasons){0};
    for (const char *e = s; e && *e;) {
        const char *end = strstr(e, ", ");
        size_t l = end ? (size_t)(end - e) : strlen(e);
        char item[128];
        if (l < sizeof(item)) {
            memcpy(item, e, l);
            item[l] = '\0';
            /* fmt.Sscanf("%d/%d %s"): count, '/', total, spaces, a word. */
            char *p = item, *q;
            long cnt = strtol(p, &q, 10);
            bool okay = q != p && *q == '/';
            if (okay) {
                p = q + 1;
                (void)strtol(p, &q, 10);
                okay = q != p && *q == ' ';
            }
            if (okay) {
                p = q;
                while (*p == ' ')
                    p++;
                size_t wl = strcspn(p, " \t\n");
                okay = wl > 0 && wl < sizeof(out->r[0].name) && cnt >= INT_MIN && cnt <= INT_MAX;
                if (okay) {
                    char name[sizeof(out->r[0].name)];
                    memcpy(name, p, wl);
                    name[wl] = '\0';
                    hami_reasons_set(out, name, (int)cnt);
                }
            }
        }
        e = end ? end + 2 : NULL;
    }
    return (int)out->n;
}
