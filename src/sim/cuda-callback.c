/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: stream callbacks and host functions (cuStreamAddCallback, cuLaunchHostFunc).
 * Like the driver, they run on a thread of the driver's, one at a time, in the order they were
 * queued, each when the work queued before it on its stream has completed (its stream's tail
 * at the time of the call). The thread is started on the first callback (until then gpusim
 * starts no thread). Synchronising a stream or context, and querying a stream, also wait for the
 * callbacks queued there (their sequence numbers); a callback must not call the CUDA API (as the
 * driver documents).
 */
#include <stdlib.h>
#include <unistd.h>

#include "sim/cuda-internal.h"

struct cb_item {
    CUstreamCallback cb; /* cuStreamAddCallback */
    CUhostFn fn;         /* cuLaunchHostFunc */
    void *user;
    CUstream stream;
    uint64_t due_ns;
    uint64_t seq;
    struct cb_item *next;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* queue changed / a callback finished */
    struct cb_item *head, *tail;
    uint64_t next_seq; /* last sequence number handed out */
    uint64_t done_seq; /* last sequence number that has run */
    bool started;
    pid_t pid; /* process the thread runs in (fork: the child starts its own) */
} cbq = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, false, 0};

void cu_callbacks_fork(enum cu_fork_phase phase)
{
    switch (phase) {
    case CU_FORK_PREPARE:
        pthread_mutex_lock(&cbq.lock);
        break;
    case CU_FORK_PARENT:
        pthread_mutex_unlock(&cbq.lock);
        break;
    case CU_FORK_CHILD:
        /* The worker thread is not in the child: its queue (the parent's streams) goes. */
        pthread_mutex_init(&cbq.lock, NULL);
        pthread_cond_init(&cbq.cond, NULL);
        cbq.head = cbq.tail = NULL;
        cbq.done_seq = cbq.next_seq;
        cbq.started = false;
        break;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cbq.lock);
    for (;;) {
        while (!cbq.head)
            pthread_cond_wait(&cbq.cond, &cbq.lock);
        struct cb_item *it = cbq.head;
        pthread_mutex_unlock(&cbq.lock);
        cu_wait_until(it->due_ns);
        if (it->cb)
            it->cb(it->stream, CUDA_SUCCESS, it->user);
        else
            it->fn(it->user);
        pthread_mutex_lock(&cbq.lock);
        cbq.head = it->next;
        if (!cbq.head)
            cbq.tail = NULL;
        cbq.done_seq = it->seq;
        pthread_cond_broadcast(&cbq.cond);
        free(it);
    }
    return NULL;
}

/* NOLINTNEXTLINE(readability-non-const-parameter): written through __atomic builtins */
static void atomic_max(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < v &&
           !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

static CUresult enqueue(CUstream hStream, CUstreamCallback cb, CUhostFn fn, void *user)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    if (!cb && !fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct cb_item *it = calloc(1, sizeof(*it));
    if (!it)
        return CUDA_ERROR_OUT_OF_MEMORY;
    it->cb = cb;
    it->fn = fn;
    it->user = user;
    it->stream = hStream;
    it->due_ns = __atomic_load_n(&s->tail_ns, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&cbq.lock);
    pid_t me = getpid();
    if (cbq.started && cbq.pid != me) { /* forked: the parent's thread and queue are not ours */
        cbq.started = false;
        cbq.head = cbq.tail = NULL;
        cbq.done_seq = cbq.next_seq;
    }
    if (!cbq.started) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &a, worker, NULL);
        pthread_attr_destroy(&a);
        if (rc != 0) {
            pthread_mutex_unlock(&cbq.lock);
            free(it);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        cbq.started = true;
        cbq.pid = me;
    }
    uint64_t seq = it->seq = ++cbq.next_seq;
    if (cbq.tail)
        cbq.tail->next = it;
    else
        cbq.head = it;
    cbq.tail = it;
    pthread_cond_broadcast(&cbq.cond);
    pthread_mutex_unlock(&cbq.lock);
    /* `it` is the worker's from here (it may have run and been freed already): its sequence
     * number was read under the lock (test_fork_threads found the freed read: under
     * MALLOC_PERTURB_ a stream waited for a sequence number that never comes). */
    atomic_max(&s->cb_seq, seq);
    atomic_max(&s->ctx->cb_seq, seq);
    return CUDA_SUCCESS;
}

void cu_callbacks_wait(uint64_t seq)
{
    if (!seq)
        return;
    pthread_mutex_lock(&cbq.lock);
    while (cbq.done_seq < seq && cbq.pid == getpid())
        pthread_cond_wait(&cbq.cond, &cbq.lock);
    pthread_mutex_unlock(&cbq.lock);
}

bool cu_callbacks_done(uint64_t seq)
{
    if (!seq)
        return true;
    pthread_mutex_lock(&cbq.lock);
    bool done = cbq.done_seq >= seq || cbq.pid != getpid();
    pthread_mutex_unlock(&cbq.lock);
    return done;
}

CU_API CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                    unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return enqueue(hStream, callback, NULL, userData);
}

CU_API CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                         void *userData, unsigned int flags)
{
    return cuStreamAddCallback(hStream, callback, userData, flags);
}

CU_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return enqueue(hStream, NULL, fn, userData);
}

CU_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return enqueue(hStream, NULL, fn, userData);
}

/* CUDA 13.0: the same with flags (none defined: 0). */
CU_API CUresult cuLaunchHostFunc_v2(CUstream hStream, CUhostFn fn, void *userData,
                                    unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return enqueue(hStream, NULL, fn, userData);
}

CU_API CUresult cuLaunchHostFunc_v2_ptsz(CUstream hStream, CUhostFn fn, void *userData,
                                         unsigned int flags)
{
    return cuLaunchHostFunc_v2(hStream, fn, userData, flags);
}
