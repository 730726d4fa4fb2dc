"""The lease's story: the closing digest on stdout (every number, what failed, what was skipped),
the markdown report and the JSON of the figures under the output folder."""
import json
import os
import platform
import time

from figures import lab_backend_text, number, percent, profile_text, training_text

DIGEST_LIMIT_BYTES = 10000  # the whole stdout of a lease, preflight and step lines included


def fp8_ratios(rows):
    """fp8 against bf16 tokens/s per model, from the rows of plain runs (no extra options)."""
    plain = {(row["model"], row["precision"]): row["tokens_per_second"] for row in rows if not row.get("options")}
    return [f"{model} {plain[(model, 'fp8')] / plain[(model, 'bf16')]:.2f}x"
            for model in dict.fromkeys(row["model"] for row in rows)
            if plain.get((model, "fp8")) and plain.get((model, "bf16"))]


def throughput_lines(figures):
    mixgpt = figures.get("mixgpt_bench", [])
    torch = figures.get("torch_bench", [])
    if not mixgpt and not torch:
        return ["throughput: not measured"]
    shape = mixgpt[0] if mixgpt else {}
    peaks = {row["precision"]: row["peak_tflops"] for row in mixgpt if row.get("peak_tflops")}
    lines = [f"throughput {shape.get('model', '')} B={shape.get('batch_size', '?')} T={shape.get('seq_len', '?')} "
             f"(tokens/s, MFU against the device's peak per precision):"]
    if mixgpt:
        lines.append("  mixgpt " + " | ".join(f"{row['label']} {number(row['tokens_per_second'])} ({percent(row['mfu'])})"
                                              for row in mixgpt))
        ratios = fp8_ratios(mixgpt)
        if ratios:
            lines.append("  fp8/bf16 tokens/s: " + ", ".join(ratios) + " (target: >= 1.2x at d24)")
    if torch:
        cells = []
        for row in torch:
            mode = "compile" if row.get("compiled") else "eager"
            if "error" in row:
                cells.append(f"{row['precision']} {mode} failed")
                continue
            peak = peaks.get(row["precision"])
            cells.append(f"{row['precision']} {mode} {number(row['tokens_per_second'])} "
                         f"({percent(row['tflops'] / peak) if peak else '-'})")
        lines.append("  torch  " + " | ".join(cells))
    return lines


def attention_line(figures):
    sdpa = {(row["T"], row["head_dim"]): row for row in figures.get("attention_sdpa", [])}
    cells = []
    for row in figures.get("attention_mixgpt", []):
        theirs = sdpa.get((row["T"], row["head_dim"]), {})
        cell = f"T={row['T']} hd{row['head_dim']}: mixgpt {row['tflops']:.1f}"
        if not row["valid"]:
            cell += " (FAILED validation)"
        if theirs:
            cell += f", SDPA flash {number(theirs['torch_flash'], 1)}, cuDNN {number(theirs['torch_cudnn'], 1)}"
            if theirs.get("torch_flash"):
                cell += f" ({row['tflops'] / theirs['torch_flash']:.2f}x flash)"
        cells.append(cell)
    if not cells:
        return "attention: not measured"
    smoke = any(row.get("sizes") == "smoke" for row in figures.get("attention_mixgpt", []))
    return ("attention causal bf16 fwd+bwd TFLOP/s" + (" (smoke sizes: meaningless)" if smoke else "") + ": "
            + " | ".join(cells))


def sanitizer_line(figures):
    cells = []
    for found in figures.get("sanitizers", []):
        if found.get("stopped"):
            cells.append(f"{found['tool']} stopped at its cap")
        elif found.get("simulator"):
            cells.append(f"{found['tool']} (simulator stand-in) exit {found['exit']}")
        else:
            cell = f"{found['tool']} {found.get('errors', '?')} errors"
            cell += f" ({found['hazards']} hazards)" if "hazards" in found else ""
            cell += f", exit {found['exit']}" if found["exit"] else ""
            cells.append(cell)
    return "sanitizers: " + (" | ".join(cells) if cells else "not run")


