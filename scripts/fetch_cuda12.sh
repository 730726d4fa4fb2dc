#!/usr/bin/env bash
# Unpacks the CUDA 12.4 toolkit of Debian 13 "trixie" (non-free nvidia-cuda-toolkit, with the
# cuBLAS/cuBLASLt headers, NCCL and CUB) into a prefix, installing nothing on the system
# (scripts/unpack_debian_packages.sh), in Debian's layout: PREFIX/usr/lib/nvidia-cuda-toolkit/bin/nvcc,
# headers in PREFIX/usr/include, libraries in PREFIX/usr/lib/x86_64-linux-gnu. The Makefile takes
# CUDA_HOME=PREFIX (make check-cuda12 does that). A complete prefix is left as it is.
#
# usage: scripts/fetch_cuda12.sh [PREFIX]        (default build/cuda12; about 1.5 GB to download, 4 GB unpacked)
set -euo pipefail
prefix="${1:-build/cuda12}"
stamp="$prefix/.complete"
# Pinned to trixie's CUDA 12.4.1 build:
#   nvidia-cuda-toolkit   nvcc, ptxas, fatbinary, nvlink, cudafe++
#   libnvvm4              cicc and libdevice (nvcc's device front end)
#   nvidia-cuda-dev       CUDA headers (runtime, fp16/bf16, cuBLAS/cuBLASLt) and libcudart_static.a
#   libcub-dev, libcu++-dev, libthrust-dev   CUB (kernels/cuda sorts with it) and what it includes
#   libnccl-dev, libnccl2 NCCL 2.22 header and library (the data-parallel collectives)
#   libcublaslt12         libcublasLt.so.12, which mixgpt loads on first use on a GPU host
#   libcudart12           libcudart.so.12, for tools that link the shared runtime
packages=(nvidia-cuda-toolkit=12.4.131~12.4.1-2 libnvvm4=12.4.131~12.4.1-2 nvidia-cuda-dev=12.4.127~12.4.1-2
          libcub-dev=2.3.2-2 libcu++-dev=2.3.2-2 libthrust-dev=2.3.2-2
          libnccl-dev=2.22.3-1-1 libnccl2=2.22.3-1-1 libcublaslt12=12.4.5.8~12.4.1-2 libcudart12=12.4.127~12.4.1-2)

if [[ -f "$stamp" ]]; then
  echo "fetch_cuda12: $prefix already holds $(cat "$stamp")"
  exit 0
fi
echo "fetch_cuda12: downloading and unpacking ${packages[*]%%=*} from trixie into $prefix"
"$(dirname "$0")/unpack_debian_packages.sh" trixie "main contrib non-free" "$prefix" "${packages[@]}" > /dev/null

# Debian's nvcc.profile is a link to /etc/nvcc.profile with absolute /usr paths: in the prefix,
# nvcc gets one relative to its own folder (_HERE_ = PREFIX/usr/lib/nvidia-cuda-toolkit/bin).
# PATH: Debian's g++/gcc wrappers there (they pick a host compiler this nvcc supports, g++-13 or
# older) and ptxas, fatbinary, nvlink, cudafe++ in PREFIX/usr/bin; INCLUDES: the CUDA, NCCL and
# CUB headers, which Debian puts in /usr/include (PREFIX/usr/include holds no system header).
profile="$prefix/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile"
rm -f "$profile"
cat > "$profile" <<'PROFILE'
TOP = $(_HERE_)/../../..
NVVMIR_LIBRARY_DIR = $(_HERE_)/../libdevice
PATH += $(_HERE_):$(TOP)/bin:
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib/x86_64-linux-gnu/stubs" "-L$(TOP)/lib/x86_64-linux-gnu"
PROFILE
"$prefix/usr/lib/nvidia-cuda-toolkit/bin/nvcc" --version | tail -n 1
echo "nvidia-cuda-toolkit ${packages[0]#*=} (trixie)" > "$stamp"
echo "fetch_cuda12: done; build with make CUDA_HOME=$prefix (or make check-cuda12)"
