/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process setup shared by the long-running daemons (webhook, extender, monitor, device plugin,
 * DRA kubelet plugin).
 */
#ifndef GS_COMMON_DAEMON_H
#define GS_COMMON_DAEMON_H

#include <signal.h>

/* Fill `sigs` with SIGTERM, SIGINT and `extra` (another signal the daemon waits for, e.g.
 * SIGHUP; 0 for none), block them in the calling thread — threads started afterwards inherit
 * the mask, so the signals are only taken synchronously by the caller's sigwait(sigs) /
 * sigtimedwait(sigs) — and ignore SIGPIPE (a peer closing its socket is an error return, not a
 * death). Call it from main() before starting any thread. */
void gs_daemon_block_signals(sigset_t *sigs, int extra);

#endif /* GS_COMMON_DAEMON_H */
