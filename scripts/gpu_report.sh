#!/usr/bin/env bash
# Runs the GPU checks and benchmarks from a bundle (make bundle) on a GPU host and writes a
# report: date, host, command, the bundle's commit, device, driver and libraries, `mixgpt info`,
# then each exact command with its output, exit status and time. A step that fails or runs out of time
# is recorded and the next one runs; the exit status is 1 when any step failed or was skipped.
#
#   scripts/gpu_report.sh BUNDLE OUTPUT_DIR [PART]
#
# BUNDLE: build/bundle.tar.xz (unpacked beside itself) or an unpacked build/bundle.
# PART, each sized for one command of at most 10 minutes (bench/README.md, "A GPU session"):
#   quick   the GPU test suite and one d12 bf16 bench
#   mixgpt  mixgpt bench d12 per precision, gradient exchange, simple attention, peak memory per T
#   torch   PyTorch's own d12 throughput, eager and under torch.compile
#   lab     the kernel lab, its kernels' SASS instruction counts, and the attention comparison
#           with PyTorch's SDPA
#   study   mixgpt study: d6 on KJV once per precision, accuracy and speed side by side
#   hf      the transformers check of an exported model (scripts/hf_transformers_check.py) against
#           mixgpt's reference outputs: HF_EXPORT (default hf/demo) and HF_REFERENCE (default
#           hf/demo_reference), made here by `mixgpt export runs/demo -o hf/demo --reference-out
#           hf/demo_reference` and carried to the host; needs transformers in PyTorch's python
#   full    quick, mixgpt, torch, lab and study in one run (the default)
# Every step has its own time limit, and a part starts no step that its budget
# (GPU_REPORT_BUDGET_S, default 560 s; none for full) cannot give 30 s: those are recorded as
# skipped, so the report is complete before a 10-minute command limit. The report is
# OUTPUT_DIR/report-PART.md, appended to as the steps run. PYTHON names the interpreter with
# PyTorch when neither python3 nor /opt/torch/.venv/bin/python3 has it.
set -uo pipefail
usage="usage: gpu_report.sh BUNDLE OUTPUT_DIR [quick|mixgpt|torch|lab|study|hf|full]"
invocation="$0 $*"
bundle_arg="${1:?$usage}"
output_arg="${2:?$usage}"
part="${3:-full}"
case "$part" in
  quick | mixgpt | torch | lab | study | hf | full) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
started=$SECONDS
if [[ "$part" == full ]]; then budget="${GPU_REPORT_BUDGET_S:-0}"; else budget="${GPU_REPORT_BUDGET_S:-560}"; fi

mkdir -p "$output_arg" && output="$(cd "$output_arg" && pwd)" || exit 1
if [[ -f "$bundle_arg" ]]; then
  unpack_dir="$(cd "$(dirname "$bundle_arg")" && pwd)"
  # tar -J needs the xz program, which a minimal host may lack; Python's tarfile does not.
  tar -xJf "$bundle_arg" -C "$unpack_dir" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle_arg" "$unpack_dir" ||
    { echo "gpu_report: cannot unpack $bundle_arg" >&2; exit 1; }
  bundle="$unpack_dir/bundle"
else
  bundle="$(cd "$bundle_arg" && pwd)" || exit 1
fi
cd "$(dirname "$0")/.." || exit 1  # the repository root, where scripts/ is

# PyTorch runs with the host's own library path: the bundle's CUDA folders put first could
# hand it other builds of the CUDA libraries than its wheels ship.
host_env=(env -u LD_LIBRARY_PATH)
if [[ -n "${LD_LIBRARY_PATH:-}" ]]; then host_env=(env "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"); fi
python=""
for candidate in ${PYTHON:-} python3 /opt/torch/.venv/bin/python3; do
  if "$candidate" -c 'import torch' >/dev/null 2>&1; then python="$candidate"; break; fi
done
source "$bundle/env.sh"

