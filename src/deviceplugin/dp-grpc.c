/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC server (thread per call, unary + server streaming) and unary client (see dp-grpc.h). */
#include "deviceplugin/dp-grpc.h"

#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "net/grpc.h"

void dp_grpc_init(void)
{
    grpc_init();
}

void dp_grpc_fini(void)
{
    grpc_shutdown();
}

struct dp_server {
    grpc_server *server;
    grpc_completion_queue *cq; /* notifications of new calls */
    const struct dp_method *methods;
    size_t n;
    void *user;
    char *path;
    ino_t ino;
    pthread_t acceptor;
    pthread_mutex_t lock;
    pthread_cond_t idle;
    unsigned active;
    bool stopping;
};

struct dp_stream {
    struct dp_server *srv;
    grpc_call *call;
    grpc_completion_queue *cq;
    grpc_call_details details;
    grpc_metadata_array md;
    int cancelled;
    bool closed;
};

static gpr_timespec after_ms(int ms)
{
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

static bool batch(struct dp_stream *c, grpc_op *ops, size_t n, void *tag)
{
    if (grpc_call_start_batch(c->call, ops, n, tag, NULL) != GRPC_CALL_OK)
        return false;
    grpc_event ev =
        grpc_completion_queue_pluck(c->cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    return ev.type == GRPC_OP_COMPLETE && ev.success;
}

#define TAG_RECV  ((void *)1)
#define TAG_SEND  ((void *)2)
#define TAG_CLOSE ((void *)3)
#define TAG_END   ((void *)4)

int dp_stream_send(struct dp_stream *st, const uint8_t *data, size_t len)
{
    if (st->closed)
        return -EPIPE;
    grpc_slice sl = grpc_slice_from_copied_buffer((const char *)data, len);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    grpc_op op = {.op = GRPC_OP_SEND_MESSAGE};
    op.data.send_message.send_message = bb;
    bool ok = batch(st, &op, 1, TAG_SEND);
    grpc_byte_buffer_destroy(bb);
    return ok ? 0 : -EPIPE;
}

bool dp_stream_closed(struct dp_stream *st, int ms)
{
    if (st->closed)
        return true;
    grpc_event ev = grpc_completion_queue_pluck(st->cq, TAG_CLOSE, after_ms(ms), NULL);
    if (ev.type == GRPC_OP_COMPLETE)
        st->closed = true;
    pthread_mutex_lock(&st->srv->lock);
    bool stopping = st->srv->stopping;
    pthread_mutex_unlock(&st->srv->lock);
    return st->closed || stopping;
}

static const struct dp_method *find(struct dp_server *s, grpc_slice m)
{
    size_t len = GRPC_SLICE_LENGTH(m);
    for (size_t i = 0; i < s->n; i++)
        if (strlen(s->methods[i].path) == len &&
            memcmp(s->methods[i].path, GRPC_SLICE_START_PTR(m), len) == 0)
            return &s->methods[i];
    return NULL;
}

static void *call_thread(void *arg)
{
    struct dp_stream *c = arg;
    struct dp_server *s = c->srv;
    grpc_byte_buffer *in = NULL;
    grpc_op ops[2];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &in;
    bool ok = batch(c, ops, 2, TAG_RECV);
    grpc_op close_op = {.op = GRPC_OP_RECV_CLOSE_ON_SERVER};
    close_op.data.recv_close_on_server.cancelled = &c->cancelled;
    grpc_call_start_batch(c->call, &close_op, 1, TAG_CLOSE, NULL);

    struct dp_reply reply = {.status = DP_OK};
    const struct dp_method *m = ok ? find(s, c->details.method) : NULL;
    uint8_t *req = NULL;
    size_t req_len = 0;
    if (ok && in) {
        grpc_byte_buffer_reader rd;
        if (grpc_byte_buffer_reader_init(&rd, in)) {
            grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
            req_len = GRPC_SLICE_LENGTH(all);
            req = malloc(req_len + 1);
            if (req)
                memcpy(req, GRPC_SLICE_START_PTR(all), req_len);
            grpc_slice_unref(all);
            grpc_byte_buffer_reader_destroy(&rd);
        }
    }
    if (!m) {
        reply.status = 12; /* UNIMPLEMENTED */
        snprintf(reply.details, sizeof(reply.details), "unknown method");
    } else if (!in || !req) {
        reply.status = DP_INVALID_ARGUMENT;
        snprintf(reply.details, sizeof(reply.details), "no request message");
    } else if (m->stream) {
        m->stream(s->user, c);
    } else {
        m->unary(s->user, req, req_len, &reply);
    }
    free(req);
    if (in)
        grpc_byte_buffer_destroy(in);

    grpc_op out[2];
    memset(out, 0, sizeof(out));
    size_t n = 0;
    grpc_byte_buffer *bb = NULL;
    if (reply.status == DP_OK && m && !m->stream) {
        grpc_slice sl = grpc_slice_from_copied_buffer((const char *)reply.data, reply.len);
        bb = grpc_raw_byte_buffer_create(&sl, 1);
        grpc_slice_unref(sl);
        out[n].op = GRPC_OP_SEND_MESSAGE;
        out[n++].data.send_message.send_message = bb;
    }
    grpc_slice details = grpc_slice_from_copied_string(reply.status == DP_OK ? "" : reply.details);
    out[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    out[n].data.send_status_from_server.status = (grpc_status_code)reply.status;
    out[n++].data.send_status_from_server.status_details = &details;
    batch(c, out, n, TAG_END);
    if (!c->closed)
        grpc_completion_queue_pluck(c->cq, TAG_CLOSE, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_slice_unref(details);
    if (bb)
        grpc_byte_buffer_destroy(bb);
    free(reply.data);

    grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    grpc_completion_queue_shutdown(c->cq);
    while (
        grpc_completion_queue_pluck(c->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
        GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(c->cq);
    free(c);
    pthread_mutex_lock(&s->lock);
    if (--s->active == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void *acceptor(void *arg)
{
    struct dp_server *s = arg;
    for (;;) {
        struct dp_stream *c = calloc(1, sizeof(*c));
        if (!c)
            break;
        c->srv = s;
        c->cq = grpc_completion_queue_create_for_pluck(NULL);
        grpc_call_details_init(&c->details);
        grpc_metadata_array_init(&c->md);
        grpc_call_error e =
            grpc_server_request_call(s->server, &c->call, &c->details, &c->md, c->cq, s->cq, c);
        grpc_event ev = {0};
        if (e == GRPC_CALL_OK)
            ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (e != GRPC_CALL_OK || ev.type != GRPC_OP_COMPLETE || !ev.success || ev.tag != c) {
            grpc_call_details_destroy(&c->details);
            grpc_metadata_array_destroy(&c->md);
            grpc_completion_queue_shutdown(c->cq);
            while (
                grpc_completion_queue_pluck(c->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
                    .type != GRPC_QUEUE_SHUTDOWN)
                ;
            grpc_completion_queue_destroy(c->cq);
            free(c);
            break; /* shutdown */
        }
        pthread_mutex_lock(&s->lock);
        s->active++;
        pthread_mutex_unlock(&s->lock);
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, call_thread, c) != 0) {
            grpc_call_cancel(c->call, NULL);
            call_thread(c); /* runs inline: ends the cancelled call */
        }
        pthread_attr_destroy(&at);
    }
    return NULL;
}

struct dp_server *dp_server_new(const char *socket_path, const struct dp_method *methods, size_t n,
                                void *user, struct gs_error *err)
{
    struct dp_server *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(socket_path))) {
        free(s);
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->methods = methods, s->n = n, s->user = user;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->idle, NULL);
    struct stat st;
    if (lstat(socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(socket_path);
    s->cq = grpc_completion_queue_create_for_next(NULL);
    s->server = gs_net_grpc_server_new(NULL); /* the server layer's budget (net/grpc.h) */
    grpc_server_register_completion_queue(s->server, s->cq, NULL);
    char addr[4200];
    snprintf(addr, sizeof(addr), "unix:%s", socket_path);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(s->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (port == 0) {
        gs_error_set(err, -EADDRINUSE, "cannot listen on %s", socket_path);
        grpc_server_destroy(s->server);
        grpc_completion_queue_shutdown(s->cq);
        grpc_completion_queue_destroy(s->cq);
        free(s->path);
        free(s);
        return NULL;
    }
    grpc_server_start(s->server);
    if (stat(socket_path, &st) == 0)
        s->ino = st.st_ino;
    pthread_create(&s->acceptor, NULL, acceptor, s);
    return s;
}

void dp_server_free(struct dp_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_mutex_unlock(&s->lock);
    grpc_server_shutdown_and_notify(s->server, s->cq, (void *)s);
    grpc_server_cancel_all_calls(s->server);
    pthread_join(s->acceptor, NULL);
    pthread_mutex_lock(&s->lock);
    while (s->active)
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    grpc_completion_queue_shutdown(s->cq);
    while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_server_destroy(s->server);
    grpc_completion_queue_destroy(s->cq);
    struct stat st;
    if (stat(s->path, &st) == 0 && st.st_ino == s->ino)
        unlink(s->path);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->idle);
    free(s->path);
    free(s);
}

int dp_grpc_call(const char *socket_path, const char *method, const uint8_t *req, size_t len,
                 uint8_t **resp, size_t *resp_len, int timeout_ms, struct gs_error *err)
{
    char addr[4200];
    snprintf(addr, sizeof(addr), "unix:%s", socket_path);
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_channel *ch = grpc_channel_create(addr, creds, NULL);
    grpc_channel_credentials_release(creds);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_slice mslice = grpc_slice_from_copied_string(method);
    grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, mslice, NULL,
                                               after_ms(timeout_ms), NULL);
    grpc_slice_unref(mslice);
    grpc_slice sl = grpc_slice_from_copied_buffer((const char *)req, len);
    grpc_byte_buffer *out = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    grpc_byte_buffer *in = NULL;
    grpc_metadata_array init_md, trail_md;
    grpc_metadata_array_init(&init_md);
    grpc_metadata_array_init(&trail_md);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = out;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &in;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trail_md;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    int r = 0;
    if (grpc_call_start_batch(call, ops, 6, TAG_END, NULL) != GRPC_CALL_OK ||
        grpc_completion_queue_pluck(cq, TAG_END, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
            GRPC_OP_COMPLETE) {
        r = gs_error_set(err, -EIO, "%s: call failed to start", method);
    } else if (status != GRPC_STATUS_OK) {
        r = gs_error_set(err, status == GRPC_STATUS_UNAVAILABLE ? -ECONNREFUSED : -EIO,
                         "%s on %s: status %d: %.*s", method, socket_path, (int)status,
                         (int)GRPC_SLICE_LENGTH(details),
                         (const char *)GRPC_SLICE_START_PTR(details));
    } else if (resp) {
        *resp = NULL, *resp_len = 0;
        if (in) {
            grpc_byte_buffer_reader rd;
            if (grpc_byte_buffer_reader_init(&rd, in)) {
                grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
                *resp_len = GRPC_SLICE_LENGTH(all);
                *resp = malloc(*resp_len + 1);
                if (*resp)
                    memcpy(*resp, GRPC_SLICE_START_PTR(all), *resp_len);
                grpc_slice_unref(all);
                grpc_byte_buffer_reader_destroy(&rd);
            }
        }
    }
    if (in)
        grpc_byte_buffer_destroy(in);
    grpc_byte_buffer_destroy(out);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&init_md);
    grpc_metadata_array_destroy(&trail_md);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    grpc_channel_destroy(ch);
    return r;
}
