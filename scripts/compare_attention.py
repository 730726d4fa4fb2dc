#!/usr/bin/env python3
"""Causal attention forward + backward, side by side on one GPU in one run: mixgpt's flash
kernels (timed by the kernel lab) against PyTorch's scaled_dot_product_attention with its
FlashAttention-2 backend and its cuDNN backend, BF16.

Shapes are those of the kernel lab: 12 heads, B*T = 16384 tokens, T in {512, 1024, 2048, 4096},
head dimensions 64 and 128 (C = 12 * hd). PyTorch gets q, k, v as strided (B, H, T, hd) views of
one (B, T, 3, H, hd) tensor, the layout mixgpt's qkv (B, T, 3C) has, and its gradients come
from torch.autograd.grad (no accumulation into .grad). Each timed sample is a batch of runs
between two CUDA events (so Python's launch overhead stays hidden), inputs rotate through sets
larger than twice the L2 cache, and the median over samples is reported.

FLOP convention (the lab's and FlashAttention-2's): forward 4*B*H*T^2*hd/2 under the causal
mask, backward 2.5 times that; TFLOP/s of forward + backward = 3.5 * forward FLOPs / time.

Runs on the GPU host (PyTorch 2.x with CUDA):
    python3 scripts/compare_attention.py build/mixgpt_kernel_lab [--samples 30] [--json FILE]
    python3 scripts/compare_attention.py --lab-json FILE   # what `mixgpt_kernel_lab --attention-only
                                                            # --json-out FILE` wrote (scripts/gpu_lease.sh)
--lengths 1024 times only those T (the lab's --attention-lengths).
A lab that failed its validation still gives its timings; its failed rows are listed.
"""
import argparse
import datetime
import itertools
import json
import platform
import statistics
import subprocess
import sys

TOKENS = 16384
HEADS = 12
LENGTHS = (512, 1024, 2048, 4096)
HEAD_DIMS = (64, 128)


def forward_flops(batch, heads, length, head_dim):
    return 4.0 * batch * heads * length * length * head_dim / 2


def shapes(lengths=LENGTHS):
    return [(TOKENS // length, length, HEADS, head_dim) for head_dim in HEAD_DIMS for length in lengths]


def median_ms(run, warmup, samples, batch):
    """Median over samples of (CUDA-event time of `batch` calls of run()) / batch, in ms."""
    import torch

    for _ in range(warmup):
        run()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    for start, end in zip(starts, ends):
        start.record()
        for _ in range(batch):
            run()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) / batch for start, end in zip(starts, ends))


