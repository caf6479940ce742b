#!/usr/bin/env bash
# libvgpu on a real NVIDIA GPU (H200-class; needs gcc, nvidia-smi, nvcc with cuBLAS, awk; python3 +
# PyTorch for steps 2, 4 and 5, which are skipped without them; no network).
# Never part of `make test` (which only checks that this script parses and its .cu files compile).
# Builds libvgpu with gcc straight from the sources and the CUDA programs with nvcc, then with a
# 4096 MiB / 30 % slice of GPU 0 (limits file in a temp directory through GPUSLICE_LIMITS_DIR, so
# the machine must not hold a limits file in /etc/gpuslice/limits.d: that directory would win):
#   1. driver-API loop (tests/integration/vgpu/vgpu_probe.c): OOM exactly at the boundary
#   2. torch.cuda.mem_get_info() reports 4 GiB total; allocation past it fails
#   3. nvidia-smi under the preload shows 4096MiB
#   4. matmul throughput under caps 30 / 50 vs uncapped
#   5. small-kernel loop time with and without the preload
#   6. CUDA runtime program (gs_gpu_runtime.cu, nvcc, static cudart): cudaMemGetInfo shows the
#      slice, cudaMalloc refused exactly at 4096 MiB minus the context overhead, the device's
#      memory seen from outside (nvidia-smi) never past the slice, cudaDeviceReset gives
#      everything back (allocate again to the same boundary); the same without the preload
#   7. busy-kernel loop: GPU time share under the 30 % cap from kernel throughput against the
#      no-preload run (30 +- 3 pp), NVML utilisation sampled beside it
#   8. cuBLAS GEMM loop (gs_gpu_gemm.cu, -lcublas) under the slice: 4096 MiB view, TFLOPS uncapped
#      and under cap 30 against the no-preload run (30 +- 3 pp)
# Writes results.txt (key=value, a check_<name>=pass|FAIL line per check) and logs to $OUT
# (default ./gpu-results). Exit status: 0 when every check passed, 1 otherwise. Every step has
# its own timeout; the whole script finishes in under 8 minutes (about 5 on an H200).
# Knobs: GS_VGPU_LIB (a libvgpu.so to use instead of building one with gcc), NVCC (default nvcc
# on PATH, else /usr/local/cuda/bin/nvcc), GS_GPU_ARCH (nvcc -arch, default native),
# GS_GPU_SECONDS (length of each throughput run, default 12), GS_GPU_MEM_TOL_MIB (slack for the
# outside memory readings, default 8).
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
FAILS=0
check() { # check <name> <awk condition> <detail>: one check_<name>= line, counted when it fails
    if awk "BEGIN { exit !($2) }" 2>/dev/null; then
        note "check_$1=pass"
    else
        note "check_$1=FAIL ($3)"
        FAILS=$((FAILS + 1))
    fi
}
kv() { sed -n "s/^$2=//p" "$1" | tail -n 1; } # kv <file> <key>: the last value of key in file
num() { case "$1" in '' | *[!0-9.]*) echo -1 ;; *) echo "$1" ;; esac; } # a number, else -1
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a >= 0) printf "%.3f", a / b; else print "n/a" }'; }
smi_used() { timeout 30 nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | tr -d ' '; }

step "build libvgpu and the probe"
if [ -n "${GS_VGPU_LIB:-}" ]; then
    # a libvgpu.so built elsewhere (meson's build/src/vgpu/libvgpu.so, dist/lib/libvgpu.so)
    cp "$GS_VGPU_LIB" "$WORK/libvgpu.so" || { note "build=failed (GS_VGPU_LIB=$GS_VGPU_LIB)"; exit 1; }
