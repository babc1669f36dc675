#!/usr/bin/env bash
# Run on the development machine (Debian 12, package registry reachable):
# downloads Debian packages that a GPU machine's image lacks into .gpu-debs/
# (git-ignored); carry it with the device tool (carry: [".gpu-debs"]) and
# tests/gpu/run.sh unpacks it into private prefixes (dpkg-deb -x, never into /).
#   tests/gpu/fetch-debs.sh              OpenBLAS (the CPU reference of the GPU tests)
#   tests/gpu/fetch-debs.sh --pipeline   also Open MPI, parallel HDF5, inih, cJSON,
#                                        xxHash and their runtime libraries into
#                                        .gpu-debs/pipeline/ (about 17 MiB): the
#                                        end-to-end `gridtrain train` step
#                                        (tests/gpu/e2e_train.sh, cmake/deps_prefix.cmake)
# Runtime dependencies are followed (apt-cache depends --recurse), except the
# base libraries every Debian/Ubuntu image has (BASE below): those stay the
# machine's own.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-debs
(cd .gpu-debs && apt-get download libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libopenblas0 libgfortran5 >/dev/null)
if [ "${1:-}" = "--pipeline" ]; then
  ROOTS="openmpi-bin libopenmpi3 libhdf5-openmpi-103-1 libinih1 libcjson1 libxxhash0"
  DEV="libopenmpi-dev libhdf5-openmpi-dev libinih-dev libcjson-dev libxxhash-dev zlib1g-dev"
  BASE=" adduser debconf debianutils dpkg libc6 libgcc-s1 libstdc++6 zlib1g libssl3 libudev1 libzstd1 liblzma5
    libselinux1 libpcre2-8-0 libcrypt1 libacl1 libbz2-1.0 libaudit1 libaudit-common libcap-ng0 libpam0g
    libpam-modules libpam-modules-bin libdb5.3 libtinfo6 libmd0 libbsd0 perl perl-base perl-modules-5.36
    libperl5.36 libgdbm6 libgdbm-compat4 passwd libsemanage2 libsemanage-common libsepol2 libx11-6 libx11-data
    libxau6 libxcb1 libxdmcp6 libxext6 libxnvctrl0 ocl-icd-libopencl1 libpciaccess0 openssh-client libedit2
    libcbor0.8 libfido2-1 libgmp10 libffi8 libsqlite3-0 libicu72 libxml2 libuuid1 tar readline-common
    libreadline8 libjs-jquery libjs-jquery-ui libnewt0.52 libslang2 libtextwrap1 cdebconf libdebian-installer4
    install-info "
  BASE=" $(echo $BASE) " # one space between names
  pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
           --no-enhances --no-pre-depends $ROOTS 2>/dev/null | grep -v '^ ' | grep -v '<' | sort -u)
  keep=""
  for p in $pkgs; do case "$BASE" in *" $p "*) ;; *) keep="$keep $p" ;; esac; done
  mkdir -p .gpu-debs/pipeline
  (cd .gpu-debs/pipeline && apt-get download $keep $DEV >/dev/null)
  du -sh .gpu-debs/pipeline
fi
ls -l .gpu-debs
du -sh .gpu-debs
