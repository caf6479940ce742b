/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmicrohttpd reply helpers shared by the HTTP daemons (webhook, monitor, extender).
 * Built as its own static library, gs_httpd (httpd_dep), not part of libgscommon, so that
 * programs without an HTTP server (the CLI) do not link libmicrohttpd.
 */
#ifndef GS_COMMON_HTTPD_H
#define GS_COMMON_HTTPD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* Queue a `status` response with Content-Type `type` holding `len` bytes of `body`. When `owned`,
 * `body` is malloc'd and handed over: libmicrohttpd frees it after sending, and it is freed here
 * if the response cannot be created. Otherwise `body` must outlive the response (a string
 * literal). Returns MHD_NO when the response could not be created or queued. */
enum MHD_Result gs_httpd_reply(struct MHD_Connection *c, unsigned status, const char *type,
                               char *body, size_t len, bool owned);

/* gs_httpd_reply() of the static string `msg` as "text/plain; charset=utf-8". */
enum MHD_Result gs_httpd_text(struct MHD_Connection *c, unsigned status, const char *msg);

/* The TCP port `d` listens on (the one the kernel chose for port 0); 0 if unknown. */
unsigned gs_httpd_port(struct MHD_Daemon *d);

#endif /* GS_COMMON_HTTPD_H */
