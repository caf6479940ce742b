/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice health-clear [--health-clear-dir DIR] GPU
 *
 * The operator's clear of a GPU's sticky fault (a fatal XID, a double-bit ECC error), after it
 * was repaired: touches DIR/GPU, which every watcher on the node (kubelet plugin, device plugin,
 * monitor) sees at its next poll (gpu/health.h). GPU is "hami-gpu-<minor>", a UUID "GPU-...", or
 * "all". Exit 0, 2 on a bad argument, 1 when the file cannot be written (the message names it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/macros.h"
#include "cli/commands.h"
#include "config/config.h"
#include "gpu/health-options.h"

struct clear_config {
    char *dir;
};

static const struct gs_option options[] = {
    {.name = "health-clear-dir",
     .env = "GPUSLICE_HEALTH_CLEAR_DIR",
     .type = GS_OPT_STRING,
     .def = GPU_HEALTH_CLEAR_DIR,
     .metavar = "DIR",
     .help = "the watchers' clear folder (the daemons' --health-clear-dir)",
     .offset = offsetof(struct clear_config, dir)},
};

static const struct gs_config_spec spec = {
    .program = "gpuslice health-clear",
    .summary = "Mark a GPU healthy again after a fatal XID or ECC error was repaired: "
               "gpuslice health-clear [--health-clear-dir DIR] GPU (hami-gpu-<minor>, its "
               "UUID, or all).",
    .options = options,
    .n_options = GS_ARRAY_SIZE(options),
};

/* A GPU name we accept as a file name: "all", "hami-gpu-<digits>", "GPU-<hex and dashes>". */
static bool valid_gpu(const char *s)
{
    if (strcmp(s, "all") == 0)
        return true;
    const char *rest = NULL;
    if (strncmp(s, "hami-gpu-", 9) == 0) {
        rest = s + 9;
        if (!*rest || strlen(rest) > 4)
            return false;
        for (; *rest; rest++)
            if (*rest < '0' || *rest > '9')
                return false;
        return true;
    }
    if (strncasecmp(s, "GPU-", 4) == 0 && strlen(s) < 100) {
        for (rest = s + 4; *rest; rest++)
            if (!((*rest >= '0' && *rest <= '9') || (*rest >= 'a' && *rest <= 'f') ||
                  (*rest >= 'A' && *rest <= 'F') || *rest == '-'))
                return false;
        return s[4] != '\0';
    }
    return false;
}

int cmd_health_clear(int argc, char **argv)
{
    struct clear_config cfg = {0};
    struct gs_error err = {0};
    int first = argc;
    int r = gs_config_parse(&spec, &cfg, argc, argv, stdout, &first, &err);
    if (r == GS_CONFIG_EXIT) {
        gs_config_free(&spec, &cfg);
        return 0;
    }
    int status = 2;
    if (r < 0) {
        fprintf(stderr, "gpuslice health-clear: %s\n", err.msg);
    } else if (first != argc - 1) {
        fprintf(stderr, "gpuslice health-clear: expected one GPU (hami-gpu-<minor>, GPU-<uuid> "
                        "or all)\n");
    } else if (!valid_gpu(argv[first])) {
        fprintf(stderr,
                "gpuslice health-clear: GPU \"%.64s\" is not hami-gpu-<minor>, GPU-<uuid> or "
                "all\n",
                argv[first]);
    } else if (!cfg.dir || !*cfg.dir) {
        fprintf(stderr, "gpuslice health-clear: --health-clear-dir is empty\n");
    } else {
        status = 1;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", cfg.dir, argv[first]);
        int fd = -1;
        if (gs_mkdir_p(cfg.dir, 0755, &err) < 0)
            fprintf(stderr, "gpuslice health-clear: %s\n", err.msg);
        else if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0 ||
                 futimens(fd, NULL) < 0)
            fprintf(stderr, "gpuslice health-clear: %s: %s\n", path, strerror(errno));
        else {
            printf("cleared %s (%s): the watchers mark it healthy at their next poll\n",
                   argv[first], path);
            status = 0;
        }
        if (fd >= 0)
            close(fd);
    }
    gs_config_free(&spec, &cfg);
    return status;
}
