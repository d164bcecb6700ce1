//! One exec plan: the PATH search is written once in the engine, and the guard's `execvp`,
//! `posix_spawnp`, `execguard run` and `execguard check` agree on it. With `PATH=<ws>/bin:...`
//! and `ls` in both places, the workspace copy is refused and the search goes on to the
//! system's, as glibc's does after `EACCES` (a `noexec` mount answers the same way).

mod support;

use execguard_testkit::identities;
use support::*;

#[test]
fn every_entry_point_skips_a_refused_path_candidate_alike() {
    for who in identities() {
        let f = Fixture::new("exec-plan");
        f.for_identity(&who);
        let bin = f.ws.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        copy(&tools().argv, &bin.join("ls"));
        let path = format!("{}:/usr/bin:/bin", s(&bin));
        let mut failed = vec![];
        // The guard's own PATH searches.
        for entry in ["execvp", "execlp", "execvpe", "posix_spawnp"] {
            let mut cmd = f.guarded(&f.strict(), &tools().probe);
            cmd.env("PATH", &path).args([entry, "ls", "-d", "/"]);
            let o = run(who.apply(&mut cmd));
            if o.ran() || !o.stdout.lines().any(|l| l == "/") {
                failed.push(format!(
                    "{} {entry}: /usr/bin/ls did not run\n{o}",
                    who.label()
                ));
            }
        }
        // execguard run and check, from outside the guard.
        let cli = |verb: &str, rest: &[&str]| {
            let mut cmd = std::process::Command::new(&tools().cli);
            cmd.current_dir(&f.ws)
                .env("PATH", &path)
                .env_remove("LD_PRELOAD")
                .env_remove("EXECGUARD_POLICY")
                .arg(verb)
                .arg("--workspace")
                .arg(&f.ws)
                .args(rest);
            run(who.apply(&mut cmd))
        };
        let o = cli("run", &["--", "ls", "-d", "/"]);
        if o.code != Some(0) || o.ran() || !o.stdout.lines().any(|l| l == "/") {
            failed.push(format!(
                "{} execguard run: /usr/bin/ls did not run\n{o}",
                who.label()
            ));
        }
        let o = cli("check", &["--json", "--", "ls"]);
        if o.code != Some(0) || !o.stdout.contains("/usr/bin/ls") {
            failed.push(format!(
                "{} execguard check: not /usr/bin/ls\n{o}",
                who.label()
            ));
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }
}
