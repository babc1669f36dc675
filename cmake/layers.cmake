# cmake/layers.cmake: the map of src/, the one table of who may use whom.
#
# Read by CMakeLists.txt (one library per folder, linked to the libraries of the
# folders it may use) and by cmake/check_layering.cmake, which the build runs
# before compiling anything: an include that breaks this table fails the build
# with `src/X/file.c:LINE: includes Y/..., but X/ may use only: ...`.
# docs/design.md explains each folder.

# The task folders (src/nilm/, src/pdm/, ...: one per task, docs/design.md "How
# to add a task"), read from the one list of tasks, GT_TASKS in
# src/task/task_registry.h: a new task's line there makes its folder a layer.
file(READ ${CMAKE_CURRENT_LIST_DIR}/../src/task/task_registry.h _gt_reg)
string(REGEX MATCHALL "\n[ \t]*X\\([a-z0-9_]+\\)" _gt_task_lines "${_gt_reg}")
set(GT_TASK_FOLDERS "")
foreach(_l IN LISTS _gt_task_lines)
  string(REGEX MATCH "X\\(([a-z0-9_]+)\\)" _m "${_l}")
  list(APPEND GT_TASK_FOLDERS ${CMAKE_MATCH_1})
endforeach()

# The folders of src/, in the order of the data's path (docs/design.md).
set(GT_LAYERS core import synth io data nn dist task train eval ${GT_TASK_FOLDERS} doe plan cli)

# ---------------------------------------------------------------- folders --
# GT_USES_<folder>: the other project folders <folder>/ may include (and link).
#   folder           may use
set(GT_USES_core     "")
set(GT_USES_import   core io)
set(GT_USES_synth    core io)
set(GT_USES_io       core)
set(GT_USES_data     core io dist)
set(GT_USES_nn       core)
set(GT_USES_dist     core)
set(GT_USES_task     core nn io data dist)
set(GT_USES_train    core nn io data dist plan task)
set(GT_USES_eval     core nn io data dist task)
foreach(_t IN LISTS GT_TASK_FOLDERS) # a task folder: its sides of data/, task/ and eval/
  set(GT_USES_${_t}  core nn io data dist task eval)
endforeach()
set(GT_USES_doe      core nn io synth task train eval)
set(GT_USES_plan     core nn data)
set(GT_USES_cli      core nn io import synth data dist task plan train eval doe ${GT_TASK_FOLDERS})
# cli/ is the program's composition root: it registers the built-in tasks
# (task/task_registry.h names each task's struct, gt_task_def_<name>) and
# reads each task's settings rows into that task's settings block (train's
# data filters, eval.* and predict.* keys), so it may include the task
# folders' public headers; doe/ reaches a task only through the registry
# (task/task.h, eval/eval_task.h), never a task's folder.
# GT_LINKS_<folder>: libraries <folder>/ links besides those of the folders it
# may use, without including their headers (none today).

# -------------------------------------------------------- internal headers --
# Headers only their own folder may include: every `*_impl.h`, and these.
set(GT_INTERNAL_HEADERS
    import/import_parse.h) # the importers' text layer (tests and fuzz targets use it too)
# Internal headers the task folders may include too: the layouts a task's side
# of data/ and eval/ fills (the dataset's, eval's shared helpers).
set(GT_TASK_HEADERS data/dataset_impl.h eval/eval_impl.h)
# io/h5.h stays public: besides io/, the two other writers of HDF5 files use its
# helpers (eval/ writes predictions, train/ checkpoints). Making it internal
# means io/ offering those writers; until then it is io/'s public HDF5 toolkit.

# -------------------------------------------------------- external headers --
# GT_EXT_NOT_<header>: folders that may not include <header>.
# GT_EXT_ONLY_<header>: the only folders that may. A project header that brings
# one of these in (core/check_mpi.h brings <mpi.h>) counts as including it.
set(GT_EXT_HEADERS mpi.h hdf5.h ini.h nccl.h)
set(GT_EXT_NOT_mpi.h   core nn) # the numeric core builds without MPI (GT_PIPELINE=OFF)
set(GT_EXT_NOT_hdf5.h  core nn) # ... and without HDF5
set(GT_EXT_ONLY_ini.h  cli)     # only cli/ parses configuration text (inih)
set(GT_EXT_ONLY_nccl.h dist)    # only dist/ talks NCCL: also a call of any nccl*( function
# Files (or folders, ending in /) excused from one rule above, and why.
set(GT_EXT_EXCUSED
    "core/check_mpi.h mpi.h"    # MPI_CHECK, header-only: included only where <mpi.h> is allowed
    "core/check_h5.h hdf5.h"    # H5_CHECK, likewise
    "core/check_nccl.h nccl.h") # NCCL_CHECK, header-only: included only by dist/

