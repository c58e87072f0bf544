# exports.cmake - fail if the shared library exports a name outside its
# public API.
#
#   cmake -DNM=<nm> -DLIB=<libmqs.so> -P exports.cmake
#
# Every defined dynamic symbol must be `mqs_` followed by a letter (the
# names of include/mqs.h and include/mqs/policy.h); the runtime's own
# `mqs__*` names and anything else stay local (src/libmqs.map).  At least
# one public name must be there, so a library that exports nothing fails
# too.
execute_process(COMMAND ${NM} -D --defined-only ${LIB}
  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIB} failed (${rc})")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(public 0)
set(bad "")
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  string(REGEX REPLACE "^.* " "" name "${line}")
  if(name MATCHES "^mqs_[a-z]")
    math(EXPR public "${public} + 1")
  else()
    list(APPEND bad "${name}")
  endif()
endforeach()
if(bad)
  list(LENGTH bad n)
  message(FATAL_ERROR "${LIB} exports ${n} names outside the public API: ${bad}")
endif()
if(public EQUAL 0)
  message(FATAL_ERROR "${LIB} exports no mqs_ name at all")
endif()
message(STATUS "${LIB}: ${public} names, all public")
