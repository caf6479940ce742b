/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/macros.h"

static atomic_uint tmp_counter;

int files_sync_dir(const char *dir)
{
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    return fsync(fd) < 0 ? -errno : 0;
}

bool files_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int files_write_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                       struct gs_error *err)
{
    char dir[PATH_MAX], tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || strlen(path) >= sizeof(dir))
        return gs_error_set(err, -EINVAL, "%s: not an absolute path", path);
    size_t dlen = slash == path ? 1 : (size_t)(slash - path);
    memcpy(dir, path, dlen);
    dir[dlen] = '\0';
    int n = snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%d.%u", dir, slash + 1, (int)getpid(),
                     atomic_fetch_add(&tmp_counter, 1));
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return gs_error_set(err, -ENAMETOOLONG, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return gs_error_set(err, -errno, "cannot create %s: %s", tmp, strerror(errno));
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return gs_error_set(err, -e, "cannot write %s: %s", tmp, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (((flags & FILES_DURABLE) && fsync(fd) < 0) || fchmod(fd, mode) < 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return gs_error_set(err, -e, "cannot sync %s: %s", tmp, strerror(e));
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return gs_error_set(err, -e, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    if (flags & FILES_DURABLE)
        files_sync_dir(dir);
    return 0;
}

int files_mkdir_p(const char *path, mode_t mode, struct gs_error *err)
{
    char buf[PATH_MAX];
    if (strlen(path) >= sizeof(buf))
        return gs_error_set(err, -ENAMETOOLONG, "%s: path too long", path);
    /* Common cases first: the directory exists, or only its last component is missing. */
    struct stat st;
    if (mkdir(path, mode) == 0)
        return 0;
    if (errno == EEXIST) {
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return 0;
        return gs_error_set(err, -ENOTDIR, "%s is not a directory", path);
    }
    if (errno != ENOENT)
        return gs_error_set(err, -errno, "cannot create directory %s: %s", path, strerror(errno));
    strcpy(buf, path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return gs_error_set(err, -errno, "cannot create directory %s: %s", buf,
                                    strerror(errno));
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return gs_error_set(err, -ENOTDIR, "%s is not a directory", path);
    return 0;
}

static int remove_at(int parent, const char *name, int depth)
{
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
    if (depth > 16)
        return -ELOOP;
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -errno;
    }
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int rr = remove_at(dirfd(d), de->d_name, depth + 1);
        if (rr < 0 && r == 0)
            r = rr;
    }
    closedir(d);
    if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
        r = -errno;
    return r;
}

int files_remove_tree(const char *path, struct gs_error *err)
{
    int r = remove_at(AT_FDCWD, path, 0);
    if (r < 0)
        return gs_error_set(err, r, "cannot remove %s: %s", path, strerror(-r));
    return 0;
}

int files_read(const char *path, size_t max, char **out, size_t *out_len, struct gs_error *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gs_error_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
    size_t cap = GS_MIN((size_t)4096, max), len = 0;
    _cleanup_free_ char *buf = malloc(cap + 1);
    if (!buf)
        return gs_error_set(err, -ENOMEM, "out of memory");
    for (;;) {
        if (len == cap) {
            if (cap >= max) {
                char probe;
                ssize_t pr = read(fd, &probe, 1);
                if (pr == 0)
                    break;
                return gs_error_set(err, -E2BIG, "%s is larger than %zu bytes", path, max);
            }
            size_t ncap = GS_MIN(cap * 2, max);
            char *nb = realloc(buf, ncap + 1);
            if (!nb)
                return gs_error_set(err, -ENOMEM, "out of memory");
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return gs_error_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    *out = TAKE_PTR(buf);
    if (out_len)
        *out_len = len;
    return 0;
}
