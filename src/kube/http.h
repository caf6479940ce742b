/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP client on libcurl (see docs/internals/k8s-client.md).
 *
 *   struct gs_http_config cfg = { .ca_file = "/run/ca.crt", .timeout_ms = 10000 };
 *   struct gs_http_client *c = gs_http_client_new(&cfg, &err);
 *   struct gs_http_request req = { .method = "GET", .url = "https://10.0.0.1:6443/version" };
 *   struct gs_http_response resp = {0};
 *   if (gs_http_do(c, &req, &resp, &err) == 0) use(resp.status, resp.body, resp.body_len);
 *   gs_http_response_fini(&resp);
 *   gs_http_client_free(c);
 *
 * - A client holds the TLS material and limits; it may be used from several threads at once (each
 *   call borrows a curl handle from a small pool, so connections are reused).
 * - gs_http_do() returns 0 whenever an HTTP response arrived, whatever its status; a negative code
 *   only for transport failures: -ETIMEDOUT (connect or total timeout), -ECONNREFUSED (could not
 *   connect), -EPROTO (TLS failure), -E2BIG (response larger than the maximum: "response too big"),
 *   -ECANCELED (cancelled through a struct gs_http_cancel), -EINVAL (bad argument), -EIO (other).
 * - Response bodies are bounded by max_response_bytes and always NUL-terminated.
 */
#ifndef GS_COMMON_HTTP_H
#define GS_COMMON_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define GS_HTTP_DEFAULT_CONNECT_TIMEOUT_MS 5000L
#define GS_HTTP_DEFAULT_TIMEOUT_MS         30000L
#define GS_HTTP_DEFAULT_MAX_RESPONSE       (16u * 1024u * 1024u)

struct gs_http_config {
    /* TLS trust: a PEM file, or PEM bytes in memory (certificate-authority-data). Neither = the
     * system store. insecure_skip_tls_verify disables peer and host verification. */
    const char *ca_file;
    const char *ca_pem;
    size_t ca_pem_len;
    bool insecure_skip_tls_verify;
    /* Client certificate and key, as files or as PEM bytes in memory. */
    const char *cert_file;
    const char *cert_pem;
    size_t cert_pem_len;
    const char *key_file;
    const char *key_pem;
    size_t key_pem_len;
    /* Sent as "Authorization: Bearer <token>" unless a request carries its own token. */
    const char *bearer_token;
    /* Connect through this unix socket instead of TCP (the URL still names host and path). */
    const char *unix_socket;
    long connect_timeout_ms;   /* 0 = GS_HTTP_DEFAULT_CONNECT_TIMEOUT_MS */
    long timeout_ms;           /* whole request; 0 = GS_HTTP_DEFAULT_TIMEOUT_MS, <0 = none */
    size_t max_response_bytes; /* 0 = GS_HTTP_DEFAULT_MAX_RESPONSE */
    const char *user_agent;    /* NULL = "gpuslice/<version>" */
};

/*
 * Cancellation token: gs_http_cancel_trigger() from any thread makes the request that uses it (now
 * or later) return -ECANCELED promptly, and wakes gs_http_cancel_sleep(). Re-arm with _reset.
 */
struct gs_http_cancel;
struct gs_http_cancel *gs_http_cancel_new(void);
void gs_http_cancel_free(struct gs_http_cancel *c);
void gs_http_cancel_trigger(struct gs_http_cancel *c);
void gs_http_cancel_reset(struct gs_http_cancel *c);
bool gs_http_cancel_is_triggered(const struct gs_http_cancel *c);
/* Sleep up to `ms` milliseconds; returns 0 after the full sleep or -ECANCELED when triggered. */
int gs_http_cancel_sleep(struct gs_http_cancel *c, uint64_t ms);

/*
 * Streaming consumer: when a request has on_data, body bytes are handed to it as they arrive, with
 * the response's HTTP status, and are not collected in the response (max_response_bytes does not
 * apply; the consumer bounds what it keeps). Return 0 to continue, a negative code to abort the
 * transfer: gs_http_do() then returns that code. Called only for the final response's body.
 */
typedef int (*gs_http_data_fn)(void *user, long status, const char *data, size_t len);

struct gs_http_request {
    const char *method;         /* "GET" (NULL), "POST", "PUT", "PATCH", "DELETE", ... */
    const char *url;            /* absolute http:// or https:// URL */
    const char *const *headers; /* NULL-terminated "Name: value" list, may be NULL */
    const char *body;           /* may be NULL */
    size_t body_len;
    const char *bearer_token;  /* overrides the client's token for this request; NULL = client's */
    long timeout_ms;           /* 0 = client's; <0 = no total timeout (watches) */
    size_t max_response_bytes; /* 0 = client's */
    gs_http_data_fn on_data;   /* streaming mode, see above */
    void *user;
    struct gs_http_cancel *cancel; /* may be NULL */
};

struct gs_http_response {
    long status; /* HTTP status code */
    char *body;  /* NUL-terminated, owned; NULL in streaming mode */
    size_t body_len;
    int64_t retry_after_ms; /* Retry-After header in ms (seconds or HTTP date); -1 if absent */
    char content_type[128]; /* Content-Type header, "" if absent */
};

struct gs_http_client *gs_http_client_new(const struct gs_http_config *cfg, struct gs_error *err);
void gs_http_client_free(struct gs_http_client *c);

/* Perform one request. See the return codes above. `resp` must be zeroed or fini'd before. */
int gs_http_do(struct gs_http_client *c, const struct gs_http_request *req,
               struct gs_http_response *resp, struct gs_error *err);
void gs_http_response_fini(struct gs_http_response *resp);

/* Percent-encode `s` for a query value into a new string (NULL on ENOMEM). */
char *gs_http_escape(const char *s);

#endif /* GS_COMMON_HTTP_H */
