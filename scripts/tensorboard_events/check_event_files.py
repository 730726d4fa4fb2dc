#!/usr/bin/python3
"""Reads the TensorBoard event files of `mixgpt train --tensorboard DIR` without mixgpt's code and
checks them against the run's metrics.jsonl; exit status 0 when they agree, 1 (one line on
stderr saying where and what) when not.

    /usr/bin/python3 scripts/tensorboard_events/check_event_files.py DIR RUN/metrics.jsonl [--loss-scaled]

Each file of DIR whose name holds "tfevents" (TensorBoard's rule), in name order, is read as
TFRecords: the length's and the data's masked CRC-32C are checked (a bitwise CRC here, apart from
mixgpt's table), and each record is decoded with event.proto/summary.proto (TensorBoard's field
numbers) compiled by Debian's protoc (protobuf-compiler, python3-protobuf): no unknown field, and
protobuf's own encoding of the decoded event is the record byte for byte. A file holds the
file_version event ("brain.Event:2"), a SessionLog START, then summary events. The values are
merged as TensorBoard merges a folder: a START at step s drops the values of step s and later
read before it. What remains must be metrics.jsonl's values (as float32; null: NaN or Inf) at their
steps, under the tags of train/tensorboard_metrics.h; a telemetry record's per-layer tags computed
here from its blocks, tensors and fp8 tensors, and its histograms (log2|x|, one bucket per
exponent) from its grad_exponents and output_exponents, exactly (train/telemetry_record.h); --loss-scaled: the run
scales its loss (train/loss_scale expected).
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = re.compile(r"^events\.out\.tfevents\.\d{10}\.[A-Za-z0-9._-]+\.\d+\.\d+$")

TRAIN_TAGS = {"loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm",
              "skipped_total": "train/skipped_total", "tokens": "train/tokens",
              "tokens_per_second": "train/tokens_per_second", "ms_per_step": "train/ms_per_step",
              "memory_bytes": "train/memory_bytes", "mfu": "train/mfu", "spike_skips": "train/spike_skips"}
EVAL_TAGS = {"val_loss": "val/loss", "val_perplexity": "val/perplexity", "val_tokens": "val/tokens",
             "grad_zero_fraction": "val/grad_zero_fraction"}


class CheckFailed(Exception):
    pass


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at < len(data):
        where = f"{path}: record at byte {at}"
        if len(data) - at < 12:
            raise CheckFailed(f"{where}: a header cut short")
        length, length_crc = struct.unpack_from("<QI", data, at)
        if masked(crc32c(data[at:at + 8])) != length_crc:
            raise CheckFailed(f"{where}: the length's CRC is wrong")
        if len(data) - at - 12 < length + 4:
            raise CheckFailed(f"{where}: {length} bytes of data announced, fewer there")
        payload = data[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        if masked(crc32c(payload)) != data_crc:
            raise CheckFailed(f"{where}: the data's CRC is wrong")
        yield where, payload
        at += 16 + length


def compiled_event_module(build):
    try:
        subprocess.run(["protoc", "-I", HERE, "--python_out", build, "event.proto", "summary.proto"],
                       check=True, cwd=HERE)
        sys.path.insert(0, build)
        import event_pb2
    except (OSError, ImportError, subprocess.CalledProcessError) as error:
        raise CheckFailed(f"cannot compile or import event.proto ({error}): scripts/setup.sh installs "
                       "protobuf-compiler and python3-protobuf")
    return event_pb2


def unknown_fields(message):
    count = len(message.UnknownFields())
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        for item in value if field.label == field.LABEL_REPEATED else [value]:
            count += unknown_fields(item)
    return count


def decoded(event_pb2, where, payload):
    event = event_pb2.Event()
    event.ParseFromString(payload)
    if unknown_fields(event):
        raise CheckFailed(f"{where}: fields unknown to TensorBoard's event.proto")
    if event.SerializeToString() != payload:
        raise CheckFailed(f"{where}: not protobuf's encoding of the event it decodes to")
    return event


def event_scalars(event_pb2, directory):
    """(tag, step) -> value after TensorBoard's merge, and the number of files read."""
    names = sorted(n for n in os.listdir(directory) if "tfevents" in n)
    if not names:
        raise CheckFailed(f"{directory}: no event file")
    scalars = {}
    for name in names:
        path = os.path.join(directory, name)
        if not NAME.match(name):
            raise CheckFailed(f"{path}: not named events.out.tfevents.<time>.<host>.<pid>.<n>")
        events = [(where, decoded(event_pb2, where, payload)) for where, payload in records(path)]
        if len(events) < 2:
            raise CheckFailed(f"{path}: {len(events)} records, not a file_version and a START at least")
        where, first = events[0]
        if first.WhichOneof("what") != "file_version" or first.file_version != "brain.Event:2" or first.step:
            raise CheckFailed(f"{where}: not the file_version event brain.Event:2")
        for where, event in events:
            if not 1.6e9 < event.wall_time < 4.1e9:
                raise CheckFailed(f"{where}: wall_time {event.wall_time} is not a time of this century")
        for index, (where, event) in enumerate(events[1:], start=1):
            kind = event.WhichOneof("what")
            if (index == 1) != (kind == "session_log"):
                raise CheckFailed(f"{where}: a SessionLog START second, and only there")
            if kind == "session_log":
                if event.session_log.status != event_pb2.SessionLog.START:
                    raise CheckFailed(f"{where}: SessionLog status {event.session_log.status}, not START")
                scalars = {key: value for key, value in scalars.items() if key[1] < event.step}
                continue
            if kind != "summary" or not event.summary.value:
                raise CheckFailed(f"{where}: a {kind} event, not a summary")
            for value in event.summary.value:
                held = value.WhichOneof("value")
                if held not in ("simple_value", "histo"):
                    raise CheckFailed(f"{where}: {value.tag} is neither a simple_value nor a histo")
                key = (value.tag, event.step)
                if key in scalars:
                    raise CheckFailed(f"{where}: {value.tag} twice at step {event.step}")
                scalars[key] = value.simple_value if held == "simple_value" else histogram_fields(value.histo)
    return scalars, len(names)


