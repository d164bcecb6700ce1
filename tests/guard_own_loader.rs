//! Programs with a loader of their own (valgrind, qemu-user, ...) map the program named in
//! their arguments without exec'ing it, so neither the kernel's exec checks nor the seal see
//! it. The guard treats them as it treats the dynamic loader: the program argument may not be
//! an ELF file from a mutable root. The list is the policy's `own_loaders` (with a default).

mod support;

use execguard_testkit::{identities, Identity};
use support::*;

const VALGRIND: &str = "/usr/bin/valgrind";

fn valgrind(f: &Fixture, who: &Identity, policy: &str, args: &[&str]) -> Outcome {
    let mut cmd = f.guarded(policy, VALGRIND);
    cmd.arg("-q").arg("--tool=none").args(args);
    run(who.apply(&mut cmd))
}

#[test]
fn valgrind_does_not_load_a_workspace_elf() {
    for who in identities() {
        let f = Fixture::new("own-loader");
        f.for_identity(&who);
        // The fixture is real: without the guard valgrind runs the workspace ELF.
        let mut plain = f.plain(VALGRIND);
        plain.args(["-q", "--tool=none", "./payload"]);
        let o = run(who.apply(&mut plain));
        assert!(o.ran(), "{}: fixture\n{o}", who.label());

        for program in ["./payload", s(&f.payload)] {
            let o = valgrind(&f, &who, &f.strict(), &[program]);
            o.assert_denied("mutable_native");
        }
        // Found on PATH, as valgrind looks a bare name up.
        let mut cmd = f.guarded(&f.strict(), VALGRIND);
        let path = format!("{}:{}", s(&f.ws), f.path_var().to_str().unwrap());
        cmd.env("PATH", path).args(["-q", "--tool=none", "payload"]);
        run(who.apply(&mut cmd)).assert_denied("mutable_native");

        // A system program with workspace files as its arguments keeps working.
        let o = valgrind(&f, &who, &f.strict(), &[s(&f.sys_argv), s(&f.payload)]);
        o.assert_ran();

        // The list is the policy's: an empty one names no program.
        let none = f.policy("strict", "own_loaders = []\n");
        let o = valgrind(&f, &who, &none, &["./payload"]);
        o.assert_ran();
    }
}
