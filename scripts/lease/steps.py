"""The lease's steps, in order of value: what each runs, what it needs, its cap and estimate, and
the figures it leaves in context.figures. GPU estimates are the H200 lease's times
(bench/results/2026-11-28-h200, figures.json) with a margin, guesses for the steps that stopped
early there (FP8) or came later; simulator estimates are at smoke sizes. Caps bound each step
whatever the estimate."""
import os
import time
from dataclasses import dataclass

import figures as parse
import runner
from gtest_suite import run_suite

REPOSITORY_SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class StepResult:
    status: str  # ok, failed, stopped (at its cap), skipped
    summary: str
    seconds: float = 0.0


@dataclass
class Step:
    name: str
    title: str
    estimate_s: tuple  # (on a GPU, on the simulator)
    cap_s: tuple
    needs: tuple  # device, cublaslt, nccl, torch, torch_cuda, sanitizer, dataset
    run: object  # run(context, step, cap_s) -> StepResult
    extra: bool = False  # after the core evidence, while budget remains
    arguments: tuple = ()


def command(context, step, argv, cap_s, env=None):
    """Runs one command of a step into its log; returns runner.Outcome."""
    return runner.run(argv, context.log(step.name + ".log"), cap_s, env or context.binary_env)


def outcome_status(outcome, parsed_ok=True):
    if outcome.stopped_at_cap:
        return "stopped"
    return "ok" if outcome.exit == 0 and parsed_ok else "failed"


# ---- the tensor-core probe: the simulator's arithmetic against the hardware's ----

def run_tensor_core_probe(context, step, cap_s):
    """mma.sync and cuBLASLt outputs bit for bit against kernels/tensor_core_model.h; the inputs of
    every disagreement go to tensor-core-failures.txt among the logs."""
    argv = [context.binaries.lab, "--tensor-core-probe", *context.sizes.probe, "--probe-failures",
            context.log("tensor-core-failures.txt")]
    outcome = command(context, step, argv, cap_s)
    lines = parse.probe_lines(context.log(step.name + ".log"))
    context.figures["tensor_core_probe"] = lines
    text = "; ".join(lines) or parse.failure_text(outcome, context.log(step.name + ".log"))
    return StepResult(outcome_status(outcome, bool(lines)), text)


# ---- the GPU test suite ----

def run_tests(context, step, cap_s):
    env = dict(context.binary_env, MIXGPT_REQUIRE_GPU="1", MIXGPT_TEST_SEED=context.seed)
    test_filter, note = context.sizes.test_filter, ""
    if not context.facts.nccl:
        test_filter += ":-*DataParallel*"
        note = "; NCCL not found: the data-parallel tests not run"
    result = run_suite(context.binaries.tests, test_filter, env, context.log(step.name + ".log"), cap_s,
                       context.sizes.per_test_s)
    context.figures["tests"] = parse.test_figures(result, context.seed, test_filter)
    if result.error:
        return StepResult("failed", "FAILED: " + result.error)
    tests = context.figures["tests"]
    summary = (f"{tests['passed']} passed, {len(tests['failed'])} failed, {tests['skipped']} skipped of "
               f"{tests['listed']} (seed {context.seed}, {result.processes} process{'es' * (result.processes > 1)})"
               + note)
    if tests["failed"]:
        summary += ": " + ", ".join(failure["test"] for failure in tests["failed"][:6])
    return StepResult("failed" if result.failed() else "ok", summary)


# ---- training throughput ----

def run_bench(context, step, cap_s):
    sizes, precision, *options = step.arguments
    json_path = context.log(f"{step.name}.json")
    argv = [context.binaries.mixgpt, "bench", "--device", "cuda", *getattr(context.sizes, sizes), "--precision",
            precision, *options, "--json-out", json_path]
    outcome = command(context, step, argv, cap_s)
    row = parse.bench_row(json_path)
    if row:
        row.update(label=step.name[len("bench-"):], options=" ".join(options))
        context.figures.setdefault("mixgpt_bench", []).append(row)
    status = outcome_status(outcome, row is not None)
    return StepResult(status, parse.bench_text(row) if row else parse.failure_text(outcome, context.log(step.name + ".log")))


