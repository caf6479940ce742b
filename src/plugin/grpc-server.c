/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unary gRPC server on the gRPC C core. One completion queue per server, `threads` workers
 * blocking in grpc_completion_queue_next(). Every call is a small state machine whose address is
 * the completion-queue tag:
 *
 *   REQUESTED --(new call)--> send initial metadata + receive message --> RECEIVED
 *   RECEIVED  --(handler)---> send message + status                     --> FINISHING --> unref
 *
 * plus, from the moment the call arrives, a RECV_CLOSE_ON_SERVER batch tagged with the call's
 * close_tag: it completes when the call is over for the client, with `cancelled` set if the client
 * cancelled, its deadline passed or the connection broke -- the handler's cancel handle is then
 * triggered so its API requests stop at once. A call is freed when both have completed (refs).
 *
 * When a call arrives its slot re-posts a fresh grpc_server_request_call, so `threads` calls can
 * be waiting for work at any time. The handler of a received call runs on a detached thread of its
 * own (bounded by RPC_MAX_HANDLERS), which then starts the FINISHING batch itself: a worker never
 * blocks in a handler. Shutdown: no new handlers, trigger the cancel handle, wait until no handler
 * runs, then grpc_server_shutdown_and_notify + cancel all calls; the worker that sees the shutdown
 * tag shuts the queue down; every worker leaves on GRPC_QUEUE_SHUTDOWN.
 */
#include "plugin/grpc-server.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "net/grpc.h"

#define RPC_DEFAULT_MAX_RECV (4u * 1024u * 1024u)
#define RPC_MAX_THREADS      64u

enum call_state {
    CALL_REQUESTED = 0,
    CALL_RECEIVED = 1,
    CALL_FINISHING = 2,
};

struct rpc_call;

/* Tag of a call's RECV_CLOSE_ON_SERVER batch: completes when the call is over for the client --
 * answered, cancelled by the client, or past its deadline (`cancelled` then 1). */
struct close_tag {
    int kind; /* always 2 */
    struct rpc_call *call;
};

struct rpc_call {
    int kind; /* always 0: distinguishes a call from the shutdown and close tags */
    enum call_state state;
    int refs; /* pending batches that reference the call (its own batches + the close tag) */
    struct close_tag close;
    struct gs_http_cancel *cancel; /* the handler's; triggered when the client is gone */
    bool client_gone;              /* the close tag reported cancellation (under srv->lock) */
    struct rpc_call *next_active;  /* list of calls whose handler runs (under srv->lock) */
    struct rpc_server *srv;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array request_md;
    grpc_byte_buffer *recv;
    grpc_byte_buffer *send;
    int cancelled;
    grpc_slice status_details;
};

struct rpc_server {
    int kind; /* always 1 (the shutdown tag) */
    grpc_server *server;
    grpc_completion_queue *cq;
    const struct rpc_method *methods;
    size_t n_methods;
    void *user;
    pthread_t threads[RPC_MAX_THREADS];
    unsigned n_threads;
    bool shutting_down;
    pthread_mutex_t lock;
    pthread_cond_t idle;     /* signalled when `handlers` drops to 0 */
    unsigned handlers;       /* handler threads running */
    struct rpc_call *active; /* calls whose handler runs */
    char *socket_path;
    dev_t sock_dev; /* the socket file this server created */
    ino_t sock_ino;
    bool sock_known;
};

/* Tag of a stream's SEND_MESSAGE batch (kind 3): the handler thread waits for its completion. */
struct rpc_stream {
    int kind; /* always 3 */
    struct rpc_call *call;
    struct gs_http_cancel *cancel;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done, ok;
};

struct handler_job {
    struct rpc_call *call;
    const struct rpc_method *method;
    grpc_slice request;
    struct rpc_call_ctx ctx;
};

void rpc_global_init(void)
{
    grpc_init();
}

void rpc_global_fini(void)
{
    grpc_shutdown();
}

static void call_free(struct rpc_call *c)
{
    if (!c)
        return;
    if (c->call)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->request_md);
    if (c->recv)
        grpc_byte_buffer_destroy(c->recv);
    if (c->send)
        grpc_byte_buffer_destroy(c->send);
    grpc_slice_unref(c->status_details);
    gs_http_cancel_free(c->cancel);
    free(c);
}

