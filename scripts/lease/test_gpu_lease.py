#!/usr/bin/env python3
"""Tests of the GPU lease (scripts/gpu_lease.sh) without a GPU, run by scripts/run_tests.sh:

- the lease end to end on the CUDA simulator at smoke sizes, from a bundle-shaped folder: the
  digest on stdout is at most 10 KB; the output folder holds report.md, figures.json and
  lease-logs.tar.xz only; a step made to overrun its cap (GPU_LEASE_TEST_STALL) is stopped and
  reported, with what it started, while the later steps still run; the whole stays in its budget;
- the GoogleTest runner's per-test limit and resumption on a fake GoogleTest binary: a hung test
  is killed with its process group, a crashed one is named, the others still run; an empty test
  list is a failure;
- the parsers of compute-sanitizer's summaries;
- the binaries start where NCCL cannot be found: no binary links NCCL or cuBLASLt (ldd), and
  `mixgpt info` with MIXGPT_CUDA_LIBRARY_PATH at an empty folder says NCCL is missing and exits 0.

Usage: test_gpu_lease.py BUILD (the build folder with mixgpt and the simulator's binaries).
"""
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import digest  # noqa: E402
import figures  # noqa: E402
from gtest_suite import run_suite  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(REPOSITORY, "build"))

FAKE_GTEST = textwrap.dedent("""\
    #!/usr/bin/env python3
    # Behaves as a GoogleTest binary with four tests: Fake.Passes, Fake.Hangs (starts a child that
    # sleeps, then sleeps itself), Fake.Crashes (aborts) and Fake.Fails.
    import os, subprocess, sys, time
    tests = ["Passes", "Hangs", "Crashes", "Fails"]
    chosen = next(a for a in sys.argv if a.startswith("--gtest_filter=")).split("=", 1)[1]
    tests = [name for name in tests if chosen in ("Fake.*", "*") or "Fake." + name in chosen.split(":")]
    if "--gtest_list_tests" in sys.argv:
        print("Fake." if tests else "")
        for name in tests:
            print("  " + name)
        sys.exit(0)
    for name in tests:
        print("[ RUN      ] Fake." + name, flush=True)
        if name == "Hangs":
            subprocess.Popen(["sleep", os.environ["FAKE_SLEEP"]])
            time.sleep(3600)
        if name == "Crashes":
            print("about to abort", flush=True)
            os.abort()
        if name == "Fails":
            print("x.cpp:1: Failure: expected 1, got 2", flush=True)
            print("[  FAILED  ] Fake.Fails (1 ms)", flush=True)
            continue
        print("[       OK ] Fake." + name + " (1 ms)", flush=True)
    """)


