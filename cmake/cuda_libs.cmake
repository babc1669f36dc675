# cmake/cuda_libs.cmake: the optional CUDA libraries, NCCL and cuDNN.
# Included by CMakeLists.txt after find_package(CUDAToolkit). Sets
# GT_HAVE_NCCL (NCCL_INCLUDE_DIR, NCCL_LIBRARY) and GT_HAVE_CUDNN
# (CUDNN_INCLUDE_DIR, CUDNN_LIBRARY). Searched, in this order:
#   NCCL_ROOT / CUDNN_ROOT (CMake cache variable or environment variable), then
#   the CUDA toolkit's directories, then the system's, then
#   a PyTorch installation's wheels: <site-packages>/nvidia/<pkg>/{include,lib}
#   (nvidia-nccl-cu*, nvidia-cudnn-cu*), whose libraries are versioned only
#   (libnccl.so.2, libcudnn.so.9). GT_PYTHON names the interpreter to ask for
#   its site-packages (default: python3 on PATH).
set(NCCL_ROOT "$ENV{NCCL_ROOT}" CACHE PATH "NCCL installation (include/nccl.h, lib/libnccl.so*)")
set(CUDNN_ROOT "$ENV{CUDNN_ROOT}" CACHE PATH "cuDNN installation (include/cudnn.h, lib/libcudnn.so*)")

# site-packages/nvidia/* of the Python that has PyTorch, if any
set(_gt_wheel_inc "")
set(_gt_wheel_lib "")
if(DEFINED ENV{GT_PYTHON})
  set(_gt_py "$ENV{GT_PYTHON}")
else()
  find_program(_gt_py NAMES python3 python)
endif()
if(_gt_py)
  execute_process(
    COMMAND ${_gt_py} -c "import site, sysconfig; p = [sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']]; p += site.getsitepackages() if hasattr(site, 'getsitepackages') else []; p.append(site.getusersitepackages()); print(';'.join(dict.fromkeys(p)))"
    OUTPUT_VARIABLE _gt_sites OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _gt_rc TIMEOUT 20)
  if(_gt_rc EQUAL 0)
    foreach(sp IN LISTS _gt_sites)
      file(GLOB _inc LIST_DIRECTORIES true "${sp}/nvidia/*/include")
      file(GLOB _lib LIST_DIRECTORIES true "${sp}/nvidia/*/lib")
      list(APPEND _gt_wheel_inc ${_inc})
      list(APPEND _gt_wheel_lib ${_lib})
    endforeach()
  endif()
endif()

find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include
  PATHS ${_gt_wheel_inc})
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64
  PATHS ${_gt_wheel_lib})
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include
  PATHS ${_gt_wheel_inc})
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 libcudnn.so.8
  HINTS ${CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64
  PATHS ${_gt_wheel_lib})

if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(GT_HAVE_NCCL ON)
else()
  message(STATUS "gridtrain: NCCL not found (set NCCL_ROOT): GPU training limited to one rank")
endif()
if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
  set(GT_HAVE_CUDNN ON) # optional: the LSTM on cuDNN (nn/ops/cuda/lstm_cudnn.cu); without it, the kernels
endif()
