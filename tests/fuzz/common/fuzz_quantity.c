/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Quantity and duration parsers on arbitrary bytes. Invariants checked (abort on violation):
 * the canonical form of anything accepted parses back to the same value and is a fixed point;
 * Value()/MilliValue() agree with comparison; adding and subtracting never wraps.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/quantity.h"

#define MAX_INPUT 4096

static void check(int cond)
{
    if (!cond)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    char s[MAX_INPUT + 1];
    memcpy(s, data, size);
    s[size] = '\0';

    struct gs_quantity q, back, sum, diff;
    struct gs_error err = {0};
    int r = gs_quantity_parse(s, &q, &err);
    if (r < 0) {
        check(err.code == r && err.msg[0] != '\0');
        check(strlen(err.msg) < sizeof(err.msg));
    } else {
        char buf[GS_QUANTITY_STR_MAX], buf2[GS_QUANTITY_STR_MAX];
        check(gs_quantity_format(&q, buf, sizeof(buf)) == 0);
        check(gs_quantity_parse(buf, &back, NULL) == 0);
        check(gs_quantity_cmp(&q, &back) == 0);
        /* The text alone does not carry the format family ("312.5Ki" prints as "320000", which
         * reads back as DecimalSI "320k", in Kubernetes too): compare within the same family. */
        back.format = q.format;
        check(gs_quantity_format(&back, buf2, sizeof(buf2)) == 0);
        check(strcmp(buf, buf2) == 0);
        int64_t v, mv;
        check(gs_quantity_value(&q, &v) == 0);
        struct gs_quantity vq;
        gs_quantity_from_int64(v, GS_QUANTITY_DECIMAL_SI, &vq);
        /* Value() rounds away from zero */
        if (gs_quantity_sign(&q) >= 0)
            check(gs_quantity_cmp(&vq, &q) >= 0);
        else
            check(gs_quantity_cmp(&vq, &q) <= 0);
        if (gs_quantity_milli_value(&q, &mv) == 0) {
            struct gs_quantity mq;
            gs_quantity_from_milli(mv, GS_QUANTITY_DECIMAL_SI, &mq);
            check(gs_quantity_sign(&q) >= 0 ? gs_quantity_cmp(&mq, &q) >= 0
                                            : gs_quantity_cmp(&mq, &q) <= 0);
        }
        if (gs_quantity_add(&q, &q, &sum) == 0) {
            check(gs_quantity_sub(&sum, &q, &diff) == 0);
            check(gs_quantity_cmp(&diff, &q) == 0);
        }
        check(gs_quantity_sub(&q, &q, &diff) == 0 && gs_quantity_is_zero(&diff));
    }

    int64_t ns;
    if (gs_parse_duration(s, &ns, NULL) == 0) {
        char d[64];
        int64_t ns2;
        gs_format_duration(ns, d, sizeof(d));
        check(gs_parse_duration(d, &ns2, NULL) == 0);
        check(ns == ns2);
    }
    return 0;
}
