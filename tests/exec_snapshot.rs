//! Issue 31: what `execguard run` learned about the execute side at start (the protected
//! runtimes' and wrappers' identities, carried in the session's policy) is not asked again by
//! the processes of the sealed session. Counted, not timed: each exec of a chain is traced
//! (`strace -f`), and every file a hop names in a system call must be one the floor names too
//! (the guard library, the loader's cache and libc), the policy file the guard looks for first,
//! or the file being executed. As root and as a non-root user. The positive control runs the
//! same chain under the same policy text without the carried identities: the runtimes and
//! wrappers are asked again, so the check can fail.

mod support;

use execguard_testkit::{identities, skip, Identity};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{s, tools, Fixture};

const HOPS: usize = 6;

/// The chain program (`benches/harness/src/c/chain.c`), built into the fixture's `sys`: outside
/// every write set, as the programs a session runs from the system are.
fn chain(f: &Fixture) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/harness/src/c/chain.c");
    let out = f.sys.join("chain");
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("cannot run cc (install build-essential)");
    assert!(status.success(), "cc failed for {}", src.display());
    out
}

/// The calls that name a file.
const NAMING: &str = "trace=execve,open,openat,openat2,stat,lstat,newfstatat,statx,access,faccessat,faccessat2,readlink,readlinkat";

