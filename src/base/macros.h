/* SPDX-License-Identifier: Apache-2.0 */
/* Small language helpers shared by every module: cleanup attributes, ownership, sizes. */
#ifndef GS_COMMON_MACROS_H
#define GS_COMMON_MACROS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define GS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define GS_UNUSED        __attribute__((unused))
#define GS_PRINTF(f, a)  __attribute__((format(printf, f, a)))
#define GS_EXPORT        __attribute__((visibility("default")))
#define GS_LIKELY(x)     __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x)   __builtin_expect(!!(x), 0)
#define GS_MIN(a, b)     ((a) < (b) ? (a) : (b))
#define GS_MAX(a, b)     ((a) > (b) ? (a) : (b))

/* Hand ownership of a cleanup-managed pointer out of its scope. */
#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        __typeof__(p) _tp = (p);                                                                   \
        (p) = NULL;                                                                                \
        _tp;                                                                                       \
    })

#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int _tf = (fd);                                                                            \
        (fd) = -1;                                                                                 \
        _tf;                                                                                       \
    })

static inline void gs_freep(void *p)
{
    free(*(void **)p);
}

static inline void gs_closep(const int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
    }
}

static inline void gs_fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

#define _cleanup_(f)     __attribute__((cleanup(f)))
#define _cleanup_free_   _cleanup_(gs_freep)
#define _cleanup_close_  _cleanup_(gs_closep)
#define _cleanup_fclose_ _cleanup_(gs_fclosep)

/* The value of a hexadecimal digit, -1 when `c` is not one. */
static inline int gs_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Saturating and checked arithmetic on sizes and quantities. */
static inline uint64_t gs_sat_add_u64(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline uint64_t gs_sat_sub_u64(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

static inline uint64_t gs_sat_mul_u64(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif /* GS_COMMON_MACROS_H */
