#!/usr/bin/env bash
# Reads the PTX of the CUDA kernels (`make ptx`: build/ptx/kernels/cuda/*.ptx) and checks what
# the kernels claim to use, without a GPU or a disassembler:
#   - the flash attention kernels use tensor-core mma.sync (m16n8k16, fp32 accumulation),
#     ldmatrix and 16-byte cp.async copies, and hold RoPE's rotation (its 8-byte loads of cos/sin
#     pairs): grouped key/value heads and RoPE are run-time options of the same kernels, so the
#     Llama-style path runs on the same tensor-core code;
#   - the vectorized instantiations of LayerNorm and RMSNorm (forward and backward), SwiGLU and
#     ReLU² (forward and backward), the classifier with its gradient and AdamW load and store global
#     memory 16 bytes at a time;
#   - the FP8 quantization kernels convert with cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (two values per
#     instruction; PTX for sm_89 and newer, which `make ptx` targets with GPU_ARCHS' last, 90);
#   - no kernel uses local memory (a stack array or a spill in PTX).
# Prints one row per kernel with its instruction counts; exits 1 if a check fails.
# ptxas turns each PTX instruction named here into one SASS instruction kind (mma.sync into
# HMMA, ldmatrix into LDSM, cp.async into LDGSTS, 16-byte accesses into LDG.E.128/STG.E.128);
# `make sass` shows the SASS itself where cuobjdump is installed.
set -euo pipefail
ptx_dir="${1:-build/ptx}"
mapfile -t files < <(find "$ptx_dir" -name '*.ptx' | sort)
if ((${#files[@]} == 0)); then
  echo "check_kernel_instructions: no PTX under $ptx_dir (make ptx)" >&2
  exit 1
fi

# One line per kernel: mangled name, then the counts of the columns below.
counts=$(awk '
  function flush() { if (name != "") print name, mma, ldmatrix, cp_async, load16, store16, pair8, local, cvt_fp8 }
  /^\.(visible |weak )?\.?entry / {
    flush(); name = $NF; sub(/\(.*/, "", name); mma = ldmatrix = cp_async = load16 = store16 = pair8 = local = cvt_fp8 = 0
  }
  /mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.(bf16|f16)\.(bf16|f16)\.f32/ { mma++ }
  /ldmatrix\.sync\.aligned/ { ldmatrix++ }
  /cp\.async\.cg\.shared\.global/ { cp_async++ }
  /^[ \t]*ld\.global[a-zA-Z0-9:_.]*\.(v4\.(f32|u32|b32|s32)|v2\.(f64|u64|b64|s64))/ { load16++ }
  /^[ \t]*st\.global[a-zA-Z0-9:_.]*\.(v4\.(f32|u32|b32|s32)|v2\.(f64|u64|b64|s64))/ { store16++ }
  /^[ \t]*ld\.global[a-zA-Z0-9:_.]*\.v2\.f32/ { pair8++ }
  /\.local/ { local++ }
  /cvt\.rn\.satfinite\.(e4m3x2|e5m2x2)\.f32/ { cvt_fp8++ }
  END { flush() }
' "${files[@]}")

# The rules, fields separated by ';': kernels (an extended regex over the mangled name: `Li8E`
# is the template argument 8), the columns that must be nonzero in each of them, and why.
rules=(
  'flash.*(forward_kernel|query_kernel|key_kernel)I;mma ldmatrix cp_async pair8;flash attention (RoPE included) on tensor cores'
  'layernorm_(forward|backward)_kernelI(f|6__half|13__nv_bfloat16)Li[248]E;load16 store16;16-byte LayerNorm accesses'
  'rmsnorm_(forward|backward)_kernelI(f|6__half|13__nv_bfloat16)Li[248]E;load16 store16;16-byte RMSNorm accesses'
  'swiglu_(forward|backward)_kernelI(f|6__half|13__nv_bfloat16)Li[48]E;load16 store16;16-byte SwiGLU accesses'
  'relu2_(forward|backward)_kernelI(f|6__half|13__nv_bfloat16)Li[48]E;load16 store16;16-byte ReLU² accesses'
  'qk_norm_(forward|backward)_kernelI(f|6__half|13__nv_bfloat16)Li[48]E;load16 store16;16-byte QK-norm accesses'
  'classifier_kernelI(f|6__half|13__nv_bfloat16)Li[48]ELb1E;load16 store16;16-byte classifier accesses'
  'adamw_kernelI(f|6__half|13__nv_bfloat16)Li4E;load16 store16;16-byte AdamW accesses'
  'fp8_quantize_kernel;cvt_fp8;FP8 conversion instructions'
)
columns=(mma ldmatrix cp_async load16 store16 pair8 local cvt_fp8)

# "layernorm_forward_kernel<float, 4, false>" for a mangled kernel name.
readable_name() {
  c++filt "$1" | sed -E 's/\(anonymous namespace\):://g; s/\(.*//; s/^void //; s/mixgpt::cuda::(flash::)?//'
}

printf '%-72s %6s %8s %8s %7s %8s %9s %6s %7s\n' kernel mma.sync ldmatrix cp.async "16B ld" "16B st" "f32x2 ld" local cvt.fp8
while read -r name rest; do
  readable=$(readable_name "$name")
  read -r -a values <<<"$rest"
  printf '%-72s %6d %8d %8d %7d %8d %9d %6d %7d\n' "${readable:0:72}" "${values[@]}"
done <<<"$counts"

failures=0
fail() {
  echo "check_kernel_instructions: $1" >&2
  failures=$((failures + 1))
}
for rule in "${rules[@]}"; do
  IFS=';' read -r kernels required why <<<"$rule"
  matched=0
  while read -r name rest; do
    [[ "$name" =~ $kernels ]] || continue
    matched=$((matched + 1))
    read -r -a values <<<"$rest"
    for column in $required; do
      for i in "${!columns[@]}"; do
        if [[ "${columns[$i]}" == "$column" ]] && ((values[i] == 0)); then
          fail "$why: $(readable_name "$name") has no $column instruction"
        fi
      done
    done
  done <<<"$counts"
  ((matched > 0)) || fail "$why: no kernel matches /$kernels/"
done
while read -r name rest; do
  read -r -a values <<<"$rest"
  ((values[6] == 0)) || fail "$(readable_name "$name") uses local memory (${values[6]} instructions)"
done <<<"$counts"

kernels=$(wc -l <<<"$counts")
if ((failures > 0)); then
  echo "check_kernel_instructions: $failures check(s) failed over $kernels kernels" >&2
  exit 1
fi
echo "check_kernel_instructions: every check holds over $kernels kernels (${#rules[@]} rules, no local memory)"
