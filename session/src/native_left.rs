//! The hand-back of native code (docs/handback.md, *Native files*): an ELF executable or
//! shared object (`.so`, `.so.N`, `.node`) the session created or changed in what outlives it
//! (esbuild in `node_modules`, a wheel's `.so` in a venv, cargo's `target/`) would run or be
//! loaded at the operator's next ordinary command outside any session (`npx esbuild`,
//! `python3 -c 'import orjson'`, `./target/debug/app`). At the session's end each one is made
//! not to run outside: its execute bits cleared (the kernel refuses to execute a file with
//! none, root included) and, for a shared object, renamed to `<name>.execguard-off` in its
//! own directory (the loader, Python and Node find it by name: a mode does not stop `mmap`).
//! Each is recorded in the workspace's `.execguard-quarantine/native-files`, and the next
//! session there puts back those still identical (device, inode, size, status change time:
//! the time nobody can set) where its own end sweeps again, so the build loop goes on across
//! sessions; what it puts back is changed at that session's start, so its end disarms it
//! again.
//!
//! The record sits in the workspace: what it says only re-arms, for a session, an ELF file in
//! that session's lasting write set with the identity it names, which that session's end
//! disarms again; a record the session forged gains it nothing it could not do inside.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The suffix a disarmed shared object gets.
pub const OFF_SUFFIX: &str = ".execguard-off";
/// The workspace's record, under its quarantine directory.
const RECORD: &str = ".execguard-quarantine/native-files";
/// How many paths the notice names.
const NOTICE_PATHS: usize = 5;

/// One file disarmed: where it is now, and what puts it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disarmed {
    /// Its name before (a shared object's is now `<path>.execguard-off`).
    pub path: PathBuf,
    pub renamed: bool,
    /// Its mode before.
    pub mode: u32,
    /// After disarming: device, inode, size, status change time (s, ns).
    identity: (u64, u64, u64, i64, i64),
}

impl Disarmed {
    fn now_at(&self) -> PathBuf {
        if self.renamed {
            off_name(&self.path)
        } else {
            self.path.clone()
        }
    }
}

fn off_name(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(OFF_SUFFIX);
    PathBuf::from(s)
}

fn identity(m: &std::fs::Metadata) -> (u64, u64, u64, i64, i64) {
    (m.dev(), m.ino(), m.size(), m.ctime(), m.ctime_nsec())
}

/// A name the loader, Python or Node loads a shared object by.
fn shared_object_name(name: &[u8]) -> bool {
    name.ends_with(b".so")
        || name.ends_with(b".node")
        || name.windows(4).any(|w| w == b".so.") && !name.ends_with(OFF_SUFFIX.as_bytes())
}

/// Does the changed regular file `path` (`m`, its metadata) hold native code that would run
/// or load outside? Only files with an execute bit or a shared object's name are read (four
/// bytes: the ELF magic).
fn is_native(path: &Path, m: &std::fs::Metadata) -> bool {
    let name = path.file_name().map_or(&[][..], |n| n.as_bytes());
    if m.mode() & 0o111 == 0 && !shared_object_name(name) {
        return false;
    }
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut head = [0u8; 4];
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"\x7fELF")
}

