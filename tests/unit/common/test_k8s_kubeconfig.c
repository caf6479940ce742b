/* SPDX-License-Identifier: Apache-2.0 */
/* kubeconfig parsing, in-cluster configuration, token files, base64. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/kubeconfig.h"
#include "tap.h"

static char dir[256];

static void write_file(const char *name, const char *content)
{
    char p[512];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    f = fopen(p, "w");
    if (!f)
        return;
    fputs(content, f);
    fclose(f);
}

static const char *path_of(const char *name)
{
    static char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return p;
}

/* "Q0EgUEVN" = "CA PEM", "Q0VSVA==" = "CERT", "S0VZ" = "KEY" */
static const char *full_config = "apiVersion: v1\n"
                                 "kind: Config\n"
                                 "current-context: dev\n"
                                 "clusters:\n"
                                 "- name: prod\n"
                                 "  cluster:\n"
                                 "    server: https://1.2.3.4:6443/\n"
                                 "    certificate-authority-data: Q0EgUEVN\n"
                                 "- name: lab\n"
                                 "  cluster:\n"
                                 "    server: http://127.0.0.1:8080\n"
                                 "    certificate-authority: ca.crt\n"
                                 "    insecure-skip-tls-verify: true\n"
                                 "contexts:\n"
                                 "- name: dev\n"
                                 "  context:\n"
                                 "    cluster: prod\n"
                                 "    user: alice\n"
                                 "    namespace: team-a\n"
                                 "- name: lab\n"
                                 "  context: {cluster: lab, user: bob}\n"
                                 "- name: certs\n"
                                 "  context: {cluster: prod, user: carol}\n"
                                 "- name: tokfile\n"
                                 "  context: {cluster: lab, user: dave}\n"
                                 "- name: anon\n"
                                 "  context: {cluster: lab}\n"
                                 "users:\n"
                                 "- name: alice\n"
                                 "  user:\n"
                                 "    token: abc.def\n"
                                 "- name: bob\n"
                                 "  user:\n"
                                 "    client-certificate: client.crt\n"
                                 "    client-key: client.key\n"
                                 "- name: carol\n"
                                 "  user:\n"
                                 "    client-certificate-data: Q0VSVA==\n"
                                 "    client-key-data: S0VZ\n"
                                 "- name: dave\n"
                                 "  user:\n"
                                 "    tokenFile: sa/token\n";

static void expect_error(const char *text, const char *context, int code, const char *needle,
                         const char *what)
{
    struct gs_kube_config cfg;
    struct gs_error err = {0};
    int r = gs_kube_config_parse(text, strlen(text), dir, "test.yaml", context, &cfg, &err);

    is_int(r, code, "%s: code", what);
    like_str(err.msg, needle, "%s: message", what);
    ok(cfg.server == NULL, "%s: nothing handed out", what);
}

