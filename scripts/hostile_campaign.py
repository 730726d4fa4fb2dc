#!/usr/bin/env -S /usr/bin/python3
"""Hostile campaign, round three (issue 36): mixgpt run as a careless or unlucky user would, against
the five families of that issue, each case drawn afresh per trial (names, offsets, sizes, timings,
which command), judged by what every case must give:

    crash   a signal, an abort, "terminate called", or an exit status of 128 or more
    hang    still running after --timeout seconds (killed)
    damage  a file that existed before the command, and is not its output, changed or gone
    silent  exit 0 where the command had to refuse, or a result that is not what was asked
    message a refusal that is not one error line ("mixgpt: ...") naming what the case says it must
    ok      none of the above

Prints one line per trial, then a table per family, and exits 1 unless every trial is ok.

    scripts/hostile_campaign.py --build build --trials 3                 # about 3 minutes on 2 cores
    scripts/hostile_campaign.py --build build --trials 5 --json-out r.json
"""
import argparse
import glob
import gzip
import hashlib
import json
import lzma
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

WORDS = ["the", "cat", "sees", "a", "dog", "river", "moon", "keeps", "old", "man", "finds", "red",
         "ball", "house", "apple", "bird", "follows", "small", "my", "sister"]
TINY_MODEL = ["--model", "d2", "--n-embd", "32", "-b", "4", "-t", "16", "--threads", "1"]
LOG_LINE = re.compile(r"^\[\d\d:\d\d:\d\d (info|warning)\] ")


class Outcome:
    def __init__(self, status, out, err, hung, rusage=None):
        self.status, self.out, self.err, self.hung, self.rusage = status, out, err, hung, rusage

    @property
    def crashed(self):
        return (self.status is not None and (self.status < 0 or self.status >= 128)) or any(
            text in self.err for text in ("terminate called", "Segmentation fault", "Assertion", "core dumped"))

    def error_line(self):
        """The one error line, or None when stderr is not log lines then one "mixgpt: " line."""
        lines = [line for line in self.err.splitlines() if line.strip()]
        if not lines or not lines[-1].startswith("mixgpt: "):
            return None
        if not all(LOG_LINE.match(line) for line in lines[:-1]):
            return None
        return lines[-1]


class Verdict(Exception):
    def __init__(self, kind, detail):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def text_document(rng, lines):
    return "\n".join(" ".join(rng.choice(WORDS) for _ in range(10)) for _ in range(lines)) + "\n"


def tree_hashes(root, skip=()):
    """Path -> sha256 of every regular file under root (the paths under `skip` left out)."""
    hashes = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if any(path == s or path.startswith(s.rstrip("/") + "/") for s in skip):
                continue
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as file:
                    hashes[path] = hashlib.sha256(file.read()).hexdigest()
    return hashes


class Campaign:
    def __init__(self, mixgpt, timeout, root):
        self.mixgpt, self.timeout, self.root = mixgpt, timeout, root
        self.fixture = os.path.join(root, "fixture")
        os.makedirs(self.fixture)
        self.build_fixture()

    # ---- running -----------------------------------------------------------------------------
    def start(self, arguments, cwd=None):
        return subprocess.Popen([self.mixgpt] + arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=cwd, text=True, errors="replace", start_new_session=True)

    def finish(self, process, timeout=None):
        try:
            out, err = process.communicate(timeout=timeout or self.timeout)
            return Outcome(process.returncode, out, err, False)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            return Outcome(None, out, err, True)

    def run(self, arguments, cwd=None, timeout=None):
        return self.finish(self.start(arguments, cwd), timeout)

    def run_measured(self, arguments):
        """Runs and returns the outcome with the child's peak resident memory (KiB) in rusage."""
        process = self.start(arguments)
        out, err = process.stdout.read(), process.stderr.read()
        _, status, rusage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        return Outcome(process.returncode, out, err, False, rusage)

    def must_succeed(self, arguments, cwd=None):
        outcome = self.run(arguments, cwd)
        if outcome.status != 0:
            raise RuntimeError("campaign set-up failed: mixgpt %s\n%s" % (" ".join(arguments), outcome.err))
        return outcome

    # ---- the shared inputs -------------------------------------------------------------------
    def build_fixture(self):
        rng = random.Random(36)
        corpus = os.path.join(self.fixture, "corpus")
        os.makedirs(corpus)
        for d in range(12):
            with open(os.path.join(corpus, "doc%d.txt" % d), "w") as file:
                file.write(text_document(rng, 40))
        self.must_succeed(["prepare", "--output", self.path("data"), "--vocab-size", "300", "--val-fraction",
                           "0.25", "--seed", "3", "--threads", "1", corpus])
        self.must_succeed(["prepare", "--output", self.path("other_data"), "--vocab-size", "300",
                           "--val-fraction", "0.25", "--seed", "4", "--threads", "1", corpus])
        self.must_succeed(["train", "--dataset", self.path("data"), "--steps", "2", "-o", self.path("run")]
                          + TINY_MODEL)
        self.must_succeed(["export", "--checkpoint", self.path("run"), "-o", self.path("hf")])
        with open(self.path("task.jsonl"), "w") as file:
            for i in range(6):
                file.write(json.dumps({"context": "the cat %d" % i, "choices": ["sees", "likes the moon"],
                                       "label": i % 2}) + "\n")

    def path(self, name):
        return os.path.join(self.fixture, name)

    def case_dir(self, name):
        directory = tempfile.mkdtemp(prefix=name + "-", dir=self.root)
        return directory

    def copy(self, name, directory, as_name=None):
        target = os.path.join(directory, as_name or name)
        source = self.path(name)
        (shutil.copytree if os.path.isdir(source) else shutil.copy2)(source, target)
        return target


