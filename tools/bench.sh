#!/usr/bin/env bash
# make bench: runs every benchmark registered in meson's 'bench' suite (bench/<module>/...).
# Each prints its figures and a ratio against a baseline measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
meson test -C build --no-rebuild --suite bench --verbose --num-processes 1 "$@"
