/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go), which the
 * DRA environment includes: ip(), isIP(), ip.isCanonical(), cidr(), isCIDR() and their methods.
 * As upstream (Go's netip), IPv4-mapped IPv6 addresses and zones are rejected.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

#include "cel/cel-internal.h"
#include "cel/functions.h"

#define NO_OVERLOAD() cel_no_overload(ev, call, a, n)

static bool v4_mapped(const uint8_t *a)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !memcmp(a, prefix, sizeof(prefix));
}

/* Parse an address of `len` bytes. 0 or -EINVAL. */
static int parse_addr(const char *s, size_t len, struct cel_net *out)
{
    char buf[INET6_ADDRSTRLEN + 1];
    if (!len || len >= sizeof(buf) || memchr(s, '%', len) || memchr(s, '\0', len))
        return -EINVAL;
    memcpy(buf, s, len);
    buf[len] = '\0';
    memset(out, 0, sizeof(*out));
    if (strchr(buf, ':')) {
        if (inet_pton(AF_INET6, buf, out->addr) != 1 || v4_mapped(out->addr) || strchr(buf, '.'))
            return -EINVAL;
        out->family = 6;
        out->prefix = 128;
        return 0;
    }
    if (inet_pton(AF_INET, buf, out->addr) != 1)
        return -EINVAL;
    out->family = 4;
    out->prefix = 32;
    return 0;
}

static int parse_cidr(const char *s, size_t len, struct cel_net *out)
{
    const char *slash = memchr(s, '/', len);
    if (!slash)
        return -EINVAL;
    if (parse_addr(s, (size_t)(slash - s), out) < 0)
        return -EINVAL;
    const char *p = slash + 1, *end = s + len;
    if (p == end || end - p > 3 || (*p == '0' && end - p > 1))
        return -EINVAL;
    int bits = 0;
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            return -EINVAL;
        bits = bits * 10 + (*p - '0');
    }
    if (bits > (out->family == 4 ? 32 : 128))
        return -EINVAL;
    out->prefix = (uint8_t)bits;
    out->is_cidr = true;
    return 0;
}

static void format_net(const struct cel_net *n, char *buf, size_t len)
{
    char a[INET6_ADDRSTRLEN];
    inet_ntop(n->family == 4 ? AF_INET : AF_INET6, n->addr, a, sizeof(a));
    if (n->is_cidr)
        snprintf(buf, len, "%s/%u", a, n->prefix);
    else
        snprintf(buf, len, "%s", a);
}

void cel_net_format(const struct cel_net *n, char *buf, size_t len)
{
    format_net(n, buf, len);
}

bool cel_net_equal(const struct cel_net *a, const struct cel_net *b)
{
    return a->family == b->family && a->is_cidr == b->is_cidr && a->prefix == b->prefix &&
           !memcmp(a->addr, b->addr, a->family == 4 ? 4 : 16);
}

static struct cel_value make(struct cel_eval *ev, const struct cel_net *n)
{
    struct cel_net *p = cel_arena_alloc(ev->arena, sizeof(*p));
    if (!p)
        return cel_oom(ev);
    *p = *n;
    return (struct cel_value){.kind = n->is_cidr ? CEL_K_CIDR : CEL_K_IP, .net = p};
}

static struct cel_value fn_ip(struct cel_eval *ev, const struct cel_node *call, struct cel_value *a,
                              uint32_t n)
{
    if (a[0].kind == CEL_K_CIDR) { /* cidr.ip() */
        struct cel_net x = *a[0].net;
        x.is_cidr = false;
        x.prefix = x.family == 4 ? 32 : 128;
        return make(ev, &x);
    }
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    struct cel_net x;
    if (parse_addr(a[0].s, a[0].len, &x) < 0)
        return cel_error(ev, call, "IP Address '%.*s' parse error during conversion from string",
                         (int)GS_MIN(a[0].len, 64u), a[0].s);
    return make(ev, &x);
}

static struct cel_value fn_cidr(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    struct cel_net x;
    if (parse_cidr(a[0].s, a[0].len, &x) < 0)
        return cel_error(ev, call,
                         "network address '%.*s' parse error during conversion from "
                         "string",
                         (int)GS_MIN(a[0].len, 64u), a[0].s);
    return make(ev, &x);
}

static struct cel_value fn_is(struct cel_eval *ev, const struct cel_node *call, struct cel_value *a,
                              uint32_t n)
{
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    struct cel_net x;
    bool cidr = call->name[2] == 'C'; /* isCIDR */
    int r = cidr ? parse_cidr(a[0].s, a[0].len, &x) : parse_addr(a[0].s, a[0].len, &x);
    return cel_bool(r == 0);
}

static struct cel_value fn_is_canonical(struct cel_eval *ev, const struct cel_node *call,
                                        struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    struct cel_net x;
    if (parse_addr(a[0].s, a[0].len, &x) < 0)
        return cel_error(ev, call, "IP Address '%.*s' parse error during conversion from string",
                         (int)GS_MIN(a[0].len, 64u), a[0].s);
    char buf[64];
    format_net(&x, buf, sizeof(buf));
    return cel_bool(strlen(buf) == a[0].len && !memcmp(buf, a[0].s, a[0].len));
}

static struct cel_value fn_family(struct cel_eval *ev, const struct cel_node *call,
                                  struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_IP)
        return NO_OVERLOAD();
    return cel_int(a[0].net->family);
}

