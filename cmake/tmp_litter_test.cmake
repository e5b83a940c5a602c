# Configures this project in a scratch build directory with TMPDIR pointing at an empty scratch
# directory, then fails if anything was left there: a configure must leave nothing in the
# temporary directory (CMake's compiler checks used to leave CMake<LANG>CompilerId-XXXXXX
# directories in /tmp). A private TMPDIR keeps other processes' temporary files out of the check.
#
#   cmake -DCKPT_SOURCE_DIR=... -DCKPT_WORK_DIR=... -DCKPT_GENERATOR=... [-DCKPT_C_COMPILER=...]
#         [-DCKPT_CXX_COMPILER=...] -P tmp_litter_test.cmake
cmake_minimum_required(VERSION 3.21)
foreach(_v CKPT_SOURCE_DIR CKPT_WORK_DIR CKPT_GENERATOR)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "tmp_litter_test: ${_v} is not set")
  endif()
endforeach()

set(_tmp "${CKPT_WORK_DIR}/tmp")
set(_build "${CKPT_WORK_DIR}/build")
file(REMOVE_RECURSE "${CKPT_WORK_DIR}")
file(MAKE_DIRECTORY "${_tmp}" "${_build}")

set(_args -S "${CKPT_SOURCE_DIR}" -B "${_build}" -G "${CKPT_GENERATOR}" -DCMAKE_BUILD_TYPE=Debug)
if(CKPT_C_COMPILER)
  list(APPEND _args "-DCMAKE_C_COMPILER=${CKPT_C_COMPILER}")
endif()
if(CKPT_CXX_COMPILER)
  list(APPEND _args "-DCMAKE_CXX_COMPILER=${CKPT_CXX_COMPILER}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E env "TMPDIR=${_tmp}" "${CMAKE_COMMAND}" ${_args}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "tmp_litter_test: configure failed (${_rc}):\n${_out}")
endif()

file(GLOB _left LIST_DIRECTORIES true RELATIVE "${_tmp}" "${_tmp}/*")
if(_left)
  list(LENGTH _left _n)
  string(REPLACE ";" "\n  " _names "${_left}")
  message(FATAL_ERROR "tmp_litter_test: configure left ${_n} entries in its TMPDIR:\n  ${_names}")
endif()
message(STATUS "tmp_litter_test: configure left nothing in its TMPDIR")
file(REMOVE_RECURSE "${CKPT_WORK_DIR}")
