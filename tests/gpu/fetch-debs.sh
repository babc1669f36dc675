#!/usr/bin/env bash
# Run on the development machine (Debian 12, package registry reachable):
# downloads Debian packages that a GPU machine's image lacks into .gpu-debs/
# (git-ignored); carry it with the device tool (carry: [".gpu-debs"]) and
# tests/gpu/run.sh unpacks it into private prefixes (dpkg-deb -x, never into /).
#   tests/gpu/fetch-debs.sh              OpenBLAS (the CPU reference of the GPU tests)
#   tests/gpu/fetch-debs.sh --pipeline   also Open MPI, PMIx, parallel HDF5, inih,
#                                        cJSON, xxHash and every library they load
#                                        into .gpu-debs/pipeline/: the end-to-end
#                                        `gridtrain train` step
#                                        (tests/gpu/e2e_train.sh, cmake/deps_prefix.cmake)
# What is carried is decided by the loader, not by package names (the GPU
# image is another distribution, most likely Ubuntu 24.04): the roots and
# their whole dependency closure are unpacked into a scratch tree, `ldd`
# (LD_LIBRARY_PATH = the tree) follows every ELF file of the roots (Open
# MPI's and PMIx's plugins included), and a package is carried when it owns
# a library the loader resolved inside the tree. Only the C runtime that
# every glibc system has (SYSTEM below) is left to the machine; a library
# the loader resolves outside the tree and not in SYSTEM, or cannot resolve
# at all, fails this script naming it. Headers: the -dev packages (DEV).
# The closure's packages are cached in ~/.cache/gridtrain-debs (not carried).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-debs
(cd .gpu-debs && apt-get download libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libopenblas0 libgfortran5 >/dev/null)
if [ "${1:-}" = "--pipeline" ]; then
  ROOTS="openmpi-bin libopenmpi3 libpmix2 libhdf5-openmpi-103-1 libinih1 libcjson1 libxxhash0"
  DATA="openmpi-common" # Open MPI's help texts and MCA parameter files (no ELF)
  DEV="libopenmpi-dev libhdf5-openmpi-dev libinih-dev libcjson-dev libxxhash-dev zlib1g-dev"
  SYSTEM=" ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2
    libutil.so.1 libgcc_s.so.1 libstdc++.so.6 libz.so.1 linux-vdso.so.1 "
  SYSTEM=" $(echo $SYSTEM) "
  S=$(mktemp -d /tmp/gt-fetch.XXXXXX); trap 'rm -rf "$S"' EXIT
  C=${XDG_CACHE_HOME:-$HOME/.cache}/gridtrain-debs # the whole closure, kept between runs (not carried)
  mkdir -p "$C" "$S/tree"
  pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
           --no-enhances --no-pre-depends $ROOTS 2>/dev/null | grep -v '^ ' | grep -v '<' | sort -u)
  need=""; for p in $pkgs; do ls "$C/${p}"_*.deb >/dev/null 2>&1 || need="$need $p"; done
  [ -z "$need" ] || (cd "$C" && apt-get download $need >/dev/null 2>&1)
  : > "$S/owners" # "path package" for every file of the closure
  for p in $pkgs; do
    d=$(ls "$C/${p}"_*.deb 2>/dev/null | head -1 || true); [ -n "$d" ] || continue
    p=$(dpkg-deb -f "$d" Package)
    dpkg-deb -x "$d" "$S/tree"
    dpkg-deb -c "$d" | awk '$1 !~ /^d/ { print $6 }' | sed "s|^\./|/|; s|\$| $p|" >> "$S/owners"
  done
  T=$S/tree L=$S/tree/usr/lib/x86_64-linux-gnu
  # soname links that maintainer scripts would make (update-alternatives: PSM's libpsm_infinipath.so.1)
  for d in "$L" "$T/lib/x86_64-linux-gnu" "$T/usr/lib/libpsm1"; do [ -d "$d" ] && /sbin/ldconfig -n "$d"; done
  # as tests/gpu/e2e_train.sh sets it (Debian 12 keeps some libraries in /lib, PSM in its alternatives dir)
  LP="$L:$T/lib/x86_64-linux-gnu:$L/openmpi/lib:$L/pmix2/lib:$T/usr/lib/libpsm1"
  is_elf() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(head -c 4 "$1" | tr -d '\0')" = $'\x7fELF' ]; }
  # the roots' ELF files (libraries, programs, plugins) start the walk
  : > "$S/queue"
  for r in $ROOTS; do
    for f in $(awk -v p="$r" '$2 == p { print $1 }' "$S/owners"); do is_elf "$T$f" && echo "$T$f" >> "$S/queue"; done
  done
  keep=" $ROOTS $DATA "; bad=""; : > "$S/seen"
  while [ -s "$S/queue" ]; do
    f=$(head -1 "$S/queue"); sed -i 1d "$S/queue"
    grep -qxF "$f" "$S/seen" && continue
    echo "$f" >> "$S/seen"
    while read -r so _ path _; do
      case "$SYSTEM" in *" $so "*) continue ;; esac # the machine's own C runtime, wherever ldd found it
      case "$path" in
        "$T"/*) real=$(realpath "$path"); rel=${real#"$T"}
                p=$(awk -v f="$rel" '$1 == f { print $2; exit }' "$S/owners")
                [ -n "$p" ] && case "$keep" in *" $p "*) ;; *) keep="$keep$p " ;; esac
                grep -qxF "$real" "$S/seen" || echo "$real" >> "$S/queue" ;;
        not) bad="$bad $so (not found, needed by ${f#"$T"})" ;;
        /*) bad="$bad $so (only outside the packages: $path, needed by ${f#"$T"})" ;;
      esac
    done < <(LD_LIBRARY_PATH="$LP" ldd "$f" 2>/dev/null | awk '$2 == "=>" { print $1, $2, $3, $4 }')
  done
  [ -z "$bad" ] || { echo "fetch-debs: libraries the loader cannot resolve from the packages:$bad" >&2; exit 1; }
  rm -rf .gpu-debs/pipeline; mkdir -p .gpu-debs/pipeline
  for p in $keep; do cp "$C/${p}"_*.deb .gpu-debs/pipeline/; done
  (cd .gpu-debs/pipeline && apt-get download $DEV >/dev/null 2>&1)
  echo "fetch-debs: $(echo $keep | wc -w) runtime packages by the loader (of $(echo $pkgs | wc -w) in the closure) + DEV:"
  echo "  $keep"
  du -sh .gpu-debs/pipeline
fi
ls -l .gpu-debs
du -sh .gpu-debs
