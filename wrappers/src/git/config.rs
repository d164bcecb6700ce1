//! Config keys and the config sources git reads from its command line and environment.
//!
//! The parsers follow git's own (`config.c`, `quote.c`) so that the wrapper and git agree on
//! what a string means: where git would reject a spec, we refuse it too rather than guess.

use crate::refusal::{Reason, Refusal};

/// One config assignment: `key` as written (git lowercases section and variable names when it
/// canonicalizes), `value` is `None` for the implicit boolean (`-c key` without `=`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub key: String,
    pub value: Option<String>,
    /// The file it was read from, for refusal messages (`None` for the command line).
    pub origin: Option<String>,
}

impl ConfigEntry {
    pub fn new(key: impl Into<String>, value: Option<&str>) -> Self {
        ConfigEntry {
            key: key.into(),
            value: value.map(str::to_owned),
            origin: None,
        }
    }

    pub fn with_origin(mut self, origin: &str) -> Self {
        self.origin = Some(origin.to_owned());
        self
    }
}

/// A config key split into git's three parts. Section and variable are lowercased (git
/// compares them case-insensitively); the subsection keeps its case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyParts {
    pub section: String,
    pub subsection: Option<String>,
    pub variable: String,
}

/// Split `section[.subsection].variable`. Returns `None` for strings git would not accept as a
/// key (no dot, empty section or variable).
pub fn split_key(key: &str) -> Option<KeyParts> {
    let first = key.find('.')?;
    let last = key.rfind('.')?;
    let section = &key[..first];
    let variable = &key[last + 1..];
    // git_config_parse_key: section and variable are [A-Za-z0-9-], the variable starts with
    // a letter; the subsection may hold anything but a newline.
    let name_ok =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !name_ok(section)
        || !name_ok(variable)
        || !variable.as_bytes()[0].is_ascii_alphabetic()
        || key.contains('\n')
    {
        return None;
    }
    let subsection = if first == last {
        None
    } else {
        Some(key[first + 1..last].to_owned())
    };
    Some(KeyParts {
        section: section.to_ascii_lowercase(),
        subsection,
        variable: variable.to_ascii_lowercase(),
    })
}

/// git's boolean "false" spellings (`git_parse_maybe_bool_text`): empty, false, no, off, 0.
pub fn is_git_false(value: Option<&str>) -> bool {
    match value {
        None => false, // implicit boolean: true
        Some(v) => {
            let v = v.trim();
            v.is_empty()
                || v.eq_ignore_ascii_case("false")
                || v.eq_ignore_ascii_case("no")
                || v.eq_ignore_ascii_case("off")
                || v == "0"
        }
    }
}

