# no_compiler_helpers.cmake - fail if the static runtime calls a compiler
# helper (libgcc, compiler-rt, libatomic).
#
#   cmake -DNM=<nm> -DLIB=<libmqs.a> -P no_compiler_helpers.cmake
#
# Why.  A program linked with libmqs.a gets libgcc's helpers (__udivti3,
# aarch64's __aarch64_cas4_acq outline atomics, __popcountdi2 ...) in its
# own .text, which is where the preemption handler may stop a task
# (src/preempt.c).  The runtime calling one with a spin lock held outside
# in_runtime then looks like a task in its own code: it is stopped with
# the lock held, and the next task on the worker spins on it for good (the
# outline atomics did exactly that under qemu; docs/design.md).  The
# shared library links the helpers it needs into itself, outside the
# program's text, where no stop happens; the static archive is the one to
# check.
#
# How.  Every undefined symbol of the archive whose name is in the
# implementation's namespace (two leading underscores) must be on the
# allowlist below: libc, libpthread, the dynamic loader, the stack
# protector, fortify's _chk functions and the sanitizers' runtimes.  Names
# outside that namespace (malloc, pthread_create ...) are the libraries'
# public API, never a compiler helper.
#
# An allowlist, not a list of known helpers: helpers are many and grow
# with each compiler and target (__udivti3, __divti3, __muloti4,
# __popcountdi2, __clzdi2, __aarch64_ldadd8_acq_rel, __atomic_load_16,
# __sync_fetch_and_add_16, __extendhfsf2, __cpu_indicator_init ...), and a
# denylist silently passes the one nobody thought of.  An allowlist's
# failure mode is loud instead: a new legitimate libc name (a newer
# glibc's __isoc23_strtoll, say) fails here by name and is added after a
# look.
cmake_minimum_required(VERSION 3.18)
if(NOT NM OR NOT LIB)
  message(FATAL_ERROR "no_compiler_helpers: needs -DNM=<nm> -DLIB=<archive>")
endif()
if(NOT EXISTS "${LIB}")
  message(FATAL_ERROR "no_compiler_helpers: ${LIB} does not exist")
endif()

# Regular expressions matched against whole names.
set(allowed
  # libc and libpthread internals that public headers call
  "__errno_location" "__h_errno_location" "__assert_fail"
  "__stack_chk_fail" "__stack_chk_guard"
  "__sched_cpu(count|alloc|free)" "__isoc(99|23)_[a-z0-9_]+"
  "__libc_[a-z0-9_]+" "__cxa_[a-z0-9_]+" "__dso_handle"
  "__ctype_(b|tolower|toupper)_loc" "__sigsetjmp"
  "__(fx|x|lx|fxat)stat(64)?" "__register_atfork" "__environ"
  "__open(at)?(64)?_2" "__[a-z0-9_]+_chk"
  # the dynamic loader (TLS of a -fPIC archive)
  "__tls_get_addr"
  # the sanitizers' runtimes (preempt.c never stops a task inside them)
  "__(asan|lsan|ubsan|tsan|msan|sanitizer)_[A-Za-z0-9_]+")

execute_process(COMMAND ${NM} -u -P "${LIB}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "no_compiler_helpers: ${NM} -u -P ${LIB} failed (${rc}): ${err}")
endif()

# POSIX format: "name type [value size]" per symbol, "archive[member]:"
# before each member's list.
string(REPLACE "\n" ";" lines "${out}")
set(seen "")
set(bad "")
set(nundef 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ ]+) [Uw] *")
    set(name "${CMAKE_MATCH_1}")
    math(EXPR nundef "${nundef} + 1")
    if(NOT name MATCHES "^__" OR name IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${name}")
    set(ok FALSE)
    foreach(re IN LISTS allowed)
      if(name MATCHES "^${re}$")
        set(ok TRUE)
        break()
      endif()
    endforeach()
    if(NOT ok)
      list(APPEND bad "${name}")
    endif()
  endif()
endforeach()

# An nm that printed nothing we could read must not pass as "no helpers".
if(nundef EQUAL 0)
  message(FATAL_ERROR "no_compiler_helpers: no undefined symbols read from "
    "${NM} -u -P ${LIB}; the output format was not understood:\n${out}")
endif()
if(bad)
  string(REPLACE ";" ", " bad "${bad}")
  message(FATAL_ERROR "no_compiler_helpers: ${LIB} calls compiler helper(s) "
    "that would be linked into the program's .text, where a preempted task "
    "may stop (docs/design.md, \"Where a stop is unsafe\"): ${bad}.  "
    "Write the operation without the helper (src/div128.h for 128-bit "
    "division), or, if the name is libc's, add it to the allowlist in "
    "tests/no_compiler_helpers.cmake.")
endif()
message(STATUS "no_compiler_helpers: ${nundef} undefined references, "
  "no compiler helper among them")
