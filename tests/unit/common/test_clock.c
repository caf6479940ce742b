/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/macros.h"
#include "tap.h"

int main(void)
{
    tap_plan_auto();
    uint64_t a = gs_now_ns(), b = gs_now_ns();
    ok(b >= a, "monotonic clock does not go back");
    uint64_t us = gs_now_us(), ms = gs_now_ms();
    ok(us >= a / 1000 && ms >= a / 1000000, "us and ms views of the same clock");
    ok(gs_realtime_ns() > 1600000000ULL * GS_NSEC_PER_SEC, "realtime is after 2020");

    /* sleep guarantees a lower bound */
    uint64_t t0 = gs_now_ns();
    gs_sleep_ms(3);
    ok(gs_now_ns() - t0 >= 3 * GS_NSEC_PER_MSEC, "gs_sleep_ms(3) sleeps at least 3 ms");

    /* caps: base * 2^k up to max */
    struct gs_backoff bo;
    gs_backoff_init(&bo, 100, 1000, 42);
    const uint64_t caps[] = {100, 200, 400, 800, 1000, 1000, 1000};
    for (unsigned i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        is_uint(gs_backoff_cap(&bo), caps[i], "cap at attempt %u", i);
        uint64_t d = gs_backoff_next(&bo);
        ok(d <= caps[i], "delay %llu within [0, %llu]", (unsigned long long)d,
           (unsigned long long)caps[i]);
    }
    gs_backoff_reset(&bo);
    is_uint(gs_backoff_cap(&bo), 100, "reset brings the cap back to base");

    /* deterministic under a seed, different across seeds */
    struct gs_backoff x, y, z;
    gs_backoff_init(&x, GS_NSEC_PER_MSEC, GS_NSEC_PER_SEC, 7);
    gs_backoff_init(&y, GS_NSEC_PER_MSEC, GS_NSEC_PER_SEC, 7);
    gs_backoff_init(&z, GS_NSEC_PER_MSEC, GS_NSEC_PER_SEC, 8);
    int same = 1, differs = 0;
    for (int i = 0; i < 20; i++) {
        uint64_t dx = gs_backoff_next(&x), dy = gs_backoff_next(&y), dz = gs_backoff_next(&z);
        same &= dx == dy;
        differs |= dx != dz;
    }
    ok(same, "same seed, same delays");
    ok(differs, "another seed, other delays");

    /* full jitter: uniform over [0, cap], mean close to cap/2 over many draws */
    struct gs_backoff u;
    gs_backoff_init(&u, 1000000, 1000000, 12345);
    double sum = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        uint64_t d = gs_backoff_next(&u);
        sum += (double)d;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    double mean = sum / n;
    ok(mean > 480000 && mean < 520000, "mean %.0f is about cap/2 (500000)", mean);
    ok(lo < 10000 && hi > 990000 && hi <= 1000000, "draws span [0, cap]: %llu..%llu",
       (unsigned long long)lo, (unsigned long long)hi);

    /* saturation: no overflow for huge bases or many attempts */
    struct gs_backoff s;
    gs_backoff_init(&s, UINT64_MAX / 3, UINT64_MAX, 1);
    for (int i = 0; i < 100; i++)
        gs_backoff_next(&s);
    is_uint(gs_backoff_cap(&s), UINT64_MAX, "cap saturates at max");
    struct gs_backoff m;
    gs_backoff_init(&m, 500, 100, 1);
    is_uint(gs_backoff_cap(&m), 500, "max below base is raised to base");

    uint64_t st = 0;
    is_uint(gs_splitmix64(&st), 0xe220a8397b1dcdafULL, "splitmix64 reference value for seed 0");

    /* monotonic deadlines as timespecs, for condition waits */
    struct timespec ts = gs_timespec_ns(3 * GS_NSEC_PER_SEC + 250);
    ok(ts.tv_sec == 3 && ts.tv_nsec == 250, "gs_timespec_ns splits seconds and nanoseconds");
    ts = gs_timespec_ns(GS_NSEC_PER_SEC - 1);
    ok(ts.tv_sec == 0 && ts.tv_nsec == 999999999L, "gs_timespec_ns keeps tv_nsec below 1 s");
    ts = gs_timespec_in_ns(UINT64_MAX);
    ok(ts.tv_sec == (time_t)(UINT64_MAX / GS_NSEC_PER_SEC), "gs_timespec_in_ns saturates");
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    is_int(gs_cond_init_monotonic(&cond), 0, "gs_cond_init_monotonic");
    uint64_t before = gs_now_ns();
    struct timespec until = gs_timespec_in_ns(2 * GS_NSEC_PER_MSEC);
    pthread_mutex_lock(&mu);
    int r = 0;
    while ((r = pthread_cond_timedwait(&cond, &mu, &until)) == 0)
        ;
    pthread_mutex_unlock(&mu);
    is_int(r, ETIMEDOUT, "a timed wait on the monotonic condition times out");
    /* the deadline is read on CLOCK_MONOTONIC: the wait ends at or after it (on CLOCK_REALTIME,
     * a monotonic deadline lies decades in the past and the wait would return at once) */
    ok(gs_now_ns() >= before + 2 * GS_NSEC_PER_MSEC,
       "the wait lasted until the monotonic deadline");
    pthread_cond_destroy(&cond);

    /* hexadecimal digits (macros.h) */
    ok(gs_hex_digit('0') == 0 && gs_hex_digit('9') == 9 && gs_hex_digit('a') == 10 &&
           gs_hex_digit('F') == 15,
       "gs_hex_digit of 0, 9, a, F");
    ok(gs_hex_digit('g') == -1 && gs_hex_digit('/') == -1 && gs_hex_digit(':') == -1 &&
           gs_hex_digit('@') == -1 && gs_hex_digit('`') == -1 && gs_hex_digit((char)0xe9) == -1,
       "gs_hex_digit refuses the neighbours of the digit ranges and a negative char");
    return tap_done();
}
