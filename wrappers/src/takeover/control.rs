//! What makes git run a program or reach another repository, read from git's own
//! documentation and source (git.git at 1a3e64c, and the 2.39 the image ships):
//!
//! | where | git's source | what runs or is reached |
//! | --- | --- | --- |
//! | `hooks/*`, the `core.hooksPath` directory | githooks(5), `hook.c` `find_hook` | every hook, by name |
//! | `config`, `config.worktree` (also `worktrees/<id>/`), `modules/<name>/config`, every included file | git-config(1) FILES, `config.c` `do_git_config_sequence`, `include_by_gitdir` | the keys of [`runs_command_unwrapped`] and [`names_local_repository`] |
//! | `commondir` | gitrepository-layout(5), `setup.c` `get_common_dir_noenv` | another repository's refs, objects, config and hooks |
//! | `.git` as a `gitdir:` file or a link | gitrepository-layout(5), `setup.c` `read_gitfile_gently` | another git dir |
//! | `objects/info/alternates`, `objects/info/http-alternates` | gitrepository-layout(5), `object-file.c` `link_alt_odb_entries` | another repository's objects |
//! | `remotes/<name>`, `branches/<name>` | git-fetch(1) REMOTES, `remote.c` `read_remotes_file`, `read_branches_file` | a URL for `git fetch/push <name>` |
//! | `info/attributes` | gitattributes(5), `attr.c` `git_attr_global_file`/`git_path_info_attributes` | `filter=`, `diff=`, `merge=` drivers for any path |
//! | `rebase-merge/git-rebase-todo`, `sequencer/todo` | git-rebase(1), `sequencer.c` `parse_insn_line` (`exec`, `x`) | `exec` lines on `--continue` |
//! | `rebase-merge/strategy`, `sequencer/opts` (`options.strategy`) | `sequencer.c` `read_strategy_opts`, `populate_opts_cb` | `git-merge-<name>` from `PATH` |
//! | `rebase-apply/` (`git am`) | `builtin/am.c` `am_load` | nothing but the `applypatch-msg`, `pre-applypatch`, `post-applypatch` hooks: its files are data and `apply-opt` options of `git apply`, which runs no program |
//!
//! Keys (git-config(1), `Documentation/config/*.adoc` read one by one): the wrapper's refusals
//! ([`crate::git::config::classify_key`]: `core.{fsmonitor,sshCommand,gitProxy,
//! alternateRefsCommand,hooksPath}`, `credential.*helper`, `diff.external`,
//! `diff.*.{command,textconv}`, `filter.*`, `merge.*.driver`, `gpg.*program`,
//! `gpg.ssh.defaultKeyCommand`, `sequence.editor`, `uploadpack.packObjectsHook`,
//! `remote.*.{uploadpack,receivepack,vcs}`, `protocol.*allow`, `interactive.diffFilter`,
//! `{difftool,mergetool,browser,man,guitool}.*.{cmd,path}`, `sendemail.*`, `imap.tunnel`,
//! `submodule.*.update=!`, `init.templateDir`, `hook.*`, `tar.*.command`, `pull.twohead`,
//! `pull.octopus`, `alias.*=!`, `include*.path`) and what it only neutralises (`core.pager`,
//! `core.editor`, `core.askPass`, `pager.*`; `trailer.*.{cmd,command}` and
//! `gc.recentObjectsHook` were found reading the docs for this list), and those a plain git
//! outside the wrapper runs: `alias.*.command=!` (git 2.52's alias form), `instaweb.{httpd,browser,modulePath}`,
//! `web.browser`, `man.viewer`, `{diff,merge}.{tool,guitool}` (name the program to start),
//! `core.attributesFile` and `attr.tree` (choose the attributes that select drivers).
//! A URL that names a local path in `remote.*.{url,pushurl}`, `submodule.*.url`,
//! `url.*.{insteadOf,pushInsteadOf}` (the base), `branch.*.{remote,pushRemote}` and
//! `remote.pushDefault` (`remote.c` `remote_get_1`: a name that is no configured remote is
//! used as a URL) reaches that repository, whose hooks run on push.

