/* SPDX-License-Identifier: Apache-2.0 */
/* The one server layer: budgets, header timeout, eviction around libmicrohttpd (server.h). */
#include "net/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/macros.h"

enum conn_state {
    AWAITING_REQUEST, /* handshake, request head, or keep-alive between requests */
    IN_REQUEST,       /* head received: the handler has it */
};

/* One client address: its connections, counted once per accept and per eviction (O(1) for the
 * budget checks whatever the number of connections). */
struct client {
    struct client *next; /* hash chain */
    struct sockaddr_storage addr;
    unsigned live; /* connections not cut */
    unsigned refs; /* connections registered (cut ones included) */
};

/* One open connection (MHD's socket_context). */
struct conn {
    struct conn *prev, *next;
    int fd;
    struct sockaddr_storage client; /* port zeroed: the client is its address */
    struct client *rec;
    _Atomic int state;
    _Atomic uint64_t since_ms; /* accept, or the end of the previous request */
    bool cut;                  /* shut down by this layer; closing */
};

struct gs_net_server {
    struct gs_net_server_config cfg;
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock; /* conns, n_open, n_cut, stats */
    struct conn *conns;
    struct client **clients; /* hash of client addresses, n_buckets (a power of two) */
    size_t n_buckets;
    unsigned n_open, n_cut;
    struct gs_net_stats stats;
    pthread_t watchdog;
    pthread_cond_t wake;
    bool stopping, watchdog_started;
};

/* The client's identity: its address without the port; v4-mapped IPv6 as IPv4. */
static void client_of(const struct sockaddr *sa, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in *o = (struct sockaddr_in *)out;
        o->sin_family = AF_INET;
        o->sin_addr = ((const struct sockaddr_in *)sa)->sin_addr;
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
            struct sockaddr_in *o = (struct sockaddr_in *)out;
            o->sin_family = AF_INET;
            memcpy(&o->sin_addr, a->sin6_addr.s6_addr + 12, 4);
        } else {
            struct sockaddr_in6 *o = (struct sockaddr_in6 *)out;
            o->sin6_family = AF_INET6;
            o->sin6_addr = a->sin6_addr;
        }
    } else {
        out->ss_family = sa->sa_family;
    }
}

static bool same_client(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
    return true;
}

static const char *client_str(const struct sockaddr_storage *c, char *buf, size_t n)
{
    const void *a = c->ss_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)c)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)c)->sin6_addr;
    if (!inet_ntop(c->ss_family, a, buf, (socklen_t)n))
        snprintf(buf, n, "?");
    return buf;
}

static size_t client_hash(const struct sockaddr_storage *a, size_t n_buckets)
{
    const unsigned char *p = (const unsigned char *)a;
    size_t len =
        a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the zeroed-port address */
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return (size_t)h & (n_buckets - 1);
}

/* The record of `client`, or NULL (none registered). Caller holds s->lock. */
static struct client *client_find(struct gs_net_server *s, const struct sockaddr_storage *client)
{
    for (struct client *r = s->clients[client_hash(client, s->n_buckets)]; r; r = r->next)
        if (same_client(&r->addr, client))
            return r;
    return NULL;
}

/* Connections of `client` that are not being closed. Caller holds s->lock. */
static unsigned count_client(struct gs_net_server *s, const struct sockaddr_storage *client)
{
    struct client *r = client_find(s, client);
    return r ? r->live : 0;
}

/* Count `c` in its client's record (created on its first connection). Caller holds s->lock. */
static bool client_add(struct gs_net_server *s, struct conn *c)
{
    struct client *r = client_find(s, &c->client);
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return false;
        r->addr = c->client;
        size_t b = client_hash(&c->client, s->n_buckets);
        r->next = s->clients[b];
        s->clients[b] = r;
    }
    r->live++;
    r->refs++;
    c->rec = r;
    return true;
}

/* `c` is closed: uncount it, free the record with its last connection. Caller holds s->lock. */
static void client_del(struct gs_net_server *s, struct conn *c)
{
    struct client *r = c->rec;
    if (!c->cut)
        r->live--;
    if (--r->refs)
        return;
    struct client **pp = &s->clients[client_hash(&r->addr, s->n_buckets)];
    while (*pp != r)
        pp = &(*pp)->next;
    *pp = r->next;
    free(r);
}

/* Shut `c` down: its connection thread sees end of file and MHD closes it. Caller holds s->lock
 * (the descriptor is MHD's until the CLOSED notification, which takes the lock). */
static void cut(struct gs_net_server *s, struct conn *c)
{
    c->cut = true;
    c->rec->live--;
    s->n_cut++;
    shutdown(c->fd, SHUT_RDWR);
}

/* A budget is full: cut one connection awaiting a request (of `client` when not NULL), from the
 * client holding the most connections, the oldest of those. False when every candidate is
 * inside a request. */
