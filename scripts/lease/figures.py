"""Reading the numbers each step leaves (mixgpt bench JSON, torch_bench.py JSON lines, the kernel
lab's JSON, compare_attention.py's JSON, sanitizer and GoogleTest logs, training metrics) and
writing each as one short line of the digest."""
import json
import re

SANITIZER_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?")
RACECHECK = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
GTEST_TOTALS = re.compile(r"^\[  (PASSED|FAILED|SKIPPED) +\] (\d+) tests?", re.MULTILINE)


def load_json(path):
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError):
        return None


def tail(path, lines=3, width=200):
    try:
        with open(path, errors="replace") as file:
            text = file.read()[-20000:]
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith(("$ ", "("))]
    return " | ".join(kept[-lines:])[:width]


def probe_lines(log_path):
    """The tensor-core probe's verdicts ("tensor-core model h100 bf16 mma.sync: 4107/4107 tiles bit-exact")."""
    try:
        with open(log_path, errors="replace") as log:
            return [line.strip() for line in log if line.startswith("tensor-core model")]
    except OSError:
        return []


def failure_text(outcome, log_path):
    return f"FAILED ({outcome.describe()}): {tail(log_path)}"


def number(value, digits=0):
    return "-" if value is None else f"{value:,.{digits}f}"


def percent(value):
    return "-" if value is None else f"{100 * value:.1f}%"


# ---- tests ----

def test_figures(result, seed, test_filter):
    return {
        "seed": seed,
        "filter": test_filter,
        "listed": result.listed,
        "passed": len(result.names("passed")),
        "skipped": len(result.names("skipped")),
        "failed": [{"test": name, "status": result.status[name], "note": result.notes.get(name, "")}
                   for name in result.names("failed", "crashed", "timed out", "not run")],
        "error": result.error,
        "processes": result.processes,
    }


# ---- throughput ----

def bench_row(path):
    report = load_json(path)
    if not report or not report.get("results"):
        return None
    row = report["results"][0]
    return {
        "precision": row["precision"], "device": row["device"], "tokens_per_second": row["tokens_per_second"],
        "ms_per_step": row["ms_per_step"], "tflops": row["achieved_tflops"], "peak_tflops": row["peak_tflops"],
        "mfu": row["mfu"], "peak_memory_gib": row["peak_memory_bytes"] / 2**30, "model": report["model"],
        "batch_size": report["batch_size"], "seq_len": report["seq_len"], "attention": report["attention"],
        "gradient_exchange": report["gradient_exchange"],
    }


def bench_text(row):
    return (f"{number(row['tokens_per_second'])} tok/s, MFU {percent(row['mfu'])}, {row['ms_per_step']:.1f} ms/step, "
            f"{row['tflops']:.1f} TFLOP/s, peak {row['peak_memory_gib']:.1f} GiB")


def step_profiles(path):
    """Per precision of a `mixgpt bench --profile` JSON: ms per step and its ops, largest first."""
    report = load_json(path)
    return [{"precision": row["precision"], "ms_per_step": row["ms_per_step"],
             "ops": [{"op": op["op"], "ms": op["ms_per_step"], "calls": op["calls_per_step"]}
                     for op in row.get("profile") or []]}
            for row in (report or {}).get("results", [])]


def profile_text(row, top=5):
    """"bf16 48.1 ms: attention_backward 9.60 (20%), ...; outside the ops 1.20": the largest ops."""
    step = row["ms_per_step"]
    in_ops = sum(op["ms"] for op in row["ops"])
    cells = [f"{op['op']} {op['ms']:.2f} ({op['ms'] / step:.0%})" for op in row["ops"][:top]]
    return f"{row['precision']} {step:.1f} ms: " + ", ".join(cells) + f"; outside the ops {step - in_ops:.2f}"


def torch_rows(path):
    rows = []
    try:
        with open(path) as file:
            for line in file:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue
    except OSError:
        pass
    return rows


def torch_text(row):
    mode = "compile" if row.get("compiled") else "eager"
    if "error" in row:
        return f"{row['precision']} {mode}: failed: {row['error'][:120]}"
    return (f"{row['precision']} {mode} {number(row['tokens_per_second'])} tok/s, {row['tflops']:.1f} TFLOP/s "
            f"(warm-up {row['warmup_seconds']:.0f} s)")


# ---- attention ----

