#!/usr/bin/env bash
# Installs gridtrain's Debian 12 packages and builds it into build/ (and, with
# GT_BUILD_DIR / GT_CMAKE_ARGS, any other configuration). Idempotent.
#   jobs/setup.sh                 install + build the default configuration
#   GT_SKIP_INSTALL=1 jobs/setup.sh   build only
#   GT_BUILD_TARGET=gridtrain jobs/setup.sh   the program alone (no tests)
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config git
      openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
      libopenblas-dev libdnnl-dev libinih-dev libcjson-dev libxxhash-dev zlib1g-dev tzdata
      python3 python3-h5py python3-numpy python3-torch
      slurm-wlm slurmctld slurmd slurm-client munge gnuplot-nox
      clang-14 libclang-rt-14-dev)
# packages only the test suite needs (tests/run.sh: GT_EXTRA_PKGS=chromium)
read -r -a extra <<< "${GT_EXTRA_PKGS:-}"
PKGS+=("${extra[@]}")

if [ "${GT_SKIP_INSTALL:-0}" != 1 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  missing=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

BUILD_DIR="${GT_BUILD_DIR:-build}"
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${GT_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" ${GT_BUILD_TARGET:+--target "$GT_BUILD_TARGET"}
echo "setup: built $BUILD_DIR/gridtrain"
