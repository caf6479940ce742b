/* SPDX-License-Identifier: Apache-2.0 */
/* Who holds a standalone slice: cgroup members and live region slots (see members.h). */
#include "cli/members.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/macros.h"
#include "base/proc.h"
#include "gpuslice/shared_region.h"

#define HOLDERS_MAX (16u * 1024u)

/* Mount point of the cgroup2 hierarchy from /proc/self/mountinfo ("" when none). */
static void cgroup2_mount(char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        /* ... mount-point ... - fstype source options */
        char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
            continue;
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 4; i++)
            tok = strtok_r(NULL, " ", &save);
        if (tok && strlen(tok) < len && !strchr(tok, '\\')) /* escaped names: not ours */
            snprintf(buf, len, "%s", tok);
        break;
    }
    fclose(f);
}

/* This process's cgroup2 path ("0::/a/b" -> "/a/b"); "" when none. */
static void own_cgroup(char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        if (strlen(line + 3) < len)
            snprintf(buf, len, "%s", line + 3);
        break;
    }
    fclose(f);
}

int members_cgroup_create(const char *uid, char *path, size_t len)
{
    char mnt[PATH_MAX], own[PATH_MAX];
    path[0] = '\0';
    const char *mode = getenv("GPUSLICE_CGROUP");
    if (mode && strcmp(mode, "off") == 0)
        return 0; /* documented switch: track members through the region alone */
    if (mode && mode[0] == '/') {
        /* An explicit parent (a delegated subtree): it must work, never a silent fallback. */
        int n = snprintf(path, len, "%s%sgpuslice-%s", mode,
                         mode[strlen(mode) - 1] == '/' ? "" : "/", uid);
        if (n < 0 || (size_t)n >= len) {
            path[0] = '\0';
            return -ENAMETOOLONG;
        }
        return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
    }
    if (mode && *mode && strcmp(mode, "auto") != 0)
        return -EINVAL;
    cgroup2_mount(mnt, sizeof(mnt));
    own_cgroup(own, sizeof(own));
    if (!mnt[0] || !own[0])
        return 0;
    int n = snprintf(path, len, "%s%s%sgpuslice-%s", mnt, own,
                     own[strlen(own) - 1] == '/' ? "" : "/", uid);
    if (n < 0 || (size_t)n >= len) {
        path[0] = '\0';
        return -ENAMETOOLONG;
    }
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        path[0] = '\0'; /* not delegated to us: the region tracks members alone */
    return 0;
}

int members_cgroup_join(const char *path)
{
    char procs[PATH_MAX + 32];
    if (!path || !*path)
        return 0;
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = write(fd, "0", 1) == 1 ? 0 : -errno;
    close(fd);
    return r;
}

void members_cgroup_remove(const char *path)
{
    if (path && *path)
        rmdir(path); /* fails (EBUSY) while it has members: then it stays */
}

int members_record(const char *slice_dir, const struct ledger_owner *runner, const char *cgroup,
                   struct gs_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/" MEMBERS_FILE, slice_dir);
    json_t *j = json_pack("{s:{s:i, s:I, s:s}, s:s}", "runner", "pid", (int)runner->pid,
                          "startTime", (json_int_t)runner->start_time, "bootId", runner->boot_id,
                          "cgroup", cgroup ? cgroup : "");
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text)
        return gs_error_set(err, -ENOMEM, "%s: out of memory", path);
    int r = gs_write_file_atomic(path, text, strlen(text), 0644, err);
    free(text);
    return r;
}

static json_t *read_holders(const char *slice_dir)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/" MEMBERS_FILE, slice_dir);
    if (gs_read_file(path, HOLDERS_MAX, &text, &len, NULL) < 0)
        return NULL;
    json_t *j = json_loadb(text, len, 0, NULL);
    free(text);
    return j;
}

