//! Per-provider argument policy, allow-list first.
//!
//! Each provider has a table of flags ([`FlagRule`]) and subcommands. Arguments are walked the
//! way the provider's own parser walks them:
//!
//! * a known safe flag passes (its value is consumed when it takes one);
//! * a known dangerous flag is refused in every profile (`dangerous_flag`);
//! * a flag the session manages (autonomy, approval, tool allow-lists) is refused
//!   (`managed_flag`): the user cannot supply or override it;
//! * a flag with a checked value passes only with an allowed value (`refused_value`,
//!   `refused_config_key`);
//! * an unknown flag is refused in `strict` (`unknown_flag`) and passes in other profiles;
//! * bundled short options (`-abc`) are refused (`bundled_short_options`), and a flag's value may
//!   not itself look like a flag unless written `--flag=value` (`missing_value`);
//! * the first operand is the subcommand: refused ones are refused (`refused_subcommand`);
//!   in `strict` a single lower-case word that is not an allowed subcommand is refused too
//!   (`unknown_subcommand`), because the CLI would run it as a subcommand rather than a prompt;
//! * after `--` everything is an operand (a prompt).
//!
//! The managed arguments from [`managed_args`] are then prepended.

mod claude;
mod codex;
mod copilot;
mod gemini;

use std::ffi::OsString;
use std::fmt;

use execguard_policy::Profile;

use crate::session::{Agent, Autonomy};

/// Why an argument list was refused. `code()` is stable snake_case; `Display` is one line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderRefusal {
    /// A flag known to widen what the provider may do.
    DangerousFlag { flag: String, reason: &'static str },
    /// A flag the session sets itself.
    ManagedFlag { flag: String },
    /// A flag not on the allow-list (strict only).
    UnknownFlag { flag: String },
    /// A subcommand known to be unsafe in a managed session.
    RefusedSubcommand { subcommand: String },
    /// A word in subcommand position that is not an allowed subcommand (strict only).
    UnknownSubcommand { subcommand: String },
    /// A configuration override whose key is not on the allow-list.
    RefusedConfigKey { key: String },
    /// A flag whose value is not allowed.
    RefusedValue { flag: String, value: String },
    /// `-abc`: several short options in one argument.
    BundledShortOptions { arg: String },
    /// A flag that needs a value got none (or a flag-like one).
    MissingValue { flag: String },
    /// An argument that is not valid UTF-8.
    NonUtf8Argument { index: usize },
}

impl ProviderRefusal {
    /// Stable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::DangerousFlag { .. } => "dangerous_flag",
            Self::ManagedFlag { .. } => "managed_flag",
            Self::UnknownFlag { .. } => "unknown_flag",
            Self::RefusedSubcommand { .. } => "refused_subcommand",
            Self::UnknownSubcommand { .. } => "unknown_subcommand",
            Self::RefusedConfigKey { .. } => "refused_config_key",
            Self::RefusedValue { .. } => "refused_value",
            Self::BundledShortOptions { .. } => "bundled_short_options",
            Self::MissingValue { .. } => "missing_value",
            Self::NonUtf8Argument { .. } => "non_utf8_argument",
        }
    }
}

impl fmt::Display for ProviderRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused {}: ", self.code())?;
        match self {
            Self::DangerousFlag { flag, reason } => write!(f, "{flag} ({reason})"),
            Self::ManagedFlag { flag } => write!(f, "{flag} is set by the session"),
            Self::UnknownFlag { flag } => write!(f, "{flag} is not on the allow-list"),
            Self::RefusedSubcommand { subcommand } => write!(f, "subcommand {subcommand:?}"),
            Self::UnknownSubcommand { subcommand } => {
                write!(
                    f,
                    "{subcommand:?} is not an allowed subcommand (quote a multi-word prompt)"
                )
            }
            Self::RefusedConfigKey { key } => {
                write!(f, "config key {key:?} is not on the allow-list")
            }
            Self::RefusedValue { flag, value } => write!(f, "{flag} {value:?}"),
            Self::BundledShortOptions { arg } => {
                write!(f, "{arg} bundles short options; pass them separately")
            }
            Self::MissingValue { flag } => write!(
                f,
                "{flag} needs a value (use {flag}=VALUE for values starting with -)"
            ),
            Self::NonUtf8Argument { index } => write!(f, "argument {index} is not UTF-8"),
        }
    }
}

impl std::error::Error for ProviderRefusal {}

/// How many values a flag takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arity {
    None,
    Required,
    /// Takes the next argument as its value only when it does not look like a flag.
    Optional,
}