else
    # the layer files libvgpu compiles in, as src/vgpu/meson.build lists them; --no-undefined
    # so a source missing here fails the build, not every preloaded program at load time
    mapfile -t COMMON < <(grep -o "'\.\./[a-z]*/[a-z_]*\.c'" "$ROOT/src/vgpu/meson.build" |
        tr -d "'" | sed "s|^\.\./|$ROOT/src/|")
    gcc -std=gnu17 -O2 -g -D_GNU_SOURCE -fPIC -shared -fvisibility=hidden \
        -I"$ROOT/include" -I"$ROOT/src" "$ROOT"/src/vgpu/*.c "${COMMON[@]}" \
        -Wl,--version-script="$ROOT/src/vgpu/vgpu.map" -Wl,--no-undefined \
        -ldl -lpthread -o "$WORK/libvgpu.so" >>"$OUT/log.txt" 2>&1 || { note "build=failed"; exit 1; }
fi
gcc -std=gnu17 -O2 -D_GNU_SOURCE -I"$ROOT/include" -I"$ROOT/src" \
    "$ROOT/tests/integration/vgpu/vgpu_probe.c" -ldl -lpthread -o "$WORK/vgpu_probe" \
    >>"$OUT/log.txt" 2>&1 || { note "build_probe=failed"; exit 1; }
note "build=ok"
if timeout 60 python3 -c 'import torch; assert torch.cuda.is_available()' >>"$OUT/log.txt" 2>&1; then
    note "torch=ok"
else
    note "torch=missing (steps 2, 4 and 5 print nothing)"
fi

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
    ff="$(echo "$out" | sed -n 's/.*first_fail=\([0-9]*\).*/\1/p')"
    note "boundary_${mode}_first_fail=$ff"
    check "boundary_${mode}_oom" "$(num "$ff") == 2" "first failure $ff, want CUDA_ERROR_OUT_OF_MEMORY (2)"
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

step "6-8. build the CUDA runtime and cuBLAS programs (nvcc)"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
ARCH="${GS_GPU_ARCH:-native}"
SECS="${GS_GPU_SECONDS:-12}"
TOL="${GS_GPU_MEM_TOL_MIB:-8}"
RT="$WORK/gs_gpu_runtime"
GEMM="$WORK/gs_gpu_gemm"
nvcc_build() { # nvcc_build <out> <source> [libs]: -arch=$ARCH, falling back to sm_90 (H100/H200)
    local out=$1 src=$2
    shift 2
    timeout 300 "$NVCC" -O2 -arch="$ARCH" -o "$out" "$src" "$@" >>"$OUT/log.txt" 2>&1 ||
        timeout 300 "$NVCC" -O2 -arch=sm_90 -o "$out" "$src" "$@" >>"$OUT/log.txt" 2>&1
}
if nvcc_build "$RT" "$ROOT/tests/gpu/gs_gpu_runtime.cu" &&
    nvcc_build "$GEMM" "$ROOT/tests/gpu/gs_gpu_gemm.cu" -lcublas; then
    note "build_cuda=ok"
else
    note "build_cuda=failed (nvcc: $NVCC; see log.txt)"
    FAILS=$((FAILS + 1))
fi

# held <log> <command...>: run the command with its key=value output in <log>; at each hold=<name>
# line it prints, read the device's memory (MiB, nvidia-smi without the preload) into
# smi_<name>_mib in the same log once the command is done.
held() {
    local log=$1 pid seen="" h smi=""
    shift
    "$@" >"$log" 2>>"$OUT/log.txt" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        while read -r h; do
            case " $seen " in *" $h "*) continue ;; esac
            seen="$seen $h"
            smi="${smi}smi_${h}_mib=$(smi_used)"$'\n'
        done < <(sed -n 's/^hold=//p' "$log")
        sleep 0.1
    done
    wait "$pid"
    local rc=$?
    printf '%s' "$smi" >>"$log"
    echo "rc=$rc" >>"$log"
    cat "$log" >>"$OUT/log.txt"
    return "$rc"
}
base() { env CUDA_VISIBLE_DEVICES=0 "$@"; }

