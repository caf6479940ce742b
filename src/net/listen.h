/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Listen addresses of the daemons' TCP servers: "host:port", ":port" (every IPv4 address) or
 * "[v6]:port", resolved numerically-or-by-name into a socket address. Part of libgshttpd (no
 * dependency beyond libc), shared by every daemon that listens on TCP.
 */
#ifndef GS_NET_LISTEN_H
#define GS_NET_LISTEN_H

#include <sys/socket.h>

#include "base/error.h"

/* Parse `addr`, the value of the option `what` (named in the error message, e.g. "--listen"),
 * into *out. 0, or -EINVAL with a message naming the option and the value. */
int gs_listen_parse(const char *what, const char *addr, struct sockaddr_storage *out,
                    struct gs_error *err);

#endif /* GS_NET_LISTEN_H */
