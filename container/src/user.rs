//! The mapped user: passwd, group and shadow entries for the host uid/gid.
//!
//! Names are sanitised to `[a-z_][a-z0-9_-]{0,31}`; the shadow password is always locked (`!`),
//! never empty, and an existing entry that reuses the uid gets its empty password locked too.
//! Each file is rewritten atomically (temporary file + rename) keeping its owner and mode.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::paths::AGENT_HOME;
use crate::sys;

/// Login shell of the mapped user (providers run commands through it).
pub const MAPPED_SHELL: &str = "/bin/bash";

/// Turns any host user name into a safe passwd name (`agent` when nothing usable is left).
pub fn sanitize_user_name(raw: &str) -> String {
    let mut out = String::new();
    for c in raw.chars() {
        if out.len() == 32 {
            break;
        }
        let c = c.to_ascii_lowercase();
        let ok = c.is_ascii_lowercase()
            || c == '_'
            || (!out.is_empty() && (c.is_ascii_digit() || c == '-'));
        out.push(if ok { c } else { '_' });
    }
    let trimmed = out.trim_matches('_');
    if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_lowercase()) {
        return "agent".to_owned();
    }
    trimmed.to_owned()
}

/// What [`add_mapped_user`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappedUser {
    /// The passwd name that maps to the host uid.
    pub user: String,
    /// The group name that maps to the host gid.
    pub group: String,
    /// True when an entry was appended (false when an existing entry already had the uid).
    pub user_added: bool,
    pub group_added: bool,
}

/// Failure to add the mapped user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserError {
    #[error("failed to read {file}: {source}")]
    Read {
        file: &'static str,
        source: io::Error,
    },
    #[error("failed to write {file}: {source}")]
    Write {
        file: &'static str,
        source: io::Error,
    },
    #[error("{file} is malformed")]
    Malformed { file: &'static str },
    #[error("no free name for uid/gid {id}")]
    NameTaken { id: u32 },
}

impl UserError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Read { .. } => "user_db_read_failed",
            Self::Write { .. } => "user_db_write_failed",
            Self::Malformed { .. } => "user_db_malformed",
            Self::NameTaken { .. } => "user_name_taken",
        }
    }
}

struct DbFile {
    text: String,
    uid: u32,
    gid: u32,
    mode: u32,
}

fn read_db(etc: &Path, file: &'static str) -> Result<Option<DbFile>, UserError> {
    let fd = match sys::open_nofollow(&etc.join(file), libc::O_RDONLY | libc::O_NONBLOCK, 0) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) && file == "shadow" => return Ok(None),
        Err(source) => return Err(UserError::Read { file, source }),
    };
    let meta = sys::fstat(&fd).map_err(|source| UserError::Read { file, source })?;
    if !meta.file_type().is_file() {
        return Err(UserError::Malformed { file });
    }
    let bytes =
        sys::read_limited(fd, 16 << 20).map_err(|source| UserError::Read { file, source })?;
    let text = String::from_utf8(bytes).map_err(|_| UserError::Malformed { file })?;
    Ok(Some(DbFile {
        text,
        uid: meta.uid(),
        gid: meta.gid(),
        mode: meta.mode() & 0o7777,
    }))
}

fn write_db(etc: &Path, file: &'static str, db: &DbFile, text: &str) -> Result<(), UserError> {
    let dir = sys::open_dir_nofollow(etc).map_err(|source| UserError::Write { file, source })?;
    let new = sys::NewFile {
        mode: db.mode,
        owner: Some((db.uid, db.gid)),
        no_replace: false,
    };
    sys::write_atomic_at(dir.as_fd(), file.as_ref(), text.as_bytes(), new)
        .map_err(|source| UserError::Write { file, source })
}