# ---- judging ---------------------------------------------------------------------------------
def check_no_crash(outcome):
    if outcome.hung:
        raise Verdict("hang", "killed after the timeout")
    if outcome.crashed:
        raise Verdict("crash", "status %s: %s" % (outcome.status, outcome.err.strip()[-300:]))


def check_unchanged(before, after_root, skip=()):
    after = tree_hashes(after_root, skip)
    for path, digest in before.items():
        if path not in after:
            raise Verdict("damage", "%s is gone" % path)
        if after[path] != digest:
            raise Verdict("damage", "%s changed" % path)


def expect_refusal(outcome, must_name=()):
    check_no_crash(outcome)
    if outcome.status == 0:
        raise Verdict("silent", "exit 0; stderr: %s" % outcome.err.strip()[-200:])
    line = outcome.error_line()
    if line is None:
        raise Verdict("message", "not one error line: %s" % outcome.err.strip()[-300:])
    for name in must_name:
        if name not in line:
            raise Verdict("message", "%r not named in: %s" % (name, line))
    return line


def expect_success(outcome):
    check_no_crash(outcome)
    if outcome.status != 0:
        raise Verdict("silent", "refused a valid request: %s" % outcome.err.strip()[-300:])


def refused_without_damage(campaign, directory, arguments, must_name=(), outputs=()):
    before = tree_hashes(directory, outputs)
    line = expect_refusal(campaign.run(arguments), must_name)
    check_unchanged(before, directory, outputs)
    return line


def dead_pid():
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return child


# ---- family 1: deleting what is not ours -----------------------------------------------------
def sweep_spares_what_is_not_ours(c, rng):
    d = c.case_dir("sweep")
    command = rng.choice(["prepare", "export", "import"])
    out = os.path.join(d, "out")
    suffix = rng.choice(["old", "tmp"]) + "-" + str(rng.choice([dead_pid(), os.getpid(), 2024,
                                                                 rng.randrange(10 ** 4, 10 ** 6)]))
    sibling = out + "." + suffix
    os.makedirs(os.path.join(sibling, "notes"))
    with open(os.path.join(sibling, "notes", "keep.md"), "w") as file:
        file.write("the user's own\n")
    arguments = {"prepare": ["prepare", "--output", out, "--vocab-size", "300", "--threads", "1",
                             c.path("corpus")],
                 "export": ["export", "--checkpoint", c.path("run"), "-o", out],
                 "import": ["import", "--directory", c.path("hf"), "-o", out]}[command]
    before = tree_hashes(sibling)
    expect_success(c.run(arguments))
    check_unchanged(before, sibling)
    return "%s beside %s" % (command, os.path.basename(sibling))


def export_of_an_input_named_like_a_temporary(c, rng):
    d = c.case_dir("input-temporary")
    source = c.copy("run", d, "model.%s-%d" % (rng.choice(["tmp", "old"]), dead_pid()))
    before = tree_hashes(source)
    outcome = c.run(["export", "--checkpoint", source, "-o", os.path.join(d, "model")])
    check_no_crash(outcome)
    check_unchanged(before, source)
    if outcome.status == 0 and not os.path.isfile(os.path.join(d, "model", "config.json")):
        raise Verdict("silent", "exit 0 without an export")
    return os.path.basename(source)