def torch_times(backend, shape, args):
    """(forward ms, backward ms) of SDPA with one backend, or None where it cannot run the shape."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    batch, length, heads, head_dim = shape
    options = dict(device="cuda", dtype=torch.bfloat16)
    set_bytes = batch * length * heads * head_dim * 2 * (3 + 1 + 1 + 3)  # qkv, out, dout, dqkv
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    sets = 2 * l2_bytes // set_bytes + 1
    inputs = []
    for _ in range(sets):
        qkv = torch.randn(batch, length, 3, heads, head_dim, **options)
        q, k, v = (qkv[:, :, i].transpose(1, 2).detach().requires_grad_() for i in range(3))
        inputs.append((q, k, v, torch.randn(batch, heads, length, head_dim, **options)))
    counter = itertools.count()

    def forward():
        q, k, v, _ = inputs[next(counter) % sets]
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def forward_backward():
        q, k, v, dout = inputs[next(counter) % sets]
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(out, (q, k, v), dout)

    try:
        with sdpa_kernel(backend):
            forward_ms = median_ms(forward, args.warmup, args.samples, args.batch)
            total_ms = median_ms(forward_backward, args.warmup, args.samples, args.batch)
    except RuntimeError as error:  # the backend does not support this shape or device
        print(f"note: {backend.name} at {shape}: {str(error).splitlines()[0]}", file=sys.stderr)
        return None
    return forward_ms, total_ms - forward_ms


def production_sizes(report, source):
    """The report if the lab ran at its production sizes (a smoke run's shapes match none here), else None."""
    if report is not None and report.get("sizes", "production") != "production":
        print(f"compare_attention: {source} ran at the lab's {report['sizes']} sizes; its rows are left out",
              file=sys.stderr)
        return None
    return report


def lab_report(args):
    """The kernel lab's attention JSON: read from --lab-json, or from running the lab; None if there is none."""
    if args.lab_json:
        try:
            with open(args.lab_json) as file:
                return production_sizes(json.load(file), args.lab_json)
        except (OSError, ValueError) as error:
            print(f"compare_attention: no lab results in {args.lab_json}: {error}", file=sys.stderr)
            return None
    command = [args.lab, "--attention-only", "--json", "--samples", str(args.samples), "--warmup", str(args.warmup),
               "--attention-lengths", ",".join(str(length) for length in args.lengths)]
    result = subprocess.run(command, capture_output=True, text=True)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        print(f"compare_attention: {' '.join(command)} exited with {result.returncode}", file=sys.stderr)
    try:
        return production_sizes(json.loads(result.stdout), args.lab)
    except ValueError:
        return None


def lab_times(report):
    """{(T, head_dim): (forward ms, backward ms)} from the kernel lab's JSON."""
    times = {}
    for row in report["rows"] if report else []:
        key = (row["dims"]["T"], row["dims"]["head_dim"])
        forward_ms, backward_ms = times.get(key, (None, None))
        if row["kernel"] == "flash_attention_forward":
            forward_ms = row["milliseconds"]
        elif row["kernel"] == "flash_attention_backward":
            backward_ms = row["milliseconds"]
        times[key] = (forward_ms, backward_ms)
    return times


def cell(times, flops):
    """ms forward / backward / total and TFLOP/s of forward + backward, or n/a."""
    if times is None or None in times:
        return ["n/a"] * 4
    forward_ms, backward_ms = times
    total_ms = forward_ms + backward_ms
    return [f"{forward_ms:.3f}", f"{backward_ms:.3f}", f"{total_ms:.3f}", f"{3.5 * flops / total_ms / 1e9:.0f}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lab", nargs="?", help="path of the kernel lab binary, e.g. build/mixgpt_kernel_lab")
    parser.add_argument("--lab-json", help="the lab's --attention-only --json output, instead of running LAB")
    parser.add_argument("--samples", type=int, default=30, help="timed samples per measurement (median)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs first")
    parser.add_argument("--batch", type=int, default=10, help="PyTorch runs per timed sample")
    parser.add_argument("--json", help="also write the whole comparison to this file")
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)),
                        help="comma-separated T to time (default: all of the lab's)")
    args = parser.parse_args()
    args.lengths = [int(length) for length in args.lengths.split(",")]
    if not set(args.lengths) <= set(LENGTHS):
        parser.error(f"--lengths: the lab's T are {', '.join(map(str, LENGTHS))}")
    if (args.lab is None) == (args.lab_json is None):
        parser.error("give either LAB or --lab-json")

    import torch
    from torch.nn.attention import SDPBackend

    if not torch.cuda.is_available():
        sys.exit("compare_attention: PyTorch sees no CUDA device")
    report = lab_report(args)
    lab = lab_times(report)
    results = []
    for shape in shapes(args.lengths):
        batch, length, heads, head_dim = shape
        results.append(
            {
                "B": batch,
                "T": length,
                "H": heads,
                "head_dim": head_dim,
                "forward_flops": forward_flops(batch, heads, length, head_dim),
                "mixgpt": lab.get((length, head_dim)),
                "torch_flash": torch_times(SDPBackend.FLASH_ATTENTION, shape, args),
                "torch_cudnn": torch_times(SDPBackend.CUDNN_ATTENTION, shape, args),
            }
        )

    device = torch.cuda.get_device_name(0)
    lab_device = f"{report['device']['name']}, driver {report['device']['driver']}" if report else "no results"
    print(f"device {device}; torch {torch.__version__} (CUDA {torch.version.cuda}); lab: {lab_device}; "
          f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}; {platform.node()}")
    failed = [f"{row['kernel']} {row['shape']}" for row in (report["rows"] if report else []) if not row["valid"]]
    if failed:
        print("mixgpt rows that FAILED the lab's validation (their times are shown all the same): " + "; ".join(failed))
    print("ms forward / backward / total and TFLOP/s of forward+backward (causal, bf16; FLOPs 3.5 x 4BHT^2hd/2);")
    print("speed vs flash: torch flash total / mixgpt total (above 1: mixgpt faster)\n")
    header = ["T", "hd", "B", "H"]
    for name in ("mixgpt", "torch flash", "torch cudnn"):
        header += [f"{name} fwd", "bwd", "total", "TFLOP/s"]
    header.append("mixgpt speed vs flash")
    table = [header]
    for r in results:
        row = [str(r["T"]), str(r["head_dim"]), str(r["B"]), str(r["H"])]
        for name in ("mixgpt", "torch_flash", "torch_cudnn"):
            row += cell(r[name], r["forward_flops"])
        ours, theirs = r["mixgpt"], r["torch_flash"]
        speed = "n/a" if ours is None or theirs is None or None in ours else f"{sum(theirs) / sum(ours):.2f}x"
        table.append(row + [speed])
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        print("  ".join(text.rjust(width) for text, width in zip(line, widths)))

    if args.json:
        with open(args.json, "w") as out:
            json.dump({"device": device, "torch": torch.__version__, "command": " ".join(sys.argv),
                       "lab": report, "results": results}, out, indent=2)


if __name__ == "__main__":
    main()