def processes_with(marker):
    """Command lines of the processes whose arguments contain `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                command = file.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command and "processes_with" not in command:
            found.append(command)
    return found


class GtestRunner(unittest.TestCase):
    def test_hung_and_crashed_tests_are_named_and_the_others_run(self):
        with tempfile.TemporaryDirectory() as folder:
            binary = os.path.join(folder, "fake_gtest")
            with open(binary, "w") as file:
                file.write(FAKE_GTEST)
            os.chmod(binary, 0o755)
            marker = f"7777.{os.getpid()}"
            env = dict(os.environ, FAKE_SLEEP=marker)
            result = run_suite(binary, "Fake.*", env, os.path.join(folder, "log"), cap_s=30, per_test_s=2)
            self.assertEqual(result.status, {"Fake.Passes": "passed", "Fake.Hangs": "timed out",
                                             "Fake.Crashes": "crashed", "Fake.Fails": "failed"})
            self.assertIn("per-test limit 2 s", result.notes["Fake.Hangs"])
            self.assertIn("about to abort", result.notes["Fake.Crashes"])
            self.assertIn("fails alone too: x.cpp:1: Failure", result.notes["Fake.Fails"])
            self.assertEqual(result.processes, 4)  # the suite, resumed twice, and Fails alone
            self.assertTrue(result.failed())
            self.assertEqual(processes_with(marker), [])  # the hung test's child was killed with it

    def test_an_empty_test_list_is_a_failure(self):
        with tempfile.TemporaryDirectory() as folder:
            binary = os.path.join(folder, "fake_gtest")
            with open(binary, "w") as file:
                file.write(FAKE_GTEST)
            os.chmod(binary, 0o755)
            self.assertIn("no test matches", run_suite(binary, "Nothing.*", dict(os.environ), os.path.join(folder, "log"), 30, 2).error)
            missing = run_suite(os.path.join(folder, "absent"), "*", dict(os.environ), os.path.join(folder, "log"), 30, 2)
            self.assertTrue(missing.failed())
            self.assertIn("exit 127", missing.error)


class SanitizerSummaries(unittest.TestCase):
    def summary(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".log") as log:
            log.write(text)
            log.flush()
            return figures.sanitizer_summary(log.name, simulator=False)

    def test_counts(self):
        self.assertEqual(self.summary("========= ERROR SUMMARY: 3 errors\n")["errors"], 3)
        race = self.summary("[  PASSED  ] 4 tests.\n========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n")
        self.assertEqual((race["hazards"], race["errors"], race["tests_passed"]), (2, 1, 4))
        self.assertNotIn("errors", self.summary("Segmentation fault\n"))  # no summary: not clean


class DigestFigures(unittest.TestCase):
    """The digest's numbers from the files the steps leave (values made up, checked by hand)."""

    def test_torch_mfu_is_against_mixgpts_peak_for_the_precision(self):
        with tempfile.TemporaryDirectory() as folder:
            bench = os.path.join(folder, "bench.json")
            with open(bench, "w") as file:
                json.dump({"model": "d12", "batch_size": 16, "seq_len": 1024, "attention": "flash",
                           "gradient_exchange": "none",
                           "results": [{"precision": "bf16", "device": "cuda:0 (H100)", "tokens_per_second": 400000.0,
                                        "ms_per_step": 40.96, "achieved_tflops": 395.0, "peak_tflops": 989.5,
                                        "mfu": 0.3992, "peak_memory_bytes": 2**34}]}, file)
            row = dict(figures.bench_row(bench), label="bf16")
            jsonl = os.path.join(folder, "torch.jsonl")
            with open(jsonl, "w") as file:
                file.write(json.dumps({"precision": "bf16", "compiled": False, "tokens_per_second": 300000.0,
                                       "tflops": 296.85, "warmup_seconds": 4.0, "ms_per_step": 54.6}) + "\n")
                file.write(json.dumps({"precision": "bf16", "compiled": True, "error": "BackendCompilerFailed: x"}) + "\n")
            lines = digest.throughput_lines({"mixgpt_bench": [row], "torch_bench": figures.torch_rows(jsonl)})
        self.assertEqual(lines[1], "  mixgpt bf16 400,000 (39.9%)")
        self.assertEqual(lines[2], "  torch  bf16 eager 300,000 (30.0%) | bf16 compile failed")

    def test_step_profile_names_the_largest_ops_and_what_lies_outside_them(self):
        with tempfile.TemporaryDirectory() as folder:
            bench = os.path.join(folder, "profile.json")
            with open(bench, "w") as file:
                json.dump({"results": [
                    {"precision": "bf16", "ms_per_step": 50.0, "profile": [
                        {"op": "attention_backward", "calls_per_step": 12.0, "ms_per_step": 10.0},
                        {"op": "matmul_backward 3072x768", "calls_per_step": 12.0, "ms_per_step": 5.0},
                        {"op": "adamw", "calls_per_step": 1.0, "ms_per_step": 1.25}]},
                    {"precision": "tf32", "ms_per_step": 300.0}]}, file)
            rows = figures.step_profiles(bench)
        self.assertEqual([row["precision"] for row in rows], ["bf16", "tf32"])
        self.assertEqual(rows[1]["ops"], [])  # a row without a profile: no ops
        self.assertEqual(figures.profile_text(rows[0], top=2),
                         "bf16 50.0 ms: attention_backward 10.00 (20%), matmul_backward 3072x768 5.00 (10%); "
                         "outside the ops 33.75")

    def test_fp8_against_bf16_per_model_from_plain_runs(self):
        rows = [{"model": "d12", "precision": "bf16", "tokens_per_second": 400000.0, "options": ""},
                {"model": "d12", "precision": "fp8", "tokens_per_second": 460000.0, "options": ""},
                {"model": "d12", "precision": "bf16", "tokens_per_second": 100000.0, "options": "--attention simple"},
                {"model": "d24", "precision": "bf16", "tokens_per_second": 150000.0, "options": ""},
                {"model": "d24", "precision": "fp8", "tokens_per_second": 195000.0, "options": ""}]
        self.assertEqual(digest.fp8_ratios(rows), ["d12 1.15x", "d24 1.30x"])
        self.assertEqual(digest.fp8_ratios(rows[:1] + rows[3:4]), [])  # no fp8 row: no ratio

    def test_attention_against_sdpa(self):
        with tempfile.TemporaryDirectory() as folder:
            lab = os.path.join(folder, "lab.json")
            dims = {"B": 16, "T": 1024, "H": 12, "head_dim": 64}
            with open(lab, "w") as file:
                json.dump({"sizes": "production", "rows": [
                    {"kernel": "flash_attention_forward", "dims": dims, "milliseconds": 1.0, "valid": True, "validation": "ok"},
                    {"kernel": "flash_attention_backward", "dims": dims, "milliseconds": 2.5, "valid": True, "validation": "ok"}]}, file)
            flops = 4.0 * 16 * 12 * 1024 ** 2 * 64 / 2  # 2.577e10 forward FLOPs
            compare = os.path.join(folder, "compare.json")
            with open(compare, "w") as file:
                json.dump({"results": [{"T": 1024, "head_dim": 64, "forward_flops": flops, "mixgpt": [1.0, 2.5],
                                        "torch_flash": [0.7, 1.75], "torch_cudnn": None}]}, file)
            line = digest.attention_line({"attention_mixgpt": figures.lab_attention(lab),
                                          "attention_sdpa": figures.sdpa_rows(compare)})
        # 3.5 x 2.577e10 FLOPs in 3.5 ms: 25.8 TFLOP/s; in 2.45 ms: 36.8
        self.assertEqual(line, "attention causal bf16 fwd+bwd TFLOP/s: T=1024 hd64: mixgpt 25.8, SDPA flash 36.8, "
                               "cuDNN - (0.70x flash)")

    def test_masked_attention_against_the_causal_rows(self):
        with tempfile.TemporaryDirectory() as folder:
            lab = os.path.join(folder, "lab.json")
            causal = {"B": 16, "T": 1024, "H": 12, "head_dim": 64}
            rows = []
            for extra, forward_ms in (({}, 1.0), ({"document_length": 512}, 0.5), ({"window": 512}, 0.8)):
                for kernel, ms in (("flash_attention_forward", forward_ms), ("flash_attention_backward", 2 * forward_ms)):
                    rows.append({"kernel": kernel, "dims": {**causal, **extra}, "milliseconds": ms, "valid": True,
                                 "validation": "ok"})
            with open(lab, "w") as file:
                json.dump({"sizes": "production", "rows": rows}, file)
            masked = figures.lab_document_mask(lab)
            self.assertEqual(len(figures.lab_attention(lab)), 1)  # the causal shape alone
        # documents of 512 leave half the causal pairs, a window of 512 at T 1024 three quarters
        self.assertEqual([figures.document_mask_text(row) for row in masked],
                         ["T=1024 hd=64 window 512: 2.400 ms fwd+bwd, 0.80x causal for 0.75x its pairs",
                          "T=1024 hd=64 documents 512: 1.500 ms fwd+bwd, 0.50x causal for 0.50x its pairs"])


