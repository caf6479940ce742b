/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glibc symbol-version ceiling of libvgpu.so (docs/internals/vgpu.md, "glibc ceiling").
 *
 * libvgpu is not run in our image but preloaded into users' CUDA images: Ubuntu 20.04 (glibc
 * 2.31), UBI 8 (2.28), CentOS 7 (2.17). Built on Debian 12 (glibc 2.36), every reference to
 * dlopen, dlerror, pthread_once, pthread_mutexattr_* ... binds to the GLIBC_2.34 version (the
 * release that moved libdl and libpthread into libc), which no older glibc has: the dynamic
 * loader refuses the library ("version `GLIBC_2.34' not found") and the application starts
 * without enforcement or not at all.
 *
 * This header is force-included (-include) into every translation unit of libvgpu by
 * src/vgpu/meson.build. Each GS_GLIBC_SYMVER line binds a reference to the newest version the
 * symbol had before 2.34 (same function, same ABI: glibc 2.34+ keeps those versions as aliases),
 * only when the translation unit uses the symbol. The list is every libdl/libpthread function
 * with such an older version at or below GLIBC_2.17, from `objdump -T libc.so.6` of glibc 2.36
 * (x86_64 versions; on aarch64 every one of them is GLIBC_2.17, the port's first release).
 * dlsym is absent on purpose: libvgpu defines (and exports) dlsym, and .symver would rename the
 * definition; it reaches the real one through dlvsym.
 *
 * libvgpu also links libdl.so.2 and libpthread.so.0 by name (meson.build): before 2.34 these
 * old versions live there, not in libc.so.6. Functions whose signature changed (stat64 and
 * friends, 2.33) or that are newer than the ceiling (strerrordesc_np, 2.32) are wrapped by the
 * linker (--wrap) and implemented in glibc-compat.c. tests/integration/release/test_glibc.py
 * fails on any version need above the ceiling; a new libc function that trips it goes here (if it
 * moved in 2.34) or into glibc-compat.c (fallback).
 */
#ifndef GS_VGPU_GLIBC_COMPAT_H
#define GS_VGPU_GLIBC_COMPAT_H

#if defined(__x86_64__)
#define GS_GLIBC_SYMVER(sym, version) __asm__(".symver " #sym "," #sym "@" version);
/* same ABI on LP64: the pre-2.28 fcntl is fcntl64 */
#define GS_GLIBC_SYMVER_AS(sym, old, version) __asm__(".symver " #sym "," #old "@" version);
#elif defined(__aarch64__)
#define GS_GLIBC_SYMVER(sym, version)         __asm__(".symver " #sym "," #sym "@GLIBC_2.17");
#define GS_GLIBC_SYMVER_AS(sym, old, version) __asm__(".symver " #sym "," #old "@GLIBC_2.17");
#else
/* Other architectures: no binding; the ceiling test reports what the build needs. */
#define GS_GLIBC_SYMVER(sym, version)
#define GS_GLIBC_SYMVER_AS(sym, old, version)
#endif

/* clang-format off */
GS_GLIBC_SYMVER(dladdr, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(dladdr1, "GLIBC_2.3.3")
GS_GLIBC_SYMVER(dlclose, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(dlerror, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(dlinfo, "GLIBC_2.3.3")
GS_GLIBC_SYMVER(dlmopen, "GLIBC_2.3.4")
GS_GLIBC_SYMVER(dlopen, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(dlvsym, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_attr_getaffinity_np, "GLIBC_2.3.4")
GS_GLIBC_SYMVER(pthread_attr_getguardsize, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_attr_getstack, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_attr_getstackaddr, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_attr_getstacksize, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_attr_setguardsize, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_attr_setstack, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_attr_setstackaddr, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_attr_setstacksize, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_barrier_destroy, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_barrier_init, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_barrier_wait, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_barrierattr_destroy, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_barrierattr_getpshared, "GLIBC_2.3.3")
GS_GLIBC_SYMVER(pthread_barrierattr_init, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_barrierattr_setpshared, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_cancel, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_condattr_getclock, "GLIBC_2.3.3")
GS_GLIBC_SYMVER(pthread_condattr_getpshared, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_condattr_setclock, "GLIBC_2.3.3")
GS_GLIBC_SYMVER(pthread_condattr_setpshared, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_create, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_detach, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_getconcurrency, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_getcpuclockid, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_getname_np, "GLIBC_2.12")
GS_GLIBC_SYMVER(pthread_getspecific, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_join, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_key_create, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_key_delete, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_kill, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_mutex_consistent, "GLIBC_2.12")
GS_GLIBC_SYMVER(pthread_mutex_getprioceiling, "GLIBC_2.4")
GS_GLIBC_SYMVER(pthread_mutex_setprioceiling, "GLIBC_2.4")
GS_GLIBC_SYMVER(pthread_mutex_timedlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_mutex_trylock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_mutexattr_destroy, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_mutexattr_getprioceiling, "GLIBC_2.4")
GS_GLIBC_SYMVER(pthread_mutexattr_getprotocol, "GLIBC_2.4")
GS_GLIBC_SYMVER(pthread_mutexattr_getpshared, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_mutexattr_getrobust, "GLIBC_2.12")
GS_GLIBC_SYMVER(pthread_mutexattr_gettype, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_mutexattr_init, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_mutexattr_setprioceiling, "GLIBC_2.4")
GS_GLIBC_SYMVER(pthread_mutexattr_setprotocol, "GLIBC_2.4")
GS_GLIBC_SYMVER(pthread_mutexattr_setpshared, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_mutexattr_setrobust, "GLIBC_2.12")
GS_GLIBC_SYMVER(pthread_mutexattr_settype, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_once, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_destroy, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_init, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_rdlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_timedrdlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_timedwrlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_tryrdlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_trywrlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_unlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlock_wrlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlockattr_destroy, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlockattr_getkind_np, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlockattr_getpshared, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlockattr_init, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlockattr_setkind_np, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_rwlockattr_setpshared, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_setaffinity_np, "GLIBC_2.3.4")
GS_GLIBC_SYMVER(pthread_setconcurrency, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_setname_np, "GLIBC_2.12")
GS_GLIBC_SYMVER(pthread_setschedprio, "GLIBC_2.3.4")
GS_GLIBC_SYMVER(pthread_setspecific, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_sigqueue, "GLIBC_2.11")
GS_GLIBC_SYMVER(pthread_spin_destroy, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_spin_init, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_spin_lock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_spin_trylock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_spin_unlock, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_testcancel, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(pthread_timedjoin_np, "GLIBC_2.3.3")
GS_GLIBC_SYMVER(pthread_tryjoin_np, "GLIBC_2.3.3")
GS_GLIBC_SYMVER(sem_close, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_destroy, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_getvalue, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_init, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_open, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_post, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_timedwait, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_trywait, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_unlink, "GLIBC_2.2.5")
GS_GLIBC_SYMVER(sem_wait, "GLIBC_2.2.5")
GS_GLIBC_SYMVER_AS(fcntl64, fcntl, "GLIBC_2.2.5")
/* clang-format on */

#endif /* GS_VGPU_GLIBC_COMPAT_H */
