#!/usr/bin/env bash
# `make bench`: training throughput per precision (`mixgpt bench`: tokens/s, ms/step, MFU, peak
# memory), then the Google Benchmark micro-benchmarks when built. On a machine without a usable
# GPU the CPU backend runs a small model (reduced precisions emulated there); with one, d12 runs
# on the GPU, each with a per-op profile; on the CPU, scripts/cpu_vs_torch.py then compares with
# PyTorch when it is installed. The JSON report also goes to <build>/bench_results/train_<device>.json.
set -euo pipefail
build="${1:-build}"
mixgpt="$build/mixgpt"
results="$build/bench_results"
mkdir -p "$results"

if "$mixgpt" bench --device cuda --precision bf16 --model d2 --vocab-size 256 -b 1 -t 16 \
     --warmup-steps 0 --steps 1 >/dev/null 2>&1; then
  name=cuda
  arguments=(--device cuda --model d12 -b 8 -t 1024 --warmup-steps 3 --steps 10)
else
  name=cpu
  arguments=(--device cpu --model d2 --vocab-size 8192 -b 8 -t 128 --warmup-steps 1 --steps 5)
fi
"$mixgpt" bench "${arguments[@]}" --profile --json-out "$results/train_$name.json"
echo "bench: wrote $results/train_$name.json"

# On the CPU: mixgpt against PyTorch on the same shapes, alternating (Debian's python3-torch).
if [[ $name == cpu ]] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  "$(dirname "$0")/cpu_vs_torch.py" --mixgpt "$mixgpt"
fi

if [[ -x "$build/mixgpt_benchmarks" ]]; then
  "$build/mixgpt_benchmarks"
fi
