#!/usr/bin/env -S /usr/bin/python3
"""Where a flash attention backward's error comes from, emulated in numpy (no GPU needed).

The numbers in the Numerics notes of kernels/cuda/flash_attention.h come from here. Each
variant computes causal attention's gradients as a bf16 (or fp16) tensor-core kernel would:
inputs stored in the low precision, products accumulated in fp32, P recomputed in fp32 from
the forward's lse, and the operands of the P^T dO, dS K and dS^T Q products rounded to the low
precision. The variants differ where FlashAttention-2 and mixgpt differ:

  fa2            D = rowsum(dO * O) from the stored (rounded) O; dS rounded once
  exact D        D = rowsum(P * dP) recomputed in fp32; dS rounded once
  mixgpt         D recomputed; dS enters as hi + lo parts (two products each)

Each result's error against float64 is divided by that of "cpu", the same computation in fp32
arithmetic with only the results stored in the low precision, as the CPU backend does it: the
yardstick of the project's 2x rule. (Plain storage error is no yardstick where the results are
tiny from cancellation, as dq and dk are for a peaked softmax: fp32 arithmetic alone misses
them by several times their fp16 storage error.) Printed: the worst and the median ratio over
seeds, per case (q and k standard deviation 2: a spread softmax; 10: logits of magnitude ~100).

    /usr/bin/python3 bench/kernel_lab/flash_numerics.py [--seeds 40] [--dtype bf16|fp16]
"""
import argparse

import numpy as np

CASES = [(64, 77, 2.0), (128, 150, 2.0), (64, 130, 10.0), (128, 100, 10.0)]  # (head_dim, T, q/k std)


def rounder(dtype):
    if dtype == "fp16":
        return lambda x: np.asarray(x, np.float32).astype(np.float16).astype(np.float32)

    def bf16(x):  # round to nearest even on the upper 16 bits
        bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return bits.astype(np.uint32).view(np.float32)

    return bf16


def reference(q, k, v, dout):
    """float64 forward and backward: out, lse, dq, dk, dv."""
    q, k, v, dout = (x.astype(np.float64) for x in (q, k, v, dout))
    length, head_dim = q.shape
    scale = 1 / np.sqrt(head_dim)
    s = np.where(np.tril(np.ones((length, length))) > 0, q @ k.T * scale, -np.inf)
    row_max = s.max(1, keepdims=True)
    e = np.exp(s - row_max)
    p = e / e.sum(1, keepdims=True)
    dp = dout @ v.T
    ds = p * (dp - (p * dp).sum(1, keepdims=True))
    lse = (row_max + np.log(e.sum(1, keepdims=True)))[:, 0]
    return p @ v, lse, ds @ k * scale, ds.T @ q * scale, p.T @ dout


def emulated_gradients(variant, q, k, v, dout, out_stored, lse, low):
    """dq, dk, dv as the variant computes and stores them ("cpu": fp32 arithmetic throughout)."""
    length, head_dim = q.shape
    scale = np.float32(1 / np.sqrt(head_dim))
    causal = np.tril(np.ones((length, length))) > 0
    with np.errstate(over="ignore"):
        p = np.where(causal, np.exp((q @ k.T) * scale - lse[:, None]), 0).astype(np.float32)
    dp = (dout @ v.T).astype(np.float32)
    if variant == "fa2":
        delta = (out_stored * dout).sum(1, dtype=np.float32)
    else:
        delta = (p * dp).sum(1, dtype=np.float32)
    ds = p * (dp - delta[:, None])
    if variant == "cpu":
        return low((ds @ k) * scale), low((ds.T @ q) * scale), low(p.T @ dout)
    high = low(ds)
    parts = [high, low(ds - high)] if variant == "mixgpt" else [high]
    dq = sum(part @ k for part in parts) * scale
    dk = sum(part.T @ q for part in parts) * scale
    return low(dq), low(dk), low(low(p).T @ dout)


def relative(values, ref):
    return np.linalg.norm(values - ref) / np.linalg.norm(ref)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    args = parser.parse_args()
    low = rounder(args.dtype)
    variants = ("fa2", "exact D", "mixgpt")
    print(f"{args.dtype}: error / error of fp32 arithmetic, worst (median) over {args.seeds} seeds")
    print(f"{'hd':>4} {'T':>4} {'std':>5} {'out':>12}  " + "  ".join(f"{v + ' ' + g:>18}" for v in variants
                                                             for g in ("dq", "dk", "dv")))
    for head_dim, length, std in CASES:
        ratios = {}
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            scales = np.r_[np.full(2 * head_dim, std), np.ones(head_dim)].astype(np.float32)
            qkv = low(rng.standard_normal((length, 3 * head_dim)).astype(np.float32) * scales)
            q, k, v = qkv[:, :head_dim], qkv[:, head_dim:2 * head_dim], qkv[:, 2 * head_dim:]
            dout = low(rng.standard_normal((length, head_dim)).astype(np.float32))
            out, lse, dq, dk, dv = reference(q, k, v, dout)
            causal = np.tril(np.ones((length, length))) > 0
            p = np.where(causal, np.exp((q @ k.T) / np.sqrt(head_dim) - lse[:, None]), 0).astype(np.float32)
            out_stored = low(low(p) @ v)  # the forward: P rounded for P V, out stored
            ratios.setdefault("out", []).append(relative(out_stored, out) / relative(low(p @ v), out))
            lse32 = lse.astype(np.float32)
            yardstick = emulated_gradients("cpu", q, k, v, dout, out_stored, lse32, low)
            for variant in variants:
                got = emulated_gradients(variant, q, k, v, dout, out_stored, lse32, low)
                for name, values, cpu, ref in zip(("dq", "dk", "dv"), got, yardstick, (dq, dk, dv)):
                    ratios.setdefault((variant, name), []).append(relative(values, ref) / relative(cpu, ref))
        cells = [f"{max(r):6.2f} ({np.median(r):4.2f})" for r in ratios.values()]
        print(f"{head_dim:>4} {length:>4} {std:>5} {cells[0]:>12}  " + "  ".join(f"{c:>18}" for c in cells[1:]))


if __name__ == "__main__":
    main()
