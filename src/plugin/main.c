/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice-kubelet-plugin: start-up order is discovery -> host files -> checkpoint reconcile ->
 * health/metrics -> DRA service -> registration socket (kubelet connects only when everything it
 * will call is up) -> ResourceSlice publisher. SIGTERM/SIGINT stop in the reverse order.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <sys/file.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/daemon.h"
#include "kube/k8s.h"
#include "kube/kubeconfig.h"
#include "base/log.h"
#include "gpu/nvml.h"
#include "plugin/dra-service.h"
#include "plugin/driver.h"
#include "base/fs.h"
#include "plugin/grpc-server.h"
#include "plugin/health.h"
#include "plugin/metrics.h"
#include "plugin/options.h"
#include "plugin/slices.h"

#define VGPU_LIB_MAX (256u * 1024u * 1024u)

static int install_host_files(const struct plugin_options *o, struct gs_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/claims", o->host_dir);
    int r = gs_mkdir_p(path, 0755, err);
    if (r < 0)
        return r;
    if (o->vgpu_lib && *o->vgpu_lib) {
        char *data = NULL;
        size_t len = 0;
        if ((r = gs_read_file(o->vgpu_lib, VGPU_LIB_MAX, &data, &len, err)) < 0)
            return gs_error_prefix(err, "--vgpu-lib: "), r;
        snprintf(path, sizeof(path), "%s/libvgpu.so", o->host_dir);
        r = gs_write_file_atomic_ex(path, data, len, 0755, GS_FS_DURABLE, err);
        free(data);
        if (r < 0)
            return r;
    }
    snprintf(path, sizeof(path), "%s/ld.so.preload", o->host_dir);
    return gs_write_file_atomic_ex(path, CDI_CONTAINER_LIB "\n", strlen(CDI_CONTAINER_LIB "\n"),
                                   0644, GS_FS_DURABLE, err);
}

#define LOCK_FILE_NAME "plugin.lock"

/*
 * One plugin per state directory: an exclusive flock on <state-dir>/plugin.lock, held (fd kept
 * open) for the life of the process and released by the kernel when it dies, even by SIGKILL. The
 * file holds the holder's pid for the message. Returns the fd, or a negative code with err set.
 */
/* flock `dir`/`name` (created) for the life of the process; -EBUSY naming the holder's pid when
 * another process holds it. `what` says which directory in the message. */
static int lock_dir(const char *dir, const char *name, const char *what, struct gs_error *err)
{
    char path[PATH_MAX];
    int r = gs_mkdir_p(dir, 0700, err);
    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return gs_error_set(err, -errno, "cannot open the lock file %s: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (e == EWOULDBLOCK)
            return gs_error_set(err, -EBUSY,
                                "another gpuslice-kubelet-plugin (pid %s) is running with the "
                                "%s %s; refusing to start a second one",
                                *pid ? pid : "unknown", what, dir);
        return gs_error_set(err, -e, "cannot lock %s: %s", path, strerror(e));
    }
    char buf[32];
    int len = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)len, 0) != len)
        gs_warn("cannot record the pid in the lock file", "path=%s", GS_LOGQ(path));
    return fd;
}

/* Seconds for the publisher's timers: sub-second values round up, 0 stays 0 (off). */
static unsigned interval_s(int64_t ns)
{
    if (ns <= 0)
        return 0;
    int64_t s = (ns + 999999999) / 1000000000;
    return s > 86400 * 30 ? 86400u * 30 : (unsigned)s;
}

