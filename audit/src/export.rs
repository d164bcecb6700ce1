//! `execguard audit export`: a kept log as JSON lines (the lines as kept, so the chain checks
//! as it did) or as OCSF events (Process Activity), each carrying its kept line in
//! `unmapped.line`, so the chain still checks after the move to a SIEM.

use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Ocsf,
}

impl Format {
    pub fn from_name(s: &str) -> Option<Format> {
        match s {
            "jsonl" => Some(Format::Jsonl),
            "ocsf" => Some(Format::Ocsf),
            _ => None,
        }
    }
}

/// One kept line as an OCSF 1.x Process Activity event; `None` for a line that is no record.
pub fn ocsf(raw: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(raw).ok()?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
    let time = v.get("time")?.as_f64()?;
    let decision = s("decision");
    let session_event = s("entry") == crate::line::SESSION_ENTRY;
    let (activity_id, activity_name) = if session_event {
        (99, s("reason"))
    } else {
        (1, "Launch")
    };
    let (status_id, status, disposition_id, disposition) = match decision {
        "allow" => (1, "Success", 1, "Allowed"),
        "deny" => (2, "Failure", 2, "Blocked"),
        _ => (99, "Other", 99, "Other"),
    };
    let mut unmapped = serde_json::Map::new();
    for k in [
        "session",
        "seq",
        "prev",
        "profile",
        "workspace",
        "assurance",
        "truncated",
        "lost",
    ] {
        if let Some(x) = v.get(k) {
            unmapped.insert(k.into(), x.clone());
        }
    }
    unmapped.insert("digest".into(), crate::hex(&crate::digest(raw)).into());
    unmapped.insert("line".into(), String::from_utf8_lossy(raw).into());
    Some(json!({
        "class_uid": 1007,
        "class_name": "Process Activity",
        "category_uid": 1,
        "category_name": "System Activity",
        "activity_id": activity_id,
        "activity_name": activity_name,
        "type_uid": 100700 + activity_id,
        "time": (time * 1000.0) as u64,
        "severity_id": if decision == "deny" { 3 } else { 1 },
        "status_id": status_id,
        "status": status,
        "status_code": s("reason"),
        "disposition_id": disposition_id,
        "disposition": disposition,
        "actor": {
            "process": { "pid": v.get("pid").cloned().unwrap_or(Value::Null) },
            "user": { "uid": v.get("uid").map(|u| u.to_string()).unwrap_or_default() },
        },
        "process": {
            "file": { "path": s("path") },
            "cmd_line": s("target"),
        },
        "metadata": {
            "version": "1.1.0",
            "product": { "name": "execguard", "vendor_name": "execguard", "feature": { "name": s("tool") } },
            "log_name": s("entry"),
            "uid": format!("{}:{}", s("session"), v.get("seq").map(|x| x.to_string()).unwrap_or_default()),
            "correlation_uid": s("session"),
        },
        "unmapped": unmapped,
    }))
}

/// Writes every whole line of `text` in `format` to `out`; lines that are no record are
/// skipped (verify names them).
pub fn export(text: &[u8], format: Format, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let mut lines: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
    lines.pop(); // after the last newline: empty, or a line cut short
    for raw in lines {
        match format {
            Format::Jsonl => {
                if serde_json::from_slice::<Value>(raw).is_ok() {
                    out.write_all(raw)?;
                    out.write_all(b"\n")?;
                }
            }
            Format::Ocsf => {
                if let Some(event) = ocsf(raw) {
                    serde_json::to_writer(&mut *out, &event)?;
                    out.write_all(b"\n")?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both exports keep the chain: the lines as kept, or each within its event.
    #[test]
    fn exports_keep_the_chain() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
        let log = crate::verify::tests::sample(&key, 2, 3).join("\n") + "\n";
        let mut jsonl = Vec::new();
        export(log.as_bytes(), Format::Jsonl, &mut jsonl).unwrap();
        assert_eq!(jsonl, log.as_bytes());
        let mut events = Vec::new();
        export(log.as_bytes(), Format::Ocsf, &mut events).unwrap();
        let mut back = String::new();
        for l in String::from_utf8(events).unwrap().lines() {
            let e: Value = serde_json::from_str(l).unwrap();
            assert_eq!(e["class_uid"], 1007);
            back.push_str(e["unmapped"]["line"].as_str().unwrap());
            back.push('\n');
        }
        assert_eq!(back, log);
        assert!(crate::verify::verify(back.as_bytes(), Some(&key.verifying_key())).is_ok());
        let deny = ocsf(log.lines().nth(2).unwrap().as_bytes()).unwrap();
        assert_eq!(deny["disposition"], "Blocked");
        assert_eq!(deny["process"]["file"]["path"], "/w/a");
    }
}