if [ -x "$RT" ]; then
    step "6. CUDA runtime: boundary, view, cudaDeviceReset (4096 MiB slice, 1 MiB blocks)"
    slice 30
    IDLE="$(num "$(smi_used)")"
    note "device_idle_used_mib=$IDLE"
    P="$OUT/runtime_preload.txt"
    B="$OUT/runtime_no_preload.txt"
    held "$P" pre timeout 180 "$RT" boundary 1 4608 1500
    held "$B" base timeout 180 "$RT" boundary 1 4608 1500
    for k in mem_total_mib ctx_used_bytes ctx_free_bytes expected_blocks round1_blocks round1_error \
        round1_free_bytes round1_alloc_ns smi_ctx_mib smi_full_mib smi_reset_mib reset_free_bytes \
        round2_blocks round2_error after_free_free_bytes rc; do
        note "rt_${k}=$(kv "$P" "$k")"
    done
    for k in mem_total_mib round1_blocks round1_error round1_alloc_ns smi_full_mib rc; do
        note "rt_base_${k}=$(kv "$B" "$k")"
    done
    overhead_mib=$(awk -v b="$(num "$(kv "$P" ctx_used_bytes)")" 'BEGIN { printf "%.1f", b / 1048576 }')
    note "rt_context_overhead_mib=$overhead_mib"
    note "rt_context_outside_mib=$(( $(num "$(kv "$P" smi_ctx_mib)") - IDLE ))"
    note "rt_full_outside_mib=$(( $(num "$(kv "$P" smi_full_mib)") - IDLE ))"
    note "rt_alloc_ns_ratio=$(ratio "$(kv "$P" round1_alloc_ns)" "$(kv "$B" round1_alloc_ns)")"
    check rt_exit "$(num "$(kv "$P" rc)") == 0" "gs_gpu_runtime under the preload exited $(kv "$P" rc): $(kv "$P" error)"
    check rt_view_total "$(num "$(kv "$P" mem_total_mib)") == 4096" \
        "cudaMemGetInfo total $(kv "$P" mem_total_mib) MiB, want the slice's 4096"
    check rt_overhead_charged "$(num "$(kv "$P" ctx_used_bytes)") > 0" \
        "cudaMemGetInfo shows nothing used with a context: its overhead is not charged"
    check rt_boundary_exact "$(num "$(kv "$P" round1_blocks)") == $(num "$(kv "$P" expected_blocks)") && $(num "$(kv "$P" expected_blocks)") > 0" \
        "$(kv "$P" round1_blocks) blocks of 1 MiB allocated, want 4096 MiB - ${overhead_mib} MiB overhead = $(kv "$P" expected_blocks)"
    check rt_boundary_oom "\"$(kv "$P" round1_error)\" == \"cudaErrorMemoryAllocation\"" \
        "the allocation past the boundary answered $(kv "$P" round1_error)"
    check rt_view_full "$(num "$(kv "$P" round1_free_bytes)") < 1048576" \
        "cudaMemGetInfo free $(kv "$P" round1_free_bytes) bytes at the boundary"
    check rt_outside_within_slice "$(num "$(kv "$P" smi_full_mib)") - $IDLE <= 4096 + $TOL" \
        "the device used $(( $(num "$(kv "$P" smi_full_mib)") - IDLE )) MiB more than idle at the boundary (slice 4096, slack $TOL)"
    check rt_reset_outside "$(num "$(kv "$P" smi_reset_mib)") - $IDLE <= $TOL" \
        "after cudaDeviceReset the device still used $(( $(num "$(kv "$P" smi_reset_mib)") - IDLE )) MiB more than idle"
    check rt_reset_reuse "$(num "$(kv "$P" round2_blocks)") == $(num "$(kv "$P" round1_blocks)")" \
        "after cudaDeviceReset $(kv "$P" round2_blocks) blocks fit, before it $(kv "$P" round1_blocks)"
    check rt_reset_oom "\"$(kv "$P" round2_error)\" == \"cudaErrorMemoryAllocation\"" \
        "the allocation past the boundary after the reset answered $(kv "$P" round2_error)"
    check rt_free_returns "$(num "$(kv "$P" after_free_free_bytes)") == $(num "$(kv "$P" reset_free_bytes)")" \
        "free after cudaFree of everything $(kv "$P" after_free_free_bytes), before allocating $(kv "$P" reset_free_bytes)"
    check rt_base_exit "$(num "$(kv "$B" rc)") == 0" "gs_gpu_runtime without the preload exited $(kv "$B" rc): $(kv "$B" error)"
    check rt_base_unsliced "$(num "$(kv "$B" round1_blocks)") == 4608 && $(num "$(kv "$B" mem_total_mib)") > 4096" \
        "without the preload $(kv "$B" round1_blocks) of 4608 blocks, total $(kv "$B" mem_total_mib) MiB (the baseline must not be limited)"

    step "7. busy-kernel loop: GPU time share under cap 30 (2 ms kernels, ${SECS} s each)"
    # util <file> <command...>: run the command while nvidia-smi samples utilization.gpu every 200 ms
    util() {
        local f=$1 s rc
        shift
        timeout $((SECS + 60)) nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits \
            -i 0 -lms 200 >"$f.util" 2>>"$OUT/log.txt" &
        s=$!
        "$@" >"$f" 2>>"$OUT/log.txt"
        rc=$?
        kill "$s" 2>/dev/null
        wait "$s" 2>/dev/null
        echo "rc=$rc" >>"$f"
        # mean of the samples taken while the loop ran (the first two see the warm-up)
        echo "util_mean=$(awk 'NR > 2 && $1 ~ /^[0-9]+$/ { s += $1; n++ } END { if (n) printf "%.1f", s / n }' "$f.util")" >>"$f"
        cat "$f" >>"$OUT/log.txt"
    }
    slice 30
    util "$OUT/busy_no_preload.txt" base timeout $((SECS + 60)) "$RT" busy 2000 "$SECS"
    util "$OUT/busy_cap30.txt" pre timeout $((SECS + 120)) "$RT" busy 2000 "$SECS"
    br="$(kv "$OUT/busy_no_preload.txt" busy_rate)"
    cr="$(kv "$OUT/busy_cap30.txt" busy_rate)"
    note "busy_rate_no_preload=$br"
    note "busy_rate_cap30=$cr"
    note "busy_nominal_share_pct_no_preload=$(kv "$OUT/busy_no_preload.txt" busy_nominal_share_pct)"
    note "busy_nominal_share_pct_cap30=$(kv "$OUT/busy_cap30.txt" busy_nominal_share_pct)"
    share="$(awk -v c="$(num "$cr")" -v b="$(num "$br")" 'BEGIN { if (b > 0 && c >= 0) printf "%.2f", 100 * c / b; else print -1 }')"
    note "busy_share_pct_cap30=$share"
    note "busy_nvml_util_no_preload=$(kv "$OUT/busy_no_preload.txt" util_mean)"
    note "busy_nvml_util_cap30=$(kv "$OUT/busy_cap30.txt" util_mean)"
    note "busy_nvml_util_ratio=$(ratio "$(kv "$OUT/busy_cap30.txt" util_mean)" "$(kv "$OUT/busy_no_preload.txt" util_mean)")"
    check busy_runs "$(num "$(kv "$OUT/busy_no_preload.txt" rc)") == 0 && $(num "$(kv "$OUT/busy_cap30.txt" rc)") == 0" \
        "busy loop exit status $(kv "$OUT/busy_no_preload.txt" rc) without, $(kv "$OUT/busy_cap30.txt" rc) with the preload"
    check busy_share_30 "$share >= 27 && $share <= 33" \
        "kernel throughput under cap 30 is ${share} % of the no-preload run, want 30 +- 3"
