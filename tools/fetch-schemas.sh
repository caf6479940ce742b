#!/usr/bin/env bash
# Test oracles from the npm registry (tools/install-deps.sh runs this): the CycloneDX JSON schemas
# (bom-1.5 and the spdx/jsf schemas it references), from the CycloneDX project's own JavaScript
# library, into $GPUSLICE_CACHE_DIR (default ~/.cache/gpuslice)/cyclonedx/. The image test
# validates the image's SBOM against them; it skips without them (fails in CI).
set -euo pipefail
version=10.3.0
cache="${GPUSLICE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuslice}"
dest="$cache/cyclonedx"
if [ -f "$dest/bom-1.5.SNAPSHOT.schema.json" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$version" ]; then
    exit 0
fi
if ! command -v npm >/dev/null; then
    echo "deps: npm not found: the CycloneDX schemas (SBOM test oracle) are not fetched" >&2
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && npm pack --silent "@cyclonedx/cyclonedx-library@$version" >/dev/null); then
    echo "deps: npm pack @cyclonedx/cyclonedx-library@$version failed: the SBOM schema check will skip (fail in CI)" >&2
    exit 0
fi
mkdir -p "$dest"
tar -xzf "$tmp"/cyclonedx-cyclonedx-library-"$version".tgz -C "$tmp"
cp "$tmp"/package/res/schema/*.schema.json "$dest"/
cp "$tmp"/package/LICENSE "$dest"/LICENSE 2>/dev/null || true
echo "$version" >"$dest/VERSION"
echo "deps: CycloneDX schemas $version in $dest"
