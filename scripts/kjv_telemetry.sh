#!/usr/bin/env bash
# Issue 40's KJV telemetry measurement on the CPU: `mixgpt study` of fp32, bf16, fp16 and fp8 on the
# Llama-style model of 4 layers and width 256 (the optimizer study's), 250 steps of 8 x 128
# tokens, telemetry every 10 steps; then each run's per-layer heat maps (scripts/plot_metrics.py)
# and the study's report with where each precision departs from fp32.
#
#   scripts/kjv_telemetry.sh [BUILD] [OUT]      (defaults: build, runs/kjv_telemetry)
#
# The study resumes its own runs, so the script resumes where it stopped.
set -euo pipefail
build="${1:-build}"
out="${2:-runs/kjv_telemetry}"
mixgpt="$build/mixgpt"
data=data/kjv
[[ -f "$data/index.json" || -f "$data/dataset.h5" ]] || "$mixgpt" prepare --corpus kjv

"$mixgpt" study --model d6 --n-layer 4 --n-head 4 --n-embd 256 --arch llama --dataset "$data" -b 8 -t 128 \
  --steps 250 --warmup-steps 25 --lr 1e-3 --eval-interval 25 --eval-batches 16 --telemetry-interval 10 \
  --threads 1 --device cpu --seed 1 --precisions fp32,bf16,fp16,fp8 -o "$out"
for precision in fp32 bf16 fp16 fp8; do
  /usr/bin/python3 scripts/plot_metrics.py "$out/$precision/metrics.jsonl" -o "$out/$precision.png"
done
echo "kjv_telemetry: report in $out/report.md, heat maps in $out/*_telemetry.png"