static void test_kubeconfig(void)
{
    struct gs_kube_config cfg, copy;
    struct gs_error err = {0};
    char want[512];
    int r;

    write_file("ca.crt", "-----BEGIN CERTIFICATE-----\n");
    write_file("client.crt", "cert");
    write_file("client.key", "key");
    mkdir(path_of("sa"), 0700);
    write_file("sa/token", "tok-1\n");
    write_file("kubeconfig", full_config);

    r = gs_kube_config_load_file(path_of("kubeconfig"), NULL, &cfg, &err);
    is_int(r, 0, "current-context loads");
    is_str(cfg.server, "https://1.2.3.4:6443", "server without trailing slash");
    is_str(cfg.ca_data, "CA PEM", "certificate-authority-data decoded");
    is_uint(cfg.ca_data_len, 6, "CA length");
    ok(cfg.ca_file == NULL, "no CA file");
    is_str(cfg.token, "abc.def", "token");
    is_str(cfg.namespace, "team-a", "context namespace");
    ok(!cfg.insecure_skip_tls_verify, "verification on by default");
    is_str(cfg.source, path_of("kubeconfig"), "source names the file");
    r = gs_kube_config_copy(&copy, &cfg);
    is_int(r, 0, "copy");
    ok(copy.server != cfg.server && strcmp(copy.server, cfg.server) == 0 && copy.ca_data_len == 6 &&
           strcmp(copy.ca_data, "CA PEM") == 0 && strcmp(copy.token, "abc.def") == 0,
       "deep copy has equal, separate fields");
    gs_kube_config_fini(&copy);
    gs_kube_config_fini(&cfg);
    ok(cfg.server == NULL, "fini clears");

    r = gs_kube_config_load_file(path_of("kubeconfig"), "lab", &cfg, &err);
    is_int(r, 0, "named context loads");
    is_str(cfg.server, "http://127.0.0.1:8080", "http:// server kept");
    is_str(cfg.ca_file, path_of("ca.crt"), "relative certificate-authority resolved");
    ok(cfg.insecure_skip_tls_verify, "insecure-skip-tls-verify: true");
    is_str(cfg.client_cert_file, path_of("client.crt"), "client-certificate resolved");
    is_str(cfg.client_key_file, path_of("client.key"), "client-key resolved");
    is_str(cfg.namespace, "default", "namespace defaults to \"default\"");
    ok(cfg.token == NULL && cfg.token_file == NULL, "no token");
    gs_kube_config_fini(&cfg);

    r = gs_kube_config_load_file(path_of("kubeconfig"), "certs", &cfg, &err);
    is_int(r, 0, "inline certificate context loads");
    is_str(cfg.client_cert_data, "CERT", "client-certificate-data decoded");
    is_str(cfg.client_key_data, "KEY", "client-key-data decoded");
    is_uint(cfg.client_key_data_len, 3, "key length");
    gs_kube_config_fini(&cfg);

    r = gs_kube_config_load_file(path_of("kubeconfig"), "tokfile", &cfg, &err);
    is_int(r, 0, "tokenFile context loads");
    is_str(cfg.token_file, path_of("sa/token"), "tokenFile resolved against the file's directory");
    gs_kube_config_fini(&cfg);

    r = gs_kube_config_load_file(path_of("kubeconfig"), "anon", &cfg, &err);
    is_int(r, 0, "context without a user loads");
    ok(!cfg.token && !cfg.client_cert_file && !cfg.client_cert_data, "anonymous");
    gs_kube_config_fini(&cfg);

    /* JSON is YAML too */
    const char *json = "{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"current-context\":\"c\","
                       "\"clusters\":[{\"name\":\"k\",\"cluster\":{\"server\":\"https://h:1\"}}],"
                       "\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\",\"user\":"
                       "\"u\"}}],\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"t\"}}]}";
    r = gs_kube_config_parse(json, strlen(json), dir, "j", NULL, &cfg, &err);
    is_int(r, 0, "JSON kubeconfig parses");
    is_str(cfg.server, "https://h:1", "JSON server");
    is_str(cfg.token, "t", "JSON token");
    gs_kube_config_fini(&cfg);

    /* errors name the file, the field and the value */
    expect_error("clusters: []\n", NULL, -EINVAL,
                 "kubeconfig test.yaml: current-context is not set", "no current-context");
    expect_error(full_config, "nope", -ENOENT, "kubeconfig test.yaml: context \"nope\" not found",
                 "unknown context");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n", NULL,
                 -ENOENT, "cluster \"k\" not found", "unknown cluster");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                 "clusters:\n- name: k\n  cluster: {server: 'https://h'}\n",
                 NULL, -ENOENT, "user \"u\" not found", "unknown user");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                 "clusters:\n- name: k\n  cluster: {insecure-skip-tls-verify: true}\n",
                 NULL, -EINVAL, "cluster \"k\" has no server", "no server");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                 "clusters:\n- name: k\n  cluster: {server: 'ftp://h'}\n",
                 NULL, -EINVAL, "server \"ftp://h\" is not an http:// or https:// URL",
                 "ftp server");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                 "clusters:\n- name: k\n  cluster: {server: 'https://h', "
                 "certificate-authority-data: 'not*base64'}\n",
                 NULL, -EINVAL, "certificate-authority-data: not valid base64 (\"not*base64\")",
                 "bad base64");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                 "clusters:\n- name: k\n  cluster: {server: 'https://h', "
                 "certificate-authority: missing.crt}\n",
                 NULL, -ENOENT, "certificate-authority: cannot read", "missing CA file");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                 "clusters:\n- name: k\n  cluster: {server: 'https://h', "
                 "insecure-skip-tls-verify: maybe}\n",
                 NULL, -EINVAL, "insecure-skip-tls-verify: \"maybe\" is not true or false",
                 "bad boolean");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                 "clusters:\n- name: k\n  cluster: {server: 'https://h'}\n"
                 "users:\n- name: u\n  user: {client-certificate-data: Q0VSVA==}\n",
                 NULL, -EINVAL, "a client certificate needs a client key", "cert without key");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                 "clusters:\n- name: k\n  cluster: {server: 'https://h'}\n"
                 "users:\n- name: u\n  user: {exec: {command: aws}}\n",
                 NULL, -ENOTSUP, "\"exec\" authentication is not supported", "exec plugin");
    expect_error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                 "clusters:\n- name: k\n  cluster: {server: [a, b]}\n",
                 NULL, -EINVAL, "clusters[k].cluster.server: expected a string", "mistyped server");
    expect_error("current-context: c\nclusters: [\n", NULL, -EINVAL,
                 "kubeconfig test.yaml: line 3, column 1: ", "broken YAML");
    expect_error("- a\n- b\n", NULL, -EINVAL, "kubeconfig test.yaml: not a mapping", "a list");
    expect_error("", NULL, -EINVAL, "empty document", "empty file");

    r = gs_kube_config_load_file(path_of("missing"), NULL, &cfg, &err);
    is_int(r, -ENOENT, "missing kubeconfig -> -ENOENT");
    snprintf(want, sizeof(want), "kubeconfig %s: No such file", path_of("missing"));
    like_str(err.msg, want, "message names the file");

    /* a file over the maximum is refused, not read whole */
    {
        char p[512];
        snprintf(p, sizeof(p), "%s/huge", dir);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ok(fd >= 0 && ftruncate(fd, GS_KUBECONFIG_MAX_BYTES + 1) == 0, "huge file made");
        close(fd);
        r = gs_kube_config_load_file(p, NULL, &cfg, &err);
        is_int(r, -EFBIG, "kubeconfig over 4 MiB -> -EFBIG (gs_read_file)");
        like_str(err.msg, "file too big", "message says too big");
    }

    /* $KUBECONFIG (first entry) when no path is given */
    setenv("KUBECONFIG", path_of("kubeconfig"), 1);
    r = gs_kube_config_load(NULL, &cfg, &err);
    is_int(r, 0, "$KUBECONFIG used");
    is_str(cfg.server, "https://1.2.3.4:6443", "$KUBECONFIG's current context");
    gs_kube_config_fini(&cfg);
    unsetenv("KUBECONFIG");
}

