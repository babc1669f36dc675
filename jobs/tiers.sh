#!/usr/bin/env bash
# jobs/tiers.sh: the hardware tier presets (docs/tiers.md, docs/slurm.md) as
# sbatch options. Sourced by jobs/nilm_full.sh and jobs/pdm_doe.sh; run alone
# it prints the options of one tier:
#   jobs/tiers.sh GA660M        ->  --nodes=1 --ntasks-per-node=4 --gpus-per-task=1 ...
#   sbatch $(jobs/tiers.sh AE450) jobs/nilm_full.sh CONFIG
# One rank per GPU on the GPU tiers; on the cpu tier one rank per core group
# (GT_CPU_RANKS ranks x GT_CPU_THREADS cores per node, OPENBLAS_NUM_THREADS = cores per rank).
# GT_NODES (default 1) multiplies the GA660M and cpu layouts over several nodes
# (ranks per node x nodes; the node-local rank picks the GPU, docs/slurm.md).

gt_tier_args() { # TIER -> sbatch options on stdout; exit 2 for an unknown tier
  case "${1:-cpu}" in
    A350)   echo "--nodes=1 --ntasks=1 --gpus-per-task=1 --cpus-per-task=10 --mem=96G" ;;
    AE450)  echo "--nodes=1 --ntasks=2 --gpus-per-task=1 --cpus-per-task=10 --mem=192G" ;;
    # --ntasks with --ntasks-per-node: the job scripts' own '#SBATCH --ntasks=1'
    # would otherwise win and shrink the job to one node
    GA660M) echo "--nodes=${GT_NODES:-1} --ntasks=$(( 4 * ${GT_NODES:-1} )) --ntasks-per-node=4 --gpus-per-task=1 --cpus-per-task=8 --mem=400G" ;;
    cpu)    echo "--nodes=${GT_NODES:-1} --ntasks=$(( ${GT_CPU_RANKS:-2} * ${GT_NODES:-1} )) --ntasks-per-node=${GT_CPU_RANKS:-2} --cpus-per-task=${GT_CPU_THREADS:-4}" ;;
    *) echo "unknown tier '$1' (A350, AE450, GA660M, cpu)" >&2; return 2 ;;
  esac
}

gt_tier_is_gpu() { case "${1:-cpu}" in A350|AE450|GA660M) return 0 ;; *) return 1 ;; esac; }

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  gt_tier_args "${1:-${GT_TIER:-cpu}}"
fi
