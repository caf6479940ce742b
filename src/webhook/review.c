/* SPDX-License-Identifier: Apache-2.0 */
/* AdmissionReview v1 decode (untrusted input) and encode. */
#include "webhook/review.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"
#include "base/macros.h"
#include "webhook/fastjson.h"
#include "webhook/selector.h"

void wh_review_fini(struct wh_review *r)
{
    if (!r)
        return;
    json_decref(r->root);
    *r = (struct wh_review){0};
}

/* Optional string member: "" when absent or null; -EINVAL when another type. */
static int opt_string(const json_t *obj, const char *key, const char *field, const char **out,
                      struct gs_error *err)
{
    const json_t *v = json_object_get(obj, key);
    *out = "";
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return gs_error_set(err, -EINVAL, "AdmissionReview: %s is not a string", field);
    *out = json_string_value(v);
    return 0;
}

static int req_string(const json_t *obj, const char *key, const char *field, const char **out,
                      struct gs_error *err)
{
    int r = opt_string(obj, key, field, out, err);
    if (r == 0 && !**out)
        return gs_error_set(err, -EINVAL, "AdmissionReview: %s is missing or empty", field);
    return r;
}

int wh_review_decode(const char *body, size_t len, struct wh_review *out, struct gs_error *err)
{
    int r;
    *out = (struct wh_review){0};
    /* The fast parser takes what it handles exactly as jansson would; jansson the rest. */
    json_t *root = len <= WH_REVIEW_MAX_BYTES ? wh_fastjson_parse(body, len) : NULL;
    if (!root)
        root = gs_json_parse(body, len, WH_REVIEW_MAX_BYTES, err);
    if (!root) {
        gs_error_prefix(err, "AdmissionReview: ");
        return err ? err->code : -EINVAL;
    }
    out->root = root;
    if (!json_is_object(root)) {
        r = gs_error_set(err, -EINVAL, "AdmissionReview: the body is not a JSON object");
        goto fail;
    }
    const char *api = NULL, *kind = NULL;
    if ((r = opt_string(root, "apiVersion", "apiVersion", &api, err)) < 0 ||
        (r = opt_string(root, "kind", "kind", &kind, err)) < 0)
        goto fail;
    if (strcmp(api, WH_REVIEW_API_VERSION) != 0) {
        r = gs_error_set(err, -EINVAL, "AdmissionReview: apiVersion \"%.64s\" is not %s", api,
                         WH_REVIEW_API_VERSION);
        goto fail;
    }
    if (strcmp(kind, "AdmissionReview") != 0) {
        r = gs_error_set(err, -EINVAL, "AdmissionReview: kind \"%.64s\" is not AdmissionReview",
                         kind);
        goto fail;
    }
    const json_t *req = json_object_get(root, "request");
    if (!json_is_object(req)) {
        r = gs_error_set(err, -EINVAL, "AdmissionReview: request is missing or not an object");
        goto fail;
    }
    const json_t *gvk = json_object_get(req, "kind");
    if (!json_is_object(gvk)) {
        r = gs_error_set(err, -EINVAL, "AdmissionReview: request.kind is missing or not an object");
        goto fail;
    }
    const json_t *gvr = json_object_get(req, "resource");
    if (gvr && !json_is_object(gvr) && !json_is_null(gvr)) {
        r = gs_error_set(err, -EINVAL, "AdmissionReview: request.resource is not an object");
        goto fail;
    }
    if ((r = req_string(req, "uid", "request.uid", &out->uid, err)) < 0 ||
        (r = req_string(req, "operation", "request.operation", &out->operation, err)) < 0 ||
        (r = opt_string(gvk, "group", "request.kind.group", &out->group, err)) < 0 ||
        (r = req_string(gvk, "kind", "request.kind.kind", &out->kind, err)) < 0 ||
        (r = opt_string(gvr, "resource", "request.resource.resource", &out->resource, err)) < 0 ||
        (r = opt_string(req, "subResource", "request.subResource", &out->subresource, err)) < 0 ||
        (r = opt_string(req, "namespace", "request.namespace", &out->namespace, err)) < 0)
        goto fail;
    const json_t *dry = json_object_get(req, "dryRun");
    if (dry && !json_is_boolean(dry) && !json_is_null(dry)) {
        r = gs_error_set(err, -EINVAL, "AdmissionReview: request.dryRun is not a boolean");
        goto fail;
    }
    out->dry_run = json_is_true(dry);
    const json_t *obj = json_object_get(req, "object");
    if (obj && !json_is_object(obj) && !json_is_null(obj)) {
        r = gs_error_set(err, -EINVAL, "AdmissionReview: request.object is not an object");
        goto fail;
    }
    out->object = json_is_object(obj) ? obj : NULL;
    return 0;
fail:
    wh_review_fini(out);
    return r;
}

