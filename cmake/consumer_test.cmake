# The find_package_consumer test, run as `cmake -D... -P consumer_test.cmake`.
#
# 1. installs the already built ckpt project (CKPT_BUILD_DIR) into a scratch prefix,
# 2. configures and builds tests/consumer (CKPT_CONSUMER_DIR) against it with find_package(ckpt),
# 3. runs its programs (the README quick start in C, and a C++ one).
# Any failure stops the script with a non-zero exit code and the failing step's output.
foreach(_var CKPT_BUILD_DIR CKPT_CONSUMER_DIR CKPT_WORK_DIR)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "consumer_test.cmake: -D${_var}=... is required")
  endif()
endforeach()

set(_prefix "${CKPT_WORK_DIR}/prefix")
set(_build "${CKPT_WORK_DIR}/build")
file(REMOVE_RECURSE "${CKPT_WORK_DIR}")
file(MAKE_DIRECTORY "${CKPT_WORK_DIR}")

function(run_step what)
  message(STATUS "consumer: ${what}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${what} failed (${_rc}):\n${_out}")
  endif()
  set(step_output "${_out}" PARENT_SCOPE)
endfunction()

set(_config_args)
if(CKPT_CONFIG)
  set(_config_args --config "${CKPT_CONFIG}")
endif()
run_step("install" "${CMAKE_COMMAND}" --install "${CKPT_BUILD_DIR}" --prefix "${_prefix}" ${_config_args})

foreach(_f include/ckpt.h include/backends/ckpt_cpu.h)
  if(NOT EXISTS "${_prefix}/${_f}")
    message(FATAL_ERROR "consumer: ${_f} was not installed")
  endif()
endforeach()

set(_configure_args -S "${CKPT_CONSUMER_DIR}" -B "${_build}" "-DCMAKE_PREFIX_PATH=${_prefix}")
if(CKPT_GENERATOR)
  list(APPEND _configure_args -G "${CKPT_GENERATOR}")
endif()
if(CKPT_C_COMPILER)
  list(APPEND _configure_args "-DCMAKE_C_COMPILER=${CKPT_C_COMPILER}")
endif()
if(CKPT_CXX_COMPILER)
  list(APPEND _configure_args "-DCMAKE_CXX_COMPILER=${CKPT_CXX_COMPILER}")
endif()
if(CKPT_CONFIG)
  list(APPEND _configure_args "-DCMAKE_BUILD_TYPE=${CKPT_CONFIG}")
endif()
run_step("configure" "${CMAKE_COMMAND}" ${_configure_args})
run_step("build" "${CMAKE_COMMAND}" --build "${_build}" ${_config_args})

# Single- and multi-config generators put the programs in different places.
foreach(_program consumer consumer_cxx)
  set(_exe)
  foreach(_candidate "${_build}/${_program}" "${_build}/${CKPT_CONFIG}/${_program}"
                     "${_build}/${_program}.exe" "${_build}/${CKPT_CONFIG}/${_program}.exe")
    if(NOT _exe AND EXISTS "${_candidate}" AND NOT IS_DIRECTORY "${_candidate}")
      set(_exe "${_candidate}")
    endif()
  endforeach()
  if(NOT _exe)
    message(FATAL_ERROR "consumer: ${_program} was not built")
  endif()
  run_step("run ${_program}" "${_exe}")
  message(STATUS "consumer: ${_program} printed:\n${step_output}")
endforeach()
message(STATUS "consumer: find_package(ckpt) works")
