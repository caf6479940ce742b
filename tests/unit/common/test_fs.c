/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "tap.h"

static char root[256];

static const char *P(const char *rel)
{
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", root, rel);
    return buf[i];
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void test_atomic_write(void)
{
    struct gs_error err = {0};
    const char *f = P("state.json");
    is_int(gs_write_file_atomic(f, "{\"a\":1}\n", 8, 0640, &err), 0, "atomic write creates");
    char *buf = NULL;
    size_t len = 0;
    is_int(gs_read_file(f, 1024, &buf, &len, &err), 0, "read back");
    is_str(buf, "{\"a\":1}\n", "content written");
    is_uint(len, 8, "length");
    free(buf);
    struct stat st;
    stat(f, &st);
    is_int(st.st_mode & 0777, 0640, "mode 0640 applied exactly (not masked)");

    is_int(gs_write_file_atomic(f, "new", 3, 0600, &err), 0, "atomic write replaces");
    gs_read_file(f, 1024, &buf, &len, &err);
    is_str(buf, "new", "content replaced");
    free(buf);
    stat(f, &st);
    is_int(st.st_mode & 0777, 0600, "mode of the replacement");
    is_int(count_entries(root), 1, "no temporary file left behind");

    is_int(gs_write_file_atomic(f, "", 0, 0644, &err), 0, "empty content");
    gs_read_file(f, 1024, &buf, &len, &err);
    is_uint(len, 0, "empty file");
    is_str(buf, "", "empty buffer NUL-terminated");
    free(buf);

    /* A large write goes through whole. */
    size_t big = 3 * 1024 * 1024 + 7;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    is_int(gs_write_file_atomic(P("big"), data, big, 0644, &err), 0, "3 MiB write");
    is_int(gs_read_file(P("big"), big, &buf, &len, &err), 0, "read exactly at the limit");
    ok(len == big && memcmp(buf, data, big) == 0, "3 MiB content identical");
    free(buf);
    free(data);
    unlink(P("big"));

    is_int(gs_write_file_atomic(P("nodir/x"), "x", 1, 0644, &err), -ENOENT,
           "missing directory -> -ENOENT");
    like_str(err.msg, "nodir/x", "message names the path");
    is_int(gs_write_file_atomic(P("dir/"), "x", 1, 0644, &err), -EISDIR,
           "path ending in / refused");

    /* Rename onto a non-empty directory fails: the directory is untouched, no temp left. */
    mkdir(P("busy"), 0755);
    gs_write_file_atomic(P("busy/keep"), "k", 1, 0644, &err);
    int r = gs_write_file_atomic(P("busy"), "x", 1, 0644, &err);
    ok(r < 0, "rename over a directory fails (%d)", r);
    like_str(err.msg, "rename failed", "message names the failing step");
    is_int(count_entries(root), 2, "temporary file removed after failure");
    gs_read_file(P("busy/keep"), 16, &buf, &len, &err);
    is_str(buf, "k", "existing content untouched");
    free(buf);
}

static void test_read(void)
{
    struct gs_error err = {0};
    char *buf = (char *)1;
    size_t len = 99;
    gs_write_file_atomic(P("ten"), "0123456789", 10, 0644, &err);
    is_int(gs_read_file(P("ten"), 9, &buf, &len, &err), -EFBIG, "one byte over -> -EFBIG");
    ok(buf == NULL, "no buffer on error");
    like_str(err.msg, "exceeds the limit of 9 bytes", "limit named");
    like_str(err.msg, "ten", "path named");
    is_int(gs_read_file(P("ten"), 10, &buf, &len, &err), 0, "exactly at the limit");
    free(buf);
    is_int(gs_read_file(P("missing"), 10, &buf, &len, &err), -ENOENT, "missing file");
    like_str(err.msg, "missing: No such file", "missing message");
    is_int(gs_read_file(root, 10, &buf, &len, &err), -EISDIR, "directory refused");
    /* Files without a size in stat() are bounded while reading. */
    is_int(gs_read_file("/proc/self/status", 16, &buf, &len, &err), -EFBIG,
           "/proc file larger than the limit");
    like_str(err.msg, "more than the limit of 16 bytes", "stream limit message");
    is_int(gs_read_file("/proc/self/status", 1 << 20, &buf, &len, &err), 0, "/proc file read");
    ok(len > 16 && strncmp(buf, "Name:", 5) == 0, "/proc content");
    free(buf);
    int p[2];
    if (pipe(p) == 0) {
        char dev[64];
        if (write(p[1], "hello pipe", 10) != 10)
            diag("short pipe write");
        close(p[1]);
        snprintf(dev, sizeof(dev), "/dev/fd/%d", p[0]);
        is_int(gs_read_file(dev, 100, &buf, &len, &err), 0, "read a pipe");
        is_str(buf, "hello pipe", "pipe content");
        free(buf);
        close(p[0]);
    }

    /* gs_read_file_ex: the stat of what was read; regular files only on request */
    struct stat st = {0}, now = {0};
    is_int(gs_read_file_ex(P("ten"), 10, GS_READ_REGULAR, &buf, &len, &st, &err), 0,
           "gs_read_file_ex reads a regular file");
    ok(len == 10 && strcmp(buf, "0123456789") == 0, "gs_read_file_ex content");
    free(buf);
    ok(stat(P("ten"), &now) == 0 && st.st_ino == now.st_ino && st.st_dev == now.st_dev &&
           st.st_size == 10,
       "gs_read_file_ex gives the identity and size of the file read");
    /* replaced after the read: the identity is still that of the file read */
    gs_write_file_atomic(P("ten"), "abc", 3, 0644, &err);
    ok(stat(P("ten"), &now) == 0 && st.st_ino != now.st_ino && st.st_size == 10,
       "a file replaced after the read does not change the identity returned");
    is_int(gs_read_file_ex(P("ten"), 2, GS_READ_REGULAR, &buf, &len, NULL, &err), -EFBIG,
           "gs_read_file_ex keeps the size limit");
    if (pipe(p) == 0) {
        char dev[64];
        snprintf(dev, sizeof(dev), "/dev/fd/%d", p[0]);
        if (write(p[1], "x", 1) != 1)
            diag("short pipe write");
        close(p[1]);
        is_int(gs_read_file_ex(dev, 100, GS_READ_REGULAR, &buf, &len, &st, &err), -EINVAL,
               "GS_READ_REGULAR refuses a pipe before reading it");
        like_str(err.msg, "not a regular file", "not-regular message");
        ok(buf == NULL, "no buffer for a refused file");
        close(p[0]);
    }
}

static void test_mkdir_rm(void)
{
    struct gs_error err = {0};
    is_int(gs_mkdir_p(P("a/b/c/d"), 0750, NULL), 0, "mkdir -p nested");
    struct stat st;
    ok(stat(P("a/b/c/d"), &st) == 0 && S_ISDIR(st.st_mode), "nested dir exists");
    is_int(gs_mkdir_p(P("a/b/c/d"), 0750, NULL), 0, "mkdir -p existing is fine");
    is_int(gs_mkdir_p(P("a/b//e///"), 0750, NULL), 0, "repeated and trailing slashes");
    ok(stat(P("a/b/e"), &st) == 0 && S_ISDIR(st.st_mode), "dir from slashy path exists");
    gs_write_file_atomic(P("a/file"), "x", 1, 0644, &err);
    is_int(gs_mkdir_p(P("a/file/sub"), 0750, NULL), -ENOTDIR, "file in the way -> -ENOTDIR");
    is_int(gs_mkdir_p(P("a/file"), 0750, NULL), -ENOTDIR, "existing file -> -ENOTDIR");
    is_int(gs_mkdir_p("", 0750, NULL), -EINVAL, "empty path");
    struct gs_error me = {0};
    is_int(gs_mkdir_p(P("a/file/sub"), 0750, &me), -ENOTDIR, "mkdir -p with an error buffer");
    like_str(me.msg, "a/file/sub", "mkdir error names the path");
    is_int(gs_write_file_atomic_ex(P("fast.txt"), "x", 1, 0600, 0, &me), 0,
           "non-durable atomic write");
    char *fb = NULL;
    size_t fl = 0;
    is_int(gs_read_file(P("fast.txt"), 16, &fb, &fl, &me), 0, "non-durable write reads back");
    is_str(fb, "x", "content of the non-durable write");
    free(fb);
    is_int(gs_fsync_dir(P("")), 0, "fsync of a directory");
    is_int(gs_fsync_dir(P("no-such-dir")), -ENOENT, "fsync of a missing directory");

    /* rm -rf: files, nested dirs, and a symlink pointing outside that must not be followed. */
    gs_mkdir_p(P("outside"), 0755, NULL);
    gs_write_file_atomic(P("outside/precious"), "p", 1, 0644, &err);
    gs_write_file_atomic(P("a/b/c/d/f1"), "1", 1, 0644, &err);
    gs_write_file_atomic(P("a/b/f2"), "2", 1, 0644, &err);
    ok(symlink(P("outside"), P("a/b/link")) == 0, "symlink to outside dir");
    is_int(gs_rm_rf(P("a"), NULL), 0, "rm -rf tree");
    ok(stat(P("a"), &st) < 0 && errno == ENOENT, "tree gone");
    ok(stat(P("outside/precious"), &st) == 0, "symlink target untouched");
    is_int(gs_rm_rf(P("a"), NULL), 0, "rm -rf of a missing path is 0");
    is_int(gs_rm_rf(P("outside/precious"), NULL), 0, "rm -rf of a file");
    ok(stat(P("outside/precious"), &st) < 0, "file gone");
    is_int(gs_rm_rf("", NULL), -EINVAL, "empty path refused");
    is_int(gs_rm_rf("/", NULL), -EPERM, "/ refused");
}

/* Temporaries of an interrupted atomic write: one naming, removed by gs_remove_temps. */
static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0)
        close(fd);
}