/* One batch of the call completed (or was never started): free it after the last one. Batches
 * complete on the workers, the finishing one may be started by a handler thread: refs are atomic
 * through the server lock. */
static void call_unref(struct rpc_call *c)
{
    struct rpc_server *s = c->srv;
    pthread_mutex_lock(&s->lock);
    bool last = --c->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (last)
        call_free(c);
}

/* The client is gone (cancelled, deadline passed, connection lost): stop the handler's API calls.
 */
static void on_close(struct close_tag *t)
{
    struct rpc_call *c = t->call;
    struct rpc_server *s = c->srv;
    pthread_mutex_lock(&s->lock);
    if (c->cancelled) {
        c->client_gone = true;
        if (c->cancel)
            gs_http_cancel_trigger(c->cancel);
    }
    pthread_mutex_unlock(&s->lock);
    call_unref(c);
}

static int post_request(struct rpc_server *s)
{
    struct rpc_call *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->srv = s;
    c->refs = 1;
    c->close.kind = 2;
    c->close.call = c;
    c->state = CALL_REQUESTED;
    c->status_details = grpc_empty_slice();
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->request_md);
    grpc_call_error e =
        grpc_server_request_call(s->server, &c->call, &c->details, &c->request_md, s->cq, s->cq, c);
    if (e != GRPC_CALL_OK) {
        call_free(c);
        return -EIO;
    }
    return 0;
}

/* Send (optional message +) status; the completion moves the call to FINISHING. */
static void finish_call(struct rpc_call *c, const struct rpc_reply *r, bool message)
{
    grpc_op ops[3];
    size_t n = 0;
    memset(ops, 0, sizeof(ops));
    if (r->status == RPC_OK && message) {
        grpc_slice sl = grpc_slice_from_copied_buffer((const char *)r->data, r->len);
        c->send = grpc_raw_byte_buffer_create(&sl, 1);
        grpc_slice_unref(sl);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->send;
        n++;
    }
    c->status_details = grpc_slice_from_copied_string(r->status == RPC_OK ? "" : r->details);
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)r->status;
    ops[n].data.send_status_from_server.status_details = &c->status_details;
    ops[n].data.send_status_from_server.trailing_metadata_count = 0;
    n++;
    c->state = CALL_FINISHING;
    if (grpc_call_start_batch(c->call, ops, n, c, NULL) != GRPC_CALL_OK)
        call_unref(c);
}

