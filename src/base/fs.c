/* SPDX-License-Identifier: Apache-2.0 */
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macros.h"

#define RM_MAX_DEPTH 256

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Split `path` into directory and base name, in caller buffers. */
static int split_path(const char *path, char *dir, char *base)
{
    size_t n = strlen(path);
    if (n == 0 || n >= PATH_MAX)
        return -EINVAL;
    char tmp[PATH_MAX];
    memcpy(tmp, path, n + 1);
    snprintf(dir, PATH_MAX, "%s", dirname(tmp));
    memcpy(tmp, path, n + 1);
    snprintf(base, PATH_MAX, "%s", basename(tmp));
    if (base[0] == '\0' || strcmp(base, "/") == 0 || strcmp(base, ".") == 0 ||
        strcmp(base, "..") == 0 || path[n - 1] == '/')
        return -EISDIR;
    return 0;
}

/* "XXXXXX" as mkostemp fills it: six characters of [A-Za-z0-9]. */
static bool temp_suffix(const char *s)
{
    for (int i = 0; i < 6; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return false;
    }
    return s[6] == '\0';
}

static bool is_temp_name(const char *entry, const char *prefix)
{
    size_t n = strlen(entry), pl = strlen(prefix), il = strlen(GS_FS_TMP_INFIX);
    if (entry[0] != '.' || strncmp(entry + 1, prefix, pl) != 0 || n < 1 + pl + 7)
        return false;
    const char *suffix = entry + n - 6;
    if (!temp_suffix(suffix))
        return false;
    if (n >= 1 + pl + il + 6 && n >= 1 + 1 + il + 6 &&
        strncmp(suffix - il, GS_FS_TMP_INFIX, il) == 0)
        return true;
    return *prefix && suffix[-1] == '.'; /* the shape before GS_FS_TMP_INFIX */
}

int gs_remove_temps(const char *dir, const char *name_prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!is_temp_name(de->d_name, name_prefix ? name_prefix : ""))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            unlinkat(dirfd(d), de->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int gs_fsync_dir(const char *dir)
{
    _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) < 0)
        return -errno;
    return 0;
}

int gs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                         struct gs_error *err)
{
    return gs_write_file_atomic_ex(path, data, len, mode, GS_FS_DURABLE, err);
}

int gs_write_file_atomic_ex(const char *path, const void *data, size_t len, mode_t mode,
                            unsigned flags, struct gs_error *err)
{
    char dir[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX];
    int r = split_path(path, dir, base);
    if (r < 0)
        return gs_error_set(err, r, "write %s: not a file path", path);
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s" GS_FS_TMP_INFIX "XXXXXX", dir, base) >=
        sizeof(tmp))
        return gs_error_set(err, -ENAMETOOLONG, "write %s: path too long", path);

    _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return gs_error_set(err, -errno, "write %s: cannot create a temporary file in %s: %s", path,
                            dir, gs_strerror(errno));
    const char *step = "write";
    r = write_all(fd, data, len);
    if (r == 0 && fchmod(fd, mode) < 0) {
        r = -errno;
        step = "chmod";
    }
    if (r == 0 && (flags & GS_FS_DURABLE) && fsync(fd) < 0) {
        r = -errno;
        step = "fsync";
    }
    if (r == 0) {
        int cfd = TAKE_FD(fd);
        if (close(cfd) < 0) {
            r = -errno;
            step = "close";
        }
    }
    if (r == 0 && rename(tmp, path) < 0) {
        r = -errno;
        step = "rename";
    }
    if (r < 0) {
        unlink(tmp);
        return gs_error_set(err, r, "write %s: %s failed: %s", path, step, gs_strerror(r));
    }
    if ((flags & GS_FS_DURABLE) && (r = gs_fsync_dir(dir)) < 0)
        return gs_error_set(err, r, "write %s: fsync of directory %s failed: %s", path, dir,
                            gs_strerror(r));
    return 0;
}

int gs_read_file(const char *path, size_t max, char **out, size_t *len, struct gs_error *err)
{
    return gs_read_file_ex(path, max, 0, out, len, NULL, err);
}

int gs_read_file_ex(const char *path, size_t max, unsigned flags, char **out, size_t *len,
                    struct stat *stp, struct gs_error *err)
{
    *out = NULL;
    if (len)
        *len = 0;
    if (max > SIZE_MAX / 2)
        max = SIZE_MAX / 2; /* keeps max + 1 and the doubling below from overflowing */
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return gs_error_set(err, -errno, "%s: %s", path, gs_strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0)
        return gs_error_set(err, -errno, "%s: %s", path, gs_strerror(errno));
    if (S_ISDIR(st.st_mode))
        return gs_error_set(err, -EISDIR, "%s: is a directory", path);
    if ((flags & GS_READ_REGULAR) && !S_ISREG(st.st_mode))
        return gs_error_set(err, -EINVAL, "%s: not a regular file", path);
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max)
        return gs_error_set(err, -EFBIG,
                            "%s: file too big: %lld bytes exceeds the limit of %zu bytes", path,
                            (long long)st.st_size, max);
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 4096;
    if (cap > max + 1)
        cap = max + 1;
    _cleanup_free_ char *buf = malloc(cap + 1);
    if (!buf)
        return gs_error_set(err, -ENOMEM, "%s: out of memory", path);
    size_t n = 0;
    for (;;) {
        if (n == cap) {
            if (cap >= max + 1)
                break;
            size_t ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb)
                return gs_error_set(err, -ENOMEM, "%s: out of memory", path);
            buf = nb;
            cap = ncap;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return gs_error_set(err, -errno, "%s: %s", path, gs_strerror(errno));
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    if (n > max)
        return gs_error_set(err, -EFBIG, "%s: file too big: more than the limit of %zu bytes", path,
                            max);
    buf[n] = '\0';
    if (len)
        *len = n;
    if (stp)
        *stp = st;
    *out = TAKE_PTR(buf);
    return 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
    size_t n = strlen(path);
    if (n == 0)
        return -EINVAL;
    if (n >= PATH_MAX)
        return -ENAMETOOLONG;
    char buf[PATH_MAX];
    memcpy(buf, path, n + 1);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        if (buf[i - 1] == '/')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, mode) < 0) {
            int e = errno;
            struct stat st;
            if (e != EEXIST)
                return -e;
            if (stat(buf, &st) < 0)
                return -errno;
            if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        }
        buf[i] = saved;
    }
    return 0;
}

int gs_mkdir_p(const char *path, mode_t mode, struct gs_error *err)
{
    int r = mkdir_p(path, mode);
    if (r < 0)
        return gs_error_set(err, r, "mkdir %s: %s", path, gs_strerror(r));
    return 0;
}

static int rm_at(int parent, const char *name, int depth)
{
    if (depth > RM_MAX_DEPTH)
        return -ELOOP;
    if (unlinkat(parent, name, 0) == 0)
        return 0;
    if (errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -errno;
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return -e;
    }
    int r = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        r = rm_at(dirfd(d), e->d_name, depth + 1);
        if (r < 0)
            break;
    }
    closedir(d);
    if (r < 0)
        return r;
    if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

static int rm_rf(const char *path)
{
    if (!path || !*path)
        return -EINVAL;
    if (strcmp(path, "/") == 0)
        return -EPERM;
    return rm_at(AT_FDCWD, path, 0);
}

int gs_rm_rf(const char *path, struct gs_error *err)
{
    int r = rm_rf(path);
    if (r < 0)
        return gs_error_set(err, r, "remove %s: %s", path, gs_strerror(r));
    return 0;
}
