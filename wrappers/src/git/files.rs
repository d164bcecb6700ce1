//! The config files git reads, read by the wrapper itself (no `git config` child: that cost a
//! process per invocation), in git's order: global (`GIT_CONFIG_GLOBAL`, else
//! `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`), then the repository's `config` and
//! `config.worktree`. The system file is not read: the child gets `GIT_CONFIG_NOSYSTEM=1`.
//!
//! Includes are followed whatever their condition (`include.path`, every `includeIf`): a
//! condition this reader does not evaluate can only make it check more than git reads, never
//! less. The parser follows git's `config.c`; what git would reject is an error here too.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::config::ConfigEntry;
use super::repo;
use super::{ConfigReader, RepoSelection};
use crate::env::EnvView;

/// A config file larger than this is refused (`config_unreadable`) rather than read.
const MAX_CONFIG_FILE: u64 = 16 << 20;

/// git's `MAX_INCLUDE_DEPTH`.
const MAX_INCLUDE_DEPTH: usize = 10;

/// Reads git's config files for a repository selection.
#[derive(Debug, Clone, Default)]
pub struct FileConfig {
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    /// `GIT_CONFIG_GLOBAL`: replaces the global files.
    pub global: Option<PathBuf>,
}

impl FileConfig {
    /// The files as git would find them with this environment.
    pub fn from_env(env: &EnvView) -> Self {
        let path = |n: &str| env.get(n).filter(|v| !v.is_empty()).map(PathBuf::from);
        FileConfig {
            home: path("HOME"),
            xdg_config_home: path("XDG_CONFIG_HOME"),
            global: env.get("GIT_CONFIG_GLOBAL").map(PathBuf::from),
        }
    }

    fn global_files(&self) -> Vec<PathBuf> {
        if let Some(g) = &self.global {
            return vec![g.clone()];
        }
        let mut out = Vec::new();
        match (&self.xdg_config_home, &self.home) {
            (Some(x), _) => out.push(x.join("git/config")),
            (None, Some(h)) => out.push(h.join(".config/git/config")),
            (None, None) => {}
        }
        if let Some(h) = &self.home {
            out.push(h.join(".gitconfig"));
        }
        out
    }

    /// Every entry of `file` and the files it includes, in order.
    pub fn read_file(&self, file: &Path, out: &mut Vec<ConfigEntry>) -> Result<(), String> {
        self.read_at_depth(file, 0, out)
    }

    fn read_at_depth(
        &self,
        file: &Path,
        depth: usize,
        out: &mut Vec<ConfigEntry>,
    ) -> Result<(), String> {
        if depth > MAX_INCLUDE_DEPTH {
            return Err(format!(
                "{}: includes nested deeper than {MAX_INCLUDE_DEPTH}",
                file.display()
            ));
        }
        // `/dev/null` is the usual "no such config" (`GIT_CONFIG_GLOBAL=/dev/null`): empty.
        // Any other FIFO or device (`include.path = /dev/zero`) would hang or never end.
        if fs::canonicalize(file).is_ok_and(|p| p == Path::new("/dev/null")) {
            return Ok(());
        }
        match fs::metadata(file) {
            Ok(m) if !m.is_file() => return Err(format!("{}: not a regular file", file.display())),
            Ok(m) if m.len() > MAX_CONFIG_FILE => {
                return Err(format!(
                    "{}: larger than {MAX_CONFIG_FILE} bytes",
                    file.display()
                ))
            }
            _ => {}
        }
        let text = match fs::read(file) {
            Ok(t) => t,
            // git skips a missing file (and a missing include) silently.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(()),
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        let origin = file.display().to_string();
        let entries = parse_config_file(&text).map_err(|e| format!("{origin}: {e}"))?;
        for e in entries {
            let include = e.value.as_deref().filter(|_| is_include_key(&e.key));
            let path = include.map(|v| self.include_path(file, v));
            out.push(e.with_origin(&origin));
            if let Some(p) = path {
                self.read_at_depth(&p, depth + 1, out)?;
            }
        }
        Ok(())
    }

    /// An include path: `~/` is the home directory, a relative path is relative to the
    /// directory of the including file.
    fn include_path(&self, including: &Path, value: &str) -> PathBuf {
        if let (Some(rest), Some(h)) = (value.strip_prefix("~/"), &self.home) {
            return h.join(rest);
        }
        let p = Path::new(value);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            including.parent().unwrap_or(Path::new("/")).join(p)
        }
    }
}

fn is_include_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    lower == "include.path" || (lower.starts_with("includeif.") && lower.ends_with(".path"))
}

