#!/bin/sh
# peers.sh - install the toolchains of mqs-bench's peer rows, on
# Debian/Ubuntu: Go for mqs-peer-go, g++ and Boost.Fiber/Boost.Context
# for mqs-peer-fiber.  Same rules as deps.sh: check first (dpkg -s, or
# the command on PATH), apt-get update once, install only what is
# missing, say nothing when all is present; as a non-root user a missing
# package is reported and the script exits 1.  The peers are optional:
# `make test` and `make bench` never run this.
set -eu

PEER_DEPS="
golang-go:go
g++:g++
libboost-fiber-dev
libboost-context-dev
"

have_pkg() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=""
for dep in $PEER_DEPS; do
    pkg=${dep%%:*}
    cmd=""
    case $dep in *:*) cmd=${dep#*:} ;; esac
    if [ -n "$cmd" ] && command -v "$cmd" >/dev/null 2>&1; then
        continue
    fi
    if command -v dpkg-query >/dev/null 2>&1 && have_pkg "$pkg"; then
        continue
    fi
    missing="$missing $pkg"
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "peers.sh: missing peer toolchains:$missing" >&2
    echo "peers.sh: run 'sudo scripts/peers.sh' or install them with:" >&2
    echo "  apt-get install --no-install-recommends$missing" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "peers.sh: missing peer toolchains:$missing (no apt-get here: install them by hand)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
echo "peers.sh: installing$missing"
# shellcheck disable=SC2086 # word splitting of the package list is wanted
apt-get install -y -qq --no-install-recommends $missing
