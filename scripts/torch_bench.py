#!/usr/bin/env -S /usr/bin/python3
"""PyTorch's own training throughput for the same GPT shapes as `mixgpt bench`: the rival
mixgpt is timed against, in the same run on the same GPU.

Per precision: fp32; tf32 (TF32 matmuls); bf16 and fp16 with torch.autocast (fp16 with a
GradScaler), each with fused AdamW and scaled_dot_product_attention (flash backend where
PyTorch picks it), eager and, with --compile, under torch.compile. Timing: warm-up steps, then
CUDA events around each timed step, median. Model FLOPs per token are counted as mixgpt counts
them (train/flops.h): 6N + 6*L*T*C, N = parameters without the vocabulary padding.

Runs on a GPU host with a recent PyTorch; on a CPU (Debian's python3-torch) it runs too, for a
smoke test of the script, and says its timings are host timings.
Usage: torch_bench.py --model d12 -b 16 -t 1024 --precision fp32,tf32,bf16,fp16 [--compile] [--json]
"""
import argparse
import json
import math
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

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(T, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # tied output projection
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def flops_per_token(model, n_layer, n_embd, seq_len):
    parameters = sum(p.numel() for p in model.parameters())
    return 6 * parameters + 6 * n_layer * seq_len * n_embd


def time_precision(arguments, precision, compiled, device):
    torch.manual_seed(arguments.seed)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    depth = PRESET_DEPTHS[arguments.model]
    n_layer, n_head, n_embd = depth, depth, 64 * depth
    model = GPT(n_layer, n_head, n_embd, arguments.vocab_size, arguments.seq_len).to(device)
    fused = {"fused": True} if device.type == "cuda" else {}
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, **fused)
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.cuda.amp.GradScaler(enabled=precision == "fp16" and device.type == "cuda")
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

    for _ in range(arguments.warmup_steps):
        step()
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
        "ms_per_step": ms,
        "tokens_per_second": tokens_per_step / (ms / 1e3),
        "tflops": flops_per_token(model, n_layer, n_embd, arguments.seq_len) * tokens_per_step / (ms / 1e3) / 1e12,
        "peak_memory_bytes": torch.cuda.max_memory_allocated() if device.type == "cuda" else 0,
        "last_loss": loss.item(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="d12", choices=sorted(PRESET_DEPTHS))
    parser.add_argument("--vocab-size", type=int, default=50304)
    parser.add_argument("-b", "--batch-size", type=int, default=16)
    parser.add_argument("-t", "--seq-len", type=int, default=1024)
    parser.add_argument("--precision", default="fp32,tf32,bf16,fp16")
    parser.add_argument("--compile", action="store_true", help="also time under torch.compile")
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    arguments = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name() if device.type == "cuda" else "cpu (host timings)"
    results = []
    for precision in arguments.precision.split(","):
        for compiled in ([False, True] if arguments.compile else [False]):
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            results.append(time_precision(arguments, precision, compiled, device))
    report = {"device": name, "torch": torch.__version__, "model": arguments.model,
              "batch_size": arguments.batch_size, "seq_len": arguments.seq_len, "results": results}
    if arguments.json:
        print(json.dumps(report, indent=2))
        return
    print(f"PyTorch {torch.__version__} on {name}: {arguments.model}, B={arguments.batch_size}, T={arguments.seq_len}")
    print(f"{'precision':>9} {'compile':>8} {'ms/step':>10} {'tokens/s':>12} {'TFLOP/s':>9} {'peak GiB':>9}")
    for r in results:
        print(f"{r['precision']:>9} {str(r['compiled']):>8} {r['ms_per_step']:>10.2f} {r['tokens_per_second']:>12.0f} "
              f"{r['tflops']:>9.2f} {r['peak_memory_bytes'] / 2**30:>9.2f}")


if __name__ == "__main__":
    main()
