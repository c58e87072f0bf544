#!/bin/sh
# check-layers.sh DIR - the core's files call downward only.
#
# Given a directory holding one object file per source file of src/
# (compiled on their own, not as the unity build), this lists every call or data reference from
# one file to a symbol another file defines, and asks tsort(1) for an
# order: a cycle between files is printed and fails the check.  Policies
# are reached through their ops tables; the registry's references to the
# tables (policy.c -> mq.c, ...) are the one kind of edge left out.
# docs/design.md, "Layers", has the intended order.
set -eu
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: $0 DIR" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
find "$1" -name '*.o' | sort > "$tmp/objs"
nobj=$(wc -l < "$tmp/objs")
# A check of a handful of files would pass for nothing.
[ "$nobj" -ge 20 ] || { echo "check-layers: only $nobj objects in $1" >&2; exit 1; }
set -- $(cat "$tmp/objs")
for o in "$@"; do
    f=$(basename "$o" .o); f=${f%.c}
    nm --defined-only -g "$o" | awk -v f="$f" 'NF == 3 {print $3, f}'
done | sort > "$tmp/defs"
for o in "$@"; do
    f=$(basename "$o" .o); f=${f%.c}
    nm -u "$o" | awk -v f="$f" '{print $2, f}'
done | sort > "$tmp/uses"
# "callee caller symbol", files only, without the registry's table edges.
join "$tmp/uses" "$tmp/defs" |
    awk '$2 != $3 && !($2 == "policy" && $1 ~ /^mqs_policy_/) {print $3, $2, $1}' |
    sort -u > "$tmp/edges"
n=$(wc -l < "$tmp/edges")
if ! awk '{print $1, $2}' "$tmp/edges" | tsort > "$tmp/order" 2> "$tmp/err"; then
    echo "check-layers: a call cycle between files of src/:"
    cat "$tmp/err"
    echo "edges (callee <- caller: symbol) among the files named above:"
    names=$(sed -n 's/^tsort: \([a-z_0-9]*\)$/\1/p' "$tmp/err" | sort -u | tr '\n' ' ')
    awk -v names=" $names " 'index(names, " " $1 " ") && index(names, " " $2 " ") {print "  " $1 " <- " $2 ": " $3}' "$tmp/edges"
    exit 1
fi
echo "check-layers: $n cross-file references among $# files, no cycle"
echo "check-layers: order (callees first): $(tr '\n' ' ' < "$tmp/order")"