class LeaseOnTheSimulator(unittest.TestCase):
    BUDGET_S = 150

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory(prefix="gpu_lease_test_")
        root = cls.folder.name
        bundle = os.path.join(root, "bundle")
        os.makedirs(os.path.join(bundle, "bin"))
        for name in ("mixgpt", "mixgpt_tests", "mixgpt_kernel_lab"):
            os.symlink(os.path.join(BUILD, name), os.path.join(bundle, "bin", name))
        # A small dataset where the bundle carries KJV's (data/kjv), for the training steps.
        subprocess.run([os.path.join(BUILD, "mixgpt"), "prepare", "--output", os.path.join(bundle, "data", "kjv"),
                        "--vocab-size", "400", "--doc-sep", "blank-line", os.path.join(REPOSITORY, "README.md")],
                       check=True, capture_output=True)
        cls.output = os.path.join(root, "out")
        env = dict(os.environ, GPU_LEASE_SIMULATOR=BUILD, GPU_LEASE_BUDGET_S=str(cls.BUDGET_S),
                   GPU_LEASE_TEST_STALL="bench-fp16:3")
        started = time.monotonic()
        cls.lease = subprocess.Popen([os.path.join(REPOSITORY, "scripts", "gpu_lease.sh"), bundle, cls.output],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        cls.stdout, cls.stderr = cls.lease.communicate()
        cls.seconds = time.monotonic() - started

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def lines(self):
        return self.stdout.decode().splitlines()

    def step_line(self, name):
        return next((line for line in self.lines() if line.startswith("[") and f"] {name} " in line), "")

    def test_digest_on_stdout_within_10_kb(self):
        self.assertLessEqual(len(self.stdout), 10000)
        self.assertIn("== digest ==", self.lines(), self.stdout.decode() + self.stderr.decode())
        self.assertRegex(self.stdout.decode(), r"tests: [1-9]\d* passed, 0 failed")

    def test_at_most_8_files_one_folder_deep(self):
        entries = []
        for base, folders, files in os.walk(self.output):
            depth = os.path.relpath(base, self.output).count(os.sep) + (base != self.output)
            self.assertLessEqual(depth, 1)
            entries += files
        self.assertEqual(sorted(entries), ["figures.json", "lease-logs.tar.xz", "report.md"])
        with open(os.path.join(self.output, "figures.json")) as file:
            self.assertGreater(json.load(file)["tests"]["passed"], 0)
        with tarfile.open(os.path.join(self.output, "lease-logs.tar.xz")) as archive:
            self.assertIn("lease-logs/tests.log", archive.getnames())

    def test_overrun_step_is_stopped_and_later_steps_run(self):
        self.assertEqual(self.lease.returncode, 1)  # a stopped step fails the lease
        self.assertIn("stopped", self.step_line("bench-fp16"))
        self.assertIn("stopped at its cap", self.step_line("bench-fp16"))
        for later in ("lab-attention", "racecheck", "lab-backend", "train-bf16"):
            self.assertIn(" ok ", self.step_line(later), later)
        self.assertIn("failed or stopped: bench-fp16 (stopped)", self.lines())
        self.assertEqual(processes_with(f"sleep 3600.{self.lease.pid}"), [])  # the stalled command's child too

    def test_step_profile_names_ops_of_both_precisions(self):
        self.assertIn(" ok ", self.step_line("profile"))
        profiles = [line for line in self.lines() if line.startswith("step profile (synchronized per op) ")]
        self.assertEqual([line.split()[5] for line in profiles], ["bf16", "tf32"])
        for line in profiles:  # five ops, each with its ms and share, then the rest
            self.assertRegex(line, r" ms: ([a-z_0-9]+( \d+x\d+)? [\d.]+ \(\d+%\)(, |; )){5}outside the ops -?[\d.]+$")

    def test_within_the_budget(self):
        self.assertLessEqual(self.seconds, self.BUDGET_S)
        self.assertRegex(self.lines()[-1], rf"^lease: \d+ s of a {self.BUDGET_S} s budget")


class StartsWithoutNccl(unittest.TestCase):
    def test_no_binary_links_nccl_or_cublaslt(self):
        for name in ("mixgpt", "mixgpt_tests", "mixgpt_mpi_tests", "mixgpt_kernel_lab", "mixgpt_benchmarks"):
            path = os.path.join(BUILD, name)
            if os.path.exists(path):
                libraries = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
                self.assertNotIn("libnccl", libraries, name)
                self.assertNotIn("libcublas", libraries, name)

    def test_info_runs_and_says_nccl_is_missing(self):
        with tempfile.TemporaryDirectory() as empty:
            env = dict(os.environ, MIXGPT_CUDA_LIBRARY_PATH=empty)
            env.pop("LD_LIBRARY_PATH", None)
            info = subprocess.run([os.path.join(BUILD, "mixgpt"), "info"], capture_output=True, text=True, env=env)
        self.assertEqual(info.returncode, 0, info.stderr)
        if "build: CUDA" in info.stdout:
            self.assertIn("NCCL: none: libnccl.so.2 not found", info.stdout)
            self.assertIn("cuBLASLt: none: libcublasLt.so.", info.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
