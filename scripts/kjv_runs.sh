# Sourced by the KJV measurement scripts (kjv_speedrun.sh, kjv_optimizer_study.sh,
# kjv_document_mask.sh): one training run that is skipped when it already finished as asked.
#
# kjv_run DIR STEPS OPTION...: `$mixgpt train "${kjv_common[@]}" OPTION... -o DIR` (the caller
# sets kjv_common, the options its runs share), its output in DIR/train.log, OPTION... in
# DIR/options.txt and its user+sys time (GNU time) in DIR/cpu_seconds; nothing when DIR's
# metrics.jsonl has the evaluation of step STEPS and DIR/options.txt holds the same options (so a
# script resumes where it stopped, and a run whose options changed runs again).
kjv_run() {
  local dir=$1 steps=$2
  shift 2
  if [[ -f "$dir/metrics.jsonl" ]] && grep -q "\"type\":\"eval\",\"step\":$steps," "$dir/metrics.jsonl" &&
     [[ "$(cat "$dir/options.txt" 2>/dev/null)" == "$*" ]]; then
    return
  fi
  echo "training $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  printf '%s\n' "$*" > "$dir/options.txt"
  /usr/bin/time -f "%U %S" -o "$dir/cpu_seconds" "$mixgpt" train "${kjv_common[@]}" "$@" -o "$dir" \
    > "$dir/train.log" 2>&1
}

# kjv_seed_run NAME SEED OPTION...: kjv_run into $out/NAME/seedSEED for $steps steps, with the
# caller's "${common[@]}" and --seed SEED before OPTION... (the caller sets out, steps and common).
kjv_seed_run() {
  local name=$1 seed=$2
  shift 2
  kjv_common=("${common[@]}" --seed "$seed")
  kjv_run "$out/$name/seed$seed" "$steps" "$@"
}
