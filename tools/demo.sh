#!/usr/bin/env bash
# make demo: the lab's story on the embedded default (a simulated T4). Filled in by the
# standalone mode; until its CLI exists this prints what has been built.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x dist/bin/gpuslice ] && dist/bin/gpuslice demo --help >/dev/null 2>&1; then
    exec dist/bin/gpuslice demo "$@"
fi
echo "gpuslice demo: the standalone CLI is not built yet; staged artifacts:"
find dist -type f -o -type l | sort