void members_cgroup_of(const char *slice_dir, char *buf, size_t len)
{
    json_t *j = read_holders(slice_dir);
    const char *cg = json_string_value(json_object_get(j, "cgroup"));
    snprintf(buf, len, "%s", cg && cg[0] == '/' ? cg : "");
    json_decref(j);
}

#define MAX_MEMBERS (GS_REGION_MAX_PROCS + 1024)

struct pidset {
    size_t n;
    pid_t pid[MAX_MEMBERS];
};

static void pidset_add(struct pidset *s, pid_t pid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->pid[i] == pid)
            return;
    if (s->n < MAX_MEMBERS)
        s->pid[s->n++] = pid;
}

/* Processes listed in <cgroup>/cgroup.procs. */
static void cgroup_members(const char *cgroup, struct pidset *out)
{
    char path[PATH_MAX + 32], *text = NULL;
    size_t len = 0;
    if (!cgroup[0])
        return;
    snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
    if (gs_read_file(path, 1u << 20, &text, &len, NULL) < 0)
        return;
    for (char *p = text; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        uint64_t start;
        /* A zombie is listed until its parent reaps it, but it holds nothing any more. */
        if (pid > 0 && pid <= INT32_MAX && gs_proc_start_time((pid_t)pid, &start) == 0)
            pidset_add(out, (pid_t)pid);
        p = end;
        while (*p == '\n')
            p++;
    }
    free(text);
}

static uint64_t own_pidns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Live process slots of <slice_dir>/region (read-only, never locks). */
static void region_members(const char *slice_dir, struct pidset *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/region", slice_dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(struct gs_region)) {
        close(fd);
        return;
    }
    const struct gs_region *r = mmap(NULL, sizeof(*r), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (r == MAP_FAILED)
        return;
    if (r->magic == GS_REGION_MAGIC && r->version >= GS_REGION_VERSION_MIN_READ &&
        r->version <= GS_REGION_VERSION && r->size == sizeof(*r) &&
        atomic_load_explicit(&r->init_state, memory_order_acquire) == GS_REGION_READY) {
        uint64_t ns = own_pidns();
        uint32_t hint = GS_MIN(atomic_load(&r->n_procs_hint), (uint32_t)GS_REGION_MAX_PROCS);
        for (uint32_t i = 0; i < hint; i++) {
            pid_t pid = atomic_load_explicit(&r->procs[i].pid, memory_order_acquire);
            if (pid <= 0)
                continue;
            uint64_t start = atomic_load(&r->procs[i].start_time);
            uint64_t pns = atomic_load(&r->procs[i].pidns);
            uint64_t now = 0;
            /* Another pid namespace cannot be checked from here: it holds (fail closed). */
            bool alive =
                (pns && ns && pns != ns) || (gs_proc_start_time(pid, &now) == 0 && now == start);
            if (alive)
                pidset_add(out, pid);
        }
    }
    munmap((void *)r, sizeof(*r));
}

int members_count(const char *slice_dir, pid_t *example)
{
    char cg[PATH_MAX];
    struct pidset *s = calloc(1, sizeof(*s));
    if (!s)
        return 1; /* cannot tell: held (fail closed) */
    members_cgroup_of(slice_dir, cg, sizeof(cg));
    cgroup_members(cg, s);
    region_members(slice_dir, s);
    int n = (int)s->n;
    if (example && n)
        *example = s->pid[0];
    free(s);
    return n;
}

bool members_slice_held(const char *slice_dir)
{
    json_t *j = read_holders(slice_dir);
    json_t *r = json_object_get(j, "runner");
    struct ledger_owner o = {0};
    o.pid = (pid_t)json_integer_value(json_object_get(r, "pid"));
    o.start_time = (uint64_t)json_integer_value(json_object_get(r, "startTime"));
    snprintf(o.boot_id, sizeof(o.boot_id), "%s",
             json_string_value(json_object_get(r, "bootId")) ?: "");
    json_decref(j);
    if (o.pid > 0 && ledger_owner_alive(&o))
        return true;
    return members_count(slice_dir, NULL) > 0;
}
