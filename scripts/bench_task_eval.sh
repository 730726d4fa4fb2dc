#!/usr/bin/env bash
# Speed of multiple-choice evaluation (`mixgpt eval --task`): examples per second for d6 and d12,
# on the CPU unless DEVICE=cuda. A benchmark, not a test. Each model is saved by a one-step
# training run on the KJV dataset (its weights do not change the speed; T = 256, the KJV
# tokenizer's 8192 tokens); it then scores the first EXAMPLES examples of the KJV next-verse task
# (scripts/make_kjv_tasks.py: 4 choices, rows of about 60 to 130 tokens, HellaSwag's shape) once
# to warm up and RUNS times measured. Printed: the median examples/s of the scoring (wall clock),
# and the median examples per CPU-second of the whole process (user + system time of all its
# threads: less sensitive to other work on a shared machine), with the load average before and after.
#
#   scripts/bench_task_eval.sh [build-dir]
#   DEVICE=cuda PRECISION=bf16 MODELS="d12" EXAMPLES=2000 scripts/bench_task_eval.sh
#
# Needs data/kjv/dataset.h5 (`mixgpt prepare --corpus kjv`); writes data/kjv/next_verse.jsonl
# when missing and runs/bench_task_eval/.
set -euo pipefail
build="${1:-build}"
mixgpt="$build/mixgpt"
python=/usr/bin/python3
device="${DEVICE:-cpu}"
precision="${PRECISION:-fp32}"
threads="${THREADS:-0}"
models=(${MODELS:-d6 d12})
runs="${RUNS:-3}"
rows="${BATCH:-16}"
task=data/kjv/next_verse.jsonl
out=runs/bench_task_eval

[[ -f data/kjv/index.json ]] || { echo "bench_task_eval: run \`$mixgpt prepare --corpus kjv\` first" >&2; exit 1; }
[[ -f "$task" ]] || "$python" scripts/make_kjv_tasks.py next-verse --dataset data/kjv -o "$task"
mkdir -p "$out"

examples_for() {  # default examples per run: about a minute per run on 2 cores
  case "$1" in d12) echo "${EXAMPLES:-32}" ;; *) echo "${EXAMPLES:-96}" ;; esac
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) processors)"
for model in "${models[@]}"; do
  if [[ ! -d "$out/$model/checkpoints" ]]; then
    "$mixgpt" train --dataset data/kjv --model "$model" -b 1 -t 256 --steps 1 --device "$device" \
      --precision "$precision" --threads "$threads" -o "$out/$model" > /dev/null 2>&1
  fi
  count=$(examples_for "$model")
  evaluate() {
    "$mixgpt" eval "$out/$model" --task mc --data "$task" --limit "$1" -b "$rows" --device "$device" \
      --precision "$precision" --threads "$threads" --json 2>/dev/null
  }
  evaluate 8 > /dev/null
  measures=()
  for ((run = 0; run < runs; ++run)); do
    TIMEFORMAT='%U %S'
    { time evaluate "$count" > "$out/report.json"; } 2> "$out/cpu_time.txt"
    rate=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["examples_per_second"])' \
      "$out/report.json")
    measures+=("$rate:$(tr ' ' '+' < "$out/cpu_time.txt")")
  done
  "$python" - "$model" "$device" "$precision" "$count" "$rows" "${measures[@]}" <<'PY'
import statistics
import sys
model, device, precision, count, rows, *measures = sys.argv[1:]
rates = [float(measure.split(":")[0]) for measure in measures]
cpu = [sum(float(part) for part in measure.split(":")[1].split("+")) for measure in measures]
per_cpu_second = [int(count) / seconds for seconds in cpu]
print(f"{model} {device} {precision}: {statistics.median(rates):.2f} examples/s, "
      f"{statistics.median(per_cpu_second):.2f} examples per CPU-second (medians of {len(rates)} runs: "
      f"{', '.join(f'{rate:.2f}' for rate in rates)} examples/s), {count} examples, {rows} rows per batch")
PY
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
