#!/usr/bin/env bash
# `make demo` (after make has installed packages and built): prepares the KJV corpus, trains a
# small GPT, evaluates it, samples a few lines, and prints the figures and where everything is.
#
# CPU (2 cores): a 2-layer, width-128 model, 1200 steps of 8 x 128 tokens in fp32, a few minutes.
# GPU (when build/mixgpt can use one): a 6-layer, width-384 model in bf16.
# The validation loss is printed next to the unigram entropy of the training split (nats per
# token): the loss of the best model that ignores context.
set -euo pipefail
build="${1:-build}"
mixgpt="$build/mixgpt"
data=data/kjv
run=runs/demo
python=/usr/bin/python3
start=$(date +%s)

if [[ -f "$data/index.json" || -f "$data/dataset.h5" ]]; then
  echo "demo: $data exists, not preparing it again"
else
  "$mixgpt" prepare --corpus kjv
fi

if "$mixgpt" bench --device cuda --precision bf16 --model d2 --vocab-size 256 -b 1 -t 16 \
     --warmup-steps 0 --steps 1 >/dev/null 2>&1; then
  device=(--device cuda --precision bf16)
  model=(--model d6 -b 16 -t 256 --steps 2000 --lr 1.5e-3 --warmup-steps 200)
  echo "demo: training on the GPU"
else
  device=(--device cpu --precision fp32)
  model=(--model d2 -b 8 -t 128 --steps 1200 --lr 3e-3 --warmup-steps 100)
  echo "demo: no usable GPU, training on the CPU"
fi

rm -rf "$run"
train_start=$(date +%s)
"$mixgpt" train --dataset "$data" "${model[@]}" "${device[@]}" --eval-interval 300 \
  --checkpoint-interval 600 --keep-checkpoints 2 --seed 1337 -o "$run"
train_seconds=$(( $(date +%s) - train_start ))

"$mixgpt" eval "$run" "${device[0]}" "${device[1]}" --json > "$run/eval.json"
"$mixgpt" sample "$run" "${device[0]}" "${device[1]}" --prompt "And God said" --num-samples 3 \
  --max-new-tokens 48 --temperature 0.8 --top-k 50 --seed 7 > "$run/samples.txt"
"$python" scripts/plot_metrics.py "$run/metrics.jsonl" -o "$run/loss.png" > /dev/null

unigram=$("$python" - "$data" <<'PY'
import json
import os
import sys
import h5py
import numpy as np
folder = sys.argv[1]
if os.path.exists(os.path.join(folder, "index.json")):
    shards = [os.path.join(folder, shard["file"]) for shard in json.load(open(os.path.join(folder, "index.json")))["shards"]]
else:
    shards = [os.path.join(folder, "dataset.h5")]
counts = 0
for shard in shards:
    with h5py.File(shard, "r") as dataset:
        counts = counts + np.bincount(dataset["/train/tokens"][:].astype(np.int64),
                                      minlength=int(dataset.attrs["vocab_size"]))
p = counts[counts > 0] / counts.sum()
print(f"{-(p * np.log(p)).sum():.4f}")
PY
)
read -r val_loss perplexity bpb < <("$python" - "$run/eval.json" <<'PY'
import json
import sys
report = json.load(open(sys.argv[1]))
print(f"{report['mean_loss']:.4f} {report['perplexity']:.2f} {report['bits_per_byte']:.4f}")
PY
)
echo
echo "=== samples (prompt: \"And God said\") ==="
cat "$run/samples.txt"
echo
echo "=== demo results ==="
echo "validation loss      $val_loss nats/token (perplexity $perplexity, $bpb bits per byte)"
echo "unigram entropy      $unigram nats/token (train split token frequencies)"
echo "training time        ${train_seconds} s; whole demo $(( $(date +%s) - start )) s"
echo "dataset, tokenizer   $data/ (index.json, shards), $data/tokenizer.model"
echo "checkpoints          $run/checkpoints/"
echo "metrics, loss plot   $run/metrics.jsonl, $run/loss.png"
echo "evaluation, samples  $run/eval.json, $run/samples.txt"
if ! "$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) - 0.5 else 1)" \
     "$val_loss" "$unigram"; then
  echo "demo: the validation loss is not clearly below the unigram entropy" >&2
  exit 1
fi
