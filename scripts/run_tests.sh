#!/usr/bin/env bash
# The whole test suite: the unit tests (GPU tests skip without a GPU), the
# data-parallel tests under mpirun with 2 ranks, and, in CUDA builds, on the CUDA
# simulator (tests/cuda_sim/): the GPU tests under both of its schedules, the model tests with
# cuBLASLt refusing products, the 2-rank
# CUDA/NCCL tests, the kernel lab's command at its smoke sizes and the GPU lease script
# (scripts/lease/test_gpu_lease.py); and the check of the
# kernels' PTX (scripts/check_kernel_instructions.sh) and of their launch resources
# (scripts/check_launch_resources.py); a 3-trial crash campaign
# (scripts/crash_campaign.py); a 1-trial hostile campaign (scripts/hostile_campaign.py); every
# command of README's code blocks (scripts/readme_examples/).
# Ends with one line "N passed, N failed, N skipped" summing GoogleTest's reports of all, and
# the README examples' own count beside it.
set -uo pipefail
build="${1:-build}"
log="$(mktemp)"
readme_log="$(mktemp)"
trap 'rm -f "$log" "$readme_log"' EXIT
# The test binaries wait in OpenMP as mixgpt does (cli/openmp_waits.h), unless told otherwise.
[[ -n "${OMP_WAIT_POLICY:-}" ]] || export GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-3000}"
# Wall seconds of each stage, printed at the end (make test must stay under 15 minutes on 2 cores).
timings=""
stage_start=$SECONDS
end_stage() { timings+="$(printf '%6d s  %s' $((SECONDS - stage_start)) "$1")"$'\n'; stage_start=$SECONDS; }

# The unit tests use one core on average (much of their time they wait on the mixgpt processes
# they start), and the simulator runs a launch's blocks one after another on one core, so both run
# as one GoogleTest shard per processor (GTEST_TOTAL_SHARDS); each shard's output joins the log
# whole, in shard order. Every test seeds its inputs itself, so sharding changes no input.
shards=$(nproc 2>/dev/null || echo 1)
run_sharded() {
  local outputs=() pids=() status=0 index
  for ((index = 0; index < shards; ++index)); do
    outputs+=("$(mktemp)")
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$index "$@" > "${outputs[index]}" 2>&1 &
    pids+=($!)
  done
  for ((index = 0; index < shards; ++index)); do
    wait "${pids[index]}" || status=1
    tee -a "$log" < "${outputs[index]}"
    rm -f "${outputs[index]}"
  done
  return "$status"
}

echo "unit tests ($shards shards)"
run_sharded "$build/mixgpt_tests" --gtest_brief=1 --gtest_color=no
unit_status=$?
end_stage "unit tests"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 2 --bind-to none "$build/mixgpt_mpi_tests" --gtest_brief=1 --gtest_color=no 2>&1 | tee -a "$log"
mpi_status=${PIPESTATUS[0]}
end_stage "2-rank tests"

