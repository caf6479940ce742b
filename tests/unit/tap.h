/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal in-house TAP producer. One header, no allocation.
 *
 *   int main(void) {
 *       tap_plan_auto();                 // or tap_plan(n)
 *       ok(1 + 1 == 2, "arithmetic");
 *       is_int(f(), 0, "f returns 0");
 *       is_str(buf, "4Gi", "canonical 4Gi");
 *       skip("no /proc", "why");
 *       return tap_done();               // prints the plan if auto, exit status = failures != 0
 *   }
 */
#ifndef GS_TESTS_TAP_H
#define GS_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int tap_n_ = 0, tap_failed_ = 0, tap_auto_ = 0;

static inline void tap_plan(int n)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("1..%d\n", n);
}

static inline void tap_plan_auto(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    tap_auto_ = 1;
}

__attribute__((format(printf, 2, 3))) static inline int ok(int cond, const char *fmt, ...)
{
    va_list ap;
    tap_n_++;
    printf("%sok %d - ", cond ? "" : "not ", tap_n_);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond)
        tap_failed_++;
    fflush(stdout);
    return cond;
}

__attribute__((format(printf, 1, 2))) static inline void diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static inline void skip(const char *what, const char *why)
{
    tap_n_++;
    printf("ok %d - %s # SKIP %s\n", tap_n_, what, why);
    fflush(stdout);
}

#define is_int(got, want, ...)                                                                     \
    do {                                                                                           \
        long long g_ = (long long)(got), w_ = (long long)(want);                                   \
        if (!ok(g_ == w_, __VA_ARGS__))                                                            \
            diag("  got %lld, want %lld (%s:%d)", g_, w_, __FILE__, __LINE__);                     \
    } while (0)

#define is_uint(got, want, ...)                                                                    \
    do {                                                                                           \
        unsigned long long g_ = (unsigned long long)(got), w_ = (unsigned long long)(want);        \
        if (!ok(g_ == w_, __VA_ARGS__))                                                            \
            diag("  got %llu, want %llu (%s:%d)", g_, w_, __FILE__, __LINE__);                     \
    } while (0)

#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (!ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__))                                     \
            diag("  got \"%s\", want \"%s\" (%s:%d)", g_ ? g_ : "(null)", w_ ? w_ : "(null)",      \
                 __FILE__, __LINE__);                                                              \
    } while (0)

#define like_str(got, needle, ...)                                                                 \
    do {                                                                                           \
        const char *g_ = (got), *n_ = (needle);                                                    \
        if (!ok(g_ && n_ && strstr(g_, n_) != NULL, __VA_ARGS__))                                  \
            diag("  \"%s\" does not contain \"%s\" (%s:%d)", g_ ? g_ : "(null)", n_, __FILE__,     \
                 __LINE__);                                                                        \
    } while (0)

/* The reference data folder (Kubernetes fixtures and schemas, outside the repository):
 * $GPUSLICE_REFERENCE_DIR, else GS_REFERENCE_DIR that meson sets. NULL when it does not exist: the
 * caller then calls tap_skip_reference() once and runs the rest (docs/internals/build.md). */
static inline const char *tap_reference_dir(void)
{
    const char *d = getenv("GPUSLICE_REFERENCE_DIR");
    if (!d || !*d)
        d = getenv("GS_REFERENCE_DIR");
    struct stat st;
    if (!d || !*d || stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
        return NULL;
    return d;
}

/* One line saying the oracle `what` is skipped because the reference data is absent; a failure
 * instead when GPUSLICE_REQUIRE_REFERENCE=1 (CI). */
static inline void tap_skip_reference(const char *what)
{
    const char *req = getenv("GPUSLICE_REQUIRE_REFERENCE");
    if (req && strcmp(req, "1") == 0) {
        ok(0, "%s: reference data required (GPUSLICE_REQUIRE_REFERENCE=1)", what);
        return;
    }
    skip(what, "reference data absent: clone ../shared beside the repository or set "
               "GPUSLICE_REFERENCE_DIR");
}

static inline int tap_done(void)
{
    if (tap_auto_)
        printf("1..%d\n", tap_n_);
    fflush(stdout);
    return tap_failed_ ? 1 : 0;
}

#endif /* GS_TESTS_TAP_H */
