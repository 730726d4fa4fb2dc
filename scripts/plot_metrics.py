#!/usr/bin/env -S /usr/bin/python3
"""Plots a training run's metrics file (metrics.jsonl from `mixgpt train`) as a PNG.

Top panel: training loss per step (faint) with a moving average, and the validation loss at
each evaluation. With `train --task-eval`, a second panel: each task's acc_norm (solid) and acc
(dashed) at each task evaluation, and its chance level (dotted). Bottom panel: learning rate, and
the loss scale when it is not constantly 1.
A resumed run appends to the file; for a step seen twice the later line wins.
With `train --telemetry-interval`, a second PNG beside the first (metrics_telemetry.png): the
training loss on top, then per-layer heat maps (layer x measured step) of each block's output
max |x| and RMS, its attention's max |log-sum-exp|, and over the block's tensors the gradient
norm, the update's norm over the weight's, the fraction of gradient elements the working
precision cannot hold as normals and the median log2|g| of the nonzero ones; in fp8 runs also
the least FP8 headroom over the block's FP8 tensors (train/telemetry.h).

    scripts/plot_metrics.py runs/demo/metrics.jsonl            # writes runs/demo/metrics.png
    scripts/plot_metrics.py runs/demo/metrics.jsonl -o loss.png
"""
import argparse
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_records(path):
    """Every record of a metrics file, in order."""
    records = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                sys.exit(f"{path}:{number}: not JSON ({error.msg})")
    return records


def read_metrics(path):
    """Returns ({step: train record}, {step: eval record}), later lines replacing earlier ones."""
    train, evaluation = {}, {}
    for record in read_records(path):
        if record.get("type") == "train":
            train[record["step"]] = record
        elif record.get("type") == "eval":
            evaluation[record["step"]] = record
    return train, evaluation


def read_task_evaluations(path):
    """Returns {(task, data): {step: task_eval record}} (`train --task-eval`), later lines winning."""
    tasks = {}
    for record in read_records(path):
        if record.get("type") == "task_eval":
            tasks.setdefault((record["task"], record["data"]), {})[record["step"]] = record
    return tasks


def as_number(value):
    return math.nan if value is None else float(value)


def read_telemetry(path):
    """Returns {step: telemetry record} (`train --telemetry-interval`), later lines winning."""
    return {r["step"]: r for r in read_records(path) if r.get("type") == "telemetry"}


def layer_quantities(record):
    """{quantity: [value per layer]} of one telemetry record."""
    layers = len(record["blocks"])
    quantities = {name: [as_number(block[name]) for block in record["blocks"]]
                  for name in ("output_amax", "output_rms", "attention_lse_amax")}
    gradient, update, weight, small, elements = ([0.0] * layers for _ in range(5))
    for tensor in record["tensors"]:
        layer = tensor["layer"]
        if 0 <= layer < layers:
            gradient[layer] += as_number(tensor["grad_norm"]) ** 2
            update[layer] += (as_number(tensor["update_ratio"]) * as_number(tensor["weight_norm"])) ** 2
            weight[layer] += as_number(tensor["weight_norm"]) ** 2
            small[layer] += as_number(tensor["grad_small_fraction"]) * tensor["elements"]
            elements[layer] += tensor["elements"]
    quantities["grad_norm"] = [math.sqrt(g) for g in gradient]
    quantities["update_ratio"] = [math.sqrt(u / w) if w > 0 else math.nan for u, w in zip(update, weight)]
    quantities["grad_small_fraction"] = [s / e if e > 0 else math.nan for s, e in zip(small, elements)]
    medians = [math.nan] * layers
    for histogram in record.get("grad_exponents", []):
        if 0 <= histogram["layer"] < layers:
            medians[histogram["layer"]] = median_exponent(histogram["bins"])
    quantities["grad_log2_median"] = medians
    if "fp8" in record:
        least = [math.inf] * layers
        for tensor in record["fp8"]:
            if 0 <= tensor["layer"] < layers and tensor["headroom_bits"] is not None:
                least[tensor["layer"]] = min(least[tensor["layer"]], tensor["headroom_bits"])
        quantities["fp8_headroom_bits"] = [v if math.isfinite(v) else math.nan for v in least]
    return quantities


def median_exponent(bins):
    """The exponent e (floor(log2|g|)) of the median nonzero element, from [e, count] pairs."""
    total = sum(count for _, count in bins)
    seen = 0
    for exponent, count in sorted(bins):
        seen += count
        if 2 * seen >= total:
            return exponent
    return math.nan


TELEMETRY_PANELS = [("output_amax", "block output max |x|", True), ("output_rms", "block output RMS", True),
                    ("attention_lse_amax", "attention max |lse|", False), ("grad_norm", "gradient norm", True),
                    ("update_ratio", "|update| / |weight|", True),
                    ("grad_small_fraction", "gradient elements below the smallest normal", False),
                    ("grad_log2_median", "median log2 |gradient| (nonzero elements)", False),
                    ("fp8_headroom_bits", "least FP8 headroom log2(fp8 max / (amax scale)), bits", False)]


