# Installs the build into a scratch prefix, builds a consumer with find_package(tileforge) and runs it, and runs
# the installed CLI (which must work without the source tree).
# Arguments: BUILD_DIR, SOURCE_DIR (this folder), WORK_DIR; optional GENERATOR, CXX_COMPILER, C_COMPILER.
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check.cmake needs -D${var}=...")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok\n${out}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(f include/tileforge/tileforge.hpp include/tileforge/tileforge.h bin/tileforge share/tileforge/suites/cpu.json)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()
file(GLOB_RECURSE config_files ${prefix}/*/tileforgeConfig.cmake)
if(NOT config_files)
  message(FATAL_ERROR "the install lacks tileforgeConfig.cmake")
endif()

set(configure_args -S ${SOURCE_DIR}/consumer -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release)
if(GENERATOR)
  list(APPEND configure_args -G ${GENERATOR})
endif()
if(CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(C_COMPILER)
  list(APPEND configure_args -DCMAKE_C_COMPILER=${C_COMPILER})
endif()
run_step("configure the consumer" ${CMAKE_COMMAND} ${configure_args})
run_step("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_step("run the C++ consumer" ${WORK_DIR}/build/consumer)
run_step("run the C consumer" ${WORK_DIR}/build/consumer_c)
# The installed tool, run from a folder outside the source tree, finds its default suite and verifies.
run_step("run the installed CLI" ${CMAKE_COMMAND} -E chdir ${WORK_DIR}
         ${prefix}/bin/tileforge verify --shape 16x12x8 --quiet)
