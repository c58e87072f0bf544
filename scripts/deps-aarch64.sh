#!/bin/sh
# deps-aarch64.sh - install what the aarch64 cross build and its tests
# under emulation need, on Debian/Ubuntu: the cross gcc and libc
# (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross) and qemu-user, whose
# qemu-aarch64 runs the test programs (cmake/aarch64-linux-gnu.cmake,
# docs/aarch64.md).  Same rules as deps.sh: check first, apt-get update
# once, install only what is missing, say nothing when all is present; as
# a non-root user a missing package is reported and the script exits 1.
# Optional: only `make check-arm64` runs this, never `make test`.
# qemu-user-static (qemu-aarch64-static) counts as qemu-user here.
set -eu

if command -v qemu-aarch64-static >/dev/null 2>&1; then
    qemu=qemu-user-static:qemu-aarch64-static
else
    qemu=qemu-user:qemu-aarch64
fi
MQS_DEPS_WHAT="aarch64 cross tools" MQS_DEPS_ME=deps-aarch64.sh \
    exec "$(dirname "$0")/deps.sh" cmake:cmake make:make \
    gcc-aarch64-linux-gnu:aarch64-linux-gnu-gcc libc6-dev-arm64-cross "$qemu"
