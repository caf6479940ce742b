/* SPDX-License-Identifier: Apache-2.0 */
/* Monotonic time, sleeping, and exponential backoff with full jitter. */
#ifndef GS_COMMON_CLOCK_H
#define GS_COMMON_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define GS_NSEC_PER_USEC 1000ULL
#define GS_NSEC_PER_MSEC 1000000ULL
#define GS_NSEC_PER_SEC  1000000000ULL

/* CLOCK_MONOTONIC (never jumps with wall-clock changes). */
uint64_t gs_now_ns(void);
uint64_t gs_now_us(void);
uint64_t gs_now_ms(void);
/* Unix seconds as RFC 3339 in UTC, "2026-12-06T20:22:29Z" (Kubernetes' metav1.Time layout), into
 * buf (at least 21 bytes); "1970-01-01T00:00:00Z" for a time gmtime cannot represent. The one
 * formatter of the daemons (Events, taints' timeAdded, HAMi's node lock). */
void gs_rfc3339_utc(int64_t unix_s, char *buf, size_t len);

/* CLOCK_REALTIME in ns since the epoch, for timestamps shown to people. */
uint64_t gs_realtime_ns(void);

/* An absolute CLOCK_MONOTONIC time in ns (a gs_now_ns() value, a deadline) as a timespec, for
 * pthread_cond_timedwait on a condition made by gs_cond_init_monotonic. */
struct timespec gs_timespec_ns(uint64_t ns);
/* A deadline `ns` from now (saturating) as such a timespec. */
struct timespec gs_timespec_in_ns(uint64_t ns);
/* pthread_cond_init with CLOCK_MONOTONIC as the clock of its timed waits (a wall-clock step
 * neither ends nor stretches a wait); returns pthread_cond_init's result. */
int gs_cond_init_monotonic(pthread_cond_t *cond);

/* Sleep at least `ns` (restarts after signals, on an absolute monotonic deadline). */
void gs_sleep_ns(uint64_t ns);
void gs_sleep_ms(uint64_t ms);

/*
 * Exponential backoff with full jitter: attempt k waits a uniformly random time in
 * [0, min(max, base * 2^k)]. The generator is a splitmix64 stream seeded by `seed`, so a given
 * seed always yields the same delays (tests); seed 0 picks a seed from the clock and pid.
 */
struct gs_backoff {
    uint64_t base_ns;
    uint64_t max_ns;
    unsigned attempt;
    uint64_t rng;
};

void gs_backoff_init(struct gs_backoff *b, uint64_t base_ns, uint64_t max_ns, uint64_t seed);
/* The cap for the current attempt (before jitter): min(max, base * 2^attempt), saturating. */
uint64_t gs_backoff_cap(const struct gs_backoff *b);
/* Delay for this attempt, then advance to the next. */
uint64_t gs_backoff_next(struct gs_backoff *b);
/* Back to attempt 0 (after a success). */
void gs_backoff_reset(struct gs_backoff *b);

/* Next value of a splitmix64 stream (exposed for deterministic tests and jitter elsewhere). */
uint64_t gs_splitmix64(uint64_t *state);

#endif /* GS_COMMON_CLOCK_H */
