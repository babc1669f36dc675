#!/usr/bin/env bash
# Run on the development machine (Debian 12, package registry reachable):
# downloads the OpenBLAS packages the CPU reference needs into .gpu-debs/
# (git-ignored), for GPU machines whose image has no OpenBLAS. Then run the GPU
# check with the device tool's carry: [".gpu-debs"].
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-debs
cd .gpu-debs
apt-get download libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libopenblas0 libgfortran5 >/dev/null
ls -l
