#!/usr/bin/env bash
# libvgpu on a real NVIDIA GPU (H200-class; needs gcc, nvidia-smi, python3 + PyTorch; no network).
# Never part of `make test`. Builds libvgpu with gcc straight from the sources, then with a
# 4096 MiB / 30 % slice of GPU 0:
#   1. driver-API loop (tests/integration/vgpu/vgpu_probe.c): OOM exactly at the boundary
#   2. torch.cuda.mem_get_info() reports 4 GiB total; allocation past it fails
#   3. nvidia-smi under the preload shows 4096MiB
#   4. matmul throughput under caps 30 / 50 vs uncapped
#   5. small-kernel loop time with and without the preload
# Writes results.txt (key=value) and logs to $OUT (default ./gpu-results). Every step has its own
# timeout; the whole script finishes in under 8 minutes.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
RES="$OUT/results.txt"
: > "$RES"
WORK="$(mktemp -d /tmp/gs-gpu-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
T0=$(date +%s)
note() { echo "$*" | tee -a "$RES"; }
step() { echo "== $*" | tee -a "$OUT/log.txt"; }

step "build libvgpu and the probe"
gcc -std=gnu17 -O2 -g -D_GNU_SOURCE -fPIC -shared -fvisibility=hidden \
    -I"$ROOT/include" -I"$ROOT/src" "$ROOT"/src/vgpu/*.c "$ROOT/src/common/error.c" \
    "$ROOT/src/common/limits.c" -Wl,--version-script="$ROOT/src/vgpu/vgpu.map" \
    -ldl -lpthread -o "$WORK/libvgpu.so" >>"$OUT/log.txt" 2>&1 || { note "build=failed"; exit 1; }
gcc -std=gnu17 -O2 -D_GNU_SOURCE -I"$ROOT/include" -I"$ROOT/src" \
    "$ROOT/tests/integration/vgpu/vgpu_probe.c" -ldl -lpthread -o "$WORK/vgpu_probe" \
    >>"$OUT/log.txt" 2>&1 || { note "build_probe=failed"; exit 1; }
note "build=ok"

UUID="$(timeout 30 nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 | tr -d ' ')"
note "gpu0_uuid=$UUID"
note "gpu0_name=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader -i 0)"
LIM="$WORK/limits.d"
mkdir -p "$LIM"
slice() { # slice <cores>
    printf 'version 1\nclaim gpu-test\nregion %s/region\ndevice %s memory=%d cores=%d\n' \
        "$WORK" "$UUID" $((4096 << 20)) "$1" > "$LIM/gpu-test.limits"
}
pre() { env CUDA_VISIBLE_DEVICES=0 GPUSLICE_LIMITS_DIR="$LIM" LD_PRELOAD="$WORK/libvgpu.so" "$@"; }

step "1. driver API boundary"
slice 30
for mode in dlsym global getproc; do
    out="$(GS_PROBE_RESOLVE=$mode pre timeout 120 "$WORK/vgpu_probe" boundary 4200 1048576 2>>"$OUT/log.txt")"
    echo "$out" >> "$OUT/log.txt"
    note "boundary_${mode}_allocated=$(echo "$out" | sed -n 's/.*allocated=\([0-9]*\).*/\1/p')"
    note "boundary_${mode}_first_fail=$(echo "$out" | sed -n 's/.*first_fail=\([0-9]*\).*/\1/p')"
done

step "2. torch memory view and OOM"
cat > "$WORK/torch_mem.py" <<'PY'
import torch
free, total = torch.cuda.mem_get_info()
print(f"torch_total_mib={total >> 20}")
print(f"torch_free_mib={free >> 20}")
ok = []
try:
    ok.append(torch.empty(3 << 30, dtype=torch.uint8, device='cuda'))
    print("torch_alloc_3gib=ok")
except RuntimeError as e:
    print("torch_alloc_3gib=oom")
try:
    ok.append(torch.empty(2 << 30, dtype=torch.uint8, device='cuda'))
    print("torch_alloc_2gib_more=ok")
except RuntimeError as e:
    print("torch_alloc_2gib_more=oom" if "out of memory" in str(e) else f"torch_alloc_2gib_more=error")
PY
pre timeout 120 python3 "$WORK/torch_mem.py" 2>>"$OUT/log.txt" | tee -a "$RES"

step "3. nvidia-smi under the preload"
note "smi_memory_total=$(pre timeout 30 nvidia-smi --query-gpu=memory.total --format=csv,noheader -i 0 2>>"$OUT/log.txt")"
pre timeout 30 nvidia-smi >> "$OUT/nvidia-smi.txt" 2>&1

step "4. matmul throughput under caps"
cat > "$WORK/torch_mm.py" <<'PY'
import sys, time, torch
secs = float(sys.argv[1])
a = torch.randn(4096, 4096, device='cuda', dtype=torch.float16)
b = torch.randn(4096, 4096, device='cuda', dtype=torch.float16)
for _ in range(10):
    a @ b
torch.cuda.synchronize()
n, t0 = 0, time.time()
while time.time() - t0 < secs:
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    n += 10
dt = time.time() - t0
print(f"{n * 2 * 4096 ** 3 / dt / 1e12:.2f}")
PY
base="$(CUDA_VISIBLE_DEVICES=0 timeout 60 python3 "$WORK/torch_mm.py" 15 2>>"$OUT/log.txt")"
note "matmul_tflops_no_preload=$base"
for cap in 0 30 50; do
    slice $cap
    v="$(pre timeout 60 python3 "$WORK/torch_mm.py" 15 2>>"$OUT/log.txt")"
    note "matmul_tflops_cap_${cap}=$v"
    [ -n "$base" ] && [ -n "$v" ] && note "matmul_ratio_cap_${cap}=$(python3 -c "print(round($v/$base, 3))")"
done

step "5. small-kernel loop with and without the preload"
cat > "$WORK/torch_small.py" <<'PY'
import time, torch
x = torch.ones(16, device='cuda')
for _ in range(1000):
    x.add_(1)
torch.cuda.synchronize()
n, t0 = 100000, time.perf_counter()
for _ in range(n):
    x.add_(1)
torch.cuda.synchronize()
print(f"{(time.perf_counter() - t0) / n * 1e6:.3f}")
PY
slice 0
a="$(CUDA_VISIBLE_DEVICES=0 timeout 60 python3 "$WORK/torch_small.py" 2>>"$OUT/log.txt")"
b="$(pre timeout 60 python3 "$WORK/torch_small.py" 2>>"$OUT/log.txt")"
note "small_kernel_us_no_preload=$a"
note "small_kernel_us_preload_uncapped=$b"
[ -n "$a" ] && [ -n "$b" ] && note "small_kernel_ratio=$(python3 -c "print(round($b/$a, 3))")"

note "elapsed_s=$(( $(date +%s) - T0 ))"
echo "results in $RES"
