#!/usr/bin/env bash
# The KJV optimizer study of issue 37 on the CPU: AdamW against Muon (bf16 Newton-Schulz) and Muon
# with fp32 Newton-Schulz, 3 seeds each, on a Llama-style model of 4 layers and width 256; each
# optimizer's learning rate chosen first by a one-seed sweep (AdamW's --lr, then Muon's --muon-lr
# with the embeddings at AdamW's best rate, then Muon's --embedding-lr around it (its best is
# --embedding-lr's default ratio, train/train_options.h), then an untied head's --head-lr, reported
# only: the study's model ties its head to the embeddings).
#
#   scripts/kjv_optimizer_study.sh [BUILD] [OUT]      (defaults: build, runs/kjv_optimizer_study)
#
# The sweep's runs are `mixgpt train` on one thread (scripts/kjv_runs.sh: run once with the same
# options), and `mixgpt study` resumes its own runs, so the script resumes where it stopped. The study's report.md and report.json are in OUT/study.
set -euo pipefail
build="${1:-build}"
out="${2:-runs/kjv_optimizer_study}"
mixgpt="$build/mixgpt"
data=data/kjv
steps=250
[[ -f "$data/index.json" || -f "$data/dataset.h5" ]] || "$mixgpt" prepare --corpus kjv

# 4 layers, 4 heads, width 256 (5.3M parameters) on 250 steps of 8 x 128 tokens: about 0.7 s a
# step on one thread, so three to four minutes a run.
model=(--model d6 --n-layer 4 --n-head 4 --n-embd 256 --arch llama)
common=("${model[@]}" --dataset "$data" -b 8 -t 128 --steps "$steps" --warmup-steps 25
        --eval-interval 25 --eval-batches 16 --threads 1 --device cpu --seed 1)
sweep_adamw=(3e-4 1e-3 3e-3 1e-2)
sweep_muon=(0.01 0.02 0.04)
sweep_embedding=(3e-4 3e-3 1e-2 3e-2 1e-1)
sweep_head=(3e-4 1e-3 3e-3 1e-2)

source "$(dirname "$0")/kjv_runs.sh"
kjv_common=("${common[@]}")

# sweep_run NAME OPTION...: one training run into OUT/sweep/NAME (kjv_runs.sh).
sweep_run() {
  local name=$1
  shift
  kjv_run "$out/sweep/$name" "$steps" "$@"
}

# The rate of the sweep's best run named PREFIX_RATE (lowest final validation loss).
best_rate() {
  /usr/bin/python3 - "$out/sweep" "$1" <<'PY'
import json, pathlib, sys
sweep, prefix = pathlib.Path(sys.argv[1]), sys.argv[2]
def final(path):
    return [json.loads(l) for l in open(path) if '"type":"eval"' in l][-1]["val_loss"]
runs = {d.name[len(prefix) + 1:]: final(d / "metrics.jsonl") for d in sweep.glob(prefix + "_*")}
for rate, loss in sorted(runs.items(), key=lambda item: float(item[0])):
    print(f"  {prefix} {rate}: {loss:.4f}", file=sys.stderr)
print(min(runs, key=runs.get))
PY
}

for lr in "${sweep_adamw[@]}"; do sweep_run "adamw_$lr" --lr "$lr"; done
adamw_lr=$(best_rate adamw)
for lr in "${sweep_muon[@]}"; do
  sweep_run "muon_$lr" --optimizer muon --lr "$adamw_lr" --muon-lr "$lr" --embedding-lr "$adamw_lr"
done
muon_lr=$(best_rate muon)
# Muon's AdamW group of the (tied) embeddings: its rate around AdamW's, the others held.
for lr in "${sweep_embedding[@]}"; do
  sweep_run "embedding_$lr" --optimizer muon --lr "$adamw_lr" --muon-lr "$muon_lr" --embedding-lr "$lr"
done
embedding_lr=$(best_rate embedding)
# An untied head's rate, with the embeddings at their best (not used by the study's tied model).
for lr in "${sweep_head[@]}"; do
  sweep_run "head_$lr" --optimizer muon --tie-embeddings false --lr "$adamw_lr" --muon-lr "$muon_lr" \
    --embedding-lr "$embedding_lr" --head-lr "$lr"
done
head_lr=$(best_rate head)
echo "kjv_optimizer_study: AdamW at $adamw_lr; Muon at $muon_lr, embeddings at $embedding_lr" \
  "(an untied head at $head_lr)"

"$mixgpt" study "${model[@]}" --dataset "$data" -b 8 -t 128 --steps "$steps" --warmup-steps 25 \
  --eval-interval 25 --eval-batches 16 --threads 1 --device cpu --seed 1 --seeds 3 \
  --optimizers adamw,muon,muon-fp32 --lr "$adamw_lr" --muon-lr "$muon_lr" --embedding-lr "$embedding_lr" \
  -o "$out/study"
echo "kjv_optimizer_study: done; report in $out/study/report.md"
