//! Validation of the managed environment the host launcher hands to the entrypoint.
//!
//! | variable | values | when absent |
//! | --- | --- | --- |
//! | `AGENT_NAME` | `codex` `claude` `gemini` `copilot` | refused |
//! | `EXECGUARD_PROFILE` | `strict` `development` `build` `breakglass` | `strict` |
//! | `EXECGUARD_BREAKGLASS_ACK` | today's date (UTC) as `YYYY-MM-DD` | breakglass refused |
//! | `EXECGUARD_AUTONOMY` | `yolo` `prompt` | refused |
//! | `EXECGUARD_MUTABILITY` | `ephemeral` `readonly` | refused |
//! | `EXECGUARD_HOST_UID`, `EXECGUARD_HOST_GID` | decimal, not 0, not 4294967295 | refused |
//! | `EXECGUARD_HOST_USER` | any; sanitised into a passwd name | `agent` |
//! | `EXECGUARD_MANIFEST_SHA256` | 64 lower-case hex digits: sha256 of the manifest | refused |
//! | `EXECGUARD_ALLOW_UNSEALED` | `1`: run strict without the Landlock seal when the kernel cannot enforce it (recorded as reduced assurance) | refuse to start unsealed |
//!
//! Values are exact: no trimming, no case folding. A refusal carries a stable reason code.

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::time::{SystemTime, UNIX_EPOCH};

use execguard_policy::Profile;

use crate::session::{Agent, Autonomy, Mutability};
use crate::user::sanitize_user_name;

pub const VAR_AGENT: &str = "AGENT_NAME";
pub const VAR_PROFILE: &str = "EXECGUARD_PROFILE";
pub const VAR_BREAKGLASS_ACK: &str = "EXECGUARD_BREAKGLASS_ACK";
pub const VAR_AUTONOMY: &str = "EXECGUARD_AUTONOMY";
pub const VAR_MUTABILITY: &str = "EXECGUARD_MUTABILITY";
pub const VAR_HOST_UID: &str = "EXECGUARD_HOST_UID";
pub const VAR_HOST_GID: &str = "EXECGUARD_HOST_GID";
pub const VAR_HOST_USER: &str = "EXECGUARD_HOST_USER";
pub const VAR_MANIFEST_SHA256: &str = "EXECGUARD_MANIFEST_SHA256";
pub const VAR_ALLOW_UNSEALED: &str = "EXECGUARD_ALLOW_UNSEALED";
/// `1`: the operator accepts a strict session whose write set is not all `noexec` (the guard
/// then still refuses written objects to dlopen and the loader, but a program that maps a
/// written file executable itself is not stopped).
pub const VAR_ALLOW_EXEC_MAPPINGS: &str = "EXECGUARD_ALLOW_EXEC_MAPPINGS";
/// Today's UTC date: the operator lets the provider load the workspace's own provider
/// configuration (`.claude/settings.json`, `.mcp.json`, ...) in a strict session.
pub const VAR_REPO_CONFIG_ACK: &str = "EXECGUARD_REPO_CONFIG_ACK";

/// Every variable this module reads; none of them is passed on to the provider.
pub const MANAGED_VARS: [&str; 12] = [
    VAR_AGENT,
    VAR_PROFILE,
    VAR_BREAKGLASS_ACK,
    VAR_AUTONOMY,
    VAR_MUTABILITY,
    VAR_HOST_UID,
    VAR_HOST_GID,
    VAR_HOST_USER,
    VAR_MANIFEST_SHA256,
    VAR_ALLOW_UNSEALED,
    VAR_ALLOW_EXEC_MAPPINGS,
    VAR_REPO_CONFIG_ACK,
];

/// The validated managed environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionEnv {
    pub agent: Agent,
    pub profile: Profile,
    pub autonomy: Autonomy,
    pub mutability: Mutability,
    pub host_uid: u32,
    pub host_gid: u32,
    /// Sanitised passwd/group name for the mapped user.
    pub user_name: String,
    /// Lower-case hex sha256 of the control-plane manifest, pinned by the host.
    pub manifest_sha256: String,
    /// The operator accepts a strict session without the Landlock seal when the kernel cannot
    /// enforce it.
    pub allow_unsealed: bool,
    /// The operator accepts a strict session whose write set is not all `noexec`.
    pub allow_exec_mappings: bool,
    /// The operator acknowledged (today) that the workspace's provider configuration loads.
    pub repo_config_acknowledged: bool,
}

