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