def run_step_profile(context, step, cap_s):
    """Where a step's time goes, per op (mixgpt bench --profile, synchronized around every op): the
    per-kernel timing that locates the largest gap (issue 41, point 4)."""
    json_path = context.log(f"{step.name}.json")
    argv = [context.binaries.mixgpt, "bench", "--device", "cuda", *context.sizes.bench, "--precision",
            step.arguments[0], "--profile", "--json-out", json_path]
    outcome = command(context, step, argv, cap_s)
    rows = [row for row in parse.step_profiles(json_path) if row["ops"]]
    context.figures["step_profile"] = rows
    text = "; ".join(parse.profile_text(row, top=1) for row in rows) or parse.failure_text(
        outcome, context.log(step.name + ".log"))
    return StepResult(outcome_status(outcome, bool(rows)), text)


def run_torch(context, step, cap_s):
    precisions, compile_too = step.arguments
    jsonl = context.log("torch.jsonl")
    already = len(parse.torch_rows(jsonl))
    argv = [context.facts.python, os.path.join(REPOSITORY_SCRIPTS, "torch_bench.py"), *context.sizes.torch,
            "--precision", precisions, "--jsonl", jsonl]
    if compile_too and context.sizes.torch_compile:
        argv.append("--compile")
    outcome = command(context, step, argv, cap_s, dict(context.host_env, PYTHONUNBUFFERED="1"))
    rows = parse.torch_rows(jsonl)[already:]
    context.figures.setdefault("torch_bench", []).extend(rows)
    text = "; ".join(parse.torch_text(row) for row in rows) or parse.failure_text(outcome, context.log(step.name + ".log"))
    return StepResult(outcome_status(outcome, bool(rows)), text)


# ---- attention ----

def run_lab_attention(context, step, cap_s):
    json_path = context.log("lab-attention.json")
    argv = [context.binaries.lab, *context.sizes.lab, "--precision", "bf16", "--attention-only",
            "--attention-lengths", context.sizes.attention_lengths, "--json-out", json_path]
    outcome = command(context, step, argv, cap_s)
    rows = parse.lab_attention(json_path)
    context.figures["attention_mixgpt"] = rows
    documents = parse.lab_document_mask(json_path)
    context.figures["attention_documents"] = documents
    text = "; ".join([parse.attention_text(row) for row in rows] + [parse.document_mask_text(row) for row in documents])
    text = text or parse.failure_text(outcome, context.log(step.name + ".log"))
    return StepResult(outcome_status(outcome, bool(rows)), text)


def run_sdpa(context, step, cap_s):
    json_path = context.log("attention.json")
    argv = [context.facts.python, os.path.join(REPOSITORY_SCRIPTS, "compare_attention.py"), "--lab-json",
            context.log("lab-attention.json"), "--lengths", context.sizes.attention_lengths, "--json", json_path]
    outcome = command(context, step, argv, cap_s, dict(context.host_env, PYTHONUNBUFFERED="1"))
    rows = parse.sdpa_rows(json_path)
    context.figures["attention_sdpa"] = rows
    text = "; ".join(parse.sdpa_text(row) for row in rows) or parse.failure_text(outcome, context.log(step.name + ".log"))
    return StepResult(outcome_status(outcome, bool(rows)), text)


# ---- compute-sanitizer (on the simulator: its own checks, no compute-sanitizer) ----

def run_sanitizer(context, step, cap_s):
    tool = step.arguments[0]
    if tool == "memcheck":
        target = [context.binaries.lab, *context.sizes.memcheck_lab, "--precision", "bf16"]
    else:
        target = [context.binaries.tests, f"--gtest_filter={context.sizes.sanitizer_filter}", "--gtest_color=no"]
    env = dict(context.binary_env, MIXGPT_REQUIRE_GPU="1", MIXGPT_TEST_SEED=context.seed)
    if context.simulator:  # racecheck's stand-in: the backward schedule; synccheck's: the forward one
        env["MIXGPT_CUDA_SIM_SCHEDULE"] = "backward" if tool == "racecheck" else "forward"
        argv = target
    else:
        argv = [context.facts.sanitizer, "--tool", tool, "--print-limit", "20", *target]
    outcome = command(context, step, argv, cap_s, env)
    found = parse.sanitizer_summary(context.log(step.name + ".log"), context.simulator)
    found.update(tool=tool, exit=outcome.exit, stopped=outcome.stopped_at_cap)
    context.figures.setdefault("sanitizers", []).append(found)
    # Clean: a summary of 0 errors, the target's own exit 0 (a sanitizer may report 0 hazards of a
    # process that crashed) and, for the tests, some that ran.
    clean = found.get("errors") == 0 and outcome.exit == 0 and (tool == "memcheck" or found.get("tests_passed", 0) > 0)
    return StepResult(outcome_status(outcome, clean), parse.sanitizer_text(found, outcome))


