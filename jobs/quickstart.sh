#!/usr/bin/env bash
# The main job on embedded default data: installs and builds (jobs/setup.sh),
# generates a small synthetic NILM dataset and a small wind farm with 2 MPI
# ranks, validates both collectively, and trains a small seq2point CNN on the
# NILM data under mpirun -n 2 (datasets/quickstart.ini). Outputs go to
# runs/quickstart/ (the training run in runs/quickstart/train/).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
out=runs/quickstart
mkdir -p "$out"
mpirun -n 2 build/gridtrain synth nilm --config datasets/quickstart.ini -o "$out/nilm.h5"
mpirun -n 2 build/gridtrain inspect "$out/nilm.h5"
mpirun -n 2 build/gridtrain synth pdm --config datasets/quickstart.ini synth.days=0.25 -o "$out/pdm.h5"
mpirun -n 2 build/gridtrain inspect "$out/pdm.h5"
rm -rf "$out/train"
mpirun -n 2 build/gridtrain train datasets/quickstart.ini
echo "quickstart: done; files in $out/, training run in $out/train/"
