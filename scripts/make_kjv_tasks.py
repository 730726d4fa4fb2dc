#!/usr/bin/env -S /usr/bin/python3
"""Builds multiple-choice task files from the King James Bible (Debian's bible-kjv), deterministically.

    scripts/make_kjv_tasks.py fixture -o tests/fixtures/multiple_choice
    scripts/make_kjv_tasks.py next-verse --dataset data/kjv -o data/kjv/next_verse.jsonl

fixture: the hand-made test set of tests/test_multiple_choice_reference.cpp, the same examples in
both formats (hellaswag.jsonl: HellaSwag's "ctx", "endings", "label", "ind"; mc.jsonl: "context",
"choices", "label", "id"), plus mc_extra.jsonl with 2, 3, 5 and 6 choices. Each example is a verse
cut in two: the first part is the context, the second the right ending, and three other verses'
second parts the wrong ones. Deliberate cases: ties (two identical endings, the label on either),
empty contexts, endings of one common word, contexts of several verses (longer than a small
model's window), and one with non-ASCII text.

next-verse: "which verse comes next?": the context is up to three consecutive verses as the corpus
holds them ("12 And ...\\n13 And ...\\n14"), the right choice the next verse's text, the three
others verses of similar length (within 25% in characters) from other chapters. Chance is 25%.
With --dataset (a dataset folder, or a dataset.h5 made before shards), only chapters of that
prepared dataset's validation split are used (decoded with its SentencePiece tokenizer), so a model trained on the train split has not seen them. mc format.
"""
import argparse
import json
import os
import random
import subprocess
import sys

KJV_COMMAND = ["bible", "-l0", "gen1:1-rev22:21"]  # as tokenizer/kjv_corpus.h runs it


