//! Test-only helpers shared by every crate's tests (a dev-dependency: never in a shipped
//! binary).
//!
//! The project's users are mostly not root, and every behaviour that depends on identity,
//! ownership or `/proc` differs between the two. So tests run their scenarios as each
//! [`Identity`] in [`identities`]: the current user, and, when that is root, a non-root user
//! this kit creates (`useradd`) on first use.
//!
//! Skips are loud (one `SKIP:` line on stderr) and never happen under `CI=true`: there a
//! missing prerequisite fails the test.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The non-root account the tests use when they run as root.
pub const TEST_USER: &str = "execguard-test";

/// A user the tests can run commands as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

/// Who a scenario runs as.
#[derive(Clone, Copy, Debug)]
pub enum Identity {
    /// The user running the tests (root in CI).
    Current,
    /// A non-root user (created by this kit when the tests run as root).
    User(&'static User),
}

impl Identity {
    pub fn is_root(&self) -> bool {
        match self {
            Identity::Current => is_root(),
            Identity::User(u) => u.uid == 0,
        }
    }

    pub fn uid(&self) -> u32 {
        match self {
            // SAFETY: getuid has no preconditions and cannot fail.
            Identity::Current => unsafe { libc::getuid() },
            Identity::User(u) => u.uid,
        }
    }

    pub fn gid(&self) -> u32 {
        match self {
            // SAFETY: getgid has no preconditions and cannot fail.
            Identity::Current => unsafe { libc::getgid() },
            Identity::User(u) => u.gid,
        }
    }

    /// The home directory (`$HOME` of the tests for the current user).
    pub fn home(&self) -> PathBuf {
        match self {
            Identity::Current => PathBuf::from(std::env::var_os("HOME").unwrap_or("/root".into())),
            Identity::User(u) => u.home.clone(),
        }
    }

    /// A short label for assertion messages.
    pub fn label(&self) -> String {
        match self {
            Identity::Current if is_root() => "root".into(),
            Identity::Current => format!("uid {}", self.uid()),
            Identity::User(u) => format!("{} (uid {})", u.name, u.uid),
        }
    }

    /// Makes `cmd` run as this identity: uid, gid, no supplementary groups, `USER` and
    /// `LOGNAME` of that user, and a `HOME` and an `XDG_RUNTIME_DIR` of this test's own
    /// ([`Identity::own_dirs`]), never the user's real home or the runtime dir every test of
    /// the user would share (`/tmp/execguard-UID`): a session writes its exec-dir record, its
    /// home layers and its shims there. The XDG base variables the command does not name are
    /// removed, so nothing leads back to the real ones. A `HOME` or `XDG_RUNTIME_DIR` the
    /// command names already is kept when the directory is this identity's.
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        if let Identity::User(u) = self {
            // std drops the supplementary groups itself when root sets a uid.
            cmd.uid(u.uid)
                .gid(u.gid)
                .env("USER", &u.name)
                .env("LOGNAME", &u.name);
        }
        let named: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = cmd
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
            .collect();
        for var in [
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_DATA_HOME",
            "XDG_CACHE_HOME",
        ] {
            if !named.iter().any(|(k, _)| k == var) {
                cmd.env_remove(var);
            }
        }
        // A directory the test named already is kept when it is this identity's (a fixture's
        // own, given to it); one it could not use (root's fixture home, for the non-root
        // user) is replaced like the inherited one.
        let its_own = |var: &str| {
            named.iter().any(|(k, v)| {
                use std::os::unix::fs::MetadataExt;
                k == var
                    && v.as_ref()
                        .and_then(|v| std::fs::metadata(v).ok())
                        .is_some_and(|m| m.is_dir() && m.uid() == self.uid())
            })
        };
        let (home, runtime) = self.own_dirs();
        if !its_own("HOME") {
            cmd.env("HOME", home);
        }
        if !its_own("XDG_RUNTIME_DIR") {
            cmd.env("XDG_RUNTIME_DIR", runtime);
        }
        cmd
    }

    /// This identity's home and runtime dir for the running test (`HOME`, `XDG_RUNTIME_DIR`):
    /// made on first use under the cargo target directory's `tmp/kit` (outside every
    /// built-in mutable root), one pair per test process, test and identity, owned by the
    /// identity (the runtime dir 0700, as `/run/user/UID` is).
    pub fn own_dirs(&self) -> (PathBuf, PathBuf) {
        let test = std::thread::current()
            .name()
            .unwrap_or("main")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect::<String>();
        let base = kit_dir()
            .join(format!("{}-{}", std::process::id(), self.uid()))
            .join(test);
        let (home, runtime) = (base.join("home"), base.join("runtime"));
        for d in [&home, &runtime] {
            if !d.is_dir() {
                std::fs::create_dir_all(d)
                    .unwrap_or_else(|e| panic!("cannot make {}: {e}", d.display()));
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
                self.own(d);
            }
        }
        (home, runtime)
    }