bool wh_review_is_pod_create(const struct wh_review *r)
{
    return strcmp(r->operation, "CREATE") == 0 && strcmp(r->group, "") == 0 &&
           strcmp(r->kind, "Pod") == 0 && strcmp(r->subresource, "") == 0 && r->object;
}

char *wh_base64_encode(const unsigned char *data, size_t len)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
        return NULL;
    size_t olen = (len + 2) / 3 * 4;
    char *out = malloc(olen + 1), *o = out;
    if (!out)
        return NULL;
    size_t i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];
        *o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63], *o++ = tbl[(v >> 6) & 63];
        *o++ = tbl[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < len ? (uint32_t)data[i + 1] << 8 : 0);
        *o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63];
        *o++ = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

/* A growing output buffer; `failed` latches ENOMEM/overflow. */
struct out {
    char *p;
    size_t len, cap;
    bool failed;
};

static void put_n(struct out *o, const char *s, size_t n)
{
    if (o->failed)
        return;
    if (n > SIZE_MAX / 2 - o->len) {
        o->failed = true;
        return;
    }
    if (o->len + n + 1 > o->cap) {
        size_t cap = GS_MAX(o->cap * 2, o->len + n + 1);
        char *np = realloc(o->p, cap);
        if (!np) {
            o->failed = true;
            return;
        }
        o->p = np, o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void put(struct out *o, const char *s)
{
    put_n(o, s, strlen(s));
}

/* `s` (valid UTF-8) as a JSON string literal. */
static void put_json_string(struct out *o, const char *s)
{
    put_n(o, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put_n(o, run, (size_t)(s - run));
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof(esc), "\\%c", c);
        else if (c == '\n')
            snprintf(esc, sizeof(esc), "\\n");
        else
            snprintf(esc, sizeof(esc), "\\u%04x", c);
        put(o, esc);
        run = s + 1;
    }
    put_n(o, run, (size_t)(s - run));
    put_n(o, "\"", 1);
}

/* Written directly rather than through a jansson tree: one serialisation (the patch's) per
 * answer instead of three (bench/webhook). */
char *wh_review_encode(const char *uid, const struct wh_review_answer *a, size_t *len)
{
    struct out o = {.p = malloc(1024), .cap = 1024};
    if (!o.p)
        return NULL;
    o.p[0] = '\0';
    put(&o, "{\"apiVersion\":\"" WH_REVIEW_API_VERSION "\",\"kind\":\"AdmissionReview\","
            "\"response\":{\"uid\":");
    put_json_string(&o, uid ? uid : "");
    put(&o, a->allowed ? ",\"allowed\":true" : ",\"allowed\":false");
    if (a->allowed && a->patch && json_array_size(a->patch)) {
        _cleanup_free_ char *text = json_dumps(a->patch, JSON_COMPACT);
        _cleanup_free_ char *b64 =
            text ? wh_base64_encode((const unsigned char *)text, strlen(text)) : NULL;
        if (!b64)
            o.failed = true;
        put(&o, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        put(&o, b64 ? b64 : "");
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): b64 is _cleanup_ (layers.md Lint) */
        put(&o, "\"");
    }
    if (!a->allowed) {
        char msg[GS_ERROR_MSG_MAX * 2], code[32];
        snprintf(msg, sizeof(msg), "%s", a->message ? a->message : "");
        wh_utf8_sanitize(msg);
        snprintf(code, sizeof(code), "%d", a->code ? a->code : 403);
        put(&o, ",\"status\":{\"code\":");
        put(&o, code);
        put(&o, ",\"reason\":");
        put_json_string(&o, a->reason ? a->reason : "Forbidden");
        put(&o, ",\"message\":");
        put_json_string(&o, msg);
        put(&o, "}");
    }
    if (a->warnings && json_array_size(a->warnings)) {
        _cleanup_free_ char *w = json_dumps(a->warnings, JSON_COMPACT);
        if (!w)
            o.failed = true;
        put(&o, ",\"warnings\":");
        put(&o, w ? w : "[]");
    }
    put(&o, "}}");
    if (o.failed) {
        free(o.p);
        return NULL;
    }
    if (len)
        *len = o.len;
    return o.p;
}
