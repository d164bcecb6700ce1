//! The execute side's snapshot: the identities of the protected runtimes and their wrappers,
//! learned once by `execguard run` at start and carried in the session's policy text
//! (`path_id`, `wrapper_id`), so that no process under the seal asks them again on every exec.
//! The guard honours them only under the seal and outside the write set
//! (`execguard_policy::RuntimeIds::resolve` says why that makes them safe).

use anyhow::{Context as _, Result};
use execguard_policy::Policy;
use std::os::unix::fs::MetadataExt;

/// `text` with the identity of each `[[runtime]]`'s path and wrapper after its `wrapper` line,
/// for the files that exist now (a missing one stays asked, as without the snapshot).
pub fn carry(text: String) -> Result<String> {
    let policy = Policy::parse(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("policy_invalid: the session's policy: {e}"))?;
    let ids: Vec<String> = policy
        .runtimes()
        .map(|rt| {
            let id = |key: &str, path: &[u8]| {
                let path = std::path::Path::new(
                    <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path),
                );
                std::fs::metadata(path)
                    .map(|m| {
                        let dir = if m.is_dir() { "/" } else { "" };
                        format!("{key} = \"{}:{}{dir}\"\n", m.dev(), m.ino())
                    })
                    .unwrap_or_default()
            };
            id("path_id", rt.path) + &id("wrapper_id", rt.wrapper)
        })
        .collect();
    let mut out = String::with_capacity(text.len() + ids.iter().map(String::len).sum::<usize>());
    let mut next = ids.iter();
    let mut in_runtime = false;
    for line in text.split_inclusive('\n') {
        out.push_str(line);
        if line.starts_with("[[runtime]]") {
            in_runtime = true;
        } else if in_runtime && line.starts_with("wrapper = ") {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(next.next().map_or("", String::as_str));
            in_runtime = false;
        }
    }
    // The engine is the one judge of what a policy means: never hand out text it refuses.
    let carried = Policy::parse(out.as_bytes())
        .map_err(|e| {
            anyhow::anyhow!("policy_invalid: the session's policy with its identities: {e}")
        })
        .context("execute-side snapshot")?;
    anyhow::ensure!(
        carried.runtimes().count() == ids.len() && next.next().is_none(),
        "policy_invalid: the session's policy lists its runtimes in a form the snapshot does not know"
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_runtime_gets_the_identities_a_stat_gives_now() {
        let text = "version = 1\nseal = true\n\n[[runtime]]\nname = \"sh\"\npath = \"/bin/sh\"\nwrapper = \"/usr/bin/env\"\n\n[[runtime]]\nname = \"gone\"\npath = \"/nonexistent/x\"\nwrapper = \"/usr/bin\"\n".to_string();
        let out = carry(text).unwrap();
        let policy = Policy::parse(out.as_bytes()).unwrap();
        let rts: Vec<_> = policy.runtimes().collect();
        let sh = std::fs::metadata("/bin/sh").unwrap();
        let id = rts[0].path_id().unwrap();
        assert_eq!((id.dev, id.ino, id.dir), (sh.dev(), sh.ino(), false));
        assert!(rts[0].wrapper_id().is_some());
        assert_eq!(rts[1].path_id(), None, "a missing file carries nothing");
        assert!(
            rts[1].wrapper_id().unwrap().dir,
            "a directory is marked as one"
        );
    }
}