impl ConfigReader for FileConfig {
    fn read_config(&self, repo: &RepoSelection) -> Result<Vec<ConfigEntry>, String> {
        let mut out = Vec::new();
        for f in self.global_files() {
            self.read_file(&f, &mut out)?;
        }
        let (git_dir, common_dir) = match &repo.git_dir {
            Some(g) => {
                let common = repo
                    .common_dir
                    .clone()
                    .unwrap_or_else(|| repo::common_dir_of(g));
                (Some(g.clone()), Some(common))
            }
            None => match repo::discover(&repo.cwd) {
                Some(d) => (
                    Some(d.git_dir),
                    Some(repo.common_dir.clone().unwrap_or(d.common_dir)),
                ),
                None => (None, None),
            },
        };
        if let Some(c) = common_dir {
            self.read_file(&c.join("config"), &mut out)?;
        }
        if let Some(g) = git_dir {
            self.read_file(&g.join("config.worktree"), &mut out)?;
        }
        Ok(out)
    }
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    line: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// git's `get_next_char`: `\r\n` reads as `\n`, and the line count follows.
    fn next(&mut self) -> Option<u8> {
        let mut c = self.peek()?;
        self.i += 1;
        if c == b'\r' && self.peek() == Some(b'\n') {
            self.i += 1;
            c = b'\n';
        }
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn err(&self) -> String {
        format!("bad config line {}", self.line)
    }

    /// `[section]`, `[section "sub"]`, `[section.sub]` (legacy: the subsection lowercased).
    fn section(&mut self) -> Result<String, String> {
        let mut name = String::new();
        loop {
            let Some(c) = self.next() else {
                return Err(self.err());
            };
            match c {
                b']' => return Ok(name.to_ascii_lowercase()),
                c if c.is_ascii_whitespace() => return self.ext_section(name.to_ascii_lowercase()),
                c if is_name_char(c) || c == b'.' => name.push(c as char),
                _ => return Err(self.err()),
            }
        }
    }

    fn ext_section(&mut self, mut name: String) -> Result<String, String> {
        let mut c = self.next();
        while c.is_some_and(|c| c.is_ascii_whitespace()) {
            c = self.next();
        }
        if c != Some(b'"') {
            return Err(self.err());
        }
        name.push('.');
        let mut sub = Vec::new();
        loop {
            match self.next() {
                None | Some(b'\n') => return Err(self.err()),
                Some(b'"') => break,
                Some(b'\\') => match self.next() {
                    None | Some(b'\n') => return Err(self.err()),
                    Some(c) => sub.push(c),
                },
                Some(c) => sub.push(c),
            }
        }
        if self.next() != Some(b']') {
            return Err(self.err());
        }
        name.push_str(&String::from_utf8_lossy(&sub));
        Ok(name)
    }

    /// git's `parse_value`.
    fn value(&mut self) -> Result<String, String> {
        let mut out: Vec<u8> = Vec::new();
        let mut quote = false;
        let mut comment = false;
        let mut space = 0usize;
        loop {
            let Some(c) = self.next() else {
                if quote {
                    return Err(self.err());
                }
                break;
            };
            if c == b'\n' {
                if quote {
                    return Err(self.err());
                }
                break;
            }
            if comment {
                continue;
            }
            if c.is_ascii_whitespace() && !quote {
                if !out.is_empty() {
                    space += 1;
                }
                continue;
            }
            if !quote && (c == b';' || c == b'#') {
                comment = true;
                continue;
            }
            out.extend(std::iter::repeat_n(b' ', space));
            space = 0;
            match c {
                b'\\' => match self.next() {
                    Some(b'\n') => continue,
                    Some(b't') => out.push(b'\t'),
                    Some(b'b') => out.push(0x08),
                    Some(b'n') => out.push(b'\n'),
                    Some(c @ (b'\\' | b'"')) => out.push(c),
                    _ => return Err(self.err()),
                },
                b'"' => quote = !quote,
                c => out.push(c),
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Parse one config file's text (no includes followed): `section[.subsection].name` keys as
/// git canonicalises them (section and name lowercased), `None` for a bare boolean.
pub fn parse_config_file(text: &[u8]) -> Result<Vec<ConfigEntry>, String> {
    let mut p = Parser {
        s: text,
        i: 0,
        line: 1,
    };
    if p.s.starts_with(b"\xef\xbb\xbf") {
        p.i = 3;
    }
    let mut section: Option<String> = None;
    let mut out = Vec::new();
    let mut comment = false;
    while let Some(c) = p.next() {
        if c == b'\n' {
            comment = false;
            continue;
        }
        if comment || c.is_ascii_whitespace() {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            section = Some(p.section()?);
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return Err(p.err());
        }
        let Some(sec) = &section else {
            return Err(p.err());
        };
        let mut name = String::from(c.to_ascii_lowercase() as char);
        while p.peek().is_some_and(is_name_char) {
            name.push(p.next().unwrap_or(b'-').to_ascii_lowercase() as char);
        }
        while p.peek().is_some_and(|c| c == b' ' || c == b'\t') {
            p.next();
        }
        let key = format!("{sec}.{name}");
        match p.next() {
            None | Some(b'\n') => out.push(ConfigEntry::new(key, None)),
            Some(b'=') => {
                let v = p.value()?;
                out.push(ConfigEntry::new(key, Some(&v)));
            }
            Some(_) => return Err(p.err()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(entries: &[ConfigEntry]) -> Vec<(String, Option<String>)> {
        entries
            .iter()
            .map(|e| (e.key.clone(), e.value.clone()))
            .collect()
    }

    #[test]
    fn parses_like_git() {
        let text = b"\xef\xbb\xbf# c\n[Core]\n\tPager = less -R ; comment\n\tbare\n[remote \"Or\\\"ig\"]\n url = \"a b\" c\\\n  d \n[alias]\n\tx = \"!f() { echo \\\"#\\\"; }; f\"\n[a.B]\nk=v\r\n[e] k = \"\\t\\n\\\\\"\n";
        let got = kv(&parse_config_file(text).unwrap());
        let want: Vec<(String, Option<String>)> = vec![
            ("core.pager".into(), Some("less -R".into())),
            ("core.bare".into(), None),
            ("remote.Or\"ig.url".into(), Some("a b c  d".into())),
            ("alias.x".into(), Some("!f() { echo \"#\"; }; f".into())),
            ("a.b.k".into(), Some("v".into())),
            ("e.k".into(), Some("\t\n\\".into())),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn rejects_what_git_rejects() {
        for bad in [
            &b"k = v\n"[..],
            b"[core\n",
            b"[core]\n1x = v\n",
            b"[core]\nx = \"open\n",
            b"[core]\nx = a\\q\n",
            b"[s \"sub\n\"]\n",
            b"[core]\nx y\n",
            b"[core]\nbare # no comment after a bare name\n",
        ] {
            assert!(
                parse_config_file(bad).is_err(),
                "{:?} must be refused",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn includes_are_followed_whatever_their_condition() {
        let d = std::env::temp_dir().join(format!("eg-files-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("home/sub")).unwrap();
        let home = d.join("home");
        fs::write(
            home.join(".gitconfig"),
            "[user]\nname = a\n[include]\npath = sub/one\n[includeIf \"gitdir:/nowhere/\"]\npath = ~/two\n",
        )
        .unwrap();
        fs::write(
            home.join("sub/one"),
            "[core]\npager = x\n[include]\npath = missing\n",
        )
        .unwrap();
        fs::write(home.join("two"), "[core]\nfsmonitor = /bin/evil\n").unwrap();
        let r = FileConfig {
            home: Some(home.clone()),
            ..FileConfig::default()
        };
        let got = r
            .read_config(&RepoSelection {
                cwd: d.clone(),
                git_dir: None,
                common_dir: None,
            })
            .unwrap();
        let keys: Vec<&str> = got.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "user.name",
                "include.path",
                "core.pager",
                "include.path",
                "includeif.gitdir:/nowhere/.path",
                "core.fsmonitor"
            ]
        );
        assert_eq!(got[5].origin.as_deref(), home.join("two").to_str());
        // A loop is cut at git's depth limit, as git does.
        fs::write(home.join(".gitconfig"), "[include]\npath = .gitconfig\n").unwrap();
        let r = r.read_config(&RepoSelection {
            cwd: d.clone(),
            git_dir: None,
            common_dir: None,
        });
        assert!(r.is_err_and(|e| e.contains("deeper")));
        // A device or FIFO is refused, never read (it would hang or never end).
        fs::write(home.join(".gitconfig"), "[include]\npath = /dev/zero\n").unwrap();
        let sel = RepoSelection {
            cwd: d.clone(),
            git_dir: None,
            common_dir: None,
        };
        let r = FileConfig {
            home: Some(home.clone()),
            ..FileConfig::default()
        };
        assert!(r
            .read_config(&sel)
            .is_err_and(|e| e.contains("not a regular file")));
        fs::remove_dir_all(&d).unwrap();
    }
}
