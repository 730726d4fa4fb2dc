"""One GPU lease, the whole evidence (scripts/gpu_lease.sh runs this; bench/README.md, "A GPU
session, step by step"). Usage:

    gpu_lease.sh [--dry-run] BUNDLE OUTPUT_DIR

BUNDLE: build/bundle.tar.xz (unpacked beside itself), an unpacked bundle, or a build folder.
Runs the steps of steps.py in order of value under GPU_LEASE_BUDGET_S (default 480) seconds:
each has its own cap, a step whose estimate no longer fits (or whose needs are missing: no
device, cuBLASLt, NCCL, PyTorch, compute-sanitizer) is skipped with a line saying why, and
nothing runs past the budget. Stdout is the digest (at most 10 KB: preflight, one line per step
as it ends, then every number); OUTPUT_DIR gets report.md, figures.json and lease-logs.tar.xz
(every log and JSON), nothing else. Exit status 1 when a step failed or was stopped at its cap,
or none ran.

Environment: GPU_LEASE_BUDGET_S; GPU_LEASE_STEPS=a,b (only those steps, for a re-run);
GPU_LEASE_SIMULATOR=BUILD (the simulator's binaries from BUILD at smoke sizes instead of the
bundle's GPU binaries: the lease tested without a GPU); MIXGPT_TEST_SEED (default 1); PYTHON
(the interpreter with PyTorch); GPU_LEASE_TEST_STALL=STEP:CAP (a test hook: STEP's command is
replaced by one that never ends, under a cap of CAP seconds).
"""
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import digest  # noqa: E402
import runner  # noqa: E402
from context import PRODUCTION, SMOKE, Context, binaries_of, bundle_environment  # noqa: E402
from preflight import PREFLIGHT_CAP_S, run_preflight  # noqa: E402
from steps import StepResult, plan, unmet_need  # noqa: E402

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHIVE = "lease-logs.tar.xz"
LOG_LIMIT_BYTES = 4 << 20  # a longer log keeps its first and last 2 MiB in the archive


class Printer:
    """Prints digest lines at once and keeps them for report.md; never past the digest's limit."""

    def __init__(self):
        self.lines, self.size = [], 0

    def __call__(self, line, reserve=0):
        line = line[:400]
        if self.size + len(line) + 1 > digest.DIGEST_LIMIT_BYTES - reserve:
            return
        self.lines.append(line)
        self.size += len(line.encode()) + 1
        print(line, flush=True)


def unpack(bundle_arg):
    """The bundle folder: BUNDLE itself, or where BUNDLE.tar.xz unpacks (its folder 'bundle')."""
    if os.path.isdir(bundle_arg):
        return os.path.abspath(bundle_arg)
    target = os.path.dirname(os.path.abspath(bundle_arg))
    if shutil.which("tar") and shutil.which("xz"):
        if subprocess.run(["tar", "-xJf", bundle_arg, "-C", target]).returncode != 0:
            raise SystemExit(f"gpu_lease: cannot unpack {bundle_arg}")
    else:
        with tarfile.open(bundle_arg) as archive:
            archive.extractall(target)
    return os.path.join(target, "bundle")


def dry_run(budget, simulator):
    mode = 1 if simulator else 0
    total = 15  # the preflight
    print(f"gpu_lease plan ({'simulator, smoke sizes' if simulator else 'GPU'}), budget {budget} s"
          + ("" if simulator else "; estimates from the H200 lease of 2026-11-28") + ":")
    print(f"{'':3} {'step':17} {'estimate':>8} {'cap':>5}  {'needs':28} what")
    for index, step in enumerate(plan(), 1):
        total += step.estimate_s[mode]
        fits = "" if total <= budget - 10 else "  (beyond the budget at these estimates)"
        print(f"{index:2}. {step.name:17} {step.estimate_s[mode]:6} s {step.cap_s[mode]:3} s  "
              f"{','.join(step.needs):28} {'extra: ' if step.extra else ''}{step.title}{fits}")
    print(f"preflight about 15 s (at most {PREFLIGHT_CAP_S} s); estimates total {total} s")


def archive_logs(work, path):
    with tarfile.open(path, "w:xz", preset=6) as archive:
        for name in sorted(os.listdir(work)):
            full = os.path.join(work, name)
            if os.path.isfile(full) and os.path.getsize(full) > LOG_LIMIT_BYTES:
                with open(full, "rb") as file:
                    head = file.read(2 << 20)
                    file.seek(-(2 << 20), os.SEEK_END)
                    kept = head + b"\n[... cut by gpu_lease ...]\n" + file.read()
                cut = full + ".cut"
                with open(cut, "wb") as file:
                    file.write(kept)
                archive.add(cut, arcname=f"lease-logs/{name}")
            else:
                archive.add(full, arcname=f"lease-logs/{name}",
                            filter=lambda info: None if info.name.endswith(".h5") else info)


