/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's checkpoint: which claims are prepared on this node, with their plan, so a
 * repeated prepare answers the same, unprepare and reconcile know what to remove, and a crash at
 * any point is recoverable. One JSON file in --state-dir, replaced atomically (temp + fsync +
 * rename + fsync dir) on every change:
 *
 *   {"version":1,"driver":"...","claims":{"<uid>":{"state":"PrepareStarted"|"PrepareCompleted",
 *     "missingSince":<unix s or 0>,"plan":{...claim_plan_to_json...}}}}
 *
 * Not thread-safe by itself: the prepare module serialises access.
 */
#ifndef GS_PLUGIN_CHECKPOINT_H
#define GS_PLUGIN_CHECKPOINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "gpu/claim.h"

#define CKPT_FILE_NAME "checkpoint.json"
#define CKPT_MAX_BYTES (64u * 1024u * 1024u)

enum ckpt_state {
    CKPT_NONE = 0,
    CKPT_PREPARE_STARTED = 1,
    CKPT_PREPARE_COMPLETED = 2,
};

struct checkpoint {
    char path[4096];
    char driver[256];
    json_t *claims; /* object uid -> entry */
};

/* Load (or start empty when the file does not exist). A corrupt file is an error naming it; the
 * caller decides (the daemon logs it, keeps the corrupt file aside and starts empty). */
int ckpt_load(struct checkpoint *c, const char *state_dir, const char *driver,
              struct gs_error *err);
void ckpt_fini(struct checkpoint *c);
/* `durable`: fsync file and directory (the commit point of a prepare or an unprepare); otherwise
 * only atomic against crashes (PrepareStarted: a lost one is covered by the orphan sweep). */
int ckpt_save(struct checkpoint *c, bool durable, struct gs_error *err);

enum ckpt_state ckpt_get(const struct checkpoint *c, const char *uid, struct claim_plan *plan);
void ckpt_set(struct checkpoint *c, const struct claim_plan *plan, enum ckpt_state st);
void ckpt_remove(struct checkpoint *c, const char *uid);
/* Mark a completed claim as missing from the API since `now` (0 clears); returns the previous
 * value. */
int64_t ckpt_set_missing(struct checkpoint *c, const char *uid, int64_t now);
size_t ckpt_count(const struct checkpoint *c);
const char *ckpt_state_name(enum ckpt_state s);

#endif /* GS_PLUGIN_CHECKPOINT_H */
