#!/bin/sh
# The smallest preload library rust-lld can make (one read-and-execute segment, no data, no
# relocations, a read-only .dynamic): the least any preload can cost. Needs cc and rustup's
# rust-lld (gcc-ld). Writes ./minimal.so.
set -eu
lld_dir=$(dirname "$(find "$(rustc --print sysroot)" -path '*gcc-ld/ld.lld' | head -1)")
echo 'int execguard_minimal(void) { return 0; }' > minimal.c
cc -B"$lld_dir" -fuse-ld=lld -O2 -fPIC -shared -nostdlib -o minimal.so minimal.c \
    -Wl,-z,norelro -Wl,--no-rosegment -Wl,-z,rodynamic
