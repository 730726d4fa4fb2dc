#!/usr/bin/python3
"""The KJV document-mask comparison's table from the runs scripts/kjv_document_mask.sh wrote.

    scripts/plot_document_mask.py runs/kjv_document_mask [-o DIR]

Writes DIR/report.md: each configuration's final validation loss as the mean and spread (min-max)
over its seeds, its gap to the causal mask's mean, and CPU-seconds per step (GNU time's user+sys,
evaluations included, spread over the steps). DIR defaults to the runs folder. The validation loss
is measured under each run's own mask: the document mask's runs are scored without the context of
the chapter before, as they were trained.
"""
import argparse
import pathlib

from plot_speedrun import gap_table, load_config, spread

CONFIGURATIONS = ["causal", "document", "aligned", "aligned_document", "window_256", "window_128_first_layer"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=pathlib.Path)
    parser.add_argument("-o", "--output", type=pathlib.Path)
    args = parser.parse_args()
    root, output = args.runs, args.output or args.runs
    output.mkdir(parents=True, exist_ok=True)
    report = ["# KJV: causal mask, document mask, document-aligned windows (scripts/kjv_document_mask.sh)", "",
              "## Final validation loss against the causal mask's", ""]
    report += gap_table(root, CONFIGURATIONS, lambda name: "causal", "configuration")
    report += ["", "## CPU time", "", "| configuration | CPU s/step |", "|---|---|"]
    for name in CONFIGURATIONS:
        runs = load_config(root, name)
        if runs:
            report.append(f"| {name} | {spread([r['cpu'] / r['steps'] for r in runs], 3)} |")
    (output / "report.md").write_text("\n".join(report) + "\n")
    print("\n".join(report))


if __name__ == "__main__":
    main()
