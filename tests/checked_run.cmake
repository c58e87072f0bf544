# conformance_checked: the conformance program linked with the
# contract-checked library (mqs_checked), run for every policy it lists
# on the cases named by FILTERS (substrings of the case names: check.h
# runs the matching ones, one run per filter).  The whole suite under the checks for every
# policy would add minutes to a CI run; these cases drive every op the
# checks watch (enqueue, pick, put_prev, yield, steal, balance, dequeue
# through priority and affinity changes) on one and two workers.
# -DEXE: the program; -DFILTERS: the filters, '|'-separated (default
# below); -DEMULATOR: a cross build's emulator, its words '|'-separated.
if(NOT DEFINED FILTERS)
  set(FILTERS "nothing_lost|rt_pulled|affinity|bad_input")
endif()
string(REPLACE "|" ";" FILTERS "${FILTERS}")
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")
execute_process(COMMAND ${EMULATOR} "${EXE}" --list-policies
  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --list-policies failed (${rc})")
endif()
string(STRIP "${out}" out)
string(REPLACE "\n" ";" names "${out}")
foreach(spec IN LISTS names)
  set(ENV{MQS_TEST_POLICY} "${spec}")
  foreach(filter IN LISTS FILTERS)
    message(STATUS "conformance_checked: ${spec}, cases matching '${filter}'")
    execute_process(COMMAND ${EMULATOR} "${EXE}" "${filter}"
      RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "conformance_checked: ${spec} failed (${rc})")
    endif()
  endforeach()
endforeach()