def test_lines(figures):
    tests = figures.get("tests")
    if not tests:
        return ["tests: not run"]
    if tests["error"]:
        return [f"tests: FAILED to run: {tests['error'][:300]}"]
    lines = [f"tests: {tests['passed']} passed, {len(tests['failed'])} failed, {tests['skipped']} skipped of "
             f"{tests['listed']} (MIXGPT_TEST_SEED={tests['seed']})"]
    for failure in tests["failed"][:12]:
        lines.append(f"  {failure['status']}: {failure['test']}: {failure['note'][:110]}")
    if len(tests["failed"]) > 12:
        lines.append(f"  and {len(tests['failed']) - 12} more (report.md)")
    return lines


def other_lines(figures):
    lines = []
    for result in figures.get("training", []):
        lines.append("training KJV " + training_text(result))
    for row in figures.get("step_profile", []):
        lines.append("step profile (synchronized per op) " + profile_text(row))
    lab = figures.get("lab_backend")
    if lab:
        lines.append("kernel lab " + lab_backend_text(lab))
    return lines


def closing_lines(context, results, elapsed, budget, files):
    """The digest's closing block; `results` maps step name -> (Step, StepResult)."""
    figures = context.figures
    lines = ["== digest =="]
    lines += figures.get("tensor_core_probe") or ["tensor-core model: probe not run"]
    lines += test_lines(figures)
    lines += throughput_lines(figures)
    lines.append(attention_line(figures))
    lines.append(sanitizer_line(figures))
    lines += other_lines(figures)
    skipped = {}  # reason -> the steps skipped for it
    for name, (_, result) in results.items():
        if result.status == "skipped":
            skipped.setdefault(result.summary, []).append(name)
    failed = [f"{name} ({result.status})" for name, (_, result) in results.items() if result.status in ("failed", "stopped")]
    lines.append("not run: " + ("; ".join(f"{', '.join(names)} ({reason})" for reason, names in skipped.items())
                                if skipped else "none"))
    lines.append("failed or stopped: " + (", ".join(failed) if failed else "none"))
    counts = {status: sum(result.status == status for _, result in results.values())
              for status in ("ok", "failed", "stopped", "skipped")}
    lines.append(f"lease: {elapsed:.0f} s of a {budget} s budget; steps {counts['ok']} ok, {counts['failed']} failed, "
                 f"{counts['stopped']} stopped at their cap, {counts['skipped']} skipped; files: {', '.join(files)}"
                 + ("; SIMULATOR: no GPU number here means anything" if context.simulator else ""))
    return lines


def report_markdown(context, invocation, printed, results):
    """report.md: the digest, then per step its commands, status, time and the end of its log."""
    out = ["# mixgpt GPU lease", "",
           f"- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}",
           f"- host: {platform.node()}, Linux {platform.release()}",
           f"- command: `{invocation}`", "", "## Digest (the lease's stdout)", "", "```text", *printed, "```", ""]
    tests = context.figures.get("tests")
    if tests and tests["failed"]:
        out += ["## Tests that did not pass", ""]
        out += [f"- `{f['test']}`: {f['status']}: {f['note']}" for f in tests["failed"]] + [""]
    out += ["## Steps", ""]
    for name, (step, result) in results.items():
        out += [f"### {name}: {step.title}", "",
                f"{result.status}, {result.seconds:.0f} s (estimate {step.estimate_s[context.simulator]} s, "
                f"cap {step.cap_s[context.simulator]} s): {result.summary}", ""]
        log_path = context.log(name + ".log")
        if os.path.exists(log_path):
            with open(log_path, errors="replace") as log:
                lines = log.read().splitlines()
            commands = [line for line in lines if line.startswith("$ ")][:4]
            out += ["```text", *commands, "...", *[line[:400] for line in lines[-30:]], "```", ""]
    info = context.figures.get("preflight", {}).get("mixgpt_info", "")
    out += ["## mixgpt info", "", "```text", info, "```", ""]
    return "\n".join(out)


def write_figures(path, context, results, elapsed, budget):
    figures = dict(context.figures)
    figures["lease"] = {"budget_s": budget, "elapsed_s": round(elapsed, 1), "simulator": context.simulator,
                        "seed": context.seed}
    figures["steps"] = [{"name": name, "title": step.title, "status": result.status,
                         "seconds": round(result.seconds, 1), "estimate_s": step.estimate_s[context.simulator],
                         "cap_s": step.cap_s[context.simulator], "summary": result.summary}
                        for name, (step, result) in results.items()]
    with open(path, "w") as out:
        json.dump(figures, out, indent=2)
