//! The managed provider home under `/state/agent-home`.
//!
//! Baselines shipped in the image (`<baselines>/<agent>/...`) are mirrored into the home, then
//! the workspace instruction files are appended to the provider's instruction file:
//!
//! | agent | imported from the workspace | into |
//! | --- | --- | --- |
//! | codex | `AGENTS.md` | `.codex/AGENTS.md` |
//! | claude | `AGENTS.md`, `CLAUDE.md` | `.claude/CLAUDE.md` |
//! | gemini | `AGENTS.md`, `GEMINI.md` | `.gemini/GEMINI.md` |
//! | copilot | nothing | |
//!
//! No path is ever followed through a symlink and nothing is checked by name and then used by
//! name: every directory is opened with `O_DIRECTORY|O_NOFOLLOW` relative to its parent's fd,
//! every source file with `O_NOFOLLOW|O_NONBLOCK` and checked with `fstat` on the open fd, and
//! every target is written to a fresh `O_EXCL` temporary in the target directory's fd and
//! renamed over the target (a planted symlink is replaced, never written through). A symlink in
//! the shipped baselines is an error; one in the workspace is skipped and reported.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use crate::paths::Paths;
use crate::session::Agent;
use crate::sys;

const MAX_DEPTH: usize = 8;
const MAX_FILE: usize = 1 << 20;

/// Failure to build the home.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HomeError {
    #[error("failed to open {what}: {source}")]
    Open { what: String, source: io::Error },
    #[error("failed to write {what}: {source}")]
    Write { what: String, source: io::Error },
    #[error("baseline entry {what} is neither a regular file nor a directory")]
    BaselineEntry { what: String },
    #[error("baseline tree is deeper than {MAX_DEPTH}")]
    TooDeep,
}

impl HomeError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Open { .. } => "home_open_failed",
            Self::Write { .. } => "home_write_failed",
            Self::BaselineEntry { .. } => "home_baseline_invalid",
            Self::TooDeep => "home_baseline_too_deep",
        }
    }
}

/// What was built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HomeReport {
    pub files_seeded: usize,
    pub imported: Vec<String>,
    /// Workspace instruction files that were not imported (symlink, not regular, too large).
    pub skipped: Vec<String>,
}

/// `(workspace files, target dir, target file)` for each agent.
pub fn instruction_import(
    agent: Agent,
) -> Option<(&'static [&'static str], &'static str, &'static str)> {
    match agent {
        Agent::Codex => Some((&["AGENTS.md"], ".codex", "AGENTS.md")),
        Agent::Claude => Some((&["AGENTS.md", "CLAUDE.md"], ".claude", "CLAUDE.md")),
        Agent::Gemini => Some((&["AGENTS.md", "GEMINI.md"], ".gemini", "GEMINI.md")),
        Agent::Copilot => None,
    }
}

struct Ctx {
    owner: Option<(u32, u32)>,
    report: HomeReport,
}

fn open_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> HomeError {
    let what = what.into();
    move |source| HomeError::Open { what, source }
}

fn write_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> HomeError {
    let what = what.into();
    move |source| HomeError::Write { what, source }
}

/// Creates (or opens) directory `name` in `parent`, mode 0700, owned by `owner`.
fn make_dir(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    owner: Option<(u32, u32)>,
    what: &str,
) -> Result<OwnedFd, HomeError> {
    sys::mkdirat(parent, name, 0o700).map_err(write_err(what))?;
    let fd = sys::open_dir_at(parent, name).map_err(open_err(what))?;
    if let Some((uid, gid)) = owner {
        sys::fchown(fd.as_fd(), uid, gid).map_err(write_err(what))?;
    }
    sys::fchmod(fd.as_fd(), 0o700).map_err(write_err(what))?;
    Ok(fd)
}

fn list_dir(dir: &OwnedFd) -> io::Result<Vec<OsString>> {
    // Reading a directory through /proc/self/fd of our own open fd: the fd pins the directory,
    // so a rename of the path cannot swap it.
    let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(dir));
    let mut names: Vec<OsString> = std::fs::read_dir(path)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<io::Result<_>>()?;
    names.sort();
    Ok(names)
}

fn copy_tree(
    src: &OwnedFd,
    dst: &OwnedFd,
    depth: usize,
    rel: &str,
    ctx: &mut Ctx,
) -> Result<(), HomeError> {
    if depth > MAX_DEPTH {
        return Err(HomeError::TooDeep);
    }
    for name in list_dir(src).map_err(open_err(format!("baseline {rel}")))? {
        let what = format!("{rel}/{}", name.to_string_lossy());
        let fd =
            sys::openat(src.as_fd(), &name, libc::O_RDONLY | libc::O_NONBLOCK, 0).map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    HomeError::BaselineEntry { what: what.clone() }
                } else {
                    HomeError::Open {
                        what: what.clone(),
                        source: e,
                    }
                }
            })?;
        let meta = sys::fstat(&fd).map_err(open_err(what.clone()))?;
        if meta.is_dir() {
            let sub = make_dir(dst.as_fd(), &name, ctx.owner, &what)?;
            copy_tree(&fd, &sub, depth + 1, &what, ctx)?;
        } else if meta.file_type().is_file() {
            let bytes = sys::read_limited(fd, MAX_FILE).map_err(open_err(what.clone()))?;
            let new = sys::NewFile {
                mode: 0o600,
                owner: ctx.owner,
                no_replace: false,
            };
            sys::write_atomic_at(dst.as_fd(), &name, &bytes, new).map_err(write_err(what))?;
            ctx.report.files_seeded += 1;
        } else {
            return Err(HomeError::BaselineEntry { what });
        }
    }
    Ok(())
}