    /// Gives `path` (recursively) to this identity, so it can write there as its owner.
    pub fn own(&self, path: &Path) {
        if let Identity::User(u) = self {
            chown_tree(path, u.uid, u.gid);
        }
    }
}

/// `<cargo target dir>/tmp/kit` (a test binary is `<target>/<profile>/deps/<name>`), every
/// directory on the way traversable by the non-root user.
fn kit_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("a test binary lies in <target>/<profile>/deps");
    let dir = target.join("tmp/kit");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
    dir
}

/// The identities every identity-dependent scenario runs as: the current user and, when the
/// tests run as root, a non-root user. When the tests run as a non-root user, root cannot be
/// tested: that is said once, loudly (and under `CI=true`, which runs as root, cannot happen).
pub fn identities() -> Vec<Identity> {
    let mut out = vec![Identity::Current];
    if is_root() {
        out.push(Identity::User(non_root_user()));
    } else {
        skip("the root half of identity-dependent tests (the tests are not running as root)");
    }
    out
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// True under CI (`CI=true`), where nothing may be skipped.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| v == "true" || v == "1")
}

/// The file every skip is appended to (`scripts/test` sets it and counts its lines).
pub const SKIP_LOG_VAR: &str = "EXECGUARD_SKIP_LOG";

/// Says loudly that `what` is skipped; under CI a skip is a failure. The test runner hides a
/// passing test's stderr, so the skip is also appended to the file `$EXECGUARD_SKIP_LOG` names
/// (one line: the test binary, the test, the reason), which `scripts/test` reports at its end.
pub fn skip(what: &str) {
    assert!(!in_ci(), "CI=true: {what} must not be skipped");
    eprintln!("SKIP: {what}");
    if let Some(log) = std::env::var_os(SKIP_LOG_VAR) {
        record_skip(Path::new(&log), what);
    }
}

/// Appends the skip of `what` by the running test to `log`.
fn record_skip(log: &Path, what: &str) {
    let line = skip_line(what);
    // One write of one line with O_APPEND: concurrent test binaries never interleave.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    if let Err(e) = written {
        panic!("cannot record the skip in {}: {e}", log.display());
    }
}

/// `<test binary>\t<test>\t<reason>\n`: the binary as cargo names it in its `Running` line
/// (`guard_race-<hash>`), the test as libtest names its thread.
fn skip_line(what: &str) -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "?".into());
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let one_line = |s: &str| s.replace(['\t', '\n'], " ");
    format!(
        "{}\t{}\t{}\n",
        one_line(&binary),
        one_line(test),
        one_line(what)
    )
}

/// Returns true when running as root; otherwise says loudly that `what` is skipped (a
/// contributor without root), and under CI fails.
pub fn require_root(what: &str) -> bool {
    if is_root() {
        return true;
    }
    skip(&format!("{what}: needs root"));
    false
}

/// The non-root test user, created with `useradd` on first use (the tests must be root to
/// call this; [`identities`] only does when they are).
pub fn non_root_user() -> &'static User {
    static USER: OnceLock<User> = OnceLock::new();
    USER.get_or_init(|| {
        assert!(is_root(), "creating the test user needs root");
        if let Some(u) = lookup(TEST_USER) {
            return u;
        }
        // Test binaries run in parallel: serialise account creation with a lock file, and
        // look again once we hold it.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open("/run/execguard-testkit.lock")
            .expect("cannot open the test-user lock file");
        // SAFETY: the fd is open for as long as `lock` lives; flock has no memory effects.
        let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
        assert_eq!(rc, 0, "flock: {}", std::io::Error::last_os_error());
        if let Some(u) = lookup(TEST_USER) {
            return u;
        }
        let status = Command::new("useradd")
            .args([
                "--create-home",
                "--shell",
                "/bin/sh",
                "--user-group",
                TEST_USER,
            ])
            .status()
            .expect("cannot run useradd (Debian package passwd)");
        assert!(status.success(), "useradd {TEST_USER} failed: {status}");
        lookup(TEST_USER).expect("useradd succeeded but the user cannot be found")
    })
}

/// Looks a user up in the password database.
pub fn lookup(name: &str) -> Option<User> {
    let c = CString::new(name).ok()?;
    let mut pw: libc::passwd = unsafe_zeroed_passwd();
    let mut buf = vec![0 as libc::c_char; 16384];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer refers to live, writable memory of the stated size, and `c` is
    // NUL-terminated; getpwnam_r writes only into `pw` and `buf`.
    let rc = unsafe {
        libc::getpwnam_r(
            c.as_ptr(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() {
        return None;
    }
    // SAFETY: on success pw_dir points at a NUL-terminated string inside `buf`.
    let home = unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) };
    Some(User {
        name: name.to_string(),
        uid: pw.pw_uid,
        gid: pw.pw_gid,
        home: PathBuf::from(std::ffi::OsStr::new(
            std::str::from_utf8(home.to_bytes()).ok()?,
        )),
    })
}

fn unsafe_zeroed_passwd() -> libc::passwd {
    // SAFETY: passwd is a plain C struct of integers and pointers; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// `chown -R uid:gid path` (symlinks themselves, never their targets).
pub fn chown_tree(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
        .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            chown_tree(&entry.path(), uid, gid);
        }
    }
}