def histogram_fields(histo):
    return (histo.min, histo.max, histo.num, histo.sum, histo.sum_squares, tuple(histo.bucket_limit),
            tuple(histo.bucket))


def exponent_histograms(record):
    """tag -> histogram_fields of each grad_exponents and output_exponents entry with a finite
    nonzero element: a bucket [e, e + 1) per exponent from the least to the greatest present,
    limited at e + 1; sums over the buckets' midpoints e + 0.5."""
    histograms = {}
    entries = [("telemetry/grad_log2/", entry) for entry in record["grad_exponents"]]
    entries += [("telemetry/output_log2/", entry) for entry in record["output_exponents"]]
    for prefix, entry in entries:
        counts = dict(entry["bins"])
        if not counts:
            continue
        low, high = min(counts), max(counts)
        num = total = squares = 0.0
        limits, buckets = [], []
        for exponent in range(low, high + 1):
            count = float(counts.get(exponent, 0))
            middle = exponent + 0.5
            num += count
            total += count * middle
            squares += count * middle * middle
            limits.append(float(exponent + 1))
            buckets.append(count)
        layer = "model" if entry["layer"] < 0 else str(entry["layer"])
        histograms[prefix + layer] = (float(low), float(high + 1), num, total, squares, tuple(limits),
                                      tuple(buckets))
    return histograms


def float32(value):
    """metrics.jsonl's value as the event files hold it; None (null) stands for any non-finite value."""
    return None if value is None else struct.unpack("<f", struct.pack("<f", value))[0]


