#!/usr/bin/env bash
# The KJV comparison of issue 39 on the CPU: the causal mask, the document mask
# (--attention-mask document), document-aligned windows (--align-documents) and both, and sliding
# windows (--window 256 on both layers; --window 128 on the first layer only), 3 seeds each, on
# windows of 1024 tokens (KJV's documents are its chapters: 870 tokens on average, so most windows
# hold a chapter boundary).
#
#   scripts/kjv_document_mask.sh [BUILD] [OUT]      (defaults: build, runs/kjv_document_mask)
#
# Every run is `mixgpt train` on one thread (scripts/kjv_runs.sh: its CPU time recorded, run once
# with the same options, so the script resumes where it stopped).
# scripts/plot_document_mask.py turns OUT into the table.
set -euo pipefail
build="${1:-build}"
out="${2:-runs/kjv_document_mask}"
mixgpt="$build/mixgpt"
data=data/kjv
steps=250
seeds=(1 2 3)
[[ -f "$data/index.json" || -f "$data/dataset.h5" ]] || "$mixgpt" prepare --corpus kjv

# d2 Llama-style (RoPE: positions are relative, so a document seen from mid-window reads as it
# would from its start), one window of 1024 tokens a step.
common=(--dataset "$data" --model d2 --arch llama -b 1 -t 1024 --steps "$steps" --warmup-steps 25 --lr 3e-3
        --eval-interval 25 --eval-batches 16 --threads 1 --device cpu)

source "$(dirname "$0")/kjv_runs.sh"
run() { kjv_seed_run "$@"; }  # run NAME SEED OPTION...: one run into OUT/NAME/seedSEED

for seed in "${seeds[@]}"; do
  run causal "$seed" --attention-mask causal
  run document "$seed" --attention-mask document
  run aligned "$seed" --attention-mask causal --align-documents
  run aligned_document "$seed" --attention-mask document --align-documents
  run window_256 "$seed" --attention-mask causal --window 256
  run window_128_first_layer "$seed" --attention-mask causal --window 128 --window-pattern SL
done
echo "kjv_document_mask: done; /usr/bin/python3 scripts/plot_document_mask.py $out"
