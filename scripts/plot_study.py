#!/usr/bin/env -S /usr/bin/python3
"""Figures of a precision study (report.json from `mixgpt study`), written beside the report.

    loss_curves.png   training loss (moving mean) and validation loss of every run, fp32 in black
    val_gap.png       validation loss minus the fp32 run's, at each evaluation
    throughput.png    tokens/s per run, from the training and from `mixgpt bench` (hatched: emulated)
    memory.png        peak memory per run (training)

    scripts/plot_study.py runs/study/report.json
"""
import argparse
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_metrics import as_number, moving_average, read_metrics  # noqa: E402


def colour(name, index):
    return "black" if name == "fp32" else f"C{index}"


def plot_losses(report, directory, output):
    figure, axis = plt.subplots(figsize=(9, 5.5))
    for index, run in enumerate(report["runs"]):
        train, evaluation = read_metrics(os.path.join(directory, run["directory"], "metrics.jsonl"))
        steps = sorted(train)
        losses = [as_number(train[s]["loss"]) for s in steps]
        window = max(1, len(steps) // 50)
        reference = run["name"] == "fp32"  # drawn wide and underneath, so the others show on it
        axis.plot(steps, moving_average(losses, window), color=colour(run["name"], index),
                  linewidth=3 if reference else 1.2, alpha=0.4 if reference else 0.9, zorder=1 if reference else 2,
                  label=f"{run['name']} train ({window}-step mean)")
        eval_steps = sorted(evaluation)
        axis.plot(eval_steps, [as_number(evaluation[s]["val_loss"]) for s in eval_steps], "o--",
                  color=colour(run["name"], index), markersize=3, linewidth=0.8, label=f"{run['name']} val")
    axis.set_xlabel("step")
    axis.set_ylabel("loss (nats/token)")
    axis.set_title(f"Precision study: {report['model']['preset']}, {report['tokens_per_run']:,} tokens per run")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    plt.close(figure)


def plot_gaps(report, output):
    figure, axis = plt.subplots(figsize=(9, 4.5))
    plotted = False
    for index, run in enumerate(report["runs"]):
        points = [(e["step"], e["gap_to_fp32"]) for e in run["evaluations"]
                  if e["gap_to_fp32"] is not None and math.isfinite(e["gap_to_fp32"])]
        if points:
            axis.plot(*zip(*points), "o-", color=colour(run["name"], index), markersize=3, label=run["name"])
            plotted = True
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_xlabel("step")
    axis.set_ylabel("val loss − fp32 val loss (nats/token)")
    axis.set_title("Validation-loss gap to fp32" if plotted else "Validation-loss gap to fp32 (no fp32 run)")
    axis.grid(alpha=0.3)
    if plotted:
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    plt.close(figure)


def plot_bars(report, output, series, ylabel, title):
    """series: [(label, function of a run giving its value)], bars grouped per run."""
    runs = report["runs"]
    figure, axis = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(series)
    for offset, (label, value_of) in enumerate(series):
        for index, run in enumerate(runs):
            emulated = run["bench"]["emulated"]
            axis.bar(index + (offset - (len(series) - 1) / 2) * width, value_of(run), width,
                     color=f"C{offset}", hatch="//" if emulated else None, edgecolor="white",
                     label=label if index == 0 else None)
    axis.set_xticks(range(len(runs)), [run["name"] for run in runs])
    axis.set_ylabel(ylabel)
    emulated = any(run["bench"]["emulated"] for run in runs)
    axis.set_title(title + (" (hatched: emulated on the CPU, not a hardware speed)" if emulated else ""),
                   fontsize=10)
    axis.grid(alpha=0.3, axis="y")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    plt.close(figure)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", help="report.json written by `mixgpt study`")
    arguments = parser.parse_args()
    with open(arguments.report, encoding="utf-8") as file:
        report = json.load(file)
    directory = os.path.dirname(os.path.abspath(arguments.report))
    plot_losses(report, directory, os.path.join(directory, "loss_curves.png"))
    plot_gaps(report, os.path.join(directory, "val_gap.png"))
    plot_bars(report, os.path.join(directory, "throughput.png"),
              [("training (median step)", lambda run: run["train_tokens_per_second"]),
               ("mixgpt bench", lambda run: run["bench"]["tokens_per_second"])],
              "tokens/s", "Throughput per precision")
    plot_bars(report, os.path.join(directory, "memory.png"),
              [("training peak", lambda run: run["peak_memory_bytes"] / 2**20)],
              "MiB", "Peak memory per precision")
    print(f"figures in {directory}")


if __name__ == "__main__":
    main()
