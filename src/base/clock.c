/* SPDX-License-Identifier: Apache-2.0 */
#include "base/clock.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "base/macros.h"

static uint64_t now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * GS_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t gs_now_ns(void)
{
    return now(CLOCK_MONOTONIC);
}

uint64_t gs_now_us(void)
{
    return gs_now_ns() / GS_NSEC_PER_USEC;
}

uint64_t gs_now_ms(void)
{
    return gs_now_ns() / GS_NSEC_PER_MSEC;
}

uint64_t gs_realtime_ns(void)
{
    return now(CLOCK_REALTIME);
}

struct timespec gs_timespec_ns(uint64_t ns)
{
    return (struct timespec){
        .tv_sec = (time_t)(ns / GS_NSEC_PER_SEC),
        .tv_nsec = (long)(ns % GS_NSEC_PER_SEC),
    };
}

struct timespec gs_timespec_in_ns(uint64_t ns)
{
    return gs_timespec_ns(gs_sat_add_u64(gs_now_ns(), ns));
}

int gs_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    int r = pthread_condattr_init(&ca);
    if (r)
        return r;
    r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!r)
        r = pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
    return r;
}

void gs_sleep_ns(uint64_t ns)
{
    struct timespec ts = gs_timespec_in_ns(ns);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

void gs_sleep_ms(uint64_t ms)
{
    gs_sleep_ns(gs_sat_mul_u64(ms, GS_NSEC_PER_MSEC));
}

uint64_t gs_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void gs_backoff_init(struct gs_backoff *b, uint64_t base_ns, uint64_t max_ns, uint64_t seed)
{
    if (seed == 0)
        seed = gs_realtime_ns() ^ ((uint64_t)getpid() << 32) ^ gs_now_ns();
    *b = (struct gs_backoff){
        .base_ns = base_ns,
        .max_ns = max_ns < base_ns ? base_ns : max_ns,
        .attempt = 0,
        .rng = seed,
    };
}

uint64_t gs_backoff_cap(const struct gs_backoff *b)
{
    uint64_t cap = b->base_ns;
    for (unsigned i = 0; i < b->attempt && cap < b->max_ns; i++)
        cap = gs_sat_mul_u64(cap, 2);
    return cap < b->max_ns ? cap : b->max_ns;
}

uint64_t gs_backoff_next(struct gs_backoff *b)
{
    uint64_t cap = gs_backoff_cap(b);
    if (b->attempt < 64)
        b->attempt++;
    uint64_t r = gs_splitmix64(&b->rng);
    /* Uniform in [0, cap]: multiply-shift maps 64 random bits onto the range without modulo
     * bias worth mentioning at these sizes. */
    if (cap == UINT64_MAX)
        return r;
    return (uint64_t)(((unsigned __int128)r * (cap + 1)) >> 64);
}

void gs_backoff_reset(struct gs_backoff *b)
{
    b->attempt = 0;
}

void gs_rfc3339_utc(int64_t unix_s, char *buf, size_t len)
{
    time_t tt = (time_t)unix_s;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "1970-01-01T00:00:00Z");
}
