//! A file holding only `#!` (an empty interpreter name) gets the kernel's own answer, `EACCES`,
//! with no refusal line (issue 13 item 7): the guard used to answer `ENOENT`.

mod support;

use support::*;

#[test]
fn an_empty_interpreter_gets_the_kernels_eacces() {
    let f = Fixture::new("empty-interp");
    let p = f.strict();
    for (dir, name, content) in [
        (&f.sys, "only-hashbang", &b"#!"[..]),
        (&f.sys, "hashbang-blank-nul", b"#! \0x\n"),
        (&f.ws, "ws-only-hashbang", b"#!"),
    ] {
        let file = dir.join(name);
        f.write_exec(&file, content);
        // The kernel's answer, without the guard.
        let plain = run(f.plain(&tools().probe).args(["execve", s(&file)]));
        plain.assert_exec_failed(EACCES);
        let o = f.probe(&p, ["execve", s(&file)]);
        o.assert_exec_failed(EACCES);
        assert!(
            o.denials().is_empty(),
            "the kernel's answer is not a refusal\n{o}"
        );
    }
}
