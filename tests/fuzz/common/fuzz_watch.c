/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the Kubernetes watch-stream parser (gs_k8s_watch_parse: newline-delimited JSON events as the
 * API server streams them). The first byte chooses how the body is split into network reads (1..255
 * bytes, 0 = at once), so event boundaries fall anywhere; the handler checks what the parser
 * promises: every event it delivers is an object of a known type.
 */
#include <stdint.h>
#include <stdlib.h>

#include "kube/k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *user, enum gs_k8s_event_type type, json_t *object)
{
    unsigned *events = user;
    if (!json_is_object(object) || (int)type < (int)GS_K8S_EVENT_ADDED ||
        (int)type > (int)GS_K8S_EVENT_ERROR)
        abort();
    (*events)++;
    return *events > 10000 ? -ECANCELED : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    unsigned events = 0;
    struct gs_error err = {0};
    int r = gs_k8s_watch_parse((const char *)data + 1, size - 1, data[0], 64 * 1024, on_event,
                               &events, &err);
    if (r < 0 && (err.code == 0 || err.msg[0] == '\0'))
        abort(); /* every failure carries its message */
    return 0;
}
