//! Criterion benches for the decision paths, in process (no exec): what the guard adds to an
//! exec before the kernel is asked. The end-to-end cost (real processes, plain vs floor vs
//! guard) is measured by `benches/harness`.
//!
//! Run: `cargo bench --bench decide` (results in target/criterion; figures in benches/results).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use execguard_os::LibcSys;
use execguard_policy::{decide, shebang, Context, Policy, Request, RuntimeIds, Target};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;

fn policy_text(workspace: &str) -> String {
    format!(
        "version = 1\nprofile = \"strict\"\nworkspace = \"{workspace}\"\nmutable_roots = [\"/cache\"]\n\n[[runtime]]\nname = \"git\"\npath = \"/usr/bin/git\"\nwrapper = \"/usr/local/bin/execguard-git\"\n"
    )
}

fn write_file(path: &std::path::Path, bytes: &[u8]) {
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn benches(c: &mut Criterion) {
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let text = policy_text(ws_path.to_str().unwrap());
    let elf = ws_path.join("payload");
    std::fs::copy("/bin/true", &elf).unwrap();
    let script = ws_path.join("build.sh");
    write_file(&script, b"#!/bin/sh\nexit 0\n");
    let nested = ws_path.join("nested.sh");
    write_file(&nested, format!("#!{}\n", script.display()).as_bytes());

    c.bench_function("policy/parse (cold part of the first exec)", |b| {
        b.iter(|| Policy::parse(black_box(text.as_bytes())).unwrap())
    });
    c.bench_function("shebang/parse", |b| {
        let buf = shebang::pad(b"#!/usr/bin/env -S node --experimental-vm-modules\n");
        b.iter(|| shebang::parse(black_box(&buf)))
    });

    let policy = Policy::parse(text.as_bytes()).unwrap();
    let mut sys = LibcSys;
    let runtimes = RuntimeIds::resolve(&mut sys, &policy);
    let ctx = Context {
        policy: &policy,
        runtimes: &runtimes,
        self_lib: None,
        memo: None,
    };
    let env: Vec<&[u8]> = vec![
        b"PATH=/usr/local/bin:/usr/bin:/bin",
        b"HOME=/root",
        b"LANG=C.UTF-8",
    ];
    let cases: [(&str, Vec<u8>); 4] = [
        ("decide/allow system ELF (warm)", b"/bin/true".to_vec()),
        (
            "decide/deny workspace ELF",
            elf.as_os_str().as_encoded_bytes().to_vec(),
        ),
        (
            "decide/allow workspace #!/bin/sh script",
            script.as_os_str().as_encoded_bytes().to_vec(),
        ),
        (
            "decide/allow nested #! chain",
            nested.as_os_str().as_encoded_bytes().to_vec(),
        ),
    ];
    for (name, path) in &cases {
        let argv: Vec<&[u8]> = vec![path.as_slice(), b"arg"];
        c.bench_function(name, |b| {
            b.iter(|| {
                let req = Request {
                    target: Target::Path(path),
                    given_name: None,
                    argv: &argv[..],
                    envp: &env[..],
                };
                decide(&mut sys, &ctx, black_box(&req))
            })
        });
    }

    let reader = execguard_wrappers::StaticConfig(Vec::new());
    let git_ctx = execguard_wrappers::GitContext {
        reader: &reader,
        shim: Default::default(),
        internal_child: false,
    };
    let git_env: Vec<(OsString, OsString)> = vec![("PATH".into(), "/usr/bin:/bin".into())];
    let commit: Vec<OsString> = ["commit", "-q", "-m", "message"]
        .iter()
        .map(OsString::from)
        .collect();
    let bypass: Vec<OsString> = ["commit", "--no-verif", "-m", "x"]
        .iter()
        .map(OsString::from)
        .collect();
    c.bench_function("wrapper/git commit (allowed)", |b| {
        b.iter(|| {
            execguard_wrappers::check_git_with(black_box(&commit), &git_env, ws.path(), &git_ctx)
        })
    });
    c.bench_function("wrapper/git commit --no-verif (refused)", |b| {
        b.iter(|| {
            execguard_wrappers::check_git_with(black_box(&bypass), &git_env, ws.path(), &git_ctx)
        })
    });
    let node_args: Vec<OsString> = ["--enable-source-maps", "app.js", "-e"]
        .iter()
        .map(OsString::from)
        .collect();
    c.bench_function("wrapper/node app.js (allowed)", |b| {
        b.iter(|| execguard_wrappers::node::check_node(black_box(&node_args)))
    });
}

criterion_group!(decision, benches);
criterion_main!(decision);
