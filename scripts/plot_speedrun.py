#!/usr/bin/python3
"""The KJV speedrun's tables and figures from the runs scripts/kjv_speedrun.sh wrote.

    scripts/plot_speedrun.py runs/kjv_speedrun [-o DIR]

Writes DIR/report.md (the learning-rate sweep; each configuration's final validation loss as the
mean and spread (min-max) over its seeds, CPU-seconds per step, and the steps it needs to reach the
baseline's mean final loss; the precision and ablation tables where their runs exist) and
DIR/loss_steps.png, DIR/loss_cpu_seconds.png (validation loss against steps and against
CPU-seconds, mean over seeds). DIR defaults to the runs folder.

Steps to a target: the first evaluation at or below it, linearly interpolated from the one before
(evaluations every 25 steps); "not reached" when the run never gets there. The ratio divides a
configuration's mean by the baseline's budget (its steps), which by definition it needs to reach its
own final loss. CPU-seconds: the run's
user+sys time (GNU time), evaluations included, spread evenly over its steps.
"""
import argparse
import json
import pathlib
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MAIN = ["baseline", "recipe_adamw", "recipe_muon"]
LABELS = {"baseline": "GPT-2 + AdamW", "recipe_adamw": "recipe + AdamW", "recipe_muon": "recipe + Muon"}


def load_run(directory):
    """(evaluations [(step, val_loss)], steps, cpu seconds) of one finished run, or None."""
    metrics, cpu_seconds = directory / "metrics.jsonl", directory / "cpu_seconds"
    # GNU time writes cpu_seconds when the run ends: an empty one is a run still going.
    if not metrics.exists() or not cpu_seconds.exists() or not cpu_seconds.read_text().split():
        return None
    records = [json.loads(line) for line in metrics.open()]
    evaluations = [(r["step"], r["val_loss"]) for r in records if r["type"] == "eval"]
    steps = max(r["step"] for r in records if r["type"] == "train")
    user, system = (float(v) for v in cpu_seconds.read_text().split()[-2:])
    return {"evals": evaluations, "steps": steps, "cpu": user + system}


def load_config(root, name):
    runs = [load_run(d) for d in sorted((root / name).glob("seed*"))]
    return [r for r in runs if r is not None and r["evals"] and r["evals"][-1][0] == r["steps"]]


def steps_to(run, target):
    previous = (0, float("inf"))
    for step, loss in run["evals"]:
        if loss <= target:
            if previous[1] == float("inf"):
                return float(step)
            return previous[0] + (step - previous[0]) * (previous[1] - target) / (previous[1] - loss)
        previous = (step, loss)
    return None


def spread(values, digits=4):
    if not values:
        return "-"
    mean = statistics.mean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f} (1 seed)"
    return f"{mean:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f}, {len(values)} seeds)"


def final_losses(runs):
    return [r["evals"][-1][1] for r in runs]


def sweep_table(root):
    lines = ["| configuration | learning rate | final val loss (seed 1) |", "|---|---|---|"]
    for directory in sorted(root.glob("sweep_*")):
        runs = load_config(root, directory.name)
        if runs:
            name, rate = directory.name[len("sweep_"):].rsplit("_lr", 1)
            lines.append(f"| {LABELS.get(name, name)} | {rate} | {runs[0]['evals'][-1][1]:.4f} |")
    return lines


