# tests/layering/test_layering.cmake: the layering checker (cmake/check_layering.cmake)
# passes the tree, and fails a copy of it with violations planted, naming each
# one by file and line.
#   cmake -DGT_SOURCE_DIR=REPO -DGT_WORK_DIR=DIR -P tests/layering/test_layering.cmake
cmake_minimum_required(VERSION 3.22)
set(checker ${GT_SOURCE_DIR}/cmake/check_layering.cmake)

function(run_checker src rc_var out_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -DGT_SRC=${src} -P ${checker}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${rc_var} ${rc} PARENT_SCOPE)
  set(${out_var} "\n${out}${err}" PARENT_SCOPE)
endfunction()

# 1. the tree as it is passes
run_checker(${GT_SOURCE_DIR}/src rc out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the checker refuses the tree of ${GT_SOURCE_DIR}/src:${out}")
endif()

# 2. a copy with planted violations fails, with one line for each of them
set(src ${GT_WORK_DIR}/src)
file(REMOVE_RECURSE ${GT_WORK_DIR})
file(COPY ${GT_SOURCE_DIR}/src DESTINATION ${GT_WORK_DIR})
file(WRITE ${src}/nn/zz_planted.c
  "/* line 1 */\n#include \"train/trainer.h\"\n#include <mpi.h>\n#include \"core/check_mpi.h\"\n#include \"core/check.h\"\n")
file(WRITE ${src}/core/zz_planted.h "#include <hdf5.h>\n#include \"io/format.h\"\n")
file(WRITE ${src}/train/zz_planted.c
  "#include \"eval/eval_impl.h\"\n    ncclAllReduce(a, b);\n    // ncclAllReduce(a, b);\n * ncclAllReduce(a, b)\n#include <ini.h>\n#include \"h5.h\"\n"
  "    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, fapl);\n    f = H5Fcreate(p, 0, 0, 0); /* H5Fopen( */\n    // H5Fcreate(p)\n    g = my_H5Fopen(p);\n"
  "    MPI_Allreduce(a, b, 1, t, op, c);\n    // MPI_Barrier(c);\n    gt_dist_barrier(c);\n")
file(WRITE ${src}/cli/zz_planted.c "#include \"import/import_parse.h\"\n#include \"import/import.h\"\n#include <ini.h>\n")
file(WRITE ${src}/io/zz_planted.c "#include \"synth/synth.h\"\n")
file(WRITE ${src}/extra/zz_planted.c "int x;\n")
file(READ ${src}/eval/metrics.c text)
file(WRITE ${src}/eval/metrics.c "#include \"doe/run.h\"\n${text}")

set(expected
  "src/cli/zz_planted.c:1: includes import/import_parse.h, which is internal to import/"
  "src/core/zz_planted.h:1: includes <hdf5.h>, but <hdf5.h> is kept out of core/ nn/"
  "src/core/zz_planted.h:2: includes io/format.h, but core/ may use only: core/"
  "src/eval/metrics.c:1: includes doe/run.h, but eval/ may use only: "
  "src/extra/zz_planted.c:1: extra/ is not a folder of the map"
  "src/io/zz_planted.c:1: includes synth/synth.h, but io/ may use only: "
  "src/nn/zz_planted.c:2: includes train/trainer.h, but nn/ may use only: "
  "src/nn/zz_planted.c:3: includes <mpi.h>, but <mpi.h> is kept out of core/ nn/"
  "src/nn/zz_planted.c:4: includes core/check_mpi.h, which brings in <mpi.h>, but <mpi.h> is kept out of core/ nn/"
  "src/train/zz_planted.c:1: includes eval/eval_impl.h, but train/ may use only: train/ core/ nn/ io/ data/ dist/ plan/ task/"
  "src/train/zz_planted.c:2: calls ncclAllReduce (NCCL), but only dist/ may use <nccl.h>"
  "src/train/zz_planted.c:5: includes <ini.h>, but only cli/ may use <ini.h>"
  "src/train/zz_planted.c:6: includes \"h5.h\", which is not a path under src/"
  "src/train/zz_planted.c:7: calls H5Fopen, but only io/ may: open HDF5 files through io/h5.h"
  "src/train/zz_planted.c:8: calls H5Fcreate, but only io/ may: open HDF5 files through io/h5.h"
  "src/train/zz_planted.c:11: calls MPI_Allreduce, but only dist/ io/ import/ may: use dist/reduce.h")
run_checker(${src} rc out)
if(rc EQUAL 0)
  message(FATAL_ERROR "the checker passed a tree with planted violations:${out}")
endif()
set(missing "")
foreach(e IN LISTS expected)
  string(FIND "${out}" "\n${e}" at)
  if(at EQUAL -1)
    string(APPEND missing "\n  ${e}")
  endif()
endforeach()
string(REGEX MATCHALL "\nsrc/[^\n]*:[0-9]+: " lines "${out}")
list(LENGTH lines n)
list(LENGTH expected n_expected)
if(missing OR NOT n EQUAL n_expected)
  message(FATAL_ERROR "expected ${n_expected} violations, got ${n}; missing:${missing}\nchecker output:${out}")
endif()

# 3. the task-neutral folders (cmake/check_task_neutral.py, with python3): the tree
# passes; a data/ file naming a task outside comments and literals fails, by line
if(GT_PYTHON)
  set(neutral ${GT_SOURCE_DIR}/cmake/check_task_neutral.py)
  execute_process(COMMAND ${GT_PYTHON} ${neutral} --src ${GT_SOURCE_DIR}/src RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the task-neutral check refuses the tree of ${GT_SOURCE_DIR}/src:\n${out}")
  endif()
  file(WRITE ${src}/data/zz_planted.c
    "/* ds->nilm */\nstatic const char *k = \"data.pdm_target\";\nint f(gt_dataset *ds) { return ds->pdm != 0; }\n")
  execute_process(COMMAND ${GT_PYTHON} ${neutral} --src ${src} --layers ${GT_SOURCE_DIR}/cmake/layers.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  string(REGEX MATCHALL "src/[^\n]*:[0-9]+: names task" hits "${out}")
  list(LENGTH hits n_hits)
  if(rc EQUAL 0 OR NOT n_hits EQUAL 1 OR NOT out MATCHES "src/data/zz_planted.c:3: names task 'pdm' \\(pdm\\)")
    message(FATAL_ERROR "the task-neutral check should refuse src/data/zz_planted.c:3 only:\n${out}")
  endif()
endif()
file(REMOVE_RECURSE ${GT_WORK_DIR})
message(STATUS "layering: the tree passes; ${n} planted violations found")
