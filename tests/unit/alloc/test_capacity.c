/* SPDX-License-Identifier: Apache-2.0 */
/* Consumable capacity math (KEP-5075): consumed amount, rounding, policy, formatting. */
#include "alloc/alloc-internal.h"
#include "helpers.h"

/* A device with one capacity "c" = value and the given requestPolicy (JSON, may be ""). */
static struct alloc_slice *slice_with(const char *value, const char *policy_json)
{
    char buf[2048];
    snprintf(
        buf, sizeof(buf),
        "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d.example.com\",\"allNodes\":true,"
        "\"pool\":{\"name\":\"p\",\"resourceSliceCount\":1},\"devices\":[{\"name\":\"dev\","
        "\"allowMultipleAllocations\":true,\"capacity\":{\"c\":{\"value\":\"%s\"%s%s}}}]}}",
        value, *policy_json ? ",\"requestPolicy\":" : "", policy_json);
    json_error_t je;
    json_t *o = json_loads(buf, 0, &je);
    struct alloc_slice *s = NULL;
    struct gs_error err = {0};
    if (!o || alloc_decode_slice(o, &s, &err) < 0)
        diag("slice decode failed: %s %s", je.text, err.msg);
    json_decref(o);
    return s;
}

struct ccase {
    const char *name;
    const char *value;
    const char *policy;
    const char *request; /* NULL: not requested */
    const char *consumed;
    const char *verdict; /* "ok", "policy", "insufficient" */
    const char *detail;  /* expected detail (prefix) or NULL */
};

static const struct ccase cases[] = {
    {"unrequested takes the default", "100",
     "{\"default\":\"100\",\"validRange\":{\"min\":\"0\",\"max\":\"100\",\"step\":\"1\"}}", NULL,
     "100", "ok", NULL},
    {"unrequested without policy takes the whole value", "15Gi", "", NULL, "15Gi", "ok", NULL},
    {"unrequested with policy but no default takes the whole value", "15Gi",
     "{\"validRange\":{\"min\":\"1Mi\"}}", NULL, "15Gi", "ok", NULL},
    {"request without policy is taken as is", "15Gi", "", "3000Mi", "3000Mi", "ok", NULL},
    {"lab cores 30", "100",
     "{\"default\":\"100\",\"validRange\":{\"min\":\"0\",\"max\":\"100\",\"step\":\"1\"}}", "30",
     "30", "ok", NULL},
    {"lab memory 4Gi stays 4Gi", "15Gi",
     "{\"default\":\"15Gi\",\"validRange\":{\"min\":\"1Mi\",\"max\":\"15Gi\",\"step\":\"1Mi\"}}",
     "4Gi", "4Gi", "ok", NULL},
    {"below min rounds up to min", "15Gi", "{\"validRange\":{\"min\":\"1Mi\",\"step\":\"1Mi\"}}",
     "1", "1Mi", "ok", NULL},
    {"rounds up to min + k*step", "100", "{\"validRange\":{\"min\":\"10\",\"step\":\"4\"}}", "15",
     "18", "ok", NULL},
    {"memory rounds up to the next MiB", "15Gi",
     "{\"validRange\":{\"min\":\"1Mi\",\"step\":\"1Mi\"}}", "1000000", "1Mi", "ok", NULL},
    {"1.5Gi with MiB steps", "15Gi", "{\"validRange\":{\"min\":\"1Mi\",\"step\":\"1Mi\"}}", "1.5Gi",
     "1536Mi", "ok", NULL},
    {"no step keeps the request", "100", "{\"validRange\":{\"min\":\"10\"}}", "33", "33", "ok",
     NULL},
    {"above max is a policy violation", "15Gi",
     "{\"default\":\"15Gi\",\"validRange\":{\"min\":\"1Mi\",\"max\":\"15Gi\",\"step\":\"1Mi\"}}",
     "20Gi", "20Gi", "policy", "c: 20Gi above max 15Gi"},
    {"validValues rounds up to the smallest valid value", "8Gi",
     "{\"validValues\":[\"1Gi\",\"2Gi\",\"4Gi\"]}", "3Gi", "4Gi", "ok", NULL},
    {"validValues exact", "8Gi", "{\"validValues\":[\"1Gi\",\"2Gi\",\"4Gi\"]}", "2Gi", "2Gi", "ok",
     NULL},
    {"above every valid value is a policy violation", "8Gi",
     "{\"validValues\":[\"1Gi\",\"2Gi\",\"4Gi\"]}", "5Gi", "5Gi", "policy",
     "c: 5Gi is not one of the valid values"},
    {"the default is always allowed", "8Gi",
     "{\"default\":\"3Gi\",\"validValues\":[\"1Gi\",\"2Gi\"]}", NULL, "3Gi", "ok", NULL},
    {"more than the value is insufficient", "100", "", "101", "101", "insufficient",
     "c: need 101, free 100"},
    {"exactly the value fits", "100", "", "100", "100", "ok", NULL},
};