/// Classify one config assignment. `Ok(())` when harmless (or neutralised by the wrapper's
/// forced environment); otherwise the refusal naming the key. `source` is included in the
/// detail (e.g. `-c`, `GIT_CONFIG_PARAMETERS`, a config file).
///
/// Neutralised, so allowed: `core.editor` and `core.pager`, `pager.*` and `core.askPass` lose
/// to the `GIT_EDITOR=:`, `GIT_PAGER=cat` and `GIT_ASKPASS=` every git child gets.
pub fn classify_key(key: &str, value: Option<&str>, source: &str) -> Result<(), Refusal> {
    let Some(parts) = split_key(key) else {
        return Err(Refusal::new(
            Reason::ConfigMalformed,
            format!("{source}: invalid config key {key:?}"),
        ));
    };
    let refuse = |why: &str| {
        Err(Refusal::new(
            Reason::ConfigKey,
            format!("{source}: {key} ({why})"),
        ))
    };
    let sub = parts.subsection.as_deref();
    let var = parts.variable.as_str();
    match (parts.section.as_str(), sub, var) {
        ("core", None, "hookspath") => Err(Refusal::new(
            Reason::HookBypass,
            format!("{source}: {key} (redirects repository hooks)"),
        )
        .with_hint("remove core.hooksPath: git runs the hooks in .git/hooks")),
        // true/false and their spellings select git's own daemon or none; a path is a program.
        ("core", None, "fsmonitor") if is_git_bool(value) => Ok(()),
        ("core", None, "fsmonitor" | "sshcommand" | "gitproxy" | "alternaterefscommand") => {
            refuse("runs a command")
        }
        ("credential", _, "helper") if value.is_none_or(own_credential_helper) => Ok(()),
        ("credential", _, "helper") => Err(Refusal::new(
            Reason::ConfigKey,
            format!("{source}: {key} = {} (runs a credential helper that is not git's own)", value.unwrap_or_default()),
        )
        .with_hint("use `git -c credential.helper= ...` (git asks on the terminal) or git's own `store`/`cache`, or do this outside the session")),
        ("include", None, "path") | ("includeif", Some(_), "path") => {
            Err(Refusal::new(Reason::ConfigKey, format!("{source}: {key} (includes a config file)"))
                .with_hint("put the settings themselves in the repository's config or ~/.gitconfig (included files are read and checked there)"))
        }
        ("diff", None, "external") | ("diff", Some(_), "command" | "textconv") => {
            refuse("runs a diff program")
        }
        ("sequence", None, "editor") => Err(Refusal::new(
            Reason::ConfigKey,
            format!("{source}: {key} (runs a program on the rebase todo list)"),
        )
        .with_hint("remove sequence.editor; edit the todo list with `git rebase --edit-todo` and a file edit, or rebase without -i")),
        ("uploadpack", None, "packobjectshook") => refuse("runs a command"),
        ("remote", Some(_), "uploadpack" | "receivepack") => refuse("runs a command"),
        ("remote", Some(_), "vcs") => match value {
            Some(v) if OWN_REMOTE_HELPERS.contains(&v) => Ok(()),
            _ => Err(transport_refusal(source, key, value.unwrap_or_default())),
        },
        ("remote", Some(_), "url" | "pushurl") | ("submodule", Some(_), "url") => {
            match value.and_then(foreign_helper) {
                Some(_) => Err(transport_refusal(source, key, value.unwrap_or_default())),
                None => Ok(()),
            }
        }
        ("url", Some(base), "insteadof" | "pushinsteadof") => {
            if rewrite_base_is_safe(base) {
                Ok(())
            } else {
                Err(transport_refusal(source, key, base))
            }
        }
        // ext:: runs a command; protocol.allow is the default for ext as well.
        ("protocol", None | Some("ext"), "allow") if value.is_none_or(|v| v.trim() != "never") => {
            refuse("enables the ext:: transport, which runs a command")
        }
        ("filter", Some(_), _) => refuse("filter drivers run commands"),
        ("merge", Some(_), "driver") => refuse("runs a merge program"),
        ("gpg", _, "program") | ("gpg", Some("ssh"), "defaultkeycommand") => {
            refuse("runs a signing program")
        }
        ("interactive", None, "difffilter") => refuse("runs a command"),
        ("difftool" | "mergetool" | "browser" | "man" | "guitool", Some(_), "cmd" | "path") => {
            refuse("runs a command")
        }
        ("sendemail", _, _) => refuse("send-email settings run commands"),
        ("imap", None, "tunnel") => refuse("runs a tunnel command"),
        ("submodule", Some(_), "update") if value.is_some_and(|v| v.trim_start().starts_with('!')) => {
            refuse("update=!command runs a command")
        }
        ("init", None, "templatedir") if value.is_some_and(|v| !v.trim().is_empty()) => Err(Refusal::new(
            Reason::ConfigKey,
            format!("{source}: {key} (copies hooks into new repositories)"),
        )
        .with_hint("remove init.templateDir: new repositories get git's own templates")),
        ("hook", Some(_), _) => Err(Refusal::new(
            Reason::HookBypass,
            format!("{source}: {key} (config-based hooks run commands and replace repository hooks)"),
        )
        .with_hint("put the hook in .git/hooks instead")),
        ("tar", Some(_), "command") => refuse("runs an archive filter"),
        // `git interpret-trailers`, `commit --trailer` (trailer.c); `gc`/`repack --cruft`
        // (reachable.c).
        ("trailer", Some(_), "cmd" | "command") => refuse("runs a command for a trailer"),
        ("gc", None, "recentobjectshook") => refuse("runs a command"),
        ("pull", None, "twohead" | "octopus")
            if value.is_some_and(|v| {
                v.split_ascii_whitespace()
                    .any(|s| !super::options::OWN_MERGE_STRATEGIES.contains(&s))
            }) =>
        {
            refuse("a merge strategy that is not git's own runs git-merge-<name> from PATH")
        }
        ("alias", _, _) if value.is_some_and(|v| v.trim_start().starts_with('!')) => {
            Err(Refusal::new(Reason::AliasShell, format!("{source}: {key} (shell alias)")))
        }
        _ => Ok(()),
    }
}