/// Reads a workspace instruction file if it is a regular file reached without symlinks.
fn read_workspace_file(
    ws: Option<&OwnedFd>,
    name: &str,
    report: &mut HomeReport,
) -> Option<Vec<u8>> {
    let ws = ws?;
    let fd = match sys::openat(
        ws.as_fd(),
        OsStr::new(name),
        libc::O_RDONLY | libc::O_NONBLOCK,
        0,
    ) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return None,
        Err(_) => {
            report.skipped.push(name.to_owned());
            return None;
        }
    };
    match sys::fstat(&fd) {
        Ok(m) if m.file_type().is_file() => {}
        _ => {
            report.skipped.push(name.to_owned());
            return None;
        }
    }
    match sys::read_limited(fd, MAX_FILE) {
        Ok(bytes) => {
            report.imported.push(name.to_owned());
            Some(bytes)
        }
        Err(_) => {
            report.skipped.push(name.to_owned());
            None
        }
    }
}

/// Builds the provider home and `/state/tmp`. `owner` is the mapped user when running as root
/// (files are chowned before they become visible); `None` when already running as that user.
pub fn seed_home(
    paths: &Paths,
    agent: Agent,
    owner: Option<(u32, u32)>,
) -> Result<HomeReport, HomeError> {
    let state = sys::open_dir_nofollow(&paths.state)
        .map_err(open_err(paths.state.display().to_string()))?;
    let mut ctx = Ctx {
        owner,
        report: HomeReport::default(),
    };
    let home = make_dir(state.as_fd(), OsStr::new("agent-home"), owner, "agent-home")?;
    make_dir(state.as_fd(), OsStr::new("tmp"), owner, "tmp")?;

    let baseline = match sys::open_dir_nofollow(&paths.baselines.join(agent.as_str())) {
        Ok(fd) => Some(fd),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
        Err(source) => {
            return Err(HomeError::Open {
                what: format!("baseline {agent}"),
                source,
            })
        }
    };
    if let Some(b) = &baseline {
        copy_tree(b, &home, 0, "", &mut ctx)?;
    }

    if let Some((sources, dir, file)) = instruction_import(agent) {
        let ws = sys::open_dir_nofollow(&paths.workspace).ok();
        let mut text: Vec<u8> = Vec::new();
        // The shipped instruction file (if any) comes first; it was already copied above.
        if let Some(b) = &baseline {
            let shipped = sys::open_dir_at(b.as_fd(), OsStr::new(dir))
                .and_then(|d| {
                    sys::openat(
                        d.as_fd(),
                        OsStr::new(file),
                        libc::O_RDONLY | libc::O_NONBLOCK,
                        0,
                    )
                })
                .and_then(|fd| sys::read_limited(fd, MAX_FILE));
            if let Ok(bytes) = shipped {
                text.extend_from_slice(&bytes);
            }
        }
        for src in sources {
            if let Some(bytes) = read_workspace_file(ws.as_ref(), src, &mut ctx.report) {
                if !text.is_empty() && !text.ends_with(b"\n\n") {
                    text.extend_from_slice(if text.ends_with(b"\n") {
                        b"\n"
                    } else {
                        b"\n\n"
                    });
                }
                text.extend_from_slice(
                    format!("<!-- imported from /workspace/{src} -->\n").as_bytes(),
                );
                text.extend_from_slice(&bytes);
            }
        }
        if !text.is_empty() {
            let target = make_dir(home.as_fd(), OsStr::new(dir), owner, dir)?;
            let new = sys::NewFile {
                mode: 0o600,
                owner,
                no_replace: false,
            };
            sys::write_atomic_at(target.as_fd(), OsStr::new(file), &text, new)
                .map_err(write_err(format!("{dir}/{file}")))?;
        }
    }
    Ok(ctx.report)
}

