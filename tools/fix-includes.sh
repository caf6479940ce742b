#!/usr/bin/env bash
# Rewrites include paths and meson references from the old src/common grab bag to the layer
# folders (src/base, src/abi, src/config, src/kube, src/net). Run it over a tree, a branch after a
# merge, or files given as arguments: tools/fix-includes.sh [path ...] (default: src tests bench).
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A layer=(
  [error]=base [macros]=base [log]=base [fs]=base [clock]=base [proc]=base [daemon]=base [version]=base
  [cuda_abi]=abi [nvml_abi]=abi [cuda_array]=abi
  [config]=config [json]=config [yaml]=config [quantity]=config [limits]=config
  [http]=kube [k8s]=kube [kubeconfig]=kube
  [httpd]=net
)
expr=()
for name in "${!layer[@]}"; do
  expr+=(-e "s#\\bcommon/${name}\\.\\([ch]\\)\\b#${layer[$name]}/${name}.\\1#g")
done
if (($#)); then set -- "$@"; else set -- src tests bench include tools docs README.md; fi
grep -rlE "common/[a-z0-9_]+\.[ch]\b" "$@" --exclude=fix-includes.sh 2>/dev/null | while read -r f; do
  sed -i "${expr[@]}" "$f"
done