report="$output/report-$part.md"
{
  echo "# mixgpt GPU report: $part"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- host: $(uname -n), Linux $(uname -r)"
  echo "- command: $invocation"
  echo "- bundle: $(paste -sd ';' "$bundle/VERSION" 2>/dev/null || echo 'no VERSION file')"
  echo "- device: $(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm \
    --format=csv,noheader 2>&1 | head -n 1)"
  echo "- CUDA libraries: $(ldd "$bundle/bin/mixgpt" | awk '/cublas|nccl|not found/ { print $1, $2, $3 }' |
    paste -sd ';' -)"
  if [[ -n "$python" ]]; then
    echo "- PyTorch: $python: $("${host_env[@]}" "$python" -c 'import torch; print(torch.__version__, "CUDA",
      torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "(no GPU)")' 2>&1 |
      tail -n 1)"
  else
    echo "- PyTorch: not found (python3, /opt/torch/.venv/bin/python3; set PYTHON)"
  fi
  echo
} > "$report"

failures=0
# run_step LIMIT_S TITLE [--stdout FILE] COMMAND...: records the command, its output (stdout to
# FILE instead when given), its exit status and time; stopped after LIMIT_S or the part's budget.
run_step() {
  local cap="$1" title="$2"
  shift 2
  local stdout_file=""
  if [[ "$1" == --stdout ]]; then
    stdout_file="$2"
    shift 2
  fi
  local limit="$cap"
  if ((budget > 0 && budget - (SECONDS - started) < limit)); then limit=$((budget - (SECONDS - started))); fi
  {
    echo "## $title"
    echo
    echo '```'
    echo "\$ $*${stdout_file:+ > $stdout_file}"
  } >> "$report"
  if ((limit < 30)); then
    printf '(skipped: %s s left of the budget of %s s)\n```\n\n' "$limit" "$budget" >> "$report"
    echo "gpu_report: $title: skipped (time budget)"
    failures=$((failures + 1))
    return 1
  fi
  local step_started=$SECONDS status note=""
  if [[ -n "$stdout_file" ]]; then
    timeout --kill-after=10 "$limit" "$@" > "$stdout_file" 2>> "$report"
  else
    timeout --kill-after=10 "$limit" "$@" >> "$report" 2>&1
  fi
  status=$?
  if ((status == 124 || status == 137)); then note=", stopped at its limit of $limit s"; fi
  printf '(exit %s, %s s%s)\n```\n\n' "$status" "$((SECONDS - step_started))" "$note" >> "$report"
  echo "gpu_report: $title: exit $status, $((SECONDS - step_started)) s$note"
  if ((status != 0)); then failures=$((failures + 1)); fi
  return "$status"
}

# run_python_step LIMIT_S TITLE SCRIPT ARGUMENTS...: run_step with PyTorch's interpreter.
run_python_step() {
  local cap="$1" title="$2"
  shift 2
  if [[ -z "$python" ]]; then
    printf '## %s\n\n(skipped: no python3 with PyTorch found)\n\n' "$title" >> "$report"
    echo "gpu_report: $title: skipped (no PyTorch)"
    failures=$((failures + 1))
    return 1
  fi
  run_step "$cap" "$title" "${host_env[@]}" PYTHONUNBUFFERED=1 "$python" "$@"
}

bench=("$bundle/bin/mixgpt" bench --device cuda --model d12 -b 16 -t 1024)

# Each GPU test in a process of its own, for when the suite failed: after an illegal address
# every later CUDA call in the process fails, so one bad kernel fails all the tests after it.
gpu_tests_one_by_one() {
  local tests test output failed=0
  tests=$("$bundle/bin/mixgpt_tests" --gtest_list_tests --gtest_filter='Gpu*' |
    awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }')
  echo "each: MIXGPT_REQUIRE_GPU=1 timeout 60 $bundle/bin/mixgpt_tests --gtest_filter=TEST --gtest_brief=1"
  for test in $tests; do
    output=$(MIXGPT_REQUIRE_GPU=1 timeout --kill-after=5 60 "$bundle/bin/mixgpt_tests" --gtest_filter="$test" \
      --gtest_brief=1 2>&1)
    local status=$?
    if ((status != 0)); then
      failed=$((failed + 1))
      echo "FAILED (exit $status): $test"
      tail -n 25 <<< "$output"
    fi
  done
  echo "$failed of $(wc -w <<< "$tests") GPU tests failed, each run alone"
  ((failed == 0))
}
export -f gpu_tests_one_by_one
export bundle