/// What happens to a flag.
#[derive(Clone, Copy)]
pub(crate) enum Verdict {
    Allow,
    Dangerous(&'static str),
    Managed,
    /// Allowed only when the value passes the check.
    Check(fn(&str, &str, &Ctx) -> Result<(), ProviderRefusal>),
}

pub(crate) struct FlagRule {
    pub names: &'static [&'static str],
    pub arity: Arity,
    pub verdict: Verdict,
}

/// A table row: a flag that takes no value.
pub(crate) const fn switch(names: &'static [&'static str], verdict: Verdict) -> FlagRule {
    FlagRule {
        names,
        arity: Arity::None,
        verdict,
    }
}

/// A table row: a flag that takes a value.
pub(crate) const fn valued(names: &'static [&'static str], verdict: Verdict) -> FlagRule {
    FlagRule {
        names,
        arity: Arity::Required,
        verdict,
    }
}

/// A table row: a flag whose value is optional ([`Arity::Optional`]).
pub(crate) const fn maybe_valued(names: &'static [&'static str], verdict: Verdict) -> FlagRule {
    FlagRule {
        names,
        arity: Arity::Optional,
        verdict,
    }
}

/// Subcommands: allowed ones may restrict their own first operand.
pub(crate) struct SubcommandRule {
    pub name: &'static str,
    /// `None`: any operand; `Some(list)`: the next operand must be in the list.
    pub only: Option<&'static [&'static str]>,
}

pub(crate) struct Spec {
    pub flags: &'static [FlagRule],
    /// Dangerous by prefix (after normalisation), e.g. `--system-prompt*`.
    pub dangerous_prefixes: &'static [(&'static str, &'static str)],
    pub subcommands: &'static [SubcommandRule],
    pub refused_subcommands: &'static [&'static str],
    /// Normalises a flag name before lookup (Gemini's parser is case and separator tolerant).
    pub normalize: fn(&str) -> String,
    /// Extra dangerous-name test on the normalised name.
    pub dangerous_name: fn(&str) -> Option<&'static str>,
}

/// Context a value check may need.
pub(crate) struct Ctx {
    pub profile: Profile,
}

pub(crate) fn identity(s: &str) -> String {
    s.to_owned()
}

pub(crate) fn never(_: &str) -> Option<&'static str> {
    None
}

fn spec(agent: Agent) -> &'static Spec {
    match agent {
        Agent::Codex => &codex::SPEC,
        Agent::Claude => &claude::SPEC,
        Agent::Gemini => &gemini::SPEC,
        Agent::Copilot => &copilot::SPEC,
    }
}