def kjv_chapters():
    """[(heading, [(number, text), ...]), ...] in the Bible's order."""
    try:
        output = subprocess.run(KJV_COMMAND, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("make_kjv_tasks: `bible` not found (install bible-kjv: scripts/setup.sh)")
    chapters = []
    for line in output.splitlines():
        if not line.strip():
            continue
        if line.startswith("  "):
            number, _, text = line.strip().partition(" ")
            chapters[-1][1].append((int(number), text))
        else:
            chapters.append((line.strip(), []))
    return chapters


def split_verse(text):
    """(first part, second part) at the word boundary nearest the middle."""
    words = text.split(" ")
    cut = max(1, min(len(words) - 1, len(words) // 2))
    return " ".join(words[:cut]), " ".join(words[cut:])


def write_jsonl(path, records):
    with open(path, "w", encoding="utf-8") as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")


def fixture_examples(chapters, rng):
    """[(context, endings, label)]: 60 ordinary and deliberate examples."""
    verses = [text for _, chapter in chapters for _, text in chapter if len(text.split(" ")) >= 6]
    examples = []

    def ordinary(context_override=None, right=None):
        first, second = split_verse(rng.choice(verses))
        wrong = [split_verse(rng.choice(verses))[1] for _ in range(3)]
        label = rng.randrange(4)
        endings = wrong[:label] + [right if right is not None else second] + wrong[label:]
        return [first if context_override is None else context_override, endings, label]

    for _ in range(36):
        examples.append(ordinary())
    for label, twin in [(1, 3), (3, 1), (0, 2), (2, 0)]:  # ties: endings[label] == endings[twin]
        context, endings, _ = ordinary()
        endings[twin] = endings[label]
        examples.append([context, endings, label])
    for _ in range(4):  # empty contexts
        examples.append(ordinary(context_override=""))
    for word in ["the", "and", "of", "LORD"]:  # one common word as the right ending
        context, endings, label = ordinary(right=word)
        endings = [word if i == label else e.split(" ")[0] for i, e in enumerate(endings)]
        examples.append([context, endings, label])
    for _ in range(8):  # several verses of context: longer than a small model's window
        start = rng.randrange(len(verses) - 6)
        context = " ".join(verses[start:start + 5]) + " " + split_verse(verses[start + 5])[0]
        examples.append(ordinary(context_override=context, right=split_verse(verses[start + 5])[1]))
    examples.append(ordinary(context_override="Æsop’s fable — “the fox and the grapes”, naïvely retold:",
                             right="and the fox said, Behold, they are sour."))
    rng.shuffle(examples)
    return examples


def write_fixture(output):
    rng = random.Random(29)
    chapters = kjv_chapters()
    examples = fixture_examples(chapters, rng)
    os.makedirs(output, exist_ok=True)
    write_jsonl(os.path.join(output, "hellaswag.jsonl"),
                [{"ind": i, "activity_label": "KJV", "ctx": context, "endings": endings, "label": label,
                  "split": "fixture"} for i, (context, endings, label) in enumerate(examples)])
    write_jsonl(os.path.join(output, "mc.jsonl"),
                [{"id": f"kjv-{i}", "context": context, "choices": endings, "label": label}
                 for i, (context, endings, label) in enumerate(examples)])
    verses = [text for _, chapter in chapters for _, text in chapter if len(text.split(" ")) >= 6]
    extra = []
    for count in [2, 3, 5, 6, 2, 3, 5, 6]:
        first, second = split_verse(rng.choice(verses))
        choices = [split_verse(rng.choice(verses))[1] for _ in range(count - 1)]
        label = rng.randrange(count)
        extra.append({"id": f"extra-{len(extra)}", "context": first,
                      "choices": choices[:label] + [second] + choices[label:], "label": label})
    write_jsonl(os.path.join(output, "mc_extra.jsonl"), extra)
    print(f"{output}: {len(examples)} examples in hellaswag.jsonl and mc.jsonl, {len(extra)} in mc_extra.jsonl")


def validation_headings(dataset):
    """The chapter headings ("Genesis 1") of a prepared dataset's validation documents: a dataset
    folder (index.json and its shards) or a dataset.h5 made before shards."""
    import h5py
    import sentencepiece
    from inspect_dataset import load_dataset
    folder, index = load_dataset(dataset)
    tokenizer = index["tokenizer"]
    if tokenizer["kind"] != "sentencepiece":
        sys.exit(f"make_kjv_tasks: {dataset}: a {tokenizer['kind']} dataset; --dataset takes a SentencePiece one")
    processor = sentencepiece.SentencePieceProcessor(model_file=os.path.join(folder, tokenizer["files"][0]))
    headings = set()
    for shard in index["shards"]:
        with h5py.File(os.path.join(folder, shard["file"]), "r") as data:
            tokens = data["/val/tokens"][:]
            offsets = data["/val/doc_offsets"][:]
        for begin, end in zip(offsets[:-1], offsets[1:]):
            headings.add(processor.decode(tokens[begin:end - 1].tolist()).split("\n", 1)[0].strip())
    return headings


def write_next_verse(output, dataset, count, seed):
    rng = random.Random(seed)
    chapters = kjv_chapters()
    if dataset:
        held_out = validation_headings(dataset)
        chapters = [chapter for chapter in chapters if chapter[0] in held_out]
        if not chapters:
            sys.exit(f"make_kjv_tasks: no chapter of {dataset}'s validation split is a KJV chapter")
    targets = [(c, v) for c, (_, verses) in enumerate(chapters) for v in range(1, len(verses))]
    rng.shuffle(targets)
    pool = [(c, text) for c, (_, verses) in enumerate(chapters) for _, text in verses]
    records = []
    for c, v in targets[:count]:
        verses = chapters[c][1]
        previous = verses[max(0, v - 3):v]
        number, right = verses[v]
        context = "\n".join(f"{n} {text}" for n, text in previous) + f"\n{number}"
        similar = [text for other, text in pool
                   if other != c and 0.75 * len(right) <= len(text) <= 1.25 * len(right) and text != right]
        candidates = similar if len(set(similar)) >= 3 else [text for other, text in pool if other != c]
        wrong = []
        while len(wrong) < 3:
            text = rng.choice(candidates)
            if text not in wrong and text != right:
                wrong.append(text)
        label = rng.randrange(4)
        records.append({"id": f"{chapters[c][0]}:{number}", "context": context,
                        "choices": wrong[:label] + [right] + wrong[label:], "label": label})
    write_jsonl(output, records)
    print(f"{output}: {len(records)} examples from {len(chapters)} chapters, chance 25%")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fixture = commands.add_parser("fixture", help="the test set, in both formats")
    fixture.add_argument("-o", "--output", default="tests/fixtures/multiple_choice", help="directory")
    next_verse = commands.add_parser("next-verse", help="which verse comes next, among four")
    next_verse.add_argument("-o", "--output", required=True, help="JSON Lines file to write")
    next_verse.add_argument("--dataset", help="only chapters of this prepared dataset's validation split")
    next_verse.add_argument("--examples", type=int, default=1000, help="examples (default 1000)")
    next_verse.add_argument("--seed", type=int, default=1, help="seed (default 1)")
    arguments = parser.parse_args()
    if arguments.command == "fixture":
        write_fixture(arguments.output)
    else:
        write_next_verse(arguments.output, arguments.dataset, arguments.examples, arguments.seed)


if __name__ == "__main__":
    main()