# ---- extras ----

def run_lab_backend(context, step, cap_s):
    json_path = context.log("lab-backend.json")
    argv = [context.binaries.lab, *context.sizes.lab, "--precision", "bf16", "--backend-only", "--json-out", json_path]
    outcome = command(context, step, argv, cap_s)
    lab = parse.lab_backend(json_path)
    context.figures["lab_backend"] = lab
    text = parse.lab_backend_text(lab) if lab else parse.failure_text(outcome, context.log(step.name + ".log"))
    return StepResult(outcome_status(outcome, bool(lab)), text)


def run_training(context, step, cap_s):
    """A KJV training run, then its validation loss evaluated on the GPU and on the CPU backend."""
    precision = step.arguments[0]
    deadline = time.monotonic() + cap_s
    run_dir = context.log(f"run-{precision}")
    tensorboard_dir = os.path.join(run_dir, "tensorboard")
    train = [context.binaries.mixgpt, "train", "--device", "cuda", "--dataset", context.facts.dataset,
             *context.sizes.train, "--precision", precision, "--tensorboard", tensorboard_dir, "-o", run_dir]
    outcome = command(context, step, train, cap_s)
    result = {"precision": precision, "train_exit": outcome.exit, "train_seconds": round(outcome.seconds, 1)}
    result.update(parse.training_metrics(os.path.join(run_dir, "metrics.jsonl")))
    for device in ("cuda", "cpu"):
        if outcome.exit != 0 or time.monotonic() >= deadline:
            break
        json_path = context.log(f"eval-{precision}-{device}.json")
        evaluate = [context.binaries.mixgpt, "eval", run_dir, "--device", device, "--max-tokens",
                    str(context.sizes.eval_tokens), "--json"]
        outcome = runner.run(["bash", "-c", 'exec "$@" > "$0"', json_path, *evaluate], context.log(step.name + ".log"),
                             deadline - time.monotonic(), context.binary_env)
        result[f"eval_{device}"] = parse.eval_result(json_path)
    if result["train_exit"] == 0 and context.facts.python and time.monotonic() < deadline:
        # The event files read by TensorBoard's own loader, where the host has the package (issue 40).
        check = [context.facts.python, os.path.join(REPOSITORY_SCRIPTS, "lease", "tensorboard_check.py"),
                 tensorboard_dir]
        json_path = context.log(f"tensorboard-{precision}.json")
        runner.run(["bash", "-c", 'exec "$@" > "$0"', json_path, *check], context.log(step.name + ".log"),
                   deadline - time.monotonic(), context.host_env)
        result["tensorboard"] = parse.load_json(json_path)
    context.figures.setdefault("training", []).append(result)
    return StepResult(outcome_status(outcome, "eval_cpu" in result), parse.training_text(result))


