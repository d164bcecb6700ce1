#!/bin/bash
# Instructions (callgrind) a process spends on its first exec under a real session's policy.
# Usage, as root: count.sh CLI LIB...   (CLI: an `execguard` binary; each LIB: a libexecguard.so
# outside every write set). For each LIB it prints the instructions of `spawn_once 1` (one
# posix_spawn, decided in the counted process, which lives on) and of `spawn_once 0` (none),
# and their difference. The policy is the one `execguard run` hands its program (its seal,
# wrappers and carried identities), taken once with the first LIB and used for all.
# Instruction counts do not depend on the machine's load.
set -euo pipefail
cli=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
work=/opt/execguard-first-exec
mkdir -p "$work/ws" "$work/home"
cc -O2 -o "$work/spawn_once" "$here/spawn_once.c"
[ -x /usr/local/libexec/eg-bench/chain ] || { echo "run benches/results/per-exec-syscalls.py once first (it builds the chain)" >&2; exit 2; }
policy=$(cd "$work/ws" && env -i PATH=/usr/bin:/bin HOME="$work/home" EXECGUARD_LIB="$1" \
  "$cli" run --workspace "$work/ws" -- /usr/bin/printenv EXECGUARD_POLICY)
count() { # LIB ARG
  local out; out=$(mktemp -d)
  env -i PATH=/usr/bin:/bin HOME="$work/home" LD_PRELOAD="$1" EXECGUARD_POLICY="$policy" \
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$work/spawn_once" "$2" 2>/dev/null
  awk '/^summary/ {print $2}' "$out/cg"; rm -rf "$out"
}
for lib in "$@"; do
  a=$(count "$lib" 1); b=$(count "$lib" 0)
  echo "$lib: spawn_once 1: $a, spawn_once 0: $b, first exec: $((a - b))"
done
