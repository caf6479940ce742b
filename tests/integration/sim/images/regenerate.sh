#!/bin/sh
# Regenerate the checked-in device-code images from kernels.cu with nvcc (CUDA 12/13). The tests
# never need nvcc: they use the files as checked in. With an argument, the images are written
# to that directory instead (the build does so when nvcc is installed: sim_test_image_nvcc).
#   kernels.fatbin        nvcc -fatbin, sm_75 SASS (uncompressed ELF) + compressed PTX
#   kernels_compressed.fatbin   every entry compressed (gpusim cannot read the names)
#   kernels.cubin         ELF, sm_75
#   kernels.ptx           PTX text
#   kernels_embedded.fatbin     the .nv_fatbin section of a program built from kernels.cu
set -eu
src=$(cd "$(dirname "$0")" && pwd)
out=${1:-$src}
mkdir -p "$out"
cd "$out"
cp "$src/kernels.cu" ./kernels.cu 2>/dev/null || true
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -fatbin -arch=sm_75 -o kernels.fatbin kernels.cu
"$NVCC" -fatbin -Xfatbin=-compress-all -gencode arch=compute_75,code=sm_75 \
    -o kernels_compressed.fatbin kernels.cu
"$NVCC" -cubin -arch=sm_75 -o kernels.cubin kernels.cu
"$NVCC" -ptx -arch=sm_75 -o kernels.ptx kernels.cu
tmp=$(mktemp -d)
"$NVCC" -DWITH_MAIN -arch=sm_75 -o "$tmp/prog" kernels.cu
objcopy -O binary --only-section=.nv_fatbin "$tmp/prog" kernels_embedded.fatbin
rm -rf "$tmp"
