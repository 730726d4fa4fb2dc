#!/usr/bin/env bash
# make bundle: a self-contained folder to run mixgpt on a GPU host that has only the
# NVIDIA driver and CUDA libraries. It holds the binaries and every non-system shared
# library they load (found with ldd), with $ORIGIN-relative rpaths. CUDA libraries
# (cuBLAS, cuBLASLt, NCCL, the driver) are NOT copied: bundle/env.sh finds the host's.
set -euo pipefail
build="${1:-build}"
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

# Copy the closure of non-host libraries (ldd already lists transitive dependencies).
for binary in "$bundle"/bin/*; do
  while read -r library; do
    [[ -n "$library" && -f "$library" ]] || continue
    is_host_library "$library" && continue
    target="$bundle/lib/$(basename "$library")"
    [[ -f "$target" ]] || cp -L "$library" "$target"
  done < <(ldd "$binary" | awk '/=> \// { print $3 }')
done

for binary in "$bundle"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$binary"; done
for library in "$bundle"/lib/*; do chmod u+w "$library"; patchelf --set-rpath '$ORIGIN' "$library"; done

cat > "$bundle/env.sh" <<'ENV'
# Source this on the GPU host: puts the host's CUDA libraries (cuBLAS, cuBLASLt, NCCL)
# on LD_LIBRARY_PATH, from the CUDA toolkit or from PyTorch's nvidia-* wheels.
bundle_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cuda_dirs=()
for dir in ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 \
           /usr/lib/x86_64-linux-gnu; do
  [[ -d "$dir" ]] && cuda_dirs+=("$dir")
done
for python in python3 /usr/bin/python3; do
  site=$("$python" -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null) || continue
  for dir in "$site"/nvidia/*/lib; do [[ -d "$dir" ]] && cuda_dirs+=("$dir"); done
  break
done
export LD_LIBRARY_PATH="$(IFS=:; echo "${cuda_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
missing=$(ldd "$bundle_dir/bin/mixgpt" | awk '/not found/ { print $1 }')
if [[ -n "$missing" ]]; then echo "bundle: libraries not found on this host: $missing" >&2; fi
ENV

cat > "$bundle/run_gpu_tests.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the GPU test suite on this host; fails if no GPU is visible.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
MIXGPT_REQUIRE_GPU=1 "$here/bin/mixgpt_tests" --gtest_filter='Gpu*' "$@"
RUN
chmod +x "$bundle/run_gpu_tests.sh"

# One compressed file, for carrying the bundle to a GPU host.
tar -C "$(dirname "$bundle")" -cf - "$(basename "$bundle")" | xz -T0 -6 > "$bundle.tar.xz"

echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1)), $bundle.tar.xz ($(du -h "$bundle.tar.xz" | cut -f1)); libraries:"
ls "$bundle/lib"
echo "bundle: unresolved outside the bundle (expected: only CUDA libraries the GPU host provides):"
ldd "$bundle/bin/mixgpt" | grep -v "$bundle" | grep "=>" || true
