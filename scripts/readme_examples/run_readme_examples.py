#!/usr/bin/env python3
"""Runs every command of README.md's shell blocks, in README's order, in a scratch folder that
holds this build and the files README takes a user to have (world.py), at the sizes of plan.py's
substitutions; skips what plan.py's skip list names. One line per command: ran, skipped (why) or
FAILED (with the end of its output); exit 1 when any command failed or the plan has an error.

Usage: run_readme_examples.py BUILD [--readme README.md] [--keep]
"""
import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from plan import plan  # noqa: E402
from world import REPOSITORY, make_world  # noqa: E402

COMMAND_TIMEOUT_S = 120
TAIL_LINES = 8


def run_command(text, folder):
    """(exit status or None on timeout, combined output) of `text` under bash with pipefail, in its
    own process group so that a timeout ends all of it."""
    process = subprocess.Popen(["bash", "-o", "pipefail", "-c", text], cwd=folder, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=COMMAND_TIMEOUT_S)
        return process.returncode, output.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output.decode(errors="replace")


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_steps(steps, folder, readme_name):
    """Runs the steps in order, printing one line each; returns the number that failed."""
    failed = 0
    for step in steps:
        where = f"{readme_name}:{step.line}"
        if step.skip_reason:
            print(f"skipped                   {where:14} {step.written}  ({step.skip_reason})")
            continue
        start, cpu_start = time.monotonic(), children_cpu_seconds()
        status, output = run_command(step.to_run, folder)
        seconds, cpu = time.monotonic() - start, children_cpu_seconds() - cpu_start
        as_run = f"  [as run: {step.to_run}]" if step.to_run != step.written else ""
        if status == 0:
            print(f"ran     {seconds:5.1f} s {cpu:5.1f} cpu-s {where:14} {step.written}{as_run}")
            continue
        failed += 1
        why = f"no exit within {COMMAND_TIMEOUT_S} s" if status is None else f"exit {status}"
        print(f"FAILED  {seconds:5.1f} s {cpu:5.1f} cpu-s {where:14} {step.written}{as_run}  ({why})")
        for line in output.rstrip().splitlines()[-TAIL_LINES:]:
            print(f"        | {line}")
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", help="the build folder holding mixgpt")
    parser.add_argument("--readme", default=os.path.join(REPOSITORY, "README.md"))
    parser.add_argument("--keep", action="store_true", help="leave the scratch folder and say where")
    arguments = parser.parse_args()
    readme_name = os.path.basename(arguments.readme)
    with open(arguments.readme, encoding="utf-8") as file:
        steps, errors = plan(file.read(), readme_name)
    start = time.monotonic()
    folder = tempfile.mkdtemp(prefix="mixgpt-readme-")
    try:
        make_world(folder, arguments.build)
        failed = run_steps(steps, folder, readme_name)
    finally:
        if arguments.keep:
            print(f"scratch folder kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    for error in errors:
        print(f"ERROR   {error}")
    ran = sum(1 for step in steps if step.to_run)
    print(f"README examples: {ran - failed} passed, {len(steps) - ran} skipped, {failed} failed, "
          f"{len(errors)} plan errors ({time.monotonic() - start:.0f} s)")
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
