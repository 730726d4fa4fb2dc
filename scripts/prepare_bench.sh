#!/usr/bin/env bash
# prepare at scale (a benchmark, not a test): builds JSON-lines corpora of about 0.3 GB and 1.2 GB
# from text Debian ships (the King James Bible, /usr/share/doc, the common licenses: paragraphs
# shuffled and recombined into documents), compressed with zstd, then measures `mixgpt prepare`:
# MB/s of text (end to end, tokenizer training included, and the encoding alone), peak RSS and
# disk use, for a SentencePiece prepare at both sizes, an --append, a run killed with kill -9
# then --resume'd (its shards compared with the uninterrupted run's, byte for byte), and GPT-2's
# tokenizer at both sizes.
#
#   scripts/prepare_bench.sh [BUILD] [WORK] [REPORT]
#     BUILD   folder of the mixgpt binary (default build)
#     WORK    scratch folder, about 7 GB free needed (default /tmp/mixgpt_prepare_bench)
#     REPORT  the Markdown report written (default bench/results/<date>-prepare-bench.md)
#   THREADS=2 (encoding threads); GPT2_FILES=DIR (encoder.json + vocab.bpe) for the GPT-2 rows,
#   by default the test fixtures (tests/fixtures/gpt2/*.gz) unpacked into WORK/gpt2.
set -euo pipefail

build="${1:-build}"
work="${2:-/tmp/mixgpt_prepare_bench}"
report="${3:-bench/results/$(date +%Y-%m-%d)-prepare-bench.md}"
threads="${THREADS:-2}"
mixgpt="$(realpath "$build/mixgpt")"
python=/usr/bin/python3
repository="$(realpath "$(dirname "$0")/..")"
mkdir -p "$work" "$(dirname "$report")"
report="$(realpath "$report")"
gpt2_files="${GPT2_FILES:-$work/gpt2}"
if [[ -z "${GPT2_FILES:-}" ]]; then
  mkdir -p "$gpt2_files"
  for file in encoder.json vocab.bpe; do gunzip -c "$repository/tests/fixtures/gpt2/$file.gz" > "$gpt2_files/$file"; done
fi

