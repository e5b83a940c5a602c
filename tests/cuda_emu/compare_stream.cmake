# cmake -DPROG=mlp_cuda_emulated "-DARGS=--width;32;..." [-DSTREAM_ARGS=...] -P compare_stream.cmake
#
# Runs examples/mlp_cuda.cu (emulated) twice with ARGS, parameters on the device and with
# --stream (and STREAM_ARGS, e.g. --grads-overwrite), and checks that both succeed and print the
# same losses (the first step's and every row's final one). The example compares policies within
# one run only, so this is what checks that streaming trains the same model: on the emulator the
# two must agree (the host SGD is the same float expression as sgd_kernel, and the gradients are
# added once into zeroes), a stale parameter load or a gradient not cleared between steps would
# not. Output and errors are echoed, for the test's FAIL_REGULAR_EXPRESSION.
foreach(_mode device stream)
  set(_extra)
  if(_mode STREQUAL "stream")
    set(_extra --stream ${STREAM_ARGS})
  endif()
  execute_process(COMMAND "${PROG}" ${ARGS} ${_extra} OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  message("---- ${PROG} ${ARGS} ${_extra}: exit ${_rc}\n${_out}${_err}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "the ${_mode} run failed")
  endif()
  # "loss at step 1: X", then each feasible row's final loss (the only e-notation number in it)
  set(_losses)
  if(_out MATCHES "loss at step 1: ([-+.0-9e]+)")
    list(APPEND _losses "${CMAKE_MATCH_1}")
  endif()
  string(REGEX MATCHALL "\n(store-all|every-k|sqrt|greedy|optimal|offload)[^\n]* [0-9]\\.[0-9]+e[-+][0-9]+" _rows "${_out}")
  foreach(_row IN LISTS _rows)
    string(REGEX MATCH "[0-9]\\.[0-9]+e[-+][0-9]+" _loss "${_row}")
    list(APPEND _losses "${_loss}")
  endforeach()
  set(_losses_${_mode} "${_losses}")
endforeach()
list(LENGTH _losses_device _n)
if(_n LESS 2)
  message(FATAL_ERROR "no losses found in the output")
endif()
if(NOT _losses_device STREQUAL _losses_stream)
  message(FATAL_ERROR "losses differ: device ${_losses_device}, streamed ${_losses_stream}")
endif()
message("losses equal: ${_losses_device}")
