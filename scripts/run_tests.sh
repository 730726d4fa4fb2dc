#!/usr/bin/env bash
# The whole test suite: the unit tests (GPU tests skip without a GPU), then the
# data-parallel tests under mpirun with 2 ranks. Ends with GoogleTest's summary.
set -euo pipefail
build="${1:-build}"

"$build/mixgpt_tests" --gtest_brief=1

if [[ -x "$build/mixgpt_mpi_tests" ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  mpirun -np 2 --bind-to none "$build/mixgpt_mpi_tests" --gtest_brief=1
fi
