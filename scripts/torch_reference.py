#!/usr/bin/env -S /usr/bin/python3
"""The GPT of model/ rebuilt in PyTorch, computed in float64: the reference the
CPU backend is checked against (tests/test_torch_reference.cpp).

Reads an HDF5 file written by mixgpt (scripts/make_fixtures.sh):
  attributes of /   n_layer, n_head, n_embd, vocab_size, max_seq_len
  parameters/<name> every weight under its GPT-2 name, matrices (out, in) like
                    torch.nn.Linear, wte (vocab_size, n_embd) without padding
  tokens, targets   (B, T) int32
and writes, in float64:
  loss              mean cross-entropy over the B*T positions
  losses            (B, T) per-position cross-entropy
  logits            (B, T, vocab_size)
  gradients/<name>  d loss / d parameter, shaped as the parameter

Runs on Debian's python3-torch (CPU) or any newer PyTorch.
Usage: torch_reference.py INPUT.h5 OUTPUT.h5
"""
import argparse
import math
import os

import h5py
import numpy as np
import torch
import torch.nn.functional as F

CONFIG_FIELDS = ("n_layer", "n_head", "n_embd", "vocab_size", "max_seq_len")


def read_input(path):
    with h5py.File(path, "r") as file:
        config = {field: int(file.attrs[field]) for field in CONFIG_FIELDS}
        parameters = {
            name: torch.tensor(np.asarray(data, dtype=np.float64), requires_grad=True)
            for name, data in file["parameters"].items()
        }
        tokens = torch.tensor(np.asarray(file["tokens"], dtype=np.int64))
        targets = torch.tensor(np.asarray(file["targets"], dtype=np.int64))
    return config, parameters, tokens, targets


def layer_norm(x, p, prefix):
    return F.layer_norm(x, x.shape[-1:], p[prefix + ".weight"], p[prefix + ".bias"], eps=1e-5)


def linear(x, p, prefix):
    return F.linear(x, p[prefix + ".weight"], p[prefix + ".bias"])


def causal_self_attention(x, p, prefix, n_head):
    B, T, C = x.shape
    q, k, v = linear(x, p, prefix + ".c_attn").split(C, dim=2)  # (B, T, C) each
    heads = lambda t: t.view(B, T, n_head, C // n_head).transpose(1, 2)  # (B, H, T, hd)
    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(C // n_head)  # (B, H, T, T)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    y = F.softmax(scores, dim=-1) @ v  # (B, H, T, hd)
    return linear(y.transpose(1, 2).reshape(B, T, C), p, prefix + ".c_proj")


def gpt_logits(config, p, tokens):
    B, T = tokens.shape
    x = p["wte"][tokens] + p["wpe"][:T]  # (B, T, C)
    for layer in range(config["n_layer"]):
        h = f"h.{layer}"
        x = x + causal_self_attention(layer_norm(x, p, h + ".ln_1"), p, h + ".attn", config["n_head"])
        mlp = F.gelu(linear(layer_norm(x, p, h + ".ln_2"), p, h + ".mlp.c_fc"), approximate="tanh")
        x = x + linear(mlp, p, h + ".mlp.c_proj")
    x = layer_norm(x, p, "ln_f")
    return x @ p["wte"].T  # (B, T, V), output projection tied to wte


def write_output(path, loss, losses, logits, parameters):
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with h5py.File(temporary, "w") as file:
            file["loss"] = loss.item()
            file["losses"] = losses.detach().numpy()
            file["logits"] = logits.detach().numpy()
            gradients = file.create_group("gradients")
            for name, tensor in parameters.items():
                gradients[name] = tensor.grad.numpy()
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="HDF5 file written by mixgpt")
    parser.add_argument("output", help="HDF5 file to write")
    arguments = parser.parse_args()
    torch.set_default_dtype(torch.float64)

    config, parameters, tokens, targets = read_input(arguments.input)
    logits = gpt_logits(config, parameters, tokens)
    losses = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view_as(tokens)
    loss = losses.mean()
    loss.backward()
    write_output(arguments.output, loss, losses, logits, parameters)
    print(f"torch_reference: loss {loss.item():.12f} over {tokens.numel()} positions -> {arguments.output}")


if __name__ == "__main__":
    main()