/// `(name, id)` of each entry (field 3 = id for passwd and group).
fn entries(text: &str, file: &'static str) -> Result<Vec<(String, u32)>, UserError> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut f = line.split(':');
        let name = f.next().ok_or(UserError::Malformed { file })?;
        let _password = f.next().ok_or(UserError::Malformed { file })?;
        let id = f
            .next()
            .and_then(|s| s.parse::<u32>().ok())
            .ok_or(UserError::Malformed { file })?;
        out.push((name.to_owned(), id));
    }
    Ok(out)
}

/// Picks the name for `id`: an existing entry with that id wins; else `wanted`, else `u<id>`.
fn choose_name(
    existing: &[(String, u32)],
    wanted: &str,
    id: u32,
) -> Result<(String, bool), UserError> {
    if let Some((name, _)) = existing.iter().find(|(_, i)| *i == id) {
        return Ok((name.clone(), false));
    }
    for candidate in [wanted.to_owned(), format!("u{id}")] {
        if !existing.iter().any(|(n, _)| *n == candidate) {
            return Ok((candidate, true));
        }
    }
    Err(UserError::NameTaken { id })
}

fn append_line(text: &str, line: &str) -> String {
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(line);
    out.push('\n');
    out
}

/// Ensures the shadow entry of `user` exists with a locked password; empty or missing
/// password fields become `!`. Returns `None` when nothing changes.
fn lock_shadow(text: &str, user: &str) -> Option<String> {
    let mut changed = false;
    let mut found = false;
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines() {
        let mut fields: Vec<&str> = line.split(':').collect();
        if fields.first() == Some(&user) {
            found = true;
            if fields.len() < 2 {
                fields.push("!");
                changed = true;
            } else if fields[1].is_empty() {
                fields[1] = "!";
                changed = true;
            }
        }
        out.push_str(&fields.join(":"));
        out.push('\n');
    }
    if !found {
        return Some(append_line(text, &format!("{user}:!:::::::")));
    }
    changed.then_some(out)
}

