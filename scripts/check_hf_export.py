#!/usr/bin/python3
"""Independent check of a `mixgpt export` folder: NumPy, sentencepiece (for a SentencePiece
tokenizer; a GPT-2 one is read by scripts/gpt2_tokenizer.py) and the standard library only, no
mixgpt code.

1. Parses model.safetensors by the format's specification (8-byte little-endian header length,
   JSON header, data offsets that tile the data area) and checks that it holds exactly the
   tensors of GPT2LMHeadModel (model_type gpt2), LlamaForCausalLM (model_type llama),
   Qwen3ForCausalLM (model_type qwen3: Llama's, and each query and key head RMS-normalised with
   q_norm / k_norm before RoPE) or MistralForCausalLM (model_type mistral: Llama's tensors) for
   config.json's shape, with transformers' names, shapes and one float dtype (F32, BF16 or F16).
2. Tokenizes a text file with the folder's tokenizer (one document: its tokens, then end of text, as
   `mixgpt eval --text` does) or reads a split of a prepared dataset (needs h5py), and computes
   the mean loss over the non-overlapping windows of n_positions + 1 tokens with its own float64
   forward pass: GPT-2's (pre-LayerNorm, eps from config.json, tanh GELU, causal attention, tied
   embeddings) or Llama's (pre-RMSNorm, RoPE in transformers' rotate-half convention, grouped-query
   attention, SwiGLU, no biases, lm_head or the tied embedding; Qwen3's per-head q and k norms;
   Mistral's sliding window: query q sees keys k with q - sliding_window < k <= q).
3. Compares it with `mixgpt eval --json`'s mean_loss (and token count): exit 0 when the relative
   difference is at most --tolerance (1e-5), 1 otherwise.
4. With --reference, checks the files of `mixgpt export --reference-out` (what
   scripts/hf_transformers_check.py holds transformers to): the logits against its own forward
   pass (relative norm error <= --tolerance), the greedy continuation, and every document's ids
   against the tokenizer's own encoding of the document's text (SentencePiece, or GPT-2's in
   plain Python).

  build/mixgpt export runs/demo -o hf/demo
  build/mixgpt eval runs/demo --json > eval.json
  /usr/bin/python3 scripts/check_hf_export.py hf/demo --dataset data/kjv --eval-json eval.json
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": (np.dtype("<f4"), 4), "BF16": (np.dtype("<u2"), 2), "F16": (np.dtype("<f2"), 2)}


def fail(message):
    print(f"check_hf_export: {message}", file=sys.stderr)
    sys.exit(1)


def read_safetensors(path):
    """{name: float64 array}, the dtype shared by all tensors, and the metadata."""
    with open(path, "rb") as file:
        blob = file.read()
    if len(blob) < 8:
        fail(f"{path}: shorter than the 8-byte header length")
    (header_length,) = struct.unpack("<Q", blob[:8])
    if header_length > len(blob) - 8:
        fail(f"{path}: header length {header_length} is past the end of the file")
    header_text = blob[8:8 + header_length]
    if not header_text.startswith(b"{"):
        fail(f"{path}: header does not start with '{{'")
    header = json.loads(header_text.decode("utf-8"))
    data = memoryview(blob)[8 + header_length:]
    if (8 + header_length) % 8 != 0:
        fail(f"{path}: the data area starts at byte {8 + header_length}, not a multiple of 8")
    metadata = header.pop("__metadata__", {})
    spans, tensors, dtypes = [], {}, set()
    for name, entry in header.items():
        if set(entry) != {"dtype", "shape", "data_offsets"}:
            fail(f"{path}: tensor {name} has fields {sorted(entry)}")
        if entry["dtype"] not in DTYPES:
            fail(f"{path}: tensor {name} has dtype {entry['dtype']}, expected F32, BF16 or F16")
        storage, size = DTYPES[entry["dtype"]]
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        if end - begin != size * math.prod(shape) or end > len(data):
            fail(f"{path}: tensor {name} data_offsets {begin}, {end} do not fit its shape {shape}")
        raw = np.frombuffer(data[begin:end], dtype=storage)
        if entry["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = raw.astype(np.float64).reshape(shape)
        spans.append((begin, end, name))
        dtypes.add(entry["dtype"])
    covered = 0
    for begin, end, name in sorted(spans):
        if begin != covered:
            fail(f"{path}: tensor {name} starts at {begin}, expected {covered} (overlap or hole)")
        covered = end
    if covered != len(data):
        fail(f"{path}: tensors cover {covered} of {len(data)} data bytes")
    if len(dtypes) != 1:
        fail(f"{path}: expected one dtype for all tensors, found {sorted(dtypes)}")
    return tensors, dtypes.pop(), metadata


def llama_like(config):
    return config.get("model_type") in ("llama", "qwen3", "mistral")


def expected_shapes(config):
    if llama_like(config):
        return llama_shapes(config)
    V, P, C, L = config["vocab_size"], config["n_positions"], config["n_embd"], config["n_layer"]
    shapes = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (P, C),
              "transformer.ln_f.weight": (C,), "transformer.ln_f.bias": (C,)}
    for layer in range(L):
        h = f"transformer.h.{layer}."
        shapes.update({h + "ln_1.weight": (C,), h + "ln_1.bias": (C,),
                       h + "attn.c_attn.weight": (C, 3 * C), h + "attn.c_attn.bias": (3 * C,),
                       h + "attn.c_proj.weight": (C, C), h + "attn.c_proj.bias": (C,),
                       h + "ln_2.weight": (C,), h + "ln_2.bias": (C,),
                       h + "mlp.c_fc.weight": (C, 4 * C), h + "mlp.c_fc.bias": (4 * C,),
                       h + "mlp.c_proj.weight": (4 * C, C), h + "mlp.c_proj.bias": (C,)})
    return shapes


def llama_shapes(config):
    V, C, L, F = config["vocab_size"], config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"]
    H, Hkv = config["num_attention_heads"], config.get("num_key_value_heads") or config["num_attention_heads"]
    hd = C // H
    shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not config.get("tie_word_embeddings", False):
        shapes["lm_head.weight"] = (V, C)
    for layer in range(L):
        h = f"model.layers.{layer}."
        shapes.update({h + "input_layernorm.weight": (C,), h + "post_attention_layernorm.weight": (C,),
                       h + "self_attn.q_proj.weight": (H * hd, C), h + "self_attn.k_proj.weight": (Hkv * hd, C),
                       h + "self_attn.v_proj.weight": (Hkv * hd, C), h + "self_attn.o_proj.weight": (C, H * hd),
                       h + "mlp.gate_proj.weight": (F, C), h + "mlp.up_proj.weight": (F, C),
                       h + "mlp.down_proj.weight": (C, F)})
        if config.get("model_type") == "qwen3":
            shapes.update({h + "self_attn.q_norm.weight": (hd,), h + "self_attn.k_norm.weight": (hd,)})
    return shapes


def context_length(config):
    return config["max_position_embeddings"] if llama_like(config) else config["n_positions"]


def check_config(config):
    if llama_like(config):
        wanted = {"hidden_act": "silu", "rope_scaling": None, "attention_bias": False, "mlp_bias": False,
                  "use_sliding_window": False}
        if config["model_type"] != "mistral":
            wanted["sliding_window"] = None
        for key, value in wanted.items():
            if config.get(key, value) != value:
                fail(f"config.json: {key} is {config.get(key)!r}, expected {value!r}")
        return
    wanted = {"model_type": "gpt2", "activation_function": "gelu_new", "tie_word_embeddings": True}
    for key, value in wanted.items():
        if config.get(key) != value:
            fail(f"config.json: {key} is {config.get(key)!r}, expected {value!r}")
    if config.get("n_inner") not in (None, 4 * config["n_embd"]):
        fail(f"config.json: n_inner is {config['n_inner']}")


def layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * weight + bias


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rms_norm(x, weight, eps):
    return x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps) * weight


def rotate(x, theta):
    """RoPE of x (B, heads, T, hd) at positions 0..T-1, transformers' rotate_half convention: the
    pairs (i, i + hd/2) turned by t * theta^(-2i/hd)."""
    T, hd = x.shape[2], x.shape[3]
    angles = np.arange(T)[:, None] * theta ** (-np.arange(0, hd, 2) / hd)[None, :]  # (T, hd/2)
    cos, sin = np.cos(np.concatenate([angles, angles], -1)), np.sin(np.concatenate([angles, angles], -1))
    rotated_half = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], axis=-1)
    return x * cos + rotated_half * sin


def llama_forward_logits(tensors, config, inputs):
    """LlamaForCausalLM's (or Qwen3ForCausalLM's, MistralForCausalLM's) logits (B, T, V) of inputs
    (B, T), float64."""
    eps, theta = config["rms_norm_eps"], config.get("rope_theta", 10000.0)
    H, C = config["num_attention_heads"], config["hidden_size"]
    Hkv, hd = config.get("num_key_value_heads") or H, C // H
    B, T = inputs.shape
    x = tensors["model.embed_tokens.weight"][inputs]
    mask = np.triu(np.full((T, T), -np.inf), k=1)
    window = config.get("sliding_window") if config["model_type"] == "mistral" else None
    if window:  # key k is seen by query q when q - window < k
        mask = mask + np.tril(np.full((T, T), -np.inf), k=-window)
    for layer in range(config["num_hidden_layers"]):
        p = lambda name: tensors[f"model.layers.{layer}.{name}"]  # noqa: E731
        a = rms_norm(x, p("input_layernorm.weight"), eps)
        heads = lambda w, n: (a @ w.T).reshape(B, T, n, hd).transpose(0, 2, 1, 3)  # noqa: E731
        q, k = heads(p("self_attn.q_proj.weight"), H), heads(p("self_attn.k_proj.weight"), Hkv)
        if config["model_type"] == "qwen3":  # Qwen3: each head RMS-normalised before RoPE
            q, k = rms_norm(q, p("self_attn.q_norm.weight"), eps), rms_norm(k, p("self_attn.k_norm.weight"), eps)
        q = rotate(q, theta)
        k = np.repeat(rotate(k, theta), H // Hkv, axis=1)
        v = np.repeat(heads(p("self_attn.v_proj.weight"), Hkv), H // Hkv, axis=1)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attention = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        x = x + attention.transpose(0, 2, 1, 3).reshape(B, T, H * hd) @ p("self_attn.o_proj.weight").T
        m = rms_norm(x, p("post_attention_layernorm.weight"), eps)
        gate, up = m @ p("mlp.gate_proj.weight").T, m @ p("mlp.up_proj.weight").T
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ p("mlp.down_proj.weight").T
    head = tensors.get("lm_head.weight", tensors["model.embed_tokens.weight"])
    return rms_norm(x, tensors["model.norm.weight"], eps) @ head.T


def forward_logits(tensors, config, inputs):
    """Logits (B, T, V) of inputs (B, T), float64."""
    if llama_like(config):
        return llama_forward_logits(tensors, config, inputs)
    eps = config["layer_norm_epsilon"]
    H, C = config["n_head"], config["n_embd"]
    B, T = inputs.shape
    wte = tensors["transformer.wte.weight"]
    x = wte[inputs] + tensors["transformer.wpe.weight"][:T]
    mask = np.triu(np.full((T, T), -np.inf), k=1)
    for layer in range(config["n_layer"]):
        p = lambda name: tensors[f"transformer.h.{layer}.{name}"]  # noqa: E731
        qkv = layer_norm(x, p("ln_1.weight"), p("ln_1.bias"), eps) @ p("attn.c_attn.weight") + p("attn.c_attn.bias")
        q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, H, C // H).transpose(0, 2, 1, 3) for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(C // H) + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attention = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        x = x + attention.transpose(0, 2, 1, 3).reshape(B, T, C) @ p("attn.c_proj.weight") + p("attn.c_proj.bias")
        hidden = gelu_tanh(layer_norm(x, p("ln_2.weight"), p("ln_2.bias"), eps) @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias"))
        x = x + hidden @ p("mlp.c_proj.weight") + p("mlp.c_proj.bias")
    return layer_norm(x, tensors["transformer.ln_f.weight"], tensors["transformer.ln_f.bias"], eps) @ wte.T


def window_losses(tensors, config, windows):
    """Per-target losses (B, T) of windows (B, T + 1), float64."""
    logits = forward_logits(tensors, config, windows[:, :-1])
    top = logits.max(axis=-1, keepdims=True)
    log_sum = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
    return log_sum - np.take_along_axis(logits, windows[:, 1:, None], axis=-1)[..., 0]


def check_reference(tensors, config, folder, reference_folder, tolerance):
    """`mixgpt export --reference-out`'s files (what scripts/hf_transformers_check.py compares
    transformers with) against this script's own forward pass and tokenizer: failures as text."""
    with open(os.path.join(reference_folder, "reference.json")) as file:
        reference = json.load(file)
    T, V, W = reference["seq_len"], reference["vocab_size"], reference["logits_windows"]
    tokens = np.fromfile(os.path.join(reference_folder, "val_tokens.i32"), dtype="<i4").astype(np.int64)
    offsets = np.fromfile(os.path.join(reference_folder, "val_doc_offsets.i64"), dtype="<i8")
    logits = np.fromfile(os.path.join(reference_folder, "logits.f32"), dtype="<f4").reshape(W, T, V)
    failures = []
    ours = forward_logits(tensors, config, tokens[:W * T].reshape(W, T))
    relative = np.linalg.norm(ours - logits) / np.linalg.norm(logits.astype(np.float64))
    print(f"reference logits: {W * T} tokens, relative norm error {relative:.2e} (limit {tolerance:g})")
    if not relative <= tolerance:
        failures.append(f"reference logits differ by {relative:.2e} relative")
    ids = list(reference["prompt_ids"])
    for _ in reference["greedy_ids"]:
        ids.append(int(np.argmax(forward_logits(tensors, config, np.array([ids[-T:]]))[0, -1])))
        if ids[-1] == reference["eot_id"]:
            break
    greedy = ids[len(reference["prompt_ids"]):]
    print(f"reference greedy continuation: {len(reference['greedy_ids'])} tokens, "
          f"{'identical' if greedy == reference['greedy_ids'] else 'different'}")
    if greedy != reference["greedy_ids"]:
        failures.append(f"greedy continuation: mixgpt {reference['greedy_ids']}, NumPy {greedy}")
    tokenizer, name = folder_tokenizer(folder)
    differing = 0
    for d in range(len(offsets) - 1):
        document = tokens[offsets[d]:offsets[d + 1]].tolist()
        if document and document[-1] == reference["eot_id"]:
            document = document[:-1]
        differing += tokenizer.encode(tokenizer.decode(document)) != document
    print(f"reference token ids: {len(offsets) - 1} documents re-encoded by {name}, {differing} differ")
    if differing:
        failures.append(f"{differing} documents' ids differ from {name}'s encoding of their text")
    return failures


