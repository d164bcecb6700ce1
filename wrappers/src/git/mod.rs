//! The git wrapper's decision: global options, config sources, environment, aliases and
//! per-subcommand options, checked the way git itself reads them.

pub mod config;
pub mod files;
pub mod options;
pub mod repo;
pub mod shim;
pub mod ssh;

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::env::EnvView;
use crate::refusal::{Reason, Refusal};
use config::{classify_key, ConfigEntry};
use options::{ArgKind, Danger};

/// Which repository an invocation selects: the working directory git starts in (after `-C`),
/// and the git and common directories when options or variables name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoSelection {
    pub cwd: PathBuf,
    pub git_dir: Option<PathBuf>,
    pub common_dir: Option<PathBuf>,
}

/// Reads the file-based config (global, repository, worktree, includes) git would see.
/// Injectable so the decision can be tested and explained without touching files.
pub trait ConfigReader {
    fn read_config(&self, repo: &RepoSelection) -> Result<Vec<ConfigEntry>, String>;
}

/// A fixed config, for tests and benchmarks.
#[derive(Debug, Default, Clone)]
pub struct StaticConfig(pub Vec<ConfigEntry>);

impl ConfigReader for StaticConfig {
    fn read_config(&self, _: &RepoSelection) -> Result<Vec<ConfigEntry>, String> {
        Ok(self.0.clone())
    }
}

/// Which `GIT_EXEC_PATH` values are acceptable: see [`shim::validate_exec_path`].
#[derive(Debug, Default, Clone)]
pub struct ShimRule {
    /// The wrapper's real file; the shim's `git` must be it.
    pub wrapper: Option<PathBuf>,
    /// Directories the shim's other entries may link into (the real git-core directories).
    pub real_exec_dirs: Vec<PathBuf>,
    /// The real gits of the policy (`[[runtime]]` files named `git`).
    pub real_gits: Vec<PathBuf>,
}

/// Everything the decision needs besides the invocation itself.
pub struct GitContext<'a> {
    pub reader: &'a dyn ConfigReader,
    pub shim: ShimRule,
    /// The caller is the real git running the sequencer (`rebase`, `cherry-pick`, `revert`):
    /// its `commit -n` (e.g. on `rebase --continue`) is git's own, not a bypass.
    pub internal_child: bool,
}

/// What the wrapper will run: the real git's arguments (aliases already expanded, so git
/// never re-reads an alias definition that could have changed since the check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitPlan {
    pub args: Vec<OsString>,
    pub subcommand: Option<String>,
    /// Variables named by `--config-env` (their values were checked); the child environment
    /// must carry them although they are not on the allow-list.
    pub config_env_vars: Vec<String>,
}

/// What the go command sets `GIT_SSH_COMMAND` to when neither it nor `GIT_SSH` is set (its
/// VCS stamping and module fetches run git with it): git's own `ssh`, with options that make
/// it never share a connection or ask. Accepted as it is, and passed on only through the
/// session's proxy ([`ssh::child_env`]): `go build` in a repository asks `git status` through
/// the wrapper.
pub(crate) const GO_SSH_COMMAND: &str = "ssh -o ControlMaster=no -o BatchMode=yes";

/// Variables that make git run a program of the caller's choosing (rule 1), each with how to
/// do without it. Pager, editor and askpass variables are neutralised instead (`env.rs`).
const BLOCKED_ENV: &[(&str, &str)] = &[
    (
        "GIT_EXTERNAL_DIFF",
        "unset it: `git diff` prints git's own diff",
    ),
    (
        "GIT_SSH",
        "unset it and put ssh options in ~/.ssh/config: git runs ssh itself",
    ),
    (
        "GIT_SSH_COMMAND",
        "unset it and put ssh options in ~/.ssh/config: git runs ssh itself",
    ),
    (
        "GIT_PROXY_COMMAND",
        "unset it: use https_proxy, or ProxyJump in ~/.ssh/config",
    ),
    (
        "GIT_TEMPLATE_DIR",
        "unset it: new repositories get git's own templates",
    ),
];

