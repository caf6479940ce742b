/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Run tests/lib/fakeapi.py as a child process from a C test and drive its control API.
 *
 *   struct fakeapi f;
 *   if (fakeapi_start(&f, NULL) < 0) ...        // extra args: NULL-terminated list
 *   fakeapi_ctl(&f, "fail", "{\"count\":2,\"status\":500}");
 *   json_t *log = fakeapi_get(&f, "log");
 *   fakeapi_stop(&f);
 *
 * The child gets --stdin-lifetime, so it exits if the test dies without stopping it.
 */
#ifndef GS_TESTS_FAKEAPI_PROC_H
#define GS_TESTS_FAKEAPI_PROC_H

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube/http.h"

extern char **environ;

struct fakeapi {
    pid_t pid;
    int port;
    int stdin_fd;
    char url[128]; /* http(s)://127.0.0.1:PORT */
    char ctl_url[128];
    struct gs_http_client *http;
};

static inline int fakeapi_start_tls(struct fakeapi *f, const char *const *extra, bool tls,
                                    const char *ca_file)
{
    const char *root = getenv("GS_SOURCE_ROOT");
    char script[1024], line[64];
    const char *argv[32];
    int in[2], out[2], n = 0;
    posix_spawn_file_actions_t fa;
    struct gs_error err = {0};
    FILE *fo;

    memset(f, 0, sizeof(*f));
    f->pid = -1;
    snprintf(script, sizeof(script), "%s/tests/lib/fakeapi.py", root ? root : ".");
    argv[n++] = "/usr/bin/python3";
    argv[n++] = script;
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--print-port";
    argv[n++] = "--stdin-lifetime";
    for (; extra && *extra && n < 30; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (posix_spawn(&f->pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    f->stdin_fd = in[1];
    fo = fdopen(out[0], "r");
    if (!fo || !fgets(line, sizeof(line), fo)) {
        if (fo)
            fclose(fo);
        return -1;
    }
    fclose(fo);
    f->port = atoi(line);
    snprintf(f->url, sizeof(f->url), "%s://127.0.0.1:%d", tls ? "https" : "http", f->port);
    snprintf(f->ctl_url, sizeof(f->ctl_url), "%s", f->url);
    struct gs_http_config hc = {.ca_file = ca_file, .timeout_ms = 10000};
    f->http = gs_http_client_new(&hc, &err);
    return f->port > 0 && f->http ? 0 : -1;
}

static inline int fakeapi_start(struct fakeapi *f, const char *const *extra)
{
    return fakeapi_start_tls(f, extra, false, NULL);
}

static inline void fakeapi_stop(struct fakeapi *f)
{
    int st;

    if (f->pid > 0) {
        kill(f->pid, SIGTERM);
        waitpid(f->pid, &st, 0);
        f->pid = -1;
    }
    if (f->stdin_fd > 0)
        close(f->stdin_fd);
    f->stdin_fd = -1;
    gs_http_client_free(f->http);
    f->http = NULL;
}

/* POST /_fake/<name> with a JSON body; returns the HTTP status (or a negative error). */
static inline long fakeapi_ctl(struct fakeapi *f, const char *name, const char *body)
{
    char url[256];
    struct gs_http_response resp = {0};
    const char *hdrs[] = {"Content-Type: application/json", NULL};
    long st;

    snprintf(url, sizeof(url), "%s/_fake/%s", f->ctl_url, name);
    struct gs_http_request req = {.method = "POST",
                                  .url = url,
                                  .headers = hdrs,
                                  .body = body ? body : "{}",
                                  .body_len = strlen(body ? body : "{}")};
    if (gs_http_do(f->http, &req, &resp, NULL) < 0)
        return -1;
    st = resp.status;
    gs_http_response_fini(&resp);
    return st;
}

/* GET /_fake/<name> as JSON (new reference or NULL). */
static inline json_t *fakeapi_get(struct fakeapi *f, const char *name)
{
    char url[256];
    struct gs_http_response resp = {0};
    json_t *j = NULL;

    snprintf(url, sizeof(url), "%s/_fake/%s", f->ctl_url, name);
    if (gs_http_do(f->http, &(struct gs_http_request){.url = url}, &resp, NULL) == 0 &&
        resp.status == 200)
        j = json_loadb(resp.body, resp.body_len, 0, NULL);
    gs_http_response_fini(&resp);
    return j;
}

/* The number of logged API requests whose method matches (NULL = any) and whose path contains
 * `match` (NULL = any); `query_key` non-NULL also requires that query parameter. */
static inline int fakeapi_count(struct fakeapi *f, const char *method, const char *match,
                                const char *query_key)
{
    json_t *log = fakeapi_get(f, "log"), *r;
    size_t i;
    int n = 0;

    json_array_foreach(json_object_get(log, "requests"), i, r)
    {
        const char *m = json_string_value(json_object_get(r, "method"));
        const char *p = json_string_value(json_object_get(r, "path"));
        if (method && (!m || strcmp(m, method) != 0))
            continue;
        if (match && (!p || !strstr(p, match)))
            continue;
        if (query_key && !json_object_get(json_object_get(r, "query"), query_key))
            continue;
        n++;
    }
    json_decref(log);
    return n;
}

/* The i-th logged request (negative: from the end) as a new reference. */
static inline json_t *fakeapi_request(struct fakeapi *f, int i)
{
    json_t *log = fakeapi_get(f, "log");
    json_t *reqs = json_object_get(log, "requests");
    int n = (int)json_array_size(reqs);
    json_t *r = json_incref(json_array_get(reqs, (size_t)(i < 0 ? n + i : i)));
    json_decref(log);
    return r;
}

#endif /* GS_TESTS_FAKEAPI_PROC_H */
