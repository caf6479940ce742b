/* SPDX-License-Identifier: Apache-2.0 */
/* gs_listen_parse: the listen addresses every daemon takes, and errors naming the option. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "net/listen.h"
#include "tap.h"

int main(void)
{
    tap_plan_auto();
    struct sockaddr_storage ss;
    struct gs_error err = {0};

    is_int(gs_listen_parse("--listen", ":8443", &ss, &err), 0, ":8443 parses");
    const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
    ok(ss.ss_family == AF_INET && in->sin_addr.s_addr == htonl(INADDR_ANY) &&
           ntohs(in->sin_port) == 8443,
       ":8443 is every IPv4 address, port 8443");

    is_int(gs_listen_parse("--listen", "127.0.0.1:1", &ss, &err), 0, "127.0.0.1:1 parses");
    ok(ss.ss_family == AF_INET && in->sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
           ntohs(in->sin_port) == 1,
       "loopback, port 1");

    is_int(gs_listen_parse("--listen", "[::1]:65535", &ss, &err), 0, "[::1]:65535 parses");
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
    ok(ss.ss_family == AF_INET6 && ntohs(in6->sin6_port) == 65535 &&
           memcmp(&in6->sin6_addr, &in6addr_loopback, sizeof(in6addr_loopback)) == 0,
       "IPv6 loopback, port 65535");

    static const struct {
        const char *what, *addr, *msg;
    } bad[] = {
        {"--listen", "", "--listen: empty address"},
        {"--listen", "nope", "--listen: \"nope\" is not host:port"},
        {"--metrics-addr", ":0", "--metrics-addr: port \"0\" is not within 1-65535"},
        {"--metrics-addr", ":65536", "--metrics-addr: port \"65536\" is not within 1-65535"},
        {"--health-listen", ":80x", "--health-listen: port \"80x\" is not within 1-65535"},
        {"--health-listen", "[::1:80", "--health-listen: \"[::1:80\" is not [address]:port"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        is_int(gs_listen_parse(bad[i].what, bad[i].addr, &ss, &err), -EINVAL, "%s %s refused",
               bad[i].what, bad[i].addr);
        like_str(err.msg, bad[i].msg, "message names the option and the value: %s", bad[i].msg);
    }
    return tap_done();
}
