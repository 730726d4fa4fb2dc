"""The lease's first step, printed at once: the GPU (nvidia-smi), glibc, any library the bundle's
binaries cannot resolve (ldd), `mixgpt info`, PyTorch and compute-sanitizer. Its facts decide
which later steps can run. When mixgpt cannot start, the lease stops here with one line. Each
probe has its own time limit, and all of them together at most PREFLIGHT_CAP_S."""
import glob
import json
import os
import platform
import shutil
import time

from runner import output_of

PREFLIGHT_CAP_S = 120

TORCH_PROBE = (
    "import json, torch; ok = torch.cuda.is_available(); "
    "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, 'available': ok, "
    "'device': torch.cuda.get_device_name(0) if ok else ''}))"
)


def first_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0].strip() if lines else ""


def last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def unresolved_libraries(bundle, env, limit):
    """'libX.so (needed by mixgpt_tests)' for every library ldd cannot find for the bundle's binaries."""
    if shutil.which("ldd") is None:
        return ["(ldd not found: not checked)"]
    missing = []
    for binary in sorted(glob.glob(os.path.join(bundle, "bin", "*"))):
        code, text = output_of(["ldd", binary], limit(30), env)
        for line in text.splitlines():
            if "not found" in line:
                missing.append(f"{line.split()[0]} (needed by {os.path.basename(binary)})")
    return missing


def info_facts(text, facts):
    """Devices, cuBLASLt and NCCL as `mixgpt info` reports them."""
    for line in text.splitlines():
        if line.startswith("cuda:0: "):
            facts.device = line[len("cuda:0: "):].split(",")[0]
        elif line.startswith("devices: none: "):
            facts.no_device = line[len("devices: none: "):]
        for title, attribute in (("cuBLASLt: ", "cublaslt"), ("NCCL: ", "nccl")):
            if line.startswith(title):
                value = line[len(title):]
                if value.startswith("none: ") or value == "not built":
                    setattr(facts, "missing_" + attribute, value)
                else:
                    setattr(facts, attribute, value)


def find_torch(host_env, limit):
    """(python, probe dict) of the first interpreter that imports torch, or ("", {})."""
    candidates = [os.environ.get("PYTHON", ""), "python3", "/opt/torch/.venv/bin/python3", "/usr/bin/python3"]
    for python in [c for c in candidates if c and shutil.which(c)]:
        code, text = output_of([python, "-c", TORCH_PROBE], limit(90), host_env)
        if code == 0:
            try:
                return python, json.loads(last_line(text))
            except ValueError:
                continue
    return "", {}


def find_sanitizer():
    for candidate in [shutil.which("compute-sanitizer") or "",
                      os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "compute-sanitizer"),
                      "/usr/local/cuda/bin/compute-sanitizer"]:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return ""


def run_preflight(context, say):
    """Fills context.facts and context.figures['preflight']; returns the reason to stop, or ""."""
    facts, figures = context.facts, {}
    deadline = time.monotonic() + PREFLIGHT_CAP_S

    def limit(seconds):  # a probe's own limit, within what is left of the preflight's
        return max(1.0, min(seconds, deadline - time.monotonic()))

    code, text = output_of(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm",
                            "--format=csv,noheader"], limit(20), context.host_env)
    figures["nvidia_smi"] = (first_line(text) if code == 0 else "nvidia-smi not found" if code == 127
                             else f"nvidia-smi: exit {code}: {last_line(text)}")
    figures["glibc"] = platform.libc_ver()[1] or "unknown"
    figures["unresolved_libraries"] = unresolved_libraries(context.bundle, context.binary_env, limit)
    version_file = os.path.join(context.bundle, "VERSION")
    figures["bundle"] = open(version_file).read().strip().replace("\n", "; ") if os.path.isfile(version_file) else ""
    say(f"gpu: {figures['nvidia_smi']}")
    say(f"host: glibc {figures['glibc']}, Linux {platform.release()}, {os.cpu_count()} processors")
    if figures["bundle"]:
        say(f"bundle: {figures['bundle'][:300]}")
    unresolved = figures["unresolved_libraries"]
    say("ldd: every library of the bundle's binaries resolved" if not unresolved
        else "ldd: NOT FOUND: " + "; ".join(unresolved[:8]) + (f"; and {len(unresolved) - 8} more" if len(unresolved) > 8 else ""))

    bundle_mixgpt = os.path.join(context.bundle, "bin", "mixgpt")
    if not os.path.exists(bundle_mixgpt):
        bundle_mixgpt = context.binaries.mixgpt
    code, text = output_of([bundle_mixgpt, "info"], limit(60), context.binary_env)
    with open(context.log("preflight.log"), "a") as log:
        log.write(f"$ {bundle_mixgpt} info\n{text}(exit {code})\n")
    figures["mixgpt_info"] = text.strip()
    if code != 0:
        figures["stop"] = f"{bundle_mixgpt} cannot start (exit {code}): {last_line(text)[:400]}"
        context.figures["preflight"] = figures
        return figures["stop"]
    if context.simulator:  # the steps run the simulator's binaries: their device and libraries count
        code, text = output_of([context.binaries.mixgpt, "info"], limit(60), context.binary_env)
        with open(context.log("preflight.log"), "a") as log:
            log.write(f"$ {context.binaries.mixgpt} info\n{text}(exit {code})\n")
        if code != 0:
            figures["stop"] = f"{context.binaries.mixgpt} cannot start (exit {code}): {last_line(text)[:400]}"
            context.figures["preflight"] = figures
            return figures["stop"]
    info_facts(text, facts)
    for line in figures["mixgpt_info"].splitlines():
        if line.startswith(("mixgpt ", "CUDA toolkit:")):
            say(line)
    say(f"device: {facts.device or 'none: ' + facts.no_device}")
    say(f"cuBLASLt: {facts.cublaslt or facts.missing_cublaslt}")
    say(f"NCCL: {facts.nccl or facts.missing_nccl}")

    facts.python, torch = find_torch(context.host_env, limit)
    facts.torch, facts.torch_cuda = torch.get("torch", ""), bool(torch.get("available"))
    figures["torch"] = torch
    say(f"PyTorch: {facts.torch} (CUDA {torch.get('cuda')}, {torch.get('device') or 'no GPU'}) in {facts.python}"
        if facts.torch else "PyTorch: not found (PYTHON, python3, /opt/torch/.venv/bin/python3, /usr/bin/python3)")
    facts.sanitizer = find_sanitizer()
    if facts.sanitizer:
        code, text = output_of([facts.sanitizer, "--version"], limit(30), context.host_env)
        figures["compute_sanitizer"] = last_line(text)
    say(f"compute-sanitizer: {figures.get('compute_sanitizer', '') + ' at ' + facts.sanitizer if facts.sanitizer else 'not found'}"
        + (" (the simulator runs its own checks instead)" if context.simulator else ""))
    dataset = os.path.join(context.bundle, "data", "kjv")  # a dataset folder, or one of before shards
    facts.dataset = dataset if any(os.path.isfile(os.path.join(dataset, name))
                                   for name in ("index.json", "dataset.h5")) else ""
    context.figures["preflight"] = figures
    return ""
