#!/usr/bin/env bash
# make lint: clang-format check on our C sources and clang-tidy (curated .clang-tidy).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mapfile -t files < <(git ls-files '*.c' '*.h')
echo "clang-format: ${#files[@]} files"
clang-format --dry-run -Werror "${files[@]}"
mapfile -t srcs < <(git ls-files 'src/*.c')
echo "clang-tidy: ${#srcs[@]} files"
log=$(mktemp)
rc=0
clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option --warnings-as-errors='*' "${srcs[@]}" >"$log" 2>&1 || rc=$?
grep -v 'warnings generated' "$log" || true
rm -f "$log"
exit $rc