static const struct rpc_method *find_method(struct rpc_server *s, grpc_slice method)
{
    size_t len = GRPC_SLICE_LENGTH(method);
    const char *p = (const char *)GRPC_SLICE_START_PTR(method);
    for (size_t i = 0; i < s->n_methods; i++) {
        if (strlen(s->methods[i].path) == len && memcmp(s->methods[i].path, p, len) == 0)
            return &s->methods[i];
    }
    return NULL;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The call's deadline on CLOCK_MONOTONIC in ms (0 = none). gRPC's clocks are not ours, so the time
 * left is measured on the deadline's own clock and added to our now. */
static uint64_t call_deadline_ms(gpr_timespec dl)
{
    if (dl.clock_type == GPR_TIMESPAN || gpr_time_cmp(dl, gpr_inf_future(dl.clock_type)) >= 0)
        return 0;
    int64_t left = gpr_time_to_millis(gpr_time_sub(dl, gpr_now(dl.clock_type)));
    uint64_t now = mono_ms();
    if (left <= 0)
        return now ? now : 1; /* already passed: a deadline of "now" */
    return now + (uint64_t)left;
}

static void *handler_thread(void *arg)
{
    struct handler_job *j = arg;
    struct rpc_call *c = j->call;
    struct rpc_server *s = c->srv;
    struct rpc_reply reply = {.status = RPC_OK};
    bool stream = j->method->stream != NULL;
    if (stream) {
        struct rpc_stream st = {.kind = 3, .call = c, .cancel = j->ctx.cancel};
        pthread_mutex_init(&st.lock, NULL);
        pthread_cond_init(&st.cond, NULL);
        j->method->stream(s->user, &j->ctx, GRPC_SLICE_START_PTR(j->request),
                          GRPC_SLICE_LENGTH(j->request), &st, &reply);
        pthread_cond_destroy(&st.cond);
        pthread_mutex_destroy(&st.lock);
    } else {
        j->method->handler(s->user, &j->ctx, GRPC_SLICE_START_PTR(j->request),
                           GRPC_SLICE_LENGTH(j->request), &reply);
    }
    grpc_slice_unref(j->request);
    free(j);
    pthread_mutex_lock(&s->lock);
    for (struct rpc_call **p = &s->active; *p; p = &(*p)->next_active)
        if (*p == c) {
            *p = c->next_active;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    finish_call(c, &reply, !stream);
    free(reply.data);
    pthread_mutex_lock(&s->lock);
    if (--s->handlers == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Run the handler on a thread of its own; false (nothing started) when over the bound, shutting
 * down or out of resources. Takes `all` on success. */
static bool start_handler(struct rpc_call *c, const struct rpc_method *m, grpc_slice all)
{
    struct rpc_server *s = c->srv;
    struct handler_job *j = calloc(1, sizeof(*j));
    if (!j)
        return false;
    j->call = c;
    j->method = m;
    j->request = all;
    j->ctx.deadline_ms = call_deadline_ms(c->details.deadline);
    struct gs_http_cancel *cancel = gs_http_cancel_new();
    if (!cancel) {
        free(j);
        return false;
    }
    j->ctx.cancel = cancel;
    pthread_mutex_lock(&s->lock);
    bool ok = !s->shutting_down && s->handlers < RPC_MAX_HANDLERS;
    if (ok) {
        s->handlers++;
        c->cancel = cancel;
        if (c->client_gone)
            gs_http_cancel_trigger(cancel); /* gone before its message was even read */
        c->next_active = s->active;
        s->active = c;
    }
    pthread_mutex_unlock(&s->lock);
    if (!ok)
        gs_http_cancel_free(cancel);
    if (ok) {
        pthread_attr_t a;
        pthread_t t;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&t, &a, handler_thread, j) == 0;
        pthread_attr_destroy(&a);
        if (!ok) {
            pthread_mutex_lock(&s->lock);
            for (struct rpc_call **p = &s->active; *p; p = &(*p)->next_active)
                if (*p == c) {
                    *p = c->next_active;
                    break;
                }
            if (--s->handlers == 0)
                pthread_cond_broadcast(&s->idle);
            pthread_mutex_unlock(&s->lock); /* c->cancel stays with the call, freed with it */
        }
    }
    if (!ok)
        free(j);
    return ok;
}

static void on_received(struct rpc_call *c, bool success)
{
    struct rpc_server *s = c->srv;
    struct rpc_reply reply = {.status = RPC_OK};
    const struct rpc_method *m = find_method(s, c->details.method);

    if (!success || !c->recv) {
        /* Oversize messages are refused by the core before we see them; a client that sent no
         * message or went away ends here. */
        reply.status = RPC_INVALID_ARGUMENT;
        snprintf(reply.details, sizeof(reply.details), "request message missing or unreadable");
    } else if (!m) {
        reply.status = RPC_UNIMPLEMENTED;
        snprintf(reply.details, sizeof(reply.details), "unknown method %.*s",
                 (int)GS_MIN(GRPC_SLICE_LENGTH(c->details.method), 200),
                 (const char *)GRPC_SLICE_START_PTR(c->details.method));
    } else {
        grpc_byte_buffer_reader rd;
        if (!grpc_byte_buffer_reader_init(&rd, c->recv)) {
            reply.status = RPC_INVALID_ARGUMENT;
            snprintf(reply.details, sizeof(reply.details), "request message cannot be decoded");
        } else {
            grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
            grpc_byte_buffer_reader_destroy(&rd);
            if (start_handler(c, m, all))
                return; /* the handler thread finishes the call */
            grpc_slice_unref(all);
            reply.status = RPC_UNAVAILABLE;
            snprintf(reply.details, sizeof(reply.details),
                     "server busy or shutting down (%u calls in progress at most); retry",
                     RPC_MAX_HANDLERS);
        }
    }
    finish_call(c, &reply, true);
    free(reply.data);
}

int rpc_stream_send(struct rpc_stream *st, const uint8_t *data, size_t len)
{
    grpc_slice sl = grpc_slice_from_copied_buffer((const char *)data, len);
    grpc_byte_buffer *buf = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = buf;
    pthread_mutex_lock(&st->lock);
    st->done = false;
    st->ok = false;
    pthread_mutex_unlock(&st->lock);
    if (gs_http_cancel_is_triggered(st->cancel) ||
        grpc_call_start_batch(st->call->call, &op, 1, st, NULL) != GRPC_CALL_OK) {
        grpc_byte_buffer_destroy(buf);
        return -EPIPE;
    }
    bool cancelled = false;
    pthread_mutex_lock(&st->lock);
    while (!st->done) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&st->cond, &st->lock, &until);
        if (!st->done && !cancelled && gs_http_cancel_is_triggered(st->cancel)) {
            cancelled = true; /* a client that stopped reading: end the send */
            grpc_call_cancel(st->call->call, NULL);
        }
    }
    bool ok = st->ok;
    pthread_mutex_unlock(&st->lock);
    grpc_byte_buffer_destroy(buf);
    return ok ? 0 : -EPIPE;
}

static void on_stream_sent(struct rpc_stream *st, bool success)
{
    pthread_mutex_lock(&st->lock);
    st->done = true;
    st->ok = success;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
}

static void on_event(struct rpc_server *s, void *tag, bool success)
{
    int kind = *(const int *)tag; /* every tag starts with its kind */
    if (kind == 3) {
        on_stream_sent(tag, success);
        return;
    }
    if (kind == 1) {
        /* The server finished shutting down: no more events will be queued but ours. */
        grpc_completion_queue_shutdown(s->cq);
        return;
    }
    if (kind == 2) {
        on_close(tag);
        return;
    }
    struct rpc_call *c = tag;
    switch (c->state) {
    case CALL_REQUESTED: {
        if (!success) { /* server shutting down */
            call_unref(c);
            return;
        }
        pthread_mutex_lock(&s->lock);
        bool stop = s->shutting_down;
        pthread_mutex_unlock(&s->lock);
        if (!stop && post_request(s) < 0)
            gs_warn("cannot wait for the next gRPC call", "reason=%s", "request_call_failed");
        grpc_op ops[2];
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[0].data.send_initial_metadata.count = 0;
        ops[1].op = GRPC_OP_RECV_MESSAGE;
        ops[1].data.recv_message.recv_message = &c->recv;
        c->state = CALL_RECEIVED;
        /* Learn as soon as the client gives up, to stop the handler's work with it. */
        grpc_op close_op;
        memset(&close_op, 0, sizeof(close_op));
        close_op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        close_op.data.recv_close_on_server.cancelled = &c->cancelled;
        pthread_mutex_lock(&s->lock);
        c->refs++;
        pthread_mutex_unlock(&s->lock);
        if (grpc_call_start_batch(c->call, &close_op, 1, &c->close, NULL) != GRPC_CALL_OK) {
            /* Not the last reference: the chain of the call's own batches still holds one. */
            pthread_mutex_lock(&s->lock);
            c->refs--;
            pthread_mutex_unlock(&s->lock);
        }
        if (grpc_call_start_batch(c->call, ops, 2, c, NULL) != GRPC_CALL_OK)
            call_unref(c);
        return;
    }
    case CALL_RECEIVED:
        on_received(c, success);
        return;
    case CALL_FINISHING:
        call_unref(c);
        return;
    }
}

static void *worker(void *arg)
{
    struct rpc_server *s = arg;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_OP_COMPLETE)
            on_event(s, ev.tag, ev.success != 0);
    }
    return NULL;
}