# The backward schedule (races that the forward one hides) reruns every op-level test and the
# block checks; the training and bench runs, which add no kernel, run once. The 2-rank run
# gives each rank a simulated device.
sim_status=0
# The GPU tests draw their inputs from MIXGPT_TEST_SEED, else from the clock. Here it is fixed, so
# that a run is reproducible: with the 2x rule, a few seeds push one error ratio just past 2 (flash
# dk in fp16 at hd 128 with large logits: 2.13x at seed 3623631288), which must not make CI flaky.
export MIXGPT_TEST_SEED="${MIXGPT_TEST_SEED:-1}"
if [[ -x "$build/mixgpt_sim_tests" && -x "$build/mixgpt_sim_mpi_tests" && -x "$build/mixgpt_kernel_lab_sim" ]]; then
  # Every test of the simulated binary must fall under the filters below: an instantiation prefix
  # outside Gpu*/Sim* ("Families/GpuFp8Model") once kept the FP8 model tests out of every run.
  stray=$("$build/mixgpt_sim_tests" --gtest_list_tests | grep -vE '^( |Gpu|Sim|Running main)')
  if [[ -n "$stray" ]]; then
    echo "tests outside the Gpu*/Sim* filters, never run: $stray" >&2
    sim_status=1
  fi
  echo "GPU tests on the CUDA simulator, forward schedule ($shards shards)"
  # The GPU suite meets the tensor-core model of the device the build targets (tests/cuda_sim/
  # tensor_cores.h): the H100's when GPU_ARCHS holds 90, else the A100's (MIXGPT_CUDA_SIM_ARCH=80,
  # where the FP8 tests skip). The other stages keep the simulator's sm_90.
  suite_arch=90
  grep -qE 'GPU_ARCHS=([0-9]+ )*90( |$)' "$build/config.stamp" 2>/dev/null || suite_arch=80
  suite_arch=${MIXGPT_CUDA_SIM_ARCH:-$suite_arch}
  echo "the GPU suite's simulated device: sm_$suite_arch"
  run_sharded env MIXGPT_REQUIRE_GPU=1 MIXGPT_CUDA_SIM_ARCH=$suite_arch MIXGPT_CUDA_SIM_SCHEDULE=forward "$build/mixgpt_sim_tests" \
    --gtest_brief=1 --gtest_color=no --gtest_filter='Gpu*:Sim*'
  sim_status=$((sim_status | $?))
  end_stage "simulated GPU tests, forward schedule"
  echo "GPU tests on the CUDA simulator, backward schedule ($shards shards)"
  run_sharded env MIXGPT_REQUIRE_GPU=1 MIXGPT_CUDA_SIM_ARCH=$suite_arch MIXGPT_CUDA_SIM_SCHEDULE=backward "$build/mixgpt_sim_tests" \
    --gtest_brief=1 --gtest_color=no --gtest_filter='Gpu*:SimBlocks*:-*Training*:*DataParallel*:*Bench*'
  sim_status=$((sim_status | $?))
  end_stage "simulated GPU tests, backward schedule"
  # The whole model with the simulated cuBLASLt refusing the bias epilogue, 16-bit outputs and FP8
  # into fp32 (tests/cuda_sim/README.md): every product takes a fallback route
  # (kernels/cuda/README.md, "When cuBLASLt offers nothing"). Its one warning per product is left out.
  echo "GPU model tests on the CUDA simulator, cuBLASLt refusing products (fallback routes)"
  MIXGPT_REQUIRE_GPU=1 MIXGPT_CUDA_SIM_CUBLASLT_REFUSE='fp8,bias;fp8,d=f32;bias;d=bf16;d=f16' \
    "$build/mixgpt_sim_tests" --gtest_brief=1 --gtest_color=no --gtest_filter='*GpuFp8Model*:*GpuModel.*' 2>&1 |
    grep -v 'cuBLASLt offers no algorithm' | tee -a "$log"
  sim_status=$((sim_status | PIPESTATUS[0]))
  end_stage "simulated GPU model tests, cuBLASLt refusing"
  echo "2-rank tests with the CUDA backend and NCCL on the CUDA simulator"
  MIXGPT_CUDA_SIM_DEVICES=2 mpirun -np 2 --bind-to none "$build/mixgpt_sim_mpi_tests" --gtest_brief=1 \
    --gtest_color=no --gtest_filter='*cuda*' 2>&1 | tee -a "$log"
  sim_status=$((sim_status | PIPESTATUS[0]))
  end_stage "simulated 2-rank CUDA tests"
  echo "the kernel lab's command on the CUDA simulator, smoke sizes (exit 0: every kernel validated)"
  "$build/mixgpt_kernel_lab_sim" --sizes smoke --precision fp16 2>&1
  sim_status=$((sim_status | $?))
  end_stage "kernel lab on the simulator"
  echo "the GPU lease (scripts/gpu_lease.sh) end to end on the CUDA simulator; the binaries without NCCL"
  python3 "$(dirname "$0")/lease/test_gpu_lease.py" "$build" 2>&1
  sim_status=$((sim_status | $?))
  end_stage "GPU lease on the simulator"