/// Why the managed environment was refused. `code()` is stable; `Display` is one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvRefusal {
    code: &'static str,
    detail: String,
}

impl EnvRefusal {
    pub fn new(code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
        }
    }

    /// Stable snake_case reason code.
    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Display for EnvRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused {}: {}", self.code, self.detail)
    }
}

impl std::error::Error for EnvRefusal {}

/// 9999-12-31T23:59:59Z, the last second humantime writes (its `Display` fails past it).
const LAST_SECOND: u64 = 253_402_300_799;

/// A calendar date (UTC), used for the breakglass acknowledgment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: i64,
    pub month: u32,
    pub day: u32,
}

impl Date {
    /// Today in UTC from the system clock.
    pub fn today_utc() -> Self {
        Self::of(SystemTime::now())
    }

    /// The civil date of days since 1970-01-01 (up to the last day [`Self::of`] writes).
    pub fn from_unix_days(days: u64) -> Self {
        let secs = days.saturating_mul(86_400).min(LAST_SECOND);
        Self::of(UNIX_EPOCH + std::time::Duration::from_secs(secs))
    }

    /// The UTC date of `t`: the calendar is humantime's (RFC 3339, `YYYY-MM-DDTHH:MM:SSZ`). A
    /// clock before the epoch reads as the epoch, as before; humantime formats up to 9999.
    fn of(t: SystemTime) -> Self {
        let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let t = UNIX_EPOCH + std::time::Duration::from_secs(secs.min(LAST_SECOND));
        let rfc3339 = humantime::format_rfc3339_seconds(t).to_string();
        Self::parse(&rfc3339[..10]).expect("humantime writes YYYY-MM-DD first")
    }

    /// Parses exactly `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let digits = |r: std::ops::Range<usize>| -> Option<u32> {
            let part = &s[r];
            if part.bytes().all(|c| c.is_ascii_digit()) {
                part.parse().ok()
            } else {
                None
            }
        };
        let year = digits(0..4)?;
        let month = digits(5..7)?;
        let day = digits(8..10)?;
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        Some(Self {
            year: i64::from(year),
            month,
            day,
        })
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

fn lookup<'a>(env: &'a [(&OsStr, &OsStr)], name: &str) -> Option<&'a OsStr> {
    env.iter()
        .rev()
        .find(|(k, _)| k.as_bytes() == name.as_bytes())
        .map(|(_, v)| *v)
}

fn text<'a>(env: &'a [(&OsStr, &OsStr)], name: &str) -> Result<Option<&'a str>, EnvRefusal> {
    if env
        .iter()
        .filter(|(k, _)| k.as_bytes() == name.as_bytes())
        .count()
        > 1
    {
        return Err(EnvRefusal::new(
            "env_duplicate",
            format!("{name} is set more than once"),
        ));
    }
    match lookup(env, name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(Some)
            .ok_or_else(|| EnvRefusal::new("env_not_unicode", format!("{name} is not UTF-8"))),
    }
}

fn required<'a>(
    env: &'a [(&OsStr, &OsStr)],
    name: &str,
    missing: &'static str,
) -> Result<&'a str, EnvRefusal> {
    text(env, name)?.ok_or_else(|| EnvRefusal::new(missing, format!("{name} is not set")))
}

