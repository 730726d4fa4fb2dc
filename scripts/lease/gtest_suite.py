"""A GoogleTest suite under a per-test time limit, resumed after a crash or a hang.

The suite runs in one process (fast: one CUDA context for all tests). Its output is followed as
it is written: a test running longer than the per-test limit has the whole process group killed
and is reported as timed out; a test during which the process dies is reported as crashed. The
suite then goes on with the tests not yet run, in a new process, so one bad test loses no
other's result. Tests that failed are run again each in a process of its own (while time
remains): after an illegal address every later CUDA call of a process fails, so a failure in
the suite that passes alone was caused by an earlier test. A suite that lists no test (a binary
that cannot start, a filter that matches nothing) is a failure.
"""
import os
import re
import time
from dataclasses import dataclass, field

from runner import kill_group, output_of, start

RESULT = re.compile(r"^\[ +(OK|FAILED|SKIPPED) +\] ([^ ,]+)(?:,.*)? \(\d+ ms\)$")
RUN = re.compile(r"^\[ RUN +\] (\S+)$")


@dataclass
class SuiteResult:
    listed: int = 0
    status: dict = field(default_factory=dict)  # test -> passed, failed, skipped, crashed, timed out, not run
    notes: dict = field(default_factory=dict)  # test -> why, for those that did not pass
    error: str = ""  # why the suite could not run at all
    processes: int = 0

    def names(self, *statuses):
        return [name for name, status in self.status.items() if status in statuses]

    def failed(self):
        return self.error != "" or bool(self.names("failed", "crashed", "timed out", "not run"))


def list_tests(binary, gtest_filter, env, cap_s):
    """The test names the filter selects, in run order, or (None, why) when the binary cannot list them."""
    code, text = output_of([binary, "--gtest_list_tests", f"--gtest_filter={gtest_filter}"], cap_s, env)
    if code != 0:
        last = text.strip().splitlines()[-1:] or [""]
        return None, f"{os.path.basename(binary)} --gtest_list_tests: exit {code}: {last[0][:200]}"
    names, suite = [], ""
    for line in text.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        if not line.startswith(" "):
            suite = line.split()[0]
        else:
            names.append(suite + line.split()[0])
    return names, ""


class _Follower:
    """Reads the lines a process appends to its log, and what they say of the tests."""

    def __init__(self, log_path):
        self.file = open(log_path, "r", errors="replace")
        self.file.seek(0, os.SEEK_END)
        self.partial = ""
        self.current = None  # the test running now
        self.since = time.monotonic()  # when it started, or when the last test ended
        self.tail = []  # the current test's lines so far

    def poll(self, result):
        self.partial += self.file.read()
        *lines, self.partial = self.partial.split("\n")
        for line in lines:
            running = RUN.match(line)
            ended = RESULT.match(line)
            if running:
                self.current, self.since, self.tail = running.group(1), time.monotonic(), []
            elif ended and ended.group(2) == self.current:
                status = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[ended.group(1)]
                result.status[self.current] = status
                if status == "failed":
                    result.notes[self.current] = " | ".join(self.tail[-4:])[:300]
                self.current, self.since = None, time.monotonic()
            elif self.current is not None and line.strip():
                self.tail.append(line.strip())

    def close(self):
        self.file.close()


def _run_once(binary, gtest_filter, env, log, log_path, deadline, per_test_s, result):
    """One process of the suite; returns when it ends or is killed."""
    follower = _Follower(log_path)
    process = start([binary, f"--gtest_filter={gtest_filter}", "--gtest_color=no"], log, env)
    result.processes += 1
    killed_for = None
    while process.poll() is None:
        time.sleep(0.2)
        follower.poll(result)
        now = time.monotonic()
        if now >= deadline:
            killed_for = "stopped at the step's cap"
        elif now - follower.since > per_test_s:
            killed_for = f"timed out (per-test limit {per_test_s} s)"
        if killed_for:
            kill_group(process)
            break
    code = process.wait()
    kill_group(process)  # anything the suite left running
    follower.poll(result)
    follower.close()
    if follower.current is not None:
        if killed_for:
            result.status[follower.current] = "timed out" if killed_for.startswith("timed") else "not run"
            result.notes[follower.current] = killed_for
        else:
            result.status[follower.current] = "crashed"
            how = f"signal {-code}" if code < 0 else f"exit {code}"
            result.notes[follower.current] = f"the process died during it ({how}): " + " | ".join(follower.tail[-3:])[:250]
    log.write(f"(suite process: exit {code}{', ' + killed_for if killed_for else ''})\n")
    log.flush()
    return follower.current is not None and not (killed_for or "").startswith("stopped")


def run_suite(binary, gtest_filter, env, log_path, cap_s, per_test_s):
    """Runs the tests `gtest_filter` selects within cap_s seconds; see the module's text."""
    deadline = time.monotonic() + cap_s
    result = SuiteResult()
    listed, why = list_tests(binary, gtest_filter, env, min(60, cap_s))
    if listed is None or not listed:
        result.error = why or f"no test matches --gtest_filter={gtest_filter}"
        return result
    result.listed = len(listed)
    with open(log_path, "a") as log:
        filter_now = gtest_filter
        while time.monotonic() < deadline:
            resume = _run_once(binary, filter_now, env, log, log_path, deadline, per_test_s, result)
            remaining = [name for name in listed if name not in result.status]
            if not resume or not remaining:
                break
            filter_now = ":".join(remaining)
        for name in listed:
            if name not in result.status:
                result.status[name] = "not run"
                result.notes[name] = "the step's cap came first" if time.monotonic() >= deadline else "the suite ended before it"
        for name in result.names("failed"):
            if time.monotonic() + per_test_s > deadline:
                break
            alone = SuiteResult()
            log.write(f"\n# {name} again, alone\n")
            _run_once(binary, name, env, log, log_path, min(deadline, time.monotonic() + per_test_s), per_test_s, alone)
            result.processes += alone.processes
            if alone.status.get(name) == "passed":
                result.notes[name] = "passed when run alone (an earlier test's error?); in the suite: " + result.notes[name]
            elif alone.status.get(name) == "failed":
                result.notes[name] = "fails alone too: " + result.notes[name]
    return result