# ------------------------------------------------------------ HDF5 opens --
# GT_CALL_ONLY_<function>: the only folders that may call <function>. Every
# HDF5 file is opened through io/h5.h: gt_h5_open_ro (links, virtual and
# external storage refused before anything is read) and gt_h5_create_file.
set(GT_CALLS H5Fopen H5Fcreate)
set(GT_CALL_ONLY_H5Fopen   io)
set(GT_CALL_ONLY_H5Fcreate io)
set(GT_CALL_WHY_H5Fopen   "open HDF5 files through io/h5.h (gt_h5_open_ro, gt_h5_create_file)")
set(GT_CALL_WHY_H5Fcreate "${GT_CALL_WHY_H5Fopen}")
# MPI collectives: dist/ (the gradients and the small collectives of the
# other layers, dist/reduce.h), io/ (collective HDF5 reads and writes) and
# import/ (its parallel drivers) only; everyone else calls dist/reduce.h.
set(GT_MPI_COLLECTIVES MPI_Allreduce MPI_Iallreduce MPI_Reduce MPI_Bcast MPI_Ibcast
    MPI_Allgather MPI_Allgatherv MPI_Gather MPI_Gatherv MPI_Scatter MPI_Scatterv
    MPI_Alltoall MPI_Alltoallv MPI_Barrier MPI_Ibarrier MPI_Scan MPI_Exscan)
foreach(fn IN LISTS GT_MPI_COLLECTIVES)
  list(APPEND GT_CALLS ${fn})
  set(GT_CALL_ONLY_${fn} dist io import)
  set(GT_CALL_WHY_${fn} "use dist/reduce.h (gt_dist_*)")
endforeach()
# Files excused from a rule above, and why ("folder/file.c H5Fopen"): none.
set(GT_CALL_EXCUSED)

# ----------------------------------------------------------- task-neutral --
# A task is one folder's business: the shared folders listed here reach a task
# only through its tables (data/dataset_impl.h gt_data_task_i, task/task.h,
# ...) and never name one. cmake/check_task_neutral.py (run with the layering
# check) refuses, in a .c or .h of these folders, an identifier outside
# comments and literals that contains a task folder's name (GT_TASK_FOLDERS):
# `src/data/norm.c:87: names task 'nilm' (nilm): ...`. A folder joins the list
# once it is clean.
set(GT_TASK_NEUTRAL data eval train plan doe)
# Identifiers excused ("folder/file.c identifier"), and why.
set(GT_TASK_NEUTRAL_EXCUSED
    # a wind-farm file without a /legend: the condition names of the synthetic
    # generator (synth/, docs/data-format.md) label the sweep's levels
    "doe/legend.c GT_PDM_N_CONDITIONS"     "doe/legend.c gt_pdm_condition_name")

# ------------------------------------------------------------------ sizes --
# One concern per file, one step per function: the checker refuses a file of
# more lines or a function (signature to closing brace) of more lines than
# these, unless GT_SIZE_EXCUSED names it ("folder/file.c function", or
# "folder/file.c -" for the whole file) with the reason it must be one piece.
set(GT_MAX_FILE_LINES 800)
set(GT_MAX_FUNCTION_LINES 120)
set(GT_SIZE_EXCUSED
    # kernels: one frame keeps the tile registers and the loop nest together
    "nn/ops/cpu/attention_vnni.h vnni_forward_bh"   # the bf16 tile loop of one (batch, head), AMX and AVX512-BF16
    "nn/ops/cpu/attention_vnni.h vnni_backward_bh"  # the same, backward
    "nn/ops/cuda/attention_mma.cu __launch_bounds__")     # the mma.sync attention kernel
