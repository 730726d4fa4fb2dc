#!/usr/bin/env bash
# The whole test suite: the unit tests (GPU tests skip without a GPU), then the
# data-parallel tests under mpirun with 2 ranks; ends with one line
# "N passed, N failed, N skipped" summing GoogleTest's reports of both.
set -uo pipefail
build="${1:-build}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

"$build/mixgpt_tests" --gtest_brief=1 --gtest_color=no 2>&1 | tee -a "$log"
unit_status=${PIPESTATUS[0]}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 2 --bind-to none "$build/mixgpt_mpi_tests" --gtest_brief=1 --gtest_color=no 2>&1 | tee -a "$log"
mpi_status=${PIPESTATUS[0]}

count() {  # sums N over GoogleTest's "[  TAG  ] N test(s)" summary lines
  grep -E "^\[  $1 *\] [0-9]+ tests?[,.]" "$log" | sed -E 's/^[^]]*\] ([0-9]+) .*/\1/' |
    awk '{ n += $1 } END { print n + 0 }'
}
# --gtest_brief prints no "N tests failed" summary, only one "[  FAILED  ] name (N ms)" line per
# failed test; those are counted.
count_failed() { grep -cE '^\[  FAILED  \] .*\([0-9]+ ms\)$' "$log"; }
passed=$(count PASSED); failed=$(count_failed); skipped=$(count SKIPPED)
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
if ((unit_status != 0 || mpi_status != 0)); then
  echo "tests failed (unit tests exit $unit_status, 2-rank tests exit $mpi_status)" >&2
  exit 1
fi
