#!/usr/bin/env python3
"""A refused exec with its record, end to end: the kept audit (the record sent to the writer
outside the session) against the old way (`--audit FILE`: the refusing process appends it
itself), and an allowed, unaudited exec under both (no record either way: unchanged).

    python3 benches/results/refused-exec.py [EXECGUARD] [N] [ROUNDS]

Each round runs, in an order rotated per round, `execguard run -- sh -c LOOP` for every
variant: LOOP runs N times either `./evil` (a native program the session wrote: refused,
`mutable_native`) or `/bin/true` (allowed, not audited), and once with N = 0 (the session
alone). Per exec = (session with N - session with 0) / N, wall time; the figure is the median
over rounds of kept minus old, paired within a round. Prints one table (markdown).
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

cli = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/execguard")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7

base = tempfile.mkdtemp(prefix="eg-refused-")
ws, home = os.path.join(base, "ws"), os.path.join(base, "home")
os.makedirs(ws)
os.makedirs(home)
shutil.copy("/bin/true", os.path.join(ws, "evil"))
own_log = os.path.join(base, "own.jsonl")
env = dict(os.environ, HOME=home, XDG_STATE_HOME=os.path.join(base, "state"))


def session(kept, cmd, count):
    loop = f"i=0; while [ $i -lt {count} ]; do {cmd} 2>/dev/null; i=$((i+1)); done"
    args = [cli, "run", "--workspace", ws]
    if not kept:
        args += ["--audit", own_log]
    args += ["--", "/bin/sh", "-c", loop]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(args, cwd=ws, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


variants = [(kept, cmd) for cmd in ("./evil", "/bin/true") for kept in (True, False)]
per_exec = {v: [] for v in variants}
per_exec_wall = {v: [] for v in variants}
session(True, "./evil", 10)  # warm-up: the key, the state directory, the page cache
session(False, "./evil", 10)
for r in range(rounds):
    order = variants[r % len(variants):] + variants[:r % len(variants)]
    for v in order:
        kept, cmd = v
        with_n = session(kept, cmd, n)
        alone = session(kept, cmd, 0)
        per_exec[v].append((with_n[0] - alone[0]) / n * 1e6)
        per_exec_wall[v].append((with_n[1] - alone[1]) / n * 1e6)

print(f"command: python3 benches/results/refused-exec.py {sys.argv[1] if len(sys.argv) > 1 else ''} {n} {rounds}")
print(f"load average: {os.getloadavg()}")
print()
print("| exec | metric | old (`--audit FILE`) µs | kept µs | kept − old, paired median µs |")
print("| --- | --- | --- | --- | --- |")
for cmd, what in (("./evil", "refused, with its record"), ("/bin/true", "allowed, not audited")):
    for metric, table in (("CPU", per_exec), ("wall", per_exec_wall)):
        old, kept = table[(False, cmd)], table[(True, cmd)]
        delta = statistics.median(k - o for k, o in zip(kept, old))
        print(f"| {what} | {metric} | {statistics.median(old):.1f} | {statistics.median(kept):.1f} | {delta:+.1f} |")
shutil.rmtree(base, ignore_errors=True)
