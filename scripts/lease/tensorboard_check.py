#!/usr/bin/env python3
"""Loads a run's --tensorboard event files with TensorBoard's own reader, where the host has it.

    tensorboard_check.py DIR

Prints one JSON line: {"available": false, "why": ...} without the tensorboard package, else what
TensorBoard's EventAccumulator (the loader behind its scalar and histogram dashboards) read: the
scalar tags, how many values each has, the first and last step of train/loss, and the histogram
tags (the telemetry's gradient log2 magnitudes) with their values and elements counted.
"""
import json
import sys


def main():
    directory = sys.argv[1]
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError as error:
        print(json.dumps({"available": False, "why": f"no tensorboard package ({error})"}))
        return 0
    accumulator = event_accumulator.EventAccumulator(
        directory, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.HISTOGRAMS: 0})
    accumulator.Reload()
    tags = accumulator.Tags().get("scalars", [])
    counts = {tag: len(accumulator.Scalars(tag)) for tag in tags}
    loss = accumulator.Scalars("train/loss") if "train/loss" in tags else []
    histogram_tags = accumulator.Tags().get("histograms", [])
    histograms = [event for tag in histogram_tags for event in accumulator.Histograms(tag)]
    print(json.dumps({"available": True, "scalar_tags": len(tags), "values": sum(counts.values()),
                      "loss_steps": [loss[0].step, loss[-1].step] if loss else [], "counts": counts,
                      "histogram_tags": len(histogram_tags), "histograms": len(histograms),
                      "histogram_elements": sum(event.histogram_value.num for event in histograms)}))
    return 0 if loss else 1


if __name__ == "__main__":
    sys.exit(main())