int main(int argc, char **argv)
{
    struct plugin_options *o = calloc(1, sizeof(*o));
    struct gs_error err = {0};
    if (!o)
        return 1;
    int action = options_parse(argc, argv, o, stdout, &err);
    if (action != 0) {
        if (action < 0)
            fprintf(stderr, "gpuslice-kubelet-plugin: %s\n", err.msg);
        options_free(o);
        free(o);
        return action < 0 ? 2 : 0;
    }
    /* A few threads, little allocation: two malloc arenas are plenty and keep the RSS down. */
    mallopt(M_ARENA_MAX, 2);
    gs_log_set_component("plugin");
    gs_log_set_level((enum gs_log_level)(o->log_level + 1));

    /* Signals are taken synchronously by the main thread; block them before any thread exists. */
    sigset_t sigs;
    gs_daemon_block_signals(&sigs, SIGHUP);

    int rc = 1;
    struct gs_kube_config kc = {0};
    struct gs_k8s_client *k8s = NULL;
    struct gs_k8s_recorder *events = NULL;
    struct gpu_inventory *inv = calloc(1, sizeof(*inv));
    struct metrics *m = calloc(1, sizeof(*m));
    struct driver *drv = calloc(1, sizeof(*drv));
    struct metrics_http *mhttp = NULL, *hhttp = NULL;
    struct rpc_server *dra = NULL, *reg = NULL;
    struct publisher *pub = NULL;
    struct plugin_health *health = NULL;
    bool drv_ok = false;
    char dra_sock[PATH_MAX], reg_sock[PATH_MAX];
    struct registration_info ri = {0};
    int lock_fd = -1, lock_fds[3] = {-1, -1, -1};
    if (!inv || !m || !drv)
        goto out;

    /* Before anything touches the state, CDI or socket directories. */
    /* Every directory this instance owns: the state, the sockets, this driver's files in the
     * CDI and registration folders. A second instance with its own state directory but the same
     * CDI or socket folder would delete the first's CDI specs at start and its sockets at exit. */
    char cdi_lock[300], reg_lock[300];
    snprintf(cdi_lock, sizeof(cdi_lock), ".gpuslice-%s.lock", o->driver_name);
    snprintf(reg_lock, sizeof(reg_lock), ".%s-reg.lock", o->driver_name);
    lock_fd = lock_dir(o->state_dir, LOCK_FILE_NAME, "state directory", &err);
    if (lock_fd >= 0 &&
        ((lock_fds[0] =
              lock_dir(o->plugin_dir, ".gpuslice-sockets.lock", "socket directory", &err)) < 0 ||
         (lock_fds[1] = lock_dir(o->cdi_root, cdi_lock, "CDI directory (this driver)", &err)) < 0 ||
         (lock_fds[2] = lock_dir(o->registrar_dir, reg_lock, "registration directory (this driver)",
                                 &err)) < 0)) {
        close(lock_fd);
        lock_fd = -1;
    }
    if (lock_fd < 0) {
        char q[sizeof(err.msg) + 8];
        gs_error_log("cannot start", "error=%s", gs_log_quote(q, sizeof(q), err.msg));
        fprintf(stderr, "gpuslice-kubelet-plugin: %s\n", err.msg);
        goto out;
    }

    if (gs_kube_config_load(o->kubeconfig && *o->kubeconfig ? o->kubeconfig : NULL, &kc, &err) <
        0) {
        gs_error_log("cannot load the Kubernetes configuration", "error=%s", GS_LOGQ(err.msg));
        goto out;
    }
    struct gs_k8s_options ko = {.qps = (double)o->kube_qps, .burst = (unsigned)o->kube_burst};
    k8s = gs_k8s_client_new_with(&kc, &ko, &err);
    if (!k8s) {
        gs_error_log("cannot create the Kubernetes client", "error=%s", GS_LOGQ(err.msg));
        goto out;
    }
    if (gpu_nvml_set_driver_root(o->driver_root, &err) < 0) {
        gs_error_log("bad --driver-root", "error=%s", GS_LOGQ(err.msg));
        fprintf(stderr, "gpuslice-kubelet-plugin: --driver-root: %s\n", err.msg);
        goto out;
    }
    if (gpu_discover(o->sysfs_root, inv, &err) < 0) {
        gs_error_log("GPU discovery failed", "error=%s", GS_LOGQ(err.msg));
        goto out;
    }
    gs_info("GPUs discovered", "devices=%zu node=%s", inv->n, GS_LOGQ(o->node_name));
    if (install_host_files(o, &err) < 0) {
        gs_error_log("cannot prepare the host directory", "dir=%s error=%s", GS_LOGQ(o->host_dir),
                     GS_LOGQ(err.msg));
        goto out;
    }

    events = gs_k8s_recorder_new(
        k8s, &(struct gs_k8s_recorder_options){.component = "gpuslice-kubelet-plugin",
                                               .instance = o->node_name,
                                               .timeout_ms = 1000});
    struct driver_config dc = {
        .events = events,
        .node_name = o->node_name,
        .driver_name = o->driver_name,
        .state_dir = o->state_dir,
        .sysfs_root = o->sysfs_root,
        .cdi = {.driver = o->driver_name,
                .cdi_root = o->cdi_root,
                .host_dir = o->host_dir,
                .selection = o->gpu_selection == GPU_SELECTION_DEVICE_NODES
                                 ? CDI_SELECT_DEVICE_NODES
                             : o->gpu_selection == GPU_SELECTION_NONE ? CDI_SELECT_NONE
                                                                      : CDI_SELECT_VOLUME_MOUNTS},
        .reconcile_grace_s = o->reconcile_grace_ns / 1000000000,
        .fault_point = o->fault_point > 0 ? options_fault_points[o->fault_point] : NULL,
    };
    if (driver_init(drv, &dc, k8s, m, &err) < 0) {
        gs_error_log("cannot load the checkpoint", "error=%s", GS_LOGQ(err.msg));
        goto out;
    }
    drv_ok = true;
    driver_set_inventory(drv, inv);
    int fixed = driver_reconcile_local(drv);
    gs_info("checkpoint loaded", "claims=%zu reconciled=%d", ckpt_count(&drv->ckpt), fixed);

    if (o->metrics_addr && *o->metrics_addr) {
        struct gs_net_budget budget = {
            .max_connections = (unsigned)o->max_connections,
            .max_per_client = (unsigned)o->max_connections_per_client,
            .header_timeout_ms = (unsigned)(o->header_timeout_ns / 1000000),
            .idle_timeout_s = (unsigned)(o->idle_timeout_ns / 1000000000)};
        mhttp = metrics_http_start(m, o->metrics_addr, o->driver_name, o->node_name, &budget, &err);
        if (!mhttp && err.code) {
            gs_error_log("cannot serve metrics", "error=%s", GS_LOGQ(err.msg));
            goto out;
        }
    }
    if (o->healthcheck_port > 0) {
        char addr[32];
        snprintf(addr, sizeof(addr), ":%lld", (long long)o->healthcheck_port);
        gs_error_clear(&err);
        hhttp = metrics_http_start(m, addr, o->driver_name, o->node_name, NULL, &err);
        if (!hhttp) {
            gs_error_log("cannot serve the health endpoint", "error=%s", GS_LOGQ(err.msg));
            goto out;
        }
    }

    struct plugin_health_config hc = {
        .node = o->node_name,
        .driver = o->driver_name,
        .enabled = o->health,
        .nonfatal_xids = o->health_nonfatal_xids,
        .ignore_xids = o->health_ignore_xids,
        .clear_dir = o->health_clear_dir,
    };
    health = plugin_health_start(&hc, inv, k8s, &err);
    if (!health) {
        gs_error_log("cannot watch GPU health", "error=%s", GS_LOGQ(err.msg));
        fprintf(stderr, "gpuslice-kubelet-plugin: %s\n", err.msg);
        goto out;
    }
    drv->health = plugin_health_table(health);

    rpc_global_init();
    if (gs_mkdir_p(o->plugin_dir, 0750, &err) < 0 || gs_mkdir_p(o->registrar_dir, 0750, &err) < 0) {
        gs_error_log("cannot create the socket directories", "error=%s", GS_LOGQ(err.msg));
        goto out_grpc;
    }
    snprintf(dra_sock, sizeof(dra_sock), "%s/dra.sock", o->plugin_dir);
    snprintf(reg_sock, sizeof(reg_sock), "%s/%s-reg.sock", o->registrar_dir, o->driver_name);
    struct rpc_server_options so = {.threads = (unsigned)o->grpc_threads,
                                    .max_recv_bytes = (size_t)o->max_grpc_message};
    dra = rpc_server_new(dra_sock, dra_methods, dra_n_methods, drv, &so, &err);
    if (!dra) {
        gs_error_log("cannot serve the DRA service", "error=%s", GS_LOGQ(err.msg));
        goto out_grpc;
    }
    ri.driver_name = o->driver_name;
    ri.endpoint = dra_sock;
    ri.metrics = m;
    struct rpc_server_options ro = {.threads = 1, .max_recv_bytes = 64 * 1024};
    reg = rpc_server_new(reg_sock, registration_methods, registration_n_methods, &ri, &ro, &err);
    if (!reg) {
        gs_error_log("cannot serve the registration socket", "error=%s", GS_LOGQ(err.msg));
        goto out_grpc;
    }
    atomic_store(&m->serving, 1);
    gs_info("serving", "registration=%s dra=%s", GS_LOGQ(reg_sock), GS_LOGQ(dra_sock));

    struct publisher_config pc = {
        .driver = o->driver_name,
        .node = o->node_name,
        .sysfs_root = o->sysfs_root,
        .discovery_interval_s = interval_s(o->discovery_interval_ns),
        .resync_interval_s = interval_s(o->resync_interval_ns),
        .reconcile_interval_s = interval_s(o->reconcile_interval_ns),
        .health = plugin_health_table(health),
        .watcher = plugin_health_watcher(health),
    };
    pub = publisher_start(&pc, k8s, drv, m, inv, &err);
    if (!pub) {
        gs_error_log("cannot start the ResourceSlice publisher", "error=%s", GS_LOGQ(err.msg));
        goto out_grpc;
    }
    plugin_health_set_publisher(health, pub);

    int sig = 0;
    sigwait(&sigs, &sig);
    gs_info("stopping", "signal=%d", sig);
    rc = 0;

out_grpc:
    atomic_store(&m->serving, 0);
    rpc_server_free(reg); /* kubelet sees the socket vanish and unregisters the plugin */
    plugin_health_set_publisher(health, NULL);
    publisher_stop(pub);
    rpc_server_free(dra); /* waits for the health stream's handlers */
    rpc_global_fini();
out:
    plugin_health_stop(health);
    metrics_http_stop(hhttp);
    metrics_http_stop(mhttp);
    if (drv_ok)
        driver_fini(drv);
    gs_k8s_recorder_free(events);
    gs_k8s_client_free(k8s);
    gs_kube_config_fini(&kc);
    free(drv);
    free(m);
    free(inv);
    if (lock_fd >= 0)
        close(lock_fd);
    for (size_t i = 0; i < GS_ARRAY_SIZE(lock_fds); i++)
        if (lock_fds[i] >= 0)
            close(lock_fds[i]);
    options_free(o);
    free(o);
    return rc;
}
