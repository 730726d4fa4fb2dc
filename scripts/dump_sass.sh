#!/usr/bin/env bash
# make sass: dumps the SASS of every CUDA object to build/sass/<name>.sass and counts
# the tensor-core instructions (HMMA: mma.sync; HGMMA: Hopper wgmma) per object.
set -euo pipefail
build="${1:-build}"
cuobjdump="${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump"
objects=$(find "$build/obj" -name '*.cu.o' | sort)
if [[ -z "$objects" ]]; then echo "sass: no CUDA objects (built without CUDA?)" >&2; exit 1; fi
mkdir -p "$build/sass"
printf '%-48s %8s %8s\n' object HMMA HGMMA
for object in $objects; do
  name=$(basename "$object" .cu.o)
  "$cuobjdump" -sass "$object" > "$build/sass/$name.sass"
  printf '%-48s %8d %8d\n' "$name" "$(grep -c 'HMMA' "$build/sass/$name.sass" || true)" \
    "$(grep -c 'HGMMA' "$build/sass/$name.sass" || true)"
done
