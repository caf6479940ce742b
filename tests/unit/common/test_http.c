/* SPDX-License-Identifier: Apache-2.0 */
/* gs_http_*: statuses, bounded bodies, Retry-After, headers, timeouts, cancellation, streaming.
 * A tiny in-process server thread answers with canned raw responses. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kube/http.h"
#include "tap.h"

struct server {
    int lfd;
    int port;
    pthread_t thread;
    pthread_mutex_t mu;
    char *response; /* raw bytes to send for the next requests; NULL = hang */
    size_t response_len;
    bool stop;
    char last_request[8192];
    int requests;
};

static void *serve(void *arg)
{
    struct server *s = arg;

    for (;;) {
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        int fd;
        char req[8192];
        size_t len = 0;

        pthread_mutex_lock(&s->mu);
        bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            return NULL;
        if (poll(&p, 1, 50) <= 0)
            continue;
        fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        /* read headers and a Content-Length body */
        for (;;) {
            ssize_t n = recv(fd, req + len, sizeof(req) - 1 - len, 0);
            if (n <= 0)
                break;
            len += (size_t)n;
            req[len] = '\0';
            char *end = strstr(req, "\r\n\r\n");
            if (end) {
                char *cl = strcasestr(req, "Content-Length:");
                size_t want = (size_t)(end + 4 - req) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
                if (len >= want || len >= sizeof(req) - 1)
                    break;
            }
        }
        req[len] = '\0';
        pthread_mutex_lock(&s->mu);
        snprintf(s->last_request, sizeof(s->last_request), "%s", req);
        s->requests++;
        char *resp = s->response ? malloc(s->response_len) : NULL;
        size_t rlen = s->response_len;
        if (resp)
            memcpy(resp, s->response, rlen);
        pthread_mutex_unlock(&s->mu);
        if (resp) {
            size_t off = 0;
            while (off < rlen) {
                ssize_t n = send(fd, resp + off, rlen - off, MSG_NOSIGNAL);
                if (n <= 0)
                    break;
                off += (size_t)n;
            }
            free(resp);
        } else { /* hang until the client goes away or we stop */
            for (;;) {
                struct pollfd q = {.fd = fd, .events = POLLIN};
                char b[256];
                pthread_mutex_lock(&s->mu);
                stop = s->stop;
                pthread_mutex_unlock(&s->mu);
                if (stop || (poll(&q, 1, 50) > 0 && recv(fd, b, sizeof(b), 0) <= 0))
                    break;
            }
        }
        close(fd);
    }
}

static void set_response(struct server *s, const char *raw, size_t len)
{
    pthread_mutex_lock(&s->mu);
    free(s->response);
    s->response = NULL;
    if (raw) {
        s->response = malloc(len);
        memcpy(s->response, raw, len);
    }
    s->response_len = len;
    pthread_mutex_unlock(&s->mu);
}

static void set_body_response(struct server *s, int status, const char *extra_headers,
                              const char *body)
{
    char buf[4096];
    int n = snprintf(buf, sizeof(buf),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n%s\r\n%s",
                     status, strlen(body), extra_headers, body);
    set_response(s, buf, (size_t)n);
}

static int server_start(struct server *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);

    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(s->lfd, 16) < 0 || getsockname(s->lfd, (struct sockaddr *)&a, &al) < 0)
        return -1;
    s->port = ntohs(a.sin_port);
    return pthread_create(&s->thread, NULL, serve, s) == 0 ? 0 : -1;
}

static int server_start_unix(struct server *s, const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};

    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    unlink(path);
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s->lfd, 4) < 0)
        return -1;
    return pthread_create(&s->thread, NULL, serve, s) == 0 ? 0 : -1;
}

static void server_stop(struct server *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    close(s->lfd);
    free(s->response);
    pthread_mutex_destroy(&s->mu);
}

static void last_request(struct server *s, char *buf, size_t len)
{
    pthread_mutex_lock(&s->mu);
    snprintf(buf, len, "%s", s->last_request);
    pthread_mutex_unlock(&s->mu);
}

struct chunks {
    char data[256];
    size_t len;
    int calls;
    long status;
};

static int collect(void *user, long status, const char *data, size_t len)
{
    struct chunks *c = user;
    c->calls++;
    c->status = status;
    if (c->len + len >= sizeof(c->data))
        return -ENOSPC;
    memcpy(c->data + c->len, data, len);
    c->len += len;
    c->data[c->len] = '\0';
    return 0;
}

static int stop_early(void *user, long status, const char *data, size_t len)
{
    (void)user;
    (void)status;
    (void)data;
    (void)len;
    return -ECONNABORTED;
}

struct canceller {
    struct gs_http_cancel *cancel;
    struct server *s;
};

static void *cancel_later(void *arg)
{
    struct canceller *c = arg;
    /* wait until the request reached the server, then cancel it */
    for (;;) {
        pthread_mutex_lock(&c->s->mu);
        int n = c->s->requests;
        pthread_mutex_unlock(&c->s->mu);
        if (n > 0)
            break;
        usleep(5000);
    }
    gs_http_cancel_trigger(c->cancel);
    return NULL;
}

