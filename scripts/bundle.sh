#!/usr/bin/env bash
# make bundle: a self-contained folder to run mixgpt on a GPU host that has only the
# NVIDIA driver and CUDA libraries. It holds the binaries and every non-system shared
# library they load (found with ldd), with $ORIGIN-relative rpaths. CUDA libraries
# (cuBLASLt and NCCL, loaded on first use, and the driver) are NOT copied: the binaries find the
# host's (core/cuda_library_search.h) and bundle/env.sh puts their folders on the loader's path.
# bundle/VERSION names the commit, build configuration, the glibc and NVIDIA driver it needs;
# bundle/check_host.sh (sourced by env.sh first) says in one line what is missing on a host;
# BUILD/bundle.tar.xz carries it all. NVCC: the nvcc the build used (none: a CPU-only build).
#
# usage: scripts/bundle.sh [BUILD] [NVCC]
set -euo pipefail
build="${1:-build}"
nvcc="${2:-}"
bundle="$build/bundle"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
binaries=()
for name in mixgpt mixgpt_tests mixgpt_mpi_tests mixgpt_benchmarks mixgpt_kernel_lab; do
  [[ -x "$build/$name" ]] && binaries+=("$build/$name")
done
cp "${binaries[@]}" "$bundle/bin/"
# Host debug sections are most of the binaries' size; device line info (in the fatbin) stays.
strip --strip-debug "$bundle"/bin/*

# Libraries every Linux host has (glibc and the loader) and the CUDA ones the host provides.
is_host_library() {
  case "$(basename "$1")" in
    ld-linux*|libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libresolv.so*|libutil.so*) return 0 ;;
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libnccl.so*|libnvidia*) return 0 ;;
  esac
  return 1
}

# Copy the closure of non-host libraries (ldd already lists transitive dependencies). OpenBLAS is
# loaded at run time (kernels/cpu/openblas_library.h), so ldd does not list it: it is added by hand.
openblas="${OPENBLAS_LIB:-/usr/lib/x86_64-linux-gnu/openblas-openmp}/libopenblas.so.0"
cp -L "$openblas" "$bundle/lib/libopenblas.so.0"
for binary in "$bundle"/bin/* "$openblas"; do
  while read -r library; do
    [[ -n "$library" && -f "$library" ]] || continue
    is_host_library "$library" && continue
    target="$bundle/lib/$(basename "$library")"
    [[ -f "$target" ]] || cp -L "$library" "$target"
  done < <(ldd "$binary" | awk '/=> \// { print $3 }')
done

# The KJV dataset (Debian's bible-kjv, which GPU hosts lack) for the lease's training steps.
if ! "$build/mixgpt" prepare --corpus kjv --output "$bundle/data/kjv" >/dev/null 2>&1; then
  echo "bundle: no KJV dataset (bible-kjv not installed?): the GPU lease's training steps will be skipped" >&2
fi

# What the host needs. glibc: the newest symbol version the binaries and carried libraries
# ask for (a bundle runs on the glibc of the distribution that built it, or newer: build it on
# the oldest one it must serve). Driver: the oldest NVIDIA driver the toolkit's runtime accepts
# (CUDA 13: R580; CUDA 12.x: R525.60.13, through CUDA 12's minor-version compatibility).
glibc_needed=$(objdump -T "$bundle"/bin/* "$bundle"/lib/* 2>/dev/null | grep -oE 'GLIBC_[0-9]+\.[0-9]+(\.[0-9]+)?' |
  sed 's/^GLIBC_//' | sort -uV | tail -n 1)
distribution="$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME" || uname -sr)"
toolkit="" driver_needed=""
if [[ -n "$nvcc" ]]; then
  toolkit="$($nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')"
  case "${toolkit%%.*}" in
    12) driver_needed=525.60.13 ;;
    13) driver_needed=580.65.06 ;;
    *) echo "bundle: CUDA $toolkit: which NVIDIA driver it needs is not known here (scripts/bundle.sh)" >&2; exit 1 ;;
  esac
fi

# What the binaries were built from, for the report of a run on another host.
{
  if commit=$(git rev-parse --short HEAD 2>/dev/null); then
    echo "commit: $commit$(git diff --quiet HEAD || echo ' with uncommitted changes')"
  else
    echo "commit: unknown (not built in a git checkout)"
  fi
  echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname), $distribution"
  echo "build config: $(cat "$build/config.stamp" 2>/dev/null || echo unknown)"
  echo "CUDA toolkit: ${toolkit:-none (CPU only)}${driver_needed:+; needs NVIDIA driver $driver_needed or newer}"
  echo "needs glibc: $glibc_needed or newer"
} > "$bundle/VERSION"

cat > "$bundle/check_host.sh" <<CHECK
# Sourced by env.sh before anything else: one line, and a non-zero status, when this host's
# glibc is older than the bundle's binaries need (they would not start); one line of warning
# when its NVIDIA driver is older than the CUDA runtime they carry accepts (the CPU still works).
bundle_glibc_needed=$glibc_needed
bundle_built_on="$distribution"
bundle_toolkit="$toolkit"
bundle_driver_needed="$driver_needed"
CHECK
cat >> "$bundle/check_host.sh" <<'CHECK'
bundle_version_at_least() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]; }
bundle_glibc_host=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
if [[ -z "$bundle_glibc_host" ]] || ! bundle_version_at_least "$bundle_glibc_host" "$bundle_glibc_needed"; then
  echo "bundle: needs glibc $bundle_glibc_needed or newer (built on $bundle_built_on); this host has ${bundle_glibc_host:+glibc }${bundle_glibc_host:-no glibc}: use a bundle built on an older distribution, or build from source" >&2
  return 1
fi
if [[ -n "$bundle_driver_needed" ]] && command -v nvidia-smi > /dev/null 2>&1; then
  bundle_driver_host=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  if [[ -n "$bundle_driver_host" ]] && ! bundle_version_at_least "$bundle_driver_host" "$bundle_driver_needed"; then
    echo "bundle: built with CUDA $bundle_toolkit, which needs NVIDIA driver $bundle_driver_needed or newer; this host has $bundle_driver_host: only --device cpu will work$([[ "${bundle_toolkit%%.*}" == 13 ]] && echo " (the CUDA 12 bundle, make bundle-cuda12, needs 525.60.13)")" >&2
  fi
fi
return 0
CHECK

for binary in "$bundle"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$binary"; done
for library in "$bundle"/lib/*; do chmod u+w "$library"; patchelf --set-rpath '$ORIGIN' "$library"; done

cat > "$bundle/env.sh" <<'ENV'
# Source this on the GPU host: puts the host's CUDA libraries (cuBLAS, cuBLASLt, NCCL, the driver)
# on LD_LIBRARY_PATH, from the CUDA toolkit or from PyTorch's nvidia-* wheels. The binaries load
# cuBLASLt and NCCL on first use and search those folders themselves; the loader needs this for
# the driver where it is not in its cache, and `ldd` to show what would be used. Only CUDA folders
# go there: LD_LIBRARY_PATH is searched before the binaries' $ORIGIN run path, so a system
# folder there would replace the bundle's own libraries with the host's.
bundle_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$bundle_dir/check_host.sh" || return 1
bundle_cuda_dirs=()
for bundle_dir_candidate in ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda-*/lib64; do
  if [[ -d "$bundle_dir_candidate" ]]; then bundle_cuda_dirs+=("$bundle_dir_candidate"); fi