fn lossy(s: &OsStr) -> String {
    s.to_string_lossy().into_owned()
}

struct Ctx<'c, 'a> {
    env: &'c EnvView,
    ctx: &'c GitContext<'a>,
    cwd: PathBuf,
    /// Config from -c, --config-env, GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT.
    cmdline_config: Vec<ConfigEntry>,
    git_dir: Option<PathBuf>,
    config_env_vars: Vec<String>,
}

/// Subcommands that may talk to a remote, and so may run a credential helper.
/// Subcommands that may talk to a remote, and so may run a credential helper or a remote
/// helper named by a URL.
const TRANSPORT_COMMANDS: &[&str] = &[
    "clone",
    "fetch",
    "pull",
    "push",
    "ls-remote",
    "remote",
    "submodule",
    "archive",
    "fetch-pack",
    "send-pack",
    "credential",
    "bundle",
];

/// Subcommands that run inside the repository named by their first argument: git starts
/// them there for local transports (`git push ../other`), so that repository's config counts.
const SERVE_COMMANDS: &[&str] = &["receive-pack", "upload-pack", "upload-archive"];

/// Check a git invocation without running anything. `args` excludes argv[0].
pub fn check_git_with(
    args: &[OsString],
    env: &[(OsString, OsString)],
    cwd: &Path,
    ctx: &GitContext<'_>,
) -> Result<GitPlan, Refusal> {
    let env = EnvView::new(env);
    let mut c = Ctx {
        env: &env,
        ctx,
        cwd: cwd.to_path_buf(),
        cmdline_config: Vec::new(),
        git_dir: None,
        config_env_vars: Vec::new(),
    };
    c.check_env_config()?;
    let (rest_at, globals) = c.parse_globals(args)?;
    c.check_env()?;
    let Some(sub) = args.get(rest_at) else {
        return Ok(GitPlan {
            args: args.to_vec(),
            subcommand: None,
            config_env_vars: c.config_env_vars,
        });
    };
    let selection = c.selection();
    let file_config = ctx
        .reader
        .read_config(&selection)
        .map_err(|e| Refusal::new(Reason::ConfigUnreadable, e))?;
    check_file_config(&file_config)?;
    let mut words: Vec<OsString> = args[rest_at..].to_vec();
    let mut seen = HashSet::new();
    let mut sub_name = lossy(sub);
    loop {
        if options::is_builtin(&sub_name) {
            break;
        }
        let Some(body) = c.lookup_alias(&sub_name, &file_config) else {
            break;
        };
        if !seen.insert(sub_name.to_ascii_lowercase()) || seen.len() > 64 {
            return Err(Refusal::new(
                Reason::AliasLoop,
                format!("alias loop through {sub_name:?}"),
            ));
        }
        if body.trim_start().starts_with('!') {
            return Err(Refusal::new(
                Reason::AliasShell,
                format!("alias.{sub_name} = {body}"),
            ));
        }
        let mut expanded = config::split_cmdline(&body)
            .map_err(|e| Refusal::new(Reason::ConfigMalformed, format!("alias.{sub_name}: {e}")))?;
        if expanded.first().is_some_and(|w| w.starts_with('-')) {
            // git allows only options that do not change the environment here; we read
            // them with the same rules as on the command line.
            let ex: Vec<OsString> = expanded.iter().map(OsString::from).collect();
            let (at, _) = c.parse_globals(&ex)?;
            expanded.drain(..at);
        }
        if expanded.is_empty() {
            return Err(Refusal::new(
                Reason::AliasUnresolved,
                format!("alias.{sub_name} is empty"),
            ));
        }
        let mut new_words: Vec<OsString> = expanded.iter().map(OsString::from).collect();
        new_words.extend(words.drain(1..));
        words = new_words;
        sub_name = lossy(&words[0]);
    }
    let sequencer_commit = ctx.internal_child && sub_name == "commit";
    let positionals = check_subcommand(&sub_name, &words[1..], sequencer_commit)?;
    if TRANSPORT_COMMANDS.contains(&sub_name.as_str()) {
        check_credential_helpers(file_config.iter().chain(&c.cmdline_config))?;
    }
    if SERVE_COMMANDS.contains(&sub_name.as_str()) {
        if let Some(dir) = positionals.first() {
            let target = RepoSelection {
                cwd: c.cwd.join(dir),
                git_dir: None,
                common_dir: None,
            };
            let target_config = ctx
                .reader
                .read_config(&target)
                .map_err(|e| Refusal::new(Reason::ConfigUnreadable, e))?;
            check_file_config(&target_config)?;
        }
    }
    if let Some(todo) = sequencer_resumes(&sub_name, &words[1..]) {
        c.check_todo(todo)?;
    }
    let mut out = globals;
    out.extend(words);
    Ok(GitPlan {
        args: out,
        subcommand: Some(sub_name),
        config_env_vars: c.config_env_vars,
    })
}