fn looks_like_subcommand(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Checks the user's provider arguments and returns the full argument list to exec:
/// the managed arguments, then the user's arguments unchanged.
pub fn check_provider_args(
    agent: Agent,
    profile: Profile,
    autonomy: Autonomy,
    args: &[OsString],
) -> Result<Vec<OsString>, ProviderRefusal> {
    let mut user: Vec<&str> = Vec::with_capacity(args.len());
    for (index, a) in args.iter().enumerate() {
        user.push(
            a.to_str()
                .ok_or(ProviderRefusal::NonUtf8Argument { index })?,
        );
    }
    let spec = spec(agent);
    let ctx = Ctx { profile };
    let strict = profile == Profile::Strict;

    let mut operands: Vec<&str> = Vec::new();
    let mut unknown_before_subcommand = false;
    let mut i = 0;
    while i < user.len() {
        let arg = user[i];
        i += 1;
        if arg == "--" {
            operands.extend(&user[i..]);
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            operands.push(arg);
            continue;
        }
        if !arg.starts_with("--") && arg.len() > 2 {
            return Err(ProviderRefusal::BundledShortOptions {
                arg: arg.to_owned(),
            });
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (arg, None),
        };
        let norm = (spec.normalize)(name);
        if let Some(reason) = (spec.dangerous_name)(&norm) {
            return Err(ProviderRefusal::DangerousFlag {
                flag: name.to_owned(),
                reason,
            });
        }
        if let Some((_, reason)) = spec
            .dangerous_prefixes
            .iter()
            .find(|(p, _)| norm.starts_with(p))
        {
            return Err(ProviderRefusal::DangerousFlag {
                flag: name.to_owned(),
                reason,
            });
        }
        let Some(rule) = spec
            .flags
            .iter()
            .find(|r| r.names.iter().any(|n| (spec.normalize)(n) == norm))
        else {
            if strict {
                return Err(ProviderRefusal::UnknownFlag {
                    flag: name.to_owned(),
                });
            }
            if operands.is_empty() {
                unknown_before_subcommand = true;
            }
            continue;
        };
        match rule.verdict {
            Verdict::Dangerous(reason) => {
                return Err(ProviderRefusal::DangerousFlag {
                    flag: name.to_owned(),
                    reason,
                })
            }
            Verdict::Managed => {
                return Err(ProviderRefusal::ManagedFlag {
                    flag: name.to_owned(),
                })
            }
            Verdict::Allow | Verdict::Check(_) => {}
        }
        let value = match (rule.arity, inline) {
            (Arity::None, Some(v)) => {
                return Err(ProviderRefusal::RefusedValue {
                    flag: name.to_owned(),
                    value: v.to_owned(),
                })
            }
            (Arity::None, None) => None,
            (_, Some(v)) => Some(v),
            (Arity::Required, None) => match user.get(i) {
                Some(v) if !v.starts_with('-') || *v == "-" => {
                    i += 1;
                    Some(*v)
                }
                _ => {
                    return Err(ProviderRefusal::MissingValue {
                        flag: name.to_owned(),
                    })
                }
            },
            (Arity::Optional, None) => match user.get(i) {
                Some(v) if !v.starts_with('-') => {
                    i += 1;
                    Some(*v)
                }
                _ => None,
            },
        };
        if let (Verdict::Check(check), Some(v)) = (rule.verdict, value) {
            check(name, v, &ctx)?;
        } else if let (Verdict::Check(_), None) = (rule.verdict, value) {
            return Err(ProviderRefusal::MissingValue {
                flag: name.to_owned(),
            });
        }
    }

    check_subcommand(spec, &operands, strict, unknown_before_subcommand)?;

    let mut out: Vec<OsString> = managed_args(agent, profile, autonomy, &user)
        .into_iter()
        .map(OsString::from)
        .collect();
    out.extend(args.iter().cloned());
    Ok(out)
}

fn check_subcommand(
    spec: &Spec,
    operands: &[&str],
    strict: bool,
    ambiguous: bool,
) -> Result<(), ProviderRefusal> {
    // After an unknown flag (non-strict) its value may have taken the first operand's place:
    // check the second operand as a subcommand too.
    let candidates = if ambiguous {
        operands.len().min(2)
    } else {
        operands.len().min(1)
    };
    for (pos, word) in operands.iter().take(candidates).enumerate() {
        if spec.refused_subcommands.contains(word) {
            return Err(ProviderRefusal::RefusedSubcommand {
                subcommand: (*word).to_owned(),
            });
        }
        if let Some(rule) = spec.subcommands.iter().find(|r| r.name == *word) {
            if let (Some(only), Some(next)) = (rule.only, operands.get(pos + 1)) {
                if !only.contains(next) {
                    return Err(ProviderRefusal::RefusedSubcommand {
                        subcommand: format!("{word} {next}"),
                    });
                }
            }
            return Ok(());
        }
        if pos == 0 && strict && looks_like_subcommand(word) {
            return Err(ProviderRefusal::UnknownSubcommand {
                subcommand: (*word).to_owned(),
            });
        }
    }
    Ok(())
}

/// The arguments the session prepends for `agent` (from the autonomy table; Codex also gets
/// `--profile <profile>` unless the user named the same profile, Copilot its fixed hardening).
pub fn managed_args(
    agent: Agent,
    profile: Profile,
    autonomy: Autonomy,
    user: &[&str],
) -> Vec<String> {
    let v = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    match agent {
        Agent::Codex => {
            let mut out = v(match autonomy {
                Autonomy::Yolo => &["--ask-for-approval", "never"],
                Autonomy::Prompt => &["--ask-for-approval", "on-request"],
            });
            if !codex::names_profile(user) {
                out.extend(v(&["--profile", profile.as_str()]));
            }
            out
        }
        Agent::Claude => v(match autonomy {
            Autonomy::Yolo => &["--permission-mode", "bypassPermissions"],
            Autonomy::Prompt => &["--permission-mode", "default"],
        }),
        Agent::Gemini => v(match autonomy {
            Autonomy::Yolo => &["--approval-mode", "yolo"],
            Autonomy::Prompt => &["--approval-mode", "default"],
        }),
        Agent::Copilot => {
            let mut out = v(match autonomy {
                Autonomy::Yolo => &[
                    "--available-tools=view,create,edit,apply_patch,grep,glob",
                    "--allow-tool=read",
                    "--allow-tool=write",
                    "--no-ask-user",
                ],
                Autonomy::Prompt => &["--available-tools=view,create,edit,apply_patch,grep,glob"],
            });
            out.extend(v(copilot::HARDENING));
            out.extend(v(&["--log-dir", copilot::LOG_DIR]));
            out
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn check(
        agent: Agent,
        profile: Profile,
        args: &[&str],
    ) -> Result<Vec<String>, ProviderRefusal> {
        let os: Vec<OsString> = args.iter().map(OsString::from).collect();
        check_provider_args(agent, profile, Autonomy::Yolo, &os)
            .map(|v| v.into_iter().map(|s| s.into_string().unwrap()).collect())
    }

    /// `(args, expected code or "ok")` checked in strict and, for non-"unknown" codes, in
    /// development too.
    pub fn run_table(agent: Agent, table: &[(&[&str], &str)]) {
        for (args, want) in table {
            for profile in [Profile::Strict, Profile::Development, Profile::Breakglass] {
                let got = check(agent, profile, args);
                let code = match &got {
                    Ok(_) => "ok",
                    Err(e) => e.code(),
                };
                let expected = match (*want, profile) {
                    (
                        "unknown_flag" | "unknown_subcommand",
                        Profile::Development | Profile::Breakglass,
                    ) => "ok",
                    (w, _) => w,
                };
                assert_eq!(code, expected, "{agent} {profile:?} {args:?}: {got:?}");
            }
        }
    }

    #[test]
    fn managed_args_follow_the_autonomy_table() {
        let cases: [(Agent, Autonomy, &[&str]); 8] = [
            (
                Agent::Codex,
                Autonomy::Yolo,
                &["--ask-for-approval", "never", "--profile", "strict"],
            ),
            (
                Agent::Codex,
                Autonomy::Prompt,
                &["--ask-for-approval", "on-request", "--profile", "strict"],
            ),
            (
                Agent::Claude,
                Autonomy::Yolo,
                &["--permission-mode", "bypassPermissions"],
            ),
            (
                Agent::Claude,
                Autonomy::Prompt,
                &["--permission-mode", "default"],
            ),
            (Agent::Gemini, Autonomy::Yolo, &["--approval-mode", "yolo"]),
            (
                Agent::Gemini,
                Autonomy::Prompt,
                &["--approval-mode", "default"],
            ),
            (
                Agent::Copilot,
                Autonomy::Yolo,
                &[
                    "--available-tools=view,create,edit,apply_patch,grep,glob",
                    "--allow-tool=read",
                    "--allow-tool=write",
                    "--no-ask-user",
                ],
            ),
            (
                Agent::Copilot,
                Autonomy::Prompt,
                &["--available-tools=view,create,edit,apply_patch,grep,glob"],
            ),
        ];
        for (agent, autonomy, prefix) in cases {
            let out = check_provider_args(
                agent,
                Profile::Strict,
                autonomy,
                &[OsString::from("--help")],
            )
            .unwrap();
            let out: Vec<String> = out.into_iter().map(|s| s.into_string().unwrap()).collect();
            assert_eq!(&out[..prefix.len()], prefix, "{agent} {autonomy:?}");
            assert_eq!(out.last().map(String::as_str), Some("--help"));
            if agent == Agent::Copilot {
                for fixed in [
                    "--no-auto-update",
                    "--no-remote",
                    "--no-remote-export",
                    "--disable-builtin-mcps",
                    "--no-custom-instructions",
                    "--disallow-temp-dir",
                    "--log-dir",
                ] {
                    assert!(out.iter().any(|a| a == fixed), "copilot lacks {fixed}");
                }
            }
        }
    }

    #[test]
    fn common_rules_apply_to_every_provider() {
        for agent in Agent::ALL {
            run_table(
                agent,
                &[
                    (&[], "ok"),
                    (&["--help"], "ok"),
                    (&["fix the failing test"], "ok"),
                    (&["--", "--dangerously-skip-permissions", "--yolo"], "ok"),
                    (&["-abc"], "bundled_short_options"),
                    (&["--totally-new-flag"], "unknown_flag"),
                    (&["frobnicate"], "unknown_subcommand"),
                ],
            );
            let bad = [
                OsString::from("ok"),
                std::os::unix::ffi::OsStringExt::from_vec(vec![0xff]),
            ];
            let err =
                check_provider_args(agent, Profile::Strict, Autonomy::Yolo, &bad).unwrap_err();
            assert_eq!(err, ProviderRefusal::NonUtf8Argument { index: 1 });
        }
    }

    #[test]
    fn refusals_display_one_line_with_their_code() {
        let err = check(
            Agent::Claude,
            Profile::Strict,
            &["--dangerously-skip-permissions"],
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("refused dangerous_flag: --dangerously-skip-permissions"),
            "{text}"
        );
        assert!(!text.contains('\n'));
    }

    #[test]
    fn an_unknown_flag_cannot_hide_a_refused_subcommand() {
        // In development the unknown flag might take "x" as its value; "mcp" is still caught.
        let err = check(
            Agent::Claude,
            Profile::Development,
            &["--new-flag", "x", "mcp", "add", "evil"],
        )
        .unwrap_err();
        assert_eq!(err.code(), "refused_subcommand");
    }
}
