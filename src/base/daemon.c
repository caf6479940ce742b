/* SPDX-License-Identifier: Apache-2.0 */
#include "base/daemon.h"

#include <pthread.h>

void gs_daemon_block_signals(sigset_t *sigs, int extra)
{
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    if (extra)
        sigaddset(sigs, extra);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}
