//! One kept line: what a sender may say, what the writer adds, and the signature of a
//! session's last line.

use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Map, Value};

/// What a sender may name, in the order the writer writes it.
pub const SENDER_FIELDS: [&str; 8] = [
    "tool",
    "entry",
    "decision",
    "reason",
    "profile",
    "path",
    "target",
    "truncated",
];

/// What only the writer writes, after the sender's fields (a session's first and last records,
/// and the notice of records that could not be written).
pub const WRITER_FIELDS: [&str; 4] = ["workspace", "assurance", "key", "lost"];

/// The sender's claims the writer replaces with its own knowledge.
const REPLACED: [&str; 3] = ["time", "pid", "uid"];

/// The `entry` of a session's first and last records: no sender may use it.
pub const SESSION_ENTRY: &str = "session";
pub const SESSION_START: &str = "session_start";
pub const SESSION_END: &str = "session_end";
/// The notice of records the writer could not write (a full disk), once it can again.
pub const LOST: &str = "audit_lost";

/// What the writer knows of a record: when it got it, and from which process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Seconds and nanoseconds since the epoch.
    pub time: (u64, u32),
    pub pid: u32,
    pub uid: u32,
}

impl Stamp {
    /// Now, for process `pid` of user `uid`.
    pub fn now(pid: u32, uid: u32) -> Stamp {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Stamp {
            time: (t.as_secs(), t.subsec_nanos()),
            pid,
            uid,
        }
    }
}

/// The fields of a record other than the writer's stamp and chain, each as the JSON text it
/// was sent as (a path's escaped bytes stay as they were escaped).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Body(std::collections::BTreeMap<String, String>);

/// Why a sender's record was not taken (the sender refuses its exec: `audit_unwritable`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyError {
    NotJson,
    UnknownField(String),
    BadField(&'static str),
    Missing(&'static str),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::NotJson => write!(f, "not one JSON object"),
            BodyError::UnknownField(k) => write!(f, "field {k:?} is not a sender's"),
            BodyError::BadField(k) => write!(f, "field {k:?} has the wrong type or value"),
            BodyError::Missing(k) => write!(f, "field {k:?} is missing"),
        }
    }
}

impl Body {
    /// A sender's record (one line of the one schema, `execguard_policy::audit::format_record`):
    /// its `time`, `pid` and `uid` are dropped (the writer's stamp replaces them), fields only
    /// the writer writes are refused, and so is anything outside the schema. One parse, into
    /// each field's own text: this runs once per record.
    pub fn from_sender(bytes: &[u8]) -> Result<Body, BodyError> {
        use serde_json::value::RawValue;
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let map: std::collections::BTreeMap<&str, &RawValue> =
            serde_json::from_slice(bytes).map_err(|_| BodyError::NotJson)?;
        let mut out = std::collections::BTreeMap::new();
        for (k, v) in map {
            if REPLACED.contains(&k) {
                continue;
            }
            let Some(&name) = SENDER_FIELDS.iter().find(|f| **f == k) else {
                return Err(BodyError::UnknownField(k.to_string()));
            };
            let text = v.get();
            let ok = match name {
                "truncated" => text == "true",
                _ => text.starts_with('"'),
            };
            if !ok {
                return Err(BodyError::BadField(name));
            }
            out.insert(name.to_string(), text.to_string());
        }
        for k in ["tool", "entry", "decision", "reason"] {
            if !out.contains_key(k) {
                return Err(BodyError::Missing(k));
            }
        }
        let body = Body(out);
        if !matches!(
            body.str("decision").as_deref(),
            Some("allow" | "deny" | "notice")
        ) {
            return Err(BodyError::BadField("decision"));
        }
        if body.str("entry").as_deref() == Some(SESSION_ENTRY) {
            return Err(BodyError::BadField("entry"));
        }
        Ok(body)
    }

