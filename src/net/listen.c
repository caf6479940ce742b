/* SPDX-License-Identifier: Apache-2.0 */
/* Listen addresses: "host:port", ":port", "[v6]:port" -> struct sockaddr_storage. */
#include "net/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"

int gs_listen_parse(const char *what, const char *listen, struct sockaddr_storage *out,
                    struct gs_error *err)
{
    char host[256];
    const char *colon, *port_s;
    memset(out, 0, sizeof(*out));
    if (!listen || !*listen)
        return gs_error_set(err, -EINVAL, "%s: empty address", what);
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':')
            return gs_error_set(err, -EINVAL, "%s: \"%s\" is not [address]:port", what, listen);
        if ((size_t)(close - listen - 1) >= sizeof(host))
            return gs_error_set(err, -EINVAL, "%s: address too long", what);
        memcpy(host, listen + 1, (size_t)(close - listen - 1));
        host[close - listen - 1] = '\0';
        port_s = close + 2;
    } else {
        colon = strrchr(listen, ':');
        if (!colon || (size_t)(colon - listen) >= sizeof(host))
            return gs_error_set(err, -EINVAL, "%s: \"%s\" is not host:port", what, listen);
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = '\0';
        port_s = colon + 1;
    }
    char *end;
    errno = 0;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || *end || errno || port < 1 || port > 65535)
        return gs_error_set(err, -EINVAL, "%s: port \"%s\" is not within 1-65535", what, port_s);
    if (!host[0]) {
        struct sockaddr_in *in = (struct sockaddr_in *)out;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_ANY);
        in->sin_port = htons((uint16_t)port);
        return 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai = NULL;
    int g = getaddrinfo(host, port_s, &hints, &ai);
    if (g != 0 || !ai)
        return gs_error_set(err, -EINVAL, "%s: cannot resolve \"%s\": %s", what, host,
                            gai_strerror(g));
    memcpy(out, ai->ai_addr, GS_MIN((size_t)ai->ai_addrlen, sizeof(*out)));
    freeaddrinfo(ai);
    return 0;
}