/* isUnspecified, isLoopback, isLinkLocalMulticast, isLinkLocalUnicast, isGlobalUnicast */
static struct cel_value fn_ip_class(struct cel_eval *ev, const struct cel_node *call,
                                    struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_IP)
        return NO_OVERLOAD();
    const uint8_t *x = a[0].net->addr;
    bool v4 = a[0].net->family == 4;
    static const uint8_t zero[16], loop6[16] = {[15] = 1};
    bool unspecified = !memcmp(x, zero, v4 ? 4 : 16);
    bool loopback = v4 ? x[0] == 127 : !memcmp(x, loop6, 16);
    bool multicast = v4 ? (x[0] & 0xf0) == 0xe0 : x[0] == 0xff;
    bool ll_multicast =
        v4 ? (x[0] == 224 && x[1] == 0 && x[2] == 0) : (x[0] == 0xff && (x[1] & 0x0f) == 0x02);
    bool ll_unicast = v4 ? (x[0] == 169 && x[1] == 254) : (x[0] == 0xfe && (x[1] & 0xc0) == 0x80);
    bool broadcast = v4 && x[0] == 255 && x[1] == 255 && x[2] == 255 && x[3] == 255;
    switch (call->name[2]) {
    case 'U':
        return cel_bool(unspecified); /* isUnspecified */
    case 'L':
        if (call->name[3] == 'o')
            return cel_bool(loopback);                                      /* isLoopback */
        return cel_bool(call->name[11] == 'M' ? ll_multicast : ll_unicast); /* isLinkLocal* */
    default:                                                                /* isGlobalUnicast */
        return cel_bool(!broadcast && !unspecified && !loopback && !multicast && !ll_unicast);
    }
}

static bool prefix_contains(const struct cel_net *net, const uint8_t *addr, int family)
{
    if (net->family != family)
        return false;
    int bits = net->prefix;
    for (int i = 0; bits > 0; i++, bits -= 8) {
        uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
        if ((net->addr[i] & mask) != (addr[i] & mask))
            return false;
    }
    return true;
}

static struct cel_value fn_contains_ip(struct cel_eval *ev, const struct cel_node *call,
                                       struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_CIDR)
        return NO_OVERLOAD();
    struct cel_net x;
    if (a[1].kind == CEL_K_IP)
        x = *a[1].net;
    else if (a[1].kind == CEL_K_STRING) {
        if (parse_addr(a[1].s, a[1].len, &x) < 0)
            return cel_error(ev, call,
                             "IP Address '%.*s' parse error during conversion from "
                             "string",
                             (int)GS_MIN(a[1].len, 64u), a[1].s);
    } else
        return NO_OVERLOAD();
    return cel_bool(prefix_contains(a[0].net, x.addr, x.family));
}

static struct cel_value fn_contains_cidr(struct cel_eval *ev, const struct cel_node *call,
                                         struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_CIDR)
        return NO_OVERLOAD();
    struct cel_net x;
    if (a[1].kind == CEL_K_CIDR)
        x = *a[1].net;
    else if (a[1].kind == CEL_K_STRING) {
        if (parse_cidr(a[1].s, a[1].len, &x) < 0)
            return cel_error(ev, call,
                             "network address '%.*s' parse error during conversion "
                             "from string",
                             (int)GS_MIN(a[1].len, 64u), a[1].s);
    } else
        return NO_OVERLOAD();
    return cel_bool(x.prefix >= a[0].net->prefix && prefix_contains(a[0].net, x.addr, x.family));
}

static struct cel_value fn_masked(struct cel_eval *ev, const struct cel_node *call,
                                  struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_CIDR)
        return NO_OVERLOAD();
    struct cel_net x = *a[0].net;
    int bits = x.prefix;
    for (int i = 0; i < 16; i++, bits -= 8) {
        if (bits >= 8)
            continue;
        x.addr[i] &= bits > 0 ? (uint8_t)(0xff << (8 - bits)) : 0;
    }
    return make(ev, &x);
}

static struct cel_value fn_prefix_length(struct cel_eval *ev, const struct cel_node *call,
                                         struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_CIDR)
        return NO_OVERLOAD();
    return cel_int(a[0].net->prefix);
}

#define OV(...) ((const char *const[]){__VA_ARGS__, NULL})
const struct cel_func cel_net_funcs[] = {
    {"ip", false, 1, fn_ip, OV("string:ip"), true},
    {"isIP", false, 1, fn_is, OV("string:bool"), true},
    {"ip.isCanonical", false, 1, fn_is_canonical, OV("string:bool"), true},
    {"cidr", false, 1, fn_cidr, OV("string:cidr"), true},
    {"isCIDR", false, 1, fn_is, OV("string:bool"), true},
    {"family", true, 1, fn_family, OV("ip:int"), true},
    {"isUnspecified", true, 1, fn_ip_class, OV("ip:bool"), true},
    {"isLoopback", true, 1, fn_ip_class, OV("ip:bool"), true},
    {"isLinkLocalMulticast", true, 1, fn_ip_class, OV("ip:bool"), true},
    {"isLinkLocalUnicast", true, 1, fn_ip_class, OV("ip:bool"), true},
    {"isGlobalUnicast", true, 1, fn_ip_class, OV("ip:bool"), true},
    {"containsIP", true, 2, fn_contains_ip, OV("cidr,ip:bool", "cidr,string:bool"), true},
    {"containsCIDR", true, 2, fn_contains_cidr, OV("cidr,cidr:bool", "cidr,string:bool"), true},
    {"ip", true, 1, fn_ip, OV("cidr:ip"), true},
    {"masked", true, 1, fn_masked, OV("cidr:cidr"), true},
    {"prefixLength", true, 1, fn_prefix_length, OV("cidr:int"), true},
};
const size_t cel_net_funcs_count = GS_ARRAY_SIZE(cel_net_funcs);
