//! The git wrapper's decision: global options, config sources, environment, aliases and
//! per-subcommand options, checked the way git itself reads them.

pub mod config;
pub mod options;
pub mod repo;
pub mod shim;

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::env::EnvView;
use crate::refusal::{Reason, Refusal};
use config::{classify_key, ConfigEntry};
use options::{ArgKind, Danger};

/// Reads the file-based config (repository, worktree, includes) the real git would see.
/// Injectable so the decision can be tested and explained without a real git.
pub trait ConfigReader {
    /// `global_args` are the repository-selecting global options of the invocation (`-C`,
    /// `--git-dir`, `--work-tree`, `--bare`), `cwd` the directory git starts in.
    fn read_config(&self, cwd: &Path, global_args: &[OsString])
        -> Result<Vec<ConfigEntry>, String>;
}

/// A fixed config, for tests and for `execguard check` with a given config.
#[derive(Debug, Default, Clone)]
pub struct StaticConfig(pub Vec<ConfigEntry>);

impl ConfigReader for StaticConfig {
    fn read_config(&self, _: &Path, _: &[OsString]) -> Result<Vec<ConfigEntry>, String> {
        Ok(self.0.clone())
    }
}

/// Which `GIT_EXEC_PATH` values are acceptable: see [`shim::validate_shim`].
#[derive(Debug, Default, Clone)]
pub struct ShimRule {
    /// The wrapper's real file; the shim's `git` must be it.
    pub wrapper: Option<PathBuf>,
    /// Directories the shim's other entries may link into (the real git-core directories).
    pub real_exec_dirs: Vec<PathBuf>,
}

/// Everything the decision needs besides the invocation itself.
pub struct GitContext<'a> {
    pub reader: &'a dyn ConfigReader,
    pub shim: ShimRule,
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

/// Variables that hand git's control plane to the caller. Always refused.
const BLOCKED_ENV: &[&str] = &[
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG",
    "GIT_PAGER",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "GIT_SEQUENCE_EDITOR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_SSH_VARIANT",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "GIT_ALLOW_PROTOCOL",
    "LESSOPEN",
    "LESSCLOSE",
    "GIT_SHALLOW_FILE",
];

/// Value the wrapper forces for `GIT_CONFIG_GLOBAL`.
pub const FORCED_CONFIG_GLOBAL: &str = "/dev/null";

fn lossy(s: &OsStr) -> String {
    s.to_string_lossy().into_owned()
}

/// `GIT_TRACE*` values that only write to stderr (or disable tracing).
fn trace_value_is_harmless(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "" | "0" | "1" | "2" | "false" | "true" | "no" | "yes" | "off" | "on"
    )
}

struct Ctx<'c, 'a> {
    env: &'c EnvView,
    ctx: &'c GitContext<'a>,
    cwd: PathBuf,
    /// Config from -c, --config-env, GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT.
    cmdline_config: Vec<ConfigEntry>,
    /// Global options that select the repository, passed to the config reader.
    repo_args: Vec<OsString>,
    git_dir: Option<PathBuf>,
    work_tree: Option<PathBuf>,
    config_env_vars: Vec<String>,
}

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
        repo_args: Vec::new(),
        git_dir: None,
        work_tree: None,
        config_env_vars: Vec::new(),
    };
    c.check_env_config()?;
    let (rest_at, globals) = c.parse_globals(args)?;
    c.check_env()?;
    c.check_repository()?;
    let Some(sub) = args.get(rest_at) else {
        return Ok(GitPlan {
            args: args.to_vec(),
            subcommand: None,
            config_env_vars: c.config_env_vars,
        });
    };
    let file_config = ctx
        .reader
        .read_config(&c.cwd, &c.repo_args)
        .map_err(|e| Refusal::new(Reason::ConfigUnreadable, e))?;
    for e in &file_config {
        let lower = e.key.to_ascii_lowercase();
        if lower.starts_with("alias.") || lower == "core.worktree" {
            continue; // aliases are checked where used; git writes core.worktree itself
        }
        classify_key(&e.key, e.value.as_deref(), "repository config")?;
    }
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
    check_subcommand(&sub_name, &words[1..])?;
    let mut out = globals;
    out.extend(words);
    Ok(GitPlan {
        args: out,
        subcommand: Some(sub_name),
        config_env_vars: c.config_env_vars,
    })
}