/// Remote helpers git ships itself (`git-remote-<name>` in its exec-path): the curl helpers
/// and `fd`. `ext` is git's too, but it runs a command of the URL's choosing.
pub const OWN_REMOTE_HELPERS: &[&str] = &["http", "https", "ftp", "ftps", "fd"];

/// Credential helpers git ships itself (`git-credential-<name>`).
const OWN_CREDENTIAL_HELPERS: &[&str] = &["store", "cache"];

/// A git boolean in any spelling (or the implicit `true` of a bare key).
pub fn is_git_bool(value: Option<&str>) -> bool {
    match value {
        None => true,
        Some(v) => {
            let v = v.trim();
            is_git_false(Some(v))
                || ["true", "yes", "on", "1"]
                    .iter()
                    .any(|t| v.eq_ignore_ascii_case(t))
        }
    }
}

/// An empty helper resets the list; a bare `store`/`cache` (with options) is git's own.
fn own_credential_helper(v: &str) -> bool {
    let v = v.trim();
    v.is_empty()
        || v.split_ascii_whitespace()
            .next()
            .is_some_and(|w| OWN_CREDENTIAL_HELPERS.contains(&w))
}

fn transport_refusal(source: &str, key: &str, url: &str) -> Refusal {
    Refusal::new(
        Reason::TransportHelper,
        format!("{source}: {key} = {url} (a remote helper that is not git's own runs from PATH)"),
    )
}

/// git's `is_urlschemechar`.
fn scheme_char(first: bool, c: u8) -> bool {
    c.is_ascii_alphanumeric() || (!first && matches!(c, b'+' | b'-' | b'.'))
}

/// The remote helper git would start for `url` (transport.c `transport_get`): `<name>` of
/// `<name>::<address>`, or the scheme of a `<scheme>://` URL git does not handle itself.
/// `None` for git's built-in transports (paths, `file://`, `git://`, `ssh://`, scp-style).
pub fn transport_helper(url: &str) -> Option<&str> {
    let b = url.as_bytes();
    let mut i = 0;
    while i < b.len() && scheme_char(i == 0, b[i]) {
        i += 1;
    }
    if i > 0 && b[i..].starts_with(b"::") {
        return Some(&url[..i]);
    }
    // is_url: a scheme of scheme characters, then "://".
    if i > 0 && b[i..].starts_with(b"://") {
        let scheme = &url[..i];
        if !matches!(scheme, "file" | "git" | "ssh" | "git+ssh" | "ssh+git") {
            return Some(scheme);
        }
    }
    None
}

/// The helper of `url` when it is not one of git's own.
pub fn foreign_helper(url: &str) -> Option<&str> {
    transport_helper(url).filter(|h| !OWN_REMOTE_HELPERS.contains(h))
}

/// `url.<base>.insteadOf`: git replaces a matching prefix by `<base>`, so the rewritten URL's
/// transport is decided by `<base>` only when `<base>` already fixes its scheme: it starts with
/// a character no scheme starts with (a path), or its scheme characters end inside it at
/// something other than the start of `::`/`://` (`ex` could become `ext::...`, `ext:` too; an
/// empty base leaves the whole transport to the rest of the URL).
fn rewrite_base_is_safe(base: &str) -> bool {
    let b = base.as_bytes();
    let mut i = 0;
    while i < b.len() && scheme_char(i == 0, b[i]) {
        i += 1;
    }
    let rest = &base[i..];
    let fixed = if i == 0 {
        !base.is_empty()
    } else {
        !(rest.is_empty() || rest == ":" || rest == ":/")
    };
    fixed && foreign_helper(base).is_none()
}

