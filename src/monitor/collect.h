/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One scrape: the catalog's claims and GPUs turned into the exposition (every family is listed,
 * with type, unit, labels and source, in docs/internals/monitor.md). Regions are read live, under
 * the catalog lock; the text is rendered after it is released.
 */
#ifndef GS_MONITOR_COLLECT_H
#define GS_MONITOR_COLLECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/health.h"

#include "monitor/catalog.h"
#include "monitor/expo.h"

#define MON_SCRAPE_BUCKETS 10

/* Durations of completed scrapes (gpuslice_monitor_scrape_duration_seconds). */
struct mon_scrape_stats {
    _Atomic uint64_t bucket[MON_SCRAPE_BUCKETS]; /* not cumulative */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_ns;
    _Atomic size_t arena_hint, text_hint; /* sizes of the last exposition */
};

struct mon_collect_opts {
    const char *node;
    const char *version;
    bool legacy;                     /* also HAMi's older names */
    struct gpu_health_table *health; /* gpu/health.h; NULL = no health families */
};

/* Build and render one exposition; *text is malloc'd. */
int mon_collect(struct mon_catalog *c, const struct mon_collect_opts *o,
                struct mon_scrape_stats *stats, enum mon_format fmt, char **text, size_t *len);

/* Keep freed memory in the heap (no mmap/munmap and page faults for each exposition of a few
 * hundred KiB, no trimming after each scrape). Called once by main; the bench calls it too. */
void mon_tune_malloc(void);

/* Every family name the monitor can export (NULL-terminated; with the legacy ones), as it appears
 * in a query (counters with _total, info with _info). For the dashboard test. */
extern const char *const mon_exported_names[];

#endif /* GS_MONITOR_COLLECT_H */