done
# PyTorch's CUDA wheels (cuBLAS, NCCL) keep their libraries under site-packages/nvidia/<package>/lib
# (nvidia/cu13/lib for CUDA 13's own wheels): every python3 found is asked, as mixgpt itself
# searches them (core/cuda_library_search.h), since the one with PyTorch may not be first on PATH.
for bundle_python in $(type -ap python3) /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  bundle_nvidia=$("$bundle_python" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null) || continue
  while read -r bundle_nvidia_dir; do
    for bundle_dir_candidate in "$bundle_nvidia_dir"/*/lib; do
      case ":$(IFS=:; echo "${bundle_cuda_dirs[*]}"):" in *":$bundle_dir_candidate:"*) continue ;; esac
      if [[ -d "$bundle_dir_candidate" ]]; then bundle_cuda_dirs+=("$bundle_dir_candidate"); fi
    done
  done <<< "$bundle_nvidia"
done
# Last: the driver's folder on hosts that mount it there (libcuda.so.1 is loaded at run time).
if [[ -d /usr/local/nvidia/lib64 ]]; then bundle_cuda_dirs+=(/usr/local/nvidia/lib64); fi
if (( ${#bundle_cuda_dirs[@]} > 0 )); then
  export LD_LIBRARY_PATH="$(IFS=:; echo "${bundle_cuda_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
bundle_missing=$(ldd "$bundle_dir/bin/mixgpt" | awk '/not found/ { print $1 }')
if [[ -n "$bundle_missing" ]]; then echo "bundle: libraries not found on this host:" $bundle_missing >&2; fi
ENV

cat > "$bundle/run_gpu_tests.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the GPU test suite on this host (seed 1 unless MIXGPT_TEST_SEED says); fails if no GPU is visible.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
MIXGPT_TEST_SEED="${MIXGPT_TEST_SEED:-1}" MIXGPT_REQUIRE_GPU=1 "$here/bin/mixgpt_tests" --gtest_filter='Gpu*' "$@"
RUN
chmod +x "$bundle/run_gpu_tests.sh"

# One compressed file, for carrying the bundle to a GPU host.
tar -C "$(dirname "$bundle")" -cf - "$(basename "$bundle")" | xz -T0 -6 > "$bundle.tar.xz"

echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1)), $bundle.tar.xz ($(du -h "$bundle.tar.xz" | cut -f1)); needs glibc $glibc_needed or newer${driver_needed:+ and NVIDIA driver $driver_needed or newer (CUDA $toolkit)}; libraries:"
ls "$bundle/lib"
echo "bundle: unresolved outside the bundle (expected: only CUDA libraries the GPU host provides):"
ldd "$bundle/bin/mixgpt" | grep -v "$bundle" | grep "=>" || true