/// True if `name` is safe as a single path component (used by tests and callers).
pub fn is_plain_component(name: &OsStr) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.as_bytes().contains(&b'/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn layout(tag: &str) -> Paths {
        let d = std::env::temp_dir().join(format!("execguard-home-{tag}-{}", std::process::id()));
        let _ignored = std::fs::remove_dir_all(&d);
        let p = Paths::under(&d);
        std::fs::create_dir_all(&p.state).unwrap();
        std::fs::create_dir_all(&p.workspace).unwrap();
        std::fs::create_dir_all(p.baselines.join("claude/.claude")).unwrap();
        std::fs::write(
            p.baselines.join("claude/.claude/settings.json"),
            b"{\"managed\":true}",
        )
        .unwrap();
        std::fs::write(
            p.baselines.join("claude/.claude/CLAUDE.md"),
            b"# Managed rules\n",
        )
        .unwrap();
        std::fs::write(p.workspace.join("AGENTS.md"), b"agents text\n").unwrap();
        std::fs::write(p.workspace.join("CLAUDE.md"), b"claude text\n").unwrap();
        p
    }

    #[test]
    fn baselines_are_copied_and_instructions_imported_for_claude() {
        let p = layout("claude");
        let r = seed_home(&p, Agent::Claude, Some((4242, 4343))).unwrap();
        assert_eq!(r.imported, ["AGENTS.md", "CLAUDE.md"]);
        let home = p.agent_home();
        assert_eq!(
            std::fs::read(home.join(".claude/settings.json")).unwrap(),
            b"{\"managed\":true}"
        );
        let md = std::fs::read_to_string(home.join(".claude/CLAUDE.md")).unwrap();
        assert!(md.starts_with("# Managed rules\n"), "{md}");
        assert!(
            md.contains("agents text") && md.contains("claude text"),
            "{md}"
        );
        for f in [
            home.clone(),
            home.join(".claude"),
            home.join(".claude/CLAUDE.md"),
            p.agent_tmp(),
        ] {
            let m = std::fs::metadata(&f).unwrap();
            assert_eq!((m.uid(), m.gid()), (4242, 4343), "{f:?}");
            assert_eq!(m.mode() & 0o077, 0, "{f:?} private");
        }
        std::fs::remove_dir_all(&p.root).unwrap();
    }

    #[test]
    fn each_agent_imports_its_own_files() {
        let cases = [
            (Agent::Codex, Some(".codex/AGENTS.md"), &["AGENTS.md"][..]),
            (
                Agent::Gemini,
                Some(".gemini/GEMINI.md"),
                &["AGENTS.md", "GEMINI.md"][..],
            ),
            (Agent::Copilot, None, &[][..]),
        ];
        for (agent, target, want) in cases {
            let p = layout(agent.as_str());
            std::fs::write(p.workspace.join("GEMINI.md"), b"gemini text\n").unwrap();
            let r = seed_home(&p, agent, None).unwrap();
            assert_eq!(r.imported, want, "{agent}");
            if let Some(t) = target {
                let text = std::fs::read_to_string(p.agent_home().join(t)).unwrap();
                assert!(text.contains("agents text"), "{agent}: {text}");
                assert!(!text.contains("claude text"), "{agent}: {text}");
            } else {
                assert_eq!(std::fs::read_dir(p.agent_home()).unwrap().count(), 0);
            }
            std::fs::remove_dir_all(&p.root).unwrap();
        }
    }

    #[test]
    fn symlinks_are_never_followed() {
        let p = layout("links");
        let secret = p.root.join("secret");
        std::fs::write(&secret, b"host secret").unwrap();
        // A workspace instruction file that is a symlink is skipped, not read.
        std::fs::remove_file(p.workspace.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(&secret, p.workspace.join("AGENTS.md")).unwrap();
        // A pre-planted symlink at a target is replaced, not written through.
        std::fs::create_dir_all(p.agent_home().join(".claude")).unwrap();
        std::os::unix::fs::symlink(&secret, p.agent_home().join(".claude/settings.json")).unwrap();
        let r = seed_home(&p, Agent::Claude, None).unwrap();
        assert_eq!(r.skipped, ["AGENTS.md"]);
        assert_eq!(std::fs::read(&secret).unwrap(), b"host secret");
        let md = std::fs::read_to_string(p.agent_home().join(".claude/CLAUDE.md")).unwrap();
        assert!(!md.contains("host secret"));
        assert!(
            !std::fs::symlink_metadata(p.agent_home().join(".claude/settings.json"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // A symlinked home directory is refused outright.
        std::fs::remove_dir_all(p.agent_home()).unwrap();
        std::os::unix::fs::symlink(&p.root, p.agent_home()).unwrap();
        assert_eq!(
            seed_home(&p, Agent::Claude, None).unwrap_err().code(),
            "home_open_failed"
        );
        // A symlink inside the shipped baseline is an error.
        std::fs::remove_file(p.agent_home()).unwrap();
        std::os::unix::fs::symlink(&secret, p.baselines.join("claude/.claude/evil")).unwrap();
        assert_eq!(
            seed_home(&p, Agent::Claude, None).unwrap_err().code(),
            "home_baseline_invalid"
        );
        std::fs::remove_dir_all(&p.root).unwrap();
    }

    #[test]
    fn plain_components() {
        assert!(is_plain_component(OsStr::new("a.md")));
        for bad in ["", ".", "..", "a/b"] {
            assert!(!is_plain_component(OsStr::new(bad)), "{bad}");
        }
    }
}