/// Parses a host id: plain decimal, no sign, no leading zero, not root, not the "-1" sentinel.
fn host_id(
    env: &[(&OsStr, &OsStr)],
    name: &str,
    missing: &'static str,
    invalid: &'static str,
    root: &'static str,
) -> Result<u32, EnvRefusal> {
    let raw = required(env, name, missing)?;
    let well_formed = !raw.is_empty()
        && raw.len() <= 10
        && raw.bytes().all(|c| c.is_ascii_digit())
        && !(raw.len() > 1 && raw.starts_with('0'));
    let id = if well_formed {
        raw.parse::<u32>().ok()
    } else {
        None
    };
    match id {
        Some(0) => Err(EnvRefusal::new(
            root,
            format!("{name}=0: the provider never runs as root"),
        )),
        Some(u32::MAX) | None => Err(EnvRefusal::new(
            invalid,
            format!("{name}={raw:?} is not a numeric id"),
        )),
        Some(id) => Ok(id),
    }
}

/// Validates the managed environment. `today` decides whether a breakglass acknowledgment is
/// current; pass [`Date::today_utc`] outside tests.
pub fn parse_session_env(env: &[(&OsStr, &OsStr)], today: Date) -> Result<SessionEnv, EnvRefusal> {
    let agent_raw = required(env, VAR_AGENT, "agent_missing")?;
    let agent = Agent::from_name(agent_raw).ok_or_else(|| {
        EnvRefusal::new(
            "agent_invalid",
            format!("{VAR_AGENT}={agent_raw:?}; expected codex, claude, gemini or copilot"),
        )
    })?;

    let profile = match text(env, VAR_PROFILE)? {
        None => Profile::Strict,
        Some(raw) => Profile::from_name(raw.as_bytes()).ok_or_else(|| {
            EnvRefusal::new(
                "profile_invalid",
                format!("{VAR_PROFILE}={raw:?}; expected strict, development, build or breakglass"),
            )
        })?,
    };
    if profile == Profile::Breakglass {
        check_breakglass_ack(text(env, VAR_BREAKGLASS_ACK)?, today)?;
    }

    let autonomy_raw = required(env, VAR_AUTONOMY, "autonomy_missing")?;
    let autonomy = Autonomy::from_name(autonomy_raw).ok_or_else(|| {
        EnvRefusal::new(
            "autonomy_invalid",
            format!("{VAR_AUTONOMY}={autonomy_raw:?}; expected yolo or prompt"),
        )
    })?;

    let mutability_raw = required(env, VAR_MUTABILITY, "mutability_missing")?;
    let mutability = Mutability::from_name(mutability_raw).ok_or_else(|| {
        EnvRefusal::new(
            "mutability_invalid",
            format!("{VAR_MUTABILITY}={mutability_raw:?}; expected ephemeral or readonly"),
        )
    })?;

    let host_uid = host_id(
        env,
        VAR_HOST_UID,
        "host_uid_missing",
        "host_uid_invalid",
        "host_uid_root",
    )?;
    let host_gid = host_id(
        env,
        VAR_HOST_GID,
        "host_gid_missing",
        "host_gid_invalid",
        "host_gid_root",
    )?;

    let user_name = sanitize_user_name(text(env, VAR_HOST_USER)?.unwrap_or("agent"));

    let digest = required(env, VAR_MANIFEST_SHA256, "manifest_digest_missing")?;
    if digest.len() != 64
        || !digest
            .bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(EnvRefusal::new(
            "manifest_digest_invalid",
            format!("{VAR_MANIFEST_SHA256} must be 64 lower-case hex digits"),
        ));
    }

    let allow_unsealed = match text(env, VAR_ALLOW_UNSEALED)? {
        None => false,
        Some("1") => true,
        Some(other) => {
            return Err(EnvRefusal::new(
                "allow_unsealed_invalid",
                format!("{VAR_ALLOW_UNSEALED}={other:?}; the only value is 1"),
            ))
        }
    };

    let allow_exec_mappings = match text(env, VAR_ALLOW_EXEC_MAPPINGS)? {
        None => false,
        Some("1") => true,
        Some(other) => {
            return Err(EnvRefusal::new(
                "allow_exec_mappings_invalid",
                format!("{VAR_ALLOW_EXEC_MAPPINGS}={other:?}; the only value is 1"),
            ))
        }
    };
    let repo_config_acknowledged = match text(env, VAR_REPO_CONFIG_ACK)? {
        None => false,
        Some(ack) => {
            check_repo_config_ack(ack, today)?;
            true
        }
    };

    Ok(SessionEnv {
        allow_unsealed,
        allow_exec_mappings,
        repo_config_acknowledged,
        agent,
        profile,
        autonomy,
        mutability,
        host_uid,
        host_gid,
        user_name,
        manifest_sha256: digest.to_owned(),
    })
}