/// A fresh directory owned by `who`, under a parent every user can traverse (`/tmp` is a
/// mutable root, so scenarios that need a non-mutable place pass their own `parent`).
pub fn dir_for(who: &Identity, parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    who.own(&dir);
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line `scripts/test` reads: this binary as cargo's `Running` line names it, this
    /// test as its `test ... ok` line names it, the reason on one line.
    #[test]
    fn a_skip_is_recorded_with_the_binary_and_the_test() {
        let log = std::env::temp_dir().join(format!("execguard-kit-skips-{}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        record_skip(&log, "first\treason");
        record_skip(&log, "second\nreason");
        let text = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        let binary = std::env::current_exe().unwrap();
        let binary = binary.file_name().unwrap().to_str().unwrap();
        let test = "tests::a_skip_is_recorded_with_the_binary_and_the_test";
        assert_eq!(
            text,
            format!("{binary}\t{test}\tfirst reason\n{binary}\t{test}\tsecond reason\n")
        );
    }

    /// Every identity gets a home and a runtime dir of this test's own, its own by owner and
    /// never the user's real home; a later `HOME` wins, and XDG variables the command names
    /// stay.
    #[test]
    fn each_test_gets_its_own_home_and_runtime_dir() {
        let real_home = std::env::var_os("HOME").map(PathBuf::from);
        for who in identities() {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "echo \"$HOME|$XDG_RUNTIME_DIR|${XDG_STATE_HOME-unset}|${XDG_CONFIG_HOME-unset}\"; stat -c %u \"$HOME\" \"$XDG_RUNTIME_DIR\"; stat -c %a \"$XDG_RUNTIME_DIR\""])
                .env("XDG_CONFIG_HOME", "/named/config");
            // Inherited from the tests' environment: removed (std's environment lock orders
            // this against the other tests' spawns).
            std::env::set_var("XDG_STATE_HOME", "/real/state");
            let out = who.apply(&mut cmd).output().unwrap();
            std::env::remove_var("XDG_STATE_HOME");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            let fields: Vec<&str> = lines[0].split('|').collect();
            let (home, runtime) = who.own_dirs();
            assert_eq!(fields[0], home.to_str().unwrap(), "{}", who.label());
            assert_eq!(fields[1], runtime.to_str().unwrap(), "{}", who.label());
            assert_eq!(fields[2], "unset", "{}: {text}", who.label());
            assert_eq!(fields[3], "/named/config", "{}: {text}", who.label());
            assert!(
                home.ends_with(format!(
                    "{}/home",
                    "tests__each_test_gets_its_own_home_and_runtime_dir"
                )),
                "{}",
                home.display()
            );
            assert_ne!(Some(&home), real_home.as_ref());
            if let Identity::User(u) = who {
                assert_ne!(home, u.home);
            }
            let owner = who.uid().to_string();
            assert_eq!(
                &lines[1..],
                [owner.as_str(), owner.as_str(), "700"],
                "{}",
                who.label()
            );
            // Named before, and this identity's: kept; named before but another's: replaced.
            let mut named = Command::new("sh");
            named.args(["-c", "echo $XDG_RUNTIME_DIR"]);
            let theirs = home.join("named-runtime");
            std::fs::create_dir_all(&theirs).unwrap();
            who.own(&theirs);
            named.env("XDG_RUNTIME_DIR", &theirs);
            let got = who.apply(&mut named).output().unwrap().stdout;
            assert_eq!(
                String::from_utf8_lossy(&got).trim(),
                theirs.to_str().unwrap()
            );
            if let Identity::User(_) = who {
                let mut named = Command::new("sh");
                named.args(["-c", "echo $HOME"]).env("HOME", "/root");
                let got = who.apply(&mut named).output().unwrap().stdout;
                assert_eq!(String::from_utf8_lossy(&got).trim(), home.to_str().unwrap());
            }
            let mut later = Command::new("sh");
            later.args(["-c", "echo $HOME"]);
            who.apply(&mut later).env("HOME", "/elsewhere");
            assert_eq!(
                String::from_utf8_lossy(&later.output().unwrap().stdout),
                "/elsewhere\n"
            );
        }
    }

    #[test]
    fn the_non_root_identity_really_is_not_root() {
        for who in identities() {
            let mut cmd = Command::new("id");
            cmd.arg("-u");
            let out = who.apply(&mut cmd).output().unwrap();
            assert!(out.status.success());
            let uid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            assert_eq!(uid, who.uid(), "{}", who.label());
            assert_eq!(uid == 0, who.is_root(), "{}", who.label());
        }
        if is_root() {
            assert!(identities().iter().any(|w| !w.is_root()));
        }
    }
}