part_quick() {
  if ! run_step 180 "GPU test suite" env MIXGPT_REQUIRE_GPU=1 "$bundle/bin/mixgpt_tests" --gtest_filter='Gpu*' \
    --gtest_brief=1; then
    run_step 240 "GPU tests one by one (the suite failed; a crash or sticky CUDA error fails only its own test)" \
      bash -c gpu_tests_one_by_one
  fi
  if ! run_step 150 "mixgpt bench d12 bf16, flash attention" "${bench[@]}" --precision bf16 --steps 10 \
    --json-out "$output/bench-quick-bf16.json"; then
    run_step 150 "mixgpt bench d12 bf16, simple attention (the flash run failed)" "${bench[@]}" \
      --precision bf16 --steps 10 --attention simple
  fi
}

# One process per precision: a CUDA error in one leaves the others' numbers.
part_mixgpt() {
  local precision T
  for precision in bf16 fp16 tf32 fp32; do
    run_step 150 "mixgpt bench d12 $precision (flash attention in bf16/fp16, simple in tf32/fp32)" \
      "${bench[@]}" --precision "$precision" --steps 20 --json-out "$output/bench-$precision-flash.json"
  done
  local exchange
  for exchange in overlapped after-backward; do  # none: the bf16 row above
    run_step 120 "mixgpt bench d12 bf16, gradient exchange $exchange (1-rank NCCL)" "${bench[@]}" \
      --precision bf16 --steps 20 --gradient-exchange "$exchange"
  done
  for precision in bf16 fp16; do
    run_step 150 "mixgpt bench d12 $precision, simple attention (before flash)" "${bench[@]}" \
      --precision "$precision" --steps 20 --attention simple --json-out "$output/bench-$precision-simple.json"
  done
  for T in 2048 4096; do  # T = 1024: the bf16 row above
    run_step 120 "peak memory, d12 bf16, B=$((16384 / T)) T=$T" "$bundle/bin/mixgpt" bench --device cuda \
      --model d12 -b $((16384 / T)) -t "$T" --precision bf16 --steps 3
  done
}

part_torch() {
  run_python_step 540 "PyTorch d12, same shapes (eager, then torch.compile)" scripts/torch_bench.py \
    --model d12 -b 16 -t 1024 --precision bf16,fp16,tf32,fp32 --compile
}

part_lab() {
  run_step 240 "kernel lab (bf16)" "$bundle/bin/mixgpt_kernel_lab"
  run_step 60 "SASS instruction counts per kernel (tensor cores: HMMA)" scripts/dump_sass.sh \
    "$bundle/bin/mixgpt_kernel_lab"
  run_step 120 "kernel lab, attention only, JSON for the comparison" \
    --stdout "$output/kernel_lab_attention.json" "$bundle/bin/mixgpt_kernel_lab" --attention-only --json
  run_python_step 240 "attention vs PyTorch SDPA (flash, cuDNN)" scripts/compare_attention.py \
    --lab-json "$output/kernel_lab_attention.json" --json "$output/attention.json"
}

# The study's run directories stay on the host (checkpoints are large); its report, metrics and
# run records come back under OUTPUT_DIR/study, where scripts/plot_study.py draws the figures.
part_study() {
  local study="$bundle/../study-kjv-d6"
  run_step 540 "precision study: d6 on KJV, B=16, T=256, 600 steps per precision" "$bundle/bin/mixgpt" study \
    --device cuda --dataset "$bundle/data/kjv" --model d6 -b 16 -t 256 --steps 600 --warmup-steps 60 \
    --lr 1e-3 --eval-interval 100 --eval-batches 16 -o "$study"
  mkdir -p "$output/study"
  (cd "$study" && find . -name report.json -o -name report.md -o -name metrics.jsonl -o -name study_run.json |
    xargs -r cp --parents -t "$output/study")
}

part_hf() {
  run_python_step 300 "transformers: logits, greedy generation and tokenizer ids of the export vs mixgpt's" \
    scripts/hf_transformers_check.py "${HF_EXPORT:-hf/demo}" "${HF_REFERENCE:-hf/demo_reference}" --device cuda
}

# First, in every part: what this binary is and what it sees (versions, devices, or why none).
run_step 30 "mixgpt info" "$bundle/bin/mixgpt" info

case "$part" in
  quick) part_quick ;;
  mixgpt) part_mixgpt ;;
  torch) part_torch ;;
  lab) part_lab ;;
  study) part_study ;;
  hf) part_hf ;;
  full) part_quick; part_mixgpt; part_torch; part_lab; part_study ;;
esac
echo "gpu_report: $report: $failures steps failed or skipped, $((SECONDS - started)) s"
((failures == 0))
