/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the Kubernetes API server is and how to authenticate to it: kubeconfig files and the
 * in-cluster service-account configuration (see docs/internals/k8s-client.md).
 *
 * A kubeconfig is YAML (or JSON): current-context (or the named context) -> cluster (server,
 * certificate-authority, certificate-authority-data, insecure-skip-tls-verify) and user (token,
 * tokenFile, client-certificate(-data), client-key(-data)). Relative file paths are resolved
 * against the kubeconfig's directory, *-data fields are base64-decoded. Errors name the file, the
 * field and the value ("kubeconfig /x: context \"dev\" not found").
 *
 * In-cluster: server https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, CA
 * <dir>/ca.crt, token file <dir>/token (re-read by the k8s client when it changes), namespace from
 * <dir>/namespace; <dir> is /var/run/secrets/kubernetes.io/serviceaccount unless given (or set by
 * the GS_SERVICEACCOUNT_DIR environment variable, for tests).
 */
#ifndef GS_COMMON_KUBECONFIG_H
#define GS_COMMON_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define GS_KUBE_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define GS_KUBECONFIG_MAX_BYTES    (4u * 1024u * 1024u)
#define GS_KUBE_TOKEN_MAX_BYTES    (64u * 1024u)

struct gs_kube_config {
    char *server;  /* "https://host:port" or "http://...", no trailing '/' */
    char *ca_file; /* NULL if none */
    char *ca_data; /* decoded PEM bytes, NUL-terminated; NULL if none */
    size_t ca_data_len;
    bool insecure_skip_tls_verify;
    char *token;      /* static bearer token; NULL if none */
    char *token_file; /* bearer token file, re-read on change; NULL if none */
    char *client_cert_file;
    char *client_cert_data; /* decoded PEM, NUL-terminated */
    size_t client_cert_data_len;
    char *client_key_file;
    char *client_key_data; /* decoded PEM, NUL-terminated */
    size_t client_key_data_len;
    char *namespace; /* context namespace / in-cluster namespace; "default" if unset */
    char *source;    /* the file it came from, or "in-cluster" */
};

/* Load from a kubeconfig file. `context` NULL = current-context. */
int gs_kube_config_load_file(const char *path, const char *context, struct gs_kube_config *out,
                             struct gs_error *err);
/* Parse kubeconfig text; `base_dir` resolves relative paths, `name` is used in messages. */
int gs_kube_config_parse(const char *text, size_t len, const char *base_dir, const char *name,
                         const char *context, struct gs_kube_config *out, struct gs_error *err);
/* In-cluster configuration. `sa_dir` NULL = $GPUSLICE_SERVICEACCOUNT_DIR or the standard directory.
 */
int gs_kube_config_load_incluster(const char *sa_dir, struct gs_kube_config *out,
                                  struct gs_error *err);
/* The usual order: `path` if non-NULL and non-empty, else $KUBECONFIG (first entry), else
 * in-cluster. */
int gs_kube_config_load(const char *path, struct gs_kube_config *out, struct gs_error *err);

void gs_kube_config_fini(struct gs_kube_config *cfg);
/* Deep copy. */
int gs_kube_config_copy(struct gs_kube_config *dst, const struct gs_kube_config *src);

/* Read a bearer token file (at most GS_KUBE_TOKEN_MAX_BYTES, surrounding whitespace trimmed).
 * -EINVAL if empty or if it holds a line break inside. */
int gs_kube_read_token_file(const char *path, char **out, struct gs_error *err);

/* Decode standard base64 (padding optional, whitespace ignored) into a new NUL-terminated
 * buffer. -EINVAL on a bad character, -ENOMEM. */
int gs_base64_decode(const char *in, size_t in_len, char **out, size_t *out_len);

#endif /* GS_COMMON_KUBECONFIG_H */
