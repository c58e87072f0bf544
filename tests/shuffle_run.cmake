# Runs one test program under the random-schedule mode once per seed
# (MQS_SHUFFLE, include/mqs.h) and fails naming the seed that failed, with
# the command that replays it.  -DEXE: the program, -DSEEDS: seeds
# separated by ',', -DPOLICY: MQS_TEST_POLICY for the conformance program
# (optional), -DEMULATOR: a cross build's emulator, words separated by '|'.
string(REPLACE "," ";" seeds "${SEEDS}")
string(REPLACE "|" ";" emulator "${EMULATOR}")
set(env "")
if(POLICY)
  set(env "MQS_TEST_POLICY=${POLICY}")
endif()
foreach(seed IN LISTS seeds)
  message(STATUS "MQS_SHUFFLE=${seed} ${EXE}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env MQS_SHUFFLE=${seed} ${env}
                          ${emulator} ${EXE}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed under the random-schedule mode, seed "
      "${seed} (${rc}); replay: MQS_SHUFFLE=${seed} ${env} ${EXE}")
  endif()
endforeach()
