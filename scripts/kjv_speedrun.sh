#!/usr/bin/env bash
# The KJV speedrun of issue 38 on the CPU: what the modern small-GPT recipe (--recipe nanochat's
# options) buys over the GPT-2 block, with AdamW and with Muon, 3 seeds each, each configuration's
# matrix learning rate chosen by a one-seed sweep; then each option's own effect (the recipe with
# one option taken out), and the recipe and the baseline in bf16 and fp8 against fp32.
#
#   scripts/kjv_speedrun.sh [BUILD] [OUT]      (defaults: build, runs/kjv_speedrun)
#   STAGES="sweep main precision ablation"     the stages to run, in this order (default: all)
#
# Every run is `mixgpt train` on one thread (scripts/kjv_runs.sh: its CPU time recorded, run once
# with the same options, so the script resumes where it stopped and a run whose swept rate changed
# runs again). scripts/plot_speedrun.py turns OUT into the tables and figures.
set -euo pipefail
build="${1:-build}"
out="${2:-runs/kjv_speedrun}"
stages="${STAGES:-sweep main precision ablation}"
mixgpt="$build/mixgpt"
data=data/kjv
steps=250
seeds=(1 2 3)
[[ -f "$data/index.json" || -f "$data/dataset.h5" ]] || "$mixgpt" prepare --corpus kjv

# d2 (2 layers, 2 heads, width 128) on 250 steps of 8 x 128 tokens: about two minutes a run.
common=(--dataset "$data" --model d2 -b 8 -t 128 --steps "$steps" --warmup-steps 25 --eval-interval 25
        --eval-batches 16 --threads 1 --device cpu)
# The recipe's options written out (--recipe nanochat), so that the ablation can leave one out.
recipe_options=(--arch llama --tie-embeddings false --mlp relu2 --norm-weights false --embedding-norm --qk-norm
                --logit-softcap 15 --zero-init proj,head --init fan-in)
# nanochat's AdamW rates of the embeddings and the head beside Muon, scaled by (768 / width)^0.5.
muon_groups=(--optimizer muon --embedding-lr 0.49 --head-lr 0.0098)
sweep_baseline=(1e-3 3e-3 1e-2)
sweep_recipe=(1e-3 3e-3 1e-2 3e-2)
sweep_muon=(0.01 0.02 0.04)

source "$(dirname "$0")/kjv_runs.sh"
run() { kjv_seed_run "$@"; }  # run NAME SEED OPTION...: one run into OUT/NAME/seedSEED

# The learning rate of the configuration's best one-seed run (lowest final validation loss).
best_rate() {
  /usr/bin/python3 - "$out" "$1" <<'EOF'
import json, pathlib, sys
out, prefix = pathlib.Path(sys.argv[1]), sys.argv[2]
def final(path):
    evals = [json.loads(l) for l in open(path) if '"type":"eval"' in l]
    return evals[-1]["val_loss"]
runs = {d.name[len(prefix) + 1:]: final(d / "seed1" / "metrics.jsonl") for d in out.glob(prefix + "_lr*")}
print(min(runs, key=runs.get)[2:])
EOF
}

for stage in $stages; do
  case $stage in
    sweep)
      for lr in "${sweep_baseline[@]}"; do run "sweep_baseline_lr$lr" 1 --arch gpt2 --lr "$lr"; done
      for lr in "${sweep_recipe[@]}"; do run "sweep_recipe_adamw_lr$lr" 1 "${recipe_options[@]}" --lr "$lr"; done
      for lr in "${sweep_muon[@]}"; do
        run "sweep_recipe_muon_lr$lr" 1 "${recipe_options[@]}" "${muon_groups[@]}" --muon-lr "$lr"
      done
      ;;
    main | precision | ablation)
      baseline_lr=$(best_rate sweep_baseline)
      recipe_lr=$(best_rate sweep_recipe_adamw)
      muon_lr=$(best_rate sweep_recipe_muon)
      baseline=(--arch gpt2 --lr "$baseline_lr")
      muon=("${muon_groups[@]}" --muon-lr "$muon_lr")
      for seed in "${seeds[@]}"; do
        case $stage in
          main)
            run baseline "$seed" "${baseline[@]}"
            run recipe_adamw "$seed" "${recipe_options[@]}" --lr "$recipe_lr"
            run recipe_muon "$seed" "${recipe_options[@]}" "${muon[@]}"
            ;;
          precision)
            for precision in bf16 fp8; do
              run "baseline_$precision" "$seed" "${baseline[@]}" --precision "$precision"
              run "recipe_muon_$precision" "$seed" "${recipe_options[@]}" "${muon[@]}" --precision "$precision"
            done
            ;;
          ablation)
            # The recipe with Muon, one option taken out (its family default put back).
            for option in qk-norm embedding-norm logit-softcap mlp norm-weights zero-init init; do
              kept=()
              skip=0
              for word in "${recipe_options[@]}"; do
                if ((skip)); then skip=0; continue; fi
                case $word in
                  --"$option") [[ $option == qk-norm || $option == embedding-norm ]] || skip=1; continue ;;
                esac
                kept+=("$word")
              done
              run "ablation_no_$option" "$seed" "${kept[@]}" "${muon[@]}"
            done
            ;;
        esac
      done
      ;;
    *)
      echo "kjv_speedrun: unknown stage '$stage' (sweep, main, precision, ablation)" >&2
      exit 2
      ;;
  esac
done
echo "kjv_speedrun: done; scripts/plot_speedrun.py $out"