    /// A record of the writer's own (a session's first or last, a loss notice).
    pub fn writer(tool: &str, reason: &str, fields: &[(&'static str, Value)]) -> Body {
        let mut map = Map::new();
        map.insert("tool".into(), tool.into());
        map.insert("entry".into(), SESSION_ENTRY.into());
        map.insert("decision".into(), "notice".into());
        map.insert("reason".into(), reason.into());
        for (k, v) in fields {
            debug_assert!(SENDER_FIELDS.contains(k) || WRITER_FIELDS.contains(k));
            map.insert((*k).into(), v.clone());
        }
        Body(map.into_iter().map(|(k, v)| (k, v.to_string())).collect())
    }

    /// A string field's value.
    pub fn str(&self, k: &str) -> Option<String> {
        serde_json::from_str(self.0.get(k)?).ok()
    }
}

/// Where a line sits in its chain.
#[derive(Clone, Copy, Debug)]
pub struct Link<'a> {
    pub session: &'a str,
    pub seq: u64,
    pub prev: &'a [u8; 32],
}

/// The line (without its newline): `time`, `pid`, `uid` as stamped, the link, then the body's
/// fields in schema order. Starts with `{"time":` like every record, so `execguard audit`
/// counts kept logs as it counts the others.
pub fn build(stamp: &Stamp, link: &Link<'_>, body: &Body) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(512);
    let _ = write!(
        s,
        "{{\"time\":{}.{:09},\"pid\":{},\"uid\":{},\"session\":{},\"seq\":{},\"prev\":\"{}\"",
        stamp.time.0,
        stamp.time.1.min(999_999_999),
        stamp.pid,
        stamp.uid,
        Value::from(link.session),
        link.seq,
        crate::hex(link.prev)
    );
    for k in SENDER_FIELDS.iter().chain(WRITER_FIELDS.iter()) {
        if let Some(v) = body.0.get(*k) {
            let _ = write!(s, ",\"{k}\":{v}");
        }
    }
    s.push('}');
    s
}

/// How a signed line ends: `,"sig":"` + 128 hex digits + `"}`.
const SIG_KEY: &str = ",\"sig\":\"";
const SIG_LEN: usize = SIG_KEY.len() + 128 + 2;

/// `line` (as [`build`] made it) with its signature: `,"sig":"<hex>"` before the closing
/// brace, over the line as it was.
pub fn sign(line: &str, key: &SigningKey) -> String {
    let sig = key.sign(line.as_bytes());
    let body = line.strip_suffix('}').unwrap_or(line);
    format!("{body}{SIG_KEY}{}\"}}", crate::hex(&sig.to_bytes()))
}

/// A signed line split into the line that was signed and its signature; `None` when it
/// carries none.
pub fn split_signed(line: &[u8]) -> Option<(Vec<u8>, [u8; 64])> {
    if line.len() < SIG_LEN || !line.ends_with(b"\"}") {
        return None;
    }
    let at = line.len() - SIG_LEN;
    if &line[at..at + SIG_KEY.len()] != SIG_KEY.as_bytes() {
        return None;
    }
    let sig = std::str::from_utf8(&line[at + SIG_KEY.len()..line.len() - 2]).ok()?;
    let sig = crate::unhex::<64>(sig)?;
    let mut signed = line[..at].to_vec();
    signed.push(b'}');
    Some((signed, sig))
}

#[cfg(test)]
mod tests {
    use super::*;
    use execguard_policy::audit::{format_record, Decision, Record, RECORD_MAX};

    fn guard_record(pid: i32) -> Vec<u8> {
        let mut buf = [0u8; RECORD_MAX];
        let n = format_record(
            &Record {
                time: (1, 2),
                pid,
                uid: 4242,
                tool: "guard",
                entry: "execve",
                decision: Decision::Deny,
                reason: "mutable_native",
                profile: Some(execguard_policy::Profile::Strict),
                path: b"/w/a\xff",
                target: b"./a",
            },
            &mut buf,
        );
        buf[..n].to_vec()
    }

    /// The sender's pid, uid and time are its claims: the line carries the writer's stamp.
    #[test]
    fn a_senders_claims_give_way_to_the_stamp() {
        let body = Body::from_sender(&guard_record(1)).unwrap();
        let stamp = Stamp {
            time: (7, 8),
            pid: 99,
            uid: 1000,
        };
        let prev = [0xab; 32];
        let line = build(
            &stamp,
            &Link {
                session: "s1",
                seq: 3,
                prev: &prev,
            },
            &body,
        );
        assert!(line.starts_with(&format!(
            "{{\"time\":7.000000008,\"pid\":99,\"uid\":1000,\"session\":\"s1\",\"seq\":3,\"prev\":\"{}\",\"tool\":\"guard\"",
            "ab".repeat(32)
        )), "{line}");
        assert!(!line.contains("4242"), "{line}");
        assert!(line.contains("\"path\":\"/w/a\\u00ff\""), "{line}");
    }

    #[test]
    fn senders_name_only_their_fields() {
        let good = String::from_utf8(guard_record(1)).unwrap();
        let cases: &[(&str, BodyError)] = &[
            ("nope", BodyError::NotJson),
            ("[1]", BodyError::NotJson),
            (
                &good.replace("\"tool\"", "\"seq\":1,\"tool\""),
                BodyError::UnknownField("seq".into()),
            ),
            (
                &good.replace("\"tool\"", "\"sig\":\"x\",\"tool\""),
                BodyError::UnknownField("sig".into()),
            ),
            (
                &good.replace("\"tool\"", "\"assurance\":\"x\",\"tool\""),
                BodyError::UnknownField("assurance".into()),
            ),
            (
                &good.replace("\"deny\"", "\"maybe\""),
                BodyError::BadField("decision"),
            ),
            (
                &good.replace("\"execve\"", "\"session\""),
                BodyError::BadField("entry"),
            ),
            (
                &good.replace("\"tool\":\"guard\",", ""),
                BodyError::Missing("tool"),
            ),
            (&good.replace("\"./a\"", "7"), BodyError::BadField("target")),
        ];
        for (text, want) in cases {
            assert_eq!(
                Body::from_sender(text.as_bytes()).as_ref(),
                Err(want),
                "{text}"
            );
        }
    }

    #[test]
    fn a_signed_line_splits_back_into_what_was_signed() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let line = build(
            &Stamp::now(1, 0),
            &Link {
                session: "s",
                seq: 9,
                prev: &[0; 32],
            },
            &Body::writer("run", SESSION_END, &[("assurance", "strict".into())]),
        );
        let signed = sign(&line, &key);
        assert!(serde_json::from_str::<Value>(&signed).is_ok(), "{signed}");
        let (back, sig) = split_signed(signed.as_bytes()).unwrap();
        assert_eq!(back, line.as_bytes());
        key.verifying_key()
            .verify_strict(&back, &ed25519_dalek::Signature::from_bytes(&sig))
            .unwrap();
        assert!(split_signed(line.as_bytes()).is_none());
    }
}