use std::path::{Path, PathBuf};

use crate::git::config::{classify_key, is_git_bool, split_key};

/// Would this config assignment run a command when the operator runs plain git? The
/// wrapper's own refusals, plus what the wrapper only neutralises for its children, plus the
/// keys only a git outside the wrapper honours.
pub fn runs_command_unwrapped(key: &str, value: Option<&str>) -> bool {
    if classify_key(key, value, "config").is_err() {
        return true;
    }
    let Some(k) = split_key(key) else {
        return true;
    };
    let shell = || value.is_some_and(|v| v.trim_start().starts_with('!'));
    match (
        k.section.as_str(),
        k.subsection.is_some(),
        k.variable.as_str(),
    ) {
        ("core", false, "pager" | "editor" | "askpass" | "attributesfile") => true,
        // `pager.<cmd>` is a boolean or a pager command.
        ("pager", _, _) => !is_git_bool(value),
        ("alias", true, "command") => shell(),
        ("instaweb", false, "httpd" | "browser" | "modulepath") => true,
        ("web", false, "browser") | ("man", false, "viewer") => true,
        ("diff" | "merge", false, "tool" | "guitool") => true,
        ("attr", false, "tree") => true,
        _ => false,
    }
}

/// Does this assignment name a local repository (a path or a `file://` URL), and which? Only
/// a path is returned: whether it leads out of the hand-back's reach is the caller's to judge.
pub fn names_local_repository(key: &str, value: Option<&str>) -> Option<String> {
    let k = split_key(key)?;
    let sub = k.subsection.as_deref();
    let url = match (k.section.as_str(), sub, k.variable.as_str()) {
        ("remote", Some(_), "url" | "pushurl") | ("submodule", Some(_), "url") => value?,
        ("url", Some(base), "insteadof" | "pushinsteadof") => base,
        // A remote's name, or (any name git finds no remote for) a URL: only a path can
        // name a repository git would reach.
        ("branch", Some(_), "remote" | "pushremote") | ("remote", None, "pushdefault") => {
            let v = value?;
            if !(v.contains('/') || v.starts_with('.') || v.starts_with('~')) {
                return None;
            }
            v
        }
        _ => return None,
    };
    local_path(url).map(str::to_string)
}

/// The path of a URL git reaches locally (`connect.c` `url_is_local_not_ssh`, `transport.c`):
/// `file://...`, or no `<scheme>://` and no colon before the first slash (scp-like `host:path`).
pub fn local_path(url: &str) -> Option<&str> {
    if let Some(p) = url.strip_prefix("file://") {
        return Some(p);
    }
    if url.contains("://") || url.contains("::") || url.is_empty() {
        return None;
    }
    match (url.find(':'), url.find('/')) {
        (None, _) => Some(url),
        (Some(c), Some(s)) if s < c => Some(url),
        _ => None,
    }
}

