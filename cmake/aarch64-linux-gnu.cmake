# aarch64-linux-gnu.cmake - cross build for 64-bit Arm Linux, run under
# qemu-user (docs/aarch64.md).
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   cmake --build build-arm64 -j2 && ctest --test-dir build-arm64
#
# Debian packages: gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
# (scripts/deps-aarch64.sh).  The emulator is what ctest (and the
# conformance suite's policy listing, which runs a built program) runs the
# target programs through; -L points qemu at the target's dynamic loader
# and libc.  MQS_AARCH64_SYSROOT and MQS_AARCH64_QEMU override the paths
# (e.g. qemu-aarch64-static from qemu-user-static).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(MQS_AARCH64_TRIPLE aarch64-linux-gnu)
# -DMQS_AARCH64_CC=clang: clang --target=aarch64-linux-gnu, which finds
# the cross gcc's libraries and binutils by itself.
if(MQS_AARCH64_CC STREQUAL "clang")
  set(CMAKE_C_COMPILER clang)
  set(CMAKE_ASM_COMPILER clang)
  set(CMAKE_C_COMPILER_TARGET ${MQS_AARCH64_TRIPLE})
  set(CMAKE_ASM_COMPILER_TARGET ${MQS_AARCH64_TRIPLE})
else()
  set(CMAKE_C_COMPILER ${MQS_AARCH64_TRIPLE}-gcc)
  set(CMAKE_ASM_COMPILER ${MQS_AARCH64_TRIPLE}-gcc)
endif()

if(NOT MQS_AARCH64_SYSROOT)
  set(MQS_AARCH64_SYSROOT /usr/${MQS_AARCH64_TRIPLE})
endif()
if(NOT MQS_AARCH64_QEMU)
  find_program(MQS_AARCH64_QEMU NAMES qemu-aarch64 qemu-aarch64-static)
endif()
if(MQS_AARCH64_QEMU)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${MQS_AARCH64_QEMU};-L;${MQS_AARCH64_SYSROOT}")
endif()

# Look for libraries and headers in the target's tree only; programs
# (cmake, go) on the host.
set(CMAKE_FIND_ROOT_PATH ${MQS_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
