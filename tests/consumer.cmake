# consumer.cmake - install the build into a fresh prefix, then build and
# run tests/consumer against it with find_package(mqs CONFIG), once with
# mqs::mqs (the shared library) and once with mqs::mqs_static.
#
#   cmake -DBUILD=<build dir> -DSRC=<tests/consumer> -DWORK=<scratch dir>
#         -DCC=<C compiler> -P consumer.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  set(last "${out}" PARENT_SCOPE)
endfunction()
step(${CMAKE_COMMAND} --install "${BUILD}" --prefix "${WORK}/prefix")
step(${CMAKE_COMMAND} -S "${SRC}" -B "${WORK}/build"
     -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_C_COMPILER=${CC})
step(${CMAKE_COMMAND} --build "${WORK}/build")
foreach(app app_shared app_static)
  step("${WORK}/build/${app}")
  message(STATUS "${app}: ${last}")
  if(NOT last MATCHES "7 squared is 49")
    message(FATAL_ERROR "${app} printed: ${last}")
  endif()
endforeach()
# The shared program must have loaded the installed library.
step(ldd "${WORK}/build/app_shared")
if(NOT last MATCHES "${WORK}/prefix/")
  message(FATAL_ERROR "app_shared does not use the installed libmqs.so:\n${last}")
endif()
