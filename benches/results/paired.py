#!/usr/bin/env python3
"""Paired, interleaved wall and CPU of `execguard run [FLAGS] -- /bin/true`, per variant."""
import os, sys, time, statistics as st
eg, rounds = sys.argv[1], int(sys.argv[2])
variants = {"network": [], "host-network": ["--allow-host-network"]}
res = {k: ([], []) for k in variants}
dn = os.open(os.devnull, os.O_WRONLY)
for i in range(rounds):
    for k, flags in variants.items():
        argv = [eg, "run", *flags, "--", "/bin/true"]
        t = time.perf_counter()
        pid = os.posix_spawn(eg, argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, dn, 1), (os.POSIX_SPAWN_DUP2, dn, 2)])
        _, status, ru = os.wait4(pid, 0)
        w = (time.perf_counter() - t) * 1000
        assert status == 0, status
        res[k][0].append(w); res[k][1].append((ru.ru_utime + ru.ru_stime) * 1000)
for k, (w, c) in res.items():
    print(f"{k:13} wall median {st.median(w):6.2f} ms  p25 {st.quantiles(w,n=4)[0]:6.2f}  CPU median {st.median(c):5.2f} ms")
d = [a - b for a, b in zip(res["network"][0], res["host-network"][0])]
dc = [a - b for a, b in zip(res["network"][1], res["host-network"][1])]
print(f"paired difference: wall median {st.median(d):+.2f} ms, CPU median {st.median(dc):+.2f} ms")