def main_table(root, target):
    """Each configuration against the baseline's mean final loss. The baseline needs its whole budget to
    reach its own final loss, so its step count is the ratio's denominator."""
    lines = ["| configuration | final val loss | CPU s/step | steps to the baseline's final loss | vs baseline "
             "| CPU-s to it |", "|---|---|---|---|---|---|"]
    baseline_runs = load_config(root, "baseline")
    budget = baseline_runs[0]["steps"] if baseline_runs else None
    for name in MAIN:
        runs = load_config(root, name)
        if not runs:
            continue
        reached = [steps_to(r, target) for r in runs]
        hit = [s for s in reached if s is not None]
        missed = len(reached) - len(hit)
        per_step = [r["cpu"] / r["steps"] for r in runs]
        if name == "baseline":
            to_target, ratio = f"{budget} (its budget; {spread(hit, 0)} to the mean)", "1.00x"
            seconds = spread([r["cpu"] for r in runs], 0)
        elif missed:
            to_target, ratio, seconds = f"not reached by {missed} of {len(reached)} seeds", "-", "-"
        else:
            to_target, ratio = spread(hit, 0), f"{statistics.mean(hit) / budget:.2f}x"
            seconds = spread([steps * cost for steps, cost in zip(hit, per_step)], 0)
        lines.append(f"| {LABELS[name]} | {spread(final_losses(runs))} | {spread(per_step, 3)} | {to_target} | "
                     f"{ratio} | {seconds} |")
    return lines


def gap_table(root, rows, reference_of, header):
    lines = [f"| {header} | final val loss | gap to its reference (mean, min-max over seeds) |", "|---|---|---|"]
    for name in rows:
        runs, reference = load_config(root, name), load_config(root, reference_of(name))
        if not runs or not reference:
            continue
        base = statistics.mean(final_losses(reference))
        gaps = [loss - base for loss in final_losses(runs)]
        lines.append(f"| {name} | {spread(final_losses(runs))} | {statistics.mean(gaps):+.4f} "
                     f"({min(gaps):+.4f} to {max(gaps):+.4f}) |")
    return lines


def plot(root, output, x_of, xlabel, filename):
    plt.figure(figsize=(7, 4.5))
    for name in MAIN:
        runs = load_config(root, name)
        if not runs:
            continue
        steps = [s for s, _ in runs[0]["evals"]]
        losses = [statistics.mean(r["evals"][i][1] for r in runs) for i in range(len(steps))]
        x = [x_of(runs, s) for s in steps]
        plt.plot(x, losses, marker="o", markersize=3, label=f"{LABELS[name]} ({len(runs)} seeds)")
    plt.xlabel(xlabel)
    plt.ylabel("validation loss (nats/token)")
    plt.title("KJV, d2, CPU: validation loss, mean over seeds")
    plt.grid(alpha=0.3)
    plt.legend()
    plt.tight_layout()
    plt.savefig(output / filename, dpi=120)
    plt.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=pathlib.Path)
    parser.add_argument("-o", "--output", type=pathlib.Path)
    args = parser.parse_args()
    root, output = args.runs, args.output or args.runs
    output.mkdir(parents=True, exist_ok=True)
    baseline = load_config(root, "baseline")
    report = ["# KJV speedrun (scripts/kjv_speedrun.sh)", "", "## Learning-rate sweep", ""] + sweep_table(root)
    if baseline:
        target = statistics.mean(final_losses(baseline))
        report += ["", f"## The recipe against the baseline (target: the baseline's mean final loss, {target:.4f})",
                   ""] + main_table(root, target)
    precision_rows = [n for p in ("bf16", "fp8") for n in (f"baseline_{p}", f"recipe_muon_{p}")]
    report += ["", "## Precision: each run against the same configuration in fp32", ""]
    report += gap_table(root, precision_rows, lambda n: n.rsplit("_", 1)[0], "run")
    ablations = sorted(d.name for d in root.glob("ablation_no_*"))
    report += ["", "## Ablation: the recipe with Muon, one option taken out", ""]
    report += gap_table(root, ablations, lambda n: "recipe_muon", "recipe without")
    (output / "report.md").write_text("\n".join(report) + "\n")
    plot(root, output, lambda runs, s: s, "optimizer step", "loss_steps.png")
    plot(root, output, lambda runs, s: s * statistics.mean(r["cpu"] / r["steps"] for r in runs),
         "CPU-seconds (one thread)", "loss_cpu_seconds.png")
    print("\n".join(report))


if __name__ == "__main__":
    main()