def prepare_force_over_its_inputs(c, rng):
    d = c.case_dir("force-inputs")
    books = os.path.join(d, "books")
    if rng.random() < 0.5:  # the folder already holds a dataset
        c.must_succeed(["prepare", "--output", books, "--vocab-size", "300", "--threads", "1", c.path("corpus")])
    os.makedirs(books, exist_ok=True)
    names = ["book%d.txt" % i for i in range(rng.randrange(2, 5))]
    for name in names:
        with open(os.path.join(books, name), "w") as file:
            file.write(text_document(rng, 30))
    before = {p: h for p, h in tree_hashes(books).items() if p.endswith(".txt")}
    outcome = c.run(["prepare", "--output", books, "--vocab-size", "300", "--threads", "1", "--force"]
                    + [os.path.join(books, n) for n in names])
    check_no_crash(outcome)
    check_unchanged(before, books)
    return "%d books, exit %d" % (len(names), outcome.status)


def per_example_onto_an_input(c, rng):
    d = c.case_dir("per-example-input")
    run = c.copy("run", d)
    task = c.copy("task.jsonl", d)
    target = rng.choice([task, os.path.join(run, "checkpoints", "step_00000002.h5"),
                         os.path.join(run, "metrics.jsonl")])
    refused_without_damage(c, d, ["eval", "--checkpoint", run, "--task", "mc", "--data", task,
                                  "--per-example", target, "--threads", "1"], [target])
    return os.path.relpath(target, d)


def outputs_through_standard_output(c, rng):
    command = rng.choice(["eval", "bench"])
    link_before = os.path.islink("/dev/stdout") and os.readlink("/dev/stdout")
    if command == "eval":
        outcome = c.run(["eval", "--checkpoint", c.path("run"), "--task", "mc", "--data", c.path("task.jsonl"),
                         "--per-example", "/dev/stdout", "--threads", "1"])
        wanted = '"label"'
    else:
        outcome = c.run(["bench", "--model", "d2", "--n-embd", "32", "-b", "1", "-t", "16", "--vocab-size", "300",
                         "--precision", "fp32", "--steps", "1", "--warmup-steps", "0", "--device", "cpu",
                         "--threads", "1", "--json-out", "/dev/stdout"])
        wanted = '"tokens_per_second"'
    expect_success(outcome)
    link_after = os.path.islink("/dev/stdout") and os.readlink("/dev/stdout")
    if link_after != link_before:
        raise Verdict("damage", "/dev/stdout was %r, now %r" % (link_before, link_after))
    if wanted not in outcome.out:
        raise Verdict("silent", "%s not printed on standard output" % wanted)
    return command


def overwrite_of_a_folder_that_is_not_a_run(c, rng):
    d = c.case_dir("overwrite")
    kind = rng.choice(["project", "dataset", "run-and-notes"])
    if kind == "dataset":
        target = c.copy("data", d)
    elif kind == "run-and-notes":
        target = c.copy("run", d)
        with open(os.path.join(target, "notes-%d.md" % rng.randrange(100)), "w") as file:
            file.write("what I tried\n")
    else:  # a run trained with -o . in a project folder
        target = c.copy("run", d, "project")
        os.makedirs(os.path.join(target, "src"))
        for name in ("README.md", "src/main.py", "notes.txt"):
            with open(os.path.join(target, name), "w") as file:
                file.write("# mine\n")
    dataset = target if kind == "dataset" else c.path("data")  # -o aimed at the dataset it trains on
    refused_without_damage(c, d, ["train", "--dataset", dataset, "--steps", "1", "-o", target,
                                  "--overwrite"] + TINY_MODEL, [target])
    return kind


