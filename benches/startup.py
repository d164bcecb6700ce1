#!/usr/bin/env python3
"""CPU time of `execguard run` start-up, the guard issue's budget (<= 3 ms of CPU).

    benches/startup.py [--rounds N] [--workspace DIR] EXECGUARD [EXECGUARD ...]

Runs `EXECGUARD run --workspace DIR -- /bin/true` for each build given, and `/bin/true` alone,
interleaved for N rounds (default 300), and prints each one's median, p25 and p75 CPU time
(user + system of the whole process tree, from wait4), and the median paired difference from
`/bin/true`: `execguard run`'s own share. The workspace defaults to a new empty directory
(not the current one: from the repository, it would hold the binary, which is refused).
Run it as each user the budget is for (a non-root
user's session also makes a user namespace), on an otherwise idle machine.

Measure installed copies (`install -m 755` the CLI, both wrappers and libexecguard.so into
one directory), not target/release: the same bytes start about 0.1 ms faster from a copy
than from the file the linker wrote, and as much slower the other way round.

Both halves of a pair run in the same round, so a slow patch of the machine slows both. One
round costs a few ms of CPU per build; 300 rounds take a few seconds.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile


def cpu_ms(argv, devnull):
    pid = os.posix_spawn(
        argv[0],
        argv,
        os.environ,
        file_actions=[
            (os.POSIX_SPAWN_DUP2, devnull, 1),
            (os.POSIX_SPAWN_DUP2, devnull, 2),
        ],
    )
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"startup.py: {' '.join(argv)} ended with status {status}")
    return (usage.ru_utime + usage.ru_stime) * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--workspace", help="default: a new empty directory")
    ap.add_argument("builds", nargs="+", help="execguard binaries to compare (paths or names on PATH)")
    a = ap.parse_args()
    if a.rounds < 2:
        sys.exit("startup.py: --rounds must be at least 2")
    made = None if a.workspace else tempfile.mkdtemp(prefix="execguard-startup-")
    a.workspace = a.workspace or made
    builds = []
    for b in a.builds:
        found = shutil.which(b) if os.sep not in b else b
        if not found:
            sys.exit(f"startup.py: {b}: not found")
        builds.append(os.path.abspath(found))
    a.builds = builds
    devnull = os.open("/dev/null", os.O_RDWR)
    commands = [[b, "run", "--workspace", a.workspace, "--", "/bin/true"] for b in a.builds]
    commands.append(["/bin/true"])
    samples = [[] for _ in commands]
    for r in range(a.rounds + 1):
        for i, c in enumerate(commands):
            t = cpu_ms(c, devnull)
            if r > 0:  # round 0 warms the caches and the kept shims
                samples[i].append(t)
    alone = samples[-1]
    print(f"uid {os.getuid()}, {a.rounds} rounds, workspace {a.workspace}, CPU ms (user + system)")
    for c, s in zip(commands, samples):
        q = statistics.quantiles(s, n=4)
        line = f"{c[0]:50s} median {statistics.median(s):6.3f}  p25 {q[0]:6.3f}  p75 {q[2]:6.3f}"
        if c is not commands[-1]:
            own = statistics.median(x - y for x, y in zip(s, alone))
            line += f"  own share (paired, minus /bin/true) {own:6.3f}"
        print(line)
    if made:
        os.rmdir(made)


if __name__ == "__main__":
    main()
