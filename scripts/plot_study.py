#!/usr/bin/env -S /usr/bin/python3
"""Figures of a precision study (report.json from `mixgpt study`), written beside the report.

    final_loss.png    final validation loss per precision: each seed's run and the mean ± sd
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


def colour(report, name):
    """One colour per precision, whatever the seed; fp32 in black."""
    names = [spread["name"] for spread in report["spreads"]]
    return "black" if name == "fp32" else f"C{names.index(name)}"


def run_label(report, run):
    return run["name"] if len(report["seeds"]) <= 1 else f"{run['name']} s{run['seed']}"


def first_of_its_precision(report, run):
    """Whether run is its precision's first (the one that carries the legend entry)."""
    return next(other for other in report["runs"] if other["name"] == run["name"]) is run


def plot_final_losses(report, output):
    figure, axis = plt.subplots(figsize=(9, 4.5))
    for index, spread in enumerate(report["spreads"]):
        loss = spread["final_val_loss"]
        axis.errorbar(index, loss["mean"], yerr=loss["standard_deviation"], fmt="_", markersize=24, capsize=6,
                      color=colour(report, spread["name"]))
        axis.plot([index] * len(loss["per_seed"]), loss["per_seed"], "o", color=colour(report, spread["name"]),
                  alpha=0.6, markersize=5)
    axis.set_xticks(range(len(report["spreads"])), [spread["name"] for spread in report["spreads"]])
    axis.set_ylabel("final validation loss (nats/token)")
    axis.set_title(f"Final validation loss: each seed's run (dots), mean ± sd over {len(report['seeds'])} seed(s)")
    axis.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    plt.close(figure)


def plot_losses(report, directory, output):
    figure, axis = plt.subplots(figsize=(9, 5.5))
    for run in report["runs"]:
        train, evaluation = read_metrics(os.path.join(directory, run["directory"], "metrics.jsonl"))
        steps = sorted(train)
        losses = [as_number(train[s]["loss"]) for s in steps]
        window = max(1, len(steps) // 50)
        reference = run["name"] == "fp32"  # drawn wide and underneath, so the others show on it
        labelled = first_of_its_precision(report, run)
        axis.plot(steps, moving_average(losses, window), color=colour(report, run["name"]),
                  linewidth=3 if reference else 1.2, alpha=0.4 if reference else 0.9, zorder=1 if reference else 2,
                  label=f"{run['name']} train ({window}-step mean)" if labelled else None)
        eval_steps = sorted(evaluation)
        axis.plot(eval_steps, [as_number(evaluation[s]["val_loss"]) for s in eval_steps], "o--",
                  color=colour(report, run["name"]), markersize=3, linewidth=0.8,
                  label=f"{run['name']} val" if labelled else None)
    axis.set_xlabel("step")
    axis.set_ylabel("loss (nats/token)")
    kind = "Optimizer" if report.get("compares") == "optimizers" else "Precision"
    axis.set_title(f"{kind} study: {report['model']['preset']}, {report['tokens_per_run']:,} tokens per run")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    plt.close(figure)


def plot_gaps(report, output):
    figure, axis = plt.subplots(figsize=(9, 4.5))
    plotted = False
    for run in report["runs"]:
        points = [(e["step"], e["gap_to_fp32"]) for e in run["evaluations"]
                  if e["gap_to_fp32"] is not None and math.isfinite(e["gap_to_fp32"])]
        if points:
            axis.plot(*zip(*points), "o-", color=colour(report, run["name"]), markersize=3,
                      label=run["name"] if first_of_its_precision(report, run) else None)
            plotted = True
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_xlabel("step")
    axis.set_ylabel("val loss − fp32 val loss, same seed (nats/token)")
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
    axis.set_xticks(range(len(runs)), [run_label(report, run) for run in runs],
                    rotation=45 if len(runs) > 8 else 0, fontsize=8)
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
    plot_final_losses(report, os.path.join(directory, "final_loss.png"))
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
