#!/usr/bin/env bash
# Installs the Debian packages mixgpt needs, only those missing (idempotent), and
# says whether the CUDA backend will be built. Runs apt-get through sudo when not root.
set -euo pipefail

packages=(
  build-essential pkg-config
  libsentencepiece-dev sentencepiece        # tokenizer training and encoding
  libhdf5-dev hdf5-tools                    # datasets and checkpoints
  libopenmpi-dev openmpi-bin                # multi-process launch and CPU collectives
  libgtest-dev libbenchmark-dev             # tests and micro-benchmarks
  libopenblas-openmp-dev                    # CPU matrix products (OpenMP threading)
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev  # command line, config, JSON
  libssl-dev zlib1g-dev                     # SHA-256 of tokenizers, .gz corpora
  libzstd-dev liblzma-dev                   # .zst and .xz corpora
  patchelf                                  # $ORIGIN rpaths in `make bundle`
  clang-14 libclang-rt-14-dev               # libFuzzer and sanitizers for `make fuzz` (fuzz/)
  bible-kjv                                 # the default corpus
  python3-numpy python3-h5py python3-matplotlib python3-sentencepiece  # scripts/
)

# --with-torch adds Debian's PyTorch (CPU), needed only to regenerate the reference fixtures
# (make fixtures); the committed fixtures let the tests run without it.
if [[ "${1:-}" == "--with-torch" ]]; then packages+=(python3-torch); fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  echo "setup: done"
else
  echo "setup: all Debian packages present"
fi

cuda_home=""
if [[ -n "${CUDA_HOME:-}" && -x "${CUDA_HOME}/bin/nvcc" ]]; then
  cuda_home="$CUDA_HOME"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_home=/usr/local/cuda
elif command -v nvcc >/dev/null 2>&1; then
  cuda_home="$(dirname "$(dirname "$(command -v nvcc)")")"
fi
if [[ -n "$cuda_home" ]]; then
  echo "setup: CUDA toolkit at $cuda_home ($("$cuda_home/bin/nvcc" --version | tail -n 1)): the CUDA backend will be built"
else
  echo "setup: no CUDA toolkit found (CUDA_HOME, /usr/local/cuda, nvcc on PATH): CPU-only build"
fi
