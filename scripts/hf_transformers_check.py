#!/usr/bin/env python3
"""Checks a `mixgpt export` folder with Hugging Face transformers against mixgpt's own outputs
(for a host that has transformers, tokenizers, sentencepiece, protobuf and torch; not part of
`make test`, which has none of them). mixgpt's side comes from the same export command:

  build/mixgpt export runs/demo -o hf/demo --reference-out hf/demo_reference
  python3 scripts/hf_transformers_check.py hf/demo hf/demo_reference [--device cuda]

Three checks, each printed as one line, exit status 1 if any fails:
  logits     AutoModelForCausalLM (float32, TF32 off) on the first reference windows of the
             validation split against mixgpt's FP32 CPU logits: relative norm error
             ||hf - mixgpt|| / ||mixgpt|| <= 1e-5 (GUIDE 2.7's FP32 policy)
  greedy     model.generate(do_sample=False) from the reference prompt: the same new token ids
  tokenizer  AutoTokenizer (the default, fast one, and use_fast=False) on the text of every document
             of the split (decoded from mixgpt's ids with the folder's tokenizer.model, or for a
             GPT-2 tokenizer with vocab.json's byte alphabet, scripts/gpt2_tokenizer.py): the same
             ids as mixgpt's, document by document
"""
import argparse
import json
import os
import sys

import numpy as np


def load_reference(folder):
    with open(os.path.join(folder, "reference.json")) as file:
        reference = json.load(file)
    tokens = np.fromfile(os.path.join(folder, "val_tokens.i32"), dtype="<i4")
    offsets = np.fromfile(os.path.join(folder, "val_doc_offsets.i64"), dtype="<i8")
    T, V, W = reference["seq_len"], reference["vocab_size"], reference["logits_windows"]
    logits = np.fromfile(os.path.join(folder, "logits.f32"), dtype="<f4").reshape(W, T, V)
    return reference, tokens, offsets, logits


def check_logits(model, torch, device, tokens, logits, T):
    worst = 0.0
    squared_error = squared_reference = 0.0
    for w in range(logits.shape[0]):
        window = torch.tensor(tokens[w * T:(w + 1) * T].astype(np.int64), device=device)[None]
        with torch.no_grad():
            ours = model(input_ids=window).logits[0].double().cpu().numpy()
        reference = logits[w].astype(np.float64)
        squared_error += ((ours - reference) ** 2).sum()
        squared_reference += (reference ** 2).sum()
        worst = max(worst, np.abs(ours - reference).max())
    relative = np.sqrt(squared_error / squared_reference)
    ok = relative <= 1e-5
    print(f"logits     {'PASS' if ok else 'FAIL'}: {logits.shape[0] * T} tokens, relative norm error {relative:.2e} "
          f"(limit 1e-05), largest absolute difference {worst:.2e}")
    return ok


def check_greedy(model, torch, device, reference):
    prompt = torch.tensor([reference["prompt_ids"]], device=device)
    expected = reference["greedy_ids"]
    with torch.no_grad():
        output = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                max_new_tokens=len(expected), eos_token_id=reference["eot_id"],
                                pad_token_id=reference["eot_id"])
    produced = output[0, prompt.shape[1]:].tolist()
    ok = produced == expected
    print(f"greedy     {'PASS' if ok else 'FAIL'}: {len(expected)} tokens from {reference['prompt']!r}"
          + ("" if ok else f"; mixgpt {expected}, transformers {produced}"))
    return ok


def folder_decoder(export):
    """The folder's own decoding of ids to text: SentencePiece's, or GPT-2's byte alphabet."""
    if os.path.exists(os.path.join(export, "tokenizer.model")):
        import sentencepiece
        return sentencepiece.SentencePieceProcessor(model_file=os.path.join(export, "tokenizer.model"))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpt2_tokenizer import Gpt2Tokenizer
    return Gpt2Tokenizer.from_folder(export)


def check_tokenizer(export, tokens, offsets, eot_id, use_fast):
    from transformers import AutoTokenizer
    processor = folder_decoder(export)
    tokenizer = AutoTokenizer.from_pretrained(export, **({} if use_fast is None else {"use_fast": use_fast}))
    mismatches, first = 0, None
    for d in range(len(offsets) - 1):
        ids = tokens[offsets[d]:offsets[d + 1]].tolist()
        if ids and ids[-1] == eot_id:
            ids = ids[:-1]
        text = processor.decode(ids)
        produced = tokenizer(text)["input_ids"]
        if produced != ids:
            mismatches += 1
            if first is None:
                first = (d, text[:80], ids[:20], produced[:20])
    name = "default" if use_fast is None else "use_fast=False"
    ok = mismatches == 0
    print(f"tokenizer  {'PASS' if ok else 'FAIL'} ({name}, {type(tokenizer).__name__}): {len(offsets) - 1} documents, "
          f"{len(tokens)} tokens, {mismatches} documents differ" + ("" if ok else f"; first: {first}"))
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("export", help="the folder written by mixgpt export")
    parser.add_argument("reference", help="the folder written by mixgpt export --reference-out")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    reference, tokens, offsets, logits = load_reference(args.reference)
    model = AutoModelForCausalLM.from_pretrained(args.export, torch_dtype=torch.float32).to(args.device).eval()
    results = [check_logits(model, torch, args.device, tokens, logits, reference["seq_len"]),
               check_greedy(model, torch, args.device, reference)]
    for use_fast in (None, False):
        results.append(check_tokenizer(args.export, tokens, offsets, reference["eot_id"], use_fast))
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
