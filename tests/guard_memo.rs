//! The guard's memory of immutable exec targets (`execguard_policy::memo`) never answers for a
//! file that changed: a sealed session's process that has started a system program several
//! times (so the guard remembers it) and then finds it rewritten in place, or replaced, as a
//! script whose interpreter is a workspace ELF, is refused. (A real seal keeps such files
//! read-only to the session; the change here stands for a process outside it.) As root and
//! as a non-root user.

mod support;

use execguard_testkit::identities;
use support::*;

#[test]
fn a_remembered_program_that_changed_is_decided_again() {
    let memo = compile(&support_dir(), "memo.c", "memo", &[]);
    for who in identities() {
        let f = Fixture::new("memo");
        f.for_identity(&who);
        let sealed = f.policy("strict", "seal = true\n");
        let mut failed = vec![];
        for (way, through_link) in [
            ("rewrite", false),
            ("rename", false),
            ("rewrite", true),
            ("rename", true),
        ] {
            let name = format!("{way}-{through_link}");
            let mut prog = f.sys.join(format!("prog-{name}"));
            copy(&tools().argv, &prog);
            if through_link {
                // Started by a name through a symlink outside the write set (`/bin/sh`-like).
                let link = f.sys.join(format!("link-{name}"));
                std::os::unix::fs::symlink(&prog, &link).unwrap();
                prog = link;
            }
            let new = f.sys.join(format!("new-{name}"));
            f.write_exec(&new, format!("#!{}\n", s(&f.payload)).as_bytes());
            // The change is made by the measured process itself, standing in for one outside
            // the session: give the directory to `who`.
            who.own(&f.sys);
            let mut cmd = f.guarded(&sealed, &memo);
            cmd.arg(way).arg(&prog).arg(&new).arg("4");
            let o = run(who.apply(&mut cmd));
            let line = o.stdout.lines().find(|l| l.starts_with("MEMO "));
            let want = format!("MEMO before=4 after=-{}", libc::EACCES);
            if line != Some(want.as_str()) || !o.has_denial("mutable_native") {
                failed.push(format!("{} {name}: want {want:?}\n{o}", who.label()));
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }
}

/// Threads deciding at once (posix_spawn in some, vfork + execve in others, which write the
/// memo from a child sharing the parent's memory) each get the answer the file deserves:
/// more names than the memo has slots, programs that run and a script whose interpreter is
/// a workspace ELF, which never does.
#[test]
fn threads_and_vfork_children_sharing_the_memo_get_every_answer_right() {
    let program = compile(&support_dir(), "memo_threads.c", "memo_threads", &[]);
    for who in identities() {
        let f = Fixture::new("memo-threads");
        f.for_identity(&who);
        let sealed = f.policy("strict", "seal = true\n");
        let mut args = vec![];
        for i in 0..6 {
            let prog = f.sys.join(format!("prog-{i}"));
            copy(&tools().argv, &prog);
            let link = f.sys.join(format!("link-{i}"));
            std::os::unix::fs::symlink(&prog, &link).unwrap();
            args.push(format!("+{}", s(&prog)));
            args.push(format!("+{}", s(&link)));
        }
        let bad = f.sys.join("bad");
        f.write_exec(&bad, format!("#!{}\n", s(&f.payload)).as_bytes());
        args.push(format!("-{}", s(&bad)));
        let mut cmd = f.guarded(&sealed, &program);
        cmd.arg("8").arg("20").args(&args);
        let o = run(who.apply(&mut cmd));
        let want = format!("THREADS ok={} wrong=0", 8 * 20 * 3 * args.len());
        assert!(
            o.stdout.lines().any(|l| l == want),
            "{}: want {want:?}\n{o}",
            who.label()
        );
    }
}
