#!/bin/bash
# Interleaved A/B of vdec (vdec.c): ROUNDS rounds, each running every variant once for N ops;
# prints each variant's median of the per-round medians (µs), with the min and max.
#   T=/usr/lib/x86_64-linux-gnu/libm.so.6 ./ab.sh 7 2000 none /opt/execguard-bench/libfloor_c.so /opt/execguard-bench/libexecguard.so
# Run from / (outside the write set); `taskset -c 1 ./ab.sh ...` keeps the child on the parent's CPU.
export EXECGUARD_POLICY="$(cat "$(dirname "$0")/../../../harness/bench-policy.toml")"
VDEC=${VDEC:-/opt/execguard-bench/eg-vdec}
TARGET=${T:-/lib/x86_64-linux-gnu/libm.so.6}
R=$1; N=$2; shift 2
declare -A res
for r in $(seq "$R"); do for v in "$@"; do
  if [ "$v" = none ]; then x=$("$VDEC" "$N" "$TARGET"); else x=$(LD_PRELOAD=$v "$VDEC" "$N" "$TARGET"); fi
  res[$v]="${res[$v]} $x"; done; done
for v in "$@"; do printf "%-45s " "$v"; echo ${res[$v]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END{printf "median %s  (min %s max %s)\n", a[int((NR+1)/2)], a[1], a[NR]}'; done