static bool evict_one(struct gs_net_server *s, const struct sockaddr_storage *client)
{
    struct conn *victim = NULL;
    unsigned victim_n = 0;
    for (struct conn *c = s->conns; c; c = c->next) {
        if (c->cut || atomic_load(&c->state) != AWAITING_REQUEST ||
            (client && !same_client(&c->client, client)))
            continue;
        unsigned n = c->rec->live;
        if (!victim || n > victim_n ||
            (n == victim_n && atomic_load(&c->since_ms) < atomic_load(&victim->since_ms)))
            victim = c, victim_n = n;
    }
    if (!victim)
        return false;
    char q[64];
    gs_debug("connection evicted", "listener=%s client=%s client_connections=%u", s->cfg.what,
             client_str(&victim->client, q, sizeof(q)), victim_n);
    cut(s, victim);
    s->stats.evicted++;
    return true;
}

/* MHD_AcceptPolicyCallback: runs in the listening thread, before MHD allocates anything. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    struct gs_net_server *s = cls;
    struct sockaddr_storage client;
    (void)addrlen;
    client_of(addr, &client);
    pthread_mutex_lock(&s->lock);
    enum MHD_Result r = MHD_YES;
    char q[64];
    /* A client at its budget is refused, or (evict_own: probe listeners) makes room among its
     * own connections, so that a kubelet sharing its address with an attacker still gets in. */
    if (count_client(s, &client) >= s->cfg.budget.max_per_client &&
        !(s->cfg.budget.evict_own && evict_one(s, &client))) {
        s->stats.refused_client++;
        gs_debug("connection refused", "listener=%s client=%s reason=client_budget budget=%u",
                 s->cfg.what, client_str(&client, q, sizeof(q)), s->cfg.budget.max_per_client);
        r = MHD_NO;
    } else if (s->n_open - s->n_cut >= s->cfg.budget.max_connections && !evict_one(s, NULL)) {
        s->stats.refused_full++;
        gs_debug("connection refused", "listener=%s client=%s reason=budget budget=%u", s->cfg.what,
                 client_str(&client, q, sizeof(q)), s->cfg.budget.max_connections);
        r = MHD_NO;
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

/* MHD_NotifyConnectionCallback: STARTED in the listening thread right after accept_policy said
 * yes; CLOSED before MHD closes the descriptor. */
static void notify_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
    struct gs_net_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn *c = calloc(1, sizeof(*c));
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (c && fd && addr && addr->client_addr) {
            c->fd = fd->connect_fd;
            client_of(addr->client_addr, &c->client);
            atomic_store(&c->state, AWAITING_REQUEST);
            atomic_store(&c->since_ms, gs_now_ms());
            pthread_mutex_lock(&s->lock);
            bool counted = client_add(s, c);
            if (counted) {
                c->next = s->conns;
                if (s->conns)
                    s->conns->prev = c;
                s->conns = c;
                s->n_open++;
                s->stats.accepted++;
            }
            pthread_mutex_unlock(&s->lock);
            if (!counted) {
                free(c);
                c = NULL;
            }
        } else {
            free(c);
            c = NULL;
        }
        if (!c && fd) /* out of memory: not served rather than unaccounted */
            shutdown(fd->connect_fd, SHUT_RDWR);
        *socket_context = c;
        if (s->cfg.on_connection)
            s->cfg.on_connection(s->cfg.on_connection_cls, true);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct conn *c = *socket_context;
        if (c) {
            pthread_mutex_lock(&s->lock);
            if (c->prev)
                c->prev->next = c->next;
            else
                s->conns = c->next;
            if (c->next)
                c->next->prev = c->prev;
            s->n_open--;
            if (c->cut)
                s->n_cut--;
            client_del(s, c);
            pthread_mutex_unlock(&s->lock);
            free(c);
            *socket_context = NULL;
        }
        if (s->cfg.on_connection)
            s->cfg.on_connection(s->cfg.on_connection_cls, false);
    }
}

static struct conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* The daemon's handler, after marking the connection as inside a request (the first call of a
 * request comes once its head is complete). */
static enum MHD_Result access_handler(void *cls, struct MHD_Connection *mc, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    struct gs_net_server *s = cls;
    struct conn *c = conn_of(mc);
    if (c)
        atomic_store(&c->state, IN_REQUEST);
    return s->cfg.handler(s->cfg.handler_cls, mc, url, method, version, upload_data,
                          upload_data_size, con_cls);
}

static void request_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
    struct gs_net_server *s = cls;
    if (s->cfg.completed)
        s->cfg.completed(s->cfg.completed_cls, mc, con_cls, toe);
    struct conn *c = conn_of(mc);
    if (c) { /* the next request's head has the whole header timeout again */
        atomic_store(&c->since_ms, gs_now_ms());
        atomic_store(&c->state, AWAITING_REQUEST);
    }
}

