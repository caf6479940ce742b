/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Prometheus exposition being built: families declared up front, samples added in any order,
 * rendered as text format 0.0.4 or OpenMetrics 1.0.0.
 *
 *     struct mon_expo *e = mon_expo_new(MON_EXPO_MAX_BYTES);
 *     int f = mon_expo_family(e, &def);             // HELP/TYPE come from def
 *     struct mon_labels l; mon_labels_init(&l);
 *     mon_labels_add(&l, "device_uuid", uuid);       // values are escaped
 *     mon_expo_add(e, f, &l, 1234.0);
 *     char *text; size_t len;
 *     mon_expo_render(e, MON_FORMAT_OPENMETRICS, &text, &len);
 *
 * Families whose def says MON_MERGE_SUM/MIN get one sample per distinct label set: samples with
 * the same labels are summed (or the minimum kept) — an exposition never repeats a series.
 * Every buffer is bounded (`max_bytes` for the arena and the output); past it the exposition is
 * refused with -E2BIG rather than truncated.
 */
#ifndef GS_MONITOR_EXPO_H
#define GS_MONITOR_EXPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MON_EXPO_MAX_BYTES (64u * 1024u * 1024u)
#define MON_LABELS_MAX     1024

enum mon_metric_type {
    MON_GAUGE,
    MON_COUNTER,   /* name without "_total"; samples get it */
    MON_INFO,      /* name without "_info"; value 1; gauge "<name>_info" in 0.0.4 */
    MON_HISTOGRAM, /* samples added with mon_expo_add_histogram */
};

enum mon_merge { MON_MERGE_NONE, MON_MERGE_SUM, MON_MERGE_MIN };

enum mon_format { MON_FORMAT_TEXT, MON_FORMAT_OPENMETRICS };

#define MON_CONTENT_TYPE_TEXT        "text/plain; version=0.0.4; charset=utf-8"
#define MON_CONTENT_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

struct mon_family_def {
    const char *name;
    enum mon_metric_type type;
    enum mon_merge merge;
    const char *help; /* no backslash, quote or newline */
};

/* A label set being built: `name="value",...` (escaped), bounded. */
struct mon_labels {
    size_t len;
    bool overflow;
    char buf[MON_LABELS_MAX];
};

void mon_labels_init(struct mon_labels *l);
void mon_labels_add(struct mon_labels *l, const char *name, const char *value);
void mon_labels_add_u(struct mon_labels *l, const char *name, unsigned long long value);

struct mon_expo;

struct mon_expo *mon_expo_new(size_t max_bytes);
/* Size the label arena and the rendered text up front (e.g. from the previous scrape), so a
 * scrape does not grow them by copying. Returns -ENOMEM; never shrinks. */
int mon_expo_reserve(struct mon_expo *e, size_t arena_bytes, size_t text_bytes);
/* Bytes the label arena used (a hint for the next mon_expo_reserve). */
size_t mon_expo_arena_bytes(const struct mon_expo *e);
void mon_expo_free(struct mon_expo *e);

/* Declare a family (in output order); returns its id (>= 0) or -ENOMEM. */
int mon_expo_family(struct mon_expo *e, const struct mon_family_def *def);
/* Add a sample; NaN values are dropped (unknown is absent, never 0). -ENOMEM / -E2BIG / -EINVAL
 * (labels overflowed) are remembered and returned by mon_expo_render. */
void mon_expo_add(struct mon_expo *e, int family, const struct mon_labels *l, double value);
/* A histogram's buckets (cumulative counts for `bounds`, +Inf = count), count and sum. */
void mon_expo_add_histogram(struct mon_expo *e, int family, const struct mon_labels *l,
                            const double *bounds, const uint64_t *cumulative, size_t n_bounds,
                            uint64_t count, double sum);

/* Render everything; *text is malloc'd (NUL-terminated), the caller frees it. */
int mon_expo_render(struct mon_expo *e, enum mon_format fmt, char **text, size_t *len);

/* Number of samples added so far (for tests and the bench). */
size_t mon_expo_samples(const struct mon_expo *e);

/* The format a scraper's Accept header asks for: OpenMetrics when it names
 * application/openmetrics-text (with a q-value above 0), else text 0.0.4. */
enum mon_format mon_expo_negotiate(const char *accept);

/* Format a sample value as Prometheus parsers read it ("1234", "0.25", "NaN", "+Inf"). */
void mon_expo_format_value(double v, char *buf, size_t len);

#endif /* GS_MONITOR_EXPO_H */