static void test_incluster(void)
{
    struct gs_kube_config cfg;
    struct gs_error err = {0};
    char sa[512];
    int r;

    snprintf(sa, sizeof(sa), "%s/sa", dir);
    write_file("sa/ca.crt", "ca");
    write_file("sa/namespace", "gpu-system\n");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    r = gs_kube_config_load_incluster(sa, &cfg, &err);
    is_int(r, -ENOENT, "outside a pod -> -ENOENT");
    like_str(err.msg, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set",
             "message names the variables");

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    r = gs_kube_config_load_incluster(sa, &cfg, &err);
    is_int(r, 0, "in-cluster config loads");
    is_str(cfg.server, "https://10.96.0.1:443", "server from the service variables");
    is_str(cfg.token_file, path_of("sa/token"), "token file (re-read by the client)");
    is_str(cfg.ca_file, path_of("sa/ca.crt"), "CA file");
    is_str(cfg.namespace, "gpu-system", "namespace file, newline trimmed");
    is_str(cfg.source, "in-cluster", "source");
    gs_kube_config_fini(&cfg);

    setenv("GPUSLICE_SERVICEACCOUNT_DIR", sa, 1);
    r = gs_kube_config_load(NULL, &cfg, &err);
    is_int(r, 0, "no kubeconfig -> in-cluster via $GPUSLICE_SERVICEACCOUNT_DIR");
    is_str(cfg.token_file, path_of("sa/token"), "overridden directory used");
    gs_kube_config_fini(&cfg);
    unsetenv("GPUSLICE_SERVICEACCOUNT_DIR");

    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    r = gs_kube_config_load_incluster(sa, &cfg, &err);
    is_str(cfg.server, "https://[fd00::1]:443", "IPv6 host bracketed");
    gs_kube_config_fini(&cfg);

    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    r = gs_kube_config_load_incluster(sa, &cfg, &err);
    is_int(r, -EINVAL, "non-numeric port refused");
    like_str(err.msg, "KUBERNETES_SERVICE_PORT \"https\" is not a port number", "port message");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    setenv("KUBERNETES_SERVICE_HOST", "evil/path", 1);
    r = gs_kube_config_load_incluster(sa, &cfg, &err);
    is_int(r, -EINVAL, "host with a slash refused");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);

    r = gs_kube_config_load_incluster(path_of("nope"), &cfg, &err);
    is_int(r, -ENOENT, "missing service-account directory");
    like_str(err.msg, "in-cluster config: cannot read token", "message names the token");

    /* token files */
    char *tok = NULL;
    write_file("t1", "  tok-2 \r\n");
    r = gs_kube_read_token_file(path_of("t1"), &tok, &err);
    is_int(r, 0, "token file read");
    is_str(tok, "tok-2", "surrounding whitespace trimmed");
    free(tok);
    write_file("t2", "\n\n");
    r = gs_kube_read_token_file(path_of("t2"), &tok, &err);
    is_int(r, -EINVAL, "empty token file refused");
    like_str(err.msg, "empty", "empty message");
    write_file("t3", "a\nb\n");
    r = gs_kube_read_token_file(path_of("t3"), &tok, &err);
    is_int(r, -EINVAL, "token with an inner line break refused");
}

static void test_base64(void)
{
    char *out = NULL;
    size_t len = 0;

    is_int(gs_base64_decode("aGVsbG8=", 8, &out, &len), 0, "padded base64");
    is_str(out, "hello", "decoded");
    is_uint(len, 5, "length");
    free(out);
    is_int(gs_base64_decode("aGVs\nbG8", 8, &out, &len), 0, "unpadded with a newline");
    is_str(out, "hello", "decoded");
    free(out);
    is_int(gs_base64_decode("", 0, &out, &len), 0, "empty");
    is_uint(len, 0, "empty length");
    free(out);
    is_int(gs_base64_decode("a", 1, &out, &len), -EINVAL, "a lone character is invalid");
    is_int(gs_base64_decode("ab!d", 4, &out, &len), -EINVAL, "bad character");
    is_int(gs_base64_decode("ab=c", 4, &out, &len), -EINVAL, "data after padding");
}

int main(void)
{
    char cmd[300];

    tap_plan_auto();
    snprintf(dir, sizeof(dir), "%s/gs-kubeconfig-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        ok(0, "temporary directory");
        return tap_done();
    }
    test_kubeconfig();
    test_incluster();
    test_base64();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    return tap_done();
}
