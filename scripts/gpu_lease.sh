#!/usr/bin/env bash
# One GPU lease, the whole evidence: every check and measurement of a GPU session in order of
# value, under one time budget, in one command (bench/README.md, "A GPU session, step by step").
#
#   scripts/gpu_lease.sh [--dry-run] BUNDLE OUTPUT_DIR
#
# BUNDLE: build/bundle.tar.xz (make bundle; unpacked beside itself) or an unpacked bundle.
# GPU_LEASE_BUDGET_S (default 480) bounds the whole run; each step has its own cap and estimate,
# and a step whose estimate no longer fits is skipped with a line. Stdout is the digest (at most
# 10 KB, every number); OUTPUT_DIR gets report.md, figures.json and lease-logs.tar.xz.
# --dry-run prints the plan with each step's estimate and cap. GPU_LEASE_SIMULATOR=BUILD runs the
# simulator's binaries of BUILD at smoke sizes instead (no GPU needed). The steps and the other
# variables: scripts/lease/lease.py.
#
# The script itself is Python's standard library only, run by the first python3 found (3.8 or
# newer): the GPU host's PyTorch image has one.
here="$(cd "$(dirname "$0")" && pwd)"
for python in python3 /usr/bin/python3 /opt/torch/.venv/bin/python3; do
  if "$python" -c 'import sys; sys.exit(sys.version_info < (3, 8))' >/dev/null 2>&1; then
    exec "$python" -u "$here/lease/lease.py" "$@"
  fi
done
echo "gpu_lease: no python3 (3.8 or newer) found; the lease script needs one" >&2
exit 1
