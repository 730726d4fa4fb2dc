#!/usr/bin/env bash
# Installs the Debian packages mixgpt needs, only those missing (idempotent), and
# says whether the CUDA backend will be built. Runs apt-get through sudo when not root.
# Tested on Debian 12 and Debian 11 (scripts/check_portability.sh); where a distribution names
# or lacks a package differently, the choice is made below by what apt offers, not by its name.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential pkg-config
  libsentencepiece-dev sentencepiece        # tokenizer training and encoding
  libhdf5-dev hdf5-tools                    # datasets and checkpoints
  libopenmpi-dev openmpi-bin                # multi-process launch and CPU collectives
  libgtest-dev libbenchmark-dev             # tests and micro-benchmarks
  libopenblas-openmp-dev                    # CPU matrix products (OpenMP threading)
  nlohmann-json3-dev                        # JSON
  libssl-dev zlib1g-dev                     # SHA-256 of tokenizers, .gz corpora
  libzstd-dev liblzma-dev                   # .zst and .xz corpora and task files
  patchelf                                  # $ORIGIN rpaths in `make bundle`
  bible-kjv                                 # the default corpus
  python3-numpy python3-h5py python3-matplotlib python3-sentencepiece  # scripts/
  protobuf-compiler python3-protobuf        # the tests' reader of TensorBoard event files
)

# --with-torch adds Debian's PyTorch (CPU), needed only to regenerate the reference fixtures
# (make fixtures); the committed fixtures let the tests run without it.
if [[ "${1:-}" == "--with-torch" ]]; then packages+=(python3-torch); fi

# The clang of `make fuzz` (libFuzzer and sanitizers, fuzz/): the first of these whose packages
# apt offers. Debian 12: clang-14 with its runtime libraries; Debian 11 has no clang-14, and
# clang-13's libclang-common-13-dev holds libFuzzer. The Makefile picks the newest clang++ installed.
fuzz_clang_choices=("clang-14 libclang-rt-14-dev" "clang-13 libclang-common-13-dev")
# Header-only libraries, from apt where the distribution packages them (Debian 12); where it
# does not (Debian 11 has neither), Debian 12's packages of them are unpacked into .deps/debian12
# (scripts/unpack_debian_packages.sh), which the Makefile puts on the include path: the same
# versions, so one code path.
header_only=(libcli11-dev=2.1.2+ds-1 libtomlplusplus-dev=3.3.0+ds-1)
header_fallback=.deps/debian12

is_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
is_offered() { [[ -n "$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" { print $2 }')" ]]; }
all_installed() { local package; for package in "$@"; do is_installed "$package" || return 1; done; }
all_offered() { local package; for package in "$@"; do is_installed "$package" || is_offered "$package" || return 1; done; }

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
lists_read=0
read_package_lists() {
  if ((lists_read == 0)); then "${sudo_cmd[@]}" apt-get update -qq; lists_read=1; fi
}

fuzz_clang=()
for choice in "${fuzz_clang_choices[@]}"; do
  read -r -a choice_packages <<< "$choice"
  if all_installed "${choice_packages[@]}"; then fuzz_clang=("${choice_packages[@]}"); break; fi
done
if ((${#fuzz_clang[@]} == 0)); then
  read_package_lists
  for choice in "${fuzz_clang_choices[@]}"; do
    read -r -a choice_packages <<< "$choice"
    if all_offered "${choice_packages[@]}"; then fuzz_clang=("${choice_packages[@]}"); break; fi
  done
  if ((${#fuzz_clang[@]} == 0)); then
    echo "setup: apt offers none of these for make fuzz (which make test runs): $(IFS=';'; echo "${fuzz_clang_choices[*]}")" >&2
    exit 1
  fi
fi
packages+=("${fuzz_clang[@]}")

headers_to_unpack=()
for header_package in "${header_only[@]}"; do
  name="${header_package%%=*}"
  if is_installed "$name" || [[ -f "$header_fallback/.$name" ]]; then continue; fi
  read_package_lists
  if is_offered "$name"; then packages+=("$name"); else headers_to_unpack+=("$header_package"); fi
done

missing=()
for package in "${packages[@]}"; do
  is_installed "$package" || missing+=("$package")
done

if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  read_package_lists
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  echo "setup: done"
else
  echo "setup: all Debian packages present"
fi

if ((${#headers_to_unpack[@]} > 0)); then
  echo "setup: this distribution does not package ${headers_to_unpack[*]%%=*}: unpacking Debian 12's into $header_fallback"
  scripts/unpack_debian_packages.sh bookworm main "$header_fallback" "${headers_to_unpack[@]}" > /dev/null
  for header_package in "${headers_to_unpack[@]}"; do touch "$header_fallback/.${header_package%%=*}"; done
fi

cuda_home=""
nvcc=""
if [[ -n "${CUDA_HOME:-}" && -x "${CUDA_HOME}/bin/nvcc" ]]; then
  cuda_home="$CUDA_HOME"
elif [[ -n "${CUDA_HOME:-}" && -x "${CUDA_HOME}/usr/lib/nvidia-cuda-toolkit/bin/nvcc" ]]; then
  cuda_home="$CUDA_HOME"   # Debian's layout, as scripts/fetch_cuda12.sh unpacks it
  nvcc="$CUDA_HOME/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_home=/usr/local/cuda
elif command -v nvcc >/dev/null 2>&1; then
  cuda_home="$(dirname "$(dirname "$(command -v nvcc)")")"
fi
if [[ -n "$cuda_home" ]]; then
  echo "setup: CUDA toolkit at $cuda_home ($("${nvcc:-$cuda_home/bin/nvcc}" --version | tail -n 1)): the CUDA backend will be built"
else
  echo "setup: no CUDA toolkit found (CUDA_HOME, /usr/local/cuda, nvcc on PATH): CPU-only build"
fi
