#!/usr/bin/env python3
"""System calls per exec hop: plain, the empty-preload floor, the guard under the bench
policy, and `execguard run`'s real sealed session (issue 31).

Each variant runs the harness's exec chain (benches/harness/src/c/chain.c, built with
`cc -O2` into a root-owned directory outside every write set) twice under `strace -ff`:
with N hops and with 0. Only the chain's own process is counted, from its first exec of the
chain on (the chain execs in one process): not the session's supervisor nor the session's
start and end, whose calls depend on what the end's sweep finds on a shared machine (200,000 and more
`statx` here) and so do not cancel between two runs. Per hop = (calls(N) - calls(0)) / N,
so the chain's own start and exit cancel out. Usage (as root, from the repository):

    cargo build --release -p execguard -p execguard-preload -p execguard-bench-floor
    python3 benches/results/per-exec-syscalls.py [N] [TARGET_DIR]
"""
import collections, os, subprocess, sys, tempfile

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
target = sys.argv[2] if len(sys.argv) > 2 else "target/release"
repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
target = os.path.join(repo, target)
chain_dir = "/usr/local/libexec/eg-bench"
chain = os.path.join(chain_dir, "chain")
os.makedirs(chain_dir, exist_ok=True)
subprocess.run(["cc", "-O2", "-o", chain, os.path.join(repo, "benches/harness/src/c/chain.c")], check=True)
guard_lib = os.path.join(target, "libexecguard.so")
floor_lib = os.path.join(target, "libfloor_rust.so")
cli = os.path.join(target, "execguard")
bench_policy = open(os.path.join(repo, "benches/harness/bench-policy.toml")).read()
ws = tempfile.mkdtemp(prefix="eg-ws-", dir="/tmp")
base_env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}

def counts(cmd, env):
    """System calls of the process that execs the chain, from that exec on, by name."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["strace", "-ff", "-qq", "-o", os.path.join(out, "t")] + cmd, env=env,
                       check=True, stdout=subprocess.DEVNULL, cwd=ws)
        c = collections.Counter()
        first_exec = f'execve("{chain}"'
        for name in os.listdir(out):
            started = False
            for line in open(os.path.join(out, name)):
                if not started:
                    started = line.startswith(first_exec) and line.rstrip().endswith("= 0")
                    continue
                if line[0].isalpha() or line.startswith("_"):
                    c[line.split("(", 1)[0]] += 1
        return c

variants = {
    "plain": (lambda n: [chain, str(n)], dict(base_env)),
    "floor": (lambda n: [chain, str(n)], dict(base_env, LD_PRELOAD=floor_lib)),
    "guard (bench policy)": (lambda n: [chain, str(n)],
                             dict(base_env, LD_PRELOAD=guard_lib, EXECGUARD_POLICY=bench_policy)),
    "execguard run (sealed session)": (lambda n: [cli, "run", "--workspace", ws, "--", chain, str(n)],
                                       dict(base_env, EXECGUARD_LIB=guard_lib)),
}
rows = {}
for name, (cmd, env) in variants.items():
    full, zero = counts(cmd(N), env), counts(cmd(0), env)
    rows[name] = {k: (full[k] - zero[k]) / N for k in full}
floor = rows["floor"]
head = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print(f"## System calls per exec hop ({N}-hop chain, commit {head}, `python3 {' '.join(sys.argv)}`)\n")
print("| variant | calls per hop | beyond the floor |")
print("|---|---:|---:|")
for name, r in rows.items():
    t = sum(r.values())
    print(f"| {name} | {t:.1f} | {t - sum(floor.values()):+.1f} |")
print("\nWhere the sealed session asks more than the floor (calls per hop, difference >= 0.5):\n")
print("| system call | floor | session | guard (bench policy) |")
print("|---|---:|---:|---:|")
s, g = rows["execguard run (sealed session)"], rows["guard (bench policy)"]
for k in sorted(set(s) | set(floor), key=lambda k: -(s.get(k, 0) - floor.get(k, 0))):
    d = s.get(k, 0) - floor.get(k, 0)
    if abs(d) >= 0.5:
        print(f"| {k} | {floor.get(k, 0):.2f} | {s.get(k, 0):.2f} | {g.get(k, 0):.2f} |")