struct rpc_server *rpc_server_new(const char *socket_path, const struct rpc_method *methods,
                                  size_t n_methods, void *user,
                                  const struct rpc_server_options *opts, struct gs_error *err)
{
    struct rpc_server *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->kind = 1;
    s->methods = methods;
    s->n_methods = n_methods;
    s->user = user;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->idle, NULL);
    unsigned threads = opts && opts->threads ? opts->threads : 1;
    if (threads > RPC_MAX_THREADS)
        threads = RPC_MAX_THREADS;
    size_t max_recv = opts && opts->max_recv_bytes ? opts->max_recv_bytes : RPC_DEFAULT_MAX_RECV;
    if (max_recv > INT32_MAX)
        max_recv = INT32_MAX;

    s->socket_path = strdup(socket_path);
    if (!s->socket_path) {
        gs_error_set(err, -ENOMEM, "out of memory");
        goto fail;
    }
    /* A socket left by a previous run would make the bind fail. Only sockets are removed. */
    struct stat st;
    if (lstat(socket_path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            gs_error_set(err, -EEXIST, "socket path %s exists and is not a socket", socket_path);
            goto fail;
        }
        unlink(socket_path);
    }

    /* The server layer's gRPC budget (net/grpc.h): streams, idle, keepalive, message sizes and
     * a memory quota, as channel arguments. */
    struct gs_net_grpc_budget budget = {.max_recv_bytes = max_recv, .max_send_bytes = 16u << 20};
    s->cq = grpc_completion_queue_create_for_next(NULL);
    s->server = gs_net_grpc_server_new(&budget);
    grpc_server_register_completion_queue(s->server, s->cq, NULL);

    char addr[4200];
    snprintf(addr, sizeof(addr), "unix:%s", socket_path);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(s->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (port == 0) {
        gs_error_set(err, -EADDRNOTAVAIL, "cannot listen on unix socket %s", socket_path);
        grpc_server_destroy(s->server);
        s->server = NULL;
        grpc_completion_queue_shutdown(s->cq);
        while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN) {
        }
        grpc_completion_queue_destroy(s->cq);
        s->cq = NULL;
        goto fail;
    }
    if (lstat(socket_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        s->sock_dev = st.st_dev;
        s->sock_ino = st.st_ino;
        s->sock_known = true;
    }
    grpc_server_start(s->server);
    for (unsigned i = 0; i < threads; i++) {
        if (post_request(s) < 0) {
            gs_error_set(err, -EIO, "cannot post a gRPC request on %s", socket_path);
            break;
        }
    }
    for (unsigned i = 0; i < threads; i++) {
        if (pthread_create(&s->threads[i], NULL, worker, s) != 0)
            break;
        s->n_threads++;
    }
    if (s->n_threads == 0) {
        gs_error_set(err, -EAGAIN, "cannot start gRPC worker threads");
        rpc_server_free(s);
        return NULL;
    }
    return s;

fail:
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->lock);
    free(s->socket_path);
    free(s);
    return NULL;
}

