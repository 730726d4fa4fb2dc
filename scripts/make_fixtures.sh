#!/usr/bin/env bash
# Regenerates the PyTorch reference fixtures of tests/test_torch_reference.cpp and
# runs the comparison: mixgpt writes config, weights and a token batch; PyTorch
# (scripts/torch_reference.py, float64) writes loss, logits and every gradient.
# Needs PyTorch for /usr/bin/python3 (Debian: apt-get install python3-torch).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
fixtures=tests/fixtures

if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "make_fixtures: PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch)" >&2
  exit 1
fi
mkdir -p "$fixtures"
MIXGPT_FIXTURES="$fixtures" "$build/mixgpt_tests" --gtest_also_run_disabled_tests \
  --gtest_filter='TorchReference.DISABLED_WriteInput' --gtest_brief=1
/usr/bin/python3 scripts/torch_reference.py "$fixtures/torch_reference_input.h5" "$fixtures/torch_reference_output.h5"
MIXGPT_FIXTURES="$fixtures" "$build/mixgpt_tests" --gtest_filter='TorchReference.*' --gtest_brief=1