/// Config files: every key through the classifier, except aliases (checked where used), the
/// include keys (their files were read and are in the list) and credential helpers (checked
/// as a list, for the commands that may use them).
fn check_file_config(entries: &[ConfigEntry]) -> Result<(), Refusal> {
    for e in entries {
        let lower = e.key.to_ascii_lowercase();
        let include = lower == "include.path"
            || (lower.starts_with("includeif.") && lower.ends_with(".path"));
        if lower.starts_with("alias.") || include || is_credential_helper(&lower) {
            continue;
        }
        let origin = e.origin.as_deref().unwrap_or("config");
        classify_key(&e.key, e.value.as_deref(), origin)?;
    }
    Ok(())
}

fn is_credential_helper(lower_key: &str) -> bool {
    lower_key.starts_with("credential.") && lower_key.ends_with(".helper")
}

/// git collects credential helpers in config order; an empty value clears the list so far
/// (so `git -c credential.helper= push` asks on the terminal). What is left must be git's own.
fn check_credential_helpers<'e>(
    entries: impl Iterator<Item = &'e ConfigEntry>,
) -> Result<(), Refusal> {
    let mut helpers: Vec<&ConfigEntry> = Vec::new();
    for e in entries {
        if !is_credential_helper(&e.key.to_ascii_lowercase()) {
            continue;
        }
        match e.value.as_deref().map(str::trim) {
            Some("") => helpers.clear(),
            _ => helpers.push(e),
        }
    }
    for e in helpers {
        let origin = e.origin.as_deref().unwrap_or("command line");
        classify_key(&e.key, e.value.as_deref(), origin)?;
    }
    Ok(())
}

/// `rebase --continue/--skip/--edit-todo` and `cherry-pick`/`revert --continue` run the todo
/// list left in the git dir: the path of that list, relative to the git dir.
fn sequencer_resumes(sub: &str, args: &[OsString]) -> Option<&'static str> {
    let has = |names: &[&str]| {
        args.iter()
            .any(|a| a.to_str().is_some_and(|a| names.contains(&a)))
    };
    match sub {
        "rebase" if has(&["--continue", "--skip", "--edit-todo"]) => {
            Some("rebase-merge/git-rebase-todo")
        }
        "cherry-pick" | "revert" if has(&["--continue", "--skip"]) => Some("sequencer/todo"),
        _ => None,
    }
}

/// A todo line that runs a command: `exec`/`x` (git's `parse_insn_line`).
fn todo_exec_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim_start).find(|l| {
        let word = l.split([' ', '\t']).next().unwrap_or("");
        word == "exec" || word == "x"
    })
}

impl Ctx<'_, '_> {
    fn selection(&self) -> RepoSelection {
        let env_dir = |n: &str| self.env.get(n).map(|v| self.cwd.join(v));
        // A git dir named by a file is the directory its `gitdir:` line names, as git reads
        // it (`setup_explicit_git_dir`): git hands a submodule's `.git` file to its children
        // that way (`GIT_DIR=.git`), so its config is the one in `.git/modules/<name>`.
        let explicit = self.git_dir.clone().or_else(|| env_dir("GIT_DIR"));
        let git_dir = explicit.map(|d| match d.is_file() {
            true => repo::read_gitfile(&d).unwrap_or(d),
            false => d,
        });
        RepoSelection {
            cwd: self.cwd.clone(),
            git_dir,
            common_dir: env_dir("GIT_COMMON_DIR"),
        }
    }

