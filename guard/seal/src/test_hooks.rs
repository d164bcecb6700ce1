//! The test hooks of a session's start (test builds only): a pause and a redirect at a named
//! step, as another process writing the same directories could make them.

#[cfg(any(test, feature = "test-hooks"))]
use std::path::Path;

/// Test hook, `STEP:DIR:TARGET`: at `STEP` of a session's start (`partition`: in the CLI, after
/// its checks, before the partition is built; `noexec`: right after the mount table is read
/// for the `noexec` pass; `rules`: after the Landlock grants are listed, before they are
/// opened), move `DIR` aside (to `DIR-moved`) and put a symlink to `TARGET` in its place
/// (`=SOURCE` for `TARGET`: the directory `SOURCE` moved there), as another process writing
/// the same directory could at that moment (test builds only).
#[cfg(any(test, feature = "test-hooks"))]
pub const REDIRECT_ENV: &str = "EXECGUARD_TEST_REDIRECT";

/// The test hooks (`EXECGUARD_TEST_PAUSE`, then `EXECGUARD_TEST_REDIRECT`) at `step`; does nothing outside
/// test builds (callers outside this crate need not know which build they are in).
pub fn test_hooks_at(step: &str) {
    #[cfg(not(any(test, feature = "test-hooks")))]
    let _ = step;
    #[cfg(any(test, feature = "test-hooks"))]
    run_test_hooks(step);
}

/// Test hook, `STEP:FILE`: at `STEP` (as for [`REDIRECT_ENV`]), create `FILE.ready` and wait
/// until `FILE` exists (10 s at most), so that a test can change names from outside the
/// session's namespace at that moment, as another session would (test builds only).
#[cfg(any(test, feature = "test-hooks"))]
pub const PAUSE_ENV: &str = "EXECGUARD_TEST_PAUSE";

#[cfg(any(test, feature = "test-hooks"))]
fn run_test_hooks(step: &str) {
    if let Some((at, file)) = std::env::var(PAUSE_ENV)
        .ok()
        .as_deref()
        .and_then(|v| v.split_once(':'))
        .filter(|(at, _)| *at == step)
        .map(|(at, f)| (at.to_string(), f.to_string()))
    {
        std::fs::write(format!("{file}.ready"), at)
            .unwrap_or_else(|e| panic!("{PAUSE_ENV}: {file}.ready: {e}"));
        for _ in 0..1000 {
            if Path::new(&file).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    let Ok(value) = std::env::var(REDIRECT_ENV) else {
        return;
    };
    let mut parts = value.splitn(3, ':');
    let (Some(at), Some(dir), Some(target)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("{REDIRECT_ENV}={value}: want STEP:DIR:TARGET");
    };
    if at == step {
        std::fs::rename(dir, format!("{dir}-moved"))
            .and_then(|()| match target.strip_prefix('=') {
                Some(source) => std::fs::rename(source, dir),
                None => std::os::unix::fs::symlink(target, dir),
            })
            .unwrap_or_else(|e| panic!("{REDIRECT_ENV}={value}: {e}"));
    }
}