/// Adds (or reuses) passwd/group/shadow entries for `uid`/`gid` under `etc`.
pub fn add_mapped_user(
    etc: &Path,
    wanted: &str,
    uid: u32,
    gid: u32,
) -> Result<MappedUser, UserError> {
    let wanted = sanitize_user_name(wanted);

    let group_db = read_db(etc, "group")?.ok_or(UserError::Malformed { file: "group" })?;
    let (group, group_added) = choose_name(&entries(&group_db.text, "group")?, &wanted, gid)?;
    if group_added {
        let text = append_line(&group_db.text, &format!("{group}:x:{gid}:"));
        write_db(etc, "group", &group_db, &text)?;
    }

    let passwd_db = read_db(etc, "passwd")?.ok_or(UserError::Malformed { file: "passwd" })?;
    let (user, user_added) = choose_name(&entries(&passwd_db.text, "passwd")?, &wanted, uid)?;
    if user_added {
        let line =
            format!("{user}:x:{uid}:{gid}:execguard mapped user:{AGENT_HOME}:{MAPPED_SHELL}");
        write_db(
            etc,
            "passwd",
            &passwd_db,
            &append_line(&passwd_db.text, &line),
        )?;
    }

    if let Some(shadow_db) = read_db(etc, "shadow")? {
        if let Some(text) = lock_shadow(&shadow_db.text, &user) {
            write_db(etc, "shadow", &shadow_db, &text)?;
        }
    }
    Ok(MappedUser {
        user,
        group,
        user_added,
        group_added,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn names_are_sanitised() {
        let cases = [
            ("alice", "alice"),
            ("Alice", "alice"),
            ("jane doe", "jane_doe"),
            ("root:x:0:0", "root_x_0_0"),
            ("1user", "user"),
            ("-rf", "rf"),
            ("ünïcode", "n_code"),
            ("", "agent"),
            ("____", "agent"),
            ("123", "agent"),
            ("a\nb", "a_b"),
            ("user.name-2", "user_name-2"),
            (
                "abcdefghijklmnopqrstuvwxyz0123456789",
                "abcdefghijklmnopqrstuvwxyz012345",
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(sanitize_user_name(raw), want, "{raw:?}");
        }
    }

    fn temp_etc(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("execguard-user-{tag}-{}", std::process::id()));
        let _ignored = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("passwd"),
            "root:x:0:0:root:/root:/bin/bash\nnode:x:1000:1000::/home/node:/bin/bash\n",
        )
        .unwrap();
        std::fs::write(d.join("group"), "root:x:0:\nnode:x:1000:\n").unwrap();
        std::fs::write(
            d.join("shadow"),
            "root:*:19000:0:99999:7:::\nnode::19000:0:99999:7:::\n",
        )
        .unwrap();
        std::fs::set_permissions(d.join("shadow"), std::fs::Permissions::from_mode(0o640)).unwrap();
        d
    }

    #[test]
    fn a_new_uid_gets_locked_entries_and_files_keep_their_mode() {
        let etc = temp_etc("new");
        let m = add_mapped_user(&etc, "Jane", 4242, 4343).unwrap();
        assert_eq!(
            m,
            MappedUser {
                user: "jane".into(),
                group: "jane".into(),
                user_added: true,
                group_added: true
            }
        );
        let passwd = std::fs::read_to_string(etc.join("passwd")).unwrap();
        assert!(
            passwd
                .ends_with("jane:x:4242:4343:execguard mapped user:/state/agent-home:/bin/bash\n"),
            "{passwd}"
        );
        let group = std::fs::read_to_string(etc.join("group")).unwrap();
        assert!(group.ends_with("jane:x:4343:\n"));
        let shadow = std::fs::read_to_string(etc.join("shadow")).unwrap();
        assert!(shadow.lines().any(|l| l == "jane:!:::::::"), "{shadow}");
        assert_eq!(
            std::fs::metadata(etc.join("shadow")).unwrap().mode() & 0o777,
            0o640
        );
        // Idempotent: a second run reuses the entries.
        let again = add_mapped_user(&etc, "Jane", 4242, 4343).unwrap();
        assert!(!again.user_added && !again.group_added);
        assert_eq!(std::fs::read_to_string(etc.join("passwd")).unwrap(), passwd);
        std::fs::remove_dir_all(&etc).unwrap();
    }

    #[test]
    fn an_existing_uid_is_reused_and_its_empty_password_locked() {
        let etc = temp_etc("reuse");
        let m = add_mapped_user(&etc, "someone", 1000, 1000).unwrap();
        assert_eq!((m.user.as_str(), m.user_added), ("node", false));
        let shadow = std::fs::read_to_string(etc.join("shadow")).unwrap();
        assert!(
            shadow.lines().any(|l| l == "node:!:19000:0:99999:7:::"),
            "{shadow}"
        );
        assert!(
            !shadow.lines().any(|l| l.split(':').nth(1) == Some("")),
            "no empty password: {shadow}"
        );
        std::fs::remove_dir_all(&etc).unwrap();
    }

    #[test]
    fn a_taken_name_falls_back_to_the_numeric_name() {
        let etc = temp_etc("taken");
        let m = add_mapped_user(&etc, "root", 5000, 5000).unwrap();
        assert_eq!((m.user.as_str(), m.group.as_str()), ("u5000", "u5000"));
        std::fs::remove_dir_all(&etc).unwrap();
    }

    #[test]
    fn a_symlinked_passwd_is_refused() {
        let etc = temp_etc("link");
        std::fs::rename(etc.join("passwd"), etc.join("passwd.real")).unwrap();
        std::os::unix::fs::symlink(etc.join("passwd.real"), etc.join("passwd")).unwrap();
        assert_eq!(
            add_mapped_user(&etc, "x", 5000, 5000).unwrap_err().code(),
            "user_db_read_failed"
        );
        std::fs::remove_dir_all(&etc).unwrap();
    }
}