def plan():
    """Every step, in the order of value (issue 24): core evidence first, extras after."""
    bench = lambda name, precision, *options, extra=False, estimate=(10, 3), needs=("device", "cublaslt"), \
        sizes="bench": Step(name, f"mixgpt bench {precision} {' '.join(options)}{' (d24)' * (sizes == 'bench_d24')}"
                            .strip(), estimate, (90, 30), needs, run_bench, extra, (sizes, precision, *options))
    return [
        Step("tensor-core-probe", "tensor cores bit for bit against the simulator's model", (5, 5), (60, 30),
             ("device", "cublaslt"), run_tensor_core_probe),
        Step("tests", "GPU test suite against the CPU backend", (40, 10), (180, 60), ("device", "cublaslt"), run_tests),
        bench("bench-bf16", "bf16"),
        bench("bench-fp16", "fp16"),
        Step("torch-bf16", "PyTorch bf16, eager and torch.compile", (60, 10), (180, 60), ("torch",), run_torch,
             arguments=("bf16", True)),
        Step("lab-attention", "flash attention, kernel lab (JSON)", (10, 5), (90, 30), ("device", "cublaslt"),
             run_lab_attention),
        Step("sdpa", "PyTorch SDPA flash and cuDNN, same shapes", (15, 10), (120, 60), ("torch_cuda",), run_sdpa),
        Step("memcheck", "compute-sanitizer memcheck: kernel lab, smoke sizes", (45, 5), (120, 30),
             ("device", "cublaslt", "sanitizer"), run_sanitizer, arguments=("memcheck",)),
        Step("racecheck", "compute-sanitizer racecheck: flash attention + LayerNorm tests", (10, 6), (150, 30),
             ("device", "cublaslt", "sanitizer"), run_sanitizer, arguments=("racecheck",)),
        Step("synccheck", "compute-sanitizer synccheck: flash attention + LayerNorm tests", (5, 6), (120, 30),
             ("device", "cublaslt", "sanitizer"), run_sanitizer, arguments=("synccheck",)),
        Step("profile", "where a bf16 and a tf32 step go, per op (bench --profile)", (15, 3), (90, 30),
             ("device", "cublaslt"), run_step_profile, True, ("bf16,tf32",)),
        bench("bench-tf32", "tf32", extra=True),
        # The same with the simple kernels, which tf32 and fp32 attention ran on before the products
        # (kernels/cuda/attention_products.h): the two side by side in one run.
        bench("bench-tf32-simple", "tf32", "--attention", "simple", extra=True, estimate=(15, 3)),
        bench("bench-fp32", "fp32", extra=True, estimate=(15, 3)),
        bench("bench-fp8", "fp8", extra=True),
        bench("bench-d24-bf16", "bf16", extra=True, estimate=(15, 3), sizes="bench_d24"),
        bench("bench-d24-fp8", "fp8", extra=True, estimate=(15, 3), sizes="bench_d24"),
        Step("torch-tf32-fp32", "PyTorch tf32 and fp32, eager", (25, 10), (120, 60), ("torch",), run_torch, True,
             ("tf32,fp32", False)),
        Step("lab-backend", "kernel lab: backend ops against copy and GEMM ceilings", (40, 5), (120, 30),
             ("device", "cublaslt"), run_lab_backend, True),
        Step("train-bf16", "KJV training bf16, eval on GPU and CPU", (60, 10), (180, 60),
             ("device", "cublaslt", "dataset"), run_training, True, ("bf16",)),
        bench("bench-exchange", "bf16", "--gradient-exchange", "overlapped", extra=True, estimate=(10, 3),
              needs=("device", "cublaslt", "nccl")),
        bench("bench-simple", "bf16", "--attention", "simple", extra=True),
        bench("bench-recipe", "bf16", "--recipe", "nanochat", extra=True),
        bench("bench-muon", "bf16", "--optimizer", "muon", extra=True),
        # Last: the H200 lease measured it (GPU and CPU evaluations 3.4e-8 apart) in 194 s.
        Step("train-fp32", "KJV training fp32, eval on GPU and CPU", (210, 10), (240, 60),
             ("device", "cublaslt", "dataset"), run_training, True, ("fp32",)),
    ]


def unmet_need(context, step):
    """Why a step cannot run here, in a few words ("" when it can); the preflight printed the details."""
    facts = context.facts
    reasons = {
        "device": "" if facts.device else "no CUDA device",
        "cublaslt": "" if facts.cublaslt else "no cuBLASLt",
        "nccl": "" if facts.nccl else "no NCCL",
        "torch": "" if facts.torch else "no python3 with PyTorch",
        "torch_cuda": "" if facts.torch_cuda else "no PyTorch with CUDA" + (" (the simulator has none)" if context.simulator else ""),
        "sanitizer": "" if facts.sanitizer or context.simulator else "no compute-sanitizer",
        "dataset": "" if facts.dataset else "no KJV dataset in the bundle (data/kjv)",
    }
    return ", ".join(reasons[need] for need in step.needs if reasons[need])