/// Resolves a local URL's path as git would from `base` (the work tree or the git dir), with
/// `~/` from `home`; lexically: the path may not exist.
pub fn resolve_local(path: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    let p = match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => PathBuf::from(path),
    };
    let joined = if p.is_absolute() { p } else { base.join(p) };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The `exec`/`x` lines of a todo list (git's `parse_insn_line`).
pub fn todo_exec_lines(text: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(text)
        .lines()
        .map(str::trim_start)
        .filter(|l| {
            let word = l.split([' ', '\t']).next().unwrap_or("");
            word == "exec" || word == "x"
        })
        .map(str::to_string)
        .collect()
}

/// The merge strategies a sequencer state file names that are not git's own (each runs
/// `git-merge-<name>` from `PATH`): `rebase-merge/strategy` holds the name, `sequencer/opts`
/// is a config file with `options.strategy`.
pub fn foreign_strategies(name: &str, text: &[u8]) -> Vec<String> {
    let own = crate::git::options::OWN_MERGE_STRATEGIES;
    let names: Vec<String> = if name == "opts" {
        match crate::git::files::parse_config_file(text) {
            Ok(entries) => entries
                .into_iter()
                .filter(|e| e.key.eq_ignore_ascii_case("options.strategy"))
                .filter_map(|e| e.value)
                .collect(),
            Err(_) => vec!["(unparsable)".into()],
        }
    } else {
        vec![String::from_utf8_lossy(text).trim().to_string()]
    };
    names
        .into_iter()
        .filter(|n| !n.is_empty() && !own.contains(&n.as_str()))
        .collect()
}

/// Executable caches git does not show and an interpreter runs without its source changing:
/// Python's byte code (`__pycache__/*.pyc`, and a sourceless `x.pyc` beside it, which
/// `import x` runs), matched by name.
pub fn is_executable_cache(name: &[u8]) -> bool {
    name.ends_with(b".pyc") || name.ends_with(b".pyo")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list read from git's documentation, key by key: each names a program git starts
    /// (or, for URLs, a repository whose hooks run); ordinary keys stay.
    #[test]
    fn every_documented_command_key_and_local_url_is_caught() {
        for (k, v) in [
            ("core.fsmonitor", "./x"),
            ("core.sshCommand", "x"),
            ("core.editor", "x"),
            ("core.pager", "x"),
            ("core.hooksPath", ".husky"),
            ("core.attributesFile", "x"),
            ("sequence.editor", "x"),
            ("diff.x.textconv", "x"),
            ("diff.x.command", "x"),
            ("filter.x.process", "x"),
            ("merge.x.driver", "x"),
            ("credential.helper", "/tmp/x"),
            ("gpg.program", "x"),
            ("gpg.ssh.program", "x"),
            ("trailer.sign.cmd", "x"),
            ("trailer.sign.command", "x"),
            ("gc.recentObjectsHook", "x"),
            ("alias.x.command", "!x"),
            ("instaweb.httpd", "/tmp/x"),
            ("man.viewer", "x"),
            ("diff.tool", "x"),
            ("attr.tree", "HEAD"),
            ("hook.x.command", "x"),
            ("uploadpack.packObjectsHook", "x"),
        ] {
            assert!(runs_command_unwrapped(k, Some(v)), "{k}");
        }
        for (k, v) in [
            ("user.name", "x"),
            ("remote.origin.url", "https://h/r"),
            ("core.fsmonitor", "false"),
            ("pager.log", "false"),
            ("branch.main.merge", "refs/heads/main"),
        ] {
            assert!(!runs_command_unwrapped(k, Some(v)), "{k}");
        }
        for (k, v) in [
            ("remote.o.url", "/srv/r.git"),
            ("remote.o.pushurl", "file:///srv/r.git"),
            ("remote.o.url", "../r"),
            ("branch.main.pushRemote", "/tmp/up.git"),
            ("branch.main.remote", "./up"),
            ("remote.pushDefault", "~/up.git"),
            ("submodule.s.url", "../s"),
        ] {
            assert!(names_local_repository(k, Some(v)).is_some(), "{k} = {v}");
        }
        assert!(names_local_repository("url./srv/r.insteadOf", Some("x:")).is_some());
        for (k, v) in [
            ("remote.o.url", "https://h/r"),
            ("remote.o.url", "host:path/r"),
            ("remote.o.url", "ssh://h/r"),
            ("branch.main.remote", "origin"),
            ("branch.main.pushRemote", "origin"),
        ] {
            assert!(names_local_repository(k, Some(v)).is_none(), "{k} = {v}");
        }
    }

    #[test]
    fn todo_exec_lines_strategies_and_caches() {
        assert_eq!(
            todo_exec_lines(
                b"pick a
  x make
exec  ls
execute
"
            )
            .len(),
            2
        );
        assert!(foreign_strategies(
            "strategy", b"ort
"
        )
        .is_empty());
        assert_eq!(
            foreign_strategies(
                "strategy", b"evil
"
            ),
            ["evil"]
        );
        assert_eq!(
            foreign_strategies(
                "opts",
                b"[options]
	strategy = evil
"
            ),
            ["evil"]
        );
        assert!(is_executable_cache(b"util.cpython-311.pyc") && !is_executable_cache(b"u.py"));
    }
}