/// Disarms `path` when it is native (see the module): `None` when it is not, or could not be.
pub fn disarm(path: &Path, m: &std::fs::Metadata) -> Option<Disarmed> {
    if !is_native(path, m) {
        return None;
    }
    let mode = m.mode() & 0o7777;
    let name = path.file_name().map_or(&[][..], |n| n.as_bytes());
    let renamed = shared_object_name(name);
    if mode & 0o111 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & !0o111)).ok()?;
    }
    let now_at = if renamed {
        let off = off_name(path);
        // Never over a file of that name (the session may have put one there): the shared
        // object keeps its name and only its mode says it is off, which stops no loader.
        if std::fs::symlink_metadata(&off).is_ok() || std::fs::rename(path, &off).is_err() {
            eprintln!(
                "execguard: warning: native_left: cannot rename {} aside: inspect it before loading it outside a session",
                path.display()
            );
            return None;
        }
        off
    } else {
        path.to_path_buf()
    };
    let after = std::fs::symlink_metadata(&now_at).ok()?;
    Some(Disarmed {
        path: path.to_path_buf(),
        renamed,
        mode,
        identity: identity(&after),
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn line(d: &Disarmed) -> Option<String> {
    let (dev, ino, size, cs, cn) = d.identity;
    Some(format!(
        "{} {:o} {dev} {ino} {size} {cs} {cn} {}\n",
        u8::from(d.renamed),
        d.mode,
        hex(d.path.as_os_str().as_bytes())
    ))
}

fn parse(l: &str) -> Option<Disarmed> {
    let f: Vec<&str> = l.split(' ').collect();
    let [renamed, mode, dev, ino, size, cs, cn, path] = f[..] else {
        return None;
    };
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(&unhex(path)?));
    let mut parts = path.components();
    if parts.next() != Some(std::path::Component::RootDir)
        || parts.any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    Some(Disarmed {
        path,
        renamed: renamed == "1",
        mode: u32::from_str_radix(mode, 8).ok()? & 0o777,
        identity: (
            dev.parse().ok()?,
            ino.parse().ok()?,
            size.parse().ok()?,
            cs.parse().ok()?,
            cn.parse().ok()?,
        ),
    })
}

/// Adds `disarmed` to the workspace's record (its quarantine directory made if need be, never
/// through a link).
pub fn record(workspace: &Path, disarmed: &[Disarmed]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let lines: String = disarmed.iter().filter_map(line).collect();
    if lines.is_empty() {
        return;
    }
    let dir = workspace.join(".execguard-quarantine");
    // Made by a root supervisor (the image's PID 1), the record is the workspace owner's: the
    // operator can remove the workspace.
    let owner = std::fs::symlink_metadata(workspace)
        .ok()
        .map(|m| (m.uid(), m.gid()));
    if std::fs::symlink_metadata(&dir).is_err() && std::fs::create_dir(&dir).is_ok() {
        if let Some((u, g)) = owner {
            let _ = std::os::unix::fs::lchown(&dir, Some(u), Some(g));
        }
    }
    let written = std::fs::symlink_metadata(&dir).and_then(|m| {
        if !m.is_dir() {
            return Err(std::io::Error::other("not a directory"));
        }
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(workspace.join(RECORD))?;
        if let Some((u, g)) = owner {
            let _ = std::os::unix::fs::fchown(&f, Some(u), Some(g));
        }
        f.write_all(lines.as_bytes())
    });
    if let Err(e) = written {
        eprintln!(
            "execguard: warning: native_left: cannot record the disarmed files in {} ({e}): the next session will not put them back",
            workspace.join(RECORD).display()
        );
    }
}

/// At a session's start in `workspace`: puts back each file of the workspace's record still
/// as it was disarmed (an ELF file of the recorded identity, in one of `roots` (what this
/// session's end sweeps again) and not in `skip`, with no link on the way), and empties the
/// record (what is not put back stays off: someone changed it, it is gone, or this session
/// cannot write there). Returns the files put back.
pub fn rearm(workspace: &Path, roots: &[PathBuf], skip: &[PathBuf]) -> Vec<PathBuf> {
    let record = workspace.join(RECORD);
    let Ok(text) = read_nofollow(&record) else {
        return Vec::new();
    };
    let _ = std::fs::remove_file(&record);
    let mut back = Vec::new();
    for d in text.lines().filter_map(parse) {
        let at = d.now_at();
        let swept_again = at
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .is_some_and(|p| Some(p.as_path()) == at.parent() && swept_from(&p, roots, skip));
        let Ok(m) = std::fs::symlink_metadata(&at) else {
            continue;
        };
        if !swept_again || !m.is_file() || identity(&m) != d.identity || !elf(&at) {
            continue;
        }
        if d.renamed
            && (std::fs::symlink_metadata(&d.path).is_ok()
                || std::fs::rename(&at, &d.path).is_err())
        {
            continue;
        }
        let _ = std::fs::set_permissions(&d.path, std::fs::Permissions::from_mode(d.mode));
        back.push(d.path);
    }
    back
}

/// Does the end's sweep reach `dir`: beneath a root, with no skipped directory between the
/// two (the walk starts at each root and leaves out only what is skipped beneath it, so a
/// workspace kept real under a home the layer covers is swept, though the home is skipped).
fn swept_from(dir: &Path, roots: &[PathBuf], skip: &[PathBuf]) -> bool {
    roots
        .iter()
        .any(|r| dir.starts_with(r) && !skip.iter().any(|s| s.starts_with(r) && dir.starts_with(s)))
}

fn read_nofollow(p: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut s = String::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(p)?
        .take(64 << 20)
        .read_to_string(&mut s)?;
    Ok(s)
}

fn elf(p: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"\x7fELF")
}