def folder_tokenizer(folder):
    """The folder's tokenizer (encode, decode) and its name: SentencePiece's tokenizer.model, else
    GPT-2's vocab.json + merges.txt read by scripts/gpt2_tokenizer.py."""
    if os.path.exists(os.path.join(folder, "tokenizer.model")):
        import sentencepiece
        return sentencepiece.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model")), "SentencePiece"
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpt2_tokenizer import Gpt2Tokenizer
    return Gpt2Tokenizer.from_folder(folder), "GPT-2 (plain Python)"


def read_tokens(args, folder, config):
    """The token streams evaluated: the text's, or each shard's split (mixgpt eval's windows never
    span two shards)."""
    if args.text:
        tokenizer, _ = folder_tokenizer(folder)
        with open(args.text, encoding="utf-8") as file:
            text = file.read()
        return [np.array(tokenizer.encode(text) + [config["eos_token_id"]], dtype=np.int64)]
    import h5py  # only for --dataset
    shards = [args.dataset]
    if os.path.isdir(args.dataset):  # a dataset folder: its shards in order (or a folder holding dataset.h5)
        index = os.path.join(args.dataset, "index.json")
        shards = ([os.path.join(args.dataset, shard["file"]) for shard in json.load(open(index))["shards"]]
                  if os.path.exists(index) else [os.path.join(args.dataset, "dataset.h5")])
    parts = []
    for shard in shards:
        with h5py.File(shard, "r") as dataset:
            parts.append(dataset[f"/{args.split}/tokens"][:].astype(np.int64))
    return parts


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="the exported Hugging Face folder")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="a UTF-8 text file, one document (as `mixgpt eval --text`)")
    source.add_argument("--dataset", help="a prepared dataset folder or dataset.h5 (needs h5py)")
    parser.add_argument("--split", default="val")
    parser.add_argument("--eval-json", required=True, help="`mixgpt eval --json` output for the same tokens")
    parser.add_argument("--batch", type=int, default=16, help="windows per NumPy forward pass")
    parser.add_argument("--tolerance", type=float, default=1e-5, help="relative, on the mean loss and the logits")
    parser.add_argument("--reference", help="also check `mixgpt export --reference-out`'s files")
    args = parser.parse_args()

    with open(os.path.join(args.folder, "config.json")) as file:
        config = json.load(file)
    check_config(config)
    tensors, dtype, metadata = read_safetensors(os.path.join(args.folder, "model.safetensors"))
    shapes = expected_shapes(config)
    if set(tensors) != set(shapes):
        fail(f"tensor names: missing {sorted(set(shapes) - set(tensors))}, unexpected {sorted(set(tensors) - set(shapes))}")
    for name, shape in shapes.items():
        if tensors[name].shape != shape:
            fail(f"{name}: shape {tensors[name].shape}, {config['model_type']} expects {shape}")
    if metadata.get("format") != "pt":
        fail("model.safetensors: __metadata__ has no \"format\": \"pt\" (transformers requires it)")

    try:
        with open(args.eval_json) as file:
            reference = json.load(file)
    except (OSError, ValueError) as error:
        fail(f"{args.eval_json}: {getattr(error, 'strerror', None) or error} "
             "(`mixgpt eval RUN --json > FILE` writes it)")
    streams = read_tokens(args, args.folder, config)
    T = reference.get("seq_len", context_length(config))
    starts = [(tokens, r * T) for tokens in streams for r in range((len(tokens) - 1) // T)]
    count = len(starts)
    total = 0.0
    for first in range(0, count, args.batch):
        windows = np.stack([tokens[start:start + T + 1] for tokens, start in starts[first:first + args.batch]])
        total += window_losses(tensors, config, windows).sum()
    scored = count * T
    mean_loss = total / scored
    relative = abs(mean_loss - reference["mean_loss"]) / abs(reference["mean_loss"])
    print(f"{len(tensors)} tensors ({dtype}) match {config['model_type']}'s names and shapes; {scored} tokens scored "
          f"(mixgpt: {reference['tokens']}); mean loss {mean_loss:.9f} (NumPy float64) vs {reference['mean_loss']:.9f} "
          f"(mixgpt eval): relative difference {relative:.2e} (tolerance {args.tolerance:g})")
    if scored != reference["tokens"]:
        fail(f"scored {scored} tokens, mixgpt eval scored {reference['tokens']} (tokenization differs)")
    if not relative <= args.tolerance:
        fail(f"mean loss differs from mixgpt eval's by {relative:.2e} relative, more than {args.tolerance:g}")
    if args.reference:
        failures = check_reference(tensors, config, args.folder, args.reference, args.tolerance)
        if failures:
            fail("; ".join(failures))


if __name__ == "__main__":
    main()
