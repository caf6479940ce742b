#!/usr/bin/env bash
# make lint: clang-format check on every tracked C file, clang-tidy (curated .clang-tidy, every
# warning an error) on every tracked src/*.c through the compile database of a configured build.
# Usage: tools/lint.sh [BUILD_DIR [PATH...]]   PATHs narrow the run (e.g. src/base src/cli).
# Exits non-zero on any finding, on any clang-tidy error, on a src/*.c file the build does not
# compile (it could not be analysed), and on a NOLINT without a reason. Nothing is skipped
# silently: the counts of what was checked are printed. See docs/internals/layers.md "Lint".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
scope=("$@")
jobs=${LINT_JOBS:-2}

db="$build/compile_commands.json"
if [[ ! -f $db ]]; then
    echo "lint: $db not found (configure the build first: meson setup $build)" >&2
    exit 2
fi

# Sources include generated headers (protobuf-c): make sure they exist, or clang-tidy fails on them.
mapfile -t gen < <(ninja -C "$build" -t targets all | sed -n 's/^\(.*\.h\): CUSTOM_COMMAND$/\1/p' | sort -u)
if ((${#gen[@]})); then
    ninja -C "$build" "${gen[@]}" >/dev/null
fi

files=$(git ls-files -- '*.c' '*.h')
srcs=$(git ls-files -- 'src/*.c')
if ((${#scope[@]})); then
    files=$(git ls-files -- "${scope[@]}" | grep -E '\.[ch]$' || true)
    srcs=$(git ls-files -- "${scope[@]}" | grep -E '^src/.*\.c$' || true)
fi
mapfile -t files <<<"$files"
mapfile -t srcs <<<"$srcs"
[[ -n ${files[0]:-} ]] || files=()
[[ -n ${srcs[0]:-} ]] || srcs=()
fail=0

echo "clang-format: ${#files[@]} files"
if ((${#files[@]})) && ! clang-format --dry-run -Werror "${files[@]}"; then
    echo "lint: clang-format: files above need clang-format -i" >&2
    fail=1
fi

# Every NOLINT names its check and says why: "NOLINT(check): reason" (or NOLINTNEXTLINE).
nolint=$( ((${#files[@]})) && grep -HnE 'NOLINT' "${files[@]}" || true)
bad=$(grep -vE 'NOLINT(NEXTLINE|BEGIN|END)?\([A-Za-z0-9.,*_-]+\): *([^*[:space:]]|\*[^/])' <<<"$nolint" |
    grep . || true)
echo "NOLINT markers: $(grep -c . <<<"$nolint" || true)"
if [[ -n $bad ]]; then
    echo "lint: NOLINT without a check name and a reason (\"NOLINT(check): why\"):" >&2
    echo "$bad" >&2
    fail=1
fi

# A source the build does not compile is not in the compile database: clang-tidy would guess its
# flags. Say so and fail instead.
missing=$(python3 - "$db" "${srcs[@]}" <<'EOF'
import json, os, sys
db = json.load(open(sys.argv[1]))
have = {os.path.realpath(os.path.join(e["directory"], e["file"])) for e in db}
for s in sys.argv[2:]:
    if os.path.realpath(s) not in have:
        print(s)
EOF
)
if [[ -n $missing ]]; then
    echo "lint: not in $db (not compiled by this build, so not analysed):" >&2
    echo "$missing" >&2
    fail=1
fi

echo "clang-tidy: ${#srcs[@]} files, $jobs at a time"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ((${#srcs[@]})); then
    # One log and one exit status per file; xargs itself fails if any clang-tidy did.
    printf '%s\n' "${srcs[@]}" | xargs -P "$jobs" -I{} sh -c '
        f="$1"; log="$2/$(printf %s "$f" | tr / _)"
        if clang-tidy -p "$3" --quiet --extra-arg=-Wno-unknown-warning-option \
            --warnings-as-errors="*" "$f" >"$log.out" 2>&1; then :; else echo "$f" >"$log.failed"; fi
    ' sh {} "$out" "$build"
    for f in "${srcs[@]}"; do
        log="$out/$(printf %s "$f" | tr / _)"
        grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' "$log.out" || true
    done
    nfail=$(find "$out" -name '*.failed' | wc -l)
    if ((nfail)); then
        echo "lint: clang-tidy: findings or errors in $nfail file(s):" >&2
        cat "$out"/*.failed | sort >&2
        fail=1
    fi
fi

if ((fail)); then
    echo "lint: FAILED" >&2
    exit 1
fi
echo "lint: clean"
