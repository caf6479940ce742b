/* SPDX-License-Identifier: Apache-2.0 */
#include "net/httpd.h"

#include <stdlib.h>
#include <string.h>

enum MHD_Result gs_httpd_reply(struct MHD_Connection *c, unsigned status, const char *type,
                               char *body, size_t len, bool owned)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return r;
}

enum MHD_Result gs_httpd_text(struct MHD_Connection *c, unsigned status, const char *msg)
{
    return gs_httpd_reply(c, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), false);
}

unsigned gs_httpd_port(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : 0;
}
