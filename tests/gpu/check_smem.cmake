# tests/gpu/check_smem.cmake: the attention kernels' shared memory against
# every built architecture's limit (ctest gpu_smem_fit, label gpu-build;
# needs nvcc, no GPU). attention.cu, attention_common.cu, attention_tc.cu and attention_mma.cu are
# compiled with the build's flags for every architecture of
# GT_CUDA_ARCHITECTURES (one nvcc call per file, code=sm_XX each) with
# `ptxas -v`; the log goes to tests/gpu/smem_fit.c (gt_smem_fit), which checks
# static + dynamic shared memory of each kernel the runtime's choice
# (nn/ops/cuda/attention_plan.h) may launch at each architecture's limit.
#
#   cmake -DNVCC=... -DSRC_DIR=src -DWORK=DIR -DCHECKER=gt_smem_fit
#         -DINCLUDES="a;b" -DDEFINES="X;Y=1" -DARCHS="80;86;89;90" -P check_smem.cmake
cmake_minimum_required(VERSION 3.22)
file(MAKE_DIRECTORY ${WORK})
set(flags -fatbin -O3 --expt-relaxed-constexpr -Xptxas=-v)
foreach(i IN LISTS INCLUDES)
  list(APPEND flags -I${i})
endforeach()
foreach(d IN LISTS DEFINES)
  list(APPEND flags -D${d})
endforeach()
# 80, 86-real, 90a-virtual ... -> sm_80, sm_86, sm_90a; entries without a number ('native', 'all') cannot be checked here
set(sms "")
set(nums "")
foreach(a IN LISTS ARCHS)
  if(a MATCHES "^([0-9]+[af]?)")
    set(sm ${CMAKE_MATCH_1})
    list(APPEND sms ${sm})
    list(APPEND nums ${sm})
    list(APPEND flags -gencode=arch=compute_${sm},code=sm_${sm})
  else()
    message(FATAL_ERROR "GT_CUDA_ARCHITECTURES entry '${a}': not a numbered architecture, its limit cannot be checked")
  endif()
endforeach()
if(NOT sms)
  message(FATAL_ERROR "no architectures given (ARCHS)")
endif()
set(log ${WORK}/ptxas.log)
file(WRITE ${log} "")
foreach(name attention attention_common attention_tc attention_mma)
  execute_process(COMMAND ${NVCC} ${flags} ${SRC_DIR}/nn/ops/cuda/${name}.cu -o ${WORK}/${name}.fatbin
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc failed on ${name}.cu:\n${out}${err}")
  endif()
  file(APPEND ${log} "${out}${err}")
endforeach()
execute_process(COMMAND ${CHECKER} ${log} ${nums} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "shared memory does not fit (log: ${log})")
endif()