def plot_telemetry(train, telemetry, output, title):
    steps = sorted(telemetry)
    per_step = [layer_quantities(telemetry[s]) for s in steps]
    panels = [panel for panel in TELEMETRY_PANELS if all(panel[0] in row for row in per_step)]
    rows = 1 + len(panels)
    figure, axes = plt.subplots(rows, 2, figsize=(9, 2.2 * rows), sharex="col",
                                gridspec_kw={"width_ratios": [40, 1]})
    train_steps = sorted(train)
    axes[0][0].plot(train_steps, [as_number(train[s]["loss"]) for s in train_steps], color="tab:blue", linewidth=1.0)
    axes[0][0].set_ylabel("train loss")
    axes[0][0].set_title(title)
    axes[0][0].grid(alpha=0.3)
    axes[0][1].axis("off")
    # Each measured step's column is centred on it, one interval wide.
    half = (steps[1] - steps[0]) / 2 if len(steps) > 1 else 0.5
    for (axis, bar), (name, label, logarithmic) in zip(axes[1:], panels):
        grid = [[row[name][layer] for row in per_step] for layer in range(len(per_step[0][name]))]
        if logarithmic:
            grid = [[math.log10(v) if v > 0 else math.nan for v in row] for row in grid]
        image = axis.imshow(grid, aspect="auto", origin="lower", interpolation="nearest",
                            extent=(steps[0] - half, steps[-1] + half, -0.5, len(grid) - 0.5))
        figure.colorbar(image, cax=bar, label="log10" if logarithmic else "")
        axis.set_yticks(range(len(grid)))
        axis.set_ylabel("layer")
        axis.set_title(label, fontsize="small")
    axes[-1][0].set_xlabel("step")
    axes[0][0].set_xlim(min(train_steps[0], steps[0] - half), max(train_steps[-1], steps[-1] + half))
    figure.tight_layout()
    figure.savefig(output, dpi=110)


def moving_average(values, window):
    averaged, total, count, queue = [], 0.0, 0, []
    for value in values:
        queue.append(value)
        if math.isfinite(value):
            total, count = total + value, count + 1
        if len(queue) > window:
            old = queue.pop(0)
            if math.isfinite(old):
                total, count = total - old, count - 1
        averaged.append(total / count if count else math.nan)
    return averaged


def plot_tasks(axis, tasks):
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, ((task, data), records) in enumerate(sorted(tasks.items())):
        color = colors[index % len(colors)]
        steps = sorted(records)
        name = f"{task} ({data.rsplit('/', 1)[-1]})"
        axis.plot(steps, [as_number(records[s]["acc_norm"]) for s in steps], "o-", color=color,
                  linewidth=1.6, label=f"{name} acc_norm")
        axis.plot(steps, [as_number(records[s]["acc"]) for s in steps], "s--", color=color,
                  linewidth=1.0, alpha=0.7, label=f"{name} acc")
        chance = as_number(records[steps[-1]].get("chance"))
        if math.isfinite(chance):
            axis.axhline(chance, color=color, linestyle=":", linewidth=1.0, label=f"{name} chance")
    axis.set_ylabel("accuracy")
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")


def plot(train, evaluation, tasks, output, title):
    steps = sorted(train)
    losses = [as_number(train[s]["loss"]) for s in steps]
    if tasks:
        figure, (loss_axis, task_axis, lr_axis) = plt.subplots(
            3, 1, figsize=(9, 9.5), sharex=True, gridspec_kw={"height_ratios": [3, 2, 1]})
        plot_tasks(task_axis, tasks)
    else:
        figure, (loss_axis, lr_axis) = plt.subplots(
            2, 1, figsize=(9, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    loss_axis.plot(steps, losses, color="tab:blue", alpha=0.25, linewidth=0.8, label="train loss")
    window = max(1, len(steps) // 50)
    loss_axis.plot(steps, moving_average(losses, window), color="tab:blue", linewidth=1.6,
                   label=f"train loss ({window}-step mean)")
    if evaluation:
        eval_steps = sorted(evaluation)
        loss_axis.plot(eval_steps, [as_number(evaluation[s]["val_loss"]) for s in eval_steps], "o-",
                       color="tab:orange", linewidth=1.6, label="validation loss")
    loss_axis.set_ylabel("loss (nats/token)")
    loss_axis.set_title(title)
    loss_axis.grid(alpha=0.3)
    loss_axis.legend()

    lr_axis.plot(steps, [as_number(train[s]["lr"]) for s in steps], color="tab:green", label="learning rate")
    lr_axis.set_ylabel("learning rate")
    lr_axis.set_xlabel("step")
    lr_axis.grid(alpha=0.3)
    scales = [as_number(train[s]["loss_scale"]) for s in steps]
    if any(scale != 1.0 for scale in scales):
        scale_axis = lr_axis.twinx()
        scale_axis.plot(steps, scales, color="tab:red", linewidth=1.0, label="loss scale")
        scale_axis.set_yscale("log", base=2)
        scale_axis.set_ylabel("loss scale")
    figure.tight_layout()
    figure.savefig(output, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metrics", help="metrics.jsonl of a training run")
    parser.add_argument("-o", "--output", help="PNG to write (default: beside the metrics file)")
    arguments = parser.parse_args()
    train, evaluation = read_metrics(arguments.metrics)
    tasks = read_task_evaluations(arguments.metrics)
    if not train:
        sys.exit(f"{arguments.metrics}: no training steps recorded")
    output = arguments.output or arguments.metrics.rsplit(".", 1)[0] + ".png"
    plot(train, evaluation, tasks, output, arguments.metrics)
    print(output)
    telemetry = read_telemetry(arguments.metrics)
    if telemetry:
        telemetry_output = output.rsplit(".", 1)[0] + "_telemetry.png"
        plot_telemetry(train, telemetry, telemetry_output, arguments.metrics + ": telemetry")
        print(telemetry_output)


if __name__ == "__main__":
    main()
