//! `execguard audit verify`: the chain and the signatures of a kept log, and the first line
//! where they break.

use std::collections::HashMap;

use ed25519_dalek::{Signature, VerifyingKey};
use std::borrow::Cow;

use crate::line::{self, SESSION_END, SESSION_ENTRY, SESSION_START};

/// A log that verified.
#[derive(Debug, PartialEq, Eq)]
pub struct Verified {
    pub lines: usize,
    pub sessions: usize,
    /// Whether the signatures were checked against a key given from outside the log (else
    /// against the key each session's first record names).
    pub trusted_key: bool,
}

/// The first place a log breaks: its line (1-based) and what is wrong there.
#[derive(Debug, PartialEq, Eq)]
pub struct Broken {
    pub line: usize,
    pub what: String,
}

struct Open {
    next_seq: u64,
    last_line: usize,
    key: Option<VerifyingKey>,
    ended: bool,
}

/// The fields verify reads of a line (the others are covered by its digest).
#[derive(serde::Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    session: Option<Cow<'a, str>>,
    seq: Option<u64>,
    #[serde(borrow)]
    prev: Option<Cow<'a, str>>,
    #[serde(borrow)]
    entry: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    key: Option<Cow<'a, str>>,
}

fn fields(raw: &[u8]) -> Option<Fields<'_>> {
    serde_json::from_slice(raw).ok()
}

/// Did records go missing just before line `at` (0-based)? Some session's first record at
/// or after it does not follow its last one before it (or, new there, is not its start).
fn missing_before(lines: &[&[u8]], at: usize, sessions: &HashMap<String, Open>) -> bool {
    let mut seen: Vec<String> = Vec::new();
    for raw in &lines[at..] {
        let Some(f) = fields(raw) else {
            continue;
        };
        let (Some(s), Some(seq)) = (f.session.as_deref(), f.seq) else {
            continue;
        };
        if seen.iter().any(|x| x == s) {
            continue;
        }
        let due = sessions.get(s).map_or(0, |o| o.next_seq);
        if seq != due {
            return true;
        }
        seen.push(s.to_string());
    }
    // A session that never shows again may have lost its end record.
    sessions
        .iter()
        .any(|(s, o)| !o.ended && !seen.iter().any(|x| x == s))
}