static void test_cases(void)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(cases); i++) {
        const struct ccase *c = &cases[i];
        struct alloc_slice *s = slice_with(c->value, c->policy);
        if (!ok(s != NULL, "%s: slice decodes", c->name))
            continue;
        struct alloc_usage usage = {0};
        s->dev[0].usage = &usage;
        struct alloc_request rq = {.name = "r"};
        struct alloc_cap_request cr = {.name = "c"};
        struct gs_error err = {0};
        if (c->request) {
            alloc_qty_parse(c->request, &cr.q, &err);
            rq.capreq = &cr;
            rq.n_capreq = 1;
        }
        struct alloc_qty cons[4];
        struct alloc_cap_check chk;
        int r = alloc_capacity_check(&rq, &s->dev[0], NULL, cons, &chk, &err);
        is_int(r, 0, "%s: check runs", c->name);
        char buf[64];
        alloc_qty_format(&cons[0], buf, sizeof(buf));
        if (!ok(strcmp(buf, c->consumed) == 0, "%s: consumes %s", c->name, c->consumed))
            diag("  got %s", buf);
        const char *v = chk.verdict == ALLOC_CAP_OK             ? "ok"
                        : chk.verdict == ALLOC_CAP_POLICY       ? "policy"
                        : chk.verdict == ALLOC_CAP_INSUFFICIENT ? "insufficient"
                                                                : "missing";
        if (!ok(strcmp(v, c->verdict) == 0, "%s: verdict %s", c->name, c->verdict))
            diag("  got %s (%s)", v, chk.detail);
        if (c->detail && !ok(strcmp(chk.detail, c->detail) == 0, "%s: detail", c->name))
            diag("  got \"%s\", want \"%s\"", chk.detail, c->detail);
        alloc_slice_free(s);
    }
}

static void test_sum_with_usage(void)
{
    struct alloc_slice *s = slice_with(
        "100",
        "{\"default\":\"100\",\"validRange\":{\"min\":\"0\",\"max\":\"100\",\"step\":\"1\"}}");
    if (!s)
        return;
    struct alloc_usage_cap uc = {.fq = "d.example.com/c",
                                 .q = alloc_qty_from_int(60, GS_QUANTITY_DECIMAL_SI)};
    struct alloc_usage usage = {.shared = 2, .n = 1, .cap = &uc};
    s->dev[0].usage = &usage;
    struct alloc_request rq = {.name = "r"};
    struct alloc_cap_request cr = {.name = "c"};
    struct gs_error err = {0};
    struct alloc_qty cons[1], pending[1] = {alloc_qty_from_int(0, GS_QUANTITY_DECIMAL_SI)};
    struct alloc_cap_check chk;
    rq.capreq = &cr;
    rq.n_capreq = 1;
    alloc_qty_parse("40", &cr.q, &err);
    alloc_capacity_check(&rq, &s->dev[0], pending, cons, &chk, &err);
    is_int(chk.verdict, ALLOC_CAP_OK,
           "40 fits beside 60 in use: the sum reaches the value exactly");
    alloc_qty_parse("80", &cr.q, &err);
    alloc_capacity_check(&rq, &s->dev[0], pending, cons, &chk, &err);
    is_int(chk.verdict, ALLOC_CAP_INSUFFICIENT, "80 does not fit beside 60 in use");
    is_str(chk.detail, "c: need 80, free 40", "message names need and free");
    pending[0] = alloc_qty_from_int(30, GS_QUANTITY_DECIMAL_SI);
    alloc_qty_parse("20", &cr.q, &err);
    alloc_capacity_check(&rq, &s->dev[0], pending, cons, &chk, &err);
    is_int(chk.verdict, ALLOC_CAP_INSUFFICIENT, "amounts taken earlier in the same search count");
    is_str(chk.detail, "c: need 20, free 10", "free excludes what this claim already takes");
    /* A request for a capacity the device lacks: the device is not eligible. */
    struct alloc_cap_request cr2 = {.name = "bandwidth"};
    alloc_qty_parse("1", &cr2.q, &err);
    rq.capreq = &cr2;
    alloc_capacity_check(&rq, &s->dev[0], NULL, cons, &chk, &err);
    is_int(chk.verdict, ALLOC_CAP_MISSING,
           "requesting an unknown capacity makes the device ineligible");
    /* "c" and "d.example.com/c" name the same capacity. */
    struct alloc_cap_request cr3[2] = {{.name = "c"}, {.name = "d.example.com/c"}};
    alloc_qty_parse("1", &cr3[0].q, &err);
    alloc_qty_parse("1", &cr3[1].q, &err);
    rq.capreq = &cr3[1];
    alloc_capacity_check(&rq, &s->dev[0], NULL, cons, &chk, &err);
    is_int(chk.verdict, ALLOC_CAP_OK,
           "a driver-qualified request name matches the unqualified capacity");
    rq.capreq = cr3;
    rq.n_capreq = 2;
    gs_error_clear(&err);
    is_int(alloc_capacity_check(&rq, &s->dev[0], NULL, cons, &chk, &err), -EINVAL,
           "requesting one capacity under both spellings is an error");
    ok(strstr(err.msg, "requested twice") != NULL, "error says requested twice: %s", err.msg);
    alloc_slice_free(s);
}

static void test_qty(void)
{
    struct alloc_qty q;
    struct gs_error err = {0};
    char buf[64];
    is_int(alloc_qty_parse("141Gi", &q, &err), 0, "141Gi parses");
    is_int(alloc_qty_value(&q), 151397597184LL, "141Gi is 151397597184 bytes");
    alloc_qty_format(&q, buf, sizeof(buf));
    is_str(buf, "141Gi", "141Gi formats back");
    is_int(alloc_qty_parse("500m", &q, &err), 0, "500m parses");
    is_int(alloc_qty_value(&q), 1, "Value() rounds 500m up to 1");
    ok(alloc_qty_parse("15Qi", &q, &err) < 0, "15Qi is refused");
    is_int(alloc_qty_parse("1E", &q, &err), 0, "1E parses (10^18, held exactly in 128 bits)");
    alloc_qty_format(&q, buf, sizeof(buf));
    is_str(buf, "1E", "1E formats back");
}

int main(void)
{
    tap_plan_auto();
    test_cases();
    test_sum_with_usage();
    test_qty();
    return tap_done();
}