def attention_flops(dims):
    """Forward FLOPs under the causal mask, 4 B H T^2 hd / 2 (the lab's and FlashAttention-2's convention)."""
    return 4.0 * dims["B"] * dims["H"] * dims["T"] ** 2 * dims["head_dim"] / 2


def lab_attention(path):
    """Per shape: forward and backward ms, forward + backward TFLOP/s and the lab's validation."""
    report = load_json(path)
    shapes = {}
    for row in (report or {}).get("rows", []):
        if not row["kernel"].startswith("flash_attention_") or "document_length" in row["dims"] \
                or "window" in row["dims"]:
            continue  # the document-mask and window rows: lab_document_mask
        key = (row["dims"]["T"], row["dims"]["head_dim"])
        entry = shapes.setdefault(key, {**row["dims"], "valid": True, "validation": []})
        entry["forward_ms" if row["kernel"].endswith("forward") else "backward_ms"] = row["milliseconds"]
        entry["valid"] = entry["valid"] and row["valid"]
        entry["validation"].append(row["validation"])
    rows = []
    for entry in shapes.values():
        if "forward_ms" in entry and "backward_ms" in entry:
            entry["tflops"] = 3.5 * attention_flops(entry) / (entry["forward_ms"] + entry["backward_ms"]) / 1e9
            entry["sizes"] = report.get("sizes", "")
            rows.append(entry)
    return rows


def lab_document_mask(path):
    """Per document-mask or window shape: forward + backward ms, and against the causal shape of the
    same T and head dim in the same report, the time ratio beside the ratio of the pairs the mask
    leaves (the work the kernels should do when they skip the masked tiles)."""
    times = {}
    for row in (load_json(path) or {}).get("rows", []):
        if not row["kernel"].startswith("flash_attention_") or "kv_heads" in row["dims"]:
            continue
        dims = row["dims"]
        key = (dims["T"], dims["head_dim"], dims.get("document_length", 0), dims.get("window", 0))
        entry = times.setdefault(key, {"T": dims["T"], "head_dim": dims["head_dim"], "document_length": key[2],
                                       "window": key[3], "ms": 0.0, "valid": True})
        entry["ms"] += row["milliseconds"]
        entry["valid"] = entry["valid"] and row["valid"]
    rows = []
    for (length, head_dim, document_length, window), entry in sorted(times.items()):
        causal = times.get((length, head_dim, 0, 0))
        if (document_length == 0 and window == 0) or causal is None:
            continue
        if window:  # each query's min(t + 1, W) keys over the causal half's T^2 / 2
            entry["pairs_ratio"] = (2 * length * window - window ** 2) / length ** 2
        else:
            whole, rest = divmod(length, document_length)
            entry["pairs_ratio"] = (whole * document_length ** 2 + rest ** 2) / length ** 2
        entry["time_ratio"] = entry["ms"] / causal["ms"]
        rows.append(entry)
    return rows


def document_mask_text(row):
    mask = f"window {row['window']}" if row["window"] else f"documents {row['document_length']}"
    return (f"T={row['T']} hd={row['head_dim']} {mask}: {row['ms']:.3f} ms fwd+bwd, "
            f"{row['time_ratio']:.2f}x causal for {row['pairs_ratio']:.2f}x its pairs"
            f"{'' if row['valid'] else ' FAILED validation'}")


def attention_text(row):
    return (f"T={row['T']} hd={row['head_dim']}: {row['tflops']:.1f} TFLOP/s fwd+bwd "
            f"({row['forward_ms']:.3f} + {row['backward_ms']:.3f} ms){'' if row['valid'] else ' FAILED validation'}")


def sdpa_rows(path):
    report = load_json(path)
    rows = []
    for result in (report or {}).get("results", []):
        row = {"T": result["T"], "head_dim": result["head_dim"]}
        for name in ("mixgpt", "torch_flash", "torch_cudnn"):
            times = result.get(name)
            row[name] = None if not times or None in times else 3.5 * result["forward_flops"] / sum(times) / 1e9
        rows.append(row)
    return rows


def sdpa_text(row):
    return (f"T={row['T']} hd={row['head_dim']}: mixgpt {number(row['mixgpt'], 1)}, SDPA flash "
            f"{number(row['torch_flash'], 1)}, cuDNN {number(row['torch_cudnn'], 1)} TFLOP/s")