/// Error from the parsers in this module: the text git would print, roughly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigSyntaxError(pub String);

fn c_isspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// git's `sq_dequote_step`: dequote one shell single-quoted word starting at `s[0] == '\''`.
/// Returns the word and the rest (`None` when the input ended right after the word).
/// Outside quotes only `\'` and `\!` are accepted, and only when followed by a new quote.
pub fn sq_dequote_step(s: &[u8]) -> Result<(Vec<u8>, Option<&[u8]>), ConfigSyntaxError> {
    let bogus = || ConfigSyntaxError("bad quoting".into());
    if s.first() != Some(&b'\'') {
        return Err(bogus());
    }
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        let Some(&c) = s.get(i) else {
            return Err(bogus());
        };
        if c != b'\'' {
            out.push(c);
            i += 1;
            continue;
        }
        // Stepped out of the quotes.
        i += 1;
        match s.get(i) {
            None => return Ok((out, None)),
            Some(b'\\')
                if matches!(s.get(i + 1), Some(b'\'') | Some(b'!'))
                    && s.get(i + 2) == Some(&b'\'') =>
            {
                out.push(s[i + 1]);
                i += 3; // past the opening quote of the resumed part
            }
            Some(_) => return Ok((out, Some(&s[i..]))),
        }
    }
}

/// git's `git_config_parse_key`: a last dot that is neither first nor last; the section
/// (before the first dot) and the variable (after the last) of `[A-Za-z0-9-]`, the variable
/// starting with a letter; the subsection anything but a newline. (An empty section, `.a.b`,
/// is accepted, as git does.)
fn is_git_config_key(key: &[u8]) -> bool {
    let Some(last_dot) = key.iter().rposition(|&c| c == b'.') else {
        return false;
    };
    if last_dot == 0 || last_dot + 1 == key.len() {
        return false;
    }
    let first_dot = key.iter().position(|&c| c == b'.').unwrap_or(last_dot);
    key.iter().enumerate().all(|(i, &c)| {
        if i < first_dot || i > last_dot {
            (c.is_ascii_alphanumeric() || c == b'-')
                && (i != last_dot + 1 || c.is_ascii_alphabetic())
        } else {
            c != b'\n'
        }
    })
}

/// git's `config_parse_pair`: the key must not be empty and must be a valid key.
fn config_pair(key: &[u8], value: Option<&[u8]>) -> Result<ConfigEntry, ConfigSyntaxError> {
    if key.is_empty() {
        return Err(ConfigSyntaxError("empty config key".into()));
    }
    if !is_git_config_key(key) {
        return Err(ConfigSyntaxError(format!(
            "invalid config key: {}",
            String::from_utf8_lossy(key)
        )));
    }
    let value = value.map(String::from_utf8_lossy);
    Ok(ConfigEntry::new(
        String::from_utf8_lossy(key),
        value.as_deref(),
    ))
}

