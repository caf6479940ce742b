/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "cli/commands.h"

#ifndef GS_VERSION
#define GS_VERSION "unknown"
#endif

int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpuslice %s\n", GS_VERSION);
    return 0;
}
