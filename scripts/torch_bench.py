#!/usr/bin/env python3
"""PyTorch's own training throughput for the same GPT shapes as `mixgpt bench`: the rival
mixgpt is timed against, in the same run on the same GPU.

Per precision: fp32; tf32 (TF32 matmuls); bf16 and fp16 with torch.autocast (fp16 with a
GradScaler), each with fused AdamW and scaled_dot_product_attention (flash backend where
PyTorch picks it), eager and, with --compile, under torch.compile (every precision eager first,
then compiled; each row is printed when measured, and a run that fails is reported and the others
go on). Timing: warm-up steps (their time, torch.compile's included, is reported), then CUDA
events around each timed step, median. The embedding is padded to a multiple of 128 rows as in
mixgpt; model FLOPs per token are counted as mixgpt counts them (study/flops.h):
6N + 6*L*T*C, N = parameters without the vocabulary padding.

Runs on a GPU host with a recent PyTorch; on a CPU (Debian's python3-torch) it runs too, for a
smoke test of the script, and says its timings are host timings.
Usage: torch_bench.py --model d12 -b 16 -t 1024 --precision fp32,tf32,bf16,fp16 [--compile] [--json]
       [--jsonl FILE]   (each row, and each failure, appended to FILE as one JSON line when done)
"""
import argparse
import datetime
import gc
import json
import math
import sys
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESET_DEPTHS = {"d2": 2, "d6": 6, "d12": 12, "d24": 24, "d36": 36, "d48": 48}


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.attn_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.mlp_proj = nn.Linear(4 * n_embd, n_embd)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        heads = lambda t: t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, H, T, hd)
        q, k, v = heads(q), heads(k), heads(v)
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch < 2.0
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.n_head)
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            y = F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v
        return self.attn_proj(y.transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, vocab_size, max_seq_len):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(max_seq_len, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        # GPT-2's initialisation, like mixgpt's: PyTorch's default N(0, 1) embedding, tied to the
        # output, gives logits in the hundreds, and fp16 steps that overflow are skipped.
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(T, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # tied output projection
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def padded_vocab_size(vocab_size):
    return (vocab_size + 127) // 128 * 128


def flops_per_token(model, arguments, n_layer, n_embd):
    padding = (padded_vocab_size(arguments.vocab_size) - arguments.vocab_size) * n_embd
    parameters = sum(p.numel() for p in model.parameters()) - padding
    return 6 * parameters + 6 * n_layer * arguments.seq_len * n_embd


def grad_scaler(enabled):
    if hasattr(torch.amp, "GradScaler"):  # PyTorch >= 2.3; torch.cuda.amp.GradScaler is deprecated
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def time_precision(arguments, precision, compiled, device):
    torch.manual_seed(arguments.seed)
    # One switch for float32 matmuls: PyTorch 2.9+ deprecates allow_tf32 and fails when its legacy and
    # new TF32 flags disagree. The model has no convolutions, so cuDNN's flags stay as they are.
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    depth = PRESET_DEPTHS[arguments.model]
    n_layer, n_head, n_embd = depth, depth, 64 * depth
    model = GPT(n_layer, n_head, n_embd, padded_vocab_size(arguments.vocab_size), arguments.seq_len).to(device)
    # CUDA: the fused kernel; CPU: the multi-tensor (foreach) path, PyTorch's fastest there.
    fused = {"fused": True} if device.type == "cuda" else {"foreach": True}
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, **fused)
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = grad_scaler(precision == "fp16" and device.type == "cuda")
    step_model = torch.compile(model) if compiled else model
    tokens = torch.randint(0, arguments.vocab_size, (arguments.batch_size, arguments.seq_len + 1), device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        if autocast_dtype is None:
            loss = step_model(tokens[:, :-1], tokens[:, 1:])
        else:
            with torch.autocast(device.type, dtype=autocast_dtype):
                loss = step_model(tokens[:, :-1], tokens[:, 1:])
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        return loss

    began = time.perf_counter()
    for _ in range(arguments.warmup_steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    warmup_seconds = time.perf_counter() - began
    milliseconds = []
    for _ in range(arguments.steps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = step()
            end.record()
            end.synchronize()
            milliseconds.append(start.elapsed_time(end))
        else:
            began = time.perf_counter()
            loss = step()
            milliseconds.append(1e3 * (time.perf_counter() - began))
    ms = statistics.median(milliseconds)
    tokens_per_step = arguments.batch_size * arguments.seq_len
    return {
        "precision": precision,
        "compiled": compiled,
        "warmup_seconds": warmup_seconds,
        "ms_per_step": ms,
        "tokens_per_second": tokens_per_step / (ms / 1e3),
        "tflops": flops_per_token(model, arguments, n_layer, n_embd) * tokens_per_step / (ms / 1e3) / 1e12,
        "peak_memory_bytes": torch.cuda.max_memory_allocated() if device.type == "cuda" else 0,
        "last_loss": loss.item(),
    }


def append_line(path, record):
    """Appends one JSON line to path (when given), so a run stopped later keeps what it measured."""
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(record) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="d12", choices=sorted(PRESET_DEPTHS))
    parser.add_argument("--vocab-size", type=int, default=50257, help="as mixgpt bench; padded to 128")
    parser.add_argument("-b", "--batch-size", type=int, default=16)
    parser.add_argument("-t", "--seq-len", type=int, default=1024)
    parser.add_argument("--precision", default="fp32,tf32,bf16,fp16")
    parser.add_argument("--compile", action="store_true", help="also time under torch.compile")
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--jsonl", help="append each result (or failure) to this file as one JSON line when done")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (torch.set_num_threads; 0: PyTorch's default)")
    arguments = parser.parse_args()
    unknown = set(arguments.precision.split(",")) - {"fp32", "tf32", "bf16", "fp16"}
    if unknown:
        parser.error(f"--precision: unknown {', '.join(sorted(unknown))} (fp32, tf32, bf16, fp16)")

    if arguments.compile and not hasattr(torch, "compile"):
        sys.exit(f"torch_bench: --compile needs PyTorch 2.0 or newer (this is {torch.__version__})")
    if arguments.threads > 0:
        torch.set_num_threads(arguments.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name() if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads, host timings)"
    if not arguments.json:
        print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}) on {name}, "
              f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}: {arguments.model}, "
              f"B={arguments.batch_size}, T={arguments.seq_len}, vocabulary {arguments.vocab_size}")
        print(f"{'precision':>9} {'compile':>8} {'warm-up s':>9} {'ms/step':>10} {'tokens/s':>12} {'TFLOP/s':>9} "
              f"{'peak GiB':>9}", flush=True)
    results, failures = [], 0
    for compiled in [False, True] if arguments.compile else [False]:
        for precision in arguments.precision.split(","):
            if compiled:
                from torch import _dynamo

                _dynamo.reset()  # no guards or graphs (nor what they hold) left from the previous run
            gc.collect()  # the previous run's model and optimizer state leave the device
            if device.type == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            try:
                r = time_precision(arguments, precision, compiled, device)
            except Exception as error:  # noqa: BLE001 -- report it, time the other runs
                failures += 1
                reason = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
                print(f"{precision:>9} {str(compiled):>8} failed: {reason}", file=sys.stderr, flush=True)
                append_line(arguments.jsonl, {"precision": precision, "compiled": compiled, "error": reason})
                continue
            results.append(r)
            append_line(arguments.jsonl, dict(r, device=name, model=arguments.model,
                                              batch_size=arguments.batch_size, seq_len=arguments.seq_len))
            if not arguments.json:
                print(f"{r['precision']:>9} {str(r['compiled']):>8} {r['warmup_seconds']:>9.1f} "
                      f"{r['ms_per_step']:>10.2f} {r['tokens_per_second']:>12.0f} {r['tflops']:>9.2f} "
                      f"{r['peak_memory_bytes'] / 2**30:>9.2f}", flush=True)
    if arguments.json:
        print(json.dumps({"device": name, "torch": torch.__version__, "model": arguments.model,
                          "batch_size": arguments.batch_size, "seq_len": arguments.seq_len,
                          "vocab_size": arguments.vocab_size, "results": results}, indent=2))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