fn check_breakglass_ack(ack: Option<&str>, today: Date) -> Result<(), EnvRefusal> {
    let Some(ack) = ack else {
        return Err(EnvRefusal::new(
            "breakglass_unacknowledged",
            format!("breakglass needs {VAR_BREAKGLASS_ACK}={today}"),
        ));
    };
    let Some(date) = Date::parse(ack) else {
        return Err(EnvRefusal::new(
            "breakglass_ack_invalid",
            format!("{VAR_BREAKGLASS_ACK}={ack:?} is not a YYYY-MM-DD date"),
        ));
    };
    if date != today {
        return Err(EnvRefusal::new(
            "breakglass_ack_stale",
            format!("{VAR_BREAKGLASS_ACK}={date} is not today ({today}, UTC)"),
        ));
    }
    Ok(())
}

fn check_repo_config_ack(ack: &str, today: Date) -> Result<(), EnvRefusal> {
    match Date::parse(ack) {
        None => Err(EnvRefusal::new(
            "repo_config_ack_invalid",
            format!("{VAR_REPO_CONFIG_ACK}={ack:?} is not a YYYY-MM-DD date"),
        )),
        Some(date) if date != today => Err(EnvRefusal::new(
            "repo_config_ack_stale",
            format!("{VAR_REPO_CONFIG_ACK}={date} is not today ({today}, UTC)"),
        )),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const TODAY: Date = Date {
        year: 2026,
        month: 3,
        day: 14,
    };

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            (VAR_AGENT, "claude"),
            (VAR_AUTONOMY, "yolo"),
            (VAR_MUTABILITY, "ephemeral"),
            (VAR_HOST_UID, "1000"),
            (VAR_HOST_GID, "1000"),
            (VAR_MANIFEST_SHA256, DIGEST),
        ]
    }

    fn parse_with(
        overrides: &[(&'static str, Option<&'static str>)],
    ) -> Result<SessionEnv, EnvRefusal> {
        let mut vars = base();
        for (k, v) in overrides {
            vars.retain(|(name, _)| name != k);
            if let Some(v) = v {
                vars.push((k, v));
            }
        }
        let env: Vec<(&OsStr, &OsStr)> = vars
            .iter()
            .map(|(k, v)| (OsStr::new(*k), OsStr::new(*v)))
            .collect();
        parse_session_env(&env, TODAY)
    }

    #[test]
    fn accepts_a_complete_environment_with_strict_default() {
        let s = parse_with(&[]).unwrap();
        assert_eq!(s.agent, Agent::Claude);
        assert_eq!(s.profile, Profile::Strict);
        assert_eq!(s.autonomy, Autonomy::Yolo);
        assert_eq!(s.mutability, Mutability::Ephemeral);
        assert_eq!((s.host_uid, s.host_gid), (1000, 1000));
        assert_eq!(s.user_name, "agent");
    }

    #[test]
    fn refusals_are_table_driven() {
        struct Case {
            name: &'static str,
            set: &'static [(&'static str, Option<&'static str>)],
            code: &'static str,
        }
        let cases = [
            Case {
                name: "agent missing",
                set: &[(VAR_AGENT, None)],
                code: "agent_missing",
            },
            Case {
                name: "agent unknown",
                set: &[(VAR_AGENT, Some("cursor"))],
                code: "agent_invalid",
            },
            Case {
                name: "agent upper",
                set: &[(VAR_AGENT, Some("Claude"))],
                code: "agent_invalid",
            },
            Case {
                name: "agent padded",
                set: &[(VAR_AGENT, Some("claude "))],
                code: "agent_invalid",
            },
            Case {
                name: "profile unknown",
                set: &[(VAR_PROFILE, Some("relaxed"))],
                code: "profile_invalid",
            },
            Case {
                name: "profile empty",
                set: &[(VAR_PROFILE, Some(""))],
                code: "profile_invalid",
            },
            Case {
                name: "profile upper",
                set: &[(VAR_PROFILE, Some("STRICT"))],
                code: "profile_invalid",
            },
            Case {
                name: "breakglass without ack",
                set: &[(VAR_PROFILE, Some("breakglass"))],
                code: "breakglass_unacknowledged",
            },
            Case {
                name: "breakglass with yes",
                set: &[
                    (VAR_PROFILE, Some("breakglass")),
                    (VAR_BREAKGLASS_ACK, Some("yes")),
                ],
                code: "breakglass_ack_invalid",
            },
            Case {
                name: "breakglass yesterday",
                set: &[
                    (VAR_PROFILE, Some("breakglass")),
                    (VAR_BREAKGLASS_ACK, Some("2026-03-13")),
                ],
                code: "breakglass_ack_stale",
            },
            Case {
                name: "autonomy missing",
                set: &[(VAR_AUTONOMY, None)],
                code: "autonomy_missing",
            },
            Case {
                name: "autonomy unknown",
                set: &[(VAR_AUTONOMY, Some("auto"))],
                code: "autonomy_invalid",
            },
            Case {
                name: "mutability missing",
                set: &[(VAR_MUTABILITY, None)],
                code: "mutability_missing",
            },
            Case {
                name: "mutability unknown",
                set: &[(VAR_MUTABILITY, Some("persistent"))],
                code: "mutability_invalid",
            },
            Case {
                name: "uid missing",
                set: &[(VAR_HOST_UID, None)],
                code: "host_uid_missing",
            },
            Case {
                name: "uid root",
                set: &[(VAR_HOST_UID, Some("0"))],
                code: "host_uid_root",
            },
            Case {
                name: "uid name",
                set: &[(VAR_HOST_UID, Some("alice"))],
                code: "host_uid_invalid",
            },
            Case {
                name: "uid negative",
                set: &[(VAR_HOST_UID, Some("-1"))],
                code: "host_uid_invalid",
            },
            Case {
                name: "uid sentinel",
                set: &[(VAR_HOST_UID, Some("4294967295"))],
                code: "host_uid_invalid",
            },
            Case {
                name: "uid overflow",
                set: &[(VAR_HOST_UID, Some("4294967296"))],
                code: "host_uid_invalid",
            },
            Case {
                name: "uid leading zero",
                set: &[(VAR_HOST_UID, Some("01000"))],
                code: "host_uid_invalid",
            },
            Case {
                name: "uid plus",
                set: &[(VAR_HOST_UID, Some("+1000"))],
                code: "host_uid_invalid",
            },
            Case {
                name: "uid empty",
                set: &[(VAR_HOST_UID, Some(""))],
                code: "host_uid_invalid",
            },
            Case {
                name: "gid missing",
                set: &[(VAR_HOST_GID, None)],
                code: "host_gid_missing",
            },
            Case {
                name: "gid root",
                set: &[(VAR_HOST_GID, Some("0"))],
                code: "host_gid_root",
            },
            Case {
                name: "gid text",
                set: &[(VAR_HOST_GID, Some("staff"))],
                code: "host_gid_invalid",
            },
            Case {
                name: "digest missing",
                set: &[(VAR_MANIFEST_SHA256, None)],
                code: "manifest_digest_missing",
            },
            Case {
                name: "digest short",
                set: &[(VAR_MANIFEST_SHA256, Some("abc"))],
                code: "manifest_digest_invalid",
            },
            Case {
                name: "digest upper",
                set: &[(
                    VAR_MANIFEST_SHA256,
                    Some("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"),
                )],
                code: "manifest_digest_invalid",
            },
        ];
        for case in cases {
            let err = parse_with(case.set).expect_err(case.name);
            assert_eq!(err.code(), case.code, "{}: {err}", case.name);
            assert!(err
                .to_string()
                .starts_with(&format!("refused {}: ", case.code)));
        }
    }

    #[test]
    fn every_profile_and_value_is_accepted() {
        for p in ["strict", "development", "build"] {
            let leaked: &'static str = p;
            assert_eq!(
                parse_with(&[(VAR_PROFILE, Some(leaked))])
                    .unwrap()
                    .profile
                    .as_str(),
                p
            );
        }
        let bg = parse_with(&[
            (VAR_PROFILE, Some("breakglass")),
            (VAR_BREAKGLASS_ACK, Some("2026-03-14")),
        ]);
        assert_eq!(bg.unwrap().profile, Profile::Breakglass);
        for a in ["codex", "claude", "gemini", "copilot"] {
            assert_eq!(
                parse_with(&[(VAR_AGENT, Some(a))]).unwrap().agent.as_str(),
                a
            );
        }
        assert_eq!(
            parse_with(&[(VAR_AUTONOMY, Some("prompt"))])
                .unwrap()
                .autonomy,
            Autonomy::Prompt
        );
        assert_eq!(
            parse_with(&[(VAR_MUTABILITY, Some("readonly"))])
                .unwrap()
                .mutability,
            Mutability::Readonly
        );
        assert_eq!(
            parse_with(&[(VAR_HOST_UID, Some("4294967294"))])
                .unwrap()
                .host_uid,
            4_294_967_294
        );
    }

    #[test]
    fn host_user_is_sanitised() {
        let s = parse_with(&[(VAR_HOST_USER, Some("Jane Doe:0:0"))]).unwrap();
        assert_eq!(s.user_name, "jane_doe_0_0");
    }

    #[test]
    fn non_utf8_values_are_refused() {
        use std::os::unix::ffi::OsStrExt as _;
        let mut env: Vec<(&OsStr, &OsStr)> = base()
            .iter()
            .map(|(k, v)| (OsStr::new(*k), OsStr::new(*v)))
            .collect();
        env.retain(|(k, _)| k.as_bytes() != VAR_AGENT.as_bytes());
        env.push((OsStr::new(VAR_AGENT), OsStr::from_bytes(b"cl\xffude")));
        assert_eq!(
            parse_session_env(&env, TODAY).unwrap_err().code(),
            "env_not_unicode"
        );
    }

    #[test]
    fn duplicate_managed_variables_are_refused() {
        let mut env: Vec<(&OsStr, &OsStr)> = base()
            .iter()
            .map(|(k, v)| (OsStr::new(*k), OsStr::new(*v)))
            .collect();
        env.push((OsStr::new(VAR_AGENT), OsStr::new("codex")));
        assert_eq!(
            parse_session_env(&env, TODAY).unwrap_err().code(),
            "env_duplicate"
        );
    }

    #[test]
    fn dates_convert_and_parse() {
        assert_eq!(
            Date::from_unix_days(0),
            Date {
                year: 1970,
                month: 1,
                day: 1
            }
        );
        assert_eq!(
            Date::from_unix_days(19_723),
            Date {
                year: 2024,
                month: 1,
                day: 1
            }
        );
        assert_eq!(
            Date::from_unix_days(19_782),
            Date {
                year: 2024,
                month: 2,
                day: 29
            }
        );
        assert_eq!(
            Date::parse("2024-02-29"),
            Some(Date {
                year: 2024,
                month: 2,
                day: 29
            })
        );
        // A clock before the epoch, or past what the calendar writes, never panics PID 1.
        let epoch = Date::from_unix_days(0);
        assert_eq!(
            Date::of(UNIX_EPOCH - std::time::Duration::from_secs(1)),
            epoch
        );
        assert_eq!(Date::from_unix_days(u64::MAX).year, 9999);
        for bad in [
            "2024-2-29",
            "2024/02/29",
            "2024-13-01",
            "2024-00-10",
            "20240229xx",
            "+024-02-29",
        ] {
            assert_eq!(Date::parse(bad), None, "{bad}");
        }
        assert_eq!(
            Date {
                year: 2026,
                month: 3,
                day: 4
            }
            .to_string(),
            "2026-03-04"
        );
    }
}