# ---- sanitizers ----

def sanitizer_summary(log_path, simulator):
    """Error counts of compute-sanitizer (its ERROR SUMMARY; racecheck's hazards), and the tests' totals.
    No summary at all leaves "errors" out: a run that printed none is not clean."""
    try:
        with open(log_path, errors="replace") as file:
            text = file.read()
    except OSError:
        text = ""
    found = {"simulator": simulator}
    errors = SANITIZER_ERRORS.findall(text)
    if errors:
        found["errors"] = int(errors[-1])
    elif simulator:  # no compute-sanitizer: the simulator's checks fail the run instead
        found["errors"] = 0
    race = RACECHECK.findall(text)
    if race:  # racecheck may print only its own summary
        found["hazards"], found["race_errors"], found["race_warnings"] = (int(n) for n in race[-1])
        found["errors"] = max(found.get("errors", 0), found["race_errors"])
    for kind, count in GTEST_TOTALS.findall(text):
        found["tests_" + kind.lower()] = int(count)
    return found


def sanitizer_text(found, outcome):
    if found.get("simulator"):
        head = f"simulator ({'backward' if found['tool'] == 'racecheck' else 'forward'} schedule), no compute-sanitizer: "
        head = "simulator's own checks, no compute-sanitizer: " if found["tool"] == "memcheck" else head
    else:
        head = f"{found.get('errors', '?')} errors"
        head += f" ({found['hazards']} hazards)" if "hazards" in found else ""
        head += ": "
    tests = f", tests {found.get('tests_passed', 0)} passed, {found.get('tests_failed', 0)} failed" if "tests_passed" in found or "tests_failed" in found else ""
    return head + outcome.describe() + tests


# ---- extras ----

def lab_backend(path):
    report = load_json(path)
    if not report or not report.get("rows"):
        return None
    return {
        "ceilings": report["ceilings"],
        "rows": [{"kernel": row["kernel"].replace(" (backend)", ""), "shape": row["shape"], "ms": row["milliseconds"],
                  "achieved": row["achieved"], "unit": row["unit"], "fraction": row["fraction_of_ceiling"],
                  "valid": row["valid"]} for row in report["rows"]],
    }


def lab_backend_text(lab):
    ceilings = lab["ceilings"]
    rows = ", ".join(f"{row['kernel']} {percent(row['fraction'])}{'' if row['valid'] else ' FAILED'}" for row in lab["rows"])
    return (f"copy {ceilings['copy_gb_per_s']:.0f} GB/s, GEMM {ceilings['gemm_tflop_per_s']:.0f} TFLOP/s; of ceiling: "
            + rows)


def training_metrics(path):
    last_train, last_eval = {}, {}
    try:
        with open(path) as file:
            for line in file:
                record = json.loads(line)
                if record.get("type") == "train":
                    last_train = record
                elif record.get("type") == "eval":
                    last_eval = record
    except (OSError, ValueError):
        pass
    return {"steps": last_train.get("step"), "train_loss": last_train.get("loss"),
            "tokens_per_second": last_train.get("tokens_per_second"), "val_loss": last_eval.get("val_loss")}


def eval_result(path):
    report = load_json(path)
    if not report:
        return None
    return {"loss": report["mean_loss"], "tokens": report["tokens"], "bits_per_byte": report["bits_per_byte"]}


def training_text(result):
    text = f"{result['precision']}: {result.get('steps') or 0} steps"
    if result.get("train_loss") is not None:
        text += f", train loss {result['train_loss']:.4f}, {number(result['tokens_per_second'])} tok/s"
    for device in ("cuda", "cpu"):
        value = result.get(f"eval_{device}")
        if value:
            text += f"; eval on {device} {value['loss']:.5f} over {value['tokens']} tokens"
    if result.get("eval_cuda") and result.get("eval_cpu"):
        text += f" (difference {abs(result['eval_cuda']['loss'] - result['eval_cpu']['loss']):.2e})"
    board = result.get("tensorboard")
    if board:
        text += (f"; TensorBoard read {board['values']} values of {board['scalar_tags']} scalar tags"
                 f" and {board.get('histograms', 0)} histograms of {board.get('histogram_tags', 0)} tags"
                 if board.get("available") else f"; TensorBoard not checked: {board.get('why')}")
    return text if result["train_exit"] == 0 else text + f"; training exit {result['train_exit']}"