static void test_temps(void)
{
    mkdir(P("t"), 0700);
    touch(P("t/.k8s.x-claim_1.json.tmp.AbC123"));       /* ours */
    touch(P("t/.k8s.x-claim_2.json.Zz9xY0"));           /* the shape before .tmp. */
    touch(P("t/.k8s.x-claim_.Zz9xY1"));                 /* the shortest such name */
    touch(P("t/.k8s.x-claim_3.json.tmp.ab"));           /* not a mkostemp suffix */
    touch(P("t/k8s.x-claim_1.json"));                   /* a real file */
    touch(P("t/.other.json.tmp.abcdef"));               /* another name */
    mkdir(P("t/.k8s.x-claim_d.json.tmp.abcdef"), 0700); /* not a regular file */
    is_int(gs_remove_temps(P("t"), "k8s.x-claim_"), 3, "three temporaries of the prefix removed");
    ok(access(P("t/k8s.x-claim_1.json"), F_OK) == 0, "the real file stays");
    ok(access(P("t/.k8s.x-claim_3.json.tmp.ab"), F_OK) == 0, "a short suffix stays");
    ok(access(P("t/.other.json.tmp.abcdef"), F_OK) == 0, "another prefix stays");
    ok(access(P("t/.k8s.x-claim_d.json.tmp.abcdef"), F_OK) == 0, "a directory stays");
    is_int(gs_remove_temps(P("t"), ""), 1, "empty prefix: any .tmp. temporary");
    ok(access(P("t/.other.json.tmp.abcdef"), F_OK) != 0, "...such as .other.json.tmp.XXXXXX");
    is_int(gs_remove_temps(P("missing"), ""), -ENOENT, "missing directory -> -ENOENT");
    struct gs_error err = {0};
    is_int(gs_write_file_atomic(P("t/k8s.x-claim_9.json"), "{}", 2, 0644, &err), 0, "write");
    is_int(gs_remove_temps(P("t"), "k8s.x-claim_"), 0, "a completed write leaves no temporary");
}

int main(void)
{
    tap_plan_auto();
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof(root), "%s/gs-test-fs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        ok(0, "mkdtemp");
        return tap_done();
    }
    test_atomic_write();
    test_read();
    /* reset the scratch dir between groups */
    gs_rm_rf(P("busy"), NULL);
    gs_rm_rf(P("state.json"), NULL);
    gs_rm_rf(P("ten"), NULL);
    test_temps();
    test_mkdir_rm();
    is_int(gs_rm_rf(root, NULL), 0, "scratch dir removed");
    return tap_done();
}
