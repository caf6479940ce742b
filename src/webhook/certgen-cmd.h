/* SPDX-License-Identifier: Apache-2.0 */
/* `gpuslice-webhook certgen` (certgen.h): in-cluster or --kubeconfig; 0 or 1 (message on stderr,
 * naming the object and the API's status). */
#ifndef GS_WEBHOOK_CERTGEN_CMD_H
#define GS_WEBHOOK_CERTGEN_CMD_H

#include "webhook/options.h"

int wh_certgen_command(const struct wh_options *o);

#endif /* GS_WEBHOOK_CERTGEN_CMD_H */
