#!/usr/bin/env -S /usr/bin/python3
"""Model families side by side: the runs of several `mixgpt study` reports (e.g. one per --arch)
in one loss plot, and a Markdown table of their final validation losses on stdout.

    scripts/plot_family_comparison.py --output loss_curves.png gpt2=runs/gpt2/report.json \\
        llama=runs/llama/report.json

Each run is labelled FAMILY/PRECISION; within a family, "vs fp32" is the gap to that family's
fp32 run, and "vs LABEL fp32" compares with the first family's fp32 run.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_metrics import as_number, moving_average, read_metrics  # noqa: E402

STYLES = ["-", "--", ":", "-."]


def read_study(argument):
    label, separator, path = argument.partition("=")
    if not separator or not label or not path:
        sys.exit(f"plot_family_comparison: '{argument}': expected LABEL=REPORT.json")
    try:
        with open(path, encoding="utf-8") as file:
            return label, os.path.dirname(os.path.abspath(path)), json.load(file)
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"plot_family_comparison: {path}: {error}")


def fp32_loss(report):
    return next((run["final_val_loss"] for run in report["runs"] if run["name"] == "fp32"), None)


def plot(studies, output):
    figure, (train_axis, val_axis) = plt.subplots(1, 2, figsize=(13, 5.5))
    for family_index, (label, directory, report) in enumerate(studies):
        for run_index, run in enumerate(report["runs"]):
            train, evaluation = read_metrics(os.path.join(directory, run["directory"], "metrics.jsonl"))
            name = f"{label}/{run['name']}"
            style = dict(color=f"C{family_index}", linestyle=STYLES[run_index % len(STYLES)])
            steps = sorted(train)
            window = max(1, len(steps) // 20)
            train_axis.plot(steps, moving_average([as_number(train[s]["loss"]) for s in steps], window),
                            label=f"{name} ({window}-step mean)", **style)
            points = sorted(evaluation)
            val_axis.plot(points, [as_number(evaluation[s]["val_loss"]) for s in points], marker="o",
                          markersize=3, label=name, **style)
    for axis, title in ((train_axis, "training loss"), (val_axis, "validation loss")):
        axis.set_xlabel("step")
        axis.set_ylabel("nats/token")
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    first = studies[0][2]
    shape = first["model"]
    figure.suptitle(f"{shape['preset']} ({shape['n_layer']} layers, {shape['n_head']} heads, width "
                    f"{shape['n_embd']}), B={first['batch_size']}, T={first['seq_len']}, "
                    f"{first['tokens_per_run']:,} tokens per run, seed {first['seed']}")
    figure.tight_layout()
    figure.savefig(output, dpi=110)


def table(studies):
    first_label, _, first = studies[0]
    baseline = fp32_loss(first)
    print(f"| run | final val loss | vs its family's fp32 | vs {first_label} fp32 | tokens/s (training) |")
    print("|---|---|---|---|---|")
    for label, _, report in studies:
        family_fp32 = fp32_loss(report)
        for run in report["runs"]:
            loss = run["final_val_loss"]
            own = f"{100 * (loss / family_fp32 - 1):+.2f}%" if family_fp32 else "-"
            other = f"{100 * (loss / baseline - 1):+.2f}%" if baseline else "-"
            print(f"| {label}/{run['name']} | {loss:.4f} | {own} | {other} | "
                  f"{run['train_tokens_per_second']:.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True, help="the PNG written")
    parser.add_argument("studies", nargs="+", help="LABEL=report.json of `mixgpt study`")
    arguments = parser.parse_args()
    studies = [read_study(argument) for argument in arguments.studies]
    plot(studies, arguments.output)
    table(studies)


if __name__ == "__main__":
    main()