fi

if [ -x "$GEMM" ]; then
    step "8. cuBLAS GEMM (8192, FP16) under the slice: uncapped and cap 30 vs no preload (${SECS} s each)"
    gemm() { # gemm <file> <command...>
        local f=$1
        shift
        "$@" >"$f" 2>>"$OUT/log.txt"
        echo "rc=$?" >>"$f"
        cat "$f" >>"$OUT/log.txt"
    }
    gemm "$OUT/gemm_no_preload.txt" base timeout $((SECS + 90)) "$GEMM" 8192 "$SECS"
    slice 0
    gemm "$OUT/gemm_cap0.txt" pre timeout $((SECS + 90)) "$GEMM" 8192 "$SECS"
    slice 30
    gemm "$OUT/gemm_cap30.txt" pre timeout $((SECS + 150)) "$GEMM" 8192 "$SECS"
    gb="$(kv "$OUT/gemm_no_preload.txt" gemm_tflops)"
    note "gemm_tflops_no_preload=$gb"
    for c in 0 30; do
        f="$OUT/gemm_cap$c.txt"
        note "gemm_tflops_cap_$c=$(kv "$f" gemm_tflops)"
        note "gemm_ratio_cap_$c=$(ratio "$(kv "$f" gemm_tflops)" "$gb")"
        note "gemm_mem_total_mib_cap_$c=$(kv "$f" gemm_mem_total_mib)"
        check "gemm_cap${c}_exit" "$(num "$(kv "$f" rc)") == 0" "GEMM under the preload (cap $c) exited $(kv "$f" rc): $(kv "$f" error)"
        check "gemm_cap${c}_view" "$(num "$(kv "$f" gemm_mem_total_mib)") == 4096" \
            "cudaMemGetInfo total $(kv "$f" gemm_mem_total_mib) MiB in the cuBLAS program, want 4096"
    done
    check gemm_base_exit "$(num "$(kv "$OUT/gemm_no_preload.txt" rc)") == 0" \
        "GEMM without the preload exited $(kv "$OUT/gemm_no_preload.txt" rc): $(kv "$OUT/gemm_no_preload.txt" error)"
    gs="$(awk -v c="$(num "$(kv "$OUT/gemm_cap30.txt" gemm_tflops)")" -v b="$(num "$gb")" 'BEGIN { if (b > 0 && c >= 0) printf "%.2f", 100 * c / b; else print -1 }')"
    note "gemm_share_pct_cap30=$gs"
    check gemm_share_30 "$gs >= 27 && $gs <= 33" "GEMM throughput under cap 30 is ${gs} % of the no-preload run, want 30 +- 3"
fi

note "elapsed_s=$(( $(date +%s) - T0 ))"
note "checks_failed=$FAILS"
echo "results in $RES"
[ "$FAILS" -eq 0 ]
