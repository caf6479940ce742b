#!/usr/bin/env bash
# Installs the Debian packages listed in tools/deps.txt (with --build: tools/deps-build.txt, what
# the image's build stage needs) that are not installed yet, then (not with --build) the test
# oracles that come from the npm registry (the CycloneDX JSON schemas, tools/fetch-schemas.sh).
# Runs `apt-get update` once, only when something is missing. Needs root (or sudo).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list="$here/deps.txt"
build_only=0
if [ "${1:-}" = "--build" ]; then
    list="$here/deps-build.txt"
    build_only=1
fi
fetch_schemas() { [ "$build_only" = 1 ] || "$here/fetch-schemas.sh"; }
mapfile -t pkgs < <(grep -v -e '^#' -e '^[[:space:]]*$' "$list")
missing=()
for p in "${pkgs[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    [[ "$status" == ii* ]] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all ${#pkgs[@]} packages present"
    fetch_schemas
    exit 0
fi
echo "deps: installing ${#missing[@]} missing packages: ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "deps: done"
fetch_schemas
