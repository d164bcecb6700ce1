#!/bin/bash
# time to a working network in a fresh netns through slirp4netns (root)
unshare -n --fork sh -c 'sleep 5' &
sleep 0.05
pid=$(pgrep -P $! sleep || echo $!)
start=$(date +%s%N)
rm -f "${TMPDIR:-/tmp}/slirp-ready"; mkfifo "${TMPDIR:-/tmp}/slirp-ready"
slirp4netns --configure --disable-host-loopback --ready-fd=4 $pid tap0 4>"${TMPDIR:-/tmp}/slirp-ready" >/dev/null 2>&1 &
sp=$!
head -c1 "${TMPDIR:-/tmp}/slirp-ready" >/dev/null
end=$(date +%s%N)
echo "slirp ready after $(( (end-start)/1000 )) us"
kill $sp; kill $! 2>/dev/null; wait 2>/dev/null