    /// The todo list git would resume, in the selected git dir.
    fn check_todo(&self, todo: &str) -> Result<(), Refusal> {
        let sel = self.selection();
        let Some(git_dir) = sel
            .git_dir
            .or_else(|| repo::discover(&sel.cwd).map(|d| d.git_dir))
        else {
            return Ok(());
        };
        let path = git_dir.join(todo);
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(Refusal::new(
                    Reason::ConfigUnreadable,
                    format!("{}: {e}", path.display()),
                ))
            }
        };
        match todo_exec_line(&String::from_utf8_lossy(&text)) {
            Some(line) => Err(Refusal::new(
                Reason::TodoExec,
                format!("{} runs a command: {line}", path.display()),
            )),
            None => Ok(()),
        }
    }

    fn lookup_alias(&self, name: &str, file_config: &[ConfigEntry]) -> Option<String> {
        let want = format!("alias.{}", name.to_ascii_lowercase());
        let find = |entries: &[ConfigEntry]| {
            entries
                .iter()
                .rev()
                .find(|e| e.key.to_ascii_lowercase() == want)
                .map(|e| e.value.clone().unwrap_or_default())
        };
        find(&self.cmdline_config).or_else(|| find(file_config))
    }

    fn push_config(&mut self, entry: ConfigEntry, source: &str) -> Result<(), Refusal> {
        // Credential helpers are judged as the list git builds (an empty one clears it).
        if !is_credential_helper(&entry.key.to_ascii_lowercase()) {
            classify_key(&entry.key, entry.value.as_deref(), source)?;
        }
        self.cmdline_config.push(entry);
        Ok(())
    }

    fn check_env_config(&mut self) -> Result<(), Refusal> {
        if let Some(p) = self.env.get("GIT_CONFIG_PARAMETERS") {
            let entries = config::parse_config_parameters(p.as_encoded_bytes())
                .map_err(|e| Refusal::new(Reason::ConfigMalformed, e.0))?;
            for e in entries {
                self.push_config(e, "GIT_CONFIG_PARAMETERS")?;
            }
        }
        let env = self.env;
        let entries =
            config::parse_config_count_env(|k| env.get(k).map(|v| v.as_encoded_bytes().to_vec()))
                .map_err(|e| Refusal::new(Reason::ConfigMalformed, e.0))?;
        for e in entries {
            self.push_config(e, "GIT_CONFIG_COUNT")?;
        }
        Ok(())
    }

    /// git.c `handle_options`: exact spellings, no abbreviations. Returns the index of the
    /// subcommand and the global options to pass on.
    fn parse_globals(&mut self, args: &[OsString]) -> Result<(usize, Vec<OsString>), Refusal> {
        let mut i = 0;
        let mut out = Vec::new();
        while i < args.len() {
            let a = lossy(&args[i]);
            if !a.starts_with('-') {
                break;
            }
            let next = args.get(i + 1);
            let mut take_next = false;
            match a.as_str() {
                // `--exec-path=<dir>` makes git run helpers from <dir>. Without `=` git prints
                // its exec-path and exits before running anything (git.c); scripts such as
                // git-submodule source `$(git --exec-path)/git-sh-setup`.
                _ if a.starts_with("--exec-path=") => {
                    return Err(Refusal::new(Reason::ExecPath, a));
                }
                _ if a.starts_with("--exec-path") => break,
                "--html-path"
                | "--man-path"
                | "--info-path"
                | "-p"
                | "--paginate"
                | "-P"
                | "--no-pager"
                | "--no-replace-objects"
                | "--literal-pathspecs"
                | "--no-literal-pathspecs"
                | "--glob-pathspecs"
                | "--noglob-pathspecs"
                | "--icase-pathspecs"
                | "--no-optional-locks"
                | "--no-lazy-fetch"
                | "--no-advice" => {}
                "-h" | "--help" | "-v" | "--version" => break,
                "--bare" => self.git_dir = Some(self.cwd.clone()),
                "--git-dir" => {
                    let Some(v) = next else { break };
                    self.git_dir = Some(self.cwd.join(v));
                    take_next = true;
                }
                "--work-tree" | "--namespace" | "--shallow-file" | "--attr-source" => {
                    take_next = true
                }
                "-C" => {
                    let Some(v) = next else { break };
                    if !v.is_empty() {
                        self.cwd = self.cwd.join(v);
                    }
                    take_next = true;
                }
                "-c" => {
                    let Some(v) = next else { break };
                    let e = config::parse_config_spec(&lossy(v))
                        .map_err(|e| Refusal::new(Reason::ConfigMalformed, e.0))?;
                    self.push_config(e, "-c")?;
                    take_next = true;
                }
                "--config-env" => {
                    let Some(v) = next else { break };
                    self.config_env(&lossy(v))?;
                    take_next = true;
                }
                _ => {
                    if let Some(v) = a.strip_prefix("--config-env=") {
                        self.config_env(v)?;
                    } else if let Some(v) = a.strip_prefix("--git-dir=") {
                        self.git_dir = Some(self.cwd.join(v));
                    } else if a.starts_with("--work-tree=")
                        || a.starts_with("--namespace=")
                        || a.starts_with("--super-prefix=")
                        || a.starts_with("--list-cmds=")
                        || a.starts_with("--attr-source=")
                    {
                    } else {
                        return Err(Refusal::new(
                            Reason::UnknownOption,
                            format!("unknown global option {a}"),
                        ));
                    }
                }
            }
            out.push(args[i].clone());
            if take_next {
                if let Some(v) = next {
                    out.push(v.clone());
                }
                i += 1;
            }
            i += 1;
        }
        Ok((i, out))
    }

    /// `--config-env=<key>=<VAR>`: the config value is VAR's value; that is what we check.
    fn config_env(&mut self, spec: &str) -> Result<(), Refusal> {
        let (key, var) = config::parse_config_env_spec(spec)
            .map_err(|e| Refusal::new(Reason::ConfigMalformed, e.0))?;
        let Some(value) = self.env.get(&var) else {
            return Err(Refusal::new(
                Reason::ConfigMalformed,
                format!("--config-env: missing environment variable {var}"),
            ));
        };
        let value = lossy(value);
        self.push_config(ConfigEntry::new(key, Some(&value)), "--config-env")?;
        self.config_env_vars.push(var);
        Ok(())
    }

    fn check_env(&self) -> Result<(), Refusal> {
        for (name, value) in self.env.iter() {
            let name = lossy(name);
            let v = lossy(value);
            // An empty GIT_TEMPLATE_DIR copies no templates; the go command's own
            // GIT_SSH_COMMAND runs the ssh git would run anyway.
            // The wrapper's own (git over ssh through the session's proxy) comes back with
            // the helpers git runs through the wrapper.
            let own_ssh = || {
                self.ctx
                    .shim
                    .wrapper
                    .as_deref()
                    .is_some_and(|w| ssh::own_commands(self.env, w).contains(&v))
            };
            let harmless = (name == "GIT_TEMPLATE_DIR" && v.is_empty())
                || (name == "GIT_SSH_COMMAND" && (v == GO_SSH_COMMAND || own_ssh()));
            if let Some((_, hint)) = BLOCKED_ENV.iter().find(|(n, _)| *n == name && !harmless) {
                return Err(Refusal::new(
                    Reason::EnvOverride,
                    format!("{name} is set (git would run it)"),
                )
                .with_hint(*hint));
            }
            match name.as_str() {
                "GIT_SEQUENCE_EDITOR" if !crate::env::noop_editor(value) => {
                    return Err(Refusal::new(
                        Reason::EnvOverride,
                        format!("GIT_SEQUENCE_EDITOR={v} (a program that rewrites the rebase todo list; neutralising it would change the rebase)"),
                    )
                    .with_hint("unset it: `git rebase -i` keeps git's own todo list (GIT_EDITOR=:); to drop or reorder commits use `git rebase --onto` or `git cherry-pick`"));
                }
                // The wrapper forces GIT_CONFIG_NOSYSTEM=1: a system config would be ignored,
                // which would silently change what the caller asked for.
                "GIT_CONFIG_SYSTEM" => {
                    return Err(Refusal::new(
                        Reason::EnvOverride,
                        format!("GIT_CONFIG_SYSTEM={v} (the system config is not read under the wrapper)"),
                    )
                    .with_hint("unset it, or name the file with GIT_CONFIG_GLOBAL (read and checked)"));
                }
                "GIT_CONFIG_NOSYSTEM" if v != "1" => {
                    return Err(Refusal::new(
                        Reason::EnvOverride,
                        format!("GIT_CONFIG_NOSYSTEM={v} (the system config is not read under the wrapper)"),
                    )
                    .with_hint("unset it"));
                }
                "GIT_ALLOW_PROTOCOL" if v.split(':').any(|p| p == "ext") => {
                    return Err(Refusal::new(
                        Reason::TransportHelper,
                        format!("GIT_ALLOW_PROTOCOL={v} enables the ext:: transport, which runs a command"),
                    ));
                }
                "GIT_EXEC_PATH" => {
                    shim::validate_exec_path(Path::new(value), &self.ctx.shim).map_err(|e| {
                        Refusal::new(Reason::ExecPath, format!("GIT_EXEC_PATH={v}: {e}"))
                    })?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn split_long(a: &str) -> (&str, Option<&str>) {
    match a.find('=') {
        Some(i) => (&a[..i], Some(&a[i + 1..])),
        None => (a, None),
    }
}

fn refuse_danger(d: &Danger, sub: &str, spelled: &str) -> Refusal {
    let r = Refusal::new(d.reason, format!("git {sub} {spelled}: {}", d.what));
    match danger_hint(sub, d) {
        Some(h) => r.with_hint(h),
        None => r,
    }
}

/// How to do without a refused option, where there is more to say than the reason's default.
fn danger_hint(sub: &str, d: &Danger) -> Option<&'static str> {
    Some(match (sub, d.long) {
        ("rebase", Some("exec")) => "rebase without --exec, then run the command yourself (`git rebase -i` with `edit` lines stops at each commit)",
        ("grep", _) => "use `git grep -l` and open the files yourself",
        ("difftool", _) => "use `git diff` (or `git diff --name-only` and your own tool)",
        ("help", _) => "use `git help <command>` (the manual page) or `git <command> -h`",
        (_, Some("strategy")) => "use one of git's strategies: ort, recursive, resolve, octopus, ours, subtree",
        (_, Some("template")) => "leave --template out (git's own templates), or pass --template= for none",
        (_, Some("upload-pack" | "receive-pack" | "exec")) => "leave it out: git runs the remote side's own git-upload-pack/git-receive-pack",
        _ => return None,
    })
}

/// Per-subcommand options, as the subcommand's parse-options would read them.
/// Returns the positional arguments. `internal_child`: the sequencer (a real git running
/// rebase/cherry-pick/revert) started this git, so a `commit`'s hook options are git's own
/// (it commits with `-n`), not a bypass.
pub fn check_subcommand(
    sub: &str,
    args: &[OsString],
    internal_child: bool,
) -> Result<Vec<String>, Refusal> {
    match sub {
        "filter-branch" => {
            return Err(Refusal::new(
                Reason::CommandSubcommand,
                "git filter-branch runs its filters as shell commands",
            )
            .with_hint("rewrite history with `git rebase` (no --exec), or outside the session"))
        }
        "instaweb" => {
            return Err(Refusal::new(
                Reason::CommandSubcommand,
                "git instaweb starts a web server and a browser",
            )
            .with_hint("browse the history with `git log`, or outside the session"))
        }
        "remote-ext" => {
            return Err(Refusal::new(
                Reason::CommandSubcommand,
                "git remote-ext runs the command it is given",
            )
            .with_hint("use a URL git handles itself (https://, ssh://, a path)"))
        }
        "config" => return check_config_command(args).map(|()| Vec::new()),
        _ => {}
    }
    let spec = options::find_subcommand(sub);
    let dangers: &[Danger] = spec.map_or(options::UNMODELLED_DANGERS, |s| s.dangers);
    let mut positionals: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = lossy(&args[i]);
        i += 1;
        if a == "--" && spec.is_some() {
            positionals.extend(args[i..].iter().map(|s| lossy(s)));
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = split_long(body);
            let mut value = inline.map(str::to_owned);
            let kind = spec.map(|s| options::resolve_long(s, name));
            let takes_value = matches!(
                kind,
                Some(options::LongMatch::Exact(o) | options::LongMatch::Abbrev(o)) if o.arg == ArgKind::Required
            );
            if takes_value && value.is_none() && i < args.len() {
                value = Some(lossy(&args[i]));
                i += 1;
            }
            for d in dangers {
                if internal_child && d.reason == Reason::HookBypass {
                    continue;
                }
                if let Some(l) = d.long {
                    if options::long_selects(spec, name, l) {
                        let hit = match (d.value_is_dangerous, &value) {
                            (Some(f), Some(v)) => f(v),
                            // Unmodelled: the next word may be the value (`--strategy x`).
                            (Some(f), None) => {
                                spec.is_none() && args.get(i).is_some_and(|n| f(&lossy(n)))
                            }
                            (None, _) => true,
                        };
                        if hit {
                            return Err(refuse_danger(d, sub, &a));
                        }
                    }
                }
            }
            if let Some(options::LongMatch::Exact(o) | options::LongMatch::Abbrev(o)) = kind {
                match (sub, o.name, &value) {
                    ("clone", "config", Some(v)) => check_config_spec(v, "clone --config")?,
                    ("archive", "remote", Some(v)) => {
                        if let Some(h) = config::foreign_helper(v) {
                            return Err(Refusal::new(
                                Reason::TransportHelper,
                                format!("git archive {a}: the URL runs the remote helper git-remote-{h}, which is not git's own"),
                            ));
                        }
                    }
                    _ => {}
                }
            }
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let Some(spec) = spec else { continue };
            let letters: Vec<char> = a[1..].chars().collect();
            let mut j = 0;
            while j < letters.len() {
                let l = letters[j];
                let danger = dangers.iter().find(|d| {
                    d.short == Some(l) && !(internal_child && d.reason == Reason::HookBypass)
                });
                if let Some(d) = danger.filter(|d| d.value_is_dangerous.is_none()) {
                    return Err(refuse_danger(d, sub, &a));
                }
                let kind = options::short_arg(spec, l);
                if kind == ArgKind::None {
                    j += 1;
                    continue;
                }
                let attached: String = letters[j + 1..].iter().collect();
                let value = if !attached.is_empty() {
                    Some(attached)
                } else if kind == ArgKind::Required && i < args.len() {
                    i += 1;
                    Some(lossy(&args[i - 1]))
                } else {
                    None
                };
                if let (Some(d), Some(v)) = (danger, &value) {
                    if d.value_is_dangerous.is_some_and(|f| f(v)) {
                        return Err(refuse_danger(d, sub, &format!("{a} {v}")));
                    }
                }
                if sub == "clone" && l == 'c' {
                    if let Some(v) = &value {
                        check_config_spec(v, "clone -c")?;
                    }
                }
                break;
            }
            continue;
        }
        positionals.push(a);
    }
    if TRANSPORT_COMMANDS.contains(&sub) {
        if let Some((p, h)) = positionals
            .iter()
            .find_map(|p| config::foreign_helper(p).map(|h| (p, h)))
        {
            return Err(Refusal::new(
                Reason::TransportHelper,
                format!("git {sub} {p}: the URL runs the remote helper git-remote-{h}, which is not git's own"),
            ));
        }
    }
    match (sub, positionals.first().map(String::as_str)) {
        ("bisect", Some("run")) => Err(Refusal::new(
            Reason::CommandSubcommand,
            "git bisect run runs a command",
        )
        .with_hint("bisect by hand: run the test yourself, then `git bisect good` or `git bisect bad`")),
        ("submodule", Some("foreach")) => Err(Refusal::new(
            Reason::CommandSubcommand,
            "git submodule foreach runs a command",
        )
        .with_hint("run the command in each submodule directory yourself (`git submodule status` lists them)")),
        _ => Ok(positionals),
    }
}

fn check_config_spec(spec: &str, source: &str) -> Result<(), Refusal> {
    let e =
        config::parse_config_spec(spec).map_err(|e| Refusal::new(Reason::ConfigMalformed, e.0))?;
    classify_key(&e.key, e.value.as_deref(), source)
}

/// `git config`: writes are checked like any other config source; `--edit` and
/// `--rename-section` can produce any key and are refused.
fn check_config_command(args: &[OsString]) -> Result<(), Refusal> {
    const VALUE_OPTS: &[&str] = &[
        "-f",
        "--file",
        "--blob",
        "-t",
        "--type",
        "--default",
        "--comment",
        "--value",
        "--url",
    ];
    let mut positionals = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = lossy(&args[i]);
        i += 1;
        if a == "--" {
            positionals.extend(args[i..].iter().map(|s| lossy(s)));
            break;
        }
        if a.starts_with('-') && a.len() > 1 {
            let (name, inline) = split_long(&a);
            if name == "-e"
                || (name.len() > 3 && "--edit".starts_with(name))
                || name.starts_with("--rename-s")
            {
                return Err(Refusal::new(
                    Reason::ConfigKey,
                    format!("git config {a} can write any key"),
                ));
            }
            if VALUE_OPTS.contains(&name) && inline.is_none() {
                i += 1;
            }
            continue;
        }
        positionals.push(a);
    }
    if matches!(
        positionals.first().map(String::as_str),
        Some("edit" | "rename-section")
    ) {
        return Err(Refusal::new(
            Reason::ConfigKey,
            "git config edit/rename-section can write any key",
        ));
    }
    for pair in positionals.windows(2) {
        let (key, value) = (&pair[0], &pair[1]);
        if config::split_key(key).is_none() {
            continue;
        }
        classify_key(key, Some(value), "git config")?;
        if key.to_ascii_lowercase().starts_with("alias.") {
            let words = config::split_cmdline(value)
                .map_err(|e| Refusal::new(Reason::ConfigMalformed, e.0))?;
            if let Some((sub, rest)) = words.split_first() {
                let rest: Vec<OsString> = rest.iter().map(OsString::from).collect();
                check_subcommand(sub, &rest, false)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn todo_exec_lines_as_the_sequencer_reads_them() {
        for (todo, exec) in [
            ("pick 1 a\nexec make\n", true),
            ("pick 1 a\n  x make\n", true),
            ("\tx\tmake\n", true),
            ("pick 1 a\n# exec make\n", false),
            ("pick 1 exec\nreword 2 x\n", false),
            ("execute\nxx\n", false),
            ("", false),
        ] {
            assert_eq!(todo_exec_line(todo).is_some(), exec, "{todo:?}");
        }
    }

    #[test]
    fn credential_helpers_are_judged_as_the_list_git_builds() {
        let e = |v: &str| ConfigEntry::new("credential.helper", Some(v));
        let own = [e("store"), e("cache --timeout=1")];
        assert!(check_credential_helpers(own.iter()).is_ok());
        let foreign = [e("!gh auth git-credential"), e("store")];
        assert!(check_credential_helpers(foreign.iter()).is_err());
        let cleared = [e("!gh auth git-credential"), e(""), e("store")];
        assert!(check_credential_helpers(cleared.iter()).is_ok());
        let url = [ConfigEntry::new(
            "credential.https://h.helper",
            Some("/usr/bin/x"),
        )];
        assert!(check_credential_helpers(url.iter()).is_err());
    }
}