impl Ctx<'_, '_> {
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
        classify_key(&entry.key, entry.value.as_deref(), source)?;
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
                "--bare" => {
                    self.git_dir = Some(self.cwd.clone());
                    self.repo_args.push(args[i].clone());
                }
                "--git-dir" | "--work-tree" => {
                    let Some(v) = next else { break };
                    self.set_repo_option(&a, v);
                    self.repo_args.push(args[i].clone());
                    self.repo_args.push(v.clone());
                    take_next = true;
                }
                "--namespace" | "--shallow-file" | "--attr-source" => take_next = true,
                "-C" => {
                    let Some(v) = next else { break };
                    if !v.is_empty() {
                        self.cwd = self.cwd.join(v);
                    }
                    self.repo_args.push(args[i].clone());
                    self.repo_args.push(v.clone());
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
                    } else if let Some(v) = a
                        .strip_prefix("--git-dir=")
                        .map(|v| ("--git-dir", v))
                        .or_else(|| a.strip_prefix("--work-tree=").map(|v| ("--work-tree", v)))
                    {
                        self.set_repo_option(v.0, OsStr::new(v.1));
                        self.repo_args.push(args[i].clone());
                    } else if a.starts_with("--namespace=")
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

    fn set_repo_option(&mut self, opt: &str, v: &OsStr) {
        let p = self.cwd.join(v);
        if opt == "--git-dir" {
            self.git_dir = Some(p);
        } else {
            self.work_tree = Some(p);
        }
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
            if BLOCKED_ENV.contains(&name.as_str()) {
                return Err(Refusal::new(Reason::EnvOverride, format!("{name} is set")));
            }
            if name.starts_with("GIT_TRACE")
                && !name.ends_with("_PARENT_SID")
                && !name.ends_with("_PARENT_NAME")
                && !trace_value_is_harmless(&v)
            {
                return Err(Refusal::new(
                    Reason::EnvOverride,
                    format!("{name}={v} writes trace output to a file or socket"),
                ));
            }
            match name.as_str() {
                "GIT_CONFIG_GLOBAL" if v != FORCED_CONFIG_GLOBAL => {
                    return Err(Refusal::new(
                        Reason::EnvOverride,
                        format!("GIT_CONFIG_GLOBAL={v} (only {FORCED_CONFIG_GLOBAL})"),
                    ));
                }
                "GIT_CONFIG_NOSYSTEM" if v != "1" => {
                    return Err(Refusal::new(
                        Reason::EnvOverride,
                        format!("GIT_CONFIG_NOSYSTEM={v} (only 1)"),
                    ));
                }
                "GIT_EDITOR" if v != ":" => {
                    return Err(Refusal::new(Reason::EnvOverride, "GIT_EDITOR is set"));
                }
                "GIT_EXEC_PATH" => {
                    shim::validate_shim(Path::new(value), &self.ctx.shim).map_err(|e| {
                        Refusal::new(Reason::ExecPath, format!("GIT_EXEC_PATH={v}: {e}"))
                    })?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Repository-selecting options and variables are accepted only when they name what git
    /// would discover from the (effective) working directory anyway.
    fn check_repository(&self) -> Result<(), Refusal> {
        let env_dir = |n: &str| self.env.get(n).map(|v| self.cwd.join(v));
        let git_dir = self.git_dir.clone().or_else(|| env_dir("GIT_DIR"));
        let work_tree = self.work_tree.clone().or_else(|| env_dir("GIT_WORK_TREE"));
        let index = env_dir("GIT_INDEX_FILE");
        let common = env_dir("GIT_COMMON_DIR");
        let objects: Vec<PathBuf> = ["GIT_OBJECT_DIRECTORY", "GIT_QUARANTINE_PATH"]
            .iter()
            .filter_map(|n| env_dir(n))
            .chain(
                self.env
                    .get("GIT_ALTERNATE_OBJECT_DIRECTORIES")
                    .map(|v| {
                        std::env::split_paths(v)
                            .map(|p| self.cwd.join(p))
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default(),
            )
            .collect();
        if git_dir.is_none()
            && work_tree.is_none()
            && index.is_none()
            && common.is_none()
            && objects.is_empty()
        {
            return Ok(());
        }
        let found = repo::discover(&self.cwd);
        let refuse = |what: &str, p: &Path| {
            Err(Refusal::new(
                Reason::RepositoryOverride,
                format!(
                    "{what}={} is not the repository of {}",
                    p.display(),
                    self.cwd.display()
                ),
            ))
        };
        let same = |a: &Path, b: &Path| repo::resolve(&self.cwd, a).as_deref() == Some(b);
        let Some(found) = found else {
            let p = git_dir
                .or(work_tree)
                .or(index)
                .or(common)
                .unwrap_or_default();
            return refuse("repository override", &p);
        };
        if let Some(p) = &git_dir {
            if !same(p, &found.git_dir) {
                return refuse("git dir", p);
            }
        }
        if let Some(p) = &work_tree {
            match &found.work_tree {
                Some(w) if same(p, w) => {}
                _ => return refuse("work tree", p),
            }
        }
        if let Some(p) = &index {
            let parent_ok = repo::resolve(&self.cwd, p)
                .and_then(|r| r.parent().map(Path::to_path_buf))
                .is_some_and(|d| d == found.git_dir);
            if !parent_ok {
                return refuse("GIT_INDEX_FILE", p);
            }
        }
        if let Some(p) = &common {
            if !same(p, &found.common_dir) {
                return refuse("GIT_COMMON_DIR", p);
            }
        }
        let objects_root = found.common_dir.join("objects");
        for p in &objects {
            let ok = repo::resolve(&self.cwd, p).is_some_and(|r| r.starts_with(&objects_root));
            if !ok {
                return refuse("object directory", p);
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
    Refusal::new(d.reason, format!("git {sub} {spelled}: {}", d.what))
}

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
];

/// Per-subcommand options, as the subcommand's parse-options would read them.
pub fn check_subcommand(sub: &str, args: &[OsString]) -> Result<(), Refusal> {
    match sub {
        "filter-branch" | "instaweb" => {
            return Err(Refusal::new(
                Reason::CommandSubcommand,
                format!("git {sub} runs arbitrary commands"),
            ))
        }
        "config" => return check_config_command(args),
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
                if let Some(l) = d.long {
                    if options::long_selects(spec, name, l) {
                        let hit = match (d.value_is_dangerous, &value) {
                            (Some(f), Some(v)) => f(v),
                            (Some(_), None) => false,
                            (None, _) => true,
                        };
                        if hit {
                            return Err(refuse_danger(d, sub, &a));
                        }
                    }
                }
            }
            if sub == "clone" {
                if let Some(options::LongMatch::Exact(o) | options::LongMatch::Abbrev(o)) = kind {
                    if o.name == "config" {
                        if let Some(v) = &value {
                            check_config_spec(v, "clone --config")?;
                        }
                    }
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
                if let Some(d) = dangers.iter().find(|d| d.short == Some(l)) {
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
        if let Some(p) = positionals.iter().find(|p| p.starts_with("ext::")) {
            return Err(Refusal::new(
                Reason::ExtTransport,
                format!("git {sub} {p}: the ext:: transport runs a command"),
            ));
        }
    }
    match (sub, positionals.first().map(String::as_str)) {
        ("bisect", Some("run")) => Err(Refusal::new(
            Reason::CommandSubcommand,
            "git bisect run runs a command",
        )),
        ("submodule", Some("foreach")) => Err(Refusal::new(
            Reason::CommandSubcommand,
            "git submodule foreach runs a command",
        )),
        _ => Ok(()),
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
                check_subcommand(sub, &rest)?;
            }
        }
    }
    Ok(())
}
