#!/usr/bin/env python3
"""Paired, interleaved wall time of a registry install: outside, in a session with the host's
network (--allow-host-network), in a session with its own (the default)."""
import os, sys, time, shutil, subprocess, statistics as st
eg, rounds, ws = sys.argv[1], int(sys.argv[2]), os.getcwd()
jobs = {
  "pip download six": ["/usr/bin/python3", "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check", "-q", "-d", "dl", "six==1.16.0"],
  "npm install is-number": ["npm", "install", "--no-audit", "--no-fund", "--prefer-online", "--cache", ws + "/npm-cache", "is-number@7.0.0"],
}
open("package.json", "w").write('{"name":"t","version":"1.0.0"}')
where = {"outside": [], "session, host network": [eg, "run", "--allow-host-network", "--"], "session, own network": [eg, "run", "--"]}
for name, cmd in jobs.items():
    t = {k: [] for k in where}
    for i in range(rounds):
        for k, pre in where.items():
            for p in ("dl", "node_modules", "package-lock.json", "npm-cache"):
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.remove(p))
            s = time.perf_counter()
            r = subprocess.run(pre + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t[k].append((time.perf_counter() - s) * 1000)
            assert r.returncode == 0, (k, name)
    o = st.median(t["outside"])
    print(name + ":")
    for k in where:
        m = st.median(t[k])
        print(f"  {k:22} median {m:7.1f} ms ({(m/o-1)*100:+.1f}% of outside), p25 {st.quantiles(t[k], n=4)[0]:7.1f}")
    d = [a - b for a, b in zip(t["session, own network"], t["session, host network"])]
    print(f"  own network minus host network, paired median: {st.median(d):+.1f} ms")