/// git's `git_config_parse_parameter` for the old `'key=value'` form: split at the first
/// `=` (no `=` means the implicit boolean), trim the key (git's `strbuf_trim`); an empty key
/// is an error; then [`config_pair`].
fn parse_old_style(text: &[u8]) -> Result<ConfigEntry, ConfigSyntaxError> {
    let (key, value) = match text.iter().position(|&c| c == b'=') {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let start = key
        .iter()
        .position(|&c| !git_isspace(c))
        .unwrap_or(key.len());
    let end = key
        .iter()
        .rposition(|&c| !git_isspace(c))
        .map_or(start, |i| i + 1);
    let key = &key[start..end];
    if key.is_empty() {
        return Err(ConfigSyntaxError(format!(
            "bogus config parameter: {}",
            String::from_utf8_lossy(text)
        )));
    }
    config_pair(key, value)
}

/// git's own `isspace` (`sane_ctype`): space, tab, newline, carriage return; not `\v`, `\f`.
fn git_isspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Parse `GIT_CONFIG_PARAMETERS` exactly as git's `parse_config_env_list` does.
pub fn parse_config_parameters(env: &[u8]) -> Result<Vec<ConfigEntry>, ConfigSyntaxError> {
    let bogus = || ConfigSyntaxError("bogus format in GIT_CONFIG_PARAMETERS".into());
    let mut out = Vec::new();
    let mut cur: Option<&[u8]> = Some(env);
    while let Some(rest) = cur {
        if rest.is_empty() {
            break;
        }
        let (key, after) = sq_dequote_step(rest).map_err(|_| bogus())?;
        match after {
            None => {
                out.push(parse_old_style(&key)?);
                cur = None;
            }
            Some(a) if git_isspace(a[0]) => {
                out.push(parse_old_style(&key)?);
                cur = Some(a);
            }
            Some(a) if a[0] == b'=' => {
                let a = &a[1..];
                if a.first() == Some(&b'\'') {
                    let (value, after) = sq_dequote_step(a).map_err(|_| bogus())?;
                    if let Some(x) = after {
                        if !git_isspace(x[0]) {
                            return Err(bogus());
                        }
                    }
                    out.push(config_pair(&key, Some(&value))?);
                    cur = after;
                } else if a.is_empty() || git_isspace(a[0]) {
                    out.push(config_pair(&key, None)?);
                    cur = Some(a);
                } else {
                    return Err(bogus());
                }
            }
            Some(_) => return Err(bogus()),
        }
        if let Some(r) = cur {
            let skip = r.iter().take_while(|b| git_isspace(**b)).count();
            cur = Some(&r[skip..]);
        }
    }
    Ok(out)
}

/// `strtoul(s, &end, 10)` followed by git's checks on `GIT_CONFIG_COUNT`: trailing garbage is
/// an error ("bogus count"), a result above `INT_MAX` is an error ("too many entries").
/// Leading C whitespace and a sign are accepted; `-n` wraps as in C; leading zeros are decimal.
pub fn parse_config_count(s: &[u8]) -> Result<usize, ConfigSyntaxError> {
    let bogus = || ConfigSyntaxError("bogus count in GIT_CONFIG_COUNT".into());
    let mut i = 0;
    while i < s.len() && c_isspace(s[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let digits_start = i;
    let mut value: u64 = 0;
    let mut overflow = false;
    while i < s.len() && s[i].is_ascii_digit() {
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(s[i] - b'0')))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
        i += 1;
    }
    let end = if i == digits_start { 0 } else { i }; // no digits: endp = start of string
    if end < s.len() {
        return Err(bogus());
    }
    if overflow {
        value = u64::MAX; // ERANGE: ULONG_MAX
    } else if negative {
        value = value.wrapping_neg();
    }
    if value > i32::MAX as u64 {
        return Err(ConfigSyntaxError(
            "too many entries in GIT_CONFIG_COUNT".into(),
        ));
    }
    usize::try_from(value).map_err(|_| bogus())
}

/// Read the `GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>` entries the
/// way git does: a missing key or value for any `n < count` is an error.
pub fn parse_config_count_env(
    get: impl Fn(&str) -> Option<Vec<u8>>,
) -> Result<Vec<ConfigEntry>, ConfigSyntaxError> {
    let Some(count) = get("GIT_CONFIG_COUNT") else {
        return Ok(Vec::new());
    };
    let count = parse_config_count(&count)?;
    let mut out = Vec::new();
    for i in 0..count {
        let key = get(&format!("GIT_CONFIG_KEY_{i}"))
            .ok_or_else(|| ConfigSyntaxError(format!("missing config key GIT_CONFIG_KEY_{i}")))?;
        let value = get(&format!("GIT_CONFIG_VALUE_{i}")).ok_or_else(|| {
            ConfigSyntaxError(format!("missing config value GIT_CONFIG_VALUE_{i}"))
        })?;
        let key = String::from_utf8_lossy(&key).into_owned();
        let value = String::from_utf8_lossy(&value).into_owned();
        out.push(ConfigEntry::new(key, Some(&value)));
    }
    Ok(out)
}

/// A `-c <spec>` / `clone --config <spec>`: split at the first `=` (git's
/// `git_config_push_parameter`); no `=` is the implicit boolean.
pub fn parse_config_spec(spec: &str) -> Result<ConfigEntry, ConfigSyntaxError> {
    let (key, value) = match spec.find('=') {
        Some(i) => (&spec[..i], Some(&spec[i + 1..])),
        None => (spec, None),
    };
    if key.is_empty() {
        return Err(ConfigSyntaxError(format!("bogus config parameter: {spec}")));
    }
    Ok(ConfigEntry::new(key, value))
}

/// A `--config-env=<key>=<envvar>` spec: split at the LAST `=` (git's `git_config_push_env`).
/// Returns the key and the variable name; the value is the variable's value, which git
/// requires to exist.
pub fn parse_config_env_spec(spec: &str) -> Result<(String, String), ConfigSyntaxError> {
    match spec.rfind('=') {
        Some(i) if i > 0 && i + 1 < spec.len() => {
            Ok((spec[..i].to_owned(), spec[i + 1..].to_owned()))
        }
        _ => Err(ConfigSyntaxError(format!("invalid config format: {spec}"))),
    }
}

/// git's `split_cmdline` (alias bodies): whitespace separates words; `'...'` and `"..."`
/// quote; a backslash outside single quotes escapes the next character.
pub fn split_cmdline(s: &str) -> Result<Vec<String>, ConfigSyntaxError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_ascii_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => cur.push(c),
            (_, '\\') => {
                let Some(n) = chars.next() else {
                    return Err(ConfigSyntaxError("cmdline ends with \\".into()));
                };
                cur.push(n);
                in_word = true;
            }
            (_, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(ConfigSyntaxError("unclosed quote".into()));
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(k: &str, v: Option<&str>) -> ConfigEntry {
        ConfigEntry::new(k, v)
    }

    #[test]
    fn config_parameters_table() {
        struct Case {
            input: &'static str,
            want: Result<Vec<ConfigEntry>, ()>,
        }
        let cases = [
            Case {
                input: "",
                want: Ok(vec![]),
            },
            Case {
                input: "'a.b=c'",
                want: Ok(vec![e("a.b", Some("c"))]),
            },
            Case {
                input: "'a.b'",
                want: Ok(vec![e("a.b", None)]),
            },
            Case {
                input: "'a.b'='c d'",
                want: Ok(vec![e("a.b", Some("c d"))]),
            },
            Case {
                input: "'a.b'=",
                want: Ok(vec![e("a.b", None)]),
            },
            Case {
                input: "'credential.https://h.helper'='!cmd'",
                want: Ok(vec![e("credential.https://h.helper", Some("!cmd"))]),
            },
            Case {
                input: "'x.y=1'  'core.pager'='less'",
                want: Ok(vec![e("x.y", Some("1")), e("core.pager", Some("less"))]),
            },
            Case {
                input: r"'a.it'\''s.x=1'",
                want: Ok(vec![e("a.it's.x", Some("1"))]),
            },
            Case {
                input: r"'a.b=\!x'",
                want: Ok(vec![e("a.b", Some(r"\!x"))]),
            },
            Case {
                input: r"'a.b='\!'x'",
                want: Ok(vec![e("a.b", Some("!x"))]),
            },
            Case {
                input: "a.b=c",
                want: Err(()),
            },
            Case {
                input: "'a.b",
                want: Err(()),
            },
            Case {
                input: "'a.b'x",
                want: Err(()),
            },
            Case {
                input: "'a.b'='c'x",
                want: Err(()),
            },
            Case {
                input: "'=x'",
                want: Err(()),
            },
            // git_config_parse_key: an empty key, no section, a quote in the section.
            Case {
                input: "''=",
                want: Err(()),
            },
            Case {
                input: "'=a'=",
                want: Err(()),
            },
            Case {
                input: r"'it'\''s.x=1'",
                want: Err(()),
            },
        ];
        for c in cases {
            let got = parse_config_parameters(c.input.as_bytes()).map_err(|_| ());
            assert_eq!(got, c.want, "input {:?}", c.input);
        }
    }

    #[test]
    fn config_count_matches_strtoul() {
        let cases: &[(&str, Result<usize, ()>)] = &[
            ("", Ok(0)),
            ("1", Ok(1)),
            (" 1", Ok(1)),
            ("\t+2", Ok(2)),
            ("010", Ok(10)),
            ("0x1", Err(())),
            ("1 ", Err(())),
            (" ", Err(())),
            ("-0", Ok(0)),
            ("-1", Err(())),
            ("2147483647", Ok(2147483647)),
            ("2147483648", Err(())),
            ("99999999999999999999999", Err(())),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_config_count(input.as_bytes()).map_err(|_| ()),
                *want,
                "input {input:?}"
            );
        }
    }

    #[test]
    fn key_classifier_table() {
        let refused: &[(&str, Option<&str>)] = &[
            ("core.fsmonitor", Some("/tmp/x")),
            ("core.fsmonitor", Some("touch pwned")),
            ("core.hooksPath", Some("/dev/null")),
            ("CORE.HOOKSPATH", Some("x")),
            ("core.sshCommand", Some("x")),
            ("credential.helper", Some("x")),
            ("credential.helper", Some("/usr/bin/gh auth git-credential")),
            ("credential.helper", Some("!gh auth git-credential")),
            ("credential.https://h.helper", Some("!x")),
            ("diff.external", Some("x")),
            ("include.path", Some("x")),
            ("includeIf.gitdir:/x.path", Some("x")),
            ("sequence.editor", Some("x")),
            ("imap.tunnel", Some("x")),
            ("IMAP.Tunnel", Some("x")),
            ("remote.origin.url", Some("evil::x")),
            ("remote.origin.url", Some("ext::sh -c x")),
            ("remote.origin.pushurl", Some("foo://x")),
            ("submodule.x.url", Some("evil::x")),
            ("url.ex.insteadOf", Some("https://")),
            ("url.ext:.insteadOf", Some("/")),
            ("url.evil://.insteadOf", Some("https://")),
            ("core.gitProxy", Some("x")),
            ("core.alternateRefsCommand", Some("x")),
            ("uploadpack.packObjectsHook", Some("x")),
            ("remote.origin.uploadpack", Some("x")),
            ("remote.origin.receivepack", Some("x")),
            ("remote.origin.vcs", Some("x")),
            ("protocol.ext.allow", Some("always")),
            ("protocol.ext.allow", Some("user")),
            ("protocol.ext.allow", None),
            ("protocol.allow", Some("always")),
            ("url.ext::sh -c x.insteadOf", Some("https://")),
            ("filter.lfs.clean", Some("x")),
            ("filter.x.smudge", Some("x")),
            ("filter.x.process", Some("x")),
            ("diff.x.command", Some("x")),
            ("diff.x.textconv", Some("x")),
            ("merge.x.driver", Some("x")),
            ("gpg.program", Some("x")),
            ("gpg.ssh.program", Some("x")),
            ("gpg.ssh.defaultKeyCommand", Some("x")),
            ("interactive.diffFilter", Some("x")),
            ("difftool.x.cmd", Some("x")),
            ("mergetool.x.cmd", Some("x")),
            ("browser.x.cmd", Some("x")),
            ("man.x.cmd", Some("x")),
            ("sendemail.smtpServer", Some("/bin/x")),
            ("sendemail.x.toCmd", Some("x")),
            ("submodule.x.update", Some("!x")),
            ("init.templateDir", Some("/x")),
            ("hook.pre-commit.command", Some("x")),
            ("alias.x", Some("!sh")),
            ("alias.x", Some("  !sh")),
            ("tar.tgz.command", Some("x")),
            ("pull.twohead", Some("evil")),
            ("pull.octopus", Some("octopus evil")),
        ];
        for (k, v) in refused {
            assert!(
                classify_key(k, *v, "-c").is_err(),
                "{k}={v:?} must be refused"
            );
        }
        let allowed: &[(&str, Option<&str>)] = &[
            ("user.name", Some("x")),
            ("core.fsmonitor", Some("false")),
            ("core.fsmonitor", Some("OFF")),
            ("core.fsmonitor", Some("0")),
            ("core.fsmonitor", Some("")),
            ("core.autocrlf", Some("true")),
            ("submodule.x.update", Some("rebase")),
            // Neutralised by GIT_EDITOR=:, GIT_PAGER=cat, GIT_ASKPASS= (empty).
            ("core.askpass", Some("x")),
            ("core.editor", Some("vim")),
            ("core.pager", Some("less -R")),
            ("pager.log", Some("x")),
            ("pager.branch", Some("false")),
            // Not command-running.
            ("core.worktree", Some("x")),
            ("core.fsmonitor", None),
            ("core.fsmonitor", Some("true")),
            ("protocol.file.allow", Some("always")),
            ("protocol.allow", Some("never")),
            ("protocol.ext.allow", Some("never")),
            ("credential.helper", Some("")),
            ("credential.helper", Some("store")),
            ("credential.helper", Some("cache --timeout=3600")),
            ("remote.origin.url", Some("git@github.com:o/r.git")),
            ("remote.origin.url", Some("ssh://h/r")),
            ("remote.origin.url", Some("/srv/r.git")),
            ("remote.origin.url", Some("../r")),
            ("remote.origin.url", Some("file:///srv/r")),
            ("remote.origin.pushurl", Some("https://h/r")),
            ("remote.origin.vcs", Some("https")),
            ("url.git@github.com:.insteadOf", Some("https://github.com/")),
            ("url.https://github.com/.insteadOf", Some("gh:")),
            ("url./srv/mirror/.insteadOf", Some("https://h/")),
            ("trace2.eventTarget", Some("/tmp/t")),
            ("pull.twohead", Some("ort")),
            ("alias.co", Some("checkout")),
            ("remote.origin.url", Some("https://example.invalid/x")),
            ("color.ui", Some("auto")),
        ];
        for (k, v) in allowed {
            assert!(
                classify_key(k, *v, "-c").is_ok(),
                "{k}={v:?} must be allowed"
            );
        }
    }

    #[test]
    fn transport_helpers_like_transport_get() {
        let cases: &[(&str, Option<&str>)] = &[
            ("ext::sh -c x", Some("ext")),
            ("evil::x", Some("evil")),
            ("a+b.c-d::x", Some("a+b.c-d")),
            ("foo://h/r", Some("foo")),
            ("https://h/r", Some("https")),
            ("http://h/r", Some("http")),
            ("fd::3", Some("fd")),
            ("ssh://h/r", None),
            ("git://h/r", None),
            ("file:///r", None),
            ("git+ssh://h/r", None),
            ("git@github.com:o/r", None),
            ("h:r", None),
            ("/srv/r.git", None),
            ("../r", None),
            ("+x::y", None),
            ("HEAD:refs/heads/x", None),
            ("::x", None),
        ];
        for (url, want) in cases {
            assert_eq!(transport_helper(url), *want, "{url}");
        }
        assert_eq!(foreign_helper("https://h"), None);
        assert_eq!(foreign_helper("hg::https://h"), Some("hg"));
        for (base, safe) in [
            ("git@github.com:", true),
            ("https://github.com/", true),
            ("/srv/mirror/", true),
            ("ex", false),
            ("ext:", false),
            ("ext:/", false),
            ("ext::", false),
            ("evil://", false),
            ("", false),
        ] {
            assert_eq!(rewrite_base_is_safe(base), safe, "{base:?}");
        }
    }

    #[test]
    fn split_cmdline_like_git() {
        assert_eq!(
            split_cmdline(r#"commit -m "a b" 'c d' e\ f"#).unwrap(),
            vec!["commit", "-m", "a b", "c d", "e f"]
        );
        assert!(split_cmdline("'x").is_err());
    }

    #[test]
    fn sq_dequote_step_resumes_after_escaped_quote() {
        let (w, rest) = sq_dequote_step(br"'a'\''b' tail").unwrap();
        assert_eq!(w, b"a'b");
        assert_eq!(rest, Some(&b" tail"[..]));
    }
}
