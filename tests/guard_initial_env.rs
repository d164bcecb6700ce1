//! Host mode takes its policy from the environment the process was *started* with, captured
//! when the guard loads (before the program's own code runs):
//! - a program that overwrites its initial environment area (perl's `$0` does) cannot forge a
//!   relaxed policy for its own execs;
//! - a process that cannot open its own `/proc/self/environ` (non-dumpable, as the git and node
//!   wrappers make themselves) still has its policy: `execguard run -- git` works for non-root
//!   users too.
//!
//! Each scenario runs as root and as a non-root user.

mod support;

use execguard_testkit::identities;
use std::path::Path;
use std::process::Command;
use support::*;

/// A perl script that rewrites its argv/environment area (via `$0`) so that the memory the
/// kernel shows as `/proc/self/environ` holds a breakglass policy, then execs the workspace
/// payload. The guard must keep the policy it was started with.
#[test]
fn a_program_that_rewrites_its_environment_area_cannot_relax_the_policy() {
    for who in identities() {
        let f = Fixture::new("initial-env-perl");
        who.own(&f.base);
        let script = f.ws.join("forge.pl");
        // The entries to forge, NUL-separated, in a file the script reads.
        let forged = f.ws.join("forged-environment");
        std::fs::write(
            &forged,
            format!(
                "EXECGUARD_POLICY=version = 1\nprofile = \"breakglass\"\nworkspace = \"{}\"\n\0LD_PRELOAD={}\0",
                s(&f.ws),
                s(&tools().lib)
            ),
        )
        .unwrap();
        // argv is ("/usr/bin/perl", script): the environment strings start right after them.
        std::fs::write(
            &script,
            format!(
                r#"my $offset = length("/usr/bin/perl") + 1 + length($0) + 1;
open(my $in, "<", "{forged}") or die "forged: $!";
my $entries = do {{ local $/; <$in> }};
$0 = "x" . ("\0" x ($offset - 1)) . $entries;
open(my $fh, "<", "/proc/self/environ") or die "environ: $!";
my $now = do {{ local $/; <$fh> }};
print "forged\n" if index($now, "breakglass") >= 0;
exec("./payload", "from-perl") or print "rc=", ($! + 0), "\n";
"#,
                forged = s(&forged),
            ),
        )
        .unwrap();
        who.own(&script);
        let mut cmd = f.guarded(&f.strict(), "/usr/bin/perl");
        cmd.arg(&script);
        let o = run(who.apply(&mut cmd));
        assert!(
            o.stdout.contains("forged"),
            "{}: the forge did not reach /proc/self/environ, so this test proves nothing\n{o}",
            who.label()
        );
        o.assert_denied("mutable_native");
        assert!(
            !o.ran(),
            "{}: the payload ran under a forged policy\n{o}",
            who.label()
        );
    }
}

/// `execguard run -- git|node` for every identity: the wrappers are non-dumpable, so their own
/// `/proc/self/environ` is root's; the guard must not need it.
#[test]
fn git_and_node_start_through_their_wrappers_for_every_user() {
    let cli = Path::new(env!("CARGO_BIN_EXE_execguard"));
    for f in ["libexecguard.so", "execguard-git", "execguard-node"] {
        let p = cli.parent().unwrap().join(f);
        assert!(
            p.is_file(),
            "{} is missing: build the whole workspace first",
            p.display()
        );
    }
    for who in identities() {
        let f = Fixture::new("initial-env-wrappers");
        who.own(&f.base);
        for (tool, want) in [("git", "git version"), ("node", "v")] {
            let mut cmd = Command::new(cli);
            cmd.arg("run")
                .arg("--workspace")
                .arg(&f.ws)
                .arg("--")
                .arg(tool)
                .arg("--version")
                .current_dir(&f.ws);
            let out = who.apply(&mut cmd).output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.starts_with(want),
                "{}: execguard run -- {tool} --version: {}\nstdout: {stdout}\nstderr: {}",
                who.label(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
