/* SPDX-License-Identifier: Apache-2.0 */
/* HAMi's per-card annotation checks (v2.10.0 pkg/device/devices.go CheckUUID, CheckType). */
#include <ctype.h>
#include <string.h>

#include "hami/hami.h"

/* Each comma-separated, trimmed, non-empty item of list: does match(item) hold for one? */
static bool any_item(const char *list, bool (*match)(const char *item, size_t len, const char *v),
                     const char *v)
{
    for (const char *p = list;;) {
        const char *c = strchr(p, ',');
        const char *b = p, *e = c ? c : p + strlen(p);
        while (b < e && isspace((unsigned char)*b))
            b++;
        while (e > b && isspace((unsigned char)e[-1]))
            e--;
        if (match(b, (size_t)(e - b), v))
            return true;
        if (!c)
            return false;
        p = c + 1;
    }
}

static bool blank(const char *s)
{
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

static bool uuid_eq(const char *item, size_t len, const char *id)
{
    return strlen(id) == len && memcmp(item, id, len) == 0;
}

/* strings.Contains(strings.ToUpper(cardType), strings.ToUpper(t)), t non-empty. */
static bool type_contains(const char *item, size_t len, const char *type)
{
    if (len == 0)
        return false;
    for (const char *p = type; *p; p++) {
        size_t k = 0;
        while (k < len && p[k] && toupper((unsigned char)p[k]) == toupper((unsigned char)item[k]))
            k++;
        if (k == len)
            return true;
    }
    return false;
}

bool hami_check_uuid(const char *use, const char *nouse, const char *id)
{
    if (use && !blank(use) && !any_item(use, uuid_eq, id))
        return false;
    if (nouse && !blank(nouse) && any_item(nouse, uuid_eq, id))
        return false;
    return true;
}

bool hami_check_type(const char *use, const char *nouse, const char *type)
{
    if (use && !blank(use) && !any_item(use, type_contains, type))
        return false;
    if (nouse && !blank(nouse) && any_item(nouse, type_contains, type))
        return false;
    return true;
}
