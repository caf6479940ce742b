#!/usr/bin/env bash
# make demo: the lab's story (shared/LAB.md, seed 000) told by the standalone mode on the embedded
# default — a simulated Tesla T4 (gpusim, 15Gi) unless a real NVIDIA GPU is present.
# Everything runs in a throw-away state directory; nothing is left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$root/dist/bin:$PATH"
gs=dist/bin/gpuslice
[ -x "$gs" ] || { echo "demo: dist/bin/gpuslice is missing: run make" >&2; exit 1; }

state=$(mktemp -d /tmp/gpuslice-demo.XXXXXX)
runs=()
tails=()
cleanup() {
    for p in "${tails[@]}" "${runs[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$state"
}
trap cleanup EXIT INT TERM
export GPUSLICE_STATE_DIR="$state/gpuslice"

sim=(--sim)
if [ -z "${GPUSLICE_DEMO_SIM:-}" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    sim=()
    echo "A real NVIDIA GPU is present: the demo runs on it."
else
    export GPUSIM_PRESET=${GPUSIM_PRESET:-t4} GPUSIM_STATE="$state/gpusim.state"
    echo "No NVIDIA GPU here: the demo runs on gpusim, a simulated ${GPUSIM_PRESET^^} (dist/lib/gpusim)."
fi

bold=$'\033[1m'; off=$'\033[0m'
[ -t 1 ] || { bold=''; off=''; }
n=0
step() { n=$((n + 1)); printf '\n%s== %d. %s%s\n' "$bold" "$n" "$*" "$off"; }
prefix() { sed -u "s/^/    [$1] /"; }
wait_for() { # wait_for FILE PATTERN: until the workload printed PATTERN (at most 20 s)
    for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "demo: timed out waiting for '$2' in $1" >&2; return 1
}

step "The GPU as the kubelet plugin publishes it: one device, consumable capacity 'cores' and 'memory'"
show_slice=$(cat <<'PY'
import json, sys
s = json.load(sys.stdin)
for d in s["spec"]["devices"]:
    a = d["attributes"]
    shared = str(d.get("allowMultipleAllocations", False)).lower()
    print("    device %s: %s %s  allowMultipleAllocations: %s"
          % (d["name"], a["productName"]["string"], a["uuid"]["string"], shared))
    for name, c in d["capacity"].items():
        p = c.get("requestPolicy", {})
        r = p.get("validRange", {})
        print("      %-7s value %6s   default %6s   validRange min %s max %s step %s"
              % (name, c["value"], p.get("default", "-"), r.get("min"), r.get("max"), r.get("step")))
PY
)
"$gs" ls "${sim[@]}" -o slice | python3 -c "$show_slice"

step "pod-0 asks for 30 cores / 4Gi: it sees a 4096MiB GPU (libvgpu), holds 1Gi and keeps working"
cat > "$state/pod-0.sh" <<'SH'
gpusim-smi 2>/dev/null | grep -E 'MiB' | head -1
gpuslice probe --max 1Gi --hold 6s
echo "pod-1 has hit its limit; pod-0 still allocates and works:"
gpuslice probe --max 2Gi --hold 3s
SH
: > "$state/pod-0.log"; : > "$state/pod-1.log"
( "$gs" run "${sim[@]}" --name pod-0 --cores 30 --memory 4Gi -- sh "$state/pod-0.sh" \
    2>&1 | prefix pod-0 > "$state/pod-0.log" ) &
runs+=($!)
tail -f "$state/pod-0.log" & tails+=($!)
wait_for "$state/pod-0.log" "allocated 1024MiB"

step "pod-1 asks for the same 30 cores / 4Gi: same GPU UUID, its own 4096MiB; it allocates until the limit"
( "$gs" run "${sim[@]}" --name pod-1 --cores 30 --memory 4Gi -- gpuslice probe --hold 4s \
    2>&1 | prefix pod-1 > "$state/pod-1.log" ) &
runs+=($!)
tail -f "$state/pod-1.log" & tails+=($!)
wait_for "$state/pod-1.log" "next allocation"
echo "    -> CUDA_ERROR_OUT_OF_MEMORY exactly at 4096MiB (4096 allocations of 1Mi); pod-0 is unaffected."

step "pod-2 asks for 80 cores: only 40 are left, so it is refused with the allocator's reason"
"$gs" run "${sim[@]}" --name pod-2 --cores 80 --memory 4Gi -- true 2>&1 | prefix pod-2 || true

step "gpuslice ls: what the ledger and the slices' shared regions say right now"
"$gs" ls "${sim[@]}" | sed 's/^/    /'

step "pod-0 keeps working beside its full neighbour: its limit and pod-1's are separate"
wait_for "$state/pod-0.log" "allocated 2048MiB"
sleep 0.2

step "When the workloads end their slices are released"
for p in "${runs[@]}"; do wait "$p" || true; done
runs=()
sleep 0.3
for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
tails=()
"$gs" ls "${sim[@]}" | sed 's/^/    /'
step "The compute cap: the same 200 kernels of 5 ms, alone on the GPU, with --cores 100, then --cores 25 under each policy"
for run in "100 default" "25 hard" "25 work-conserving"; do
    read -r c pol <<<"$run"
    "$gs" run "${sim[@]}" -q --name "cap-$c" --cores "$c" --compute-policy "$pol" -- gpuslice probe --max 0 -k 200 \
        --kernel-us 5000 2>&1 | grep 'kernels of' | prefix "cores $c, $pol"
done
echo "    -> hard: the 25% slice takes four times as long; libvgpu holds its launches to a quarter of the device."
echo "    -> work-conserving (the default, HAMi's): alone on the GPU the slice may use all of it; the 25% applies"
echo "       only while another slice of the GPU with the same or a higher priority has work pending."

if command -v ffmpeg >/dev/null 2>&1; then
    ff=(ffmpeg -hide_banner -nostdin -loglevel error -y -init_hw_device cuda=cu:0 -filter_hw_device cu
        -f lavfi -i testsrc2=size=1280x720:rate=25 -frames:v 50)
    step "A real program, unchanged: FFmpeg scales 50 frames of 1280x720 video to 640x360 on the GPU in a 1Gi slice"
    echo "    gpuslice run --sim --memory 1Gi -- ffmpeg -init_hw_device cuda=cu:0 ... -vf hwupload_cuda,scale_cuda=640:360,hwdownload"
    if "$gs" run "${sim[@]}" -q --name ffmpeg-1Gi --memory 1Gi -- "${ff[@]}" \
        -vf "format=nv12,hwupload_cuda,scale_cuda=640:360,hwdownload,format=nv12" -f rawvideo "$state/out.yuv" \
        2>&1 | prefix ffmpeg; then
        echo "    -> done: $(( $(stat -c %s "$state/out.yuv") / (640 * 360 * 3 / 2) )) frames of 640x360 written."
    else
        echo "    -> FFmpeg failed (see above)."
    fi

    step "The same FFmpeg in a 1Mi slice, smaller than one frame: refused cleanly, no crash"
    set +e
    "$gs" run "${sim[@]}" -q --name ffmpeg-1Mi --memory 1Mi -- "${ff[@]}" \
        -vf "format=nv12,hwupload_cuda,hwdownload,format=nv12" -f null - 2>&1 | prefix ffmpeg
    rc=${PIPESTATUS[0]}
    set -e
    echo "    -> exit status $rc: FFmpeg reports CUDA_ERROR_OUT_OF_MEMORY from libvgpu and stops."
fi
echo
echo "Demo done. Next: 'make test', docs/architecture.md, docs/deploy.md for Kubernetes."