/* Cuts the connections whose request head is late. */
static void *watchdog(void *arg)
{
    struct gs_net_server *s = arg;
    uint64_t tick = GS_MAX(s->cfg.budget.header_timeout_ms / 4, 50u);
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        uint64_t now = gs_now_ms();
        for (struct conn *c = s->conns; c; c = c->next) {
            if (c->cut || atomic_load(&c->state) != AWAITING_REQUEST ||
                now - atomic_load(&c->since_ms) < s->cfg.budget.header_timeout_ms)
                continue;
            char q[64];
            gs_debug("connection cut",
                     "listener=%s client=%s reason=header_timeout "
                     "header_timeout_ms=%u",
                     s->cfg.what, client_str(&c->client, q, sizeof(q)),
                     s->cfg.budget.header_timeout_ms);
            cut(s, c);
            s->stats.header_timeouts++;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + tick * 1000000u;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&s->wake, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) GS_PRINTF(2, 0);
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct gs_net_server *s = cls;
    char msg[512], q[600];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    gs_debug("http server", "listener=%s detail=%s", s->cfg.what, gs_log_quote(q, sizeof(q), msg));
}

/* Once per process: the soft descriptor limit up to the hard one (what systemd and Go's runtime
 * do), so that the budgets, not a 1,024 default, bound the connections. */
static void raise_nofile(void)
{
    static atomic_bool done;
    if (atomic_exchange(&done, true))
        return;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            gs_debug("descriptor limit raised", "from=%llu to=%llu", (unsigned long long)was,
                     (unsigned long long)rl.rlim_max);
    }
}

struct gs_net_budget gs_net_probe_budget(unsigned max_connections)
{
    return (struct gs_net_budget){
        .max_connections = max_connections ? max_connections : GS_NET_PROBE_MAX_CONNECTIONS,
        .max_per_client = GS_NET_PROBE_MAX_PER_CLIENT,
        .header_timeout_ms = GS_NET_PROBE_HEADER_TIMEOUT_MS,
        .idle_timeout_s = GS_NET_PROBE_IDLE_TIMEOUT_S,
        .evict_own = true,
        .event_loop = true,
    };
}

static void server_free(struct gs_net_server *s)
{
    if (s->watchdog_started) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->watchdog, NULL);
    }
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s->clients); /* every record went with its last connection */
    free(s);
}

struct gs_net_server *gs_net_server_start(const struct gs_net_server_config *cfg,
                                          struct gs_error *err)
{
    if (!cfg->handler || (cfg->tls_cert && !cfg->tls_priorities)) {
        gs_error_set(err, -EINVAL, "%s: no handler, or TLS without priorities", cfg->what);
        return NULL;
    }
    struct gs_net_server *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    struct gs_net_budget *b = &s->cfg.budget;
    if (!b->max_connections)
        b->max_connections = 64;
    if (!b->max_per_client)
        b->max_per_client = GS_MAX(b->max_connections / 4, 1u);
    if (!b->header_timeout_ms)
        b->header_timeout_ms = 10000;
    if (!b->idle_timeout_s)
        b->idle_timeout_s = 10;
    /* MHD's hard limit below, twice the budget: at most that many clients at once. */
    s->n_buckets = 64;
    while (s->n_buckets < 2u * b->max_connections && s->n_buckets < (1u << 17))
        s->n_buckets *= 2;
    s->clients = calloc(s->n_buckets, sizeof(struct client *));
    if (!s->clients) {
        free(s);
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    raise_nofile();
    if (pthread_create(&s->watchdog, NULL, watchdog, s) != 0) {
        gs_error_set(err, -EAGAIN, "%s: cannot start the watchdog thread", cfg->what);
        server_free(s);
        return NULL;
    }
    s->watchdog_started = true;

    /* Thread per connection, every wait a poll() (MHD_USE_POLL: never select()'s FD_SETSIZE), or
     * one epoll loop for handlers that never block. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                     (b->event_loop ? MHD_USE_EPOLL : MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL);
    if (cfg->addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* MHD's own limit leaves room for the evicted connections still closing. */
    unsigned hard = b->max_connections > 32768u ? 65536u : b->max_connections * 2u;
    struct MHD_OptionItem tls[] = {
        {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)cfg->tls_cert},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)cfg->tls_priorities},
        {MHD_OPTION_END, 0, NULL},
    };
    if (cfg->tls_cert)
        flags |= MHD_USE_TLS;
    else
        tls[0].option = MHD_OPTION_END;
    s->daemon = MHD_start_daemon(
        flags, 0, accept_policy, s, access_handler, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&s->cfg.addr, MHD_OPTION_CONNECTION_LIMIT, hard,
        MHD_OPTION_CONNECTION_TIMEOUT, b->idle_timeout_s, MHD_OPTION_NOTIFY_COMPLETED,
        request_completed, s, MHD_OPTION_NOTIFY_CONNECTION, notify_connection, s,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (!s->daemon) {
        gs_error_set(err, -EADDRNOTAVAIL,
                     "%s: cannot serve %s there (address in use or not "
                     "available?)",
                     cfg->what, cfg->tls_cert ? "HTTPS" : "HTTP");
        server_free(s);
        return NULL;
    }
    return s;
}

void gs_net_server_stop(struct gs_net_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    server_free(s);
}

unsigned gs_net_server_port(const struct gs_net_server *s)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : 0;
}

void gs_net_server_stats(struct gs_net_server *s, struct gs_net_stats *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    out->open = s->n_open;
    pthread_mutex_unlock(&s->lock);
}