/// Verifies the log `text`. `key`: the writer's public key (`audit.pub`); without it each
/// session is checked against the key its first record names, which shows edits and cuts but
/// not a log rewritten whole with another key.
pub fn verify(text: &[u8], key: Option<&VerifyingKey>) -> Result<Verified, Broken> {
    let mut prev = crate::GENESIS;
    let mut sessions: HashMap<String, Open> = HashMap::new();
    let broken = |line: usize, what: String| Err(Broken { line, what });
    let mut lines: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
    // The piece after the last newline: empty for a whole log.
    let tail = lines.pop().unwrap_or_default();
    if !tail.is_empty() {
        lines.push(tail);
    }
    let whole = lines.len() - usize::from(!tail.is_empty());
    for (i, &raw) in lines.iter().enumerate() {
        let ln = i + 1;
        if i == whole {
            return broken(
                ln,
                "cut short: the last line has no end (a write stopped midway, or the log was cut)"
                    .into(),
            );
        }
        let Some(f) = fields(raw) else {
            return broken(ln, "not a record (not one JSON object)".into());
        };
        let (Some(session), Some(seq), Some(named_prev)) = (
            f.session.as_deref(),
            f.seq,
            f.prev.as_deref().and_then(crate::unhex::<32>),
        ) else {
            return broken(
                ln,
                "not a kept record (no session, seq or prev): is this a kept log?".into(),
            );
        };
        if named_prev != prev {
            if ln == 1 {
                return broken(
                    1,
                    "the log does not begin at its first record: lines were removed before this one"
                        .into(),
                );
            }
            if missing_before(&lines, i, &sessions) {
                return broken(
                    ln,
                    "records are missing before this line (it names the digest of a line that is not there)".into(),
                );
            }
            return broken(
                ln - 1,
                format!("changed: line {ln} names another digest for it"),
            );
        }
        prev = crate::digest(raw);
        let is_session = f.entry.as_deref() == Some(SESSION_ENTRY);
        let reason = f.reason.as_deref();
        match sessions.get_mut(session) {
            None => {
                if seq != 0 || !is_session || reason != Some(SESSION_START) {
                    return broken(
                        ln,
                        format!("session {session} begins here without its start record (seq {seq}): its first records were removed"),
                    );
                }
                let named = f
                    .key
                    .as_deref()
                    .and_then(crate::unhex::<32>)
                    .and_then(|k| VerifyingKey::from_bytes(&k).ok());
                if let (Some(trusted), Some(named)) = (key, named) {
                    if trusted != &named {
                        return broken(
                            ln,
                            format!(
                                "session {session} names another writer's key than the one given"
                            ),
                        );
                    }
                }
                sessions.insert(
                    session.to_string(),
                    Open {
                        next_seq: 1,
                        last_line: ln,
                        key: key.copied().or(named),
                        ended: false,
                    },
                );
            }
            Some(o) => {
                if o.ended {
                    return broken(
                        ln,
                        format!("a record of session {session} after its signed end record"),
                    );
                }
                if seq != o.next_seq {
                    return broken(
                        ln,
                        format!(
                            "session {session} has seq {seq} here where {} was due",
                            o.next_seq
                        ),
                    );
                }
                o.next_seq += 1;
                o.last_line = ln;
                if is_session && reason == Some(SESSION_END) {
                    let Some((signed, sig)) = line::split_signed(raw) else {
                        return broken(
                            ln,
                            format!("session {session}'s end record carries no signature"),
                        );
                    };
                    let Some(k) = o.key else {
                        return broken(
                            ln,
                            format!("session {session} names no key to check its signature with"),
                        );
                    };
                    if k.verify_strict(&signed, &Signature::from_bytes(&sig))
                        .is_err()
                    {
                        return broken(
                            ln,
                            format!("session {session}'s signature does not match: this line, or the chain before it, was rewritten"),
                        );
                    }
                    o.ended = true;
                }
            }
        }
    }
    if let Some((s, o)) = sessions
        .iter()
        .filter(|(_, o)| !o.ended)
        .min_by_key(|(_, o)| o.last_line)
    {
        return broken(
            lines.len() + 1,
            format!(
                "the log ends before session {s}'s signed end record (its last record is line {}): it was cut, or the session is still running",
                o.last_line
            ),
        );
    }
    Ok(Verified {
        lines: lines.len(),
        sessions: sessions.len(),
        trusted_key: key.is_some(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::line::{Body, Link, Stamp};
    use ed25519_dalek::SigningKey;

    /// A log of `sessions` sessions, `records` records each, interleaved as concurrent
    /// supervisors would write them, signed with `key`.
    pub fn sample(key: &SigningKey, sessions: usize, records: usize) -> Vec<String> {
        let mut prev = crate::GENESIS;
        let mut out = Vec::new();
        let session_body = |reason: &str| {
            Body::writer(
                "run",
                reason,
                &[
                    ("profile", "strict".into()),
                    ("workspace", "/w".into()),
                    ("assurance", "strict".into()),
                    ("key", crate::hex(key.verifying_key().as_bytes()).into()),
                ],
            )
        };
        let deny = Body::from_sender(
            b"{\"time\":1.0,\"pid\":1,\"uid\":1,\"tool\":\"guard\",\"entry\":\"execve\",\"decision\":\"deny\",\"reason\":\"mutable_native\",\"profile\":\"strict\",\"path\":\"/w/a\",\"target\":\"./a\"}\n",
        )
        .unwrap();
        for seq in 0..records as u64 + 2 {
            for s in 0..sessions {
                let id = format!("s{s}");
                let (body, sign) = match seq {
                    0 => (session_body(SESSION_START), false),
                    n if n == records as u64 + 1 => (session_body(SESSION_END), true),
                    _ => (deny.clone(), false),
                };
                let l = line::build(
                    &Stamp::now(10 + s as u32, 1000),
                    &Link {
                        session: &id,
                        seq,
                        prev: &prev,
                    },
                    &body,
                );
                let l = if sign { line::sign(&l, key) } else { l };
                prev = crate::digest(l.as_bytes());
                out.push(l);
            }
        }
        out
    }

    fn check(lines: &[String], key: Option<&VerifyingKey>) -> Result<Verified, Broken> {
        let mut text = lines.join("\n");
        if !lines.is_empty() {
            text.push('\n');
        }
        verify(text.as_bytes(), key)
    }

    fn line_of(r: Result<Verified, Broken>) -> usize {
        match r {
            Ok(v) => panic!("verified: {v:?}"),
            Err(b) => b.line,
        }
    }

    #[test]
    fn a_whole_log_verifies() {
        let key = SigningKey::from_bytes(&[1; 32]);
        let log = sample(&key, 3, 5);
        let v = check(&log, Some(&key.verifying_key())).unwrap();
        assert_eq!((v.lines, v.sessions, v.trusted_key), (21, 3, true));
        assert!(check(&log, None).is_ok());
        assert!(check(&[], None).is_ok());
    }

    /// Every single-line edit, removal, and every cut is found, at the line it happened.
    #[test]
    fn edits_removals_and_cuts_are_found_at_their_line() {
        let key = SigningKey::from_bytes(&[1; 32]);
        let vk = key.verifying_key();
        let log = sample(&key, 2, 4);
        for i in 0..log.len() {
            let ln = i + 1;
            // An edit of line ln: found at ln.
            let mut edited = log.clone();
            edited[i] = edited[i].replacen("\"uid\":1000", "\"uid\":1001", 1);
            assert_ne!(edited[i], log[i]);
            assert_eq!(line_of(check(&edited, Some(&vk))), ln, "edit of line {ln}");
            // Line ln removed: found at ln, where it was.
            let mut removed = log.clone();
            removed.remove(i);
            assert_eq!(
                line_of(check(&removed, Some(&vk))),
                ln,
                "removal of line {ln}"
            );
            // Cut after line ln: found at ln + 1, the first missing line.
            if ln < log.len() {
                assert_eq!(
                    line_of(check(&log[..ln], Some(&vk))),
                    ln + 1,
                    "cut after line {ln}"
                );
            }
        }
        // Half a last line.
        let mut text = log.join("\n");
        text.truncate(text.len() - 10);
        let r = verify(text.as_bytes(), Some(&vk));
        assert_eq!(line_of(r), log.len());
    }

    /// A log rewritten with its chain recomputed fails at its signature; under another key,
    /// at the first session.
    #[test]
    fn a_rewritten_chain_fails_at_the_signature() {
        let key = SigningKey::from_bytes(&[1; 32]);
        let other = SigningKey::from_bytes(&[2; 32]);
        let forged = sample(&other, 1, 2);
        assert_eq!(line_of(check(&forged, Some(&key.verifying_key()))), 1);
        // Same key, but a record's content changed and the digests recomputed after it.
        let log = sample(&key, 1, 2);
        let mut lines: Vec<String> = Vec::new();
        let mut prev = crate::GENESIS;
        for l in &log {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["prev"] = crate::hex(&prev).into();
            if v["seq"] == 1 {
                v["path"] = "/elsewhere".into();
            }
            let s = v.to_string();
            prev = crate::digest(s.as_bytes());
            lines.push(s);
        }
        let r = check(&lines, Some(&key.verifying_key()));
        assert!(
            matches!(&r, Err(b) if b.line == 4 && b.what.contains("signature")),
            "{r:?}"
        );
    }
}
