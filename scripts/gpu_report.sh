#!/usr/bin/env bash
# Runs every GPU check and benchmark from a bundle (make bundle) on a GPU host and writes one
# report: device, driver, date, each exact command and its output. Commit the report under
# bench/results/. Steps whose tools are missing on the host are reported as skipped.
#
#   scripts/gpu_report.sh BUNDLE_DIR OUTPUT_DIR [quick]
#
# quick: GPU tests and one short bench only (for a first look within a small time budget).
set -uo pipefail
bundle="$(cd "${1:?usage: gpu_report.sh BUNDLE_DIR OUTPUT_DIR [quick]}" && pwd)"
output="${2:?usage: gpu_report.sh BUNDLE_DIR OUTPUT_DIR [quick]}"
mode="${3:-full}"
mkdir -p "$output"
report="$output/report.md"
source "$bundle/env.sh"
python="python3"

run_step() {  # run_step TITLE COMMAND...: records the command, its output and its exit status
  local title="$1"; shift
  {
    echo "## $title"
    echo
    echo '```'
    echo "\$ $*"
  } >> "$report"
  local started=$SECONDS
  "$@" >> "$report" 2>&1
  local status=$?
  {
    echo "(exit $status, $((SECONDS - started)) s)"
    echo '```'
    echo
  } >> "$report"
  echo "gpu_report: $title: exit $status"
}

{
  echo "# mixgpt GPU report"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"
  echo "- CUDA runtime libraries: $(ldd "$bundle/bin/mixgpt" | grep -E 'cublasLt|nccl' | awk '{print $3}' | tr '\n' ' ')"
  echo "- PyTorch: $($python -c 'import torch; print(torch.__version__)' 2>&1)"
  echo
} > "$report"

run_step "GPU test suite" env MIXGPT_REQUIRE_GPU=1 "$bundle/bin/mixgpt_tests" --gtest_filter='Gpu*' --gtest_brief=1
if [[ "$mode" == quick ]]; then
  run_step "mixgpt bench d12 bf16" "$bundle/bin/mixgpt" bench --device cuda --model d12 -b 16 -t 1024 \
    --precision bf16 --steps 10
  exit 0
fi
run_step "mixgpt bench d12, all precisions (flash attention)" "$bundle/bin/mixgpt" bench --device cuda \
  --model d12 -b 16 -t 1024 --precision fp32,tf32,bf16,fp16 --steps 20 --json-out "$output/bench_d12.json"
run_step "mixgpt bench d12, bf16/fp16 with the simple attention (before flash)" "$bundle/bin/mixgpt" bench \
  --device cuda --model d12 -b 16 -t 1024 --precision bf16,fp16 --steps 20 --attention simple
run_step "PyTorch d12, same shapes (eager and torch.compile)" $python scripts/torch_bench.py --model d12 \
  -b 16 -t 1024 --precision fp32,tf32,bf16,fp16 --compile
run_step "kernel lab" "$bundle/bin/mixgpt_kernel_lab"
run_step "attention vs PyTorch SDPA (flash, cuDNN)" $python scripts/compare_attention.py \
  "$bundle/bin/mixgpt_kernel_lab" --json "$output/attention.json"
for T in 1024 2048 4096; do
  run_step "peak memory, d12 bf16, T=$T" "$bundle/bin/mixgpt" bench --device cuda --model d12 \
    -b $((16384 / T)) -t $T --precision bf16 --steps 3
done
echo "gpu_report: $report"