void rpc_server_free(struct rpc_server *s)
{
    if (!s)
        return;
    /* No new handler starts; running ones see the cancel and end; their finishing batches need
     * the workers and the queue, so both stay up until the last handler is done. */
    pthread_mutex_lock(&s->lock);
    s->shutting_down = true;
    for (struct rpc_call *c = s->active; c; c = c->next_active)
        gs_http_cancel_trigger(c->cancel);
    while (s->handlers > 0)
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    /* Remove the socket only if it is still ours: another process may have bound the path since.
     * The gRPC core unlinks its listening path when the server goes away, so a socket that is not
     * ours is kept through that under a second name (a hard link to the same inode) and put back.
     */
    struct stat st;
    char keep[PATH_MAX];
    bool foreign = s->sock_known && lstat(s->socket_path, &st) == 0 &&
                   (st.st_dev != s->sock_dev || st.st_ino != s->sock_ino);
    snprintf(keep, sizeof(keep), "%s.keep.%ld", s->socket_path, (long)getpid());
    if (foreign && link(s->socket_path, keep) < 0)
        foreign = false;
    grpc_server_shutdown_and_notify(s->server, s->cq, s);
    grpc_server_cancel_all_calls(s->server);
    for (unsigned i = 0; i < s->n_threads; i++)
        pthread_join(s->threads[i], NULL);
    grpc_server_destroy(s->server);
    grpc_completion_queue_destroy(s->cq);
    if (foreign) {
        if (lstat(s->socket_path, &st) == 0)
            unlink(keep);
        else
            rename(keep, s->socket_path);
        gs_warn("socket is not ours any more, left in place", "path=%s", GS_LOGQ(s->socket_path));
    } else if (s->sock_known && lstat(s->socket_path, &st) == 0 && st.st_dev == s->sock_dev &&
               st.st_ino == s->sock_ino) {
        unlink(s->socket_path);
    }
    free(s->socket_path);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
