/* SPDX-License-Identifier: Apache-2.0 */
/* AdmissionReview decode (every field checked, messages name it) and encode. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "webhook/review.h"

static int decode(const char *text, struct wh_review *rv, struct gs_error *err)
{
    return wh_review_decode(text, strlen(text), rv, err);
}

#define HEAD "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","

static void bad(const char *text, const char *want)
{
    struct wh_review rv;
    struct gs_error err = {0};
    is_int(decode(text, &rv, &err), -EINVAL, "refused: %s", want);
    is_str(err.msg, want, "message");
    ok(rv.root == NULL, "nothing kept on failure");
}

int main(void)
{
    tap_plan_auto();
    struct wh_review rv;
    struct gs_error err = {0};
    is_int(decode(HEAD "\"request\":{\"uid\":\"u1\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                       "\"kind\":\"Pod\"},\"resource\":{\"resource\":\"pods\"},\"namespace\":"
                       "\"ns\",\"operation\":\"CREATE\",\"dryRun\":true,\"object\":{\"a\":1}}}",
                  &rv, &err),
           0, "a pod CREATE decodes");
    is_str(rv.uid, "u1", "uid");
    is_str(rv.namespace, "ns", "namespace");
    is_str(rv.resource, "pods", "resource");
    ok(rv.dry_run, "dryRun");
    ok(wh_review_is_pod_create(&rv), "is a pod create");
    wh_review_fini(&rv);
    wh_review_fini(&rv);
    is_int(decode(HEAD "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"apps\",\"kind\":\"Pod\"},"
                       "\"operation\":\"CREATE\",\"object\":{}}}",
                  &rv, &err),
           0, "apps/Pod");
    ok(!wh_review_is_pod_create(&rv), "a Pod kind of another group is not ours");
    wh_review_fini(&rv);
    is_int(decode(HEAD "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"Pod\"},"
                       "\"operation\":\"DELETE\",\"object\":null}}",
                  &rv, &err),
           0, "DELETE");
    ok(!wh_review_is_pod_create(&rv) && rv.object == NULL, "DELETE with null object: pass");
    wh_review_fini(&rv);

    bad("{", "AdmissionReview: invalid JSON at line 1, column 1: string or '}' expected near end "
             "of file");
    bad("{\"kind\":\"AdmissionReview\"}",
        "AdmissionReview: apiVersion \"\" is not admission.k8s.io/v1");
    bad("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\"}",
        "AdmissionReview: kind \"Review\" is not AdmissionReview");
    bad("{\"apiVersion\":7}", "AdmissionReview: apiVersion is not a string");
    bad(HEAD "\"request\":[]}", "AdmissionReview: request is missing or not an object");
    bad(HEAD "\"request\":{\"uid\":\"u\"}}",
        "AdmissionReview: request.kind is missing or not an object");
    bad(HEAD "\"request\":{\"uid\":\"\",\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\"}}",
        "AdmissionReview: request.uid is missing or empty");
    bad(HEAD "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\","
             "\"dryRun\":\"yes\"}}",
        "AdmissionReview: request.dryRun is not a boolean");
    bad(HEAD "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\","
             "\"resource\":5}}",
        "AdmissionReview: request.resource is not an object");
    bad(HEAD "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":3},\"operation\":\"CREATE\"}}",
        "AdmissionReview: request.kind.kind is not a string");
    bad("{\"a\":1,\"a\":2}",
        "AdmissionReview: invalid JSON at line 1, column 10: duplicate object key near '\"a\"'");
    is_int(wh_review_decode("{}", WH_REVIEW_MAX_BYTES + 1, &rv, &err), -E2BIG, "over 3 MiB");

    static const char *const b64[][2] = {{"", ""},
                                         {"f", "Zg=="},
                                         {"fo", "Zm8="},
                                         {"foo", "Zm9v"},
                                         {"foob", "Zm9vYg=="},
                                         {"fooba", "Zm9vYmE="},
                                         {"foobar", "Zm9vYmFy"}};
    for (size_t i = 0; i < sizeof(b64) / sizeof(b64[0]); i++) {
        char *e = wh_base64_encode((const unsigned char *)b64[i][0], strlen(b64[i][0]));
        is_str(e, b64[i][1], "base64 \"%s\" (RFC 4648)", b64[i][0]);
        free(e);
    }

    struct wh_review_answer deny = {
        .allowed = false, .code = 422, .reason = "Invalid", .message = "bad \xff value"};
    char *text = wh_review_encode("u9", &deny, NULL);
    is_str(text,
           "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
           "\"response\":{\"uid\":\"u9\",\"allowed\":false,\"status\":{\"code\":422,"
           "\"reason\":\"Invalid\",\"message\":\"bad ? value\"}}}",
           "denial encoded (invalid UTF-8 in the message replaced)");
    free(text);
    json_t *patch = json_pack("[{s:s,s:s}]", "op", "remove", "path", "/x");
    json_t *warn = json_pack("[s]", "careful");
    struct wh_review_answer allow = {.allowed = true, .patch = patch, .warnings = warn};
    size_t len = 0;
    text = wh_review_encode("u", &allow, &len);
    is_str(text,
           "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
           "\"response\":{\"uid\":\"u\",\"allowed\":true,\"patchType\":\"JSONPatch\","
           "\"patch\":\"W3sib3AiOiJyZW1vdmUiLCJwYXRoIjoiL3gifV0=\",\"warnings\":"
           "[\"careful\"]}}",
           "patch base64-encoded, warnings kept");
    is_int(len, strlen(text), "length reported");
    free(text);
    json_decref(patch);
    json_decref(warn);
    return tap_done();
}
