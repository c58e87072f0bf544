#!/bin/sh
# peers.sh - install the toolchains of mqs-bench's peer rows, on
# Debian/Ubuntu: Go for mqs-peer-go, g++ and Boost.Fiber/Boost.Context
# for mqs-peer-fiber.  Same rules as deps.sh: check first (dpkg -s, or
# the command on PATH), apt-get update once, install only what is
# missing, say nothing when all is present; as a non-root user a missing
# package is reported and the script exits 1.  The peers are optional:
# `make test` and `make bench` never run this.
set -eu

MQS_DEPS_WHAT="peer toolchains" MQS_DEPS_ME=peers.sh \
    exec "$(dirname "$0")/deps.sh" golang-go:go g++:g++ \
    libboost-fiber-dev libboost-context-dev
