#!/usr/bin/python3
"""The folder structure of the sources: derives the include graph between top-level folders from
every `#include "folder/..."` of the C++/CUDA sources, checks it against the layering below, and
fails (exit 1, one line per offence) on an include of a folder that is not below the includer, on
a cycle, or on a source file longer than --max-lines (700). `--dot` prints the graph (Graphviz).

The layering, lowest first; a folder may include the folders listed for it (and itself):
"""
import argparse
import collections
import os
import re
import sys

# Product code: each folder and what it may include.
LAYERS = {
    "core": [],
    "kernels": ["core"],
    "tokenizer": ["core"],
    "model": ["core", "kernels"],
    "dist": ["core", "kernels", "model"],
    "eval": ["core", "kernels", "model", "tokenizer"],
    "train": ["core", "kernels", "model", "tokenizer", "dist", "eval"],
    "study": ["core", "kernels", "model", "tokenizer", "dist", "eval", "train"],
    "interop": ["core", "kernels", "model", "tokenizer", "eval"],
    "cli": ["core", "kernels", "model", "tokenizer", "dist", "eval", "train", "study", "interop"],
}
PRODUCT = list(LAYERS)
# Tools above the product: they may include any product folder; tests also the benchmarks (the
# kernel lab is tested), and nothing includes tests.
LAYERS["bench"] = PRODUCT
LAYERS["fuzz"] = PRODUCT
LAYERS["tests"] = PRODUCT + ["bench"]
# Backends never include each other: kernels/cpu and kernels/cuda see only kernels/ itself.
SIBLINGS_APART = [("kernels/cpu", "kernels/cuda")]

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

__doc__ += "\n".join(f"  {folder:10s} {' '.join(allowed) or '-'}" for folder, allowed in LAYERS.items())


def sources(root):
    for folder in sorted(LAYERS):
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    path = os.path.join(directory, name)
                    yield os.path.relpath(path, root)


def find_cycle(graph):
    """A cycle of folders (list) in {folder: set(folders)}, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--max-lines", type=int, default=700)
    parser.add_argument("--dot", action="store_true", help="print the folder graph in Graphviz's dot language")
    args = parser.parse_args()

    offences = []
    edges = collections.defaultdict(collections.Counter)  # folder -> {included folder: count}
    for path in sources(args.root):
        with open(os.path.join(args.root, path), encoding="utf-8", errors="replace") as file:
            text = file.read()
        lines = text.count("\n")
        if lines > args.max_lines:
            offences.append(f"{path}: {lines} lines, more than {args.max_lines}")
        folder = path.split(os.sep)[0]
        for included in INCLUDE.findall(text):
            if "/" not in included:
                continue
            target = included.split("/")[0]
            if target not in LAYERS or target == folder:
                for a, b in SIBLINGS_APART:
                    for mine, other in ((a, b), (b, a)):
                        if path.startswith(mine + "/") and included.startswith(other + "/"):
                            offences.append(f"{path}: includes {included} ({mine} and {other} stay apart)")
                continue
            edges[folder][target] += 1
            if target not in LAYERS[folder]:
                offences.append(f"{path}: includes {included} ({folder}/ may include "
                                f"{', '.join(LAYERS[folder]) or 'nothing outside itself'})")
    cycle = find_cycle({folder: set(targets) for folder, targets in edges.items()})
    if cycle:
        offences.append("include cycle between folders: " + " -> ".join(cycle))

    if args.dot:
        print("digraph folders {\n  rankdir=BT;")
        for folder, targets in sorted(edges.items()):
            for target, count in sorted(targets.items()):
                print(f'  "{folder}" -> "{target}" [label="{count}"];')
        print("}")
    for offence in offences:
        print(f"check_structure: {offence}", file=sys.stderr)
    if offences:
        sys.exit(1)
    if not args.dot:
        count = sum(len(targets) for targets in edges.values())
        print(f"check_structure: {count} folder dependencies, all downward, no cycle; "
              f"no source over {args.max_lines} lines")


if __name__ == "__main__":
    main()