def telemetry_scalars(record):
    """(tag, value) of a telemetry record: its block quantities per layer, and over each block's
    tensors the joint gradient norm, the joint update's norm over the joint weight's and the
    fraction of small gradient elements."""
    scalars = {"telemetry/logit_amax": record["logit_amax"]}
    if "loss_scale_headroom_bits" in record:
        scalars["telemetry/loss_scale_headroom_bits"] = record["loss_scale_headroom_bits"]
    sums = {}
    for tensor in record["tensors"]:
        if tensor["layer"] < 0:
            continue
        layer = sums.setdefault(tensor["layer"], [0.0, 0.0, 0.0, 0.0, 0.0])
        update = tensor["update_ratio"] * tensor["weight_norm"]
        layer[0] += tensor["grad_norm"] * tensor["grad_norm"]
        layer[1] += update * update
        layer[2] += tensor["weight_norm"] * tensor["weight_norm"]
        layer[3] += tensor["grad_small_fraction"] * tensor["elements"]
        layer[4] += tensor["elements"]
    for block in record["blocks"]:
        tail = f"/{block['layer']}"
        for quantity in ("output_amax", "output_rms", "attention_lse_amax"):
            scalars["telemetry/" + quantity + tail] = block[quantity]
        gradient, update, weight, small, elements = sums.get(block["layer"], [0.0] * 5)
        scalars["telemetry/grad_norm" + tail] = math.sqrt(gradient)
        scalars["telemetry/update_ratio" + tail] = math.sqrt(update / weight) if weight > 0 else 0.0
        scalars["telemetry/grad_small_fraction" + tail] = small / elements if elements > 0 else 0.0
    fp8 = {}
    for tensor in record.get("fp8", []):
        if tensor["layer"] < 0:
            continue
        headroom = math.log2(tensor["fp8_max"] / (tensor["amax"] * tensor["scale"])) if tensor["amax"] > 0 else math.inf
        least, saturated = fp8.get((tensor["layer"], tensor["kind"]), (math.inf, 0.0))
        fp8[(tensor["layer"], tensor["kind"])] = (min(least, headroom), saturated + tensor["saturated"])
    for (layer, kind), (headroom, saturated) in fp8.items():
        scalars[f"telemetry/fp8_{kind}_headroom_bits/{layer}"] = None if math.isinf(headroom) else headroom
        scalars[f"telemetry/fp8_{kind}_saturated/{layer}"] = saturated
    return scalars


def expected_scalars(metrics_path, loss_scaled):
    expected = {}
    with open(metrics_path) as f:
        for line in f:
            record = json.loads(line)
            step, kind = record["step"], record["type"]
            if kind == "train":
                fields = dict(TRAIN_TAGS, **({"loss_scale": "train/loss_scale"} if loss_scaled else {}))
                for part, count in record.get("fp8_saturated", {}).items():
                    expected[(f"train/fp8_saturated/{part}", step)] = float32(count)
            elif kind == "eval":
                fields = EVAL_TAGS
            elif kind == "task_eval":
                task = "task/" + os.path.basename(record["data"])
                fields = {"acc": task + "/acc", "acc_norm": task + "/acc_norm"}
            elif kind == "telemetry":
                for tag, value in telemetry_scalars(record).items():
                    expected[(tag, step)] = float32(value)
                for tag, fields in exponent_histograms(record).items():
                    expected[(tag, step)] = fields
                continue
            else:
                continue
            for field, tag in fields.items():
                if field in record:
                    expected[(tag, step)] = float32(record[field])
    return expected


def same(got, expected):
    if isinstance(expected, tuple) or isinstance(got, tuple):
        return got == expected
    return not math.isfinite(got) if expected is None else got == expected


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("metrics")
    parser.add_argument("--loss-scaled", action="store_true")
    args = parser.parse_args()
    try:
        with tempfile.TemporaryDirectory() as build:
            got, files = event_scalars(compiled_event_module(build), args.directory)
        expected = expected_scalars(args.metrics, args.loss_scaled)
        for key in sorted(set(got) | set(expected)):
            if key not in got:
                raise CheckFailed(f"{args.directory}: no {key[0]} at step {key[1]} ({args.metrics} has one)")
            if key not in expected:
                raise CheckFailed(f"{args.directory}: {key[0]} at step {key[1]}, which {args.metrics} lacks")
            if not same(got[key], expected[key]):
                raise CheckFailed(f"{args.directory}: {key[0]} at step {key[1]} is {got[key]!r}, "
                               f"{args.metrics} has {expected[key]!r}")
    except CheckFailed as failure:
        print(f"check_event_files: {failure}", file=sys.stderr)
        return 1
    tags = sorted({tag for tag, _ in got})
    print(f"{files} event files, {len(got)} values in {len(tags)} tags agree with {args.metrics}: "
          + ", ".join(tags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