fi

# The crash campaign, 3 trials: kill -9 a small run (once inside a checkpoint write), resume,
# compare with the uninterrupted run (scripts/crash_campaign.py runs more).
echo "crash campaign, 3 trials"
"$(dirname "$0")/crash_campaign.py" --build "$build" --trials 3 --steps 12 | tail -n 4
crash_status=${PIPESTATUS[0]}
end_stage "crash campaign"

# The hostile campaign of issue 36, one trial of each case (names, offsets, timings drawn from a
# fixed seed): no crash, hang, damage or silent result (scripts/hostile_campaign.py runs more).
echo "hostile campaign, 1 trial of each case"
"$(dirname "$0")/hostile_campaign.py" --build "$build" --trials 1 | tail -n 7
hostile_status=${PIPESTATUS[0]}
end_stage "hostile campaign"

# README's examples as written: every command of its shell blocks, in order, at small sizes, in a
# scratch folder; what cannot run here is skipped by name, with its reason (scripts/readme_examples/).
# First the tests of that test: extraction, plan, and a failing and a hanging command.
echo "README examples (scripts/readme_examples/)"
python3 "$(dirname "$0")/readme_examples/test_readme_examples.py" "$build" 2>&1
readme_status=$?
python3 "$(dirname "$0")/readme_examples/run_readme_examples.py" "$build" 2>&1 | tee "$readme_log"
readme_status=$((readme_status | PIPESTATUS[0]))
end_stage "README examples"

# CUDA builds: the kernels' PTX holds the instructions they claim (tensor cores, 16-byte accesses).
ptx_status=0
if [[ -d "$build/ptx" ]]; then
  "$(dirname "$0")/check_kernel_instructions.sh" "$build/ptx" | tail -n 1
  ptx_status=${PIPESTATUS[0]}
  end_stage "PTX instruction check"
fi

# CUDA builds: every kernel's declared launches fit its registers and shared memory on each
# architecture of the build, as ptxas reported them, and nothing spills.
launch_status=0
if [[ -d "$build/ptx" ]]; then
  "$(dirname "$0")/check_launch_resources.py" "$build" | tail -n 1
  launch_status=${PIPESTATUS[0]}
  end_stage "launch resource check"
fi

count() {  # sums N over GoogleTest's "[  TAG  ] N test(s)" summary lines
  grep -E "^\[  $1 *\] [0-9]+ tests?[,.]" "$log" | sed -E 's/^[^]]*\] ([0-9]+) .*/\1/' |
    awk '{ n += $1 } END { print n + 0 }'
}
# --gtest_brief prints no "N tests failed" summary, only one "[  FAILED  ] name (N ms)" line per
# failed test; those are counted.
count_failed() { grep -cE '^\[  FAILED  \] .*\([0-9]+ ms\)$' "$log"; }
passed=$(count PASSED); failed=$(count_failed); skipped=$(count SKIPPED)
printf "time per stage:\n%s" "$timings"
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
tail -n 1 "$readme_log"
if ((unit_status != 0 || mpi_status != 0 || sim_status != 0 || ptx_status != 0 || launch_status != 0 ||
  crash_status != 0 || hostile_status != 0 || readme_status != 0)); then
  echo "tests failed (unit tests exit $unit_status, 2-rank tests exit $mpi_status," \
    "simulated GPU tests exit $sim_status, PTX instruction check exit $ptx_status," \
    "launch resource check exit $launch_status, crash campaign exit $crash_status," \
    "hostile campaign exit $hostile_status, README examples exit $readme_status)" >&2
  exit 1
fi