int main(void)
{
    struct server srv;
    struct gs_error err = {0};
    struct gs_http_response resp = {0};
    char url[128], req[8192];
    int r;

    tap_plan_auto();
    if (server_start(&srv) < 0) {
        ok(0, "test server starts");
        return tap_done();
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/apis/x?a=b", srv.port);

    struct gs_http_config cfg = {
        .bearer_token = "s3cret", .max_response_bytes = 1024, .timeout_ms = 2000};
    struct gs_http_client *c = gs_http_client_new(&cfg, &err);
    ok(c != NULL, "client created");

    /* 200 with a body, headers, token */
    set_body_response(&srv, 200, "", "{\"kind\":\"Status\"}");
    const char *hdrs[] = {"X-Test: yes", NULL};
    struct gs_http_request rq = {
        .method = "POST", .url = url, .headers = hdrs, .body = "{\"a\":1}", .body_len = 7};
    r = gs_http_do(c, &rq, &resp, &err);
    is_int(r, 0, "POST answered");
    is_int(resp.status, 200, "status 200");
    is_str(resp.body, "{\"kind\":\"Status\"}", "body returned NUL-terminated");
    is_uint(resp.body_len, 17, "body length");
    is_str(resp.content_type, "application/json", "Content-Type captured");
    is_int(resp.retry_after_ms, -1, "no Retry-After");
    last_request(&srv, req, sizeof(req));
    like_str(req, "POST /apis/x?a=b HTTP/1.1", "method, path and query sent");
    like_str(req, "Authorization: Bearer s3cret", "bearer token sent");
    like_str(req, "X-Test: yes", "extra header sent");
    like_str(req, "\r\n\r\n{\"a\":1}", "body sent");
    ok(strstr(req, "Expect:") == NULL, "no Expect: 100-continue");
    gs_http_response_fini(&resp);

    /* a per-request token overrides the client's */
    rq = (struct gs_http_request){.url = url, .bearer_token = "other"};
    r = gs_http_do(c, &rq, &resp, &err);
    last_request(&srv, req, sizeof(req));
    like_str(req, "Authorization: Bearer other", "per-request token sent");
    like_str(req, "GET /apis/x", "default method is GET");
    gs_http_response_fini(&resp);

    /* error statuses are not transport errors; Retry-After in seconds */
    set_body_response(&srv, 429, "Retry-After: 3\r\n", "{}");
    r = gs_http_do(c, &(struct gs_http_request){.url = url}, &resp, &err);
    is_int(r, 0, "429 is a response, not an error");
    is_int(resp.status, 429, "status 429");
    is_int(resp.retry_after_ms, 3000, "Retry-After: 3 -> 3000 ms");
    gs_http_response_fini(&resp);

    set_body_response(&srv, 503, "Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n", "{}");
    r = gs_http_do(c, &(struct gs_http_request){.url = url}, &resp, &err);
    is_int(resp.status, 503, "status 503");
    is_int(resp.retry_after_ms, 0, "Retry-After as a past HTTP date -> 0 ms");
    gs_http_response_fini(&resp);

    /* bounded body: exactly the limit passes, one byte more is refused */
    {
        char body[1100];
        memset(body, 'x', sizeof(body));
        body[1024] = '\0';
        set_body_response(&srv, 200, "", body);
        r = gs_http_do(c, &(struct gs_http_request){.url = url}, &resp, &err);
        is_int(r, 0, "a body of exactly max_response_bytes is accepted");
        is_uint(resp.body_len, 1024, "all 1024 bytes kept");
        gs_http_response_fini(&resp);
        body[1024] = 'x';
        body[1025] = '\0';
        set_body_response(&srv, 200, "", body);
        gs_error_clear(&err);
        r = gs_http_do(c, &(struct gs_http_request){.url = url}, &resp, &err);
        is_int(r, -E2BIG, "a body one byte over the maximum -> -E2BIG");
        like_str(err.msg, "response too big (more than 1024 bytes)", "message says too big");
        ok(resp.body == NULL && resp.body_len == 0, "no partial body handed out");
        gs_http_response_fini(&resp);
        /* per-request maximum */
        r = gs_http_do(c, &(struct gs_http_request){.url = url, .max_response_bytes = 4096}, &resp,
                       &err);
        is_int(r, 0, "a larger per-request maximum accepts it");
        gs_http_response_fini(&resp);
    }

    /* streaming */
    {
        struct chunks ch = {0};
        set_body_response(&srv, 200, "", "line1\nline2\n");
        r = gs_http_do(c, &(struct gs_http_request){.url = url, .on_data = collect, .user = &ch},
                       &resp, &err);
        is_int(r, 0, "streamed request succeeds");
        is_str(ch.data, "line1\nline2\n", "stream consumer got every byte");
        is_int(ch.status, 200, "consumer sees the status");
        ok(resp.body == NULL, "no body collected in streaming mode");
        gs_http_response_fini(&resp);
        r = gs_http_do(c, &(struct gs_http_request){.url = url, .on_data = stop_early}, &resp,
                       &err);
        is_int(r, -ECONNABORTED, "consumer's error code is returned");
        gs_http_response_fini(&resp);
    }

    /* timeouts */
    set_response(&srv, NULL, 0);
    gs_error_clear(&err);
    r = gs_http_do(c, &(struct gs_http_request){.url = url, .timeout_ms = 200}, &resp, &err);
    is_int(r, -ETIMEDOUT, "no answer within timeout_ms -> -ETIMEDOUT");
    like_str(err.msg, "GET http://127.0.0.1:", "timeout message names the request");
    gs_http_response_fini(&resp);

    /* cancellation from another thread */
    {
        struct gs_http_cancel *cancel = gs_http_cancel_new();
        pthread_t t;
        struct canceller cc = {.cancel = cancel, .s = &srv};
        pthread_mutex_lock(&srv.mu);
        srv.requests = 0;
        pthread_mutex_unlock(&srv.mu);
        pthread_create(&t, NULL, cancel_later, &cc);
        r = gs_http_do(c, &(struct gs_http_request){.url = url, .timeout_ms = -1, .cancel = cancel},
                       &resp, &err);
        pthread_join(t, NULL);
        is_int(r, -ECANCELED, "a hanging request is cancelled from another thread");
        ok(gs_http_cancel_is_triggered(cancel), "cancel token reads triggered");
        is_int(gs_http_cancel_sleep(cancel, 10000), -ECANCELED,
               "a triggered sleep returns at once");
        gs_http_cancel_reset(cancel);
        is_int(gs_http_cancel_sleep(cancel, 1), 0, "after reset a sleep runs to its end");
        gs_http_cancel_free(cancel);
        gs_http_response_fini(&resp);
    }

    /* bad input */
    r = gs_http_do(c, &(struct gs_http_request){.url = "ftp://x/"}, &resp, &err);
    is_int(r, -EINVAL, "ftp:// refused");
    like_str(err.msg, "is not http:// or https://", "scheme message");
    r = gs_http_do(c, &(struct gs_http_request){.url = url, .bearer_token = "a\r\nX: y"}, &resp,
                   &err);
    is_int(r, -EINVAL, "token with CRLF refused (no header injection)");
    const char *bad_hdrs[] = {"X: a\r\nY: b", NULL};
    r = gs_http_do(c, &(struct gs_http_request){.url = url, .headers = bad_hdrs}, &resp, &err);
    is_int(r, -EINVAL, "header with CRLF refused");
    gs_http_client_free(c);

    struct gs_http_config bad = {.bearer_token = "x\ny"};
    ok(gs_http_client_new(&bad, &err) == NULL && err.code == -EINVAL,
       "client with a CRLF token refused");

    /* nothing listening */
    server_stop(&srv);
    c = gs_http_client_new(NULL, &err);
    r = gs_http_do(c, &(struct gs_http_request){.url = url}, &resp, &err);
    is_int(r, -ECONNREFUSED, "closed port -> -ECONNREFUSED");
    gs_http_client_free(c);
    gs_http_client_free(NULL);

    /* TLS against a closed port still fails cleanly, and a missing CA file is reported */
    {
        struct gs_http_config tc = {.ca_file = "/nonexistent/ca.crt"};
        c = gs_http_client_new(&tc, &err);
        ok(c != NULL, "client with a CA file created");
        r = gs_http_do(c, &(struct gs_http_request){.url = "https://127.0.0.1:1/"}, &resp, &err);
        ok(r == -ECONNREFUSED || r == -EPROTO, "https to a closed port fails (%d)", r);
        gs_http_client_free(c);
    }

    /* over a unix socket: the URL still names host and path */
    {
        char sock[108];
        snprintf(sock, sizeof(sock), "/tmp/gs-http-test-%d.sock", (int)getpid());
        ok(server_start_unix(&srv, sock) == 0, "unix-socket server starts");
        set_body_response(&srv, 200, "", "{\"unix\":true}");
        struct gs_http_config uc = {.unix_socket = sock};
        c = gs_http_client_new(&uc, &err);
        r = gs_http_do(c, &(struct gs_http_request){.url = "http://localhost/healthz"}, &resp,
                       &err);
        is_int(r, 0, "request over the unix socket");
        is_str(resp.body, "{\"unix\":true}", "body over the unix socket");
        last_request(&srv, req, sizeof(req));
        like_str(req, "GET /healthz HTTP/1.1", "path sent over the unix socket");
        gs_http_response_fini(&resp);
        gs_http_client_free(c);
        server_stop(&srv);
        unlink(sock);
    }

    char *e = gs_http_escape("spec.nodeName=node 1,a/b&c");
    is_str(e, "spec.nodeName%3Dnode%201%2Ca%2Fb%26c", "query escaping");
    free(e);
    return tap_done();
}