/// Runs `cmd` (program and arguments) as `who` under `strace -f -e TRACE`; returns the trace's
/// lines.
fn traced(
    f: &Fixture,
    who: &Identity,
    trace: &str,
    cmd: &[&str],
    env: &[(&str, &str)],
) -> Vec<String> {
    let out = f.base.join(format!("trace-{}", who.uid()));
    let mut c = f.plain("strace");
    who.apply(&mut c);
    c.args(["-f", "-qq", "-s", "4096", "-o"])
        .arg(&out)
        .args(["-e", trace])
        .args(cmd);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "{}: {cmd:?}: {:?}\n{}",
        who.label(),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The paths named by the calls of each hop: from one successful exec of `program` to the
/// next (the last image, which execs nothing, is left out): `HOPS` hops for a chain of `HOPS`.
fn hops(trace: &[String], program: &str) -> Vec<Vec<String>> {
    let exec = format!("execve(\"{program}\"");
    let mut hops: Vec<Vec<String>> = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in trace {
        let call = line
            .split_once(' ')
            .map_or("", |(_, rest)| rest.trim_start());
        if call.starts_with(&exec) && line.ends_with("= 0") {
            if let Some(done) = current.take() {
                hops.push(done);
            }
            current = Some(Vec::new());
            continue;
        }
        let Some(hop) = current.as_mut() else {
            continue;
        };
        // The first quoted argument is the path (an empty one is a call on a descriptor).
        if let Some(path) = call.split('"').nth(1).filter(|p| !p.is_empty()) {
            hop.push(format!("{} {path}", call.split('(').next().unwrap_or("")));
        }
    }
    hops
}

/// How many system calls each hop makes: those of the process that execs `program`, from
/// one successful exec of it to the next (the last image, which execs nothing, left out).
fn calls_per_hop(trace: &[String], program: &str) -> Vec<usize> {
    let exec = format!("execve(\"{program}\"");
    let (mut hops, mut current, mut pid) = (Vec::new(), None, None);
    for line in trace {
        let Some((who, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        if call.starts_with(&exec) && line.ends_with("= 0") {
            pid.get_or_insert(who.to_string());
            hops.extend(current.replace(0));
            continue;
        }
        // A call another process's output cut in two is counted at its start.
        let a_call = call.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        if let (Some(n), true) = (current.as_mut(), pid.as_deref() == Some(who) && a_call) {
            *n += 1;
        }
    }
    hops
}

/// The chain of `HOPS` hops in a sealed session of the fixture's workspace.
fn in_session<'f>(f: &'f Fixture, chain: &'f Path) -> [&'f str; 9] {
    static N: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let n = N.get_or_init(|| HOPS.to_string());
    let cli = s(&tools().cli);
    [
        cli,
        "run",
        "--workspace",
        s(&f.ws),
        "--audit",
        s(&f.audit),
        "--",
        s(chain),
        n,
    ]
}

/// The session's policy, as its first process received it.
fn session_policy(f: &Fixture, who: &Identity) -> String {
    let mut c = f.plain(&tools().cli);
    who.apply(&mut c);
    c.args(["run", "--workspace"])
        .arg(&f.ws)
        .arg("--audit")
        .arg(&f.audit);
    c.args(["--", "sh", "-c", "printf %s \"$EXECGUARD_POLICY\""]);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn a_sealed_process_asks_nothing_the_snapshot_answers() {
    if Command::new("strace").arg("-V").output().is_err() {
        skip("strace is not installed (scripts/test installs it)");
        return;
    }
    for who in identities() {
        let f = Fixture::for_user("exec-snapshot", who);
        who.own(&f.ws);
        who.own(&f.base);
        let chain = chain(&f);
        let policy = session_policy(&f, &who);
        let parsed = execguard_policy::Policy::parse(policy.as_bytes()).unwrap();
        let asked_paths: Vec<String> = parsed
            .runtimes()
            .flat_map(|rt| [rt.path, rt.wrapper])
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        assert!(
            parsed
                .runtimes()
                .all(|rt| rt.path_id().is_some() && rt.wrapper_id().is_some()),
            "{}: the session's policy carries every runtime's identities:\n{policy}",
            who.label()
        );
        let lib = s(&tools().lib).to_string();
        let expected = |named: &str| {
            let path = named.split_once(' ').map_or("", |(_, p)| p);
            path == lib
                || path == "/etc/ld.so.cache"
                || path.starts_with("/lib/x86_64-linux-gnu/libc.so")
                || path.starts_with("/usr/lib/x86_64-linux-gnu/libc.so")
                || path == "/etc/ld.so.preload"
                || path == "/etc/execguard/policy.toml"
                || path == s(&chain)
        };

        let n = HOPS.to_string();
        let sealed = hops(
            &traced(&f, &who, NAMING, &in_session(&f, &chain), &[]),
            s(&chain),
        );
        assert_eq!(sealed.len(), HOPS, "{}: {sealed:?}", who.label());
        for (i, hop) in sealed.iter().enumerate() {
            let unexpected: Vec<_> = hop.iter().filter(|c| !expected(c)).collect();
            assert!(
                unexpected.is_empty(),
                "{}: hop {i} asks what the snapshot answers or the floor does not ask: {unexpected:?}\nall: {hop:?}",
                who.label()
            );
            assert!(
                !hop.iter()
                    .any(|c| asked_paths.iter().any(|p| c.ends_with(&format!(" {p}")))),
                "{}: hop {i} asks about a runtime or wrapper: {hop:?}",
                who.label()
            );
            // Whatever a process must still ask, it asks once: the policy file and the target.
            for one in ["/etc/execguard/policy.toml", s(&chain)] {
                let times = hop
                    .iter()
                    .filter(|c| c.ends_with(&format!(" {one}")))
                    .count();
                assert!(
                    times <= 1,
                    "{}: hop {i} asks {one} {times} times: {hop:?}",
                    who.label()
                );
            }
        }

        // The positive control: the same chain, the same policy without its identities
        // (the guard alone, no seal around it), asks about every runtime and wrapper.
        let without: String = policy
            .lines()
            .filter(|l| !l.starts_with("path_id = ") && !l.starts_with("wrapper_id = "))
            .map(|l| format!("{l}\n"))
            .collect();
        let env = [
            ("LD_PRELOAD", lib.as_str()),
            ("EXECGUARD_POLICY", without.as_str()),
        ];
        let control = hops(&traced(&f, &who, NAMING, &[s(&chain), &n], &env), s(&chain));
        assert_eq!(control.len(), HOPS, "{}: {control:?}", who.label());
        for hop in &control {
            for p in &asked_paths {
                assert!(
                    hop.iter().any(|c| c.ends_with(&format!(" {p}"))),
                    "{}: control: without the snapshot {p} should be asked: {hop:?}",
                    who.label()
                );
            }
        }
    }
}

/// Issue 31's budget, counted: a hop of a chain in a sealed session makes at most 8 system
/// calls more than the same hop under the empty preload floor (which costs what any preload
/// costs: the loader maps one more library). As root and as a non-root user.
#[test]
fn a_sealed_hop_makes_at_most_eight_calls_more_than_the_floor() {
    if Command::new("strace").arg("-V").output().is_err() {
        skip("strace is not installed (scripts/test installs it)");
        return;
    }
    for who in identities() {
        let f = Fixture::for_user("exec-snapshot-count", who);
        who.own(&f.ws);
        who.own(&f.base);
        let chain = chain(&f);
        let n = HOPS.to_string();
        let floor = s(support::floor_lib()).to_string();
        let floor_hops = calls_per_hop(
            &traced(
                &f,
                &who,
                "trace=all",
                &[s(&chain), &n],
                &[("LD_PRELOAD", &floor)],
            ),
            s(&chain),
        );
        let sealed = calls_per_hop(
            &traced(&f, &who, "trace=all", &in_session(&f, &chain), &[]),
            s(&chain),
        );
        assert_eq!(
            floor_hops.len(),
            HOPS,
            "{}: floor {floor_hops:?}",
            who.label()
        );
        assert_eq!(sealed.len(), HOPS, "{}: sealed {sealed:?}", who.label());
        let most = floor_hops.iter().max().unwrap() + 8;
        assert!(
            sealed.iter().all(|&n| n <= most),
            "{}: calls per hop in the session {sealed:?}, the floor's {floor_hops:?}: over the floor + 8",
            who.label()
        );
    }
}
