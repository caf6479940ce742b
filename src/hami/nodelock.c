/* SPDX-License-Identifier: Apache-2.0 */
/* "hami.io/mutex.lock": HAMi's node lock value (pkg/util/nodelock/nodelock.go, v2.10.0). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "hami/hami.h"

/* GenerateNodeLockKeyByPod: time.Now().Format(time.RFC3339) + ",<ns>,<pod>". HAMi writes its
 * local time with the zone offset; we write UTC ("Z"), the same instant in the same layout. */
void hami_lock_value(char *buf, size_t len, int64_t unix_s, const char *ns, const char *pod)
{
    char ts[32];
    gs_rfc3339_utc(unix_s, ts, sizeof(ts));
    snprintf(buf, len, "%s,%s,%s", ts, ns, pod);
}

/* ParseNodeLock: no ',' → a bare RFC 3339 time; else exactly 3 comma-separated parts
 * "<time>,<ns>,<pod>". */
int hami_lock_parse(const char *value, struct hami_lock *out, struct gs_error *err)
{
    *out = (struct hami_lock){0};
    if (!value)
        return gs_error_set(err, -EINVAL, "%s: missing", HAMI_ANN_NODE_LOCK);
    const char *c1 = strchr(value, ',');
    if (!c1) {
        if (hami_rfc3339_parse(value, strlen(value), &out->unix_s) < 0)
            return gs_error_set(err, -EINVAL, "%s: \"%.64s\" is not an RFC 3339 time",
                                HAMI_ANN_NODE_LOCK, value);
        return 0;
    }
    const char *c2 = strchr(c1 + 1, ',');
    if (!c2 || strchr(c2 + 1, ','))
        return gs_error_set(err, -EINVAL,
                            "%s: \"%.128s\": expected \"<RFC 3339 time>,<namespace>,<pod>\"",
                            HAMI_ANN_NODE_LOCK, value);
    size_t nl = (size_t)(c2 - c1 - 1), pl = strlen(c2 + 1);
    if (nl >= sizeof(out->ns) || pl >= sizeof(out->pod))
        return gs_error_set(err, -EINVAL, "%s: namespace or pod name too long", HAMI_ANN_NODE_LOCK);
    if (hami_rfc3339_parse(value, (size_t)(c1 - value), &out->unix_s) < 0)
        return gs_error_set(err, -EINVAL, "%s: \"%.*s\" is not an RFC 3339 time",
                            HAMI_ANN_NODE_LOCK, (int)(c1 - value) > 64 ? 64 : (int)(c1 - value),
                            value);
    memcpy(out->ns, c1 + 1, nl);
    out->ns[nl] = '\0';
    memcpy(out->pod, c2 + 1, pl);
    out->pod[pl] = '\0';
    return 0;
}

/* setupNodeLockTimeout: HAMI_NODELOCK_EXPIRE by time.ParseDuration, default 5 minutes. */
int64_t hami_lock_expiry_s(void)
{
    const char *s = getenv(HAMI_ENV_NODELOCK_EXPIRE);
    int64_t ns;
    if (s && *s && hami_go_duration_parse(s, &ns) == 0)
        return ns / 1000000000;
    return HAMI_NODELOCK_EXPIRE_DEFAULT_S;
}
