#!/bin/sh
# deps.sh - install what building and testing mqs needs, on Debian/Ubuntu.
#
# Checks first (dpkg -s, or the command being on PATH), runs apt-get update
# once and installs only when something is missing, and says nothing when
# everything is present.  Installing needs root: as another user a missing
# package is reported and the script exits 1.
#
# Add a prerequisite by adding "package[:command]" to MQS_DEPS below: the
# package is taken as present when dpkg knows it as installed or, if a
# command is named, when that command is on PATH (a tool installed by other
# means counts).  Other lists (scripts/peers.sh) call this script with
# their own "package[:command]" items as arguments, and MQS_DEPS_WHAT
# naming them in messages.
set -eu

WHAT=${MQS_DEPS_WHAT:-prerequisites}
ME=${MQS_DEPS_ME:-deps.sh}
MQS_DEPS="
cmake:cmake
make:make
gcc:gcc
libc6-dev
clang:clang
libclang-rt-dev
pkg-config:pkg-config
gnuplot-nox:gnuplot
liburing-dev
"
if [ $# -gt 0 ]; then MQS_DEPS="$*"; fi

have_pkg() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=""
for dep in $MQS_DEPS; do
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
    echo "$ME: missing $WHAT:$missing" >&2
    echo "$ME: run 'sudo scripts/$ME' or install them with:" >&2
    echo "  apt-get install --no-install-recommends$missing" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "$ME: missing $WHAT:$missing (no apt-get here: install them by hand)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# A package this release does not have (libclang-rt-dev is split out of
# clang only from Debian 12 on) is skipped with a note, not fatal.
install=""
for pkg in $missing; do
    if apt-cache show "$pkg" >/dev/null 2>&1; then
        install="$install $pkg"
    else
        echo "$ME: no package $pkg in this release, skipped" >&2
    fi
done
[ -z "$install" ] && exit 0
echo "$ME: installing$install"
# shellcheck disable=SC2086 # word splitting of the package list is wanted
apt-get install -y -qq --no-install-recommends $install