def main(argv):
    budget = int(os.environ.get("GPU_LEASE_BUDGET_S", "480"))
    simulator_build = os.environ.get("GPU_LEASE_SIMULATOR", "")
    arguments = [a for a in argv if a != "--dry-run"]
    if "--help" in argv or "-h" in argv:
        print(__doc__)
        return 0
    if "--dry-run" in argv:
        dry_run(budget, bool(simulator_build))
        return 0
    if len(arguments) != 2 or arguments[0].startswith("-"):
        print("usage: scripts/gpu_lease.sh [--dry-run] BUNDLE OUTPUT_DIR (--help says more)", file=sys.stderr)
        return 2
    started = time.monotonic()
    say = Printer()
    bundle = unpack(arguments[0])
    output = os.path.abspath(arguments[1])
    os.makedirs(output, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gpu_lease_")
    host_env = dict(os.environ)
    context = Context(bundle, bool(simulator_build),
                      binaries_of(bundle, simulator_build and os.path.abspath(simulator_build)),
                      SMOKE if simulator_build else PRODUCTION, work, bundle_environment(bundle, host_env), host_env,
                      os.environ.get("MIXGPT_TEST_SEED", "1"))
    only = [name for name in os.environ.get("GPU_LEASE_STEPS", "").split(",") if name]
    stall_step, _, stall_cap = os.environ.get("GPU_LEASE_TEST_STALL", "").partition(":")
    reserve = 4 if context.simulator else 10  # for the report and the archive
    say(f"== mixgpt GPU lease {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, budget {budget} s"
        f"{', SIMULATOR at smoke sizes (' + simulator_build + ')' if context.simulator else ''} ==")

    stop = run_preflight(context, say)
    results = {}
    if stop:
        say(f"STOP: {stop}")
    steps = [step for step in plan() if not only or step.name in only]
    for index, step in enumerate([] if stop else steps, 1):
        left = budget - (time.monotonic() - started) - reserve
        estimate, cap = step.estimate_s[context.simulator], step.cap_s[context.simulator]
        unmet = unmet_need(context, step)
        if step.name == stall_step:
            cap = min(float(stall_cap or cap), left)
            step_started = time.monotonic()
            never_ends = ("import subprocess, sys, time; print('stalling (test hook)', flush=True); "
                          "subprocess.Popen(['sleep', sys.argv[1]]); time.sleep(3600)")
            outcome = runner.run([sys.executable, "-c", never_ends, f"3600.{os.getpid()}"],
                                 context.log(step.name + ".log"), cap, context.binary_env)
            result = StepResult("stopped" if outcome.stopped_at_cap else "failed",
                                f"test hook GPU_LEASE_TEST_STALL: {outcome.describe()}")
        elif unmet:
            result = StepResult("skipped", unmet)
        elif estimate > left:
            result = StepResult("skipped", f"budget: needs ~{estimate} s, {max(left, 0):.0f} s left")
        else:
            step_started = time.monotonic()
            try:
                result = step.run(context, step, min(cap, left))
            except Exception as error:  # a step's own bug: reported, and the next step runs
                result = StepResult("failed", f"lease script error: {type(error).__name__}: {error}")
        if result.status != "skipped":
            result.seconds = time.monotonic() - step_started
        results[step.name] = (step, result)
        say(f"[{index:2}/{len(steps)}] {step.name:17} {result.status:7} {result.seconds:5.0f} s  {result.summary}",
            reserve=3000)

    files = ["report.md", "figures.json", ARCHIVE]
    elapsed = time.monotonic() - started
    for line in digest.closing_lines(context, results, elapsed, budget, files):
        say(line)
    invocation = " ".join(shlex.quote(a) for a in [os.path.join(REPOSITORY, "scripts", "gpu_lease.sh"), *argv])
    with open(os.path.join(output, "report.md"), "w") as report:
        report.write(digest.report_markdown(context, invocation, say.lines, results))
    digest.write_figures(os.path.join(output, "figures.json"), context, results, elapsed, budget)
    archive_logs(work, os.path.join(output, ARCHIVE))
    shutil.rmtree(work, ignore_errors=True)
    statuses = [result.status for _, result in results.values()]
    failed = stop or "failed" in statuses or "stopped" in statuses or "ok" not in statuses
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
