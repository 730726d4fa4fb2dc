#!/usr/bin/python3
"""mixgpt's CPU backend against PyTorch on the CPU, side by side in one run: training steps of the
same GPT shapes (AdamW and gradient clipping included), alternating the two so that both see the
same machine load, several rounds each.

Per shape and round: one `mixgpt bench --device cpu` process per precision (fp32 and the emulated
bf16/fp16) and one `scripts/torch_bench.py` process in fp32 (PyTorch eager, foreach AdamW, same
thread count). Each process reports the median of its timed steps; the table gives the median over
rounds, the spread (min-max), and the peak resident memory of the process (ru_maxrss from wait4;
mixgpt's own count of what it allocated beside it). It ends with the ratios the CPU issue asks
for: mixgpt fp32 speed over PyTorch's, and each emulated precision's step time over fp32's.

Both get the same OpenMP wait: GOMP_SPINCOUNT=3000, mixgpt's own default (kernels/cpu/README.md,
"Threads under load"), unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set already; PyTorch's libgomp
would otherwise spin 100 times longer at each barrier, which costs it dearly when the machine is
shared.

Needs Debian's python3-torch for the PyTorch rows (they are skipped, said so, without it).
Usage: cpu_vs_torch.py [--mixgpt build/mixgpt] [--shapes d6:8192:4:64,d6:8192:8:256] [--rounds 5]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

SCRIPTS = os.path.dirname(os.path.abspath(__file__))


def run_measured(command):
    """Runs command; returns (stdout, peak resident bytes) or raises with its stderr's last line."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            lines = err.read().decode(errors="replace").strip().splitlines() or ["(no output)"]
            raise RuntimeError(f"{command[0]} exited {process.returncode}: {lines[-1]}")
        return out.read().decode(), usage.ru_maxrss * 1024


def mixgpt_step(arguments, shape, precision):
    model, vocab, batch, seq = shape
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        command = [arguments.mixgpt, "bench", "--device", "cpu", "--model", model, "--vocab-size", str(vocab),
                   "-b", str(batch), "-t", str(seq), "--precision", precision, "--steps", str(arguments.steps),
                   "--warmup-steps", str(arguments.warmup_steps), "--threads", str(arguments.threads),
                   "--json-out", report.name]
        _, rss = run_measured(command)
        row = json.load(open(report.name))["results"][0]
    return {"ms": row["ms_per_step"], "rss": rss, "allocated": row["peak_memory_bytes"]}


def torch_step(arguments, shape):
    model, vocab, batch, seq = shape
    command = [sys.executable, os.path.join(SCRIPTS, "torch_bench.py"), "--model", model, "--vocab-size",
               str(vocab), "-b", str(batch), "-t", str(seq), "--precision", "fp32", "--steps",
               str(arguments.steps), "--warmup-steps", str(arguments.warmup_steps), "--threads",
               str(arguments.threads), "--json"]
    text, rss = run_measured(command)
    row = json.loads(text)["results"][0]
    return {"ms": row["ms_per_step"], "rss": rss, "allocated": None}


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        fields = item.split(":")
        if len(fields) != 4:
            raise argparse.ArgumentTypeError(f"shape '{item}': expected model:vocab:B:T, e.g. d6:8192:4:64")
        shapes.append((fields[0], int(fields[1]), int(fields[2]), int(fields[3])))
    return shapes


def torch_available():
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


def mib(value):
    return "-" if value is None else f"{value / 2**20:.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--mixgpt", default="build/mixgpt")
    parser.add_argument("--shapes", type=parse_shapes, default=parse_shapes("d6:8192:4:64,d6:8192:8:256"),
                        help="model:vocab:B:T, comma-separated")
    parser.add_argument("--precisions", default="fp32,bf16,fp16", help="mixgpt's (PyTorch runs fp32)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per process")
    parser.add_argument("--warmup-steps", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()
    if not os.access(arguments.mixgpt, os.X_OK):
        sys.exit(f"cpu_vs_torch: {arguments.mixgpt}: not an executable (build it with make, or give --mixgpt)")
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", "3000")
    with_torch = torch_available()
    load = open("/proc/loadavg").read().split()[:3]
    print(f"cpu_vs_torch {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}, "
          f"{os.cpu_count()} processors, {arguments.threads} threads, load average {' '.join(load)} at start; "
          f"{arguments.rounds} alternating rounds of {arguments.steps} timed steps (+{arguments.warmup_steps}); "
          f"OpenMP waits: {os.environ.get('OMP_WAIT_POLICY', 'GOMP_SPINCOUNT=' + os.environ.get('GOMP_SPINCOUNT', ''))}")
    if not with_torch:
        print("PyTorch is not installed for this interpreter (Debian: apt install python3-torch): "
              "its rows are skipped")
    print(f"{'shape':<18} {'implementation':<24} {'ms/step':>9} {'spread':>15} {'peak RSS MiB':>12} "
          f"{'allocated MiB':>13}", flush=True)
    summary = []
    for shape in arguments.shapes:
        runs = {f"mixgpt {p}": [] for p in arguments.precisions.split(",")}
        if with_torch:
            runs["pytorch fp32"] = []
        for _ in range(arguments.rounds):
            for precision in arguments.precisions.split(","):
                runs[f"mixgpt {precision}"].append(mixgpt_step(arguments, shape, precision))
            if with_torch:
                runs["pytorch fp32"].append(torch_step(arguments, shape))
        label = f"{shape[0]} V{shape[1]} B{shape[2]} T{shape[3]}"
        medians = {}
        for name, rows in runs.items():
            times = [row["ms"] for row in rows]
            medians[name] = statistics.median(times)
            allocated = max(row["allocated"] for row in rows) if rows[0]["allocated"] is not None else None
            print(f"{label:<18} {name:<24} {medians[name]:>9.1f} {min(times):>7.1f}-{max(times):<7.1f} "
                  f"{mib(max(row['rss'] for row in rows)):>12} {mib(allocated):>13}", flush=True)
        summary.append((label, medians))
    print()
    for label, medians in summary:
        fp32 = medians.get("mixgpt fp32")
        parts = []
        if fp32 and "pytorch fp32" in medians:
            parts.append(f"mixgpt fp32 is {medians['pytorch fp32'] / fp32:.2f}x PyTorch's speed")
        for name, value in medians.items():
            if fp32 and name.startswith("mixgpt ") and name != "mixgpt fp32":
                parts.append(f"{name.split()[1]} step {value / fp32:.2f}x fp32's")
        print(f"{label}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
