#!/usr/bin/env bash
# Data-parallel training under Slurm: one task per GPU, started by srun; each task is one rank of
# `mixgpt train` (it finds its rank, node-local rank and GPU through MPI). Every argument is passed
# to `mixgpt train`; --device cuda is added.
#
#   sbatch scripts/slurm_train.sh --dataset data/fineweb --model d12 -b 16 -t 1024 \
#       --total-batch-tokens 524288 --tokens 10000000000 --precision bf16 -o runs/d12 --resume if-present
#   sbatch --nodes=2 scripts/slurm_train.sh ...          # 16 GPUs
#
# --resume if-present (newest valid checkpoint, or a fresh start when there is none; plain --resume
# is an error without one) makes a requeued or resubmitted job continue. Slurm sends SIGTERM 300 s before the time limit (--signal): the ranks
# agree to stop after the current step and rank 0 writes a checkpoint. The run directory must be
# on a file system rank 0 can write; the other ranks never touch it.
#
# Environment: MIXGPT (the binary, default build/mixgpt), SRUN_MPI (srun's --mpi plugin, default
# pmix; pmi2 for an MPI built that way).
#
#SBATCH --job-name=mixgpt
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=8
#SBATCH --time=24:00:00
#SBATCH --signal=TERM@300
#SBATCH --output=%x-%j.out
set -euo pipefail

mixgpt="${MIXGPT:-build/mixgpt}"
export OMP_NUM_THREADS="${SLURM_CPUS_PER_TASK:-8}"
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"

echo "job ${SLURM_JOB_ID:-?}: ${SLURM_NNODES:-?} nodes x ${SLURM_NTASKS_PER_NODE:-?} ranks: $mixgpt train $*"
exec srun --mpi="${SRUN_MPI:-pmix}" --cpu-bind=cores --kill-on-bad-exit=1 \
    "$mixgpt" train --device cuda "$@"
