#!/usr/bin/env bash
# make sass: dumps the SASS of CUDA code and counts, per kernel, the instructions the kernels
# are built to use: HMMA (mma.sync on tensor cores), HGMMA (Hopper wgmma), LDSM (ldmatrix),
# LDGSTS (cp.async), 16-byte global loads and stores (LDG.E.128, STG.E.128) and local memory
# (LDL/STL: spills or stack arrays). Needs cuobjdump (CUDA_HOME/bin, /usr/local/cuda/bin or
# PATH); `make ptx` checks the same from the PTX where there is none.
#
#   scripts/dump_sass.sh BUILD           every object of BUILD/obj; dumps kept in BUILD/sass
#   scripts/dump_sass.sh FILE...         executables or objects (e.g. the bundle's binaries)
set -euo pipefail
cuobjdump=""
for candidate in "${CUDA_HOME:-}/bin/cuobjdump" /usr/local/cuda/bin/cuobjdump "$(command -v cuobjdump || true)"; do
  if [[ -x "$candidate" ]]; then cuobjdump="$candidate"; break; fi
done
if [[ -z "$cuobjdump" ]]; then
  echo "sass: no cuobjdump (CUDA_HOME/bin, /usr/local/cuda/bin, PATH); \`make ptx\` checks the same instructions in the PTX" >&2
  exit 1
fi

if [[ $# -eq 1 && -d "$1" ]]; then
  mapfile -t inputs < <(find "$1/obj" -name '*.cu.o' | sort)
  dumps="$1/sass"
else
  inputs=("$@")
  dumps="$(mktemp -d)"
  trap 'rm -rf "$dumps"' EXIT
fi
if ((${#inputs[@]} == 0)); then echo "sass: no CUDA objects (built without CUDA?)" >&2; exit 1; fi
mkdir -p "$dumps"

echo "cuobjdump: $cuobjdump ($("$cuobjdump" --version | tail -n 1))"
printf '%-64s %5s %6s %6s %6s %7s %7s %7s %5s\n' kernel arch HMMA HGMMA LDSM LDGSTS "LDG.128" "STG.128" local
for input in "${inputs[@]}"; do
  dump="$dumps/$(basename "$input").sass"
  "$cuobjdump" -sass "$input" >"$dump"
  # cuobjdump prints "code for sm_NN" before each architecture's functions, then
  # "Function : <mangled name>" before each function's instructions.
  awk '
    function flush() {
      if (name != "") print name, arch, hmma + 0, hgmma + 0, ldsm + 0, ldgsts + 0, ldg + 0, stg + 0, local + 0
    }
    /code for sm_/ { flush(); name = ""; arch = $NF }
    /Function : / { flush(); name = $NF; hmma = hgmma = ldsm = ldgsts = ldg = stg = local = 0 }
    / HMMA\./ { hmma++ }
    / HGMMA\./ { hgmma++ }
    / LDSM\./ { ldsm++ }
    / LDGSTS/ { ldgsts++ }
    / LDG\.E[A-Z.]*\.128/ { ldg++ }
    / STG\.E[A-Z.]*\.128/ { stg++ }
    / (LDL|STL)[ .]/ { local++ }
    END { flush() }
  ' "$dump" | while read -r name arch counts; do
    readable=$(c++filt "$name" | sed -E 's/\(anonymous namespace\):://g; s/\(.*//; s/^void //; s/mixgpt::(cuda::)?(flash::)?(lab::)?//')
    read -r -a values <<<"$counts"
    printf '%-64s %5s %6d %6d %6d %7d %7d %7d %5d\n' "${readable:0:64}" "$arch" "${values[@]}"
  done
done
