/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fallbacks that keep libvgpu.so under its glibc ceiling (see glibc-compat.h): functions whose
 * current version is newer than GLIBC_2.17 and which cannot simply be bound to an older version
 * of themselves. src/vgpu/meson.build links libvgpu with --wrap=NAME for each, so every reference
 * to NAME in libvgpu calls __wrap_NAME here instead.
 *
 *   stat64, fstat64, lstat64, fstatat64  GLIBC_2.33: before that, the stat family was a set of
 *       header inlines calling __xstat64 & co. with a structure version; glibc keeps those.
 *   strerrordesc_np  GLIBC_2.32: looked up at run time; where absent, GNU strerror_r into a
 *       per-thread buffer (thread-safe, like strerrordesc_np).
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__x86_64__)
#define STAT_VER           1 /* _STAT_VER_LINUX */
#define OLD_STAT_VERSION   "GLIBC_2.2.5"
#define OLD_STATAT_VERSION "GLIBC_2.4"
#elif defined(__aarch64__)
#define STAT_VER           0
#define OLD_STAT_VERSION   "GLIBC_2.17"
#define OLD_STATAT_VERSION "GLIBC_2.17"
#endif

/* Only what libvgpu itself calls is wrapped; the prototypes keep -Wmissing-prototypes quiet. */
int __wrap_stat64(const char *path, struct stat64 *st);
int __wrap_fstat64(int fd, struct stat64 *st);
int __wrap_lstat64(const char *path, struct stat64 *st);
int __wrap_fstatat64(int dirfd, const char *path, struct stat64 *st, int flags);
const char *__wrap_strerrordesc_np(int code);

#ifdef STAT_VER
int __xstat64(int ver, const char *path, struct stat64 *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);
__asm__(".symver __xstat64,__xstat64@" OLD_STAT_VERSION);
__asm__(".symver __fxstat64,__fxstat64@" OLD_STAT_VERSION);
__asm__(".symver __lxstat64,__lxstat64@" OLD_STAT_VERSION);
__asm__(".symver __fxstatat64,__fxstatat64@" OLD_STATAT_VERSION);

int __wrap_stat64(const char *path, struct stat64 *st)
{
    return __xstat64(STAT_VER, path, st);
}

int __wrap_fstat64(int fd, struct stat64 *st)
{
    return __fxstat64(STAT_VER, fd, st);
}

int __wrap_lstat64(const char *path, struct stat64 *st)
{
    return __lxstat64(STAT_VER, path, st);
}

int __wrap_fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    return __fxstatat64(STAT_VER, dirfd, path, st, flags);
}
#else
/* Another architecture: no old binding known here, call the real functions. */
int __real_stat64(const char *path, struct stat64 *st);
int __real_fstat64(int fd, struct stat64 *st);
int __real_lstat64(const char *path, struct stat64 *st);
int __real_fstatat64(int dirfd, const char *path, struct stat64 *st, int flags);

int __wrap_stat64(const char *path, struct stat64 *st)
{
    return __real_stat64(path, st);
}

int __wrap_fstat64(int fd, struct stat64 *st)
{
    return __real_fstat64(fd, st);
}

int __wrap_lstat64(const char *path, struct stat64 *st)
{
    return __real_lstat64(path, st);
}

int __wrap_fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    return __real_fstatat64(dirfd, path, st, flags);
}
#endif

typedef const char *(*strerrordesc_fn)(int);

/* Resolved once: the address of glibc's strerrordesc_np, or (void *)1 when this glibc has none. */
static _Atomic(void *) strerrordesc;

const char *__wrap_strerrordesc_np(int code)
{
    void *fn = atomic_load_explicit(&strerrordesc, memory_order_acquire);
    if (!fn) {
        /* dlvsym, not dlsym: libvgpu's own exported dlsym would answer a dlsym call. */
        fn = dlvsym(RTLD_DEFAULT, "strerrordesc_np", "GLIBC_2.32");
        if (!fn)
            fn = (void *)1;
        atomic_store_explicit(&strerrordesc, fn, memory_order_release);
    }
    if (fn != (void *)1)
        return ((strerrordesc_fn)fn)(code);
    static __thread char buf[128];
    return strerror_r(code, buf, sizeof(buf)); /* GNU: the message, in buf or static */
}
