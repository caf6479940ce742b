/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "cli/commands.h"
#include "base/version.h"

/* `gpuslice version` and `gpuslice --version`: version and commit (base/version.h). */
int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    gs_version_print("gpuslice", stdout);
    return 0;
}
