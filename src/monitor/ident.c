/* SPDX-License-Identifier: Apache-2.0 */
/* Process identity from the kernel's files (see ident.h). */
#include "monitor/ident.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/proc.h"

#define CGROUP_FILE_MAX (64 * 1024) /* /proc/<pid>/cgroup: one line per v1 hierarchy */

/* A pod UID as the kubelet writes it in a cgroup name: 36 characters of hex digits and '-'
 * (systemd driver: '_' for '-'). Normalised into out (36 + NUL). */
static bool pod_uid(const char *s, size_t n, char *out, size_t len)
{
    if (n != 36 || len < 37)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i] == '_' ? '-' : s[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? ch != '-' : !isxdigit((unsigned char)ch))
            return false;
        out[i] = (char)tolower((unsigned char)ch);
    }
    out[n] = '\0';
    return true;
}

static bool container_id(const char *s, size_t n, char *out, size_t len)
{
    if (n < 12 || n >= len)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]))
            return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

static bool has_suffix(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

/* The pod segment: "pod<uid>" (cgroupfs) or "kubepods[-<qos>]-pod<uid_>.slice" (systemd). */
static bool pod_segment(const char *s, size_t n, char *uid, size_t len)
{
    if (n > 3 && memcmp(s, "pod", 3) == 0 && pod_uid(s + 3, n - 3, uid, len))
        return true;
    if (n > 8 && memcmp(s, "kubepods", 8) == 0 && has_suffix(s, n, ".slice")) {
        size_t body = n - 6;
        for (size_t i = body; i >= 4; i--)
            if (memcmp(s + i - 4, "-pod", 4) == 0)
                return pod_uid(s + i, body - i, uid, len);
    }
    return false;
}

/* The container segment below the pod's: "<id>" (cgroupfs) or "<runtime>-<id>.scope" (systemd;
 * cri-o's "crio-conmon-<id>.scope" is its monitor process, not the container). */
static bool container_segment(const char *s, size_t n, char *id, size_t len)
{
    if (has_suffix(s, n, ".scope")) {
        size_t body = n - 6;
        if (body > 12 && memcmp(s, "crio-conmon-", 12) == 0)
            return false;
        for (size_t i = body; i > 0; i--)
            if (s[i - 1] == '-')
                return container_id(s + i, body - i, id, len);
        return false;
    }
    return container_id(s, n, id, len);
}

/* Search one cgroup path for the kubepods pod and container segments. */
static bool kube_path(const char *p, size_t n, struct mon_cgroup_ident *out)
{
    bool under_kubepods = false;
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == '/')
            i++;
        size_t s = i;
        while (i < n && p[i] != '/')
            i++;
        size_t len = i - s;
        if (!len)
            break;
        if (len >= 8 && memcmp(p + s, "kubepods", 8) == 0 &&
            (len == 8 || p[s + 8] == '.' || p[s + 8] == '-'))
            under_kubepods = true;
        char uid[MON_POD_UID_MAX];
        if (!under_kubepods || !pod_segment(p + s, len, uid, sizeof(uid)))
            continue;
        snprintf(out->pod_uid, sizeof(out->pod_uid), "%s", uid);
        out->container_id[0] = '\0';
        while (i < n && p[i] == '/')
            i++;
        size_t c = i;
        while (i < n && p[i] != '/')
            i++;
        if (i > c)
            container_segment(p + c, i - c, out->container_id, sizeof(out->container_id));
        return true;
    }
    return false;
}

void mon_cgroup_parse(const char *text, size_t len, struct mon_cgroup_ident *out)
{
    memset(out, 0, sizeof(*out));
    bool kube = false;
    size_t i = 0;
    while (i < len) {
        size_t s = i;
        while (i < len && text[i] != '\n')
            i++;
        const char *line = text + s;
        size_t n = i - s;
        i++;
        /* hierarchy-ID:controller-list:cgroup-path (cgroups(7)); the path may hold ':'. */
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
        if (!c2)
            continue;
        const char *path = c2 + 1;
        size_t plen = n - (size_t)(path - line);
        if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1 && plen < sizeof(out->v2_path)) {
            memcpy(out->v2_path, path, plen);
            out->v2_path[plen] = '\0';
        }
        if (!kube)
            kube = kube_path(path, plen, out);
    }
}

void mon_proc_identify(const char *proc_root, int32_t pid, struct mon_proc_ident *out)
{
    memset(out, 0, sizeof(*out));
    out->pid = out->inner = pid;
    char path[4200];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%d/ns/pid", proc_root, (int)pid);
    if (stat(path, &st) == 0)
        out->pidns = (uint64_t)st.st_ino;
    uint64_t start = 0;
    if (gs_proc_start_time(pid, &start) == 0)
        out->start_time = start;
    snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
    FILE *f = fopen(path, "re");
    if (f) {
        char line[256];
        while (fgets(line, sizeof(line), f))
            if (strncmp(line, "NSpid:", 6) == 0) {
                char *last = strrchr(line, '\t');
                if (!last)
                    last = strrchr(line, ' ');
                if (last)
                    out->inner = (int32_t)strtol(last + 1, NULL, 10);
                break;
            }
        fclose(f);
    }
    snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, (int)pid);
    f = fopen(path, "re");
    if (!f)
        return;
    char *buf = malloc(CGROUP_FILE_MAX);
    if (buf) {
        size_t n = fread(buf, 1, CGROUP_FILE_MAX, f);
        if (!ferror(f) && n < CGROUP_FILE_MAX) { /* a longer file is not the kernel's */
            mon_cgroup_parse(buf, n, &out->cg);
            out->has_cgroup = true;
        }
        free(buf);
    }
    fclose(f);
}

void mon_container_id(const char *status_id, char *buf, size_t len)
{
    buf[0] = '\0';
    const char *sep = status_id ? strstr(status_id, "://") : NULL;
    if (!sep || sep == status_id)
        return;
    const char *id = sep + 3;
    if (!container_id(id, strlen(id), buf, len))
        buf[0] = '\0';
}

bool mon_cgroup_within(const char *cgroup_root, const char *recorded, const char *proc_path)
{
    if (!recorded || recorded[0] != '/' || !proc_path || proc_path[0] != '/' || !cgroup_root)
        return false;
    size_t rl = strlen(cgroup_root);
    while (rl > 1 && cgroup_root[rl - 1] == '/')
        rl--;
    if (rl == 1 && cgroup_root[0] == '/')
        rl = 0; /* root "/": the recorded path is the cgroup path itself */
    if (strncmp(recorded, cgroup_root, rl) != 0)
        return false;
    const char *rec = recorded + rl; /* relative to the hierarchy's root, starts with '/' */
    if (rec[0] != '/' || strstr(rec, "/..") || strstr(proc_path, "/.."))
        return false;
    size_t n = strlen(rec);
    while (n > 1 && rec[n - 1] == '/')
        n--;
    return strncmp(proc_path, rec, n) == 0 && (proc_path[n] == '\0' || proc_path[n] == '/');
}

void mon_cgroup2_mount(char *buf, size_t len)
{
    snprintf(buf, len, "/sys/fs/cgroup");
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        /* id parent major:minor root mount-point options... - fstype source super-options */
        const char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
            continue;
        char mnt[4096];
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && mnt[0] == '/') {
            snprintf(buf, len, "%s", mnt);
            break;
        }
    }
    fclose(f);
}