def two_prepares_into_one_new_folder(c, rng):
    d = c.case_dir("two-prepares")
    out = os.path.join(d, "data")
    corpus = os.path.join(d, "corpus")
    os.makedirs(corpus)
    for i in range(40):
        with open(os.path.join(corpus, "doc%d.txt" % i), "w") as file:
            file.write(text_document(rng, 60))
    first = c.start(["prepare", "--output", out, "--vocab-size", "400", "--threads", "1", corpus])
    time.sleep(rng.uniform(0.0, 0.4))
    second = c.start(["prepare", "--output", out, "--vocab-size", "500", "--threads", "1", corpus])
    outcomes = [c.finish(first), c.finish(second)]
    for outcome in outcomes:
        check_no_crash(outcome)
    if all(o.status == 0 for o in outcomes):
        raise Verdict("silent", "both prepares exited 0")
    if os.path.exists(os.path.join(out, "index.json")):
        with open(os.path.join(out, "index.json")) as file:
            index = json.load(file)
        tokenizer = tree_hashes(out).get(os.path.join(out, "tokenizer.model"))
        if tokenizer != index["tokenizer"]["sha256"]:
            raise Verdict("damage", "index.json names another tokenizer than the one beside it")
        for shard in index["shards"]:
            if tree_hashes(out).get(os.path.join(out, shard["file"])) != shard["sha256"]:
                raise Verdict("damage", "%s is not the shard index.json describes" % shard["file"])
    return "exits %d, %d" % (outcomes[0].status, outcomes[1].status)


# ---- family 2: reusing what does not match ---------------------------------------------------
def append_with_conflicting_settings(c, rng):
    d = c.case_dir("append-settings")
    data = c.copy("data", d)
    extra = os.path.join(d, "extra.txt")
    with open(extra, "w") as file:
        file.write(text_document(rng, 20))
    option, value = rng.choice([("--seed", "4"), ("--val-fraction", "0.4"), ("--vocab-size", "400")])
    refused_without_damage(c, d, ["prepare", "--output", data, "--append", option, value, "--threads", "1", extra],
                           [option])
    return option


def append_of_an_input_already_in(c, rng):
    d = c.case_dir("append-twice")
    data = c.copy("data", d)
    name = "doc%d.txt" % rng.randrange(12)
    source = c.path(os.path.join("corpus", name))
    if rng.random() < 0.5:  # the same bytes under another name
        source = shutil.copy2(source, os.path.join(d, "renamed-" + name))
    refused_without_damage(c, d, ["prepare", "--output", data, "--append", "--threads", "1", source],
                           [os.path.basename(source)])
    return os.path.basename(source)


def kill_when(process, pattern, limit=20.0):
    """SIGKILLs the process group as soon as a path matches `pattern` (a glob); False when the
    process ended first."""
    deadline = time.time() + limit
    while time.time() < deadline:
        if glob.glob(pattern):
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return True
        if process.poll() is not None:
            process.communicate()
            return False
        time.sleep(0.002)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
    return True


def big_corpus(rng, directory, files, lines):
    os.makedirs(directory)
    for i in range(files):
        with open(os.path.join(directory, "doc%03d.txt" % i), "w") as file:
            file.write(text_document(rng, lines))


def resume_after_an_input_edited_in_place(c, rng):
    d = c.case_dir("edited-input")
    corpus = os.path.join(d, "corpus")
    big_corpus(rng, corpus, 30, 400)
    out = os.path.join(d, "data")
    process = c.start(["prepare", "--output", out, "--vocab-size", "300", "--threads", "1", "--shard-tokens", "3000",
                       corpus])
    if not kill_when(process, os.path.join(out, "progress.json")):
        return "finished before the kill (not judged)"
    victim = os.path.join(corpus, "doc%03d.txt" % rng.randrange(30))
    with open(victim, "r+") as file:
        text = file.read()
        file.seek(0)
        file.write(text.replace("the", "THE"))  # same size, other text
    outcome = c.run(["prepare", "--output", out, "--vocab-size", "300", "--threads", "1", "--shard-tokens", "3000",
                     "--resume", corpus])
    expect_refusal(outcome, [os.path.basename(victim)])
    return os.path.basename(victim)


def resume_of_a_killed_force(c, rng):
    d = c.case_dir("killed-force")
    corpus = os.path.join(d, "corpus")
    big_corpus(rng, corpus, 40, 3000)
    out = c.copy("data", d)
    process = c.start(["prepare", "--output", out, "--vocab-size", "350", "--threads", "1", "--shard-tokens", "3000",
                       "--force", corpus])
    shards = rng.randrange(1, 6)  # killed once the new dataset holds this many shards
    if not kill_when(process, out + ".tmp-*/shard-%06d.h5" % shards):
        return "finished before the kill (not judged)"
    outcome = c.run(["prepare", "--output", out, "--vocab-size", "350", "--threads", "1", "--shard-tokens", "3000",
                     "--force", "--resume", corpus])
    check_no_crash(outcome)
    if outcome.status == 0:
        with open(os.path.join(out, "index.json")) as file:
            if json.load(file)["vocab_size"] != 350:
                raise Verdict("silent", "exit 0 with the old dataset kept")
        return "continued"
    expect_refusal(outcome)
    return "refused"


