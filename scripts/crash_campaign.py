#!/usr/bin/env -S /usr/bin/python3
"""Crash campaign: kill -9 a small training run at random points, resume it, and check that the
resumed run ends bit-identical to an uninterrupted one.

For each configuration (fp32; bf16; fp32 with 2 accumulation micro-steps) one reference run goes
uninterrupted. Each trial starts the same run in a fresh directory, sends it SIGKILL (or the
signal of --signal) at a random moment (half of the trials: as soon as the k-th checkpoint
temporary appears, k at random, i.e. inside a checkpoint write), checks every checkpoint left behind (header, size,
CRC-32 of the payload), resumes with --resume if-present until the run completes, and compares the final
checkpoint's parameters and AdamW moments with the reference's, and the metrics file's train
losses (each step exactly once) with the reference's. Reports:

    trials N (I interrupted): resumed R, corrupt C, bit-identical B, stale temporaries S,
    metrics one-history M

and exits 1 unless R = B = M = N, C = 0 and S = 0.

    scripts/crash_campaign.py --build build --trials 30          # a few minutes on 2 cores
    scripts/crash_campaign.py --build build --trials 3 --steps 12  # the make test version
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

import h5py
import numpy as np

HEADER_BYTES = 512
CONFIGURATIONS = {
    "fp32": [],
    "bf16": ["--precision", "bf16"],
    "accumulation": ["--total-batch-tokens", "128"],
}


def make_dataset(mixgpt, directory):
    """A generated corpus of repetitive sentences, prepared with a 300-token vocabulary."""
    corpus = os.path.join(directory, "corpus")
    os.makedirs(corpus)
    rng = random.Random(7)
    subjects = ["the cat", "a dog", "the old man", "my sister", "the bird"]
    verbs = ["sees", "likes", "finds", "follows", "keeps"]
    objects = ["the red ball", "a small house", "the river", "an apple", "the moon"]
    for d in range(160):
        with open(os.path.join(corpus, "doc%d.txt" % (1000 + d)), "w") as file:
            for _ in range(4 + rng.randrange(6)):
                file.write("%s %s %s.\n" % (rng.choice(subjects), rng.choice(verbs), rng.choice(objects)))
    data = os.path.join(directory, "data")
    subprocess.run([mixgpt, "prepare", "--output", data, "--vocab-size", "300", "--val-fraction", "0.15",
                    "--seed", "3", "--threads", "1", corpus], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return data


def train_command(mixgpt, data, output, configuration, steps, checkpoint_interval):
    return [mixgpt, "train", "--dataset", data, "--model", "d2", "--n-embd", "32", "-b", "4", "-t", "16",
            "--threads", "1", "--seed", "5", "--steps", str(steps), "--checkpoint-interval",
            str(checkpoint_interval), "--keep-checkpoints", "2", "--eval-interval", "4", "--eval-batches", "2",
            "-o", output] + CONFIGURATIONS[configuration]


def checkpoint_problem(path):
    """None when the checkpoint's header, size and CRC-32 agree; else what is wrong."""
    with open(path, "rb") as file:
        header = file.read(HEADER_BYTES).split(b"\0", 1)[0].decode("latin-1")
        payload = file.read()
    fields = dict(line.split(" ", 1) for line in header.splitlines()[1:] if " " in line)
    if not header.startswith("mixgpt checkpoint\n") or "payload_bytes" not in fields:
        return "no header"
    if int(fields["payload_bytes"]) != len(payload):
        return "size %d, header says %s" % (len(payload), fields["payload_bytes"])
    if int(fields["payload_crc32"], 16) != zlib.crc32(payload):
        return "CRC-32 mismatch"
    return None


def final_state(output, steps):
    path = os.path.join(output, "checkpoints", "step_%08d.h5" % steps)
    with h5py.File(path, "r") as file:
        return {name: np.array(file[name]) for name in ("parameters", "adam_m", "adam_v")}


def train_losses(output):
    """step -> loss of the train lines, and whether any step appears twice."""
    losses, repeated = {}, False
    with open(os.path.join(output, "metrics.jsonl")) as file:
        for line in file:
            record = json.loads(line)
            if record["type"] == "train":
                repeated |= record["step"] in losses
                losses[record["step"]] = record["loss"]
    return losses, repeated


