# The environment that runs gridtrain and Open MPI from unpacked Debian
# packages under a prefix (tests/gpu/fetch-debs.sh --pipeline; sourced by
# tests/gpu/e2e_train.sh and tests/gpu/relocation_dryrun.sh).
# gt_prefix_env P: soname links the maintainer scripts would have made
# (ldconfig -n: PSM's libpsm_infinipath.so.1 is an update-alternatives link),
# the loader path fetch-debs.sh checked the packages with (Debian 12 keeps
# some libraries in /lib, PSM in its own directory), PATH, and Open MPI 4.1
# with its external PMIx (Debian's libpmix2 under pmix2/) relocated into the
# prefix: OPAL_PREFIX, PMIX_INSTALL_PREFIX, PMIX_MCA_gds=hash and
# OMPI_MCA_btl_vader_single_copy_mechanism=none (when the prefix holds them).
gt_prefix_env() {
  local P="$1" L="$1/usr/lib/x86_64-linux-gnu" d
  for d in "$L" "$P/lib/x86_64-linux-gnu" "$P/usr/lib/libpsm1"; do
    [ -d "$d" ] && { /sbin/ldconfig -n "$d" 2>/dev/null || ldconfig -n "$d" 2>/dev/null; }
  done
  export LD_LIBRARY_PATH="$L:$P/lib/x86_64-linux-gnu:$L/openmpi/lib:$L/pmix2/lib:$P/usr/lib/libpsm1:$L/openblas-pthread:${LD_LIBRARY_PATH:-}"
  export PATH="$P/usr/bin:/usr/local/cuda/bin:$PATH"
  if [ -d "$L/openmpi" ]; then export OPAL_PREFIX=$P/usr; fi
  if [ -d "$L/pmix2" ]; then
    export PMIX_INSTALL_PREFIX=$L/pmix2 PMIX_MCA_gds=hash OMPI_MCA_btl_vader_single_copy_mechanism=none
  fi
}