def study_with_changed_settings(c, rng):
    d = c.case_dir("study")
    study = os.path.join(d, "study")
    base = ["study", "--dataset", c.path("data"), "--precisions", "fp32", "--steps", "2", "--bench-steps", "1",
            "--eval-interval", "2", "-o", study, "--model", "d2", "--n-embd", "32", "-b", "4", "-t", "16",
            "--threads", "1"]
    c.must_succeed(base)
    option, value = rng.choice([("--lr", "0.001"), ("--arch", "llama"), ("--dataset", c.path("other_data")),
                                ("--seed", "7")])
    changed = list(base)
    if option in changed:
        changed[changed.index(option) + 1] = value
    else:
        changed += [option, value]
    refused_without_damage(c, d, changed, [option.lstrip("-")],
                           [os.path.join(study, "report.md"), os.path.join(study, "study.json")])
    return option


# ---- family 3: bytes we cannot vouch for -----------------------------------------------------
def binary_after_a_text_head(c, rng):
    d = c.case_dir("binary-tail")
    head_bytes = rng.randrange(70_000, 200_000)
    kind = rng.choice(["random", "nul", "latin-1"])
    path = os.path.join(d, "mixed.txt")
    with open(path, "wb") as file:
        head = text_document(rng, head_bytes // 50).encode()[:head_bytes]
        file.write(head)
        tail_bytes = rng.randrange(100_000, 300_000)
        if kind == "random":
            file.write(bytes(rng.getrandbits(8) for _ in range(tail_bytes)))
        elif kind == "nul":
            file.write(b"\0" * tail_bytes)
        else:
            text = text_document(rng, tail_bytes // 50).encode()
            file.write(bytes(b if rng.random() > 0.1 else 0xE9 for b in text))
    refused_without_damage(c, d, ["prepare", "--output", os.path.join(d, "data"), "--vocab-size", "300",
                                  "--threads", "1", path], ["mixed.txt"], [os.path.join(d, "data")])
    outcome = c.run(["prepare", "--output", os.path.join(d, "data"), "--vocab-size", "300", "--threads", "1",
                     "--skip-binary", path, c.path("corpus")])
    expect_success(outcome)
    if "mixed.txt" not in outcome.err:
        raise Verdict("silent", "--skip-binary left mixed.txt without saying so")
    return "%s after %d bytes" % (kind, head_bytes)


def data_after_a_compressed_stream(c, rng):
    d = c.case_dir("trailing")
    kind = rng.choice(["gz", "xz"])
    path = os.path.join(d, "docs.jsonl." + kind)
    lines = "".join(json.dumps({"text": text_document(rng, 3)}) + "\n" for _ in range(20)).encode()
    packed = gzip.compress(lines) if kind == "gz" else lzma.compress(lines)
    with open(path, "wb") as file:
        file.write(packed + lines[: rng.randrange(50, len(lines))])
    refused_without_damage(c, d, ["prepare", "--output", os.path.join(d, "data"), "--vocab-size", "300",
                                  "--threads", "1", path], ["docs.jsonl." + kind], [os.path.join(d, "data")])
    return kind


def one_long_line_and_the_sample_size(c, rng):
    d = c.case_dir("long-line")
    path = os.path.join(d, "one.jsonl")
    megabytes = rng.choice([24, 40])
    with open(path, "w") as file:
        file.write(json.dumps({"text": text_document(rng, megabytes * 1024 * 1024 // 50)}) + "\n")
        for _ in range(8):
            file.write(json.dumps({"text": text_document(rng, 20)}) + "\n")
    outcome = c.run_measured(["prepare", "--output", os.path.join(d, "data"), "--vocab-size", "300", "--threads", "1",
                              "--tokenizer-sample-bytes", "2000000", path])
    expect_success(outcome)
    match = re.search(r"tokenizer \(vocabulary \d+\) on ([0-9.]+) MB", outcome.err)
    if not match or float(match.group(1)) > 2.0:
        raise Verdict("silent", "the tokenizer trained on %s MB, asked 2" % (match and match.group(1)))
    return "%d MB line, peak %d MB" % (megabytes, outcome.rusage.ru_maxrss // 1024)


def gpt2_files_cut_short(c, rng):
    d = c.case_dir("gpt2-cut")
    files = os.path.join(d, "gpt2")
    os.makedirs(files)
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "gpt2")
    with gzip.open(os.path.join(fixtures, "encoder.json.gz")) as source:
        encoder = source.read()
    with gzip.open(os.path.join(fixtures, "vocab.bpe.gz")) as source:
        merges = source.read().decode().splitlines(True)
    cut = rng.choice(["version line only", "half", "one short", "byte missing"])
    if cut == "version line only":
        merges = merges[:1]
    elif cut == "half":
        merges = merges[: len(merges) // 2]
    elif cut == "one short":
        merges = merges[:-1]
    with open(os.path.join(files, "encoder.json"), "wb") as file:
        if cut == "byte missing":
            table = json.loads(encoder)
            del table[rng.choice([k for k in table if len(k) == 1])]
            encoder = json.dumps(table).encode()
        file.write(encoder)
    with open(os.path.join(files, "vocab.bpe"), "w") as file:
        file.writelines(merges)
    refused_without_damage(c, d, ["prepare", "--output", os.path.join(d, "data"), "--tokenizer", "gpt2",
                                  "--gpt2-files", files, "--threads", "1", c.path("corpus")], [],
                           [os.path.join(d, "data")])
    return cut


def shard_bits_flipped(c, rng):
    d = c.case_dir("bit-flip")
    data = c.copy("data", d)
    shard = os.path.join(data, "shard-000000.h5")
    with h5py.File(shard, "r+") as file:
        names = []
        file.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset)
                        and item.dtype.kind in "iu" and item.size > 100 else None)
        tokens = file[rng.choice(names)]
        at = rng.randrange(tokens.size)
        value = int(tokens[at])
        tokens[at] = value ^ (1 << rng.randrange(3))
    command = rng.choice(["eval", "train"])
    arguments = (["eval", "--checkpoint", c.path("run"), "--dataset", data, "--threads", "1"] if command == "eval"
                 else ["train", "--dataset", data, "--steps", "2", "-o", os.path.join(d, "run")] + TINY_MODEL)
    if command == "train" and rng.random() < 0.5:
        arguments.append("--verify-data")
    refused_without_damage(c, d, arguments, ["shard-000000.h5"], [os.path.join(d, "run")])
    return command


def index_that_does_not_match_its_tokenizer(c, rng):
    d = c.case_dir("index-vocab")
    data = c.copy("data", d)
    with open(os.path.join(data, "index.json")) as file:
        index = json.load(file)
    field = rng.choice(["vocab_size", "eot_id"])
    index[field] = rng.choice([70000, 301, 299]) if field == "vocab_size" else 250
    with open(os.path.join(data, "index.json"), "w") as file:
        json.dump(index, file)
    refused_without_damage(c, d, ["train", "--dataset", data, "--steps", "1", "-o", os.path.join(d, "run")]
                           + TINY_MODEL, [field], [os.path.join(d, "run")])
    return "%s %s" % (field, index[field])


# ---- family 4: the data a run is evaluated on ------------------------------------------------
def mixture_weights_that_are_not_weights(c, rng):
    d = c.case_dir("weights")
    weight = rng.choice(["-1", "nan", "inf", "0", "-0.5", "1e400"])
    spelled = rng.choice(["suffix", "option"])
    arguments = ["train", "--dataset", c.path("data") + (":" + weight if spelled == "suffix" else ""),
                 "--dataset", c.path("other_data"), "--steps", "1", "-o", os.path.join(d, "run")] + TINY_MODEL
    if spelled == "option":
        arguments += ["--weights", weight + ",1"]
    refused_without_damage(c, d, arguments, [], [os.path.join(d, "run")])
    return "%s as %s" % (weight, spelled)


def evaluation_of_a_mixture_run(c, rng):
    d = c.case_dir("mixture-eval")
    order = [c.path("data"), c.path("other_data")]
    rng.shuffle(order)
    run = os.path.join(d, "run")
    c.must_succeed(["train", "--dataset", order[0], "--dataset", order[1], "--steps", "2", "-o", run] + TINY_MODEL)
    outcome = c.run(["eval", "--checkpoint", run, "--json", "--threads", "1"])
    expect_success(outcome)
    source = json.loads(outcome.out)["source"]
    if not all(path in source for path in order):
        raise Verdict("silent", "scored %s, trained on %s" % (source, order))
    return "both components"


def run_whose_dataset_was_replaced(c, rng):
    d = c.case_dir("replaced-dataset")
    data = c.copy("data", d)
    run = os.path.join(d, "run")
    c.must_succeed(["train", "--dataset", data, "--steps", "2", "-o", run] + TINY_MODEL)
    shutil.rmtree(data)
    c.copy("other_data", d, "data")
    cwd = rng.choice([d, c.root])
    before = tree_hashes(d)
    expect_refusal(c.run(["eval", "--checkpoint", run, "--threads", "1"], cwd=cwd), [data])
    check_unchanged(before, d)
    return "from " + ("its folder" if cwd == d else "elsewhere")


# ---- family 5: smaller things ----------------------------------------------------------------
def include_before_a_folder(c, rng):
    d = c.case_dir("include")
    corpus = os.path.join(d, "notes")
    os.makedirs(corpus)
    for i in range(4):
        with open(os.path.join(corpus, "n%d.md" % i), "w") as file:
            file.write(text_document(rng, 30))
    outcome = c.run(["prepare", "--include", "*.md", corpus, "--output", os.path.join(d, "data"), "--vocab-size",
                     "300", "--threads", "1"])
    expect_success(outcome)
    with open(os.path.join(d, "data", "index.json")) as file:
        if len(json.load(file)["inputs"]) != 4:
            raise Verdict("silent", "did not take the four .md files")
    return "4 files"


def options_refused_in_words(c, rng):
    d = c.case_dir("options")
    arguments, names = rng.choice([
        (["train", "--dataset", c.path("data"), "--n-kv-head", "0", "-o", os.path.join(d, "r")], ["must be > 0"]),
        (["train", "--dataset", c.path("data"), "--rope-theta", "1", "--arch", "llama", "-o", os.path.join(d, "r")],
         ["must be > 1"]),
        (["eval", "--checkpoint", c.path("run"), "--task", "mc", "--data", c.path("task.jsonl"), "--limit", "0"],
         ["must be > 0"]),
        (["train", "--dataset", c.path("data"), "--fp8-margin", "2", "-o", os.path.join(d, "r")], ["--fp8-margin"]),
        (["train", "--dataset", c.path("data"), "--fp8-head", "-o", os.path.join(d, "r")], ["--fp8-head"]),
    ])
    line = refused_without_damage(c, d, arguments, names, [os.path.join(d, "r")])
    if len(line) > 300:
        raise Verdict("message", "a %d-character line" % len(line))
    return " ".join(arguments[3:5])


def readers_while_checkpoints_rotate(c, rng):
    d = c.case_dir("rotation")
    run = os.path.join(d, "run")
    trainer = c.start(["train", "--dataset", c.path("data"), "--steps", "400", "--checkpoint-interval", "1",
                       "--keep-checkpoints", "1", "-o", run] + TINY_MODEL)
    failures, calls = [], 0
    deadline = time.time() + 20
    while trainer.poll() is None and time.time() < deadline:
        if not os.path.isdir(os.path.join(run, "checkpoints")):
            time.sleep(0.01)
            continue
        command = rng.choice([["eval", "--checkpoint", run, "--max-tokens", "64", "--threads", "1"],
                              ["export", "--checkpoint", run, "-o", os.path.join(d, "hf%d" % calls)],
                              ["sample", "--checkpoint", run, "-n", "4", "--threads", "1"]])
        outcome = c.run(command)
        calls += 1
        check_no_crash(outcome)
        if outcome.status != 0:
            failures.append(outcome.err.strip().splitlines()[-1])
    trainer_outcome = c.finish(trainer)
    check_no_crash(trainer_outcome)
    if failures:
        raise Verdict("silent", "%d of %d reads failed, e.g. %s" % (len(failures), calls, failures[0]))
    return "%d reads" % calls


def errors_that_name_their_file(c, rng):
    d = c.case_dir("names")
    kind = rng.choice(["tiktoken", "fp7"])
    if kind == "tiktoken":
        path = os.path.join(d, "far.tiktoken")
        with open(path, "w") as file:
            file.write("IQ== 0\nIg== %d\n" % rng.choice([3_000_000_000, 2 ** 40, 10 ** 12]))
        refused_without_damage(c, d, ["prepare", "--output", os.path.join(d, "data"), "--tokenizer", path,
                                      "--threads", "1", c.path("corpus")], ["far.tiktoken"], [os.path.join(d, "data")])
    else:
        hf = c.copy("hf", d)
        model = os.path.join(hf, "model.safetensors")
        with open(model, "rb") as file:
            blob = file.read()
        size = int.from_bytes(blob[:8], "little")
        header = json.loads(blob[8:8 + size])
        header.setdefault("__metadata__", {})["mixgpt_precision"] = "fp7"
        text = json.dumps(header).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        with open(model, "wb") as file:
            file.write(len(text).to_bytes(8, "little") + text + blob[8 + size:])
        refused_without_damage(c, d, ["import", "--directory", hf, "-o", os.path.join(d, "run")],
                               ["model.safetensors", "mixgpt_precision"], [os.path.join(d, "run")])
    return kind


FAMILIES = {
    "1 deleting what is not ours": [sweep_spares_what_is_not_ours, export_of_an_input_named_like_a_temporary,
                                    prepare_force_over_its_inputs, per_example_onto_an_input,
                                    outputs_through_standard_output, overwrite_of_a_folder_that_is_not_a_run,
                                    two_prepares_into_one_new_folder],
    "2 reusing what does not match": [append_with_conflicting_settings, append_of_an_input_already_in,
                                      resume_after_an_input_edited_in_place, resume_of_a_killed_force,
                                      study_with_changed_settings],
    "3 bytes we cannot vouch for": [binary_after_a_text_head, data_after_a_compressed_stream,
                                    one_long_line_and_the_sample_size, gpt2_files_cut_short, shard_bits_flipped,
                                    index_that_does_not_match_its_tokenizer],
    "4 the data a run is evaluated on": [mixture_weights_that_are_not_weights, evaluation_of_a_mixture_run,
                                         run_whose_dataset_was_replaced],
    "5 smaller things": [include_before_a_folder, options_refused_in_words, readers_while_checkpoints_rotate,
                         errors_that_name_their_file],
}
KINDS = ["ok", "crash", "hang", "damage", "silent", "message"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="the build folder holding mixgpt")
    parser.add_argument("--trials", type=int, default=3, help="trials of each case, each drawn afresh")
    parser.add_argument("--seed", type=int, default=36, help="seed of the draws")
    parser.add_argument("--timeout", type=float, default=120, help="seconds before a command counts as hung")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    parser.add_argument("--json-out", help="also write every trial's verdict here")
    args = parser.parse_args()

    mixgpt = os.path.abspath(os.path.join(args.build, "mixgpt"))
    if not os.access(mixgpt, os.X_OK):
        sys.exit("hostile_campaign.py: %s: not built (make all)" % mixgpt)
    root = tempfile.mkdtemp(prefix="mixgpt_hostile_")
    results = []
    try:
        campaign = Campaign(mixgpt, args.timeout, root)
        rng = random.Random(args.seed)
        for family, cases in FAMILIES.items():
            for case in cases:
                if args.only and args.only not in case.__name__:
                    continue
                for trial in range(args.trials):
                    trial_rng = random.Random(rng.getrandbits(64))
                    started = time.time()
                    try:
                        kind, detail = "ok", case(campaign, trial_rng)
                    except Verdict as verdict:
                        kind, detail = verdict.kind, verdict.detail
                    results.append({"family": family, "case": case.__name__, "trial": trial, "verdict": kind,
                                    "detail": detail, "seconds": round(time.time() - started, 1)})
                    print("%-7s %-45s %s" % (kind, case.__name__, detail), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print("\n%-36s %s" % ("family", " ".join("%7s" % k for k in KINDS)))
    for family in FAMILIES:
        counts = [sum(1 for r in results if r["family"] == family and r["verdict"] == k) for k in KINDS]
        if sum(counts):
            print("%-36s %s" % (family, " ".join("%7d" % n for n in counts)))
    totals = [sum(1 for r in results if r["verdict"] == k) for k in KINDS]
    print("%-36s %s" % ("all", " ".join("%7d" % n for n in totals)))
    if args.json_out:
        with open(args.json_out, "w") as file:
            json.dump({"trials": args.trials, "seed": args.seed, "results": results}, file, indent=1)
    sys.exit(0 if totals[0] == len(results) else 1)


if __name__ == "__main__":
    main()