def interrupt(command, kill_signal, delay, inside_write, output):
    """Starts the run and sends the signal after `delay` seconds, or (inside_write > 0) as soon as
    the inside_write-th checkpoint temporary exists. Returns the exit status (negative: the
    signal)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.monotonic()
    checkpoints = os.path.join(output, "checkpoints")
    temporaries = set()
    while process.poll() is None:
        elapsed = time.monotonic() - start
        if inside_write:
            if os.path.isdir(checkpoints):
                temporaries.update(name for name in os.listdir(checkpoints) if ".tmp-" in name)
            if len(temporaries) >= inside_write or elapsed > 60:
                break
        elif elapsed >= delay:
            break
        time.sleep(0.0002 if inside_write else 0.001)
    if process.poll() is None:
        process.send_signal(kill_signal)
    return process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build", help="folder holding the mixgpt binary")
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--steps", type=int, default=40, help="optimizer steps of each run")
    parser.add_argument("--checkpoint-interval", type=int, default=2)
    parser.add_argument("--signal", default="KILL", choices=["KILL", "TERM", "INT"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    arguments = parser.parse_args()
    mixgpt = os.path.abspath(os.path.join(arguments.build, "mixgpt"))
    kill_signal = getattr(signal, "SIG" + arguments.signal)
    rng = random.Random(arguments.seed)
    work = tempfile.mkdtemp(prefix="mixgpt_crash_campaign_")
    try:
        data = make_dataset(mixgpt, work)
        references = {}
        for configuration in CONFIGURATIONS:
            output = os.path.join(work, "reference_" + configuration)
            start = time.monotonic()
            subprocess.run(train_command(mixgpt, data, output, configuration, arguments.steps,
                                         arguments.checkpoint_interval),
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            references[configuration] = (time.monotonic() - start, final_state(output, arguments.steps),
                                         train_losses(output)[0])

        counts = {"interrupted": 0, "resumed": 0, "corrupt": 0, "identical": 0, "stale": 0, "one_history": 0}
        for trial in range(arguments.trials):
            configuration = list(CONFIGURATIONS)[trial % len(CONFIGURATIONS)]
            seconds, reference_state, reference_losses = references[configuration]
            output = os.path.join(work, "trial_%03d" % trial)
            command = train_command(mixgpt, data, output, configuration, arguments.steps,
                                    arguments.checkpoint_interval)
            # Odd trials: inside the k-th checkpoint write, k at random; even ones: at a random time.
            inside_write = rng.randint(1, arguments.steps // arguments.checkpoint_interval) if trial % 2 else 0
            delay = rng.uniform(0.05, 0.9) * seconds
            status = interrupt(command, kill_signal, delay, inside_write, output)
            checkpoints = os.path.join(output, "checkpoints")
            left = sorted(os.listdir(checkpoints)) if os.path.isdir(checkpoints) else []
            corrupt = [name for name in left if re.fullmatch(r"step_\d{8}\.h5", name)
                       and checkpoint_problem(os.path.join(checkpoints, name))]
            counts["corrupt"] += len(corrupt)
            resumes = 0
            while True:
                resumes += 1
                # if-present: a run killed before its first checkpoint starts again from scratch.
                result = subprocess.run(command + ["--resume", "if-present"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
                if result.returncode == 0 or resumes == 3:
                    break
            resumed = result.returncode == 0
            identical = one_history = False
            if resumed:
                state = final_state(output, arguments.steps)
                identical = all(np.array_equal(state[name], reference_state[name]) for name in state)
                losses, repeated = train_losses(output)
                one_history = not repeated and losses == reference_losses
            stale = [name for name in os.listdir(checkpoints) if ".tmp-" in name] if os.path.isdir(checkpoints) else []
            stale += [name for name in os.listdir(output) if ".tmp-" in name] if os.path.isdir(output) else []
            counts["interrupted"] += status < 0
            counts["resumed"] += resumed
            counts["identical"] += identical
            counts["one_history"] += one_history
            counts["stale"] += len(stale)
            print("trial %2d %-12s %s after %s: left %s%s; resume %s, %s, metrics %s%s" % (
                trial, configuration, arguments.signal,
                "checkpoint write %d began" % inside_write if inside_write else "%.2f s" % delay,
                ", ".join(left) or "nothing", " (exit %d)" % status if status >= 0 else "",
                "ok" if resumed else "FAILED: " + result.stderr.strip().splitlines()[-1],
                "bit-identical" if identical else "DIFFERENT",
                "one history" if one_history else "NOT one history",
                "; corrupt: " + ", ".join(corrupt) if corrupt else "") +
                ("; stale: " + ", ".join(stale) if stale else ""), flush=True)
        n = arguments.trials
        print("trials %d (%d interrupted, the others had finished): resumed %d, corrupt %d, bit-identical %d, "
              "stale temporaries %d, metrics one-history %d"
              % (n, counts["interrupted"], counts["resumed"], counts["corrupt"], counts["identical"],
                 counts["stale"], counts["one_history"]))
        ok = (counts["resumed"] == counts["identical"] == counts["one_history"] == n and counts["corrupt"] == 0
              and counts["stale"] == 0)
        return 0 if ok else 1
    finally:
        if arguments.keep:
            print("kept " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
