"""Running one command of a lease step: in a process group of its own, under a time cap, its
output line-buffered into a log file. When the cap passes, or the command ends, the whole group
is killed, so nothing it started (a hung test, a compile worker) keeps the GPU."""
import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

STDBUF = shutil.which("stdbuf")


@dataclass
class Outcome:
    exit: int  # the command's exit status; -N for signal N; 127 when it could not start
    seconds: float
    stopped_at_cap: bool = False

    def describe(self):
        if self.stopped_at_cap:
            return f"stopped at its cap after {self.seconds:.0f} s"
        if self.exit < 0:
            return f"killed by {signal.Signals(-self.exit).name}"
        return f"exit {self.exit}"


def line_buffered(command):
    """The command with C stdio line-buffered (stdbuf), so a killed step keeps what it printed."""
    return [STDBUF, "-oL", "-eL", *command] if STDBUF else list(command)


def kill_group(process):
    """SIGTERM to the process's group, then SIGKILL to whatever is left of it a few seconds later.
    The group leader is reaped here, so a zombie leader does not count as left."""
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        waited = 0.0
        while waited < grace:
            process.poll()
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
            waited += 0.05


def start(command, log, env=None, cwd=None):
    """Popen in a new session (its own process group), stdout and stderr appended to `log`."""
    log.write(f"$ {shlex.join(command)}\n")
    log.flush()
    return subprocess.Popen(line_buffered(command), stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True)


def run(command, log_path, cap_s, env=None, cwd=None):
    """Runs `command` for at most cap_s seconds, its output appended to log_path."""
    started = time.monotonic()
    with open(log_path, "a") as log:
        try:
            process = start(command, log, env, cwd)
        except OSError as error:
            log.write(f"cannot start: {error}\n")
            return Outcome(127, 0.0)
        stopped = False
        try:
            code = process.wait(timeout=max(cap_s, 0.1))
        except subprocess.TimeoutExpired:
            stopped = True
        kill_group(process)  # at the cap: the command; after it: anything it left running
        code = process.wait()
        seconds = time.monotonic() - started
        outcome = Outcome(code, seconds, stopped)
        log.write(f"({outcome.describe()}, {seconds:.1f} s)\n")
        return outcome


def output_of(command, cap_s, env=None):
    """(exit status, stdout + stderr text) of a short command; 127 and the reason when it cannot start."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=cap_s, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True, errors="replace")
    except OSError as error:
        return 127, str(error)
    except subprocess.TimeoutExpired:
        return 124, f"no answer within {cap_s} s"
    return result.returncode, result.stdout + result.stderr