/// The one-line notice for the operator, or `None` when nothing was disarmed.
pub fn notice(disarmed: &[Disarmed]) -> Option<String> {
    let first = disarmed.first()?;
    let so = disarmed.iter().filter(|d| d.renamed).count();
    let mut names: Vec<String> = disarmed
        .iter()
        .take(NOTICE_PATHS)
        .map(|d| d.path.display().to_string())
        .collect();
    if disarmed.len() > NOTICE_PATHS {
        names.push(format!("and {} more", disarmed.len() - NOTICE_PATHS));
    }
    Some(format!(
        "execguard: native_left: {} native file(s) the session built or downloaded will not run outside a session ({} executable(s): execute bits cleared; {so} shared object(s): renamed to NAME{OFF_SUFFIX}): {}; the next session in this workspace puts back those unchanged; to run one outside, review it, then `chmod +x {}`{}; each one: `execguard audit`",
        disarmed.len(),
        disarmed.len() - so,
        names.join(", "),
        first.path.display(),
        if so > 0 { format!(" (a shared object: `mv NAME{OFF_SUFFIX} NAME`)") } else { String::new() },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elf_executable_and_shared_object_are_disarmed_and_come_back_unchanged() {
        let d = crate::test_dirs::tmp("native-left");
        let elf = std::fs::read("/bin/true").unwrap();
        let exe = d.join("app");
        let so = d.join("m.cpython-311-x86_64-linux-gnu.so");
        let script = d.join("run.sh");
        for (p, b) in [(&exe, &elf[..]), (&so, &elf[..]), (&script, b"#!/bin/sh\n")] {
            std::fs::write(p, b).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let all: Vec<Disarmed> = [&exe, &so, &script]
            .into_iter()
            .filter_map(|p| disarm(p, &std::fs::symlink_metadata(p).unwrap()))
            .collect();
        assert_eq!(all.len(), 2, "{all:?}");
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&exe), 0o644);
        assert!(!so.exists() && off_name(&so).exists());
        assert_eq!(mode(&script), 0o755, "a script is not native");
        record(&d, &all);
        let line = notice(&all).unwrap();
        assert!(
            line.contains("2 native file(s)") && line.contains("chmod +x"),
            "{line}"
        );
        let roots = [d.clone()];
        assert!(
            rearm(&d, &[], &[]).is_empty(),
            "not where the session's end sweeps"
        );
        record(&d, &all);
        assert_eq!(rearm(&d, &roots, &[]), vec![exe.clone(), so.clone()]);
        assert_eq!((mode(&exe), mode(&so)), (0o755, 0o755));
        assert!(!d.join(RECORD).exists());
        // A file changed since (here by the operator) is not put back.
        let again = disarm(&exe, &std::fs::symlink_metadata(&exe).unwrap()).unwrap();
        record(&d, &[again]);
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(rearm(&d, &roots, &[]).is_empty());
        assert_eq!(mode(&exe), 0o600);
        // A workspace kept real beneath a skipped home (the home layer covers it) is swept
        // from its own root: put back; a skipped directory beneath the root is not.
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let again = disarm(&exe, &std::fs::symlink_metadata(&exe).unwrap()).unwrap();
        record(&d, &[again]);
        let home = d.parent().unwrap().to_path_buf();
        assert_eq!(rearm(&d, &roots, &[home]), vec![exe.clone()]);
        let again = disarm(&exe, &std::fs::symlink_metadata(&exe).unwrap()).unwrap();
        record(&d, &[again]);
        assert!(rearm(&d, &roots, std::slice::from_ref(&d)).is_empty());
        // A forged line with `..` or a relative path is refused.
        assert!(parse(&format!("0 755 1 2 3 4 5 {}", hex(b"/w/../x"))).is_none());
        assert!(parse(&format!("0 755 1 2 3 4 5 {}", hex(b"x"))).is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
