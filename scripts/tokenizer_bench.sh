#!/bin/bash
# Encoding speed of `mixgpt prepare` with GPT-2's tokenizer beside SentencePiece's, in the same
# run, on the same corpus: the King James Bible from Debian (bible-kjv), its chapters shuffled and
# joined three by three into a JSONL file of SIZE_MB megabytes. Each tokenizer encodes it RUNS
# times after one warm-up, alternating; the median MB/s of `prepare`'s encoding phase (reading,
# encoding and writing the dataset, end to end) is reported with the load average. The SentencePiece
# model is the one `prepare --corpus kjv` trains (vocabulary 8192); GPT-2's files are the test
# fixtures (tests/fixtures/gpt2/). Needs build/mixgpt and /usr/bin/python3 with h5py.
#
#   scripts/tokenizer_bench.sh [SIZE_MB=100] [RUNS=3] [THREADS=0 (all cores)]
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${1:-100} runs=${2:-3} threads=${3:-0}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/gpt2"
for file in encoder.json vocab.bpe; do gunzip -c "tests/fixtures/gpt2/$file.gz" > "$work/gpt2/$file"; done
build/mixgpt prepare --corpus kjv --output "$work/sp" >/dev/null 2>&1
build/mixgpt prepare --corpus kjv --tokenizer gpt2 --gpt2-files "$work/gpt2" --val-fraction 0 --output "$work/kjv" >/dev/null 2>&1
/usr/bin/python3 scripts/gpt2_dataset_documents.py "$work/kjv" > "$work/chapters.jsonl"
/usr/bin/python3 - "$work/chapters.jsonl" "$work/corpus.jsonl" "$size_mb" <<'PYTHON'
import json, random, sys
chapters = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
random.seed(1)
size, target = 0, int(sys.argv[3]) * 1_000_000
with open(sys.argv[2], "w", encoding="utf-8") as out:
    while size < target:
        random.shuffle(chapters)
        for i in range(0, len(chapters), 3):
            text = "\n\n".join(chapters[i:i + 3])
            out.write(json.dumps({"text": text}) + "\n")
            size += len(text.encode("utf-8"))
PYTHON

speed() {  # TOKENIZER_ARGUMENTS...: prepare's encoding MB/s
    build/mixgpt prepare --format jsonl "$work/corpus.jsonl" --threads "$threads" --output "$work/out" --force "$@" 2>/dev/null |
        sed -n 's/.*MB at \([0-9.]*\) MB\/s.*/\1/p'
}
sp=(--tokenizer "$work/sp/tokenizer.model")
gpt2=(--tokenizer gpt2 --gpt2-files "$work/gpt2")
speed "${sp[@]}" >/dev/null
speed "${gpt2[@]}" >/dev/null
sp_speeds=() gpt2_speeds=()
for ((run = 0; run < runs; ++run)); do
    sp_speeds+=("$(speed "${sp[@]}")")
    gpt2_speeds+=("$(speed "${gpt2[@]}")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "corpus: $(du -m "$work/corpus.jsonl" | cut -f1) MB of KJV chapters as JSONL; $(nproc) cores, threads ${threads} (0: all)"
echo "load average (1, 5, 15 min) before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| tokenizer | runs (MB/s) | median MB/s |"
echo "| --- | --- | --- |"
echo "| SentencePiece BPE 8192 (prepare --corpus kjv) | ${sp_speeds[*]} | $(median "${sp_speeds[@]}") |"
echo "| GPT-2 BPE 50257 | ${gpt2_speeds[*]} | $(median "${gpt2_speeds[@]}") |"
