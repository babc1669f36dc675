#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the Debian packages, then
#  1. the default build (CUDA backend compiled when the toolkit is present; GPU
#     tests skip without a device) with every test (unit, MPI at 1/2/4 ranks,
#     scripts, Slurm),
#  2. the CPU-only build (GT_CUDA=OFF) with every test but the Slurm,
#     browser, relocation and quickstart ones (the default build runs those),
#  3. the numeric core alone (GT_PIPELINE=OFF: no MPI, no HDF5) with its tests.
#  4. the ASan+UBSan build (GT_SANITIZE=ON, CPU-only, Debug) with every test
#     but the Slurm and libFuzzer ones: memory errors and undefined behaviour
#     end a test (halt_on_error). Leak checking is off here (GT_SANITIZE_LEAKS=1
#     turns it on): LeakSanitizer's stop-the-world tracer crashes now and then
#     on this VM's kernel ("Tracer caught signal 11"), whatever the program.
# GT_SANITIZE=0 skips stage 4 (about 25 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
werror="-DGT_WERROR=ON"
# chromium: test_report_browser looks at report.html as a person does
GT_EXTRA_PKGS="chromium" GT_CMAKE_ARGS="$werror" jobs/setup.sh
# the Debian packages a GPU machine is sent (tests/gpu/README.md): the
# relocation dry run (gpu_relocation_dryrun) builds and runs gridtrain from
# them with the system's MPI and HDF5 hidden; without them it skips
mkdir -p .gpu-debs
bash tests/gpu/fetch-debs.sh --pipeline > .gpu-debs/fetch.log 2>&1 \
  || echo "tests/run.sh: tests/gpu/fetch-debs.sh failed (.gpu-debs/fetch.log): gpu_relocation_dryrun will skip"
jobs=$(nproc)
status=0
run_ctest() { ctest --test-dir "$1" --output-on-failure -j "$jobs" "${@:2}" || status=1; }

echo "== default build (build/)"
run_ctest build

echo "== CPU-only build (build-cpu/)"
GT_SKIP_INSTALL=1 GT_BUILD_DIR=build-cpu GT_CMAKE_ARGS="-DGT_CUDA=OFF $werror" jobs/setup.sh
run_ctest build-cpu -LE "slurm|browser|gpu-reloc|quickstart|bench"

echo "== numeric core without MPI/HDF5 (build-core/)"
GT_SKIP_INSTALL=1 GT_BUILD_DIR=build-core GT_CMAKE_ARGS="-DGT_PIPELINE=OFF -DGT_CUDA=OFF $werror" jobs/setup.sh
run_ctest build-core -LE bench

if [ "${GT_SANITIZE:-1}" = 1 ]; then
  echo "== ASan+UBSan build (build-asan/)"
  GT_SKIP_INSTALL=1 GT_BUILD_DIR=build-asan GT_CMAKE_ARGS="-DGT_CUDA=OFF -DGT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" jobs/setup.sh
  # slow unwinding gives full stacks through MPI's dlopen'ed components so the
  # suppressions (Open MPI / HDF5 one-time allocations only) match
  ASAN_OPTIONS=detect_leaks=${GT_SANITIZE_LEAKS:-0}:fast_unwind_on_malloc=0:halt_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
    run_ctest build-asan -LE "slurm|fuzz|browser|quickstart|bench"
fi
exit $status
