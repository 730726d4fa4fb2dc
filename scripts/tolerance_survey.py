#!/usr/bin/python3
"""The worst error ratio of every GPU-against-CPU comparison over many seeds, on the CUDA simulator.

Runs build/mixgpt_sim_tests once per seed (MIXGPT_TEST_SEED = 1..N, one GoogleTest shard per
processor) with MIXGPT_TEST_RATIO_LOG set, so that every rule that judges a GPU result against the
CPU backend's (tests/gpu/gpu_test_support.h, record_error_ratio) logs its GPU error, CPU error and
bound; then prints, per test and quantity, the worst ratio GPU error / CPU error (the 2x rule's
measure), the seed that gave it, and the worst share of the bound used (above 1: a failure).

The simulator computes with the tensor-core model of its device (tests/cuda_sim/tensor_cores.h):
H100 by default, A100 with --arch 80, exact sums with --tensor-cores exact.

  scripts/tolerance_survey.py --seeds 10 --filter 'GpuPrecisions/GpuFlashAttention*' --out survey.tsv
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile


def run_seed(binary, seed, test_filter, log, env, shards):
    processes = []
    for index in range(shards):
        shard_env = dict(env, MIXGPT_TEST_SEED=str(seed), MIXGPT_TEST_RATIO_LOG=log, MIXGPT_REQUIRE_GPU="1",
                         GTEST_TOTAL_SHARDS=str(shards), GTEST_SHARD_INDEX=str(index))
        processes.append(subprocess.Popen([binary, f"--gtest_filter={test_filter}", "--gtest_brief=1",
                                           "--gtest_color=no"], env=shard_env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    failures = []
    for process in processes:
        output, _ = process.communicate()
        failures += [line for line in output.splitlines() if line.startswith("[  FAILED  ]") and " ms)" in line]
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--filter", default="Gpu*", help="GoogleTest filter (default: every GPU test)")
    parser.add_argument("--arch", choices=["80", "90"], default="90", help="the simulated device")
    parser.add_argument("--tensor-cores", choices=["device", "exact"], default="device")
    parser.add_argument("--shards", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", help="also write the table here (tab-separated)")
    args = parser.parse_args()

    binary = os.path.join(args.build, "mixgpt_sim_tests")
    if not os.access(binary, os.X_OK):
        sys.exit(f"tolerance_survey: {binary}: not built (make sim)")
    env = dict(os.environ, MIXGPT_CUDA_SIM_ARCH=args.arch, MIXGPT_CUDA_SIM_TENSOR_CORES=args.tensor_cores)
    worst = {}  # (test, what) -> (ratio, seed, share of bound)
    seen = collections.Counter()
    failed = []
    with tempfile.TemporaryDirectory() as work:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            log = os.path.join(work, f"seed-{seed}.tsv")
            failures = run_seed(binary, seed, args.filter, log, env, args.shards)
            failed += [f"seed {seed}: {line}" for line in failures]
            lines = open(log).read().splitlines() if os.path.exists(log) else []
            for line in lines:
                test, what, gpu, cpu, bound = line.split("\t")
                gpu, cpu, bound = float(gpu), float(cpu), float(bound)
                ratio = gpu / cpu if cpu > 0 else float("inf")
                key = (test, what)
                seen[key] += 1
                share = gpu / bound if bound > 0 else float("inf")
                if key not in worst or ratio > worst[key][0]:
                    worst[key] = (ratio, seed, max(share, worst.get(key, (0, 0, 0))[2]))
                else:
                    worst[key] = (worst[key][0], worst[key][1], max(share, worst[key][2]))
            print(f"seed {seed}: {len(lines)} comparisons, {len(failures)} failed tests", file=sys.stderr, flush=True)
    rows = sorted(worst.items(), key=lambda item: -item[1][0])
    table = ["test\tquantity\tworst GPU/CPU error ratio\tat seed\tworst share of the bound\tcomparisons"]
    table += [f"{test}\t{what}\t{ratio:.3f}\t{seed}\t{share:.3f}\t{seen[(test, what)]}"
              for (test, what), (ratio, seed, share) in rows]
    print("\n".join(table))
    if args.out:
        with open(args.out, "w") as out:
            out.write("\n".join(table) + "\n")
    print(f"{len(rows)} quantities over {args.seeds} seeds (arch sm_{args.arch}, tensor cores: {args.tensor_cores}); "
          f"{len(failed)} failed test runs", file=sys.stderr)
    for line in failed:
        print(line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