# ---- corpora ----
make_corpus() {  # $1 output .jsonl.zst, $2 megabytes of text, $3 seed
  [[ -f "$1" ]] && return
  bible -l0 gen1:1-rev22:21 > "$work/kjv.txt"
  "$python" - "$work/kjv.txt" "$2" "$3" <<'PY' | zstd -q -3 -T2 -o "$1.partial"
import glob, gzip, json, random, sys
kjv, megabytes, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
paragraphs = [p for p in open(kjv, encoding="utf-8").read().split("\n\n") if p.strip()]
sources = glob.glob("/usr/share/doc/*/copyright") + glob.glob("/usr/share/common-licenses/*") + \
          glob.glob("/usr/share/doc/*/*.txt") + glob.glob("/usr/share/doc/*/changelog*.gz")
for path in sorted(sources):
    try:
        raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
        paragraphs += [p for p in raw.decode("utf-8").split("\n\n") if p.strip()]
    except (OSError, UnicodeDecodeError):
        pass
random.seed(seed)
out, written, target = sys.stdout, 0, megabytes * 1_000_000
while written < target:
    text = "\n\n".join(random.choice(paragraphs) for _ in range(random.randint(2, 24)))
    out.write(json.dumps({"id": written, "text": text}, ensure_ascii=False) + "\n")
    written += len(text.encode("utf-8"))
print(f"corpus: {len(paragraphs)} distinct paragraphs recombined", file=sys.stderr)
PY
  mv "$1.partial" "$1"
}
small="$work/corpus_0.3gb.jsonl.zst"
large="$work/corpus_1.2gb.jsonl.zst"
extra="$work/corpus_extra_0.3gb.jsonl.zst"
make_corpus "$small" 300 1
make_corpus "$large" 1200 2
make_corpus "$extra" 300 3
text_mb() { zstd -dc "$1" | "$python" -c "
import json, sys
print(round(sum(len(json.loads(line)['text'].encode()) for line in sys.stdin) / 1e6, 1))"; }
small_mb=$(text_mb "$small"); large_mb=$(text_mb "$large"); extra_mb=$(text_mb "$extra")

# ---- measured runs: "wall_seconds peak_rss_kb cpu_seconds" of one command, its log kept ----
timed() {  # $1 name, then the command
  local name="$1"
  shift
  /usr/bin/time -f "%e %M %U %S" -o "$work/$name.time" "$@" > "$work/$name.out" 2> "$work/$name.err" || {
    echo "prepare_bench: $name failed:" >&2
    tail -3 "$work/$name.err" >&2
    exit 1
  }
  read -r wall rss user system < "$work/$name.time"
  echo "$wall $rss $("$python" -c "print(round($user + $system, 1))")"
}
encode_rate() { grep -o 'encoding [0-9.]* s ([0-9.]* MB at [0-9.]* MB/s' "$work/$1.out" | grep -o '[0-9.]* MB/s' || echo "-"; }
row() {  # name text_mb "seconds rss_kb cpu_seconds" dataset_folder note
  local seconds rss cpu
  read -r seconds rss cpu <<< "$3"
  printf '| %s | %s | %s | %.1f | %s | %s | %.1f | %.0f | %s | %s |\n' "$1" "$2" "$seconds" \
    "$("$python" -c "print($2 / $seconds)")" "$(encode_rate "$1")" "$cpu" \
    "$("$python" -c "print($2 / $cpu)")" "$((rss / 1024))" "$(du -sm "$4" | cut -f1)" "$5" >> "$work/rows.md"
}
: > "$work/rows.md"
rm -rf "$work"/data_*
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

common=(--threads "$threads" --jsonl-key text)
r=$(timed sp_small "$mixgpt" prepare --output "$work/data_small" "${common[@]}" "$small")
row sp_small "$small_mb" "$r" "$work/data_small" "SentencePiece BPE 8192, tokenizer trained on 100 MB"
r=$(timed sp_large "$mixgpt" prepare --output "$work/data_large" "${common[@]}" "$large")
row sp_large "$large_mb" "$r" "$work/data_large" "same, 4x the corpus"
# kill -9 once the first shard is complete, then --resume, with sp_large's tokenizer: the shards must
# be sp_large's, byte for byte
tokenizer=(--tokenizer "$work/data_large/tokenizer.model")
start=$(date +%s.%N)
"$mixgpt" prepare --output "$work/data_killed" "${common[@]}" "${tokenizer[@]}" "$large" \
  > "$work/killed.out" 2> "$work/killed.err" &
pid=$!
until [[ -f "$work/data_killed/shard-000000.h5" ]]; do sleep 0.2; done
sleep 5  # into the second shard
kill -9 "$pid"
wait "$pid" || true
killed_seconds=$("$python" -c "import time; print(round(time.time() - $start, 1))")
r=$(timed resume "$mixgpt" prepare --output "$work/data_killed" --resume "${common[@]}" "${tokenizer[@]}" "$large")
row resume "$large_mb" "$r" "$work/data_killed" "after kill -9 at ${killed_seconds} s (1 shard complete)"
identical="no"
if diff <(cd "$work/data_large" && sha256sum shard-*.h5) <(cd "$work/data_killed" && sha256sum shard-*.h5) > /dev/null
then identical="yes"; fi
encode_s=$(grep -o 'encoding [0-9.]* s' "$work/sp_large.out" | grep -o '[0-9.]*')
resume_s=$(cut -d' ' -f1 "$work/resume.time")
shard_s=$("$python" -c "
import json; index = json.load(open('$work/data_large/index.json'))
print(round($encode_s * index['shards'][0]['train']['tokens'] / sum(s['train']['tokens'] for s in index['shards']), 1))")

r=$(timed append "$mixgpt" prepare --output "$work/data_large" --append "${common[@]}" "$extra")
row append "$extra_mb" "$r" "$work/data_large" "--append onto sp_large (disk: the grown folder)"

r=$(timed gpt2_small "$mixgpt" prepare --output "$work/data_gpt2_small" "${common[@]}" --tokenizer gpt2 \
      --gpt2-files "$gpt2_files" "$small")
row gpt2_small "$small_mb" "$r" "$work/data_gpt2_small" "GPT-2 byte-level BPE 50257 (no training)"
r=$(timed gpt2_large "$mixgpt" prepare --output "$work/data_gpt2_large" "${common[@]}" --tokenizer gpt2 \
      --gpt2-files "$gpt2_files" "$large")
row gpt2_large "$large_mb" "$r" "$work/data_gpt2_large" "same, 4x the corpus"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# prepare at scale ($(date +%Y-%m-%d), $(nproc) cores, --threads $threads)"
  echo
  echo "\`scripts/prepare_bench.sh\`; mixgpt $("$mixgpt" info 2>/dev/null | head -1 || true)."
  echo "Corpora: JSON lines of recombined Debian text (KJV, /usr/share/doc, licenses), zstd -3;"
  echo "MB = text bytes of the documents. Load average (1, 5, 15 min) before: $load_before; after: $load_after."
  echo "CPU s = user + system seconds of the process: on a shared machine, MB per CPU-second times the"
  echo "cores the run may use is what it does alone, where wall-clock rates only show the contention."
  echo
  echo "| run | text MB | wall s | end-to-end MB/s | encoding MB/s | CPU s | MB per CPU-s | peak RSS MiB | disk MiB | note |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  cat "$work/rows.md"
  echo
  echo "Resume: killed at ${killed_seconds} s (wall) with one complete shard; --resume took ${resume_s} s; sp_large"
  echo "encoded the same corpus in ${encode_s} s, one shard being about ${shard_s} s. The work redone is the killed"
  echo "run's progress after its last shard (its last progress lines: \`$work/killed.err\`) plus the resume's"
  echo "skipping of the complete shards' text (read and dropped, not encoded: its first progress lines, \`$work/resume.err\`)."
  echo "Shards byte-identical to sp_large's: ${identical}."
  echo
  echo "GPT-2 rows: files from ${GPT2_FILES:-tests/fixtures/gpt2/ (unpacked)}."
} > "$report"
cat "$report"
