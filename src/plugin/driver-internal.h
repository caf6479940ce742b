/* SPDX-License-Identifier: Apache-2.0 */
/* What driver.c (prepare/unprepare) and reconcile.c share: the files of one claim. Callers hold
 * driver.lock. */
#ifndef GS_PLUGIN_DRIVER_INTERNAL_H
#define GS_PLUGIN_DRIVER_INTERNAL_H

#include <stdbool.h>

#include "plugin/driver.h"

/* Claim dir, shared-region dir + file, limits file, CDI spec. `fault_points`: crash-test points
 * fire only on kubelet's prepare path. */
int driver_write_claim_files(struct driver *d, const struct claim_plan *p, bool fault_points,
                             struct gs_error *err);
/* CDI spec and claim dir; absent files are fine. */
int driver_remove_claim_files(struct driver *d, const char *uid, bool fault_points,
                              struct gs_error *err);
bool driver_claim_files_present(struct driver *d, const struct claim_plan *p);
/* Publish the checkpoint's size as gpuslice_plugin_claims_prepared. */
void driver_count_claims(struct driver *d);

#endif /* GS_PLUGIN_DRIVER_INTERNAL_H */
