# cmake/deps_prefix.cmake: the pipeline's libraries from unpacked Debian 12
# packages under GT_DEPS_PREFIX (`dpkg-deb -x` of what tests/gpu/fetch-debs.sh
# --pipeline downloads), for a machine that has none of them installed and no
# package registry (the GPU machine: tests/gpu/e2e_train.sh). Compiler
# wrappers (mpicc, h5pcc) and pkg-config of such a tree point at /usr, so the
# imported targets the build links are made here from the Debian layout
# directly: MPI::MPI_C (Open MPI), hdf5::hdf5 (parallel HDF5), PkgConfig::INIH,
# PkgConfig::CJSON, PkgConfig::XXHASH, ZLIB::ZLIB (headers from the tree, the
# system's libz.so.1). At run time: LD_LIBRARY_PATH and OPAL_PREFIX as
# tests/gpu/e2e_train.sh sets them.
set(_gt_u ${GT_DEPS_PREFIX}/usr)
set(_gt_l ${_gt_u}/lib/x86_64-linux-gnu)

function(gt_prefix_target name inc)
  cmake_parse_arguments(T "" "" "LIBS" ${ARGN})
  foreach(f IN LISTS inc T_LIBS)
    if(NOT EXISTS ${f})
      message(FATAL_ERROR "GT_DEPS_PREFIX=${GT_DEPS_PREFIX}: ${f} is missing (for ${name}); run tests/gpu/fetch-debs.sh --pipeline")
    endif()
  endforeach()
  add_library(${name} INTERFACE IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${inc}" INTERFACE_LINK_LIBRARIES "${T_LIBS}")
endfunction()

gt_prefix_target(MPI::MPI_C ${_gt_l}/openmpi/include LIBS ${_gt_l}/libmpi.so.40)
set(MPI_FOUND TRUE)
set(MPI_C_FOUND TRUE)
set(MPIEXEC_EXECUTABLE ${_gt_u}/bin/mpirun.openmpi CACHE FILEPATH "mpirun of GT_DEPS_PREFIX")
set(MPIEXEC_NUMPROC_FLAG -n)
set(MPIEXEC_PREFLAGS "")

gt_prefix_target(hdf5::hdf5 ${_gt_u}/include/hdf5/openmpi LIBS ${_gt_l}/libhdf5_openmpi.so.103)
set(HDF5_FOUND TRUE)
set(HDF5_IS_PARALLEL TRUE)

gt_prefix_target(PkgConfig::INIH ${_gt_u}/include LIBS ${_gt_l}/libinih.so.1)
gt_prefix_target(PkgConfig::CJSON ${_gt_u}/include LIBS ${_gt_l}/libcjson.so.1)
gt_prefix_target(PkgConfig::XXHASH ${_gt_u}/include LIBS ${_gt_l}/libxxhash.so.0)
find_library(GT_ZLIB_LIBRARY NAMES libz.so.1 z PATHS /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)
if(NOT GT_ZLIB_LIBRARY)
  message(FATAL_ERROR "GT_DEPS_PREFIX: no libz.so.1 on this system")
endif()
gt_prefix_target(ZLIB::ZLIB ${_gt_u}/include LIBS ${GT_ZLIB_LIBRARY})
message(STATUS "gridtrain: MPI, HDF5, inih, cJSON, xxHash from ${GT_DEPS_PREFIX} (unpacked packages)")
